/* bench/conv_layer.c: one Conv layer on the device with several forced
 * parameter vectors of the conv family, timed alternately in the same run
 * (round r runs every vector once, in turn), so that load on a shared
 * machine hits all of them alike. Each vector's output is first checked
 * against the CPU reference (max |dev - ref| <= 1e-4 max |ref| + 1e-5).
 * Prints per vector the median and minimum wall time of a run (launches and
 * clFinish), GFLOP/s of the direct convolution's FLOPs and GB/s of the
 * tensors it must move once (input, weights, output) at the median.
 *
 * usage: bench_conv_layer N,C,H,W,M,K,S,PAD,GROUP [--rounds R] [--device SEL] [--blk L] [--split] PARAMS...
 *   --blk L: the input (bit 0) and/or the output (bit 1) in blocks of 16
 *   channels (kiln_value.blk, as runtime/layout.c plans them; 4: blocks
 *   of 8), so that blocked instances are timed against NCHW ones.
 *   --split: per vector, also each launch's median device time (profiling
 *   events over the rounds, in launch order: a Winograd's input transform,
 *   products and output transform one by one).
 *   PARAMS: "CONV_ALGO=6,GEMM_TM=2,GEMM_TN=32" (others at the descriptor's
 *   defaults; the vector must be valid for the shape), or "default".
 * Exit 0 ok, 1 a wrong result or failure, 2 usage. */
#include "kiln_internal.h"
#include "bench_device.h"
#include <math.h>
#include <time.h>

#define MAXV 16

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Runs node n once with parameters p; 0 ok. */
static int run_once(kiln_device *d, kiln_graph *g, kiln_node *n, const int *p, kiln_error *err) {
  kiln_exec x = {.d = d, .g = g, .ov_node = (int)(n - g->nodes), .ov_params = p};
  if (n->op->dev(&x, n, err)) return 1;
  clFinish(d->q);
  return 0;
}

/* As run_once, with profiling: each launch's device time (us) into
 * us[0..*nl), at most cap of them. */
