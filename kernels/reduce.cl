/* reduce.cl: reductions and row-wise normalizing ops:
 *   reduce_item / reduce_wg  ReduceSum, Mean, Max, Min, Prod, L1, L2, LogSum,
 *                            LogSumExp, SumSquare over arbitrary axes (meta buffer);
 *   rd_copy                  identity (noop_with_empty_axes);
 *   arg_reduce               ArgMax / ArgMin;
 *   softmax_item / _wg       Softmax, LogSoftmax, Hardmax along one axis;
 *   cumsum_line              CumSum (exclusive, reverse);
 *   topk_rank                TopK (rank of each element in its line, ties by lower index);
 *   nll_elem / nll_reduce    NegativeLogLikelihoodLoss (and the loss part of
 *                            SoftmaxCrossEntropyLoss after softmax_item in log mode).
 * Built once per element type T (-DT=float -DT_IS_FLOAT=1 ...) and class-index
 * type TI (-DTI=long or int).
 *
 * Reduction meta (longs): nk, nr, rcount, kept dims[8], kept strides[8],
 * reduced dims[8], reduced strides[8] (strides in elements of the input).
 * Lines for the axis ops are [outer, len, inner]: element j of line g sits at
 * (g / inner) * len * inner + g % inner + j * inner.
 *
 * fp16 storage (T_DTYPE 10, an fp16 plan: runtime/precision.c): the
 * reductions, rd_copy and the softmax kernels read and write half through
 * kiln_ldh / kiln_svh (half_io.cl) and accumulate in T = float (no vector
 * paths); ST is the buffer element type, LD(p, i) / SV(p, i, v) an element's
 * load and store (the convention of elementwise.cl and norm.cl). */

#if T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if T_DTYPE == 10
#undef T
#define T float
#undef T_IS_FLOAT
#define T_IS_FLOAT 1
#define RD_HALF 1
#define ST half
#define RT ushort /* raw element (copies) */
#define LD(p, i) kiln_ldh((p), (i))
#define SV(p, i, v) kiln_svh((p), (i), (v))
#else
#define RD_HALF 0
#define ST T
#define RT T
#define LD(p, i) ((p)[i])
#define SV(p, i, v) ((p)[i] = (v))
#endif

#ifndef RD_WG
  #define RD_WG 64 // work-items per work-group in the *_wg and nll_reduce kernels (power of two, 16..256; the host uses 64)
#endif
#ifndef RD_VW
  #define RD_VW 1 // reduce_* / softmax_*: consecutive elements per work-item step along a contiguous line (1, 2, 4, 8; the host sets >1 only for unit-stride lines)
#endif
#ifndef TI
  #define TI long // element type of class-index targets (NLL / SCE)
#endif

#define MAXR 8
#define RD_SUM 0
#define RD_MEAN 1
#define RD_MAX 2
#define RD_MIN 3
#define RD_PROD 4
#define RD_L1 5
#define RD_L2 6
#define RD_LOGSUM 7
#define RD_LOGSUMEXP 8
#define RD_SUMSQUARE 9

#if T_IS_FLOAT
typedef T acc_t;
#define ACC_LOWEST ((T)(-INFINITY))
#define ACC_HIGHEST ((T)INFINITY)
#else
typedef long acc_t;
/* limits of T (integer types up to 64 bits; the max/min of an empty set) */
#define T_BITS (8 * (int)sizeof(T))
#define ACC_LOWEST (T_IS_SIGNED ? (T_BITS == 64 ? LONG_MIN : -((long)1 << (T_BITS - 1))) : 0L)
#define ACC_HIGHEST (T_IS_SIGNED ? (T_BITS == 64 ? LONG_MAX : ((long)1 << (T_BITS - 1)) - 1) : (T_BITS == 64 ? -1L : ((long)1 << T_BITS) - 1))
#endif

/* ---- reductions ---------------------------------------------------------- */

inline acc_t rd_init(int op) {
  return op == RD_MAX ? ACC_LOWEST : op == RD_MIN ? ACC_HIGHEST : op == RD_PROD ? (acc_t)1 : (acc_t)0;
}

inline acc_t rd_map(int op, T v, acc_t m) {
  acc_t a = (acc_t)v;
  switch (op) {
  case RD_L1: return a < (acc_t)0 ? -a : a;
  case RD_L2: case RD_SUMSQUARE: return a * a;
#if T_IS_FLOAT
  case RD_LOGSUMEXP: return exp(a - m);
#endif
  default: return a;
  }
}

