/* fusion.c: element-wise fusion groups chosen at plan time.
 *
 * Chains (and trees) of float32 element-wise nodes whose intermediate values
 * have one consumer and the output's shape are candidates for one generated
 * kernel: a work-item evaluates the whole expression for FUSE_RUN
 * consecutive elements of an output row, reading the group's external
 * inputs with broadcasting. For each candidate
 * the decision weighs the predicted time of the fused kernel against the
 * separate kernels (the device's probed launch overhead and bandwidth when it
 * was probed; otherwise traffic and launches counted in the same units) and
 * refuses groups whose generated kernel would be too large (external inputs,
 * live temporaries). Every decision, taken or refused, is kept with its
 * numbers for `kiln plan`. */
#include "kiln_internal.h"
#include "family.h"
#include <math.h>

#define MAX_EXT 8      /* external inputs of a fused kernel */
#define MAX_TEMPS 48   /* nodes in one fused kernel (register pressure) */
#define FUSE_RUN 16    /* consecutive elements of a row per work-item in a fused element-wise kernel */

/* C expression of node n applied to temps a (and b) of w floats (1, or a
 * vector of 2, 4, 8, 16) into buf; 0 if fusable. Sigmoid's exp and Erf
 * are kiln_exp<w> and kiln_erf<w> (kernels/fastmath.cl: POCL's exp cost as
 * much as the memory traffic of a SiLU kernel, its erf ~60 ns an element);
 * Exp, Elu and Softplus keep the builtin (their results are exp's own,
 * infinity included). */
static int node_expr(kiln_graph *g, kiln_node *n, const char *a, const char *b, int w, char *buf, size_t len) {
  const char *op = n->op_type;
  char fa[48], fb[48];
  float alpha, beta;
#define LIT(dst, v) do { if (!isfinite(v)) return -1; snprintf(dst, sizeof dst, "((float)%.9g)", (double)(v)); } while (0)
  if (b) {
    if (!strcmp(op, "Add")) snprintf(buf, len, "%s + %s", a, b);
    else if (!strcmp(op, "Sub")) snprintf(buf, len, "%s - %s", a, b);
    else if (!strcmp(op, "Mul")) snprintf(buf, len, "%s * %s", a, b);
    else if (!strcmp(op, "Div")) snprintf(buf, len, "%s / %s", a, b);
    else if (!strcmp(op, "Pow")) {
      /* a constant scalar exponent of 2, 3, 0.5 or -1: no pow() (as ops/elementwise.c) */
      kiln_value *e = kiln_in(g, n, 1);
      double c = e && e->is_const && e->data && kiln_value_numel(e) == 1 ? kiln_value_getf(e, 0) : NAN;
      if (c == 2.0) snprintf(buf, len, "(%s * %s)", a, a);
      else if (c == 3.0) snprintf(buf, len, "(%s * %s * %s)", a, a, a);
      else if (c == 0.5) snprintf(buf, len, "(%s == -INFINITY ? INFINITY : sqrt(%s) + 0.0f)", a, a);
      else if (c == -1.0) snprintf(buf, len, "(1.0f / %s)", a);
      else snprintf(buf, len, "pow(%s, %s)", a, b);
    }
    /* NaN propagates as in numpy (fmax/fmin would drop it) */
    else if (!strcmp(op, "Max")) snprintf(buf, len, "(isnan(%s) || isnan(%s) ? %s + %s : fmax(%s, %s))", a, b, a, b, a, b);
    else if (!strcmp(op, "Min")) snprintf(buf, len, "(isnan(%s) || isnan(%s) ? %s + %s : fmin(%s, %s))", a, b, a, b, a, b);
    else return -1;
    return 0;
  }
  if (!strcmp(op, "Relu")) snprintf(buf, len, "(isnan(%s) ? %s : fmax(%s, 0.0f))", a, a, a);
  else if (!strcmp(op, "Sigmoid")) snprintf(buf, len, "1.0f / (1.0f + kiln_exp%d(-%s))", w, a);
  else if (!strcmp(op, "Tanh")) snprintf(buf, len, "tanh(%s)", a);
  else if (!strcmp(op, "Exp")) snprintf(buf, len, "exp(%s)", a);
  else if (!strcmp(op, "Log")) snprintf(buf, len, "log(%s)", a);
  else if (!strcmp(op, "Sqrt")) snprintf(buf, len, "sqrt(%s)", a);
  else if (!strcmp(op, "Neg")) snprintf(buf, len, "-%s", a);
  else if (!strcmp(op, "Abs")) snprintf(buf, len, "fabs(%s)", a);
  else if (!strcmp(op, "Erf")) snprintf(buf, len, "kiln_erf%d(%s)", w, a);
  else if (!strcmp(op, "Reciprocal")) snprintf(buf, len, "1.0f / %s", a);
  else if (!strcmp(op, "Floor")) snprintf(buf, len, "floor(%s)", a);
  else if (!strcmp(op, "Ceil")) snprintf(buf, len, "ceil(%s)", a);
  else if (!strcmp(op, "Sin")) snprintf(buf, len, "sin(%s)", a);
  else if (!strcmp(op, "Cos")) snprintf(buf, len, "cos(%s)", a);
  else if (!strcmp(op, "Identity")) snprintf(buf, len, "%s", a);
  else if (!strcmp(op, "Softplus")) snprintf(buf, len, "(%s > 20.0f ? %s : log1p(exp(%s)))", a, a, a);
  else if (!strcmp(op, "HardSwish")) snprintf(buf, len, "%s * clamp(%s / 6.0f + 0.5f, 0.0f, 1.0f)", a, a);
  else if (!strcmp(op, "LeakyRelu")) { alpha = kiln_attr_float(n, "alpha", 0.01f); LIT(fa, alpha); snprintf(buf, len, "(%s >= 0.0f ? %s : %s * %s)", a, a, fa, a); }
  else if (!strcmp(op, "Elu")) { alpha = kiln_attr_float(n, "alpha", 1.0f); LIT(fa, alpha); snprintf(buf, len, "(%s > 0.0f ? %s : %s * (exp(%s) - 1.0f))", a, a, fa, a); }
  else if (!strcmp(op, "HardSigmoid")) {
    alpha = kiln_attr_float(n, "alpha", 0.2f); beta = kiln_attr_float(n, "beta", 0.5f);
    LIT(fa, alpha); LIT(fb, beta);
    snprintf(buf, len, "clamp(%s * %s + %s, 0.0f, 1.0f)", fa, a, fb);
  } else if (!strcmp(op, "Clip")) {
    float lo = -INFINITY, hi = INFINITY;
    if (n->opset < 11) { lo = kiln_attr_float(n, "min", -INFINITY); hi = kiln_attr_float(n, "max", INFINITY); }
    else {
      kiln_value *vl = kiln_in(g, n, 1), *vh = kiln_in(g, n, 2);
      if ((vl && !vl->is_const) || (vh && !vh->is_const)) return -1;
      if (vl) lo = (float)kiln_value_getf(vl, 0);
      if (vh) hi = (float)kiln_value_getf(vh, 0);
    }
    if (isnan(lo) || isnan(hi)) return -1;
    snprintf(fa, sizeof fa, isinf(lo) ? "(-INFINITY)" : "((float)%.9g)", (double)lo);
    snprintf(fb, sizeof fb, isinf(hi) ? "(INFINITY)" : "((float)%.9g)", (double)hi);
    snprintf(buf, len, "(isnan(%s) ? %s : fmin(fmax(%s, %s), %s))", a, a, a, fa, fb);
  } else return -1;
#undef LIT
  return 0;
}

