/* ops/elementwise.c: the ONNX elementwise ops: broadcasting binary ops
 * (Add Sub Mul Div Pow Mod BitShift PRelu And Or Xor), variadic ops (Sum Mean
 * Max Min), comparisons, Where, Clip, Cast/CastLike and the unary math and
 * activation ops.
 *
 * Every op is one row of EW_OPS below: its kind (which decides shape
 * inference, reference and launch), its kernel in kernels/elementwise.cl (or
 * elementwise_cast.cl) and the element types the device handles. One
 * broadcasting scheme serves all multi-input kinds: each input is viewed with
 * element strides over the output's shape (0 on broadcast axes), size-1 axes
 * are dropped and axes contiguous in every input are merged; when everything
 * collapses to one contiguous axis the kernel takes its flat path. */
#include "kiln_internal.h"
#include "family.h"
#include <float.h>
#include <math.h>

enum { K_UNARY, K_BINARY, K_VARIADIC, K_COMPARE, K_POW, K_WHERE, K_CLIP, K_CAST };

/* element type masks (bit per kiln_dtype) */
#define DT(x) (1u << KILN_DT_##x)
#define M_F (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define M_SI (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define M_UI (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define M_B DT(BOOL)
#define M_NUM (M_F | M_SI | M_UI)

/* name, kind, kernel, device element types (of input 0; of X for Where) */
#define EW_OPS(X)                                     \
  X(Add, K_BINARY, "ew_add", M_NUM)                   \
  X(Sub, K_BINARY, "ew_sub", M_NUM)                   \
  X(Mul, K_BINARY, "ew_mul", M_NUM)                   \
  X(Div, K_BINARY, "ew_div", M_NUM)                   \
  X(Mod, K_BINARY, "ew_mod", M_NUM)                   \
  X(BitShift, K_BINARY, "ew_shl", M_UI)               \
  X(PRelu, K_BINARY, "ew_prelu", M_NUM)               \
  X(And, K_BINARY, "ew_and", M_B)                     \
  X(Or, K_BINARY, "ew_or", M_B)                       \
  X(Xor, K_BINARY, "ew_xor", M_B)                     \
  X(Pow, K_POW, "ew_pow_e", M_NUM)                    \
  X(Max, K_VARIADIC, "ew_max", M_NUM)                 \
  X(Min, K_VARIADIC, "ew_min", M_NUM)                 \
  X(Sum, K_VARIADIC, "ew_add", M_NUM)                 \
  X(Mean, K_VARIADIC, "ew_add", M_F)                  \
  X(Equal, K_COMPARE, "ew_equal", M_NUM | M_B)        \
  X(Less, K_COMPARE, "ew_less", M_NUM)                \
  X(Greater, K_COMPARE, "ew_greater", M_NUM)          \
  X(LessOrEqual, K_COMPARE, "ew_less_equal", M_NUM)   \
  X(GreaterOrEqual, K_COMPARE, "ew_greater_equal", M_NUM) \
  X(Where, K_WHERE, "ew_where", M_NUM | M_B)          \
  X(Clip, K_CLIP, "ew_clip", M_NUM)                   \
  X(Cast, K_CAST, "ew_cast_to_", M_NUM | M_B)         \
  X(CastLike, K_CAST, "ew_cast_to_", M_NUM | M_B)     \
  X(Not, K_UNARY, "ew_not", M_B)                      \
  X(Abs, K_UNARY, "ew_abs", M_NUM)                    \
  X(Neg, K_UNARY, "ew_neg", M_F | M_SI)               \
  X(Sign, K_UNARY, "ew_sign", M_NUM)                  \
  X(Relu, K_UNARY, "ew_relu", M_F | M_SI)             \
  X(Shrink, K_UNARY, "ew_shrink", M_NUM)              \
  X(Exp, K_UNARY, "ew_exp", M_F)                      \
  X(Log, K_UNARY, "ew_log", M_F)                      \
  X(Sqrt, K_UNARY, "ew_sqrt", M_F)                    \
  X(Reciprocal, K_UNARY, "ew_reciprocal", M_F)        \
  X(Floor, K_UNARY, "ew_floor", M_F)                  \
  X(Ceil, K_UNARY, "ew_ceil", M_F)                    \
  X(Round, K_UNARY, "ew_round", M_F)                  \
  X(Erf, K_UNARY, "ew_erf", M_F)                      \
  X(Sin, K_UNARY, "ew_sin", M_F)                      \
  X(Cos, K_UNARY, "ew_cos", M_F)                      \
  X(Tan, K_UNARY, "ew_tan", M_F)                      \
  X(Asin, K_UNARY, "ew_asin", M_F)                    \
  X(Acos, K_UNARY, "ew_acos", M_F)                    \
  X(Atan, K_UNARY, "ew_atan", M_F)                    \
  X(Sinh, K_UNARY, "ew_sinh", M_F)                    \
  X(Cosh, K_UNARY, "ew_cosh", M_F)                    \
  X(Asinh, K_UNARY, "ew_asinh", M_F)                  \
  X(Acosh, K_UNARY, "ew_acosh", M_F)                  \
  X(Atanh, K_UNARY, "ew_atanh", M_F)                  \
  X(IsNaN, K_UNARY, "ew_isnan", M_F)                  \
  X(IsInf, K_UNARY, "ew_isinf", M_F)                  \
  X(Tanh, K_UNARY, "ew_tanh", M_F)                    \
  X(Sigmoid, K_UNARY, "ew_sigmoid", M_F)              \
  X(LeakyRelu, K_UNARY, "ew_leaky_relu", M_F)         \
  X(Elu, K_UNARY, "ew_elu", M_F)                      \
  X(Selu, K_UNARY, "ew_selu", M_F)                    \
  X(Celu, K_UNARY, "ew_celu", M_F)                    \
  X(HardSigmoid, K_UNARY, "ew_hard_sigmoid", M_F)     \
  X(HardSwish, K_UNARY, "ew_hard_swish", M_F)         \
  X(Softplus, K_UNARY, "ew_softplus", M_F)            \
  X(Softsign, K_UNARY, "ew_softsign", M_F)            \
  X(ThresholdedRelu, K_UNARY, "ew_thresholded_relu", M_F) \
  X(Mish, K_UNARY, "ew_mish", M_F)

