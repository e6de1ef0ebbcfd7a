/* passes.c: graph rewrites applied once after loading.
 *
 * Gradient (ai.onnx.preview.training): replaced by the reverse-mode
 * derivative of its `y` with respect to each of its `xs`, written as ordinary
 * nodes (Add, Sub, Mul, Div, Neg, Identity, Shape, ConstantOfShape) so they
 * run on the device like any other node. The seed dy is ones shaped like y.
 * Differentiable ops: Add, Sub, Mul, Div, Neg, Identity with operands of
 * equal shape (broadcasting gradients need a reduction and are refused).
 *
 * BatchNormalization (inference) after a Conv whose weights are initializers
 * and whose output feeds only that BatchNormalization: folded into the Conv's
 * weights and bias (W' = W * g / sqrt(v + eps), b' = (b - m) * g / sqrt(v + eps) + beta),
 * with new initializers so weights shared with other nodes stay intact.
 *
 * At plan time (kiln_graph_fuse_patterns, shapes and constants known; run
 * when fusion is on):
 *  - Reshape [N,G,-1] -> InstanceNormalization -> Reshape back [-> Mul by a
 *    per-channel constant] [-> Add of one], as torch exports nn.GroupNorm:
 *    one GroupNormalization node with per-channel scale s_g * gamma_c and
 *    bias b_g * gamma_c + beta_c (internal attribute kiln_per_channel);
 *  - Relu, or SiLU written as Mul(x, Sigmoid(x)), consuming a
 *    Layer/Instance/GroupNormalization's only output alone: applied by the
 *    normalization kernel (kiln_activation);
 *  - LayerNorm as torch exports it below opset 17 (ReduceMean, Sub, Pow 2,
 *    ReduceMean, Add eps, Sqrt, Div) and RMSNorm (Pow 2 or Mul(x, x),
 *    ReduceMean, Add eps, Sqrt, Div or Reciprocal and Mul) over trailing
 *    axes [-> Mul(gamma)] [-> Add(beta)]: one LayerNormalization node
 *    (internal attribute kiln_rms for RMSNorm: no mean subtracted);
 *  - Softmax / LogSoftmax along the last axis of (x * c or x / c for a
 *    scalar constant c) [+ mask]: the scale and the additive mask go into the
 *    softmax kernel (kiln_scale, input 1);
 *  - a 1x1 stride-1 Conv (constant weights, one group, no pads) whose input
 *    is Mul(x, s) alone, s one value per image and channel of x ([N,C,1,1]:
 *    a squeeze-excite gate): the Conv reads x and scales it per (n, c)
 *    itself (input 3, internal attribute kiln_xscale; kernels/conv.cl
 *    conv_pw), so the Mul no longer writes and the Conv no longer reads a
 *    scaled copy of the whole tensor. */
#include "kiln_internal.h"
#include "family.h"
#include "ops/window.h"
#include <math.h>

static int add_node(kiln_graph *g, const char *op, const char *name, int nin, const int *in, int out, kiln_error *err) {
  if (g->nnodes == g->capnodes) {
    int cap = g->capnodes ? g->capnodes * 2 : 16;
    kiln_node *nn = realloc(g->nodes, sizeof *nn * (size_t)cap);
    if (!nn) return kiln__err(err, KILN_ENOMEM, "out of memory");
    g->nodes = nn;
    g->capnodes = cap;
  }
  kiln_node *n = &g->nodes[g->nnodes];
  memset(n, 0, sizeof *n);
  n->name = strdup(name);
  n->op_type = strdup(op);
  n->domain = strdup("");
  n->opset = g->opset;
  n->nin = nin;
  n->nout = 1;
  n->in = malloc(sizeof(int) * (size_t)(nin + 1));
  n->out = malloc(sizeof(int));
  n->attrs = calloc(1, sizeof(kiln_attr));
  if (!n->name || !n->op_type || !n->domain || !n->in || !n->out || !n->attrs) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < nin; i++) n->in[i] = in[i];
  n->out[0] = out;
  n->op = kiln_op_lookup("", op);
  g->vals[out].producer = g->nnodes;
  g->nnodes++;
  return 0;
}

/* Creates a fresh value named "<base>/<suffix><counter>". */
static int fresh(kiln_graph *g, const char *base, const char *suffix, int *counter) {
  char nm[256];
  for (;;) {
    snprintf(nm, sizeof nm, "%s/%s%d", base, suffix, (*counter)++);
    if (kiln_graph_find_value(g, nm) < 0) return kiln_graph_add_value(g, nm);
  }
}

/* Emits out = op(a, b) as a new node; returns the output value or -1. */
static int emit(kiln_graph *g, const char *op, int a, int b, const char *base, int *counter, kiln_error *err) {
  int out = fresh(g, base, op, counter);
  if (out < 0) return -1;
  int in[2] = {a, b};
  char nm[300];
  snprintf(nm, sizeof nm, "%s/%s", base, g->vals[out].name + strlen(base) + 1);
  if (add_node(g, op, nm, b >= 0 ? 2 : 1, in, out, err)) return -1;
  return out;
}

/* grad[v] += d (as an Add node when v already has a gradient). */
static int accumulate(kiln_graph *g, int *grad, int v, int d, const char *base, int *counter, kiln_error *err) {
  if (grad[v] < 0) { grad[v] = d; return 0; }
  int s = emit(g, "Add", grad[v], d, base, counter, err);
  if (s < 0) return err ? err->status : KILN_EINTERNAL;
  grad[v] = s;
  return 0;
}

