/* norm.cl: normalizations and (de)quantization. Built in one of two forms:
 *
 *  - with a floating element type T (T_IS_FLOAT, -DT=float/double):
 *      norm_rows     mean/variance normalization of "rows" given by strided
 *                    outer and inner index sets, one work-group per row with a
 *                    local-memory reduction (LayerNormalization,
 *                    InstanceNormalization, GroupNormalization,
 *                    MeanVarianceNormalization), optional scale/bias and
 *                    Mean/InvStdDev outputs;
 *      batchnorm     per-channel affine normalization (inference);
 *      bn_stats      per-channel batch mean/variance and running statistics
 *                    (BatchNormalization training mode);
 *      lrn           LocalResponseNormalization across channels;
 *      dequantize    (x - zero_point) * scale to T from QT (-DQT=uchar ...);
 *      dq_params     DynamicQuantizeLinear's scale and zero point (one work-group).
 *  - with a quantized element type T (T_IS_FLOAT == 0, -DT=uchar/char):
 *      quantize      saturate(rint(x / scale) + zero_point) from float.
 *
 * Per-axis scales: element i uses scale[(i / adiv) % alen] (alen 1 = scalar).
 *
 * fp16 storage (T_DTYPE 10, an fp16 plan: runtime/precision.c): norm_rows
 * and batchnorm read and write half through kiln_ldh / kiln_svh (half_io.cl)
 * (core OpenCL, no cl_khr_fp16 needed) and compute in T = float. The storage
 * convention, as in elementwise.cl: ST the buffer element type, LD(p, i) and
 * SV(p, i, v) an element's load and store, VLOAD / VSTORE vectors of them. */
#if defined(T_IS_DOUBLE) && T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if T_DTYPE == 10
#undef T
#define T float
#undef T_IS_FLOAT
#define T_IS_FLOAT 1
#define ST half
#define LD(p, i) kiln_ldh((p), (i))
#define SV(p, i, v) kiln_svh((p), (i), (v))
#else
#define ST T
#define LD(p, i) ((p)[i])
#define SV(p, i, v) ((p)[i] = (v))
#endif

#define MAXR 8

/* a / b rounded to nearest. OpenCL allows float division an error of 2.5 ulp
 * (unless a program is built with -cl-fp32-correctly-rounded-divide-sqrt), and
 * NVIDIA's driver uses that allowance: a quotient of exactly k + 0.5 can land
 * just below it, and rint() then rounds the wrong way (DynamicQuantizeLinear
 * gave 25 for 26 on an H100). One fma residual step corrects it. */
inline float div_rn(float a, float b) {
  float q = a / b;
  return q + fma(-q, b, a) / b;
}

#if T_IS_FLOAT
#ifndef NORM_WG
  #define NORM_WG 64   // work-items per row in norm_rows and bn_stats (power of two); the host always sets it (norm_rows: per instance, kernels/norm.c)
#endif

