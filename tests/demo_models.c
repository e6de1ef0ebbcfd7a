/* demo_models.c: writes the built-in demo models ("cnn", "transformer", "mobile") to a
 * temporary directory, checks that they load with the expected interface and
 * that writing is deterministic per seed, runs each on the OpenCL device with
 * seeded random inputs and compares the outputs of its third run (launches
 * replayed, runtime/replay.c) with the CPU reference:
 * max |dev - ref| must be <= 1e-3 * max |ref| + 1e-5.
 * Exit 0 = pass, 1 = fail, 77 = skipped (no OpenCL device).
 * Usage: kiln_demo_models [--device SELECTOR] [--keep] */
#include "kiln.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SKIP 77

static const struct {
  const char *name;
  const char *input, *output;
  int in_rank, out_rank;
  int64_t in_dims[4], out_dims[4];
} cases[] = {
  { "cnn", "input", "logits", 4, 2, {1, 3, 32, 32}, {1, 10} },
  { "transformer", "tokens", "hidden", 3, 3, {1, 16, 64}, {1, 16, 64} },
  { "mobile", "input", "logits", 4, 2, {1, 3, 32, 32}, {1, 10} },
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whole-file read; returns a malloc'd buffer and its length, NULL on failure. */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
  fclose(f);
  *len = buf ? (size_t)n : 0;
  return buf;
}

/* 0 if files a and b have equal bytes, 1 if they differ, -1 if unreadable. */
static int file_cmp(const char *a, const char *b) {
  size_t la, lb;
  unsigned char *pa = slurp(a, &la), *pb = slurp(b, &lb);
  int rc = (!pa || !pb) ? -1 : (la != lb || memcmp(pa, pb, la) != 0);
  free(pa);
  free(pb);
  return rc;
}

static uint64_t rng_state;
static double rng_normal(void) {
  double u[2];
  for (int i = 0; i < 2; i++) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    u[i] = ((double)(z >> 11) + 0.5) / 9007199254740992.0;
  }
  return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* Runs one demo model; returns 0 on pass, 1 on failure, SKIP with no device. */
