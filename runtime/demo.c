/* demo.c: the built-in demo models ("cnn", "transformer", "mobile"), built as protobuf-c
 * ONNX structs (IR 8, opset 17) with weights drawn from a seeded PRNG and
 * written to a file. They exercise the common CNN and transformer op patterns
 * without needing any model file, for tests, `kiln demo` and benchmarks. */
#include "kiln_internal.h"
#include "onnx.pb-c.h"
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdalign.h>

#define DEMO_MAX_NODES 128
#define DEMO_MAX_INITS 96

/* Every allocation of a build hangs off one list and is freed at the end, so
 * the protobuf structs can point into each other freely. */
typedef struct demo_blk {
  struct demo_blk *next;
  alignas(max_align_t) unsigned char data[];
} demo_blk;

typedef struct demo_b {
  demo_blk *blocks;
  bool failed;                 /* out of memory or table full; the build is abandoned */
  uint64_t rng;                /* splitmix64 state */
  int tmp;                     /* counter for generated value names */
  Onnx__NodeProto *nodes[DEMO_MAX_NODES];
  size_t nnodes;
  Onnx__TensorProto *inits[DEMO_MAX_INITS];
  size_t ninits;
  Onnx__ValueInfoProto *in, *out;
} demo_b;

/* Zeroed memory owned by the build; NULL (and b->failed) when out of memory. */
static void *b_alloc(demo_b *b, size_t bytes) {
  demo_blk *k = calloc(1, sizeof *k + bytes);
  if (!k) { b->failed = true; return NULL; }
  k->next = b->blocks;
  b->blocks = k;
  return k->data;
}

static void b_free(demo_b *b) {
  for (demo_blk *k = b->blocks, *nx; k; k = nx) { nx = k->next; free(k); }
  b->blocks = NULL;
}

static char *b_str(demo_b *b, const char *s) {
  char *p = b_alloc(b, strlen(s) + 1);
  if (p) strcpy(p, s);
  return p;
}

/* A fresh value name "<prefix>_<n>". */
static const char *b_name(demo_b *b, const char *prefix) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s_%d", prefix, b->tmp++);
  return b_str(b, buf);
}

/* ---- PRNG: splitmix64, normals by Box-Muller ---- */

