/* ops/control.c: control flow (Loop, If, Scan).
 *
 * The host orchestrates, the device computes: each body subgraph runs as a
 * device session of its own (planned when its input shapes change, every
 * op of the body on the device like any model's); between iterations the
 * host reads back what it has to decide on (the loop condition, the If
 * condition when it is not known at plan time) and hands the loop-carried
 * values and scan slices to the next iteration. Those pass through host
 * memory (a read and a write per value and iteration), which is fine for
 * the small state of decoding loops and not meant for large tensors.
 *
 * Shapes: a Loop's trip count must be known when planning (the M input a
 * constant or bound by value); scan outputs are planned for that many
 * iterations, and a loop whose condition stops it earlier shrinks them
 * (KILN_OP_DYNAMIC). An If whose condition is known at plan time takes that
 * branch's shapes, else both branches must agree.
 *
 * The CPU reference runs the same bodies with their nodes' references. */
#include "kiln_internal.h"

typedef struct body_sess {
  kiln_model m;      /* wraps the body graph (not owned) */
  kiln_session *s;
} body_sess;

typedef struct ctl_state {
  body_sess b[2];    /* If: then, else; Loop, Scan: b[0] */
  int64_t trips;     /* Loop: planned iterations */
  int branch;        /* If: the branch known at plan time, else -1 */
} ctl_state;

static kiln_graph *sub_graph(const kiln_node *n, const char *name) {
  const kiln_attr *a = kiln_attr_find(n, name);
  return a && a->type == KILN_ATTR_GRAPH ? a->g : NULL;
}

