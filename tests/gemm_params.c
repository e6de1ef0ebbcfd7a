/* gemm_params.c: correctness of the tunable GEMM (MatMul and Gemm, family
 * "gemm") across its parameter space, not only at the defaults. For shapes
 * with edge tiles, K = 1, M = 1, N = 1, K = 0, batch broadcasting, 1-D
 * operands, transA / transB, every bias broadcast, constant and computed B,
 * float, double and int32, each node runs on the device with forced
 * parameter vectors (the tuner's override, kiln_exec.ov_params): the
 * defaults plus a fixed sample of every kernel (tiled, panel with and
 * without work-group blocking, CLBlast; vectors pruned only for speed, like
 * the tiled kernel on CPU devices, are tested too) and is compared with the CPU
 * reference: max |dev - ref| <= 1e-4 * max |ref| + 1e-5. The node's state
 * is kept between vectors, as in a tuning run, so repacking of B is
 * exercised too. Exit 0 = pass, 1 = fail, 77 = skipped (no device). */
#include "kiln_internal.h"
#include "cl_defaults.h"
#include <math.h>

#define SKIP 77
#define NVEC 16

static kiln_device *dev;
static uint64_t rng = 0x1234567;
static int fails, runs;

#include "test_rng.h"

typedef struct { const char *name; int dtype, rank; int64_t dims[4]; int is_const; } vspec;

/* Parameter vectors shared by all cases (so each compiles once). */
static int vecs[NVEC][KILN_MAX_KPARAMS], nvecs;

/* Samples the vector set from the gemm space of a large instance: the
 * defaults, then random valid vectors until each kernel has its quota. */
static void pick_vectors(const kiln_tunable *t0) {
  kiln_tunable t = *t0;
  t.dims[0] = t.dims[1] = t.dims[2] = 4096; /* no "redundant tile" pruning */
  kiln_device_info info = dev->info;
  info.is_gpu = 1;                          /* nor the CPU pruning of kernel 0 */
  int np = t.nparams;
  for (int i = 0; i < np; i++) vecs[0][i] = t.params[i].dflt;
  nvecs = 1;
  /* quotas: KERNEL=0 SA=0/1, KERNEL=1 SA=0/1, KERNEL=2 */
  int quota[5] = {3, 2, 4, 4, 2}, got[5] = {0};
  int ik = -1, isa = -1;
  for (int i = 0; i < np; i++) {
    if (!strcmp(t.params[i].name, "KERNEL")) ik = i;
    if (!strcmp(t.params[i].name, "SA")) isa = i;
  }
  for (int tries = 0; tries < 200000 && nvecs < NVEC; tries++) {
    int p[KILN_MAX_KPARAMS];
    for (int i = 0; i < np; i++) p[i] = t.params[i].vals[next_u64() % (uint64_t)t.params[i].nvals];
    if (t.valid(&t, p, &info)) continue;
    int cls = p[ik] == 2 ? 4 : p[ik] * 2 + p[isa];
    if (got[cls] >= quota[cls]) continue;
    got[cls]++;
    memcpy(vecs[nvecs++], p, sizeof p);
  }
}

static kiln_attr AI(const char *nm, int64_t v) { kiln_attr a = {0}; a.name = (char *)nm; a.type = KILN_ATTR_INT; a.i = v; return a; }
static kiln_attr AF(const char *nm, float v) { kiln_attr a = {0}; a.name = (char *)nm; a.type = KILN_ATTR_FLOAT; a.f = v; return a; }

/* --case LABEL (repeatable): run only the cases with one of these labels
 * (tests/oclgrind.sh runs a few small ones under Oclgrind, one per process). */
static const char *only[16];
static int nonly;
static int selected(const char *label) {
  for (int i = 0; i < nonly; i++) if (!strcmp(label, only[i])) return 1;
  return nonly == 0;
}

