/* conformance.c: runs the official ONNX backend tests (libonnx-testdata) on
 * the OpenCL device and compares with the expected outputs (rtol 1e-3, atol
 * 1e-5 for floats, exact for integers and bools). The CPU reference is run on
 * the same inputs and must agree too. A test that cannot run every node on the
 * device counts as failed ("unsupported").
 *
 * usage: kiln_conformance [--device SEL] [--expected FILE] [--write-passes FILE]
 *                         [--filter SUBSTR] DIR...
 * Each DIR is either one test (has model.onnx) or a folder of tests.
 * Exit status: 0 when every test named in --expected passed, 1 otherwise. */
#include "kiln.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct { char **v; int n, cap; } strlist;
static void sl_add(strlist *l, const char *s) {
  if (l->n == l->cap) { l->cap = l->cap ? l->cap * 2 : 256; l->v = realloc(l->v, sizeof(char *) * (size_t)l->cap); }
  l->v[l->n++] = strdup(s);
}
static void sl_free(strlist *l) { for (int i = 0; i < l->n; i++) free(l->v[i]); free(l->v); memset(l, 0, sizeof *l); }
/* In a sanitizer build (KILN_SANITIZE) the worker's _exit() skips
 * LeakSanitizer's exit-time check; the worker runs it itself (NULL otherwise). */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));
static int sl_has(const strlist *l, const char *s) { for (int i = 0; i < l->n; i++) if (!strcmp(l->v[i], s)) return 1; return 0; }
static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_dir(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISDIR(st.st_mode); }
static int exists(const char *p) { struct stat st; return stat(p, &st) == 0; }

static double now_s(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec * 1e-9; }

static double getf(const kiln_tensor *t, int64_t k) {
  switch (t->dtype) {
  case KILN_DT_FLOAT: return ((float *)t->data)[k];
  case KILN_DT_DOUBLE: return ((double *)t->data)[k];
  case KILN_DT_INT64: return (double)((int64_t *)t->data)[k];
  case KILN_DT_INT32: return ((int32_t *)t->data)[k];
  case KILN_DT_INT16: return ((int16_t *)t->data)[k];
  case KILN_DT_INT8: return ((int8_t *)t->data)[k];
  case KILN_DT_UINT8: case KILN_DT_BOOL: return ((uint8_t *)t->data)[k];
  case KILN_DT_UINT16: return ((uint16_t *)t->data)[k];
  case KILN_DT_UINT32: return ((uint32_t *)t->data)[k];
  case KILN_DT_UINT64: return (double)((uint64_t *)t->data)[k];
  case KILN_DT_BFLOAT16: {
    uint32_t u = (uint32_t)((uint16_t *)t->data)[k] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  case KILN_DT_FLOAT16: {
    uint16_t h = ((uint16_t *)t->data)[k];
    uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    double f = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 1024, (int)e - 25);
    return s ? -f : f;
  }
  }
  return 0;
}

