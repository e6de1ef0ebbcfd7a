/* session.c: models and sessions: loading with shape bindings, planning on
 * the bound input shapes, the device executor (buffers, uploads of constants,
 * one `dev` call per node that was not folded), the whole-model CPU reference
 * run, and model statistics. */
#include "kiln_internal.h"
#include <errno.h>
#include <sys/stat.h>
#include "kiln_db.h"
#include <time.h>

/* Integer inputs up to this many elements are given to shape inference by
 * value (a Reshape target, Slice bounds, TopK's k): the plan is specialized to
 * those values and rebuilt when they change. */
#define VALUE_BIND_MAX 64

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- models ---- */

static int apply_shapes(kiln_model *m, kiln_error *err) {
  kiln_graph *g = m->g;
  for (int s = 0; s < m->nshapes; s++) {
    const kiln_shape_binding *b = &m->shapes[s];
    int id = kiln_graph_find_value(g, b->name);
    if (id >= 0 && g->vals[id].is_input) {
      kiln_value *v = &g->vals[id];
      if (v->rank >= 0 && v->rank != b->rank)
        return kiln__err(err, KILN_ESHAPE, "--shape %s: the model declares rank %d, got %d dimensions", b->name, v->rank, b->rank);
      for (int k = 0; k < b->rank; k++)
        if (v->rank >= 0 && v->dims[k] >= 0 && v->dims[k] != b->dims[k])
          return kiln__err(err, KILN_ESHAPE, "--shape %s: dimension %d is fixed to %lld by the model, got %lld", b->name, k, (long long)v->dims[k], (long long)b->dims[k]);
      v->rank = b->rank;
      for (int k = 0; k < b->rank; k++) v->dims[k] = b->dims[k];
      continue;
    }
    /* a symbolic dimension name: N=1 */
    int hit = 0;
    for (int i = 0; i < g->ninputs; i++) {
      kiln_value *v = &g->vals[g->inputs[i]];
      for (int k = 0; k < v->rank; k++)
        if (v->dim_param[k] && !strcmp(v->dim_param[k], b->name) && b->rank == 1) { v->dims[k] = b->dims[0]; hit = 1; }
    }
    if (!hit) return kiln__err(err, KILN_ENOTFOUND, "--shape %s: no input or symbolic dimension has that name", b->name);
  }
  return 0;
}

int kiln_model_load(const char *path, const kiln_load_options *opt, kiln_model **out, kiln_error *err) {
  kiln_model *m = calloc(1, sizeof *m);
  if (!m) return kiln__err(err, KILN_ENOMEM, "out of memory");
  if (opt) m->opt = *opt;
  int rc = kiln_onnx_load(path, m->opt.max_model_bytes, &m->g, err);
  if (rc) { free(m); return rc; }
  if ((rc = kiln_graph_rewrite(m->g, err)) != 0) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s: %s", path, err ? err->msg : "");
    if (err) snprintf(err->msg, sizeof err->msg, "%s", msg);
    kiln_model_free(m);
    return rc;
  }
  if (opt && opt->nshapes) {
    m->shapes = calloc((size_t)opt->nshapes, sizeof *m->shapes);
    if (!m->shapes) { kiln_model_free(m); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    memcpy(m->shapes, opt->shapes, sizeof *m->shapes * (size_t)opt->nshapes);
    m->nshapes = opt->nshapes;
    for (int i = 0; i < m->nshapes; i++) m->shapes[i].name = strdup(opt->shapes[i].name);
    if ((rc = apply_shapes(m, err)) != 0) { kiln_model_free(m); return rc; }
  }
  m->opt.shapes = NULL;
  struct stat fst;
  if (stat(path, &fst) == 0) {
    m->file_size = (int64_t)fst.st_size;
    m->file_mtime_ns = (int64_t)fst.st_mtim.tv_sec * 1000000000 + fst.st_mtim.tv_nsec;
  }
  kiln_graph *g = m->g;
  m->decl_rank = calloc((size_t)g->ninputs + 1, sizeof *m->decl_rank);
  m->decl_dims = calloc((size_t)g->ninputs + 1, sizeof *m->decl_dims);
  if (!m->decl_rank || !m->decl_dims) { kiln_model_free(m); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  for (int i = 0; i < g->ninputs; i++) {
    const kiln_value *v = &g->vals[g->inputs[i]];
    m->decl_rank[i] = v->rank;
    for (int k = 0; k < v->rank && k < KILN_MAX_RANK; k++) m->decl_dims[i][k] = v->dims[k]; /* symbolic: -1 unless bound (N=1) */
  }
  *out = m;
  return 0;
}

void kiln_model_free(kiln_model *m) {
  if (!m) return;
  kiln_graph_free(m->g);
  for (int i = 0; i < m->nshapes; i++) free((char *)m->shapes[i].name);
  free(m->shapes);
  free(m->decl_rank);
  free(m->decl_dims);
  free(m);
}

int kiln__model_fresh_graph(kiln_model *m, kiln_graph **out, kiln_error *err) {
  if (!m->g->path) return kiln__err(err, KILN_EUNSUPPORTED, "a model loaded from memory keeps one plan");
  struct stat fst;
  if (stat(m->g->path, &fst) != 0 || (int64_t)fst.st_size != m->file_size ||
      (int64_t)fst.st_mtim.tv_sec * 1000000000 + fst.st_mtim.tv_nsec != m->file_mtime_ns)
    return kiln__err(err, KILN_EUNSUPPORTED, "%s changed since it was loaded: plans for other shapes reuse the loaded graph", m->g->path);
  kiln_graph *g = NULL, *keep = m->g;
  int rc = kiln_onnx_load(keep->path, m->opt.max_model_bytes, &g, err);
  if (!rc) rc = kiln_graph_rewrite(g, err);
  if (!rc) {
    m->g = g;
    rc = apply_shapes(m, err);
    m->g = keep;
  }
  if (rc) { kiln_graph_free(g); return rc; }
  *out = g;
  return 0;
}

int kiln_model_num_inputs(const kiln_model *m) { return m->g->ninputs; }
int kiln_model_num_outputs(const kiln_model *m) { return m->g->noutputs; }

static void value_info(const kiln_value *v, kiln_value_info *info) {
  memset(info, 0, sizeof *info);
  info->name = v->name;
  info->dtype = v->dtype;
  info->rank = v->rank;
  info->optional = v->optional;
  for (int k = 0; k < v->rank && k < KILN_MAX_RANK; k++) { info->dims[k] = v->dims[k]; info->dim_names[k] = v->dim_param[k]; }
}
int kiln_model_input_info(const kiln_model *m, int i, kiln_value_info *info) {
  if (i < 0 || i >= m->g->ninputs) return KILN_EINVAL;
  value_info(&m->g->vals[m->g->inputs[i]], info);
  if (m->decl_rank) { /* as declared, not as the current plan bound them */
    info->rank = m->decl_rank[i];
    for (int k = 0; k < info->rank && k < KILN_MAX_RANK; k++) info->dims[k] = m->decl_dims[i][k];
  }
  return 0;
}
int kiln_model_output_info(const kiln_model *m, int i, kiln_value_info *info) {
  if (i < 0 || i >= m->g->noutputs) return KILN_EINVAL;
  value_info(&m->g->vals[m->g->outputs[i]], info);
  return 0;
}

/* Dimension `back` from the end of input k of n read through its
 * transpose attribute (KilnAttention's q_perm, v_perm), 0 if unknown. */
static double perm_dim(kiln_graph *g, kiln_node *n, int k, const char *attr, int back) {
  kiln_value *x = kiln_in(g, n, k);
  if (!x || x->rank < back) return 0;
  const int64_t *p = NULL;
  int np = kiln_attr_ints(n, attr, &p), a = x->rank - back;
  if (np == x->rank) a = (int)p[a];
  return a >= 0 && a < x->rank ? (double)x->dims[a] : 0;
}

/* FLOPs of the nodes whose shapes are known (2 per multiply-add). */
static double node_flops(kiln_graph *g, kiln_node *n) {
  kiln_value *o = kiln_out(g, n, 0);
  if (!o || o->rank < 0) return 0;
  double out = (double)kiln_value_numel(o);
  if (!strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose")) {
    kiln_value *w = kiln_in(g, n, 1);
    if (!w || w->rank < 2) return 0;
    double k = 1;
    for (int i = 1; i < w->rank; i++) k *= (double)w->dims[i];
    if (!strcmp(n->op_type, "ConvTranspose")) { kiln_value *x = kiln_in(g, n, 0); return 2.0 * (double)kiln_value_numel(x) * (double)kiln_value_numel(w) / (double)w->dims[0]; }
    return 2.0 * out * k;
  }
  if (!strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm")) {
    kiln_value *a = kiln_in(g, n, 0);
    if (!a || a->rank < 1) return 0;
    int64_t K = a->dims[a->rank - 1];
    if (!strcmp(n->op_type, "Gemm") && kiln_attr_int(n, "transA", 0) && a->rank == 2) K = a->dims[0];
    return 2.0 * out * (double)K;
  }
  if (!strcmp(n->op_type, "KilnAttention")) { /* the two products: O [.., S, Dv] over Skv keys, scores over D */
    double D = perm_dim(g, n, 0, "q_perm", 1), Skv = perm_dim(g, n, 2, "v_perm", 2), Dv = perm_dim(g, n, 2, "v_perm", 1);
    return Dv > 0 ? 2.0 * out * Skv * (1.0 + D / Dv) : out;
  }
  return out;
}

int kiln_model_get_stats(const kiln_model *m, kiln_model_stats *st) {
  memset(st, 0, sizeof *st);
  kiln_graph *g = m->g;
  st->nodes = g->nnodes;
  st->opset = g->opset;
  st->ir_version = g->ir_version;
  for (int i = 0; i < g->nvals; i++)
    if (g->vals[i].is_initializer) st->params += kiln_value_numel(&g->vals[i]);
  for (int i = 0; i < g->nnodes; i++) {
    if (!g->nodes[i].op || !g->nodes[i].op->dev) st->unsupported++;
    if (!g->nodes[i].folded) st->flops += node_flops(g, &g->nodes[i]);
  }
  return 0;
}

void kiln_model_op_histogram(const kiln_model *m, void (*fn)(const char *, int, int, void *), void *ctx) {
  kiln_graph *g = m->g;
  char *seen = calloc((size_t)g->nnodes + 1, 1);
  if (!seen) return;
  for (int i = 0; i < g->nnodes; i++) {
    if (seen[i]) continue;
    int c = 0;
    for (int k = i; k < g->nnodes; k++)
      if (!strcmp(g->nodes[k].op_type, g->nodes[i].op_type) && !strcmp(g->nodes[k].domain, g->nodes[i].domain)) { seen[k] = 1; c++; }
    fn(g->nodes[i].op_type, c, g->nodes[i].op && g->nodes[i].op->dev, ctx);
  }
  free(seen);
}

/* Lists unsupported op types with their nodes. With planned=true, nodes that
 * were folded are fine and dev_check is consulted; before planning, any node
 * whose op is unknown is reported. */
static int check_nodes(kiln_graph *g, bool planned, kiln_error *err) {
  char msg[1024] = "";
  size_t len = 0;
  int bad = 0;
  char *done = calloc((size_t)g->nnodes + 1, 1);
  if (!done) return kiln__err(err, KILN_ENOMEM, "out of memory");
  kiln_error sub = {0};
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (done[i]) continue;
    bool unsup;
    const char *why = "";
    if (!planned) unsup = n->op == NULL;
    else {
      unsup = !n->folded && (!n->op || !n->op->dev);
      if (!unsup && !n->folded && n->op->dev_check && n->op->dev_check(g, n, &sub) != 0) { unsup = true; why = sub.msg; }
    }
    if (!unsup) continue;
    bad++;
    len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0, "%s%s%s%s (", bad > 1 ? "; " : "", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    int cnt = 0;
    for (int k = i; k < g->nnodes; k++) {
      kiln_node *o = &g->nodes[k];
      if (done[k] || strcmp(o->op_type, n->op_type) || strcmp(o->domain, n->domain)) continue;
      if (planned && (o->folded || (o->op && o->op->dev && (!o->op->dev_check || o->op->dev_check(g, o, &sub) == 0)))) continue;
      done[k] = 1;
      if (len < sizeof msg) len += (size_t)snprintf(msg + len, sizeof msg - len, "%s'%s'", cnt++ ? ", " : "", o->name);
    }
    if (len < sizeof msg) len += (size_t)snprintf(msg + len, sizeof msg - len, ")%s%s", *why ? ": " : "", why);
  }
  free(done);
  if (bad) return kiln__err(err, KILN_EUNSUPPORTED, "unsupported on the OpenCL device: %s", msg);
  return 0;
}

