/* attention.cl: fused attention O = softmax(scale * Q K^T + mask) V over
 * batched heads (family "attention", runtime/ops/attention.c).
 *
 * One work-item per block of ATT_QR query rows of one batch entry (and per
 * slice of ATT_DV / ATT_DVS output columns). Keys are processed in blocks of
 * ATT_KB with an online softmax: the running maximum and sum of each row
 * rescale the output accumulator once per block, so the S x Skv score
 * matrix never reaches memory. Q, K, V, the mask and O are read and written
 * through strides (absorbed transposes, broadcast batch dimensions):
 *
 * meta (longs): nb, S, Skv, batch dims[ATT_MAXB], then for each operand
 * Q, K, V, M, O at M_OP(k): its strides over the batch dims[ATT_MAXB], its
 * row stride and its column stride (K: row = key, column = head dimension;
 * V: row = key, column = output column; M: row = query, column = key;
 * O: row = query, column = output column). Strides are in elements.
 *
 * Built per element type T (-DT=float ...) and head dimensions ATT_D,
 * ATT_DV (compile-time: the rows of Q and the accumulators live in private
 * memory).
 *
 * Two solvers, picked by ATT_ALGO:
 *  0 (rows): the above, each work-item's query rows as vectors along the
 *    head dimension (a horizontal sum per score).
 *  1 (blocked): the layout of a GEMM register tile. A work-item owns ATT_BQ
 *    consecutive query rows, held as one vector of ATT_BQ lanes per head
 *    column (Q^T in private memory), and walks the keys in blocks of ATT_BK:
 *    the block's scores are ATT_BK vectors (one per key, lanes = queries),
 *    each built with one FMA per head column of a K element broadcast, so a
 *    block is D x BK vector FMAs with no horizontal sums; the running maximum,
 *    sum and the exponentials are per lane (vector exp), and P V adds BK
 *    broadcast V elements times the probability vectors into the Dv output
 *    vectors. K's and V's strides are compile-time (ATT_KRS, ATT_KCS,
 *    ATT_VRS, ATT_VCS: the host sets them per instance), so a key block's
 *    loads are one base pointer plus constant offsets. */

#if T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef ATT_ALGO
  #define ATT_ALGO 0 // the host always sets it: the solver (0 rows, 1 blocked)
#endif
#ifndef ATT_D
  #define ATT_D 64   // head dimension of Q and K (the host always sets it)
#endif
#ifndef ATT_DV
  #define ATT_DV 64  // head dimension of V and O (the host always sets it)
#endif
#ifndef ATT_QR
  #define ATT_QR 1   // the host always sets it, per instance; query rows per work-item (1, 2, 4, 8): each K / V row read serves ATT_QR rows
#endif
#ifndef ATT_KB
  #define ATT_KB 16  // the host always sets it, per instance; keys per block: scores kept in private memory, one rescale of the accumulators per block (8..64)
#endif
#ifndef ATT_VW
  #define ATT_VW 1   // the host always sets it, per instance; vector width along the head dimensions (1, 2, 4, 8; unit column strides, ATT_D and ATT_DV / ATT_DVS multiples of it)
#endif
#ifndef ATT_DVS
  #define ATT_DVS 1  // work-items per row block, each computing ATT_DV / ATT_DVS output columns (each recomputes the scores)
#endif
#ifndef ATT_WG
  #define ATT_WG 4   // the host always sets it, per instance; work-group size of the launch (0: the driver's choice); the kernel does not depend on it
#endif

/* KMAD (multiply-add, fma where the device has it): fastmath.cl, prepended by the host */
#define ATT_MAXB 6
#define ATT_DVC (ATT_DV / ATT_DVS)
#define M_OP(k) (3 + ATT_MAXB + (k) * (ATT_MAXB + 2))

#define ATT_CAT_(a, b) a##b
#define ATT_CAT(a, b) ATT_CAT_(a, b)
#if ATT_VW > 1
  #define VT ATT_CAT(T, ATT_VW)
  /* element idx of a unit-stride row */
  #define LDV(base, idx, cs) ATT_CAT(vload, ATT_VW)(0, (base) + (idx))
  #define STV(x, base, idx, cs) ATT_CAT(vstore, ATT_VW)((x), 0, (base) + (idx))
  #if ATT_VW == 2
    #define HSUM(v) ((v).s0 + (v).s1)
  #elif ATT_VW == 4
    #define HSUM(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
  #else
    #define HSUM(v) ((((v).s0 + (v).s1) + ((v).s2 + (v).s3)) + (((v).s4 + (v).s5) + ((v).s6 + (v).s7)))
  #endif
