/* half_io.cl: one element's load and store in fp16 storage (T_DTYPE 10),
 * computing in float. runtime/cl.c prepends this file to every program
 * whose source names kiln_ldh or kiln_svh (the kernel files' LD / SV under
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
#endif
