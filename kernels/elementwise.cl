/* elementwise.cl: the ONNX elementwise ops (runtime/ops/elementwise.c):
 * broadcasting binary ops (arithmetic, Pow, Mod, BitShift, Max/Min, PRelu,
 * comparisons, logic), Where, Clip and the unary math and activation ops.
 *
 * Built once per element type: -DT=<storage type> -DT_DTYPE=<onnx dtype>
 * (kiln_cl_type_opts). float16 (T_DTYPE 10) is stored as half and computed in
 * float through kiln_ldh/kiln_svh (half_io.cl); bfloat16 (T_DTYPE 16) is stored
 * as ushort bits and computed in float (round to nearest even on store).
 * One kernel per op; attribute parameters (alpha, beta...) are kernel
 * arguments.
 *
 * Broadcast kernels take `meta` (longs, 32 per launch, at offset moff):
 * dims[8], strides of input 0 [8], input 1 [8], input 2 [8] (element strides,
 * 0 on broadcast axes), with rank r. The host drops size-1 axes and merges
 * axes that are contiguous in every input; r == 0 means every input is
 * contiguous with the output's size (the fast path: no index arithmetic).
 * A work-item takes a run of EW_WPI consecutive output elements (tunable
 * family "eltwise"; 16 by default): unary kernels run on a 1-D grid of
 * ceil(n / EW_WPI), broadcast kernels on (ceil(innermost dim / EW_WPI), the
 * next dim, the other outer rows), computing the row's input offsets once
 * (EW_ROW). Contiguous runs (but of bfloat16) go 8 elements at a time as
 * vectors (EW_VBIN, EW_VUN), the rest element by element. */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define EW_MAXR 8 /* rank of the host's meta layout (fixed, not tunable) */

/* float to bfloat16 bits, rounding to nearest even (NaN stays NaN) */
inline ushort ew_f2bf(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)0x7fc0;
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#if T_DTYPE == 10
#define EW_HALF 1
typedef float CT; /* compute type */
#define ST half   /* storage type */
#define RT ushort /* raw element type (copies) */
#define LD(p, i) kiln_ldh((p), (i))
#define SV(p, i, v) kiln_svh((p), (i), (v))
#elif T_DTYPE == 16
#define EW_HALF 1
typedef float CT;
#define ST ushort
#define RT ushort
#define LD(p, i) as_float((uint)(p)[i] << 16)
#define SV(p, i, v) ((p)[i] = ew_f2bf(v))
#else
#define EW_HALF 0
typedef T CT;
#define ST T
#define RT T
#define LD(p, i) ((p)[i])
#define SV(p, i, v) ((p)[i] = (v))
#endif
#define EW_FLOAT (T_IS_FLOAT || EW_HALF) /* EW_HALF: float16 or bfloat16 */
#define PL_LD(p, i) ((p)[i])
#define PL_ST(p, i, v) ((p)[i] = (v))
#define LD_HALF(p, i) kiln_ldh((p), (i))
#define LD_BF16(p, i) as_float((uint)(p)[i] << 16)

#ifndef EW_WPI
  #define EW_WPI 16 // consecutive elements (of the innermost run for broadcast kernels) per work-item (1, 8, 16, 32, 64)
#endif

/* Vectors of 8 elements for the contiguous paths (EW_VEC): float16 as
 * float8 through kiln_vldh8 / kiln_vsth8 (half_io.cl; one F16C conversion each
 * on POCL); not for bfloat16. */
#define EW_CAT_(a, b) a##b
#define EW_CAT(a, b) EW_CAT_(a, b)
#if T_DTYPE == 10
#define EW_VEC 1
typedef float8 VT;
#define VLD8(p) kiln_vldh8(0, (p))
#define VST8(v, p) kiln_vsth8((v), 0, (p))
#elif !EW_HALF
#define EW_VEC 1
typedef EW_CAT(T, 8) VT;
#define VLD8(p) vload8(0, (p))
#define VST8(v, p) vstore8((v), 0, (p))
#else
#define EW_VEC 0
#endif

/* The work-item's run: elements [j0, j1) of one row (unary kernels: of the
 * whole tensor, a 1-D grid of ceil(n / EW_WPI)). */
#define EW_RUN(len)                                 \
  long j0 = get_global_id(0) * EW_WPI;              \
  if (j0 >= (len)) return;                          \
  long j1 = min(j0 + (long)EW_WPI, (long)(len)), j = j0;

