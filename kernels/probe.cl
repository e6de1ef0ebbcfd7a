/* probe.cl: microbenchmarks of the device for the cost model: global-memory
 * read / write / copy, local-memory traffic, arithmetic peak per vector width
 * (many independent multiply-add chains; one kernel per width), and an empty
 * kernel for launch overhead. One program: no build options. */

#ifndef CHAINS
  #define CHAINS 8  // independent multiply-add chains per work-item
#endif

/* Each work-item reads n4/global_size float4s (coalesced) and writes one sum. */
__kernel void read_bw(__global const float4 *src, __global float *dst, long n4) {
  size_t gid = get_global_id(0), gs = get_global_size(0);
  float4 acc = (float4)(0.0f);
  for (long i = gid; i < n4; i += gs) acc += src[i];
  dst[gid] = acc.x + acc.y + acc.z + acc.w;
}

__kernel void write_bw(__global float4 *dst, long n4, float v) {
  size_t gid = get_global_id(0), gs = get_global_size(0);
  for (long i = gid; i < n4; i += gs) dst[i] = (float4)(v);
}

__kernel void copy_bw(__global const float4 *src, __global float4 *dst, long n4) {
  size_t gid = get_global_id(0), gs = get_global_size(0);
  for (long i = gid; i < n4; i += gs) dst[i] = src[i];
}

/* Chunked variants: each work-item walks its own contiguous range (the
 * pattern CPU devices prefer; GPUs prefer the interleaved one above). */
__kernel void read_chunk(__global const float4 *src, __global float *dst, long n4) {
  size_t gid = get_global_id(0), gs = get_global_size(0);
  long per = (n4 + (long)gs - 1) / (long)gs, lo = (long)gid * per, hi = min(lo + per, n4);
  float4 acc = (float4)(0.0f);
  for (long i = lo; i < hi; i++) acc += src[i];
  dst[gid] = acc.x + acc.y + acc.z + acc.w;
}

__kernel void write_chunk(__global float4 *dst, long n4, float v) {
  size_t gid = get_global_id(0), gs = get_global_size(0);
  long per = (n4 + (long)gs - 1) / (long)gs, lo = (long)gid * per, hi = min(lo + per, n4);
  for (long i = lo; i < hi; i++) dst[i] = (float4)(v);
}

__kernel void copy_chunk(__global const float4 *src, __global float4 *dst, long n4) {
  size_t gid = get_global_id(0), gs = get_global_size(0);
  long per = (n4 + (long)gs - 1) / (long)gs, lo = (long)gid * per, hi = min(lo + per, n4);
  for (long i = lo; i < hi; i++) dst[i] = src[i];
}

/* Local memory: each item writes and reads back its group's tile `reps` times. */
__kernel void local_bw(__global float *dst, int reps) {
  __local float4 tile[256];
  size_t l = get_local_id(0), ls = get_local_size(0);
  float4 acc = (float4)(0.0f);
  tile[l] = (float4)((float)l);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int r = 0; r < reps; r++) {
    acc += tile[(l + (size_t)r) % ls];
    tile[l] = acc;
  }
  dst[get_global_id(0)] = acc.x + acc.y + acc.z + acc.w;
}

/* Arithmetic peak: CHAINS independent chains of multiply-adds on vectors of
 * width N (flops_N, one kernel per width in one program), `iters` rounds;
 * flops = 2 * N * CHAINS * iters per work-item. */
inline float hsum_1(float s) { return s; }
inline float hsum_2(float2 s) { return s.x + s.y; }
inline float hsum_4(float4 s) { return hsum_2(s.lo) + hsum_2(s.hi); }
inline float hsum_8(float8 s) { return hsum_4(s.lo) + hsum_4(s.hi); }
inline float hsum_16(float16 s) { return hsum_8(s.lo) + hsum_8(s.hi); }
/* CH chains of OP(x, a, b) on vectors T of width N: kernel NAME_N. */
#define CHAIN_KERNEL(NAME, N, T, CH, OP)                                                        \
  __kernel void NAME##_##N(__global float *dst, int iters, float a, float b) {                  \
    T x[CH];                                                                                    \
    for (int c = 0; c < CH; c++) x[c] = (T)((float)(get_global_id(0) + (size_t)c) * 1e-7f);     \
    for (int i = 0; i < iters; i++) {                                                           \
      _Pragma("unroll") for (int c = 0; c < CH; c++) x[c] = OP(x[c], (T)(a), (T)(b));           \
    }                                                                                           \
    T s = x[0];                                                                                 \
    for (int c = 1; c < CH; c++) s += x[c];                                                     \
    dst[get_global_id(0)] = hsum_##N(s);                                                        \
  }
CHAIN_KERNEL(flops, 1, float, CHAINS, mad)
CHAIN_KERNEL(flops, 2, float2, CHAINS, mad)
CHAIN_KERNEL(flops, 4, float4, CHAINS, mad)
CHAIN_KERNEL(flops, 8, float8, CHAINS, mad)
CHAIN_KERNEL(flops, 16, float16, CHAINS, mad)

/* The device's arithmetic peak: FMA_CHAINS chains of fused multiply-adds
 * (fma, which POCL emits as one instruction where mad became a multiply and
 * an add; twice CHAINS, enough to cover an FMA unit's latency on CPUs with two
 * of them: on a 2-core AVX-512 EPYC flops_16 read 334-362 GFLOP/s and 16 fma
 * chains 520, the rate ONNX Runtime's kernels reach there). Only flops_peak
 * takes it: the cost model's per-width figures stay the mad ones its priors
 * were fitted on. */
#define FMA_CHAINS 16
CHAIN_KERNEL(fma, 1, float, FMA_CHAINS, fma)
CHAIN_KERNEL(fma, 4, float4, FMA_CHAINS, fma)
CHAIN_KERNEL(fma, 16, float16, FMA_CHAINS, fma)

__kernel void empty(void) {}

/* Layout change by index arithmetic, the way convolutions build their GEMM
 * operands: im2col of a 3x3 window (padding 1) over a C x H x W input into
 * panels of 16 columns, col[p / 16][k][p % 16] for k = c*9 + tap and p the
 * output pixel; one work-item per (k, output row). */
__kernel void gather_panel(__global const float *x, __global float *col, int C, int H, int W) {
  const int k = get_global_id(0), oh = get_global_id(1), K = C * 9;
  if (k >= K || oh >= H) return;
  const int ic = k / 9, t = k % 9, kh = t / 3, kw = t % 3, ih = oh - 1 + kh;
  __global float *cb = col + (long)k * 16;
  for (int ow = 0; ow < W; ow++) {
    const int iw = ow - 1 + kw, p = oh * W + ow;
    const float v = ih >= 0 && ih < H && iw >= 0 && iw < W ? x[((long)ic * H + ih) * W + iw] : 0.0f;
    cb[(long)(p / 16) * K * 16 + p % 16] = v;
  }
}
