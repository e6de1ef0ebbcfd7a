/* ops/training.c: the optimizer ops of the ai.onnx.preview.training domain
 * (Adagrad, Momentum in standard and Nesterov mode, Adam) on float tensors:
 * inputs R (learning rate), T (step count), then n tensors each of X, G and
 * the op's state (H; V; V and H); outputs the new X and state per group.
 * Device: kernels/training.cl, one launch per tensor group. */
#include "kiln_internal.h"
#include <math.h>

/* state tensors per group: Adagrad 1 (H), Momentum 1 (V), Adam 2 (V, H) */
static int nstate(const kiln_node *n) { return !strcmp(n->op_type, "Adam") ? 2 : 1; }

static int kind_of(const kiln_node *n) {
  if (!strcmp(n->op_type, "Adagrad")) return 0;
  if (!strcmp(n->op_type, "Adam")) return 3;
  return strcmp(kiln_attr_str(n, "mode", "standard"), "nesterov") ? 1 : 2;
}

static int opt_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int per = 2 + nstate(n), groups = (n->nin - 2) / per;
  if (n->nin < 2 + per || (n->nin - 2) % per || n->nout != groups * (1 + nstate(n)))
    return kiln__err(err, KILN_EPARSE, "%d inputs and %d outputs do not make whole tensor groups", n->nin, n->nout);
  if (kiln_value_numel(kiln_in(g, n, 0)) != 1 || kiln_value_numel(kiln_in(g, n, 1)) != 1) return kiln__err(err, KILN_ESHAPE, "R and T must hold one value");
  if (!strcmp(n->op_type, "Momentum")) {
    const char *m = kiln_attr_str(n, "mode", "standard");
    if (strcmp(m, "standard") && strcmp(m, "nesterov")) return kiln__err(err, KILN_EINVAL, "mode '%s'", m);
  }
  for (int q = 0; q < groups; q++) {
    kiln_value *x = kiln_in(g, n, 2 + q);
    for (int s = 1; s < per; s++) {
      kiln_value *o = kiln_in(g, n, 2 + s * groups + q);
      if (!o || o->rank != x->rank || memcmp(o->dims, x->dims, sizeof(int64_t) * (size_t)x->rank)) return kiln__err(err, KILN_ESHAPE, "tensor group %d: shapes differ", q);
    }
    for (int s = 0; s <= nstate(n); s++) kiln_set_out(g, n, s * groups + q, x->dtype, x->rank, x->dims);
  }
  return 0;
}

static int opt_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  for (int i = 2; i < n->nin; i++)
    if (kiln_in(g, n, i)->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "tensors of type %s", kiln_dtype_name(kiln_in(g, n, i)->dtype));
  if (kiln_in(g, n, 0)->dtype != KILN_DT_FLOAT || kiln_in(g, n, 1)->dtype != KILN_DT_INT64) return kiln__err(err, KILN_EUNSUPPORTED, "R must be float and T int64");
  return 0;
}

/* Constants of the kernel, in its c0..c4 order. */
static void consts(const kiln_node *n, float c[5]) {
  int k = kind_of(n);
  c[0] = kiln_attr_float(n, "norm_coefficient", 0.0f);
  c[4] = kiln_attr_float(n, "norm_coefficient_post", 0.0f);
  if (k == 0) c[1] = kiln_attr_float(n, "epsilon", 0.0f), c[2] = kiln_attr_float(n, "decay_factor", 0.0f), c[3] = 0;
  else if (k == 3) c[1] = kiln_attr_float(n, "alpha", 0.9f), c[2] = kiln_attr_float(n, "beta", 0.999f), c[3] = kiln_attr_float(n, "epsilon", 0.0f); /* the spec's defaults */
  else c[1] = kiln_attr_float(n, "alpha", 0.0f), c[2] = kiln_attr_float(n, "beta", 0.0f), c[3] = 0;
}

static float powi(float b, int64_t e) {
  float r = 1.0f;
  for (int64_t i = 0; i < e && i < 100000; i++) r *= b;
  return r;
}