enum {
#define XX(name, kind, kern, types) OP_##name,
  EW_OPS(XX)
#undef XX
  OP_COUNT
};

typedef struct ew_op {
  const char *name;   /* ONNX op type */
  int kind;           /* K_* */
  const char *kernel; /* kernel (prefix for Pow and Cast) */
  unsigned types;     /* device element types, bit per kiln_dtype */
} ew_op;

static const ew_op ew_ops[] = {
#define XX(name, kind, kern, types) [OP_##name] = {#name, kind, kern, types},
  EW_OPS(XX)
#undef XX
};
_Static_assert(sizeof ew_ops / sizeof ew_ops[0] == OP_COUNT, "op table out of sync");

/* longs of broadcast metadata per launch: dims[8] and strides of 3 inputs */
#define EW_META (4 * KILN_MAX_RANK)

static int ew_find(const kiln_node *n) {
  for (int i = 0; i < OP_COUNT; i++)
    if (!strcmp(ew_ops[i].name, n->op_type)) return i;
  return -1;
}

/* Attribute parameters of the unary ops (kernel arguments alpha, beta). */
static void ew_params(const kiln_node *n, int op, float *alpha, float *beta) {
  *alpha = 0;
  *beta = 0;
  switch (op) {
  case OP_LeakyRelu: *alpha = kiln_attr_float(n, "alpha", 0.01f); break;
  case OP_Elu: case OP_Celu: case OP_ThresholdedRelu: *alpha = kiln_attr_float(n, "alpha", 1.0f); break;
  case OP_Selu:
    *alpha = kiln_attr_float(n, "alpha", 1.67326319217681884765625f);
    *beta = kiln_attr_float(n, "gamma", 1.05070102214813232421875f);
    break;
  case OP_HardSigmoid: *alpha = kiln_attr_float(n, "alpha", 0.2f); *beta = kiln_attr_float(n, "beta", 0.5f); break;
  case OP_Shrink: *alpha = kiln_attr_float(n, "lambd", 0.5f); *beta = kiln_attr_float(n, "bias", 0.0f); break;
  case OP_IsInf:
    *alpha = (float)kiln_attr_int(n, "detect_positive", 1);
    *beta = (float)kiln_attr_int(n, "detect_negative", 1);
    break;
  }
}

/* Number of leading inputs that take part in broadcasting. */
static int ew_nbcast(const kiln_node *n, int kind) {
  switch (kind) {
  case K_UNARY: case K_CLIP: case K_CAST: return 1;
  case K_WHERE: return 3;
  case K_VARIADIC: return n->nin;
  default: return 2;
  }
}

/* The shape input i is broadcast with. Before opset 7, binary ops with
 * broadcast=1 align B at `axis` of A, and PRelu applies a [C] slope per
 * channel (axis 1); otherwise the input's own shape (numpy rules). */
static int ew_vshape(kiln_graph *g, const kiln_node *n, int op, int i, int *rank, int64_t *dims, kiln_error *err) {
  kiln_value *v = kiln_in(g, n, i), *a = kiln_in(g, n, 0);
  *rank = v->rank;
  for (int k = 0; k < v->rank; k++) dims[k] = v->dims[k];
  if (n->opset >= 7 || i != 1) return 0;
  if (op == OP_PRelu) {
    if (a->rank >= 2 && v->rank == 1 && v->dims[0] == a->dims[1] && v->dims[0] != 1) {
      *rank = a->rank;
      for (int k = 0; k < a->rank; k++) dims[k] = k == 1 ? v->dims[0] : 1;
    }
    return 0;
  }
  if (kiln_attr_int(n, "broadcast", 0) && kiln_attr_find(n, "axis")) {
    int64_t ax = kiln_attr_int(n, "axis", 0);
    if (ax < 0) ax += a->rank;
    if (ax < 0 || ax + v->rank > a->rank) return kiln__err(err, KILN_ESHAPE, "broadcast axis %lld does not fit '%s' into '%s'", (long long)kiln_attr_int(n, "axis", 0), v->name, a->name);
    *rank = a->rank;
    for (int k = 0; k < a->rank; k++) dims[k] = (k >= ax && k < ax + v->rank) ? v->dims[k - ax] : 1;
  }
  return 0;
}

/* Element strides of a row-major shape (rank vr) seen from an output of rank
 * r (vr <= r, right-aligned): 0 on missing and size-1 axes. */
static void ew_strides(int vr, const int64_t *vd, int r, int64_t *st) {
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) {
    int k = i - (r - vr);
    if (k < 0 || vd[k] == 1) st[i] = 0;
    else { st[i] = s; s *= vd[k]; }
  }
}

/* Strides of every broadcast input over the output y (st[i][axis]). */
static int ew_input_strides(kiln_graph *g, const kiln_node *n, int op, const kiln_value *y, int nb, int64_t (*st)[KILN_MAX_RANK], kiln_error *err) {
  for (int i = 0; i < nb; i++) {
    int r;
    int64_t d[KILN_MAX_RANK];
    int rc = ew_vshape(g, n, op, i, &r, d, err);
    if (rc) return rc;
    ew_strides(r, d, y->rank, st[i]);
  }
  return 0;
}

/* ---- shape inference ---------------------------------------------------- */

