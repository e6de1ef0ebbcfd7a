/* se_pattern_test.c: the plan-time rewrite of a squeeze-excite block's
 * Mul(x, gate) into the 1x1 Conv that reads it (runtime/passes.c
 * fuse_conv_xscale: the Conv scales its input per image and channel in
 * kernels/conv.cl conv_pw) against the CPU reference of the unfused graph.
 *
 * Graphs built in memory as torchvision exports EfficientNet's blocks:
 * GlobalAveragePool(x) -> Conv 1x1 -> SiLU (Mul(h, Sigmoid(h))) -> Conv 1x1
 * -> Sigmoid = s, Mul(x, s) -> Conv (the projection), batch 1 and 2, the
 * Mul's operands either way round, with and without the projection's bias;
 * run through a session with fusion on, the test checks how many "pattern"
 * decisions name the squeeze-excite scale and that the Mul is gone, and
 * compares the output with the reference: max |dev - ref| <= 1e-4 * max
 * |ref| + 1e-5. Graphs that must NOT be rewritten (the Mul's output also a
 * graph output, a 3x3 projection, fusion off) keep the Mul and still match.
 * Exit 0 = pass, 1 = fail, 77 = skipped (no device). */
#include "kiln_internal.h"
#include <math.h>

#define SKIP 77

static kiln_device *dev;
static uint64_t rng = 0x5e5e;
static int fails, runs;

#include "test_rng.h"
#include "test_graph.h"

enum { SE_SWAP = 1, SE_ESCAPE = 2, SE_K3 = 4, SE_NOBIAS = 8 };

/* Conv(x, w [m, c, k, k], b [m]) with pads k/2 (k = 1: no attribute). */
static int gconv(kiln_graph *g, int x, int64_t c, int64_t m, int64_t k, bool bias) {
  int64_t wd[4] = {m, c, k, k}, bd[1] = {m}, pads[4] = {k / 2, k / 2, k / 2, k / 2};
  char wn[32], bn[32]; /* value names are unique */
  snprintf(wn, sizeof wn, "w%d", g->nvals);
  snprintf(bn, sizeof bn, "b%d", g->nvals);
  int in[3] = {x, gvalue(g, wn, 4, wd, true, 1, 0), bias ? gvalue(g, bn, 1, bd, true, 0.5, 0) : -1};
  return gnode(g, "Conv", bias ? 3 : 2, in, k > 1 ? "pads" : NULL, 4, pads);
}

static kiln_graph *se_graph(int64_t n, int64_t c, int64_t hw, int64_t m, int flags, int *y) {
  kiln_graph *g = gnew_opset(13);
  int64_t xd[4] = {n, c, hw, hw + 3};
  int x = gvalue(g, "x", 4, xd, false, 2, 0);
  int h = gconv(g, g1(g, "GlobalAveragePool", x), c, c / 4, 1, true);
  h = g2(g, "Mul", h, g1(g, "Sigmoid", h));
  int s = g1(g, "Sigmoid", gconv(g, h, c / 4, c, 1, true));
  int ms = flags & SE_SWAP ? g2(g, "Mul", s, x) : g2(g, "Mul", x, s);
  if (flags & SE_ESCAPE) goutput(g, ms);
  *y = gconv(g, ms, c, m, flags & SE_K3 ? 3 : 1, !(flags & SE_NOBIAS));
  goutput(g, *y);
  return g;
}

static double max_err(const float *ref, const float *got, int64_t ne, double *maxref) {
  double e = 0;
  *maxref = 0;
  for (int64_t k = 0; k < ne; k++) {
    double r = ref[k], d = got[k];
    if (fabs(r) > *maxref) *maxref = fabs(r);
    double x = isfinite(d) ? fabs(d - r) : INFINITY;
    if (!(x <= e)) e = x;
  }
  return e;
}

/* Runs graph g (output y) with fusion on or off; checks want rewrites (the
 * pattern decisions and the Mul nodes gone) and the output. */
static void run_case(const char *label, kiln_graph *g, int y, bool fusion, int want) {
  kiln_model *m = calloc(1, sizeof *m);
  m->g = g;
  kiln_session *s = NULL;
  kiln_tensor **ins = calloc((size_t)g->ninputs + 1, sizeof *ins);
  void **host = calloc((size_t)g->nvals + 1, sizeof(void *));
  float *ref = NULL;
  int bad = 0, nodes_before = g->nnodes, muls_before = 0, muls = 0, ndec = 0;
  for (int i = 0; i < g->nnodes; i++) muls_before += !strcmp(g->nodes[i].op_type, "Mul");
  if (tg_ref_and_run(g, m, dev, y, fusion, label, host, ins, &ref, &s)) { fails++; goto done; }
  for (int i = 0; i < g->nnodes; i++) muls += !strcmp(g->nodes[i].op_type, "Mul");
  kiln_fusion_info *f = NULL;
  int nf = 0;
  if (kiln_session_fusion(s, &f, &nf) == 0)
    for (int i = 0; i < nf; i++) ndec += !strcmp(f[i].kind, "pattern") && f[i].fused && strstr(f[i].reason, "squeeze-excite");
  free(f);
  if (ndec != want || muls_before - muls != want) {
    printf("FAIL %-48s %d pattern decisions, %d Mul nodes removed; expected %d\n", label, ndec, muls_before - muls, want);
    bad++;
  }
  const kiln_tensor *out = kiln_session_output(s, g->noutputs - 1);
  double mr, e = max_err(ref, (const float *)out->data, kiln_value_numel(&g->vals[y]), &mr);
  runs++;
  if (!(e <= 1e-4 * mr + 1e-5)) { printf("FAIL %-48s max err %.3g (max |ref| %.3g)\n", label, e, mr); bad++; }
  if (bad) fails++;
  printf("%s %-48s %d -> %d nodes, err %.2g\n", bad ? "FAIL" : "ok  ", label, nodes_before, g->nnodes, mr > 0 ? e / mr : e);
done:
  for (int i = 0; i < g->ninputs; i++) kiln_tensor_free(ins[i]);
  free(ins);
  for (int i = 0; host && i < g->nvals; i++) free(host[i]);
  free(host);
  free(ref);
  kiln_session_free(s);
  kiln_model_free(m);
}

static void se(const char *label, int64_t n, int64_t c, int64_t hw, int64_t m, int flags, bool fusion, int want) {
  int y;
  kiln_graph *g = se_graph(n, c, hw, m, flags, &y);
  run_case(label, g, y, fusion, want);
}

int main(int argc, char **argv) {
  kiln_error err = {0};
  if (kiln_device_open(argc > 2 && !strcmp(argv[1], "--device") ? argv[2] : NULL, &dev, &err)) {
    printf("skipped: %s\n", err.msg);
    return SKIP;
  }
  (void)gscalar; /* test_graph.h's, unused here */
  /* rewritten */
  se("SE 32 channels 11x14 -> 24", 1, 32, 11, 24, 0, true, 1);
  se("SE Mul(gate, x), 16 channels 6x9 -> 40, N=2", 2, 16, 6, 40, SE_SWAP, true, 1);
  se("SE 48 channels 7x10 -> 20, projection without bias", 1, 48, 7, 20, SE_NOBIAS, true, 1);
  /* not rewritten */
  se("fusion off", 1, 32, 11, 24, 0, false, 0);
  se("scaled input also a graph output", 1, 32, 11, 24, SE_ESCAPE, true, 0);
  se("3x3 projection", 1, 16, 8, 12, SE_K3, true, 0);
  printf("%d runs compared, %d cases failed\n", runs, fails);
  kiln_device_close(dev);
  return fails ? 1 : 0;
}
