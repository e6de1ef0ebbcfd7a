/* conv.cl: Conv and ConvTranspose (ONNX) for floating types T (float,
 * double), with several convolution algorithms that the tuner chooses
 * between per shape (CONV_ALGO: the index of a solver in kernels/conv.c).
 *
 * Geometry arrives as an int array `m` (see M_* below) with three spatial
 * dims: 1-D and 2-D convolutions are padded with leading dims of size 1
 * (kernel 1, stride 1, dilation 1, pad 0). Layouts are NC(D)(H)W, weights
 * OI(D)(H)W for Conv and IO(D)(H)W for ConvTranspose.
 *
 * Kernels (CPU-style ones keep a register block per work-item, no local
 * memory; GPU-style ones stage tiles in local memory):
 *   conv_direct   [algo 0] any group/stride/dilation/pad: each work-item
 *                 computes CONV_TOC output channels x CONV_TP consecutive
 *                 output pixels of one row, accumulating in registers.
 *                 grid: (ceil(OW/TP)*OH*OD, G*ceil(OCg/TOC), N)
 *   conv_gemm     [algos 1, 2, 4] Y = A.B per batch: A weights packed in
 *                 panels of GEMM_TM rows ([K][GEMM_TM] per panel), B a dense
 *                 [K][ldb] matrix (the input itself for 1x1 stride 1, an
 *                 im2col buffer, or Winograd-transformed input); each
 *                 work-item holds GEMM_TM x GEMM_TN outputs as vectors of 8.
 *                 grid: (ceil(P/TN), ceil(M/TM), batches), the first two
 *                 swapped with GEMM_ORDER=1
 *   conv_gemm_s   [algo 1] same for strided 1x1 convs (B gathered from x).
 *   conv_im2col   [algos 2, 5] B[n][g][K][ldb] from x (zeros for padding and
 *                 for the columns P..ldb-1). grid: (OD*OH, K, N*G)
 *   conv_im2col_p [algo 6] the same in panels of GEMM_TN columns for gemm.cl's
 *                 gemm_panel. grid: (K, OD*OH, N*G)
 *   conv_dw       [algo 3] depthwise (one input and one output channel per
 *                 group): CONVDW_TP pixels of one row per work-item.
 *                 grid: (ceil(OW/TP)*OH*OD, C, N)
 *   wino_in, wino_out  [algo 4] Winograd F(2x2,3x3) input and output
 *                 transforms around 16 conv_gemm products (U_xi . V_xi).
 *   wino_in_p     [algo 7] wino_in into panels for gemm.cl's gemm_panel
 *                 (the 16 products), then wino_out.
 *   conv_gemm_local [algo 5] GPU-style GEMM of the unpacked weights with the
 *                 im2col buffer: LG_TS x LG_TS tiles of A and B in local
 *                 memory, LG_WPT outputs per work-item.
 *                 grid: (ceil(P/TS)*TS/WPT, ceil(M/TS)*TS, N*G), local (TS/WPT, TS)
 *   conv_dwv      [algo 8] depthwise 2-D as vectors of CONVDW_VW outputs of a
 *                 row per step. grid: (OH, C, N)
 *   wino4_in_p, wino4_out  [algo 9] Winograd F(4x4,3x3): the input transform
 *                 into panels for gemm.cl's gemm_panel (36 products) and the
 *                 output transform with bias and epilogue.
 *   conv_dwr      [algo 10] depthwise 2-D, CONVDW_R output rows of a channel
 *                 per work-item in vectors of CONVDW_VW, the interior of the
 *                 rows read as whole vectors with no tests.
 *                 grid: (ceil(OH/R), C, N)
 *   conv_dirv     [algo 11] direct 2-D over few input channels (stems):
 *                 CONV_TOC output channels of one output row per
 *                 work-item, in vectors of CONVDW_VW along the row.
 *                 grid: (OH, ceil(OCg/TOC), N*G)
 *   conv_pw       [algo 6 on 1x1 stride-1 convs] a register-blocked GEMM of
 *                 the packed weights with the input itself (no im2col).
 *                 grid: (ceil(P/TN) in groups of PANEL_WG, row blocks, N*G)
 *   convt_gather  ConvTranspose, one output element per work-item.
 *                 grid: (OD*OH*OW, OC, N)
 * The optional bias is read when has_bias != 0 (else `bias` is any buffer).
 * The host passes the tile sizes as -D options (it sizes the grids from them).
 *
 * Epilogue: when the host prepends a generated function
 *   T kiln_epi(T v, long i, int c, __global const ST *e0, __global const ST *e1)
 * (and #define KILN_EPI 1), every kernel that writes Y passes each output
 * value v (bias included) through it, with i the flat index into Y and c the
 * output channel; e0, e1 are the epilogue's tensor operands (any buffer when
 * unused). Without it EPI(v, i, c) is v.
 */
#if T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* fp16 storage (T_DTYPE 10, an fp16 plan: runtime/precision.c): every
 * __global buffer of the float kernels (input, weights as packed, bias,
 * scratch, output, epilogue operands) holds halfs (ST), read with
 * kiln_ldh / kiln_vldh8 and written with kiln_svh / kiln_vsth8 (half_io.cl); arithmetic, private
 * and local arrays are T = float. LD / SV: one element's load and store;
 * VLOAD8G / VSTORE8G and VLOADG / VSTOREG (CONVDW_VW wide): vectors. */
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
#define VLOAD8G(i, p) kiln_vldh8((i), (p))
#define VSTORE8G(v, i, p) kiln_vsth8((v), (i), (p))
/* a[0..n-1] = p[0..n-1] (n a constant): vectors of 4 converted at once */
#define LDROW(a, p, n)                                                                              \
  do {                                                                                              \
    _Pragma("unroll") for (int c_ = 0; c_ < (n) / 4 * 4; c_ += 4) vstore4(kiln_vldh4(0, (p) + c_), 0, (a) + c_); \
    _Pragma("unroll") for (int c_ = (n) / 4 * 4; c_ < (n); c_++) (a)[c_] = kiln_ldh((p), c_);     \
  } while (0)
#define WST float /* winop4's transformed tiles stay fp32: the output transform amplifies their rounding (up to 1.3e-2 of max |y| in half) */
#else
#define WST T
#define ST T
#define RT T
#define LD(p, i) ((p)[i])
#define SV(p, i, v) ((p)[i] = (v))
#define VLOAD8G(i, p) GLDU(8, i, p)
#define VSTORE8G(v, i, p) GSTU(8, v, i, p)
#define LDROW(a, p, n) _Pragma("unroll") for (int c_ = 0; c_ < (n); c_++) (a)[c_] = (p)[c_]
#endif
/* copies of stored elements (im2col): RT, a half's bits under fp16 storage */
#define CP(d, di, s, si) (((__global RT *)(d))[di] = ((__global const RT *)(s))[si])
#define CP0(d, di) (((__global RT *)(d))[di] = (RT)0)
/* KMAD (multiply-add, fma where the device has it): fastmath.cl, prepended by the host */

/* A program built for one algorithm (-DCONV_ALGO=a, as the tuned Conv
 * family's programs are) compiles only the kernels that algorithm launches:
 * compile time follows the source compiled (POCL here: conv.cl whole about
 * 500 ms, conv_gemm alone about 200 ms; NVIDIA's compiler about 27 ms/kB),
 * and tuning compiles one program per candidate. Without CONV_ALGO
 * (ConvTranspose, QLinearConv) every kernel is built. */
#ifdef CONV_ALGO
#define CONV_USES(a) (CONV_ALGO == (a))
#else
#define CONV_USES(a) 1
#endif

#ifndef CONV_TOC
#define CONV_TOC 8 // output channels per work-item in conv_direct (1..16)
#endif
#ifndef CONV_TP
#define CONV_TP 8 // output pixels along W per work-item in conv_direct (1..16)
#endif
#ifndef CONVDW_TP
#define CONVDW_TP 8 // output pixels along W per work-item in conv_dw (1..16)
#endif

#ifndef GEMM_TM
#define GEMM_TM 4 // conv_gemm: output channels per work-item = rows of a packed weight panel (1..8)
#endif
#ifndef GEMM_TN
#define GEMM_TN 8 // conv_gemm: output pixels per work-item (8, 16, 24, 32)
#endif
#ifndef GEMM_ORDER
#define GEMM_ORDER 0 // conv_gemm: 0 consecutive work-items walk pixel tiles (share a weight panel), 1 walk channel blocks (share a B tile)
#endif
#ifndef LG_TS
#define LG_TS 16 // conv_gemm_local: square tile of outputs per work-group (8, 16, 32)
#endif
#ifndef LG_WPT
#define LG_WPT 1 // conv_gemm_local: outputs per work-item along pixels (divides LG_TS)
#endif
#define GEMM_NV (GEMM_TN / 8) /* vectors of 8 per row of the register block */
#ifdef KILN_EPI
#define EPI(v, i, c) kiln_epi((v), (i), (c), e0, e1)
#else
#define EPI(v, i, c) (v)
#endif
/* KILN_EPIV: the epilogue also comes as kiln_epi4/8/16(v, i, c, e0, e1) on
 * a vector of W outputs of channel c at flat indices i..i+W-1; whole-vector
 * stores pass their vector through it at once (float heads) */
#define EPIV(W, v, i, c) CAT(kiln_epi, W)((v), (i), (c), e0, e1)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
/* GLDU / GSTU (global vectors as one access): vec_io.cl, prepended by the host */
#define T8 CAT(T, 8)

/* indices into the geometry array */
#define M_N 0
#define M_C 1
#define M_OC 2
#define M_G 3
#define M_ICG 4
#define M_OCG 5
#define M_IN 6   /* ID, IH, IW */
#define M_OUT 9  /* OD, OH, OW */
#define M_K 12   /* KD, KH, KW */
#define M_S 15   /* strides */
#define M_DL 18  /* dilations */
#define M_P 21   /* leading pads */

#if CONV_USES(0)
__kernel void conv_direct(__global const ST *x, __global const ST *w, __global const ST *bias, __global ST *y,
                          __global const int *m, int has_bias, __global const ST *e0, __global const ST *e1) {
  const int C = m[M_C], OC = m[M_OC], G = m[M_G], ICg = m[M_ICG], OCg = m[M_OCG];
  const int ID = m[M_IN], IH = m[M_IN + 1], IW = m[M_IN + 2];
  const int OD = m[M_OUT], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int KD = m[M_K], KH = m[M_K + 1], KW = m[M_K + 2];
  const int SD = m[M_S], SH = m[M_S + 1], SW = m[M_S + 2];
  const int DD = m[M_DL], DH = m[M_DL + 1], DW = m[M_DL + 2];
  const int nowb = (OW + CONV_TP - 1) / CONV_TP, nocb = (OCg + CONV_TOC - 1) / CONV_TOC;
  const int g0 = get_global_id(0), g1 = get_global_id(1), n = get_global_id(2);
  const int ow0 = (g0 % nowb) * CONV_TP, r = g0 / nowb, oh = r % OH, od = r / OH;
  const int grp = g1 / nocb, ocg0 = (g1 % nocb) * CONV_TOC;
  if (od >= OD || grp >= G || n >= m[M_N]) return; /* the launch rounds the tiles up to whole work-groups */
  const int KK = KD * KH * KW;
  const long isz = (long)ID * IH * IW;
  __global const ST *xb = x + ((long)n * C + (long)grp * ICg) * isz;
  long woff[CONV_TOC];
  for (int i = 0; i < CONV_TOC; i++) woff[i] = (long)(grp * OCg + min(ocg0 + i, OCg - 1)) * ICg * KK;
  T acc[CONV_TOC][CONV_TP];
  for (int i = 0; i < CONV_TOC; i++)
    for (int j = 0; j < CONV_TP; j++) acc[i][j] = 0;
  const int id0 = od * SD - m[M_P], ih0 = oh * SH - m[M_P + 1], iw0 = ow0 * SW - m[M_P + 2];
  for (int ic = 0; ic < ICg; ic++) {
    __global const ST *xc = xb + ic * isz;
    const int wic = ic * KK;
    for (int kd = 0; kd < KD; kd++) {
      const int id = id0 + kd * DD;
      if (id < 0 || id >= ID) continue;
      for (int kh = 0; kh < KH; kh++) {
        const int ih = ih0 + kh * DH;
        if (ih < 0 || ih >= IH) continue;
        __global const ST *xr = xc + ((long)id * IH + ih) * IW;
        const int wk = wic + (kd * KH + kh) * KW;
        for (int kw = 0; kw < KW; kw++) {
          const int iw = iw0 + kw * DW;
          T xv[CONV_TP];
          if (iw >= 0 && iw + (CONV_TP - 1) * SW < IW) {
            for (int j = 0; j < CONV_TP; j++) xv[j] = LD(xr, iw + j * SW);
          } else {
            for (int j = 0; j < CONV_TP; j++) {
              const int q = iw + j * SW;
              xv[j] = (q >= 0 && q < IW) ? LD(xr, q) : (T)0;
            }
          }
          for (int i = 0; i < CONV_TOC; i++) {
            const T wv = LD(w, woff[i] + wk + kw);
            for (int j = 0; j < CONV_TP; j++) acc[i][j] = KMAD(wv, xv[j], acc[i][j]);
          }
        }
      }
    }
  }
  for (int i = 0; i < CONV_TOC; i++) {
    if (ocg0 + i >= OCg) break;
    const int oc = grp * OCg + ocg0 + i;
    const T b = has_bias ? LD(bias, oc) : (T)0;
    const long yo = (((long)n * OC + oc) * OD + od) * (long)OH * OW + (long)oh * OW + ow0;
    for (int j = 0; j < CONV_TP; j++)
      if (ow0 + j < OW) SV(y, yo + j, EPI(acc[i][j] + b, yo + j, oc));
  }
}
#endif

/* Register-blocked GEMM: Y[m][p] = sum_k A[m][k] * B[k][p] (+ bias[m]) for
 * batch b = get_global_id(2), split as bi = b % G1 (group or Winograd
 * component: selects the weight panels and the bias) and bo = b / G1 (image).
 *   A + bi*sa: panels of GEMM_TM rows, panel mb at mb*K*GEMM_TM as [K][GEMM_TM]
 *              (rows >= M zero-padded);
 *   B + bo*sbo + bi*sbi: [K][ldb]; columns p0..p0+TN-1 are read unguarded
 *              when p0 + TN <= pload (pload = ldb for zero-padded buffers);
 *   Y + bo*syo + bi*syi: [M][ldy], columns < P written;
 *   bias + bi*M when has_bias.
 * gather != 0 (strided 1x1): column p of row k is B[k*ldb + (p/OW)*SH*IW + (p%OW)*SW]. */