int kiln_model_check_supported(const kiln_model *m, kiln_error *err) { return check_nodes(m->g, false, err); }

/* ---- sessions ---- */

int kiln__session_create(kiln_model *m, kiln_device *d, const kiln_predictor *pred, kiln_session **out, kiln_error *err) {
  int rc = kiln_model_check_supported(m, err);
  if (rc) return rc;
  kiln_session *s = calloc(1, sizeof *s);
  if (!s) return kiln__err(err, KILN_ENOMEM, "out of memory");
  s->m = m;
  s->d = d;
  s->pred = pred;
  m->g->dev_opt = &d->opt; /* kiln_options that shape the search space (gemm kernels) */
  s->in = calloc((size_t)m->g->ninputs + 1, sizeof *s->in);
  s->out = calloc((size_t)m->g->noutputs + 1, sizeof *s->out);
  if (!s->in || !s->out) { kiln_session_free(s); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  *out = s;
  return 0;
}

void kiln__session_release_plan(kiln_session *s) {
  kiln_graph *g = s->m->g;
  for (int i = 0; i < g->nvals; i++)
    if (g->vals[i].buf) { clReleaseMemObject(g->vals[i].buf); g->vals[i].buf = NULL; }
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    for (int k = 0; k < 4; k++) {
      if (n->param[k]) { clReleaseMemObject(n->param[k]); n->param[k] = NULL; }
      if (n->scratch[k]) { clReleaseMemObject(n->scratch[k]); n->scratch[k] = NULL; }
      n->param_bytes[k] = n->scratch_bytes[k] = 0;
    }
    if (n->state && n->op && n->op->release) n->op->release(n);
    free(n->state);
    n->state = NULL;
    n->packed_w1 = n->streamed = false;
    n->tparams_origin = NULL;
    kiln__replay_free(n);
  }
  kiln_fusion_free(g);
  free(s->fdec);
  s->fdec = NULL;
  s->nfdec = 0;
  s->planned = false;
  s->st.device_bytes = s->st.pool_bytes = s->st.intermediate_bytes = 0;
}
#define release_plan kiln__session_release_plan

void kiln_session_free(kiln_session *s) {
  if (!s) return;
  kiln__plan_cache_clear(s);
  if (s->m->g->dev_opt == &s->d->opt) s->m->g->dev_opt = NULL; /* the device may be closed next */
  release_plan(s);
  if (s->cm) s->pred->close(s->cm);
  kiln__seq_free(s);
  free(s->ev_lo);
  free(s->ev_hi);
  if (s->in) for (int i = 0; i < s->m->g->ninputs; i++) kiln_tensor_free(s->in[i]);
  if (s->out) for (int i = 0; i < s->m->g->noutputs; i++) kiln_tensor_free(s->out[i]);
  free(s->in);
  free(s->out);
  free(s);
}