static ctl_state *state_of(kiln_node *n, kiln_error *err) {
  if (!n->state) {
    ctl_state *st = calloc(1, sizeof *st);
    if (!st) { kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
    st->branch = -1;
    n->state = st;
  }
  return n->state;
}

static void ctl_release(kiln_node *n) {
  ctl_state *st = n->state;
  for (int k = 0; k < 2; k++) {
    kiln_session_free(st->b[k].s);
    st->b[k].s = NULL;
  }
}

/* The node input slot feeding body input `bi` (a capture, found by name), or -1. */
static int capture_slot(kiln_graph *g, const kiln_node *n, const kiln_graph *b, int bi) {
  const char *name = b->vals[b->inputs[bi]].name;
  for (int k = n->nin_formal; k < n->nin; k++)
    if (n->in[k] >= 0 && !strcmp(g->vals[n->in[k]].name, name)) return k;
  return -1;
}
static kiln_value *capture_of(kiln_graph *g, const kiln_node *n, const kiln_graph *b, int bi) {
  int k = capture_slot(g, n, b, bi);
  return k >= 0 ? &g->vals[n->in[k]] : NULL;
}

/* ---- values passed to and from bodies ----
 * A tensor, or a sequence: a kiln_tensor of dtype KILN_DT_SEQUENCE whose
 * data is its items (kiln_tensor *[dims[0]]); free with free_val. In shape
 * inference the items carry shapes (their data unused). */

static kiln_tensor *seq_val(kiln_tensor **items, int n) {
  kiln_tensor *t = calloc(1, sizeof *t);
  if (!t) { kiln_sequence_free(items, n); return NULL; }
  t->dtype = KILN_DT_SEQUENCE;
  t->rank = 1;
  t->dims[0] = n;
  t->data = items;
  return t;
}

static void free_val(kiln_tensor *t) {
  if (t && t->dtype == KILN_DT_SEQUENCE) { kiln_sequence_free(t->data, (int)t->dims[0]); free(t->name); free(t); }
  else kiln_tensor_free(t);
}

static void free_tensors(kiln_tensor **t, int n) {
  for (int i = 0; i < n; i++) { free_val(t[i]); t[i] = NULL; }
}

/* A sequence value of graph g (its kiln_seq) as a seq_val; item data from
 * the device (x), host[] of a reference run, or the values' own data; only
 * shapes when want_data is 0. */
static kiln_tensor *seq_of_value(kiln_exec *x, kiln_graph *g, const kiln_value *v, int want_data, kiln_error *err) {
  const kiln_seq *sq = v->data;
  if (!sq) { kiln__err(err, KILN_EUNSUPPORTED, "sequence '%s' not known when planning", v->name); return NULL; }
  kiln_tensor **items = calloc((size_t)sq->n + 1, sizeof *items);
  if (!items) { kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  for (int k = 0; k < sq->n; k++) {
    kiln_value *src = &g->vals[sq->items[k].vid];
    void *tmp = NULL;
    const void *data = NULL;
    if (want_data) {
      size_t b = kiln_value_bytes(src);
      if (x && src->buf && !(src->is_const && src->data)) {
        if (!(tmp = malloc(b ? b : 1)) || kiln_cl_read(x->d, src->buf, tmp, b, err)) { free(tmp); kiln_sequence_free(items, k); if (!err->status) kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
        data = tmp;
      } else data = g->ref_host && g->ref_host[sq->items[k].vid] ? g->ref_host[sq->items[k].vid] : src->data;
      if (!data) { kiln_sequence_free(items, k); kiln__err(err, KILN_EINTERNAL, "sequence item '%s' has no data", src->name); return NULL; }
    }
    items[k] = kiln__seq_item_tensor(g, &sq->items[k], data);
    free(tmp);
    if (!items[k]) { kiln_sequence_free(items, k); kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  }
  kiln_tensor *t = seq_val(items, sq->n);
  if (!t) kiln__err(err, KILN_ENOMEM, "out of memory");
  return t;
}

/* ---- shape inference of a body ---- */

/* Value `target` of g becomes a sequence shaped like t (a sequence
 * tensor): each item a value "<target name>[k]" of g of its own, a graph input
 * when as_input, holding the item's data when with_data. */
static int seq_values(kiln_graph *g, int target, const kiln_tensor *t, bool as_input, bool with_data, kiln_error *err) {
  int n = (int)t->dims[0];
  kiln_tensor **items = t->data;
  kiln_seq *sq = calloc(1, sizeof *sq + sizeof(kiln_seq_item) * (size_t)(n + 1));
  if (!sq) return kiln__err(err, KILN_ENOMEM, "out of memory");
  sq->n = n;
  sq->elem_dtype = n ? items[0]->dtype : KILN_DT_FLOAT;
  for (int k = 0; k < n; k++) {
    char nm[512];
    snprintf(nm, sizeof nm, "%s[%d]", g->vals[target].name, k);
    int vid = kiln_graph_add_value(g, nm);
    if (vid < 0) { free(sq); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    kiln_value *v = &g->vals[vid];
    v->dtype = items[k]->dtype, v->rank = items[k]->rank, v->is_input = as_input;
    memcpy(v->dims, items[k]->dims, sizeof v->dims);
    free(v->data);
    v->data = NULL;
    size_t bytes = kiln_value_bytes(v);
    if (with_data && !(v->data = malloc(bytes ? bytes : 1))) { free(sq); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    if (with_data) memcpy(v->data, items[k]->data, bytes);
    sq->items[k] = (kiln_seq_item){.vid = vid, .axis = -1, .keepdims = 1};
  }
  kiln_value *o = &g->vals[target];
  free(o->data);
  o->data = sq;
  o->dtype = KILN_DT_SEQUENCE;
  o->rank = 0;
  return 0;
}

/* Binds body input bi to sequence value t: its items become values
 * "<input>[k]" of the body (with their data when with_data). */
static int bind_seq(kiln_graph *b, int bi, const kiln_tensor *t, int with_data, kiln_error *err) {
  return seq_values(b, b->inputs[bi], t, true, with_data != 0, err);
}

/* Sets body input bi's type and shape (and its data when known) for planning. */
static int bind_shape(kiln_graph *b, int bi, int dtype, int rank, const int64_t *dims, const void *data, kiln_error *err) {
  kiln_value *v = &b->vals[b->inputs[bi]];
  if (v->dtype && dtype && v->dtype != dtype && v->dtype != KILN_DT_SEQUENCE)
    return kiln__err(err, KILN_ESHAPE, "body input '%s' is %s, given %s", v->name, kiln_dtype_name(v->dtype), kiln_dtype_name(dtype));
  if (v->dtype == KILN_DT_SEQUENCE) { free(v->data); v->data = NULL; }
  v->dtype = dtype;
  v->rank = rank;
  if (rank) memcpy(v->dims, dims, sizeof(int64_t) * (size_t)rank);
  free(v->data);
  v->data = NULL;
  if (data) {
    size_t bytes = kiln_value_bytes(v);
    if (!(v->data = malloc(bytes ? bytes : 1))) return kiln__err(err, KILN_ENOMEM, "out of memory");
    memcpy(v->data, data, bytes);
  }
  return 0;
}

/* Binds body input bi like value o of the enclosing graph g. */
static int bind_from(kiln_graph *g, kiln_graph *b, int bi, const kiln_value *o, kiln_error *err) {
  if (o->dtype == KILN_DT_STRING) return kiln__err(err, KILN_EUNSUPPORTED, "body input '%s': string values are not supported in subgraphs", b->vals[b->inputs[bi]].name);
  if (o->dtype == KILN_DT_SEQUENCE) {
    kiln_tensor *t = seq_of_value(NULL, g, o, 0, err);
    if (!t) return err->status;
    int rc = bind_seq(b, bi, t, 0, err);
    free_val(t);
    return rc;
  }
  return bind_shape(b, bi, o->dtype, o->rank, o->dims, o->data, err);
}

static int bind_captures(kiln_graph *g, const kiln_node *n, kiln_graph *b, kiln_error *err) {
  for (int i = b->nformal; i < b->ninputs; i++) {
    kiln_value *o = capture_of(g, n, b, i);
    if (!o) return kiln__err(err, KILN_EINTERNAL, "capture '%s' not found", b->vals[b->inputs[i]].name);
    int rc = bind_from(g, b, i, o, err);
    if (rc) return rc;
  }
  return 0;
}

static int plan_body(kiln_graph *b, const char *what, kiln_error *err) {
  int rc = kiln_graph_plan(b, err);
  if (rc && err) {
    char m[1024];
    snprintf(m, sizeof m, "%s: %s", what, err->msg);
    snprintf(err->msg, sizeof err->msg, "%s", m);
  }
  return rc;
}

/* Body output i after a plan, shapes only (a seq_val for a sequence). */
static kiln_tensor *out_shape(kiln_graph *b, int i, kiln_error *err) {
  kiln_value *v = &b->vals[b->outputs[i]];
  if (v->dtype == KILN_DT_SEQUENCE) return seq_of_value(NULL, b, v, 0, err);
  kiln_tensor *t = calloc(1, sizeof *t); /* no data */
  if (!t) { kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  t->dtype = v->dtype, t->rank = v->rank;
  memcpy(t->dims, v->dims, sizeof t->dims);
  return t;
}

/* Same type and shapes (a sequence: count and every item). */
static bool same_val_shape(const kiln_tensor *a, const kiln_tensor *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank)) return false;
  if (a->dtype != KILN_DT_SEQUENCE) return true;
  for (int64_t k = 0; k < a->dims[0]; k++)
    if (!same_val_shape(((kiln_tensor **)a->data)[k], ((kiln_tensor **)b->data)[k])) return false;
  return true;
}

/* Output i of the node shaped like t: a tensor, or a sequence whose items
 * are values "<output>[k]" of g of their own. */
static int set_out_like(kiln_graph *g, kiln_node *n, int i, const kiln_tensor *t, kiln_error *err) {
  if (!kiln_has_out(n, i)) return 0;
  if (t->dtype != KILN_DT_SEQUENCE) { kiln_set_out(g, n, i, t->dtype, t->rank, t->dims); return 0; }
  return seq_values(g, n->out[i], t, false, false, err);
}

/* ---- host side of a body run (reference and device) ---- */

static kiln_tensor *tensor_of(const kiln_value *v, const void *data) {
  kiln_tensor *t = kiln_tensor_new(v->dtype, v->rank, v->dims);
  if (t && data) memcpy(t->data, data, kiln_value_bytes(v));
  return t;
}

/* Runs body b on host values in[0..b->ninputs) with the nodes' CPU
 * references; out[0..b->noutputs) are new values. */
static int body_ref(kiln_graph *b, kiln_tensor **in, kiln_tensor **out, kiln_error *err) {
  int rc = 0;
  for (int i = 0; i < b->ninputs && !rc; i++)
    rc = in[i]->dtype == KILN_DT_SEQUENCE ? bind_seq(b, i, in[i], 1, err) : bind_shape(b, i, in[i]->dtype, in[i]->rank, in[i]->dims, in[i]->data, err);
  if (!rc) rc = plan_body(b, "body", err);
  if (rc) return rc;
  void **host = calloc((size_t)b->nvals + 1, sizeof(void *));
  if (!host) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < b->nnodes && !rc; i++) {
    kiln_node *bn = &b->nodes[i];
    if (bn->folded) continue;
    rc = kiln_node_run_ref_host(b, bn, host, err);
    if (!rc && bn->op && (bn->op->flags & KILN_OP_DYNAMIC)) rc = kiln__reinfer_after(b, i, err);
  }
  for (int i = 0; i < b->noutputs && !rc; i++) {
    kiln_value *v = &b->vals[b->outputs[i]];
    if (v->dtype == KILN_DT_SEQUENCE) {
      b->ref_host = host;
      out[i] = seq_of_value(NULL, b, v, 1, err);
      b->ref_host = NULL;
      if (!out[i]) rc = err->status;
      continue;
    }
    const void *src = host[b->outputs[i]] ? host[b->outputs[i]] : v->data;
    if (!src) rc = kiln__err(err, KILN_EINTERNAL, "body output '%s' has no data", v->name);
    else if (!(out[i] = tensor_of(v, src))) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  for (int i = 0; i < b->nvals; i++) free(host[i]);
  free(host);
  return rc;
}

/* Runs body b on the device through its session (made on first use). */
static int body_dev(kiln_exec *x, body_sess *bs, kiln_graph *b, kiln_tensor **in, kiln_tensor **out, kiln_error *err) {
  int rc;
  if (!bs->s) {
    bs->m.g = b;
    if ((rc = kiln__session_create(&bs->m, x->d, x->pred, &bs->s, err)) != 0) return rc;
    bs->s->lazy_int_bind = true;
  }
  for (int i = 0; i < b->ninputs; i++) {
    kiln_value *bv = &b->vals[b->inputs[i]];
    if (in[i]->dtype == KILN_DT_SEQUENCE) {
      bv->dtype = KILN_DT_SEQUENCE;
      rc = kiln_session_set_input_sequence(bs->s, bv->name, in[i]->data, (int)in[i]->dims[0], err);
    } else {
      if (bv->dtype == KILN_DT_SEQUENCE) { free(bv->data); bv->data = NULL; bv->dtype = 0; }
      bv->rank = -1; /* shapes may change between runs (the session plans again) */
      rc = kiln_session_set_input(bs->s, bv->name, in[i], err);
    }
    if (rc) return rc;
  }
  if ((rc = kiln_session_run(bs->s, err)) != 0) return rc;
  x->launches += bs->s->st.kernels_launched;
  for (int i = 0; i < b->noutputs; i++) {
    kiln_tensor *const *items;
    int cnt = kiln_session_output_sequence(bs->s, i, 0, &items);
    if (cnt >= 0) {
      kiln_tensor **c = calloc((size_t)cnt + 1, sizeof *c);
      for (int k = 0; c && k < cnt; k++)
        if (!(c[k] = kiln_tensor_new(items[k]->dtype, items[k]->rank, items[k]->dims))) { kiln_sequence_free(c, k); c = NULL; }
        else memcpy(c[k]->data, items[k]->data, (size_t)kiln_tensor_numel(items[k]) * kiln_dtype_size(items[k]->dtype));
      if (!c || !(out[i] = seq_val(c, cnt))) return kiln__err(err, KILN_ENOMEM, "out of memory");
      continue;
    }
    const kiln_tensor *t = kiln_session_output(bs->s, i);
    out[i] = kiln_tensor_new(t->dtype, t->rank, t->dims);
    if (!out[i]) return kiln__err(err, KILN_ENOMEM, "out of memory");
    memcpy(out[i]->data, t->data, (size_t)kiln_tensor_numel(t) * kiln_dtype_size(t->dtype));
  }
  return 0;
}

/* A node input's current contents as a host value: read from its device
 * buffer (x set), else from host[] of the reference. */
static kiln_tensor *input_val(kiln_exec *x, kiln_graph *g, kiln_value *v, const void *host, kiln_error *err) {
  if (v->dtype == KILN_DT_SEQUENCE) return seq_of_value(x, g, v, 1, err);
  kiln_tensor *t = kiln_tensor_new(v->dtype, v->rank, v->dims);
  if (!t) { kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  size_t bytes = kiln_value_bytes(v);
  if (x && v->buf && !(v->is_const && v->data)) { /* constants from their host copy */
    if (kiln_cl_read(x->d, v->buf, t->data, bytes, err)) { kiln_tensor_free(t); return NULL; }
  } else if (host || v->data) memcpy(t->data, host ? host : v->data, bytes);
  else { kiln_tensor_free(t); kiln__err(err, KILN_EINTERNAL, "value '%s' has no data", v->name); return NULL; }
  return t;
}
#define input_tensor(x, v, host, err) input_val(x, g, v, host, err)

/* Body input bi (a capture) as a host value. */
static int capture_tensor(kiln_exec *x, kiln_graph *g, kiln_node *n, kiln_graph *b, int bi, void **in, kiln_tensor **t, kiln_error *err) {
  int k = capture_slot(g, n, b, bi);
  if (k < 0) return kiln__err(err, KILN_EINTERNAL, "capture '%s' not found", b->vals[b->inputs[bi]].name);
  *t = input_val(x, g, &g->vals[n->in[k]], in ? in[k] : NULL, err);
  return *t ? 0 : err->status;
}

/* A blocking upload: the host tensors are freed right after. */
static int write_sync(kiln_exec *x, cl_mem b, const void *src, size_t bytes, kiln_error *err) {
  if (!bytes) return 0;
  kiln__rec_other();
  cl_int e = clEnqueueWriteBuffer(x->d->q, b, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
  return e == CL_SUCCESS ? 0 : kiln__err(err, KILN_ECL, "clEnqueueWriteBuffer(%zu bytes): %s", bytes, kiln__clerror(e));
}

/* Value vid of g from host tensor t: its device buffer (made when missing),
 * or its host buffer in a reference run. */
static int store_value(kiln_exec *x, kiln_graph *g, int vid, const kiln_tensor *t, void *out, kiln_error *err) {
  kiln_value *v = &g->vals[vid];
  if (t->dtype != v->dtype || t->rank != v->rank || memcmp(t->dims, v->dims, sizeof(int64_t) * (size_t)t->rank))
    return kiln__err(err, KILN_EUNSUPPORTED, "value '%s': the body gave a %s tensor of %lld elements whose shape differs from the one planned (shapes that change between runs of a body)", v->name,
                     kiln_dtype_name(t->dtype), (long long)kiln_tensor_numel(t));
  size_t bytes = kiln_value_bytes(v);
  if (x) {
    if (!v->buf && !(v->buf = kiln_cl_alloc(x->d, bytes, err))) return err->status;
    return write_sync(x, v->buf, t->data, bytes, err);
  }
  if (!out) { /* a sequence item: its host buffer */
    void *c = malloc(bytes ? bytes : 1);
    if (!c) return kiln__err(err, KILN_ENOMEM, "out of memory");
    memcpy(c, t->data, bytes);
    if (g->ref_host) { free(g->ref_host[vid]); g->ref_host[vid] = c; }
    else { free(v->data); v->data = c; }
    return 0;
  }
  memcpy(out, t->data, bytes);
  return 0;
}

/* Output i of the node from a host value (a sequence: into its items). */
static int store_output(kiln_exec *x, kiln_graph *g, kiln_node *n, int i, const kiln_tensor *t, void **out, kiln_error *err) {
  kiln_value *v = kiln_out(g, n, i);
  if (!v) return 0;
  if (v->dtype != KILN_DT_SEQUENCE) {
    if (t->dtype == KILN_DT_SEQUENCE) return kiln__err(err, KILN_EUNSUPPORTED, "output '%s': the body gave a sequence", v->name);
    return store_value(x, g, n->out[i], t, out ? out[i] : NULL, err);
  }
  const kiln_seq *sq = v->data;
  if (t->dtype != KILN_DT_SEQUENCE || !sq || sq->n != t->dims[0]) return kiln__err(err, KILN_EUNSUPPORTED, "output '%s': the body gave another number of sequence items than planned", v->name);
  for (int k = 0; k < sq->n; k++) {
    int rc = store_value(x, g, sq->items[k].vid, ((kiln_tensor **)t->data)[k], NULL, err);
    if (rc) return rc;
  }
  return 0;
}

/* ---- If ---- */

static int if_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_graph *br[2] = {sub_graph(n, "then_branch"), sub_graph(n, "else_branch")};
  if (!br[0] || !br[1]) return kiln__err(err, KILN_EPARSE, "If needs then_branch and else_branch");
  kiln_value *c = kiln_in(g, n, 0);
  if (kiln_value_numel(c) != 1) return kiln__err(err, KILN_ESHAPE, "the condition must have one element");
  ctl_state *st = state_of(n, err);
  if (!st) return KILN_ENOMEM;
  st->branch = c->data ? (kiln_value_geti(c, 0) ? 0 : 1) : -1;
  int first = st->branch >= 0 ? st->branch : 0, last = st->branch >= 0 ? st->branch : 1;
  for (int k = first; k <= last; k++) {
    int rc = bind_captures(g, n, br[k], err);
    if (!rc) rc = plan_body(br[k], k ? "else_branch" : "then_branch", err);
    if (rc) return rc;
    if (br[k]->noutputs != n->nout) return kiln__err(err, KILN_EPARSE, "the branch has %d outputs, the node %d", br[k]->noutputs, n->nout);
  }
  int rc = 0;
  for (int i = 0; i < n->nout && !rc; i++) {
    kiln_tensor *a = out_shape(br[first], i, err), *b = a ? out_shape(br[last], i, err) : NULL;
    if (!a || !b) rc = err->status;
    else if (!same_val_shape(a, b))
      rc = kiln__err(err, KILN_EUNSUPPORTED, "output %d: the branches give different shapes or types and the condition is not known when planning", i);
    else rc = set_out_like(g, n, i, a, err);
    free_val(a);
    free_val(b);
  }
  return rc;
}

/* Runs the If on the device (x set) or with the references (x NULL). */
static int if_run(kiln_exec *x, kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  ctl_state *st = state_of(n, err);
  if (!st) return KILN_ENOMEM;
  int k = st->branch;
  if (k < 0) { /* the condition, read back */
    kiln_tensor *c = input_tensor(x, kiln_in(g, n, 0), in ? in[0] : NULL, err);
    if (!c) return err->status;
    k = kiln_load_i(c->data, c->dtype, 0) ? 0 : 1;
    kiln_tensor_free(c);
  }
  kiln_graph *b = sub_graph(n, k ? "else_branch" : "then_branch");
  kiln_tensor **bin = calloc((size_t)b->ninputs + 1, sizeof *bin), **bout = calloc((size_t)b->noutputs + 1, sizeof *bout);
  int rc = bin && bout ? 0 : kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < b->ninputs && !rc; i++) rc = capture_tensor(x, g, n, b, i, in, &bin[i], err);
  if (!rc) rc = x ? body_dev(x, &st->b[k], b, bin, bout, err) : body_ref(b, bin, bout, err);
  for (int i = 0; i < n->nout && !rc; i++) rc = store_output(x, g, n, i, bout[i], out, err);
  if (bin) free_tensors(bin, b->ninputs);
  if (bout) free_tensors(bout, b->noutputs);
  free(bin);
  free(bout);
  if (!x && st->b[k].s) kiln__session_replan(st->b[k].s); /* the reference planned the shared body graph */
  return rc;
}

static int if_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return if_run(NULL, g, n, in, out, err); }
static int if_dev(kiln_exec *x, kiln_node *n, kiln_error *err) { return if_run(x, x->g, n, NULL, NULL, err); }

/* ---- Loop ---- */


/* Plans the body for iteration `it` with carried values shaped like cur[]. */
static int loop_plan_iter(kiln_graph *g, kiln_node *n, kiln_graph *b, int64_t it, kiln_tensor **cur, int N, kiln_error *err) {
  int64_t none[1] = {0};
  int rc = bind_shape(b, 0, KILN_DT_INT64, 0, none, &it, err);
  if (!rc) rc = bind_shape(b, 1, KILN_DT_BOOL, 0, none, NULL, err);
  for (int j = 0; j < N && !rc; j++)
    rc = cur[j]->dtype == KILN_DT_SEQUENCE ? bind_seq(b, 2 + j, cur[j], 0, err) : bind_shape(b, 2 + j, cur[j]->dtype, cur[j]->rank, cur[j]->dims, NULL, err);
  if (!rc) rc = bind_captures(g, n, b, err);
  if (!rc) rc = plan_body(b, "body", err);
  return rc;
}

static int loop_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_graph *b = sub_graph(n, "body");
  if (!b) return kiln__err(err, KILN_EPARSE, "Loop needs a body");
  int N = n->nin_formal - 2, K = b->noutputs - 1 - N;
  if (N < 0 || b->nformal != 2 + N || K < 0 || n->nout != N + K)
    return kiln__err(err, KILN_EPARSE, "the body takes %d inputs and gives %d outputs for %d loop-carried values", b->nformal, b->noutputs, N);
  ctl_state *st = state_of(n, err);
  if (!st) return KILN_ENOMEM;
  kiln_value *m = kiln_in(g, n, 0), *c = kiln_in(g, n, 1);
  if (!m) return kiln__err(err, KILN_EUNSUPPORTED, "a Loop without a trip count (a while loop) is not supported: its iteration count is only known at run time");
  if (!m->data) return kiln__err(err, KILN_EUNSUPPORTED, "the trip count '%s' must be known when planning (a constant or an input bound by value)", m->name);
  st->trips = kiln_value_geti(m, 0);
  if (st->trips < 0) st->trips = 0;
  if (c && c->data && !kiln_value_geti(c, 0)) st->trips = 0;
  if (K > 16) return kiln__err(err, KILN_ELIMIT, "more than 16 scan outputs");
  kiln_tensor **cur = calloc((size_t)N + 1, sizeof *cur);
  int64_t scan_dims[16][KILN_MAX_RANK];
  if (!cur) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int rc = 0;
  for (int j = 0; j < N && !rc; j++) {
    kiln_value *v = kiln_in(g, n, 2 + j);
    if (!v) rc = kiln__err(err, KILN_EUNSUPPORTED, "loop-carried input %d is missing", j);
    else if (v->none) rc = kiln__err(err, KILN_EUNSUPPORTED, "loop-carried input %d is an optional holding nothing", j);
    else if (v->dtype == KILN_DT_SEQUENCE) { if (!(cur[j] = seq_of_value(NULL, g, v, 0, err))) rc = err->status; }
    else if (!(cur[j] = calloc(1, sizeof *cur[j]))) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
    else { cur[j]->dtype = v->dtype, cur[j]->rank = v->rank; memcpy(cur[j]->dims, v->dims, sizeof v->dims); }
  }
  /* carried shapes may change in the first iterations (a growing state or
   * sequence): planned again until they settle, at most once per iteration */
  for (int64_t it = 0; !rc; it++) {
    if ((rc = loop_plan_iter(g, n, b, it, cur, N, err)) != 0) break;
    bool settled = true;
    for (int j = 0; j < N && !rc && it < st->trips; j++) {
      kiln_tensor *o = out_shape(b, 1 + j, err);
      if (!o) { rc = err->status; break; }
      if (!same_val_shape(o, cur[j])) settled = false;
      free_val(cur[j]);
      cur[j] = o;
    }
    for (int k = 0; k < K && !rc; k++) {
      kiln_value *o = &b->vals[b->outputs[1 + N + k]];
      if (o->dtype == KILN_DT_SEQUENCE || o->rank + 1 > KILN_MAX_RANK) { rc = kiln__err(err, KILN_EUNSUPPORTED, "scan output %d: type or rank not supported", k); break; }
      if (it > 0 && memcmp(scan_dims[k] + 1, o->dims, sizeof(int64_t) * (size_t)o->rank)) { rc = kiln__err(err, KILN_EUNSUPPORTED, "scan output %d changes shape between iterations", k); break; }
      scan_dims[k][0] = st->trips;
      memcpy(scan_dims[k] + 1, o->dims, sizeof(int64_t) * (size_t)o->rank);
    }
    if (rc || settled || it + 1 >= st->trips) break;
  }
  for (int j = 0; j < N && !rc; j++) rc = set_out_like(g, n, j, cur[j], err);
  for (int k = 0; k < K && !rc; k++) {
    kiln_value *o = &b->vals[b->outputs[1 + N + k]];
    kiln_set_out(g, n, N + k, o->dtype, o->rank + 1, scan_dims[k]);
  }
  free_tensors(cur, N);
  free(cur);
  return rc;
}

/* Bytes of one iteration's slice of scan output value v. */
static size_t slice_bytes(const kiln_value *v) {
  size_t b = kiln_dtype_size(v->dtype);
  for (int k = 1; k < v->rank; k++) b *= (size_t)v->dims[k];
  return b;
}

static int loop_run(kiln_exec *x, kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_graph *b = sub_graph(n, "body");
  ctl_state *st = state_of(n, err);
  if (!st) return KILN_ENOMEM;
  int N = n->nin_formal - 2, K = b->noutputs - 1 - N, rc = 0;
  kiln_tensor **bin = calloc((size_t)b->ninputs + 1, sizeof *bin), **bout = calloc((size_t)b->noutputs + 1, sizeof *bout);
  char **acc = calloc((size_t)K + 1, sizeof *acc);
  if (!bin || !bout || !acc) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = b->nformal; i < b->ninputs && !rc; i++) rc = capture_tensor(x, g, n, b, i, in, &bin[i], err);
  for (int j = 0; j < N && !rc; j++)
    if (!(bin[2 + j] = input_tensor(x, kiln_in(g, n, 2 + j), in ? in[2 + j] : NULL, err))) rc = err->status;
  bool cond = true;
  if (!rc && kiln_has_in(n, 1)) {
    kiln_tensor *c = input_tensor(x, kiln_in(g, n, 1), in ? in[1] : NULL, err);
    if (!c) rc = err->status;
    else cond = kiln_load_i(c->data, c->dtype, 0) != 0;
    kiln_tensor_free(c);
  }
  for (int k = 0; k < K && !rc; k++)
    if (!(acc[k] = malloc(slice_bytes(kiln_out(g, n, N + k)) * (size_t)st->trips + 1))) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  int64_t it = 0, zero = 0;
  for (; it < st->trips && cond && !rc; it++) {
    kiln_tensor_free(bin[0]);
    kiln_tensor_free(bin[1]);
    bin[0] = kiln_tensor_new(KILN_DT_INT64, 0, &zero);
    bin[1] = kiln_tensor_new(KILN_DT_BOOL, 0, &zero);
    if (!bin[0] || !bin[1]) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
    *(int64_t *)bin[0]->data = it;
    *(uint8_t *)bin[1]->data = 1;
    if ((rc = x ? body_dev(x, &st->b[0], b, bin, bout, err) : body_ref(b, bin, bout, err)) != 0) break;
    cond = kiln_load_i(bout[0]->data, bout[0]->dtype, 0) != 0; /* the condition, read back */
    for (int j = 0; j < N; j++) { kiln_tensor_free(bin[2 + j]); bin[2 + j] = bout[1 + j]; bout[1 + j] = NULL; }
    for (int k = 0; k < K && !rc; k++) {
      size_t sb = slice_bytes(kiln_out(g, n, N + k));
      kiln_tensor *t = bout[1 + N + k];
      if ((size_t)kiln_tensor_numel(t) * kiln_dtype_size(t->dtype) != sb || t->dtype != kiln_out(g, n, N + k)->dtype)
        rc = kiln__err(err, KILN_EUNSUPPORTED, "scan output %d of iteration %lld differs from the planned shape", k, (long long)it);
      else memcpy(acc[k] + sb * (size_t)it, t->data, sb);
    }
    free_tensors(bout, b->noutputs);
  }
  for (int j = 0; j < N && !rc; j++) rc = store_output(x, g, n, j, bin[2 + j], out, err);
  for (int k = 0; k < K && !rc; k++) { /* a loop stopped by its condition has fewer rows (KILN_OP_DYNAMIC) */
    kiln_value *v = kiln_out(g, n, N + k);
    if (!v) continue;
    v->dims[0] = it;
    size_t bytes = slice_bytes(v) * (size_t)it;
    if (x) rc = write_sync(x, v->buf, acc[k], bytes, err);
    else memcpy(out[N + k], acc[k], bytes);
  }
  if (bin) free_tensors(bin, b->ninputs);
  if (bout) free_tensors(bout, b->noutputs);
  for (int k = 0; acc && k < K; k++) free(acc[k]);
  free(acc);
  free(bin);
  free(bout);
  if (!x && st->b[0].s) kiln__session_replan(st->b[0].s);
  return rc;
}

static int loop_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return loop_run(NULL, g, n, in, out, err); }
static int loop_dev(kiln_exec *x, kiln_node *n, kiln_error *err) { return loop_run(x, x->g, n, NULL, NULL, err); }

/* ---- Scan ----
 * opset 9 and later: inputs N states, then M scanned tensors (scanned along
 * scan_input_axes, in scan_input_directions); outputs N final states and K
 * outputs stacked along scan_output_axes. Opset 8 adds sequence_lens first
 * (not supported when given) and a batch axis 0 before the scanned one: the
 * body then runs over each batch row in turn. */

typedef struct scan_geom {
  int N, M, K, v8;     /* v8: opset 8 layout (batch axis 0) */
  int64_t B, T;        /* batch rows (1 after opset 8), iterations */
  int in_axis[16], in_rev[16], out_axis[16], out_rev[16];
} scan_geom;

static int scan_geom_of(kiln_graph *g, kiln_node *n, kiln_graph *b, scan_geom *sg, kiln_error *err) {
  memset(sg, 0, sizeof *sg);
  sg->v8 = n->opset < 9;
  int first = sg->v8 ? 1 : 0;
  if (sg->v8 && kiln_has_in(n, 0)) return kiln__err(err, KILN_EUNSUPPORTED, "sequence_lens is not supported");
  sg->M = (int)kiln_attr_int(n, "num_scan_inputs", 0);
  sg->N = n->nin_formal - first - sg->M;
  sg->K = b->noutputs - sg->N;
  if (sg->M <= 0 || sg->M > 16 || sg->N < 0 || sg->K < 0 || sg->K > 16 || b->nformal != sg->N + sg->M || n->nout != sg->N + sg->K)
    return kiln__err(err, KILN_EPARSE, "the body's %d inputs and %d outputs do not fit %d scan inputs", b->nformal, b->noutputs, sg->M);
  const int64_t *v;
  int c;
  for (int i = 0; i < sg->M; i++) {
    kiln_value *x = kiln_in(g, n, first + sg->N + i);
    int r = x->rank - sg->v8;
    c = kiln_attr_ints(n, "scan_input_axes", &v);
    sg->in_axis[i] = c > i ? kiln_axis(v[i], r) : 0;
    c = kiln_attr_ints(n, sg->v8 ? "directions" : "scan_input_directions", &v);
    sg->in_rev[i] = c > i ? (int)v[i] : 0;
    if (sg->in_axis[i] < 0) return kiln__err(err, KILN_EINVAL, "scan input axis out of range");
    int64_t t = x->dims[sg->v8 + sg->in_axis[i]];
    if (i && t != sg->T) return kiln__err(err, KILN_ESHAPE, "scan inputs of different lengths");
    sg->T = t;
    sg->B = sg->v8 ? x->dims[0] : 1;
  }
  for (int k = 0; k < sg->K; k++) {
    c = kiln_attr_ints(n, "scan_output_axes", &v);
    sg->out_axis[k] = c > k ? (int)v[k] : 0;
    c = kiln_attr_ints(n, "scan_output_directions", &v);
    sg->out_rev[k] = c > k ? (int)v[k] : 0;
  }
  return 0;
}

/* outer x [pre.., L, post..] -> [pre.., post..] at index idx of axis ax (after `skip` leading batch rows) */
static void axis_geom(int rank, const int64_t *dims, int ax, int64_t *outer, int64_t *len, int64_t *inner) {
  *outer = 1, *inner = 1, *len = dims[ax];
  for (int k = 0; k < ax; k++) *outer *= dims[k];
  for (int k = ax + 1; k < rank; k++) *inner *= dims[k];
}

static int scan_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_graph *b = sub_graph(n, "body");
  if (!b) return kiln__err(err, KILN_EPARSE, "Scan needs a body");
  scan_geom sg;
  int rc = scan_geom_of(g, n, b, &sg, err), first = sg.v8 ? 1 : 0;
  if (rc) return rc;
  for (int j = 0; j < sg.N && !rc; j++) {
    kiln_value *s = kiln_in(g, n, first + j);
    rc = bind_shape(b, j, s->dtype, s->rank - sg.v8, s->dims + sg.v8, NULL, err);
  }
  for (int i = 0; i < sg.M && !rc; i++) {
    kiln_value *x = kiln_in(g, n, first + sg.N + i);
    int64_t d[KILN_MAX_RANK];
    int r = 0;
    for (int k = sg.v8; k < x->rank; k++) if (k != sg.v8 + sg.in_axis[i]) d[r++] = x->dims[k];
    rc = bind_shape(b, sg.N + i, x->dtype, r, d, NULL, err);
  }
  if (!rc) rc = bind_captures(g, n, b, err);
  if (!rc) rc = plan_body(b, "body", err);
  for (int j = 0; j < sg.N + sg.K && !rc; j++) {
    kiln_value *o = &b->vals[b->outputs[j]];
    int64_t d[KILN_MAX_RANK];
    int r = 0;
    if (o->rank + 2 > KILN_MAX_RANK) return kiln__err(err, KILN_ELIMIT, "rank");
    if (sg.v8) d[r++] = sg.B;
    int ax = j < sg.N ? -1 : kiln_axis(sg.out_axis[j - sg.N], o->rank + 1);
    if (j >= sg.N && ax < 0) return kiln__err(err, KILN_EINVAL, "scan output axis out of range");
    for (int k = 0, q = 0; k <= o->rank; k++) {
      if (k == ax) d[r++] = sg.T;
      else if (q < o->rank) d[r++] = o->dims[q++];
    }
    if (j < sg.N && memcmp(o->dims, kiln_in(g, n, first + j)->dims + sg.v8, sizeof(int64_t) * (size_t)o->rank)) return kiln__err(err, KILN_EUNSUPPORTED, "state %d changes shape", j);
    if (j >= sg.N) sg.out_axis[j - sg.N] = ax;
    kiln_set_out(g, n, j, o->dtype, r, d);
  }
  return rc;
}