#else
  #define VT T
  #define LDV(base, idx, cs) ((base)[(idx) * (cs)])
  #define STV(x, base, idx, cs) ((base)[(idx) * (cs)] = (x))
  #define HSUM(v) (v)
#endif

#if ATT_ALGO == 0
__kernel void attention(__global const T *q, __global const T *k, __global const T *v, __global const T *mask, __global T *o,
                        __global const long *meta, const T scale, const int has_mask, const long items) {
  const long gid = get_global_id(0);
  if (gid >= items) return;
  const int nb = (int)meta[0];
  const long S = meta[1], SKV = meta[2];
  const long rblocks = (S + ATT_QR - 1) / ATT_QR;
  const int slice = (int)(gid % ATT_DVS);
  const long t = gid / ATT_DVS;
  const long r0 = (t % rblocks) * ATT_QR;
  long bi = t / rblocks;
  long off[5] = {0, 0, 0, 0, 0};
  for (int d = nb - 1; d >= 0; d--) {
    const long c = bi % meta[3 + d];
    bi /= meta[3 + d];
    for (int e = 0; e < 5; e++) off[e] += c * meta[M_OP(e) + d];
  }
  const long qrs = meta[M_OP(0) + ATT_MAXB], qcs = meta[M_OP(0) + ATT_MAXB + 1];
  const long krs = meta[M_OP(1) + ATT_MAXB], kcs = meta[M_OP(1) + ATT_MAXB + 1];
  const long vrs = meta[M_OP(2) + ATT_MAXB], vcs = meta[M_OP(2) + ATT_MAXB + 1];
  const long mrs = meta[M_OP(3) + ATT_MAXB], mcs = meta[M_OP(3) + ATT_MAXB + 1];
  const long ors = meta[M_OP(4) + ATT_MAXB], ocs = meta[M_OP(4) + ATT_MAXB + 1];
  const int c0 = slice * ATT_DVC;

  /* the block's query rows, scaled (rows past S repeat the last one and are not stored) */
  VT qv[ATT_QR][ATT_D / ATT_VW];
  for (int r = 0; r < ATT_QR; r++) {
    const long row = min(r0 + r, S - 1);
    __global const T *qp = q + off[0] + row * qrs;
    for (int dd = 0; dd < ATT_D / ATT_VW; dd++) qv[r][dd] = LDV(qp, dd * ATT_VW, qcs) * scale;
  }
  VT acc[ATT_QR][ATT_DVC / ATT_VW];
  T mx[ATT_QR], sum[ATT_QR];
  for (int r = 0; r < ATT_QR; r++) {
    mx[r] = -INFINITY;
    sum[r] = 0;
    for (int c = 0; c < ATT_DVC / ATT_VW; c++) acc[r][c] = (VT)(0);
  }
  for (long j0 = 0; j0 < SKV; j0 += ATT_KB) {
    const int nk = (int)min((long)ATT_KB, SKV - j0);
    T s[ATT_QR][ATT_KB];
    /* scores of the block */
    for (int jj = 0; jj < nk; jj++) {
      __global const T *kp = k + off[1] + (j0 + jj) * krs;
      for (int r = 0; r < ATT_QR; r++) {
        VT a = (VT)(0);
        for (int dd = 0; dd < ATT_D / ATT_VW; dd++) a += qv[r][dd] * LDV(kp, dd * ATT_VW, kcs);
        T sc = HSUM(a);
        if (has_mask) sc += mask[off[3] + min(r0 + r, S - 1) * mrs + (j0 + jj) * mcs];
        s[r][jj] = sc;
      }
    }
    /* online softmax: new running maximum, rescale, probabilities of the block */
    for (int r = 0; r < ATT_QR; r++) {
      T mb = mx[r];
      for (int jj = 0; jj < nk; jj++) mb = fmax(mb, s[r][jj]);
      if (mb != mx[r]) {
        const T corr = exp(mx[r] - mb); /* 0 while everything so far was masked (-inf) */
        sum[r] *= corr;
        for (int c = 0; c < ATT_DVC / ATT_VW; c++) acc[r][c] *= corr;
        mx[r] = mb;
      }
      int jj = 0;
#if ATT_KB % 8 == 0
      /* eight keys at a time: exp on a vector (one scalar exp per score
       * was most of the time at long sequences: 15 ns per score on POCL) */
      ATT_CAT(T, 8) s8 = (ATT_CAT(T, 8))(0);
      for (; jj + 8 <= nk; jj += 8) {
        const ATT_CAT(T, 8) sv = vload8(0, &s[r][jj]);
        const ATT_CAT(T, 8) p = select(exp(sv - mb), (ATT_CAT(T, 8))(0), sv == (ATT_CAT(T, 8))(-INFINITY));
        vstore8(p, 0, &s[r][jj]);
        s8 += p;
      }
      sum[r] += ((s8.s0 + s8.s1) + (s8.s2 + s8.s3)) + ((s8.s4 + s8.s5) + (s8.s6 + s8.s7));
#endif
      for (; jj < nk; jj++) {
        const T p = s[r][jj] == -INFINITY ? (T)0 : exp(s[r][jj] - mb);
        s[r][jj] = p;
        sum[r] += p;
      }
    }
    /* accumulate P V */
    for (int jj = 0; jj < nk; jj++) {
      __global const T *vp = v + off[2] + (j0 + jj) * vrs + (long)c0 * vcs;
      for (int c = 0; c < ATT_DVC / ATT_VW; c++) {
        const VT vv = LDV(vp, c * ATT_VW, vcs);
        for (int r = 0; r < ATT_QR; r++) acc[r][c] += s[r][jj] * vv;
      }
    }
  }
  for (int r = 0; r < ATT_QR; r++) {
    if (r0 + r >= S) break;
    const T inv = (T)1 / sum[r];
    __global T *op = o + off[4] + (r0 + r) * ors + (long)c0 * ocs;
    for (int c = 0; c < ATT_DVC / ATT_VW; c++) STV(acc[r][c] * inv, op, c * ATT_VW, ocs);
  }
}
#else

