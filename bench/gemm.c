/* bench/gemm.c: SGEMM on the OpenCL device, measured in one run against
 * OpenBLAS (cblas_sgemm on the host, 2 threads) and CLBlast, for square
 * sizes and the GEMM shapes of resnet18 (its FC layer and its convolutions
 * viewed as im2col GEMMs).
 *
 * Per shape Y[M,N] = A[M,K] * B[K,N]:
 *   openblas       cblas_sgemm, host arrays;
 *   clblast        CLBlastSgemm with CLBlast's own parameters (cache cleared
 *                  first, so no override of an earlier shape is left);
 *   clblast-kiln   CLBlastSgemm with the best CLBlast parameters kiln's tuner
 *                  measured in a second pass over KERNEL=2 only (its own
 *                  database; --clblast-trials candidates, each a CLBlast
 *                  compile), "-" when none was measured;
 *   kiln-default   kiln_session_run of a one-node MatMul model (B an
 *                  initializer) with the descriptor defaults;
 *   kiln-tuned     the same after kiln_tune (its default strategy unless
 *                  --strategy) into a
 *                  temporary database, over kiln's own kernels (0 and 1).
 * Times are medians of repeated calls (wall clock, each call finished);
 * kiln's include copying A in and Y out of the session. GFLOP/s = 2MNK / t.
 *
 * Usage: bench_gemm [--device SEL] [--max-trials N] [--budget S] [--strategy NAME]
 *                   [--shapes all|square|resnet|MxNxK[,MxNxK...]] [--keep-db PATH]
 *                   [--clblast-trials N] [--no-clblast]
 * --budget is the tuning time per shape in seconds (doubled for shapes of
 * more than 1 GFLOP); --max-trials caps the candidates per shape;
 * --clblast-trials (default 2, 0 = skip) the CLBlast candidates per shape;
 * --no-clblast leaves CLBlast out altogether (on POCL each of its programs
 * is a compile of minutes). */
#include "kiln_internal.h"
#include "bench_device.h"
#include "kiln_db.h"
#include "onnx.pb-c.h"
#include <cblas.h>
#include <clblast_c.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

/* runtime/ops/gemm_norm.c */
int kiln__gemm_clblast_override(cl_device_id dev, int dtype, const char *params, kiln_error *err);

typedef struct { const char *name; int64_t M, N, K; } shape;

static const shape square_shapes[] = {
  {"sgemm 256", 256, 256, 256}, {"sgemm 1024", 1024, 1024, 1024}, {"sgemm 2048", 2048, 2048, 2048},
};
static const shape resnet_shapes[] = {
  {"resnet18 fc", 1, 1000, 512},          {"resnet18 conv2_x", 3136, 64, 576}, {"resnet18 conv3_x", 784, 128, 1152},
  {"resnet18 conv4_x", 196, 256, 2304},   {"resnet18 conv5_x", 49, 512, 4608},
};


/* Median seconds of fn(ctx) over at least 3 calls and ~0.5 s (at most 25);
 * a single call when one takes over 2 s (CLBlast's defaults at 2048^3). */
static double time_median(int (*fn)(void *), void *ctx) {
  double ts[25];
  int n = 0;
  double t0 = kiln__now_s();
  while (n < 25 && (n < 3 || kiln__now_s() - t0 < 0.5) && !(n == 1 && ts[0] > 2)) {
    double a = kiln__now_s();
    if (fn(ctx)) return -1;
    ts[n++] = kiln__now_s() - a;
  }
  qsort(ts, (size_t)n, sizeof(double), kiln__cmp_double);
  return ts[n / 2];
}

/* ---- one-node MatMul model with B as an initializer ---- */

static Onnx__ValueInfoProto *value_info(const char *name, int64_t d0, int64_t d1, Onnx__ValueInfoProto *vi, Onnx__TypeProto *tp,
                                        Onnx__TypeProto__Tensor *tt, Onnx__TensorShapeProto *sh, Onnx__TensorShapeProto__Dimension *dv,
                                        Onnx__TensorShapeProto__Dimension **dvp) {
  onnx__value_info_proto__init(vi);
  int64_t d[2] = {d0, d1};
  kiln__onnx_tensor_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d, tp, tt, sh, dv, dvp);
  vi->name = (char *)name;
  vi->type = tp;
  return vi;
}

