/* vec_io.cl: vectors of global memory read and written as one access, at
 * any element alignment. runtime/cl.c prepends this file to every program
 * whose source names GLDU or GSTU, as it does half_io.cl.
 *
 *   GLDU(N, i, p)     vector i of N-element vectors of T at p (p a __global T
 *                     pointer, N 2, 4, 8 or 16): vloadN(i, p)
 *   GSTU(N, v, i, p)  vstoreN(v, i, p)
 *
 * Why: POCL's vload16/vstore16 (and vload3-style odd pieces) are built from
 * narrower moves: a float16 store became an xmm store and two extracts, a
 * load an xmm, an xmm and a ymm load. A dereference of a vector type whose
 * alignment is lowered to the element's (a typedef with aligned(sizeof(t)),
 * which clang honours) is one unaligned move per register. conv_pw, conv_dwr
 * and norm_rows measured 10-25% faster with them on a 2-core AVX-512 POCL.
 * T is the including file's element type (a single-token OpenCL type name,
 * as runtime/cl.c's kiln_cl_type gives). */
#define KILN_VU_(t, n) kiln_vu_##t##n
#define KILN_VU(t, n) KILN_VU_(t, n)
#define KILN_VU_DEF(t)                                                   \
  typedef t##2 kiln_vu_##t##2 __attribute__((aligned(sizeof(t))));      \
  typedef t##4 kiln_vu_##t##4 __attribute__((aligned(sizeof(t))));      \
  typedef t##8 kiln_vu_##t##8 __attribute__((aligned(sizeof(t))));      \
  typedef t##16 kiln_vu_##t##16 __attribute__((aligned(sizeof(t))));
KILN_VU_DEF(float)
KILN_VU_DEF(int)
KILN_VU_DEF(uint)
KILN_VU_DEF(long)
KILN_VU_DEF(ulong)
KILN_VU_DEF(short)
KILN_VU_DEF(ushort)
KILN_VU_DEF(char)
KILN_VU_DEF(uchar)
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
KILN_VU_DEF(double)
#endif
#define GLDU(N, i, p) (*(__global const KILN_VU(T, N) *)((p) + (long)(i) * (N)))
#define GSTU(N, v, i, p) (*(__global KILN_VU(T, N) *)((p) + (long)(i) * (N)) = (v))
