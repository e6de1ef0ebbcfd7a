/* half_io.cl: loads and stores in fp16 storage (T_DTYPE 10), computing in
 * float: one element (kiln_ldh, kiln_svh) and vectors (kiln_vldhN, kiln_vsthN). runtime/cl.c prepends this file to every program
 * whose source names one of them (the kernel files' LD / SV and vector loads under
 * T_DTYPE 10, generated fused and epilogue code), so there is one
 * definition.
 *
 * Both go through the 4-wide conversions: POCL (3.1, x86) converts scalar
 * (and 2- and 3-wide) vload_half / vstore_half(_rte) in software, a dozen
 * integer operations an element and a branch per store, while its 4-, 8-
 * and 16-wide ones compile to F16C's vcvtph2ps / vcvtps2ph; other
 * compilers turn the private vector into a scalar conversion. Global
 * memory only (local and private arrays hold float). */
#ifndef KILN_HALF_IO
#define KILN_HALF_IO 1
inline float kiln_ldh(__global const half *p, long i) {
  ushort4 u = (ushort4)(((__global const ushort *)p)[i], 0, 0, 0);
  return vload_half4(0, (const half *)&u).s0;
}
inline void kiln_svh(__global half *p, long i, float v) {
  ushort4 u;
  vstore_half4_rte((float4)(v, 0.0f, 0.0f, 0.0f), 0, (half *)&u);
  ((__global ushort *)p)[i] = u.s0;
}
/* Vectors of n halfs at p + i*n (the signature of vload_halfn /
 * vstore_halfn_rte), global memory. The spec asks only 2-byte alignment of
 * vload_halfn's address, but POCL 3.1 compiles vload_half8 to an aligned
 * 16-byte load (vmovdqa): a fault whenever p + i*n is off a 2n-byte
 * boundary (an fp16 plane of 33x33 after the first, a row at an odd
 * offset). So the bits are moved as ushorts (vloadn / vstoren need only
 * 2-byte alignment) and converted in private memory, where F16C does it;
 * 2-wide through the 4-wide conversion (POCL's 2-wide one is software). */
#define KILN_VH(n)                                                                   \
  inline float##n kiln_vldh##n(long i, __global const half *p) {                   \
    ushort##n u = vload##n(i, (__global const ushort *)p);                         \
    return vload_half##n(0, (const half *)&u);                                     \
  }                                                                                \
  inline void kiln_vsth##n(float##n v, long i, __global half *p) {                 \
    ushort##n u;                                                                   \
    vstore_half##n##_rte(v, 0, (half *)&u);                                        \
    vstore##n(u, i, (__global ushort *)p);                                         \
  }
KILN_VH(4)
KILN_VH(8)
KILN_VH(16)
#undef KILN_VH
inline float2 kiln_vldh2(long i, __global const half *p) {
  ushort4 u = (ushort4)(vload2(i, (__global const ushort *)p), (ushort2)(0, 0));
  return vload_half4(0, (const half *)&u).s01;
}
inline void kiln_vsth2(float2 v, long i, __global half *p) {
  ushort4 u;
  vstore_half4_rte((float4)(v, 0.0f, 0.0f), 0, (half *)&u);
  vstore2(u.s01, i, (__global ushort *)p);
}
#endif