#ifndef ATT_BQ
  #define ATT_BQ 16  // the host always sets it, per instance; query rows per work-item = vector lanes (4, 8, 16)
#endif
#ifndef ATT_BK
  #define ATT_BK 16  // the host always sets it, per instance; keys per block (score vectors kept in registers)
#endif
#ifndef ATT_KRS
  #define ATT_KRS ATT_D // K's key stride (the host always sets the four)
  #define ATT_KCS 1     // K's head-dimension stride
  #define ATT_VRS ATT_DV
  #define ATT_VCS 1
#endif
#define QV ATT_CAT(T, ATT_BQ)
#define QLOAD ATT_CAT(vload, ATT_BQ)
#define QSTORE ATT_CAT(vstore, ATT_BQ)

/* One block of ATT_BK keys from key j0 (TAIL: the last, partial block:
 * key rows clamped, scores past SKV -inf): scores, online softmax, P V. */
inline void att_block(const QV *qt, QV *acc, QV *mx, QV *sum, __global const T *kb, __global const T *vb, __global const T *mb, const long mrs,
                      const long mcs, const int has_mask, const long j0, const long SKV, const long r0, const long S, const int TAIL) {
  QV s[ATT_BK];
  _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) s[jj] = (QV)(0);
  /* key rows of the block: full blocks at constant offsets from kb */
  long kr[ATT_BK];
  _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) kr[jj] = (TAIL ? min(j0 + jj, SKV - 1) - j0 : (long)jj) * ATT_KRS;
  for (int d = 0; d < ATT_D; d++) {
    const QV q = qt[d];
    __global const T *kd = kb + d * ATT_KCS;
    _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) s[jj] = KMAD(q, (QV)(kd[kr[jj]]), s[jj]);
  }
  if (has_mask) {
    _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) {
      const long jc = TAIL ? min(j0 + jj, SKV - 1) : j0 + jj;
      if (mrs == 0) s[jj] += (QV)(mb[jc * mcs]);
      else {
        T col[ATT_BQ];
        _Pragma("unroll") for (int i = 0; i < ATT_BQ; i++) col[i] = mb[min(r0 + i, S - 1) * mrs + jc * mcs];
        s[jj] += QLOAD(0, col);
      }
    }
  }
  if (TAIL) {
    _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++)
      if (j0 + jj >= SKV) s[jj] = (QV)(-INFINITY);
  }
  /* online softmax per lane; a lane whose keys so far are all -inf subtracts 0 (exp gives 0, not NaN) */
  QV m = *mx;
  _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) m = fmax(m, s[jj]);
  const QV ms = select(m, (QV)(0), m == (QV)(-INFINITY));
  const QV corr = exp(*mx - ms);
  QV l = *sum * corr;
  _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) {
    s[jj] = exp(s[jj] - ms);
    l += s[jj];
  }
  *sum = l;
  *mx = m;
  long vr[ATT_BK];
  _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) vr[jj] = (TAIL ? min(j0 + jj, SKV - 1) - j0 : (long)jj) * ATT_VRS;
  for (int c = 0; c < ATT_DV; c++) {
    QV a = acc[c] * corr;
    __global const T *vc = vb + c * ATT_VCS;
    _Pragma("unroll") for (int jj = 0; jj < ATT_BK; jj++) a = KMAD(s[jj], (QV)(vc[vr[jj]]), a);
    acc[c] = a;
  }
}

