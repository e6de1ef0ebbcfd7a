/* gemm.cl: matrix products. Built in one of two forms:
 *
 *  - with an element type T (-DT=float/double/int/long, see kiln_cl_type_opts):
 *      gemm        (KERNEL=0) batched, strided Y = alpha * op(A) * op(B) + beta * C,
 *                  used by MatMul and Gemm (transposes are expressed as
 *                  strides); GPU style: each work-item computes TM x TN
 *                  outputs from local-memory tiles of A and B (SA=1) or
 *                  straight from global memory (SA=0);
 *      gemm_panel  (KERNEL=1) the same product, CPU style: B pre-packed by
 *      gemm_pack_b into column panels of NR = NV*VW floats contiguous along K;
 *                  each work-item computes TM x NR outputs in TM*NV vector
 *                  accumulators, no local memory (barriers only with SA=1);
 *      gemm_fill_c Y = broadcast bias C (for library GEMMs with beta);
 *      einsum      generic Einsum with one or two operands (one work-item per
 *                  output element, summing over the contracted labels);
 *      det         determinant of a stack of square matrices (LU, partial pivoting).
 *  - with quantized input types QA and QB (-DQA=uchar -DQB=uchar ...):
 *      matmul_int  MatMulInteger (int32 output) and QLinearMatMul (requantized
 *                  to QY); zero points and scales are scalars or per row of A /
 *                  per column of B.
 *
 * Batch layout of gemm/matmul_int: get_global_id(2) is the batch index z, the
 * output matrix z starts at z*M*N; bmeta (longs) holds nb, dims[8], A batch
 * strides[8], B batch strides[8] (elements, 0 on broadcast axes; for
 * gemm_panel the B strides are in elements of the packed B).
 *
 * Epilogue (gemm, gemm_panel): when the host prepends a generated function
 *   T kiln_epi(T v, long i, int c, __global const T *e0, __global const T *e1)
 * (and #define KILN_EPI 1), each output value (alpha*AB + beta*C) passes
 * through it before the store, with i the flat index into Y (batches
 * included) and c the column; e0, e1 are its tensor operands. */
#if defined(T_IS_DOUBLE) && T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* fp16 storage (T_DTYPE 10, an fp16 plan: runtime/precision.c): every
 * __global buffer of gemm, gemm_panel and the packing kernels holds halfs
 * (ST), read with kiln_ldh / kiln_vldhN and written with kiln_svh /
 * kiln_vsthN (kernels/half_io.cl); the
 * arithmetic, accumulators and local tiles are T = float. LD / SV: one
 * element's load and store, GVLOAD / GVSTORE: VW of them (vloadVW). */
#if defined(T_DTYPE) && T_DTYPE == 10
#undef T
#define T float
#undef T_IS_FLOAT
#define T_IS_FLOAT 1
#define ST half
#define RT ushort /* a half's bits: copies without conversion */
/* kiln_ldh / kiln_svh: kernels/half_io.cl (prepended by runtime/cl.c) */
#define LD(p, i) kiln_ldh((p), (i))
#define SV(p, i, v) kiln_svh((p), (i), (v))
#else
#define ST T
#define RT T
#define LD(p, i) ((p)[i])
#define SV(p, i, v) ((p)[i] = (v))
#endif

#define MAXR 8
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* Offsets of batch z in A and B. */
inline void batch_offsets(__global const long *bmeta, long z, long *ao, long *bo) {
  int nb = (int)bmeta[0];
  long a = 0, b = 0;
  for (int d = nb - 1; d >= 0; d--) {
    long c = z % bmeta[1 + d];
    z /= bmeta[1 + d];
    a += c * bmeta[1 + MAXR + d];
    b += c * bmeta[1 + 2 * MAXR + d];
  }
  *ao = a;
  *bo = b;
}

#ifndef QA
/* ---------------------------------------------------------------------------
 * Tunable parameters (CLBlast style; the host passes the values of a tuning
 * record). TM, NV, VW, WGM, WGN and KWI mean the same in both kernels.
 * Constraints: KWG % KWI == 0 (SA=1), VW in {1, 2, 4, 8, 16}; KWG only
 * matters with SA=1, APAD and BPAD only with KERNEL=0 and SA=1. The
 * defaults are the host descriptor's (gemm_params in runtime/ops/gemm_norm.c;
 * tests/gemm_params.c fails when they disagree). */
#ifndef KERNEL
  #define KERNEL 1  // 0: gemm (local-memory tiles, GPU style); 1: gemm_panel (packed B, CPU style)
