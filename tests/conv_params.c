/* conv_params.c: correctness of the tunable Conv (family "conv") across its
 * algorithms and parameter space, not only at the defaults. For a spread of
 * shapes (edge tiles, odd sizes, N > 1, strides, asymmetric pads, dilations,
 * groups, depthwise, 1x1 with and without stride, 3x3 stride 1 for
 * Winograd, 1-D and 3-D, bias or not, constant or computed weights, float
 * and double) each node runs on the device with forced parameter vectors
 * (the tuner's override, kiln_exec.ov_params): every solver of the conv
 * family's registry (kernels/conv.c) that applies to the shape, each with
 * every value of the parameters it reads, and is compared with
 * the CPU reference: max |dev - ref| <= 1e-4 * max |ref| + 1e-5. The node's
 * state is kept between vectors, as in a tuning run, so repacking of the
 * weights is exercised too. Exit 0 = pass, 1 = fail, 77 = skipped. */
#include "kiln_internal.h"
#include "cl_defaults.h"
#include "conv.h"
#include <math.h>

#define SKIP 77

static kiln_device *dev;
static uint64_t rng = 0x5eed;
static int fails, runs;

#include "test_rng.h"

/* Sample k of solver `algo` (kernels/conv.c's registry): every parameter
 * the solver reads takes its k-th value (cyclically), the others keep their
 * defaults. k runs to the longest value list among the parameters read, so
 * every value of every parameter of every solver is run at least once
 * where the solver applies. 0 when k is past the solver's samples. */
static int solver_sample(const kiln_tunable *t, int algo, int k, int *p) {
  const kiln_conv_solver *s = &kiln_conv_solvers[algo];
  int longest = 1;
  for (int j = 1; j < t->nparams; j++)
    if (s->uses >> j & 1 && t->params[j].nvals > longest) longest = t->params[j].nvals;
  if (k >= longest) return 0;
  for (int j = 0; j < t->nparams; j++) p[j] = t->params[j].dflt;
  p[CP_ALGO] = algo;
  for (int j = 1; j < t->nparams; j++)
    if (s->uses >> j & 1) p[j] = t->params[j].vals[k % t->params[j].nvals];
  return 1;
}
#define MAX_SAMPLES 16


typedef struct {
  const char *label;
  int dtype, nsp;
  int64_t n, c, m, in[3], k[3];
  int64_t s[3], d[3], pads[6]; /* per spatial dim; zeros mean 1 for s and d */
  int64_t group;
  int bias, wconst;
} conv_case;

static kiln_attr AINTS(const char *nm, int cnt, const int64_t *v) {
  kiln_attr a = {0};
  a.name = (char *)nm;
  a.type = KILN_ATTR_INTS;
  a.n = cnt;
  a.ints = (int64_t *)v;
  return a;
}

/* --case LABEL (repeatable): run only the cases with one of these labels
 * (tests/oclgrind.sh runs a few small ones under Oclgrind, one per process). */
static const char *only[16];
static int nonly;
static int selected(const char *label) {
  for (int i = 0; i < nonly; i++) if (!strcmp(label, only[i])) return 1;
  return nonly == 0;
}