inline void gemm_body(__global const ST *A, __global const ST *B, __global const ST *bias, __global ST *Y, const int M, const int K,
                      const int P, const int ldb, const int pload, const int ldy, const int G1, const long sa, const long sbo,
                      const long sbi, const long syo, const long syi, const int has_bias, const int gather, const int SH,
                      const int SW, const int IW, const int OW, const int epi, __global const ST *e0, __global const ST *e1) {
#if GEMM_ORDER
  const int p0 = get_global_id(1) * GEMM_TN, mb = get_global_id(0), b = get_global_id(2);
#else
  const int p0 = get_global_id(0) * GEMM_TN, mb = get_global_id(1), b = get_global_id(2);
#endif
  const int m0 = mb * GEMM_TM;
  if (p0 >= P || m0 >= M) return;
  const int bi = b % G1, bo = b / G1;
  __global const ST *a = A + bi * sa + (long)mb * K * GEMM_TM;
  __global const ST *bb = B + bo * sbo + bi * sbi;
  T8 acc[GEMM_TM][GEMM_NV];
  for (int i = 0; i < GEMM_TM; i++)
    for (int j = 0; j < GEMM_NV; j++) acc[i][j] = (T8)0;
  if (!gather && p0 + GEMM_TN <= pload) {
    __global const ST *bp = bb + p0;
    for (int k = 0; k < K; k++, bp += ldb, a += GEMM_TM) {
      T8 bv[GEMM_NV];
      for (int j = 0; j < GEMM_NV; j++) bv[j] = VLOAD8G(j, bp);
      T ar[GEMM_TM];
      LDROW(ar, a, GEMM_TM);
      for (int i = 0; i < GEMM_TM; i++) {
        const T8 av = (T8)(ar[i]);
        for (int j = 0; j < GEMM_NV; j++) acc[i][j] = KMAD(av, bv[j], acc[i][j]);
      }
    }
  } else {
    int off[GEMM_TN];
    for (int q = 0; q < GEMM_TN; q++) {
      const int p = p0 + q;
      off[q] = p >= P ? -1 : gather ? (p / OW) * SH * IW + (p % OW) * SW : p;
    }
    __global const ST *bp = bb;
    for (int k = 0; k < K; k++, bp += ldb, a += GEMM_TM) {
      T tmp[GEMM_TN];
      for (int q = 0; q < GEMM_TN; q++) tmp[q] = off[q] >= 0 ? LD(bp, off[q]) : (T)0;
      T8 bv[GEMM_NV];
      for (int j = 0; j < GEMM_NV; j++) bv[j] = vload8(j, tmp);
      T ar[GEMM_TM];
      LDROW(ar, a, GEMM_TM);
      for (int i = 0; i < GEMM_TM; i++) {
        const T8 av = (T8)(ar[i]);
        for (int j = 0; j < GEMM_NV; j++) acc[i][j] = KMAD(av, bv[j], acc[i][j]);
      }
    }
  }
  const bool full = p0 + GEMM_TN <= P;
  for (int i = 0; i < GEMM_TM; i++) {
    const int m = m0 + i;
    if (m >= M) break;
    const T bs = has_bias ? LD(bias, bi * M + m) : (T)0;
    const long yo = bo * syo + bi * syi + (long)m * ldy + p0;
    __global ST *yr = Y + yo;
#ifdef KILN_EPI
    if (epi) {
      T tmp[GEMM_TN];
#ifdef KILN_EPIV
      if (full) {
        for (int j = 0; j < GEMM_NV; j++) VSTORE8G(EPIV(8, acc[i][j] + (T8)bs, yo + 8 * j, bi * M + m), j, yr);
        continue;
      }
#endif
      for (int j = 0; j < GEMM_NV; j++) vstore8(acc[i][j] + (T8)bs, j, tmp);
      /* the lanes that are outputs only (past P the index leaves the row,
       * and past Y's last row a full-size operand's buffer) */
      for (int q = 0; q < GEMM_TN && p0 + q < P; q++) tmp[q] = EPI(tmp[q], yo + q, bi * M + m);
      if (full) {
        for (int j = 0; j < GEMM_NV; j++) VSTORE8G(vload8(j, tmp), j, yr);
      } else {
        for (int q = 0; q < GEMM_TN; q++)
          if (p0 + q < P) SV(yr, q, tmp[q]);
      }
      continue;
    }
#endif
    if (full) {
      for (int j = 0; j < GEMM_NV; j++) VSTORE8G(acc[i][j] + (T8)bs, j, yr);
    } else {
      T tmp[GEMM_TN];
      for (int j = 0; j < GEMM_NV; j++) vstore8(acc[i][j], j, tmp);
      for (int q = 0; q < GEMM_TN; q++)
        if (p0 + q < P) SV(yr, q, tmp[q] + bs);
    }
  }
}

#if CONV_USES(1) || CONV_USES(2) || CONV_USES(4)
__kernel void conv_gemm(__global const ST *A, __global const ST *B, __global const ST *bias, __global ST *Y, int M, int K, int P,
                        int ldb, int pload, int ldy, int G1, long sa, long sbo, long sbi, long syo, long syi, int has_bias,
                        int epi, __global const ST *e0, __global const ST *e1) {
  gemm_body(A, B, bias, Y, M, K, P, ldb, pload, ldy, G1, sa, sbo, sbi, syo, syi, has_bias, 0, 1, 1, 1, 1, epi, e0, e1);
}
#endif

#if CONV_USES(1)
__kernel void conv_gemm_s(__global const ST *A, __global const ST *B, __global const ST *bias, __global ST *Y, int M, int K, int P,
                          int ldb, int pload, int ldy, int G1, long sa, long sbo, long sbi, long syo, long syi, int has_bias,
                          int epi, __global const ST *e0, __global const ST *e1, int SH, int SW, int IW, int OW) {
  gemm_body(A, B, bias, Y, M, K, P, ldb, pload, ldy, G1, sa, sbo, sbi, syo, syi, has_bias, 1, SH, SW, IW, OW, epi, e0, e1);
}
#endif


/* im2col: col[(n*G + g)*K + k][p] for k = (ic, kd, kh, kw) of group g and
 * output pixel p (zeros for padding taps; the row with od*OH + oh = 0 also
 * zeroes the columns P..ldb-1). Each work-item fills one output row (OW
 * columns) of one k: no divisions per element. grid: (OD*OH, K, N*G) */
#if CONV_USES(2) || CONV_USES(5)
__kernel void conv_im2col(__global const ST *x, __global ST *col, __global const int *m, int ldb) {
  const int C = m[M_C], G = m[M_G], ICg = m[M_ICG];
  const int ID = m[M_IN], IH = m[M_IN + 1], IW = m[M_IN + 2];
  const int OD = m[M_OUT], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int KD = m[M_K], KH = m[M_K + 1], KW = m[M_K + 2];
  const int SW = m[M_S + 2], DW = m[M_DL + 2];
  const int KK = KD * KH * KW, K = ICg * KK;
  const int r = get_global_id(0), k = get_global_id(1), b = get_global_id(2);
  if (r >= OD * OH || k >= K || b >= m[M_N] * G) return;
  const int n = b / G, g = b % G;
  const int ic = k / KK, t = k % KK, kw = t % KW, kh = (t / KW) % KH, kd = t / (KW * KH);
  const int oh = r % OH, od = r / OH;
  __global ST *cr = col + ((long)b * K + k) * ldb;
  if (r == 0)
    for (int p = OD * OH * OW; p < ldb; p++) CP0(cr, p);
  cr += (long)r * OW;
  const int id = od * m[M_S] - m[M_P] + kd * m[M_DL];
  const int ih = oh * m[M_S + 1] - m[M_P + 1] + kh * m[M_DL + 1];
  if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
    for (int ow = 0; ow < OW; ow++) CP0(cr, ow);
    return;
  }
  __global const ST *xr = x + ((long)n * C + (long)g * ICg + ic) * ((long)ID * IH * IW) + ((long)id * IH + ih) * IW;
  const int iw0 = kw * DW - m[M_P + 2];
  /* ow range whose iw = ow*SW + iw0 lies inside [0, IW) */
  const int lo = iw0 >= 0 ? 0 : min(OW, (-iw0 + SW - 1) / SW);
  const int hi = iw0 >= IW ? 0 : min(OW, (IW - 1 - iw0) / SW + 1);
  for (int ow = 0; ow < lo; ow++) CP0(cr, ow);
  if (SW == 1)
    for (int ow = lo; ow < hi; ow++) CP(cr, ow, xr, ow + iw0);
  else
    for (int ow = lo; ow < hi; ow++) CP(cr, ow, xr, ow * SW + iw0);
  for (int ow = max(lo, hi); ow < OW; ow++) CP0(cr, ow);
}
#endif

/* im2col into panels of GEMM_TN columns: col[b][p / TN][k][p % TN], np =
 * ceil(P/TN) panels per (n, g), zeros for padding taps and for p >= P. The
 * GEMM then reads each work-item's K x TN block contiguously (a dense
 * [K][P] buffer puts every k of a block on another page for large P).
 * gemm.cl's gemm_panel (built with ROWCH=1) multiplies the weights with it.
 * Each work-item fills one output row (OW columns) of one k; consecutive
 * work-items take consecutive k (neighbouring lines of the same panels).
 * grid: (K, OD*OH, N*G) */
#if CONV_USES(6)
__kernel void conv_im2col_p(__global const ST *x, __global ST *col, __global const int *m) {
  const int C = m[M_C], G = m[M_G], ICg = m[M_ICG];
  const int ID = m[M_IN], IH = m[M_IN + 1], IW = m[M_IN + 2];
  const int OD = m[M_OUT], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int KD = m[M_K], KH = m[M_K + 1], KW = m[M_K + 2];
  const int SW = m[M_S + 2], DW = m[M_DL + 2];
  const int KK = KD * KH * KW, K = ICg * KK, P = OD * OH * OW, NP = (P + GEMM_TN - 1) / GEMM_TN;
  const int k = get_global_id(0), r = get_global_id(1), b = get_global_id(2);
  if (r >= OD * OH || k >= K || b >= m[M_N] * G) return;
  const int n = b / G, g = b % G;
  const int ic = k / KK, t = k % KK, kw = t % KW, kh = (t / KW) % KH, kd = t / (KW * KH);
  const int oh = r % OH, od = r / OH;
  __global ST *cb = col + (long)b * NP * K * GEMM_TN + (long)k * GEMM_TN;
  if (r == OD * OH - 1)
    for (int p = P; p < NP * GEMM_TN; p++) CP0(cb, (long)(p / GEMM_TN) * K * GEMM_TN + p % GEMM_TN);
  const int id = od * m[M_S] - m[M_P] + kd * m[M_DL];
  const int ih = oh * m[M_S + 1] - m[M_P + 1] + kh * m[M_DL + 1];
  const bool row_in = id >= 0 && id < ID && ih >= 0 && ih < IH;
  __global const ST *xr = x + ((long)n * C + (long)g * ICg + ic) * ((long)ID * IH * IW) + ((long)(row_in ? id : 0) * IH + (row_in ? ih : 0)) * IW;
  const int iw0 = kw * DW - m[M_P + 2];
  int p = r * OW, pj = p % GEMM_TN;
  __global ST *dst = cb + (long)(p / GEMM_TN) * K * GEMM_TN;
  for (int ow = 0; ow < OW; ow++) {
    const int iw = ow * SW + iw0;
    if (row_in && iw >= 0 && iw < IW) CP(dst, pj, xr, iw);
    else CP0(dst, pj);
    if (++pj == GEMM_TN) { pj = 0; dst += (long)K * GEMM_TN; }
  }
}
#endif

/* GPU-style tiled GEMM for algo 5: Y[n][g*M + m][p] = sum_k W[g*M + m][k] *
 * col[n*G + g][k][p] (+ bias), W the weights as stored ([OC][K]); tiles of
 * LG_TS x LG_TS of W and col staged in local memory. */