static int expand_gradient(kiln_graph *g, int gi, kiln_error *err) {
  kiln_node gn = g->nodes[gi]; /* copy: g->nodes may move */
  const char *yname = kiln_attr_str(&gn, "y", NULL);
  const kiln_attr *xs = kiln_attr_find(&gn, "xs");
  if (!yname || !xs || xs->type != KILN_ATTR_STRINGS || xs->n != gn.nout)
    return kiln__err(err, KILN_EPARSE, "node '%s' (Gradient): needs attributes y and xs with one name per output", gn.name);
  int y = kiln_graph_find_value(g, yname);
  if (y < 0) return kiln__err(err, KILN_EPARSE, "node '%s' (Gradient): y '%s' is not a value of the graph", gn.name, yname);
  int nv0 = g->nvals;
  int *grad = malloc(sizeof(int) * (size_t)(nv0 + 1));
  if (!grad) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < nv0; i++) grad[i] = -1;
  int counter = 0, rc = 0, n0 = g->nnodes;
  const char *base = gn.name;
  /* seed: ones shaped like y */
  int shp = emit(g, "Shape", y, -1, base, &counter, err);
  int ones = shp < 0 ? -1 : fresh(g, base, "ones", &counter);
  if (ones < 0 || add_node(g, "ConstantOfShape", "ones", 1, &shp, ones, err)) { free(grad); return err ? err->status : KILN_ENOMEM; }
  kiln_node *cn = &g->nodes[g->nnodes - 1];
  free(cn->name);
  char nm[300];
  snprintf(nm, sizeof nm, "%s/ones", base);
  cn->name = strdup(nm);
  cn->nattr = 1;
  cn->attrs[0].name = strdup("value");
  cn->attrs[0].type = KILN_ATTR_TENSOR;
  int64_t one = 1;
  cn->attrs[0].t = kiln_tensor_new(KILN_DT_FLOAT, 1, &one);
  if (!cn->attrs[0].name || !cn->attrs[0].t) { free(grad); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  ((float *)cn->attrs[0].t->data)[0] = 1.0f;
  grad[y] = ones;
  /* reverse sweep over the original nodes (topologically sorted at load) */
  for (int i = n0 - 1; i >= 0 && !rc; i--) {
    kiln_node *n = &g->nodes[i];
    if (i == gi || !strcmp(n->op_type, "Gradient")) continue;
    int z = n->nout ? n->out[0] : -1;
    if (z < 0 || z >= nv0 || grad[z] < 0) continue;
    int dz = grad[z], a = n->nin > 0 ? n->in[0] : -1, b = n->nin > 1 ? n->in[1] : -1;
    const char *op = n->op_type;
    char opname[64];
    snprintf(opname, sizeof opname, "%s", op);
    if (b >= 0 && (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div"))) {
      /* equal shapes only: the declared shapes are not known yet, so the
       * shape check happens in the emitted nodes' inference (broadcasting
       * would give a wrongly shaped gradient); refuse obvious broadcasts */
      if (!strcmp(opname, "Add")) { rc = accumulate(g, grad, a, dz, base, &counter, err); if (!rc) rc = accumulate(g, grad, b, dz, base, &counter, err); }
      else if (!strcmp(opname, "Sub")) {
        rc = accumulate(g, grad, a, dz, base, &counter, err);
        int nb = rc ? -1 : emit(g, "Neg", dz, -1, base, &counter, err);
        if (!rc) rc = nb < 0 ? KILN_EINTERNAL : accumulate(g, grad, b, nb, base, &counter, err);
      } else if (!strcmp(opname, "Mul")) {
        int da = emit(g, "Mul", dz, b, base, &counter, err);
        int db = da < 0 ? -1 : emit(g, "Mul", dz, a, base, &counter, err);
        if (db < 0) rc = err ? err->status : KILN_EINTERNAL;
        else { rc = accumulate(g, grad, a, da, base, &counter, err); if (!rc) rc = accumulate(g, grad, b, db, base, &counter, err); }
      } else { /* Div: da = dz / b, db = -dz * a / (b * b) */
        int da = emit(g, "Div", dz, b, base, &counter, err);
        int bb = da < 0 ? -1 : emit(g, "Mul", b, b, base, &counter, err);
        int q = bb < 0 ? -1 : emit(g, "Div", a, bb, base, &counter, err);
        int p = q < 0 ? -1 : emit(g, "Mul", dz, q, base, &counter, err);
        int db = p < 0 ? -1 : emit(g, "Neg", p, -1, base, &counter, err);
        if (db < 0) rc = err ? err->status : KILN_EINTERNAL;
        else { rc = accumulate(g, grad, a, da, base, &counter, err); if (!rc) rc = accumulate(g, grad, b, db, base, &counter, err); }
      }
    } else if (!strcmp(opname, "Neg") && a >= 0) {
      int da = emit(g, "Neg", dz, -1, base, &counter, err);
      rc = da < 0 ? KILN_EINTERNAL : accumulate(g, grad, a, da, base, &counter, err);
    } else if (!strcmp(opname, "Identity") && a >= 0) {
      rc = accumulate(g, grad, a, dz, base, &counter, err);
    } else {
      rc = kiln__err(err, KILN_EUNSUPPORTED, "node '%s' (Gradient): cannot differentiate through node '%s' (%s)", base, n->name, op);
    }
  }
  /* outputs: Identity of the accumulated gradient (zeros when y does not depend on x) */
  for (int k = 0; k < gn.nout && !rc; k++) {
    int out = gn.out[k];
    if (out < 0) continue;
    int x = kiln_graph_find_value(g, xs->strings[k]);
    if (x < 0) { rc = kiln__err(err, KILN_EPARSE, "node '%s' (Gradient): xs '%s' is not a value of the graph", base, xs->strings[k]); break; }
    int src = x < nv0 ? grad[x] : -1;
    if (src < 0) { /* zeros: x - x */
      src = emit(g, "Sub", x, x, base, &counter, err);
      if (src < 0) { rc = err ? err->status : KILN_EINTERNAL; break; }
    }
    g->vals[out].producer = -1;
    snprintf(nm, sizeof nm, "%s/out%d", base, k);
    rc = add_node(g, "Identity", nm, 1, &src, out, err);
  }
  free(grad);
  return rc;
}

static const float *init_f32(kiln_graph *g, int v, int64_t n) {
  if (v < 0) return NULL;
  kiln_value *val = &g->vals[v];
  if (!val->is_initializer || val->dtype != KILN_DT_FLOAT || !val->data || kiln_value_numel(val) != n) return NULL;
  return val->data;
}

/* Adds an initializer value holding a copy of data (float, given shape). */
static int new_init(kiln_graph *g, const char *name, int rank, const int64_t *dims, const float *data, int64_t n) {
  char nm[512];
  int c = 0;
  do snprintf(nm, sizeof nm, "%s%s%d", name, c ? "_" : "", c); while (kiln_graph_find_value(g, nm) >= 0 && ++c < 1000);
  int id = kiln_graph_add_value(g, nm);
  if (id < 0) return -1;
  kiln_value *v = &g->vals[id];
  v->data = malloc(sizeof(float) * (size_t)(n ? n : 1));
  if (!v->data) return -1;
  memcpy(v->data, data, sizeof(float) * (size_t)n);
  v->dtype = KILN_DT_FLOAT;
  v->rank = rank;
  for (int k = 0; k < rank; k++) v->dims[k] = dims[k];
  v->is_const = v->is_initializer = true;
  return id;
}

/* Resizes n's input list to nin entries (new ones unset); -1 when out of memory. */
static int set_inputs(kiln_node *n, int nin) {
  int *ni = realloc(n->in, sizeof(int) * (size_t)nin);
  if (!ni) return -1;
  n->in = ni;
  n->nin = nin;
  return 0;
}

static void drop_node(kiln_graph *g, int i) {
  kiln__node_free_fields(&g->nodes[i]);
  memmove(&g->nodes[i], &g->nodes[i + 1], sizeof(kiln_node) * (size_t)(g->nnodes - i - 1));
  g->nnodes--;
  for (int k = 0; k < g->nvals; k++) g->vals[k].producer = -1;
  for (int k = 0; k < g->nnodes; k++)
    for (int j = 0; j < g->nodes[k].nout; j++)
      if (g->nodes[k].out[j] >= 0) g->vals[g->nodes[k].out[j]].producer = k;
}

/* Folds BatchNormalization nodes into preceding Convs; returns the count. */
static int fold_batchnorm(kiln_graph *g, kiln_error *err) {
  int folded = 0;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *bn = &g->nodes[i];
    if (strcmp(bn->op_type, "BatchNormalization") || bn->domain[0] || bn->nin < 5 || kiln_attr_int(bn, "training_mode", 0)) continue;
    int outs = 0;
    for (int k = 0; k < bn->nout; k++) outs += bn->out[k] >= 0;
    if (outs != 1 || bn->out[0] < 0 || bn->in[0] < 0) continue;
    if (bn->opset < 9 && kiln_attr_int(bn, "spatial", 1) != 1) continue;
    int x = bn->in[0], pi = g->vals[x].producer;
    if (pi < 0 || g->vals[x].is_output || g->vals[x].is_input) continue;
    kiln_node *cv = &g->nodes[pi];
    if (strcmp(cv->op_type, "Conv") || cv->domain[0] || cv->nin < 2 || cv->in[1] < 0) continue;
    int consumers = 0;
    for (int k = 0; k < g->nnodes; k++)
      for (int j = 0; j < g->nodes[k].nin; j++) consumers += g->nodes[k].in[j] == x;
    if (consumers != 1) continue;
    kiln_value *w = &g->vals[cv->in[1]];
    if (!w->is_initializer || w->dtype != KILN_DT_FLOAT || w->rank < 3 || !w->data) continue;
    int64_t M = w->dims[0], per = kiln_value_numel(w) / (M ? M : 1);
    const float *gam = init_f32(g, bn->in[1], M), *bet = init_f32(g, bn->in[2], M), *mean = init_f32(g, bn->in[3], M), *var = init_f32(g, bn->in[4], M);
    const float *bias = cv->nin > 2 && cv->in[2] >= 0 ? init_f32(g, cv->in[2], M) : NULL;
    if (!gam || !bet || !mean || !var || (cv->nin > 2 && cv->in[2] >= 0 && !bias)) continue;
    float eps = kiln_attr_float(bn, "epsilon", 1e-5f);
    float *nw = malloc(sizeof(float) * (size_t)(M * per)), *nb = malloc(sizeof(float) * (size_t)M);
    if (!nw || !nb) { free(nw); free(nb); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    const float *wd = w->data;
    for (int64_t m = 0; m < M; m++) {
      double sc = gam[m] / sqrt((double)var[m] + eps);
      for (int64_t k = 0; k < per; k++) nw[m * per + k] = (float)(wd[m * per + k] * sc);
      nb[m] = (float)(((bias ? bias[m] : 0.0) - mean[m]) * sc + bet[m]);
    }
    char base[300];
    snprintf(base, sizeof base, "%s.bnfold", w->name);
    int64_t wdims[KILN_MAX_RANK];
    int wrank = w->rank;
    memcpy(wdims, w->dims, sizeof wdims);
    int nwid = new_init(g, base, wrank, wdims, nw, M * per);
    snprintf(base, sizeof base, "%s.bnfold_bias", cv->name);
    int nbid = nwid < 0 ? -1 : new_init(g, base, 1, &M, nb, M);
    free(nw);
    free(nb);
    if (nwid < 0 || nbid < 0) return kiln__err(err, KILN_ENOMEM, "out of memory");
    cv = &g->nodes[pi]; /* g->vals may have moved, g->nodes did not */
    bn = &g->nodes[i];
    if (cv->nin < 3 && set_inputs(cv, 3)) return kiln__err(err, KILN_ENOMEM, "out of memory");
    cv->in[1] = nwid;
    cv->in[2] = nbid;
    cv->out[0] = bn->out[0];
    g->vals[x].producer = -1;
    drop_node(g, i);
    i--;
    folded++;
  }
  return folded;
}

int kiln_graph_rewrite(kiln_graph *g, kiln_error *err) {
  int nf = fold_batchnorm(g, err);
  if (nf < 0) return nf;
  int changed = 0;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (strcmp(n->op_type, "Gradient") || strcmp(n->domain, "ai.onnx.preview.training")) continue;
    int rc = expand_gradient(g, i, err);
    if (rc) return rc;
    drop_node(g, i); /* the Gradient node itself */
    i--;
    changed = 1;
  }
  if (!changed && !nf) return 0;
  int rc = kiln__graph_toposort(g, "rewritten graph", err);
  if (rc) return rc;
  for (int i = 0; i < g->nvals; i++) g->vals[i].nconsumers = 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      if (g->nodes[i].in[k] >= 0) g->vals[g->nodes[i].in[k]].nconsumers++;
  return 0;
}