/* Broadcast kernels: the innermost (merged) axis is a row of L elements;
 * input k steps through it with stride s_k (0 on a broadcast axis, 1 when
 * contiguous). The grid is (ceil(L / EW_WPI), dims[r - 2], the other outer
 * rows); the row's offsets oa, ob, oc (inputs) and oy (output) are computed
 * once per work-item, with divisions only for ranks above 3. r == 0 means
 * every input is contiguous with the output: one row of n elements. */
#define EW_ROW(r, m, n)                                                        \
  long L, sa = 1, sb = 1, sc = 1, oa = 0, ob = 0, oc = 0, oy = 0;              \
  if (r == 0) L = n;                                                           \
  else {                                                                       \
    L = m[r - 1];                                                              \
    sa = m[EW_MAXR + r - 1];                                                   \
    sb = m[2 * EW_MAXR + r - 1];                                               \
    sc = m[3 * EW_MAXR + r - 1];                                               \
    long g1_ = get_global_id(1), rem_ = get_global_id(2);                      \
    if (r >= 2) {                                                              \
      oy = (rem_ * m[r - 2] + g1_) * L;                                        \
      oa = g1_ * m[EW_MAXR + r - 2];                                           \
      ob = g1_ * m[2 * EW_MAXR + r - 2];                                       \
      oc = g1_ * m[3 * EW_MAXR + r - 2];                                       \
    }                                                                          \
    for (int d_ = r - 3; d_ >= 0; d_--) {                                      \
      long c_ = rem_ % m[d_];                                                  \
      rem_ /= m[d_];                                                           \
      oa += c_ * m[EW_MAXR + d_];                                              \
      ob += c_ * m[2 * EW_MAXR + d_];                                          \
      oc += c_ * m[3 * EW_MAXR + d_];                                          \
    }                                                                          \
  }                                                                            \
  EW_RUN(L)

/* Vector steps of a same-type binary kernel over the run while at least 8
 * elements are left, when both inputs are contiguous or broadcast along the
 * row (stride 1 or 0); the scalar loop finishes. `vexpr` is the op on VT. */
#if !EW_VEC
#define EW_VBIN(vflag, vexpr)
#else
#define EW_VBIN(vflag, vexpr)                                                   \
  if ((vflag) && (sa | 1) == 1 && (sb | 1) == 1) {                              \
    for (; j + 8 <= j1; j += 8) {                                               \
      VT a = sa ? VLD8(qa + j) : (VT)LD(qa, 0);                                 \
      VT b = sb ? VLD8(qb + j) : (VT)LD(qb, 0);                                 \
      VST8((vexpr), qy + j);                                                    \
    }                                                                           \
  }
#endif

/* A broadcasting binary kernel: a (ST, loaded as CT), b (TB, loaded as BT
 * by LDB), output TO stored by STO; vflag: vexpr (same types) is valid. */
#define EW_BINX(name, TB, BT, LDB, TO, STO, expr, vflag, vexpr)                                         \
  __kernel void name(__global const ST *pa, __global const TB *pb, __global TO *py,                    \
                     __global const long *meta, int moff, int r, long n) {                           \
    __global const long *m = meta + moff;                                                              \
    EW_ROW(r, m, n);                                                                                   \
    __global const ST *qa = pa + oa;                                                                   \
    __global const TB *qb = pb + ob;                                                                   \
    __global TO *qy = py + oy;                                                                         \
    (void)sc; (void)oc;                                                                                \
    vflag##_VBIN(vexpr)                                                                                \
    for (; j < j1; j++) {                                                                              \
      CT a = LD(qa, j * sa);                                                                           \
      BT b = LDB(qb, j * sb);                                                                          \
      STO(qy, j, (expr));                                                                              \
    }                                                                                                  \
  }
#define NOV_VBIN(vexpr)
#define VEC_VBIN(vexpr) EW_VBIN(1, vexpr)
#define VFLT_VBIN(vexpr) EW_VBIN(EW_FLOAT, vexpr)
#define EW_BIN(name, TB, BT, LDB, TO, STO, expr) EW_BINX(name, TB, BT, LDB, TO, STO, expr, NOV, 0)
#define EW_SAME(name, expr) EW_BIN(name, ST, CT, LD, ST, SV, expr)
#define EW_SAMEV(name, expr, vflag, vexpr) EW_BINX(name, ST, CT, LD, ST, SV, expr, vflag, vexpr)
#define EW_PRED(name, expr) EW_BIN(name, ST, CT, LD, uchar, PL_ST, (uchar)(expr))