/* Compares got against want; returns 0 if equal within tolerance, sets *maxerr. */
static int compare(const kiln_tensor *got, const kiln_tensor *want, double *maxerr, char *why, size_t wl) {
  *maxerr = 0;
  if (got->dtype != want->dtype) { snprintf(why, wl, "dtype %s, expected %s", kiln_dtype_name(got->dtype), kiln_dtype_name(want->dtype)); return 1; }
  int64_t ng = kiln_tensor_numel(got), nw = kiln_tensor_numel(want);
  int shape_ok = got->rank == want->rank;
  for (int i = 0; shape_ok && i < got->rank; i++) shape_ok = got->dims[i] == want->dims[i];
  if (!shape_ok) {
    char a[128] = "", b[128] = "";
    size_t la = 0, lb = 0;
    for (int i = 0; i < got->rank; i++) la += (size_t)snprintf(a + la, sizeof a - la, "%s%lld", i ? "," : "", (long long)got->dims[i]);
    for (int i = 0; i < want->rank; i++) lb += (size_t)snprintf(b + lb, sizeof b - lb, "%s%lld", i ? "," : "", (long long)want->dims[i]);
    snprintf(why, wl, "shape [%s], expected [%s]", a, b);
    return 1;
  }
  (void)nw;
  if (got->dtype == KILN_DT_STRING) {
    for (int64_t k = 0; k < ng; k++) {
      const char *g = ((char **)got->data)[k], *w = ((char **)want->data)[k];
      if (strcmp(g ? g : "", w ? w : "")) { snprintf(why, wl, "string %lld: got '%s', expected '%s'", (long long)k, g ? g : "", w ? w : ""); *maxerr = 1; return 1; }
    }
    return 0;
  }
  int isf = got->dtype == KILN_DT_FLOAT || got->dtype == KILN_DT_DOUBLE || got->dtype == KILN_DT_FLOAT16 || got->dtype == KILN_DT_BFLOAT16;
  int bad = 0;
  int64_t worst = -1;
  for (int64_t k = 0; k < ng; k++) {
    double g = getf(got, k), w = getf(want, k);
    if (isf) {
      if (isnan(w) || isnan(g)) { if (isnan(w) != isnan(g)) { bad = 1; worst = k; *maxerr = INFINITY; } continue; }
      if (isinf(w) || isinf(g)) { if (g != w) { bad = 1; worst = k; *maxerr = INFINITY; } continue; }
      double e = fabs(g - w);
      if (e > 1e-5 + 1e-3 * fabs(w)) { bad = 1; if (e > *maxerr || worst < 0) { *maxerr = e; worst = k; } }
    } else if (got->dtype == KILN_DT_INT64 || got->dtype == KILN_DT_UINT64) {
      int64_t gi = ((int64_t *)got->data)[k], wi = ((int64_t *)want->data)[k];
      if (gi != wi) { bad = 1; worst = k; *maxerr = fabs((double)gi - (double)wi); }
    } else if (g != w) { bad = 1; worst = k; *maxerr = fabs(g - w); }
  }
  if (bad) snprintf(why, wl, "max abs error %.3g (element %lld: got %.6g, expected %.6g)", *maxerr, (long long)worst, getf(got, worst), getf(want, worst));
  return bad;
}

typedef enum { R_PASS, R_FAIL, R_UNSUP } result;

/* Sequence output i of the device run and of the reference run against the SequenceProto at path. */
static result compare_sequence(kiln_session *s, int i, const char *path, int optional, int set, char *msg, size_t ml) {
  kiln_error err = {0};
  kiln_tensor **want = NULL, *ot = NULL;
  int nw = 0;
  int rc = optional ? kiln_optional_read(path, &ot, &want, &nw, &err) : kiln_sequence_read(path, &want, &nw, &err);
  if (!rc && optional && !want) { kiln_tensor_free(ot); snprintf(msg, ml, "set %d output %d: expected an optional without a sequence", set, i); return R_FAIL; }
  if (rc) { snprintf(msg, ml, "set %d: %s", set, err.msg); return rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL; }
  result res = R_PASS;
  for (int ref = 0; ref < 2 && res == R_PASS; ref++) {
    kiln_tensor *const *got = NULL;
    int ng = kiln_session_output_sequence(s, i, ref, &got);
    if (ng != nw) { snprintf(msg, ml, "set %d output %d (%s): %d sequence items, expected %d", set, i, ref ? "CPU reference" : "device", ng, nw); res = R_FAIL; break; }
    for (int k = 0; k < nw && res == R_PASS; k++) {
      double e;
      char why[512];
      if (compare(got[k], want[k], &e, why, sizeof why)) { snprintf(msg, ml, "set %d output %d item %d (%s): %s", set, i, k, ref ? "CPU reference" : "device", why); res = R_FAIL; }
    }
  }
  kiln_sequence_free(want, nw);
  return res;
}

/* Compares the session's outputs (and the CPU reference's ref, when not
 * NULL) with test data set `set`'s expected ones in sd; *worst: the largest
 * error seen. R_PASS, or R_FAIL / R_UNSUP with msg saying which. */