/* Copies between row-major [outer, L, inner] element idx and a contiguous [outer, inner] block. */
static void axis_copy(char *big, char *small, int64_t outer, int64_t len, int64_t inner, int64_t idx, size_t es, int to_small) {
  for (int64_t o = 0; o < outer; o++) {
    char *p = big + ((o * len + idx) * inner) * (int64_t)es, *q = small + o * inner * (int64_t)es;
    if (to_small) memcpy(q, p, (size_t)inner * es);
    else memcpy(p, q, (size_t)inner * es);
  }
}

static int scan_run(kiln_exec *x, kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_graph *b = sub_graph(n, "body");
  ctl_state *st = state_of(n, err);
  if (!st) return KILN_ENOMEM;
  scan_geom sg;
  int rc = scan_geom_of(g, n, b, &sg, err), first = sg.v8 ? 1 : 0;
  if (rc) return rc;
  int nio = sg.N + sg.M;
  kiln_tensor **full = calloc((size_t)nio + 1, sizeof *full), **outs = calloc((size_t)n->nout + 1, sizeof *outs);
  kiln_tensor **bin = calloc((size_t)b->ninputs + 1, sizeof *bin), **bout = calloc((size_t)b->noutputs + 1, sizeof *bout);
  if (!full || !outs || !bin || !bout) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < nio && !rc; i++)
    if (!(full[i] = input_tensor(x, kiln_in(g, n, first + i), in ? in[first + i] : NULL, err))) rc = err->status;
  for (int j = 0; j < n->nout && !rc; j++) {
    kiln_value *v = kiln_out(g, n, j);
    if (!(outs[j] = kiln_tensor_new(v->dtype, v->rank, v->dims))) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  for (int i = b->nformal; i < b->ninputs && !rc; i++) rc = capture_tensor(x, g, n, b, i, in, &bin[i], err);
  for (int64_t bb = 0; bb < sg.B && !rc; bb++) {
    for (int j = 0; j < sg.N && !rc; j++) { /* initial state of batch row bb */
      kiln_tensor *s = full[j];
      kiln_tensor_free(bin[j]);
      if (!(bin[j] = kiln_tensor_new(s->dtype, s->rank - sg.v8, s->dims + sg.v8))) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
      size_t bytes = (size_t)kiln_tensor_numel(bin[j]) * kiln_dtype_size(s->dtype);
      memcpy(bin[j]->data, (char *)s->data + bytes * (size_t)bb, bytes);
    }
    for (int64_t t = 0; t < sg.T && !rc; t++) {
      for (int i = 0; i < sg.M && !rc; i++) { /* the slice of scan input i */
        kiln_tensor *f = full[sg.N + i];
        int ax = sg.v8 + sg.in_axis[i];
        int64_t d[KILN_MAX_RANK], outer, len, inner;
        int r = 0;
        for (int k = sg.v8; k < f->rank; k++) if (k != ax) d[r++] = f->dims[k];
        axis_geom(f->rank, f->dims, ax, &outer, &len, &inner);
        kiln_tensor_free(bin[sg.N + i]);
        if (!(bin[sg.N + i] = kiln_tensor_new(f->dtype, r, d))) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
        int64_t per_b = outer / sg.B;
        size_t es = kiln_dtype_size(f->dtype);
        axis_copy((char *)f->data + (size_t)(bb * per_b * len * inner) * es, bin[sg.N + i]->data, per_b, len, inner, sg.in_rev[i] ? len - 1 - t : t, es, 1);
      }
      if (rc || (rc = x ? body_dev(x, &st->b[0], b, bin, bout, err) : body_ref(b, bin, bout, err)) != 0) break;
      for (int j = 0; j < sg.N; j++) { kiln_tensor_free(bin[j]); bin[j] = bout[j]; bout[j] = NULL; }
      for (int k = 0; k < sg.K && !rc; k++) {
        kiln_tensor *o = outs[sg.N + k], *piece = bout[sg.N + k];
        int ax = sg.v8 + sg.out_axis[k];
        int64_t outer, len, inner;
        axis_geom(o->rank, o->dims, ax, &outer, &len, &inner);
        int64_t per_b = outer / sg.B;
        size_t es = kiln_dtype_size(o->dtype);
        if ((int64_t)kiln_tensor_numel(piece) != per_b * inner) { rc = kiln__err(err, KILN_EUNSUPPORTED, "scan output %d changes shape", k); break; }
        axis_copy((char *)o->data + (size_t)(bb * per_b * len * inner) * es, piece->data, per_b, len, inner, sg.out_rev[k] ? len - 1 - t : t, es, 0);
      }
      free_tensors(bout, b->noutputs);
    }
    for (int j = 0; j < sg.N && !rc; j++) { /* final state of row bb */
      size_t bytes = (size_t)kiln_tensor_numel(bin[j]) * kiln_dtype_size(bin[j]->dtype);
      memcpy((char *)outs[j]->data + bytes * (size_t)bb, bin[j]->data, bytes);
    }
  }
  for (int j = 0; j < n->nout && !rc; j++) rc = store_output(x, g, n, j, outs[j], out, err);
  if (full) free_tensors(full, nio);
  if (outs) free_tensors(outs, n->nout);
  if (bin) free_tensors(bin, b->ninputs);
  if (bout) free_tensors(bout, b->noutputs);
  free(full); free(outs); free(bin); free(bout);
  if (!x && st->b[0].s) kiln__session_replan(st->b[0].s);
  return rc;
}