/* Data inputs of a fusable node (Clip's bounds are folded into the expression). */
static int data_inputs(const kiln_node *n) {
  if (!strcmp(n->op_type, "Clip")) return 1;
  return n->nin;
}

static bool fusable(kiln_graph *g, kiln_node *n) {
  if (n->folded || n->nout != 1 || n->out[0] < 0 || n->fuse_root >= 0) return false;
  int nd = data_inputs(n);
  if (nd < 1 || nd > 2) return false;
  kiln_value *y = kiln_out(g, n, 0);
  if (y->dtype != KILN_DT_FLOAT || y->rank < 0) return false;
  for (int k = 0; k < nd; k++) {
    kiln_value *v = kiln_in(g, n, k);
    if (!v || v->dtype != KILN_DT_FLOAT) return false;
  }
  char buf[256];
  return node_expr(g, n, "a", nd == 2 ? "b" : NULL, 1, buf, sizeof buf) == 0;
}

static bool same_shape(const kiln_value *a, const kiln_value *b) {
  return a->rank == b->rank && !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank);
}

void kiln_fusion_free(kiln_graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->fgroup) {
      free(n->fgroup->nodes);
      free(n->fgroup->src);
      for (int k = 0; k < KILN_EPI_SLOTS; k++) free(n->fgroup->full_src[k]);
      free(n->fgroup);
      n->fgroup = NULL;
    }
    n->epi = NULL;
    n->im2col_fused = false;
    n->fuse_root = -1;
  }
}

/* Builds the kernel source of group grp (nodes in topological order). */
static int generate(kiln_graph *g, kiln_fgroup *grp, kiln_error *err) {
  size_t cap = 4096 + (size_t)grp->nnodes * 512, o = 0;
  char *src = malloc(cap);
  if (!src) return kiln__err(err, KILN_ENOMEM, "out of memory");
  kiln_value *y = &g->vals[g->nodes[grp->nodes[grp->nnodes - 1]].out[0]];
  o += (size_t)snprintf(src + o, cap - o, "/* generated by kiln: fused element-wise group of %d nodes */\n__kernel void fused(", grp->nnodes);
  /* operands and output in their storage: fp16 ones through kiln_ldh / kiln_svh (kernels/half_io.cl) */
  for (int e = 0; e < grp->next; e++) o += (size_t)snprintf(src + o, cap - o, "__global const %s *e%d, ", g->vals[grp->ext[e]].half ? "half" : "float", e);
  /* a work-item takes FUSE_RUN consecutive elements of one row (the
   * output's last axis): broadcast operands' row offsets are computed once
   * (divisions per work-item, not per element) and stepped by their stride
   * along the row */
  o += (size_t)snprintf(src + o, cap - o,
                        "__global %s *y, __global const long *meta, long n) {\n  const int r = (int)meta[0];\n"
                        "  const long L = r > 0 ? meta[r] : 1, row = get_global_id(1), j0 = get_global_id(0) * %d;\n"
                        "  if (j0 >= L) return;\n  const long j1 = min(j0 + %d, L), i0 = row * L;\n", y->half ? "half" : "float", FUSE_RUN, FUSE_RUN);
  for (int e = 0; e < grp->next; e++) {
    kiln_value *v = &g->vals[grp->ext[e]];
    if (same_shape(v, y) || kiln_value_numel(v) == 1) continue;
    o += (size_t)snprintf(src + o, cap - o,
                          "  long o%d = 0;\n  for (long d = r - 2, rem = row; d >= 0; d--) { long c = rem %% meta[1 + d]; rem /= meta[1 + d]; o%d += c * meta[9 + %d * 8 + d]; }\n"
                          "  const long s%d = r > 0 ? meta[9 + %d * 8 + r - 1] : 0;\n", e, e, e, e, e);
  }
  o += (size_t)snprintf(src + o, cap - o, "  for (long j = j0; j < j1; j++) {\n  const long i = i0 + j;\n");
  for (int e = 0; e < grp->next; e++) {
    kiln_value *v = &g->vals[grp->ext[e]];
    char at[64];
    if (same_shape(v, y)) snprintf(at, sizeof at, "i");
    else if (kiln_value_numel(v) == 1) snprintf(at, sizeof at, "0");
    else snprintf(at, sizeof at, "o%d + j * s%d", e, e);
    if (v->half) o += (size_t)snprintf(src + o, cap - o, "  float x%d = kiln_ldh(e%d, %s);\n", e, e, at);
    else o += (size_t)snprintf(src + o, cap - o, "  float x%d = e%d[%s];\n", e, e, at);
  }
  for (int k = 0; k < grp->nnodes; k++) {
    kiln_node *n = &g->nodes[grp->nodes[k]];
    char opnd[2][16], expr[512];
    int nd = data_inputs(n);
    for (int q = 0; q < nd; q++) {
      int v = n->in[q], found = 0;
      for (int j = 0; j < k && !found; j++)
        if (g->nodes[grp->nodes[j]].out[0] == v) { snprintf(opnd[q], sizeof opnd[q], "t%d", j); found = 1; }
      for (int e = 0; e < grp->next && !found; e++)
        if (grp->ext[e] == v) { snprintf(opnd[q], sizeof opnd[q], "x%d", e); found = 1; }
      if (!found) { free(src); return kiln__err(err, KILN_EINTERNAL, "fusion: operand of '%s' not found", n->name); }
    }
    if (node_expr(g, n, opnd[0], nd == 2 ? opnd[1] : NULL, 1, expr, sizeof expr)) { free(src); return kiln__err(err, KILN_EINTERNAL, "fusion: '%s' not expressible", n->name); }
    o += (size_t)snprintf(src + o, cap - o, "  float t%d = %s; /* %s */\n", k, expr, n->op_type);
  }
  if (y->half) o += (size_t)snprintf(src + o, cap - o, "  kiln_svh(y, i, t%d);\n  }\n}\n", grp->nnodes - 1);
  else o += (size_t)snprintf(src + o, cap - o, "  y[i] = t%d;\n  }\n}\n", grp->nnodes - 1);
  if (o >= cap) { free(src); return kiln__err(err, KILN_EINTERNAL, "fusion: generated source too long"); }
  grp->src = src;
  kiln_cl_src_key(src, grp->src_key);
  return 0;
}

