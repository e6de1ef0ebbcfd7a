/* test_graph.h: building small graphs node by node in the C tests
 * (attention_test.c, norm_pattern_test.c). Include after kiln_internal.h
 * and test_rng.h (input values are random). */
#ifndef KILN_TESTS_TEST_GRAPH_H
#define KILN_TESTS_TEST_GRAPH_H

/* An empty graph on the heap (a rewrite frees and reallocates its nodes). */
static kiln_graph *gnew_opset(int opset) {
  kiln_graph *g = calloc(1, sizeof *g);
  g->opset = opset;
  g->ir_version = 8;
  return g;
}

/* A float input (random in [-amp, amp] + shift) or constant value. */
static int gvalue(kiln_graph *g, const char *name, int rank, const int64_t *dims, bool is_const, double amp, double shift) {
  int v = kiln_graph_add_value(g, name);
  kiln_value *x = &g->vals[v];
  x->dtype = KILN_DT_FLOAT;
  x->rank = rank;
  memcpy(x->dims, dims, sizeof(int64_t) * (size_t)rank);
  int64_t ne = kiln_value_numel(x);
  x->data = malloc(sizeof(float) * (size_t)(ne ? ne : 1));
  for (int64_t k = 0; k < ne; k++) ((float *)x->data)[k] = (float)(amp * unif() + shift);
  if (is_const) x->is_const = x->is_initializer = true;
  else {
    x->is_input = true;
    g->inputs = realloc(g->inputs, sizeof(int) * (size_t)(g->ninputs + 1));
    g->inputs[g->ninputs++] = v;
  }
  return v;
}

static int gscalar(kiln_graph *g, const char *name, float f) {
  int v = gvalue(g, name, 0, NULL, true, 0, 0);
  ((float *)g->vals[v].data)[0] = f;
  return v;
}

static void goutput(kiln_graph *g, int v) {
  g->vals[v].is_output = true;
  g->outputs = realloc(g->outputs, sizeof(int) * (size_t)(g->noutputs + 1));
  g->outputs[g->noutputs++] = v;
}

/* Node op(in...) with an optional INTS attribute (na >= 0 values) or INT
 * attribute (na < 0: ints[0]); returns its output value. */
static int gnode(kiln_graph *g, const char *op, int nin, const int *in, const char *aname, int na, const int64_t *ints) {
  if (g->nnodes == g->capnodes) {
    g->capnodes = g->capnodes ? 2 * g->capnodes : 16;
    g->nodes = realloc(g->nodes, sizeof(kiln_node) * (size_t)g->capnodes);
  }
  int i = g->nnodes++;
  kiln_node *n = &g->nodes[i];
  memset(n, 0, sizeof *n);
  char nm[64];
  snprintf(nm, sizeof nm, "n%d_%s", i, op);
  n->name = strdup(nm);
  n->op_type = strdup(op);
  n->domain = strdup("");
  n->opset = g->opset;
  n->nin = nin;
  n->in = malloc(sizeof(int) * (size_t)(nin + 1));
  memcpy(n->in, in, sizeof(int) * (size_t)nin);
  n->nout = 1;
  n->out = malloc(sizeof(int));
  n->fuse_root = -1;
  n->op = kiln_op_lookup("", op);
  if (aname) {
    n->attrs = calloc(1, sizeof(kiln_attr));
    n->nattr = 1;
    n->attrs[0].name = strdup(aname);
    if (na < 0) { n->attrs[0].type = KILN_ATTR_INT; n->attrs[0].i = ints[0]; }
    else {
      n->attrs[0].type = KILN_ATTR_INTS;
      n->attrs[0].n = na;
      n->attrs[0].ints = malloc(sizeof(int64_t) * (size_t)na);
      memcpy(n->attrs[0].ints, ints, sizeof(int64_t) * (size_t)na);
    }
  }
  char vn[64];
  snprintf(vn, sizeof vn, "v%d_%s", i, op);
  n->out[0] = kiln_graph_add_value(g, vn);
  g->vals[n->out[0]].producer = i;
  return n->out[0];
}
static int g1(kiln_graph *g, const char *op, int a) { return gnode(g, op, 1, &a, NULL, 0, NULL); }
static int g2(kiln_graph *g, const char *op, int a, int b) {
  int in[2] = {a, b};
  return gnode(g, op, 2, in, NULL, 0, NULL);
}

/* The CPU reference of graph g (every node's reference in order; values in
 * host[]), value y copied into a new block *ref; then a session on dev with
 * fusion on or off, its inputs set from the graph's input values (tensors
 * into ins[]) and run once. 0, or 1 after printing "FAIL label stage: why". */
static int tg_ref_and_run(kiln_graph *g, kiln_model *m, kiln_device *dev, int y, bool fusion, const char *label, void **host, kiln_tensor **ins,
                          float **ref, kiln_session **s) {
  kiln_error err = {0};
  const char *stage = "reference";
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->op->infer(g, n, &err) || kiln_node_run_ref_host(g, n, host, &err)) goto fail;
  }
  size_t yb = sizeof(float) * (size_t)kiln_value_numel(&g->vals[y]);
  if (!(*ref = malloc(yb + 4))) { snprintf(err.msg, sizeof err.msg, "out of memory"); goto fail; }
  memcpy(*ref, host[y], yb);
  for (int i = 0; i < g->ninputs; i++) {
    kiln_value *v = &g->vals[g->inputs[i]];
    ins[i] = kiln_tensor_new(v->dtype, v->rank, v->dims);
    memcpy(ins[i]->data, v->data, kiln_value_bytes(v));
  }
  stage = "session";
  if (kiln_session_create(m, dev, s, &err)) goto fail;
  kiln_session_set_fusion(*s, fusion);
  stage = "input";
  for (int i = 0; i < g->ninputs; i++)
    if (kiln_session_set_input(*s, g->vals[g->inputs[i]].name, ins[i], &err)) goto fail;
  stage = "run";
  if (kiln_session_run(*s, &err)) goto fail;
  return 0;
fail:
  printf("FAIL %-48s %s: %s\n", label, stage, err.msg);
  return 1;
}
#endif