static int scan_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return scan_run(NULL, g, n, in, out, err); }
static int scan_dev(kiln_exec *x, kiln_node *n, kiln_error *err) { return scan_run(x, x->g, n, NULL, NULL, err); }

/* ---- SequenceMap ----
 * The body runs once per item of the input sequence (item i of every
 * sequence input, the whole of every tensor input); each body output
 * becomes a sequence whose item i is a value of its own ("<output>[i]",
 * shaped by planning the body on item i's shapes). */

/* Shape of body input j for item i: the item's view, or the tensor's. */
static int smap_bind(kiln_graph *g, kiln_node *n, kiln_graph *b, int i, kiln_error *err) {
  for (int j = 0; j < b->nformal; j++) {
    kiln_value *v = kiln_in(g, n, j);
    if (!v) return kiln__err(err, KILN_EINVAL, "input %d is missing", j);
    if (v->dtype != KILN_DT_SEQUENCE) { int rc = bind_shape(b, j, v->dtype, v->rank, v->dims, NULL, err); if (rc) return rc; continue; }
    const kiln_seq *sq = v->data;
    if (!sq || i >= sq->n) return kiln__err(err, KILN_ESHAPE, "sequence input %d has %d items, input 0 more", j, sq ? sq->n : 0);
    kiln_tensor *t = kiln__seq_item_tensor(g, &sq->items[i], NULL);
    if (!t) return kiln__err(err, KILN_ENOMEM, "out of memory");
    int rc = bind_shape(b, j, t->dtype, t->rank, t->dims, NULL, err);
    kiln_tensor_free(t);
    if (rc) return rc;
  }
  return bind_captures(g, n, b, err);
}