static int ew_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int op = ew_find(n);
  if (op < 0) return kiln__err(err, KILN_EINTERNAL, "op %s is not elementwise", n->op_type);
  const ew_op *o = &ew_ops[op];
  int nb = ew_nbcast(n, o->kind);
  int need = o->kind == K_WHERE ? 3 : (o->kind == K_UNARY || o->kind == K_CLIP || o->kind == K_VARIADIC || op == OP_Cast) ? 1 : 2;
  if (n->nin < need) return kiln__err(err, KILN_EINVAL, "%s needs %d input%s, got %d", o->name, need, need > 1 ? "s" : "", n->nin);
  for (int i = 0; i < nb; i++)
    if (!kiln_has_in(n, i)) return kiln__err(err, KILN_EINVAL, "input %d is missing", i);
  kiln_value *x = kiln_in(g, n, 0);
  int dt = o->kind == K_WHERE ? kiln_in(g, n, 1)->dtype : x->dtype;
  if (o->kind == K_WHERE && x->dtype != KILN_DT_BOOL) return kiln__err(err, KILN_ESHAPE, "condition '%s' is %s, expected bool", x->name, kiln_dtype_name(x->dtype));
  /* inputs that must share the element type */
  if (o->kind == K_BINARY || o->kind == K_VARIADIC || o->kind == K_COMPARE || o->kind == K_WHERE || o->kind == K_CLIP) {
    for (int i = o->kind == K_WHERE ? 1 : 0; i < n->nin; i++) {
      kiln_value *v = kiln_in(g, n, i);
      if (v && v->dtype != dt) return kiln__err(err, KILN_ESHAPE, "input types differ ('%s' is %s, expected %s)", v->name, kiln_dtype_name(v->dtype), kiln_dtype_name(dt));
    }
  }
  if (o->kind == K_CLIP && n->opset >= 11)
    for (int i = 1; i < 3; i++) {
      kiln_value *v = kiln_in(g, n, i);
      if (v && kiln_value_numel(v) != 1) return kiln__err(err, KILN_ESHAPE, "Clip bound '%s' must be a scalar", v->name);
    }
  int r = 0;
  int64_t d[KILN_MAX_RANK];
  for (int i = 0; i < nb; i++) {
    int vr;
    int64_t vd[KILN_MAX_RANK];
    int rc = ew_vshape(g, n, op, i, &vr, vd, err);
    if (rc) return rc;
    if (i == 0) {
      r = vr;
      memcpy(d, vd, sizeof(int64_t) * (size_t)vr);
    } else {
      int64_t t[KILN_MAX_RANK];
      if (kiln_broadcast_shape(r, d, vr, vd, &r, t)) return kiln__err(err, KILN_ESHAPE, "shape of '%s' does not broadcast with the other inputs", kiln_in(g, n, i)->name);
      memcpy(d, t, sizeof t);
    }
  }
  int odt = dt;
  if (o->kind == K_COMPARE || op == OP_IsNaN || op == OP_IsInf) odt = KILN_DT_BOOL;
  if (op == OP_Cast) odt = (int)kiln_attr_int(n, "to", 0);
  if (op == OP_CastLike) {
    if (!kiln_has_in(n, 1)) return kiln__err(err, KILN_EINVAL, "CastLike needs two inputs");
    odt = kiln_in(g, n, 1)->dtype;
  }
  if (o->kind == K_CAST && (kiln_dtype_size(odt) == 0 || kiln_dtype_size(dt) == 0))
    return kiln__err(err, KILN_EUNSUPPORTED, "%s from %s to %s is not supported", o->name, kiln_dtype_name(dt), kiln_dtype_name(odt));
  kiln_set_out(g, n, 0, odt, r, d);
  return 0;
}

/* ---- CPU reference ------------------------------------------------------ */

static bool is_unsigned(int dt) { return dt == KILN_DT_UINT8 || dt == KILN_DT_UINT16 || dt == KILN_DT_UINT32 || dt == KILN_DT_UINT64; }
static int dt_bits(int dt) { return (int)kiln_dtype_size(dt) * 8; }

/* v rounded to the precision of float dtype dt (numpy keeps each partial
 * result of a variadic op in the element type). */
static double ref_round(int dt, double v) {
  if (dt == KILN_DT_FLOAT) return (float)v;
  if (dt == KILN_DT_FLOAT16 || dt == KILN_DT_BFLOAT16) {
    uint16_t h;
    kiln_store_f(&h, dt, 0, v);
    return kiln_load_f(&h, dt, 0);
  }
  return v;
}

/* a ** e on 64-bit integers (two's complement wrap); e < 0 truncates 1/a^-e. */
static uint64_t ref_ipow(uint64_t a, int64_t e, bool sgn) {
  if (e < 0) {
    if (a == 1) return 1;
    if (sgn && (int64_t)a == -1) return (e % 2) ? (uint64_t)-1 : 1;
    return 0;
  }
  uint64_t r = 1;
  for (; e > 0; e >>= 1) {
    if (e & 1) r *= a;
    a *= a;
  }
  return r;
}