/* A unary kernel: x (CT) to TO stored by STO. */
#define EW_UN(name, TO, STO, expr)                                                                     \
  __kernel void name(__global const ST *px, __global TO *py, long n, float alpha, float beta) {        \
    EW_RUN(n);                                                                                         \
    typedef CT CTX;                                                                                    \
    for (; j < j1; j++) {                                                                              \
      CTX x = LD(px, j);                                                                                \
      STO(py, j, (expr));                                                                              \
    }                                                                                                  \
  }
/* A unary kernel to the same type whose expression also holds on VT
 * (casts written (CTX), the type of x in each loop): 8 elements a step. */
#if !EW_VEC
#define EW_VUN(expr)
#else
#define EW_VUN(expr)                                                                                   \
  {                                                                                                    \
    typedef VT CTX;                                                                                    \
    for (; j + 8 <= j1; j += 8) {                                                                      \
      CTX x = VLD8(px + j);                                                                            \
      VST8((expr), py + j);                                                                            \
    }                                                                                                  \
  }
#endif
#define EW_UNS(name, expr)                                                                             \
  __kernel void name(__global const ST *px, __global ST *py, long n, float alpha, float beta) {        \
    EW_RUN(n);                                                                                         \
    EW_VUN(expr)                                                                                       \
    typedef CT CTX;                                                                                    \
    for (; j < j1; j++) {                                                                              \
      CTX x = LD(px, j);                                                                               \
      SV(py, j, (expr));                                                                               \
    }                                                                                                  \
  }
/* Same, scalar only (expressions with scalar helpers). */
#define EW_UNS1(name, expr) EW_UN(name, ST, SV, expr)

/* ---- scalar helpers with ONNX integer semantics ---- */

inline CT s_div(CT a, CT b) {
#if EW_FLOAT
  return a / b;
#else
  if (b == 0) return 0;
#if T_IS_SIGNED
  if (b == (CT)-1) return (CT)(-a);
#endif
  return a / b;
#endif
}

/* Mod with fmod=0: the result has the sign of the divisor. */
inline CT s_mod(CT a, CT b) {
#if EW_FLOAT
  CT m = fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
#else
  if (b == 0) return 0;
#if T_IS_SIGNED
  if (b == (CT)-1) return 0;
  CT m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
#else
  return a % b;
#endif
#endif
}

/* Mod with fmod=1: truncated remainder, the sign of the dividend. */
inline CT s_fmod(CT a, CT b) {
#if EW_FLOAT
  return fmod(a, b);
#else
  if (b == 0) return 0;
#if T_IS_SIGNED
  if (b == (CT)-1) return 0;
#endif
  return a % b;
#endif
}

/* Integer power by squaring (wraps on overflow); negative exponents
 * truncate 1/a^|e| toward zero. */
inline CT s_ipow(CT a, long e) {
  if (e < 0) {
#if !EW_FLOAT && T_IS_SIGNED
    if (a == (CT)-1) return (e & 1) ? (CT)-1 : (CT)1;
#endif
    return a == (CT)1 ? (CT)1 : (CT)0;
  }
  CT r = 1;
  while (e) {
    if (e & 1) r *= a;
    a *= a;
    e >>= 1;
  }
  return r;
}

/* a ** e for a floating-point exponent. */
inline CT s_powf(CT a, float e) {
#if EW_FLOAT
  return pow(a, (CT)e);
#else
  if (e == floor(e) && fabs(e) < 9.0e18f) return s_ipow(a, (long)e);
  float p = pow((float)a, e);
  return (p == p && fabs(p) < 9.0e18f) ? (CT)p : (CT)0; /* NaN or out of range: 0 */
#endif
}
#ifdef cl_khr_fp64
inline CT s_powd(CT a, double e) {
#if EW_FLOAT
  return (CT)pow((double)a, e);
#else
  if (e == floor(e) && fabs(e) < 9.0e18) return s_ipow(a, (long)e);
  double p = pow((double)a, e);
  return (p == p && fabs(p) < 9.0e18) ? (CT)p : (CT)0; /* NaN or out of range: 0 */
#endif
}
#endif
/* a ** e for an integer exponent. */
inline CT s_powi(CT a, long e) {
#if EW_FLOAT
  return pow(a, (CT)e);
#else
  return s_ipow(a, e);
#endif
}