static int opt_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  int ns = nstate(n), per = 2 + ns, groups = (n->nin - 2) / per, kind = kind_of(n);
  float c[5];
  consts(n, c);
  float r = *(const float *)in[0];
  int64_t t = *(const int64_t *)in[1];
  for (int q = 0; q < groups; q++) {
    const float *x = in[2 + q], *gg = in[2 + groups + q], *s1 = in[2 + 2 * groups + q], *s2 = ns > 1 ? in[2 + 3 * groups + q] : NULL;
    float *xo = out[q], *o1 = out[groups + q], *o2 = ns > 1 ? out[2 * groups + q] : NULL;
    int64_t cnt = kiln_value_numel(kiln_in(g, n, 2 + q));
    for (int64_t i = 0; i < cnt; i++) {
      float gr = c[0] * x[i] + gg[i];
      if (kind == 0) {
        float rr = r / (1.0f + (float)t * c[2]), hn = s1[i] + gr * gr;
        if (o1) o1[i] = hn;
        if (xo) xo[i] = x[i] - rr * gr / (sqrtf(hn) + c[1]);
      } else if (kind < 3) {
        float vn = c[1] * s1[i] + (t > 0 ? c[2] : 1.0f) * gr;
        if (o1) o1[i] = vn;
        if (xo) xo[i] = kind == 1 ? x[i] - r * vn : x[i] - r * (gr + c[1] * vn);
      } else {
        float vn = c[1] * s1[i] + (1.0f - c[1]) * gr, hn = c[2] * s2[i] + (1.0f - c[2]) * (gr * gr);
        float ra = t > 0 ? r * sqrtf(1.0f - powi(c[2], t)) / (1.0f - powi(c[1], t)) : r;
        if (o1) o1[i] = vn;
        if (o2) o2[i] = hn;
        if (xo) xo[i] = (1.0f - c[4]) * (x[i] - ra * (vn / (sqrtf(hn) + c[3])));
      }
    }
  }
  return 0;
}

static int opt_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  int ns = nstate(n), per = 2 + ns, groups = (n->nin - 2) / per;
  cl_int kind = kind_of(n);
  float c[5];
  consts(n, c);
  cl_kernel k = kiln_cl_kernel(x->d, "training.cl", "", "optim_step", err);
  if (!k) return err->status;
  cl_mem R = kiln_in_buf(x, n, 0), T = kiln_in_buf(x, n, 1);
  for (int q = 0; q < groups; q++) {
    cl_mem xi = kiln_in_buf(x, n, 2 + q), gi = kiln_in_buf(x, n, 2 + groups + q), s1 = kiln_in_buf(x, n, 2 + 2 * groups + q);
    cl_mem s2 = ns > 1 ? kiln_in_buf(x, n, 2 + 3 * groups + q) : s1;
    /* an output nobody reads has no buffer: a scratch one takes its writes */
    cl_mem scratch = NULL;
    cl_mem o[3];
    for (int s = 0; s < 3; s++) {
      int slot = s * groups + q;
      o[s] = s <= ns ? kiln_out_buf(x, n, slot) : NULL;
      if (!o[s]) {
        if (!scratch && !(scratch = kiln_exec_scratch(x, n, 0, kiln_value_bytes(kiln_in(x->g, n, 2 + q)) + 4, err))) return err->status;
        o[s] = scratch;
      }
    }
    cl_mem v = kind == 0 ? xi : s1, h = kind == 0 ? s1 : kind == 3 ? s2 : xi;
    cl_mem vo = kind == 0 ? o[2] : o[1], ho = kind == 0 ? o[1] : kind == 3 ? o[2] : o[2];
    cl_long cnt = kiln_value_numel(kiln_in(x->g, n, 2 + q));
    if (kiln_cl_args(k, err, KARG(kind), KARG(R), KARG(T), KARG(xi), KARG(gi), KARG(v), KARG(h), KARG(o[0]), KARG(vo), KARG(ho), KARG(cnt), KARG(c[0]), KARG(c[1]),
                     KARG(c[2]), KARG(c[3]), KARG(c[4]), KEND))
      return err->status;
    size_t gws = (size_t)cnt;
    int rc = kiln_exec_launch(x, k, 1, &gws, NULL, err);
    if (rc) return rc;
  }
  return 0;
}

const kiln_op_def kiln_ops_training[] = {
  {.name = "Adagrad", .infer = opt_infer, .ref = opt_ref, .dev = opt_dev, .dev_check = opt_check},
  {.name = "Momentum", .infer = opt_infer, .ref = opt_ref, .dev = opt_dev, .dev_check = opt_check},
  {.name = "Adam", .infer = opt_infer, .ref = opt_ref, .dev = opt_dev, .dev_check = opt_check},
  {NULL},
};
