/* precision.c: fp16 storage plans (kiln_session_set_precision, --precision).
 *
 * A plan's precision is a property of the device storage only: every value
 * keeps its ONNX dtype (float), its host data and its CPU reference; a float
 * value marked `half` has a device buffer of halfs, which the kernels read
 * with vload_half and write with vstore_half_rte, computing in fp32.
 *
 * kiln__precision_apply, after the plan's shape inference and pattern
 * passes, chooses per node (in topological order):
 *   - ops without a half variant (no KILN_OP_HALF) run in fp32, an "fp32
 *     island" with conversions around it;
 *   - conv, gemm, pooling, norms, softmax, reductions, attention
 *     (KILN_OP_HALF_GAIN) run in half: half loads and stores, fp32
 *     accumulation (conv and gemm weights converted once, when uploaded or
 *     packed); every solver of the conv and gemm families a half instance
 *     can choose has a half kernel (CLBlast's GEMM, which has none, is not
 *     offered to half instances);
 *   - element-wise and movement ops follow their inputs: half when a
 *     computed float input is half (or all are weights), so that the tail
 *     of an fp32 island stays in it (and in its fused epilogue);
 *   - `auto` keeps a node in fp32 when its error with half storage, measured
 *     on the host (inputs and outputs rounded to half around the node's CPU
 *     reference on seeded inputs) exceeds KILN_PRECISION_AUTO_TOL, and lets
 *     the norms, softmax and reductions follow their inputs too (no
 *     conversion pair around a lone half op among fp32 islands); conv and
 *     gemm, which hold most of a model's bytes, go to half where measured
 *     within the tolerance, as in fp16.
 * Weights (constants) are half when every consumer is; they are converted
 * once, when uploaded. The model's inputs and outputs keep fp32 buffers.
 * Where a value's storage differs from what a consumer runs in, a KilnCast
 * node converts it (one per value and direction), inserted before its first
 * such consumer; an output a half node computes gets one after it. */
#include "kiln_internal.h"
#include <math.h>

/* ---- KilnCast: storage conversion ---------------------------------------- */

static int kc_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  (void)err;
  kiln_value *a = kiln_in(g, n, 0);
  kiln_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  return 0;
}

static int kc_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)err;
  memcpy(out[0], in[0], kiln_value_bytes(kiln_in(g, n, 0))); /* host data is float on both sides */
  return 0;
}