/* Max/Min propagate NaN like numpy. */
inline CT s_max(CT a, CT b) {
#if EW_FLOAT
  if (isnan(a) || isnan(b)) return a + b;
#endif
  return a > b ? a : b;
}
inline CT s_min(CT a, CT b) {
#if EW_FLOAT
  if (isnan(a) || isnan(b)) return a + b;
#endif
  return a < b ? a : b;
}

/* ---- broadcasting binary ops ---- */

EW_SAMEV(ew_add, a + b, VEC, a + b)
EW_SAMEV(ew_sub, a - b, VEC, a - b)
EW_SAMEV(ew_mul, a * b, VEC, a * b)
EW_SAMEV(ew_div, s_div(a, b), VFLT, a / b)
EW_SAME(ew_mod, s_mod(a, b))
EW_SAME(ew_fmod, s_fmod(a, b))
EW_SAME(ew_max, s_max(a, b))
EW_SAME(ew_min, s_min(a, b))
EW_SAMEV(ew_prelu, a < 0 ? b * a : a, VEC, a < (VT)0 ? b * a : a)
#if !EW_FLOAT
EW_SAME(ew_shl, b >= (CT)(8 * sizeof(CT)) ? (CT)0 : (CT)(a << b))
EW_SAME(ew_shr, b >= (CT)(8 * sizeof(CT)) ? (CT)0 : (CT)(a >> b))
#endif

/* Pow, one kernel per exponent dtype (ONNX dtype number). */
#if T_DTYPE == 1 /* float ** float: the vector pow() (8 lanes) is far faster than scalar calls */
EW_SAMEV(ew_pow_e1, s_powf(a, b), VEC, pow(a, b))
#else
EW_BIN(ew_pow_e1, float, float, PL_LD, ST, SV, s_powf(a, b))
#endif
EW_BIN(ew_pow_e10, half, float, LD_HALF, ST, SV, s_powf(a, b))
EW_BIN(ew_pow_e16, ushort, float, LD_BF16, ST, SV, s_powf(a, b))
EW_BIN(ew_pow_e2, uchar, long, PL_LD, ST, SV, s_powi(a, b))
EW_BIN(ew_pow_e3, char, long, PL_LD, ST, SV, s_powi(a, b))
EW_BIN(ew_pow_e4, ushort, long, PL_LD, ST, SV, s_powi(a, b))
EW_BIN(ew_pow_e5, short, long, PL_LD, ST, SV, s_powi(a, b))
EW_BIN(ew_pow_e6, int, long, PL_LD, ST, SV, s_powi(a, b))
EW_BIN(ew_pow_e7, long, long, PL_LD, ST, SV, s_powi(a, b))
EW_BIN(ew_pow_e12, uint, long, PL_LD, ST, SV, s_powi(a, b))
EW_BIN(ew_pow_e13, ulong, long, PL_LD, ST, SV, s_powi(a, b))
#ifdef cl_khr_fp64
EW_BIN(ew_pow_e11, double, double, PL_LD, ST, SV, s_powd(a, b))
#endif

/* comparisons and logic: bool (uchar 0/1) outputs */
EW_PRED(ew_equal, a == b)
EW_PRED(ew_less, a < b)
EW_PRED(ew_greater, a > b)
EW_PRED(ew_less_equal, a <= b)
EW_PRED(ew_greater_equal, a >= b)
EW_PRED(ew_and, a && b)
EW_PRED(ew_or, a || b)
EW_PRED(ew_xor, (a != 0) != (b != 0))

/* Where(cond, x, y): elements are copied in their raw type. */
__kernel void ew_where(__global const uchar *pc, __global const RT *px, __global const RT *pyy, __global RT *out,
                       __global const long *meta, int moff, int r, long n) {
  __global const long *m = meta + moff;
  EW_ROW(r, m, n);
  for (; j < j1; j++) out[oy + j] = pc[oa + j * sa] ? px[ob + j * sb] : pyy[oc + j * sc];
}

/* ---- unary ops ---- */

/* Clip: bounds from a device scalar (mode 1), the float argument (mode 2) or none (0). */
__kernel void ew_clip(__global const ST *px, __global const ST *plo, __global const ST *phi, __global ST *py, long n,
                      int lo_mode, int hi_mode, float flo, float fhi) {
  CT lo = lo_mode == 1 ? LD(plo, 0) : (CT)flo;
  CT hi = hi_mode == 1 ? LD(phi, 0) : (CT)fhi;
  EW_RUN(n);
  for (; j < j1; j++) {
    CT x = LD(px, j);
    if (lo_mode && x < lo) x = lo;
    if (hi_mode && x > hi) x = hi;
    SV(py, j, x);
  }
}