/* ---- epilogues ------------------------------------------------------------
 * A Conv, Gemm or MatMul followed by element-wise nodes over its output
 * shape (activations, a residual Add, a bias or scale by a scalar or per
 * channel, SiLU and GELU as their ONNX node patterns) runs as one kernel: the
 * head's kernel passes every output value through a generated function
 * kiln_epi(v, i, c, e0, e1) before storing it (i: the flat output index, c:
 * the channel, axis 1 of a Conv or the last axis of a matrix product). The
 * epilogue's tensor operands are at most two buffers e0, e1, each of the
 * output's shape or one value per channel; scalar constants are compiled in
 * as literals. The group runs when its last node (the root) is reached; the
 * head's output and the inner values never get buffers. */

#define EPI_WINDOW 64    /* nodes after the head searched for the tail */
#define EPI_MAX_NODES 24 /* generated code size (compile time, registers) */
enum { EK_NONE, EK_FULL, EK_CHAN, EK_SCALAR, EK_CONST };

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

void kiln__fusion_sig(kiln_graph *g, const char *kind, const int *nodes, int n, char *buf, size_t len) {
  uint64_t h = 1469598103934665603ull;
  char ops[64] = "";
  size_t o = 0;
  for (int q = 0; q < n; q++) {
    const kiln_node *nd = &g->nodes[nodes[q]];
    h = fnv_bytes(h, nd->op_type, strlen(nd->op_type) + 1);
    if (o < sizeof ops) o += (size_t)snprintf(ops + o, sizeof ops - o, "%s%s", q ? "+" : "", nd->op_type);
    for (int k = 0; k < nd->nin; k++) {
      const kiln_value *v = kiln_in(g, nd, k);
      int64_t tag[2] = {v ? kiln_dev_dtype(v) : -1, v ? v->rank : -1};
      h = fnv_bytes(h, tag, sizeof tag);
      if (v) h = fnv_bytes(h, v->dims, sizeof(int64_t) * (size_t)v->rank);
      /* which member's output feeds it (the wiring inside the group) */
      int src = -1;
      for (int r = 0; r < q && v; r++)
        for (int u = 0; u < g->nodes[nodes[r]].nout; u++) if (g->nodes[nodes[r]].out[u] == nd->in[k]) src = r;
      h = fnv_bytes(h, &src, sizeof src);
    }
    for (int a = 0; a < nd->nattr; a++) {
      const kiln_attr *at = &nd->attrs[a];
      h = fnv_bytes(h, at->name, strlen(at->name) + 1);
      h = fnv_bytes(h, &at->type, sizeof at->type);
      h = fnv_bytes(h, &at->i, sizeof at->i);
      h = fnv_bytes(h, &at->f, sizeof at->f);
      if (at->n && at->ints) h = fnv_bytes(h, at->ints, sizeof(int64_t) * (size_t)at->n);
      if (at->n && at->floats) h = fnv_bytes(h, at->floats, sizeof(float) * (size_t)at->n);
      if (at->s) h = fnv_bytes(h, at->s, strlen(at->s));
    }
  }
  snprintf(buf, len, "%s:%.60s:%016llx", kind, ops, (unsigned long long)h);
}

bool kiln__fusion_choose(const kiln_fusion_costs *c, kiln_fusion_decision *d, bool pred_fused) {
  d->meas_fused_ns = d->meas_unfused_ns = -1;
  if (!c || !d->sig[0]) return pred_fused;
  if (c->force_sig && !strcmp(c->force_sig, d->sig)) return c->force_fused != 0;
  double f, u;
  if (!c->lookup || c->lookup(c->lookup_ctx, d->sig, &f, &u) || !(f > 0) || !(u > 0)) return pred_fused;
  d->meas_fused_ns = f;
  d->meas_unfused_ns = u;
  bool fused = f < u;
  snprintf(d->reason, sizeof d->reason, "%s: measured %.1f us fused vs %.1f us separate (predicted %.1f vs %.1f us)", fused ? "fused" : "rejected", f / 1e3,
           u / 1e3, d->pred_fused_ns / 1e3, d->pred_unfused_ns / 1e3);
  return fused;
}

static kiln_fusion_decision *dec_push(kiln_fusion_decision **dec, int *n, int *cap) {
  kiln_fusion_decision *nd = kiln__grow(*dec, *n, cap, sizeof *nd, 16);
  if (!nd) return NULL;
  *dec = nd;
  kiln_fusion_decision *d = &(*dec)[(*n)++];
  memset(d, 0, sizeof *d);
  return d;
}