static int kc_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  cl_mem ba = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_long total = kiln_value_numel(y);
  if (!total) return 0;
  if (a->half == y->half) {
    kiln__rec_other();
    cl_int e = clEnqueueCopyBuffer(x->d->q, ba, by, 0, 0, kiln_value_dev_bytes(y), 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : kiln__err(err, KILN_ECL, "copy: %s", kiln__clerror(e));
  }
  char opts[300], name[32];
  snprintf(name, sizeof name, "ew_cast_to_%d", kiln_dev_dtype(y));
  cl_kernel k = kiln_cl_kernel(x->d, "elementwise_cast.cl", kiln_cl_type_opts(kiln_dev_dtype(a), opts, sizeof opts), name, err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(ba), KARG(by), KARG(total), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int kc_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  if (a->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "KilnCast of %s", kiln_dtype_name(a->dtype));
  return 0;
}

const kiln_op_def kiln_ops_precision[] = {
  {.name = "KilnCast", .infer = kc_infer, .ref = kc_ref, .dev = kc_dev, .dev_check = kc_check},
  {NULL},
};

/* ---- host transfers of half-stored values --------------------------------- */

/* The blocked (NCHW[B]c, layout.c) index of NCHW element (i, c, p) of a
 * value with C channels of S pixels. */
static int64_t blk_at(int64_t i, int64_t c, int64_t p, int64_t C, int64_t S, int64_t B) { return (i * C + c / B * B) * S + p * B + c % B; }

/* A blocked value read back in the model's NCHW (to_dev false), or the
 * model's NCHW data written blocked (to_dev true). */
static int xfer_blk(kiln_device *d, const kiln_value *v, float *host, bool to_dev, kiln_error *err) {
  int64_t n = kiln_value_numel(v), N = v->dims[0], C = v->dims[1], S = 1;
  for (int i = 2; i < v->rank; i++) S *= v->dims[i];
  float *b = malloc((size_t)n * sizeof *b + 1);
  if (!b) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int rc = to_dev ? 0 : kiln_cl_read(d, v->buf, b, (size_t)n * sizeof *b, err);
  for (int64_t i = 0; !rc && i < N; i++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t p = 0; p < S; p++) {
        if (to_dev) b[blk_at(i, c, p, C, S, v->blk)] = host[(i * C + c) * S + p];
        else host[(i * C + c) * S + p] = b[blk_at(i, c, p, C, S, v->blk)];
      }
  if (!rc && to_dev) { /* blocking: b is freed next */
    kiln__rec_other();
    cl_int e = clEnqueueWriteBuffer(d->q, v->buf, CL_TRUE, 0, (size_t)n * sizeof *b, b, 0, NULL, NULL);
    if (e != CL_SUCCESS) rc = kiln__err(err, KILN_ECL, "clEnqueueWriteBuffer(%lld bytes): %s", (long long)n * 4, kiln__clerror(e));
  }
  free(b);
  return rc;
}

int kiln__value_read(kiln_device *d, const kiln_value *v, void *dst, kiln_error *err) {
  if (v->blk) return xfer_blk(d, v, dst, false, err);
  if (!v->half) return kiln_cl_read(d, v->buf, dst, kiln_value_bytes(v), err);
  int64_t n = kiln_value_numel(v);
  uint16_t *h = malloc((size_t)n * 2 + 2);
  if (!h) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int rc = kiln_cl_read(d, v->buf, h, (size_t)n * 2, err);
  for (int64_t i = 0; !rc && i < n; i++) ((float *)dst)[i] = kiln__h2f(h[i]);
  free(h);
  return rc;
}

int kiln__value_upload(kiln_device *d, const kiln_value *v, kiln_error *err) {
  if (v->blk) return xfer_blk(d, v, v->data, true, err);
  if (!v->half) return kiln_cl_write(d, v->buf, v->data, kiln_value_bytes(v), err);
  int64_t n = kiln_value_numel(v);
  uint16_t *h = malloc((size_t)n * 2 + 2);
  if (!h) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int64_t i = 0; i < n; i++) h[i] = kiln__f2h(((const float *)v->data)[i]);
  kiln__rec_other();
  cl_int e = clEnqueueWriteBuffer(d->q, v->buf, CL_TRUE, 0, (size_t)n * 2, h, 0, NULL, NULL); /* blocking: h is freed next */
  free(h);
  return e == CL_SUCCESS ? 0 : kiln__err(err, KILN_ECL, "clEnqueueWriteBuffer(%lld bytes): %s", (long long)n * 2, kiln__clerror(e));
}

/* ---- names ---------------------------------------------------------------- */

const char *kiln_precision_name(int p) {
  switch (p) {
  case KILN_PRECISION_FP32: return "fp32";
  case KILN_PRECISION_FP16: return "fp16";
  case KILN_PRECISION_AUTO: return "auto";
  }
  return NULL;
}

int kiln_precision_parse(const char *name) {
  for (int p = 0; p <= KILN_PRECISION_AUTO; p++)
    if (name && !strcmp(name, kiln_precision_name(p))) return p;
  return -1;
}

/* ---- choosing --------------------------------------------------------------- */

static bool is_cast(const kiln_node *n) { return !strcmp(n->op_type, "KilnCast"); }
static bool is_float(const kiln_value *v) { return v && v->dtype == KILN_DT_FLOAT; }

