/* se_gate.cl: a squeeze-excite gate in one kernel (the internal op
 * KilnSEGate, runtime/ops/se_gate.c):
 *
 *   s[n, c] = sigmoid(b2[c] + sum_r W2[c, r] * act(b1[r] + sum_k W1[r, k] * mean_k))
 *
 * mean_k the average of x's channel k over its S pixels, act Relu or SiLU.
 * Where a model ran GlobalAveragePool, two 1x1 convolutions and their
 * activations as three launches on [N, C, 1, 1] values, it runs one.
 *
 * One work-group of SE_WG work-items per image: the channel means into
 * local memory (a work-item per channel, or per block of 16 channels of an
 * NCHW16c input with -DSE_B16, each pixel one vector), a barrier, the
 * hidden values (a work-item per row of W1, 16 products a vector when C is a
 * multiple of 16), a barrier, the gate (a work-item per 16 channels, W2
 * transposed on the host to [Cr][C] so that 16 channels' weights of one
 * hidden value are one vector). Float32 only.
 * Options: -DSE_WG (work-group size), -DSE_CMAX, -DSE_RMAX (local arrays,
 * at least C and Cr), -DSE_SILU (act: SiLU, else Relu), -DSE_B16.
 * grid: N * SE_WG, work-groups of SE_WG. */

__kernel __attribute__((reqd_work_group_size(SE_WG, 1, 1)))
void se_gate(__global const float *x, __global const float *w1, __global const float *b1, __global const float *w2t,
             __global const float *b2, __global float *s, const long S, const int C, const int Cr, const int flags) {
  __local float mean[SE_CMAX];
  __local float hid[SE_RMAX];
  const int l = get_local_id(0), n = get_group_id(0);
  __global const float *xn = x + (long)n * C * S;
  const float inv = 1.0f / (float)S;
#ifdef SE_B16
  for (int b = l; b < C / 16; b += SE_WG) {
    __global const float *xb = xn + (long)b * S * 16;
    float16 a0 = (float16)0, a1 = (float16)0;
    long j = 0;
    for (; j + 2 <= S; j += 2) {
      a0 += vload16(j, xb);
      a1 += vload16(j + 1, xb);
    }
    if (j < S) a0 += vload16(j, xb);
    vstore16((a0 + a1) * inv, b, mean);
  }
#else
  for (int c = l; c < C; c += SE_WG) {
    __global const float *xc = xn + (long)c * S;
    float4 a = (float4)0;
    long j = 0;
    for (; j + 4 <= S; j += 4) a += vload4(0, xc + j);
    float t = (a.s0 + a.s1) + (a.s2 + a.s3);
    for (; j < S; j++) t += xc[j];
    mean[c] = t * inv;
  }
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int r = l; r < Cr; r += SE_WG) {
    __global const float *wr = w1 + (long)r * C;
    float16 a16 = (float16)0;
    int k = 0;
    if (C % 16 == 0)
      for (; k < C; k += 16) a16 = fma(vload16(0, wr + k), vload16(0, mean + k), a16);
    float8 a8 = a16.lo + a16.hi;
    float4 a4 = a8.lo + a8.hi;
    float a = ((flags & 1) ? b1[r] : 0.0f) + ((a4.s0 + a4.s1) + (a4.s2 + a4.s3));
    for (; k < C; k++) a = fma(wr[k], mean[k], a);
#ifdef SE_SILU
    hid[r] = a / (1.0f + exp(-a));
#else
    hid[r] = a < 0.0f ? 0.0f : a; /* NaN kept, as Relu */
#endif
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  __global float *sn = s + (long)n * C;
  if (C % 16 == 0) {
    for (int cb = l; cb < C / 16; cb += SE_WG) {
      float16 a = (flags & 2) ? vload16(cb, b2) : (float16)0;
      for (int r = 0; r < Cr; r++) a = fma(vload16(cb, w2t + (long)r * C), (float16)(hid[r]), a);
      vstore16(1.0f / (1.0f + exp(-a)), cb, sn);
    }
  } else {
    for (int c = l; c < C; c += SE_WG) {
      float a = (flags & 2) ? b2[c] : 0.0f;
      for (int r = 0; r < Cr; r++) a = fma(w2t[(long)r * C + c], hid[r], a);
      sn[c] = 1.0f / (1.0f + exp(-a));
    }
  }
}