/* NaN propagates through max/min (as numpy does). */
inline acc_t rd_comb(int op, acc_t a, acc_t b) {
  switch (op) {
  case RD_MAX: return (b > a || b != b) ? b : a;
  case RD_MIN: return (b < a || b != b) ? b : a;
  case RD_PROD: return a * b;
  default: return a + b;
  }
}

inline acc_t rd_final(int op, acc_t acc, long count, acc_t m) {
  switch (op) {
#if T_IS_FLOAT
  case RD_MEAN: return acc / (acc_t)count;
  case RD_L2: return sqrt(acc);
  case RD_LOGSUM: return log(acc);
  case RD_LOGSUMEXP: return isinf(m) ? m : m + log(acc);
#else
  case RD_MEAN: return count ? acc / count : 0;
#endif
  default: return acc;
  }
}

/* Input offset of the first element reduced into output o. */
inline long rd_base(__global const long *meta, long o) {
  int nk = (int)meta[0];
  long b = 0;
  for (int d = nk - 1; d >= 0; d--) {
    long kd = meta[3 + d];
    b += (o % kd) * meta[3 + MAXR + d];
    o /= kd;
  }
  return b;
}

/* Offset of the j-th reduced element relative to the base. */
inline long rd_off(__global const long *meta, long j) {
  int nr = (int)meta[1];
  if (nr == 1) return j * meta[3 + 3 * MAXR];
  long off = 0;
  for (int d = nr - 1; d >= 0; d--) {
    long rd = meta[3 + 2 * MAXR + d];
    off += (j % rd) * meta[3 + 3 * MAXR + d];
    j /= rd;
  }
  return off;
}

#if T_IS_FLOAT && RD_VW == 8 && !RD_HALF
/* Floating-point lines of unit stride, 8 lanes at a time (RD_VW 8): the
 * lanes are partial results combined at the end. */
#define RD_CAT_(a, b) a##b
#define RD_CAT(a, b) RD_CAT_(a, b)
typedef RD_CAT(T, 8) RVT;
#define RD_VEC 1

inline RVT rd_vmap(int op, RVT v, T m) {
  switch (op) {
  case RD_L1: return fabs(v);
  case RD_L2: case RD_SUMSQUARE: return v * v;
  case RD_LOGSUMEXP: return exp(v - m);
  default: return v;
  }
}

inline RVT rd_vcomb(int op, RVT a, RVT b) {
  switch (op) {
  case RD_MAX: return ((b > a) | isnan(b)) ? b : a;
  case RD_MIN: return ((b < a) | isnan(b)) ? b : a;
  case RD_PROD: return a * b;
  default: return a + b;
  }
}

/* op over xl[0, rc) into acc (lane partials, then the tail in order) */
inline acc_t rd_line_vec(int op, __global const T *xl, long rc, acc_t acc, acc_t m) {
  RVT pv = (RVT)rd_init(op);
  long j = 0;
  for (; j + 8 <= rc; j += 8) pv = rd_vcomb(op, pv, rd_vmap(op, vload8(0, xl + j), m));
  T lanes[8];
  vstore8(pv, 0, lanes);
  for (int k = 0; k < 8; k++) acc = rd_comb(op, acc, lanes[k]);
  for (; j < rc; j++) acc = rd_comb(op, acc, rd_map(op, xl[j], m));
  return acc;
}
#else
#define RD_VEC 0
#endif

/* One work-item per output element. */
__kernel void reduce_item(__global const ST *x, __global ST *y, __global const long *meta, long nout, int op) {
  long o = get_global_id(0);
  if (o >= nout) return;
  long base = rd_base(meta, o), rc = meta[2];
  acc_t m = 0;
#if T_IS_FLOAT
  if (op == RD_LOGSUMEXP) {
    m = -INFINITY;
    for (long j = 0; j < rc; j++) m = fmax(m, LD(x, base + rd_off(meta, j)));
  }
#endif
  acc_t acc = rd_init(op);
#if RD_VEC
  acc = rd_line_vec(op, x + base, rc, acc, m);
#elif RD_VW > 1
  /* a unit-stride reduced line: RD_VW independent partial results */
  __global const ST *xl = x + base;
  acc_t part[RD_VW];
  for (int k = 0; k < RD_VW; k++) part[k] = rd_init(op);
  long j = 0;
  for (; j + RD_VW <= rc; j += RD_VW)
    for (int k = 0; k < RD_VW; k++) part[k] = rd_comb(op, part[k], rd_map(op, LD(xl, j + k), m));
  for (; j < rc; j++) acc = rd_comb(op, acc, rd_map(op, LD(xl, j), m));
  for (int k = 0; k < RD_VW; k++) acc = rd_comb(op, acc, part[k]);
#else
  for (long j = 0; j < rc; j++) acc = rd_comb(op, acc, rd_map(op, LD(x, base + rd_off(meta, j)), m));
#endif
  SV(y, o, (T)rd_final(op, acc, rc, m));
}

