/* norm_pattern_test.c: the plan-time rewrite of decomposed LayerNorm and
 * RMSNorm into LayerNormalization (runtime/passes.c fuse_decomposed_norm)
 * against the CPU reference of the unfused graph.
 *
 * Small graphs built in memory as torch exports them (LayerNorm below opset
 * 17: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div; RMSNorm: Pow 2
 * or Mul(x, x), ReduceMean, Add eps, Sqrt, Div or Reciprocal + Mul; each
 * with and without Mul(gamma) / Add(beta), axes as attribute or input, over
 * one or two trailing axes, rows few (work-group kernel) or many (a
 * work-item per row, vector loads with a tail)) run through a session with
 * fusion on: the test checks how many LayerNormalization nodes and "pattern"
 * decisions the plan has, and compares the session's output with the
 * reference of the unfused graph: max |dev - ref| <= 1e-4 * max |ref| + 1e-5.
 * Graphs that must NOT be rewritten (variance over a leading axis, a
 * non-constant exponent or one other than 2, keepdims 0, an inner value read elsewhere,
 * fusion off) keep their nodes and still match.
 * Exit 0 = pass, 1 = fail, 77 = skipped (no device). */
#include "kiln_internal.h"
#include <math.h>

#define SKIP 77

static kiln_device *dev;
static uint64_t rng = 0x1a7e;
static int fails, runs;

#include "test_rng.h"
#include "test_graph.h"

/* ---- graphs on the heap (the rewrite frees and reallocates nodes) ---- */

/* An int64 constant of n values. */
static int gints(kiln_graph *g, const char *name, int n, const int64_t *vals) {
  int v = kiln_graph_add_value(g, name);
  kiln_value *x = &g->vals[v];
  x->dtype = KILN_DT_INT64;
  x->rank = 1;
  x->dims[0] = n;
  x->data = malloc(sizeof(int64_t) * (size_t)n);
  memcpy(x->data, vals, sizeof(int64_t) * (size_t)n);
  x->is_const = x->is_initializer = true;
  return v;
}


/* ReduceMean over the last nax axes, keepdims 1: axes as attribute (opset <
 * 18) or as a constant input (opset 18); `lead` takes axis 0 instead. */
static int gmean(kiln_graph *g, int x, int nax, bool lead) {
  int64_t ax[2] = {-nax, -1};
  if (lead) ax[0] = 0;
  if (g->opset >= 18) {
    int in[2] = {x, gints(g, "axes", nax, ax)};
    return gnode(g, "ReduceMean", 2, in, NULL, 0, NULL);
  }
  return gnode(g, "ReduceMean", 1, &x, "axes", nax, ax);
}

/* ---- the patterns ---- */

enum {
  P_RMS = 1,        /* RMSNorm (no mean subtracted) */
  P_GAMMA = 2,      /* Mul(gamma) after */
  P_BETA = 4,       /* Add(beta) after */
  P_MULSQ = 8,      /* the square as Mul(d, d) */
  P_RECIP = 16,     /* Reciprocal(Sqrt) then Mul */
  P_LEADVAR = 32,   /* (must not rewrite) the variance over axis 0 */
  P_EXP_INPUT = 64, /* (must not rewrite) the exponent a graph input */
  P_EXP4 = 128,     /* (must not rewrite) exponent 4 */
  P_KEEP0 = 256,    /* (must not rewrite) variance ReduceMean with keepdims 0 and a Reshape */
  P_ESCAPE = 512,   /* (must not rewrite) the variance is also a graph output */
};