static result compare_outputs(kiln_session *s, kiln_model *m, const char *sd, int set, kiln_tensor **ref, const char *what, double *worst, char *msg,
                              size_t ml) {
  char path[4096];
  kiln_error err = {0};
  result res = R_PASS;
  int nout = kiln_model_num_outputs(m), rc;
  for (int i = 0; i < nout && res == R_PASS; i++) {
    snprintf(path, sizeof path, "%s/output_%d.pb", sd, i);
    kiln_value_info oi;
    kiln_model_output_info(m, i, &oi);
    if (oi.dtype == KILN_DT_SEQUENCE) {
      res = compare_sequence(s, i, path, oi.optional, set, msg, ml);
      continue;
    }
    kiln_tensor *want = NULL;
    if ((rc = kiln_tensor_read(path, &want, &err)) != 0) { snprintf(msg, ml, "set %d: %s", set, err.msg); return rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL; }
    double e = 0;
    char why[512];
    const kiln_tensor *got = kiln_session_output(s, i);
    if (got->dtype == KILN_DT_BFLOAT16 && want->dtype == KILN_DT_UINT16) want->dtype = KILN_DT_BFLOAT16;
    if (compare(got, want, &e, why, sizeof why)) { snprintf(msg, ml, "set %d output %d (%s): %s", set, i, what, why); res = R_FAIL; }
    else if (ref && compare(ref[i], want, &e, why, sizeof why)) { snprintf(msg, ml, "set %d output %d (CPU reference): %s", set, i, why); res = R_FAIL; }
    if (e > *worst) *worst = e;
    kiln_tensor_free(want);
  }
  return res;
}

static result run_test(const char *dir, kiln_device *dev, char *msg, size_t ml) {
  char path[4096];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  kiln_error err = {0};
  kiln_model *m = NULL;
  int rc = kiln_model_load(path, NULL, &m, &err);
  if (rc) { snprintf(msg, ml, "load: %s", err.msg); return rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL; }
  kiln_session *s = NULL;
  if ((rc = kiln_session_create(m, dev, &s, &err)) != 0) {
    snprintf(msg, ml, "%s", err.msg);
    kiln_model_free(m);
    return rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL;
  }
  result res = R_PASS;
  int nsets = 0;
  for (int set = 0; res == R_PASS; set++) {
    char sd[4096];
    snprintf(sd, sizeof sd, "%s/test_data_set_%d", dir, set);
    if (!is_dir(sd)) break;
    nsets++;
    int nin = kiln_model_num_inputs(m);
    for (int i = 0; i < nin && res == R_PASS; i++) {
      snprintf(path, sizeof path, "%s/input_%d.pb", sd, i);
      kiln_tensor *t = NULL;
      kiln_value_info vi;
      kiln_model_input_info(m, i, &vi);
      if (!exists(path)) { snprintf(msg, ml, "set %d: no input file for '%s' (optional inputs are unsupported)", set, vi.name); res = R_UNSUP; break; }
      if (vi.optional) { /* an OptionalProto: a tensor, a sequence or nothing */
        kiln_tensor *ot = NULL, **items = NULL;
        int cnt = -1;
        if ((rc = kiln_optional_read(path, &ot, &items, &cnt, &err)) == 0)
          rc = ot ? kiln_session_set_input(s, vi.name, ot, &err) : items ? kiln_session_set_input_sequence(s, vi.name, items, cnt, &err) : kiln_session_set_input_none(s, vi.name, &err);
        if (rc) { snprintf(msg, ml, "set %d: %s", set, err.msg); res = rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL; }
        kiln_tensor_free(ot);
        kiln_sequence_free(items, cnt);
        continue;
      }
      if (vi.dtype == KILN_DT_SEQUENCE) { /* a SequenceProto */
        kiln_tensor **items = NULL;
        int cnt = 0;
        if ((rc = kiln_sequence_read(path, &items, &cnt, &err)) != 0 || (rc = kiln_session_set_input_sequence(s, vi.name, items, cnt, &err)) != 0) {
          snprintf(msg, ml, "set %d: %s", set, err.msg);
          res = rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL;
        }
        kiln_sequence_free(items, cnt);
        continue;
      }
      if ((rc = kiln_tensor_read(path, &t, &err)) != 0) { snprintf(msg, ml, "set %d: %s", set, err.msg); res = rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL; break; }
      /* the test data stores bfloat16 tensors as uint16 (NumPy has no bfloat16) */
      if (vi.dtype == KILN_DT_BFLOAT16 && t->dtype == KILN_DT_UINT16) t->dtype = KILN_DT_BFLOAT16;
      if ((rc = kiln_session_set_input(s, vi.name, t, &err)) != 0) { snprintf(msg, ml, "set %d: %s", set, err.msg); res = R_FAIL; }
      kiln_tensor_free(t);
    }
    if (res != R_PASS) break;
    if ((rc = kiln_session_run(s, &err)) != 0) {
      snprintf(msg, ml, "set %d: %s", set, err.msg);
      res = rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL;
      break;
    }
    kiln_tensor **ref = NULL;
    int nref = 0;
    if ((rc = kiln_session_run_reference(s, &ref, &nref, &err)) != 0) {
      snprintf(msg, ml, "set %d: reference: %s", set, err.msg);
      res = rc == KILN_EUNSUPPORTED ? R_UNSUP : R_FAIL;
      break;
    }
    double worst = 0;
    res = compare_outputs(s, m, sd, set, ref, "device", &worst, msg, ml);
    for (int i = 0; i < nref; i++) kiln_tensor_free(ref[i]);
    free(ref);
    /* runs 2 and 3 of the plan: the third replays the launches the second
     * recorded (runtime/replay.c) and must give the same outputs */
    for (int r = 0; r < 2 && res == R_PASS; r++)
      if ((rc = kiln_session_run(s, &err)) != 0) { snprintf(msg, ml, "set %d, run %d: %s", set, r + 2, err.msg); res = R_FAIL; }
    if (res == R_PASS) res = compare_outputs(s, m, sd, set, NULL, "device, run 3: replayed launches", &worst, msg, ml);
    if (res == R_PASS) snprintf(msg, ml, "%d set%s", nsets, nsets == 1 ? "" : "s");
  }
  kiln_session_free(s);
  kiln_model_free(m);
  return res;
}

