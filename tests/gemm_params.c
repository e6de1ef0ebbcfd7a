/* gemm_params.c: correctness of the tunable GEMM (MatMul and Gemm, family
 * "gemm") across its parameter space, not only at the defaults. For shapes
 * with edge tiles, K = 1, M = 1, N = 1, K = 0, batch broadcasting, 1-D
 * operands, transA / transB, every bias broadcast, constant and computed B,
 * float, double and int32, a deep K with remainders, each node runs on
 * the device with forced parameter vectors (the tuner's override, kiln_exec.ov_params): the
 * defaults plus vectors of every solver of the gemm family's registry
 * (kernels/gemm.c: tiled, panel, CLBlast) that together take every value
 * of every parameter (tests/solver_cover.h; vectors pruned only for speed,
 * like the tiled kernel on CPU devices, are tested too; CLBlast only on a
 * GPU or with KILN_TEST_CLBLAST=1) and is compared with the CPU
 * reference: max |dev - ref| <= 1e-4 * max |ref| + 1e-5. The node's state
 * is kept between vectors, as in a tuning run, so repacking of B is
 * exercised too. Exit 0 = pass, 1 = fail, 77 = skipped (no device). */
#include "kiln_internal.h"
#include "cl_defaults.h"


static kiln_device *dev;
static uint64_t rng = 0x1234567;
static int fails, runs;

#include "test_rng.h"
#include "family.h"
#include "solver_cover.h"

typedef struct { const char *name; int dtype, rank; int64_t dims[4]; int is_const; } vspec;

/* Parameter vectors shared by all cases (so each compiles once): those of
 * solver_cover.h for a large instance (no "redundant tile" pruning), valid
 * on a GPU (no CPU pruning of the tiled kernel and CLBlast: vectors pruned
 * only to save tuning time are tested too). */
static sc_vec *vecs;
static int nvecs;
static kiln_device_info gpu_info;
/* CLBlast on a CPU device: each parameter set is a compile of minutes on
 * POCL (CLBlast keeps no program cache), so it runs only on a GPU or with
 * KILN_TEST_CLBLAST=1. */
static bool skip_clblast;

static void pick_vectors(const kiln_tunable *t0) {
  kiln_tunable t = *t0;
  t.dims[0] = t.dims[1] = t.dims[2] = 4096;
  gpu_info = dev->info;
  gpu_info.is_gpu = 1;
  vecs = malloc(sizeof(sc_vec) * SC_MAXVEC);
  nvecs = vecs ? sc_vectors(&kiln_family_gemm, &t, &t, &gpu_info, vecs) : 0;
  skip_clblast = !dev->info.is_gpu && !getenv("KILN_TEST_CLBLAST");
  if (skip_clblast) printf("note: the clblast solver is left out on a CPU device (minutes of compile per vector); KILN_TEST_CLBLAST=1 runs it\n");
}

static kiln_attr AI(const char *nm, int64_t v) { kiln_attr a = {0}; a.name = (char *)nm; a.type = KILN_ATTR_INT; a.i = v; return a; }
static kiln_attr AF(const char *nm, float v) { kiln_attr a = {0}; a.name = (char *)nm; a.type = KILN_ATTR_FLOAT; a.f = v; return a; }


static void run_case(const char *op, int nin, const vspec *ins, kiln_attr *attrs, int nattr, const char *label) {
  if (!sc_selected(label)) return;
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
  g.nodes = &n; /* the override (kiln_exec.ov_node 0) is matched by node index */
  g.nnodes = 1;
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
  if (n.op->infer(&g, &n, &err) || n.op->dev_check(&g, &n, &err) || kiln_node_run_ref_host(&g, &n, host, &err)) {
    printf("FAIL %-32s setup: %s\n", label, err.msg);
    fails++;
    goto done;
  }
  if (sc_upload(dev, &g, &err)) { printf("FAIL %s setup: %s\n", label, err.msg); fails++; goto done; }
  kiln_tunable t;
  if (n.op->tunable(&g, &n, &t)) { printf("FAIL %-32s no tunable descriptor\n", label); fails++; goto done; }
  if (cl_defaults_check(&t, label)) fails++;
  int tested = 0, bad_vecs = 0, fi = 0;
  while (fi < kiln_nfamilies && kiln_families[fi] != &kiln_family_gemm) fi++;
  sc_seen[fi] = true;
  for (int vi = 0; vi < nvecs; vi++) {
    kiln_tunable tb = t; /* hard constraints only (dtype, device limits) */
    tb.dims[0] = tb.dims[1] = tb.dims[2] = 4096;
    if (t.valid(&tb, vecs[vi], &gpu_info)) continue;
    if (vecs[vi][GP_KERNEL] == GK_CLBLAST && skip_clblast) { sc_skip[fi] |= 1u << GK_CLBLAST; continue; }
    runs++;
    tested++;
    bad_vecs += sc_run(dev, &g, &n, host, &t, vecs[vi], label);
    sc_ran[fi] |= 1u << kiln_family_solver_of(&kiln_family_gemm, vecs[vi]);
  }
  if (bad_vecs) fails++;
  printf("%s %-32s %d parameter vectors\n", bad_vecs ? "FAIL" : "ok  ", label, tested);
done:
  sc_free_graph(&g, &n, host);
}

#define V(nm, dt, ...) {nm, dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, {__VA_ARGS__}, 0}
#define VC(nm, dt, ...) {nm, dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, {__VA_ARGS__}, 1}
#define S(nm, dt) {nm, dt, 0, {0}, 0}

int main(int argc, char **argv) {
  kiln_error err = {0};
  setenv("KILN_GEMM_KERNELS", "0,1,2", 0); /* CLBlast (2) is opt-in for tuning; test it too (unless the caller narrows it) */
  int rc = sc_start(argc, argv, &dev);
  if (rc) return rc;
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
  /* a deep K that is no multiple of 16 (gemm_pack_a's steps) or of KWI, over batches of A */
  { vspec in[2] = {V("a", F, 2, 37, 600), VC("b", F, 600, 50)}; run_case("MatMul", 2, in, NULL, 0, "MatMul deep K constB"); }
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
  if (sc_nonly == 0 && sc_check(false, true)) fails++;
  printf("%d runs, %d failing cases\n", runs, fails);
  free(vecs);
  kiln_device_close(dev);
  return fails != 0;
}
