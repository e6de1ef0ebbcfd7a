/* bench/gemm_layer.c: one matrix product on the device with several forced
 * parameter vectors of the gemm family, timed alternately in the same run
 * (round r runs every vector once, in turn), so that load on a shared
 * machine hits all of them alike; OpenBLAS's cblas_sgemm of the same
 * product on the host ("openblas") can be one of the vectors. Each device
 * vector's output is first checked against the CPU reference (max |dev -
 * ref| <= 1e-4 max |ref| + 1e-5). Prints per vector the median, lower
 * quartile and minimum wall time of a run (launches and clFinish) and
 * GFLOP/s (2*Z*M*N*K) at the median and at the lower quartile (on a
 * shared machine interference only adds time).
 *
 * The product is a MatMul node Y[Z,M,N] = A[Z,M,K] * B, B a constant
 * [K,N] (weights, packed once as in a plan) or with --shared-b 0 a
 * variable [Z,K,N] (attention's products, packed every run); --bias adds a
 * constant bias of N through a Gemm node (Z must be 1). With --fp16 every
 * device vector runs twice, on the node in fp32 storage and on a copy in
 * fp16 storage (all its tensors half on the device, as an fp16 plan stores
 * them), alternated in each round; the fp16 run is checked to 1e-2 max |ref|.
 *
 * usage: bench_gemm_layer M,N,K[,Z] [--shared-b 0|1] [--bias] [--fp16] [--rounds R] [--device SEL] PARAMS...
 *   PARAMS: "TM=12,NV=2" (others at the descriptor's defaults; the vector
 *   must be valid for the shape), "default", or "openblas".
 * Exit 0 ok, 1 a wrong result or failure, 2 usage. */
#include "kiln_internal.h"
#include "bench_device.h"
#include <cblas.h>
#include <math.h>
#include <time.h>

#define MAXV 16
#define MAXROUNDS 1024

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  long long M, N, K, Z;
  int shared_b, bias, fp16;
} gl_shape;

/* Runs node n once with parameters p (NULL: OpenBLAS on the host, into
 * ybuf, without the bias); 0 ok. */
static int run_once(kiln_device *d, kiln_graph *g, kiln_node *n, const int *p, const gl_shape *s, float *ybuf, kiln_error *err) {
  if (!p) {
    const float *a = g->vals[n->in[0]].data, *b = g->vals[n->in[1]].data;
    for (long long z = 0; z < s->Z; z++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->M, (int)s->N, (int)s->K, 1.0f, a + z * s->M * s->K, (int)s->K,
                  b + (s->shared_b ? 0 : z * s->K * s->N), (int)s->N, 0.0f, ybuf + z * s->M * s->N, (int)s->N);
    return 0;
  }
  kiln_exec x = {.d = d, .g = g, .ov_node = 0, .ov_params = p};
  if (n->op->dev(&x, n, err)) return 1;
  clFinish(d->q);
  return 0;
}

static int check(kiln_device *d, kiln_graph *g, void **host, int yi, const char *ps, double tol) {
  kiln_value *y = &g->vals[yi];
  int64_t ne = kiln_value_numel(y);
  float *got = malloc((size_t)ne * sizeof(float));
  kiln_error err = {0};
  if (!got || kiln__value_read(d, y, got, &err)) { free(got); return 1; }
  double maxref = 0, maxd = 0;
  for (int64_t e = 0; e < ne; e++) {
    double r = kiln_load_f(host[yi], KILN_DT_FLOAT, e);
    if (fabs(r) > maxref) maxref = fabs(r);
    double de = fabs(got[e] - r);
    if (!(de <= maxd)) maxd = de;
  }
  free(got);
  if (!(maxd <= tol * maxref + 1e-5)) { printf("WRONG %s: max err %.3g (max |ref| %.3g)\n", ps, maxd, maxref); return 1; }
  return 0;
}