static int run_case(int ci, const char *dir, const char *selector, kiln_device **dev) {
  const char *name = cases[ci].name;
  char path[512], path2[512], path3[512];
  kiln_error err = {0};
  kiln_model *m = NULL;
  kiln_session *s = NULL;
  kiln_tensor *in = NULL, **ref = NULL;
  int nref = 0, fail = 1;
  snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
  snprintf(path2, sizeof path2, "%s/%s_again.onnx", dir, name);
  snprintf(path3, sizeof path3, "%s/%s_seed2.onnx", dir, name);

  if (kiln_demo_write(name, path, 1, &err) || kiln_demo_write(name, path2, 1, &err) || kiln_demo_write(name, path3, 2, &err)) {
    fprintf(stderr, "FAIL %s: write: %s\n", name, err.msg);
    return 1;
  }
  if (file_cmp(path, path2) != 0) { fprintf(stderr, "FAIL %s: two writes with seed 1 differ\n", name); return 1; }
  if (file_cmp(path, path3) != 1) { fprintf(stderr, "FAIL %s: seeds 1 and 2 give the same file\n", name); return 1; }

  if (kiln_model_load(path, NULL, &m, &err)) { fprintf(stderr, "FAIL %s: load: %s\n", name, err.msg); return 1; }
  kiln_value_info vi;
  if (kiln_model_num_inputs(m) != 1 || kiln_model_num_outputs(m) != 1) {
    fprintf(stderr, "FAIL %s: %d inputs and %d outputs, expected 1 and 1\n", name, kiln_model_num_inputs(m), kiln_model_num_outputs(m));
    goto done;
  }
  kiln_model_input_info(m, 0, &vi);
  if (strcmp(vi.name, cases[ci].input) || vi.dtype != KILN_DT_FLOAT || vi.rank != cases[ci].in_rank ||
      memcmp(vi.dims, cases[ci].in_dims, sizeof(int64_t) * (size_t)vi.rank)) {
    fprintf(stderr, "FAIL %s: input '%s' does not have the expected name, type or shape\n", name, vi.name);
    goto done;
  }
  kiln_model_output_info(m, 0, &vi);
  if (strcmp(vi.name, cases[ci].output)) { fprintf(stderr, "FAIL %s: output is '%s', expected '%s'\n", name, vi.name, cases[ci].output); goto done; }
  if (kiln_model_check_supported(m, &err)) { fprintf(stderr, "FAIL %s: %s\n", name, err.msg); goto done; }

  if (!*dev && kiln_device_open(selector, dev, &err)) {
    fprintf(stderr, "SKIP %s: %s\n", name, err.msg);
    fail = err.status == KILN_ENODEVICE ? SKIP : 1;
    goto done;
  }
  if (kiln_session_create(m, *dev, &s, &err)) { fprintf(stderr, "FAIL %s: session: %s\n", name, err.msg); goto done; }
  in = kiln_tensor_new(KILN_DT_FLOAT, cases[ci].in_rank, cases[ci].in_dims);
  if (!in) { fprintf(stderr, "FAIL %s: out of memory\n", name); goto done; }
  rng_state = 1234 + (uint64_t)ci;
  float *x = in->data;
  for (int64_t i = 0; i < kiln_tensor_numel(in); i++) x[i] = (float)rng_normal();
  if (kiln_session_set_input(s, cases[ci].input, in, &err)) { fprintf(stderr, "FAIL %s: set_input: %s\n", name, err.msg); goto done; }
  double t0 = now_ms();
  if (kiln_session_run(s, &err)) { fprintf(stderr, "FAIL %s: run: %s\n", name, err.msg); goto done; }
  double t1 = now_ms();
  if (kiln_session_run(s, &err)) { fprintf(stderr, "FAIL %s: second run: %s\n", name, err.msg); goto done; }
  double t2 = now_ms();
  /* the third run replays the launches the second recorded (runtime/replay.c): its outputs are the ones compared */
  if (kiln_session_run(s, &err)) { fprintf(stderr, "FAIL %s: third run: %s\n", name, err.msg); goto done; }
  if (kiln_session_run_reference(s, &ref, &nref, &err)) { fprintf(stderr, "FAIL %s: reference: %s\n", name, err.msg); goto done; }
  const kiln_tensor *out = kiln_session_output(s, 0);
  if (nref != 1 || !out || !ref[0] || out->dtype != KILN_DT_FLOAT || ref[0]->dtype != KILN_DT_FLOAT ||
      out->rank != cases[ci].out_rank || memcmp(out->dims, cases[ci].out_dims, sizeof(int64_t) * (size_t)out->rank) ||
      ref[0]->rank != out->rank || memcmp(ref[0]->dims, out->dims, sizeof(int64_t) * (size_t)out->rank)) {
    fprintf(stderr, "FAIL %s: output missing or of the wrong type or shape\n", name);
    goto done;
  }
  const float *a = out->data, *r = ref[0]->data;
  double maxref = 0, maxerr = 0;
  int64_t n = kiln_tensor_numel(out), worst = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(r[i]) || !isfinite(a[i])) { fprintf(stderr, "FAIL %s: non-finite output at %lld (device %g, reference %g)\n", name, (long long)i, a[i], r[i]); goto done; }
    if (fabs(r[i]) > maxref) maxref = fabs(r[i]);
    double e = fabs((double)a[i] - r[i]);
    if (e > maxerr) { maxerr = e; worst = i; }
  }
  double tol = 1e-3 * maxref + 1e-5;
  printf("%-12s max|ref| %.4g  max err %.3g (tol %.3g, worst at %lld: device %.6g ref %.6g)  first run %.1f ms, second %.1f ms\n",
         name, maxref, maxerr, tol, (long long)worst, a[worst], r[worst], t1 - t0, t2 - t1);
  if (maxref == 0) { fprintf(stderr, "FAIL %s: reference output is all zeros\n", name); goto done; }
  if (!(maxerr <= tol)) { fprintf(stderr, "FAIL %s: device output differs from the reference by %g > %g\n", name, maxerr, tol); goto done; }
  fail = 0;
done:
  for (int i = 0; ref && i < nref; i++) kiln_tensor_free(ref[i]);
  free(ref);
  kiln_tensor_free(in);
  kiln_session_free(s);
  kiln_model_free(m);
  return fail;
}

int main(int argc, char **argv) {
  const char *selector = getenv("KILN_DEVICE");
  int keep = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) selector = argv[++i];
    else if (!strcmp(argv[i], "--keep")) keep = 1;
    else { fprintf(stderr, "usage: %s [--device SELECTOR] [--keep]\n", argv[0]); return 2; }
  }
  const char *tmp = getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kiln_demo_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }

  /* unknown names are refused with a message */
  kiln_error err = {0};
  char bad[600];
  snprintf(bad, sizeof bad, "%s/bad.onnx", dir);
  int failed = 0, skipped = 0, passed = 0;
  if (kiln_demo_write("nope", bad, 1, &err) != KILN_EINVAL || !strstr(err.msg, "nope")) {
    fprintf(stderr, "FAIL: an unknown demo name was not refused with KILN_EINVAL\n");
    failed++;
  }

  kiln_device *dev = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = run_case((int)i, dir, selector, &dev);
    if (rc == SKIP) skipped++;
    else if (rc) failed++;
    else passed++;
  }
  kiln_device_close(dev);
  if (!keep) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      const char *sfx[] = {"", "_again", "_seed2"};
      for (int k = 0; k < 3; k++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s%s.onnx", dir, cases[i].name, sfx[k]);
        unlink(p);
      }
    }
    rmdir(dir);
  } else {
    printf("models kept in %s\n", dir);
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (failed) return 1;
  return skipped ? SKIP : 0;
}