static uint64_t rng_next(demo_b *b) {
  uint64_t z = (b->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform in (0, 1). */
static double rng_unif(demo_b *b) { return ((double)(rng_next(b) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
static double rng_normal(demo_b *b) {
  return sqrt(-2.0 * log(rng_unif(b))) * cos(6.283185307179586 * rng_unif(b));
}

/* ---- initializers ---- */

static Onnx__TensorProto *b_tensor(demo_b *b, const char *name, int dtype, int rank, const int64_t *dims) {
  if (b->failed) return NULL;
  if (b->ninits == DEMO_MAX_INITS) { b->failed = true; return NULL; }
  Onnx__TensorProto *t = b_alloc(b, sizeof *t);
  int64_t *d = b_alloc(b, sizeof(int64_t) * (size_t)(rank ? rank : 1));
  if (!t || !d) return NULL;
  onnx__tensor_proto__init(t);
  t->name = b_str(b, name);
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = (size_t)rank;
  t->dims = d;
  for (int i = 0; i < rank; i++) d[i] = dims[i];
  b->inits[b->ninits++] = t;
  return t;
}

static int64_t numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  return n;
}

/* A float initializer with elements mean + std * N(0,1); returns its name. */
static const char *b_randn(demo_b *b, const char *prefix, int rank, const int64_t *dims, double mean, double std) {
  const char *name = b_name(b, prefix);
  Onnx__TensorProto *t = name ? b_tensor(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dims) : NULL;
  int64_t n = numel(rank, dims);
  float *f = t ? b_alloc(b, sizeof(float) * (size_t)n) : NULL;
  if (!f) return NULL;
  for (int64_t i = 0; i < n; i++) f[i] = (float)(mean + std * rng_normal(b));
  t->n_float_data = (size_t)n;
  t->float_data = f;
  return name;
}

/* A float initializer with elements uniform in [lo, hi). */
static const char *b_randu(demo_b *b, const char *prefix, int64_t n, double lo, double hi) {
  const char *name = b_name(b, prefix);
  Onnx__TensorProto *t = name ? b_tensor(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, &n) : NULL;
  float *f = t ? b_alloc(b, sizeof(float) * (size_t)n) : NULL;
  if (!f) return NULL;
  for (int64_t i = 0; i < n; i++) f[i] = (float)(lo + (hi - lo) * rng_unif(b));
  t->n_float_data = (size_t)n;
  t->float_data = f;
  return name;
}

/* A float scalar (rank 0) initializer. */
static const char *b_scalar(demo_b *b, const char *prefix, float v) {
  const char *name = b_name(b, prefix);
  Onnx__TensorProto *t = name ? b_tensor(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL) : NULL;
  float *f = t ? b_alloc(b, sizeof(float)) : NULL;
  if (!f) return NULL;
  *f = v;
  t->n_float_data = 1;
  t->float_data = f;
  return name;
}

/* A copy of v[0..n) in the builder's memory (NULL when out of memory). */
static int64_t *b_int64_copy(demo_b *b, int64_t n, const int64_t *v) {
  int64_t *d = b_alloc(b, sizeof(int64_t) * (size_t)n);
  if (d) memcpy(d, v, sizeof(int64_t) * (size_t)n);
  return d;
}

/* A 1-D int64 initializer (Reshape shapes). */
static const char *b_int64s(demo_b *b, const char *prefix, int64_t n, const int64_t *v) {
  const char *name = b_name(b, prefix);
  Onnx__TensorProto *t = name ? b_tensor(b, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, &n) : NULL;
  int64_t *d = t ? b_int64_copy(b, n, v) : NULL;
  if (!d) return NULL;
  t->n_int64_data = (size_t)n;
  t->int64_data = d;
  return name;
}

/* ---- attributes ---- */

static Onnx__AttributeProto *b_attr(demo_b *b, const char *name, Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *a = b->failed ? NULL : b_alloc(b, sizeof *a);
  if (!a) return NULL;
  onnx__attribute_proto__init(a);
  a->name = b_str(b, name);
  a->has_type = 1;
  a->type = type;
  return a;
}
static Onnx__AttributeProto *a_int(demo_b *b, const char *name, int64_t v) {
  Onnx__AttributeProto *a = b_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  if (a) { a->has_i = 1; a->i = v; }
  return a;
}
static Onnx__AttributeProto *a_float(demo_b *b, const char *name, float v) {
  Onnx__AttributeProto *a = b_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  if (a) { a->has_f = 1; a->f = v; }
  return a;
}
static Onnx__AttributeProto *a_ints(demo_b *b, const char *name, int n, const int64_t *v) {
  Onnx__AttributeProto *a = b_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  int64_t *d = a ? b_int64_copy(b, n, v) : NULL;
  if (!d) return NULL;
  a->n_ints = (size_t)n;
  a->ints = d;
  return a;
}
#define INTS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* ---- nodes ---- */

/* Adds node `op` reading the NULL-terminated `ins` (a "" entry is an omitted
 * input) and the NULL-terminated attribute list `attrs` (may be NULL); its one
 * output is `out`, or a fresh name when `out` is NULL. Returns the output name. */
static const char *b_node(demo_b *b, const char *op, const char *const *ins, const char *out, Onnx__AttributeProto *const *attrs) {
  if (b->failed) return NULL;
  if (b->nnodes == DEMO_MAX_NODES) { b->failed = true; return NULL; }
  size_t nin = 0, nattr = 0;
  while (ins[nin]) nin++;
  while (attrs && attrs[nattr]) nattr++;
  Onnx__NodeProto *n = b_alloc(b, sizeof *n);
  char **in = b_alloc(b, sizeof(char *) * (nin + 1));
  char **o = b_alloc(b, sizeof(char *));
  Onnx__AttributeProto **at = b_alloc(b, sizeof *at * (nattr + 1));
  if (!n || !in || !o || !at) return NULL;
  onnx__node_proto__init(n);
  for (size_t i = 0; i < nin; i++) in[i] = b_str(b, ins[i]);
  for (size_t i = 0; i < nattr; i++) at[i] = attrs[i];
  o[0] = out ? b_str(b, out) : (char *)b_name(b, op);
  n->op_type = b_str(b, op);
  char nm[64];
  snprintf(nm, sizeof nm, "%s_%zu", op, b->nnodes);
  n->name = b_str(b, nm);
  n->n_input = nin; n->input = in;
  n->n_output = 1; n->output = o;
  n->n_attribute = nattr; n->attribute = at;
  b->nodes[b->nnodes++] = n;
  return b->failed ? NULL : o[0];
}
#define IN(...) (const char *const[]){__VA_ARGS__, NULL}
#define ATTRS(...) (Onnx__AttributeProto *const[]){__VA_ARGS__, NULL}

/* A float tensor ValueInfo with static dims. */
static Onnx__ValueInfoProto *b_value_info(demo_b *b, const char *name, int rank, const int64_t *dims) {
  if (b->failed) return NULL;
  Onnx__ValueInfoProto *vi = b_alloc(b, sizeof *vi);
  Onnx__TypeProto *tp = b_alloc(b, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = b_alloc(b, sizeof *tt);
  Onnx__TensorShapeProto *sh = b_alloc(b, sizeof *sh);
  Onnx__TensorShapeProto__Dimension *dv = b_alloc(b, sizeof *dv * (size_t)rank), **dp = b_alloc(b, sizeof *dp * (size_t)rank);
  if (!vi || !tp || !tt || !sh || !dv || !dp) return NULL;
  onnx__value_info_proto__init(vi);
  kiln__onnx_tensor_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dims, tp, tt, sh, dv, dp);
  vi->name = b_str(b, name);
  vi->type = tp;
  return vi;
}

Onnx__TypeProto *kiln__onnx_tensor_type(int elem, int rank, const int64_t *dims, Onnx__TypeProto *tp, Onnx__TypeProto__Tensor *tt,
                                        Onnx__TensorShapeProto *sh, Onnx__TensorShapeProto__Dimension *dv, Onnx__TensorShapeProto__Dimension **dp) {
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sh);
  for (int i = 0; i < rank; i++) {
    onnx__tensor_shape_proto__dimension__init(&dv[i]);
    dv[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dv[i].dim_value = dims[i];
    dp[i] = &dv[i];
  }
  sh->n_dim = (size_t)rank;
  sh->dim = dp;
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  return tp;
}

int kiln__onnx_write_graph(const char *path, struct Onnx__GraphProto *gp, int64_t opset, const char *producer, kiln_error *err) {
  Onnx__OperatorSetIdProto ops = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsp = &ops;
  ops.domain = "";
  ops.has_version = 1;
  ops.version = opset;
  Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
  mp.has_ir_version = 1;
  mp.ir_version = 8;
  mp.producer_name = (char *)producer;
  mp.producer_version = KILN_VERSION;
  mp.n_opset_import = 1;
  mp.opset_import = &opsp;
  mp.graph = gp;
  size_t len = onnx__model_proto__get_packed_size(&mp);
  uint8_t *buf = malloc(len ? len : 1);
  if (!buf) return kiln__err(err, KILN_ENOMEM, "%s: out of memory packing %zu bytes", path, len);
  size_t packed = onnx__model_proto__pack(&mp, buf);
  assert(packed == len);
  (void)packed;
  int rc = 0;
  FILE *f = fopen(path, "wb");
  if (!f) rc = kiln__err(err, KILN_EIO, "%s: cannot create: %s", path, strerror(errno));
  else if (fwrite(buf, 1, len, f) != len) rc = kiln__err(err, KILN_EIO, "%s: write failed: %s", path, strerror(errno));
  if (f && fclose(f) != 0 && !rc) rc = kiln__err(err, KILN_EIO, "%s: write failed: %s", path, strerror(errno));
  free(buf);
  return rc;
}

/* ---- layers ---- */

/* Conv with He-normal weights [cout, cin, k, k] and a small bias. */
static const char *l_conv(demo_b *b, const char *x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t pad) {
  const char *w = b_randn(b, "conv_w", 4, (int64_t[]){cout, cin, k, k}, 0.0, sqrt(2.0 / (double)(cin * k * k)));
  const char *bias = b_randn(b, "conv_b", 1, &cout, 0.0, 0.05);
  if (!x || !w || !bias) return NULL;
  return b_node(b, "Conv", IN(x, w, bias), NULL,
                ATTRS(a_ints(b, "kernel_shape", INTS(k, k)), a_ints(b, "strides", INTS(stride, stride)),
                      a_ints(b, "pads", INTS(pad, pad, pad, pad)), a_ints(b, "dilations", INTS(1, 1)), a_int(b, "group", 1)));
}

/* Inference-mode BatchNormalization with plausible running statistics. */
static const char *l_bn(demo_b *b, const char *x, int64_t c) {
  const char *scale = b_randu(b, "bn_scale", c, 0.8, 1.2);
  const char *bias = b_randu(b, "bn_bias", c, -0.1, 0.1);
  const char *mean = b_randu(b, "bn_mean", c, -0.1, 0.1);
  const char *var = b_randu(b, "bn_var", c, 0.8, 1.6);
  if (!x || !scale || !bias || !mean || !var) return NULL;
  return b_node(b, "BatchNormalization", IN(x, scale, bias, mean, var), NULL, ATTRS(a_float(b, "epsilon", 1e-5f), a_float(b, "momentum", 0.9f)));
}

static const char *l_unary(demo_b *b, const char *op, const char *x) { return x ? b_node(b, op, IN(x), NULL, NULL) : NULL; }
static const char *l_binary(demo_b *b, const char *op, const char *x, const char *y) { return x && y ? b_node(b, op, IN(x, y), NULL, NULL) : NULL; }

/* x @ W + bias with W [din, dout] scaled 1/sqrt(din) (gain `gain`). */
static const char *l_linear(demo_b *b, const char *x, int64_t din, int64_t dout, double gain) {
  const char *w = b_randn(b, "linear_w", 2, (int64_t[]){din, dout}, 0.0, gain / sqrt((double)din));
  const char *bias = b_randn(b, "linear_b", 1, &dout, 0.0, 0.02);
  if (!x || !w || !bias) return NULL;
  return l_binary(b, "Add", l_binary(b, "MatMul", x, w), bias);
}

static const char *l_layernorm(demo_b *b, const char *x, int64_t d) {
  const char *g = b_randu(b, "ln_scale", d, 0.9, 1.1);
  const char *bias = b_randu(b, "ln_bias", d, -0.05, 0.05);
  if (!x || !g || !bias) return NULL;
  return b_node(b, "LayerNormalization", IN(x, g, bias), NULL, ATTRS(a_int(b, "axis", -1), a_float(b, "epsilon", 1e-5f)));
}

static const char *l_transpose(demo_b *b, const char *x, int n, const int64_t *perm) {
  return x ? b_node(b, "Transpose", IN(x), NULL, ATTRS(a_ints(b, "perm", n, perm))) : NULL;
}

/* The CNNs' head: global average pool of c channels, flatten, a Gemm to
 * k logits (the model's output "logits"). */
static void l_classifier(demo_b *b, const char *x, int64_t c, int64_t k) {
  x = l_unary(b, "GlobalAveragePool", x);
  x = x ? b_node(b, "Flatten", IN(x), NULL, ATTRS(a_int(b, "axis", 1))) : NULL;
  const char *w = b_randn(b, "fc_w", 2, (int64_t[]){k, c}, 0.0, 1.0 / sqrt((double)c));
  const char *bias = b_randn(b, "fc_b", 1, &k, 0.0, 0.05);
  if (x && w && bias)
    b_node(b, "Gemm", IN(x, w, bias), "logits", ATTRS(a_float(b, "alpha", 1.0f), a_float(b, "beta", 1.0f), a_int(b, "transB", 1)));
}

/* ---- the models ---- */

/* input [1,3,32,32] -> conv/bn/relu/maxpool -> residual block -> strided conv
 * -> global average pool -> flatten -> gemm -> logits [1,10]. */
static void build_cnn(demo_b *b) {
  b->in = b_value_info(b, "input", 4, (int64_t[]){1, 3, 32, 32});
  b->out = b_value_info(b, "logits", 2, (int64_t[]){1, 10});
  const char *x = l_unary(b, "Relu", l_bn(b, l_conv(b, "input", 3, 16, 3, 1, 1), 16));
  x = x ? b_node(b, "MaxPool", IN(x), NULL, ATTRS(a_ints(b, "kernel_shape", INTS(2, 2)), a_ints(b, "strides", INTS(2, 2)))) : NULL;
  const char *r = x ? l_unary(b, "Relu", l_bn(b, l_conv(b, x, 16, 16, 3, 1, 1), 16)) : NULL;
  r = r ? l_bn(b, l_conv(b, r, 16, 16, 3, 1, 1), 16) : NULL;
  x = l_unary(b, "Relu", l_binary(b, "Add", r, x));
  x = x ? l_unary(b, "Relu", l_conv(b, x, 16, 32, 3, 2, 1)) : NULL;
  l_classifier(b, x, 32, 10);
}

/* y = min(max(x, 0), 6) (ReLU6) */
static const char *l_relu6(demo_b *b, const char *x) {
  const char *lo = b_scalar(b, "relu6_lo", 0.0f), *hi = b_scalar(b, "relu6_hi", 6.0f);
  return x && lo && hi ? b_node(b, "Clip", IN(x, lo, hi), NULL, NULL) : NULL;
}

/* Depthwise k x k convolution of c channels (group c), He-normal weights. */
static const char *l_dwconv(demo_b *b, const char *x, int64_t c, int64_t k, int64_t stride) {
  const char *w = b_randn(b, "dw_w", 4, (int64_t[]){c, 1, k, k}, 0.0, sqrt(2.0 / (double)(k * k)));
  const char *bias = b_randn(b, "dw_b", 1, &c, 0.0, 0.05);
  if (!x || !w || !bias) return NULL;
  int64_t pad = k / 2;
  return b_node(b, "Conv", IN(x, w, bias), NULL,
                ATTRS(a_ints(b, "kernel_shape", INTS(k, k)), a_ints(b, "strides", INTS(stride, stride)),
                      a_ints(b, "pads", INTS(pad, pad, pad, pad)), a_ints(b, "dilations", INTS(1, 1)), a_int(b, "group", c)));
}

/* An inverted residual block (mobilenet_v2 / efficientnet): 1x1 expansion
 * to e channels + ReLU6, depthwise k x k + ReLU6, an optional squeeze-excite
 * gate (global average pool, 1x1 to e/4, ReLU, 1x1, Sigmoid, Mul), 1x1
 * projection to cout, the input added when the shape allows. */
static const char *l_mbconv(demo_b *b, const char *x, int64_t cin, int64_t e, int64_t cout, int64_t k, int64_t stride, bool se) {
  const char *h = l_relu6(b, l_bn(b, l_conv(b, x, cin, e, 1, 1, 0), e));
  h = l_relu6(b, l_bn(b, l_dwconv(b, h, e, k, stride), e));
  if (se && h) {
    const char *s = l_unary(b, "GlobalAveragePool", h);
    s = l_unary(b, "Relu", l_conv(b, s, e, e / 4, 1, 1, 0));
    s = l_unary(b, "Sigmoid", l_conv(b, s, e / 4, e, 1, 1, 0));
    h = l_binary(b, "Mul", h, s);
  }
  h = l_bn(b, l_conv(b, h, e, cout, 1, 1, 0), cout);
  return stride == 1 && cin == cout ? l_binary(b, "Add", h, x) : h;
}

/* input [1,3,32,32] -> stem 3x3 s2 conv/bn/relu6 -> inverted residual
 * blocks (depthwise 3x3 and 5x5, stride 1 and 2, squeeze-excite, residual
 * adds) -> 1x1 conv -> global average pool -> flatten -> gemm -> logits
 * [1,10]: the layers kiln keeps in NCHW16c (runtime/layout.c). */
static void build_mobile(demo_b *b) {
  b->in = b_value_info(b, "input", 4, (int64_t[]){1, 3, 32, 32});
  b->out = b_value_info(b, "logits", 2, (int64_t[]){1, 10});
  const char *x = l_relu6(b, l_bn(b, l_conv(b, "input", 3, 16, 3, 2, 1), 16));
  x = l_mbconv(b, x, 16, 64, 16, 3, 1, true);
  x = l_mbconv(b, x, 16, 64, 32, 5, 2, false);
  x = l_mbconv(b, x, 32, 96, 32, 3, 1, true);
  x = l_relu6(b, l_bn(b, l_conv(b, x, 32, 64, 1, 1, 0), 64));
  l_classifier(b, x, 64, 10);
}

/* tokens [1,16,64] -> one pre-LN transformer block (4 heads of 16, MLP 256
 * with erf GELU) -> hidden [1,16,64]. */
static void build_transformer(demo_b *b) {
  enum { S = 16, D = 64, H = 4, HD = 16, F = 256 };
  b->in = b_value_info(b, "tokens", 3, (int64_t[]){1, S, D});
  b->out = b_value_info(b, "hidden", 3, (int64_t[]){1, S, D});
  const char *heads_shape = b_int64s(b, "heads_shape", 4, (int64_t[]){1, S, H, HD});
  const char *model_shape = b_int64s(b, "model_shape", 3, (int64_t[]){1, S, D});
  const char *h = l_layernorm(b, "tokens", D);
  const char *q = l_linear(b, h, D, D, 1.0), *k = l_linear(b, h, D, D, 1.0), *v = l_linear(b, h, D, D, 1.0);
  /* [1,S,D] -> [1,S,H,HD] -> [1,H,S,HD]; K goes to [1,H,HD,S] */
  q = l_transpose(b, l_binary(b, "Reshape", q, heads_shape), 4, (int64_t[]){0, 2, 1, 3});
  k = l_transpose(b, l_binary(b, "Reshape", k, heads_shape), 4, (int64_t[]){0, 2, 3, 1});
  v = l_transpose(b, l_binary(b, "Reshape", v, heads_shape), 4, (int64_t[]){0, 2, 1, 3});
  const char *att = l_binary(b, "Mul", l_binary(b, "MatMul", q, k), b_scalar(b, "attn_scale", (float)(1.0 / sqrt((double)HD))));
  att = att ? b_node(b, "Softmax", IN(att), NULL, ATTRS(a_int(b, "axis", -1))) : NULL;
  const char *ctx = l_transpose(b, l_binary(b, "MatMul", att, v), 4, (int64_t[]){0, 2, 1, 3});
  ctx = l_binary(b, "Reshape", ctx, model_shape);
  const char *x1 = l_binary(b, "Add", "tokens", l_linear(b, ctx, D, D, 1.0));
  /* MLP with GELU(x) = x * 0.5 * (1 + erf(x / sqrt(2))) */
  const char *m = l_linear(b, l_layernorm(b, x1, D), D, F, 1.0);
  const char *e = l_unary(b, "Erf", l_binary(b, "Div", m, b_scalar(b, "sqrt2", (float)sqrt(2.0))));
  const char *gelu = l_binary(b, "Mul", l_binary(b, "Mul", m, l_binary(b, "Add", e, b_scalar(b, "one", 1.0f))), b_scalar(b, "half", 0.5f));
  const char *m2 = l_linear(b, gelu, F, D, 1.0);
  if (x1 && m2) b_node(b, "Add", IN(x1, m2), "hidden", NULL);
}

static const struct {
  const char *name;
  void (*build)(demo_b *b);
} demos[] = {
  { "cnn", build_cnn },
  { "transformer", build_transformer },
  { "mobile", build_mobile },
};

/* Builds demo `which` with weights from `seed` and writes it to `path`
 * (replacing the file). Returns 0, KILN_EINVAL for an unknown name, KILN_EIO
 * when the file cannot be written or KILN_ENOMEM. The same seed always gives
 * the same bytes. */
int kiln_demo_write(const char *which, const char *path, uint64_t seed, kiln_error *err) {
  if (!which || !path) return kiln__err(err, KILN_EINVAL, "kiln_demo_write: which and path are required");
  size_t idx = 0;
  while (idx < sizeof demos / sizeof demos[0] && strcmp(demos[idx].name, which)) idx++;
  if (idx == sizeof demos / sizeof demos[0]) return kiln__err(err, KILN_EINVAL, "unknown demo model '%s' (known: cnn, transformer, mobile)", which);

  demo_b *b = calloc(1, sizeof *b);
  if (!b) return kiln__err(err, KILN_ENOMEM, "out of memory");
  b->rng = seed;
  demos[idx].build(b);

  int rc = 0;
  Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
  char gname[64];
  if (b->failed || !b->in || !b->out) { rc = kiln__err(err, KILN_ENOMEM, "demo '%s': out of memory building the model", which); goto done; }
  snprintf(gname, sizeof gname, "kiln_demo_%s", which);
  gp.name = gname;
  gp.n_node = b->nnodes; gp.node = b->nodes;
  gp.n_initializer = b->ninits; gp.initializer = b->inits;
  gp.n_input = 1; gp.input = &b->in;
  gp.n_output = 1; gp.output = &b->out;
  rc = kiln__onnx_write_graph(path, &gp, 17, "kiln", err);
done:
  b_free(b);
  free(b);
  return rc;
}