int kiln_session_set_input(kiln_session *s, const char *name, const kiln_tensor *t, kiln_error *err) {
  kiln_graph *g = s->m->g;
  int idx = -1;
  for (int i = 0; i < g->ninputs; i++)
    if (!strcmp(g->vals[g->inputs[i]].name, name)) idx = i;
  if (idx < 0) {
    char names[512] = "";
    size_t l = 0;
    for (int i = 0; i < g->ninputs && l < sizeof names; i++) l += (size_t)snprintf(names + l, sizeof names - l, "%s'%s'", i ? ", " : "", g->vals[g->inputs[i]].name);
    return kiln__err(err, KILN_ENOTFOUND, "the model has no input named '%s' (inputs: %s)", name, names);
  }
  kiln_value *v = &g->vals[g->inputs[idx]];
  if (v->dtype && t->dtype != v->dtype)
    return kiln__err(err, KILN_ESHAPE, "input '%s': expected dtype %s, got %s", name, kiln_dtype_name(v->dtype), kiln_dtype_name(t->dtype));
  /* declared dims (from the model or --shape) must match */
  const kiln_shape_binding *b = NULL;
  for (int i = 0; i < s->m->nshapes; i++) if (!strcmp(s->m->shapes[i].name, name)) b = &s->m->shapes[i];
  char want[256] = "", got[256] = "";
  size_t l = 0;
  for (int k = 0; k < t->rank; k++) l += (size_t)snprintf(got + l, sizeof got - l, "%s%lld", k ? "," : "", (long long)t->dims[k]);
  bool bad = false;
  /* declared dims: a binding's, else the model's as loaded (-1 free) */
#define DECL_DIM(k) (b ? b->dims[k] : s->m->decl_dims ? s->m->decl_dims[idx][k] : (v->dim_param[k] ? -1 : v->dims[k]))
  int decl_rank = b ? b->rank : s->m->decl_rank ? s->m->decl_rank[idx] : v->rank;
  if (decl_rank >= 0 && decl_rank != t->rank) bad = true;
  for (int k = 0; !bad && k < t->rank && decl_rank >= 0; k++) {
    int64_t dk = DECL_DIM(k);
    if (dk >= 0 && dk != t->dims[k]) bad = true;
  }
  if (bad) {
    l = 0;
    for (int k = 0; k < decl_rank; k++) {
      int64_t dk = DECL_DIM(k);
      if (dk >= 0) l += (size_t)snprintf(want + l, sizeof want - l, "%s%lld", k ? "," : "", (long long)dk);
      else l += (size_t)snprintf(want + l, sizeof want - l, "%s%s", k ? "," : "", k < v->rank && v->dim_param[k] ? v->dim_param[k] : "?");
    }
    return kiln__err(err, KILN_ESHAPE, "input '%s': expected shape [%s], got [%s]", name, want, got);
  }
#undef DECL_DIM
  kiln_tensor *c = kiln_tensor_new(t->dtype, t->rank, t->dims);
  if (!c) return kiln__err(err, KILN_ENOMEM, "input '%s': out of memory", name);
  if (t->dtype == KILN_DT_STRING) {
    for (int64_t k = 0; k < kiln_tensor_numel(t); k++) {
      const char *sv = ((char **)t->data)[k];
      if (!(((char **)c->data)[k] = strdup(sv ? sv : ""))) { kiln_tensor_free(c); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    }
  } else memcpy(c->data, t->data, (size_t)kiln_tensor_numel(t) * kiln_dtype_size(t->dtype));
  kiln_tensor_free(s->in[idx]);
  s->in[idx] = c;
  kiln__seq_clear_input(s, idx);
  return 0;
}

/* Small integer and bool inputs are always given to planning by value; small
 * float inputs only after a plan failed for want of them (Resize scales), so
 * a model with a float scalar that changes every run (a diffusion timestep)
 * is not planned again on every run. */
static bool value_bound_s(const kiln_session *s, const kiln_tensor *t) {
  if (t->dtype == KILN_DT_STRING) return true; /* strings are packed on the host anyway */
  if (kiln_tensor_numel(t) > VALUE_BIND_MAX) return false;
  if (t->dtype == KILN_DT_INT64 || t->dtype == KILN_DT_INT32 || t->dtype == KILN_DT_BOOL) return !s->lazy_int_bind || s->bind_ints;
  return s->bind_floats && kiln_dtype_is_float(t->dtype);
}
#define value_bound(t) value_bound_s(s, t)

/* Is the current plan valid for the bound inputs? */
static bool plan_matches(kiln_session *s) {
  if (!s->planned) return false;
  kiln_graph *g = s->m->g;
  for (int i = 0; i < g->ninputs; i++) {
    kiln_tensor *t = s->in[i];
    kiln_value *v = &g->vals[g->inputs[i]];
    if (v->rank != t->rank || memcmp(v->dims, t->dims, sizeof(int64_t) * (size_t)t->rank) != 0) return false;
    if (t->dtype == KILN_DT_STRING) {
      if (!v->data || v->strw != kiln_strings_width(t)) return false;
      void *pk = kiln_strings_pack(t, v->strw);
      bool same = pk && memcmp(pk, v->data, (size_t)kiln_tensor_numel(t) * (size_t)v->strw) == 0;
      free(pk);
      if (!same) return false;
    } else if (value_bound(t) && (!v->data || memcmp(v->data, t->data, (size_t)kiln_tensor_numel(t) * kiln_dtype_size(t->dtype)) != 0)) return false;
  }
  return true;
}


/* ---- memory planning ----------------------------------------------------
 * Values produced on the device share buffers from a pool by liveness: a
 * value's buffer returns to the pool after its last consumer, and a later
 * value takes the smallest free buffer that fits. Ops flagged KILN_OP_ALIAS
 * (Reshape and friends) hand their input's buffer to their output when the
 * input dies there, and the node launches nothing; ops flagged
 * KILN_OP_INPLACE write their output over input 0 when it dies there and has
 * the same shape and type. Graph inputs and outputs, constants and sequence
 * elements keep buffers of their own. Buffers are reference-counted
 * (clRetainMemObject per value holding one). */

/* freed: when it was last given back (a counter), so that among free
 * buffers of the best-fitting size the most recently used one is taken: its
 * lines are likelier still in cache when the new value is written */
typedef struct { cl_mem m; size_t size; bool busy; uint64_t freed; } pool_buf;

static int pool_take(kiln_device *d, pool_buf **pool, int *npool, size_t bytes, int *idx, uint64_t *total, kiln_error *err) {
  int best = -1;
  for (int i = 0; i < *npool; i++)
    if (!(*pool)[i].busy && (*pool)[i].size >= bytes &&
        (best < 0 || (*pool)[i].size < (*pool)[best].size || ((*pool)[i].size == (*pool)[best].size && (*pool)[i].freed > (*pool)[best].freed)))
      best = i;
  if (best < 0) {
    /* grow the largest free buffer's worth? no: a new buffer of exactly this size */
    pool_buf *np = realloc(*pool, sizeof *np * (size_t)(*npool + 1));
    if (!np) return kiln__err(err, KILN_ENOMEM, "out of memory");
    *pool = np;
    cl_mem m = kiln_cl_alloc(d, bytes, err);
    if (!m) return err ? err->status : KILN_ECL;
    (*pool)[*npool] = (pool_buf){m, bytes, false, 0};
    *total += bytes;
    best = (*npool)++;
  }
  (*pool)[best].busy = true;
  *idx = best;
  return 0;
}

/* ---- Concat in place ----------------------------------------------------
 * A Concat whose inputs lie end to end in its output (every dimension before
 * the axis is 1, so each input is one contiguous byte range) copies nothing:
 * its output buffer is taken when the first input's producer runs, each input
 * is a sub-buffer of it at its byte offset, the producers write straight into
 * it, and the Concat launches nothing (skip_dev). An input qualifies when a
 * device node produces it (not a graph input, constant, pinned or folded
 * value), the Concat is its last reader, it appears once, and its offset meets
 * the device's sub-buffer alignment; otherwise the Concat copies as before.
 * squeezenet's 8 Concats (1-7% of its time) and a UNet's skip connections. */
static bool concat_slices(kiln_graph *g, int i, const int *last, const bool *pinned, size_t align, int *slice_of, size_t *slice_off) {
  kiln_node *n = &g->nodes[i];
  if (!(n->op->flags & KILN_OP_CONCAT) || n->folded || n->fuse_root >= 0 || n->nout < 1 || n->out[0] < 0) return false;
  kiln_value *y = &g->vals[n->out[0]];
  const kiln_attr *a = kiln_attr_find(n, "axis");
  int ax = a ? kiln_axis(kiln_attr_int(n, "axis", 0), y->rank) : -1;
  if (ax < 0 || y->dtype == KILN_DT_SEQUENCE || y->dtype == KILN_DT_STRING) return false;
  for (int k = 0; k < ax; k++)
    if (y->dims[k] != 1) return false;
  size_t off = 0;
  for (int k = 0; k < n->nin; k++) {
    int v = n->in[k];
    if (v < 0) return false;
    const kiln_value *val = &g->vals[v];
    int p = val->producer;
    if (pinned[v] || last[v] != i || p < 0 || g->nodes[p].folded || (g->nodes[p].fuse_root >= 0 && !g->nodes[p].fgroup) ||
        (g->nodes[p].op->flags & KILN_OP_DYNAMIC) || val->half != y->half || (align && off % align))
      return false;
    for (int q = 0; q < k; q++)
      if (n->in[q] == v) return false;
    off += kiln_value_dev_bytes(val);
  }
  if (off != kiln_value_dev_bytes(y) || !off) return false;
  off = 0;
  for (int k = 0; k < n->nin; k++) {
    slice_of[n->in[k]] = i;
    slice_off[n->in[k]] = off;
    off += kiln_value_dev_bytes(&g->vals[n->in[k]]);
  }
  return true;
}

typedef struct {
  kiln_device *d;
  kiln_graph *g;
  const int *slice_of;
  const size_t *slice_off;
  const bool *pinned;
  bool *sliced; /* the value's buffer is a sub-buffer made by slice_buffer */
  int *slot;
  pool_buf **pool;
  int *npool;
  uint64_t *pooled, *own;
} slicer;

/* Gives slice v a sub-buffer of its Concat's output, first giving that output
 * a buffer when it has none (a pool buffer, its own when pinned, or, when it
 * is itself a slice of a later Concat, a sub-buffer of that one). v keeps no
 * buffer when OpenCL refuses the sub-buffer (its Concat then copies). */
static int slice_buffer(slicer *c, int v, kiln_error *err) {
  kiln_graph *g = c->g;
  int yv = g->nodes[c->slice_of[v]].out[0];
  kiln_value *y = &g->vals[yv];
  int rc;
  if (!y->buf && c->slice_of[yv] >= 0 && (rc = slice_buffer(c, yv, err)) != 0) return rc;
  if (!y->buf && c->pinned[yv]) {
    if (!(y->buf = kiln_cl_alloc(c->d, kiln_value_dev_bytes(y), err))) return err ? err->status : KILN_ECL;
    *c->own += kiln_value_dev_bytes(y);
  } else if (!y->buf) {
    if ((rc = pool_take(c->d, c->pool, c->npool, kiln_value_dev_bytes(y), &c->slot[yv], c->pooled, err)) != 0) return rc;
    y->buf = (*c->pool)[c->slot[yv]].m;
    clRetainMemObject(y->buf);
  }
  /* OpenCL makes no sub-buffer of a sub-buffer: a slice of a slice is a
   * sub-buffer of the outermost buffer at the summed offset */
  size_t off = c->slice_off[v];
  for (int w = yv; c->sliced[w]; w = g->nodes[c->slice_of[w]].out[0]) off += c->slice_off[w];
  cl_mem root = y->buf;
  if (c->sliced[yv]) clGetMemObjectInfo(y->buf, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof root, &root, NULL);
  cl_buffer_region reg = {off, kiln_value_dev_bytes(&g->vals[v])};
  cl_int e = CL_SUCCESS;
  cl_mem b = clCreateSubBuffer(root, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &e);
  g->vals[v].buf = e == CL_SUCCESS ? b : NULL;
  c->sliced[v] = e == CL_SUCCESS;
  return 0;
}

/* Whether every input of Concat n is a sub-buffer of its output (a slice
 * whose sub-buffer could not be made has a buffer of its own and n copies:
 * its other inputs then copy onto themselves, which is harmless). */
static bool concat_in_place(kiln_graph *g, kiln_node *n, const bool *sliced) {
  for (int k = 0; k < n->nin; k++)
    if (!sliced[n->in[k]]) return false;
  return true;
}

static int allocate_buffers(kiln_session *s, kiln_error *err) {
  kiln_graph *g = s->m->g;
  kiln_device *d = s->d;
  int rc = 0, nv = g->nvals;
  int *last = malloc(sizeof(int) * (size_t)(nv + 1)), *slot = malloc(sizeof(int) * (size_t)(nv + 1));
  bool *pinned = calloc((size_t)nv + 1, sizeof(bool));
  int *slice_of = malloc(sizeof(int) * (size_t)(nv + 1));
  size_t *slice_off = malloc(sizeof(size_t) * (size_t)(nv + 1));
  bool *sliced = calloc((size_t)nv + 1, sizeof(bool));
  pool_buf *pool = NULL;
  int npool = 0;
  uint64_t nfreed = 0;
  uint64_t pooled = 0, own = 0;
  if (!last || !slot || !pinned || !slice_of || !slice_off || !sliced) {
    free(last); free(slot); free(pinned); free(slice_of); free(slice_off); free(sliced);
    return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  for (int v = 0; v < nv; v++) {
    kiln_value *val = &g->vals[v];
    last[v] = -1;
    slot[v] = -1;
    pinned[v] = val->is_input || val->is_output || val->is_const || val->dtype == KILN_DT_SEQUENCE;
    slice_of[v] = -1;
  }
  for (int i = 0; i < g->noutputs; i++) { /* items of sequence outputs are read after the run */
    const kiln_value *ov = &g->vals[g->outputs[i]];
    if (ov->dtype == KILN_DT_SEQUENCE && ov->data)
      for (int j = 0; j < ((const kiln_seq *)ov->data)->n; j++) pinned[((const kiln_seq *)ov->data)->items[j].vid] = true;
  }
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    n->skip_dev = false;
    if (n->folded) continue;
    for (int k = 0; k < n->nin; k++) {
      int v = n->in[k];
      if (v < 0) continue;
      /* a fused group reads its external inputs when its root runs */
      last[v] = n->fuse_root >= 0 && n->fuse_root > i ? n->fuse_root : i;
      if (g->vals[v].dtype == KILN_DT_SEQUENCE && g->vals[v].data) { /* its elements stay alive on their own */
        const kiln_seq *sq = g->vals[v].data;
        for (int j = 0; j < sq->n; j++) pinned[sq->items[j].vid] = true;
      }
    }
  }
  cl_uint align_bits = 0;
  clGetDeviceInfo(d->dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
  /* a node with a data-dependent output count re-infers the shapes after it
   * on every run: a Concat there keeps its copies */
  int first_dynamic = g->nnodes;
  for (int i = 0; i < g->nnodes && first_dynamic == g->nnodes; i++)
    if (!g->nodes[i].folded && (g->nodes[i].op->flags & KILN_OP_DYNAMIC)) first_dynamic = i;
  for (int i = 0; i < first_dynamic; i++) concat_slices(g, i, last, pinned, align_bits / 8, slice_of, slice_off);
  for (int i = 0; i < g->nnodes && !rc; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded) continue;
    bool member = n->fuse_root >= 0 && !n->fgroup; /* its output stays inside the fused kernel */
    /* inputs without a buffer yet: constants, graph inputs (own buffers) */
    for (int k = 0; k < n->nin && !rc; k++) {
      int v = n->in[k];
      if (v < 0 || g->vals[v].buf || g->vals[v].streamed) continue; /* streamed: uploaded per run (stream.c) */
      kiln_value *val = &g->vals[v];
      /* a value computed inside a fused kernel has no buffer at all (giving
       * it one here made every fused group hold private buffers outside the
       * pool: the VAE decoder's peak doubled with fusion) */
      if (val->producer >= 0 && !g->nodes[val->producer].folded && g->nodes[val->producer].fuse_root >= 0 && !g->nodes[val->producer].fgroup) continue;
      size_t bytes = kiln_value_dev_bytes(val);
      if (!(val->buf = kiln_cl_alloc(d, bytes, err))) { rc = err ? err->status : KILN_ECL; break; }
      own += bytes;
      if (val->is_const && bytes) rc = kiln__value_upload(d, val, err); /* half: converted once, here */
    }
    unsigned flags = n->fgroup ? 0 : n->op->flags;
    for (int k = 0; k < n->nout && !rc && !member; k++) {
      int v = n->out[k];
      if (v < 0 || g->vals[v].buf) continue;
      kiln_value *val = &g->vals[v];
      size_t bytes = kiln_value_dev_bytes(val);
      if (slice_of[v] >= 0) { /* a slice of an in-place Concat's output */
        slicer sc = {d, g, slice_of, slice_off, pinned, sliced, slot, &pool, &npool, &pooled, &own};
        if ((rc = slice_buffer(&sc, v, err)) != 0) break;
        if (val->buf) continue;
      }
      int in0 = n->nin > 0 ? n->in[0] : -1;
      bool in0_dies = k == 0 && in0 >= 0 && !pinned[in0] && !pinned[v] && last[in0] == i && slot[in0] >= 0;
      int nouts = 0;
      for (int q = 0; q < n->nout; q++) nouts += n->out[q] >= 0;
      for (int q = 1; in0_dies && q < n->nin; q++) if (n->in[q] == in0) in0_dies = false;
      if (in0_dies && (flags & KILN_OP_ALIAS) && nouts == 1 && kiln_value_dev_bytes(&g->vals[in0]) == bytes) {
        slot[v] = slot[in0];
        slot[in0] = -1;
        n->skip_dev = true;
      } else if (in0_dies && (flags & KILN_OP_INPLACE) && g->vals[in0].dtype == val->dtype && g->vals[in0].half == val->half && g->vals[in0].rank == val->rank &&
                 !memcmp(g->vals[in0].dims, val->dims, sizeof(int64_t) * (size_t)val->rank)) {
        slot[v] = slot[in0];
        slot[in0] = -1;
      } else if (pinned[v]) {
        if (!(val->buf = kiln_cl_alloc(d, bytes, err))) { rc = err ? err->status : KILN_ECL; break; }
        own += bytes;
        continue;
      } else if ((rc = pool_take(d, &pool, &npool, bytes, &slot[v], &pooled, err)) != 0) break;
      val->buf = pool[slot[v]].m;
      clRetainMemObject(val->buf);
    }
    if (!rc && n->nout > 0 && n->out[0] >= 0 && n->nin > 0 && n->in[0] >= 0 && slice_of[n->in[0]] == i) n->skip_dev = concat_in_place(g, n, sliced);
    /* values that die here give their buffers back (outputs nobody reads,
     * too); at a fused group's root, the inputs of all its nodes (their last
     * use is the root) */
    int ngm = n->fgroup ? n->fgroup->nnodes : 1;
    for (int q = 0; q < ngm && !rc; q++) {
      kiln_node *m = n->fgroup ? &g->nodes[n->fgroup->nodes[q]] : n;
      for (int pass = 0; pass < 2; pass++) {
        int cnt = pass ? m->nout : m->nin, *ids = pass ? m->out : m->in;
        for (int k = 0; k < cnt; k++) {
          int v = ids[k];
          if (v < 0 || slot[v] < 0 || pinned[v]) continue;
          if (last[v] <= i) { pool[slot[v]].busy = false; pool[slot[v]].freed = ++nfreed; slot[v] = -1; }
        }
      }
    }
  }
  for (int i = 0; i < npool; i++) clReleaseMemObject(pool[i].m); /* values hold their own references */
  free(pool);
  free(last);
  free(slot);
  free(pinned);
  free(slice_of);
  free(slice_off);
  free(sliced);
  s->st.device_bytes = pooled + own;
  s->st.pool_bytes = pooled;
  s->st.intermediate_bytes = 0;
  for (int v = 0; v < nv; v++) {
    kiln_value *val = &g->vals[v];
    /* the model's intermediate tensors, also those a plan-time rewrite or a
     * fused kernel never materializes (their producer may be gone) */
    if (val->is_input || val->is_initializer || val->is_const || val->is_output || !val->dtype || val->dtype == KILN_DT_SEQUENCE || val->rank < 0) continue;
    s->st.intermediate_bytes += kiln_value_dev_bytes(val);
  }
  if (rc && err && !strstr(err->msg, "tensor")) {
    char m[1024];
    snprintf(m, sizeof m, "allocating device memory: %s", err->msg);
    snprintf(err->msg, sizeof err->msg, "%s", m);
  }
  return rc;
}

typedef struct { double f, u; } fusion_meas;
static void fusion_rec(const kiln_record *r, void *ctx) {
  fusion_meas *m = ctx;
  if (strcmp(r->status, "ok") || !(r->median_ns > 0)) return;
  if (!strcmp(r->params, "FUSE=1")) m->f = r->median_ns;
  else if (!strcmp(r->params, "FUSE=0")) m->u = r->median_ns;
}

/* kiln_fusion_costs.lookup: a grouping's recorded times on this device
 * (family "fusion", instance = the signature, params FUSE=1 / FUSE=0). */
static int fusion_lookup(void *ctx, const char *sig, double *fused_ns, double *unfused_ns) {
  kiln_session *s = ctx;
  fusion_meas m = {-1, -1};
  if (!s->db || s->db_device < 0 || s->recs->each(s->db, s->db_device, "fusion", 0, sig, "", fusion_rec, &m, NULL)) return 1;
  *fused_ns = m.f;
  *unfused_ns = m.u;
  return m.f > 0 && m.u > 0 ? 0 : 1;
}

void kiln__session_replan(kiln_session *s) {
  kiln__plan_cache_clear(s);
  s->planned = false;
}

int kiln__session_replan_fresh(kiln_session *s, kiln_error *err) {
  kiln_graph *fresh = NULL;
  int rc = kiln__model_fresh_graph(s->m, &fresh, err);
  if (rc) return rc;
  kiln__plan_cache_clear(s);
  kiln__session_release_plan(s);
  fresh->dev_opt = s->m->g->dev_opt; /* the same device options (gemm kernels) */
  kiln_graph_free(s->m->g);
  s->m->g = fresh;
  free(s->ev_lo); /* the per-node profile of the old graph */
  free(s->ev_hi);
  s->ev_lo = s->ev_hi = NULL;
  s->planned = false;
  return 0;
}

static int plan(kiln_session *s, kiln_error *err);
static bool layout_wino(void *ctx, kiln_node *n) { return kiln__conv_nchw_wino(ctx, n); }
static int plan(kiln_session *s, kiln_error *err) {
  release_plan(s);
  kiln_graph *g = s->m->g;
  for (int i = 0; i < g->ninputs; i++) {
    kiln_tensor *t = s->in[i];
    kiln_value *v = &g->vals[g->inputs[i]];
    if (kiln__seq_is_input(s, i)) continue; /* kiln__seq_bind */
    v->dtype = t->dtype;
    v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof v->dims);
    free(v->data);
    v->data = NULL;
    v->strw = 0;
    if (t->dtype == KILN_DT_STRING) {
      v->strw = kiln_strings_width(t);
      if (!(v->data = kiln_strings_pack(t, v->strw))) return kiln__err(err, KILN_ENOMEM, "out of memory");
    } else if (value_bound(t)) {
      size_t b = (size_t)kiln_tensor_numel(t) * kiln_dtype_size(t->dtype);
      v->data = malloc(b ? b : 1);
      if (!v->data) return kiln__err(err, KILN_ENOMEM, "out of memory");
      memcpy(v->data, t->data, b);
    }
  }
  int rc = kiln__seq_bind(s, err);
  if (!rc) rc = kiln_graph_plan(g, err);
  if (rc == KILN_EUNSUPPORTED && s->lazy_int_bind && !s->bind_ints) { s->bind_ints = true; return plan(s, err); }
  if (rc == KILN_EUNSUPPORTED && !s->bind_floats) {
    bool any = false;
    for (int i = 0; i < g->ninputs; i++) if (kiln_dtype_is_float(s->in[i]->dtype) && kiln_tensor_numel(s->in[i]) <= VALUE_BIND_MAX) any = true;
    if (any) { s->bind_floats = true; return plan(s, err); }
  }
  if (rc) return rc;
  if ((rc = check_nodes(g, true, err)) != 0) return rc;
  /* GroupNorm pattern, norm + activation, scale/mask + softmax (passes.c) */
  if (!s->no_fusion && (rc = kiln_graph_fuse_patterns(g, NULL, NULL, NULL, err)) != 0) return rc;
  /* the cost model: on the database's probe of the device, else the quick
   * probe's figures (measured once, then from the user's cache) */
  if (!s->cm && s->pred) s->cm = s->pred->open(s->db, s->db_device, s->d);
  if (!s->no_fusion) { /* attention (passes.c): the cost model decides */
    kiln_fusion_costs fc = {0};
    if (s->cm && s->pred->fusion_costs(s->cm, &fc.launch_us, &fc.bw_gbps) == 0) fc.probed = true;
    fc.force_attention = s->d->opt.attention_fuse;
    if (s->db) { fc.lookup = fusion_lookup; fc.lookup_ctx = s; } /* attention groupings `kiln tune` measured */
    fc.force_sig = s->force_sig;
    fc.force_fused = s->force_fused;
    if ((rc = kiln_graph_fuse_attention(g, s->pred, s->cm, &fc, NULL, err)) != 0) return rc;
  }
  /* fp16 storage (precision.c): conversions inserted or removed are
   * planned like the model's nodes */
  bool prec_changed = false;
  if ((rc = kiln__precision_apply(g, s->precision, &prec_changed, err)) != 0) return rc;
  if (prec_changed && ((rc = kiln_graph_plan(g, err)) != 0 || (rc = check_nodes(g, true, err)) != 0)) return rc;
  for (int i = 0; i < g->nnodes; i++) { g->nodes[i].fuse_root = -1; g->nodes[i].fgroup = NULL; g->nodes[i].epi = NULL; }
  g->fusion = !s->no_fusion;
  if (g->fusion) {
    kiln_fusion_costs fc = {0};
    if (s->cm && s->pred->fusion_costs(s->cm, &fc.launch_us, &fc.bw_gbps) == 0) fc.probed = true;
    if (s->db) { fc.lookup = fusion_lookup; fc.lookup_ctx = s; }
    fc.force_sig = s->force_sig;
    fc.force_fused = s->force_fused;
    if ((rc = kiln_fusion_plan(g, &fc, &s->fdec, &s->nfdec, err)) != 0) return rc;
    if (g->npdec) { /* the plan-time rewrites of passes.c, listed with the groupings */
      kiln_fusion_decision *all = realloc(s->fdec, sizeof *all * (size_t)(s->nfdec + g->npdec));
      if (!all) return kiln__err(err, KILN_ENOMEM, "out of memory");
      memcpy(all + s->nfdec, g->pdec, sizeof *all * (size_t)g->npdec);
      s->fdec = all;
      s->nfdec += g->npdec;
    }
  }
  /* blocked layouts between convolutions (layout.c), on the
   * fusion's groups: on CPU devices, in blocks of their float vector (16
   * with AVX-512, 8 with AVX2); measured on POCL only, so GPUs keep NCHW */
  int vw = !s->d->info.is_gpu && !s->d->opt.no_blocked ? s->d->info.native_vec_float : 0;
  kiln_exec lx = {.d = s->d, .g = g, .db = s->db, .recs = s->recs, .db_device = s->db_device, .pred = s->pred, .cm = s->cm, .ov_node = -1};
  kiln_layout_ctx lc = {&lx, layout_wino};
  if ((rc = kiln__layout_plan(g, vw >= 16 ? 16 : vw >= 8 ? 8 : 0, &lc, &s->st.blocked_values)) != 0) return kiln__err(err, rc, "out of memory");
  kiln__stream_mark(g, s->max_memory);
  if ((rc = allocate_buffers(s, err)) != 0 || (rc = kiln__stream_plan(s, err)) != 0) return rc;
  kiln_device *d = s->d;
  /* elements of sequences read by device nodes need buffers too */
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded) continue;
    for (int k = 0; k < n->nin; k++) {
      kiln_value *sv = kiln_in(g, n, k);
      if (!sv || sv->dtype != KILN_DT_SEQUENCE || !sv->data) continue;
      const kiln_seq *sq = sv->data;
      for (int j = 0; j < sq->n; j++) {
        kiln_value *v = &g->vals[sq->items[j].vid];
        if (v->buf) continue;
        size_t bytes = kiln_value_dev_bytes(v);
        if (!(v->buf = kiln_cl_alloc(d, bytes, err))) return err ? err->status : KILN_ECL;
        s->st.device_bytes += bytes;
        if (v->is_const && bytes && (rc = kiln__value_upload(d, v, err)) != 0) return rc;
      }
    }
  }
  clFinish(d->q);
  s->st.nodes_folded = 0;
  for (int i = 0; i < g->nnodes; i++) s->st.nodes_folded += g->nodes[i].folded;
  s->planned = true;
  return 0;
}

