/* fastmath.cl: KMAD (below), and exp for the logistic function and erf, on float and float
 * vectors: kiln_exp1(x), kiln_exp2/4/8/16, kiln_erf1 ... kiln_erf16 (one
 * name per width: overloading is a clang extension not every OpenCL
 * compiler has). runtime/cl.c prepends this file to every program whose
 * source names kiln_exp, kiln_erf or KMAD, as it does half_io.cl.
 *
 * Why: SiLU (x / (1 + exp(-x))) after a GroupNormalization or a convolution
 * costs POCL about a cycle an element on this CPU, as much as reading and
 * writing the element: vae_decoder_16's GroupNormalization + SiLU kernels
 * ran at half the speed of the same kernels without the activation. This
 * exp has no branch and no call: n = round(x log2 e) by adding 1.5 * 2^23
 * (the rounding of the addition, no rint: POCL's vector rint is a call a
 * lane, what made an earlier polynomial exp slower than POCL's own),
 * r = x - n ln 2 in two parts (Cody-Waite), e^r by a polynomial of degree
 * 5 fitted for least maximum relative error on |r| <= ln 2 / 2 (1.5e-7 in
 * exact arithmetic; the Taylor polynomial of degree 7 it replaced took two
 * more FMAs, 8% of a SiLU kernel's time: 84 -> 77 us on 401k elements,
 * alternated), and 2^n added to the result's exponent bits. Relative error
 * in float at most 2.2e-7 on [-87, 88] (every 0.0001, against double exp),
 * 2.7 ulp; OpenCL's exp allows 3.
 *
 * For the logistic function only: x is clamped to [-87, 88], so large
 * arguments give 1.6e38 instead of infinity and small ones 1.6e-38 instead
 * of 0 (1 / (1 + e) is then 0 or 1 to float precision); NaN stays NaN. */
#ifndef KILN_FASTMATH
#define KILN_FASTMATH 1
/* KMAD(a, b, c) = a * b + c for the inner loops: fma() where the host
 * defines KILN_FMA (the device reports CL_FP_FMA; runtime/cl.c adds it to
 * every program that names KILN_FMA, as this file does), else mad(). POCL
 * compiles mad() to a multiply and an add, up to half the rate of an FMA
 * unit, and defines no FP_FAST_FMAF. */
#ifdef KILN_FMA
#define KMAD(a, b, c) fma((a), (b), (c))
#else
#define KMAD(a, b, c) mad((a), (b), (c))
#endif
#define KILN_EXP_DEF(name, F, I)                                                       \
  inline F name(F x) {                                                                 \
    const F c = fmin(fmax(x, (F)(-87.0f)), (F)(88.0f));                                \
    const F big = fma(c, (F)(1.44269504f), (F)(12582912.0f)); /* 1.5 * 2^23 + n */     \
    const F n = big - (F)(12582912.0f);                                                \
    const F r = fma(n, (F)(-1.42860677e-6f), fma(n, (F)(-0.693145752f), c));          \
    F p = (F)(0.00829185918f);                                                         \
    p = fma(p, r, (F)(0.0419150367f));                                                 \
    p = fma(p, r, (F)(0.166676611f));                                                  \
    p = fma(p, r, (F)(0.499989003f));                                                  \
    p = fma(p, r, (F)(0.999999642f));                                                  \
    p = fma(p, r, (F)(1.00000012f));                                                   \
    const F e = as_##F(as_##I(p) + ((as_##I(big) - (I)(0x4B400000)) << 23));          \
    return select(e, x, isnan(x));                                                     \
  }
KILN_EXP_DEF(kiln_exp1, float, int)
KILN_EXP_DEF(kiln_exp2, float2, int2)
KILN_EXP_DEF(kiln_exp4, float4, int4)
KILN_EXP_DEF(kiln_exp8, float8, int8)
KILN_EXP_DEF(kiln_exp16, float16, int16)
#endif

/* kiln_erf1/2/4/8/16: erf (GELU's) without branches. Below 0.5 the Taylor
 * series to x^11 (relative error below 3e-8); above, 1 - erfc by the
 * Chebyshev fit erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2) (Numerical
 * Recipes; fractional error of erfc below 1.2e-7), both evaluated and one
 * selected, so that vectors of them stay vectors (POCL's erf() took ~60 ns
 * an element: 25 ms of a 128x3072 MatMul's epilogue that computes in 3 ms
 * without it). exp's clamp is harmless here: its argument is below -0.4
 * and erfc's below 1.6e-38 is 0 to float precision. */
#ifndef KILN_ERF
#define KILN_ERF 1
#define KILN_ERF_DEF(name, expn, F)                                                                                   \
  inline F name(F x) {                                                                                              \
    const F z = fabs(x), z2 = x * x, t = (F)(1.0f) / ((F)(1.0f) + (F)(0.5f) * z);                                  \
    const F c = t * expn(-z2 - (F)(1.26551223f) +                                                                   \
                          t * ((F)(1.00002368f) +                                                                   \
                               t * ((F)(0.37409196f) +                                                              \
                                    t * ((F)(0.09678418f) +                                                         \
                                         t * ((F)(-0.18628806f) +                                                   \
                                              t * ((F)(0.27886807f) +                                               \
                                                   t * ((F)(-1.13520398f) +                                         \
                                                        t * ((F)(1.48851587f) +                                     \
                                                             t * ((F)(-0.82215223f) + t * (F)(0.17087277f))))))))));  \
    const F s = (F)(1.12837917f) * x *                                                                              \
                ((F)(1.0f) +                                                                                        \
                 z2 * ((F)(-0.333333333f) +                                                                         \
                       z2 * ((F)(0.1f) + z2 * ((F)(-0.0238095238f) + z2 * ((F)(0.00462962963f) + z2 * (F)(-0.000757575758f)))))); \
    return select(copysign((F)(1.0f) - c, x), s, z < (F)(0.5f));                                                    \
  }
KILN_ERF_DEF(kiln_erf1, kiln_exp1, float)
KILN_ERF_DEF(kiln_erf2, kiln_exp2, float2)
KILN_ERF_DEF(kiln_erf4, kiln_exp4, float4)
KILN_ERF_DEF(kiln_erf8, kiln_exp8, float8)
KILN_ERF_DEF(kiln_erf16, kiln_exp16, float16)
#endif