static bool epi_head_ok(kiln_graph *g, kiln_node *n) {
  if (n->folded || n->nout != 1 || n->out[0] < 0 || n->fuse_root >= 0 || !n->op || !n->op->dev) return false;
  if (!(n->op->flags & KILN_OP_EPI_HEAD)) return false;
  kiln_value *y = kiln_out(g, n, 0), *a = kiln_in(g, n, 0);
  if (!y || y->dtype != KILN_DT_FLOAT || y->rank < 1 || !a || a->dtype != KILN_DT_FLOAT) return false;
  if (!(n->op->flags & KILN_OP_EPI_NCHW) && y->rank < 2) return false;
  kiln_error e = {0};
  return !n->op->dev_check || n->op->dev_check(g, n, &e) == 0;
}

/* How the epilogue reads value v (an operand from outside the group). */
static int ext_kind(const kiln_value *v, const kiln_value *y, int chan_axis) {
  if (v->dtype != KILN_DT_FLOAT || v->half != y->half || v->rank < 0) return EK_NONE; /* the epilogue reads the head's storage */
  if (kiln_value_numel(v) == 1) return v->is_const && v->data ? EK_CONST : EK_SCALAR;
  if (same_shape(v, y)) return EK_FULL;
  if (v->rank > y->rank) return EK_NONE;
  int off = y->rank - v->rank;
  if (chan_axis < off) return EK_NONE;
  for (int d = 0; d < v->rank; d++)
    if (v->dims[d] != (off + d == chan_axis ? y->dims[chan_axis] : 1)) return EK_NONE;
  return EK_CHAN;
}

static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ull; }
  return h;
}

/* The body of group G's epilogue (members G->nodes[1..]) appended to src at
 * *o (capacity cap): one "const <type> t<q> = ..." per member and the return
 * of the last. w = 1: on one output of type T (operands of a head in fp16
 * storage read through kiln_ldh); w = 4, 8, 16: on a vector of w outputs of
 * one channel (flat indices i..i+w-1), float heads; with row, a vector of w
 * outputs along the channel axis (channels c..c+w-1 of a row-major head:
 * MatMul, Gemm), whose per-channel operands are vectors too. 0, or -1 with
 * *bad the member that is not expressible (-2: a constant that is not
 * finite). */
static int epi_body(kiln_graph *g, const kiln_fgroup *G, const int *ekind, int w, bool row, bool half, char *src, size_t cap, size_t *o,
                    int *bad) {
  int hv = g->nodes[G->head].out[0];
  char ty[16];
  if (w == 1) snprintf(ty, sizeof ty, "T");
  else snprintf(ty, sizeof ty, "float%d", w);
  for (int q = 1; q < G->nnodes && *o < cap; q++) {
    kiln_node *n = &g->nodes[G->nodes[q]];
    char opnd[2][64], expr[640];
    int nd = data_inputs(n);
    *bad = q;
    for (int k = 0; k < nd; k++) {
      int v = n->in[k], found = 0;
      if (v == hv) { snprintf(opnd[k], sizeof opnd[k], "v"); found = 1; }
      for (int j = 1; j < q && !found; j++)
        if (g->nodes[G->nodes[j]].out[0] == v) { snprintf(opnd[k], sizeof opnd[k], "t%d", j); found = 1; }
      for (int e = 0; e < G->next && !found; e++)
        if (G->ext[e] == v) {
          const char *at = ekind[e] == EK_FULL ? "i" : ekind[e] == EK_CHAN ? "c" : "0";
          if (w > 1 && ekind[e] == EK_FULL) snprintf(opnd[k], sizeof opnd[k], "vload%d(0, e%d + i)", w, e);
          else if (w > 1 && row && ekind[e] == EK_CHAN) snprintf(opnd[k], sizeof opnd[k], "vload%d(0, e%d + c)", w, e);
          else if (w > 1) snprintf(opnd[k], sizeof opnd[k], "((float%d)(e%d[%s]))", w, e, at);
          else if (half) snprintf(opnd[k], sizeof opnd[k], "kiln_ldh(e%d, %s)", e, at);
          else snprintf(opnd[k], sizeof opnd[k], "e%d[%s]", e, at);
          found = 1;
        }
      if (!found) { /* a scalar constant */
        double c = kiln_value_getf(&g->vals[v], 0);
        if (!isfinite(c)) return -2;
        if (w == 1) snprintf(opnd[k], sizeof opnd[k], "((T)%.9g)", c); /* (the text enters the group's signature) */
        else snprintf(opnd[k], sizeof opnd[k], "((float%d)(%.9g))", w, c);
      }
    }
    if (node_expr(g, n, opnd[0], nd == 2 ? opnd[1] : NULL, w, expr, sizeof expr)) return -1;
    *o += (size_t)snprintf(src + *o, cap - *o, "  const %s t%d = %s; /* %s */\n", ty, q, expr, n->op_type);
  }
  *o += (size_t)snprintf(src + *o, cap - *o, "  return t%d;\n}\n", G->nnodes - 1);
  return 0;
}