int kiln_session_run(kiln_session *s, kiln_error *err) {
  kiln_graph *g = s->m->g;
  kiln__rec_other(); /* run inside a node's op (a control-flow body): that node is not replayed */
  for (int i = 0; i < g->ninputs; i++)
    if (!s->in[i]) return kiln__err(err, KILN_ENOTFOUND, "missing input '%s' (give it with --input %s=FILE or use --random)", g->vals[g->inputs[i]].name, g->vals[g->inputs[i]].name);
  double t0 = now_ms();
  int rc;
  if ((rc = kiln__plan_cache_ensure(s, plan_matches, plan, err)) != 0) return rc;
  g = s->m->g; /* the plan for these shapes may be another graph */
  kiln_device *d = s->d;
  for (int i = 0; i < g->ninputs; i++) {
    kiln_value *v = &g->vals[g->inputs[i]];
    const void *src = v->dtype == KILN_DT_STRING ? v->data : s->in[i]->data;
    if (v->buf && (rc = kiln_cl_write(d, v->buf, src, kiln_value_bytes(v), err)) != 0) return rc;
  }
  if ((rc = kiln__seq_upload(s, err)) != 0) return rc;
  kiln_exec x = {.d = d, .g = g, .db = s->db, .recs = s->recs, .db_device = s->db_device, .pred = s->pred, .cm = s->cm, .ov_node = -1, .profile = s->profile,
                .budget_s = s->max_memory ? s : NULL};
  s->stream_run_bytes = 0;
  s->stream_live = 0;
  s->stream_peak_run = 0;
  int *ev_first = NULL;
  /* replay.c: nodes replay the launches recorded on an earlier run, up to
   * the first dynamic node (shapes after it are inferred again); none under
   * a memory budget (stream.c moves buffers between runs) */
  bool replay = !d->opt.no_replay && !s->max_memory;
  if (s->profile) {
    free(s->ev_lo);
    free(s->ev_hi);
    s->ev_lo = calloc((size_t)g->nnodes + 1, sizeof(int64_t));
    s->ev_hi = calloc((size_t)g->nnodes + 1, sizeof(int64_t));
    ev_first = calloc((size_t)g->nnodes + 2, sizeof(int));
    if (!s->ev_lo || !s->ev_hi || !ev_first) { free(ev_first); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  }
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (ev_first) ev_first[i] = x.nevents;
    if (n->folded || n->skip_dev) continue; /* skip_dev: output aliases the input's buffer */
    if (n->fuse_root >= 0 && !n->fgroup) continue; /* computed by its group's fused kernel */
    x.cur = i;
    bool dyn = (n->op->flags & KILN_OP_DYNAMIC) && !n->fgroup;
    replay = replay && !dyn;
    if (replay && kiln__replay_ready(&x, n)) rc = kiln__replay_run(&x, n, err);
    else if ((rc = kiln__stream_before(s, i, err)) == 0) {
      if (replay && (rc = kiln__replay_begin(&x, n)) != 0) rc = kiln__err(err, rc, "out of memory");
      else {
        rc = kiln_node_dev(&x, n, err);
        if (replay) kiln__replay_end(&x, n, rc == 0);
      }
      if (rc == 0 && dyn) {
        /* the row count read back */
        if (!n->op->resolve || (rc = n->op->resolve(&x, n, err)) == 0) rc = kiln__reinfer_after(g, i, err);
      }
    }
    kiln__stream_after(s, i);
    if (rc != 0) {
      free(ev_first);
      if (err && !strstr(err->msg, n->name)) {
        char m[1024];
        snprintf(m, sizeof m, "node '%s' (%s): %s", n->name, n->op_type, err->msg);
        snprintf(err->msg, sizeof err->msg, "%s", m);
      }
      clFinish(d->q);
      return rc;
    }
  }
  for (int i = 0; i < g->noutputs; i++) {
    kiln_value *v = &g->vals[g->outputs[i]];
    kiln_tensor *t = s->out[i];
    if (v->dtype == KILN_DT_SEQUENCE) { /* kiln__seq_collect; an empty tensor stands in */
      kiln_tensor_free(t);
      if (!(s->out[i] = kiln_tensor_new(KILN_DT_UINT8, 1, (int64_t[]){0}))) return kiln__err(err, KILN_ENOMEM, "out of memory");
      continue;
    }
    if (!t || t->dtype != v->dtype || t->rank != v->rank || memcmp(t->dims, v->dims, sizeof(int64_t) * (size_t)v->rank)) {
      kiln_tensor_free(t);
      t = s->out[i] = kiln_tensor_new(v->dtype, v->rank, v->dims);
      if (!t) return kiln__err(err, KILN_ENOMEM, "output '%s': out of memory", v->name);
      t->name = strdup(v->name);
    }
    size_t b = kiln_value_bytes(v);
    if (v->dtype == KILN_DT_STRING) {
      void *pk = malloc(b ? b : 1);
      if (!pk) return kiln__err(err, KILN_ENOMEM, "out of memory");
      if (v->is_const || v->is_input) memcpy(pk, v->data, b);
      else if ((rc = kiln_cl_read(d, v->buf, pk, b, err)) != 0) { free(pk); return rc; }
      rc = kiln_strings_unpack(t, pk, v->strw);
      free(pk);
      if (rc) return kiln__err(err, rc, "out of memory");
    } else if (v->is_const || v->is_input) {
      const void *src = v->data;
      if (v->is_input) for (int k = 0; k < g->ninputs; k++) if (g->inputs[k] == g->outputs[i]) src = s->in[k]->data;
      if (b) memcpy(t->data, src, b);
    } else if ((rc = kiln_cl_read(d, v->buf, t->data, b, err)) != 0) return rc;
  }
  if ((rc = kiln__seq_collect(s, NULL, err)) != 0) return rc;
  cl_int e = clFinish(d->q);
  if (ev_first) {
    ev_first[g->nnodes] = x.nevents;
    for (int i = 0; i < g->nnodes; i++)
      for (int k = ev_first[i]; k < ev_first[i + 1]; k++) {
        cl_ulong a = 0, b = 0;
        clGetEventProfilingInfo(x.events[k], CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
        clGetEventProfilingInfo(x.events[k], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
        if (a && (!s->ev_lo[i] || (int64_t)a < s->ev_lo[i])) s->ev_lo[i] = (int64_t)a;
        if ((int64_t)b > s->ev_hi[i]) s->ev_hi[i] = (int64_t)b;
      }
    free(ev_first);
  }
  for (int k = 0; k < x.nevents; k++) clReleaseEvent(x.events[k]);
  if (e != CL_SUCCESS) { free(x.events); return kiln__err(err, KILN_ECL, "clFinish: %s", kiln__clerror(e)); }
  free(x.events);
  s->st.last_ms = now_ms() - t0;
  s->st.kernels_launched = x.launches;
  s->st.programs_compiled = d->programs_compiled;
  s->st.compile_ms = d->compile_ms;
  s->st.codegen_ms = d->codegen_ms;
  s->st.streamed_bytes = s->stream_run_bytes;
  if (s->max_memory) { /* tracked at every upload and node block of the run (stream.c) */
    uint64_t end = s->st.device_bytes + kiln__stream_node_bytes(g);
    s->st.peak_device_bytes = s->stream_peak_run > end ? s->stream_peak_run : end;
  } else s->st.peak_device_bytes = s->st.device_bytes + kiln__stream_node_bytes(g) + s->stream_window;
  kiln__stream_tighten(s); /* measured above the budget: more weights stream from the next run */
  return 0;
}

const kiln_tensor *kiln_session_output(const kiln_session *s, int i) {
  if (i < 0 || i >= s->m->g->noutputs) return NULL;
  return s->out[i];
}

void kiln_session_get_stats(const kiln_session *s, kiln_run_stats *st) {
  *st = s->st;
  st->programs_compiled = s->d->programs_compiled; /* as of now, also after a run that stopped */
  st->compile_ms = s->d->compile_ms;
  st->codegen_ms = s->d->codegen_ms;
  st->plans_built = s->plans_built;
}

int kiln_session_run_reference(kiln_session *s, kiln_tensor ***outs, int *nouts, kiln_error *err) {
  kiln_graph *g = s->m->g;
  int rc;
  if ((rc = kiln__plan_cache_ensure(s, plan_matches, plan, err)) != 0) return rc;
  g = s->m->g; /* the plan for these shapes may be another graph */
  void **host = calloc((size_t)g->nvals, sizeof(void *));
  if (!host) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < g->ninputs; i++) {
    if (kiln__seq_is_input(s, i)) continue; /* its items' host data are the values' own */
    size_t b = kiln_value_bytes(&g->vals[g->inputs[i]]);
    host[g->inputs[i]] = malloc(b ? b : 1);
    const void *src = g->vals[g->inputs[i]].dtype == KILN_DT_STRING ? g->vals[g->inputs[i]].data : s->in[i]->data;
    if (host[g->inputs[i]]) memcpy(host[g->inputs[i]], src, b);
  }
  rc = 0;
  for (int i = 0; i < g->nnodes && !rc; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded) continue;
    if (n->op && (n->op->flags & KILN_OP_DYNAMIC)) rc = n->op->infer(g, n, err); /* back to the planned (largest) shape */
    if (!rc) rc = kiln_node_run_ref_host(g, n, host, err);
    if (!rc && n->op && (n->op->flags & KILN_OP_DYNAMIC)) rc = kiln__reinfer_after(g, i, err); /* ref set the row count */
  }
  kiln_tensor **o = NULL;
  if (!rc) {
    o = calloc((size_t)g->noutputs + 1, sizeof *o);
    for (int i = 0; o && i < g->noutputs; i++) {
      kiln_value *v = &g->vals[g->outputs[i]];
      if (v->dtype == KILN_DT_SEQUENCE) { /* its items: kiln__seq_collect */
        if (!(o[i] = kiln_tensor_new(KILN_DT_UINT8, 1, (int64_t[]){0}))) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
        continue;
      }
      o[i] = kiln_tensor_new(v->dtype, v->rank, v->dims);
      if (!o[i]) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
      o[i]->name = strdup(v->name);
      const void *src = host[g->outputs[i]] ? host[g->outputs[i]] : v->data;
      if (src && v->dtype == KILN_DT_STRING) { if (kiln_strings_unpack(o[i], src, v->strw)) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; } }
      else if (src) memcpy(o[i]->data, src, kiln_value_bytes(v));
    }
    if (!o) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
    if (!rc) rc = kiln__seq_collect(s, host, err);
  }
  for (int i = 0; i < g->nvals; i++) free(host[i]);
  free(host);
  if (rc) {
    for (int i = 0; o && i < g->noutputs; i++) kiln_tensor_free(o[i]);
    free(o);
    return rc;
  }
  *outs = o;
  *nouts = g->noutputs;
  return 0;
}