/* ===========================================================================
 * Plan-time rewrites (shapes bound, constants folded): kiln_graph_fuse_patterns
 * ======================================================================== */

/* Node consuming value v when it has exactly one consumer (and is not a
 * graph output), else -1. */
static int sole_consumer(kiln_graph *g, int v) {
  if (v < 0 || g->vals[v].is_output) return -1;
  int who = -1, cnt = 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      if (g->nodes[i].in[k] == v) { cnt++; who = i; }
  return cnt == 1 ? who : -1;
}

static int count_consumers(kiln_graph *g, int v) {
  int cnt = 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) cnt += g->nodes[i].in[k] == v;
  return cnt;
}

static bool is_op(const kiln_node *n, const char *op) { return !n->domain[0] && !strcmp(n->op_type, op) && !n->folded; }

static bool same_shape(const kiln_value *a, const kiln_value *b) {
  return a->rank == b->rank && !memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank);
}

/* A constant float32 value of C elements that broadcasts to x's shape along
 * axis 1 only ([C,1,..,1] right-aligned, or [1,C,1..]). */
static const float *per_channel_const(kiln_graph *g, int v, const kiln_value *x) {
  if (v < 0) return NULL;
  kiln_value *c = &g->vals[v];
  int64_t C = x->dims[1];
  if (!c->is_const || !c->data || c->dtype != KILN_DT_FLOAT || kiln_value_numel(c) != C || c->rank > x->rank) return NULL;
  for (int i = 0; i < c->rank; i++) {
    int xa = x->rank - c->rank + i;
    if (c->dims[i] != (xa == 1 ? C : 1) && !(c->dims[i] == 1 && C == 1)) return NULL;
  }
  return c->data;
}

/* Value of a scalar float constant v (numel 1), or NAN. */
static double scalar_const(kiln_graph *g, int v, int dt) {
  if (v < 0) return NAN;
  kiln_value *c = &g->vals[v];
  if (!c->is_const || !c->data || c->dtype != dt || kiln_value_numel(c) != 1) return NAN;
  return kiln_load_f(c->data, c->dtype, 0);
}

/* The activation consuming value z alone: Relu, or SiLU written as
 * Mul(z, Sigmoid(z)). Sets the nodes to remove and the final value. */
static const char *match_activation(kiln_graph *g, int z, int *rm, int *nrm, int *out) {
  if (g->vals[z].is_output) return NULL;
  int c = sole_consumer(g, z);
  if (c >= 0 && is_op(&g->nodes[c], "Relu")) {
    rm[(*nrm)++] = c;
    *out = g->nodes[c].out[0];
    return "Relu";
  }
  if (count_consumers(g, z) != 2) return NULL;
  int sg = -1, ml = -1;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (is_op(n, "Sigmoid") && n->nin == 1 && n->in[0] == z) sg = i;
  }
  if (sg < 0) return NULL;
  int s = g->nodes[sg].out[0];
  ml = sole_consumer(g, s);
  if (ml < 0) return NULL;
  kiln_node *m = &g->nodes[ml];
  if (!is_op(m, "Mul") || m->nin != 2 || !((m->in[0] == z && m->in[1] == s) || (m->in[1] == z && m->in[0] == s))) return NULL;
  rm[(*nrm)++] = sg;
  rm[(*nrm)++] = ml;
  *out = m->out[0];
  return "SiLU";
}


/* Appends an attribute (name copied; string copied). */
static int push_attr(kiln_node *n, const char *name, int type, int64_t i, float f, const char *s) {
  kiln_attr *na = realloc(n->attrs, sizeof *na * (size_t)(n->nattr + 1));
  if (!na) return -1;
  n->attrs = na;
  kiln_attr *a = &na[n->nattr];
  memset(a, 0, sizeof *a);
  a->name = strdup(name);
  a->type = type;
  a->i = i;
  a->f = f;
  if (s) a->s = strdup(s);
  if (!a->name || (s && !a->s)) return -1;
  n->nattr++;
  return 0;
}

static int cmp_desc(const void *a, const void *b) { return *(const int *)b - *(const int *)a; }

/* Records a rewrite for kiln plan: the node that now computes `ops`. */
static int note_rewrite(kiln_graph *g, const char *root, const char *ops, int nnodes, const char *reason) {
  kiln_fusion_decision *d = realloc(g->pdec, sizeof *d * (size_t)(g->npdec + 1));
  if (!d) return -1;
  g->pdec = d;
  d += g->npdec++;
  memset(d, 0, sizeof *d);
  snprintf(d->root, sizeof d->root, "%s", root);
  snprintf(d->nodes, sizeof d->nodes, "%s", ops);
  d->kind = "pattern";
  d->nnodes = nnodes;
  d->fused = true;
  snprintf(d->reason, sizeof d->reason, "%s", reason);
  return 0;
}

/* "A+B+C" of the op types of nodes rm[0..nrm) and `first` (in graph order). */
static void ops_list(kiln_graph *g, int first, const int *rm, int nrm, char *buf, size_t len) {
  int idx[16], n = 0;
  idx[n++] = first;
  for (int k = 0; k < nrm && n < 16; k++) idx[n++] = rm[k];
  for (int a = 1; a < n; a++)
    for (int b = a; b > 0 && idx[b] < idx[b - 1]; b--) { int t = idx[b]; idx[b] = idx[b - 1]; idx[b - 1] = t; }
  size_t o = 0;
  buf[0] = 0;
  for (int k = 0; k < n && o < len; k++) o += (size_t)snprintf(buf + o, len - o, "%s%s", k ? "+" : "", g->nodes[idx[k]].op_type);
}

/* Removes nodes rm[0..nrm) (indices into g->nodes). */
static void drop_nodes(kiln_graph *g, int *rm, int nrm) {
  qsort(rm, (size_t)nrm, sizeof *rm, cmp_desc);
  for (int k = 0; k < nrm; k++)
    if (k == 0 || rm[k] != rm[k - 1]) drop_node(g, rm[k]);
}

/* Reshape -> InstanceNormalization -> Reshape [-> Mul(per-channel)]
 * [-> Add(per-channel)] as torch exports nn.GroupNorm: one per-channel
 * GroupNormalization. Returns 1 when rewritten, 0 if not, <0 on error. */
