/* pool.cl: pooling (ONNX MaxPool, AveragePool, LpPool and their Global forms)
 * and MaxUnpool, built once per element type T.
 *
 * Geometry `m` (ints, three spatial dims, 1-D/2-D padded with leading 1s):
 *   [0] N  [1] C  [2..4] in D,H,W  [5..7] out D,H,W  [8..10] kernel
 *   [11..13] strides  [14..16] dilations  [17..19] leading pads
 *   [20..22] trailing pads
 * pool_fwd: one output element per work-item (grid: OD*OH*OW, N*C).
 *   mode 0: max (with indices into the flattened input when with_ind,
 *           storage_order 1 = column-major over the spatial dims)
 *   mode 1: average over the window positions inside the input
 *   mode 2: average counting padding (positions inside the padded input)
 *   mode 3: Lp norm with exponent p
 * gpool_wg: global pools, a work-group per plane; gpool_plane: a work-item
 *   per plane reading vectors (float types).
 * fill_zero / unpool_scatter: MaxUnpool (zero the output, then scatter x by its indices).
 */
#if T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ACC double
#else
#define ACC float
#endif

/* fp16 storage (T_DTYPE 10, an fp16 plan: runtime/precision.c): the pools'
 * input and output hold halfs (ST), read with kiln_ldh and written with
 * kiln_svh (LD / SV; kernels/half_io.cl), computed in T = float. */
#if defined(T_DTYPE) && T_DTYPE == 10
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

#ifndef PL_WPI
  #define PL_WPI 8 // the host always sets it (per instance: pool_defaults, kernels/pool.c); pool_fwd / pool_row: consecutive outputs per work-item (1, 2, 4, 8, 16)
#endif
#ifndef PL_ROWS
  #define PL_ROWS 1 // the host always sets it when above 1 (per instance: pool_defaults); pool_row: output rows per work-item
#endif
#ifndef PL_WG
  #define PL_WG 64 // the host always sets it (pool: a launch size, gpool: this kernel's); gpool_wg: work-items per (n, c) plane (power of two)
#endif
#ifndef PL_VW
  #define PL_VW 8  // the host always sets it (per instance: 16 on planes of 14x14 and more, kernels/pool.c); gpool_wg, gpool_plane: consecutive elements per work-item step (gpool_plane: a vector)
#endif

/* With -DPL_GEOM=<the 23 ints of m> -DPL_MODE=.. -DPL_IND=.. -DPL_ORDER=..
 * the geometry and mode are compile-time constants (the host builds one
 * program per pooling geometry): the window loops get constant bounds and
 * the mode branches fold away. Without them they are read at run time. */
#ifdef PL_GEOM
__constant int pl_geom[23] = {PL_GEOM};
  #define PM(i) pl_geom[i]
  #define MODE PL_MODE
  #define WITH_IND PL_IND
  #define STORAGE_ORDER PL_ORDER
#else
  #define PM(i) m[i]
  #define MODE mode
  #define WITH_IND with_ind
  #define STORAGE_ORDER storage_order
#endif