/* 1: the node has float tensors, all of them float32; 0: none; -1: other float types too. */
static int float_kind(kiln_graph *g, const kiln_node *n) {
  int any = 0;
  for (int pass = 0; pass < 2; pass++) {
    int cnt = pass ? n->nout : n->nin, *ids = pass ? n->out : n->in;
    for (int k = 0; k < cnt; k++) {
      if (ids[k] < 0) continue;
      const kiln_value *v = &g->vals[ids[k]];
      if (v->dtype == KILN_DT_FLOAT) any = 1;
      else if (kiln_dtype_is_float(v->dtype)) return -1;
    }
  }
  return any;
}

/* Seeded values in [-1, 1) for a float input, the host data for a constant. */
static float *seeded(const kiln_value *v, uint64_t *seed) {
  int64_t n = kiln_value_numel(v);
  float *p = malloc((size_t)n * sizeof(float) + 4);
  if (!p) return NULL;
  for (int64_t i = 0; i < n; i++) p[i] = v->data ? ((const float *)v->data)[i] : (float)((double)(kiln__splitmix(seed) >> 11) / 9007199254740992.0 * 2 - 1);
  return p;
}

static float round_half(float f) { return kiln__h2f(kiln__f2h(f)); }

/* Error (relative to the output's max |ref|) of node n with half storage:
 * its CPU reference on seeded inputs against the same with inputs and
 * outputs rounded to half. < 0 when it cannot be measured on the host
 * (non-float inputs computed at run time, outputs over 16M elements). */
static double half_error(kiln_graph *g, kiln_node *n) {
  for (int k = 0; k < n->nin; k++) {
    const kiln_value *v = kiln_in(g, n, k);
    if (v && !is_float(v) && !v->is_const) return -1;
  }
  for (int k = 0; k < n->nout; k++)
    if (kiln_has_out(n, k) && kiln_value_numel(kiln_out(g, n, k)) > (16 << 20)) return -1;
  void **h32 = calloc((size_t)g->nvals, sizeof(void *)), **h16 = calloc((size_t)g->nvals, sizeof(void *));
  double worst = -1;
  uint64_t seed = 0x5eed;
  bool ok = h32 && h16;
  for (int k = 0; ok && k < n->nin; k++) {
    kiln_value *v = kiln_in(g, n, k);
    if (!v || !is_float(v) || h32[n->in[k]]) continue;
    float *a = seeded(v, &seed), *b = a ? malloc((size_t)kiln_value_numel(v) * sizeof(float) + 4) : NULL;
    if (!b) { free(a); ok = false; break; }
    for (int64_t i = 0; i < kiln_value_numel(v); i++) b[i] = round_half(a[i]);
    h32[n->in[k]] = a;
    h16[n->in[k]] = b;
  }
  kiln_error e = {0};
  if (ok && kiln_node_run_ref_host(g, n, h32, &e) == 0 && kiln_node_run_ref_host(g, n, h16, &e) == 0) {
    worst = 0;
    for (int k = 0; k < n->nout; k++) {
      kiln_value *y = kiln_out(g, n, k);
      if (!is_float(y) || !h32[n->out[k]] || !h16[n->out[k]]) continue;
      const float *r = h32[n->out[k]], *q = h16[n->out[k]];
      double mref = 0, md = 0;
      for (int64_t i = 0; i < kiln_value_numel(y); i++) {
        mref = fmax(mref, fabs(r[i]));
        double dd = fabs((double)round_half(q[i]) - r[i]);
        md = isfinite(r[i]) && !isfinite(q[i]) ? INFINITY : fmax(md, dd);
      }
      worst = fmax(worst, mref > 0 ? md / mref : md);
    }
  }
  for (int i = 0; h32 && h16 && i < g->nvals; i++) { free(h32[i]); free(h16[i]); }
  free(h32);
  free(h16);
  return worst;
}