/* Writes Y = MatMul(A, B) with A an input [M,K] and B [K,N] an initializer. */
static int write_model(const char *path, const shape *s, const float *B) {
  Onnx__ValueInfoProto vi[2];
  Onnx__TypeProto tp[2];
  Onnx__TypeProto__Tensor tt[2];
  Onnx__TensorShapeProto sh[2];
  Onnx__TensorShapeProto__Dimension dv[2][2], *dvp[2][2];
  Onnx__ValueInfoProto *in = value_info("A", s->M, s->K, &vi[0], &tp[0], &tt[0], &sh[0], dv[0], dvp[0]);
  Onnx__ValueInfoProto *out = value_info("Y", s->M, s->N, &vi[1], &tp[1], &tt[1], &sh[1], dv[1], dvp[1]);
  Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT;
  int64_t wd[2] = {s->K, s->N};
  w.name = "B";
  w.has_data_type = 1;
  w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  w.n_dims = 2;
  w.dims = wd;
  w.has_raw_data = 1;
  w.raw_data.len = sizeof(float) * (size_t)(s->K * s->N);
  w.raw_data.data = (uint8_t *)B;
  Onnx__TensorProto *wp = &w;
  Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
  char *nin[2] = {"A", "B"}, *nout[1] = {"Y"};
  node.name = "matmul";
  node.op_type = "MatMul";
  node.n_input = 2;
  node.input = nin;
  node.n_output = 1;
  node.output = nout;
  Onnx__NodeProto *np = &node;
  Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
  gp.name = "bench_gemm";
  gp.n_node = 1;
  gp.node = &np;
  gp.n_initializer = 1;
  gp.initializer = &wp;
  gp.n_input = 1;
  gp.input = &in;
  gp.n_output = 1;
  gp.output = &out;
  return kiln__onnx_write_graph(path, &gp, 17, "kiln bench_gemm", NULL) ? -1 : 0;
}

/* ---- the contenders ---- */

typedef struct {
  const shape *s;
  const float *A, *B;
  float *Y;
  kiln_device *d;
  cl_mem a, b, y;
  kiln_session *ses;
} bench_ctx;

static int run_openblas(void *p) {
  bench_ctx *c = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->s->M, (int)c->s->N, (int)c->s->K, 1.0f, c->A, (int)c->s->K, c->B,
              (int)c->s->N, 0.0f, c->Y, (int)c->s->N);
  return 0;
}

static int run_clblast(void *p) {
  bench_ctx *c = p;
  cl_command_queue q = c->d->q;
  CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)c->s->M, (size_t)c->s->N,
                                      (size_t)c->s->K, 1.0f, c->a, 0, (size_t)c->s->K, c->b, 0, (size_t)c->s->N, 0.0f, c->y, 0,
                                      (size_t)c->s->N, &q, NULL);
  if (st != CLBlastSuccess) { fprintf(stderr, "CLBlastSgemm: status %d\n", (int)st); return -1; }
  return clFinish(q) != CL_SUCCESS;
}

static int run_kiln(void *p) {
  bench_ctx *c = p;
  kiln_error err = {0};
  if (kiln_session_run(c->ses, &err)) { fprintf(stderr, "kiln: %s\n", err.msg); return -1; }
  return 0;
}

/* Best "ok" KERNEL=2 (CLBlast) record of the instance. */
typedef struct { double ns; char params[256]; } best_clb;
static void pick_clblast(const kiln_record *r, void *ctx) {
  best_clb *b = ctx;
  if (strcmp(r->status, "ok") || strncmp(r->params, "KERNEL=2,", 9) || r->median_ns <= 0) return;
  if (b->ns < 0 || r->median_ns < b->ns) { b->ns = r->median_ns; snprintf(b->params, sizeof b->params, "%s", r->params); }
}