/* ---- exec helpers for ops ---- */

static uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

cl_mem kiln_exec_param(kiln_exec *x, kiln_node *n, int slot, const void *data, size_t bytes, kiln_error *err) {
  if (slot < 0 || slot >= 4) { kiln__err(err, KILN_EINTERNAL, "param slot %d", slot); return NULL; }
  /* small parameter blocks are compared by content, so an op may pass new
   * values in the same slot; large ones (packed weights) are uploaded once
   * per plan and must not change within it */
  uint64_t h = bytes <= 65536 ? hash_bytes(data, bytes) : 0;
  if (n->param[slot] && n->param_bytes[slot] == bytes && n->param_hash[slot] == h) return n->param[slot];
  kiln__replay_stale(n); /* new contents, or a new block */
  if (n->param[slot] && n->param_bytes[slot] == bytes && bytes <= 65536) {
    if (clEnqueueWriteBuffer(x->d->q, n->param[slot], CL_TRUE, 0, bytes, data, 0, NULL, NULL) != CL_SUCCESS) {
      kiln__err(err, KILN_ECL, "upload of node parameters failed");
      return NULL;
    }
    n->param_hash[slot] = h;
    return n->param[slot];
  }
  if (n->param[slot]) clReleaseMemObject(n->param[slot]);
  n->param[slot] = NULL; /* the budget guard must not count the block it replaces */
  n->param_bytes[slot] = 0;
  if (x->budget_s) kiln__stream_make_room(x->budget_s, x->cur, bytes);
  n->param[slot] = kiln_cl_alloc(x->d, bytes, err);
  if (!n->param[slot]) return NULL;
  n->param_bytes[slot] = bytes;
  n->param_hash[slot] = h;
  if (bytes && clEnqueueWriteBuffer(x->d->q, n->param[slot], CL_TRUE, 0, bytes, data, 0, NULL, NULL) != CL_SUCCESS) {
    kiln__err(err, KILN_ECL, "upload of node parameters failed");
    return NULL;
  }
  return n->param[slot];
}