/* x [dims] normalized over the last nax axes (gamma/beta of those dims). */
static kiln_graph *norm_graph(int opset, int rank, const int64_t *dims, int nax, int flags, int *y) {
  kiln_graph *g = gnew_opset(opset);
  int x = gvalue(g, "x", rank, dims, false, 2, 0.5), d = x;
  if (!(flags & P_RMS)) d = g2(g, "Sub", x, gmean(g, x, nax, false));
  int e = (flags & P_EXP_INPUT) ? gvalue(g, "e", 0, NULL, false, 0, 2) : gscalar(g, "two", (flags & P_EXP4) ? 4.0f : 2.0f);
  int p = (flags & P_MULSQ) ? g2(g, "Mul", d, d) : g2(g, "Pow", d, e);
  int v = gmean(g, p, nax, flags & P_LEADVAR);
  if (flags & P_KEEP0) { /* keepdims 0 + Unsqueeze-free Reshape back */
    kiln_node *rn = &g->nodes[g->vals[v].producer];
    rn->attrs = realloc(rn->attrs, sizeof(kiln_attr) * (size_t)(rn->nattr + 1));
    memset(&rn->attrs[rn->nattr], 0, sizeof(kiln_attr));
    rn->attrs[rn->nattr].name = strdup("keepdims");
    rn->attrs[rn->nattr].type = KILN_ATTR_INT;
    rn->nattr++;
    int64_t sh[KILN_MAX_RANK];
    for (int i = 0; i < rank; i++) sh[i] = i < rank - nax ? dims[i] : 1;
    int shv = gints(g, "shape", rank, sh);
    v = g2(g, "Reshape", v, shv);
  }
  if (flags & P_ESCAPE) goutput(g, v);
  int s = g1(g, "Sqrt", g2(g, "Add", v, gscalar(g, "eps", 1e-5f)));
  int n = (flags & P_RECIP) ? g2(g, "Mul", d, g1(g, "Reciprocal", s)) : g2(g, "Div", d, s);
  int64_t pd[KILN_MAX_RANK];
  for (int i = 0; i < nax; i++) pd[i] = dims[rank - nax + i];
  if (flags & P_GAMMA) n = g2(g, "Mul", gvalue(g, "gamma", nax, pd, true, 1, 1), n);
  if (flags & P_BETA) n = g2(g, "Add", n, gvalue(g, "beta", nax, pd, true, 1, 0));
  *y = n;
  goutput(g, n);
  return g;
}

static double max_err(const float *ref, const float *got, int64_t ne, double *maxref) {
  double e = 0;
  *maxref = 0;
  for (int64_t k = 0; k < ne; k++) {
    double r = ref[k], d = got[k];
    if (fabs(r) > *maxref) *maxref = fabs(r);
    double x = isnan(d) && isnan(r) ? 0 : isfinite(d) ? fabs(d - r) : INFINITY;
    if (!(x <= e)) e = x;
  }
  return e;
}

/* Runs graph g (output value y) in a session with fusion on or off; checks
 * want LayerNormalization nodes and "pattern" decisions naming a decomposed
 * norm, and the output against the unfused reference. */
static void run_case(const char *label, kiln_graph *g, int y, bool fusion, int want) {
  kiln_model *m = calloc(1, sizeof *m);
  m->g = g;
  kiln_session *s = NULL;
  kiln_tensor **ins = calloc((size_t)g->ninputs + 1, sizeof *ins);
  void **host = calloc((size_t)g->nvals + 1, sizeof(void *));
  float *ref = NULL;
  int bad = 0, nodes_before = g->nnodes;
  if (tg_ref_and_run(g, m, dev, y, fusion, label, host, ins, &ref, &s)) { fails++; goto done; }
  int64_t ne = kiln_value_numel(&g->vals[y]);
  int nln = 0, ndec = 0;
  for (int i = 0; i < g->nnodes; i++) nln += !strcmp(g->nodes[i].op_type, "LayerNormalization");
  kiln_fusion_info *f = NULL;
  int nf = 0;
  if (kiln_session_fusion(s, &f, &nf) == 0)
    for (int i = 0; i < nf; i++) ndec += !strcmp(f[i].kind, "pattern") && f[i].fused && strstr(f[i].reason, "decomposed");
  free(f);
  if (nln != want || ndec != want) {
    printf("FAIL %-56s %d LayerNormalization nodes, %d pattern decisions; expected %d (nodes %d -> %d)\n", label, nln, ndec, want, nodes_before, g->nnodes);
    bad++;
  }
  /* the graph's last output is y (P_ESCAPE adds the variance first) */
  const kiln_tensor *out = kiln_session_output(s, g->noutputs - 1);
  double mr, e = max_err(ref, (const float *)out->data, ne, &mr);
  runs++;
  if (!(e <= 1e-4 * mr + 1e-5)) { printf("FAIL %-56s max err %.3g (max |ref| %.3g)\n", label, e, mr); bad++; }
  if (bad) fails++;
  printf("%s %-56s %d -> %d nodes, err %.2g\n", bad ? "FAIL" : "ok  ", label, nodes_before, g->nnodes, mr > 0 ? e / mr : e);
done:
  for (int i = 0; i < g->ninputs; i++) kiln_tensor_free(ins[i]);
  free(ins);
  for (int i = 0; host && i < g->nvals; i++) free(host[i]);
  free(host);
  free(ref);
  kiln_session_free(s);
  kiln_model_free(m);
}