/* Output q of plane nc. */
inline void pool_at(__global const ST *x, __global ST *y, __global long *ind, __global const int *m,
                    int mode, float p, int with_ind, int storage_order, const long q, const long nc) {
  const int ID = PM(2), IH = PM(3), IW = PM(4), OD = PM(5), OH = PM(6), OW = PM(7);
  const int KD = PM(8), KH = PM(9), KW = PM(10), SD = PM(11), SH = PM(12), SW = PM(13);
  const int DD = PM(14), DH = PM(15), DW = PM(16);
  const long P = (long)OD * OH * OW;
  const int ow = q % OW, oh = (q / OW) % OH, od = q / ((long)OW * OH);
  const int d0 = od * SD - PM(17), h0 = oh * SH - PM(18), w0 = ow * SW - PM(19);
  const long isz = (long)ID * IH * IW;
  __global const ST *xc = x + nc * isz;
#ifdef PL_GEOM
  /* max without indices, window wholly inside the input (most outputs):
   * constant loop bounds, nothing per position but the load */
  if (MODE == 0 && !WITH_IND && d0 >= 0 && d0 + (KD - 1) * DD < ID && h0 >= 0 && h0 + (KH - 1) * DH < IH && w0 >= 0 &&
      w0 + (KW - 1) * DW < IW) {
    __global const ST *xw = xc + ((long)d0 * IH + h0) * IW + w0;
    T best = LD(xw, 0);
    for (int kd = 0; kd < KD; kd++)
      for (int kh = 0; kh < KH; kh++)
        for (int kw = 0; kw < KW; kw++) {
          const T v = LD(xw, (kd * DD * IH + kh * DH) * IW + kw * DW);
          best = v > best ? v : best;
        }
    SV(y, nc * P + q, best);
    return;
  }
#endif
  /* the window positions inside the input, as index ranges per dim (no
   * test per position: on POCL the per-position bounds tests and 64-bit
   * offsets cost ~10x the loads) */
  const int kd0 = d0 < 0 ? (-d0 + DD - 1) / DD : 0, kd1 = min(KD, ID - d0 > 0 ? (ID - d0 + DD - 1) / DD : 0);
  const int kh0 = h0 < 0 ? (-h0 + DH - 1) / DH : 0, kh1 = min(KH, IH - h0 > 0 ? (IH - h0 + DH - 1) / DH : 0);
  const int kw0 = w0 < 0 ? (-w0 + DW - 1) / DW : 0, kw1 = min(KW, IW - w0 > 0 ? (IW - w0 + DW - 1) / DW : 0);
  ACC acc = 0;
  T best = 0;
  long bi = -1;
  int cnt = kd1 > kd0 && kh1 > kh0 && kw1 > kw0 ? (kd1 - kd0) * (kh1 - kh0) * (kw1 - kw0) : 0;
  if (MODE == 0 && cnt) best = LD(xc, ((long)(d0 + kd0 * DD) * IH + (h0 + kh0 * DH)) * IW + (w0 + kw0 * DW));
  for (int kd = kd0; kd < kd1; kd++) {
    const int id = d0 + kd * DD;
    for (int kh = kh0; kh < kh1; kh++) {
      const int ih = h0 + kh * DH;
      const long row = ((long)id * IH + ih) * IW + w0; /* w0 may be negative: index, not pointer */
      for (int kw = kw0; kw < kw1; kw++) {
        const T v = LD(xc, row + kw * DW);
        if (MODE == 0) {
          if (WITH_IND) {
            const int iw = w0 + kw * DW;
            if (bi < 0 || v > best) { best = v; bi = STORAGE_ORDER ? id + (long)ID * (ih + (long)IH * iw) : ((long)id * IH + ih) * IW + iw; }
          } else {
            best = v > best ? v : best;
          }
        } else if (MODE == 3) {
          acc += pow(fabs((ACC)v), (ACC)p);
        } else {
          acc += (ACC)v;
        }
      }
    }
  }
  const long yo = nc * P + q;
  if (MODE == 0) {
    SV(y, yo, best);
    if (WITH_IND) ind[yo] = bi < 0 ? -1 : nc * isz + bi;
  } else if (MODE == 3) {
    SV(y, yo, (T)pow(acc, (ACC)1 / (ACC)p));
  } else {
    if (MODE == 2) {
      /* window positions inside the padded input [-pad_begin, in + pad_end) */
      int c3[3];
      const int in3[3] = {ID, IH, IW}, k3[3] = {KD, KH, KW}, dl3[3] = {DD, DH, DW}, s3[3] = {d0, h0, w0};
      for (int a = 0; a < 3; a++) {
        c3[a] = 0;
        for (int k = 0; k < k3[a]; k++) {
          const int t = s3[a] + k * dl3[a];
          if (t >= -PM(17 + a) && t < in3[a] + PM(20 + a)) c3[a]++;
        }
      }
      cnt = c3[0] * c3[1] * c3[2];
    }
    SV(y, yo, cnt ? (T)(acc / (ACC)cnt) : (T)0);
  }
}