#if CONV_USES(5)
__kernel void conv_gemm_local(__global const ST *W, __global const ST *col, __global const ST *bias, __global ST *Y, int M, int K,
                              int P, int ldb, int G, int has_bias, __global const ST *e0, __global const ST *e1) {
  __local T As[LG_TS][LG_TS + 1];
  __local T Bs[LG_TS][LG_TS + 1];
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int p0 = get_group_id(0) * LG_TS, m = get_group_id(1) * LG_TS + ly, b = get_global_id(2);
  const int g = b % G, n = b / G;
  __global const ST *wg = W + (long)g * M * K;
  __global const ST *cb = col + (long)b * K * ldb;
  T acc[LG_WPT];
  for (int w = 0; w < LG_WPT; w++) acc[w] = 0;
  for (int k0 = 0; k0 < K; k0 += LG_TS) {
    for (int w = 0; w < LG_WPT; w++) {
      const int c = lx + w * (LG_TS / LG_WPT);
      /* As[ly][c] = W[m][k0 + c]; Bs[ly][c] = col[k0 + ly][p0 + c] */
      As[ly][c] = (m < M && k0 + c < K) ? LD(wg, (long)m * K + k0 + c) : (T)0;
      Bs[ly][c] = (k0 + ly < K && p0 + c < ldb) ? LD(cb, (long)(k0 + ly) * ldb + p0 + c) : (T)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < LG_TS; kk++) {
      const T av = As[ly][kk];
      for (int w = 0; w < LG_WPT; w++) acc[w] = KMAD(av, Bs[kk][lx + w * (LG_TS / LG_WPT)], acc[w]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (m >= M) return;
  const T bs = has_bias ? LD(bias, g * M + m) : (T)0;
  const long yo = ((long)n * G * M + (long)g * M + m) * P;
  for (int w = 0; w < LG_WPT; w++) {
    const int p = p0 + lx + w * (LG_TS / LG_WPT);
    if (p < P) SV(Y, yo + p, EPI(acc[w] + bs, yo + p, g * M + m));
  }
}
#endif

/* Winograd F(2x2,3x3) input transform: V[n][xi][c][t] = (B^T d B)[xi] for
 * the 4x4 input patch d of tile t (tiles of 2x2 outputs, TW per row; zeros
 * for t >= T up to ldb). grid: (ldb, C, N). */
/* The 16 values (B^T d B)[xi] of tile t, channel c, image n (zeros past T_). */
inline void wino_tile_in(__global const ST *x, __global const int *m, int TW, int T_, int t, int c, int n, T out[16]) {
  const int C = m[M_C], IH = m[M_IN + 1], IW = m[M_IN + 2];
  T d[4][4];
  if (t < T_) {
    const int ih0 = (t / TW) * 2 - m[M_P + 1], iw0 = (t % TW) * 2 - m[M_P + 2];
    __global const ST *xc = x + ((long)n * C + c) * ((long)IH * IW);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        const int ih = ih0 + i, iw = iw0 + j;
        d[i][j] = (ih >= 0 && ih < IH && iw >= 0 && iw < IW) ? LD(xc, (long)ih * IW + iw) : (T)0;
      }
  } else {
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) d[i][j] = 0;
  }
  T u[4][4];
  for (int j = 0; j < 4; j++) {
    u[0][j] = d[0][j] - d[2][j];
    u[1][j] = d[1][j] + d[2][j];
    u[2][j] = d[2][j] - d[1][j];
    u[3][j] = d[1][j] - d[3][j];
  }
  for (int i = 0; i < 4; i++) {
    out[4 * i + 0] = u[i][0] - u[i][2];
    out[4 * i + 1] = u[i][1] + u[i][2];
    out[4 * i + 2] = u[i][2] - u[i][1];
    out[4 * i + 3] = u[i][1] - u[i][3];
  }
}

#if CONV_USES(4)
__kernel void wino_in(__global const ST *x, __global ST *V, __global const int *m, int TW, int T_, int ldb) {
  const int C = m[M_C];
  const int t = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
  if (t >= ldb || c >= C || n >= m[M_N]) return;
  T o[16];
  wino_tile_in(x, m, TW, T_, t, c, n, o);
  __global ST *v = V + ((long)n * 16 * C + c) * ldb + t;
  const long xs = (long)C * ldb;
  for (int xi = 0; xi < 16; xi++) SV(v, xi * xs, o[xi]);
}
#endif

/* [algo 7] wino_in into panels of GEMM_TN tiles for gemm.cl's gemm_panel:
 * V[n][xi][t / TN][c][t % TN] (np = ceil(T_/TN) panels); consecutive
 * work-items take consecutive channels. grid: (C, np*TN, N) */
#if CONV_USES(7)
__kernel void wino_in_p(__global const ST *x, __global ST *V, __global const int *m, int TW, int T_) {
  const int C = m[M_C], NP = (T_ + GEMM_TN - 1) / GEMM_TN;
  const int c = get_global_id(0), t = get_global_id(1), n = get_global_id(2);
  if (t >= NP * GEMM_TN || c >= C || n >= m[M_N]) return;
  T o[16];
  wino_tile_in(x, m, TW, T_, t, c, n, o);
  __global ST *v = V + (((long)n * 16 * NP + t / GEMM_TN) * C + c) * GEMM_TN + t % GEMM_TN;
  const long xs = (long)NP * C * GEMM_TN;
  for (int xi = 0; xi < 16; xi++) SV(v, xi * xs, o[xi]);
}
#endif

/* Winograd F(2x2,3x3) output transform: y tile = A^T Mt A (+ bias) with
 * Mt[xi] = Mw[n][xi][oc][t]. grid: (T, OC, N). */
#if CONV_USES(4) || CONV_USES(7)
__kernel void wino_out(__global const ST *Mw, __global const ST *bias, __global ST *y, __global const int *m, int TW, int T_,
                       int ldb, int has_bias, __global const ST *e0, __global const ST *e1) {
  const int OC = m[M_OC], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int t = get_global_id(0), oc = get_global_id(1), n = get_global_id(2);
  if (t >= T_ || oc >= OC || n >= m[M_N]) return;
  __global const ST *mp = Mw + ((long)n * 16 * OC + oc) * ldb + t;
  const long xs = (long)OC * ldb;
  T v[4][4];
  for (int i = 0; i < 16; i++) v[i / 4][i % 4] = LD(mp, i * xs);
  T u[2][4];
  for (int j = 0; j < 4; j++) {
    u[0][j] = v[0][j] + v[1][j] + v[2][j];
    u[1][j] = v[1][j] - v[2][j] - v[3][j];
  }
  const T bs = has_bias ? LD(bias, oc) : (T)0;
  const int oh0 = (t / TW) * 2, ow0 = (t % TW) * 2;
  const long yc = ((long)n * OC + oc) * ((long)OH * OW);
  for (int i = 0; i < 2; i++) {
    if (oh0 + i >= OH) break;
    const T y0 = u[i][0] + u[i][1] + u[i][2], y1 = u[i][1] - u[i][2] - u[i][3];
    const long yo = yc + (long)(oh0 + i) * OW + ow0;
    SV(y, yo, EPI(y0 + bs, yo, oc));
    if (ow0 + 1 < OW) SV(y, yo + 1, EPI(y1 + bs, yo + 1, oc));
  }
}
#endif

/* [algo 9] Winograd F(4x4,3x3): tiles of 4x4 outputs from 6x6 input
 * patches, 36 products by gemm.cl's gemm_panel between two transforms
 * (Lavin and Gray's matrices; the host transforms the weights, G g G^T).
 * Both transforms take 8 consecutive tiles per work-item as the lanes of
 * T8 vectors: the arithmetic is vector arithmetic and each of the 36
 * transformed values of the 8 tiles is one vector store (load). A blocked
 * input (WINO_INB) or output (WINO_OUTB) puts the channel in dimension 0,
 * so that neighbouring work-items touch neighbouring elements: with the
 * channel in dimension 1 the blocked output transform took 1.4x the NCHW
 * one's time on resnet50's 256x14x14 (810 vs 584 us a conv). */
#if CONV_USES(9)
/* the 6 values B^T s of 6 values s (vectors of 8 tiles) */
#define WINO4_IN(s0, s1, s2, s3, s4, s5, u)            \
  do {                                                 \
    const T8 s42_ = (s4) - (s2);                        \
    u[0] = (T)4 * (s0) - (T)5 * (s2) + (s4);            \
    u[1] = (s3) + (s4) - (T)4 * ((s1) + (s2));          \
    u[2] = (s4) - (s3) + (T)4 * ((s1) - (s2));          \
    u[3] = s42_ + (T)2 * ((s3) - (s1));                 \
    u[4] = s42_ + (T)2 * ((s1) - (s3));                 \
    u[5] = (T)4 * (s1) - (T)5 * (s3) + (s5);            \
  } while (0)
/* the 4 values A^T s of 6 values s */
#define WINO4_OUT(s0, s1, s2, s3, s4, s5, o)           \
  do {                                                 \
    const T8 a_ = (s1) + (s2), b_ = (s1) - (s2), c_ = (s3) + (s4), e_ = (s3) - (s4); \
    o[0] = (s0) + a_ + c_;                             \
    o[1] = b_ + (T)2 * e_;                             \
    o[2] = a_ + (T)4 * c_;                             \
    o[3] = b_ + (T)8 * e_ + (s5);                      \
  } while (0)

/* wino4_in_p: V[n][xi][t / TN][c][t % TN] = (B^T d B)[xi] for the patch d
 * of tile t (TW tiles per row; zeros for t >= T_ up to the last panel),
 * tiles t0..t0+7 per work-item (GEMM_TN is a multiple of 8, so they share
 * a panel). grid: (np*TN/8, C, N) */
__kernel void wino4_in_p(__global const ST *x, __global WST *V, __global const int *m, int TW, int T_) {
  const int C = m[M_C], IH = m[M_IN + 1], IW = m[M_IN + 2], NP = (T_ + GEMM_TN - 1) / GEMM_TN;
  const int t0 = get_global_id(0) * 8, c = get_global_id(1), n = get_global_id(2);
  if (t0 >= NP * GEMM_TN || c >= C || n >= m[M_N]) return;
  __global const ST *xc = x + ((long)n * C + c) * ((long)IH * IW);
  T8 d[6][6], u[6][6], r[6]; /* the patches (lanes: the 8 tiles), after B^T, scratch */
  const int tr = t0 / TW, tc = t0 % TW, ih0 = tr * 4 - m[M_P + 1], iw0 = tc * 4 - m[M_P + 2];
  if (tc + 8 <= TW && t0 + 8 <= T_) {
    /* the 8 tiles side by side in one tile row: each of the 6 input rows is
     * 34 consecutive values (loaded as two 16-wide vectors and 2 elements
     * inside the image; at its edges, and in fp16 storage, element by
     * element into private memory first), and column j of tile l is value
     * 4l + j: two-source picks out of the 16-wide vectors, one permute each
     * where the ISA has it (single-lane swizzles: see WINO_TR8) */
    const bool inw = iw0 >= 0 && iw0 + 34 <= IW;
    _Pragma("unroll") for (int i = 0; i < 6; i++) {
      const int ih = ih0 + i;
      CAT(T, 16) a = (CAT(T, 16))0, b = (CAT(T, 16))0;
      T c0 = 0, c1 = 0;
      if (ih >= 0 && ih < IH) {
        __global const ST *xr = xc + (long)ih * IW;
#if !(defined(T_DTYPE) && T_DTYPE == 10)
        if (inw) {
          a = vload16(0, xr + iw0);
          b = vload16(1, xr + iw0);
          c0 = xr[iw0 + 32];
          c1 = xr[iw0 + 33];
        } else
#endif
        {
          T row[34];
          for (int q = 0; q < 34; q++) row[q] = iw0 + q >= 0 && iw0 + q < IW ? LD(xr, iw0 + q) : (T)0;
          a = vload16(0, row);
          b = vload16(0, row + 16);
          c0 = row[32];
          c1 = row[33];
        }
      }
      d[i][0] = (T8)(a.s0, a.s4, a.s8, a.sc, b.s0, b.s4, b.s8, b.sc);
      d[i][1] = (T8)(a.s1, a.s5, a.s9, a.sd, b.s1, b.s5, b.s9, b.sd);
      d[i][2] = (T8)(a.s2, a.s6, a.sa, a.se, b.s2, b.s6, b.sa, b.se);
      d[i][3] = (T8)(a.s3, a.s7, a.sb, a.sf, b.s3, b.s7, b.sb, b.sf);
      d[i][4] = (T8)(a.s4, a.s8, a.sc, b.s0, b.s4, b.s8, b.sc, c0);
      d[i][5] = (T8)(a.s5, a.s9, a.sd, b.s1, b.s5, b.s9, b.sd, c1);
    }
  } else {
    /* tiles across a row's end, or past T_: element by element */
    T dd[6][6][8];
    for (int l = 0; l < 8; l++) {
      const int t = t0 + l;
      const int ih0 = (t / TW) * 4 - m[M_P + 1], iw0 = (t % TW) * 4 - m[M_P + 2];
      if (t < T_ && ih0 >= 0 && ih0 + 6 <= IH && iw0 >= 0 && iw0 + 6 <= IW) {
        __global const ST *xp = xc + (long)ih0 * IW + iw0;
        for (int i = 0; i < 6; i++)
          for (int j = 0; j < 6; j++) dd[i][j][l] = LD(xp, i * IW + j);
      } else {
        for (int i = 0; i < 6; i++)
          for (int j = 0; j < 6; j++) {
            const int ih = ih0 + i, iw = iw0 + j;
            dd[i][j][l] = (t < T_ && ih >= 0 && ih < IH && iw >= 0 && iw < IW) ? LD(xc, (long)ih * IW + iw) : (T)0;
          }
      }
    }
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) d[i][j] = vload8(0, dd[i][j]);
  }
  _Pragma("unroll") for (int j = 0; j < 6; j++) { /* columns: B^T d */
    WINO4_IN(d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j], r);
    _Pragma("unroll") for (int i = 0; i < 6; i++) u[i][j] = r[i];
  }
  __global WST *v = V + (((long)n * 36 * NP + t0 / GEMM_TN) * C + c) * GEMM_TN + t0 % GEMM_TN;
  const long xs = (long)NP * C * GEMM_TN;
  _Pragma("unroll") for (int i = 0; i < 6; i++) { /* rows: (B^T d) B */
    WINO4_IN(u[i][0], u[i][1], u[i][2], u[i][3], u[i][4], u[i][5], r);
    _Pragma("unroll") for (int j = 0; j < 6; j++) vstore8(r[j], 0, v + (6 * i + j) * xs);
  }
}

/* y tile = A^T Mt A (+ bias, epilogue) with Mt[xi] = Mw[n][xi][oc][t] for
 * tiles t0..t0+7: the 4x4 outputs of each that fall inside the image.
 * grid: (ceil(T/8), OC, N) */
__kernel void wino4_out(__global const WST *Mw, __global const ST *bias, __global ST *y, __global const int *m, int TW, int T_,
                        int ldb, int has_bias, __global const ST *e0, __global const ST *e1) {
  const int OC = m[M_OC], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int t0 = get_global_id(0) * 8, oc = get_global_id(1), n = get_global_id(2);
  if (t0 >= T_ || oc >= OC || n >= m[M_N]) return;
  __global const WST *mp = Mw + ((long)n * 36 * OC + oc) * ldb + t0;
  const long xs = (long)OC * ldb;
  T8 mv[36];
  if (t0 + 8 <= T_) {
    for (int k = 0; k < 36; k++) mv[k] = vload8(0, mp + k * xs);
  } else { /* the last tiles: lanes past T_ repeat the last tile (not stored) */
    for (int k = 0; k < 36; k++) {
      T tmp[8];
      for (int l = 0; l < 8; l++) tmp[l] = mp[k * xs + min(l, T_ - 1 - t0)];
      mv[k] = vload8(0, tmp);
    }
  }
  T8 u[4][6], o[4];
  for (int j = 0; j < 6; j++) { /* columns: A^T Mt */
    WINO4_OUT(mv[j], mv[6 + j], mv[12 + j], mv[18 + j], mv[24 + j], mv[30 + j], o);
    for (int i = 0; i < 4; i++) u[i][j] = o[i];
  }
  const T bs = has_bias ? LD(bias, oc) : (T)0;
  const long yc = ((long)n * OC + oc) * ((long)OH * OW);
#if !defined(KILN_EPI) || defined(KILN_EPIV)
  const int tc = t0 % TW, oh0 = (t0 / TW) * 4, ow0 = tc * 4;
  if (tc + 8 <= TW && t0 + 8 <= T_ && oh0 + 4 <= OH && ow0 + 32 <= OW) {
    /* the 8 tiles side by side in one tile row, inside the image: each of
     * the 4 output rows is 32 consecutive values, stored as 4 vectors
     * (through the vector epilogue) where the tiles' lanes were stored one
     * element at a time */
    _Pragma("unroll") for (int i = 0; i < 4; i++) {
      WINO4_OUT(u[i][0], u[i][1], u[i][2], u[i][3], u[i][4], u[i][5], o);
      _Pragma("unroll") for (int j = 0; j < 4; j++) o[j] += (T8)(bs);
      const T8 w[4] = {(T8)(o[0].s0, o[1].s0, o[2].s0, o[3].s0, o[0].s1, o[1].s1, o[2].s1, o[3].s1),
                       (T8)(o[0].s2, o[1].s2, o[2].s2, o[3].s2, o[0].s3, o[1].s3, o[2].s3, o[3].s3),
                       (T8)(o[0].s4, o[1].s4, o[2].s4, o[3].s4, o[0].s5, o[1].s5, o[2].s5, o[3].s5),
                       (T8)(o[0].s6, o[1].s6, o[2].s6, o[3].s6, o[0].s7, o[1].s7, o[2].s7, o[3].s7)};
      const long yo = yc + (long)(oh0 + i) * OW + ow0;
      _Pragma("unroll") for (int q = 0; q < 4; q++) {
#ifdef KILN_EPI
        VSTORE8G(EPIV(8, w[q], yo + 8 * q, oc), 0, y + yo + 8 * q);
#else
        VSTORE8G(w[q], 0, y + yo + 8 * q);
#endif
      }
    }
    return;
  }
#endif
  T ov[4][4][8];
  for (int i = 0; i < 4; i++) {
    WINO4_OUT(u[i][0], u[i][1], u[i][2], u[i][3], u[i][4], u[i][5], o);
    for (int j = 0; j < 4; j++) vstore8(o[j] + (T8)(bs), 0, ov[i][j]);
  }
  for (int l = 0; l < 8 && t0 + l < T_; l++) {
    const int t = t0 + l, oh0 = (t / TW) * 4, ow0 = (t % TW) * 4;
    for (int i = 0; i < 4 && oh0 + i < OH; i++) {
      const long yo = yc + (long)(oh0 + i) * OW + ow0;
      for (int j = 0; j < 4 && ow0 + j < OW; j++) SV(y, yo + j, EPI(ov[i][j][l], yo + j, oc));
    }
  }
}

