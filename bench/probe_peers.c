/* probe_peers.c: kiln's device probe next to peer figures measured in the
 * same run on the host: the probe's arithmetic peak against OpenBLAS SGEMM
 * (1024^3, 2 threads) and its large-buffer copy bandwidth against a plain C
 * memcpy (counted as read + write, like the probe). Prints the ratios the
 * cost-model issue asks for: peak >= 0.6x OpenBLAS, copy >= 0.6x memcpy. */
#include "kiln.h"
#include "bench_device.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *dev = argc > 1 ? argv[1] : NULL;
  int n = 1024;
  float *a = malloc(4ul * n * n), *b = malloc(4ul * n * n), *c = malloc(4ul * n * n);
  size_t sz = (size_t)128 << 20;
  char *x = malloc(sz), *y = malloc(sz);
  if (!a || !b || !c || !x || !y) return 2;
  for (long i = 0; i < (long)n * n; i++) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.2f; }
  memset(x, 1, sz);
  memset(y, 2, sz);
  openblas_set_num_threads(2);
  double blas = 1e9, cp = 1e9;
  for (int r = 0; r < 5; r++) {
    double t = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    t = now() - t;
    if (t < blas) blas = t;
    t = now();
    memcpy(y, x, sz);
    t = now() - t;
    if (t < cp) cp = t;
  }
  double blas_gf = 2.0 * n * n * n / blas * 1e-9, memcpy_gb = 2.0 * sz / cp * 1e-9;
  kiln_error err = {0};
  kiln_device *d = NULL;
  if (bench_device_open(dev, &d, &err)) { fprintf(stderr, "probe_peers: %s\n", err.msg); return 2; }
  kiln_probe_figure *f = NULL;
  int nf = 0;
  if (kiln_probe(d, NULL, &f, &nf, &err)) { fprintf(stderr, "probe_peers: %s\n", err.msg); return 1; }
  double peak = 0, copy = 0;
  for (int i = 0; i < nf; i++) {
    if (!strcmp(f[i].name, "flops_peak")) peak = f[i].value;
    if (!strcmp(f[i].name, "copy_128MiB")) copy = f[i].value;
  }
  printf("device: %s\n", kiln_device_get_info(d)->name);
  printf("%-34s %10.1f GFLOP/s | OpenBLAS SGEMM 1024^3 %8.1f GFLOP/s | ratio %.2f (target >= 0.6)\n", "kiln probe arithmetic peak", peak, blas_gf, peak / blas_gf);
  printf("%-34s %10.1f GB/s    | memcpy 128 MiB       %8.1f GB/s    | ratio %.2f (target >= 0.6)\n", "kiln probe copy bandwidth 128 MiB", copy, memcpy_gb, copy / memcpy_gb);
  free(f);
  kiln_device_close(d);
  free(a); free(b); free(c); free(x); free(y);
  return 0;
}