/* Binary op on floating-point values. */
static double ref_bin_f(int op, double a, double b, bool fmod_) {
  switch (op) {
  case OP_Add: case OP_Sum: case OP_Mean: return a + b;
  case OP_Sub: return a - b;
  case OP_Mul: return a * b;
  case OP_Div: return a / b;
  case OP_Mod: {
    double m = fmod(a, b);
    if (!fmod_ && m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
  }
  case OP_PRelu: return a < 0 ? a * b : a;
  case OP_Max: return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
  case OP_Min: return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
  case OP_Equal: return a == b;
  case OP_Less: return a < b;
  case OP_Greater: return a > b;
  case OP_LessOrEqual: return a <= b;
  case OP_GreaterOrEqual: return a >= b;
  case OP_And: return a != 0 && b != 0;
  case OP_Or: return a != 0 || b != 0;
  case OP_Xor: return (a != 0) != (b != 0);
  }
  return 0;
}

/* Max, Min and the comparisons of two integers (ref_bin_i, ref_bin_u). */
#define INT_MINMAX_CMP_CASES(a, b)                                                                                                                       \
  case OP_Max: return a > b ? a : b;                                                                                                                     \
  case OP_Min: return a < b ? a : b;                                                                                                                     \
  case OP_Equal: return a == b;                                                                                                                          \
  case OP_Less: return a < b;                                                                                                                            \
  case OP_Greater: return a > b;                                                                                                                         \
  case OP_LessOrEqual: return a <= b;                                                                                                                    \
  case OP_GreaterOrEqual: return a >= b;

/* Binary op on signed integers (and bool). */
static int64_t ref_bin_i(int op, int64_t a, int64_t b, bool fmod_) {
  switch (op) {
  case OP_Add: case OP_Sum: return (int64_t)((uint64_t)a + (uint64_t)b);
  case OP_Sub: return (int64_t)((uint64_t)a - (uint64_t)b);
  case OP_Mul: return (int64_t)((uint64_t)a * (uint64_t)b);
  case OP_Div:
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    return a / b;
  case OP_Mod: {
    if (b == 0 || b == -1) return 0;
    int64_t m = a % b;
    if (!fmod_ && m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
  }
  case OP_PRelu: return a < 0 ? (int64_t)((uint64_t)a * (uint64_t)b) : a;
  INT_MINMAX_CMP_CASES(a, b)
  case OP_And: return a && b;
  case OP_Or: return a || b;
  case OP_Xor: return !a != !b;
  }
  return 0;
}

/* Binary op on unsigned integers of `bits` bits. */
static uint64_t ref_bin_u(int op, uint64_t a, uint64_t b, bool fmod_, bool left, int bits) {
  switch (op) {
  case OP_Add: case OP_Sum: return a + b;
  case OP_Sub: return a - b;
  case OP_Mul: return a * b;
  case OP_Div: return b ? a / b : 0;
  case OP_Mod: return b ? a % b : 0;
  case OP_BitShift:
    if (b >= (uint64_t)bits) return 0;
    return left ? a << b : a >> b;
  case OP_PRelu: return a;
  INT_MINMAX_CMP_CASES(a, b)
  }
  return 0;
}

static double ref_unary_f(int op, double x, double alpha, double beta) {
  switch (op) {
  case OP_Abs: return fabs(x);
  case OP_Neg: return -x;
  case OP_Sign: return x > 0 ? 1 : x < 0 ? -1 : x;
  case OP_Relu: return x < 0 ? 0 : x;
  case OP_Shrink: return x < -alpha ? x + beta : x > alpha ? x - beta : 0;
  case OP_Exp: return exp(x);
  case OP_Log: return log(x);
  case OP_Sqrt: return sqrt(x);
  case OP_Reciprocal: return 1 / x;
  case OP_Floor: return floor(x);
  case OP_Ceil: return ceil(x);
  case OP_Round: return nearbyint(x);
  case OP_Erf: return erf(x);
  case OP_Sin: return sin(x);
  case OP_Cos: return cos(x);
  case OP_Tan: return tan(x);
  case OP_Asin: return asin(x);
  case OP_Acos: return acos(x);
  case OP_Atan: return atan(x);
  case OP_Sinh: return sinh(x);
  case OP_Cosh: return cosh(x);
  case OP_Asinh: return asinh(x);
  case OP_Acosh: return acosh(x);
  case OP_Atanh: return atanh(x);
  case OP_IsNaN: return isnan(x);
  case OP_IsInf: return isinf(x) && ((x > 0 && alpha != 0) || (x < 0 && beta != 0));
  case OP_Tanh: return tanh(x);
  case OP_Sigmoid: return 1 / (1 + exp(-x));
  case OP_LeakyRelu: return x < 0 ? alpha * x : x;
  case OP_Elu: return x < 0 ? alpha * (exp(x) - 1) : x;
  case OP_Selu: return x > 0 ? beta * x : beta * (alpha * exp(x) - alpha);
  case OP_Celu: return (x > 0 ? x : 0) + fmin(0, alpha * (exp(x / alpha) - 1));
  case OP_HardSigmoid: return fmax(0, fmin(1, alpha * x + beta));
  case OP_HardSwish: return x * fmax(0, fmin(1, x / 6 + 0.5));
  case OP_Softplus: return log(exp(x) + 1);
  case OP_Softsign: return x / (1 + fabs(x));
  case OP_ThresholdedRelu: return x > alpha ? x : 0;
  case OP_Mish: return x * tanh(log(exp(x) + 1));
  case OP_Not: return x == 0;
  }
  return 0;
}

/* Unary ops allowed on integers; computed on int64 (uns: the value is unsigned). */
static int64_t ref_unary_i(int op, int64_t x, bool uns, double alpha, double beta) {
  switch (op) {
  case OP_Abs: return (uns || x >= 0) ? x : (int64_t)(0 - (uint64_t)x);
  case OP_Neg: return (int64_t)(0 - (uint64_t)x);
  case OP_Sign: return uns ? x != 0 : (x > 0) - (x < 0);
  case OP_Relu: return (!uns && x < 0) ? 0 : x;
  case OP_Shrink: {
    double v = uns ? (double)(uint64_t)x : (double)x;
    return (int64_t)(v < -alpha ? v + beta : v > alpha ? v - beta : 0);
  }
  case OP_Not: return x == 0;
  }
  return 0;
}

/* Output offset i -> offsets in nb inputs with strides st over dims od. */
static void ref_offsets(int64_t i, int r, const int64_t *od, int nb, int64_t (*st)[KILN_MAX_RANK], int64_t *off) {
  for (int k = 0; k < nb; k++) off[k] = 0;
  for (int d = r - 1; d >= 0; d--) {
    int64_t c = i % od[d];
    i /= od[d];
    for (int k = 0; k < nb; k++) off[k] += c * st[k][d];
  }
}

static int ref_cast(kiln_value *x, kiln_value *y, const void *in, void *out) {
  int64_t total = kiln_value_numel(y);
  for (int64_t i = 0; i < total; i++) {
    if (y->dtype == KILN_DT_BOOL) {
      bool nz = kiln_dtype_is_float(x->dtype) ? kiln_load_f(in, x->dtype, i) != 0 : kiln_load_i(in, x->dtype, i) != 0;
      ((uint8_t *)out)[i] = nz;
    } else if (kiln_dtype_is_float(x->dtype) || kiln_dtype_is_float(y->dtype)) {
      kiln_store_f(out, y->dtype, i, kiln_load_f(in, x->dtype, i));
    } else {
      kiln_store_i(out, y->dtype, i, kiln_load_i(in, x->dtype, i));
    }
  }
  return 0;
}

static int ref_clip(kiln_graph *g, kiln_node *n, void **in, void **out) {
  kiln_value *x = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int dt = x->dtype;
  bool has_lo, has_hi;
  double flo = -INFINITY, fhi = INFINITY;
  int64_t ilo = 0, ihi = 0;
  if (n->opset < 11) {
    has_lo = kiln_attr_find(n, "min") != NULL;
    has_hi = kiln_attr_find(n, "max") != NULL;
    flo = kiln_attr_float(n, "min", -FLT_MAX);
    fhi = kiln_attr_float(n, "max", FLT_MAX);
    /* clamp before converting: a float outside int64's range is undefined behaviour */
    ilo = flo <= -9.2e18 ? INT64_MIN : flo >= 9.2e18 ? INT64_MAX : (int64_t)flo;
    ihi = fhi <= -9.2e18 ? INT64_MIN : fhi >= 9.2e18 ? INT64_MAX : (int64_t)fhi;
  } else {
    has_lo = kiln_has_in(n, 1);
    has_hi = kiln_has_in(n, 2);
    if (has_lo) { flo = kiln_load_f(in[1], dt, 0); ilo = kiln_load_i(in[1], dt, 0); }
    if (has_hi) { fhi = kiln_load_f(in[2], dt, 0); ihi = kiln_load_i(in[2], dt, 0); }
  }
  int64_t total = kiln_value_numel(y);
  for (int64_t i = 0; i < total; i++) {
    if (kiln_dtype_is_float(dt)) {
      double v = kiln_load_f(in[0], dt, i);
      if (has_lo && v < flo) v = flo;
      if (has_hi && v > fhi) v = fhi;
      kiln_store_f(out[0], dt, i, v);
    } else if (is_unsigned(dt)) {
      uint64_t v = (uint64_t)kiln_load_i(in[0], dt, i);
      if (has_lo && v < (uint64_t)ilo) v = (uint64_t)ilo;
      if (has_hi && v > (uint64_t)ihi) v = (uint64_t)ihi;
      kiln_store_i(out[0], dt, i, (int64_t)v);
    } else {
      int64_t v = kiln_load_i(in[0], dt, i);
      if (has_lo && v < ilo) v = ilo;
      if (has_hi && v > ihi) v = ihi;
      kiln_store_i(out[0], dt, i, v);
    }
  }
  return 0;
}

static int ew_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  int op = ew_find(n);
  if (op < 0) return kiln__err(err, KILN_EINTERNAL, "op %s is not elementwise", n->op_type);
  const ew_op *o = &ew_ops[op];
  kiln_value *x = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t total = kiln_value_numel(y);
  if (o->kind == K_CAST) return ref_cast(x, y, in[0], out[0]);
  if (o->kind == K_CLIP) return ref_clip(g, n, in, out);
  if (o->kind == K_UNARY) {
    float alpha, beta;
    ew_params(n, op, &alpha, &beta);
    for (int64_t i = 0; i < total; i++) {
      if (kiln_dtype_is_float(x->dtype)) kiln_store_f(out[0], y->dtype, i, ref_unary_f(op, kiln_load_f(in[0], x->dtype, i), alpha, beta));
      else kiln_store_i(out[0], y->dtype, i, ref_unary_i(op, kiln_load_i(in[0], x->dtype, i), is_unsigned(x->dtype), alpha, beta));
    }
    return 0;
  }
  int nb = ew_nbcast(n, o->kind);
  int64_t (*st)[KILN_MAX_RANK] = calloc((size_t)nb, sizeof *st);
  int64_t *off = calloc((size_t)nb, sizeof *off);
  if (!st || !off) { free(st); free(off); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  int rc = ew_input_strides(g, n, op, y, nb, st, err);
  if (rc) { free(st); free(off); return rc; }
  int dt = x->dtype;
  bool fmod_ = kiln_attr_int(n, "fmod", 0) != 0;
  bool left = !strcmp(kiln_attr_str(n, "direction", ""), "LEFT");
  for (int64_t i = 0; i < total; i++) {
    ref_offsets(i, y->rank, y->dims, nb, st, off);
    if (o->kind == K_WHERE) {
      size_t es = kiln_dtype_size(y->dtype);
      int src = ((const uint8_t *)in[0])[off[0]] ? 1 : 2;
      memcpy((char *)out[0] + (size_t)i * es, (const char *)in[src] + (size_t)off[src] * es, es);
    } else if (o->kind == K_POW) {
      kiln_value *e = kiln_in(g, n, 1);
      if (kiln_dtype_is_float(dt)) {
        kiln_store_f(out[0], dt, i, pow(kiln_load_f(in[0], dt, off[0]), kiln_load_f(in[1], e->dtype, off[1])));
      } else {
        int64_t a = kiln_load_i(in[0], dt, off[0]);
        int64_t v;
        if (kiln_dtype_is_float(e->dtype)) {
          double ev = kiln_load_f(in[1], e->dtype, off[1]);
          double p = pow((double)a, ev);
          if (ev == floor(ev) && fabs(ev) < 9e18) v = (int64_t)ref_ipow((uint64_t)a, (int64_t)ev, !is_unsigned(dt));
          else v = (p == p && fabs(p) < 9e18) ? (int64_t)p : 0; /* NaN or out of range: 0 */
        } else {
          v = (int64_t)ref_ipow((uint64_t)a, kiln_load_i(in[1], e->dtype, off[1]), !is_unsigned(dt));
        }
        kiln_store_i(out[0], dt, i, v);
      }
    } else if (kiln_dtype_is_float(dt)) {
      double acc = kiln_load_f(in[0], dt, off[0]);
      for (int k = 1; k < nb; k++) acc = ref_round(dt, ref_bin_f(op, acc, kiln_load_f(in[k], dt, off[k]), fmod_));
      if (op == OP_Mean) acc /= nb;
      kiln_store_f(out[0], y->dtype, i, acc);
    } else if (is_unsigned(dt)) {
      uint64_t acc = (uint64_t)kiln_load_i(in[0], dt, off[0]);
      for (int k = 1; k < nb; k++) acc = ref_bin_u(op, acc, (uint64_t)kiln_load_i(in[k], dt, off[k]), fmod_, left, dt_bits(dt));
      if (op == OP_Mean) acc /= (uint64_t)nb;
      kiln_store_i(out[0], y->dtype, i, (int64_t)acc);
    } else {
      int64_t acc = kiln_load_i(in[0], dt, off[0]);
      for (int k = 1; k < nb; k++) acc = ref_bin_i(op, acc, kiln_load_i(in[k], dt, off[k]), fmod_);
      if (op == OP_Mean) acc /= nb;
      kiln_store_i(out[0], y->dtype, i, acc);
    }
  }
  free(st);
  free(off);
  return 0;
}

/* ---- device ------------------------------------------------------------- */

/* Collapses the broadcast index of an output (rank r, dims od) over k <= 3
 * inputs with strides st: drops size-1 axes and merges neighbours that are
 * contiguous in every input. Writes dims and strides into m (EW_META longs)
 * and returns the rank, 0 when every input is contiguous with the output's
 * size (flat path). */
static int ew_meta(int r, const int64_t *od, int k, int64_t (*st)[KILN_MAX_RANK], int64_t *m) {
  int64_t d[KILN_MAX_RANK], s[3][KILN_MAX_RANK];
  int nd = 0;
  for (int ax = 0; ax < r; ax++) {
    if (od[ax] == 1) continue;
    bool merge = nd > 0;
    for (int j = 0; j < k && merge; j++) merge = s[j][nd - 1] == st[j][ax] * od[ax];
    if (merge) {
      d[nd - 1] *= od[ax];
      for (int j = 0; j < k; j++) s[j][nd - 1] = st[j][ax];
    } else {
      d[nd] = od[ax];
      for (int j = 0; j < k; j++) s[j][nd] = st[j][ax];
      nd++;
    }
  }
  memset(m, 0, sizeof(int64_t) * EW_META);
  bool flat = nd == 0;
  if (nd == 1) {
    flat = true;
    for (int j = 0; j < k; j++) flat = flat && s[j][0] == 1;
  }
  if (flat) return 0;
  for (int a = 0; a < nd; a++) {
    m[a] = d[a];
    for (int j = 0; j < k; j++) m[(1 + j) * KILN_MAX_RANK + a] = s[j][a];
  }
  return nd;
}

/* Pow of a floating-point base by a constant scalar exponent of 2, 3, 0.5
 * or -1 that does not enlarge the base: the unary kernel computing it
 * without pow() (x*x, x*x*x, sqrt with pow's results at -0 and -inf, 1/x),
 * else NULL (the broadcast pow kernel). */
static const char *ew_pow_const(kiln_graph *g, const kiln_node *n) {
  kiln_value *a = kiln_in(g, n, 0), *e = kiln_in(g, n, 1), *y = kiln_out(g, n, 0);
  if (!a || !e || !y || !e->is_const || !e->data || kiln_value_numel(e) != 1) return NULL;
  if (!(M_F & (1u << a->dtype)) || kiln_value_numel(a) != kiln_value_numel(y)) return NULL;
  if (!(M_NUM & (1u << e->dtype))) return NULL;
  double v = kiln_value_getf(e, 0);
  return v == 2.0 ? "ew_square" : v == 3.0 ? "ew_cube" : v == 0.5 ? "ew_sqrt_pow" : v == -1.0 ? "ew_reciprocal" : NULL;
}

/* ---- tunable family "eltwise" (kernels/elementwise.c). Nodes computed by a
 * fused kernel have no descriptor. ---- */

#define EW_WPI_DEFAULT KILN_EW_WPI

static int ew_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  int op = ew_find(n);
  if (op < 0 || ew_ops[op].kind == K_CAST || n->fuse_root >= 0 || n->skip_dev) return 1;
  kiln_value *y = kiln_out(g, n, 0);
  if (!y || y->rank < 0) return 1;
  int64_t total = kiln_value_numel(y);
  if (total == 0) return 1;
  kiln_family_begin(&kiln_family_eltwise, kiln_dev_dtype(ew_ops[op].kind == K_WHERE ? kiln_in(g, n, 1) : kiln_in(g, n, 0)), t); /* fp16 storage: its own instances */
  int o = kiln_family_key_dims(t->shape_key, sizeof t->shape_key, snprintf(t->shape_key, sizeof t->shape_key, "%s:", n->op_type), "y", y);
  double bytes = (double)kiln_value_dev_bytes(y);
  for (int k = 0; k < n->nin && o < (int)sizeof t->shape_key; k++) {
    kiln_value *v = kiln_in(g, n, k);
    if (!v) continue;
    bytes += (double)kiln_value_dev_bytes(v);
    char tag[8];
    snprintf(tag, sizeof tag, ",in%d", k);
    o = kiln_family_key_dims(t->shape_key, sizeof t->shape_key, o, tag, v);
  }
  int kind = ew_ops[op].kind, nb = kind == K_UNARY || kind == K_CLIP ? 1 : ew_nbcast(n, kind);
  t->dims[ED_TOTAL] = total;
  /* the innermost run a work-item's steps stay in: the whole tensor for
   * unary kernels and contiguous broadcasts, else the output's last dim */
  bool flat = kind == K_UNARY || kind == K_CLIP || nb == 1 || (op == OP_Pow && ew_pow_const(g, n));
  for (int k = 0; k < n->nin && !flat; k++) {
    kiln_value *v = kiln_in(g, n, k);
    if (v && kiln_value_numel(v) != total) break;
    if (k == n->nin - 1) flat = true;
  }
  t->dims[ED_INNER] = flat ? total : y->dims[y->rank - 1];
  t->dims[ED_BYTES] = (int64_t)bytes;
  t->dims[ED_LAUNCHES] = kind == K_VARIADIC && nb > 1 ? nb - 1 + (op == OP_Mean) : 1;
  return 0;
}

/* Tuned (or default) EW_WPI / EW_WG of node n. */
static void ew_launch_params(kiln_exec *x, kiln_node *n, int *wpi, int *wg) {
  kiln_tunable t;
  *wpi = EW_WPI_DEFAULT;
  *wg = 0;
  if (ew_tunable(x->g, n, &t) == 0) {
    const int *p = kiln_exec_tparams(x, n, &t);
    *wpi = p[EP_WPI];
    *wg = p[EP_WG];
  }
}

static cl_kernel ew_kernel_w(kiln_exec *x, const char *file, int dtype, int wpi, const char *name, kiln_error *err) {
  char opts[300];
  kiln_cl_type_opts(dtype, opts, sizeof opts);
  if (wpi != EW_WPI_DEFAULT) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DEW_WPI=%d", wpi); /* defaults: the shared program */
  return kiln_cl_kernel(x->d, file, opts, name, err);
}

static cl_kernel ew_kernel(kiln_exec *x, const char *file, int dtype, const char *name, kiln_error *err) {
  return ew_kernel_w(x, file, dtype, EW_WPI_DEFAULT, name, err);
}

/* One work-item per element. */
static size_t ew_gws(int64_t total) { return (size_t)total; }

/* 1-D launch over `total` elements, wpi per work-item, groups of wg (0: driver). */
static int ew_launch1(kiln_exec *x, cl_kernel k, int64_t total, int wpi, int wg, kiln_error *err) {
  size_t gws = ((size_t)total + (size_t)wpi - 1) / (size_t)wpi, lws = (size_t)wg;
  if (wg > 0) gws = (gws + lws - 1) / lws * lws;
  return kiln_exec_launch(x, k, 1, &gws, wg > 0 ? &lws : NULL, err);
}

static int dev_unary(kiln_exec *x, kiln_node *n, int op, kiln_error *err) {
  kiln_value *v = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int wpi, wg;
  ew_launch_params(x, n, &wpi, &wg);
  const char *kname = op == OP_Pow ? ew_pow_const(x->g, n) : ew_ops[op].kernel;
  cl_kernel k = ew_kernel_w(x, "elementwise.cl", kiln_dev_dtype(v), wpi, kname, err);
  if (!k) return err->status;
  float alpha, beta;
  ew_params(n, op, &alpha, &beta);
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_long total = kiln_value_numel(y);
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(total), KARG(alpha), KARG(beta), KEND)) return err->status;
  return ew_launch1(x, k, total, wpi, wg, err);
}