/* grid: (ceil(P / PL_WPI), N*C); work-item g0 computes outputs
 * g0 * PL_WPI .. + PL_WPI - 1 of its plane. */
__kernel void pool_fwd(__global const ST *x, __global ST *y, __global long *ind, __global const int *m,
                       int mode, float p, int with_ind, int storage_order) {
  const long P = (long)PM(5) * PM(6) * PM(7);
  const long nc = get_global_id(1);
  if (nc >= (long)PM(0) * PM(1)) return;
  const long q0 = get_global_id(0) * PL_WPI;
  for (int t = 0; t < PL_WPI; t++) {
    if (q0 + t >= P) return;
    pool_at(x, y, ind, m, mode, p, with_ind, storage_order, q0 + t, nc);
  }
}

#ifdef PL_GEOM
/* 2-D windows (KD = 1) along rows: work-item (g0, oh, nc) computes the
 * PL_WPI consecutive outputs ow0 = g0 * PL_WPI .. of output row oh. A block
 * whose windows lie wholly inside the input reads each window row as vectors
 * (stride 1: PL_WPI elements per tap; stride 2: 2 * PL_WPI elements, the even
 * lanes) and stores a vector; edge blocks, dilated or other strides, indices
 * and Lp pools go through pool_at one output at a time. The host launches it
 * (runtime/ops/conv_pool.c) for max and average pools with ID = OD = 1 and
 * DW = 1; grid (ceil(OW / PL_WPI), OH, N*C). */
#define PR_CAT_(a, b) a##b
#define PR_CAT(a, b) PR_CAT_(a, b)
#if PL_WPI == 2
#define PR_W2 4
#elif PL_WPI == 4
#define PR_W2 8
#else
#define PR_W2 16 /* PL_WPI 16: two vectors of 16 (PR_EO) */
#endif
#if PL_WPI > 1
#define PRV PR_CAT(T, PL_WPI)
#define PRV2 PR_CAT(T, PR_W2)
#if defined(T_DTYPE) && T_DTYPE == 10
#define PR_LOAD PR_CAT(kiln_vldh, PL_WPI)
#define PR_LOAD2 PR_CAT(kiln_vldh, PR_W2)
#define PR_STORE PR_CAT(kiln_vsth, PL_WPI)
#else
#define PR_LOAD(i, p) GLDU(PL_WPI, i, p) /* vec_io.cl */
#define PR_LOAD2(i, p) GLDU(PR_W2, i, p)
#define PR_STORE(v, i, p) GSTU(PL_WPI, v, i, p)
#endif
/* vectors in private memory (T: float under fp16 storage) */
#define PR_PSTORE PR_CAT(vstore, PL_WPI)
#define PR_PLOAD PR_CAT(vload, PL_WPI)
/* PR_EO(p, ev, od): the even and odd lanes of the 2 * PL_WPI elements at p.
 * At 16 a pair of 16-wide loads and two two-source permutes (shuffle2 with
 * constant masks: one vpermt2ps each on AVX-512), which halves the
 * instructions an output of the 8-wide block costs (squeezenet's 3x3/2
 * MaxPools); narrower blocks permute one vector. */
/* shuffle masks are unsigned vectors of the element's size: the host names
 * that type (PL_MASKT: uchar, ushort, uint, ulong; uint for fp16 storage,
 * computed in float) */
