/* movement.cl: data-movement kernels (Transpose, Slice, Concat, Split, Expand,
 * Tile, DepthToSpace/SpaceToDepth as strided copies; Gather, GatherElements,
 * GatherND, Compress; Pad; Trilu; OneHot; ReverseSequence; EyeLike; fills).
 * Elements are moved as raw bits: the file is built once per element size
 * with T = uchar / ushort / uint / ulong (-DT=...), so every dtype of that
 * size shares one program. Values that need a type (fill values, EyeLike's
 * one) are passed as bit patterns of type T.
 *
 * Index tensors are read through ld_idx(), which takes the kiln dtype code
 * of the index tensor (int32 = 6, int64 = 7, float = 1, ...). Out-of-range
 * indices never read or write out of bounds: gathers clamp them. */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef T
  #define T uint   // element storage type (by element size)
#endif
#ifndef SMAX
  #define SMAX 16  // max rank of a strided copy (must match movement.c)
#endif
#ifndef MAXR
  #define MAXR 8   // max tensor rank (KILN_MAX_RANK)
#endif
#define SMETA (3 + 3 * SMAX)

/* Element k of an index/integer tensor of kiln dtype `code`, as long. */
inline long ld_idx(__global const uchar *p, int code, long k) {
  switch (code) {
  case 7: case 13: return ((__global const long *)p)[k];
  case 6: return ((__global const int *)p)[k];
  case 12: return (long)((__global const uint *)p)[k];
  case 5: return ((__global const short *)p)[k];
  case 4: return ((__global const ushort *)p)[k];
  case 3: return ((__global const char *)p)[k];
  case 2: case 9: return p[k];
  case 1: {
    float f = ((__global const float *)p)[k];
    return isnan(f) ? 0 : (long)clamp(f, -9.0e18f, 9.0e18f);
  }
#ifdef cl_khr_fp64
  case 11: {
    double f = ((__global const double *)p)[k];
    return isnan(f) ? 0 : (long)clamp(f, -9.0e18, 9.0e18);
  }
#endif
  }
  return 0;
}

/* Wraps a negative index and clamps it into [0, a-1] (a > 0). */
inline long fix_idx(long v, long a) {
  if (v < 0) v += a;
  return clamp(v, 0L, a - 1);
}

/* Generic strided copy: for i < n, decompose i over dims[r], then
 * dst[doff + sum c*ds] = src[soff + sum c*ss]. Job `mi` of the meta array
 * holds rank, soff, doff, dims[SMAX], ss[SMAX], ds[SMAX]. */
__kernel void mv_strided(__global const T *src, __global T *dst, __global const long *meta, int mi, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  __global const long *m = meta + (long)mi * SMETA;
  int r = (int)m[0];
  long so = m[1], dof = m[2], rem = i;
  for (int d = r - 1; d >= 0; d--) {
    long c = rem % m[3 + d];
    rem /= m[3 + d];
    so += c * m[3 + SMAX + d];
    dof += c * m[3 + 2 * SMAX + d];
  }
  dst[dof] = src[so];
}

/* mv_strided where the innermost axis is contiguous in both (ss = ds = 1)
 * and L = dims[r-1] long: a work-item moves MV_RUN consecutive elements of
 * one row, the row's offsets decomposed once for them. mv_strided's
 * per-element 64-bit divisions ran bert_encoder's head transposes
 * ([128,12,64] -> [12,128,64], rows of 64) at 1.4 GB/s, 280 us each.
 * grid: (ceil(L / MV_RUN), rows) */
#define MV_RUN 16
#define MV_CAT0_(a, b) a##b
#define MV_CAT0(a, b) MV_CAT0_(a, b)
#define T16 MV_CAT0(T, 16)
__kernel void mv_strided_rows(__global const T *src, __global T *dst, __global const long *meta, int mi, long rows) {
  const long j0 = get_global_id(0) * MV_RUN, row = get_global_id(1);
  __global const long *m = meta + (long)mi * SMETA;
  const int r = (int)m[0];
  const long L = m[3 + r - 1];
  if (row >= rows || j0 >= L) return;
  long so = m[1] + j0, dof = m[2] + j0, rem = row;
  for (int d = r - 2; d >= 0; d--) {
    const long n = m[3 + d], c = rem % n;
    rem /= n;
    so += c * m[3 + SMAX + d];
    dof += c * m[3 + 2 * SMAX + d];
  }
  if (j0 + MV_RUN <= L) vstore16(vload16(0, src + so), 0, dst + dof);
  else
    for (long j = 0; j < L - j0; j++) dst[dof + j] = src[so + j];
}