/* The op's dev_check with the node's float tensors marked half. */
static bool half_supported(kiln_graph *g, kiln_node *n) {
  if (!n->op->dev_check) return true;
  bool saved[64];
  int ids[64], cnt = 0;
  for (int pass = 0; pass < 2; pass++) {
    int c = pass ? n->nout : n->nin, *v = pass ? n->out : n->in;
    for (int k = 0; k < c && cnt < 64; k++)
      if (v[k] >= 0 && is_float(&g->vals[v[k]])) { ids[cnt] = v[k]; saved[cnt++] = g->vals[v[k]].half; g->vals[v[k]].half = true; }
  }
  kiln_error e = {0};
  bool ok = cnt < 64 && n->op->dev_check(g, n, &e) == 0;
  for (int k = cnt - 1; k >= 0; k--) g->vals[ids[k]].half = saved[k];
  return ok;
}

/* conv and gemm: the ops whose weights and activations dominate a plan's bytes */
static bool heavy_op(const kiln_node *n) {
  return !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose") || !strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "MatMul");
}

/* Chooses node n's precision (n->half, n->prec_why) from its op and the
 * storage of its inputs (vals' half flags of computed values, set so far). */
static void choose_node(kiln_graph *g, kiln_node *n, int precision) {
  n->half = false;
  n->prec_why = NULL;
  if (n->folded || is_cast(n)) return;
  int fk = float_kind(g, n);
  if (fk == 0) return;
  if (fk < 0) { n->prec_why = "as the model says: not all of its float tensors are float32 (float16, double)"; return; }
  unsigned fl = n->op->flags;
  if (!(fl & KILN_OP_HALF)) {
    n->prec_why = "fp32 island: no half kernels for this op yet (conversions around it)";
    return;
  }
  if (!half_supported(g, n)) { n->prec_why = "fp32: its half kernels do not cover this node"; return; }
  /* auto converts nothing for a lone op between fp32 neighbours (two
   * conversions cost more than its half storage saves): every op follows */
  if (!(fl & KILN_OP_HALF_GAIN) || (precision == KILN_PRECISION_AUTO && !heavy_op(n))) {
    bool computed = false, half_in = false;
    for (int k = 0; k < n->nin; k++) {
      const kiln_value *v = kiln_in(g, n, k);
      if (!is_float(v) || v->is_const) continue;
      computed = true;
      half_in = half_in || v->half;
    }
    if (computed && !half_in) { n->prec_why = "fp32: follows its fp32 input (no conversion for an element-wise or movement op)"; return; }
    n->prec_why = computed ? "fp16: follows its half input" : "fp16: its float inputs are weights (converted once)";
  } else n->prec_why = "fp16 storage, fp32 accumulation";
  n->half = true;
  if (precision == KILN_PRECISION_AUTO) {
    double e = half_error(g, n);
    if (e > KILN_PRECISION_AUTO_TOL) { n->half = false; n->prec_why = "fp32 (auto): measured fp16 error over the tolerance"; }
    else if (e >= 0) n->prec_why = (fl & KILN_OP_HALF_GAIN) ? "fp16 (auto): measured error within tolerance, fp32 accumulation" : "fp16 (auto): measured error within tolerance";
    else n->prec_why = "fp16 (auto): storage rounding only (not measurable on the host)";
  }
}

/* ---- inserting and removing conversions ------------------------------------- */

typedef struct pending { int before, after; kiln_node n; } pending; /* position: before node `before` or after node `after` (-1: not) */

static int new_value_like(kiln_graph *g, int v, const char *suffix) {
  char nm[512];
  for (int c = 0;; c++) {
    snprintf(nm, sizeof nm, c ? "%s::%s%d" : "%s::%s", g->vals[v].name, suffix, c);
    if (kiln_graph_find_value(g, nm) < 0) break;
  }
  int id = kiln_graph_add_value(g, nm);
  if (id < 0) return -1;
  kiln_value *a = &g->vals[v], *b = &g->vals[id];
  b->dtype = a->dtype;
  b->rank = a->rank;
  memcpy(b->dims, a->dims, sizeof b->dims);
  return id;
}