static void collect(const char *dir, strlist *tests) {
  char p[4096];
  snprintf(p, sizeof p, "%s/model.onnx", dir);
  if (exists(p)) { sl_add(tests, dir); return; }
  DIR *d = opendir(dir);
  if (!d) return;
  strlist sub = {0};
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    char mp[4200];
    snprintf(mp, sizeof mp, "%s/model.onnx", p);
    if (exists(mp)) sl_add(&sub, p);
  }
  closedir(d);
  qsort(sub.v, (size_t)sub.n, sizeof(char *), cmpstr);
  for (int i = 0; i < sub.n; i++) { sl_add(tests, sub.v[i]); free(sub.v[i]); }
  free(sub.v);
}

/* "node/test_abs" from ".../data/node/test_abs" */
static const char *short_name(const char *dir) {
  const char *end = dir + strlen(dir);
  int slashes = 0;
  for (const char *p = end - 1; p > dir; p--)
    if (*p == '/' && ++slashes == 2) return p + 1;
  return dir;
}

int main(int argc, char **argv) {
  const char *devsel = getenv("KILN_DEVICE"), *expected = NULL, *writep = NULL, *filter = NULL;
  int per_test_timeout = 120;
  strlist roots = {0}, tests = {0}, exp = {0}, passed = {0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) devsel = argv[++i];
    else if (!strcmp(argv[i], "--expected") && i + 1 < argc) expected = argv[++i];
    else if (!strcmp(argv[i], "--write-passes") && i + 1 < argc) writep = argv[++i];
    else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) per_test_timeout = atoi(argv[++i]);
    else if (argv[i][0] == '-') { fprintf(stderr, "usage: %s [--device SEL] [--expected FILE] [--write-passes FILE] [--filter S] DIR...\n", argv[0]); return 2; }
    else sl_add(&roots, argv[i]);
  }
  if (!roots.n) sl_add(&roots, "/usr/share/libonnx-testdata/data/node");
  for (int i = 0; i < roots.n; i++) collect(roots.v[i], &tests);
  if (expected) {
    FILE *f = fopen(expected, "r");
    if (!f) { fprintf(stderr, "kiln_conformance: cannot read %s\n", expected); return 2; }
    char line[512];
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\r\n")] = 0;
      if (line[0] && line[0] != '#') sl_add(&exp, line);
    }
    fclose(f);
  }
  /* The tests run in a worker process so that a crash or a hang in one test
   * is recorded as that test's failure and the run goes on: the worker reports
   * "S <i>" before test i and "R <i> <result> <msg>" after it; when it dies
   * the parent records the test in progress and starts a new worker after it. */
  int npass = 0, nfail = 0, nunsup = 0, regress = 0, leaked = 0;
  double t0 = now_s();
  int next = 0;
  int printed_dev = 0;
  while (next < tests.n) {
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); return 2; }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
      close(fds[0]);
      FILE *w = fdopen(fds[1], "w");
      kiln_error err = {0};
      kiln_device *dev = NULL;
      kiln_options env; /* KILN_CACHE_DIR and the rest, as the kiln command reads them */
      if (kiln_device_open(devsel, &dev, &err) || kiln_options_from_env(&env, &err) || kiln_device_set_options(dev, &env, &err)) {
        fprintf(w, "E %s\n", err.msg);
        fclose(w);
        _exit(3);
      }
      if (!printed_dev) fprintf(w, "D %s (%s)\n", kiln_device_get_info(dev)->name, kiln_device_get_info(dev)->platform);
      for (int i = next; i < tests.n; i++) {
        if (filter && !strstr(short_name(tests.v[i]), filter)) continue;
        fprintf(w, "S %d\n", i);
        fflush(w);
        char msg[2048] = "";
        double ts = now_s();
        alarm(per_test_timeout);
        result r = run_test(tests.v[i], dev, msg, sizeof msg);
        alarm(0);
        for (char *p = msg; *p; p++) if (*p == '\n') *p = ' ';
        if (strlen(msg) > 300) strcpy(msg + 297, "...");
        fprintf(w, "R %d %d %.2f %s\n", i, (int)r, now_s() - ts, msg);
        fflush(w);
      }
      kiln_device_close(dev);
      if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) fprintf(w, "L\n");
      fclose(w);
      _exit(0);
    }
    close(fds[1]);
    FILE *rd = fdopen(fds[0], "r");
    char line[4096];
    int current = -1;
    while (fgets(line, sizeof line, rd)) {
      line[strcspn(line, "\n")] = 0;
      if (line[0] == 'E') { fprintf(stderr, "kiln_conformance: %s\n", line + 2); return 2; }
      if (line[0] == 'D') { printf("device: %s\n", line + 2); printed_dev = 1; continue; }
      if (line[0] == 'L') { leaked = 1; continue; }
      if (line[0] == 'S') { current = atoi(line + 2); continue; }
      if (line[0] != 'R') continue;
      int i, r;
      double secs;
      int off = 0;
      if (sscanf(line + 2, "%d %d %lf %n", &i, &r, &secs, &off) < 3) continue;
      const char *msg = line + 2 + off;
      const char *name = short_name(tests.v[i]);
      const char *tag = r == R_PASS ? "passed" : r == R_FAIL ? "FAILED" : "UNSUPPORTED";
      printf("%-11s %s (%.2fs): %s\n", tag, name, secs, msg);
      fflush(stdout);
      if (r == R_PASS) { npass++; sl_add(&passed, name); }
      else {
        if (r == R_FAIL) nfail++; else nunsup++;
        if (sl_has(&exp, name)) { regress++; printf("REGRESSION  %s was expected to pass\n", name); }
      }
      current = -1;
      next = i + 1;
    }
    fclose(rd);
    int status = 0;
    waitpid(pid, &status, 0);
    if (current >= 0) {
      const char *name = short_name(tests.v[current]);
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        printf("%-11s %s: timed out after %d s\n", "FAILED", name, per_test_timeout);
      else
        printf("%-11s %s: the test crashed the process (%s %d)\n", "FAILED", name, WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      nfail++;
      if (sl_has(&exp, name)) { regress++; printf("REGRESSION  %s was expected to pass\n", name); }
      next = current + 1;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 3) return 2;
      break; /* died between tests: stop rather than loop */
    } else break; /* worker finished everything */
  }
  if (writep) {
    FILE *f = fopen(writep, "w");
    if (f) {
      fprintf(f, "# ONNX conformance tests expected to pass on the OpenCL device (POCL). Regenerate with --write-passes.\n");
      for (int i = 0; i < passed.n; i++) fprintf(f, "%s\n", passed.v[i]);
      fclose(f);
    }
  }
  printf("# %d unsupported (counted as failed), %d wrong, %.1fs; %d regressions against the expected list\n", nunsup, nfail, now_s() - t0, regress);
  printf("%d passed, %d failed\n", npass, nfail + nunsup);
  if (leaked) printf("LeakSanitizer found leaks in the test worker (report above)\n");
  sl_free(&roots); sl_free(&tests); sl_free(&exp); sl_free(&passed);
  return regress || leaked ? 1 : 0;
}