/* Batched 2-D transpose, dst[b][r][c] = src[b][c][r] (R x C planes; the
 * collapsed Transpose of an attention block's [C, HW] <-> [HW, C], of
 * NCHW <-> NHWC): mv_strided reads src with stride R per element (11% of
 * the copy bandwidth on vae_decoder_16's 512x256 planes). Work-item
 * (c-tile, r-tile, b) moves an 8x8 tile: eight 8-wide loads along r (one per
 * c, contiguous in src), transposed in registers, eight 8-wide stores along
 * c (contiguous in dst); tiles at the planes' edges element by element.
 * (Through a private 8x8 array instead: 14-15 GB/s, instruction-bound.) grid: (ceil(C/8), ceil(R/8), B) */
#define MV_CAT_(a, b) a##b
#define MV_CAT(a, b) MV_CAT_(a, b)
#define T8 MV_CAT(T, 8)
__kernel void mv_transpose2(__global const T *src, __global T *dst, long R, long C, long soff, long doff) {
  const long c0 = get_global_id(0) * 8, r0 = get_global_id(1) * 8, b = get_global_id(2);
  if (c0 >= C || r0 >= R) return;
  __global const T *s = src + soff + b * R * C;
  __global T *d = dst + doff + b * R * C;
  if (c0 + 8 <= C && r0 + 8 <= R) {
    /* row i = src[c0 + i][r0 .. r0 + 7]; three rounds of shuffles (pairs of
     * lanes, of pairs, of quads) turn the rows into the columns. T is
     * unsigned (the file moves bits), so T8 is also shuffle2's mask type. */
    const T8 r0v = vload8(0, s + (c0 + 0) * R + r0), r1v = vload8(0, s + (c0 + 1) * R + r0);
    const T8 r2v = vload8(0, s + (c0 + 2) * R + r0), r3v = vload8(0, s + (c0 + 3) * R + r0);
    const T8 r4v = vload8(0, s + (c0 + 4) * R + r0), r5v = vload8(0, s + (c0 + 5) * R + r0);
    const T8 r6v = vload8(0, s + (c0 + 6) * R + r0), r7v = vload8(0, s + (c0 + 7) * R + r0);
    const T8 ev = (T8)(0, 8, 2, 10, 4, 12, 6, 14), od = (T8)(1, 9, 3, 11, 5, 13, 7, 15);
    const T8 lo2 = (T8)(0, 1, 8, 9, 4, 5, 12, 13), hi2 = (T8)(2, 3, 10, 11, 6, 7, 14, 15);
    const T8 lo4 = (T8)(0, 1, 2, 3, 8, 9, 10, 11), hi4 = (T8)(4, 5, 6, 7, 12, 13, 14, 15);
    const T8 a0 = shuffle2(r0v, r1v, ev), a1 = shuffle2(r0v, r1v, od), a2 = shuffle2(r2v, r3v, ev), a3 = shuffle2(r2v, r3v, od);
    const T8 a4 = shuffle2(r4v, r5v, ev), a5 = shuffle2(r4v, r5v, od), a6 = shuffle2(r6v, r7v, ev), a7 = shuffle2(r6v, r7v, od);
    const T8 b0 = shuffle2(a0, a2, lo2), b2 = shuffle2(a0, a2, hi2), b1 = shuffle2(a1, a3, lo2), b3 = shuffle2(a1, a3, hi2);
    const T8 b4 = shuffle2(a4, a6, lo2), b6 = shuffle2(a4, a6, hi2), b5 = shuffle2(a5, a7, lo2), b7 = shuffle2(a5, a7, hi2);
    __global T *dr = d + r0 * C + c0;
    vstore8(shuffle2(b0, b4, lo4), 0, dr);
    vstore8(shuffle2(b1, b5, lo4), 0, dr + C);
    vstore8(shuffle2(b2, b6, lo4), 0, dr + 2 * C);
    vstore8(shuffle2(b3, b7, lo4), 0, dr + 3 * C);
    vstore8(shuffle2(b0, b4, hi4), 0, dr + 4 * C);
    vstore8(shuffle2(b1, b5, hi4), 0, dr + 5 * C);
    vstore8(shuffle2(b2, b6, hi4), 0, dr + 6 * C);
    vstore8(shuffle2(b3, b7, hi4), 0, dr + 7 * C);
    return;
  }
  for (long i = c0; i < c0 + 8 && i < C; i++)
    for (long j = r0; j < r0 + 8 && j < R; j++) d[j * C + i] = s[i * R + j];
}

/* Gather along an axis of data viewed as [O, A, N] with I indices:
 * y[o, j, k] = x[o, idx[j], k]. Also Compress (indices from a param buffer). */
__kernel void mv_gather(__global const T *x, __global const uchar *idx, __global T *y, long I, long A, long N, int icode, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long k = i % N, t = i / N;
  long j = t % I, o = t / I;
  if (A <= 0) { y[i] = (T)0; return; }
  long id = fix_idx(ld_idx(idx, icode, j), A);
  y[i] = x[(o * A + id) * N + k];
}