#endif
#ifndef WGM
  #define WGM 1   // work-group rows (local size in dimension 1)
#endif
#ifndef WGN
  #define WGN 1   // work-group columns (local size in dimension 0)
#endif
#ifndef TM
  #define TM 8    // rows of Y computed per work-item (1..16)
#endif
#ifndef NV
  #define NV 2    // vectors of VW columns of Y per work-item row (1..4)
#endif
#ifndef VW
  #define VW 16   // vector width along N (columns per vector register)
#endif
#ifndef KWI
  #define KWI 1   // unroll factor of the inner K loop
#endif
#ifndef KWG
  #define KWG 16  // K depth of the shared tiles (SA=1)
#endif
#ifndef SA
  #define SA 0    // 1: share tiles in the work-group (KERNEL=0: staged in local memory; KERNEL=1: barrier every KWG steps of K); 0: no sharing
#endif
#ifndef APAD
  #define APAD 0  // padding of local A tile rows (bank conflicts)
#endif
#ifndef MB
  #define MB 8    // gemm_panel: blocks of TM rows per work-item, one after another on the same B panel (SA=0)
#endif
#ifndef AP
  #define AP 1    // gemm_panel: 1 = A packed by gemm_pack_a into row panels of TM rows contiguous along K
#endif
#ifndef BPAD
  #define BPAD 0  // padding of local B tile rows (bank conflicts)
#endif

/* derived */
#define TN (NV * VW)            /* columns of Y per work-item */
#define NR TN                   /* gemm_panel: width of a packed B panel */
#define MWG (WGM * TM)          /* rows of the work-group tile */
#define NWG (WGN * TN)          /* columns of the work-group tile */
#define NTHR (WGM * WGN)
#define ALD (MWG + APAD)
#define BLD (NWG + BPAD)

#if VW == 1
  #define TV T
  #define VLOADL(i, p) ((p)[i])
  #define VSTOREL(x, i, p) ((p)[i] = (x))
  #define GVLOAD(i, p) LD(p, i)
  #define GVSTORE(x, i, p) SV(p, i, x)
#else
  #define TV CAT(T, VW)
  #define VLOADL(i, p) CAT(vload, VW)(i, p)
  #define VSTOREL(x, i, p) CAT(vstore, VW)(x, i, p)
  #if defined(T_DTYPE) && T_DTYPE == 10
    #define GVLOAD(i, p) CAT(kiln_vldh, VW)(i, p)
    #define GVSTORE(x, i, p) CAT(kiln_vsth, VW)(x, i, p)
  #else
    #define GVLOAD(i, p) GLDU(VW, i, p) /* vec_io.cl */
    #define GVSTORE(x, i, p) GSTU(VW, x, i, p)
  #endif
#endif
#if (defined(T_IS_FLOAT) && T_IS_FLOAT) || (defined(T_IS_DOUBLE) && T_IS_DOUBLE)
  #define MADV(a, b, c) fma((TV)(a), (b), (c))
#else
  #define MADV(a, b, c) ((a) * (b) + (c))
#endif

#ifdef KILN_EPI
  #define EPI(v, i, c) kiln_epi((v), (i), (c), e0, e1)
#else
  #define EPI(v, i, c) (v)
#endif

/* Y(m, n0..n0+VW-1) = alpha * acc + beta * C(m, n0..): vector store when the
 * whole vector is inside, element by element at the right edge. Y starts at
 * element ybase of the output (for the epilogue's index). */
#ifndef ROWCH
  #define ROWCH 0