static int dev_clip(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *v = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int wpi, wg;
  ew_launch_params(x, n, &wpi, &wg);
  cl_kernel k = ew_kernel_w(x, "elementwise.cl", kiln_dev_dtype(v), wpi, "ew_clip", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0), blo = bx, bhi = bx;
  cl_int lo_mode = 0, hi_mode = 0;
  float flo = 0, fhi = 0;
  if (n->opset < 11) {
    if (kiln_attr_find(n, "min")) { lo_mode = 2; flo = kiln_attr_float(n, "min", -FLT_MAX); }
    if (kiln_attr_find(n, "max")) { hi_mode = 2; fhi = kiln_attr_float(n, "max", FLT_MAX); }
  } else {
    if (kiln_has_in(n, 1)) { lo_mode = 1; blo = kiln_in_buf(x, n, 1); }
    if (kiln_has_in(n, 2)) { hi_mode = 1; bhi = kiln_in_buf(x, n, 2); }
  }
  cl_long total = kiln_value_numel(y);
  if (kiln_cl_args(k, err, KARG(bx), KARG(blo), KARG(bhi), KARG(by), KARG(total), KARG(lo_mode), KARG(hi_mode), KARG(flo), KARG(fhi), KEND)) return err->status;
  return ew_launch1(x, k, total, wpi, wg, err);
}