static int smap_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_graph *b = sub_graph(n, "body");
  kiln_value *s0 = kiln_in(g, n, 0);
  if (!b || b->nformal != n->nin_formal || b->noutputs != n->nout) return kiln__err(err, KILN_EPARSE, "the body does not fit the node's inputs and outputs");
  if (s0->dtype != KILN_DT_SEQUENCE || !s0->data) return kiln__err(err, KILN_EUNSUPPORTED, "input 0 is not a sequence known when planning");
  int cnt = ((const kiln_seq *)s0->data)->n, rc = 0;
  kiln_seq **outs = calloc((size_t)n->nout + 1, sizeof *outs);
  if (!outs) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int k = 0; k < n->nout && !rc; k++) {
    if (!(outs[k] = calloc(1, sizeof(kiln_seq) + sizeof(kiln_seq_item) * (size_t)(cnt + 1)))) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
    else outs[k]->n = cnt;
  }
  for (int i = 0; i < cnt && !rc; i++) {
    if ((rc = smap_bind(g, n, b, i, err)) != 0 || (rc = plan_body(b, "body", err)) != 0) break;
    for (int k = 0; k < n->nout && !rc; k++) {
      kiln_value *o = &b->vals[b->outputs[k]];
      if (o->dtype == KILN_DT_SEQUENCE) { rc = kiln__err(err, KILN_EUNSUPPORTED, "sequence outputs of the body are not supported"); break; }
      char nm[512];
      snprintf(nm, sizeof nm, "%s[%d]", n->out[k] >= 0 ? g->vals[n->out[k]].name : "?", i);
      int vid = kiln_graph_add_value(g, nm);
      if (vid < 0) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
      kiln_value *v = &g->vals[vid];
      v->dtype = o->dtype;
      v->rank = o->rank;
      memcpy(v->dims, o->dims, sizeof v->dims);
      outs[k]->elem_dtype = o->dtype;
      outs[k]->items[i] = (kiln_seq_item){.vid = vid, .axis = -1, .keepdims = 1};
    }
  }
  for (int k = 0; k < n->nout; k++) {
    kiln_value *o = kiln_out(g, n, k);
    if (rc || !o) { free(outs[k]); continue; }
    free(o->data);
    o->data = outs[k];
    o->dtype = KILN_DT_SEQUENCE;
    o->rank = 0;
  }
  free(outs);
  return rc;
}