static void run_case(const char *op, int nin, const vspec *ins, kiln_attr *attrs, int nattr, const char *label) {
  if (!selected(label)) return;
  kiln_graph g = {.dev_opt = &dev->opt}; /* the device's gemm kernels (KILN_GEMM_KERNELS) */
  kiln_node n = {0};
  kiln_error err = {0};
  n.name = (char *)label;
  n.op_type = (char *)op;
  n.domain = "";
  n.opset = 13;
  n.nin = nin;
  n.nout = 1;
  int in[4], out[1];
  n.in = in;
  n.out = out;
  n.attrs = attrs;
  n.nattr = nattr;
  n.op = kiln_op_lookup("", op);
  for (int i = 0; i < nin; i++) {
    in[i] = kiln_graph_add_value(&g, ins[i].name);
    kiln_value *v = &g.vals[in[i]];
    v->dtype = ins[i].dtype;
    v->rank = ins[i].rank;
    memcpy(v->dims, ins[i].dims, sizeof ins[i].dims);
    v->is_const = ins[i].is_const;
    int64_t ne = kiln_value_numel(v);
    v->data = malloc(kiln_value_bytes(v) + 8);
    for (int64_t k = 0; k < ne; k++) {
      if (kiln_dtype_is_float(v->dtype)) kiln_store_f(v->data, v->dtype, k, unif());
      else kiln_store_i(v->data, v->dtype, k, (int64_t)(unif() * 10));
    }
  }
  out[0] = kiln_graph_add_value(&g, "y");
  void **host = calloc((size_t)g.nvals, sizeof(void *));
  void *got = NULL, *poison = NULL;
  if (n.op->infer(&g, &n, &err) || n.op->dev_check(&g, &n, &err) || kiln_node_run_ref_host(&g, &n, host, &err)) {
    printf("FAIL %-32s setup: %s\n", label, err.msg);
    fails++;
    goto done;
  }
  for (int i = 0; i < g.nvals; i++) {
    kiln_value *v = &g.vals[i];
    size_t b = kiln_value_bytes(v);
    v->buf = kiln_cl_alloc(dev, b ? b : 16, &err);
    if (v->data && b) kiln_cl_write(dev, v->buf, v->data, b, &err);
  }
  kiln_tunable t;
  if (n.op->tunable(&g, &n, &t)) { printf("FAIL %-32s no tunable descriptor\n", label); fails++; goto done; }
  if (cl_defaults_check(&t, label)) fails++;
  kiln_value *y = &g.vals[out[0]];
  size_t yb = kiln_value_bytes(y);
  int64_t ne = kiln_value_numel(y);
  got = malloc(yb + 8);
  poison = malloc(yb + 8);
  memset(poison, 0x7f, yb + 8);
  int tested = 0, bad_vecs = 0;
  for (int vi = 0; vi < nvecs; vi++) {
    const int *p = vecs[vi];
    kiln_tunable tb = t; /* hard constraints only (dtype, device limits) */
    tb.dims[0] = tb.dims[1] = tb.dims[2] = 4096;
    kiln_device_info info = dev->info;
    info.is_gpu = 1;
    if (t.valid(&tb, p, &info)) continue;
    if (yb) kiln_cl_write(dev, y->buf, poison, yb, &err);
    kiln_exec x = {.d = dev, .g = &g, .ov_node = 0, .ov_params = p};
    char ps[256];
    kiln_tunable_str(&t, p, ps, sizeof ps);
    runs++;
    tested++;
    if (n.op->dev(&x, &n, &err) || (yb && kiln_cl_read(dev, y->buf, got, yb, &err))) {
      printf("FAIL %-32s %s: %s\n", label, ps, err.msg);
      memset(&err, 0, sizeof err);
      bad_vecs++;
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
      printf("FAIL %-32s %s: max err %.3g at %lld (max |ref| %.3g)\n", label, ps, maxdiff, (long long)at, maxref);
      bad_vecs++;
    }
  }
  if (bad_vecs) fails++;
  printf("%s %-32s %d parameter vectors\n", bad_vecs ? "FAIL" : "ok  ", label, tested);
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

#define V(nm, dt, ...) {nm, dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, {__VA_ARGS__}, 0}
#define VC(nm, dt, ...) {nm, dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, {__VA_ARGS__}, 1}
#define S(nm, dt) {nm, dt, 0, {0}, 0}

int main(int argc, char **argv) {
  kiln_error err = {0};
  setenv("KILN_GEMM_KERNELS", "0,1,2", 0); /* CLBlast (2) is opt-in for tuning; test it too (unless the caller narrows it) */
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
  kiln_options env;
  if (kiln_options_from_env(&env, &err) || kiln_device_set_options(dev, &env, &err)) { printf("FAIL: %s\n", err.msg); return 1; }
  const int F = KILN_DT_FLOAT, D = KILN_DT_DOUBLE, I = KILN_DT_INT32;
  {
    /* the vector set, from the descriptor of a float MatMul */
    kiln_graph g = {.dev_opt = &dev->opt};
    kiln_node n = {0};
    int in[2], out[1];
    n.nin = 2, n.nout = 1, n.in = in, n.out = out, n.op = kiln_op_lookup("", "MatMul");
    in[0] = kiln_graph_add_value(&g, "a");
    in[1] = kiln_graph_add_value(&g, "b");
    out[0] = kiln_graph_add_value(&g, "y");
    for (int i = 0; i < 2; i++) g.vals[in[i]].dtype = F, g.vals[in[i]].rank = 2, g.vals[in[i]].dims[0] = g.vals[in[i]].dims[1] = 64;
    kiln_tunable t;
    if (n.op->infer(&g, &n, &err) || !n.op->tunable || n.op->tunable(&g, &n, &t)) { printf("FAIL: MatMul has no tunable descriptor\n"); return 1; }
    pick_vectors(&t);
    for (int i = 0; i < nvecs; i++) {
      char ps[256];
      kiln_tunable_str(&t, vecs[i], ps, sizeof ps);
      printf("vector %2d: %s\n", i, ps);
    }
    for (int i = 0; i < g.nvals; i++) free(g.vals[i].name);
    free(g.vals);
  }
  int64_t mm[][3] = {{1, 1, 1}, {33, 17, 65}, {100, 1, 37}, {1, 512, 1000}, {129, 300, 31}, {7, 33, 1}, {5, 0, 7}, {64, 64, 64}};
  for (int i = 0; i < (int)(sizeof mm / sizeof mm[0]); i++) {
    for (int bc = 0; bc < 2; bc++) {
      char l[64];
      snprintf(l, sizeof l, "MatMul %lldx%lldx%lld%s", (long long)mm[i][0], (long long)mm[i][1], (long long)mm[i][2], bc ? " constB" : "");
      vspec in[2] = {V("a", F, mm[i][0], mm[i][1]), V("b", F, mm[i][1], mm[i][2])};
      in[1].is_const = bc;
      run_case("MatMul", 2, in, NULL, 0, l);
    }
  }
  { vspec in[2] = {V("a", F, 2, 1, 33, 20), V("b", F, 3, 20, 45)}; run_case("MatMul", 2, in, NULL, 0, "MatMul bcast 4d x 3d"); }
  { vspec in[2] = {V("a", F, 2, 1, 33, 20), VC("b", F, 3, 20, 45)}; run_case("MatMul", 2, in, NULL, 0, "MatMul bcast 4d x 3d constB"); }
  { vspec in[2] = {V("a", F, 1, 4, 1, 3), V("b", F, 2, 1, 3, 5)}; run_case("MatMul", 2, in, NULL, 0, "MatMul bcast both"); }
  { vspec in[2] = {V("a", F, 3, 37, 50), VC("b", F, 50, 41)}; run_case("MatMul", 2, in, NULL, 0, "MatMul 3d x 2d constB"); }
  { vspec in[2] = {V("a", F, 20), V("b", F, 3, 20, 45)}; run_case("MatMul", 2, in, NULL, 0, "MatMul 1d x 3d"); }
  { vspec in[2] = {V("a", F, 4, 33, 20), VC("b", F, 20)}; run_case("MatMul", 2, in, NULL, 0, "MatMul 3d x 1d constB"); }
  { vspec in[2] = {V("a", F, 70), V("b", F, 70)}; run_case("MatMul", 2, in, NULL, 0, "MatMul 1d x 1d"); }
  { vspec in[2] = {V("a", D, 3, 37, 50), V("b", D, 3, 50, 41)}; run_case("MatMul", 2, in, NULL, 0, "MatMul double batched"); }
  { vspec in[2] = {V("a", I, 37, 50), VC("b", I, 50, 41)}; run_case("MatMul", 2, in, NULL, 0, "MatMul int32 constB"); }
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int cm = 0; cm < 5; cm++) {
        int64_t M = 70, N = 50, K = 45;
        vspec in[3] = {ta ? (vspec)V("a", F, K, M) : (vspec)V("a", F, M, K), tb ? (vspec)VC("b", F, N, K) : (vspec)V("b", F, K, N),
                       cm == 0 ? (vspec)V("c", F, N) : cm == 1 ? (vspec)V("c", F, M, 1) : cm == 2 ? (vspec)V("c", F, M, N) : (vspec)S("c", F)};
        kiln_attr at[4] = {AI("transA", ta), AI("transB", tb), AF("alpha", 0.7f), AF("beta", 1.3f)};
        char l[64];
        snprintf(l, sizeof l, "Gemm tA%d tB%d bias%d", ta, tb, cm);
        run_case("Gemm", cm == 4 ? 2 : 3, in, at, 4, l);
      }
  { vspec in[3] = {V("a", F, 1, 512), VC("b", F, 1000, 512), VC("c", F, 1000)}; kiln_attr at[1] = {AI("transB", 1)}; run_case("Gemm", 3, in, at, 1, "Gemm resnet fc"); }
  { vspec in[3] = {V("a", D, 9, 17), VC("b", D, 17, 23), V("c", D, 23)}; kiln_attr at[1] = {AF("beta", 0.5f)}; run_case("Gemm", 3, in, at, 1, "Gemm double"); }
  printf("%d runs, %d failing cases\n", runs, fails);
  kiln_device_close(dev);
  return fails != 0;
}