static int dev_cast(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *v = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  char name[32];
  snprintf(name, sizeof name, "ew_cast_to_%d", kiln_dev_dtype(y));
  cl_kernel k = ew_kernel(x, "elementwise_cast.cl", kiln_dev_dtype(v), name, err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_long total = kiln_value_numel(y);
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(total), KEND)) return err->status;
  size_t gws = ew_gws(total);
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

/* Binary, comparison, Pow, Where and variadic ops: one broadcast launch per
 * pair (Where: one launch over three inputs). Variadic ops fold input k into
 * the output: y = op(x0, x1), then y = op(y, xk); Mean divides at the end. */
static int dev_bcast(kiln_exec *x, kiln_node *n, int op, kiln_error *err) {
  kiln_graph *g = x->g;
  const ew_op *o = &ew_ops[op];
  kiln_value *y = kiln_out(g, n, 0);
  cl_long total = kiln_value_numel(y);
  int nb = ew_nbcast(n, o->kind);
  int dt = kiln_dev_dtype(o->kind == K_WHERE ? kiln_in(g, n, 1) : kiln_in(g, n, 0));
  cl_mem by = kiln_out_buf(x, n, 0);
  int wpi, wg;
  ew_launch_params(x, n, &wpi, &wg);
  if (nb == 1) { /* variadic op with one input: a copy */
    cl_kernel k = ew_kernel_w(x, "elementwise.cl", dt, wpi, "ew_copy", err);
    cl_mem bx = kiln_in_buf(x, n, 0);
    if (!k || kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(total), KEND)) return err->status;
    return ew_launch1(x, k, total, wpi, wg, err);
  }
  int64_t (*st)[KILN_MAX_RANK] = calloc((size_t)nb, sizeof *st);
  int nsteps = o->kind == K_VARIADIC ? nb - 1 : 1;
  int64_t *meta = calloc((size_t)nsteps * EW_META, sizeof *meta);
  cl_int *ranks = calloc((size_t)nsteps, sizeof *ranks);
  if (!st || !meta || !ranks) { free(st); free(meta); free(ranks); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  int rc = ew_input_strides(g, n, op, y, nb, st, err);
  if (!rc) {
    if (o->kind == K_WHERE) ranks[0] = ew_meta(y->rank, y->dims, 3, st, meta);
    else {
      int64_t pair[2][KILN_MAX_RANK];
      for (int s = 0; s < nsteps; s++) {
        if (s == 0) memcpy(pair[0], st[0], sizeof pair[0]);
        else ew_strides(y->rank, y->dims, y->rank, pair[0]); /* the partial result in y */
        memcpy(pair[1], st[s + 1], sizeof pair[1]);
        ranks[s] = ew_meta(y->rank, y->dims, 2, pair, meta + (size_t)s * EW_META);
      }
    }
  }
  cl_mem bm = rc ? NULL : kiln_exec_param(x, n, 0, meta, sizeof(int64_t) * EW_META * (size_t)nsteps, err);
  free(st);
  if (!bm) { free(meta); free(ranks); return err->status; }
  char name[64];
  if (o->kind == K_POW) snprintf(name, sizeof name, "%s%d", o->kernel, kiln_dev_dtype(kiln_in(g, n, 1)));
  else if (op == OP_Mod && kiln_attr_int(n, "fmod", 0)) snprintf(name, sizeof name, "ew_fmod");
  else if (op == OP_BitShift && strcmp(kiln_attr_str(n, "direction", ""), "LEFT")) snprintf(name, sizeof name, "ew_shr");
  else snprintf(name, sizeof name, "%s", o->kernel);
  cl_kernel k = ew_kernel_w(x, "elementwise.cl", dt, wpi, name, err);
  if (!k) { free(meta); free(ranks); return err->status; }
  for (int s = 0; s < nsteps && !rc; s++) {
    cl_mem ba = kiln_in_buf(x, n, 0), bb = kiln_in_buf(x, n, 1), bc = kiln_in_buf(x, n, 2);
    cl_int moff = s * EW_META;
    if (o->kind == K_WHERE)
      rc = kiln_cl_args(k, err, KARG(ba), KARG(bb), KARG(bc), KARG(by), KARG(bm), KARG(moff), KARG(ranks[s]), KARG(total), KEND);
    else {
      if (s > 0) { ba = by; bb = kiln_in_buf(x, n, s + 1); }
      rc = kiln_cl_args(k, err, KARG(ba), KARG(bb), KARG(by), KARG(bm), KARG(moff), KARG(ranks[s]), KARG(total), KEND);
    }
    /* (runs of wpi along the innermost dim, the next dim, the other outer
     * rows); rank 0: one row of all elements */
    const int64_t *ms = meta + (size_t)s * EW_META;
    int64_t inner = ranks[s] ? ms[ranks[s] - 1] : total, d1 = ranks[s] >= 2 ? ms[ranks[s] - 2] : 1;
    size_t gws3[3] = {((size_t)inner + (size_t)wpi - 1) / (size_t)wpi, (size_t)d1, (size_t)(total / inner / d1)}, lws3[3] = {(size_t)wg, 1, 1};
    if (wg > 0) gws3[0] = (gws3[0] + lws3[0] - 1) / lws3[0] * lws3[0];
    int dims = gws3[2] > 1 ? 3 : gws3[1] > 1 ? 2 : 1;
    if (!rc) rc = kiln_exec_launch(x, k, dims, gws3, wg > 0 ? lws3 : NULL, err);
  }
  free(meta);
  free(ranks);
  if (rc || op != OP_Mean) return rc;
  cl_kernel kd = ew_kernel_w(x, "elementwise.cl", dt, wpi, "ew_divn", err);
  if (!kd) return err->status;
  float cnt = (float)nb, unused = 0;
  if (kiln_cl_args(kd, err, KARG(by), KARG(by), KARG(total), KARG(cnt), KARG(unused), KEND)) return err->status;
  return ew_launch1(x, kd, total, wpi, wg, err);
}