__kernel void attention(__global const T *q, __global const T *k, __global const T *v, __global const T *mask, __global T *o,
                        __global const long *meta, const T scale, const int has_mask, const long items) {
  const long gid = get_global_id(0);
  if (gid >= items) return;
  const int nb = (int)meta[0];
  const long S = meta[1], SKV = meta[2];
  const long rblocks = (S + ATT_BQ - 1) / ATT_BQ;
  const long r0 = (gid % rblocks) * ATT_BQ;
  long bi = gid / rblocks;
  long off[5] = {0, 0, 0, 0, 0};
  for (int d = nb - 1; d >= 0; d--) {
    const long c = bi % meta[3 + d];
    bi /= meta[3 + d];
    for (int e = 0; e < 5; e++) off[e] += c * meta[M_OP(e) + d];
  }
  const long qrs = meta[M_OP(0) + ATT_MAXB], qcs = meta[M_OP(0) + ATT_MAXB + 1];
  const long mrs = meta[M_OP(3) + ATT_MAXB], mcs = meta[M_OP(3) + ATT_MAXB + 1];
  const long ors = meta[M_OP(4) + ATT_MAXB], ocs = meta[M_OP(4) + ATT_MAXB + 1];
  /* Q^T of the block, scaled: lane i = query row r0 + i (rows past S repeat the last one and are not stored) */
  QV qt[ATT_D];
  for (int d = 0; d < ATT_D; d++) {
    T col[ATT_BQ];
    _Pragma("unroll") for (int i = 0; i < ATT_BQ; i++) col[i] = q[off[0] + min(r0 + i, S - 1) * qrs + d * qcs];
    qt[d] = QLOAD(0, col) * scale;
  }
  QV acc[ATT_DV];
  for (int c = 0; c < ATT_DV; c++) acc[c] = (QV)(0);
  QV mx = (QV)(-INFINITY), sum = (QV)(0);
  __global const T *mb = mask + off[3];
  long j0 = 0;
  for (; j0 + ATT_BK <= SKV; j0 += ATT_BK)
    att_block(qt, acc, &mx, &sum, k + off[1] + j0 * ATT_KRS, v + off[2] + j0 * ATT_VRS, mb, mrs, mcs, has_mask, j0, SKV, r0, S, 0);
  if (j0 < SKV)
    att_block(qt, acc, &mx, &sum, k + off[1] + j0 * ATT_KRS, v + off[2] + j0 * ATT_VRS, mb, mrs, mcs, has_mask, j0, SKV, r0, S, 1);
  const QV inv = (QV)(1) / sum;
  const int nr = (int)min((long)ATT_BQ, S - r0);
  for (int c = 0; c < ATT_DV; c++) {
    T col[ATT_BQ];
    QSTORE(acc[c] * inv, 0, col);
    __global T *oc = o + off[4] + r0 * ors + c * ocs;
    for (int i = 0; i < nr; i++) oc[i * ors] = col[i];
  }
}
#endif