/* One float tensor of the node with uniform values in [-0.5, 0.5). */
static int add_tensor(kiln_graph *g, const char *name, int rank, const int64_t *dims, int is_const, uint64_t *rng) {
  int i = kiln_graph_add_value(g, name);
  kiln_value *v = &g->vals[i];
  v->dtype = KILN_DT_FLOAT;
  v->rank = rank;
  memcpy(v->dims, dims, sizeof(int64_t) * (size_t)rank);
  v->is_const = is_const;
  int64_t ne = kiln_value_numel(v);
  v->data = malloc(kiln_value_bytes(v) + 8);
  for (int64_t k = 0; k < ne; k++) {
    *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
    kiln_store_f(v->data, KILN_DT_FLOAT, k, (double)(*rng >> 40) / (double)(1 << 24) - 0.5);
  }
  return i;
}

/* Builds the MatMul (or Gemm with bias) node of shape s in g / n. */
static void build_node(kiln_graph *g, kiln_node *n, int *in, int *out, const gl_shape *s) {
  uint64_t rng = 12345;
  n->name = "matmul";
  n->op_type = s->bias ? "Gemm" : "MatMul";
  n->domain = "";
  n->opset = 13;
  n->nin = s->bias ? 3 : 2;
  n->nout = 1;
  n->in = in;
  n->out = out;
  n->op = kiln_op_lookup("", s->bias ? "Gemm" : "MatMul");
  g->nodes = n;
  g->nnodes = 1;
  int64_t da[3] = {s->Z, s->M, s->K}, db[3] = {s->Z, s->K, s->N}, dc[1] = {s->N};
  int batched = s->Z > 1 || !s->shared_b;
  in[0] = add_tensor(g, "a", batched ? 3 : 2, batched ? da : da + 1, 0, &rng);
  in[1] = add_tensor(g, "b", s->shared_b ? 2 : 3, s->shared_b ? db + 1 : db, s->shared_b, &rng);
  if (s->bias) in[2] = add_tensor(g, "c", 1, dc, 1, &rng);
  out[0] = kiln_graph_add_value(g, "y");
}

static int parse_args(int argc, char **argv, gl_shape *s, int *rounds, const char **devsel, const char **vecs, int *nv) {
  memset(s, 0, sizeof *s);
  s->Z = 1;
  s->shared_b = 1;
  if (argc < 3 || sscanf(argv[1], "%lld,%lld,%lld,%lld", &s->M, &s->N, &s->K, &s->Z) < 3) return 2;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) *rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) *devsel = argv[++i];
    else if (!strcmp(argv[i], "--shared-b") && i + 1 < argc) s->shared_b = atoi(argv[++i]) != 0;
    else if (!strcmp(argv[i], "--bias")) s->bias = 1;
    else if (!strcmp(argv[i], "--fp16")) s->fp16 = 1;
    else if (*nv < MAXV) vecs[(*nv)++] = argv[i];
  }
  if (s->M < 1 || s->N < 1 || s->K < 1 || s->Z < 1 || (s->bias && (s->Z != 1 || !s->shared_b)) || *nv == 0 || *rounds < 1) return 2;
  if (*rounds > MAXROUNDS) *rounds = MAXROUNDS;
  return 0;
}

/* The node of shape s in g (half: every tensor in fp16 storage), its CPU
 * reference in host[] and its device buffers, uploaded; 0 ok. */
static int setup(kiln_device *dev, kiln_graph *g, kiln_node *n, int *in, int *out, const gl_shape *s, int half, void ***host, kiln_tunable *t) {
  kiln_error err = {0};
  build_node(g, n, in, out, s);
  if (!(*host = calloc((size_t)g->nvals, sizeof(void *))) || n->op->infer(g, n, &err) || n->op->dev_check(g, n, &err) ||
      kiln_node_run_ref_host(g, n, *host, &err) || n->op->tunable(g, n, t)) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return 1;
  }
  n->half = half;
  for (int i = 0; i < g->nvals; i++) {
    kiln_value *v = &g->vals[i];
    v->half = half;
    size_t b = kiln_value_dev_bytes(v);
    if (!(v->buf = kiln_cl_alloc(dev, b ? b : 16, &err)) || (v->data && b && kiln__value_upload(dev, v, &err))) { fprintf(stderr, "%s\n", err.msg); return 1; }
  }
  return 0;
}