/* Sum of v over the work-group (NORM_WG items); all items get the result. */
inline T wg_sum(T v, __local T *red) {
#if NORM_WG == 1
  return v;
#else
  const int l = get_local_id(0);
  red[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = NORM_WG / 2; s > 0; s >>= 1) {
    if (l < s) red[l] += red[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  T r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
#endif
}

/* *a and *b summed over the work-group (NORM_WG items, red holds 2 *
 * NORM_WG); all items get the sums. One reduction for two values: half the
 * barriers of two wg_sum calls. */
inline void wg_sum2(T *a, T *b, __local T *red) {
#if NORM_WG > 1
  const int l = get_local_id(0);
  red[l] = *a;
  red[NORM_WG + l] = *b;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = NORM_WG / 2; s > 0; s >>= 1) {
    if (l < s) {
      red[l] += red[l + s];
      red[NORM_WG + l] += red[NORM_WG + l + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *a = red[0];
  *b = red[NORM_WG];
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
}

/* Offset of element j of a row: inner index decomposed over meta's inner dims. */
inline long inner_off(__global const long *meta, long j) {
  const int ni = (int)meta[2 + 2 * MAXR];
  if (ni == 1) return j * meta[3 + 2 * MAXR + MAXR];
  long off = 0;
  for (int d = ni - 1; d >= 0; d--) {
    long c = j % meta[3 + 2 * MAXR + d];
    j /= meta[3 + 2 * MAXR + d];
    off += c * meta[3 + 3 * MAXR + d];
  }
  return off;
}

#ifndef NORM_VW
  #define NORM_VW 1   // norm_rows: elements per vector load along a contiguous row (1, 2, 4, 8, 16; >1 only for rows with unit inner stride); the host always sets it (per instance, kernels/norm.c)
#endif
#ifndef NORM_BLK
  #define NORM_BLK 0  // norm_rows: 0 cyclic elements per work-item (GPU-style), 1 one contiguous block per work-item (CPU-style)
#endif
#define NR_CAT_(a, b) a##b
#define NR_CAT(a, b) NR_CAT_(a, b)
#if NORM_VW > 1
typedef NR_CAT(T, NORM_VW) VT;
#if T_DTYPE == 10
#define VLOAD(i, p) NR_CAT(kiln_vldh, NORM_VW)((i), (p))
#define VSTORE(v, i, p) NR_CAT(kiln_vsth, NORM_VW)((v), (i), (p))
#else
#define VLOAD(i, p) GLDU(NORM_VW, i, p) /* vec_io.cl */
#define VSTORE(v, i, p) GSTU(NORM_VW, v, i, p)
#endif
inline T vsum(VT a) {
#if NORM_VW == 2
  return a.s0 + a.s1;
#elif NORM_VW == 4
  return (a.s0 + a.s1) + (a.s2 + a.s3);
#elif NORM_VW == 8
  return ((a.s0 + a.s1) + (a.s2 + a.s3)) + ((a.s4 + a.s5) + (a.s6 + a.s7));
#else /* 16: lane by lane (a.lo + a.hi made oclgrind report the sums uninitialized) */
  return (((a.s0 + a.s1) + (a.s2 + a.s3)) + ((a.s4 + a.s5) + (a.s6 + a.s7))) +
         (((a.s8 + a.s9) + (a.sa + a.sb)) + ((a.sc + a.sd) + (a.se + a.sf)));
#endif
}
#endif

/* a % m and a / d without the 64-bit division in the cases rows hit most
 * (a < m, d == 1): norm_rows computes about a dozen per row, which cost
 * POCL as much as a LayerNormalization row of 320 elements. */
#define MOD_LT(a, m) ((a) < (m) ? (a) : (a) % (m))
#define DIV1(a, d) ((d) == 1 ? (a) : (a) / (d))

/* sidx_step on values (no addresses taken: in the vector loop it measured
 * faster on POCL) */
#define SIDX_STEP(rem, qm, sr, sq, jdiv, jmod)             \
  do {                                                     \
    (rem) += (sr);                                         \
    (qm) += (sq);                                          \
    if ((rem) >= (jdiv)) { (rem) -= (jdiv); (qm)++; }      \
    if ((qm) >= (jmod)) (qm) -= (jmod);                    \
  } while (0)

/* Advances norm_rows' scale/bias index of element j, kept as rem = j % jdiv
 * and qm = (j / jdiv) % jmod, by a step of sq * jdiv + sr elements
 * (sr = step % jdiv, sq = step / jdiv % jmod, computed once per loop). */
inline void sidx_step(long *rem, long *qm, const long sr, const long sq, const long jdiv, const long jmod) {
  *rem += sr;
  *qm += sq;
  if (*rem >= jdiv) { *rem -= jdiv; (*qm)++; }
  if (*qm >= jmod) *qm -= jmod;
}

/* SiLU's exp: kiln_expN (kernels/fastmath.cl) on float, the builtin on
 * double. On POCL it took vae_decoder_16's GroupNormalization + SiLU
 * kernels from 11.1 to 9.0 ms in all (alternated runs, default parameters,
 * 8 wide). */
#if T_IS_DOUBLE
#define NORM_EXP1(v) exp(v)
#define NORM_EXPV(v) exp(v)
#else
#define NORM_EXP1(v) kiln_exp1(v)
#define NORM_EXPV(v) NR_CAT(kiln_exp, NORM_VW)(v)
#endif
/* Activation after a normalization (flags bits 128.. of norm_rows). */
inline T norm_act(T v, int flags) {
  if (flags & 128) return fmax(v, (T)0);                 /* Relu */
  if (flags & 256) return v / ((T)1 + NORM_EXP1(-v));   /* SiLU: x * Sigmoid(x) */
  return v;
}
#if NORM_VW > 1
inline VT norm_act_v(VT v, int flags) {
  if (flags & 128) return fmax(v, (VT)0);
  if (flags & 256) return v / ((VT)1 + NORM_EXPV(-v));
  return v;
}
#endif

/* norm_rows: one work-group (NORM_WG items) per row r.
 * meta (longs): [0] L (row length), [1] no, [2..] outer dims[8], outer
 * strides[8], [2+2*MAXR] ni, inner dims[8], inner strides[8], then
 * [3+4*MAXR..] rdiv, rmod, rmul, jdiv, jmod: the scale/bias index of element j
 * of row r is ((r / rdiv) % rmod) * rmul + (j / jdiv) % jmod.
 * flags: 1 scale, 2 bias, 4 epsilon added to the std dev instead of the
 * variance (MeanVarianceNormalization), 8 write mean[r], 16 write invstd[r],
 * 32 scale is a single value, 64 bias is a single value, 128 Relu after,
 * 256 SiLU (x * Sigmoid(x)) after, 512 no mean subtracted (RMSNorm: the
 * variance is the mean of the squares).
 * NORM_VW > 1: the row is contiguous (one inner axis of stride 1); its first
 * L / NORM_VW * NORM_VW elements are read as vectors, the tail one by one. */
/* NORM_WG 1: a work-item per row, in groups of the implementation's choice
 * (a group of one item per row cost POCL more than the row itself). */
#if NORM_WG > 1
__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1)))
#else
__kernel
#endif
void norm_rows(__global const ST *x, __global ST *y, __global const long *meta,
               __global const ST *scale, __global const ST *bias, const int flags, const T eps,
               __global ST *mean_out, __global ST *inv_out) {
  __local T red[2 * NORM_WG];
#if NORM_WG > 1
  const long r = get_group_id(0);
  const int l = get_local_id(0);
#else
  const long r = get_global_id(0);
  const int l = 0;
#endif
  const long L = meta[0];
  const int no = (int)meta[1];
  long base = 0, rem = r;
  if (no == 1) base = r * meta[2 + MAXR]; /* r < dims[0] */
  else
    for (int d = no - 1; d >= 0; d--) {
      long c = rem % meta[2 + d];
      rem /= meta[2 + d];
      base += c * meta[2 + MAXR + d];
    }
  __global const long *sp = meta + 3 + 4 * MAXR;
  const long srow = MOD_LT(DIV1(r, sp[0]), sp[1]) * sp[2];
  const long jdiv = sp[3], jmod = sp[4];

  /* The elements of the row item l takes: cyclic (j = l, l + NORM_WG, ...:
   * neighbouring items read neighbouring elements, as GPUs want) or, with
   * NORM_BLK, one contiguous block [j0, j1) per item (CPUs). Vectors: vector
   * indices [v0, v1) with stride vs, then the scalar tail [t0, t1) stride ts. */
#if NORM_BLK
  const long chunk = ((L + NORM_WG - 1) / NORM_WG + NORM_VW - 1) / NORM_VW * NORM_VW;
  const long j0 = min(L, (long)l * chunk), j1 = min(L, j0 + chunk);
#if NORM_VW > 1
  const long v0 = j0 / NORM_VW, v1 = j1 / NORM_VW, vs = 1, t0 = v1 * NORM_VW, t1 = j1, ts = 1;
#else
  const long t0 = j0, t1 = j1, ts = 1;
#endif
#elif NORM_VW > 1
  const long v0 = l, v1 = L / NORM_VW, vs = NORM_WG, t0 = L / NORM_VW * NORM_VW + l, t1 = L, ts = NORM_WG;
#else
  const long t0 = l, t1 = L, ts = NORM_WG;
#endif
  /* One read for both moments: sums of d = x - K and of d * d, K the row's
   * first element (var = E[d^2] - E[d]^2; the shift keeps the difference
   * from cancelling when the mean is large against the spread), where two
   * passes (the mean, then the squares about it) read the row twice: 5-10%
   * of vae_decoder_16's GroupNormalizations. RMSNorm (512): K = 0, the mean
   * of the squares. */
  T s = 0, s2 = 0;
#if NORM_VW > 1
  __global const ST *xr = x + base;
  const T K = (flags & 512) || L < 1 ? (T)0 : LD(xr, 0); /* (an empty row reads nothing) */
  {
    VT a = (VT)0, a2 = (VT)0;
    for (long v = v0; v < v1; v += vs) {
      const VT d = VLOAD(v, xr) - (VT)K;
      a += d;
      a2 += d * d;
    }
    s = vsum(a);
    s2 = vsum(a2);
  }
  for (long j = t0; j < t1; j += ts) {
    const T d = LD(xr, j) - K;
    s += d;
    s2 += d * d;
  }
#else
  const T K = (flags & 512) || L < 1 ? (T)0 : LD(x, base);
  for (long j = t0; j < t1; j += ts) {
    const T d = LD(x, base + inner_off(meta, j)) - K;
    s += d;
    s2 += d * d;
  }
#endif
  const T n = (T)max(L, (long)1);
  wg_sum2(&s, &s2, red);
  const T m = s / n, q = s2 / n;
  const T mean = (flags & 512) ? (T)0 : K + m;
  const T var = (flags & 512) ? q : fmax(q - m * m, (T)0);
  const T inv = (flags & 4) ? (T)1 / (sqrt(var) + eps) : (T)1 / sqrt(var + eps);
  /* The scale/bias index of element j, (j / jdiv) % jmod, is kept as a
   * remainder and a quotient mod jmod advanced by each step: no 64-bit
   * division per element (GroupNorm's 65k-element rows spent more time in
   * those divisions than in memory). */
#if NORM_VW > 1
  {
    long rem = MOD_LT(v0 * NORM_VW, jdiv), qm = MOD_LT(DIV1(v0 * NORM_VW, jdiv), jmod);
    const long gap = (vs - 1) * NORM_VW, gr = MOD_LT(gap, jdiv), gq = MOD_LT(DIV1(gap, jdiv), jmod);
    const long wr = MOD_LT(NORM_VW, jdiv), wq = MOD_LT(DIV1(NORM_VW, jdiv), jmod), er = MOD_LT(1, jdiv), eq = MOD_LT(DIV1(1, jdiv), jmod);
    /* Vector positions are multiples of NORM_VW: with jdiv a multiple of
     * it (or jmod 1: one index per row) every vector has one scale/bias
     * index (1); with jdiv 1 and jmod a
     * multiple, consecutive ones (2: LayerNormalization); scale and bias
     * absent or single need no index (1). Otherwise (0) element by element,
     * in a loop of its own: the per-element branch inside the vector loop
     * made POCL run the whole loop 5x slower. */
    const bool idx = ((flags & 1) && !(flags & 32)) || ((flags & 2) && !(flags & 64));
    const long vstep = vs * NORM_VW, vr = MOD_LT(vstep, jdiv), vq = MOD_LT(DIV1(vstep, jdiv), jmod); /* one vector step */
    const int vmode = !idx || jmod == 1 || jdiv % NORM_VW == 0 ? 1 : jdiv == 1 && jmod % NORM_VW == 0 ? 2 : 0;
    for (long v = v0; v < v1 && vmode; v += vs) {
      VT e = (VLOAD(v, xr) - (VT)mean) * (VT)inv;
      const long si = srow + qm;
      if (vmode == 1) {
        if (flags & 1) e *= (VT)LD(scale, (flags & 32) ? 0 : si);
        if (flags & 2) e += (VT)LD(bias, (flags & 64) ? 0 : si);
      } else {
        if (flags & 1) e *= (flags & 32) ? (VT)LD(scale, 0) : VLOAD(0, scale + si);
        if (flags & 2) e += (flags & 64) ? (VT)LD(bias, 0) : VLOAD(0, bias + si);
      }
      VSTORE(norm_act_v(e, flags), v, y + base);
      SIDX_STEP(rem, qm, vr, vq, jdiv, jmod);
    }
    for (long v = v0; v < v1 && !vmode; v += vs) {
      for (int k = 0; k < NORM_VW; k++) {
        T e = (LD(xr, v * NORM_VW + k) - mean) * inv;
        const long si = srow + qm;
        if (flags & 1) e *= LD(scale, (flags & 32) ? 0 : si);
        if (flags & 2) e += LD(bias, (flags & 64) ? 0 : si);
        SV(y, base + v * NORM_VW + k, norm_act(e, flags));
        sidx_step(&rem, &qm, er, eq, jdiv, jmod);
      }
      sidx_step(&rem, &qm, gr, gq, jdiv, jmod);
    }
  }
#endif
  {
    long rem = MOD_LT(t0, jdiv), qm = MOD_LT(DIV1(t0, jdiv), jmod);
    const long sr = MOD_LT(ts, jdiv), sq = MOD_LT(DIV1(ts, jdiv), jmod);
    for (long j = t0; j < t1; j += ts) {
      long o = base + inner_off(meta, j);
      T v = (LD(x, o) - mean) * inv;
      const long si = srow + qm;
      if (flags & 1) v *= LD(scale, (flags & 32) ? 0 : si);
      if (flags & 2) v += LD(bias, (flags & 64) ? 0 : si);
      SV(y, o, norm_act(v, flags));
      sidx_step(&rem, &qm, sr, sq, jdiv, jmod);
    }
  }
  if (l == 0) {
    if (flags & 8) SV(mean_out, r, mean);
    if (flags & 16) SV(inv_out, r, inv);
  }
}

/* batchnorm: y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c],
 * c = (i / inner) % C. */
__kernel void batchnorm(__global const ST *x, __global ST *y, __global const ST *scale, __global const ST *bias,
                        __global const ST *mean, __global const ST *var, const T eps, const long C, const long inner, const long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = (i / inner) % C;
  SV(y, i, (LD(x, i) - LD(mean, c)) / sqrt(LD(var, c) + eps) * LD(scale, c) + LD(bias, c));
}

/* bn_stats: one work-group per channel c: batch mean and (population)
 * variance over N x inner into bmean/bvar; running statistics
 * rmean = in_mean * momentum + bmean * (1 - momentum) (same for var) when
 * has_rm. */
__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1)))
void bn_stats(__global const T *x, const long N, const long C, const long inner,
              __global T *bmean, __global T *bvar,
              __global const T *in_mean, __global const T *in_var, const T momentum, const int has_rm,
              __global T *rmean, __global T *rvar) {
  __local T red[NORM_WG];
  const long c = get_group_id(0);
  const int l = get_local_id(0);
  const long L = N * inner;
  T s = 0;
  for (long j = l; j < L; j += NORM_WG) s += x[((j / inner) * C + c) * inner + j % inner];
  const T mean = wg_sum(s, red) / (T)max(L, (long)1);
  s = 0;
  for (long j = l; j < L; j += NORM_WG) {
    T d = x[((j / inner) * C + c) * inner + j % inner] - mean;
    s += d * d;
  }
  const T var = wg_sum(s, red) / (T)max(L, (long)1);
  if (l == 0) {
    bmean[c] = mean;
    bvar[c] = var;
    if (has_rm) {
      rmean[c] = in_mean[c] * momentum + mean * ((T)1 - momentum);
      rvar[c] = in_var[c] * momentum + var * ((T)1 - momentum);
    }
  }
}