static int run_split(kiln_device *d, kiln_graph *g, kiln_node *n, const int *p, double *us, int cap, int *nl, kiln_error *err) {
  kiln_exec x = {.d = d, .g = g, .ov_node = (int)(n - g->nodes), .ov_params = p, .profile = true};
  int rc = n->op->dev(&x, n, err) ? 1 : 0;
  clFinish(d->q);
  *nl = 0;
  for (int i = 0; i < x.nevents; i++) {
    cl_ulong a = 0, b = 0;
    clGetEventProfilingInfo(x.events[i], CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
    clGetEventProfilingInfo(x.events[i], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
    if (*nl < cap) us[(*nl)++] = (double)(b - a) / 1e3;
    clReleaseEvent(x.events[i]);
  }
  free(x.events);
  return rc;
}

static int check(kiln_device *d, kiln_graph *g, void **host, int yi, const char *ps) {
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
  if (!(maxd <= 1e-4 * maxref + 1e-5)) { printf("WRONG %s: max err %.3g (max |ref| %.3g)\n", ps, maxd, maxref); return 1; }
  return 0;
}

int main(int argc, char **argv) {
  long long sh[9];
  int rounds = 20, nv = 0, blk = 0, split = 0;
  const char *devsel = NULL, *vecs[MAXV];
  if (argc < 3 || sscanf(argv[1], "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", &sh[0], &sh[1], &sh[2], &sh[3], &sh[4], &sh[5], &sh[6], &sh[7],
                         &sh[8]) != 9) {
    fprintf(stderr, "usage: %s N,C,H,W,M,K,S,PAD,GROUP [--rounds R] [--device SEL] [--blk L] [--split] PARAMS...\n", argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) devsel = argv[++i];
    else if (!strcmp(argv[i], "--blk") && i + 1 < argc) blk = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--split")) split = 1;
    else if (nv < MAXV) vecs[nv++] = argv[i];
  }
  if (nv == 0 || rounds < 1) { fprintf(stderr, "%s: no parameter vectors\n", argv[0]); return 2; }
  kiln_device *dev;
  kiln_error err = {0};
  if (bench_device_open(devsel, &dev, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
  kiln_graph g = {0};
  kiln_node n = {0};
  int64_t st[2] = {sh[6], sh[6]}, dl[2] = {1, 1}, pads[4] = {sh[7], sh[7], sh[7], sh[7]};
  kiln_attr attrs[4] = {{.name = "strides", .type = KILN_ATTR_INTS, .n = 2, .ints = st},
                        {.name = "dilations", .type = KILN_ATTR_INTS, .n = 2, .ints = dl},
                        {.name = "pads", .type = KILN_ATTR_INTS, .n = 4, .ints = pads},
                        {.name = "group", .type = KILN_ATTR_INT, .i = sh[8]}};
  int in[3], out[1];
  n.name = "conv";
  n.op_type = "Conv";
  n.domain = "";
  n.opset = 13;
  n.nin = 3;
  n.nout = 1;
  n.in = in;
  n.out = out;
  n.attrs = attrs;
  n.nattr = 4;
  n.op = kiln_op_lookup("", "Conv");
  g.nodes = &n;
  g.nnodes = 1;
  const char *names[3] = {"x", "w", "b"};
  uint64_t rng = 12345;
  for (int i = 0; i < 3; i++) {
    in[i] = kiln_graph_add_value(&g, names[i]);
    kiln_value *v = &g.vals[in[i]];
    v->dtype = KILN_DT_FLOAT;
    if (i == 0) { v->rank = 4; v->dims[0] = sh[0]; v->dims[1] = sh[1]; v->dims[2] = sh[2]; v->dims[3] = sh[3]; }
    else if (i == 1) { v->rank = 4; v->dims[0] = sh[4]; v->dims[1] = sh[1] / sh[8]; v->dims[2] = v->dims[3] = sh[5]; v->is_const = 1; }
    else { v->rank = 1; v->dims[0] = sh[4]; v->is_const = 1; }
    int64_t ne = kiln_value_numel(v);
    v->data = malloc(kiln_value_bytes(v) + 8);
    for (int64_t k = 0; k < ne; k++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      kiln_store_f(v->data, KILN_DT_FLOAT, k, (double)(rng >> 40) / (double)(1 << 24) - 0.5);
    }
  }
  out[0] = kiln_graph_add_value(&g, "y");
  int bsz = blk & 4 ? 8 : 16;
  g.vals[in[0]].blk = blk & 1 ? bsz : 0;
  void **host = calloc((size_t)g.nvals, sizeof(void *));
  kiln_tunable t;
  int rc = 1;
  if (n.op->infer(&g, &n, &err) || n.op->dev_check(&g, &n, &err) || kiln_node_run_ref_host(&g, &n, host, &err)) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return 1;
  }
  g.vals[out[0]].blk = blk & 2 ? bsz : 0; /* the output, once inferred */
  if (n.op->tunable(&g, &n, &t)) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return 1;
  }
  for (int i = 0; i < g.nvals; i++) {
    kiln_value *v = &g.vals[i];
    size_t b = kiln_value_dev_bytes(v);
    if (!(v->buf = kiln_cl_alloc(dev, b ? b : 16, &err)) || (v->data && b && kiln__value_upload(dev, v, &err))) return 1;
  }
  /* a copy of the node per vector: a node keeps the weights packed for the
   * last parameters it ran (conv.c conv_packed), so vectors alternating on
   * one node timed the host's repacking and upload with every run */
  kiln_node *nodes = calloc((size_t)nv, sizeof *nodes);
  if (!nodes) return 1;
  for (int v = 0; v < nv; v++) nodes[v] = n;
  g.nodes = nodes;
  g.nnodes = nv;
  static int p[MAXV][KILN_MAX_KPARAMS];
  static double tm[MAXV][1024];
  if (rounds > 1024) rounds = 1024;
  char ps[MAXV][256];
  for (int v = 0; v < nv; v++) {
    if (strcmp(vecs[v], "default") ? kiln_tunable_parse(&t, vecs[v], p[v]) : kiln_tunable_parse(&t, "", p[v])) {
      fprintf(stderr, "bad parameters %s\n", vecs[v]);
      return 2;
    }
    kiln_tunable_str(&t, p[v], ps[v], sizeof ps[v]);
    if (t.valid && t.valid(&t, p[v], &dev->info)) { fprintf(stderr, "not valid for the shape: %s\n", ps[v]); return 2; }
    if (run_once(dev, &g, &nodes[v], p[v], &err)) { fprintf(stderr, "%s: %s\n", ps[v], err.msg); return 1; }
    if (check(dev, &g, host, out[0], ps[v])) goto done;
    run_once(dev, &g, &nodes[v], p[v], &err); /* warm */
  }
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < nv; v++) {
      double t0 = now_us();
      if (run_once(dev, &g, &nodes[v], p[v], &err)) { fprintf(stderr, "%s: %s\n", ps[v], err.msg); goto done; }
      tm[v][r] = now_us() - t0;
    }
  double flops = 2.0 * (double)kiln_value_numel(&g.vals[out[0]]) * (double)(sh[1] / sh[8]) * (double)(sh[5] * sh[5]);
  double bytes = 0;
  for (int i = 0; i < g.nvals; i++) bytes += (double)kiln_value_bytes(&g.vals[i]);
  printf("conv N=%lld C=%lld H=%lld W=%lld M=%lld k=%lld s=%lld pad=%lld group=%lld: %.1f MFLOP, %d rounds alternated\n", sh[0], sh[1], sh[2], sh[3],
         sh[4], sh[5], sh[6], sh[7], sh[8], flops / 1e6, rounds);
  for (int v = 0; v < nv; v++) {
    qsort(tm[v], (size_t)rounds, sizeof(double), cmp_d);
    double med = tm[v][rounds / 2];
    printf("  median %8.1f us  min %8.1f us  %6.1f GFLOP/s  %5.1f GB/s  %s\n", med, tm[v][0], flops / med / 1e3, bytes / med / 1e3, ps[v]);
    if (!split) continue;
    enum { MAXL = 8 };
    double *lt = calloc((size_t)rounds * MAXL, sizeof(double)), one[MAXL];
    int nl = 0;
    for (int r = 0; lt && r < rounds; r++) {
      if (run_split(dev, &g, &nodes[v], p[v], one, MAXL, &nl, &err)) { fprintf(stderr, "%s: %s\n", ps[v], err.msg); free(lt); goto done; }
      for (int l = 0; l < nl; l++) lt[l * rounds + r] = one[l];
    }
    for (int l = 0; lt && l < nl; l++) {
      qsort(lt + l * rounds, (size_t)rounds, sizeof(double), cmp_d);
      printf("    launch %d: median %8.1f us device time\n", l, lt[l * rounds + rounds / 2]);
    }
    free(lt);
  }
  rc = 0;
done:
  return rc;
}