static int ew_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  int op = ew_find(n);
  if (op < 0) return kiln__err(err, KILN_EINTERNAL, "op %s is not elementwise", n->op_type);
  if (kiln_value_numel(kiln_out(x->g, n, 0)) == 0) return 0;
  if (op == OP_Pow && ew_pow_const(x->g, n)) return dev_unary(x, n, op, err);
  switch (ew_ops[op].kind) {
  case K_UNARY: return dev_unary(x, n, op, err);
  case K_CLIP: return dev_clip(x, n, err);
  case K_CAST: return dev_cast(x, n, err);
  default: return dev_bcast(x, n, op, err);
  }
}

static int ew_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int op = ew_find(n);
  if (op < 0) return kiln__err(err, KILN_EINTERNAL, "op %s is not elementwise", n->op_type);
  const ew_op *o = &ew_ops[op];
  int dt = kiln_dev_dtype(o->kind == K_WHERE ? kiln_in(g, n, 1) : kiln_in(g, n, 0));
  if (dt < 0 || dt >= 32 || !(o->types & (1u << dt))) return kiln__err(err, KILN_EUNSUPPORTED, "%s on %s", o->name, kiln_dtype_name(dt));
  if (o->kind == K_POW) {
    int et = kiln_dev_dtype(kiln_in(g, n, 1));
    if (et < 0 || et >= 32 || !(M_NUM & (1u << et))) return kiln__err(err, KILN_EUNSUPPORTED, "Pow with a %s exponent", kiln_dtype_name(et));
  }
  if (o->kind == K_CAST) {
    int ot = kiln_dev_dtype(kiln_out(g, n, 0));
    if (ot < 0 || ot >= 32 || !(o->types & (1u << ot))) return kiln__err(err, KILN_EUNSUPPORTED, "%s to %s", o->name, kiln_dtype_name(ot));
  }
  return 0;
}

/* Every kernel reads element i of input 0 (when it has the output's shape)
 * before writing element i of the output, and variadic steps read only their
 * own element of the partial result: all of them can run in place. */
const kiln_op_def kiln_ops_elementwise[] = {
#define XX(op, kind, kern, types) \
  {.name = #op, .infer = ew_infer, .ref = ew_ref, .dev = ew_dev, .dev_check = ew_check, .tunable = ew_tunable, .flags = KILN_OP_INPLACE | KILN_OP_HALF},
  EW_OPS(XX)
#undef XX
  {NULL},
};