#endif
inline void store_vec(TV acc, const int m, const int n0, const int N, const T alpha, const T beta,
                      __global const ST *C, const long scm, const long scn, const int has_c, __global ST *Y,
                      const long ybase, __global const ST *e0, __global const ST *e1) {
#if ROWCH
  /* convolution layout (Conv's algo 6): rows are output channels of batch
   * z = ybase / (M*N) (image x group); C is a bias per channel and scn the
   * channel count, so channel c = (ybase / N + m) % scn (groups in order) */
  const int ch = (int)((ybase / N + m) % scn);
  const T cb = has_c ? beta * LD(C, ch) : (T)0;
  TV o = alpha * acc + (TV)(cb);
  T *ro = (T *)&o;
#if defined(KILN_EPIV) && VW > 1
  if (n0 + VW <= N) { GVSTORE(CAT(kiln_epi, VW)(o, ybase + (long)m * N + n0, ch, e0, e1), 0, Y + (long)m * N + n0); return; } /* a whole vector at once */
#endif
#ifdef KILN_EPI
  /* the lanes that are outputs only: past N a full-size operand's index
   * leaves the row (and, at Y's last row, the operand's buffer) */
  for (int e = 0; e < VW && n0 + e < N; e++) ro[e] = EPI(ro[e], ybase + (long)m * N + n0 + e, ch);
#endif
  if (n0 + VW <= N) { GVSTORE(o, 0, Y + (long)m * N + n0); return; }
  for (int e = 0; e < VW && n0 + e < N; e++) SV(Y, (long)m * N + n0 + e, ro[e]);
  return;
#endif
  if (n0 + VW <= N && (!has_c || scn == 1)) {
    TV o = alpha * acc;
    if (has_c) o += beta * GVLOAD(0, C + m * scm + n0);
#if defined(KILN_EPIR) && VW >= 4
    /* the epilogue on the whole vector, channels n0.. (GELU's erf as vector
     * code: bert_encoder's feed-forward MatMul + GELU) */
    o = CAT(kiln_epir, VW)(o, ybase + (long)m * N + n0, n0, e0, e1);
#elif defined(KILN_EPI)
    T *ro = (T *)&o;
    for (int e = 0; e < VW; e++) ro[e] = EPI(ro[e], ybase + (long)m * N + n0 + e, n0 + e);
#endif
    GVSTORE(o, 0, Y + (long)m * N + n0);
    return;
  }
  T *r = (T *)&acc;
  for (int e = 0; e < VW; e++) {
    const int n = n0 + e;
    if (n >= N) break;
    T o = alpha * r[e];
    if (has_c) o += beta * LD(C, m * scm + n * scn);
    SV(Y, (long)m * N + n, EPI(o, ybase + (long)m * N + n, n));
  }
}

/* Y[z](m, n) = C(m, n) = C[m*scm + n*scn] (0 without C): the bias for
 * library GEMMs that compute Y = alpha*A*B + beta*Y. Global (N, M, batch). */
__kernel void gemm_fill_c(const int M, const int N, __global const ST *C, const long scm, const long scn, const int has_c, __global ST *Y) {
  const int n = get_global_id(0), m = get_global_id(1);
  const long z = get_global_id(2);
  if (n >= N || m >= M) return;
  SV(Y, (z * M + m) * (long)N + n, has_c ? LD(C, m * scm + n * scn) : (T)0);
}

#if KERNEL == 0
/* Y[z] (M x N, row-major) = alpha * A'[z] * B'[z] + beta * C, where
 * A'(m,k) = A[aoff + m*sam + k*sak] and B'(k,n) = B[boff + k*sbk + n*sbn];
 * C(m,n) = C[m*scm + n*scn] when has_c (strides 0 on broadcast axes).
 * Local size (WGN, WGM, 1); global (ceil(N/NWG)*WGN, ceil(M/MWG)*WGM, batch). */