static int make_cast(kiln_graph *g, int a, int b, pending *p, kiln_error *err) {
  kiln_node *n = &p->n;
  memset(n, 0, sizeof *n);
  char nm[600];
  snprintf(nm, sizeof nm, "%s/to_%s", g->vals[a].name, g->vals[b].half ? "fp16" : "fp32");
  n->name = strdup(nm);
  n->op_type = strdup("KilnCast");
  n->domain = strdup("");
  n->in = malloc(sizeof(int));
  n->out = malloc(sizeof(int));
  if (!n->name || !n->op_type || !n->domain || !n->in || !n->out) { kiln__node_free_fields(n); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  n->nin = n->nout = n->nin_formal = 1;
  n->in[0] = a;
  n->out[0] = b;
  n->op = kiln_op_lookup("", "KilnCast");
  n->opset = g->opset;
  n->fuse_root = -1;
  n->prec_why = "conversion between fp32 and fp16 storage";
  return 0;
}

/* Rebuilds g->nodes with the pending casts in place; producers recomputed. */
static int splice(kiln_graph *g, pending *p, int np, kiln_error *err) {
  int total = g->nnodes + np;
  kiln_node *nn = malloc(sizeof *nn * (size_t)(total + 1));
  if (!nn) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int o = 0;
  for (int i = 0; i < g->nnodes; i++) {
    for (int q = 0; q < np; q++) if (p[q].before == i) nn[o++] = p[q].n;
    nn[o++] = g->nodes[i];
    for (int q = 0; q < np; q++) if (p[q].after == i) nn[o++] = p[q].n;
  }
  free(g->nodes);
  g->nodes = nn;
  g->nnodes = g->capnodes = total;
  for (int v = 0; v < g->nvals; v++) g->vals[v].producer = -1;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nout; k++)
      if (g->nodes[i].out[k] >= 0) g->vals[g->nodes[i].out[k]].producer = i;
  return 0;
}

/* Removes every KilnCast (an fp32 plan after an fp16 one) and every half mark. */
static void remove_casts(kiln_graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *c = &g->nodes[i];
    if (!is_cast(c)) continue;
    int a = c->in[0], b = c->out[0];
    bool out = g->vals[b].is_output;
    for (int j = 0; j < g->nnodes; j++) {
      kiln_node *m = &g->nodes[j];
      if (j == i) continue;
      for (int k = 0; k < m->nin; k++) if (m->in[k] == (out ? a : b)) m->in[k] = out ? b : a;
      for (int k = 0; out && k < m->nout; k++) if (m->out[k] == a) m->out[k] = b;
    }
    kiln__node_free_fields(c);
    memmove(c, c + 1, sizeof *c * (size_t)(g->nnodes - i - 1));
    g->nnodes--;
    i--;
  }
  for (int v = 0; v < g->nvals; v++) { g->vals[v].half = false; g->vals[v].producer = -1; }
  for (int i = 0; i < g->nnodes; i++) {
    g->nodes[i].half = false;
    for (int k = 0; k < g->nodes[i].nout; k++)
      if (g->nodes[i].out[k] >= 0) g->vals[g->nodes[i].out[k]].producer = i;
  }
}

/* Constants are half when every device consumer is. */
static void mark_constants(kiln_graph *g) {
  int nv = g->nvals;
  for (int v = 0; v < nv; v++) {
    kiln_value *val = &g->vals[v];
    if (!val->is_const || !is_float(val) || val->is_output) continue;
    int users = 0, half = 0;
    for (int i = 0; i < g->nnodes; i++) {
      kiln_node *n = &g->nodes[i];
      if (n->folded) continue;
      for (int k = 0; k < n->nin; k++) if (n->in[k] == v) { users++; half += n->half; break; }
    }
    val->half = users > 0 && half == users;
  }
}

static int grow(pending **p, int *cap, int np, kiln_error *err) {
  if (np < *cap) return 0;
  int c = *cap ? *cap * 2 : 32;
  pending *q = realloc(*p, sizeof *q * (size_t)c);
  if (!q) return kiln__err(err, KILN_ENOMEM, "out of memory");
  *p = q;
  *cap = c;
  return 0;
}

/* Outputs computed in half get a half twin written by their producer and a
 * cast after it into the output itself. */