/* Blocked values (runtime/layout.c: float, C a multiple of the block B,
 * channel c of pixel p at ((n*C + c/B*B)*H*W + p)*B + c%B): a pixel's
 * channels are contiguous where the products' panels want tiles
 * contiguous. So a work-item takes 8 tiles x 8 channels: it transforms
 * each tile with the 8 channels as the lanes of its vectors (one vector
 * load per patch element, one store per output), and turns each of the 36
 * 8x8 blocks (tiles x channels) around in registers (WINO_TR8: three rounds
 * of two-vector shuffles) between the transform and the panels. Per tile
 * and channel that is 4.5 vector loads and 36 shuffles' worth of 1/8 where
 * wino4_in_p's element gathers took 36 scalar loads: resnet50's 64x56x56
 * input transform 222 -> 56 us (bench_conv_layer --blk 3 --split, old and new builds). */
#if defined(WINO_INB) || defined(WINO_OUTB)
/* o[k] = (a[0].sk, ..., a[7].sk): an 8x8 block turned around */
#define WINO_TR8(a, o)                                                                                                     \
  do {                                                                                                                     \
    T8 p_[8], q_[8];                                                                                                       \
    _Pragma("unroll") for (int r_ = 0; r_ < 8; r_ += 2) {                                                                  \
      p_[r_] = (T8)(a[r_].s0, a[r_ + 1].s0, a[r_].s1, a[r_ + 1].s1, a[r_].s4, a[r_ + 1].s4, a[r_].s5, a[r_ + 1].s5);     \
      p_[r_ + 1] = (T8)(a[r_].s2, a[r_ + 1].s2, a[r_].s3, a[r_ + 1].s3, a[r_].s6, a[r_ + 1].s6, a[r_].s7, a[r_ + 1].s7); \
    }                                                                                                                      \
    _Pragma("unroll") for (int h_ = 0; h_ < 8; h_ += 4) {                                                                  \
      q_[h_] = (T8)(p_[h_].s0, p_[h_].s1, p_[h_ + 2].s0, p_[h_ + 2].s1, p_[h_].s4, p_[h_].s5, p_[h_ + 2].s4, p_[h_ + 2].s5);                                               \
      q_[h_ + 1] = (T8)(p_[h_].s2, p_[h_].s3, p_[h_ + 2].s2, p_[h_ + 2].s3, p_[h_].s6, p_[h_].s7, p_[h_ + 2].s6, p_[h_ + 2].s7);                                           \
      q_[h_ + 2] = (T8)(p_[h_ + 1].s0, p_[h_ + 1].s1, p_[h_ + 3].s0, p_[h_ + 3].s1, p_[h_ + 1].s4, p_[h_ + 1].s5, p_[h_ + 3].s4, p_[h_ + 3].s5);                                    \
      q_[h_ + 3] = (T8)(p_[h_ + 1].s2, p_[h_ + 1].s3, p_[h_ + 3].s2, p_[h_ + 3].s3, p_[h_ + 1].s6, p_[h_ + 1].s7, p_[h_ + 3].s6, p_[h_ + 3].s7);                                   \
    }                                                                                                                      \
    _Pragma("unroll") for (int k_ = 0; k_ < 4; k_++) {                                                                     \
      o[k_] = (T8)(q_[k_].s0, q_[k_].s1, q_[k_].s2, q_[k_].s3, q_[4 + k_].s0, q_[4 + k_].s1, q_[4 + k_].s2, q_[4 + k_].s3);                                                                        \
      o[4 + k_] = (T8)(q_[k_].s4, q_[k_].s5, q_[k_].s6, q_[k_].s7, q_[4 + k_].s4, q_[4 + k_].s5, q_[4 + k_].s6, q_[4 + k_].s7);                                                                    \
    }                                                                                                                      \
  } while (0)
#endif

#ifdef WINO_INB
/* wino4_in_b: wino4_in_p's V from x in blocks of WINO_INB channels; tiles
 * t0..t0+7 (zeros past T_, up to the last panel) of channels c0..c0+7.
 * grid: (C/8, np*TN/8, N) */
__kernel void wino4_in_b(__global const T *x, __global T *V, __global const int *m, int TW, int T_) {
  const int C = m[M_C], IH = m[M_IN + 1], IW = m[M_IN + 2], NP = (T_ + GEMM_TN - 1) / GEMM_TN;
  const int c0 = get_global_id(0) * 8, t0 = get_global_id(1) * 8, n = get_global_id(2);
  if (c0 >= C || t0 >= NP * GEMM_TN || n >= m[M_N]) return;
  __global const T *xc = x + ((long)n * C + c0 / WINO_INB * WINO_INB) * ((long)IH * IW) + c0 % WINO_INB;
  T8 res[36][8]; /* [transformed element][tile], lanes: channels */
  for (int l = 0; l < 8; l++) {
    const int t = t0 + l;
    const int ih0 = (t / TW) * 4 - m[M_P + 1], iw0 = (t % TW) * 4 - m[M_P + 2];
    T8 d[6][6];
    if (t < T_ && ih0 >= 0 && ih0 + 6 <= IH && iw0 >= 0 && iw0 + 6 <= IW) {
      __global const T *xp = xc + ((long)ih0 * IW + iw0) * WINO_INB;
      _Pragma("unroll") for (int i = 0; i < 6; i++)
        _Pragma("unroll") for (int j = 0; j < 6; j++) d[i][j] = vload8(0, xp + (i * IW + j) * WINO_INB);
    } else {
      _Pragma("unroll") for (int i = 0; i < 6; i++)
        _Pragma("unroll") for (int j = 0; j < 6; j++) {
          const int ih = ih0 + i, iw = iw0 + j;
          d[i][j] = (t < T_ && ih >= 0 && ih < IH && iw >= 0 && iw < IW) ? vload8(0, xc + ((long)ih * IW + iw) * WINO_INB) : (T8)0;
        }
    }
    T8 u[6][6], r[6];
    _Pragma("unroll") for (int j = 0; j < 6; j++) { /* columns: B^T d */
      WINO4_IN(d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j], r);
      _Pragma("unroll") for (int i = 0; i < 6; i++) u[i][j] = r[i];
    }
    _Pragma("unroll") for (int i = 0; i < 6; i++) { /* rows: (B^T d) B */
      WINO4_IN(u[i][0], u[i][1], u[i][2], u[i][3], u[i][4], u[i][5], r);
      _Pragma("unroll") for (int j = 0; j < 6; j++) res[6 * i + j][l] = r[j];
    }
  }
  __global T *v = V + (((long)n * 36 * NP + t0 / GEMM_TN) * C + c0) * GEMM_TN + t0 % GEMM_TN;
  const long xs = (long)NP * C * GEMM_TN;
  for (int e = 0; e < 36; e++) {
    T8 o[8];
    WINO_TR8(res[e], o);
    _Pragma("unroll") for (int k = 0; k < 8; k++) vstore8(o[k], 0, v + e * xs + k * GEMM_TN);
  }
}
#endif

#ifdef WINO_OUTB
/* wino4_out_b: wino4_out into y in blocks of WINO_OUTB channels; tiles
 * t0..t0+7 of channels oc0..oc0+7, each 4x4 output pixel one vector of the
 * 8 channels through the channel-vector epilogue (kiln_epir8; operands of
 * y's size are blocked as y, read at the same index). grid: (OC/8, ceil(T/8), N) */
__kernel void wino4_out_b(__global const T *Mw, __global const T *bias, __global T *y, __global const int *m, int TW, int T_,
                          int ldb, int has_bias, __global const T *e0, __global const T *e1) {
  const int OC = m[M_OC], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int oc0 = get_global_id(0) * 8, t0 = get_global_id(1) * 8, n = get_global_id(2);
  if (t0 >= T_ || oc0 >= OC || n >= m[M_N]) return;
  __global const T *mp = Mw + ((long)n * 36 * OC + oc0) * ldb + t0;
  const long xs = (long)OC * ldb;
  T8 res[36][8]; /* [product][tile], lanes: channels */
  for (int e = 0; e < 36; e++) {
    T8 a[8];
    if (t0 + 8 <= T_) {
      _Pragma("unroll") for (int k = 0; k < 8; k++) a[k] = vload8(0, mp + e * xs + k * ldb);
    } else { /* the last tiles: lanes past T_ repeat the last tile (not stored) */
      _Pragma("unroll") for (int k = 0; k < 8; k++) {
        T tmp[8];
        for (int l = 0; l < 8; l++) tmp[l] = mp[e * xs + k * ldb + min(l, T_ - 1 - t0)];
        a[k] = vload8(0, tmp);
      }
    }
    WINO_TR8(a, res[e]);
  }
  const T8 bv = has_bias ? vload8(0, bias + oc0) : (T8)0;
  __global T *yc = y + ((long)n * OC + oc0 / WINO_OUTB * WINO_OUTB) * ((long)OH * OW) + oc0 % WINO_OUTB;
  for (int l = 0; l < 8 && t0 + l < T_; l++) {
    const int t = t0 + l, oh0 = (t / TW) * 4, ow0 = (t % TW) * 4;
    T8 u[4][6], o[4];
    _Pragma("unroll") for (int j = 0; j < 6; j++) { /* columns: A^T Mt */
      WINO4_OUT(res[j][l], res[6 + j][l], res[12 + j][l], res[18 + j][l], res[24 + j][l], res[30 + j][l], o);
      _Pragma("unroll") for (int i = 0; i < 4; i++) u[i][j] = o[i];
    }
    _Pragma("unroll") for (int i = 0; i < 4; i++) {
      WINO4_OUT(u[i][0], u[i][1], u[i][2], u[i][3], u[i][4], u[i][5], o);
      if (oh0 + i >= OH) break;
      _Pragma("unroll") for (int j = 0; j < 4; j++) {
        if (ow0 + j >= OW) break;
        const long yo = ((long)(oh0 + i) * OW + ow0 + j) * WINO_OUTB;
        T8 vv = o[j] + bv;
#ifdef KILN_EPI
        vv = kiln_epir8(vv, (yc - y) + yo, oc0, e0, e1);
#endif
        vstore8(vv, 0, yc + yo);
      }
    }
  }
}
#endif
#endif

/* conv_dw with -DCONV_GEOM=<the 24 ints of m>: the geometry is a
 * compile-time constant (the host builds one program per depthwise shape),
 * so the tap loops have constant bounds and unroll. */
#ifdef CONV_GEOM
__constant int conv_geom[24] = {CONV_GEOM};
  #define CM(i) conv_geom[i]
#else
  #define CM(i) m[i]
#endif
#if CONV_USES(3)
__kernel void conv_dw(__global const ST *x, __global const ST *w, __global const ST *bias, __global ST *y,
                      __global const int *m, int has_bias, __global const ST *e0, __global const ST *e1) {
  const int C = CM(M_C);
  const int ID = CM(M_IN), IH = CM(M_IN + 1), IW = CM(M_IN + 2);
  const int OD = CM(M_OUT), OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int KD = CM(M_K), KH = CM(M_K + 1), KW = CM(M_K + 2);
  const int SD = CM(M_S), SH = CM(M_S + 1), SW = CM(M_S + 2);
  const int DD = CM(M_DL), DH = CM(M_DL + 1), DW = CM(M_DL + 2);
  const int nowb = (OW + CONVDW_TP - 1) / CONVDW_TP;
  const int g0 = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
  const int ow0 = (g0 % nowb) * CONVDW_TP, r = g0 / nowb, oh = r % OH, od = r / OH;
  if (od >= OD || c >= C || n >= CM(M_N)) return;
  const int KK = KD * KH * KW;
  __global const ST *xc = x + ((long)n * C + c) * ((long)ID * IH * IW);
  __global const ST *wc = w + (long)c * KK;
  T acc[CONVDW_TP];
  for (int j = 0; j < CONVDW_TP; j++) acc[j] = 0;
  const int id0 = od * SD - CM(M_P), ih0 = oh * SH - CM(M_P + 1), iw0 = ow0 * SW - CM(M_P + 2);
  for (int kd = 0; kd < KD; kd++) {
    const int id = id0 + kd * DD;
    if (id < 0 || id >= ID) continue;
    for (int kh = 0; kh < KH; kh++) {
      const int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      __global const ST *xr = xc + ((long)id * IH + ih) * IW;
      for (int kw = 0; kw < KW; kw++) {
        const T wv = LD(wc, (kd * KH + kh) * KW + kw);
        const int iw = iw0 + kw * DW;
        if (iw >= 0 && iw + (CONVDW_TP - 1) * SW < IW) {
          for (int j = 0; j < CONVDW_TP; j++) acc[j] = KMAD(wv, LD(xr, iw + j * SW), acc[j]);
        } else {
          for (int j = 0; j < CONVDW_TP; j++) {
            const int q = iw + j * SW;
            if (q >= 0 && q < IW) acc[j] = KMAD(wv, LD(xr, q), acc[j]);
          }
        }
      }
    }
  }
  const T b = has_bias ? LD(bias, c) : (T)0;
  const long yo = (((long)n * C + c) * OD + od) * (long)OH * OW + (long)oh * OW + ow0;
  for (int j = 0; j < CONVDW_TP; j++)
    if (ow0 + j < OW) SV(y, yo + j, EPI(acc[j] + b, yo + j, c));
}
#endif

/* [algo 8] depthwise 2-D convolution as vectors: one work-item per (output
 * row, channel, image) walks its row CONVDW_VW outputs at a time, each tap
 * one vector load (stride 1) or two loads and their even lanes (stride 2),
 * with a guarded gather at the row's edges. Built with CONV_GEOM (the
 * geometry as constants) like conv_dw. grid: (OH, C, N) */