static void run_case(const conv_case *cc) {
  if (!selected(cc->label)) return;
  kiln_graph g = {0};
  kiln_node n = {0};
  kiln_error err = {0};
  int ns = cc->nsp;
  int64_t st[3], dl[3], pads[6];
  for (int i = 0; i < ns; i++) { st[i] = cc->s[i] ? cc->s[i] : 1; dl[i] = cc->d[i] ? cc->d[i] : 1; }
  for (int i = 0; i < 2 * ns; i++) pads[i] = cc->pads[i];
  kiln_attr attrs[4] = {AINTS("strides", ns, st), AINTS("dilations", ns, dl), AINTS("pads", 2 * ns, pads), {0}};
  attrs[3].name = "group";
  attrs[3].type = KILN_ATTR_INT;
  attrs[3].i = cc->group;
  n.name = (char *)cc->label;
  n.op_type = "Conv";
  n.domain = "";
  n.opset = 13;
  n.nin = cc->bias ? 3 : 2;
  n.nout = 1;
  int in[3], out[1];
  n.in = in;
  n.out = out;
  n.attrs = attrs;
  n.nattr = 4;
  n.op = kiln_op_lookup("", "Conv");
  const char *names[3] = {"x", "w", "b"};
  for (int i = 0; i < n.nin; i++) {
    in[i] = kiln_graph_add_value(&g, names[i]);
    kiln_value *v = &g.vals[in[i]];
    v->dtype = cc->dtype;
    if (i == 0) {
      v->rank = 2 + ns;
      v->dims[0] = cc->n;
      v->dims[1] = cc->c;
      for (int a = 0; a < ns; a++) v->dims[2 + a] = cc->in[a];
    } else if (i == 1) {
      v->rank = 2 + ns;
      v->dims[0] = cc->m;
      v->dims[1] = cc->c / cc->group;
      for (int a = 0; a < ns; a++) v->dims[2 + a] = cc->k[a];
      v->is_const = cc->wconst;
    } else {
      v->rank = 1;
      v->dims[0] = cc->m;
      v->is_const = 1;
    }
    int64_t ne = kiln_value_numel(v);
    v->data = malloc(kiln_value_bytes(v) + 8);
    for (int64_t k = 0; k < ne; k++) kiln_store_f(v->data, v->dtype, k, unif());
  }
  out[0] = kiln_graph_add_value(&g, "y");
  void **host = calloc((size_t)g.nvals, sizeof(void *));
  void *got = NULL, *poison = NULL;
  int tested = 0, bad = 0, algos = 0;
  if (n.op->infer(&g, &n, &err) || n.op->dev_check(&g, &n, &err) || kiln_node_run_ref_host(&g, &n, host, &err)) {
    printf("FAIL %-34s setup: %s\n", cc->label, err.msg);
    fails++;
    goto done;
  }
  /* a non-constant weight keeps its host copy only for the reference */
  for (int i = 0; i < g.nvals; i++) {
    kiln_value *v = &g.vals[i];
    size_t b = kiln_value_bytes(v);
    v->buf = kiln_cl_alloc(dev, b ? b : 16, &err);
    if (v->data && b) kiln_cl_write(dev, v->buf, v->data, b, &err);
  }
  clFinish(dev->q);
  if (!cc->wconst) { free(g.vals[in[1]].data); g.vals[in[1]].data = NULL; }
  kiln_tunable t;
  if (!n.op->tunable || n.op->tunable(&g, &n, &t)) { printf("FAIL %-34s no tunable descriptor\n", cc->label); fails++; goto done; }
  if (cl_defaults_check(&t, cc->label)) fails++;
  int dflt[KILN_MAX_KPARAMS];
  for (int i = 0; i < t.nparams; i++) dflt[i] = t.params[i].dflt;
  if (t.valid(&t, dflt, &dev->info)) { printf("FAIL %-34s defaults are not valid\n", cc->label); fails++; goto done; }
  kiln_value *y = &g.vals[out[0]];
  size_t yb = kiln_value_bytes(y);
  int64_t ne = kiln_value_numel(y);
  got = malloc(yb + 8);
  poison = malloc(yb + 8);
  memset(poison, 0x7f, yb + 8);
  unsigned seen = 0;
  for (int vi = -1; vi < kiln_conv_nsolvers * MAX_SAMPLES; vi++) {
    int p[KILN_MAX_KPARAMS];
    if (vi < 0) memcpy(p, dflt, sizeof p);
    else if (!solver_sample(&t, vi / MAX_SAMPLES, vi % MAX_SAMPLES, p)) continue;
    /* hard constraints only: widen the sizes the soft pruning looks at
     * (dims M, P and Winograd tiles, see kernels/conv.c CD_*) so edge tiles
     * wider than the output get tested */
    kiln_tunable tb = t;
    tb.dims[1] = tb.dims[3] = tb.dims[6] = 4096;
    if (t.valid(&tb, p, &dev->info)) continue;
    seen |= 1u << p[CP_ALGO];
    if (yb) kiln_cl_write(dev, y->buf, poison, yb, &err);
    kiln_exec x = {.d = dev, .g = &g, .ov_node = 0, .ov_params = p};
    char ps[256];
    kiln_tunable_str(&t, p, ps, sizeof ps);
    runs++;
    tested++;
    if (n.op->dev(&x, &n, &err) || (yb && kiln_cl_read(dev, y->buf, got, yb, &err))) {
      printf("FAIL %-34s %s: %s\n", cc->label, ps, err.msg);
      memset(&err, 0, sizeof err);
      bad++;
      continue;
    }
    clFinish(dev->q);
    double maxref = 0, maxdiff = 0;
    int64_t at = -1;
    for (int64_t k = 0; k < ne; k++) {
      double r = kiln_load_f(host[out[0]], y->dtype, k), d = kiln_load_f(got, y->dtype, k);
      if (fabs(r) > maxref) maxref = fabs(r);
      double e = isfinite(d) ? fabs(d - r) : INFINITY;
      if (!(e <= maxdiff)) { maxdiff = e; at = k; }
    }
    if (!(maxdiff <= 1e-4 * maxref + 1e-5)) {
      printf("FAIL %-34s %s: max err %.3g at %lld (max |ref| %.3g)\n", cc->label, ps, maxdiff, (long long)at, maxref);
      bad++;
    }
  }
  for (int a = 0; a < kiln_conv_nsolvers; a++) algos += seen >> a & 1;
  if (bad) fails++;
  printf("%s %-34s %d parameter vectors, %d algorithms\n", bad ? "FAIL" : "ok  ", cc->label, tested, algos);
done:
  free(got);
  free(poison);
  for (int i = 0; i < g.nvals; i++) {
    free(host[i]);
    free(g.vals[i].data);
    if (g.vals[i].buf) clReleaseMemObject(g.vals[i].buf);
    free(g.vals[i].name);
  }
  for (int k = 0; k < 4; k++) {
    if (n.param[k]) clReleaseMemObject(n.param[k]);
    if (n.scratch[k]) clReleaseMemObject(n.scratch[k]);
  }
  free(n.state);
  free(host);
  free(g.vals);
}