cl_mem kiln_exec_scratch(kiln_exec *x, kiln_node *n, int slot, size_t bytes, kiln_error *err) {
  if (slot < 0 || slot >= 4) { kiln__err(err, KILN_EINTERNAL, "scratch slot %d", slot); return NULL; }
  if (n->scratch[slot] && n->scratch_bytes[slot] >= bytes) return n->scratch[slot];
  kiln__replay_stale(n);
  if (n->scratch[slot]) clReleaseMemObject(n->scratch[slot]);
  n->scratch[slot] = NULL;
  n->scratch_bytes[slot] = 0;
  if (x->budget_s) kiln__stream_make_room(x->budget_s, x->cur, bytes);
  n->scratch[slot] = kiln_cl_alloc(x->d, bytes, err);
  n->scratch_bytes[slot] = n->scratch[slot] ? bytes : 0;
  return n->scratch[slot];
}

int kiln_exec_launch(kiln_exec *x, cl_kernel k, int dims, const size_t *gws, const size_t *lws, kiln_error *err) {
  cl_event ev = NULL;
  int rc = kiln_cl_launch_ev(x->d, k, dims, gws, lws, x->profile ? &ev : NULL, err);
  if (!rc) x->launches++;
  if (ev) {
    if (x->nevents == x->capevents) {
      int cap = x->capevents ? x->capevents * 2 : 16;
      cl_event *ne = realloc(x->events, sizeof *ne * (size_t)cap);
      if (!ne) { clReleaseEvent(ev); return rc; }
      x->events = ne;
      x->capevents = cap;
    }
    x->events[x->nevents++] = ev;
  }
  return rc;
}