#ifndef CONVDW_VW
#define CONVDW_VW 8 // conv_dwv: outputs per vector (4, 8, 16)
#endif
#define TDV CAT(T, CONVDW_VW)
#define TDV_LOAD CAT(vload, CONVDW_VW)
#define TDV_STORE CAT(vstore, CONVDW_VW)
#if defined(T_DTYPE) && T_DTYPE == 10
#define TDV_LOADG CAT(kiln_vldh, CONVDW_VW)
#else
#define TDV_LOADG(i, p) GLDU(CONVDW_VW, i, p)
#endif
#if CONV_USES(8)
__kernel void conv_dwv(__global const ST *x, __global const ST *w, __global const ST *bias, __global ST *y,
                       __global const int *m, int has_bias, __global const ST *e0, __global const ST *e1) {
  const int C = CM(M_C), IH = CM(M_IN + 1), IW = CM(M_IN + 2), OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int KH = CM(M_K + 1), KW = CM(M_K + 2), SH = CM(M_S + 1), SW = CM(M_S + 2);
  const int DH = CM(M_DL + 1), DW = CM(M_DL + 2), PH = CM(M_P + 1), PW = CM(M_P + 2);
  const int oh = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
  if (oh >= OH || c >= C || n >= CM(M_N)) return;
  __global const ST *xc = x + ((long)n * C + c) * ((long)IH * IW);
  __global const ST *wc = w + (long)c * KH * KW;
  const T b = has_bias ? LD(bias, c) : (T)0;
  const long yo = ((long)n * C + c) * (long)OH * OW + (long)oh * OW;
  for (int ow0 = 0; ow0 < OW; ow0 += CONVDW_VW) {
    TDV acc = (TDV)0;
    const bool full = ow0 + CONVDW_VW <= OW;
    for (int kh = 0; kh < KH; kh++) {
      const int ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      __global const ST *xr = xc + (long)ih * IW;
      for (int kw = 0; kw < KW; kw++) {
        const T wv = LD(wc, kh * KW + kw);
        const int iw0 = ow0 * SW - PW + kw * DW;
        TDV xv;
        if (full && iw0 >= 0 && iw0 + (CONVDW_VW - 1) * SW < IW && (SW == 1 || (SW == 2 && iw0 + 2 * CONVDW_VW <= IW))) {
          if (SW == 1) xv = TDV_LOADG(0, xr + iw0);
          else {
            const TDV a0 = TDV_LOADG(0, xr + iw0), a1 = TDV_LOADG(0, xr + iw0 + CONVDW_VW);
            xv = (TDV)(a0.even, a1.even);
          }
        } else {
          T t[CONVDW_VW];
          for (int j = 0; j < CONVDW_VW; j++) {
            const int iw = iw0 + j * SW;
            t[j] = (ow0 + j < OW && iw >= 0 && iw < IW) ? LD(xr, iw) : (T)0;
          }
          xv = TDV_LOAD(0, t);
        }
        acc = KMAD((TDV)(wv), xv, acc);
      }
    }
    T o[CONVDW_VW];
    TDV_STORE(acc + (TDV)(b), 0, o);
    for (int j = 0; j < CONVDW_VW; j++)
      if (ow0 + j < OW) SV(y, yo + ow0 + j, EPI(o[j], yo + ow0 + j, c));
  }
}
#endif

/* [algo 10] depthwise 2-D in register rows: a work-item computes CONVDW_R
 * output rows of one channel, CONVDW_VW outputs of each at a time, with the
 * channel's weights in registers and the R rows' accumulators of a column
 * block together (the input rows that neighbouring output rows share are
 * loaded once per block). Built with CONV_GEOM only (the host always passes
 * it), so that the column blocks split at compile time into a left edge, an
 * interior read as whole vectors with no tests (stride 1: one load a tap;
 * stride 2: two loads and their even lanes) and a right edge read guarded;
 * a work-item whose rows' windows lie inside the input skips the row tests.
 * Whole blocks are stored as vectors. grid: (ceil(OH/R), C, N), work-groups
 * of (ceil(OH/R), a divisor of C, 1) chosen by the host. */
#ifndef CONVDW_R
#define CONVDW_R 1 // conv_dwr: output rows per work-item (1, 2, 4)
#endif
#define DWR_KMAX 49 /* conv_dwr: taps held in registers (the host's dwr solver applies up to 7x7) */
#if (CONV_USES(10) || CONV_USES(11)) && defined(CONV_GEOM)
#if defined(T_DTYPE) && T_DTYPE == 10
#define TDV_STOREG(v, i, p) CAT(kiln_vsth, CONVDW_VW)((v), (i), (p))
#else
#define TDV_STOREG(v, i, p) GSTU(CONVDW_VW, v, i, p)
#endif
/* select()'s and shuffle2()'s mask vectors for TDV: lanes of T's size */
#if T_IS_DOUBLE
#define DWR_MASKV CAT(long, CONVDW_VW)
#define DWR_UMASKV CAT(ulong, CONVDW_VW)
#else
#define DWR_MASKV CAT(int, CONVDW_VW)
#define DWR_UMASKV CAT(uint, CONVDW_VW)
#endif
#if CONVDW_VW == 4
#define DWR_IOTA ((DWR_MASKV)(0, 1, 2, 3))
#define DWR_EVEN ((DWR_UMASKV)(0, 2, 4, 6))
#elif CONVDW_VW == 8
#define DWR_IOTA ((DWR_MASKV)(0, 1, 2, 3, 4, 5, 6, 7))
#define DWR_EVEN ((DWR_UMASKV)(0, 2, 4, 6, 8, 10, 12, 14))
#else
#define DWR_IOTA ((DWR_MASKV)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define DWR_EVEN ((DWR_UMASKV)(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30))
#endif
/* The elements a row's edge blocks read past the row on either side, at
 * most (stride 1: VW - 1 + the taps' reach; stride 2: 2*VW): rows that
 * have this much of the buffer before and after them read their edges as
 * whole vectors (dwr_in's inb). */
#define DWR_SLACK (2 * CONVDW_VW + (CM(M_K + 2) - 1) * CM(M_DL + 2) + CM(M_P + 2))
/* CONVDW_VW inputs xr[iw0 + j*SW]: whole vectors (interior), or at an edge
 * zeros for the lanes outside the row. Stride 2, where the vectors stay
 * inside the buffer (inb: the row is not one of its first or last): read
 * whole and the outside lanes (the neighbouring rows' elements) replaced by
 * zeros; else each lane guarded. mobilenet_v2's 144x56x56 stride-2
 * depthwise layer: 51.5 -> 46 us (alternated, kiln bench --profile). At
 * stride 1 the same masked loads ran slower than the lanes one by one
 * (32x112x112: 48 -> 65 us; 960x7x7: 26-30 -> 30-32), for reasons not found. */
inline __attribute__((always_inline)) TDV dwr_in(__global const ST *xr, const int iw0, const bool edge, const bool inb) {
  const int SW = CM(M_S + 2), IW = CM(M_IN + 2);
  if ((!edge && SW <= 2) || (edge && inb && SW == 2)) {
    TDV v;
    if (SW == 1) v = TDV_LOADG(0, xr + iw0);
    else {
      const TDV a0 = TDV_LOADG(0, xr + iw0), a1 = TDV_LOADG(0, xr + iw0 + CONVDW_VW);
      v = shuffle2(a0, a1, DWR_EVEN); /* the even lanes: not .even, on which Oclgrind's uninitialized-value check crashed */
    }
    if (!edge) return v;
    const DWR_MASKV iw = (DWR_MASKV)(iw0) + DWR_IOTA * SW;
    return select((TDV)0, v, iw >= 0 && iw < IW);
  }
  TDV v;
  T *t = (T *)&v;
  _Pragma("unroll") for (int j = 0; j < CONVDW_VW; j++) {
    const int iw = iw0 + j * SW;
    t[j] = iw >= 0 && iw < IW ? LD(xr, iw) : (T)0;
  }
  return v;
}

/* The column blocks of CONVDW_VW outputs of a row: nv in all, those in
 * [vlo, vhi) read as whole vectors (every tap's first input at or after 0
 * and its last read, stride 2: 2*VW elements, inside the row; the block
 * inside OW), the others guarded. Compile-time constants under CONV_GEOM. */
#define DWR_SPLIT()                                                                                        \
  const int nv = (OW + CONVDW_VW - 1) / CONVDW_VW, step = SW * CONVDW_VW;                                 \
  const int lim = IW + PW - (KW - 1) * DW - (SW == 1 ? CONVDW_VW : 2 * CONVDW_VW);                         \
  const int vlo = SW <= 2 ? min(nv, (PW + step - 1) / step) : nv;                                          \
  const int vhi = SW <= 2 && lim >= 0 ? max(vlo, min(OW / CONVDW_VW, lim / step + 1)) : vlo

/* Stores the CONVDW_VW outputs o of channel c at y[yo..] through the
 * epilogue: a whole vector when all `left` of them are inside the row, else
 * those that are, one by one. */
inline __attribute__((always_inline)) void dwr_store(TDV o, __global ST *y, const long yo, const int left, const int c, __global const ST *e0,
                                                     __global const ST *e1) {
  T *ro = (T *)&o;
  if (left >= CONVDW_VW) {
#if defined(KILN_EPIV)
    o = EPIV(CONVDW_VW, o, yo, c);
#elif defined(KILN_EPI)
    for (int j = 0; j < CONVDW_VW; j++) ro[j] = EPI(ro[j], yo + j, c);
#endif
    TDV_STOREG(o, 0, y + yo);
  } else {
#if defined(KILN_EPIV)
    /* the epilogue on the whole vector (scalar, exp and the rest ran once a
     * lane), where the lanes past the row still index inside the output
     * (its operands have the output's shape or broadcast into it) */
    if (yo + CONVDW_VW <= (long)CM(M_N) * CM(M_OC) * CM(M_OUT) * CM(M_OUT + 1) * CM(M_OUT + 2)) {
      o = EPIV(CONVDW_VW, o, yo, c);
      for (int j = 0; j < CONVDW_VW && j < left; j++) SV(y, yo + j, ro[j]);
      return;
    }
#endif
    for (int j = 0; j < CONVDW_VW && j < left; j++) SV(y, yo + j, EPI(ro[j], yo + j, c));
  }
}

#if CONV_USES(10)
/* The window's rows unrolled, or (DWR_KH_LOOP, set by the host for windows
 * over 3x3 at stride 2) a loop over them: efficientnet_b0's 5x5 stride-2
 * layers unrolled whole (R=4: 100 taps, in six copies of the block) spilled
 * the weights and ran 240 -> 161 us (144x56x56) and 142 -> 98 us
 * (240x28x28) as a loop; at stride 1 and on 3x3 the loop was slower
 * (32x112x112 3x3: 46 -> 80 us; 480x14x14 5x5: 75 -> 82). */
#ifdef DWR_KH_LOOP
#define DWR_KH_UNROLL _Pragma("unroll 1")
#else
#define DWR_KH_UNROLL _Pragma("unroll")
#endif
/* Outputs (oh0 + r, ow0 + j), r < CONVDW_R, j < CONVDW_VW, of plane yc of y
 * from input plane xc; rows_in: every row's window lies inside the input
 * (no row tests); edge: the columns are read guarded. */
inline __attribute__((always_inline)) void dwr_block(__global const ST *xlo, __global const ST *xhi, __global const ST *xc, const T *wk, const T b, __global ST *y, const long yc, const int oh0, const int ow0,
                      const bool rows_in, const bool edge, const int c, __global const ST *e0, __global const ST *e1) {
  const int IH = CM(M_IN + 1), IW = CM(M_IN + 2), OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int KH = CM(M_K + 1), KW = CM(M_K + 2), SH = CM(M_S + 1), SW = CM(M_S + 2);
  const int DH = CM(M_DL + 1), DW = CM(M_DL + 2), PH = CM(M_P + 1), PW = CM(M_P + 2);
  TDV acc[CONVDW_R];
  _Pragma("unroll") for (int r = 0; r < CONVDW_R; r++) acc[r] = (TDV)(b);
  _Pragma("unroll") for (int r = 0; r < CONVDW_R; r++)
    DWR_KH_UNROLL for (int kh = 0; kh < KH; kh++) {
      const int ih = (oh0 + r) * SH - PH + kh * DH;
      if (!rows_in && (oh0 + r >= OH || ih < 0 || ih >= IH)) continue;
      __global const ST *xr = xc + (long)ih * IW;
      /* masked edges (dwr_in) only in small blocks: 4 rows of 3x3 + SiLU
       * (96x112x112, stride 2) ran 189 -> 223 us with them, 1 row of the
       * same at 144x56x56 93 -> 68 */
      const bool inb = CONVDW_R * KH * KW <= 18 && xr - xlo >= DWR_SLACK && xhi - (xr + IW) >= DWR_SLACK;
      _Pragma("unroll") for (int kw = 0; kw < KW; kw++) acc[r] = KMAD((TDV)(wk[kh * KW + kw]), dwr_in(xr, ow0 * SW - PW + kw * DW, edge, inb), acc[r]);
    }
  int r0 = 0;
#if defined(KILN_EPIV) && defined(KILN_EPI_NOFULL) && CONVDW_VW == 8 && CONVDW_R >= 2 && !(defined(T_DTYPE) && T_DTYPE == 10)
  /* Two rows' vectors of the channel through the 16-wide epilogue at once:
   * the 8-wide one (SiLU's exp and division) cost POCL twice as much an
   * element as the 16-wide (efficientnet_b0's depthwise + SiLU layers). The
   * epilogue reads no operand of the output's size, so the index it gets
   * is not used and the concatenation is its lanes in any order. */
  if (OW - ow0 >= CONVDW_VW)
    _Pragma("unroll") for (; r0 + 1 < CONVDW_R; r0 += 2) {
      if (!rows_in && oh0 + r0 + 1 >= OH) break;
      const long yo = yc + (long)(oh0 + r0) * OW + ow0;
      /* through a union, not (float16)(a, b) and .lo/.hi: Oclgrind's
       * uninitialized-value check crashed on those */
      union { float16 v; float8 h[2]; } u;
      u.h[0] = acc[r0];
      u.h[1] = acc[r0 + 1];
      u.v = EPIV(16, u.v, yo, c);
      TDV_STOREG(u.h[0], 0, y + yo);
      TDV_STOREG(u.h[1], 0, y + yo + OW);
    }
#endif
  _Pragma("unroll") for (int r = r0; r < CONVDW_R; r++) {
    if (!rows_in && oh0 + r >= OH) break;
    dwr_store(acc[r], y, yc + (long)(oh0 + r) * OW + ow0, OW - ow0, c, e0, e1);
  }
}

/* The column blocks of a work-item's rows: [0, vlo) and [vhi, nv) guarded,
 * [vlo, vhi) as whole vectors (bounds compile-time constants). */
#define DWR_ROW(rows_in)                                                                                                  \
  do {                                                                                                                    \
    for (int v = 0; v < vlo; v++) dwr_block(x, xend, xc, wk, b, y, yc, oh0, v * CONVDW_VW, rows_in, true, c, e0, e1);             \
    for (int v = vlo; v < vhi; v++) dwr_block(x, xend, xc, wk, b, y, yc, oh0, v * CONVDW_VW, rows_in, false, c, e0, e1);          \
    for (int v = vhi; v < nv; v++) dwr_block(x, xend, xc, wk, b, y, yc, oh0, v * CONVDW_VW, rows_in, true, c, e0, e1);            \
  } while (0)