static int fuse_groupnorm(kiln_graph *g, int ii, bool act, kiln_error *err) {
  kiln_node *in = &g->nodes[ii];
  if (!is_op(in, "InstanceNormalization") || in->nin != 3 || in->nout != 1) return 0;
  int x1 = in->in[0], r1i = g->vals[x1].producer;
  if (r1i < 0 || !is_op(&g->nodes[r1i], "Reshape") || sole_consumer(g, x1) != ii) return 0;
  int X = g->nodes[r1i].in[0];
  kiln_value *xv = &g->vals[X], *x1v = &g->vals[x1];
  if (xv->dtype != KILN_DT_FLOAT || x1v->dtype != KILN_DT_FLOAT || xv->rank < 3 || x1v->rank != 3) return 0;
  int64_t N = xv->dims[0], C = xv->dims[1], G = x1v->dims[1];
  if (x1v->dims[0] != N || G <= 0 || C % G || x1v->dims[2] * G * N != kiln_value_numel(xv)) return 0;
  kiln_value *sv = &g->vals[in->in[1]], *bv = &g->vals[in->in[2]];
  if (!sv->is_const || !bv->is_const || !sv->data || !bv->data || sv->dtype != KILN_DT_FLOAT || bv->dtype != KILN_DT_FLOAT ||
      kiln_value_numel(sv) != G || kiln_value_numel(bv) != G)
    return 0;
  int rm[8], nrm = 0;
  rm[nrm++] = r1i;
  int r2i = sole_consumer(g, in->out[0]);
  if (r2i < 0 || !is_op(&g->nodes[r2i], "Reshape") || g->nodes[r2i].in[0] != in->out[0]) return 0;
  int z = g->nodes[r2i].out[0];
  if (!same_shape(&g->vals[z], xv)) return 0;
  rm[nrm++] = r2i;
  const float *gam = NULL, *bet = NULL;
  int c = sole_consumer(g, z);
  if (c >= 0 && is_op(&g->nodes[c], "Mul") && g->nodes[c].nin == 2 && same_shape(&g->vals[g->nodes[c].out[0]], xv)) {
    kiln_node *m = &g->nodes[c];
    int other = m->in[0] == z ? m->in[1] : m->in[0];
    if ((gam = per_channel_const(g, other, xv)) != NULL) { rm[nrm++] = c; z = m->out[0]; c = sole_consumer(g, z); }
  }
  if (c >= 0 && is_op(&g->nodes[c], "Add") && g->nodes[c].nin == 2 && same_shape(&g->vals[g->nodes[c].out[0]], xv)) {
    kiln_node *a = &g->nodes[c];
    int other = a->in[0] == z ? a->in[1] : a->in[0];
    if ((bet = per_channel_const(g, other, xv)) != NULL) { rm[nrm++] = c; z = a->out[0]; }
  }
  const char *actname = NULL;
  int zo = z;
  if (act) actname = match_activation(g, z, rm, &nrm, &zo);
  /* the per-channel scale and bias: s_g * gamma_c, b_g * gamma_c + beta_c */
  float *ns = malloc(sizeof(float) * (size_t)C), *nb = malloc(sizeof(float) * (size_t)C);
  if (!ns || !nb) { free(ns); free(nb); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  const float *s = sv->data, *b = bv->data;
  for (int64_t ch = 0; ch < C; ch++) {
    int64_t gi = ch / (C / G);
    double gm = gam ? gam[ch] : 1.0;
    ns[ch] = (float)(s[gi] * gm);
    nb[ch] = (float)(b[gi] * gm + (bet ? bet[ch] : 0.0));
  }
  char base[300];
  snprintf(base, sizeof base, "%s.groupnorm_scale", in->name);
  int sid = new_init(g, base, 1, &C, ns, C);
  snprintf(base, sizeof base, "%s.groupnorm_bias", in->name);
  int bid = sid < 0 ? -1 : new_init(g, base, 1, &C, nb, C);
  free(ns);
  free(nb);
  if (sid < 0 || bid < 0) return kiln__err(err, KILN_ENOMEM, "out of memory");
  char ops[256], why[192];
  ops_list(g, ii, rm, nrm, ops, sizeof ops);
  snprintf(why, sizeof why, "exported GroupNorm (G=%lld, C=%lld)%s%s: one GroupNormalization kernel", (long long)G, (long long)C, actname ? " + " : "", actname ? actname : "");
  if (note_rewrite(g, g->nodes[ii].name, ops, nrm + 1, why)) return kiln__err(err, KILN_ENOMEM, "out of memory");
  in = &g->nodes[ii];
  float eps = kiln_attr_float(in, "epsilon", 1e-5f);
  kiln__node_free_attrs(in);
  char *nt = strdup("GroupNormalization");
  if (!nt || push_attr(in, "epsilon", KILN_ATTR_FLOAT, 0, eps, NULL) || push_attr(in, "num_groups", KILN_ATTR_INT, G, 0, NULL) ||
      push_attr(in, "kiln_per_channel", KILN_ATTR_INT, 1, 0, NULL) || (actname && push_attr(in, "kiln_activation", KILN_ATTR_STRING, 0, 0, actname))) {
    free(nt);
    return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  free(in->op_type);
  in->op_type = nt;
  in->op = kiln_op_lookup("", "GroupNormalization");
  in->in[0] = X;
  in->in[1] = sid;
  in->in[2] = bid;
  g->vals[in->out[0]].producer = -1;
  in->out[0] = zo;
  g->vals[zo].producer = ii;
  drop_nodes(g, rm, nrm);
  return 1;
}

/* ---- decomposed LayerNorm / RMSNorm ---------------------------------------- */

/* First axis of a ReduceMean (keepdims) over the trailing axes [k, rank) of
 * its input, axes from the attribute or a constant input; else -1. */
static int trailing_mean_axis(kiln_graph *g, const kiln_node *n) {
  if (!is_op(n, "ReduceMean") || n->nout != 1 || kiln_attr_int(n, "keepdims", 1) != 1) return -1;
  const kiln_value *x = &g->vals[n->in[0]];
  int r = x->rank, cnt;
  int64_t ax[KILN_MAX_RANK];
  const int64_t *av;
  if ((cnt = kiln_attr_ints(n, "axes", &av)) > 0) {
    if (cnt > r) return -1;
    memcpy(ax, av, sizeof(int64_t) * (size_t)cnt);
  } else if (n->nin > 1 && n->in[1] >= 0) {
    const kiln_value *a = &g->vals[n->in[1]];
    if (!a->is_const || !a->data || a->dtype != KILN_DT_INT64 || (cnt = (int)kiln_value_numel(a)) < 1 || cnt > r) return -1;
    memcpy(ax, a->data, sizeof(int64_t) * (size_t)cnt);
  } else return kiln_attr_int(n, "noop_with_empty_axes", 0) ? -1 : 0; /* no axes: all of them */
  bool seen[KILN_MAX_RANK] = {0};
  for (int i = 0; i < cnt; i++) {
    int64_t v = ax[i] < 0 ? ax[i] + r : ax[i];
    if (v < 0 || v >= r || seen[v]) return -1;
    seen[v] = true;
  }
  for (int i = r - cnt; i < r; i++)
    if (!seen[i]) return -1;
  return r - cnt;
}

/* Node producing v if it is op (and v is no graph output), else -1. */
static int producer_op(kiln_graph *g, int v, const char *op) {
  if (v < 0 || g->vals[v].is_output) return -1;
  int p = g->vals[v].producer;
  return p >= 0 && is_op(&g->nodes[p], op) ? p : -1;
}

/* v's square: Pow(d, 2) with a constant exponent, or Mul(d, d); sets *d. */
static int square_of(kiln_graph *g, int v, int *d) {
  int p = producer_op(g, v, "Pow");
  if (p >= 0 && g->nodes[p].nin == 2 && scalar_const(g, g->nodes[p].in[1], g->vals[g->nodes[p].in[1]].dtype) == 2.0) { *d = g->nodes[p].in[0]; return p; }
  p = producer_op(g, v, "Mul");
  if (p >= 0 && g->nodes[p].nin == 2 && g->nodes[p].in[0] == g->nodes[p].in[1]) { *d = g->nodes[p].in[0]; return p; }
  return -1;
}

/* A scale (Mul) or shift (Add) operand that LayerNormalization takes for
 * rows of the trailing dims [ax, rank) of x: x's dtype, and one element or
 * the trailing dims exactly. */
static bool ln_operand(kiln_graph *g, int v, const kiln_value *x, int ax) {
  const kiln_value *c = &g->vals[v];
  if (c->dtype != x->dtype || c->rank < 0) return false;
  if (kiln_value_numel(c) == 1) return c->rank <= x->rank - ax;
  if (c->rank != x->rank - ax) return false; /* LayerNormalization takes scale/bias of the normalized rank */
  for (int i = 0; i < c->rank; i++)
    if (c->dims[i] != x->dims[ax + i]) return false;
  return true;
}

/* The decomposed normalization whose Sqrt is node qi, as torch exports
 * LayerNorm below opset 17 and RMSNorm:
 *   [m = ReduceMean(x); d = Sub(x, m)] (LayerNorm; RMSNorm: d = x)
 *   v = ReduceMean(Pow(d, 2) or Mul(d, d)); s = Sqrt(Add(v, eps))
 *   n = Div(d, s) or Mul(d, Reciprocal(s))   [-> Mul(gamma)] [-> Add(beta)]
 * over the same trailing axes, float32, every inner value read only inside
 * the pattern: one LayerNormalization (kiln_rms 1: no mean subtracted).
 * Returns 1 when rewritten, 0 if not, <0 on error. */
static int fuse_decomposed_norm(kiln_graph *g, int qi, kiln_error *err) {
  kiln_node *q = &g->nodes[qi];
  if (!is_op(q, "Sqrt") || q->nin != 1) return 0;
  int rm[12], nrm = 0, ai = producer_op(g, q->in[0], "Add");
  if (ai < 0 || sole_consumer(g, q->in[0]) != qi || g->nodes[ai].nin != 2) return 0;
  kiln_node *an = &g->nodes[ai];
  int vi = -1, k;
  double eps = NAN;
  for (k = 0; k < 2 && vi < 0; k++)
    if ((vi = producer_op(g, an->in[k], "ReduceMean")) >= 0) eps = scalar_const(g, an->in[1 - k], KILN_DT_FLOAT);
  if (vi < 0 || isnan(eps) || sole_consumer(g, g->nodes[vi].out[0]) != ai) return 0;
  int d = -1, pi = square_of(g, g->nodes[vi].in[0], &d), ax = trailing_mean_axis(g, &g->nodes[vi]);
  if (pi < 0 || ax < 0 || sole_consumer(g, g->nodes[pi].out[0]) != vi) return 0;
  kiln_value *dv = &g->vals[d];
  if (dv->dtype != KILN_DT_FLOAT || dv->rank < 1) return 0;
  /* n = Div(d, s), or Mul(d, Reciprocal(s)) */
  int s = q->out[0], ni = sole_consumer(g, s), ri = -1;
  if (ni >= 0 && is_op(&g->nodes[ni], "Reciprocal")) {
    ri = ni;
    ni = sole_consumer(g, g->nodes[ri].out[0]);
    if (ni < 0 || !is_op(&g->nodes[ni], "Mul") || g->nodes[ni].nin != 2) return 0;
    kiln_node *mn = &g->nodes[ni];
    if (!((mn->in[0] == d && mn->in[1] == g->nodes[ri].out[0]) || (mn->in[1] == d && mn->in[0] == g->nodes[ri].out[0]))) return 0;
  } else if (ni < 0 || !is_op(&g->nodes[ni], "Div") || g->nodes[ni].nin != 2 || g->nodes[ni].in[0] != d || g->nodes[ni].in[1] != s) return 0;
  int uses = g->nodes[pi].in[0] == g->nodes[pi].in[1] && is_op(&g->nodes[pi], "Mul") ? 3 : 2;
  /* LayerNorm: d = Sub(x, ReduceMean(x)) over the same axes, d read only by the pattern */
  int x = d, si = producer_op(g, d, "Sub"), mi = -1;
  if (si >= 0 && count_consumers(g, d) == uses && g->nodes[si].nin == 2) {
    mi = producer_op(g, g->nodes[si].in[1], "ReduceMean");
    if (mi >= 0 && g->nodes[mi].in[0] == g->nodes[si].in[0] && sole_consumer(g, g->nodes[mi].out[0]) == si && trailing_mean_axis(g, &g->nodes[mi]) == ax &&
        same_shape(&g->vals[g->nodes[si].in[0]], dv))
      x = g->nodes[si].in[0];
    else mi = -1;
  }
  kiln_value *xv = &g->vals[x];
  if (!same_shape(&g->vals[g->nodes[ni].out[0]], xv)) return 0;
  if (mi >= 0) { rm[nrm++] = mi; rm[nrm++] = si; }
  rm[nrm++] = pi; rm[nrm++] = vi; rm[nrm++] = ai; rm[nrm++] = qi;
  if (ri >= 0) rm[nrm++] = ri;
  /* [Mul(gamma)] [Add(beta)]; the last node of the pattern becomes the LayerNormalization */
  int last = ni, z = g->nodes[ni].out[0], gam = -1, bet = -1, c = sole_consumer(g, z);
  if (c >= 0 && is_op(&g->nodes[c], "Mul") && g->nodes[c].nin == 2 && same_shape(&g->vals[g->nodes[c].out[0]], xv)) {
    int o = g->nodes[c].in[0] == z ? g->nodes[c].in[1] : g->nodes[c].in[0];
    if (o != z && ln_operand(g, o, xv, ax)) { gam = o; rm[nrm++] = last; last = c; z = g->nodes[c].out[0]; c = sole_consumer(g, z); }
  }
  if (c >= 0 && is_op(&g->nodes[c], "Add") && g->nodes[c].nin == 2 && same_shape(&g->vals[g->nodes[c].out[0]], xv)) {
    int o = g->nodes[c].in[0] == z ? g->nodes[c].in[1] : g->nodes[c].in[0];
    if (o != z && ln_operand(g, o, xv, ax)) { bet = o; rm[nrm++] = last; last = c; }
  }
  bool scaled = gam >= 0;
  if (gam < 0) { /* LayerNormalization needs a scale: one */
    int64_t one = 1;
    float f1 = 1.0f;
    char nm[300];
    snprintf(nm, sizeof nm, "%s.norm_scale", g->nodes[last].name);
    if ((gam = new_init(g, nm, 1, &one, &f1, 1)) < 0) return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  int *nin = malloc(sizeof(int) * 3);
  char ops[256], why[192];
  if (!nin) return kiln__err(err, KILN_ENOMEM, "out of memory");
  ops_list(g, last, rm, nrm, ops, sizeof ops);
  snprintf(why, sizeof why, "decomposed %s over the last %d axes (eps %g)%s%s: one LayerNormalization kernel", mi >= 0 ? "LayerNorm" : "RMSNorm", xv->rank - ax, eps,
           scaled ? " with scale" : "", bet >= 0 ? (scaled ? " and bias" : " with bias") : "");
  kiln_node *ln = &g->nodes[last];
  if (note_rewrite(g, ln->name, ops, nrm + 1, why)) { free(nin); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  ln = &g->nodes[last];
  kiln__node_free_attrs(ln);
  char *nt = strdup("LayerNormalization");
  if (!nt || push_attr(ln, "axis", KILN_ATTR_INT, ax, 0, NULL) || push_attr(ln, "epsilon", KILN_ATTR_FLOAT, 0, (float)eps, NULL) ||
      push_attr(ln, "kiln_rms", KILN_ATTR_INT, mi < 0, 0, NULL)) {
    free(nt);
    free(nin);
    return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  free(ln->op_type);
  ln->op_type = nt;
  ln->op = kiln_op_lookup("", "LayerNormalization");
  nin[0] = x;
  nin[1] = gam;
  nin[2] = bet;
  free(ln->in);
  ln->in = nin;
  ln->nin = bet >= 0 ? 3 : 2;
  drop_nodes(g, rm, nrm);
  return 1;
}

/* Relu or SiLU (Mul(x, Sigmoid(x))) after a LayerNormalization,
 * InstanceNormalization or GroupNormalization with one output: fused. */
static int fuse_norm_activation(kiln_graph *g, int ii, kiln_error *err) {
  kiln_node *n = &g->nodes[ii];
  if (!(is_op(n, "LayerNormalization") || is_op(n, "InstanceNormalization") || is_op(n, "GroupNormalization")) || kiln_attr_find(n, "kiln_activation"))
    return 0;
  for (int k = 1; k < n->nout; k++) if (n->out[k] >= 0) return 0;
  kiln_value *y = &g->vals[n->out[0]];
  if (y->dtype != KILN_DT_FLOAT && y->dtype != KILN_DT_DOUBLE) return 0;
  int rm[4], nrm = 0, zo;
  const char *a = match_activation(g, n->out[0], rm, &nrm, &zo);
  if (!a) return 0;
  char ops[256], why[192];
  ops_list(g, ii, rm, nrm, ops, sizeof ops);
  snprintf(why, sizeof why, "%s applied by the %s kernel", a, n->op_type);
  if (note_rewrite(g, n->name, ops, nrm + 1, why)) return kiln__err(err, KILN_ENOMEM, "out of memory");
  n = &g->nodes[ii];
  if (push_attr(n, "kiln_activation", KILN_ATTR_STRING, 0, 0, a)) return kiln__err(err, KILN_ENOMEM, "out of memory");
  g->vals[n->out[0]].producer = -1;
  n->out[0] = zo;
  g->vals[zo].producer = ii;
  drop_nodes(g, rm, nrm);
  return 1;
}

/* Softmax / LogSoftmax along the last axis of (x * c or x / c) [+ mask]:
 * the scale and mask move into the softmax node (kiln_scale, input 1). */
static int fuse_softmax(kiln_graph *g, int si, kiln_error *err) {
  kiln_node *sm = &g->nodes[si];
  if (!(is_op(sm, "Softmax") || is_op(sm, "LogSoftmax")) || sm->nin != 1 || kiln_attr_find(sm, "kiln_scale")) return 0;
  kiln_value *yv = &g->vals[sm->out[0]];
  int dt = yv->dtype;
  if ((dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) || yv->rank < 1) return 0;
  int64_t ax = kiln_attr_int(sm, "axis", sm->opset < 13 ? 1 : -1);
  if (ax < 0) ax += yv->rank;
  if (ax != yv->rank - 1) return 0; /* also the coerced 2-D form of opset < 13 when axis is the last */
  int v = sm->in[0], rm[2], nrm = 0, mask = -1;
  double scale = 1.0;
  int p = g->vals[v].producer;
  if (p < 0 || sole_consumer(g, v) != si) return 0;
  kiln_node *pn = &g->nodes[p];
  if (is_op(pn, "Add") && pn->nin == 2 && same_shape(&g->vals[pn->out[0]], yv)) {
    int q = -1;
    for (int k = 0; k < 2 && q < 0; k++) {
      int a = pn->in[k], b = pn->in[1 - k], pa = g->vals[a].producer;
      if (!same_shape(&g->vals[a], yv) || g->vals[b].dtype != dt) continue;
      if (pa >= 0 && (is_op(&g->nodes[pa], "Mul") || is_op(&g->nodes[pa], "Div"))) { q = a; mask = b; }
    }
    for (int k = 0; k < 2 && q < 0; k++)
      if (same_shape(&g->vals[pn->in[k]], yv) && g->vals[pn->in[1 - k]].dtype == dt) { q = pn->in[k]; mask = pn->in[1 - k]; }
    if (q < 0) return 0;
    rm[nrm++] = p;
    v = q;
    p = g->vals[v].producer;
    if (p >= 0 && sole_consumer(g, v) < 0) p = -1;
  }
  if (p >= 0) {
    pn = &g->nodes[p];
    if ((is_op(pn, "Mul") || is_op(pn, "Div")) && pn->nin == 2 && same_shape(&g->vals[pn->out[0]], yv)) {
      bool div = is_op(pn, "Div");
      for (int k = div ? 1 : 0; k < 2; k++) {
        double c = scalar_const(g, pn->in[k], dt);
        int other = pn->in[1 - k];
        if (isnan(c) || !same_shape(&g->vals[other], yv) || (div && c == 0)) continue;
        scale = div ? 1.0 / c : c;
        rm[nrm++] = p;
        v = other;
        break;
      }
    }
  }
  if (nrm == 0) return 0;
  char ops[256], why[192];
  ops_list(g, si, rm, nrm, ops, sizeof ops);
  snprintf(why, sizeof why, "%s%s%s in the %s kernel", scale != 1.0 ? "scale" : "", scale != 1.0 && mask >= 0 ? " and " : "", mask >= 0 ? "additive mask" : "",
           g->nodes[si].op_type);
  if (note_rewrite(g, g->nodes[si].name, ops, nrm + 1, why)) return kiln__err(err, KILN_ENOMEM, "out of memory");
  sm = &g->nodes[si];
  if (scale != 1.0 && push_attr(sm, "kiln_scale", KILN_ATTR_FLOAT, 0, (float)scale, NULL)) return kiln__err(err, KILN_ENOMEM, "out of memory");
  if (mask >= 0) {
    if (set_inputs(sm, 2)) return kiln__err(err, KILN_ENOMEM, "out of memory");
    sm->in[1] = mask;
  }
  sm->in[0] = v;
  drop_nodes(g, rm, nrm);
  return 1;
}

/* 1x1 stride-1 Conv of Mul(x, s), s [N,C,1,1]: the Conv scales x itself
 * (input 3, kiln_xscale). Returns 1 when rewritten, 0 if not, <0 on error. */
static int fuse_conv_xscale(kiln_graph *g, int ci, kiln_error *err) {
  kiln_node *cv = &g->nodes[ci];
  if (!is_op(cv, "Conv") || cv->nin < 2 || cv->nin > 3 || cv->nout != 1 || kiln_attr_find(cv, "kiln_xscale")) return 0;
  int v = cv->in[0], mi = v >= 0 ? g->vals[v].producer : -1;
  if (mi < 0 || sole_consumer(g, v) != ci || !is_op(&g->nodes[mi], "Mul") || g->nodes[mi].nin != 2) return 0;
  kiln_value *xv = &g->vals[v], *wt = kiln_in(g, cv, 1);
  if (!wt || !wt->is_const || !wt->data || (xv->dtype != KILN_DT_FLOAT && xv->dtype != KILN_DT_DOUBLE) || xv->rank != 4) return 0;
  if (xv->dims[2] * xv->dims[3] <= 1) return 0; /* a gate's own [N,C,1,1] values (SiLU's Mul): nothing to save */
  win_geom w;
  kiln_error e = {0};
  if (kiln__win_setup(g, cv, WIN_CONV, &w, &e) || w.group != 1) return 0;
  for (int a = 0; a < 3; a++)
    if (w.k[a] != 1 || w.s[a] != 1 || w.pb[a] || w.pe[a]) return 0;
  int x = -1, sc = -1;
  for (int k = 0; k < 2 && x < 0; k++) {
    kiln_value *a = kiln_in(g, &g->nodes[mi], k), *b = kiln_in(g, &g->nodes[mi], 1 - k);
    if (!a || !b || !same_shape(a, xv) || a->dtype != xv->dtype || b->dtype != xv->dtype || b->rank != 4) continue;
    if (b->dims[0] != xv->dims[0] || b->dims[1] != xv->dims[1] || b->dims[2] != 1 || b->dims[3] != 1) continue;
    x = g->nodes[mi].in[k];
    sc = g->nodes[mi].in[1 - k];
  }
  if (x < 0) return 0;
  char ops[256];
  int rm[1] = {mi};
  ops_list(g, ci, rm, 1, ops, sizeof ops);
  if (note_rewrite(g, cv->name, ops, 2, "the input's scale per image and channel (squeeze-excite) read by the Conv's kernel")) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int bias = cv->nin > 2 ? cv->in[2] : -1;
  if (set_inputs(cv, 4) || push_attr(cv, "kiln_xscale", KILN_ATTR_INT, 1, 0, NULL)) return kiln__err(err, KILN_ENOMEM, "out of memory");
  cv->in[0] = x;
  cv->in[2] = bias;
  cv->in[3] = sc;
  drop_nodes(g, rm, 1);
  return 1;
}

int kiln_graph_fuse_patterns(kiln_graph *g, int *ngroupnorm, int *nact, int *nsoftmax, kiln_error *err) {
  int cnt[4] = {0, 0, 0, 0};
  for (int pass = 0; pass < 4; pass++)
    for (int i = 0; i < g->nnodes; i++) {
      int rc = pass == 0 ? fuse_groupnorm(g, i, true, err) : pass == 1 ? fuse_norm_activation(g, i, err) : pass == 2 ? fuse_softmax(g, i, err)
                                                                                                        : fuse_conv_xscale(g, i, err);
      if (rc == 0 && pass == 0) rc = fuse_decomposed_norm(g, i, err);
      if (rc < 0) return rc;
      if (rc) { cnt[pass]++; i = -1; } /* node indices moved: start over */
    }
  if (cnt[0] + cnt[1] + cnt[2] + cnt[3]) {
    for (int i = 0; i < g->nvals; i++) g->vals[i].nconsumers = 0;
    for (int i = 0; i < g->nnodes; i++)
      for (int k = 0; k < g->nodes[i].nin; k++)
        if (g->nodes[i].in[k] >= 0) g->vals[g->nodes[i].in[k]].nconsumers++;
    for (int i = 0; i < g->nnodes; i++) { /* the rewritten nodes check their new form */
      kiln_node *n = &g->nodes[i];
      bool touched = kiln_attr_find(n, "kiln_activation") || kiln_attr_find(n, "kiln_per_channel") || kiln_attr_find(n, "kiln_scale") || kiln_attr_find(n, "kiln_rms") || kiln_attr_find(n, "kiln_xscale") ||
                     ((is_op(n, "Softmax") || is_op(n, "LogSoftmax")) && n->nin == 2);
      if (touched && n->op && n->op->infer && n->op->infer(g, n, err)) return err ? err->status : KILN_EINTERNAL;
      if (touched && n->op && n->op->dev_check && n->op->dev_check(g, n, err)) return err ? err->status : KILN_EINTERNAL;
    }
  }
  if (ngroupnorm) *ngroupnorm = cnt[0];
  if (nact) *nact = cnt[1];
  if (nsoftmax) *nsoftmax = cnt[2];
  return 0;
}

/* ---- attention: MatMul -> Softmax -> MatMul as one KilnAttention node ------ */

/* The Transpose producing v when it feeds node `user` alone: its source
 * value and perm (absent: reversed axes) into perm[]; else -1. */
static int transpose_source(kiln_graph *g, int v, int user, int64_t *perm, int *tnode) {
  int p = g->vals[v].producer;
  if (p < 0 || !is_op(&g->nodes[p], "Transpose") || sole_consumer(g, v) != user) return -1;
  kiln_node *t = &g->nodes[p];
  if (t->nin < 1 || t->in[0] < 0) return -1;
  int src = t->in[0], r = g->vals[src].rank;
  if (r != g->vals[v].rank || r < 1) return -1;
  const int64_t *pp = NULL;
  int np = kiln_attr_ints(t, "perm", &pp);
  if (np >= 0 && np != r) return -1;
  for (int a = 0; a < r; a++) perm[a] = np >= 0 ? pp[a] : r - 1 - a;
  *tnode = p;
  return src;
}

static int push_ints(kiln_node *n, const char *name, int cnt, const int64_t *v) {
  if (push_attr(n, name, KILN_ATTR_INTS, 0, 0, NULL)) return -1;
  kiln_attr *a = &n->attrs[n->nattr - 1];
  a->ints = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
  if (!a->ints) return -1;
  memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
  a->n = cnt;
  return 0;
}

/* Time (ns) of node n's kernel: its descriptor through the cost model
 * (measured record, corrected prediction or base estimate: counted in
 * how[2], how[1], how[0]), or for nodes without one (movement ops) a copy of
 * its output: launch + read and write at bandwidth (counted in how[3]). */
static double node_pred(kiln_graph *g, kiln_node *n, const kiln_predictor *pred, kiln_cm_state *cm, double launch_ns, double bw, int how[4]) {
  kiln_tunable t;
  double ns;
  int h = 0;
  if (cm && pred && n->op && n->op->tunable && n->op->tunable(g, n, &t) == 0 && pred->predict_run(cm, &t, &ns, &h) == 0) {
    how[h]++;
    return ns;
  }
  how[3]++;
  double bytes = 0;
  for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0) bytes += (double)kiln_value_bytes(&g->vals[n->in[k]]);
  bytes += (double)kiln_value_bytes(&g->vals[n->out[0]]);
  return launch_ns + bytes / bw;
}

/* Records an attention candidate for kiln plan. */
static int note_attention(kiln_graph *g, const char *root, const char *ops, int nnodes, bool fused, bool measured, double fns, double uns, const char *reason,
                          const kiln_fusion_decision *m) {
  kiln_fusion_decision *d = NULL;
  for (int i = 0; i < g->npdec && !d; i++) /* a rejected candidate looked at again (a later plan): one entry */
    if (!strcmp(g->pdec[i].kind, "attention") && !strcmp(g->pdec[i].root, root)) d = &g->pdec[i];
  if (d) {
    snprintf(d->nodes, sizeof d->nodes, "%s", ops);
    d->nnodes = nnodes;
    snprintf(d->reason, sizeof d->reason, "%s", reason);
  } else {
    if (note_rewrite(g, root, ops, nnodes, reason)) return -1;
    d = &g->pdec[g->npdec - 1];
  }
  d->kind = "attention";
  d->fused = fused;
  d->measured = measured;
  d->pred_fused_ns = fns;
  d->pred_unfused_ns = uns;
  /* what kiln tune measures the grouping by (fusion_tune.c) */
  snprintf(d->sig, sizeof d->sig, "%s", m->sig);
  snprintf(d->members, sizeof d->members, "%s", m->members);
  d->meas_fused_ns = m->meas_fused_ns;
  d->meas_unfused_ns = m->meas_unfused_ns;
  return 0;
}

#define ATT_MAX_HEAD 1024 /* head dimensions the attention kernel keeps in private memory */

/* The attention kernel's time at the rate predicted for the two matrix
 * products it replaces (mm_ns, fitted or measured): their time scaled by
 * the kernel's arithmetic (its default candidate's features: padding to
 * whole blocks, the exponentials) over theirs, 2 (D + Dv) per score. Used
 * when the cost model has only a base estimate of the kernel (no records,
 * no fitted correction of the family): measured on a POCL CPU, the blocked
 * kernel runs at or above the rate of the separate products (SD 1024-token
 * heads 114 GFLOP/s against their 37; BERT's 0.55 ms against their 3.4 ms),
 * while the base estimate and the products' fitted predictions disagreed
 * by up to 3x on the same device (VAE's 256x512 head: 1.8 ms against 0.6 ms),
 * so that comparing the two chose by the models' bias. */
static double at_gemm_rate(const kiln_tunable *t, double mm_ns, int *how) {
  int p[KILN_MAX_KPARAMS];
  for (int i = 0; i < t->nparams; i++) p[i] = t->params[i].dflt;
  kiln_features f;
  memset(&f, 0, sizeof f);
  t->features(t, p, &f);
  const double scores = (double)t->dims[AD_BATCH] * (double)t->dims[AD_S] * (double)t->dims[AD_SKV];
  const double mm_flops = scores * 2.0 * (double)(t->dims[AD_D] + t->dims[AD_DV]);
  *how = 4;
  return mm_flops > 0 && f.flops > 0 ? mm_ns * f.flops / mm_flops : mm_ns;
}

/* Rewrites the attention pattern around Softmax node si. 1 when rewritten,
 * 0 if not (a rejected candidate is still recorded), <0 on error. */
static int fuse_attention(kiln_graph *g, int si, const kiln_predictor *pred, kiln_cm_state *cm, const kiln_fusion_costs *costs, kiln_error *err) {
  kiln_node *sm = &g->nodes[si];
  if (!is_op(sm, "Softmax") || sm->nin < 1 || sm->nout != 1 || sm->out[0] < 0) return 0;
  kiln_value *pv = &g->vals[sm->out[0]];
  int dt = pv->dtype;
  if ((dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) || pv->rank < 2) return 0;
  int64_t ax = kiln_attr_int(sm, "axis", sm->opset < 13 ? 1 : -1);
  if (ax < 0) ax += pv->rank;
  if (ax != pv->rank - 1) return 0;
  int sv = sm->in[0], m1 = sv >= 0 ? g->vals[sv].producer : -1;
  if (m1 < 0 || !is_op(&g->nodes[m1], "MatMul") || sole_consumer(g, sv) != si) return 0;
  int m2 = sole_consumer(g, sm->out[0]);
  if (m2 < 0 || !is_op(&g->nodes[m2], "MatMul") || g->nodes[m2].in[0] != sm->out[0] || g->nodes[m2].in[1] == sm->out[0]) return 0;
  kiln_node *A = &g->nodes[m1], *B = &g->nodes[m2];
  int qv = A->in[0], kv = A->in[1], vv = B->in[1], ov = B->out[0];
  if (qv < 0 || kv < 0 || vv < 0 || ov < 0) return 0;
  kiln_value *q = &g->vals[qv], *kt = &g->vals[kv], *v = &g->vals[vv], *o = &g->vals[ov];
  if (q->rank < 2 || kt->rank < 2 || v->rank < 2 || q->dtype != dt || kt->dtype != dt || v->dtype != dt || o->dtype != dt) return 0;
  int64_t D = q->dims[q->rank - 1], Dv = v->dims[v->rank - 1];
  if (D < 1 || Dv < 1 || D > ATT_MAX_HEAD || Dv > ATT_MAX_HEAD || o->rank - 2 > 6) return 0;
  /* the Transposes read through, and one reading the result */
  int64_t perm[4][KILN_MAX_RANK];
  int tn[4] = {-1, -1, -1, -1}, src[3] = {qv, kv, vv};
  const int users[3] = {m1, m1, m2};
  for (int k = 0; k < 3; k++) {
    int s = transpose_source(g, src[k], users[k], perm[k], &tn[k]);
    if (s >= 0) src[k] = s;
  }
  int yv = ov, oc = sole_consumer(g, ov);
  if (oc >= 0 && is_op(&g->nodes[oc], "Transpose") && g->nodes[oc].nin == 1) {
    kiln_node *t = &g->nodes[oc];
    const int64_t *pp = NULL;
    int np = kiln_attr_ints(t, "perm", &pp), r = o->rank;
    if (np < 0 || np == r) {
      for (int a = 0; a < r; a++) perm[3][a] = np >= 0 ? pp[a] : r - 1 - a;
      tn[3] = oc;
      yv = t->out[0];
    }
  }
  /* predictions: the separate kernels against one attention kernel */
  double launch_ns = costs && costs->launch_us > 0 ? costs->launch_us * 1e3 : 30e3, bw = costs && costs->bw_gbps > 0 ? costs->bw_gbps : 10.0;
  int how_u[4] = {0, 0, 0, 0}, how_f = 3, how_mm[4] = {0, 0, 0, 0};
  const double mm_ns = node_pred(g, A, pred, cm, launch_ns, bw, how_mm) + node_pred(g, B, pred, cm, launch_ns, bw, how_mm);
  for (int k = 0; k < 4; k++) how_u[k] += how_mm[k];
  double unfused = mm_ns + node_pred(g, sm, pred, cm, launch_ns, bw, how_u);
  int rm[8], nrm = 0;
  rm[nrm++] = m1;
  rm[nrm++] = m2;
  for (int k = 0; k < 4; k++)
    if (tn[k] >= 0) { unfused += node_pred(g, &g->nodes[tn[k]], pred, cm, launch_ns, bw, how_u); rm[nrm++] = tn[k]; }
  /* the candidate node, built on a scratch copy to describe its kernel */
  kiln_node cand;
  memset(&cand, 0, sizeof cand);
  int cin[4] = {src[0], src[1], src[2], sm->nin > 1 ? sm->in[1] : -1}, cout[1] = {yv};
  cand.name = sm->name;
  cand.op_type = "KilnAttention";
  cand.domain = "";
  cand.nin = cin[3] >= 0 ? 4 : 3;
  cand.in = cin;
  cand.nout = 1;
  cand.out = cout;
  cand.op = kiln_op_lookup("", "KilnAttention");
  cand.fuse_root = -1;
  static const char *const pnames[4] = {"q_perm", "k_perm", "v_perm", "o_perm"};
  float scale = kiln_attr_float(sm, "kiln_scale", 1.0f);
  int rc = 0;
  if (scale != 1.0f && push_attr(&cand, "kiln_scale", KILN_ATTR_FLOAT, 0, scale, NULL)) rc = -1;
  for (int k = 0; k < 4 && !rc; k++)
    if (tn[k] >= 0 && push_ints(&cand, pnames[k], k < 3 ? g->vals[src[k]].rank : o->rank, perm[k])) rc = -1;
  if (rc) { kiln__node_free_attrs(&cand); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  /* shapes must come out as the pattern's (else leave it alone) */
  kiln_error e2 = {0};
  kiln_value save = g->vals[yv];
  int ok = cand.op && cand.op->infer(g, &cand, &e2) == 0 && same_shape(&g->vals[yv], &save) && g->vals[yv].dtype == save.dtype &&
           (!cand.op->dev_check || cand.op->dev_check(g, &cand, &e2) == 0);
  g->vals[yv].rank = save.rank;
  memcpy(g->vals[yv].dims, save.dims, sizeof save.dims);
  g->vals[yv].dtype = save.dtype;
  if (!ok) { kiln__node_free_attrs(&cand); return 0; }
  kiln_tunable t;
  double fused = 0;
  if (cm && pred && cand.op->tunable(g, &cand, &t) == 0 && pred->predict_run(cm, &t, &fused, &how_f) == 0) {
    /* at the products' rate also when the kernel has a record but none of
     * the separate kernels has: a measured side against a predicted one
     * compares the measurement with the model's bias. With a database tuned
     * on bert_encoder (its attention kernel measured, 327 us; the separate
     * products never in a plan, so never measured: predicted 103 and 105
     * us, measured 216 and 225 in that plan) the attention went unfused,
     * 7 kernels of ~1.5 ms in all, and the tuned model ran 7-8% slower than
     * the untuned one. */
    if ((how_f == 0 || (how_f == 2 && !how_u[2])) && !how_mm[0] && !how_mm[3]) fused = at_gemm_rate(&t, mm_ns, &how_f);
  } else { /* counted traffic: the operands once, no scores or probabilities */
    fused = launch_ns;
    for (int k = 0; k < cand.nin; k++) fused += (double)kiln_value_bytes(&g->vals[cin[k]]) / bw;
    fused += (double)kiln_value_bytes(&g->vals[yv]) / bw;
    double ub = 0; /* the same counting for the separate kernels */
    for (int k = 0; k < nrm; k++) {
      kiln_node *n = &g->nodes[rm[k]];
      for (int j = 0; j < n->nin; j++) if (n->in[j] >= 0) ub += (double)kiln_value_bytes(&g->vals[n->in[j]]);
      ub += (double)kiln_value_bytes(&g->vals[n->out[0]]);
    }
    ub += (double)kiln_value_bytes(&g->vals[sm->in[0]]) + (double)kiln_value_bytes(pv);
    if (sm->nin > 1 && sm->in[1] >= 0) ub += (double)kiln_value_bytes(&g->vals[sm->in[1]]);
    unfused = (nrm + 1) * launch_ns + ub / bw;
    how_f = 3;
    memset(how_u, 0, sizeof how_u);
    how_u[3] = nrm + 1;
  }
  /* the grouping as kiln tune measures it: its signature over the members
   * (in graph order) and their names, the kernels it times in either plan */
  kiln_fusion_decision md;
  memset(&md, 0, sizeof md);
  int mem[8], nmem = 0;
  mem[nmem++] = si;
  for (int k = 0; k < nrm; k++) mem[nmem++] = rm[k];
  for (int a = 1; a < nmem; a++)
    for (int b = a; b > 0 && mem[b] < mem[b - 1]; b--) { int t2 = mem[b]; mem[b] = mem[b - 1]; mem[b - 1] = t2; }
  kiln__fusion_sig(g, "attention", mem, nmem, md.sig, sizeof md.sig);
  for (int k = 0, o = 0; k < nmem; k++) {
    int w = snprintf(md.members + o, sizeof md.members - (size_t)o, "%s\n", g->nodes[mem[k]].name);
    if (w < 0 || (size_t)(o + w) >= sizeof md.members) { md.sig[0] = 0; break; } /* names too long to list: not measured */
    o += w;
  }
  md.pred_fused_ns = fused;
  md.pred_unfused_ns = unfused;
  /* the user's KILN_ATTENTION_FUSE, else the tuner's force, else kiln tune's
   * measurements of this grouping on this device, else the prediction */
  int force = costs ? costs->force_attention : KILN_FUSE_AUTO;
  bool take = force != KILN_FUSE_AUTO ? force == KILN_FUSE_ALWAYS : kiln__fusion_choose(costs, &md, fused < unfused);
  char ops[256], why[192];
  rm[nrm] = si;
  ops_list(g, si, rm, nrm, ops, sizeof ops);
  static const char *const hows[5] = {"base estimate", "predicted", "measured", "counted traffic", "matrix products' rate"};
  char uw[96] = "";
  static const int order[4] = {2, 1, 0, 3};
  for (int k = 0, o = 0; k < 4; k++)
    if (how_u[order[k]] && o < (int)sizeof uw) o += snprintf(uw + o, sizeof uw - (size_t)o, "%s%d %s", o ? ", " : "", how_u[order[k]], hows[order[k]]);
  if (!force && md.meas_fused_ns > 0) /* measured: kiln__fusion_choose's reason */
    snprintf(why, sizeof why, "%s", md.reason);
  else
    snprintf(why, sizeof why, "%s: attention kernel %.1f us (%s) vs %d kernels %.1f us (%s)%s", take ? "fused" : "rejected", fused / 1e3, hows[how_f], nrm + 1,
             unfused / 1e3, uw, force ? " [KILN_ATTENTION_FUSE]" : "");
  if (note_attention(g, g->nodes[yv == ov ? m2 : tn[3]].name, ops, nrm + 1, take, costs && costs->probed, fused, unfused, why, &md)) {
    kiln__node_free_attrs(&cand);
    return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  if (!take) { kiln__node_free_attrs(&cand); return 0; }
  /* the Softmax node becomes the attention node */
  sm = &g->nodes[si];
  char *nt = strdup("KilnAttention");
  int *ni = malloc(sizeof(int) * 4);
  if (!nt || !ni) { free(nt); free(ni); kiln__node_free_attrs(&cand); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  kiln__node_free_attrs(sm);
  sm->attrs = cand.attrs;
  sm->nattr = cand.nattr;
  free(sm->op_type);
  sm->op_type = nt;
  sm->op = cand.op;
  free(sm->in);
  memcpy(ni, cin, sizeof cin);
  sm->in = ni;
  sm->nin = cand.nin;
  g->vals[sm->out[0]].producer = -1;
  sm->out[0] = yv;
  g->vals[yv].producer = si;
  drop_nodes(g, rm, nrm);
  return 1;
}

int kiln_graph_fuse_attention(kiln_graph *g, const kiln_predictor *pred, kiln_cm_state *cm, const kiln_fusion_costs *costs, int *nfused,
                              kiln_error *err) {
  int cnt = 0, rc = 0;
  /* each Softmax is looked at once: a rejected candidate stays as it is */
  int nsm = 0;
  for (int i = 0; i < g->nnodes; i++) nsm += is_op(&g->nodes[i], "Softmax");
  char **names = calloc((size_t)nsm + 1, sizeof(char *));
  if (!names) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0, k = 0; i < g->nnodes; i++)
    if (is_op(&g->nodes[i], "Softmax") && !(names[k++] = strdup(g->nodes[i].name))) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int k = 0; k < nsm && !rc; k++) {
    int si = -1;
    for (int i = 0; i < g->nnodes && si < 0; i++)
      if (is_op(&g->nodes[i], "Softmax") && !strcmp(g->nodes[i].name, names[k])) si = i;
    if (si < 0) continue;
    int r = fuse_attention(g, si, pred, cm, costs, err);
    if (r < 0) rc = r;
    else cnt += r;
  }
  for (int k = 0; k < nsm; k++) free(names[k]);
  free(names);
  if (!rc && cnt) {
    if ((rc = kiln__graph_toposort(g, "rewritten graph", err)) != 0) return rc;
    for (int i = 0; i < g->nvals; i++) g->vals[i].nconsumers = 0;
    for (int i = 0; i < g->nnodes; i++)
      for (int k = 0; k < g->nodes[i].nin; k++)
        if (g->nodes[i].in[k] >= 0) g->vals[g->nodes[i].in[k]].nconsumers++;
    for (int i = 0; i < g->nnodes && !rc; i++) {
      kiln_node *n = &g->nodes[i];
      if (strcmp(n->op_type, "KilnAttention")) continue;
      if (n->op->infer(g, n, err) || n->op->dev_check(g, n, err)) rc = err ? err->status : KILN_EINTERNAL;
    }
  }
  if (nfused) *nfused = cnt;
  return rc;
}
