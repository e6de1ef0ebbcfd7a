/* resize.cl: ONNX Resize / Upsample (every mode and coordinate transform) and
 * GridSample, built once per element type T.
 *
 * resize_taps: separable N-d resampling driven by per-axis tap tables that
 * the host builds at plan time from the shapes and attributes. For axis a and
 * output coordinate o, taps e = off[a] + o*nt[a] + t (t < nt[a]) give an input
 * index tidx[e] and a weight tw[e]; tidx < 0 on any axis means "outside the
 * crop box" and yields `extrap`. Each output element sums the weighted
 * products over the cartesian product of its axes' taps.
 * meta (longs): [0] rank, [1..8] output dims, [9..16] input strides,
 *               [17..24] nt, [25..32] off.
 *
 * resize_hw: the same where only the last two axes resample (below).
 *
 * grid_sample: 2-D GridSample (NCHW input, grid [N,Ho,Wo,2]); one output
 * element per work-item. mode 0 nearest, 1 bilinear, 2 bicubic; pad 0 zeros,
 * 1 border, 2 reflection.
 */
#if T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ACC double
#else
#define ACC float
#endif
#define MAXR 8

/* fp16 storage (T_DTYPE 10, an fp16 plan: runtime/precision.c): resize_taps'
 * input and output hold halfs (ST), read with kiln_ldh and written with
 * kiln_svh (LD / SV; kernels/half_io.cl), computed in float. */
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

__kernel void resize_taps(__global const ST *x, __global ST *y, __global const long *meta, __global const int *tidx,
                          __global const float *tw, long total, float extrap, int round_int) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const int r = (int)meta[0];
  int base[MAXR], cnt[MAXR];
  long rem = i;
  for (int a = r - 1; a >= 0; a--) {
    const long o = rem % meta[1 + a];
    rem /= meta[1 + a];
    base[a] = (int)(meta[25 + a] + o * meta[17 + a]);
    cnt[a] = 0;
    if (tidx[base[a]] < 0) { SV(y, i, (T)extrap); return; }
  }
  ACC acc = 0;
  for (;;) {
    ACC wt = 1;
    long src = 0;
    for (int a = 0; a < r; a++) {
      const int e = base[a] + cnt[a];
      src += (long)tidx[e] * meta[9 + a];
      wt *= (ACC)tw[e];
    }
    if (wt != 0) acc += wt * (ACC)LD(x, src);
    int a = r - 1;
    for (; a >= 0; a--) {
      if (++cnt[a] < (int)meta[17 + a]) break;
      cnt[a] = 0;
    }
    if (a < 0) break;
  }
#if T_IS_FLOAT
  SV(y, i, (T)acc);
#else
  y[i] = round_int ? (T)rint(acc) : (T)acc;
#endif
}

/* resize_hw: resize_taps for the common layout where only the last two axes
 * resample (NCHW upsampling in decoders and UNets): the leading axes map
 * identically and collapse into P planes of H x W. Work-item (ow, oh, plane),
 * no index division; taps of both axes from the same tables (offsets offh,
 * offw, counts nth, ntw). */
__kernel void resize_hw(__global const ST *x, __global ST *y, __global const int *tidx, __global const float *tw,
                        int H, int W, int Ho, int Wo, int offh, int offw, int nth, int ntw, float extrap, int round_int) {
  const int ow = get_global_id(0), oh = get_global_id(1);
  const long pl = get_global_id(2);
  if (ow >= Wo || oh >= Ho) return;
  const long i = (pl * Ho + oh) * Wo + ow;
  const int eh = offh + oh * nth, ew = offw + ow * ntw;
  if (tidx[eh] < 0 || tidx[ew] < 0) { SV(y, i, (T)extrap); return; }
  __global const ST *xp = x + pl * H * W;
  ACC acc = 0;
  for (int a = 0; a < nth; a++) {
    const ACC wh = (ACC)tw[eh + a];
    const long row = (long)tidx[eh + a] * W;
    for (int b = 0; b < ntw; b++) {
      const ACC w = wh * (ACC)tw[ew + b];
      if (w != 0) acc += w * (ACC)LD(xp, row + tidx[ew + b]); /* zero-weight taps (padding of the tables) read nothing, as in resize_taps */
    }
  }
#if T_IS_FLOAT
  SV(y, i, (T)acc);
#else
  y[i] = round_int ? (T)rint(acc) : (T)acc;
#endif
}

