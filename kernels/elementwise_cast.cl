/* elementwise_cast.cl: ONNX Cast / CastLike between numeric types.
 * Built once per source type (-DT=<storage type> -DT_DTYPE=<onnx dtype>,
 * kiln_cl_type_opts); one kernel per destination dtype, named
 * ew_cast_to_<onnx dtype number>. float16 is stored as half and converted
 * through kiln_ldh / kiln_svh (half_io.cl), bfloat16 as ushort bits (round to
 * nearest even); bool destinations get x != 0. Float to
 * integer conversions truncate toward zero (out-of-range values are undefined,
 * as in ONNX). One work-item per element. */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#if T_DTYPE == 10
typedef float CT;
#define ST half
#define LD(p, i) kiln_ldh((p), (i))
#elif T_DTYPE == 16
typedef float CT;
#define ST ushort
#define LD(p, i) as_float((uint)(p)[i] << 16)
#else
typedef T CT;
#define ST T
#define LD(p, i) ((p)[i])
#endif
#if T_IS_DOUBLE
#define HX(x) (x) /* double rounds to half directly */
#else
#define HX(x) ((float)(x))
#endif

/* float to bfloat16 bits, rounding to nearest even (NaN stays NaN) */
inline ushort ew_f2bf(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)0x7fc0;
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#define EW_CAST(dt, TO, conv)                                                   \
  __kernel void ew_cast_to_##dt(__global const ST *px, __global TO *py, long n) { \
    long i = get_global_id(0);                                                  \
    if (i >= n) return;                                                         \
    CT x = LD(px, i);                                                           \
    conv;                                                                       \
  }

EW_CAST(1, float, py[i] = (float)x)
EW_CAST(2, uchar, py[i] = (uchar)x)
EW_CAST(3, char, py[i] = (char)x)
EW_CAST(4, ushort, py[i] = (ushort)x)
EW_CAST(5, short, py[i] = (short)x)
EW_CAST(6, int, py[i] = (int)x)
EW_CAST(7, long, py[i] = (long)x)
EW_CAST(9, uchar, py[i] = (uchar)(x != 0))
#if T_IS_DOUBLE
EW_CAST(10, half, vstore_half_rte(HX(x), i, py))
#else
EW_CAST(10, half, kiln_svh(py, i, HX(x)))
#endif
EW_CAST(16, ushort, py[i] = ew_f2bf((float)x))
EW_CAST(12, uint, py[i] = (uint)x)
EW_CAST(13, ulong, py[i] = (ulong)x)
#ifdef cl_khr_fp64
EW_CAST(11, double, py[i] = (double)x)
#endif