static void pattern(const char *label, int opset, int rank, const int64_t *dims, int nax, int flags, bool fusion, int want) {
  int y;
  kiln_graph *g = norm_graph(opset, rank, dims, nax, flags, &y);
  run_case(label, g, y, fusion, want);
}

int main(int argc, char **argv) {
  kiln_error err = {0};
  if (kiln_device_open(argc > 2 && !strcmp(argv[1], "--device") ? argv[2] : NULL, &dev, &err)) {
    printf("skipped: %s\n", err.msg);
    return SKIP;
  }
  const int64_t few[3] = {2, 7, 33}, many[3] = {4, 40, 37}, big[3] = {2, 96, 64}, two[4] = {3, 5, 6, 11};
  /* rewritten */
  pattern("LayerNorm + gamma + beta, 14 rows of 33", 13, 3, few, 1, P_GAMMA | P_BETA, true, 1);
  pattern("LayerNorm + gamma + beta, 160 rows of 37", 13, 3, many, 1, P_GAMMA | P_BETA, true, 1);
  pattern("LayerNorm, no gamma/beta, 160 rows of 37", 13, 3, many, 1, 0, true, 1);
  pattern("LayerNorm + gamma, Mul(d, d)", 13, 3, few, 1, P_GAMMA | P_MULSQ, true, 1);
  pattern("LayerNorm + beta only, 192 rows of 64", 13, 3, big, 1, P_BETA, true, 1);
  pattern("LayerNorm over the last 2 axes + gamma + beta", 13, 4, two, 2, P_GAMMA | P_BETA, true, 1);
  pattern("LayerNorm, opset 18 axes input", 18, 3, many, 1, P_GAMMA | P_BETA, true, 1);
  pattern("RMSNorm Div + gamma, 14 rows", 13, 3, few, 1, P_RMS | P_GAMMA, true, 1);
  pattern("RMSNorm Reciprocal + Mul + gamma, 160 rows", 13, 3, many, 1, P_RMS | P_RECIP | P_GAMMA, true, 1);
  pattern("RMSNorm Mul(x, x), no gamma, 192 rows", 13, 3, big, 1, P_RMS | P_MULSQ, true, 1);
  pattern("RMSNorm over the last 2 axes, opset 18", 18, 4, two, 2, P_RMS | P_GAMMA, true, 1);
  /* not rewritten */
  pattern("fusion off", 13, 3, many, 1, P_GAMMA | P_BETA, false, 0);
  pattern("variance over axis 0 (not trailing)", 13, 3, few, 1, P_LEADVAR, true, 0);
  pattern("exponent a graph input", 13, 3, few, 1, P_EXP_INPUT, true, 0);
  pattern("exponent 4", 13, 3, few, 1, P_EXP4 | P_GAMMA, true, 0);
  pattern("variance keepdims 0 + Reshape", 13, 3, few, 1, P_KEEP0, true, 0);
  pattern("variance also a graph output", 13, 3, many, 1, P_ESCAPE | P_GAMMA, true, 0);
  printf("%d runs compared, %d cases failed\n", runs, fails);
  kiln_device_close(dev);
  return fails ? 1 : 0;
}