/* resize_up: nearest-neighbour upsampling of the last two axes by integer
 * factors fh x fw (output row oh reads input row oh / fh, column ow column
 * ow / fw: the 2x Upsample of decoders and UNets). Only moves elements, so
 * fp16 storage moves their bits (RU_E ushort). Work-item (c, ih, plane)
 * reads RU_V consecutive inputs of row ih once and writes each fw times into
 * fh output rows: a vector load and fh vector stores for fw = 2 where the
 * RU_V inputs lie inside the row, element by element at a row's end and for
 * other factors. Written so that Oclgrind 21.10 runs it: a 16-wide vector
 * built from swizzles crashed its uninitialized-value plugin, min() in the
 * tail loop its instruction counter. With RU_MASK (the host's unsigned
 * 16-vector type of the element's size) the block is 16 inputs: one load,
 * two shuffle()s and two 16-wide stores a row, each one move (vec_io.cl's
 * typedefs; POCL splits vload16/vstore16): vae_decoder_16's 64->128
 * upsample of 256 planes ran at 23 GB/s with 8-wide vload/vstore. The
 * host's global size assumes RU_V. */
#ifdef RU_MASK
#define RU_V 16
#else
#define RU_V 8
#endif
#if defined(T_DTYPE) && T_DTYPE == 10
#define RU_E ushort
#define RU_E8 ushort8
#define RU_E16 ushort16
#else
#define RU_E ST
#define RU_CAT_(a, b) a##b
#define RU_CAT(a, b) RU_CAT_(a, b)
#define RU_E8 RU_CAT(ST, 8)
#define RU_E16 RU_CAT(ST, 16)
#endif
__kernel void resize_up(__global const RU_E *x, __global RU_E *y, int H, int W, int fh, int fw) {
  const int c = get_global_id(0) * RU_V, ih = get_global_id(1);
  const long pl = get_global_id(2);
  if (c >= W) return;
  const long Wo = (long)W * fw;
  __global const RU_E *xr = x + (pl * H + ih) * (long)W;
  __global RU_E *yr = y + (pl * H + ih) * (long)fh * Wo;
#ifdef RU_MASK
  if (fw == 2 && c + RU_V <= W) {
    const RU_E16 a = *(__global const KILN_VU(RU_E, 16) *)(xr + c); /* GLDU of RU_E (vec_io.cl) */
    const RU_E16 lo = shuffle(a, (RU_MASK)(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7));
    const RU_E16 hi = shuffle(a, (RU_MASK)(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15));
    for (int r = 0; r < fh; r++) {
      __global RU_E *yo = yr + r * Wo + 2 * c;
      *(__global KILN_VU(RU_E, 16) *)yo = lo;
      *(__global KILN_VU(RU_E, 16) *)(yo + 16) = hi;
    }
    return;
  }
#else
  if (fw == 2 && c + RU_V <= W) {
    const RU_E8 a = vload8(0, xr + c);
    const RU_E8 lo = a.s00112233, hi = a.s44556677;
    for (int r = 0; r < fh; r++) {
      vstore8(lo, 0, yr + r * Wo + 2 * c);
      vstore8(hi, 0, yr + r * Wo + 2 * c + 8);
    }
    return;
  }
#endif
  for (int j = c; j < c + RU_V && j < W; j++) {
    const RU_E v = xr[j];
    for (int r = 0; r < fh; r++)
      for (int f = 0; f < fw; f++) yr[r * Wo + (long)j * fw + f] = v;
  }
}

/* GridSample helpers */
static ACC gs_denorm(ACC v, int len, int align) {
  return align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
}