__kernel void conv_dwr(__global const ST *x, __global const ST *w, __global const ST *bias, __global ST *y,
                       __global const int *m, int has_bias, __global const ST *e0, __global const ST *e1) {
  const int C = CM(M_C), IH = CM(M_IN + 1), IW = CM(M_IN + 2), OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int KH = CM(M_K + 1), KW = CM(M_K + 2), SH = CM(M_S + 1), SW = CM(M_S + 2);
  const int DH = CM(M_DL + 1), DW = CM(M_DL + 2), PH = CM(M_P + 1), PW = CM(M_P + 2);
  const int oh0 = get_global_id(0) * CONVDW_R, c = get_global_id(1), n = get_global_id(2);
  if (oh0 >= OH || c >= C || n >= CM(M_N)) return;
  __global const ST *xc = x + ((long)n * C + c) * ((long)IH * IW);
  T wk[DWR_KMAX];
  _Pragma("unroll") for (int i = 0; i < KH * KW && i < DWR_KMAX; i++) wk[i] = LD(w, (long)c * KH * KW + i);
  const T b = has_bias ? LD(bias, c) : (T)0;
  const long yc = ((long)n * C + c) * (long)OH * OW;
  __global const ST *xend = x + (long)CM(M_N) * C * IH * IW;
  DWR_SPLIT();
  const bool rows_in = oh0 * SH - PH >= 0 && (oh0 + CONVDW_R - 1) * SH - PH + (KH - 1) * DH < IH && oh0 + CONVDW_R <= OH;
  if (rows_in) DWR_ROW(true);
  else DWR_ROW(false);
}
#endif /* CONV_USES(10) */

/* [algo 11] direct 2-D convolution over few input channels per group (the
 * stems of CNNs: 3 channels, 3x3 to 7x7, stride 2), along the output row
 * like dwr: a work-item computes CONV_TOC output channels of one output row,
 * CONVDW_VW outputs of each at a time. Every tap's input vector (dwr_in:
 * stride 1 one load, stride 2 two loads and their even lanes, guarded at
 * the row's edges) is loaded once and multiplied by that tap's CONV_TOC
 * weights, packed on the host in panels of CONV_TOC output channels
 * ([K][CONV_TOC] per panel, as pack_panels writes them): CONV_TOC
 * accumulator vectors. im2col + GEMM spends more moving the 27-147 rows of
 * such a layer than multiplying them, and conv_direct keeps the pixels in
 * scalars. (R output rows sharing each weight load, as dwr does, ran
 * 1.05-1.4x slower on the stems and took POCL 22-52 s to compile at 7x7.)
 * With -DDIRV_OUTB=16 or 8 (one group, the output in blocks of that many
 * channels, NCHW16c / NCHW8c: runtime/layout.c) each channel's vector of
 * pixels is stored lane by lane, DIRV_OUTB apart.
 * Built with CONV_GEOM. grid: (OH, ceil(OCg/CONV_TOC), N*G) */
#if CONV_USES(11)
#if defined(DIRV_OUTB) && defined(KILN_EPI) && !(defined(KILN_EPIV) && defined(KILN_EPI_NOFULL))
#error "conv_dirv: a blocked output takes epilogues on vectors without operands of the output's size"
#endif
inline __attribute__((always_inline)) void dirv_block(__global const ST *xlo, __global const ST *xhi, __global const ST *xg, __global const ST *wp, __global const ST *bias, const int has_bias,
                                                      __global ST *y, const long yb, const int oh, const int ow0, const int ocg0, const int cbase,
                                                      const bool edge, __global const ST *e0, __global const ST *e1) {
  const int ICg = CM(M_ICG), OCg = CM(M_OCG), IH = CM(M_IN + 1), IW = CM(M_IN + 2), OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int KH = CM(M_K + 1), KW = CM(M_K + 2), SH = CM(M_S + 1), SW = CM(M_S + 2);
  const int DH = CM(M_DL + 1), DW = CM(M_DL + 2), PH = CM(M_P + 1), PW = CM(M_P + 2);
  TDV acc[CONV_TOC];
  _Pragma("unroll") for (int o = 0; o < CONV_TOC; o++) acc[o] = (TDV)0;
  /* the rows of the window inside the input */
  const int kh0 = max(0, (PH - oh * SH + DH - 1) / DH), kh1 = min(KH, (IH - 1 + PH - oh * SH) / DH + 1);
  for (int ic = 0; ic < ICg; ic++) {
    /* rows not unrolled: a 7x7 window unrolled whole took POCL 5-50 s to compile */
    _Pragma("unroll 1") for (int kh = kh0; kh < kh1; kh++) {
      __global const ST *xr = xg + ((long)ic * IH + oh * SH - PH + kh * DH) * IW;
      __global const ST *wk = wp + (long)(ic * KH + kh) * KW * CONV_TOC;
      const bool inb = xr - xlo >= DWR_SLACK && xhi - (xr + IW) >= DWR_SLACK;
      _Pragma("unroll") for (int kw = 0; kw < KW; kw++) {
        const TDV xv = dwr_in(xr, ow0 * SW - PW + kw * DW, edge, inb);
#if defined(T_DTYPE) && T_DTYPE == 10
        /* half weights: one vector conversion per tap (scalar ones are software on POCL) */
        const CAT(T, CONV_TOC) wv = CAT(kiln_vldh, CONV_TOC)(0, wk + kw * CONV_TOC);
        const T *wt = (const T *)&wv;
        _Pragma("unroll") for (int o = 0; o < CONV_TOC; o++) acc[o] = KMAD((TDV)(wt[o]), xv, acc[o]);
#else
        _Pragma("unroll") for (int o = 0; o < CONV_TOC; o++) acc[o] = KMAD((TDV)(wk[kw * CONV_TOC + o]), xv, acc[o]);
#endif
      }
    }
  }
#if defined(DIRV_OUTB) && CONV_TOC == DIRV_OUTB && CONVDW_VW == DIRV_OUTB && !T_IS_DOUBLE
  /* A whole block of channels x as many pixels: bias and epilogue on the
   * channel vectors, then the block transposed in registers (log2 B rounds
   * of two-source shuffles, B/2 pairs each) and stored a pixel's vector of
   * channels at a time, where lane by lane stores cost the mobilenet_v2
   * stem about a third of its time */
  if (ocg0 + CONV_TOC <= OCg) {
    _Pragma("unroll") for (int o = 0; o < CONV_TOC; o++) {
      const int c = cbase + ocg0 + o;
      acc[o] += (TDV)(has_bias ? LD(bias, c) : (T)0);
#ifdef KILN_EPIV
      acc[o] = EPIV(CONVDW_VW, acc[o], 0, c);
#endif
    }
#define DIRV_TSTAGE(s, lo, hi)                                                      \
  _Pragma("unroll") for (int i = 0; i < DIRV_OUTB; i++) if (!(i & (s))) {           \
      const TDV a0 = acc[i], a1 = acc[i + (s)];                                     \
      acc[i] = shuffle2(a0, a1, lo);                                                \
      acc[i + (s)] = shuffle2(a0, a1, hi);                                          \
    }
#if DIRV_OUTB == 16
    DIRV_TSTAGE(8, ((uint16)(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)), ((uint16)(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31)));
    DIRV_TSTAGE(4, ((uint16)(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27)), ((uint16)(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31)));
    DIRV_TSTAGE(2, ((uint16)(0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29)), ((uint16)(2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31)));
    DIRV_TSTAGE(1, ((uint16)(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30)), ((uint16)(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31)));
#else
    DIRV_TSTAGE(4, ((uint8)(0, 1, 2, 3, 8, 9, 10, 11)), ((uint8)(4, 5, 6, 7, 12, 13, 14, 15)));
    DIRV_TSTAGE(2, ((uint8)(0, 1, 8, 9, 4, 5, 12, 13)), ((uint8)(2, 3, 10, 11, 6, 7, 14, 15)));
    DIRV_TSTAGE(1, ((uint8)(0, 8, 2, 10, 4, 12, 6, 14)), ((uint8)(1, 9, 3, 11, 5, 13, 7, 15)));
#endif
#undef DIRV_TSTAGE
    __global ST *yo = y + yb + (long)(cbase + ocg0) * OH * OW + ((long)oh * OW + ow0) * DIRV_OUTB;
    _Pragma("unroll") for (int j = 0; j < CONVDW_VW; j++)
      if (j < OW - ow0) CAT(vstore, CONVDW_VW)(acc[j], 0, yo + (long)j * DIRV_OUTB);
    return;
  }
#endif
  _Pragma("unroll") for (int o = 0; o < CONV_TOC; o++) {
    if (ocg0 + o >= OCg) break;
    const int c = cbase + ocg0 + o;
    const T b = has_bias ? LD(bias, c) : (T)0;
#ifdef DIRV_OUTB
    /* Y blocked (one group): the epilogue on the channel's vector of
     * pixels (it reads no operand of the output's size, the host's
     * dirv_applies), its lanes stored DIRV_OUTB apart */
    TDV v = acc[o] + (TDV)(b);
#ifdef KILN_EPIV
    v = EPIV(CONVDW_VW, v, 0, c);
#endif
    const T *vt = (const T *)&v;
    __global ST *yo = y + yb + (long)(c / DIRV_OUTB * DIRV_OUTB) * OH * OW + ((long)oh * OW + ow0) * DIRV_OUTB + c % DIRV_OUTB;
    _Pragma("unroll") for (int j = 0; j < CONVDW_VW; j++)
      if (j < OW - ow0) yo[j * DIRV_OUTB] = vt[j];
#else
    dwr_store(acc[o] + (TDV)(b), y, yb + (long)(ocg0 + o) * OH * OW + (long)oh * OW + ow0, OW - ow0, c, e0, e1);
#endif
  }
}

__kernel void conv_dirv(__global const ST *x, __global const ST *w, __global const ST *bias, __global ST *y,
                        __global const int *m, int has_bias, __global const ST *e0, __global const ST *e1) {
  const int C = CM(M_C), OC = CM(M_OC), G = CM(M_G), ICg = CM(M_ICG), OCg = CM(M_OCG);
  const int IH = CM(M_IN + 1), IW = CM(M_IN + 2), OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int KH = CM(M_K + 1), KW = CM(M_K + 2), SH = CM(M_S + 1), SW = CM(M_S + 2);
  const int DH = CM(M_DL + 1), DW = CM(M_DL + 2), PH = CM(M_P + 1), PW = CM(M_P + 2);
  const int oh = get_global_id(0), ocg0 = get_global_id(1) * CONV_TOC, ng = get_global_id(2);
  if (oh >= OH || ocg0 >= OCg || ng >= CM(M_N) * G) return;
  const int n = ng / G, g = ng % G, nmb = (OCg + CONV_TOC - 1) / CONV_TOC;
  __global const ST *xg = x + ((long)n * C + (long)g * ICg) * ((long)IH * IW);
  __global const ST *wp = w + ((long)g * nmb + ocg0 / CONV_TOC) * (long)ICg * KH * KW * CONV_TOC;
  const int cbase = g * OCg;
  const long yb = ((long)n * OC + cbase) * (long)OH * OW;
  __global const ST *xend = x + (long)CM(M_N) * C * IH * IW;
  DWR_SPLIT();
  for (int v = 0; v < vlo; v++) dirv_block(x, xend, xg, wp, bias, has_bias, y, yb, oh, v * CONVDW_VW, ocg0, cbase, true, e0, e1);
  for (int v = vlo; v < vhi; v++) dirv_block(x, xend, xg, wp, bias, has_bias, y, yb, oh, v * CONVDW_VW, ocg0, cbase, false, e0, e1);
  for (int v = vhi; v < nv; v++) dirv_block(x, xend, xg, wp, bias, has_bias, y, yb, oh, v * CONVDW_VW, ocg0, cbase, true, e0, e1);
}
#endif /* CONV_USES(11) */

#endif /* dwr, dirv */

/* [algo 12] dirc: direct 2-D convolution with the vectors along the output
 * channels: a work-item takes CONV_TP output pixels (consecutive in the
 * flattened plane, rows crossed) and CONVDW_R vectors of CONVDW_VW output
 * channels, CONV_TP x CONVDW_R accumulator vectors; per input channel and tap
 * it loads CONVDW_R weight vectors (packed on the host in panels of
 * CONVDW_VW*CONVDW_R channels, [K][VW*R] per panel, K in the model's order
 * ic, kh, kw: pack_panels) and CONV_TP input scalars, each broadcast. The
 * lanes are full whatever the plane's size, where the solvers that vectorise
 * along pixels lose most of theirs on small planes (7x7: a 16-wide tile over
 * 49 pixels) and the strided convolutions pay an im2col copy. A padded
 * convolution reads a copy of its input with the pads written out
 * (conv_pad: -DDIRC_IHP, -DDIRC_IWP give its plane), so that no load is
 * tested (tested loads ran 2-3x slower on resnet's 7x7 layers). Each output
 * channel's CONV_TP pixels are gathered from the accumulators into one vector
 * and stored whole through the vector epilogue (the last, partial block one
 * by one). With -DPW_XSCALE a ninth argument xs [N][C] scales the input
 * per image and channel, as conv_pw's (applied to the weights of the
 * channel). Built with CONV_GEOM. grid: (ceil(P/TP) rounded up to the
 * work-group, ceil(OCg/(VW*R)), N*G), work-groups along the pixels of one
 * channel panel (its weights stay in that core's cache). */
#if CONV_USES(12) && defined(CONV_GEOM)
#define DIRC_W (CONVDW_VW * CONVDW_R)
#ifdef DIRC_INB
#define DIRC_XPS DIRC_INB
#else
#define DIRC_XPS 1
#endif
#if defined(DIRC_OUTB) && defined(KILN_EPI) && !defined(KILN_EPIR)
#error "conv_dirc: a blocked output takes epilogues on channel vectors only"
#endif
#define DCV CAT(T, CONVDW_VW)
#define DPV CAT(T, CONV_TP)
#if defined(T_DTYPE) && T_DTYPE == 10
#define DIRC_LDW(p) CAT(kiln_vldh, CONVDW_VW)(0, (p))
#define DIRC_STP(v, p) CAT(kiln_vsth, CONV_TP)((v), 0, (p))
#else
#define DIRC_LDW(p) GLDU(CONVDW_VW, 0, p)
#define DIRC_STP(v, p) GSTU(CONV_TP, v, 0, p)
#endif
#ifdef DIRC_IHP
#define DIRC_IH DIRC_IHP
#define DIRC_IW DIRC_IWP
#define DIRC_PH 0
#define DIRC_PW 0
/* x [N][C][IH][IW] into xp [N][C][DIRC_IHP][DIRC_IWP], the pads (PH, PW
 * leading, the rest trailing) zeros. grid: (DIRC_IHP, N*C); in blocks of
 * DIRC_INB channels (x [N][C/B][IH][IW][B]): (DIRC_IHP, N*C/B), a block's
 * row at a time, each pixel B elements. */