/* One work-group of RD_WG items per output element (long reductions). */
__kernel __attribute__((reqd_work_group_size(RD_WG, 1, 1)))
void reduce_wg(__global const ST *x, __global ST *y, __global const long *meta, long nout, int op) {
  __local acc_t buf[RD_WG];
  long o = get_group_id(0);
  int l = (int)get_local_id(0);
  if (o >= nout) return; /* uniform over the group */
  long base = rd_base(meta, o), rc = meta[2];
  acc_t m = 0;
#if T_IS_FLOAT
  if (op == RD_LOGSUMEXP) {
    m = -INFINITY;
    for (long j = l; j < rc; j += RD_WG) m = fmax(m, LD(x, base + rd_off(meta, j)));
    buf[l] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = RD_WG / 2; s > 0; s >>= 1) {
      if (l < s) buf[l] = fmax(buf[l], buf[l + s]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#endif
  acc_t acc = rd_init(op);
#if RD_VW > 1
  /* a unit-stride reduced line: each item takes RD_VW consecutive elements per step */
  __global const ST *xl = x + base;
  for (long j0 = (long)l * RD_VW; j0 < rc; j0 += RD_WG * RD_VW)
    for (int k = 0; k < RD_VW; k++)
      if (j0 + k < rc) acc = rd_comb(op, acc, rd_map(op, LD(xl, j0 + k), m));
#else
  for (long j = l; j < rc; j += RD_WG) acc = rd_comb(op, acc, rd_map(op, LD(x, base + rd_off(meta, j)), m));
#endif
  buf[l] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = RD_WG / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] = rd_comb(op, buf[l], buf[l + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) SV(y, o, (T)rd_final(op, buf[0], rc, m));
}

__kernel void rd_copy(__global const RT *x, __global RT *y, long n) {
  long i = get_global_id(0);
  if (i < n) y[i] = x[i];
}

/* ---- ArgMax / ArgMin: one work-item per line ------------------------------ */

__kernel void arg_reduce(__global const T *x, __global long *y, long n, long len, long inner, int is_min, int last) {
  long g = get_global_id(0);
  if (g >= n) return;
  long base = (g / inner) * len * inner + g % inner;
  long bi = 0;
  if (len > 0) {
    T best = x[base];
    for (long j = 1; j < len; j++) {
      T v = x[base + j * inner];
      bool better = is_min ? (v < best) : (v > best);
      if (better || (last && v == best)) { best = v; bi = j; }
    }
  }
  y[g] = bi;
}

/* ---- CumSum: one work-item per line --------------------------------------- */

__kernel void cumsum_line(__global const T *x, __global T *y, long n, long len, long inner, int exclusive, int reverse) {
  long g = get_global_id(0);
  if (g >= n) return;
  long base = (g / inner) * len * inner + g % inner;
  acc_t s = 0;
  for (long t = 0; t < len; t++) {
    long p = base + (reverse ? len - 1 - t : t) * inner;
    acc_t v = (acc_t)x[p];
    if (exclusive) { y[p] = (T)s; s += v; }
    else { s += v; y[p] = (T)s; }
  }
}

/* ---- TopK: one work-item per input element -------------------------------- */

/* Element j of its line goes to position rank (number of elements that come
 * before it: better value, or equal value and lower index) if rank < k. */
__kernel void topk_rank(__global const T *x, __global T *vals, __global long *idx, long total, long len, long inner, long k, int largest) {
  long g = get_global_id(0);
  if (g >= total) return;
  long i = g % inner, rest = g / inner;
  long j = rest % len, o = rest / len;
  long base = o * len * inner + i;
  T v = x[g];
  long rank = 0;
  for (long q = 0; q < len && rank < k; q++) {
    T w = x[base + q * inner];
    if (largest ? (w > v) : (w < v)) rank++;
    else if (w == v && q < j) rank++;
  }
  if (rank < k) {
    long p = (o * k + rank) * inner + i;
    vals[p] = v;
    idx[p] = j;
  }
}

#if T_IS_FLOAT
/* ---- Softmax / LogSoftmax / Hardmax --------------------------------------- */

#define SM_SOFTMAX 0
#define SM_LOGSOFTMAX 1
#define SM_HARDMAX 2

/* Softmax inputs: v_j = x[base + j * inner] * scale + mask[mbase + j * mstep]
 * (mask only when has_mask; the plan-time pass of passes.c fuses a scalar
 * Mul/Div and an additive mask in front of the softmax; plain nodes pass
 * scale 1 and no mask). mmeta (longs): nd, dims[8] of the rows' outer
 * coordinates, the mask's strides[8] over them, mstep. */
inline long sm_mbase(__global const long *mm, long r) {
  const int nd = (int)mm[0];
  long o = 0;
  for (int d = nd - 1; d >= 0; d--) {
    o += (r % mm[1 + d]) * mm[1 + MAXR + d];
    r /= mm[1 + d];
  }
  return o;
}
#define SM_LD(j) (LD(x, base + (j) * inner) * scale + (has_mask ? LD(mask, mbase + (j) * mstep) : (T)0))

#if RD_VEC
/* softmax_item on a unit-stride line (inner 1) whose mask, if any, steps by
 * 0 or 1: 16 lanes at a time (POCL's 16-lane exp ran twice as fast as its
 * 8-lane one on an AVX-512 CPU); softmax stores exp(v - max) and rescales it
 * in place (one exp per element). */
typedef RD_CAT(T, 16) SVT; /* global vectors through GLDU / GSTU (vec_io.cl) */
#define SM_VLD(j) (GLDU(16, 0, x + base + (j)) * scale + (has_mask ? (mstep ? GLDU(16, 0, mask + mbase + (j)) : (SVT)mask[mbase]) : (SVT)0))
/* horizontal max / sum through a private array (halving the vector with
 * .lo/.hi made Oclgrind report uninitialized values) */
inline T sm_hmax(SVT v) {
  T lanes[16];
  vstore16(v, 0, lanes);
  T m = lanes[0];
  for (int k = 1; k < 16; k++) m = fmax(m, lanes[k]);
  return m;
}
inline T sm_hsum(SVT v) {
  T lanes[16];
  vstore16(v, 0, lanes);
  T s = 0;
  for (int k = 0; k < 16; k++) s += lanes[k];
  return s;
}
inline void sm_line_vec(__global const T *x, __global T *y, long base, long len, int mode, const T scale, int has_mask,
                        __global const T *mask, long mbase, long mstep) {
  const long inner = 1; /* for SM_LD */
  SVT mv = (SVT)(-INFINITY);
  long j = 0;
  for (; j + 16 <= len; j += 16) mv = fmax(mv, SM_VLD(j));
  T m = sm_hmax(mv);
  for (; j < len; j++) m = fmax(m, SM_LD(j));
  SVT sv = (SVT)0;
  T s = 0;
  for (j = 0; j + 16 <= len; j += 16) {
    SVT e = exp(SM_VLD(j) - m);
    if (mode == SM_SOFTMAX) GSTU(16, e, 0, y + base + j);
    sv += e;
  }
  for (; j < len; j++) {
    T e = exp(SM_LD(j) - m);
    if (mode == SM_SOFTMAX) y[base + j] = e;
    s += e;
  }
  s += sm_hsum(sv);
  if (mode == SM_SOFTMAX) {
    T inv = (T)1 / s;
    for (j = 0; j + 16 <= len; j += 16) GSTU(16, GLDU(16, 0, y + base + j) * inv, 0, y + base + j);
    for (; j < len; j++) y[base + j] *= inv;
  } else {
    T ls = m + log(s);
    for (j = 0; j + 16 <= len; j += 16) GSTU(16, SM_VLD(j) - ls, 0, y + base + j);
    for (; j < len; j++) y[base + j] = SM_LD(j) - ls;
  }
}
#endif

/* One work-item per line; numerically stable (max subtracted). */
__kernel void softmax_item(__global const ST *x, __global ST *y, long rows, long len, long inner, int mode,
                           const T scale, int has_mask, __global const ST *mask, __global const long *mmeta) {
  long r = get_global_id(0);
  if (r >= rows) return;
  long base = (r / inner) * len * inner + r % inner;
  const long mbase = has_mask ? sm_mbase(mmeta, r) : 0, mstep = has_mask ? mmeta[1 + 2 * MAXR] : 0;
#if RD_VEC
  if (inner == 1 && mode != SM_HARDMAX && (mstep | 1) == 1) {
    sm_line_vec(x, y, base, len, mode, scale, has_mask, mask, mbase, mstep);
    return;
  }
#endif
  T m = -INFINITY;
  long am = 0;
  for (long j = 0; j < len; j++) {
    T v = SM_LD(j);
    if (v > m) { m = v; am = j; }
  }
  if (mode == SM_HARDMAX) {
    for (long j = 0; j < len; j++) SV(y, base + j * inner, j == am ? (T)1 : (T)0);
    return;
  }
  T s = 0;
#if RD_VW > 1
  /* unit-stride lines (inner == 1): RD_VW partial sums */
  T part[RD_VW];
  for (int k = 0; k < RD_VW; k++) part[k] = 0;
  long j = 0;
  for (; j + RD_VW <= len; j += RD_VW)
    for (int k = 0; k < RD_VW; k++) part[k] += exp(SM_LD(j + k) - m);
  for (; j < len; j++) s += exp(SM_LD(j) - m);
  for (int k = 0; k < RD_VW; k++) s += part[k];
#else
  for (long j = 0; j < len; j++) s += exp(SM_LD(j) - m);
#endif
  if (mode == SM_SOFTMAX) {
    T inv = (T)1 / s;
    for (long j = 0; j < len; j++) SV(y, base + j * inner, exp(SM_LD(j) - m) * inv);
  } else {
    T ls = m + log(s);
    for (long j = 0; j < len; j++) SV(y, base + j * inner, SM_LD(j) - ls);
  }
}

/* Loop of work-item l over a line of a work-group: RD_VW consecutive
 * elements per step (unit-stride lines) or one. */
#if RD_VW > 1
#define SM_FOR(j) for (long j##0 = (long)l * RD_VW; j##0 < len; j##0 += RD_WG * RD_VW) for (long j = j##0; j < j##0 + RD_VW && j < len; j++)
#else
#define SM_FOR(j) for (long j = l; j < len; j += RD_WG)
#endif

/* One work-group of RD_WG items per line (long lines); modes softmax / log-softmax. */
__kernel __attribute__((reqd_work_group_size(RD_WG, 1, 1)))
void softmax_wg(__global const ST *x, __global ST *y, long rows, long len, long inner, int mode,
                const T scale, int has_mask, __global const ST *mask, __global const long *mmeta) {
  __local T buf[RD_WG];
  long r = get_group_id(0);
  int l = (int)get_local_id(0);
  if (r >= rows) return; /* uniform over the group */
  long base = (r / inner) * len * inner + r % inner;
  const long mbase = has_mask ? sm_mbase(mmeta, r) : 0, mstep = has_mask ? mmeta[1 + 2 * MAXR] : 0;
  T m = -INFINITY;
  SM_FOR(j) m = fmax(m, SM_LD(j));
  buf[l] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = RD_WG / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] = fmax(buf[l], buf[l + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  T s = 0;
  SM_FOR(j) s += exp(SM_LD(j) - m);
  buf[l] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = RD_WG / 2; h > 0; h >>= 1) {
    if (l < h) buf[l] += buf[l + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  s = buf[0];
  if (mode == SM_SOFTMAX) {
    T inv = (T)1 / s;
    SM_FOR(j) SV(y, base + j * inner, exp(SM_LD(j) - m) * inv);
  } else {
    T ls = m + log(s);
    SM_FOR(j) SV(y, base + j * inner, SM_LD(j) - ls);
  }
}

/* ---- NegativeLogLikelihoodLoss -------------------------------------------- */

/* Per target element g of [N, D]: loss = -x[n, t, d] * w[t] and its weight
 * (0 for ignored targets; NaN loss for a class out of range). */
__kernel void nll_elem(__global const T *x, __global const TI *t, __global const T *w, __global T *loss, __global T *wt,
                       long n, long C, long D, long ignore, int has_ignore, int has_w) {
  long g = get_global_id(0);
  if (g >= n) return;
  long b = g / D, d = g % D;
  long c = (long)t[g];
  if (has_ignore && c == ignore) { loss[g] = 0; wt[g] = 0; return; }
  if (c < 0 || c >= C) { loss[g] = NAN; wt[g] = 0; return; }
  T ww = has_w ? w[c] : (T)1;
  loss[g] = -x[(b * C + c) * D + d] * ww;
  wt[g] = ww;
}

/* One work-group: y[0] = sum(loss) (mean: / sum(wt)). */
__kernel __attribute__((reqd_work_group_size(RD_WG, 1, 1)))
void nll_reduce(__global const T *loss, __global const T *wt, __global T *y, long n, int mean) {
  __local T bl[RD_WG], bw[RD_WG];
  int l = (int)get_local_id(0);
  T sl = 0, sw = 0;
  for (long j = l; j < n; j += RD_WG) { sl += loss[j]; sw += wt[j]; }
  bl[l] = sl;
  bw[l] = sw;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = RD_WG / 2; s > 0; s >>= 1) {
    if (l < s) { bl[l] += bl[l + s]; bw[l] += bw[l + s]; }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) y[0] = mean ? bl[0] / bw[0] : bl[0];
}
#endif /* T_IS_FLOAT */