#ifndef PL_MASKT
#define PL_MASKT uint
#endif
#if PL_WPI == 16
#define PR_MASK PR_CAT(PL_MASKT, 16)
#define PR_EVEN_M ((PR_MASK)(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30))
#define PR_ODD_M ((PR_MASK)(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31))
/* a left pad of one: lane j's tap 0 is element 2j - 1, lane 0's (padding) element 0 */
#define PR_LPAD_M ((PR_MASK)(0, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29))
#define PR_EO(p, ev, od)                                  \
  do {                                                    \
    const PRV a0_ = PR_LOAD2(0, (p)), a1_ = PR_LOAD2(1, (p)); \
    ev = shuffle2(a0_, a1_, PR_EVEN_M);                   \
    od = shuffle2(a0_, a1_, PR_ODD_M);                    \
  } while (0)
#else
/* shuffle with constant masks, not .even/.odd: Oclgrind's uninitialized-value
 * plugin reports every store of a vector built by those swizzles */
#define PR_EO(p, ev, od)                                  \
  do {                                                    \
    const PRV2 a_ = PR_LOAD2(0, (p));                     \
    ev = shuffle(a_, PR_EVEN_M);                          \
    od = shuffle(a_, PR_ODD_M);                           \
  } while (0)
#define PR_MASK PR_CAT(PL_MASKT, PL_WPI)
#if PL_WPI == 2
#define PR_EVEN_M ((PR_MASK)(0, 2))
#define PR_ODD_M ((PR_MASK)(1, 3))
#define PR_LPAD_M ((PR_MASK)(0, 1))
#elif PL_WPI == 4
#define PR_EVEN_M ((PR_MASK)(0, 2, 4, 6))
#define PR_ODD_M ((PR_MASK)(1, 3, 5, 7))
#define PR_LPAD_M ((PR_MASK)(0, 1, 3, 5))
#else
#define PR_EVEN_M ((PR_MASK)(0, 2, 4, 6, 8, 10, 12, 14))
#define PR_ODD_M ((PR_MASK)(1, 3, 5, 7, 9, 11, 13, 15))
#define PR_LPAD_M ((PR_MASK)(0, 1, 3, 5, 7, 9, 11, 13))
#endif
#endif
#endif
#if PL_WPI > 1
/* The three taps of the 3-wide stride-2 windows of one input row xr for
 * the block at w0 (lpad: w0 = -1, a left pad of one: lane 0's tap 0 is
 * padding and takes its tap 1, element 0), as vectors e, o, e2. */
#if PL_WPI == 16
#define PR_LPAD3(xr, e, o, e2)                                  \
  do {                                                          \
    const PRV a0_ = PR_LOAD2(0, (xr)), a1_ = PR_LOAD2(1, (xr)); \
    e = shuffle2(a0_, a1_, PR_LPAD_M);                          \
    o = shuffle2(a0_, a1_, PR_EVEN_M);                          \
    e2 = shuffle2(a0_, a1_, PR_ODD_M);                          \
  } while (0)
#else
#define PR_LPAD3(xr, e, o, e2)                                  \
  do {                                                          \
    const PRV2 a_ = PR_LOAD2(0, (xr));                          \
    e = shuffle(a_, PR_LPAD_M);                                 \
    o = shuffle(a_, PR_EVEN_M);                                 \
    e2 = shuffle(a_, PR_ODD_M);                                 \
  } while (0)
#endif
#define PR_TAPS3(xr, w0, lpad, e, o, e2)                        \
  do {                                                          \
    if (lpad) PR_LPAD3(xr, e, o, e2);                           \
    else {                                                      \
      PRV u_;                                                   \
      PR_EO((xr) + (w0), e, o);                                 \
      PR_EO((xr) + (w0) + 1, u_, e2);                           \
    }                                                           \
  } while (0)

/* Max over those windows of one input row, taps in pool_at's order. */
inline PRV pr_hmax3(__global const ST *xr, const int w0, const bool lpad) {
  PRV e, o, e2;
  PR_TAPS3(xr, w0, lpad, e, o, e2);
  PRV acc = e;
  acc = o > acc ? o : acc;
  return e2 > acc ? e2 : acc;
}