/* kiln_epi() of group G (members G->nodes[1..]) into G->src, and its signature. */
static int epi_generate(kiln_graph *g, kiln_fgroup *G, const int *ekind, kiln_error *err) {
  size_t cap = 2048 + (size_t)G->nnodes * 768 * 7, o = 0;
  char *src = malloc(cap);
  if (!src) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int hv = g->nodes[G->head].out[0];
  /* a head in fp16 storage (built with -DT=half -DT_DTYPE=10) computes in
   * float and its operands are halfs, read through kiln_ldh (kernels/half_io.cl) */
  bool half = g->vals[hv].half;
  o += (size_t)snprintf(src + o, cap - o,
                        "/* generated by kiln: epilogue of %d nodes after '%s' */\n%s#define KILN_EPI 1\n"
                        "inline T kiln_epi(T v, long i, int c, __global const %s *e0, __global const %s *e1) {\n",
                        G->nnodes - 1, g->nodes[G->head].name, half ? "#undef T\n#define T float\n" : "", half ? "half" : "T", half ? "half" : "T");
  int bad = 0, rc = epi_body(g, G, ekind, 1, false, half, src, cap, &o, &bad);
  if (rc) {
    free(src);
    return kiln__err(err, KILN_EINTERNAL, rc == -2 ? "epilogue: constant of '%s' is not finite" : "epilogue: '%s' not expressible", g->nodes[G->nodes[bad]].name);
  }
  /* the same on vectors of 4, 8 and 16 consecutive outputs of one channel
   * (kiln_epi4/8/16, KILN_EPIV): kernels whose stores are whole vectors run
   * it once a vector (exp and the rest as vector builtins, where the
   * per-element loop called exp once a lane). efficientnet_b0's layers +
   * SiLU on POCL (kernel time, alternated, load 5): 1x1 16->96 at 112x112
   * 1.3-2.3 -> 0.75 ms, depthwise 3x3 32ch 0.58 -> 0.23 ms, the 3x3 s2 stem
   * 1.2 -> 0.9 ms. (An earlier polynomial exp of our own was slower than
   * POCL's: it rounded with rint, a call a lane on POCL; kernels/fastmath.cl
   * rounds by an addition.) Not for heads in fp16 storage (operands
   * through vload_half). And on vectors along a row's channels
   * (kiln_epir4/8/16, KILN_EPIR: per-channel operands as vectors), for
   * MatMul and Gemm: bert_encoder's MatMul + bias + GELU ran its epilogue
   * an element at a time. */
  if (!half) {
    o += (size_t)snprintf(src + o, cap - o, "#define KILN_EPIV 1\n#define KILN_EPIR 1\n");
    /* no operand of the output's size: the row form also suits a vector of
     * channels at one pixel of an NCHW output (conv_dirc's accumulators) */
    bool full = false;
    for (int e = 0; e < G->next; e++) full = full || ekind[e] == EK_FULL;
    if (!full) o += (size_t)snprintf(src + o, cap - o, "#define KILN_EPI_NOFULL 1\n");
    G->nofull = !full;
    for (int r = 0; r < 2; r++)
      for (int w = 4; w <= 16 && o < cap; w *= 2) {
        o += (size_t)snprintf(src + o, cap - o, "inline float%d kiln_epi%s%d(float%d v, long i, int c, __global const T *e0, __global const T *e1) {\n", w,
                              r ? "r" : "", w, w);
        if (epi_body(g, G, ekind, w, r, false, src, cap, &o, &bad)) {
          free(src);
          return kiln__err(err, KILN_EINTERNAL, "epilogue: '%s' not expressible on vectors", g->nodes[G->nodes[bad]].name);
        }
      }
  }
  if (o >= cap) { free(src); return kiln__err(err, KILN_EINTERNAL, "epilogue: generated source too long"); }
  G->src = src;
  kiln_cl_src_key(src, G->src_key);
  /* signature: the ops, each operand kind, and a hash of the code (constants) */
  size_t so = 0;
  for (int q = 1; q < G->nnodes && so < sizeof G->sig - 12; q++)
    so += (size_t)snprintf(G->sig + so, sizeof G->sig - 12 - so, "%s%s", q > 1 ? "+" : "", g->nodes[G->nodes[q]].op_type);
  if (so > sizeof G->sig - 12) so = sizeof G->sig - 12;
  snprintf(G->sig + so, sizeof G->sig - so, "#%08x", (unsigned)(fnv(strchr(src, '\n') + 1) & 0xffffffffu));
  return 0;
}

/* Is value v read by any non-folded node outside the set in[] (or a graph output)? */
static bool escapes(kiln_graph *g, int v, const bool *in) {
  if (g->vals[v].is_output) return true;
  for (int j = 0; j < g->nnodes; j++) {
    kiln_node *n = &g->nodes[j];
    if (n->folded || in[j]) continue;
    for (int k = 0; k < n->nin; k++) if (n->in[k] == v) return true;
  }
  return false;
}