__kernel void ew_copy(__global const RT *px, __global RT *py, long n) {
  EW_RUN(n);
  for (; j < j1; j++) py[j] = px[j];
}

#if EW_FLOAT
#define EW_ABS(x) fabs(x)
#else
#if T_IS_SIGNED
#define EW_ABS(x) ((x) < (CTX)0 ? (CTX)(-(x)) : (x))
#else
#define EW_ABS(x) (x)
#endif
#endif

EW_UNS(ew_abs, EW_ABS(x))
EW_UNS(ew_neg, (CTX)(-x))
EW_UNS(ew_sign, x > (CTX)0 ? (CTX)1 : x < (CTX)0 ? (CTX)(-1) : x)
EW_UNS(ew_relu, x < (CTX)0 ? (CTX)0 : x)
EW_UNS1(ew_shrink, x < -alpha ? (CTX)(x + beta) : x > alpha ? (CTX)(x - beta) : (CTX)0)
EW_UN(ew_not, uchar, PL_ST, (uchar)(x == 0))

#if EW_FLOAT
inline CT s_softplus(CT x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

EW_UNS(ew_exp, exp(x))
EW_UNS(ew_log, log(x))
EW_UNS(ew_sqrt, sqrt(x))
EW_UNS(ew_reciprocal, (CTX)1 / x)
EW_UNS(ew_floor, floor(x))
EW_UNS(ew_ceil, ceil(x))
EW_UNS(ew_round, rint(x))
EW_UNS(ew_erf, erf(x))
EW_UNS(ew_sin, sin(x))
EW_UNS(ew_cos, cos(x))
EW_UNS(ew_tan, tan(x))
EW_UNS(ew_asin, asin(x))
EW_UNS(ew_acos, acos(x))
EW_UNS(ew_atan, atan(x))
EW_UNS(ew_sinh, sinh(x))
EW_UNS(ew_cosh, cosh(x))
EW_UNS(ew_asinh, asinh(x))
EW_UNS(ew_acosh, acosh(x))
EW_UNS(ew_atanh, atanh(x))
EW_UNS(ew_tanh, tanh(x))
EW_UNS(ew_sigmoid, (CTX)1 / ((CTX)1 + exp(-x)))
EW_UNS(ew_leaky_relu, x < 0 ? (CTX)alpha * x : x)
EW_UNS(ew_elu, x < 0 ? (CTX)alpha * expm1(x) : x)
EW_UNS(ew_selu, x > 0 ? (CTX)beta * x : (CTX)beta * ((CTX)alpha * exp(x) - (CTX)alpha))
EW_UNS(ew_celu, fmax(x, (CTX)0) + fmin((CTX)0, (CTX)alpha * expm1(x / (CTX)alpha)))
EW_UNS(ew_hard_sigmoid, fmax((CTX)0, fmin((CTX)1, (CTX)alpha * x + (CTX)beta)))
EW_UNS(ew_hard_swish, x * fmax((CTX)0, fmin((CTX)1, x / (CTX)6 + (CTX)0.5f)))
EW_UNS1(ew_softplus, s_softplus(x))
EW_UNS(ew_softsign, x / ((CTX)1 + fabs(x)))
EW_UNS(ew_thresholded_relu, x > (CTX)alpha ? x : (CTX)0)
EW_UNS1(ew_mish, x * tanh(s_softplus(x)))
EW_UNS(ew_divn, x / (CTX)alpha)
/* Pow by a constant exponent (ops/elementwise.c ew_pow_const): 2, 3, 0.5
 * (pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf, where sqrt gives -0 and NaN)
 * and -1 (ew_reciprocal). */
EW_UNS(ew_square, x * x)
EW_UNS(ew_cube, x * x * x)
EW_UNS(ew_sqrt_pow, x == (CTX)(-INFINITY) ? (CTX)INFINITY : sqrt(x) + (CTX)0)
EW_UN(ew_isnan, uchar, PL_ST, (uchar)(x != x))
EW_UN(ew_isinf, uchar, PL_ST, (uchar)(isinf(x) && ((x > 0 && alpha != 0) || (x < 0 && beta != 0))))
#endif