static double gflops(const shape *s, double t) { return t > 0 ? 2.0 * (double)s->M * (double)s->N * (double)s->K / t / 1e9 : 0; }

static double rel_err(const float *got, const float *ref, int64_t n) {
  double md = 0, mr = 0;
  for (int64_t i = 0; i < n; i++) {
    if (fabs(ref[i]) > mr) mr = fabs(ref[i]);
    if (!(fabs(got[i] - ref[i]) <= md)) md = fabs(got[i] - ref[i]);
  }
  return md / (mr > 0 ? mr : 1);
}

static void print_load(const char *when) {
  double la[3] = {0};
  if (getloadavg(la, 3) == 3) printf("# load average %s: %.2f %.2f %.2f (%ld cpus)\n", when, la[0], la[1], la[2], sysconf(_SC_NPROCESSORS_ONLN));
}

int main(int argc, char **argv) {
  const char *sel = NULL, *shapes_arg = "all", *keep_db = NULL;
  int max_trials = 48, clb_trials = 2, no_clblast = 0;
  const char *strategy = NULL; /* kiln_tune's default */
  double budget = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) sel = argv[++i];
    else if (!strcmp(argv[i], "--max-trials") && i + 1 < argc) max_trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--budget") && i + 1 < argc) budget = atof(argv[++i]);
    else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) shapes_arg = argv[++i];
    else if (!strcmp(argv[i], "--keep-db") && i + 1 < argc) keep_db = argv[++i];
    else if (!strcmp(argv[i], "--clblast-trials") && i + 1 < argc) clb_trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-clblast")) no_clblast = 1, clb_trials = 0;
    else if (!strcmp(argv[i], "--strategy") && i + 1 < argc) strategy = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--device SEL] [--max-trials N] [--budget S] [--shapes all|square|resnet|MxNxK,...] [--keep-db PATH]\n"
                      "       [--clblast-trials N] [--no-clblast] [--strategy model|random|exhaustive]\n", argv[0]);
      return 2;
    }
  }
  shape shapes[32];
  int ns = 0;
  if (!strcmp(shapes_arg, "all") || !strcmp(shapes_arg, "square"))
    for (size_t i = 0; i < sizeof square_shapes / sizeof *square_shapes; i++) shapes[ns++] = square_shapes[i];
  if (!strcmp(shapes_arg, "all") || !strcmp(shapes_arg, "resnet"))
    for (size_t i = 0; i < sizeof resnet_shapes / sizeof *resnet_shapes; i++) shapes[ns++] = resnet_shapes[i];
  if (!ns) {
    static char names[32][48];
    for (const char *p = shapes_arg; p && *p && ns < 32;) {
      long long m, n, k;
      if (sscanf(p, "%lldx%lldx%lld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1) { fprintf(stderr, "bad shape '%s' (MxNxK)\n", p); return 2; }
      snprintf(names[ns], sizeof names[ns], "%lldx%lldx%lld", m, n, k);
      shapes[ns] = (shape){names[ns], m, n, k};
      ns++;
      p = strchr(p, ',');
      if (p) p++;
    }
  }

  kiln_error err = {0};
  kiln_device *d;
  if (bench_device_open(sel, &d, &err)) { fprintf(stderr, "bench_gemm: %s\n", err.msg); return 77; }
  kiln_options opts; /* the KILN_* environment; gemm_kernels is set per pass below */
  if (kiln_options_from_env(&opts, &err) || kiln_device_set_options(d, &opts, &err)) { fprintf(stderr, "bench_gemm: %s\n", err.msg); return 2; }
  openblas_set_num_threads(2);
  char dbpath[256];
  if (keep_db) snprintf(dbpath, sizeof dbpath, "%s", keep_db);
  else snprintf(dbpath, sizeof dbpath, "/tmp/kiln_bench_gemm_%d.db", (int)getpid());
  if (!keep_db) unlink(dbpath);
  kiln_db *db, *db2;
  if (kiln_db_open(dbpath, KILN_DB_CREATE, &db, &err)) { fprintf(stderr, "bench_gemm: %s\n", err.msg); return 1; }
  char db2path[300];
  snprintf(db2path, sizeof db2path, "%s.clblast", dbpath);
  if (!keep_db) unlink(db2path);
  if (kiln_db_open(db2path, KILN_DB_CREATE, &db2, &err)) { fprintf(stderr, "bench_gemm: %s\n", err.msg); return 1; }

  printf("# device: %s (%s); OpenBLAS 2 threads; tuning: strategy %s, max %d trials, %.0f s per shape; CLBlast: %d trials\n", d->info.name,
         d->info.platform, strategy ? strategy : "default", max_trials, budget, clb_trials);
  print_load("at start");
  printf("%-18s %5s %5s %5s | %8s %8s %8s %8s %8s | %6s %6s | %s\n", "shape", "M", "N", "K", "openblas", "clblast", "clb-kiln", "kiln-def",
         "kiln", "k/blas", "k/clb", "kiln's best parameters (GFLOP/s; max rel err vs OpenBLAS)");
  double worst_blas = INFINITY, worst_clb = INFINITY;
  for (int si = 0; si < ns; si++) {
    const shape *s = &shapes[si];
    size_t na = (size_t)(s->M * s->K), nb = (size_t)(s->K * s->N), ny = (size_t)(s->M * s->N);
    float *A = malloc(na * 4), *B = malloc(nb * 4), *Yref = malloc(ny * 4), *Y = malloc(ny * 4);
    if (!A || !B || !Y || !Yref) { fprintf(stderr, "out of memory\n"); return 1; }
    uint64_t r = 42 + (uint64_t)si;
    for (size_t i = 0; i < na; i++) { r = r * 6364136223846793005ull + 1442695040888963407ull; A[i] = (float)((r >> 40) & 0xffff) / 65536.0f - 0.5f; }
    for (size_t i = 0; i < nb; i++) { r = r * 6364136223846793005ull + 1442695040888963407ull; B[i] = (float)((r >> 40) & 0xffff) / 65536.0f - 0.5f; }
    bench_ctx c = {.s = s, .A = A, .B = B, .Y = Yref, .d = d};

    /* OpenBLAS */
    run_openblas(&c);
    double t_blas = time_median(run_openblas, &c);

    /* CLBlast with its own parameters */
    c.a = kiln_cl_alloc(d, na * 4, &err);
    c.b = kiln_cl_alloc(d, nb * 4, &err);
    c.y = kiln_cl_alloc(d, ny * 4, &err);
    if (!c.a || !c.b || !c.y || kiln_cl_write(d, c.a, A, na * 4, &err) || kiln_cl_write(d, c.b, B, nb * 4, &err)) {
      fprintf(stderr, "bench_gemm: %s\n", err.msg);
      return 1;
    }
    clFinish(d->q);
    CLBlastClearCache();
    double t_clb = no_clblast || run_clblast(&c) ? -1 : time_median(run_clblast, &c);

    /* kiln: default, then tuned */
    char mpath[256];
    snprintf(mpath, sizeof mpath, "/tmp/kiln_bench_gemm_%d_%d.onnx", (int)getpid(), si);
    kiln_model *m = NULL;
    if (write_model(mpath, s, B) || kiln_model_load(mpath, NULL, &m, &err) || kiln_session_create(m, d, &c.ses, &err)) {
      fprintf(stderr, "bench_gemm: %s: %s\n", mpath, err.msg[0] ? err.msg : "cannot write the model");
      return 1;
    }
    unlink(mpath);
    kiln_tensor ta = {.dtype = KILN_DT_FLOAT, .rank = 2, .dims = {s->M, s->K}, .data = A};
    if (kiln_session_set_input(c.ses, "A", &ta, &err)) { fprintf(stderr, "bench_gemm: %s\n", err.msg); return 1; }
    double t_kd = run_kiln(&c) ? -1 : time_median(run_kiln, &c);
    opts.gemm_kernels = 1u << 0 | 1u << 1; /* kiln's own kernels */
    kiln_device_set_options(d, &opts, &err);
    kiln_tune_options to = {.budget_s = budget * (2.0 * s->M * s->N * s->K > 1e9 ? 2 : 1), .max_trials = max_trials, .strategy = strategy, .seed = 7};
    kiln_tune_result *res = NULL;
    int nres = 0;
    if (kiln_tune(c.ses, db, &to, &res, &nres, &err)) { fprintf(stderr, "bench_gemm: tune: %s\n", err.msg); return 1; }
    double t_k = run_kiln(&c) ? -1 : time_median(run_kiln, &c);
    const kiln_tensor *out = kiln_session_output(c.ses, 0);
    double kerr = out ? rel_err(out->data, Yref, (int64_t)ny) : INFINITY;

    /* CLBlast with the parameters kiln's tuner finds for it: a second tuning
     * pass over KERNEL=2 only, into its own database (CLBlast candidates are
     * opt-in, see gemm_kernels_offered in runtime/ops/gemm_norm.c) */
    best_clb bc = {.ns = -1};
    double t_clbk = -1;
    if (clb_trials > 0) {
      kiln_tune_result *res2 = NULL;
      int nres2 = 0;
      kiln_tune_options to2 = {.budget_s = budget, .max_trials = clb_trials, .strategy = "random", .seed = 7};
      opts.gemm_kernels = 1u << 2;
      kiln_device_set_options(d, &opts, &err);
      if (kiln_tune(c.ses, db2, &to2, &res2, &nres2, &err)) fprintf(stderr, "bench_gemm: CLBlast tuning: %s\n", err.msg);
      opts.gemm_kernels = 1u << 0 | 1u << 1;
      kiln_device_set_options(d, &opts, &err);
      if (nres2 > 0) kiln_db_each(db2, c.ses->db_device, "gemm", KILN_DT_FLOAT, res2[0].shape_key, "", pick_clblast, &bc, &err);
      free(res2);
      kiln_session_set_db(c.ses, db, &err);
    }
    if (bc.ns > 0 && kiln__gemm_clblast_override(d->dev, KILN_DT_FLOAT, bc.params, &err) == 0 && run_clblast(&c) == 0)
      t_clbk = time_median(run_clblast, &c);

    double g_blas = gflops(s, t_blas), g_clb = gflops(s, t_clb), g_k = gflops(s, t_k);
    char clbk[16] = "       -";
    if (t_clbk > 0) snprintf(clbk, sizeof clbk, "%8.1f", gflops(s, t_clbk));
    printf("%-18s %5lld %5lld %5lld | %8.1f %8.1f %s %8.1f %8.1f | %6.2f %6.2f | %s (%d trials, %d rejected; err %.1e)\n", s->name, (long long)s->M,
           (long long)s->N, (long long)s->K, g_blas, g_clb, clbk, gflops(s, t_kd), g_k, g_blas > 0 ? g_k / g_blas : 0, g_clb > 0 ? g_k / g_clb : 0,
           nres > 0 ? res[0].params : "?", nres > 0 ? res[0].trials : 0, nres > 0 ? res[0].rejected : 0, kerr);
    fflush(stdout);
    if (g_blas > 0 && g_k / g_blas < worst_blas) worst_blas = g_k / g_blas;
    if (g_clb > 0 && g_k / g_clb < worst_clb) worst_clb = g_k / g_clb;
    free(res);
    kiln_session_free(c.ses);
    kiln_model_free(m);
    clReleaseMemObject(c.a);
    clReleaseMemObject(c.b);
    clReleaseMemObject(c.y);
    free(A);
    free(B);
    free(Y);
    free(Yref);
  }
  print_load("at end");
  printf("# worst ratios: kiln/OpenBLAS %.2f, kiln/CLBlast-default %.2f; tuning records in %s%s\n", worst_blas, worst_clb, dbpath,
         keep_db ? "" : " (removed)");
  kiln_db_close(db);
  kiln_db_close(db2);
  if (!keep_db) unlink(dbpath), unlink(db2path);
  kiln_device_close(d);
  return 0;
}