/* GatherElements: y has the shape of the indices. meta: rank, axis, A (data
 * size on axis), idx dims[MAXR], data strides[MAXR]. */
__kernel void mv_gather_elements(__global const T *x, __global const uchar *idx, __global T *y, __global const long *meta, int icode, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  int r = (int)meta[0], ax = (int)meta[1];
  long A = meta[2], rem = i, off = 0;
  if (A <= 0) { y[i] = (T)0; return; }
  for (int d = r - 1; d >= 0; d--) {
    long c = rem % meta[3 + d];
    rem /= meta[3 + d];
    if (d == ax) c = fix_idx(ld_idx(idx, icode, i), A);
    off += c * meta[3 + MAXR + d];
  }
  y[i] = x[off];
}

/* GatherND: y[b, q, s] = x[b * DB + sum_j idx[b, q, j] * stride_j + s].
 * meta: k, Q, S, DB, dims[MAXR] and strides[MAXR] of the indexed data axes. */
__kernel void mv_gather_nd(__global const T *x, __global const uchar *idx, __global T *y, __global const long *meta, int icode, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  int k = (int)meta[0];
  long Q = meta[1], S = meta[2], DB = meta[3];
  long s = i % S, t = i / S;
  long b = t / Q;
  long off = b * DB + s;
  for (int j = 0; j < k; j++) {
    long a = meta[4 + j];
    if (a <= 0) { y[i] = (T)0; return; }
    off += fix_idx(ld_idx(idx, icode, t * k + j), a) * meta[4 + MAXR + j];
  }
  y[i] = x[off];
}

/* Pad. meta: rank, out dims[MAXR], in dims[MAXR], in strides[MAXR],
 * pads_begin[MAXR]. mode: 0 constant (value cv[0]), 1 reflect, 2 edge, 3 wrap. */
__kernel void mv_pad(__global const T *x, __global T *y, __global const T *cv, __global const long *meta, int mode, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  int r = (int)meta[0];
  long rem = i, off = 0;
  for (int d = r - 1; d >= 0; d--) {
    long od = meta[1 + d], id = meta[1 + MAXR + d];
    long c = rem % od;
    rem /= od;
    c -= meta[1 + 3 * MAXR + d];
    if (c < 0 || c >= id) {
      if (mode == 0 || id <= 0) { y[i] = cv[0]; return; }
      if (mode == 1) {
        if (id == 1) c = 0;
        else {
          long p = 2 * (id - 1);
          c %= p;
          if (c < 0) c += p;
          if (c >= id) c = p - c;
        }
      } else if (mode == 2) c = clamp(c, 0L, id - 1);
      else { c %= id; if (c < 0) c += id; }
    }
    off += c * meta[1 + 2 * MAXR + d];
  }
  y[i] = x[off];
}

/* Trilu over the last two axes [R, C]: keeps x where (upper ? j - i >= k : j - i <= k). */
__kernel void mv_trilu(__global const T *x, __global T *y, __global const long *kp, long R, long C, int upper, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long k = kp[0];
  long col = i % C, row = (i / C) % R;
  long dd = col - row;
  bool keep = upper ? dd >= k : dd <= k;
  y[i] = keep ? x[i] : (T)0;
}

/* y[i] = v for i < n. */
__kernel void mv_fill(__global T *y, T v, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  y[i] = v;
}

/* EyeLike over [R, C]: one where col - row == k, zero elsewhere. */
__kernel void mv_eye(__global T *y, T one, long C, long k, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long col = i % C, row = i / C;
  y[i] = col - row == k ? one : (T)0;
}

/* OneHot: y[o, d, k] = (idx[o, k] (wrapped by depth) == d) ? vals[1] : vals[0]. */
__kernel void mv_onehot(__global const uchar *idx, __global const T *vals, __global T *y, long depth, long inner, int icode, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  long k = i % inner, t = i / inner;
  long d = t % depth, o = t / depth;
  long v = ld_idx(idx, icode, o * inner + k);
  if (v < 0) v += depth;
  y[i] = v == d ? vals[1] : vals[0];
}

/* ReverseSequence. meta: rank, time axis, batch axis, dims[MAXR], strides[MAXR].
 * Along the time axis the first lens[b] elements are reversed. */
__kernel void mv_revseq(__global const T *x, __global const uchar *lens, __global T *y, __global const long *meta, int lcode, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  int r = (int)meta[0], ta = (int)meta[1], ba = (int)meta[2];
  long rem = i, t = 0, b = 0;
  for (int d = r - 1; d >= 0; d--) {
    long c = rem % meta[3 + d];
    rem /= meta[3 + d];
    if (d == ta) t = c;
    if (d == ba) b = c;
  }
  long L = clamp(ld_idx(lens, lcode, b), 0L, meta[3 + ta]);
  long src = t < L ? L - 1 - t : t;
  y[i] = x[i + (src - t) * meta[3 + MAXR + ta]];
}