/* lrn: y = x / (bias + alpha / size * sum of x^2 over channels
 * [c - (size-1)/2, c + ceil((size-1)/2)]) ^ beta; channels at stride inner. */
__kernel void lrn(__global const T *x, __global T *y, const long C, const long inner, const int size,
                  const T alpha, const T beta, const T bias, const long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = (i / inner) % C;
  long lo = c - (size - 1) / 2, hi = c + size / 2;
  if (lo < 0) lo = 0;
  if (hi > C - 1) hi = C - 1;
  T s = 0;
  for (long k = lo; k <= hi; k++) {
    T v = x[i + (k - c) * inner];
    s += v * v;
  }
  y[i] = x[i] / pow(bias + alpha / (T)size * s, beta);
}

#ifdef QT
/* dequantize: y = (T)((int)x - zp) * scale, per-axis index (i / adiv) % alen. */
__kernel void dequantize(__global const QT *x, __global const float *scale, __global const QT *zp, const int has_zp,
                         __global T *y, const long adiv, const long alen, const long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long a = (i / adiv) % alen;
  int z = has_zp ? (int)zp[a] : 0;
  y[i] = (T)((float)((int)x[i] - z) * scale[a]);
}
#endif

/* dq_params: DynamicQuantizeLinear's y_scale = (max(x,0) - min(x,0)) / 255 and
 * y_zero_point = saturate(rint(-min / scale)); one work-group of NORM_WG. */