int main(int argc, char **argv) {
  gl_shape s;
  int rounds = 20, nv = 0;
  const char *devsel = NULL, *vecs[MAXV];
  if (parse_args(argc, argv, &s, &rounds, &devsel, vecs, &nv)) {
    fprintf(stderr, "usage: %s M,N,K[,Z] [--shared-b 0|1] [--bias] [--fp16] [--rounds R] [--device SEL] PARAMS|default|openblas...\n", argv[0]);
    return 2;
  }
  kiln_device *dev;
  kiln_error err = {0};
  if (bench_device_open(devsel, &dev, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
  /* gs[0]: fp32 storage; gs[1]: fp16 (--fp16) */
  kiln_graph gs[2] = {{0}};
  kiln_node ns[2] = {{0}};
  int in[2][3], out[2][1], np = s.fp16 ? 2 : 1;
  void **host[2] = {NULL, NULL};
  kiln_tunable t, t16;
  if (setup(dev, &gs[0], &ns[0], in[0], out[0], &s, 0, &host[0], &t)) return 1;
  if (s.fp16 && setup(dev, &gs[1], &ns[1], in[1], out[1], &s, 1, &host[1], &t16)) return 1;
  static int p[MAXV][KILN_MAX_KPARAMS];
  static double tm[MAXV][2][MAXROUNDS];
  int host_blas[MAXV] = {0};
  char ps[MAXV][256];
  float *ybuf = malloc(sizeof(float) * (size_t)(s.Z * s.M * s.N));
  if (!ybuf) return 1;
  for (int v = 0; v < nv; v++) {
    if ((host_blas[v] = !strcmp(vecs[v], "openblas"))) { snprintf(ps[v], sizeof ps[v], "openblas (host)"); continue; }
    if (kiln_tunable_parse(&t, strcmp(vecs[v], "default") ? vecs[v] : "", p[v])) { fprintf(stderr, "bad parameters %s\n", vecs[v]); return 2; }
    kiln_tunable_str(&t, p[v], ps[v], sizeof ps[v]);
    if (t.valid && t.valid(&t, p[v], &dev->info)) { fprintf(stderr, "not valid for the shape: %s\n", ps[v]); return 2; }
    for (int h = 0; h < np; h++) {
      if (run_once(dev, &gs[h], &ns[h], p[v], &s, ybuf, &err)) { fprintf(stderr, "%s%s: %s\n", h ? "fp16 " : "", ps[v], err.msg); return 1; }
      if (check(dev, &gs[h], host[h], out[h][0], ps[v], h ? 1e-2 : 1e-4)) return 1;
      run_once(dev, &gs[h], &ns[h], p[v], &s, ybuf, &err); /* warm */
    }
  }
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < nv; v++)
      for (int h = 0; h < (host_blas[v] ? 1 : np); h++) {
        double t0 = now_us();
        if (run_once(dev, &gs[h], &ns[h], host_blas[v] ? NULL : p[v], &s, ybuf, &err)) { fprintf(stderr, "%s: %s\n", ps[v], err.msg); return 1; }
        tm[v][h][r] = now_us() - t0;
      }
  double flops = 2.0 * (double)(s.Z * s.M) * (double)s.N * (double)s.K;
  printf("%s Z=%lld M=%lld N=%lld K=%lld%s%s: %.1f MFLOP, %d rounds alternated\n", s.bias ? "Gemm" : "MatMul", s.Z, s.M, s.N, s.K,
         s.shared_b ? " B constant" : " B per batch", s.bias ? " +bias" : "", flops / 1e6, rounds);
  for (int v = 0; v < nv; v++)
    for (int h = 0; h < (host_blas[v] ? 1 : np); h++) {
      qsort(tm[v][h], (size_t)rounds, sizeof(double), cmp_d);
      double med = tm[v][h][rounds / 2];
      double q1 = tm[v][h][rounds / 4];
      printf("  median %8.1f us  p25 %8.1f us  min %8.1f us  %6.1f GFLOP/s (p25 %6.1f)  %s%s\n", med, q1, tm[v][h][0], flops / med / 1e3,
             flops / q1 / 1e3, s.fp16 && !host_blas[v] ? (h ? "fp16 " : "fp32 ") : "", ps[v]);
    }
  free(ybuf);
  (void)t16;
  return 0;
}