/* A block's outputs at y + yo: the whole vector, or (a row's last block,
 * moved left to end at OW) its lanes from ow0 - owv on. */
inline void pr_store(__global ST *y, const long yo, PRV acc, const int ow0, const int owv) {
  if (owv == ow0) PR_STORE(acc, 0, y + yo);
  else {
    const T *ra = (const T *)&acc;
    for (int j = ow0 - owv; j < PL_WPI; j++) SV(y, yo + j, ra[j]);
  }
}
#endif

/* Output row oh's block at ow0 of plane nc. */
inline void pool_row_at(__global const ST *x, __global ST *y, __global long *ind, __global const int *m,
                        int mode, float p, int with_ind, int storage_order, const int ow0, const int oh, const long nc) {
  const int IH = PM(3), IW = PM(4), OH = PM(6), OW = PM(7), KH = PM(9), KW = PM(10), SH = PM(12), SW = PM(13), DH = PM(15);
  const int h0 = oh * SH - PM(18);
#if PL_WPI > 1
  /* The block computed as a vector: a row's last block, when partial, moves
   * left to end at OW (its lanes before ow0 are the previous block's: not
   * stored). 3-wide windows at stride 2 read only the 2*PL_WPI + 1 elements
   * their taps span, in two loads of 2*PL_WPI: at w0 (taps 0 and 1, its even
   * and odd lanes) and at w0 + 1 (tap 2, its odd lanes); other windows one
   * load a tap (stride 1: PL_WPI elements, stride 2: 2*PL_WPI, the even
   * lanes). Vectors are not built from swizzles of others: Oclgrind 21.10's
   * uninitialized-value plugin misreads (or crashes on) those. */
  const int owv = ow0 + PL_WPI > OW && OW >= PL_WPI ? OW - PL_WPI : ow0, w0 = owv * SW - PM(19);
  const bool s2k3 = SW == 2 && KW == 3;
  /* max over a 3-wide stride-2 window starting one before the row (a left
   * pad of one): lane 0's tap 0 is padding, which max ignores; the block
   * loads from the row's start and takes lane 0's tap 1 for its tap 0 */
  const bool lpad = s2k3 && MODE == 0 && !WITH_IND && w0 == -1;
  /* the last element a block reads (3-wide stride 2: two loads, at w0 and w0 + 1) */
  const int wlast = s2k3 ? w0 + 2 * PL_WPI : w0 + KW - 1 + (SW == 1 ? PL_WPI - 1 : 2 * PL_WPI - 1);
  const bool vec_ok = (MODE == 0 && !WITH_IND) || MODE == 1 || MODE == 2;
  if (vec_ok && (SW == 1 || SW == 2) && PM(16) == 1 && h0 >= 0 && h0 + (KH - 1) * DH < IH && (w0 >= 0 || lpad) && wlast < IW &&
      owv + PL_WPI <= OW) {
    __global const ST *xr = x + nc * ((long)IH * IW) + (long)h0 * IW; /* the row; the block's first input at w0 */
    PRV acc;
    if (s2k3) {
      for (int kh = 0; kh < KH; kh++, xr += (long)DH * IW) {
        PRV e, o, e2;
        PR_TAPS3(xr, w0, lpad, e, o, e2);
        if (kh == 0) acc = MODE == 0 ? e : e + o + e2;
        else if (MODE != 0) acc += e + o + e2;
        if (MODE == 0) { /* in pool_at's order: the first tap first (a NaN there stays) */
          if (kh > 0) acc = e > acc ? e : acc;
          acc = o > acc ? o : acc;
          acc = e2 > acc ? e2 : acc;
        }
      }
    } else {
      xr += w0;
      PRV u;
      if (SW == 1) acc = PR_LOAD(0, xr); /* max: the first tap (as pool_at: a NaN there stays) */
      else PR_EO(xr, acc, u);
      if (MODE != 0) acc = (PRV)0;
      for (int kh = 0; kh < KH; kh++, xr += (long)DH * IW)
        for (int kw = 0; kw < KW; kw++) {
          PRV v;
          if (SW == 1) v = PR_LOAD(0, xr + kw);
          else PR_EO(xr + kw, v, u);
          if (MODE == 0) acc = v > acc ? v : acc;
          else acc += v;
        }
    }
    if (MODE != 0) acc /= (T)(KH * KW); /* inside the input: every position counts in both modes */
    pr_store(y, nc * ((long)OH * OW) + (long)oh * OW + owv, acc, ow0, owv);
    return;
  }
#endif
  for (int t = 0; t < PL_WPI && ow0 + t < OW; t++) pool_at(x, y, ind, m, mode, p, with_ind, storage_order, (long)oh * OW + ow0 + t, nc);
}