/* Body input j for item i as a host tensor. */
static kiln_tensor *smap_input(kiln_exec *x, kiln_graph *g, kiln_node *n, int j, int i, void **in, kiln_error *err) {
  kiln_value *v = kiln_in(g, n, j);
  if (v->dtype != KILN_DT_SEQUENCE) return input_tensor(x, v, in ? in[j] : NULL, err);
  const kiln_seq_item *it = &((const kiln_seq *)v->data)->items[i];
  kiln_value *src = &g->vals[it->vid];
  const void *host = g->ref_host && g->ref_host[it->vid] ? g->ref_host[it->vid] : NULL;
  kiln_tensor *whole = input_tensor(x && src->buf ? x : NULL, src, host, err);
  if (!whole) return NULL;
  kiln_tensor *t = kiln__seq_item_tensor(g, it, whole->data);
  kiln_tensor_free(whole);
  if (!t) kiln__err(err, KILN_ENOMEM, "out of memory");
  return t;
}

static int smap_run(kiln_exec *x, kiln_graph *g, kiln_node *n, void **in, kiln_error *err) {
  kiln_graph *b = sub_graph(n, "body");
  ctl_state *st = state_of(n, err);
  if (!st) return KILN_ENOMEM;
  int cnt = ((const kiln_seq *)kiln_in(g, n, 0)->data)->n, rc = 0;
  void **host = g->ref_host;
  kiln_tensor **bin = calloc((size_t)b->ninputs + 1, sizeof *bin), **bout = calloc((size_t)b->noutputs + 1, sizeof *bout);
  if (!bin || !bout) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = b->nformal; i < b->ninputs && !rc; i++) rc = capture_tensor(x, g, n, b, i, in, &bin[i], err);
  for (int i = 0; i < cnt && !rc; i++) {
    for (int j = 0; j < b->nformal && !rc; j++) {
      kiln_tensor_free(bin[j]);
      if (!(bin[j] = smap_input(x, g, n, j, i, in, err))) rc = err->status;
    }
    if (rc || (rc = x ? body_dev(x, &st->b[0], b, bin, bout, err) : body_ref(b, bin, bout, err)) != 0) break;
    g->ref_host = host; /* body_ref planned another graph; this one's host buffers stay */
    for (int k = 0; k < n->nout && !rc; k++) {
      kiln_value *o = kiln_out(g, n, k);
      if (!o) continue;
      int vid = ((const kiln_seq *)o->data)->items[i].vid;
      kiln_value *v = &g->vals[vid];
      size_t bytes = kiln_value_bytes(v);
      if ((size_t)kiln_tensor_numel(bout[k]) * kiln_dtype_size(bout[k]->dtype) != bytes) { rc = kiln__err(err, KILN_EINTERNAL, "item %d of output %d: size differs from its plan", i, k); break; }
      if (x) {
        if (!v->buf && !(v->buf = kiln_cl_alloc(x->d, bytes, err))) { rc = err->status; break; }
        rc = write_sync(x, v->buf, bout[k]->data, bytes, err);
      } else {
        void *c = malloc(bytes ? bytes : 1);
        if (!c) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
        memcpy(c, bout[k]->data, bytes);
        if (host) { free(host[vid]); host[vid] = c; }
        else { free(v->data); v->data = c; }
      }
    }
    free_tensors(bout, b->noutputs);
  }
  if (bin) free_tensors(bin, b->ninputs);
  free(bin);
  free(bout);
  if (!x && st->b[0].s) kiln__session_replan(st->b[0].s);
  return rc;
}