__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1)))
void gemm(const int M, const int N, const int K, const T alpha, const T beta,
          __global const ST *A, const long sam, const long sak,
          __global const ST *B, const long sbk, const long sbn,
          __global const ST *C, const long scm, const long scn, const int has_c,
          __global ST *Y, __global const long *bmeta, __global const ST *e0, __global const ST *e1) {
#if SA
  __local T Al[KWG * ALD];   /* Al[k][m] */
  __local T Bl[KWG * BLD];   /* Bl[k][n] */
#endif
  const int wn = get_local_id(0), wm = get_local_id(1);
  const int tid = wm * WGN + wn;
  const int m0 = get_group_id(1) * MWG, n0 = get_group_id(0) * NWG;
  long aoff, boff;
  const long z = get_global_id(2);
  batch_offsets(bmeta, z, &aoff, &boff);
  A += aoff;
  B += boff;

  TV acc[TM][NV];
  for (int i = 0; i < TM; i++)
    for (int v = 0; v < NV; v++) acc[i][v] = (TV)0;

#if SA
  for (int k0 = 0; k0 < K; k0 += KWG) {
    /* stage the A tile (MWG x KWG) and the B tile (KWG x NWG); zero outside */
    if (sak == 1) {
      for (int e = tid; e < KWG * MWG; e += NTHR) {
        int kk = e % KWG, mm = e / KWG, m = m0 + mm, k = k0 + kk;
        Al[kk * ALD + mm] = (m < M && k < K) ? LD(A, m * sam + k) : (T)0;
      }
    } else {
      for (int e = tid; e < KWG * MWG; e += NTHR) {
        int mm = e % MWG, kk = e / MWG, m = m0 + mm, k = k0 + kk;
        Al[kk * ALD + mm] = (m < M && k < K) ? LD(A, m * sam + k * sak) : (T)0;
      }
    }
    if (sbn == 1) {
      for (int e = tid; e < KWG * NWG; e += NTHR) {
        int nn = e % NWG, kk = e / NWG, n = n0 + nn, k = k0 + kk;
        Bl[kk * BLD + nn] = (n < N && k < K) ? LD(B, k * sbk + n) : (T)0;
      }
    } else {
      for (int e = tid; e < KWG * NWG; e += NTHR) {
        int kk = e % KWG, nn = e / KWG, n = n0 + nn, k = k0 + kk;
        Bl[kk * BLD + nn] = (n < N && k < K) ? LD(B, k * sbk + n * sbn) : (T)0;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kb = 0; kb < KWG; kb += KWI) {
      for (int ki = 0; ki < KWI; ki++) {
        const int k = kb + ki;
        T a[TM];
        TV b[NV];
        for (int i = 0; i < TM; i++) a[i] = Al[k * ALD + i * WGM + wm];
        for (int v = 0; v < NV; v++) b[v] = VLOADL(v * WGN + wn, Bl + k * BLD);
        for (int i = 0; i < TM; i++)
          for (int v = 0; v < NV; v++) acc[i][v] = MADV(a[i], b[v], acc[i][v]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#else
  /* direct: rows/columns past the edge are clamped (their results are dropped) */
  long ar[TM], bc[NV * VW];
  for (int i = 0; i < TM; i++) ar[i] = (long)min(m0 + i * WGM + wm, M - 1) * sam;
  for (int v = 0; v < NV; v++)
    for (int e = 0; e < VW; e++) bc[v * VW + e] = (long)min(n0 + (v * WGN + wn) * VW + e, N - 1) * sbn;
  int k = 0;
  for (; k + KWI <= K; k += KWI) {
    for (int u = 0; u < KWI; u++) {
      T a[TM];
      TV b[NV];
      for (int i = 0; i < TM; i++) a[i] = LD(A, ar[i] + (k + u) * sak);
      for (int v = 0; v < NV; v++) {
        T *bp = (T *)&b[v];
        for (int e = 0; e < VW; e++) bp[e] = LD(B, (k + u) * sbk + bc[v * VW + e]);
      }
      for (int i = 0; i < TM; i++)
        for (int v = 0; v < NV; v++) acc[i][v] = MADV(a[i], b[v], acc[i][v]);
    }
  }
  for (; k < K; k++) {
    T a[TM];
    TV b[NV];
    for (int i = 0; i < TM; i++) a[i] = LD(A, ar[i] + k * sak);
    for (int v = 0; v < NV; v++) {
      T *bp = (T *)&b[v];
      for (int e = 0; e < VW; e++) bp[e] = LD(B, k * sbk + bc[v * VW + e]);
    }
    for (int i = 0; i < TM; i++)
      for (int v = 0; v < NV; v++) acc[i][v] = MADV(a[i], b[v], acc[i][v]);
  }
#endif

  Y += z * (long)M * N;
  for (int i = 0; i < TM; i++) {
    const int m = m0 + i * WGM + wm;
    if (m >= M) continue;
    for (int v = 0; v < NV; v++) store_vec(acc[i][v], m, n0 + (v * WGN + wn) * VW, N, alpha, beta, C, scm, scn, has_c, Y, z * (long)M * N, e0, e1);
  }
}
#endif /* KERNEL == 0 */

#if KERNEL == 1
/* Packs B'(k, n) = B[z*sbz + k*sbk + n*sbn] of nbz matrices into panels:
 * Bp[((z*np + p)*K + k)*NR + j] = B'(k, p*NR + j), zero past N, where
 * np = ceil(N/NR). Each work-item packs the NR values of one panel at one
 * k, as NV vectors where B is contiguous along N. Global (np, K, nbz). */
__kernel void gemm_pack_b(const int N, const int K, __global const ST *B, const long sbk, const long sbn, const long sbz, __global ST *Bp) {
  const int p = get_global_id(0), k = get_global_id(1);
  const long z = get_global_id(2);
  const int np = (N + NR - 1) / NR;
  if (p >= np || k >= K) return;
  /* a copy of the elements as stored (RT: a half's bits under fp16 storage) */
  __global const RT *src = (__global const RT *)B + z * sbz + (long)k * sbk + (long)p * NR * sbn;
  __global RT *dst = (__global RT *)Bp + ((z * np + p) * (long)K + k) * NR;
  if (sbn == 1 && (p + 1) * NR <= N) {
    for (int v = 0; v < NV; v++) VSTOREL(VLOADL(v, src), v, dst);
  } else {
    for (int j = 0; j < NR; j++) dst[j] = p * NR + j < N ? src[(long)j * sbn] : (RT)0;
  }
}

/* Packs A'(m, k) = A[aoff(z) + m*sam + k*sak] of every batch z (offsets
 * from bmeta, as gemm_panel's) into row panels of TM rows contiguous along K:
 * Ap[((z*nmb + b)*K + k)*TM + i] = A'(b*TM + i, k), zero past M, where
 * nmb = ceil(M/TM). Each work-item packs PKK steps of K of one row panel,
 * reading each row as one vector where A is contiguous along K (one
 * work-item per element spent more time in POCL's work-item loop than in
 * the copy). Global (ceil(K/PKK), nmb, batch). */
#define PKK 16
#if defined(T_DTYPE) && T_DTYPE == 10
  #define PKLOAD(p) kiln_vldh16(0, p)
#else
  #define PKLOAD(p) vload16(0, p)
#endif
/* A's row panels (AP=1) hold AST elements: under fp16 storage with APF=1
 * (set by the gemm op's own launches) gemm_pack_a converts A to float while
 * packing, so gemm_panel's inner loop reads float panels as in fp32; with
 * APF=0 (conv's weights, packed once on the host) they stay half and
 * gemm_panel converts TM of them at a time (LDROW). */
#ifndef APF
  #define APF 0
#endif
#if AP && APF
  #define AST float
  #define SVA(p, i, v) ((p)[i] = (v))
#else
  #define AST ST
  #define SVA(p, i, v) SV(p, i, v)
#endif
__kernel void gemm_pack_a(const int M, const int K, __global const ST *A, const long sam, const long sak, __global AST *Ap,
                          __global const long *bmeta) {
  const int k0 = get_global_id(0) * PKK, b = get_global_id(1);
  const long z = get_global_id(2);
  const int nmb = (M + TM - 1) / TM;
  if (k0 >= K || b >= nmb) return;
  long aoff, boff;
  batch_offsets(bmeta, z, &aoff, &boff);
  const int kn = min(PKK, K - k0);
  T t[TM][PKK];
  for (int i = 0; i < TM; i++) {
    const int m = b * TM + i;
    __global const ST *row = A + aoff + (long)m * sam + (long)k0 * sak;
    if (m < M && sak == 1 && kn == PKK) {
      vstore16(PKLOAD(row), 0, &t[i][0]);
    } else {
      for (int kk = 0; kk < PKK; kk++) t[i][kk] = m < M && kk < kn ? LD(row, (long)kk * sak) : (T)0;
    }
  }
  __global AST *dst = Ap + ((z * nmb + b) * (long)K + k0) * TM;
  for (int kk = 0; kk < kn; kk++)
    for (int i = 0; i < TM; i++) SVA(dst, kk * TM + i, t[i][kk]);
}

/* One K step of the panel kernel: acc += A'(rows, k) * panel(k, :). */
#define PANEL_STEP(k)                                                     \
  do {                                                                    \
    TV b[NV];                                                             \
    _Pragma("unroll") for (int v = 0; v < NV; v++)                        \
      b[v] = GVLOAD(v, bp + (long)(k) * NR);                              \
    _Pragma("unroll") for (int i = 0; i < TM; i++) {                      \
      const T a = LD(A, ar[i] + (long)(k) * sak);                         \
      _Pragma("unroll") for (int v = 0; v < NV; v++)                      \
        acc[i][v] = MADV(a, b[v], acc[i][v]);                             \
    }                                                                     \
  } while (0)

/* Packed A (AP=1, SA=0): RB row blocks of the work-item's MB are computed
 * together, so that a small TM (a few accumulators, a chain of dependent
 * FMAs) still fills the register file: RB is the largest power of two up to
 * MB with RB*TM*NV <= 16 accumulators. */
#if AP && !SA
  #define RBCAP (16 / (TM * NV))
  #if RBCAP >= 8 && MB >= 8
    #define RB 8
  #elif RBCAP >= 4 && MB >= 4
    #define RB 4
  #elif RBCAP >= 2 && MB >= 2
    #define RB 2
  #else
    #define RB 1
  #endif
#else
  #define RB 1
#endif

/* One K step on packed A: TM values at each of the RB pointers pa[u], NR at
 * pb, all then advanced. Half row panels (fp16 storage, APF=0) are read TM
 * at a time in vectors of 8 or 4 (one vcvtph2ps each on POCL) and the rest
 * one by one, instead of TM scalar conversions. */
#if defined(T_DTYPE) && T_DTYPE == 10 && !(AP && APF)
  #define TM8 (TM / 8 * 8)
  #define TM4 (TM8 + (TM - TM8) / 4 * 4)
  #define LDROW(a, p)                                                                       \
    do {                                                                                  \
      _Pragma("unroll") for (int c_ = 0; c_ < TM8; c_ += 8) vstore8(kiln_vldh8(0, (p) + c_), 0, (a) + c_); \
      _Pragma("unroll") for (int c_ = TM8; c_ < TM4; c_ += 4) vstore4(kiln_vldh4(0, (p) + c_), 0, (a) + c_); \
      _Pragma("unroll") for (int c_ = TM4; c_ < TM; c_++) (a)[c_] = kiln_ldh((p), c_);   \
    } while (0)
  #define A_STEP(u)                                                       \
    do {                                                                  \
      T a[TM];                                                            \
      LDROW(a, pa[u]);                                                    \
      _Pragma("unroll") for (int i = 0; i < TM; i++)                      \
        _Pragma("unroll") for (int v = 0; v < NV; v++)                    \
          acc[(u) * TM + i][v] = MADV(a[i], b[v], acc[(u) * TM + i][v]);  \
    } while (0)
#else
  #define A_STEP(u)                                                       \
    _Pragma("unroll") for (int i = 0; i < TM; i++) {                      \
      const T a = pa[u][i];                                               \
      _Pragma("unroll") for (int v = 0; v < NV; v++)                      \
        acc[(u) * TM + i][v] = MADV(a, b[v], acc[(u) * TM + i][v]);       \
    }
#endif
#define PACKED_STEP()                                                     \
  do {                                                                    \
    TV b[NV];                                                             \
    _Pragma("unroll") for (int v = 0; v < NV; v++) b[v] = GVLOAD(v, pb);  \
    _Pragma("unroll") for (int u = 0; u < RB; u++) A_STEP(u);             \
    _Pragma("unroll") for (int u = 0; u < RB; u++) pa[u] += TM;           \
    pb += NR;                                                             \
  } while (0)

#if SA && MB != 1
  #error "gemm_panel: SA=1 needs MB=1"
#endif

/* TM x NR blocks of Y per work-item: work-item (p, r, z) computes columns
 * p*NR.. of batch z for the MB blocks of TM rows from row r*MB*TM on, RB at
 * a time, one after another (the B panel stays in cache), from
 * A'(m,k) = A[aoff + m*sam + k*sak] (AP=0) or from row panels of TM rows at
 * aoff, A[aoff + (m/TM)*K*TM + k*TM + m%TM] (AP=1: packed by gemm_pack_a,
 * or weights packed on the host; sam and sak unused) and panel p of the
 * packed B (gemm_pack_b) at boff; C and Y as in gemm. With SA=1 (MB=1) the
 * work-group waits at a barrier after every KWG steps of K, so its A rows
 * and B panels are reused from cache by all its work-items (POCL runs a
 * group's work-items in turn between barriers); SA=0 has no barrier at all.
 * Local size (WGN, WGM, 1); global (ceil(np/WGN)*WGN,
 * ceil(ceil(M/(TM*MB))/WGM)*WGM, batch). */
__kernel __attribute__((reqd_work_group_size(WGN, WGM, 1)))
void gemm_panel(const int M, const int N, const int K, const T alpha, const T beta,
                __global const AST *A, const long sam, const long sak, __global const ST *Bp,
                __global const ST *C, const long scm, const long scn, const int has_c,
                __global ST *Y, __global const long *bmeta, __global const ST *e0, __global const ST *e1) {
  const int p = get_global_id(0), r = get_global_id(1);
  const long z = get_global_id(2);
  const int np = (N + NR - 1) / NR, nmb = (M + TM - 1) / TM;
#if !SA
  if (p >= np || r * MB >= nmb) return;   /* padding of the grid to whole work-groups */
#endif
  long aoff, boff;
  batch_offsets(bmeta, z, &aoff, &boff);
  A += aoff;
  /* panels past the last one are clamped (results dropped) */
  __global const ST *bp0 = Bp + boff + (long)min(p, np - 1) * K * NR;
  const long ybase = z * (long)M * N;
  Y += ybase;
  for (int mi = 0; mi < MB; mi += RB) {
    const int m0 = (r * MB + mi) * TM;   /* first row of these RB blocks */
#if !SA
    if (m0 >= M) break;
#endif
    TV acc[RB * TM][NV];
    _Pragma("unroll") for (int i = 0; i < RB * TM; i++)
      _Pragma("unroll") for (int v = 0; v < NV; v++) acc[i][v] = (TV)0;
#if AP
    /* blocks past the last one are clamped (results dropped) */
    __global const AST *pa[RB];
    _Pragma("unroll") for (int u = 0; u < RB; u++) pa[u] = A + (long)min(m0 / TM + u, nmb - 1) * K * TM;
    __global const ST *pb = bp0;
    int k = 0;
#if SA
    for (int k0 = 0; k0 < K; k0 += KWG) {
      const int k1 = min(k0 + KWG, K);
      for (; k + KWI <= k1; k += KWI)
        _Pragma("unroll") for (int u = 0; u < KWI; u++) PACKED_STEP();
      for (; k < k1; k++) PACKED_STEP();
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
#else
    for (; k + KWI <= K; k += KWI)
      _Pragma("unroll") for (int u = 0; u < KWI; u++) PACKED_STEP();
    for (; k < K; k++) PACKED_STEP();
#endif
#else
    /* rows past M are clamped (results dropped) */
    __global const ST *bp = bp0;
    long ar[TM];
    _Pragma("unroll") for (int i = 0; i < TM; i++) ar[i] = (long)min(m0 + i, M - 1) * sam;
#if SA
    for (int k0 = 0; k0 < K; k0 += KWG) {
      const int k1 = min(k0 + KWG, K);
      int k = k0;
      for (; k + KWI <= k1; k += KWI)
        _Pragma("unroll") for (int u = 0; u < KWI; u++) PANEL_STEP(k + u);
      for (; k < k1; k++) PANEL_STEP(k);
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
#else
    int k = 0;
    for (; k + KWI <= K; k += KWI)
      _Pragma("unroll") for (int u = 0; u < KWI; u++) PANEL_STEP(k + u);
    for (; k < K; k++) PANEL_STEP(k);
#endif
#endif
#if SA
    if (p >= np || m0 >= M) return;
#endif
    _Pragma("unroll") for (int i = 0; i < RB * TM; i++) {
      const int m = m0 + i;
      if (m >= M) break;
      _Pragma("unroll") for (int v = 0; v < NV; v++) store_vec(acc[i][v], m, p * NR + v * VW, N, alpha, beta, C, scm, scn, has_c, Y, ybase, e0, e1);
    }
  }
}
#endif /* KERNEL == 1 */

/* ---------------------------------------------------------------------------
 * einsum: y[o] = sum over the contracted labels of x0[...] (* x1[...]).
 * meta (longs): nout, nsum, nin, then at 3 + j*EMAX: j=0 out dims, 1 sum dims,
 * 2 x0 strides per out label, 3 x0 strides per sum label, 4 x1 strides per out
 * label, 5 x1 strides per sum label. */
#define EMAX 16
__kernel void einsum(__global const T *x0, __global const T *x1, __global T *y, __global const long *meta, const long total) {
  long i = get_global_id(0);
  if (i >= total) return;
  const int nout = (int)meta[0], nsum = (int)meta[1], nin = (int)meta[2];
  __global const long *od = meta + 3, *sd = meta + 3 + EMAX;
  __global const long *s0o = meta + 3 + 2 * EMAX, *s0s = meta + 3 + 3 * EMAX;
  __global const long *s1o = meta + 3 + 4 * EMAX, *s1s = meta + 3 + 5 * EMAX;
  long rem = i, o0 = 0, o1 = 0;
  for (int d = nout - 1; d >= 0; d--) {
    long c = rem % od[d];
    rem /= od[d];
    o0 += c * s0o[d];
    o1 += c * s1o[d];
  }
  long cnt = 1;
  for (int d = 0; d < nsum; d++) cnt *= sd[d];
  long idx[EMAX];
  for (int d = 0; d < nsum; d++) idx[d] = 0;
  T acc = 0;
  for (long s = 0; s < cnt; s++) {
    T p = x0[o0];
    if (nin > 1) p *= x1[o1];
    acc += p;
    /* odometer increment over the contracted labels */
    for (int d = nsum - 1; d >= 0; d--) {
      o0 += s0s[d];
      o1 += s1s[d];
      if (++idx[d] < sd[d]) break;
      o0 -= sd[d] * s0s[d];
      o1 -= sd[d] * s1s[d];
      idx[d] = 0;
    }
  }
  y[i] = acc;
}

#if defined(T_IS_FLOAT) && T_IS_FLOAT
/* det: y[b] = det(x[b]) for nmat matrices of n x n; work is a scratch copy. */
__kernel void det(__global const T *x, __global T *work, __global T *y, const int n, const long nmat) {
  long b = get_global_id(0);
  if (b >= nmat) return;
  long nn = (long)n * n;
  __global T *a = work + b * nn;
  for (long e = 0; e < nn; e++) a[e] = x[b * nn + e];
  T d = 1;
  for (int c = 0; c < n; c++) {
    int p = c;
    T best = fabs(a[c * n + c]);
    for (int r = c + 1; r < n; r++)
      if (fabs(a[r * n + c]) > best) { best = fabs(a[r * n + c]); p = r; }
    if (best == 0) { d = 0; break; }
    if (p != c) {
      for (int k = 0; k < n; k++) { T t = a[c * n + k]; a[c * n + k] = a[p * n + k]; a[p * n + k] = t; }
      d = -d;
    }
    T piv = a[c * n + c];
    d *= piv;
    for (int r = c + 1; r < n; r++) {
      T f = a[r * n + c] / piv;
      for (int k = c + 1; k < n; k++) a[r * n + k] -= f * a[c * n + k];
    }
  }
  y[b] = d;
}
#endif

#else /* QA: quantized matrix products ------------------------------------- */

/* Zero point / scale modes: 0 absent, 1 scalar, 2 per row of A (index m) or
 * per column of B (index n). */
inline int qz_a(__global const QA *zp, int mode, int m) { return mode == 0 ? 0 : (int)zp[mode == 1 ? 0 : m]; }
inline int qz_b(__global const QB *zp, int mode, int n) { return mode == 0 ? 0 : (int)zp[mode == 1 ? 0 : n]; }

/* Integer accumulation of (A - azp) * (B - bzp) for one output element. */
inline int qdot(__global const QA *A, __global const QB *B, int m, int n, int K, int N, int za, int zb) {
  int acc = 0;
  for (int k = 0; k < K; k++) acc += ((int)A[(long)m * K + k] - za) * ((int)B[(long)k * N + n] - zb);
  return acc;
}

/* MatMulInteger: Y[z](m,n) = sum_k (A(m,k) - azp) * (B(k,n) - bzp), int32.
 * global (N, M, batch). */
__kernel void matmul_int(const int M, const int N, const int K,
                         __global const QA *A, __global const QB *B,
                         __global const QA *azp, const int azm, __global const QB *bzp, const int bzm,
                         __global int *Y, __global const long *bmeta) {
  const int n = get_global_id(0), m = get_global_id(1);
  const long z = get_global_id(2);
  if (n >= N || m >= M) return;
  long ao, bo;
  batch_offsets(bmeta, z, &ao, &bo);
  Y[z * (long)M * N + (long)m * N + n] = qdot(A + ao, B + bo, m, n, K, N, qz_a(azp, azm, m), qz_b(bzp, bzm, n));
}

#ifdef QY
#ifndef QY_MIN
  #define QY_MIN 0
  #define QY_MAX 255
#endif
/* QLinearMatMul: Y = saturate(rint(acc * sa * sb / sy) + yzp). Scale modes as
 * zero-point modes (ys and yzp are scalars). */
__kernel void qlinear_matmul(const int M, const int N, const int K,
                             __global const QA *A, __global const float *as, const int asm_, __global const QA *azp, const int azm,
                             __global const QB *B, __global const float *bs, const int bsm, __global const QB *bzp, const int bzm,
                             __global const float *ys, __global const QY *yzp, const int has_yzp,
                             __global QY *Y, __global const long *bmeta) {
  const int n = get_global_id(0), m = get_global_id(1);
  const long z = get_global_id(2);
  if (n >= N || m >= M) return;
  long ao, bo;
  batch_offsets(bmeta, z, &ao, &bo);
  int acc = qdot(A + ao, B + bo, m, n, K, N, qz_a(azp, azm, m), qz_b(bzp, bzm, n));
  float sa = as[asm_ == 2 ? m : 0], sb = bs[bsm == 2 ? n : 0];
  float v = rint((float)acc * (sa * sb / ys[0])) + (float)(has_yzp ? (int)yzp[0] : 0);
  v = clamp(v, (float)QY_MIN, (float)QY_MAX);
  Y[z * (long)M * N + (long)m * N + n] = (QY)v;
}
#endif
#endif