static int cast_outputs(kiln_graph *g, pending **p, int *np, int *cap, kiln_error *err) {
  for (int i = 0; i < g->noutputs; i++) {
    int o = g->outputs[i];
    if (!g->vals[o].half) continue;
    int h = new_value_like(g, o, "fp16");
    if (h < 0) return kiln__err(err, KILN_ENOMEM, "out of memory");
    g->vals[h].half = true;
    g->vals[o].half = false;
    int prod = g->vals[o].producer;
    for (int j = 0; j < g->nnodes; j++) {
      kiln_node *m = &g->nodes[j];
      for (int k = 0; k < m->nin; k++) if (m->in[k] == o) m->in[k] = h;
      for (int k = 0; k < m->nout; k++) if (m->out[k] == o) m->out[k] = h;
    }
    int rc = grow(p, cap, *np, err);
    if (!rc) rc = make_cast(g, h, o, &(*p)[*np], err);
    if (rc) return rc;
    (*p)[*np].before = -1;
    (*p)[*np].after = prod;
    (*np)++;
  }
  return 0;
}

/* Every consumer reading a storage other than its own gets the value
 * converted (one conversion per value and direction). */
static int cast_inputs(kiln_graph *g, pending **p, int *np, int *cap, kiln_error *err) {
  int nv0 = g->nvals;
  int *conv = malloc(sizeof(int) * 2 * (size_t)(nv0 + 1)); /* [v*2 + to_half] */
  if (!conv) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < 2 * nv0; i++) conv[i] = -1;
  int rc = 0;
  for (int i = 0; i < g->nnodes && !rc; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded || is_cast(n) || !n->prec_why) continue;
    for (int k = 0; k < n->nin && !rc; k++) {
      int v = n->in[k];
      if (v < 0 || v >= nv0 || !is_float(&g->vals[v]) || g->vals[v].half == n->half) continue;
      int *slot = &conv[v * 2 + n->half];
      if (*slot < 0) {
        int id = new_value_like(g, v, n->half ? "fp16" : "fp32");
        if (id < 0) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
        g->vals[id].half = n->half;
        if ((rc = grow(p, cap, *np, err)) != 0 || (rc = make_cast(g, v, id, &(*p)[*np], err)) != 0) break;
        (*p)[*np].before = i;
        (*p)[*np].after = -1;
        (*np)++;
        *slot = id;
      }
      n->in[k] = *slot;
    }
  }
  free(conv);
  return rc;
}

int kiln__precision_apply(kiln_graph *g, int precision, bool *changed, kiln_error *err) {
  *changed = false;
  if (g->precision == precision) return 0;
  if (g->precision != KILN_PRECISION_FP32) { remove_casts(g); *changed = true; }
  g->precision = KILN_PRECISION_FP32;
  if (precision == KILN_PRECISION_FP32) return 0;
  bool flow = false; /* bodies capture outer values by name: an fp16 plan leaves such models in fp32 */
  for (int i = 0; i < g->nnodes && !flow; i++)
    for (int a = 0; a < g->nodes[i].nattr; a++) flow = flow || g->nodes[i].attrs[a].type == KILN_ATTR_GRAPH;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    choose_node(g, n, precision);
    if (flow && n->prec_why) { n->half = false; n->prec_why = "fp32: the model has control flow (If, Loop, Scan), which fp16 plans do not cover yet"; }
    for (int k = 0; k < n->nout; k++)
      if (n->out[k] >= 0 && is_float(&g->vals[n->out[k]])) g->vals[n->out[k]].half = n->half;
  }
  mark_constants(g);
  pending *p = NULL;
  int np = 0, cap = 0;
  int rc = cast_outputs(g, &p, &np, &cap, err);
  if (!rc) rc = cast_inputs(g, &p, &np, &cap, err);
  if (!rc) rc = splice(g, p, np, err);
  if (rc) for (int q = 0; q < np; q++) kiln__node_free_fields(&p[q].n);
  free(p);
  if (rc) return rc;
  g->precision = precision;
  *changed = true;
  return 0;
}