/* Work-item (g0, g1, nc): the blocks at ow0 = g0 * PL_WPI of output rows
 * g1 * PL_ROWS .. + PL_ROWS - 1. 3x3 stride-2 max pools (squeezenet's,
 * resnet's) whose rows lie inside the input take each input row's
 * horizontal maxima once: PL_ROWS output rows read 2 * PL_ROWS + 1 input
 * rows, not 3 * PL_ROWS. Others go a row at a time (pool_row_at). */
__kernel void pool_row(__global const ST *x, __global ST *y, __global long *ind, __global const int *m,
                       int mode, float p, int with_ind, int storage_order) {
  const int OH = PM(6), OW = PM(7);
  const int ow0 = (int)get_global_id(0) * PL_WPI, oh0 = (int)get_global_id(1) * PL_ROWS;
  const long nc = get_global_id(2);
  if (ow0 >= OW || oh0 >= OH || nc >= (long)PM(0) * PM(1)) return;
#if PL_WPI > 1 && PL_ROWS > 1
  const int IH = PM(3), IW = PM(4);
  const int owv = ow0 + PL_WPI > OW && OW >= PL_WPI ? OW - PL_WPI : ow0, w0 = owv * 2 - PM(19), h0 = oh0 * 2 - PM(18);
  const bool lpad = w0 == -1;
  if (MODE == 0 && !WITH_IND && PM(9) == 3 && PM(10) == 3 && PM(12) == 2 && PM(13) == 2 && PM(15) == 1 && PM(16) == 1 &&
      oh0 + PL_ROWS <= OH && h0 >= 0 && h0 + 2 * PL_ROWS < IH && w0 >= -1 && w0 + 2 * PL_WPI < IW && owv + PL_WPI <= OW) {
    __global const ST *xr = x + nc * ((long)IH * IW) + (long)h0 * IW;
    long yo = nc * ((long)OH * OW) + (long)oh0 * OW + owv;
    PRV top = pr_hmax3(xr, w0, lpad); /* the first window row of output row r: the last of row r - 1 */
    for (int r = 0; r < PL_ROWS; r++, yo += OW) {
      xr += IW;
      const PRV mid = pr_hmax3(xr, w0, lpad);
      xr += IW;
      const PRV bot = pr_hmax3(xr, w0, lpad);
      PRV acc = top;
      acc = mid > acc ? mid : acc;
      acc = bot > acc ? bot : acc;
      top = bot;
      pr_store(y, yo, acc, ow0, owv);
    }
    return;
  }
#endif
  for (int r = 0; r < PL_ROWS && oh0 + r < OH; r++) pool_row_at(x, y, ind, m, mode, p, with_ind, storage_order, ow0, oh0 + r, nc);
}
#endif

#if T_IS_FLOAT
/* Global pools over planes of S elements: one work-group of PL_WG items per
 * plane (grid N*C*PL_WG); modes 0 max, 1/2 average, 3 Lp. */
