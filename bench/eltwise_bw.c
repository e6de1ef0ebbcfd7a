/* eltwise_bw.c: memory-bound kernels against the device's copy bandwidth.
 *
 * For each ONNX model given (small graphs of element-wise, reduction,
 * softmax and normalization nodes; bench/eltwise_bw.sh writes them), the
 * model runs with profiling on: the kernel time per inference is the sum of
 * the nodes' kernel spans (median over the runs), the bytes moved are the
 * graph's inputs read once plus its outputs written once, and
 *   GB/s = bytes / kernel time,
 * printed next to kiln's probed large-buffer copy bandwidth (copy_128MiB,
 * counted as read + write) and a host memcpy of the same bytes in the same
 * run (bytes / 2 copied: a read and a write of bytes / 2 each, the best of
 * the repeats) as the peer.
 *
 * usage: bench_eltwise_bw [--device SEL] [--repeat N] [--no-fusion] [--copy GBPS] MODEL.onnx...
 * --copy takes the copy figure instead of probing (the probe takes ~2 s).
 * One line per model: name, nodes run, kernel us, MB, GB/s, fraction of the
 * probed copy bandwidth, memcpy GB/s and the fraction of it. */
#include "kiln.h"
#include "bench_device.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Host memcpy bandwidth moving `bytes` (read + write), best of `rep`. */
static double memcpy_gbs(size_t bytes, int rep) {
  size_t half = bytes / 2 ? bytes / 2 : 1;
  char *a = malloc(half), *b = malloc(half);
  if (!a || !b) { free(a); free(b); return 0; }
  memset(a, 1, half);
  memset(b, 2, half);
  double best = 1e9;
  for (int r = 0; r < rep; r++) {
    double t = now();
    memcpy(b, a, half);
    t = now() - t;
    if (t < best) best = t;
    a[r % half] ^= b[(r * 7) % half]; /* keep the copies observable */
  }
  free(a);
  free(b);
  return 2.0 * (double)half / best * 1e-9;
}

static uint64_t value_bytes(const kiln_value_info *v) {
  uint64_t n = kiln_dtype_size(v->dtype);
  for (int i = 0; i < v->rank; i++) n *= (uint64_t)(v->dims[i] > 0 ? v->dims[i] : 0);
  return n;
}

/* Median kernel time per inference (us) of model `path` and its bytes. */
static int bench_model(kiln_device *d, const char *path, int repeat, int fusion, double *us, uint64_t *bytes, int *nodes, kiln_error *err) {
  kiln_model *m = NULL;
  kiln_session *s = NULL;
  double *t = calloc((size_t)repeat, sizeof *t);
  int rc = t ? kiln_model_load(path, NULL, &m, err) : KILN_ENOMEM;
  if (!rc) rc = kiln_session_create(m, d, &s, err);
  *bytes = 0;
  for (int i = 0; !rc && i < kiln_model_num_inputs(m); i++) {
    kiln_value_info vi;
    kiln_model_input_info(m, i, &vi);
    kiln_tensor *x = kiln_tensor_new(vi.dtype, vi.rank, vi.dims);
    if (!x) { rc = KILN_ENOMEM; break; }
    int64_t ne = kiln_tensor_numel(x);
    if (vi.dtype == KILN_DT_FLOAT)
      for (int64_t k = 0; k < ne; k++) ((float *)x->data)[k] = (float)((k * 7919 % 2001) - 1000) * 1e-3f;
    *bytes += value_bytes(&vi);
    rc = kiln_session_set_input(s, vi.name, x, err);
    kiln_tensor_free(x);
  }
  if (!rc) {
    kiln_session_set_fusion(s, fusion);
    kiln_session_set_profiling(s, 1);
  }
  for (int r = -2; !rc && r < repeat; r++) { /* two warm-up runs: planning, compilation */
    if ((rc = kiln_session_run(s, err)) != 0) break;
    kiln_node_time *nt = NULL;
    int n = 0;
    if ((rc = kiln_session_node_times(s, &nt, &n)) != 0) { snprintf(err->msg, sizeof err->msg, "no profiled run"); break; }
    double sum = 0;
    for (int k = 0; k < n; k++) sum += nt[k].span_us;
    free(nt);
    *nodes = n;
    if (r >= 0) t[r] = sum;
  }
  for (int i = 0; !rc && i < kiln_model_num_outputs(m); i++) { /* the outputs of the last run (shapes known now) */
    const kiln_tensor *y = kiln_session_output(s, i);
    if (y) *bytes += (uint64_t)kiln_tensor_numel(y) * kiln_dtype_size(y->dtype);
  }
  if (!rc) {
    qsort(t, (size_t)repeat, sizeof *t, cmp_d);
    *us = t[repeat / 2];
  }
  free(t);
  kiln_session_free(s);
  kiln_model_free(m);
  return rc;
}

int main(int argc, char **argv) {
  const char *sel = NULL;
  int repeat = 20, fusion = 1, first = argc;
  double copy = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) sel = argv[++i];
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--copy") && i + 1 < argc) copy = atof(argv[++i]);
    else if (!strcmp(argv[i], "--no-fusion")) fusion = 0;
    else if (argv[i][0] == '-') { fprintf(stderr, "bench_eltwise_bw: unknown option %s\n", argv[i]); return 2; }
    else { first = i; break; }
  }
  if (first >= argc || repeat < 1) {
    fprintf(stderr, "usage: bench_eltwise_bw [--device SEL] [--repeat N] [--no-fusion] [--copy GBPS] MODEL.onnx...\n");
    return 2;
  }
  kiln_error err = {0};
  kiln_device *d = NULL;
  if (bench_device_open(sel, &d, &err)) { fprintf(stderr, "bench_eltwise_bw: %s\n", err.msg); return 77; }
  if (copy <= 0) {
    kiln_probe_figure *f = NULL;
    int nf = 0;
    if (kiln_probe(d, NULL, &f, &nf, &err)) { fprintf(stderr, "bench_eltwise_bw: probe: %s\n", err.msg); kiln_device_close(d); return 1; }
    for (int i = 0; i < nf; i++)
      if (!strcmp(f[i].name, "copy_128MiB")) copy = f[i].value;
    free(f);
  }
  printf("device: %s; probed copy bandwidth %.1f GB/s\n", kiln_device_get_info(d)->name, copy);
  printf("%-28s %5s %10s %8s %8s %8s %9s %8s\n", "model", "nodes", "kernel us", "MB", "GB/s", "of copy", "memcpy", "of memcpy");
  int fails = 0;
  for (int i = first; i < argc; i++) {
    double us = 0;
    uint64_t bytes = 0;
    int nodes = 0;
    memset(&err, 0, sizeof err);
    const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
    if (bench_model(d, argv[i], repeat, fusion, &us, &bytes, &nodes, &err)) {
      printf("%-28s failed: %s\n", name, err.msg);
      fails++;
      continue;
    }
    double gbs = us > 0 ? (double)bytes / (us * 1e-6) * 1e-9 : 0, mc = memcpy_gbs((size_t)bytes, 20);
    printf("%-28s %5d %10.1f %8.2f %8.1f %7.0f%% %8.1f %8.0f%%\n", name, nodes, us, (double)bytes / 1e6, gbs, copy > 0 ? 100 * gbs / copy : 0, mc,
           mc > 0 ? 100 * gbs / mc : 0);
  }
  kiln_device_close(d);
  return fails ? 1 : 0;
}