int main(int argc, char **argv) {
  kiln_error err = {0};
  const char *devsel = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--device")) devsel = argv[i + 1];
    else if (!strcmp(argv[i], "--case") && nonly < 16) only[nonly++] = argv[i + 1];
    else { fprintf(stderr, "usage: %s [--device SEL] [--case LABEL]...\n", argv[0]); return 2; }
  }
  if (kiln_device_open(devsel, &dev, &err)) {
    printf("skipped: %s\n", err.msg);
    return SKIP;
  }
  kiln_options env; /* KILN_CACHE_DIR and the rest, as the kiln command reads them */
  if (kiln_options_from_env(&env, &err) || kiln_device_set_options(dev, &env, &err)) { printf("FAIL: %s\n", err.msg); return 1; }
  const int F = KILN_DT_FLOAT, D = KILN_DT_DOUBLE;
  /* label, dtype, nsp, N, C, M, in, k, strides, dilations, pads, group, bias, wconst */
  const conv_case cases[] = {
    {"3x3 s1 p1 edge tiles", F, 2, 1, 3, 5, {9, 11}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"3x3 s1 p0 N=2 no bias", F, 2, 2, 8, 12, {7, 13}, {3, 3}, {0}, {0}, {0}, 1, 0, 1},
    {"3x3 s1 p1 C=32 M=40", F, 2, 1, 32, 40, {20, 19}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"3x3 s2 p1", F, 2, 1, 6, 10, {10, 10}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"3x3 dil 2 p2", F, 2, 1, 4, 6, {9, 9}, {3, 3}, {0}, {2, 2}, {2, 2, 2, 2}, 1, 1, 1},
    {"1x1 s1", F, 2, 1, 8, 9, {11, 7}, {1, 1}, {0}, {0}, {0}, 1, 1, 1},
    {"1x1 s1 N=3 no bias", F, 2, 3, 17, 33, {5, 5}, {1, 1}, {0}, {0}, {0}, 1, 0, 1},
    {"1x1 s2", F, 2, 1, 16, 20, {9, 9}, {1, 1}, {2, 2}, {0}, {0}, 1, 1, 1},
    {"1x1 s2x3 grouped", F, 2, 2, 12, 8, {10, 11}, {1, 1}, {2, 3}, {0}, {0}, 4, 1, 1},
    {"3x3 group 2 p1", F, 2, 1, 8, 6, {8, 8}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 2, 1, 1},
    {"depthwise 3x3 s1 p1", F, 2, 1, 12, 12, {15, 13}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 12, 1, 1},
    {"depthwise 3x3 s2 p1 N=2", F, 2, 2, 7, 7, {14, 9}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 7, 0, 1},
    {"7x7 s2 p3", F, 2, 1, 3, 8, {23, 23}, {7, 7}, {2, 2}, {0}, {3, 3, 3, 3}, 1, 1, 1},
    {"2x3 asymmetric pads", F, 2, 1, 5, 7, {8, 10}, {2, 3}, {0}, {0}, {0, 1, 1, 2}, 1, 1, 1},
    {"1x1 C=1 M=1 1x1 image", F, 2, 1, 1, 1, {1, 1}, {1, 1}, {0}, {0}, {0}, 1, 1, 1},
    {"3x3 s1 p1 C=1 M=1", F, 2, 1, 1, 1, {5, 6}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 0, 1},
    {"1-D k3 s1 p1", F, 1, 2, 4, 6, {20}, {3}, {0}, {0}, {1, 1}, 1, 1, 1},
    {"3-D 2x2x2", F, 3, 1, 2, 3, {4, 5, 6}, {2, 2, 2}, {0}, {0}, {0}, 1, 1, 1},
    {"3x3 s1 p1 computed weights", F, 2, 1, 6, 10, {9, 9}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 0},
    {"3x3 s2 M=2 computed weights", F, 2, 1, 3, 2, {8, 9}, {3, 3}, {2, 2}, {0}, {1, 0, 1, 1}, 1, 0, 0},
    {"1x1 C=8 M=1", F, 2, 1, 8, 1, {6, 7}, {1, 1}, {0}, {0}, {0}, 1, 1, 1},
    {"3x3 s1 C=4 M=1 wide", F, 2, 1, 4, 1, {3, 40}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"double 3x3 s1 p1", D, 2, 1, 5, 7, {9, 8}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"double 1x1 s2", D, 2, 1, 6, 5, {7, 7}, {1, 1}, {2, 2}, {0}, {0}, 1, 0, 1},
  };
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    if (cases[i].dtype == D && !dev->has_fp64) continue;
    run_case(&cases[i]);
  }
  printf("%d parameter vectors run, %d cases failed\n", runs, fails);
  kiln_device_close(dev);
  return fails ? 1 : 0;
}