__kernel __attribute__((reqd_work_group_size(PL_WG, 1, 1)))
void gpool_wg(__global const ST *x, __global ST *y, const long S, int mode, float p) {
  __local ACC buf[PL_WG];
  const long nc = get_group_id(0);
  const int l = (int)get_local_id(0);
  __global const ST *xc = x + nc * S;
  ACC acc = mode == 0 ? (ACC)(-INFINITY) : (ACC)0;
  for (long j0 = (long)l * PL_VW; j0 < S; j0 += PL_WG * PL_VW)
    for (int k = 0; k < PL_VW; k++) {
      if (j0 + k >= S) break;
      const ACC v = (ACC)LD(xc, j0 + k);
      if (mode == 0) acc = fmax(acc, v);
      else if (mode == 3) acc += pow(fabs(v), (ACC)p);
      else acc += v;
    }
  buf[l] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = PL_WG / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] = mode == 0 ? fmax(buf[l], buf[l + s]) : buf[l] + buf[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    const ACC r = buf[0];
    SV(y, nc, (T)(mode == 0 ? r : mode == 3 ? pow(r, (ACC)1 / (ACC)p) : S ? r / (ACC)S : (ACC)0));
  }
}
#endif

#if T_IS_FLOAT && defined(PL_BLK) && defined(PL_GEOM)
/* MaxPool (2-D, no indices) of an input in blocks of PL_BLK channels
 * (NCHW16c / NCHW8c, kiln_value.blk: runtime/layout.c) into the same
 * layout: a work-item per output pixel and block, each window pixel one
 * vector of the block's channels (no lanes along the row, no shuffles at
 * stride 2). Geometry constants from PL_GEOM (the 23 ints pool_row takes).
 * A window with no pixel inside the input gives 0, as the reference.
 * grid: (OW, OH, N*C/PL_BLK) */
#define PB_CAT_(a, b) a##b
#define PB_CAT(a, b) PB_CAT_(a, b)
#define PBV PB_CAT(float, PL_BLK)
__kernel void pool_blk(__global const float *x, __global float *y) {
  const int IH = PM(3), IW = PM(4), OH = PM(6), OW = PM(7);
  const int KH = PM(9), KW = PM(10), SH = PM(12), SW = PM(13), DH = PM(15), DW = PM(16);
  const int ow = get_global_id(0), oh = get_global_id(1);
  const long nb = get_global_id(2);
  if (ow >= OW || oh >= OH) return;
  __global const float *xb = x + nb * IH * IW * PL_BLK;
  const int h0 = oh * SH - PM(18), w0 = ow * SW - PM(19);
  PBV m = (PBV)(-INFINITY);
  bool any = false;
  _Pragma("unroll") for (int kh = 0; kh < KH; kh++) {
    const int ih = h0 + kh * DH;
    if (ih < 0 || ih >= IH) continue;
    _Pragma("unroll") for (int kw = 0; kw < KW; kw++) {
      const int iw = w0 + kw * DW;
      if (iw < 0 || iw >= IW) continue;
      /* fmax's value while m holds no NaN (it never does: -INFINITY, then
       * only what compared greater), in one vmaxps where fmax's NaN tests
       * took four instructions */
      const PBV v = PB_CAT(vload, PL_BLK)(0, xb + ((long)ih * IW + iw) * PL_BLK);
      m = v > m ? v : m;
      any = true;
    }
  }
  PB_CAT(vstore, PL_BLK)(any ? m : (PBV)0, 0, y + ((nb * OH + oh) * OW + ow) * PL_BLK);
}
#endif

#if T_IS_FLOAT && defined(PL_B16)
/* GlobalAveragePool of an NCHW16c input (kiln_value.blk16, runtime/layout.c):
 * a work-item per block of 16 channels, its S pixels one vector each; the
 * output [N][C][1][1] is the same in either layout. grid: N*C/16 */