int kiln__session_set_db(kiln_session *s, kiln_db *db, const kiln_record_source *src, kiln_error *err) {
  int64_t id = -1;
  if (db && !src) return kiln__err(err, KILN_EINVAL, "a tuning database needs its record source");
  if (db) {
    int rc = src->device(db, &s->d->info, &id, err);
    if (rc == KILN_ENOTFOUND) id = -1; /* read-only and unknown device: no records */
    else if (rc) return rc;
  }
  /* a read-only database that does not know this device may still carry
   * shared layers (KILN_DB_PATH) that do */
  s->db = id >= 0 || (db && src->nshared(db) > 0) ? db : NULL;
  s->recs = s->db ? src : NULL;
  s->db_device = id;
  if (s->cm) s->pred->close(s->cm);
  s->cm = NULL; /* made again at the next plan, on this database's figures */
  kiln_device_set_binary_db(s->d, s->db, s->recs);
  kiln__plan_cache_clear(s); /* cached plans chose parameters without it */
  /* an attention grouping decided without this database's measurements is
   * a rewrite of the graph a replan cannot undo: plan on a new copy (a
   * model from memory keeps its graph and that decision) */
  bool rewritten = false;
  for (int i = 0; i < s->m->g->npdec && !rewritten; i++)
    rewritten = s->m->g->pdec[i].kind && !strcmp(s->m->g->pdec[i].kind, "attention") && s->m->g->pdec[i].fused;
  if (rewritten) {
    kiln_error fe = {0};
    (void)kiln__session_replan_fresh(s, &fe);
  }
  s->planned = false; /* parameters are chosen again on the next run */
  return 0;
}

