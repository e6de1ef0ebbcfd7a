/* graph.c: planning a loaded graph: binding input shapes, shape and dtype
 * inference for every node in topological order, and folding every node
 * whose inputs are all known at plan time (initializers, Constant nodes,
 * shape subgraphs) with its CPU reference implementation. */
#include "kiln_internal.h"

/* Runs node n's reference. host[v] is the host buffer of value v, or NULL to
 * use the values' plan-time data. Output buffers are allocated here and stored
 * in host[] (or in vals[].data when host is NULL). */
int kiln_node_run_ref_host(kiln_graph *g, kiln_node *n, void **host, kiln_error *err) {
  if (!n->op || !n->op->ref)
    return kiln__err(err, KILN_EUNSUPPORTED, "node '%s': op %s has no reference implementation", n->name, n->op_type);
  void *in[64] = {0}, *out[64] = {0};
  if (n->nin > 64 || n->nout > 64) return kiln__err(err, KILN_EUNSUPPORTED, "node '%s': too many inputs/outputs", n->name);
  for (int i = 0; i < n->nin; i++) {
    if (n->in[i] < 0) continue;
    kiln_value *v = &g->vals[n->in[i]];
    in[i] = (host && host[n->in[i]]) ? host[n->in[i]] : v->data;
    if (!in[i]) return kiln__err(err, KILN_EINTERNAL, "node '%s': input '%s' has no host data", n->name, v->name);
  }
  for (int i = 0; i < n->nout; i++) {
    if (n->out[i] < 0) continue;
    kiln_value *v = &g->vals[n->out[i]];
    if (v->dtype == KILN_DT_SEQUENCE) continue; /* resolved at plan time by infer */
    size_t b = kiln_value_bytes(v);
    out[i] = calloc(b ? b : 1, 1);
    if (!out[i]) {
      for (int k = 0; k < i; k++) free(out[k]);
      return kiln__err(err, KILN_ENOMEM, "node '%s': out of memory for output '%s' (%zu bytes)", n->name, v->name, b);
    }
  }
  g->ref_host = host;
  int rc = n->op->ref(g, n, in, out, err);
  g->ref_host = NULL;
  for (int i = 0; i < n->nout; i++) {
    if (n->out[i] < 0 || g->vals[n->out[i]].dtype == KILN_DT_SEQUENCE) continue;
    if (rc) { free(out[i]); continue; }
    if (host) { free(host[n->out[i]]); host[n->out[i]] = out[i]; }
    else { free(g->vals[n->out[i]].data); g->vals[n->out[i]].data = out[i]; }
  }
  return rc;
}

int kiln_node_run_ref(kiln_graph *g, kiln_node *n, kiln_error *err) { return kiln_node_run_ref_host(g, n, NULL, err); }

/* Folded outputs larger than this stay on the device path (bytes). */
#define FOLD_LIMIT ((size_t)256 << 20)

/* Shapes whose size does not fit: 0 if v's element count times 16 (the
 * largest element) fits in int64_t, else fills why with the shape. Every
 * byte count, stride and index computed from a shape is then free of
 * overflow. */
static int size_overflows(const kiln_value *v, char *why, size_t wl) {
  int64_t n = 1;
  int bad = 0;
  for (int k = 0; k < v->rank; k++) {
    if (v->dims[k] < 0) continue; /* unbound or invalid: reported elsewhere */
    if (v->dims[k] && n > INT64_MAX / 16 / v->dims[k]) bad = 1;
    else n *= v->dims[k];
  }
  if (!bad) return 0;
  size_t o = (size_t)snprintf(why, wl, "[");
  for (int k = 0; k < v->rank && o < wl; k++) o += (size_t)snprintf(why + o, wl - o, "%s%lld", k ? "," : "", (long long)v->dims[k]);
  if (o < wl) snprintf(why + o, wl - o, "]");
  return 1;
}