static int smap_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return smap_run(NULL, g, n, in, err); }
static int smap_dev(kiln_exec *x, kiln_node *n, kiln_error *err) { return smap_run(x, x->g, n, NULL, err); }

const kiln_op_def kiln_ops_control[] = {
  {.name = "If", .infer = if_infer, .ref = if_ref, .dev = if_dev, .release = ctl_release},
  {.name = "SequenceMap", .infer = smap_infer, .ref = smap_ref, .dev = smap_dev, .release = ctl_release},
  {.name = "Scan", .infer = scan_infer, .ref = scan_ref, .dev = scan_dev, .release = ctl_release},
  {.name = "Loop", .infer = loop_infer, .ref = loop_ref, .dev = loop_dev, .release = ctl_release, .flags = KILN_OP_DYNAMIC},
  {NULL},
};

/* ---- data-dependent shapes (KILN_OP_DYNAMIC) ---- */

int kiln__reinfer_after(kiln_graph *g, int after, kiln_error *err) {
  char *changed = calloc((size_t)g->nvals + 1, 1);
  if (!changed) return kiln__err(err, KILN_ENOMEM, "out of memory");
  kiln_node *d = &g->nodes[after];
  for (int k = 0; k < d->nout; k++) if (d->out[k] >= 0) changed[d->out[k]] = 1;
  int rc = 0;
  for (int i = after + 1; i < g->nnodes && !rc; i++) {
    kiln_node *n = &g->nodes[i];
    bool dep = false;
    for (int k = 0; k < n->nin; k++) dep |= n->in[k] >= 0 && changed[n->in[k]];
    if (!dep) continue;
    if (n->fuse_root >= 0 || n->epi) {
      rc = kiln__err(err, KILN_EUNSUPPORTED, "node '%s' (%s) is fused, and its input's shape depends on the data of node '%s' (plan with fusion off)", n->name, n->op_type, d->name);
      break;
    }
    if ((rc = n->op->infer(g, n, err)) != 0) break;
    bool outs_const = true;
    for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0 && !g->vals[n->out[k]].is_const) outs_const = false;
    if (n->folded && !outs_const && (rc = kiln_node_run_ref(g, n, err)) != 0) break; /* a shape computation folded on the planned shape */
    for (int k = 0; k < n->nout; k++) {
      if (n->out[k] < 0) continue;
      kiln_value *v = &g->vals[n->out[k]];
      changed[n->out[k]] = 1;
      size_t have = 0;
      if (v->buf && clGetMemObjectInfo(v->buf, CL_MEM_SIZE, sizeof have, &have, NULL) == CL_SUCCESS && have < kiln_value_bytes(v)) {
        rc = kiln__err(err, KILN_EUNSUPPORTED, "value '%s' of node '%s' grows past its planned size with the data-dependent shape of node '%s'", v->name, n->name, d->name);
        break;
      }
    }
  }
  free(changed);
  return rc;
}