#ifdef DIRC_INB
__kernel void conv_pad(__global const ST *x, __global ST *xp) {
  const int IH = CM(M_IN + 1), IW = CM(M_IN + 2), PH = CM(M_P + 1), PW = CM(M_P + 2);
  const int r = get_global_id(0), nb = get_global_id(1), ih = r - PH;
  const long so = ((long)nb * IH * IW + (long)ih * IW) * DIRC_INB, d = ((long)nb * DIRC_IHP + r) * DIRC_IWP * DIRC_INB;
  for (int j = 0; j < DIRC_IWP; j++) {
    const int iw = j - PW;
    const bool in = ih >= 0 && ih < IH && iw >= 0 && iw < IW;
    _Pragma("unroll") for (int k = 0; k < DIRC_INB; k++) {
      if (in) CP(xp, d + (long)j * DIRC_INB + k, x, so + (long)iw * DIRC_INB + k);
      else CP0(xp, d + (long)j * DIRC_INB + k);
    }
  }
}
#else
__kernel void conv_pad(__global const ST *x, __global ST *xp) {
  const int IH = CM(M_IN + 1), IW = CM(M_IN + 2), PH = CM(M_P + 1), PW = CM(M_P + 2);
  const int r = get_global_id(0), nc = get_global_id(1), ih = r - PH;
  const long so = (long)nc * IH * IW + (long)ih * IW, d = ((long)nc * DIRC_IHP + r) * DIRC_IWP;
  if (ih < 0 || ih >= IH) {
    for (int j = 0; j < DIRC_IWP; j++) CP0(xp, d + j);
    return;
  }
  for (int j = 0; j < DIRC_IWP; j++) {
    const int iw = j - PW;
    if (iw >= 0 && iw < IW) CP(xp, d + j, x, so + iw);
    else CP0(xp, d + j);
  }
}
#endif
#else
#define DIRC_IH CM(M_IN + 1)
#define DIRC_IW CM(M_IN + 2)
#define DIRC_PH CM(M_P + 1)
#define DIRC_PW CM(M_P + 2)
#endif
__kernel void conv_dirc(__global const ST *x, __global const ST *w, __global const ST *bias, __global ST *y,
                        __global const int *m, int has_bias, __global const ST *e0, __global const ST *e1
#ifdef PW_XSCALE
                        , __global const ST *xs
#endif
                        ) {
  const int C = CM(M_C), OC = CM(M_OC), G = CM(M_G), ICg = CM(M_ICG), OCg = CM(M_OCG);
  const int IH = DIRC_IH, IW = DIRC_IW, OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int KH = CM(M_K + 1), KW = CM(M_K + 2), SH = CM(M_S + 1), SW = CM(M_S + 2);
  const int DH = CM(M_DL + 1), DW = CM(M_DL + 2), PH = DIRC_PH, PW = DIRC_PW;
  const int P = OH * OW, KK = KH * KW;
  const int p0 = get_global_id(0) * CONV_TP, ob = get_global_id(1), ng = get_global_id(2);
  if (p0 >= P) return; /* the grid's padding to whole work-groups */
  const int n = ng / G, g = ng % G, nmb = (OCg + DIRC_W - 1) / DIRC_W;
  __global const ST *xg = x + ((long)n * C + (long)g * ICg) * ((long)IH * IW);
  __global const ST *wp = w + ((long)g * nmb + ob) * (long)ICg * KK * DIRC_W;
  /* DIRC_XPS: elements between neighbouring pixels of an input channel (16
   * or 8 in blocks of that many channels, DIRC_INB: channel ic's plane
   * starts at (ic / INB * INB) * IH*IW + ic % INB) */
  /* each pixel's window corner in the input, inside it (the host pads
   * otherwise); pixels past P repeat the last one: computed, not stored */
  long base[CONV_TP];
  _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) {
    const int pp = min(p0 + p, P - 1), oh = pp / OW, ow = pp - oh * OW;
    base[p] = (long)(oh * SH - PH) * IW + (ow * SW - PW);
  }
  DCV acc[CONV_TP][CONVDW_R];
  _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) acc[p][v] = (DCV)0;
#ifdef DIRC_1X1
  /* 1x1, stride 1, no pads (the host's -DDIRC_1X1), a whole block of
   * pixels: they are consecutive, each a constant offset from one pointer
   * (a broadcast operand of the multiply-add) */
  if (p0 + CONV_TP <= P)
    for (int ic = 0; ic < ICg; ic++) {
#ifdef DIRC_INB
      __global const ST *xp = xg + (long)(ic / DIRC_INB * DIRC_INB) * P + ic % DIRC_INB + (long)p0 * DIRC_INB;
#else
      __global const ST *xp = xg + (long)ic * P + p0;
#endif
      DCV wv[CONVDW_R];
      _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) wv[v] = DIRC_LDW(wp + (long)ic * DIRC_W + v * CONVDW_VW);
#ifdef PW_XSCALE
      const DCV sk = (DCV)(LD(xs, (long)n * C + (long)g * ICg + ic));
      _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) wv[v] *= sk;
#endif
      _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) {
        const DCV xv = (DCV)(LD(xp, p * DIRC_XPS));
        _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) acc[p][v] = fma(xv, wv[v], acc[p][v]);
      }
    }
  else
#endif
  for (int ic = 0; ic < ICg; ic++) {
#ifdef DIRC_INB
    __global const ST *xc = xg + (long)(ic / DIRC_INB * DIRC_INB) * IH * IW + ic % DIRC_INB;
#else
    __global const ST *xc = xg + (long)ic * IH * IW;
#endif
    __global const ST *wc = wp + (long)ic * KK * DIRC_W;
#ifdef PW_XSCALE
    const DCV sk = (DCV)(LD(xs, (long)n * C + (long)g * ICg + ic)); /* the input channel's scale in this image: on its weights */
#endif
    /* taps not unrolled across rows: LLVM hoisted all 9 taps' weights and
     * addresses and spilled them; a row's pixels as pointers, the taps
     * along it constant offsets */
    _Pragma("unroll 1") for (int kh = 0; kh < KH; kh++) {
      __global const ST *xr[CONV_TP];
      _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) xr[p] = xc + ((long)kh * DH * IW + base[p]) * DIRC_XPS;
      _Pragma("unroll") for (int kw = 0; kw < KW; kw++) {
        DCV wv[CONVDW_R];
        _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) wv[v] = DIRC_LDW(wc + (kh * KW + kw) * DIRC_W + v * CONVDW_VW);
#ifdef PW_XSCALE
        _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) wv[v] *= sk;
#endif
        _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) {
          const DCV xs = (DCV)(LD(xr[p], kw * DW * DIRC_XPS));
          _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) acc[p][v] = fma(xs, wv[v], acc[p][v]);
        }
      }
    }
  }
  const int cb = g * OCg + ob * DIRC_W; /* the first channel of this panel in Y */
  const long yb = ((long)n * OC + cb) * P + p0;
#ifdef DIRC_OUTB
  /* Y in blocks of DIRC_OUTB channels (one group, OC a multiple of it, VW a divisor of it): a
   * pixel's vector of VW channels is contiguous, stored as it is, through
   * the channel-vector epilogue at its index in Y (operands of the output's
   * size are blocked the same: runtime/layout.c) */
  _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) {
    const int co = cb + v * CONVDW_VW;
    if (co >= OC) break;
    const DCV bv = has_bias ? CAT(vload, CONVDW_VW)(0, bias + co) : (DCV)0;
    __global ST *yo = y + ((long)n * OC + co / DIRC_OUTB * DIRC_OUTB) * P + co % DIRC_OUTB; /* its block's plane, its lane */
    _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) {
      if (p0 + p >= P) break;
      DCV o = acc[p][v] + bv;
#ifdef KILN_EPI
      o = CAT(kiln_epir, CONVDW_VW)(o, (yo - y) + (long)(p0 + p) * DIRC_OUTB, co, e0, e1);
#endif
      CAT(vstore, CONVDW_VW)(o, 0, yo + (long)(p0 + p) * DIRC_OUTB);
    }
  }
  return;
#endif
  const bool full = p0 + CONV_TP <= P;
  /* An epilogue without full-size operands (an activation, per-channel
   * ones) runs on the accumulators themselves, VW channels of a pixel at a
   * time (kiln_epirN: per-channel operands as vectors), bias added, for
   * every vector of channels wholly inside the layer: at the channels'
   * vector width, where after the gather below it ran on CONV_TP pixels:
   * efficientnet_b0's 320->1280 1x1 at 7x7 + SiLU took 270 us at TP=4
   * (4-wide exp), the same conv + Clip in mobilenet_v2 146. */
  bool pre[CONVDW_R];
  _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) pre[v] = false;
#if defined(KILN_EPIR) && defined(KILN_EPI_NOFULL)
  _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) {
    pre[v] = ob * DIRC_W + (v + 1) * CONVDW_VW <= OCg;
    if (!pre[v]) continue;
    const DCV bv = has_bias ? CAT(vload, CONVDW_VW)(0, bias + cb + v * CONVDW_VW) : (DCV)0;
    _Pragma("unroll") for (int p = 0; p < CONV_TP; p++)
      acc[p][v] = CAT(kiln_epir, CONVDW_VW)(acc[p][v] + bv, yb + p, cb + v * CONVDW_VW, e0, e1);
  }
#endif
  _Pragma("unroll") for (int v = 0; v < CONVDW_R; v++) {
    /* a channel's CONV_TP outputs are consecutive in Y: gathered from the
     * accumulators' lanes into one vector, through the vector epilogue
     * (SiLU's exp once a vector, not once an element) unless it ran above,
     * and stored whole */
    for (int j = 0; j < CONVDW_VW; j++) {
      const int o = v * CONVDW_VW + j;
      if (ob * DIRC_W + o >= OCg) break;
      const long yi = yb + (long)o * P;
      DPV t;
      T *tt = (T *)&t;
      if (pre[v]) {
        _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) tt[p] = ((const T *)&acc[p][v])[j];
        if (full) DIRC_STP(t, y + yi);
        else
          for (int p = 0; p < CONV_TP && p0 + p < P; p++) SV(y, yi + p, tt[p]);
        continue;
      }
      const T b = has_bias ? LD(bias, cb + o) : (T)0;
      _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) tt[p] = ((const T *)&acc[p][v])[j] + b;
      if (full) {
#if defined(KILN_EPIV)
        t = EPIV(CONV_TP, t, yi, cb + o);
#elif defined(KILN_EPI)
        _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) tt[p] = EPI(tt[p], yi + p, cb + o);
#endif
        DIRC_STP(t, y + yi);
      } else {
        for (int p = 0; p < CONV_TP && p0 + p < P; p++) SV(y, yi + p, EPI(tt[p], yi + p, cb + o));
      }
    }
  }
}
#endif /* CONV_USES(12) */

/* [algo 13] dw16: depthwise 2-D convolution in NCHW16c (kiln_value.blk 16:
 * x [N][C/16][IH][IW][16], y [N][C/16][OH][OW][16], C a multiple of 16;
 * -DDW_B=8 for NCHW8c, the block of a device with 8-wide vectors),
 * the layout runtime/layout.c gives the values between a depthwise
 * convolution and the convolutions on either side of it. A work-item
 * computes CONV_TP outputs along a row for one block of channels: each input
 * pixel of the row's window is one vector load, multiplied by the tap's
 * weights (packed [C/B][KH][KW][B]) into the outputs that use it; no lanes along
 * the row, so no shuffles at stride 2 and no edge lanes, only whole pixels
 * skipped outside the input. Against dwr (NCHW, vectors along the row) on
 * POCL: 144x56x56 3x3 s2 + SiLU 34 vs 66 us, 5x5 s2 44 vs 144-155.
 * Dilation 1, windows up to 7x7 (the host's dw16_applies). Epilogues on
 * channel vectors (KILN_EPIR), full-size operands blocked the same. Built with
 * CONV_GEOM. grid: (ceil(OW/CONV_TP), OH, N*C/DW_B) */
#if CONV_USES(13) && defined(CONV_GEOM)
#if defined(KILN_EPI) && !defined(KILN_EPIR)
#error "conv_dw16 takes epilogues on channel vectors only"
#endif
#ifndef DW_B
#define DW_B 16 /* channels per block and vector */
#endif
#define T16 CAT(T, DW_B)
#define DW16_LD CAT(vload, DW_B)
#define DW16_ST CAT(vstore, DW_B)
#define DW16_KH CM(M_K + 1)
#define DW16_KW CM(M_K + 2)
#define DW16_SW CM(M_S + 2)
#define DW16_COLS ((CONV_TP - 1) * DW16_SW + DW16_KW) /* input pixels of a row the work-item's window covers */
__kernel void conv_dw16(__global const T *x, __global const T *w, __global const T *bias, __global T *y,
                        __global const int *m, int has_bias, __global const T *e0, __global const T *e1) {
  const int C = CM(M_C), IH = CM(M_IN + 1), IW = CM(M_IN + 2), OH = CM(M_OUT + 1), OW = CM(M_OUT + 2);
  const int SH = CM(M_S + 1), PH = CM(M_P + 1), PW = CM(M_P + 2);
  const int ow0 = get_global_id(0) * CONV_TP, oh = get_global_id(1), nb = get_global_id(2);
  if (ow0 >= OW || oh >= OH) return;
  const int cb = nb % (C / DW_B); /* the channel block */
  __global const T *xc = x + (long)nb * IH * IW * DW_B;
  __global const T *wc = w + (long)cb * DW16_KH * DW16_KW * DW_B;
  const T16 b = has_bias ? DW16_LD(cb, bias) : (T16)0;
  T16 acc[CONV_TP];
  _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) acc[p] = b;
  const int iw0 = ow0 * DW16_SW - PW;
  const bool inner = iw0 >= 0 && iw0 + DW16_COLS <= IW;
  _Pragma("unroll") for (int kh = 0; kh < DW16_KH; kh++) {
    const int ih = oh * SH - PH + kh;
    if (ih < 0 || ih >= IH) continue;
    __global const T *row = xc + (long)ih * IW * DW_B;
    T16 wv[7]; /* DW16_KW <= 7 (CM is no integer constant expression) */
    _Pragma("unroll") for (int kw = 0; kw < DW16_KW; kw++) wv[kw] = DW16_LD(kh * DW16_KW + kw, wc);
    /* input pixel j of the window's row feeds output p through tap j - p*SW */
    if (inner) {
      _Pragma("unroll") for (int j = 0; j < DW16_COLS; j++) {
        const T16 xv = DW16_LD(iw0 + j, row);
        _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) {
          const int kw = j - p * DW16_SW;
          if (kw >= 0 && kw < DW16_KW) acc[p] = KMAD(xv, wv[kw], acc[p]);
        }
      }
    } else {
      _Pragma("unroll") for (int j = 0; j < DW16_COLS; j++) {
        const int iw = iw0 + j;
        if (iw < 0 || iw >= IW) continue;
        const T16 xv = DW16_LD(iw, row);
        _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) {
          const int kw = j - p * DW16_SW;
          if (kw >= 0 && kw < DW16_KW) acc[p] = KMAD(xv, wv[kw], acc[p]);
        }
      }
    }
  }
  __global T *yr = y + ((long)nb * OH + oh) * OW * DW_B;
  _Pragma("unroll") for (int p = 0; p < CONV_TP; p++) {
    if (ow0 + p >= OW) break;
    T16 o = acc[p];
#ifdef KILN_EPI
    o = CAT(kiln_epir, DW_B)(o, (((long)nb * OH + oh) * OW + ow0 + p) * DW_B, cb * DW_B, e0, e1); /* its index in Y (full-size operands in NCHW16c too) */
#endif
    DW16_ST(o, ow0 + p, yr);
  }
}
#endif /* CONV_USES(13) */