void kiln_session_param_stats(const kiln_session *s, kiln_param_stats *ps) {
  memset(ps, 0, sizeof *ps);
  kiln_graph *g = s->m->g;
  for (int i = 0; i < g->nnodes; i++) {
    const char *o = g->nodes[i].tparams_origin;
    if (!o) continue;
    ps->tunable++;
    if (!strcmp(o, "tuned")) ps->tuned++;
    else if (!strcmp(o, "predicted")) ps->predicted++;
    else ps->defaulted++;
  }
}

void kiln_session_param_basis(const kiln_session *s, kiln_param_basis *b) {
  if (s->cm) s->pred->basis(s->cm, b);
  else memset(b, 0, sizeof *b);
}

int kiln__session_ensure_plan(kiln_session *s, kiln_error *err) {
  kiln_graph *g = s->m->g;
  for (int i = 0; i < g->ninputs; i++)
    if (!s->in[i]) return kiln__err(err, KILN_ENOTFOUND, "missing input '%s'", g->vals[g->inputs[i]].name);
  return kiln__plan_cache_ensure(s, plan_matches, plan, err);
}

int kiln_session_set_precision(kiln_session *s, int precision, kiln_error *err) {
  if (!kiln_precision_name(precision)) return kiln__err(err, KILN_EINVAL, "precision %d: expected fp32 (0), fp16 (1) or auto (2)", precision);
  if (s->precision == precision) return 0;
  s->precision = precision;
  kiln__plan_cache_clear(s);
  s->planned = false;
  return 0;
}

int kiln_session_precision(const kiln_session *s) { return s->precision; }

void kiln_session_set_fusion(kiln_session *s, int enabled) {
  s->no_fusion = !enabled;
  kiln__plan_cache_clear(s);
  s->planned = false;
}

int kiln_session_fusion(const kiln_session *s, kiln_fusion_info **out, int *n) {
  *out = NULL;
  *n = 0;
  if (!s->nfdec) return 0;
  kiln_fusion_info *f = calloc((size_t)s->nfdec, sizeof *f);
  if (!f) return KILN_ENOMEM;
  for (int i = 0; i < s->nfdec; i++) {
    snprintf(f[i].root, sizeof f[i].root, "%s", s->fdec[i].root);
    snprintf(f[i].nodes, sizeof f[i].nodes, "%s", s->fdec[i].nodes);
    snprintf(f[i].kind, sizeof f[i].kind, "%s", s->fdec[i].kind);
    snprintf(f[i].reason, sizeof f[i].reason, "%s", s->fdec[i].reason);
    f[i].nnodes = s->fdec[i].nnodes;
    f[i].fused = s->fdec[i].fused;
    f[i].probed = s->fdec[i].measured;
    f[i].pred_fused_ns = s->fdec[i].pred_fused_ns;
    f[i].pred_unfused_ns = s->fdec[i].pred_unfused_ns;
    f[i].meas_fused_ns = s->fdec[i].meas_fused_ns;
    f[i].meas_unfused_ns = s->fdec[i].meas_unfused_ns;
  }
  *out = f;
  *n = s->nfdec;
  return 0;
}

int kiln_session_plan_memory(kiln_session *s, uint64_t *bytes, kiln_error *err) {
  int rc = kiln__session_ensure_plan(s, err);
  if (rc) return rc;
  *bytes = s->max_memory ? s->stream_peak_plan : s->st.device_bytes;
  return 0;
}

int kiln_session_set_max_memory(kiln_session *s, uint64_t bytes) {
  if (s->max_memory == bytes) return 0;
  s->max_memory = bytes;
  kiln__plan_cache_clear(s);
  s->planned = false;
  return 0;
}

void kiln_session_set_profiling(kiln_session *s, int on) { s->profile = on != 0; }

static int is_compute_op(const char *op) {
  static const char *const ops[] = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "Gemm", "MatMul", "MatMulInteger",
                                    "QLinearMatMul", "KilnAttention", "Einsum"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i])) return 1;
  return 0;
}

/* The device bytes node n's kernels (its fused group's, when it is a group's
 * root) must move at least once: every value read from outside the group
 * (each once) and the root's outputs; whether one of them is compute-bound. */
static void node_traffic(const kiln_graph *g, const kiln_node *n, double *bytes, int *compute) {
  int one = (int)(n - g->nodes), cnt = n->fgroup ? n->fgroup->nnodes : 1;
  const int *mem = n->fgroup ? n->fgroup->nodes : &one;
  double b = 0;
  int heavy = 0;
  for (int a = 0; a < cnt; a++) {
    const kiln_node *m = &g->nodes[mem[a]];
    heavy |= is_compute_op(m->op_type);
    for (int k = 0; k < m->nin; k++) {
      int v = m->in[k], seen = 0;
      if (v < 0) continue;
      for (int c = 0; c < cnt && !seen; c++) /* made inside the group */
        for (int o = 0; o < g->nodes[mem[c]].nout; o++) seen |= g->nodes[mem[c]].out[o] == v;
      for (int c = 0; c < a && !seen; c++) /* read by an earlier member */
        for (int j = 0; j < g->nodes[mem[c]].nin; j++) seen |= g->nodes[mem[c]].in[j] == v;
      for (int j = 0; j < k && !seen; j++) seen |= m->in[j] == v;
      if (!seen) b += (double)kiln_value_dev_bytes(&g->vals[v]);
    }
  }
  for (int o = 0; o < n->nout; o++)
    if (n->out[o] >= 0) b += (double)kiln_value_dev_bytes(&g->vals[n->out[o]]);
  *bytes = b;
  *compute = heavy;
}

int kiln_session_node_times(const kiln_session *s, kiln_node_time **out, int *n) {
  *out = NULL;
  *n = 0;
  if (!s->ev_lo || !s->ev_hi) return KILN_ENOTFOUND;
  const kiln_graph *g = s->m->g;
  int64_t t0 = 0;
  int cnt = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (s->ev_lo[i]) { cnt++; if (!t0 || s->ev_lo[i] < t0) t0 = s->ev_lo[i]; }
  kiln_node_time *t = calloc((size_t)cnt + 1, sizeof *t);
  if (!t) return KILN_ENOMEM;
  int k = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (!s->ev_lo[i]) continue;
    snprintf(t[k].node, sizeof t[k].node, "%s", g->nodes[i].name);
    snprintf(t[k].op, sizeof t[k].op, "%s", g->nodes[i].op_type);
    t[k].start_us = (double)(s->ev_lo[i] - t0) / 1e3;
    t[k].span_us = (double)(s->ev_hi[i] - s->ev_lo[i]) / 1e3;
    node_traffic(g, &g->nodes[i], &t[k].bytes, &t[k].compute);
    k++;
  }
  *out = t;
  *n = k;
  return 0;
}