static int plan_epilogues(kiln_graph *g, const kiln_fusion_costs *costs, kiln_fusion_decision **dec, int *ndec, int *cap, kiln_error *err) {
  int nn = g->nnodes;
  bool *in = calloc((size_t)nn + 1, sizeof(bool)), *vin = calloc((size_t)g->nvals + 1, sizeof(bool));
  int *mem = malloc(sizeof(int) * (EPI_WINDOW + 1));
  if (!in || !vin || !mem) { free(in); free(vin); free(mem); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  double bw = costs && costs->bw_gbps > 0 ? costs->bw_gbps : 10.0, launch_ns = costs && costs->launch_us > 0 ? costs->launch_us * 1e3 : 30e3;
  int rc = 0;
  for (int h = 0; h < nn && !rc; h++) {
    kiln_node *H = &g->nodes[h];
    if (!epi_head_ok(g, H)) continue;
    kiln_value *y = kiln_out(g, H, 0);
    int chan = (H->op->flags & KILN_OP_EPI_NCHW) ? 1 : y->rank - 1;
    int nm = 0, next = 0, ext[2] = {-1, -1}, ekind[2] = {0, 0};
    vin[H->out[0]] = true;
    for (int j = h + 1; j < nn && j <= h + EPI_WINDOW && nm < EPI_MAX_NODES; j++) {
      kiln_node *n = &g->nodes[j];
      /* the head's kernel stores in its own storage: a tail in the other stays out */
      if (!fusable(g, n) || !same_shape(kiln_out(g, n, 0), y) || kiln_out(g, n, 0)->half != y->half) continue;
      int nd = data_inputs(n), uses = 0, ok = 1, add[2] = {-1, -1}, addk[2] = {0, 0}, nadd = 0;
      for (int k = 0; k < nd && ok; k++) {
        int v = n->in[k];
        if (v < 0) { ok = 0; break; }
        if (vin[v]) { uses = 1; continue; }
        int kind = ext_kind(&g->vals[v], y, chan);
        if (!kind) { ok = 0; break; }
        if (kind == EK_CONST) continue;
        bool seen = v == ext[0] || v == ext[1] || v == add[0];
        if (!seen) { if (next + nadd >= 2) ok = 0; else { add[nadd] = v; addk[nadd++] = kind; } }
      }
      if (!ok || !uses) continue;
      for (int a = 0; a < nadd; a++) { ext[next] = add[a]; ekind[next++] = addk[a]; }
      mem[nm++] = j;
      in[j] = true;
      vin[n->out[0]] = true;
    }
    /* the longest prefix whose inner values are read only inside it */
    in[h] = true;
    int keep = nm;
    while (keep > 0) {
      bool ok = !escapes(g, H->out[0], in);
      for (int q = 0; q < keep - 1 && ok; q++) ok = !escapes(g, g->nodes[mem[q]].out[0], in);
      if (ok) break;
      keep--;
      in[mem[keep]] = false;
    }
    /* clean the scratch marks */
    for (int q = 0; q < nm; q++) { in[mem[q]] = false; vin[g->nodes[mem[q]].out[0]] = false; }
    in[h] = false;
    vin[H->out[0]] = false;
    if (keep == 0) continue;
    /* the buffers the kept members read */
    int kext[2] = {-1, -1}, kkind[2] = {0, 0}, nk = 0;
    for (int q = 0; q < keep; q++) {
      kiln_node *n = &g->nodes[mem[q]];
      for (int k = 0; k < data_inputs(n); k++)
        for (int e = 0; e < next; e++)
          if (n->in[k] == ext[e] && kext[0] != ext[e] && kext[1] != ext[e]) { kext[nk] = ext[e]; kkind[nk++] = ekind[e]; }
    }
    kiln_fgroup *G = calloc(1, sizeof *G);
    if (!G || !(G->nodes = malloc(sizeof(int) * (size_t)(keep + 1)))) { free(G); rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
    G->head = h;
    G->nodes[G->nnodes++] = h;
    for (int q = 0; q < keep; q++) G->nodes[G->nnodes++] = mem[q];
    for (int e = 0; e < nk; e++) G->ext[G->next++] = kext[e];
    /* predictions: each separate kernel launches once, reads its operands
     * and writes its output; fused, only the tensor operands are read (by the
     * head's kernel) and the head's output is not written and re-read */
    double unfused = 0, fused = 0, ybytes = (double)kiln_value_dev_bytes(y), saved = 0;
    for (int q = 0; q < keep; q++) {
      kiln_node *n = &g->nodes[mem[q]];
      double b = ybytes;
      for (int k = 0; k < data_inputs(n); k++) { kiln_value *v = kiln_in(g, n, k); if (v && !(v->is_const && kiln_value_numel(v) == 1)) b += (double)kiln_value_dev_bytes(v); }
      unfused += launch_ns + b / bw;
    }
    for (int e = 0; e < nk; e++) fused += (double)kiln_value_dev_bytes(&g->vals[kext[e]]) / bw;
    saved = 2 * ybytes * keep;
    kiln_fusion_decision *d = dec_push(dec, ndec, cap);
    if (!d) { free(G->nodes); free(G); rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
    size_t o = 0;
    for (int q = 0; q < G->nnodes && o < sizeof d->nodes; q++)
      o += (size_t)snprintf(d->nodes + o, sizeof d->nodes - o, "%s%s", q ? "+" : "", g->nodes[G->nodes[q]].op_type);
    int root = G->nodes[G->nnodes - 1];
    snprintf(d->root, sizeof d->root, "%s", g->nodes[root].name);
    d->kind = "epilogue";
    d->nnodes = G->nnodes;
    d->pred_fused_ns = fused;
    d->pred_unfused_ns = unfused;
    d->measured = costs && costs->probed;
    kiln__fusion_sig(g, "epilogue", G->nodes, G->nnodes, d->sig, sizeof d->sig);
    d->first_node = G->nodes[0];
    d->last_node = G->nodes[G->nnodes - 1];
    if (fused >= unfused)
      snprintf(d->reason, sizeof d->reason, "rejected: predicted epilogue %.1f us in %s >= %.1f us separate", fused / 1e3, H->op_type, unfused / 1e3);
    else
      snprintf(d->reason, sizeof d->reason, "fused into %s's kernel: predicted +%.1f us vs %.1f us separate (%d launches and %.0f kB of intermediates saved)",
               H->op_type, fused / 1e3, unfused / 1e3, keep, saved / 1024);
    if (!kiln__fusion_choose(costs, d, fused < unfused)) {
      free(G->nodes);
      free(G);
      continue;
    }
    if ((rc = epi_generate(g, G, kkind, err)) != 0) { free(G->nodes); free(G); break; }
    d->fused = true;
    g->nodes[root].fgroup = G;
    H->epi = G;
    for (int q = 0; q < G->nnodes; q++) g->nodes[G->nodes[q]].fuse_root = root;
  }
  free(in);
  free(vin);
  free(mem);
  return rc;
}

/* im2col copies that the GEMM can do without (1x1 convs): reading the input
 * itself saves a launch and the copy, but gathers columns. */
static int plan_im2col(kiln_graph *g, const kiln_fusion_costs *costs, kiln_fusion_decision **dec, int *ndec, int *cap, kiln_error *err) {
  double bw = costs && costs->bw_gbps > 0 ? costs->bw_gbps : 10.0, launch_ns = costs && costs->launch_us > 0 ? costs->launch_us * 1e3 : 30e3;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    n->im2col_fused = false;
    double copy, direct;
    char why[128];
    if (kiln__conv_im2col_costs(g, n, bw, launch_ns, &copy, &direct, why, sizeof why)) continue;
    kiln_fusion_decision *d = dec_push(dec, ndec, cap);
    if (!d) return kiln__err(err, KILN_ENOMEM, "out of memory");
    snprintf(d->root, sizeof d->root, "%s", n->name);
    snprintf(d->nodes, sizeof d->nodes, "im2col+Conv");
    d->kind = "im2col";
    d->nnodes = 1;
    d->pred_fused_ns = direct;
    d->pred_unfused_ns = copy;
    d->measured = costs && costs->probed;
    bool pred = direct < copy;
    snprintf(d->reason, sizeof d->reason, "%s: GEMM on the input predicted %.1f us vs im2col copy + GEMM %.1f us (%s)", pred ? "fused" : "rejected",
             direct / 1e3, copy / 1e3, why);
    kiln__fusion_sig(g, "im2col", &i, 1, d->sig, sizeof d->sig);
    d->first_node = d->last_node = i;
    d->fused = kiln__fusion_choose(costs, d, pred);
    n->im2col_fused = d->fused;
  }
  return 0;
}

int kiln_node_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  if (n->fgroup) return kiln_fusion_run(x, n, err);
  if (n->fuse_root >= 0) return 0;
  return n->op->dev(x, n, err);
}

kiln_node *kiln_epi_result_node(kiln_graph *g, kiln_node *n) {
  return n->epi ? &g->nodes[n->epi->nodes[n->epi->nnodes - 1]] : n;
}

cl_mem kiln_epi_out(kiln_exec *x, kiln_node *n) { return kiln_out_buf(x, kiln_epi_result_node(x->g, n), 0); }

void kiln_epi_bufs(kiln_exec *x, kiln_node *n, cl_mem fallback, cl_mem e[2]) {
  e[0] = e[1] = fallback;
  if (!n->epi) return;
  for (int k = 0; k < n->epi->next && k < 2; k++) e[k] = x->g->vals[n->epi->ext[k]].buf;
}

cl_kernel kiln_epi_kernel(kiln_exec *x, kiln_node *n, const char *file, const char *opts, const char *name, kiln_error *err) {
  kiln_fgroup *G = n->epi;
  if (!G) return kiln_cl_kernel(x->d, file, opts, name, err);
  int slot = kiln_family_epi_slot(file);
  if (slot < 0 || slot >= KILN_EPI_SLOTS) { kiln__err(err, KILN_EINTERNAL, "kernels/%s takes no epilogue (kernels/family.c)", file); return NULL; }
  if (!G->full_src[slot]) {
    char *owned;
    const char *body = kiln_cl_source_in(x->d->opt.kernel_dir, file, &owned);
    if (!body) { kiln__err(err, KILN_EINTERNAL, "kernels/%s not found", file); return NULL; }
    size_t a = strlen(G->src), b = strlen(body);
    char *s = malloc(a + b + 1);
    if (!s) { free(owned); kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
    memcpy(s, G->src, a);
    memcpy(s + a, body, b + 1);
    free(owned);
    G->full_src[slot] = s;
    kiln_cl_src_key(s, G->full_key[slot]);
  }
  return kiln_cl_kernel_src(x->d, G->full_key[slot], G->full_src[slot], opts, name, err);
}

int kiln_epi_ref(kiln_device *d, kiln_graph *g, kiln_node *n, void **host, kiln_error *err) {
  kiln_fgroup *G = n->epi;
  if (!G) return 0;
  for (int e = 0; e < G->next; e++) {
    int v = G->ext[e];
    kiln_value *val = &g->vals[v];
    if (val->is_const || !val->buf) continue;
    size_t b = kiln_value_bytes(val);
    free(host[v]);
    if (!(host[v] = malloc(b ? b : 1))) return kiln__err(err, KILN_ENOMEM, "out of memory");
    int rc = kiln__value_read(d, val, host[v], err);
    if (rc) return rc;
  }
  for (int q = 1; q < G->nnodes; q++) {
    int rc = kiln_node_run_ref_host(g, &g->nodes[G->nodes[q]], host, err);
    if (rc) return rc;
  }
  return 0;
}

int kiln_fusion_plan(kiln_graph *g, const kiln_fusion_costs *costs, kiln_fusion_decision **decisions, int *ndec, kiln_error *err) {
  kiln_fusion_free(g);
  *decisions = NULL;
  *ndec = 0;
  int nn = g->nnodes;
  int rc = 0, cap = 0;
  kiln_fusion_decision *dec = NULL;
  /* epilogues first: an element-wise tail belongs in its producer's kernel */
  if ((rc = plan_epilogues(g, costs, &dec, ndec, &cap, err)) != 0 || (rc = plan_im2col(g, costs, &dec, ndec, &cap, err)) != 0) {
    free(dec);
    kiln_fusion_free(g);
    *ndec = 0;
    return rc;
  }
  int *grp = malloc(sizeof(int) * (size_t)(nn + 1)), *cons = calloc((size_t)g->nvals + 1, sizeof(int));
  if (!grp || !cons) { free(grp); free(cons); free(dec); kiln_fusion_free(g); *ndec = 0; return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  for (int i = 0; i < nn; i++) {
    kiln_node *n = &g->nodes[i];
    grp[i] = -1;
    if (n->folded) continue;
    for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0) cons[n->in[k]]++;
  }
  /* union of producer groups into consumers (group id = root node index) */
  for (int i = 0; i < nn; i++) {
    kiln_node *n = &g->nodes[i];
    if (!fusable(g, n)) continue;
    grp[i] = i;
    kiln_value *y = kiln_out(g, n, 0);
    for (int k = 0; k < data_inputs(n); k++) {
      int v = n->in[k];
      if (v < 0) continue;
      int p = g->vals[v].producer;
      if (p < 0 || grp[p] < 0 || cons[v] != 1 || g->vals[v].is_output || !same_shape(&g->vals[v], y)) continue;
      int old = grp[p];
      for (int j = 0; j <= i; j++) if (grp[j] == old) grp[j] = i;
    }
  }
  for (int i = 0; i < nn && !rc; i++) {
    if (grp[i] != i) continue;
    int cnt = 0;
    for (int j = 0; j <= i; j++) cnt += grp[j] == i;
    if (cnt < 2) continue;
    kiln_fgroup *G = calloc(1, sizeof *G);
    if (!G || !(G->nodes = malloc(sizeof(int) * (size_t)cnt))) { free(G); rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
    G->head = -1;
    for (int j = 0; j <= i; j++) if (grp[j] == i) G->nodes[G->nnodes++] = j;
    /* external inputs: values read by the group that no group node produces */
    bool too_many = false;
    double ext_bytes = 0, internal_bytes = 0;
    for (int q = 0; q < G->nnodes; q++) {
      kiln_node *n = &g->nodes[G->nodes[q]];
      if (q < G->nnodes - 1) internal_bytes += (double)kiln_value_dev_bytes(kiln_out(g, n, 0));
      for (int k = 0; k < data_inputs(n); k++) {
        int v = n->in[k];
        int p = g->vals[v].producer;
        if (p >= 0 && grp[p] == i) continue;
        int seen = 0;
        for (int e = 0; e < G->next; e++) seen |= G->ext[e] == v;
        if (seen) continue;
        if (G->next == MAX_EXT) { too_many = true; continue; }
        G->ext[G->next++] = v;
        ext_bytes += (double)kiln_value_dev_bytes(&g->vals[v]);
      }
    }
    kiln_value *y = kiln_out(g, &g->nodes[i], 0);
    double out_bytes = (double)kiln_value_dev_bytes(y);
    /* predictions: separate kernels move every intermediate twice (write, read) and launch once each */
    double bw = costs && costs->bw_gbps > 0 ? costs->bw_gbps : 10.0, launch_ns = costs && costs->launch_us > 0 ? costs->launch_us * 1e3 : 30e3;
    double unfused = G->nnodes * launch_ns + (ext_bytes + out_bytes + 2 * internal_bytes) / bw;
    double fused = launch_ns + (ext_bytes + out_bytes) / bw;
    kiln_fusion_decision *d = dec_push(&dec, ndec, &cap);
    if (!d) { free(G->nodes); free(G); rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
    size_t o = 0;
    for (int q = 0; q < G->nnodes && o < sizeof d->nodes; q++)
      o += (size_t)snprintf(d->nodes + o, sizeof d->nodes - o, "%s%s", q ? "+" : "", g->nodes[G->nodes[q]].op_type);
    snprintf(d->root, sizeof d->root, "%s", g->nodes[i].name);
    d->kind = "elementwise";
    d->nnodes = G->nnodes;
    d->pred_fused_ns = fused;
    d->pred_unfused_ns = unfused;
    d->measured = costs && costs->probed;
    if (too_many) snprintf(d->reason, sizeof d->reason, "rejected: more than %d external inputs (kernel arguments and registers)", MAX_EXT);
    else if (G->nnodes > MAX_TEMPS) snprintf(d->reason, sizeof d->reason, "rejected: %d nodes exceed %d live temporaries (register pressure)", G->nnodes, MAX_TEMPS);
    else {
      /* within the kernel's limits: measurements recorded by `kiln tune` decide, else the prediction */
      if (fused >= unfused) snprintf(d->reason, sizeof d->reason, "rejected: predicted fused %.1f us >= separate %.1f us", fused / 1e3, unfused / 1e3);
      else
        snprintf(d->reason, sizeof d->reason, "fused: predicted %.1f us vs %.1f us separate (%d launches and %.0f kB of intermediates saved)", fused / 1e3,
                 unfused / 1e3, G->nnodes - 1, 2 * internal_bytes / 1024);
      kiln__fusion_sig(g, "elementwise", G->nodes, G->nnodes, d->sig, sizeof d->sig);
      d->first_node = G->nodes[0];
      d->last_node = G->nodes[G->nnodes - 1];
      for (int q = 0; q < G->nnodes; q++) {
        if (G->nodes[q] < d->first_node) d->first_node = G->nodes[q];
        if (G->nodes[q] > d->last_node) d->last_node = G->nodes[q];
      }
      d->fused = kiln__fusion_choose(costs, d, fused < unfused);
    }
    if (!d->fused) { free(G->nodes); free(G); continue; }
    if ((rc = generate(g, G, err)) != 0) { free(G->nodes); free(G); break; }
    g->nodes[i].fgroup = G;
    for (int q = 0; q < G->nnodes; q++) g->nodes[G->nodes[q]].fuse_root = i;
  }
  free(grp);
  free(cons);
  if (rc) { free(dec); kiln_fusion_free(g); *ndec = 0; return rc; }
  *decisions = dec;
  return 0;
}

int kiln_fusion_run(kiln_exec *x, kiln_node *root, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_fgroup *G = root->fgroup;
  if (G->head >= 0) return g->nodes[G->head].op->dev(x, &g->nodes[G->head], err);
  kiln_value *y = kiln_out(g, root, 0);
  int64_t meta[1 + 8 + MAX_EXT * 8] = {0};
  meta[0] = y->rank;
  for (int d = 0; d < y->rank; d++) meta[1 + d] = y->dims[d];
  for (int e = 0; e < G->next; e++) kiln_bcast_strides(&g->vals[G->ext[e]], y->rank, meta + 9 + e * 8);
  cl_mem mb = kiln_exec_param(x, root, 3, meta, sizeof meta, err);
  if (!mb) return err->status;
  cl_kernel k = kiln_cl_kernel_src(x->d, G->src_key, G->src, "", "fused", err);
  if (!k) return err->status;
  cl_uint a = 0;
  for (int e = 0; e < G->next; e++) {
    cl_mem b = g->vals[G->ext[e]].buf;
    if (kiln_cl_arg(k, a++, sizeof b, &b) != CL_SUCCESS) return kiln__err(err, KILN_ECL, "fused kernel: argument %u", a - 1);
  }
  cl_mem yb = y->buf;
  cl_long n = kiln_value_numel(y);
  if (kiln_cl_arg(k, a++, sizeof yb, &yb) != CL_SUCCESS || kiln_cl_arg(k, a++, sizeof mb, &mb) != CL_SUCCESS ||
      kiln_cl_arg(k, a++, sizeof n, &n) != CL_SUCCESS)
    return kiln__err(err, KILN_ECL, "fused kernel: arguments");
  if (n == 0) return 0;
  /* (runs of FUSE_RUN along the last axis, rows) */
  size_t L = y->rank > 0 ? (size_t)y->dims[y->rank - 1] : 1, gws[2] = {(L + FUSE_RUN - 1) / FUSE_RUN, (size_t)n / L};
  return kiln_exec_launch(x, k, 2, gws, NULL, err);
}