__kernel __attribute__((reqd_work_group_size(NORM_WG, 1, 1)))
void dq_params(__global const T *x, const long n, __global T *scale, __global uchar *zp) {
  __local T rmin[NORM_WG], rmax[NORM_WG];
  const int l = get_local_id(0);
  T lo = 0, hi = 0;
  for (long i = l; i < n; i += NORM_WG) { lo = fmin(lo, x[i]); hi = fmax(hi, x[i]); }
  rmin[l] = lo;
  rmax[l] = hi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = NORM_WG / 2; s > 0; s >>= 1) {
    if (l < s) { rmin[l] = fmin(rmin[l], rmin[l + s]); rmax[l] = fmax(rmax[l], rmax[l + s]); }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    T sc = div_rn(rmax[0] - rmin[0], 255.0f);
    T z = sc != 0 ? rint(clamp((T)0 - div_rn(rmin[0], sc), (T)0, (T)255)) : (T)0;
    scale[0] = sc;
    zp[0] = (uchar)z;
  }
}

#else /* quantized T ---------------------------------------------------------- */

#if T_IS_SIGNED
  #define QMIN (-128.0f)
  #define QMAX 127.0f
#else
  #define QMIN 0.0f
  #define QMAX 255.0f
#endif

/* quantize: y = saturate(rint(x / scale) + zp), per-axis index (i / adiv) % alen
 * (a zero scale, as DynamicQuantizeLinear gives for all-zero input, yields zp). */
__kernel void quantize(__global const float *x, __global const float *scale, __global const T *zp, const int has_zp,
                       __global T *y, const long adiv, const long alen, const long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long a = (i / adiv) % alen;
  float v = (scale[a] != 0 ? rint(div_rn(x[i], scale[a])) : 0.0f) + (has_zp ? (float)zp[a] : 0.0f);
  y[i] = (T)clamp(v, QMIN, QMAX);
}
#endif