static ACC gs_reflect(ACC v, ACC lo, ACC hi) {
  const ACC rng = hi - lo;
  if (rng <= 0) return 0;
  if (v < lo) {
    const ACC dx = lo - v;
    const int n = (int)(dx / rng);
    const ACC rr = dx - n * rng;
    return (n % 2 == 0) ? lo + rr : hi - rr;
  }
  if (v > hi) {
    const ACC dx = v - hi;
    const int n = (int)(dx / rng);
    const ACC rr = dx - n * rng;
    return (n % 2 == 0) ? hi - rr : lo + rr;
  }
  return v;
}

static ACC gs_pixel(__global const T *xc, int H, int W, int r, int c, int pad, int align) {
  if (pad == 0) {
    if (r < 0 || r >= H || c < 0 || c >= W) return 0;
  } else if (pad == 1) {
    r = clamp(r, 0, H - 1);
    c = clamp(c, 0, W - 1);
  } else {
    if (r < 0 || r >= H) r = (int)gs_reflect((ACC)r, align ? 0 : -0.5, align ? H - 1 : H - 0.5);
    if (c < 0 || c >= W) c = (int)gs_reflect((ACC)c, align ? 0 : -0.5, align ? W - 1 : W - 0.5);
    r = clamp(r, 0, H - 1);
    c = clamp(c, 0, W - 1);
  }
  return (ACC)xc[(long)r * W + c];
}

static void gs_cubic(ACC t, ACC *c) {
  const ACC A = -0.75;
  const ACC x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  c[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
  c[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
  c[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  c[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

__kernel void grid_sample(__global const T *x, __global const T *grid, __global T *y, int N, int C, int H, int W,
                          int Ho, int Wo, int mode, int pad, int align) {
  const long p = get_global_id(0);
  const int nc = get_global_id(1);
  if (p >= (long)Ho * Wo || nc >= N * C) return;
  const int n = nc / C;
  __global const T *g = grid + ((long)n * Ho * Wo + p) * 2;
  ACC gx = gs_denorm((ACC)g[0], W, align), gy = gs_denorm((ACC)g[1], H, align);
  if (pad == 1 && mode != 2) {
    gx = clamp(gx, (ACC)0, (ACC)(W - 1));
    gy = clamp(gy, (ACC)0, (ACC)(H - 1));
  } else if (pad == 2 && mode != 2) {
    gx = gs_reflect(gx, align ? 0 : -0.5, align ? W - 1 : W - 0.5);
    gy = gs_reflect(gy, align ? 0 : -0.5, align ? H - 1 : H - 0.5);
  }
  __global const T *xc = x + (long)nc * H * W;
  ACC v;
  if (mode == 0) {
    v = gs_pixel(xc, H, W, (int)rint(gy), (int)rint(gx), pad, align);
  } else if (mode == 1) {
    const ACC fx = floor(gx), fy = floor(gy), ax = gx - fx, ay = gy - fy;
    const int x0 = (int)fx, y0 = (int)fy;
    v = (1 - ay) * ((1 - ax) * gs_pixel(xc, H, W, y0, x0, pad, align) + ax * gs_pixel(xc, H, W, y0, x0 + 1, pad, align)) +
        ay * ((1 - ax) * gs_pixel(xc, H, W, y0 + 1, x0, pad, align) + ax * gs_pixel(xc, H, W, y0 + 1, x0 + 1, pad, align));
  } else {
    const ACC fx = floor(gx), fy = floor(gy);
    const int x0 = (int)fx - 1, y0 = (int)fy - 1;
    ACC cx[4], cy[4];
    gs_cubic(gx - fx, cx);
    gs_cubic(gy - fy, cy);
    v = 0;
    for (int i = 0; i < 4; i++) {
      ACC row = 0;
      for (int j = 0; j < 4; j++) row += cx[j] * gs_pixel(xc, H, W, y0 + i, x0 + j, pad, align);
      v += cy[i] * row;
    }
  }
  y[(long)nc * Ho * Wo + p] = (T)v;
}