int kiln_graph_plan(kiln_graph *g, kiln_error *err) {
  /* reset everything computed by an earlier plan */
  for (int i = 0; i < g->nvals; i++) {
    kiln_value *v = &g->vals[i];
    if (v->is_initializer || v->is_input) continue;
    free(v->data);
    v->data = NULL;
    v->is_const = false;
    v->rank = -1;
    v->dtype = 0;
    v->strw = 0;
  }
  for (int i = 0; i < g->ninputs; i++) {
    kiln_value *v = &g->vals[g->inputs[i]];
    if (v->rank < 0) return kiln__err(err, KILN_ESHAPE, "input '%s' has no shape: bind it with --shape %s=d0,d1,...", v->name, v->name);
    for (int k = 0; k < v->rank; k++)
      if (v->dims[k] < 0)
        return kiln__err(err, KILN_ESHAPE, "input '%s' dimension %d%s%s%s is not bound: pass --shape %s=... or an input tensor", v->name, k,
                         v->dim_param[k] ? " ('" : "", v->dim_param[k] ? v->dim_param[k] : "", v->dim_param[k] ? "')" : "", v->name);
    char sh[256];
    if (size_overflows(v, sh, sizeof sh))
      return kiln__err(err, KILN_ELIMIT, "input '%s': shape %s has too many elements (its size overflows 64 bits)", v->name, sh);
  }
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    n->folded = false;
    if (!n->op) return kiln__err(err, KILN_EUNSUPPORTED, "node '%s': op %s%s%s is not supported", n->name, *n->domain ? n->domain : "", *n->domain ? "." : "", n->op_type);
    /* Every op kiln has reads input 0 except those that take no inputs; a
     * model that omits it ("" or no inputs) is refused here once, so infer
     * functions may rely on it. */
    if (!kiln_has_in(n, 0) && strcmp(n->op_type, "Constant") != 0 && strcmp(n->op_type, "SequenceEmpty") != 0 && strcmp(n->op_type, "Optional") != 0 && strcmp(n->op_type, "OptionalHasElement") != 0 &&
        strcmp(n->op_type, "Scan") != 0 /* opset 8: sequence_lens first, optional */)
      return kiln__err(err, KILN_EPARSE, "node '%s' (%s): its first input is missing", n->name, n->op_type);
    for (int k = 0; k < n->nin; k++)
      if (n->in[k] >= 0 && g->vals[n->in[k]].rank < 0)
        return kiln__err(err, KILN_EINTERNAL, "node '%s': input '%s' has no inferred shape", n->name, g->vals[n->in[k]].name);
    /* strings exist only for the string ops; every other op sees element sizes */
    if (strcmp(n->op_type, "StringNormalizer") != 0)
      for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && g->vals[n->in[k]].dtype == KILN_DT_STRING)
          return kiln__err(err, KILN_EUNSUPPORTED, "node '%s' (%s): string tensors are not supported by this op", n->name, n->op_type);
    int rc = n->op->infer(g, n, err);
    if (rc) {
      if (err && !strstr(err->msg, n->name)) {
        char m[1024];
        snprintf(m, sizeof m, "node '%s' (%s): %s", n->name, n->op_type, err->msg);
        snprintf(err->msg, sizeof err->msg, "%s", m);
      }
      return rc;
    }
    bool all_const = true, outs_const = true;
    size_t out_bytes = 0;
    for (int k = 0; k < n->nin; k++)
      if (n->in[k] >= 0 && !g->vals[n->in[k]].is_const) all_const = false;
    for (int k = 0; k < n->nout; k++) {
      if (n->out[k] < 0) continue;
      kiln_value *v = &g->vals[n->out[k]];
      if (v->dtype != KILN_DT_SEQUENCE && (v->rank < 0 || (kiln_dtype_size(v->dtype) == 0 && !(v->dtype == KILN_DT_STRING && v->strw > 0))))
        return kiln__err(err, KILN_EUNSUPPORTED, "node '%s' (%s): output '%s' has type %s, which kiln does not support", n->name, n->op_type, v->name, kiln_dtype_name(v->dtype));
      char sh[256];
      if (v->dtype != KILN_DT_SEQUENCE && size_overflows(v, sh, sizeof sh))
        return kiln__err(err, KILN_ELIMIT, "node '%s' (%s): output '%s' would have shape %s: too many elements (its size overflows 64 bits)",
                         n->name, n->op_type, v->name, sh);
      if (!v->is_const) outs_const = false;
      out_bytes += kiln_value_bytes(v);
    }
    if (outs_const) { n->folded = true; continue; } /* infer computed the outputs (Shape, Size) */
    /* Value propagation: when every input's value is known at plan time but
     * some come from inputs bound by value (not constants), the node still
     * runs on the device; its small outputs are also computed here so that
     * later shape inference can read them (Cast -> Range of a window size). */
    bool all_known = true;
    for (int k = 0; k < n->nin; k++)
      if (n->in[k] >= 0 && (!g->vals[n->in[k]].data || g->vals[n->in[k]].dtype == KILN_DT_SEQUENCE)) all_known = false;
    if (!all_const && all_known && n->nin > 0 && out_bytes <= 512 && n->op->ref) {
      bool seq = false;
      for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0 && g->vals[n->out[k]].dtype == KILN_DT_SEQUENCE) seq = true;
      kiln_error e2 = {0};
      if (!seq && kiln_node_run_ref(g, n, &e2) != 0) /* best effort: values stay unknown */
        for (int k = 0; k < n->nout; k++)
          if (n->out[k] >= 0) { free(g->vals[n->out[k]].data); g->vals[n->out[k]].data = NULL; }
      continue;
    }
    if (all_const && out_bytes <= FOLD_LIMIT && n->op->ref) {
      if ((rc = kiln_node_run_ref(g, n, err)) != 0) return rc;
      for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0) g->vals[n->out[k]].is_const = true;
      n->folded = true;
    }
  }
  return 0;
}