__kernel void gpool_b16(__global const float *x, __global float *y, const long S, const long blocks) {
  const long b = get_global_id(0);
  if (b >= blocks) return;
  __global const float *xb = x + b * S * 16;
  float16 a0 = (float16)0, a1 = (float16)0;
  long j = 0;
  for (; j + 2 <= S; j += 2) {
    a0 += vload16(j, xb);
    a1 += vload16(j + 1, xb);
  }
  if (j < S) a0 += vload16(j, xb);
  vstore16((a0 + a1) / (float)S, b, y);
}
#endif

#if T_IS_FLOAT || T_IS_DOUBLE
/* Global pools, a work-item per plane (gpool with PL_WG = 1): the plane's S
 * elements PL_VW at a time as vectors, the tail one by one, the mode a
 * constant (-DPL_MODE: 0 max, 1/2 average, 3 Lp with exponent p).
 * grid: planes rounded up to the work-group size. */
#ifdef PL_MODE
#define GP_CAT_(a, b) a##b
#define GP_CAT(a, b) GP_CAT_(a, b)
#if PL_VW == 1
#define GPV ACC
#define GP_LOAD(i, p) ((ACC)LD((p), (i)))
#else
#define GPV GP_CAT(ACC, PL_VW)
#if defined(T_DTYPE) && T_DTYPE == 10
#define GP_LOAD GP_CAT(kiln_vldh, PL_VW)
#else
#define GP_LOAD(i, p) GLDU(PL_VW, i, p) /* vec_io.cl; T is ACC here (float types) */
#endif
#endif
/* r takes element v (a scalar step of the mode) */
#define GP_STEP(r, v) ((r) = PL_MODE == 0 ? fmax((r), (v)) : PL_MODE == 3 ? (r) + pow(fabs(v), (ACC)p) : (r) + (v))
__kernel void gpool_plane(__global const ST *x, __global ST *y, const long S, const long planes, float p) {
  const long nc = get_global_id(0);
  if (nc >= planes) return;
  __global const ST *xc = x + nc * S;
  GPV acc = (GPV)(PL_MODE == 0 ? -INFINITY : 0);
  ACC h = PL_MODE == 0 ? -INFINITY : 0;
  long j = 0;
  /* fp16 planes start anywhere (S not a multiple of PL_VW): kiln_vldhN reads
   * them without the alignment POCL's vload_halfN assumes (half_io.cl) */
  for (; j + PL_VW <= S; j += PL_VW) {
    const GPV v = GP_LOAD(0, xc + j);
    if (PL_MODE == 0) acc = fmax(acc, v);
    else if (PL_MODE == 3) acc += pow(fabs(v), (GPV)((ACC)p));
    else acc += v;
  }
  const ACC *a = (const ACC *)&acc;
  ACC r = a[0];
  for (int k = 1; k < PL_VW; k++) r = PL_MODE == 0 ? fmax(r, a[k]) : r + a[k];
  r = PL_MODE == 0 ? fmax(r, h) : r + h;
  for (; j < S; j++) GP_STEP(r, (ACC)LD(xc, j));
  SV(y, nc, (T)(PL_MODE == 0 ? r : PL_MODE == 3 ? pow(r, (ACC)1 / (ACC)p) : S ? r / (ACC)S : (ACC)0));
}
#endif
#endif

__kernel void fill_zero(__global T *y, long n) {
  const long i = get_global_id(0);
  if (i < n) y[i] = 0;
}

/* meta (longs): [0] rank, [1..8] unpooled dims the indices refer to,
 * [9..16] output dims, [17..24] output strides. An index maps to the same
 * coordinates of the output; coordinates outside it are dropped. */
__kernel void unpool_scatter(__global const T *x, __global const long *ind, __global T *y, __global const long *meta, long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long rem = ind[i], off = 0;
  if (rem < 0) return;
  const int r = (int)meta[0];
  for (int a = r - 1; a >= 0; a--) {
    const long c = rem % meta[1 + a];
    rem /= meta[1 + a];
    if (c >= meta[9 + a]) return;
    off += c * meta[17 + a];
  }
  if (rem == 0) y[off] = x[i];
}