/* [algo 6 on 1x1 stride-1 convs] 1x1 convolution (stride 1, no pads) as a
 * packed GEMM on the input itself, no im2col: Y[n][g*M + m][p] = sum_k A[g][m][k] * x[n][g*K
 * + k][p] (+ bias, epilogue), A the weights packed in panels of GEMM_TM rows
 * ([K][GEMM_TM] per panel, as conv_gemm's). Each work-item takes GEMM_TN
 * columns (pixels) and PW_MB blocks of GEMM_TM rows, PW_RB blocks at a time
 * in registers (the register block of gemm.cl's gemm_panel: PW_RB*GEMM_TM x
 * GEMM_TN accumulators, at most 16 vectors), one after another over the
 * same K x GEMM_TN block of x, which stays in cache (PW_MB need not be a
 * multiple of PW_RB: the rows past a work-item's own are not stored). The
 * last column block of a row is read guarded. Work-groups of PANEL_WG column blocks.
 * With -DPW_XSCALE the kernel takes a ninth argument xs [N][C] and reads the
 * input scaled per image and channel, x[n][c][p] * xs[n][c] (a squeeze-excite
 * block's Mul of its input by the gate, fused by runtime/passes.c).
 * grid: (ceil(ceil(P/TN)/PANEL_WG)*PANEL_WG, ceil(ceil(M/TM)/PW_MB), N*G) */
#ifndef PW_MB
#define PW_MB 1 // conv_pw: blocks of GEMM_TM rows per work-item (host sets it)
#endif
#ifndef PANEL_WG
#define PANEL_WG 4 // conv_pw: column blocks per work-group (1, 2, 4)
#endif
#if GEMM_TN % 16
#define PW_VW 8
#else
#define PW_VW 16
#endif
#define PW_NV (GEMM_TN / PW_VW)
#define PWV CAT(T, PW_VW)
#define PW_LOAD CAT(vload, PW_VW)
#define PW_STORE CAT(vstore, PW_VW)
/* global storage: ST elements read by LD and written by SV, vectors by
 * PW_LOADG / PW_STOREG (float/double here; where the file defines ST, LD
 * and SV for fp16 storage, T_DTYPE 10, halfs converted to T) */
#ifndef ST
#define ST T
#define LD(p, i) ((p)[i])
#define SV(p, i, v) ((p)[i] = (v))
#endif
#if defined(T_DTYPE) && T_DTYPE == 10
#define PW_LOADG CAT(kiln_vldh, PW_VW)
#define PW_STOREG CAT(kiln_vsth, PW_VW)
#else
#define PW_LOADG(i, p) GLDU(PW_VW, i, p)
#define PW_STOREG(v, i, p) GSTU(PW_VW, v, i, p)
#endif
#define PW_RBCAP (16 / (GEMM_TM * PW_NV))
#if PW_RBCAP >= 4 && PW_MB >= 4
#define PW_RB 4
#elif PW_RBCAP >= 2 && PW_MB >= 2
#define PW_RB 2
#else
#define PW_RB 1
#endif
#if CONV_USES(6)
/* PW_RB*GEMM_TM rows of Y from row m0 (packed row block m0/GEMM_TM, blocks
 * past the last one clamped), rows below mlim stored; columns
 * p0..p0+GEMM_TN-1 of x's rows xb (row stride P; guarded when the block
 * passes P). */
inline void pw_block(__global const ST *xb, __global const ST *xsb, __global const ST *A, __global const ST *bias, __global ST *y, const int M,
                     const int K, const int P, const int p0, const int m0, const int mlim, const long ybase, const int cbase, const int has_bias,
                     __global const ST *e0, __global const ST *e1) {
  const int nmb = (M + GEMM_TM - 1) / GEMM_TM;
  const bool full = p0 + GEMM_TN <= P;
  PWV acc[PW_RB * GEMM_TM][PW_NV];
  _Pragma("unroll") for (int i = 0; i < PW_RB * GEMM_TM; i++)
    _Pragma("unroll") for (int v = 0; v < PW_NV; v++) acc[i][v] = (PWV)0;
  __global const ST *pa[PW_RB];
  _Pragma("unroll") for (int u = 0; u < PW_RB; u++) pa[u] = A + (long)min(m0 / GEMM_TM + u, nmb - 1) * K * GEMM_TM;
  __global const ST *xp = xb + p0;
  /* rows k < kv can be read as whole vectors even in a partial block: their
   * GEMM_TN elements end inside this group's K rows of x */
  const int kv = K - (p0 + GEMM_TN + P - 1) / P + 1;
  for (int k = 0; k < K; k++, xp += P) {
    PWV b[PW_NV];
    if (full || k < kv) { /* a partial block's lanes past P read the next rows (results dropped) */
      _Pragma("unroll") for (int v = 0; v < PW_NV; v++) b[v] = PW_LOADG(v, xp);
    } else {
      T t[GEMM_TN];
      _Pragma("unroll") for (int q = 0; q < GEMM_TN; q++) t[q] = p0 + q < P ? LD(xp, q) : (T)0;
      _Pragma("unroll") for (int v = 0; v < PW_NV; v++) b[v] = PW_LOAD(v, t);
    }
#ifdef PW_XSCALE
    const PWV sk = (PWV)(LD(xsb, k));
    _Pragma("unroll") for (int v = 0; v < PW_NV; v++) b[v] *= sk;
#endif
    _Pragma("unroll") for (int u = 0; u < PW_RB; u++) {
      T ar[GEMM_TM];
      LDROW(ar, pa[u], GEMM_TM);
      _Pragma("unroll") for (int i = 0; i < GEMM_TM; i++) {
        const PWV a = (PWV)(ar[i]);
        _Pragma("unroll") for (int v = 0; v < PW_NV; v++) acc[u * GEMM_TM + i][v] = KMAD(a, b[v], acc[u * GEMM_TM + i][v]);
      }
    }
    _Pragma("unroll") for (int u = 0; u < PW_RB; u++) pa[u] += GEMM_TM;
  }
  _Pragma("unroll") for (int i = 0; i < PW_RB * GEMM_TM; i++) {
    const int m = m0 + i;
    if (m >= mlim) break;
    const T bs = has_bias ? LD(bias, cbase + m) : (T)0;
    const long yo = ybase + (long)m * P + p0;
    _Pragma("unroll") for (int v = 0; v < PW_NV; v++) {
      PWV o = acc[i][v] + (PWV)(bs);
      T *ro = (T *)&o;
#ifdef KILN_EPI
      /* a loop, not unrolled: an epilogue with exp (SiLU) unrolled over the
       * whole tile ran twice as slow on efficientnet_b0. Only the lanes that
       * are outputs: past P the flat index runs into the next row, and past
       * the last row of Y out of a full-size operand's buffer. */
      const int ne = full ? PW_VW : clamp(P - p0 - v * PW_VW, 0, PW_VW);
#ifdef KILN_EPIV
      if (full) o = EPIV(PW_VW, o, yo + v * PW_VW, cbase + m);
      else
#endif
        for (int e = 0; e < ne; e++) ro[e] = EPI(ro[e], yo + v * PW_VW + e, cbase + m);
#endif
      if (full) PW_STOREG(o, v, y + yo);
      else
        for (int e = 0; e < PW_VW; e++)
          if (p0 + v * PW_VW + e < P) SV(y, yo + v * PW_VW + e, ro[e]);
    }
  }
}

__kernel __attribute__((reqd_work_group_size(PANEL_WG, 1, 1)))
void conv_pw(__global const ST *x, __global const ST *A, __global const ST *bias, __global ST *y, __global const int *m,
             int has_bias, __global const ST *e0, __global const ST *e1
#ifdef PW_XSCALE
             , __global const ST *xs
#endif
             ) {
  const int C = m[M_C], OC = m[M_OC], G = m[M_G], K = m[M_ICG], M = m[M_OCG];
  const int P = m[M_OUT] * m[M_OUT + 1] * m[M_OUT + 2];
  const int p0 = get_global_id(0) * GEMM_TN, r = get_global_id(1), b = get_global_id(2);
  const int nmb = (M + GEMM_TM - 1) / GEMM_TM;
  if (p0 >= P || r * PW_MB >= nmb) return; /* the grid's padding to whole work-groups */
  const int n = b / G, g = b % G;
  __global const ST *xb = x + ((long)n * C + (long)g * K) * P;
  __global const ST *Ag = A + (long)g * nmb * K * GEMM_TM;
  const long ybase = ((long)n * OC + (long)g * M) * P;
  const int mlim = min(M, (r + 1) * PW_MB * GEMM_TM); /* this work-item's rows end there */
#ifdef PW_XSCALE
  __global const ST *xsb = xs + (long)n * C + (long)g * K; /* the input channels' scales of this image */
#else
  __global const ST *xsb = x;
#endif
  for (int mi = 0; mi < PW_MB; mi += PW_RB) {
    const int m0 = (r * PW_MB + mi) * GEMM_TM;
    if (m0 >= M) break;
    pw_block(xb, xsb, Ag, bias, y, M, K, P, p0, m0, mlim, ybase, g * M, has_bias, e0, e1);
  }
}
#endif

/* ConvTranspose: y[n,oc,o] = sum over ic of the group and kernel taps k with
 * o = i*s - pad + k*dil of x[n,ic,i] * w[ic, oc%OCg, k]. */
__kernel void convt_gather(__global const ST *x, __global const ST *w, __global const ST *bias, __global ST *y,
                           __global const int *m, int has_bias) {
  const int C = m[M_C], OC = m[M_OC], ICg = m[M_ICG], OCg = m[M_OCG];
  const int ID = m[M_IN], IH = m[M_IN + 1], IW = m[M_IN + 2];
  const int OD = m[M_OUT], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int KD = m[M_K], KH = m[M_K + 1], KW = m[M_K + 2];
  const int SD = m[M_S], SH = m[M_S + 1], SW = m[M_S + 2];
  const int DD = m[M_DL], DH = m[M_DL + 1], DW = m[M_DL + 2];
  const long p = get_global_id(0);
  const int oc = get_global_id(1), n = get_global_id(2);
  const long P = (long)OD * OH * OW;
  if (p >= P || oc >= OC || n >= m[M_N]) return;
  const int ow = p % OW, oh = (p / OW) % OH, od = p / ((long)OW * OH);
  const int grp = oc / OCg, ocg = oc % OCg, KK = KD * KH * KW;
  const long isz = (long)ID * IH * IW;
  const int td = od + m[M_P], th = oh + m[M_P + 1], tw = ow + m[M_P + 2];
  T acc = 0;
  for (int kd = 0; kd < KD; kd++) {
    const int a = td - kd * DD;
    if (a < 0 || a % SD) continue;
    const int id = a / SD;
    if (id >= ID) continue;
    for (int kh = 0; kh < KH; kh++) {
      const int b = th - kh * DH;
      if (b < 0 || b % SH) continue;
      const int ih = b / SH;
      if (ih >= IH) continue;
      for (int kw = 0; kw < KW; kw++) {
        const int e = tw - kw * DW;
        if (e < 0 || e % SW) continue;
        const int iw = e / SW;
        if (iw >= IW) continue;
        const long xo = ((long)n * C + (long)grp * ICg) * isz + ((long)id * IH + ih) * IW + iw;
        const long wo = ((long)grp * ICg * OCg + ocg) * KK + (kd * KH + kh) * KW + kw;
        for (int ic = 0; ic < ICg; ic++) acc = KMAD(LD(x, xo + ic * isz), LD(w, wo + (long)ic * OCg * KK), acc);
      }
    }
  }
  SV(y, ((long)n * OC + oc) * P + p, acc + (has_bias ? LD(bias, oc) : (T)0));
}

/* ConvInteger / QLinearConv: one output element per work-item (grid as
 * convt_gather). x and w are 8-bit, accumulated in int after subtracting the
 * zero points. flags: 1 x signed, 2 w signed, 4 x zero point given, 8 w zero
 * point given, 16 w zero point per output channel, 32 requantize to 8 bits
 * (QLinearConv; else int32 output in yi), 64 y signed, 128 int32 bias given,
 * 256 w scale per output channel. */
__kernel void conv_q8(__global const uchar *x, __global const uchar *w, __global const uchar *xzp, __global const uchar *wzp,
                      __global const float *xs, __global const float *ws, __global const float *ys, __global const uchar *yzp,
                      __global const int *bias, __global int *yi, __global uchar *yq, __global const int *m, int flags) {
  const int C = m[M_C], OC = m[M_OC], ICg = m[M_ICG], OCg = m[M_OCG];
  const int ID = m[M_IN], IH = m[M_IN + 1], IW = m[M_IN + 2];
  const int OD = m[M_OUT], OH = m[M_OUT + 1], OW = m[M_OUT + 2];
  const int KD = m[M_K], KH = m[M_K + 1], KW = m[M_K + 2];
  const long p = get_global_id(0);
  const int oc = get_global_id(1), n = get_global_id(2);
  const long P = (long)OD * OH * OW;
  if (p >= P || oc >= OC || n >= m[M_N]) return;
  const int ow = p % OW, oh = (p / OW) % OH, od = p / ((long)OW * OH);
  const int grp = oc / OCg, KK = KD * KH * KW;
  const long isz = (long)ID * IH * IW;
  const int xz = (flags & 4) ? ((flags & 1) ? (int)(char)xzp[0] : (int)xzp[0]) : 0;
  const int wzi = (flags & 16) ? oc : 0;
  const int wz = (flags & 8) ? ((flags & 2) ? (int)(char)wzp[wzi] : (int)wzp[wzi]) : 0;
  int acc = 0;
  for (int ic = 0; ic < ICg; ic++) {
    __global const uchar *xc = x + ((long)n * C + (long)grp * ICg + ic) * isz;
    __global const uchar *wc = w + ((long)oc * ICg + ic) * KK;
    for (int kd = 0; kd < KD; kd++) {
      const int id = od * m[M_S] - m[M_P] + kd * m[M_DL];
      if (id < 0 || id >= ID) continue;
      for (int kh = 0; kh < KH; kh++) {
        const int ih = oh * m[M_S + 1] - m[M_P + 1] + kh * m[M_DL + 1];
        if (ih < 0 || ih >= IH) continue;
        for (int kw = 0; kw < KW; kw++) {
          const int iw = ow * m[M_S + 2] - m[M_P + 2] + kw * m[M_DL + 2];
          if (iw < 0 || iw >= IW) continue;
          const uchar xb = xc[((long)id * IH + ih) * IW + iw], wb = wc[(kd * KH + kh) * KW + kw];
          const int xv = ((flags & 1) ? (int)(char)xb : (int)xb) - xz;
          const int wv = ((flags & 2) ? (int)(char)wb : (int)wb) - wz;
          acc += xv * wv;
        }
      }
    }
  }
  const long yo = ((long)n * OC + oc) * P + p;
  if (!(flags & 32)) { yi[yo] = acc; return; }
  if (flags & 128) acc += bias[oc];
  const float scale = xs[0] * ws[(flags & 256) ? oc : 0] / ys[0];
  const int yz = (flags & 64) ? (int)(char)yzp[0] : (int)yzp[0];
  int q = (int)rint((float)acc * scale) + yz;
  q = (flags & 64) ? clamp(q, -128, 127) : clamp(q, 0, 255);
  yq[yo] = (uchar)q;
}
