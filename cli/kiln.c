/* kiln.c: the `kiln` command. Subcommands are dispatched from one table; each
 * parses its own options and uses only the public API in kiln.h.
 *
 * Exit status: 0 success; 2 bad input or environment (malformed model, missing
 * file, unsupported op, missing or mismatched input, no OpenCL platform, bad
 * arguments); 1 any other failure (OpenCL errors, device-vs-reference
 * mismatch). Errors go to stderr as one line "kiln: error: <message>". */
#include "kiln.h"
#include "kiln_db.h"
#include "kiln_costmodel.h" /* kiln model export-prior */
#include "kiln_cli.h" /* cmd_bench.c, cmd_report.c */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXIT_USAGE 2 /* bad input, arguments or environment */

/* Command flags (documentation and help text). */
enum { NEEDS_MODEL = 1 << 0, NEEDS_DEVICE = 1 << 1, USES_DEVICE = 1 << 2 };

typedef struct cmd {
  const char *name;
  int (*fn)(const struct cmd *c, int argc, char **argv);
  unsigned flags;
  const char *summary;
  const char *synopsis; /* after "kiln <name> " */
  const char *help;     /* option list */
} cmd;

static const cmd *find_cmd(const char *name);

/* ---- errors and exit codes ------------------------------------------------ */

/* Errors, option parsing and JSON output are shared with cli/cmd_*.c (cli_common.c). */
#define exit_code kiln_cli__exit_code
#define print_error kiln_cli__error
#define fail kiln_cli__fail
#define opt_val kiln_cli__opt_val
#define parse_u64 kiln_cli__parse_u64
#define parse_shape kiln_cli__parse_shape
#define json_str kiln_cli__json_str
#define json_num kiln_cli__json_num


/* Reports a usage error for command c (NULL: the top level); returns 2. */
static int usage_error(const cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(const cmd *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("%s", msg);
  if (c) fprintf(stderr, "usage: kiln %s %s\n(see 'kiln %s --help')\n", c->name, c->synopsis, c->name);
  else fprintf(stderr, "usage: kiln <command> [options]   (see 'kiln --help')\n");
  return EXIT_USAGE;
}

/* ---- option parsing ------------------------------------------------------ */

static bool is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

/* ---- small helpers ------------------------------------------------------- */

static double getf(const kiln_tensor *t, int64_t k) {
  switch (t->dtype) {
  case KILN_DT_FLOAT: return ((const float *)t->data)[k];
  case KILN_DT_DOUBLE: return ((const double *)t->data)[k];
  case KILN_DT_INT64: return (double)((const int64_t *)t->data)[k];
  case KILN_DT_INT32: return ((const int32_t *)t->data)[k];
  case KILN_DT_INT16: return ((const int16_t *)t->data)[k];
  case KILN_DT_INT8: return ((const int8_t *)t->data)[k];
  case KILN_DT_UINT8: case KILN_DT_BOOL: return ((const uint8_t *)t->data)[k];
  case KILN_DT_UINT16: return ((const uint16_t *)t->data)[k];
  case KILN_DT_UINT32: return ((const uint32_t *)t->data)[k];
  case KILN_DT_UINT64: return (double)((const uint64_t *)t->data)[k];
  case KILN_DT_FLOAT16: {
    uint16_t h = ((const uint16_t *)t->data)[k];
    uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    double f = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 1024, (int)e - 25);
    return s ? -f : f;
  }
  }
  return 0;
}

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int e = (int)((x >> 23) & 255) - 127 + 15;
  uint32_t m = x & 0x7fffff;
  if (e <= 0) return (uint16_t)sign; /* |f| < 2^-14: flush (inputs are in [-1,1)) */
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  return (uint16_t)(sign | (uint32_t)e << 10 | (m + 0x1000) >> 13);
}

/* splitmix64: a small seeded generator for --random inputs. */
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Fills t with uniform [-1,1) floats, integers 0..9, or booleans. */
static void fill_random(kiln_tensor *t, uint64_t *rng) {
  int64_t n = kiln_tensor_numel(t);
  for (int64_t k = 0; k < n; k++) {
    uint64_t r = rng_next(rng);
    double u = (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    int64_t iv = (int64_t)(r % 10);
    switch (t->dtype) {
    case KILN_DT_FLOAT: ((float *)t->data)[k] = (float)u; break;
    case KILN_DT_DOUBLE: ((double *)t->data)[k] = u; break;
    case KILN_DT_FLOAT16: ((uint16_t *)t->data)[k] = float_to_half((float)u); break;
    case KILN_DT_INT64: ((int64_t *)t->data)[k] = iv; break;
    case KILN_DT_INT32: ((int32_t *)t->data)[k] = (int32_t)iv; break;
    case KILN_DT_INT16: ((int16_t *)t->data)[k] = (int16_t)iv; break;
    case KILN_DT_INT8: ((int8_t *)t->data)[k] = (int8_t)iv; break;
    case KILN_DT_UINT8: ((uint8_t *)t->data)[k] = (uint8_t)iv; break;
    case KILN_DT_UINT16: ((uint16_t *)t->data)[k] = (uint16_t)iv; break;
    case KILN_DT_UINT32: ((uint32_t *)t->data)[k] = (uint32_t)iv; break;
    case KILN_DT_UINT64: ((uint64_t *)t->data)[k] = (uint64_t)iv; break;
    case KILN_DT_BOOL: ((uint8_t *)t->data)[k] = (uint8_t)(r & 1); break;
    }
  }
}

/* Formats a shape as "[d0,d1,...]"; a symbolic dimension shows as its name,
 * or "name=size" once bound; an unknown unnamed one as '?'. */
static const char *fmt_shape(char *buf, size_t n, int rank, const int64_t *dims, const char *const *names) {
  if (rank < 0) { snprintf(buf, n, "[?]"); return buf; }
  size_t l = (size_t)snprintf(buf, n, "[");
  for (int k = 0; k < rank && l < n; k++) {
    const char *sep = k ? "," : "";
    if (dims[k] >= 0 && names && names[k]) l += (size_t)snprintf(buf + l, n - l, "%s%s=%lld", sep, names[k], (long long)dims[k]);
    else if (dims[k] >= 0) l += (size_t)snprintf(buf + l, n - l, "%s%lld", sep, (long long)dims[k]);
    else l += (size_t)snprintf(buf + l, n - l, "%s%s", sep, names && names[k] ? names[k] : "?");
  }
  if (l < n) snprintf(buf + l, n - l, "]");
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const char *human_count(char *buf, size_t n, double v) {
  if (v >= 1e12) snprintf(buf, n, "%.2f T", v / 1e12);
  else if (v >= 1e9) snprintf(buf, n, "%.2f G", v / 1e9);
  else if (v >= 1e6) snprintf(buf, n, "%.2f M", v / 1e6);
  else if (v >= 1e3) snprintf(buf, n, "%.2f k", v / 1e3);
  else snprintf(buf, n, "%.0f", v);
  return buf;
}

/* ---- JSON output --------------------------------------------------------- */

static void json_shape(FILE *f, int rank, const int64_t *dims, const char *const *names) {
  if (rank < 0) { fputs("null", f); return; }
  fputc('[', f);
  for (int k = 0; k < rank; k++) {
    if (k) fputc(',', f);
    if (dims[k] >= 0) fprintf(f, "%lld", (long long)dims[k]);
    else if (names && names[k]) json_str(f, names[k]);
    else fputs("null", f);
  }
  fputc(']', f);
}

/* ---- tensor summaries and comparison ------------------------------------- */

typedef struct tstats { double min, max, mean; int64_t n, nonfinite; } tstats;

static tstats tensor_stats(const kiln_tensor *t) {
  tstats s = {INFINITY, -INFINITY, 0, kiln_tensor_numel(t), 0};
  double sum = 0;
  int64_t fin = 0;
  for (int64_t k = 0; k < s.n; k++) {
    double v = getf(t, k);
    if (!isfinite(v)) { s.nonfinite++; continue; }
    if (v < s.min) s.min = v;
    if (v > s.max) s.max = v;
    sum += v;
    fin++;
  }
  s.mean = fin ? sum / (double)fin : NAN;
  if (!fin) s.min = s.max = NAN;
  return s;
}

static void print_tensor(const char *label, const kiln_tensor *t) {
  char sh[256];
  tstats st = tensor_stats(t);
  printf("%s '%s': %s %s  min %.6g  max %.6g  mean %.6g", label, t->name ? t->name : "?", kiln_dtype_name(t->dtype),
         fmt_shape(sh, sizeof sh, t->rank, t->dims, NULL), st.min, st.max, st.mean);
  if (st.nonfinite) printf("  (%lld NaN/inf)", (long long)st.nonfinite);
  printf("\n    values:");
  int64_t show = st.n < 8 ? st.n : 8;
  for (int64_t k = 0; k < show; k++) printf("%s %.6g", k ? "," : "", getf(t, k));
  if (st.n > show) printf(", ... (%lld elements)", (long long)st.n);
  printf("\n");
}

/* Device-vs-reference agreement. An element fails when |dev - ref| exceeds
 * CHECK_RTOL * max(|ref|, 1% of the output's largest |ref|): relative for
 * ordinary values, and near zero relative to the output's scale, so float
 * rounding in values that cancel to ~0 is not flagged. */
#define CHECK_RTOL 1e-3

typedef struct cmpres {
  double max_abs, max_rel; /* over all elements */
  bool ok;
  char why[256];           /* first problem, when !ok */
} cmpres;

static void compare_tensor(const kiln_tensor *dev, const kiln_tensor *ref, cmpres *r) {
  memset(r, 0, sizeof *r);
  r->ok = true;
  bool same = dev->dtype == ref->dtype && dev->rank == ref->rank;
  for (int k = 0; same && k < dev->rank; k++) same = dev->dims[k] == ref->dims[k];
  if (!same) {
    char a[128], b[128];
    snprintf(r->why, sizeof r->why, "device gave %s %s, reference %s %s", kiln_dtype_name(dev->dtype),
             fmt_shape(a, sizeof a, dev->rank, dev->dims, NULL), kiln_dtype_name(ref->dtype), fmt_shape(b, sizeof b, ref->rank, ref->dims, NULL));
    r->ok = false;
    r->max_abs = r->max_rel = INFINITY;
    return;
  }
  int64_t n = kiln_tensor_numel(ref);
  double scale = 0;
  for (int64_t k = 0; k < n; k++) { double v = fabs(getf(ref, k)); if (isfinite(v) && v > scale) scale = v; }
  double floor = scale * 1e-2;
  if (floor < 1e-30) floor = 1e-30;
  for (int64_t k = 0; k < n; k++) {
    double d = getf(dev, k), w = getf(ref, k), e, rel;
    if (isnan(d) || isnan(w) || isinf(d) || isinf(w)) {
      if ((isnan(d) && isnan(w)) || d == w) continue;
      e = rel = INFINITY;
    } else {
      e = fabs(d - w);
      rel = e / fmax(fabs(w), floor);
    }
    if (e > r->max_abs) r->max_abs = e;
    if (rel > r->max_rel) r->max_rel = rel;
    if (rel > CHECK_RTOL && (r->ok || rel >= r->max_rel)) { /* report the worst element */
      r->ok = false;
      snprintf(r->why, sizeof r->why, "worst at element %lld: device %.7g, reference %.7g", (long long)k, d, w);
    }
  }
}

/* ---- input binding ------------------------------------------------------- */

typedef struct bound_inputs {
  int n;                 /* model inputs */
  kiln_value_info *info; /* declared (after --shape) */
  kiln_tensor **t;       /* bound tensors, owned; NULL = unbound */
  bool *random;          /* t[i] was generated */
} bound_inputs;

static void bound_free(bound_inputs *b) {
  for (int i = 0; b->t && i < b->n; i++) kiln_tensor_free(b->t[i]);
  free(b->t);
  free(b->info);
  free(b->random);
  memset(b, 0, sizeof *b);
}

static int input_index(const bound_inputs *b, const char *name) {
  for (int i = 0; i < b->n; i++) if (!strcmp(b->info[i].name, name)) return i;
  return -1;
}

static void input_names(const bound_inputs *b, char *buf, size_t n) {
  size_t l = 0;
  buf[0] = 0;
  for (int i = 0; i < b->n && l < n; i++) l += (size_t)snprintf(buf + l, n - l, "%s'%s'", i ? ", " : "", b->info[i].name);
  if (!b->n && n) snprintf(buf, n, "none");
}

/* Binds --input arguments ("name=file" or "file"; a bare file binds to the
 * first unbound input) and, with random, fills the remaining inputs. Returns
 * an exit code (0 on success) after printing the error. */
static int bind_inputs(kiln_model *m, const char *const *args, int nargs, bool random, uint64_t seed, bound_inputs *b) {
  kiln_error err = {0};
  char names[512];
  b->n = kiln_model_num_inputs(m);
  b->info = calloc((size_t)b->n + 1, sizeof *b->info);
  b->t = calloc((size_t)b->n + 1, sizeof *b->t);
  b->random = calloc((size_t)b->n + 1, sizeof *b->random);
  if (!b->info || !b->t || !b->random) { print_error("out of memory"); return 1; }
  for (int i = 0; i < b->n; i++) kiln_model_input_info(m, i, &b->info[i]);
  int rc;
  /* named bindings first, then bare files in order */
  for (int pass = 0; pass < 2; pass++) {
    for (int a = 0; a < nargs; a++) {
      const char *arg = args[a], *eq = strchr(arg, '=');
      int idx = -1;
      const char *file = arg;
      struct stat st;
      bool named = eq && eq != arg && stat(arg, &st) != 0; /* "x=y.npy" is a file name only if it exists */
      if (named) {
        char name[512];
        snprintf(name, sizeof name, "%.*s", (int)(eq - arg), arg);
        file = eq + 1;
        if (pass == 1) continue;
        idx = input_index(b, name);
        if (idx < 0) {
          input_names(b, names, sizeof names);
          print_error("--input %s: the model has no input named '%s' (inputs: %s)", arg, name, names);
          return EXIT_USAGE;
        }
        if (b->t[idx]) { print_error("--input %s: input '%s' is bound twice", arg, name); return EXIT_USAGE; }
      } else {
        if (pass == 0) continue;
        for (int i = 0; i < b->n && idx < 0; i++) if (!b->t[i]) idx = i;
        if (idx < 0) {
          input_names(b, names, sizeof names);
          print_error("--input %s: every input is already bound (the model has %d: %s)", arg, b->n, names);
          return EXIT_USAGE;
        }
      }
      kiln_tensor *t = NULL;
      if ((rc = kiln_tensor_read(file, &t, &err)) != 0) return fail(&err, rc);
      b->t[idx] = t;
    }
  }
  if (!random) return 0;
  uint64_t rng = seed;
  for (int i = 0; i < b->n; i++) {
    if (b->t[i]) continue;
    kiln_value_info *vi = &b->info[i];
    if (vi->rank < 0) {
      print_error("--random: input '%s' has no declared shape: bind it with --shape %s=D0,D1,...", vi->name, vi->name);
      return EXIT_USAGE;
    }
    int64_t dims[KILN_MAX_RANK];
    for (int k = 0; k < vi->rank; k++) {
      dims[k] = vi->dims[k];
      /* a symbolic dimension takes its size from a bound input with the same name */
      for (int j = 0; dims[k] < 0 && vi->dim_names[k] && j < b->n; j++) {
        if (!b->t[j] || b->info[j].rank != b->t[j]->rank) continue;
        for (int q = 0; q < b->info[j].rank; q++)
          if (b->info[j].dim_names[q] && !strcmp(b->info[j].dim_names[q], vi->dim_names[k])) { dims[k] = b->t[j]->dims[q]; break; }
      }
      if (dims[k] < 0) {
        if (vi->dim_names[k])
          print_error("--random: input '%s' dimension %d ('%s') is not known: bind it with --shape %s=SIZE or --shape %s=D0,D1,...", vi->name, k, vi->dim_names[k], vi->dim_names[k], vi->name);
        else
          print_error("--random: input '%s' dimension %d is not known: bind it with --shape %s=D0,D1,...", vi->name, k, vi->name);
        return EXIT_USAGE;
      }
    }
    if (kiln_dtype_size(vi->dtype) == 0) {
      print_error("--random: input '%s' has dtype %s, which kiln cannot generate", vi->name, kiln_dtype_name(vi->dtype));
      return EXIT_USAGE;
    }
    kiln_tensor *t = kiln_tensor_new(vi->dtype, vi->rank, dims);
    if (!t) { print_error("--random: input '%s': tensor too large", vi->name); return EXIT_USAGE; }
    fill_random(t, &rng);
    b->t[i] = t;
    b->random[i] = true;
  }
  return 0;
}

/* Gives every bound tensor to the session. */
static int set_inputs(kiln_session *s, const bound_inputs *b) {
  kiln_error err = {0};
  for (int i = 0; i < b->n; i++) {
    if (!b->t[i]) continue;
    int rc = kiln_session_set_input(s, b->info[i].name, b->t[i], &err);
    if (rc) return fail(&err, rc);
  }
  return 0;
}

/* ---- output files -------------------------------------------------------- */

/* Output file base name: chars outside [A-Za-z0-9_.-] become '_'. */
static void safe_name(const char *name, int index, char *buf, size_t n) {
  size_t l = 0;
  for (const char *p = name ? name : ""; *p && l + 1 < n; p++) {
    char c = *p;
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    buf[l++] = ok ? c : '_';
  }
  buf[l] = 0;
  if (!strcmp(buf, "") || !strcmp(buf, ".") || !strcmp(buf, "..")) snprintf(buf, n, "output_%d", index);
}

static int mkdir_p(const char *path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') { *p = 0; if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1; *p = '/'; }
  if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
  struct stat st;
  return stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* Writes every output to dir/<safe name>.<ext> all-or-nothing: each goes to a
 * temporary name first; they are renamed only when all were written. */
static int write_outputs(const char *dir, const char *ext, const kiln_tensor *const *outs, int n, bool quiet) {
  kiln_error err = {0};
  if (mkdir_p(dir) != 0) { print_error("--output-dir %s: cannot create directory: %s", dir, strerror(errno)); return EXIT_USAGE; }
  char (*final)[4200] = calloc((size_t)n + 1, sizeof *final);
  char (*tmp)[4200] = calloc((size_t)n + 1, sizeof *tmp);
  if (!final || !tmp) { free(final); free(tmp); print_error("out of memory"); return 1; }
  int rc = 0, written = 0, renamed = 0;
  for (int i = 0; i < n && !rc; i++) {
    char base[256];
    safe_name(outs[i]->name, i, base, sizeof base);
    snprintf(final[i], sizeof final[i], "%s/%s.%s", dir, base, ext);
    for (int j = 0; j < i; j++) /* two names that sanitize alike */
      if (!strcmp(final[j], final[i])) { snprintf(final[i], sizeof final[i], "%s/%s_%d.%s", dir, base, i, ext); break; }
    snprintf(tmp[i], sizeof tmp[i], "%s/.kiln-%d-%d.partial.%s", dir, (int)getpid(), i, ext);
    if ((rc = kiln_tensor_write(tmp[i], outs[i], &err)) != 0) { rc = fail(&err, rc); break; }
    written++;
  }
  for (int i = 0; !rc && i < n; i++) {
    if (rename(tmp[i], final[i]) != 0) { print_error("%s: cannot write: %s", final[i], strerror(errno)); rc = 1; break; }
    renamed++;
  }
  if (rc) {
    for (int i = 0; i < renamed; i++) remove(final[i]);
    for (int i = renamed; i < written; i++) remove(tmp[i]);
  } else if (!quiet) {
    for (int i = 0; i < n; i++) printf("wrote %s\n", final[i]);
  }
  free(final);
  free(tmp);
  return rc;
}

/* ---- kiln devices --------------------------------------------------------- */

static int cmd_devices(const cmd *c, int argc, char **argv) {
  bool json = false;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = true;
    else if (argv[i][0] == '-') return usage_error(c, "unknown option '%s'", argv[i]);
    else return usage_error(c, "unexpected argument '%s'", argv[i]);
  }
  kiln_device_info infos[64];
  int count = 0;
  kiln_error err = {0};
  int rc = kiln_device_list(infos, 64, &count, &err);
  if (rc) return fail(&err, rc);
  if (count > 64) count = 64;
  if (json) {
    printf("{\"devices\":[");
    for (int i = 0; i < count; i++) {
      const kiln_device_info *d = &infos[i];
      printf("%s{\"selector\":\"%d:%d\",\"platform\":", i ? "," : "", d->platform_index, d->device_index);
      json_str(stdout, d->platform);
      printf(",\"name\":"); json_str(stdout, d->name);
      printf(",\"vendor\":"); json_str(stdout, d->vendor);
      printf(",\"driver\":"); json_str(stdout, d->driver);
      printf(",\"version\":"); json_str(stdout, d->version);
      printf(",\"type\":\"%s\",\"compute_units\":%d,\"max_clock_mhz\":%d,\"global_mem\":%llu,\"local_mem\":%llu,"
             "\"max_alloc\":%llu,\"max_work_group\":%zu}",
             d->is_gpu ? "gpu" : "other", d->compute_units, d->max_clock_mhz, (unsigned long long)d->global_mem,
             (unsigned long long)d->local_mem, (unsigned long long)d->max_alloc, d->max_work_group);
    }
    printf("]}\n");
    return 0;
  }
  int last_plat = -1;
  for (int i = 0; i < count; i++) {
    const kiln_device_info *d = &infos[i];
    if (d->platform_index != last_plat) { printf("platform %d: %s\n", d->platform_index, d->platform); last_plat = d->platform_index; }
    printf("  device %d:%d (selector '%d' or '%d:%d'): %s\n", d->platform_index, d->device_index, i, d->platform_index, d->device_index, d->name);
    printf("    type %s, vendor %s, %s, driver %s\n", d->is_gpu ? "GPU" : "CPU/other", d->vendor, d->version, d->driver);
    printf("    %d compute units at %d MHz, global memory %.1f GiB (max allocation %.1f GiB), local memory %llu KiB, max work-group %zu\n",
           d->compute_units, d->max_clock_mhz, (double)d->global_mem / (1 << 30), (double)d->max_alloc / (1 << 30),
           (unsigned long long)(d->local_mem >> 10), d->max_work_group);
  }
  const char *lib = kiln_unregistered_gpu_driver();
  if (lib)
    printf("note: NVIDIA's OpenCL library is installed at %s but no ICD file names it, so its GPU is not listed:\n"
           "      echo %s > /etc/OpenCL/vendors/nvidia.icd (or put that file in a directory and set OCL_ICD_VENDORS to it)\n",
           lib, lib);
  return 0;
}

/* ---- kiln info ------------------------------------------------------------ */

typedef struct histo { struct { char op[64]; int count, ok; } e[256]; int n; } histo;

static void histo_add(const char *op, int count, int ok, void *ctx) {
  histo *h = ctx;
  if (h->n >= 256) return;
  snprintf(h->e[h->n].op, sizeof h->e[h->n].op, "%s", op);
  h->e[h->n].count = count;
  h->e[h->n].ok = ok;
  h->n++;
}

/* Plans the model on the device (zero inputs of the declared shapes) so that
 * output shapes and FLOPs are known. Returns 0, or fills why. */
static int plan_for_info(kiln_model *m, const char *devsel, char *why, size_t wl) {
  int nin = kiln_model_num_inputs(m);
  for (int i = 0; i < nin; i++) {
    kiln_value_info vi;
    kiln_model_input_info(m, i, &vi);
    if (vi.rank < 0) { snprintf(why, wl, "input '%s' has no shape: bind it with --shape %s=D0,D1,...", vi.name, vi.name); return -1; }
    for (int k = 0; k < vi.rank; k++)
      if (vi.dims[k] < 0) {
        snprintf(why, wl, "input '%s' dimension %d%s%s%s is not bound: pass --shape", vi.name, k, vi.dim_names[k] ? " ('" : "",
                 vi.dim_names[k] ? vi.dim_names[k] : "", vi.dim_names[k] ? "')" : "");
        return -1;
      }
  }
  kiln_error err = {0};
  if (kiln_model_check_supported(m, &err) != 0) { snprintf(why, wl, "the model has unsupported ops"); return -1; }
  kiln_device *d = NULL;
  if (kiln_device_open(devsel, &d, &err) != 0) { snprintf(why, wl, "needs an OpenCL device to plan: %s", err.msg); return -1; }
  kiln_session *s = NULL;
  int rc = kiln_session_create(m, d, &s, &err);
  for (int i = 0; !rc && i < nin; i++) {
    kiln_value_info vi;
    kiln_model_input_info(m, i, &vi);
    kiln_tensor *t = kiln_tensor_new(vi.dtype, vi.rank, vi.dims);
    if (!t) { snprintf(err.msg, sizeof err.msg, "input '%s': cannot allocate", vi.name); rc = KILN_ENOMEM; break; }
    rc = kiln_session_set_input(s, vi.name, t, &err);
    kiln_tensor_free(t);
  }
  /* the CPU reference run plans without compiling kernels; fall back to the device */
  kiln_tensor **outs = NULL;
  int nouts = 0;
  if (!rc && (rc = kiln_session_run_reference(s, &outs, &nouts, &err)) != 0) rc = kiln_session_run(s, &err);
  for (int i = 0; i < nouts; i++) kiln_tensor_free(outs[i]);
  free(outs);
  if (rc) snprintf(why, wl, "planning failed: %s", err.msg);
  kiln_session_free(s);
  kiln_device_close(d);
  return rc ? -1 : 0;
}

static int cmd_info(const cmd *c, int argc, char **argv) {
  const char *path = NULL, *devsel = getenv("KILN_DEVICE"), *v;
  bool json = false;
  kiln_shape_binding shapes[64];
  char shape_names[64][256];
  int nshapes = 0;
  for (int i = 0; i < argc; i++) {
    int r;
    if (!strcmp(argv[i], "--json")) json = true;
    else if ((r = opt_val(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0) return usage_error(c, "--shape needs a value NAME=D0,D1,...");
      char why[512];
      if (nshapes == 64) return usage_error(c, "too many --shape options");
      if (!parse_shape(v, &shapes[nshapes], shape_names[nshapes], sizeof shape_names[0], why, sizeof why)) return usage_error(c, "%s", why);
      nshapes++;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) return usage_error(c, "--device needs a value");
      devsel = v;
    } else if (argv[i][0] == '-' && argv[i][1]) return usage_error(c, "unknown option '%s'", argv[i]);
    else if (path) return usage_error(c, "unexpected argument '%s' (one model at a time)", argv[i]);
    else path = argv[i];
  }
  if (!path) return usage_error(c, "no model given");
  kiln_error err = {0};
  kiln_load_options lo = {.shapes = shapes, .nshapes = nshapes};
  kiln_model *m = NULL;
  int rc = kiln_model_load(path, &lo, &m, &err);
  if (rc) return fail(&err, rc);

  int nin = kiln_model_num_inputs(m), nout = kiln_model_num_outputs(m);
  kiln_value_info *ins = calloc((size_t)nin + 1, sizeof *ins), *outs = calloc((size_t)nout + 1, sizeof *outs);
  if (!ins || !outs) { free(ins); free(outs); kiln_model_free(m); print_error("out of memory"); return 1; }
  for (int i = 0; i < nin; i++) kiln_model_input_info(m, i, &ins[i]);
  kiln_error unsup = {0};
  int supported = kiln_model_check_supported(m, &unsup) == 0;
  histo *h = calloc(1, sizeof *h);
  if (!h) { free(ins); free(outs); kiln_model_free(m); print_error("out of memory"); return 1; }
  kiln_model_op_histogram(m, histo_add, h);
  char why[1200] = "";
  bool planned = plan_for_info(m, devsel, why, sizeof why) == 0;
  for (int i = 0; i < nout; i++) kiln_model_output_info(m, i, &outs[i]);
  kiln_model_stats st;
  kiln_model_get_stats(m, &st);
  int dev_unsupported_types = 0;
  for (int i = 0; i < h->n; i++) dev_unsupported_types += !h->e[i].ok;

  char sh[512], num[64];
  if (json) {
    printf("{\"model\":"); json_str(stdout, path);
    printf(",\"ir_version\":%d,\"opset\":%d,\"nodes\":%d,\"inputs\":[", st.ir_version, st.opset, st.nodes);
    for (int pass = 0; pass < 2; pass++) {
      kiln_value_info *vi = pass ? outs : ins;
      int n = pass ? nout : nin;
      if (pass) printf("],\"outputs\":[");
      for (int i = 0; i < n; i++) {
        printf("%s{\"name\":", i ? "," : ""); json_str(stdout, vi[i].name);
        printf(",\"dtype\":");
        if (vi[i].dtype) json_str(stdout, kiln_dtype_name(vi[i].dtype)); else printf("null");
        printf(",\"shape\":"); json_shape(stdout, vi[i].rank, vi[i].dims, vi[i].dim_names);
        printf("}");
      }
    }
    printf("],\"ops\":[");
    for (int i = 0; i < h->n; i++) {
      printf("%s{\"op\":", i ? "," : ""); json_str(stdout, h->e[i].op);
      printf(",\"count\":%d,\"device\":%s}", h->e[i].count, h->e[i].ok ? "true" : "false");
    }
    printf("],\"params\":%lld,\"flops\":", (long long)st.params);
    if (planned) json_num(stdout, st.flops); else printf("null,\"flops_note\":"), json_str(stdout, why);
    printf(",\"supported\":%s,\"unsupported\":", supported ? "true" : "false");
    if (supported) printf("null"); else json_str(stdout, unsup.msg);
    printf("}\n");
  } else {
    printf("model: %s (ONNX IR %d, opset %d, %d nodes)\n", path, st.ir_version, st.opset, st.nodes);
    for (int pass = 0; pass < 2; pass++) {
      kiln_value_info *vi = pass ? outs : ins;
      int n = pass ? nout : nin;
      printf("%s (%d):\n", pass ? "outputs" : "inputs", n);
      for (int i = 0; i < n; i++)
        printf("  %-24s %-8s %s\n", vi[i].name, vi[i].dtype ? kiln_dtype_name(vi[i].dtype) : "?",
               fmt_shape(sh, sizeof sh, vi[i].rank, vi[i].dims, vi[i].dim_names));
    }
    printf("ops (%d types):\n", h->n);
    for (int i = 0; i < h->n; i++) printf("  %-24s %5d%s\n", h->e[i].op, h->e[i].count, h->e[i].ok ? "" : "   (no device support)");
    printf("parameters: %lld (%s)\n", (long long)st.params, human_count(num, sizeof num, (double)st.params));
    if (planned) printf("FLOPs per inference: %.0f (%s)\n", st.flops, human_count(num, sizeof num, st.flops));
    else printf("FLOPs per inference: unknown (%s)\n", why);
    if (!supported) printf("%s\n", unsup.msg);
    else if (dev_unsupported_types) printf("every op is known; %d op type%s without a device kernel run only when folded at plan time\n", dev_unsupported_types, dev_unsupported_types == 1 ? "" : "s");
    else printf("every op runs on the OpenCL device\n");
  }
  free(h);
  free(ins);
  free(outs);
  kiln_model_free(m);
  return 0;
}

/* ---- kiln run ------------------------------------------------------------- */

typedef struct run_result {
  int nout;
  kiln_tensor **ref;   /* reference outputs (--check), owned */
  int nref;
  cmpres *cmp;         /* per output */
  double max_abs, max_rel;
  bool check_ok;
} run_result;

static void run_result_free(run_result *r) {
  for (int i = 0; i < r->nref; i++) kiln_tensor_free(r->ref[i]);
  free(r->ref);
  free(r->cmp);
  memset(r, 0, sizeof *r);
}

/* Runs the CPU reference and compares every output with the device's. */
static int check_reference(kiln_session *s, int nout, run_result *r) {
  kiln_error err = {0};
  int rc = kiln_session_run_reference(s, &r->ref, &r->nref, &err);
  if (rc) return fail(&err, rc);
  r->cmp = calloc((size_t)nout + 1, sizeof *r->cmp);
  if (!r->cmp) { print_error("out of memory"); return 1; }
  r->check_ok = true;
  for (int i = 0; i < nout && i < r->nref; i++) {
    compare_tensor(kiln_session_output(s, i), r->ref[i], &r->cmp[i]);
    if (r->cmp[i].max_abs > r->max_abs || isnan(r->cmp[i].max_abs)) r->max_abs = r->cmp[i].max_abs;
    if (r->cmp[i].max_rel > r->max_rel || isnan(r->cmp[i].max_rel)) r->max_rel = r->cmp[i].max_rel;
    if (!r->cmp[i].ok) r->check_ok = false;
  }
  return 0;
}

/* Opens the tuning database for `run`: --db (must exist), else $KILN_DB or
 * the default path when that file exists; *db stays NULL otherwise. */
static int open_db_for_run(const char *explicit_path, kiln_db **db) {
  char buf[4096];
  const char *path = explicit_path ? explicit_path : kiln_db_default_path(buf, sizeof buf);
  const char *shared = getenv("KILN_DB_PATH");
  *db = NULL;
  struct stat st;
  bool have_shared = shared && *shared;
  if (!explicit_path && !have_shared && stat(path, &st) != 0) return 0;
  kiln_error err = {0};
  /* shared read-only databases ($KILN_DB_PATH) need a user database to layer on */
  int rc = kiln_db_open(path, have_shared && !explicit_path ? KILN_DB_CREATE : 0, db, &err);
  if (!rc && have_shared && (rc = kiln_db_attach_path_list(*db, shared, &err)) != 0) { kiln_db_close(*db); *db = NULL; return fail(&err, rc); }
  if (rc == KILN_ENOTFOUND) { print_error("--db %s: no such tuning database (create one with `kiln tune`)", path); return EXIT_USAGE; }
  if (rc) return fail(&err, rc);
  return 0;
}

static int cmd_run(const cmd *c, int argc, char **argv) {
  const char *path = NULL, *devsel = getenv("KILN_DEVICE"), *outdir = NULL, *format = "npy", *v, *dbpath = NULL;
  const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
  int ninputs = 0;
  bool random = false, check = false, json = false, nofusion = false, verify_imported = false;
  uint64_t seed = 0, repeat = 1, max_memory = 0, max_model = 0;
  kiln_shape_binding shapes[64];
  char shape_names[64][256];
  int nshapes = 0;
  if (!inputs) { print_error("out of memory"); return 1; }
  int rc = 0;
  for (int i = 0; i < argc && !rc; i++) {
    int r;
    char why[512];
    if (!strcmp(argv[i], "--random")) random = true;
    else if (!strcmp(argv[i], "--no-fusion")) nofusion = true;
    else if (!strcmp(argv[i], "--verify-imported")) verify_imported = true;
    else if ((r = opt_val(argc, argv, &i, "--max-memory", &v)) != 0) {
      if (r < 0 || !parse_u64(v, &max_memory)) rc = usage_error(c, "--max-memory needs a number of bytes");
    } else if ((r = opt_val(argc, argv, &i, "--max-model-bytes", &v)) != 0) {
      if (r < 0 || !parse_u64(v, &max_model) || !max_model) rc = usage_error(c, "--max-model-bytes needs a positive number of bytes");
    }
    else if (!strcmp(argv[i], "--check")) check = true;
    else if (!strcmp(argv[i], "--json")) json = true;
    else if ((r = opt_val(argc, argv, &i, "--input", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--input needs a value NAME=FILE or FILE");
      else inputs[ninputs++] = v;
    } else if ((r = opt_val(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--shape needs a value NAME=D0,D1,...");
      else if (nshapes == 64) rc = usage_error(c, "too many --shape options");
      else if (!parse_shape(v, &shapes[nshapes], shape_names[nshapes], sizeof shape_names[0], why, sizeof why)) rc = usage_error(c, "%s", why);
      else nshapes++;
    } else if ((r = opt_val(argc, argv, &i, "--seed", &v)) != 0) {
      if (r < 0 || !parse_u64(v, &seed)) rc = usage_error(c, "--seed needs a non-negative integer");
    } else if ((r = opt_val(argc, argv, &i, "--repeat", &v)) != 0) {
      if (r < 0 || !parse_u64(v, &repeat) || repeat < 1 || repeat > 1000000) rc = usage_error(c, "--repeat needs an integer from 1 to 1000000");
    } else if ((r = opt_val(argc, argv, &i, "--output-dir", &v)) != 0) {
      if (r < 0 || !*v) rc = usage_error(c, "--output-dir needs a directory");
      else outdir = v;
    } else if ((r = opt_val(argc, argv, &i, "--format", &v)) != 0) {
      if (r < 0 || (strcmp(v, "npy") && strcmp(v, "pb"))) rc = usage_error(c, "--format must be npy or pb");
      else format = v;
    } else if ((r = opt_val(argc, argv, &i, "--db", &v)) != 0) {
      if (r < 0 || !*v) rc = usage_error(c, "--db needs a file");
      else dbpath = v;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--device needs a value");
      else devsel = v;
    } else if (argv[i][0] == '-' && argv[i][1]) rc = usage_error(c, "unknown option '%s'", argv[i]);
    else if (path) rc = usage_error(c, "unexpected argument '%s' (inputs are given with --input)", argv[i]);
    else path = argv[i];
  }
  if (!rc && !path) rc = usage_error(c, "no model given");
  struct stat st;
  if (!rc && outdir && stat(outdir, &st) == 0 && !S_ISDIR(st.st_mode)) {
    print_error("--output-dir %s: exists and is not a directory", outdir);
    rc = EXIT_USAGE;
  }
  if (rc) { free(inputs); return rc; }

  kiln_error err = {0};
  kiln_model *m = NULL;
  kiln_device *d = NULL;
  kiln_session *s = NULL;
  kiln_db *db = NULL;
  bound_inputs b = {0};
  run_result res = {0};
  kiln_param_stats ps = {0};
  double *ms = calloc((size_t)repeat, sizeof *ms), *sorted = calloc((size_t)repeat, sizeof *sorted);
  kiln_load_options lo = {.shapes = shapes, .nshapes = nshapes, .max_model_bytes = max_model};
  if (!ms || !sorted) { print_error("out of memory"); rc = 1; goto done; }
  /* everything that can be checked without a device comes first */
  if ((rc = kiln_model_load(path, &lo, &m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = kiln_model_check_supported(m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = bind_inputs(m, inputs, ninputs, random, seed, &b)) != 0) goto done;
  if ((rc = kiln_device_open(devsel, &d, &err)) != 0) { rc = fail(&err, rc); goto done; }
  kiln_cli__note_cpu_fallback(d, devsel);
  if ((rc = kiln_session_create(m, d, &s, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = open_db_for_run(dbpath, &db)) != 0) goto done;
  if (db && (rc = kiln_session_set_db(s, db, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if (nofusion) kiln_session_set_fusion(s, 0);
  if ((rc = set_inputs(s, &b)) != 0) goto done;
  if (verify_imported) {
    if (!db) { print_error("--verify-imported needs a tuning database (--db, $KILN_DB or $KILN_DB_PATH)"); rc = EXIT_USAGE; goto done; }
    kiln_verify_result *vr = NULL;
    int nv = 0;
    if ((rc = kiln_verify_imported(s, db, NULL, &vr, &nv, &err)) != 0) { rc = fail(&err, rc); goto done; }
    for (int i = 0; i < nv && !json; i++)
      printf("verify:  %s %s %s: recorded %.1f us, measured %.1f us (tolerance %.0f%%): %s\n", vr[i].family, vr[i].shape_key, vr[i].params,
             vr[i].recorded_ns / 1e3, vr[i].measured_ns / 1e3, vr[i].tolerance * 100, vr[i].passed ? "kept" : "DEMOTED");
    if (!nv && !json) printf("verify:  no imported records to re-time for this model\n");
    free(vr);
  }
  kiln_run_stats rs;
  if (max_memory) {
    /* plan first: refuse before anything runs when the plan does not fit */
    uint64_t need = 0;
    if ((rc = kiln_session_plan_memory(s, &need, &err)) != 0) { rc = fail(&err, rc); goto done; }
    if (need > max_memory) {
      print_error("the plan needs %llu bytes of device memory (%.1f MiB), more than --max-memory %llu", (unsigned long long)need, need / 1048576.0, (unsigned long long)max_memory);
      rc = EXIT_USAGE;
      goto done;
    }
  }
  for (uint64_t r = 0; r < repeat; r++) {
    if ((rc = kiln_session_run(s, &err)) != 0) { rc = fail(&err, rc); goto done; }
    kiln_session_get_stats(s, &rs);
    ms[r] = sorted[r] = rs.last_ms;
  }
  /* with several runs, the first (planning, kernel compilation) is reported apart */
  double *timed = repeat > 1 ? sorted + 1 : sorted;
  uint64_t ntimed = repeat > 1 ? repeat - 1 : 1;
  qsort(timed, (size_t)ntimed, sizeof *timed, cmp_double);
  double median = ntimed % 2 ? timed[ntimed / 2] : 0.5 * (timed[ntimed / 2 - 1] + timed[ntimed / 2]);
  int nout = kiln_model_num_outputs(m);
  kiln_session_param_stats(s, &ps);
  if (check && (rc = check_reference(s, nout, &res)) != 0) goto done;
  const kiln_device_info *di = kiln_device_get_info(d);

  if (json) {
    printf("{\"model\":"); json_str(stdout, path);
    printf(",\"device\":"); json_str(stdout, di->name);
    printf(",\"platform\":"); json_str(stdout, di->platform);
    printf(",\"latency_ms\":{\"median\":"); json_num(stdout, median);
    printf(",\"min\":"); json_num(stdout, timed[0]);
    printf(",\"first\":"); json_num(stdout, ms[0]);
    printf(",\"runs\":[");
    for (uint64_t r = 0; r < repeat; r++) { if (r) printf(","); json_num(stdout, ms[r]); }
    printf("]},\"compile\":{\"programs\":%d,\"ms\":", rs.programs_compiled);
    json_num(stdout, rs.compile_ms);
    printf("},\"tuning\":{\"db\":");
    if (db) json_str(stdout, kiln_db_path(db)); else printf("null");
    printf(",\"tunable\":%d,\"tuned\":%d,\"predicted\":%d,\"untuned\":%d", ps.tunable, ps.tuned, ps.predicted, ps.predicted + ps.defaulted);
    kiln_cli__json_basis(stdout, s);
    printf("}");
    printf(",\"kernels_launched\":%d,\"nodes_folded\":%d,\"device_bytes\":%llu,\"intermediate_bytes\":%llu,\"intermediate_peak_bytes\":%llu,\"inputs\":[",
           rs.kernels_launched, rs.nodes_folded, (unsigned long long)rs.device_bytes, (unsigned long long)rs.intermediate_bytes,
           (unsigned long long)rs.pool_bytes);
    for (int i = 0; i < b.n; i++) {
      printf("%s{\"name\":", i ? "," : ""); json_str(stdout, b.info[i].name);
      printf(",\"dtype\":"); json_str(stdout, kiln_dtype_name(b.t[i]->dtype));
      printf(",\"shape\":"); if (b.t[i]) json_shape(stdout, b.t[i]->rank, b.t[i]->dims, NULL); else printf("null");
      printf(",\"random\":%s}", b.random[i] ? "true" : "false");
    }
    printf("],\"outputs\":[");
    for (int i = 0; i < nout; i++) {
      const kiln_tensor *t = kiln_session_output(s, i);
      tstats ts = tensor_stats(t);
      printf("%s{\"name\":", i ? "," : ""); json_str(stdout, t->name);
      printf(",\"dtype\":"); json_str(stdout, kiln_dtype_name(t->dtype));
      printf(",\"shape\":"); json_shape(stdout, t->rank, t->dims, NULL);
      printf(",\"min\":"); json_num(stdout, ts.min);
      printf(",\"max\":"); json_num(stdout, ts.max);
      printf(",\"mean\":"); json_num(stdout, ts.mean);
      printf("}");
    }
    printf("],\"check\":");
    if (!check) printf("null");
    else {
      printf("{\"ok\":%s,\"rtol\":%g,\"max_abs_err\":", res.check_ok ? "true" : "false", CHECK_RTOL);
      json_num(stdout, res.max_abs);
      printf(",\"max_rel_err\":"); json_num(stdout, res.max_rel);
      printf(",\"outputs\":[");
      for (int i = 0; i < nout; i++) {
        printf("%s{\"name\":", i ? "," : ""); json_str(stdout, kiln_session_output(s, i)->name);
        printf(",\"max_abs_err\":"); json_num(stdout, res.cmp[i].max_abs);
        printf(",\"max_rel_err\":"); json_num(stdout, res.cmp[i].max_rel);
        printf(",\"ok\":%s}", res.cmp[i].ok ? "true" : "false");
      }
      printf("]}");
    }
    printf("}\n");
  } else {
    char sh[256];
    printf("model:   %s\n", path);
    printf("device:  %s (%s)\n", di->name, di->platform);
    for (int i = 0; i < b.n; i++)
      printf("input '%s': %s %s%s\n", b.info[i].name, kiln_dtype_name(b.t[i]->dtype), fmt_shape(sh, sizeof sh, b.t[i]->rank, b.t[i]->dims, NULL),
             b.random[i] ? " (random)" : "");
    if (repeat == 1) printf("latency: %.3f ms (one run, including planning and kernel compilation; use --repeat N)\n", ms[0]);
    else printf("latency: median %.3f ms, min %.3f ms over runs 2..%llu; first run %.3f ms (planning, kernel compilation)\n", median, timed[0],
                (unsigned long long)repeat, ms[0]);
    printf("compile: %d program%s in %.1f ms; %d kernels launched per run; %d nodes folded at plan time; %.2f MiB on the device\n",
           rs.programs_compiled, rs.programs_compiled == 1 ? "" : "s", rs.compile_ms, rs.kernels_launched, rs.nodes_folded,
           (double)rs.device_bytes / (1 << 20));
    printf("memory:  intermediates total %.2f MiB, peak %.2f MiB (%.1f%%) in the planner's shared buffers\n", rs.intermediate_bytes / 1048576.0,
           rs.pool_bytes / 1048576.0, rs.intermediate_bytes ? 100.0 * (double)rs.pool_bytes / (double)rs.intermediate_bytes : 0.0);
    kiln_cli__print_tuning(stdout, "tuning:  ", db ? kiln_db_path(db) : NULL, s, &ps);
    for (int i = 0; i < nout; i++) print_tensor("output", kiln_session_output(s, i));
    if (check) {
      printf("check vs CPU reference: max abs err %.3g, max rel err %.3g (tolerance %g): %s\n", res.max_abs, res.max_rel, CHECK_RTOL,
             res.check_ok ? "ok" : "MISMATCH");
      for (int i = 0; i < nout; i++)
        if (nout > 1 || !res.cmp[i].ok)
          printf("  '%s': max abs err %.3g, max rel err %.3g%s%s\n", kiln_session_output(s, i)->name, res.cmp[i].max_abs, res.cmp[i].max_rel,
                 res.cmp[i].ok ? "" : ": ", res.cmp[i].why);
    }
  }
  fflush(stdout);
  if (check && !res.check_ok) {
    for (int i = 0; i < nout; i++)
      if (!res.cmp[i].ok) { print_error("output '%s' differs from the CPU reference: max rel err %.3g > %g (%s)", kiln_session_output(s, i)->name, res.cmp[i].max_rel, CHECK_RTOL, res.cmp[i].why); break; }
    rc = 1;
    goto done;
  }
  if (outdir) {
    const kiln_tensor **o = calloc((size_t)nout + 1, sizeof *o);
    if (!o) { print_error("out of memory"); rc = 1; goto done; }
    for (int i = 0; i < nout; i++) o[i] = kiln_session_output(s, i);
    rc = write_outputs(outdir, format, o, nout, json);
    free(o);
  }
done:
  run_result_free(&res);
  bound_free(&b);
  kiln_session_free(s);
  kiln_db_close(db);
  kiln_device_close(d);
  kiln_model_free(m);
  free(ms);
  free(sorted);
  free(inputs);
  return rc;
}

/* ---- kiln tune / kiln probe ----------------------------------------------- */

typedef struct { bool tty, json; int last_instance; } tune_ui;

static void tune_progress(const kiln_tune_progress *p, void *ctx) {
  tune_ui *ui = ctx;
  if (ui->json) return;
  char best[32] = "-", dflt[32] = "-";
  if (p->best_ns > 0) snprintf(best, sizeof best, "%.1f us", p->best_ns / 1e3);
  if (p->default_ns > 0) snprintf(dflt, sizeof dflt, "%.1f us", p->default_ns / 1e3);
  if (ui->tty) {
    fprintf(stderr, "\r\033[K[%d/%d] %s %s (%.1f%%): trial %d/%d, default %s, best %s, %.0f%% of predicted time covered, ETA %.0f s", p->instance,
            p->ninstances, p->family, p->shape_key, 100 * p->share, p->trial, p->ntrials, dflt, best, 100 * p->covered, p->eta_s);
    if (p->trial == p->ntrials) fputc('\n', stderr);
  } else if (p->trial == p->ntrials || p->instance != ui->last_instance) {
    /* plain lines when not on a terminal: one when an instance starts and one when it ends */
    fprintf(stderr, "[%d/%d] %s %s (%.1f%% of predicted model time): trial %d/%d, default %s, best %s, %.0f%% of predicted time covered, elapsed %.0f s, ETA %.0f s\n",
            p->instance, p->ninstances, p->family, p->shape_key, 100 * p->share, p->trial, p->ntrials, dflt, best, 100 * p->covered, p->elapsed_s, p->eta_s);
  }
  ui->last_instance = p->instance;
}

/* The per-instance table of `kiln tune --compare-strategies`. */
static int print_compare(const char *path, const char *dev, const char *dbpath, const kiln_tune_result *res, int nres, bool json) {
  int n = 0, ncand = 0, nmeas = 0;
  double sum_frac = 0, sum_cold = 0, sum_warm = 0, sum_re = 0;
  int nre = 0;
  if (json) {
    printf("{\"model\":"); json_str(stdout, path);
    printf(",\"device\":"); json_str(stdout, dev);
    printf(",\"db\":"); json_str(stdout, dbpath);
    printf(",\"instances\":[");
  } else {
    printf("\nmodel strategy replayed on the exhaustive times of each instance (ratio = time of the model's pick / exhaustive best):\n");
    printf("(cands: the space, or the compared subset/the space under --max-trials)\n");
    printf("%-6s %-44s %9s %8s %6s %11s %9s %9s %9s  %s\n", "family", "instance", "cands", "measured", "frac", "best us", "cold", "warm",
           "retimed", "model's pick (cold)");
  }
  for (int i = 0; i < nres; i++) {
    const kiln_tune_result *r = &res[i];
    int ok = r->best_ns > 0 && r->cmp_cold_ns > 0 && r->cmp_measured > 0;
    int space = r->cmp_space > 0 ? r->cmp_space : r->candidates;
    double frac = space > 0 ? (double)r->cmp_measured / space : 0;
    double cold = ok ? r->cmp_cold_ns / r->best_ns : NAN, warm = ok && r->cmp_warm_ns > 0 ? r->cmp_warm_ns / r->best_ns : NAN;
    double re = ok && r->cmp_pick_ns > 0 && r->cmp_best_ns > 0 ? r->cmp_pick_ns / r->cmp_best_ns : NAN;
    if (ok) {
      n++; ncand += space; nmeas += r->cmp_measured;
      sum_frac += frac; sum_cold += cold; sum_warm += isnan(warm) ? cold : warm;
      if (!isnan(re)) { sum_re += re; nre++; }
    }
    if (json) {
      printf("%s{\"family\":", i ? "," : ""); json_str(stdout, r->family);
      printf(",\"shape_key\":"); json_str(stdout, r->shape_key);
      printf(",\"candidates\":%d,\"compared\":%d,\"covered\":%s,\"model_measured\":%d,\"best_ns\":", r->candidates, space, ok ? "true" : "false", r->cmp_measured);
      json_num(stdout, r->best_ns);
      printf(",\"best_params\":"); json_str(stdout, r->params);
      printf(",\"model_params\":"); json_str(stdout, r->cmp_params);
      printf(",\"cold_ratio\":"); json_num(stdout, cold);
      printf(",\"warm_ratio\":"); json_num(stdout, warm);
      printf(",\"retimed_pick_ns\":"); json_num(stdout, r->cmp_pick_ns);
      printf(",\"retimed_best_ns\":"); json_num(stdout, r->cmp_best_ns);
      printf("}");
    } else if (ok) {
      char cs[32];
      if (space < r->candidates) snprintf(cs, sizeof cs, "%d/%d", space, r->candidates);
      else snprintf(cs, sizeof cs, "%d", space);
      printf("%-6s %-44.44s %9s %8d %5.1f%% %11.1f %8.3fx %8.3fx %8.3fx  %s\n", r->family, r->shape_key, cs, r->cmp_measured, frac * 100,
             r->best_ns / 1e3, cold, warm, re, r->cmp_params);
    } else {
      printf("%-6s %-44.44s %9d %8s %6s %11s %9s %9s %9s  (not covered: budget or failures)\n", r->family, r->shape_key, r->candidates, "-", "-", "-", "-",
             "-", "-");
    }
  }
  if (json) {
    printf("],\"covered\":%d,\"mean_fraction_measured\":", n); json_num(stdout, n ? sum_frac / n : NAN);
    printf(",\"mean_cold_ratio\":"); json_num(stdout, n ? sum_cold / n : NAN);
    printf(",\"mean_warm_ratio\":"); json_num(stdout, n ? sum_warm / n : NAN);
    printf(",\"mean_retimed_ratio\":"); json_num(stdout, nre ? sum_re / nre : NAN);
    printf("}\n");
  } else if (n) {
    printf("mean over %d covered instances: measured %.1f%% of the candidates (%d of %d in all), pick / best %.3fx cold, %.3fx warm, %.3fx re-timed\n", n,
           100 * sum_frac / n, nmeas, ncand, sum_cold / n, sum_warm / n, nre ? sum_re / nre : NAN);
  } else printf("no instance covered\n");
  return 0;
}

static int cmd_tune(const cmd *c, int argc, char **argv) {
  const char *path = NULL, *devsel = getenv("KILN_DEVICE"), *dbpath = NULL, *strategy = "model", *families = NULL, *v;
  const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
  int ninputs = 0;
  bool json = false, nofusion = false, compare = false;
  uint64_t seed = 0, max_trials = 0;
  double budget = 0, max_gflop = 0, fusion_close = 0;
  kiln_shape_binding shapes[64];
  char shape_names[64][256];
  int nshapes = 0, rc = 0;
  if (!inputs) { print_error("out of memory"); return 1; }
  for (int i = 0; i < argc && !rc; i++) {
    int r;
    char why[512];
    if (!strcmp(argv[i], "--json")) json = true;
    else if (!strcmp(argv[i], "--no-fusion")) nofusion = true;
    else if (!strcmp(argv[i], "--compare-strategies")) compare = true;
    else if ((r = opt_val(argc, argv, &i, "--families", &v)) != 0) {
      if (r < 0 || !*v) rc = usage_error(c, "--families needs a comma list of kernel families");
      else families = v;
    } else if ((r = opt_val(argc, argv, &i, "--input", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--input needs a value NAME=FILE or FILE");
      else inputs[ninputs++] = v;
    } else if ((r = opt_val(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--shape needs a value NAME=D0,D1,...");
      else if (nshapes == 64) rc = usage_error(c, "too many --shape options");
      else if (!parse_shape(v, &shapes[nshapes], shape_names[nshapes], sizeof shape_names[0], why, sizeof why)) rc = usage_error(c, "%s", why);
      else nshapes++;
    } else if ((r = opt_val(argc, argv, &i, "--seed", &v)) != 0) {
      if (r < 0 || !parse_u64(v, &seed)) rc = usage_error(c, "--seed needs a non-negative integer");
    } else if ((r = opt_val(argc, argv, &i, "--max-trials", &v)) != 0) {
      if (r < 0 || !parse_u64(v, &max_trials) || max_trials > 1000000) rc = usage_error(c, "--max-trials needs a non-negative integer");
    } else if ((r = opt_val(argc, argv, &i, "--budget", &v)) != 0) {
      char *end;
      budget = r < 0 ? -1 : strtod(v, &end);
      if (r < 0 || *end || budget < 0) rc = usage_error(c, "--budget needs a number of seconds");
    } else if ((r = opt_val(argc, argv, &i, "--max-gflop", &v)) != 0) {
      char *end;
      max_gflop = r < 0 ? -1 : strtod(v, &end);
      if (r < 0 || *end || !(max_gflop > 0)) rc = usage_error(c, "--max-gflop needs a positive number");
    } else if ((r = opt_val(argc, argv, &i, "--fusion-close", &v)) != 0) {
      char *end;
      fusion_close = r < 0 ? -2 : strtod(v, &end);
      if (r < 0 || *end || !(fusion_close == 0 || fusion_close > 1)) rc = usage_error(c, "--fusion-close needs a factor above 1, or 0 for none");
      if (fusion_close == 0) fusion_close = -1;
    } else if ((r = opt_val(argc, argv, &i, "--strategy", &v)) != 0) {
      if (r < 0 || (strcmp(v, "exhaustive") && strcmp(v, "random") && strcmp(v, "model"))) rc = usage_error(c, "--strategy must be model, exhaustive or random");
      else strategy = v;
    } else if ((r = opt_val(argc, argv, &i, "--db", &v)) != 0) {
      if (r < 0 || !*v) rc = usage_error(c, "--db needs a file");
      else dbpath = v;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--device needs a value");
      else devsel = v;
    } else if (argv[i][0] == '-' && argv[i][1]) rc = usage_error(c, "unknown option '%s'", argv[i]);
    else if (path) rc = usage_error(c, "unexpected argument '%s'", argv[i]);
    else path = argv[i];
  }
  if (!rc && !path) rc = usage_error(c, "no model given");
  if (rc) { free(inputs); return rc; }
  kiln_error err = {0};
  kiln_model *m = NULL;
  kiln_device *d = NULL;
  kiln_session *s = NULL;
  kiln_db *db = NULL;
  bound_inputs b = {0};
  kiln_tune_result *res = NULL;
  int nres = 0;
  char dbbuf[4096];
  if (!dbpath) dbpath = kiln_db_default_path(dbbuf, sizeof dbbuf);
  kiln_load_options lo = {.shapes = shapes, .nshapes = nshapes};
  if ((rc = kiln_model_load(path, &lo, &m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = kiln_model_check_supported(m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = bind_inputs(m, inputs, ninputs, true, seed, &b)) != 0) goto done;
  if ((rc = kiln_db_open(dbpath, KILN_DB_CREATE, &db, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if (getenv("KILN_DB_PATH") && (rc = kiln_db_attach_path_list(db, getenv("KILN_DB_PATH"), &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = kiln_device_open(devsel, &d, &err)) != 0) { rc = fail(&err, rc); goto done; }
  kiln_cli__note_cpu_fallback(d, devsel);
  if ((rc = kiln_session_create(m, d, &s, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = set_inputs(s, &b)) != 0) goto done;
  if (nofusion) kiln_session_set_fusion(s, 0);
  tune_ui ui = {.tty = isatty(2) != 0, .json = json};
  kiln_tune_options o = {.budget_s = budget, .max_trials = (int)max_trials, .strategy = strategy, .seed = seed,
                         .families = families, .max_gflop = max_gflop, .compare = compare, .progress = tune_progress, .ctx = &ui,
                         .fusion_close = fusion_close};
  if (compare) strategy = "exhaustive, then the model strategy replayed on its times";
  const kiln_device_info *di = kiln_device_get_info(d);
  if (!json) { printf("tuning %s on %s (%s)\ndatabase: %s, strategy %s\n", path, di->name, di->platform, dbpath, strategy); fflush(stdout); }
  if ((rc = kiln_tune(s, db, &o, &res, &nres, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if (compare) rc = print_compare(path, di->name, dbpath, res, nres, json);
  else if (json) {
    printf("{\"model\":"); json_str(stdout, path);
    printf(",\"device\":"); json_str(stdout, di->name);
    printf(",\"db\":"); json_str(stdout, dbpath);
    printf(",\"strategy\":"); json_str(stdout, strategy);
    printf(",\"instances\":[");
    for (int i = 0; i < nres; i++) {
      kiln_tune_result *r = &res[i];
      printf("%s{\"family\":", i ? "," : ""); json_str(stdout, r->family);
      printf(",\"dtype\":"); json_str(stdout, r->dtype);
      printf(",\"shape_key\":"); json_str(stdout, r->shape_key);
      printf(",\"params\":"); json_str(stdout, r->params);
      printf(",\"candidates\":%d,\"trials\":%d,\"rejected\":%d,\"skipped\":%s,\"refreshed\":%d,\"default_ns\":", r->candidates, r->trials, r->rejected,
             r->skipped ? "true" : "false", r->refreshed);
      json_num(stdout, r->default_ns);
      printf(",\"tuned_ns\":"); json_num(stdout, r->best_ns);
      printf(",\"speedup\":"); json_num(stdout, r->default_ns > 0 && r->best_ns > 0 ? r->default_ns / r->best_ns : NAN);
      printf(",\"share\":"); json_num(stdout, r->share);
      printf("}");
    }
    printf("]}\n");
  } else {
    printf("\n%-8s %-40s %12s %12s %8s %7s  %s\n", "family", "instance", "default us", "tuned us", "speedup", "trials", "parameters");
    double tot_d = 0, tot_t = 0;
    for (int i = 0; i < nres; i++) {
      kiln_tune_result *r = &res[i];
      char dd[32] = "-", tt[32] = "-", sp[32] = "-";
      if (r->default_ns > 0) snprintf(dd, sizeof dd, "%.1f", r->default_ns / 1e3);
      if (r->best_ns > 0) snprintf(tt, sizeof tt, "%.1f", r->best_ns / 1e3);
      if (r->default_ns > 0 && r->best_ns > 0) { snprintf(sp, sizeof sp, "%.2fx", r->default_ns / r->best_ns); tot_d += r->default_ns; tot_t += r->best_ns; }
      printf("%-8s %-40.40s %12s %12s %8s %7d  %s%s\n", r->family, r->shape_key, dd, tt, sp, r->trials, r->params, r->skipped ? " (already tuned)" : "");
    }
    if (tot_t > 0) printf("total over newly tuned instances: default %.1f us, tuned %.1f us, %.2fx\n", tot_d / 1e3, tot_t / 1e3, tot_d / tot_t);
    int refreshed = 0;
    for (int i = 0; i < nres; i++) refreshed += res[i].refreshed;
    if (refreshed) printf("recomputed the cost-model features of %d stored records (written by a kiln with other feature definitions)\n", refreshed);
    if (!nres) printf("no tunable kernels in this model\n");
  }
done:
  free(res);
  bound_free(&b);
  kiln_session_free(s);
  kiln_db_close(db);
  kiln_device_close(d);
  kiln_model_free(m);
  free(inputs);
  return rc;
}

static int cmd_probe(const cmd *c, int argc, char **argv) {
  const char *devsel = getenv("KILN_DEVICE"), *dbpath = NULL, *v;
  bool json = false, nodb = false;
  for (int i = 0; i < argc; i++) {
    int r;
    if (!strcmp(argv[i], "--json")) json = true;
    else if (!strcmp(argv[i], "--no-db")) nodb = true;
    else if ((r = opt_val(argc, argv, &i, "--db", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--db needs a file");
      dbpath = v;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) return usage_error(c, "--device needs a value");
      devsel = v;
    } else return usage_error(c, "unknown argument '%s'", argv[i]);
  }
  char dbbuf[4096];
  if (!dbpath) dbpath = kiln_db_default_path(dbbuf, sizeof dbbuf);
  kiln_error err = {0};
  kiln_db *db = NULL;
  kiln_device *d = NULL;
  kiln_probe_figure *f = NULL;
  int n = 0, rc;
  if (!nodb && (rc = kiln_db_open(dbpath, KILN_DB_CREATE, &db, &err)) != 0) return fail(&err, rc);
  if ((rc = kiln_device_open(devsel, &d, &err)) != 0) { kiln_db_close(db); return fail(&err, rc); }
  const kiln_device_info *di = kiln_device_get_info(d);
  if (!json) { printf("probing %s (%s)...\n", di->name, di->platform); fflush(stdout); }
  rc = kiln_probe(d, db, &f, &n, &err);
  if (rc) rc = fail(&err, rc);
  else if (json) {
    printf("{\"device\":"); json_str(stdout, di->name);
    printf(",\"db\":"); if (db) json_str(stdout, dbpath); else printf("null");
    printf(",\"figures\":{");
    for (int i = 0; i < n; i++) {
      printf("%s", i ? "," : ""); json_str(stdout, f[i].name);
      printf(":{\"value\":"); json_num(stdout, f[i].value);
      printf(",\"best\":"); json_num(stdout, f[i].best);
      printf(",\"spread\":"); json_num(stdout, f[i].spread);
      printf(",\"unit\":"); json_str(stdout, f[i].unit);
      printf("}");
    }
    printf("}}\n");
  } else {
    printf("%-18s %12s  %-8s %8s %12s\n", "figure", "median", "unit", "spread", "best");
    for (int i = 0; i < n; i++) printf("%-18s %12.3f  %-8s %7.1f%% %12.3f\n", f[i].name, f[i].value, f[i].unit, f[i].spread * 100, f[i].best);
    if (db) printf("stored in %s\n", dbpath);
  }
  free(f);
  kiln_device_close(d);
  kiln_db_close(db);
  return rc;
}

/* ---- kiln model eval / kiln predict --------------------------------------- */

static int cmd_model(const cmd *c, int argc, char **argv) {
  if (argc < 1 || (strcmp(argv[0], "eval") && strcmp(argv[0], "export-prior"))) return usage_error(c, "expected `kiln model eval` or `kiln model export-prior`");
  bool export_prior = !strcmp(argv[0], "export-prior");
  const char *devsel = getenv("KILN_DEVICE"), *dbpath = NULL, *stored = NULL, *v;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    int r;
    if (!strcmp(argv[i], "--json")) json = true;
    else if ((r = opt_val(argc, argv, &i, "--db", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--db needs a file");
      dbpath = v;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) return usage_error(c, "--device needs a value");
      devsel = v;
    } else if ((r = opt_val(argc, argv, &i, "--db-device", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--db-device needs a device id or name (see `kiln db list`)");
      stored = v;
    } else return usage_error(c, "unknown argument '%s'", argv[i]);
  }
  char dbbuf[4096];
  if (!dbpath) dbpath = kiln_db_default_path(dbbuf, sizeof dbbuf);
  kiln_error err = {0};
  kiln_db *db = NULL;
  kiln_device *d = NULL;
  kiln_model_eval *e = NULL;
  kiln_device_info sinfo;
  const kiln_device_info *di = &sinfo;
  int64_t dev = -1;
  int n = 0, rc;
  if ((rc = kiln_db_open(dbpath, stored ? KILN_DB_READONLY : 0, &db, &err)) != 0) return fail(&err, rc);
  if (stored) { /* records of a device in the database, which need not be present */
    if ((rc = kiln_db_find_device(db, stored, &dev, &err)) == 0) rc = kiln_db_device_info(db, dev, &sinfo, &err);
  } else if ((rc = kiln_device_open(devsel, &d, &err)) == 0) {
    di = kiln_device_get_info(d);
    rc = kiln_db_device(db, di, &dev, &err);
  }
  if (rc) { kiln_device_close(d); kiln_db_close(db); return fail(&err, rc); }
  if (export_prior) {
    rc = kiln_cm_export_prior(db, dev, di, stdout, &err);
    if (rc) rc = fail(&err, rc);
    kiln_device_close(d);
    kiln_db_close(db);
    return rc;
  }
  rc = kiln_cm_eval_device(db, dev, di, &e, &n, &err);
  if (rc) rc = fail(&err, rc);
  else if (json) {
    printf("{\"device\":"); json_str(stdout, di->name);
    printf(",\"db\":"); json_str(stdout, dbpath);
    printf(",\"families\":[");
    for (int i = 0; i < n; i++) {
      printf("%s{\"family\":", i ? "," : ""); json_str(stdout, e[i].family);
      printf(",\"instances\":%d,\"records\":%d,\"kendall_tau\":", e[i].instances, e[i].records); json_num(stdout, e[i].kendall_tau);
      printf(",\"top1\":"); json_num(stdout, e[i].top1);
      printf(",\"top5\":"); json_num(stdout, e[i].top5);
      printf(",\"regret\":"); json_num(stdout, e[i].regret);
      printf("}");
    }
    printf("]}\n");
  } else {
    printf("cost model accuracy on %s (%s), each instance held out in turn:\n", di->name, dbpath);
    printf("%-12s %9s %8s %10s %8s %8s %8s\n", "family", "instances", "records", "kendall-t", "top-1", "top-5", "regret");
    for (int i = 0; i < n; i++)
      printf("%-12s %9d %8d %10.3f %7.0f%% %7.0f%% %8.3f\n", e[i].family, e[i].instances, e[i].records, e[i].kendall_tau, e[i].top1 * 100, e[i].top5 * 100, e[i].regret);
    if (!n) printf("no measured records with features (run `kiln tune` first)\n");
  }
  free(e);
  kiln_device_close(d);
  kiln_db_close(db);
  return rc;
}

static int cmd_predict(const cmd *c, int argc, char **argv) {
  const char *path = NULL, *devsel = getenv("KILN_DEVICE"), *dbpath = NULL, *profile = NULL, *v;
  bool json = false;
  kiln_shape_binding shapes[64];
  char shape_names[64][256];
  int nshapes = 0, rc = 0;
  for (int i = 0; i < argc && !rc; i++) {
    int r;
    char why[512];
    if (!strcmp(argv[i], "--json")) json = true;
    else if ((r = opt_val(argc, argv, &i, "--profile", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--profile needs a name");
      else profile = v;
    } else if ((r = opt_val(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--shape needs a value NAME=D0,D1,...");
      else if (nshapes == 64) rc = usage_error(c, "too many --shape options");
      else if (!parse_shape(v, &shapes[nshapes], shape_names[nshapes], sizeof shape_names[0], why, sizeof why)) rc = usage_error(c, "%s", why);
      else nshapes++;
    } else if ((r = opt_val(argc, argv, &i, "--db", &v)) != 0) {
      if (r < 0 || !*v) rc = usage_error(c, "--db needs a file");
      else dbpath = v;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--device needs a value");
      else devsel = v;
    } else if (argv[i][0] == '-' && argv[i][1]) rc = usage_error(c, "unknown option '%s'", argv[i]);
    else if (path) rc = usage_error(c, "unexpected argument '%s'", argv[i]);
    else path = argv[i];
  }
  if (!rc && !path) rc = usage_error(c, "no model given");
  if (rc) return rc;
  kiln_error err = {0};
  kiln_model *m = NULL;
  kiln_device *d = NULL;
  kiln_session *s = NULL;
  kiln_db *db = NULL;
  bound_inputs b = {0};
  kiln_node_prediction *p = NULL;
  int n = 0;
  char dbbuf[4096];
  kiln_load_options lo = {.shapes = shapes, .nshapes = nshapes};
  if ((rc = kiln_model_load(path, &lo, &m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = kiln_model_check_supported(m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if (!profile) {
    if (!dbpath) dbpath = kiln_db_default_path(dbbuf, sizeof dbbuf);
    if ((rc = bind_inputs(m, NULL, 0, true, 0, &b)) != 0) goto done;
    if ((rc = kiln_db_open(dbpath, KILN_DB_CREATE, &db, &err)) != 0) { rc = fail(&err, rc); goto done; }
    if ((rc = kiln_device_open(devsel, &d, &err)) != 0) { rc = fail(&err, rc); goto done; }
    if ((rc = kiln_session_create(m, d, &s, &err)) != 0) { rc = fail(&err, rc); goto done; }
    if ((rc = set_inputs(s, &b)) != 0) goto done;
    if ((rc = kiln_session_set_db(s, db, &err)) != 0) { rc = fail(&err, rc); goto done; }
    kiln_probe_figure *figs = NULL;
    int nf = 0;
    /* predicting this device needs its probe: measure it when the database has none */
    kiln_node_prediction *tmp = NULL;
    int ntmp = 0;
    rc = kiln_predict(m, NULL, s, db, &tmp, &ntmp, &err);
    if (rc == KILN_ENOTFOUND) {
      if (!json) { printf("probing the device first (kiln probe)...\n"); fflush(stdout); }
      if ((rc = kiln_probe(d, db, &figs, &nf, &err)) != 0) { rc = fail(&err, rc); goto done; }
      free(figs);
      rc = kiln_predict(m, NULL, s, db, &tmp, &ntmp, &err);
    }
    if (rc) { rc = fail(&err, rc); goto done; }
    p = tmp;
    n = ntmp;
  } else if ((rc = kiln_predict(m, profile, NULL, NULL, &p, &n, &err)) != 0) { rc = fail(&err, rc); goto done; }
  double tp = 0, tm = 0;
  int have_meas = 0;
  for (int i = 0; i < n; i++) { tp += p[i].predicted_ns; if (p[i].measured_ns >= 0) { tm += p[i].measured_ns; have_meas = 1; } }
  const char *target = profile ? profile : kiln_device_get_info(d)->name;
  if (json) {
    printf("{\"model\":"); json_str(stdout, path);
    printf(",\"target\":"); json_str(stdout, target);
    printf(",\"profile\":%s", profile ? "true" : "false");
    printf(",\"total_predicted_ms\":"); json_num(stdout, tp / 1e6);
    printf(",\"total_measured_ms\":"); if (have_meas) json_num(stdout, tm / 1e6); else printf("null");
    printf(",\"nodes\":[");
    for (int i = 0; i < n; i++) {
      printf("%s{\"node\":", i ? "," : ""); json_str(stdout, p[i].node);
      printf(",\"op\":"); json_str(stdout, p[i].op);
      printf(",\"family\":"); json_str(stdout, p[i].family);
      printf(",\"params\":"); json_str(stdout, p[i].params);
      printf(",\"predicted_us\":"); json_num(stdout, p[i].predicted_ns / 1e3);
      printf(",\"measured_us\":"); if (p[i].measured_ns >= 0) json_num(stdout, p[i].measured_ns / 1e3); else printf("null");
      printf("}");
    }
    printf("]}\n");
  } else {
    kiln_devmodel dm;
    kiln_cm_basis b = {{0}};
    if (!profile) printf("%s on %s (this device's probe)\n", path, target);
    else if (kiln_cm_profile_model(profile, &dm, &b, NULL) == 0 && b.measured_probe)
      printf("%s on %s (device not present: the probe and records of %s, built into kiln as its GPU prior)\n", path, target, b.prior_device);
    else if (b.prior_device[0])
      printf("%s on %s (device not present: spec-sheet figures, with the corrections fitted on %s's records, kiln's GPU prior)\n", path, target, b.prior_device);
    else printf("%s on %s (spec-sheet profile, device not present)\n", path, target);
    printf("%-28s %-18s %-11s %12s %12s  %s\n", "node", "op", "family", "predicted us", have_meas ? "measured us" : "", "chosen parameters");
    for (int i = 0; i < n; i++) {
      char ms[32] = "";
      if (p[i].measured_ns >= 0) snprintf(ms, sizeof ms, "%.1f", p[i].measured_ns / 1e3);
      printf("%-28.28s %-18.18s %-11s %12.1f %12s  %s\n", p[i].node, p[i].op, p[i].family, p[i].predicted_ns / 1e3, ms, p[i].params);
    }
    printf("total: predicted %.3f ms", tp / 1e6);
    if (have_meas) printf(", measured %.3f ms (sum of kernel times; predicted/measured %.2f)", tm / 1e6, tm > 0 ? tp / tm : 0);
    printf("\n");
  }
done:
  free(p);
  bound_free(&b);
  kiln_session_free(s);
  kiln_db_close(db);
  kiln_device_close(d);
  kiln_model_free(m);
  return rc;
}

/* ---- kiln plan ------------------------------------------------------------ */

static int cmd_plan(const cmd *c, int argc, char **argv) {
  const char *path = NULL, *devsel = getenv("KILN_DEVICE"), *dbpath = NULL, *v;
  bool json = false, nofusion = false, measure = true;
  kiln_shape_binding shapes[64];
  char shape_names[64][256];
  int nshapes = 0, rc = 0;
  for (int i = 0; i < argc && !rc; i++) {
    int r;
    char why[512];
    if (!strcmp(argv[i], "--json")) json = true;
    else if (!strcmp(argv[i], "--no-fusion")) nofusion = true;
    else if (!strcmp(argv[i], "--no-measure")) measure = false;
    else if ((r = opt_val(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--shape needs a value NAME=D0,D1,...");
      else if (nshapes == 64) rc = usage_error(c, "too many --shape options");
      else if (!parse_shape(v, &shapes[nshapes], shape_names[nshapes], sizeof shape_names[0], why, sizeof why)) rc = usage_error(c, "%s", why);
      else nshapes++;
    } else if ((r = opt_val(argc, argv, &i, "--db", &v)) != 0) {
      if (r < 0 || !*v) rc = usage_error(c, "--db needs a file");
      else dbpath = v;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) rc = usage_error(c, "--device needs a value");
      else devsel = v;
    } else if (argv[i][0] == '-' && argv[i][1]) rc = usage_error(c, "unknown option '%s'", argv[i]);
    else if (path) rc = usage_error(c, "unexpected argument '%s'", argv[i]);
    else path = argv[i];
  }
  if (!rc && !path) rc = usage_error(c, "no model given");
  if (rc) return rc;
  kiln_error err = {0};
  kiln_model *m = NULL;
  kiln_device *d = NULL;
  kiln_session *s = NULL;
  kiln_db *db = NULL;
  bound_inputs b = {0};
  kiln_plan_kernel *k = NULL;
  kiln_fusion_info *f = NULL;
  int nk = 0, nf = 0;
  kiln_load_options lo = {.shapes = shapes, .nshapes = nshapes};
  if ((rc = kiln_model_load(path, &lo, &m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = kiln_model_check_supported(m, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = bind_inputs(m, NULL, 0, true, 0, &b)) != 0) goto done;
  if ((rc = open_db_for_run(dbpath, &db)) != 0) goto done;
  if ((rc = kiln_device_open(devsel, &d, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = kiln_session_create(m, d, &s, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if (db && (rc = kiln_session_set_db(s, db, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if (nofusion) kiln_session_set_fusion(s, 0);
  if ((rc = set_inputs(s, &b)) != 0) goto done;
  if ((rc = kiln_session_plan_info(s, measure, &k, &nk, &err)) != 0) { rc = fail(&err, rc); goto done; }
  if ((rc = kiln_session_fusion(s, &f, &nf)) != 0) { print_error("out of memory"); rc = 1; goto done; }
  kiln_run_stats rs;
  kiln_session_get_stats(s, &rs);
  kiln_param_stats ps;
  kiln_session_param_stats(s, &ps);
  if (json) {
    printf("{\"model\":"); json_str(stdout, path);
    printf(",\"device\":"); json_str(stdout, kiln_device_get_info(d)->name);
    printf(",\"tuning\":{\"db\":");
    if (db) json_str(stdout, kiln_db_path(db)); else printf("null");
    printf(",\"tunable\":%d,\"tuned\":%d,\"predicted\":%d,\"defaulted\":%d", ps.tunable, ps.tuned, ps.predicted, ps.defaulted);
    kiln_cli__json_basis(stdout, s);
    printf("},\"fusion\":%s,\"kernels\":%d,\"kernel_launches\":%d,\"device_bytes\":%llu,\"intermediate_bytes\":%llu,\"intermediate_peak_bytes\":%llu,\"launches\":[",
           nofusion ? "false" : "true", nk, rs.kernels_launched, (unsigned long long)rs.device_bytes, (unsigned long long)rs.intermediate_bytes,
           (unsigned long long)rs.pool_bytes);
    for (int i = 0; i < nk; i++) {
      printf("%s{\"node\":", i ? "," : ""); json_str(stdout, k[i].node);
      printf(",\"ops\":"); json_str(stdout, k[i].ops);
      printf(",\"nodes\":%d,\"family\":", k[i].nodes_covered); json_str(stdout, k[i].family);
      printf(",\"params\":"); json_str(stdout, k[i].params);
      printf(",\"origin\":"); json_str(stdout, k[i].origin);
      printf(",\"predicted_us\":"); if (k[i].predicted_ns >= 0) json_num(stdout, k[i].predicted_ns / 1e3); else printf("null");
      printf(",\"measured_us\":"); if (k[i].measured_ns >= 0) json_num(stdout, k[i].measured_ns / 1e3); else printf("null");
      printf("}");
    }
    printf("],\"groupings\":[");
    for (int i = 0; i < nf; i++) {
      printf("%s{\"root\":", i ? "," : ""); json_str(stdout, f[i].root);
      printf(",\"nodes\":"); json_str(stdout, f[i].nodes);
      printf(",\"kind\":"); json_str(stdout, f[i].kind);
      printf(",\"fused\":%s,\"from_probe\":%s,\"predicted_fused_us\":", f[i].fused ? "true" : "false", f[i].probed ? "true" : "false");
      json_num(stdout, f[i].pred_fused_ns / 1e3);
      printf(",\"predicted_unfused_us\":"); json_num(stdout, f[i].pred_unfused_ns / 1e3);
      printf(",\"measured_fused_us\":"); if (f[i].meas_fused_ns > 0) json_num(stdout, f[i].meas_fused_ns / 1e3); else printf("null");
      printf(",\"measured_unfused_us\":"); if (f[i].meas_unfused_ns > 0) json_num(stdout, f[i].meas_unfused_ns / 1e3); else printf("null");
      printf(",\"reason\":"); json_str(stdout, f[i].reason);
      printf("}");
    }
    printf("]}\n");
  } else {
    printf("%s on %s: %d kernels, %d launches per inference%s, %.2f MiB of device memory\n", path, kiln_device_get_info(d)->name, nk,
           rs.kernels_launched, nofusion ? " (fusion off)" : "", rs.device_bytes / 1048576.0);
    printf("intermediates total %.2f MiB, peak %.2f MiB (%.1f%%); weights, inputs and outputs %.2f MiB\n", rs.intermediate_bytes / 1048576.0,
           rs.pool_bytes / 1048576.0, rs.intermediate_bytes ? 100.0 * (double)rs.pool_bytes / (double)rs.intermediate_bytes : 0.0,
           (rs.device_bytes - rs.pool_bytes) / 1048576.0);
    kiln_cli__print_tuning(stdout, "tuning: ", db ? kiln_db_path(db) : NULL, s, &ps);
    printf("%-26s %-24s %-9s %-10s %11s %11s  %s\n", "kernel (last node)", "ops", "family", "params", "predict us", "measured us", "parameters");
    for (int i = 0; i < nk; i++) {
      char pu[32] = "-", mu[32] = "-";
      if (k[i].predicted_ns >= 0) snprintf(pu, sizeof pu, "%.1f", k[i].predicted_ns / 1e3);
      if (k[i].measured_ns >= 0) snprintf(mu, sizeof mu, "%.1f", k[i].measured_ns / 1e3);
      printf("%-26.26s %-24.24s %-9.9s %-10s %11s %11s  %s\n", k[i].node, k[i].ops, k[i].family, k[i].origin, pu, mu, k[i].params);
    }
    if (nf) {
      printf("\ngroupings considered (%d):\n", nf);
      for (int i = 0; i < nf; i++)
        printf("  %-8s %-30.30s at %-24.24s %s%s\n", f[i].fused ? "FUSED" : "REJECTED", f[i].nodes, f[i].root, f[i].reason, f[i].probed ? "" : " [no probe: counted traffic]");
    } else if (!nofusion) printf("\nno fusable groupings in this model\n");
  }
done:
  free(k);
  free(f);
  bound_free(&b);
  kiln_session_free(s);
  kiln_db_close(db);
  kiln_device_close(d);
  kiln_model_free(m);
  return rc;
}

/* ---- kiln demo ------------------------------------------------------------ */

/* Like fail(), with the model's path in front unless the message names it. */
static int fail_in(const char *path, const kiln_error *err, int status) {
  if (strstr(err->msg, path)) return fail(err, status);
  print_error("%s: %s", path, err->msg[0] ? err->msg : kiln_strerror(status));
  return exit_code(status);
}

static int cmd_demo(const cmd *c, int argc, char **argv) {
  const char *dir = NULL, *devsel = getenv("KILN_DEVICE"), *v;
  for (int i = 0; i < argc; i++) {
    int r;
    if ((r = opt_val(argc, argv, &i, "--dir", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--dir needs a directory");
      dir = v;
    } else if ((r = opt_val(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0) return usage_error(c, "--device needs a value");
      devsel = v;
    } else if (argv[i][0] == '-') return usage_error(c, "unknown option '%s'", argv[i]);
    else return usage_error(c, "unexpected argument '%s'", argv[i]);
  }
  char tmpl[4096];
  if (!dir) {
    const char *t = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/kiln-demo-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpl)) { print_error("%s: cannot create a temporary directory: %s", tmpl, strerror(errno)); return EXIT_USAGE; }
    dir = tmpl;
  } else if (mkdir_p(dir) != 0) {
    print_error("--dir %s: cannot create directory: %s", dir, strerror(errno));
    return EXIT_USAGE;
  }
  kiln_error err = {0};
  kiln_device *d = NULL;
  int rc = kiln_device_open(devsel, &d, &err);
  if (rc) return fail(&err, rc);
  const kiln_device_info *di = kiln_device_get_info(d);
  printf("kiln %s demo\ndevice: %s (%s)\nmodels: %s\n", KILN_VERSION, di->name, di->platform, dir);
  static const char *const which[] = {"cnn", "transformer"};
  int worst = 0;
  for (size_t w = 0; w < sizeof which / sizeof which[0]; w++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, which[w]);
    printf("\n== %s: %s\n", which[w], path);
    fflush(stdout);
    kiln_model *m = NULL;
    kiln_session *s = NULL;
    bound_inputs b = {0};
    run_result res = {0};
    rc = 0;
    if ((rc = kiln_demo_write(which[w], path, 42, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
    if ((rc = kiln_model_load(path, NULL, &m, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
    kiln_model_stats st;
    kiln_model_get_stats(m, &st);
    printf("%d nodes, %lld parameters\n", st.nodes, (long long)st.params);
    if ((rc = bind_inputs(m, NULL, 0, true, 42, &b)) != 0) goto next;
    if ((rc = kiln_session_create(m, d, &s, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
    if ((rc = set_inputs(s, &b)) != 0) goto next;
    char sh[256];
    for (int i = 0; i < b.n; i++)
      printf("input '%s': %s %s (random, seed 42)\n", b.info[i].name, kiln_dtype_name(b.t[i]->dtype), fmt_shape(sh, sizeof sh, b.t[i]->rank, b.t[i]->dims, NULL));
    double first = 0, best = INFINITY;
    kiln_run_stats rs;
    for (int r = 0; r < 3; r++) {
      if ((rc = kiln_session_run(s, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
      kiln_session_get_stats(s, &rs);
      if (r == 0) first = rs.last_ms;
      else if (rs.last_ms < best) best = rs.last_ms;
    }
    printf("first run %.1f ms (planning, %d programs compiled in %.1f ms), then %.3f ms; %d kernels per run, %d nodes folded\n", first,
           rs.programs_compiled, rs.compile_ms, best, rs.kernels_launched, rs.nodes_folded);
    int nout = kiln_model_num_outputs(m);
    for (int i = 0; i < nout; i++) print_tensor("output", kiln_session_output(s, i));
    if ((rc = check_reference(s, nout, &res)) != 0) goto next;
    if (res.check_ok) printf("matches CPU reference: max abs err %.3g, max rel err %.3g (tolerance %g)\n", res.max_abs, res.max_rel, CHECK_RTOL);
    else {
      printf("DOES NOT MATCH the CPU reference: max abs err %.3g, max rel err %.3g (tolerance %g)\n", res.max_abs, res.max_rel, CHECK_RTOL);
      for (int i = 0; i < nout; i++)
        if (!res.cmp[i].ok) { fflush(stdout); print_error("%s: output '%s' differs from the CPU reference (%s)", which[w], kiln_session_output(s, i)->name, res.cmp[i].why); break; }
      rc = 1;
    }
  next:
    fflush(stdout);
    if (rc > worst) worst = rc;
    run_result_free(&res);
    bound_free(&b);
    kiln_session_free(s);
    kiln_model_free(m);
  }
  kiln_device_close(d);
  printf("\n%s\n", worst ? "demo FAILED" : "demo passed: every model ran on the OpenCL device and matches the CPU reference");
  if (!worst) printf("try: kiln info %s/cnn.onnx; kiln run %s/transformer.onnx --random --check --repeat 10\n", dir, dir);
  return worst;
}

/* ---- dispatch ------------------------------------------------------------- */

static int cmd_help(const cmd *c, int argc, char **argv);

int kiln_cli_db(int argc, char **argv); /* cli/cmd_db.c */
static int cmd_db(const cmd *c, int argc, char **argv) { (void)c; return kiln_cli_db(argc, argv); }
static int cmd_bench(const cmd *c, int argc, char **argv) { (void)c; return kiln_cli_bench(argc, argv); }
static int cmd_report(const cmd *c, int argc, char **argv) { (void)c; return kiln_cli_report(argc, argv); }

static const cmd commands[] = {
  {"run", cmd_run, NEEDS_MODEL | NEEDS_DEVICE, "run a model on an OpenCL device",
   "MODEL.onnx [--input [NAME=]FILE]... [--random] [--seed N] [--shape NAME=D0,D1,...]...\n"
   "                [--output-dir DIR] [--format npy|pb] [--repeat N] [--device SEL] [--check] [--json] [--db FILE]\n"
   "                [--no-fusion] [--max-memory BYTES] [--max-model-bytes BYTES]",
   "  --input [NAME=]FILE   bind an input from a TensorProto (.pb) or NumPy (.npy) file; without\n"
   "                        NAME= it binds to the first input not bound yet\n"
   "  --random              fill unbound inputs with seeded uniform [-1,1) floats (integers: 0..9);\n"
   "                        their shape must be declared by the model or bound with --shape\n"
   "  --seed N              seed for --random (default 0)\n"
   "  --shape NAME=D0,...   bind an input's shape, or a symbolic dimension (--shape N=1)\n"
   "  --output-dir DIR      write each output as DIR/<name>.npy (or .pb); only after a fully\n"
   "                        successful run (no files at all on error)\n"
   "  --format npy|pb       output file format (default npy)\n"
   "  --repeat N            run N times; print median and min latency of runs 2..N (the first\n"
   "                        run plans the model and compiles kernels and is reported apart)\n"
   "  --device SEL          device: index, P:D or a name substring (see `kiln devices`;\n"
   "                        default $KILN_DEVICE, else the first GPU, else the first device)\n"
   "  --check               also run the CPU reference and compare; exit 1 when an element\n"
   "                        differs by more than 1e-3 x max(|ref|, 1% of the output's max |ref|)\n"
   "  --json                print one JSON object on stdout and nothing else\n"
   "  --db FILE             tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db if it exists)\n"
   "  --no-fusion           run every node as its own kernel (for comparison)\n"
   "  --verify-imported     re-time imported or shared records for this exact device once before\n"
   "                        running; a record that misses its recorded time is demoted\n"
   "  --max-memory BYTES    refuse a plan that needs more device memory than this\n"
   "  --max-model-bytes BYTES  refuse a model whose file and external data together are larger\n"
   "                        (default $KILN_MAX_MODEL_BYTES, else 4 GiB; every command honours the\n"
   "                        variable)\n"},
  {"info", cmd_info, NEEDS_MODEL | USES_DEVICE, "show a model's inputs, outputs, ops, parameters and FLOPs",
   "MODEL.onnx [--shape NAME=D0,D1,...]... [--device SEL] [--json]",
   "  --shape NAME=D0,...   bind an input's shape or a symbolic dimension (needed for FLOPs)\n"
   "  --device SEL          device used to plan the model for FLOPs and output shapes\n"
   "  --json                print one JSON object on stdout\n"},
  {"devices", cmd_devices, 0, "list OpenCL platforms and devices", "[--json]",
   "  --json                print one JSON object on stdout\n"},
  {"demo", cmd_demo, NEEDS_DEVICE, "write the built-in demo models, run them and check them against the CPU reference",
   "[--dir DIR] [--device SEL]",
   "  --dir DIR             where to write cnn.onnx and transformer.onnx (default: a new temporary dir)\n"
   "  --device SEL          device (see `kiln devices`)\n"},
  {"tune", cmd_tune, NEEDS_MODEL | NEEDS_DEVICE, "measure kernel parameters for a model on this device and store them in the tuning database",
   "MODEL.onnx [--db FILE] [--budget SECONDS] [--max-trials N] [--strategy model|exhaustive|random]\n"
   "                [--families LIST] [--max-gflop X] [--compare-strategies] [--fusion-close X]\n"
   "                [--input [NAME=]FILE]... [--shape NAME=D0,...]... [--seed N] [--device SEL] [--json]",
   "  --db FILE             tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db)\n"
   "  --budget SECONDS      stop after this much time (recorded instances are kept; rerun resumes)\n"
   "  --max-trials N        candidates measured per kernel instance (default: model ~10%, at most 48; else all)\n"
   "  --strategy NAME       model (default: rank the space with the cost model, measure the most\n"
   "                        promising, refit, repeat; probes the device first if needed),\n"
   "                        exhaustive or random; with each, the instance's contenders (those\n"
   "                        within 1.3x of the fastest, at most 16) are then timed again together\n"
   "                        (alternating rounds) in the same conditions; candidates are ranked\n"
   "                        by their fastest repeat\n"
   "                        (interference on a shared machine only adds time)\n"
   "  --input, --shape, --seed   as for `kiln run`; unbound inputs are random\n"
   "  --no-fusion           tune the kernels of the unfused plan\n"
   "  --families LIST       only these kernel families (comma list, e.g. conv,gemm; \"fusion\":\n"
   "                        the fusion groupings below)\n"
   "  --max-gflop X         skip instances whose default candidate does more than X GFLOP\n"
   "  --fusion-close X      after the kernels, time every fusion grouping whose predicted fused and\n"
   "                        separate times are within a factor X (default 1.5; 0: none) both ways in\n"
   "                        the whole model and record both per device and subgraph signature;\n"
   "                        `kiln run` and `kiln plan` then follow the measurement\n"
   "  --compare-strategies  measure every candidate (reusing this device's records of the\n"
   "                        instance), time each twice more in a second and a third pass, each\n"
   "                        in its own shuffled order (the fastest counts: a minute of\n"
   "                        contention does not sink a candidate), the contenders for best\n"
   "                        once more together, replay the model strategy on those\n"
   "                        times and print per instance: candidates, how many the model\n"
   "                        measures, and its pick against the exhaustive best\n"
   "  --json                print one JSON object with the per-instance table\n"},
  {"probe", cmd_probe, NEEDS_DEVICE, "measure the device (bandwidth, arithmetic peak, layout-change rate, launch overhead) for the cost model",
   "[--db FILE | --no-db] [--device SEL] [--json]",
   "  --db FILE             store the figures with the device in this database (default as for tune)\n"
   "  --no-db               only print\n"
   "  --json                print one JSON object\n"},
  {"predict", cmd_predict, NEEDS_MODEL | USES_DEVICE, "predict each op's time, algorithm and parameters on this device or a device profile",
   "MODEL.onnx [--profile NAME] [--shape NAME=D0,...]... [--db FILE] [--device SEL] [--json]",
   "  --profile NAME        a device that need not be present: rtx3060, h100, rx7900xtx, arc-a770, m2\n"
   "                        (spec-sheet figures); without it, this device's probe is used and each\n"
   "                        op is also measured, so predicted and measured times print side by side\n"
   "  --shape NAME=D0,...   bind input shapes (needed with --profile for symbolic dimensions)\n"
   "  --db FILE             database with this device's probe and records (default as for tune)\n"
   "  --json                print one JSON object\n"},
  {"model", cmd_model, NEEDS_DEVICE, "cost-model accuracy on this device's records: kiln model eval; its built-in prior: export-prior",
   "eval|export-prior [--db FILE] [--device SEL | --db-device SEL] [--json]",
   "  eval                  per kernel family, each tuned instance held out in turn: Kendall tau between\n"
   "                        predicted and measured times, top-1/top-5 recall of the measured best, regret\n"
   "                        (measured time of the predicted best / measured best)\n"
   "  export-prior          print costmodel/prior_cpu.inc (a CPU device) or prior_gpu.inc (a GPU): the\n"
   "                        per-family corrections fitted on this device's records and its probe,\n"
   "                        used on devices of its kind without their own probe or records, and by\n"
   "                        `kiln predict --profile` for GPUs (rebuild to take effect)\n"
   "  --db FILE             tuning database (default as for tune)\n"
   "  --db-device SEL       the records of a device stored in the database instead of an OpenCL\n"
   "                        device's (a row id or part of its fingerprint, see `kiln db list`); it\n"
   "                        need not be present, and no OpenCL device is opened\n"
   "  --json                print one JSON object\n"},
  {"plan", cmd_plan, NEEDS_MODEL | NEEDS_DEVICE, "show the kernels kiln will launch: nodes covered, parameters and their origin, times, fusion groupings",
   "MODEL.onnx [--db FILE] [--no-fusion] [--no-measure] [--shape NAME=D0,...]... [--device SEL] [--json]",
   "  --db FILE             tuning database (default as for run)\n"
   "  --no-fusion           the plan without fusion\n"
   "  --no-measure          do not time each kernel\n"
   "  --json                print one JSON object\n"},
  {"bench", cmd_bench, NEEDS_MODEL | NEEDS_DEVICE, KILN_CLI_BENCH_SUMMARY, KILN_CLI_BENCH_SYNOPSIS, KILN_CLI_BENCH_HELP},
  {"report", cmd_report, USES_DEVICE, KILN_CLI_REPORT_SUMMARY, KILN_CLI_REPORT_SYNOPSIS, KILN_CLI_REPORT_HELP},
  {"db", cmd_db, 0, "inspect, share, merge and check tuning databases",
   "<list|show|stats|coverage|export|import|merge|verify|prune> [options]  (kiln db --help)", ""},
  {"help", cmd_help, 0, "show help for a command", "[COMMAND]", ""},
};

static const cmd *find_cmd(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(commands[i].name, name)) return &commands[i];
  return NULL;
}

static void print_cmd_help(const cmd *c) {
  printf("usage: kiln %s %s\n\n%s.\n", c->name, c->synopsis, c->summary);
  if (c->flags & NEEDS_DEVICE) printf("Needs an OpenCL device.\n");
  if (c->flags & USES_DEVICE) printf("Uses an OpenCL device when one is available.\n");
  if (c->help[0]) printf("\noptions:\n%s", c->help);
  printf("  -h, --help            show this help\n");
}

static void print_main_help(void) {
  printf("kiln %s: run ONNX models on OpenCL devices\n\nusage: kiln <command> [options]\n       kiln <command> --help\n\ncommands:\n", KILN_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) printf("  %-9s %s\n", commands[i].name, commands[i].summary);
  printf("\noptions:\n  -h, --help       show this help\n  --version        print the version\n\n"
         "exit status: 0 success, 2 bad input or environment (model, inputs, arguments, no OpenCL\n"
         "platform), 1 other failures (OpenCL errors, mismatch with the CPU reference).\n"
         "environment: KILN_DEVICE (default device), KILN_DB (tuning database), KILN_CACHE_DIR (program binary\n"
         "and quick-probe cache, 'off' to disable), KILN_PROBE ('off': no quick probe of the device without\n"
         "a probed database; predictions rest on the built-in prior's figures)\n");
}

static int cmd_help(const cmd *c, int argc, char **argv) {
  if (argc == 0) { print_main_help(); return 0; }
  if (argc > 1) return usage_error(c, "too many arguments");
  const cmd *t = find_cmd(argv[0]);
  if (!t) return usage_error(NULL, "unknown command '%s'", argv[0]);
  print_cmd_help(t);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage_error(NULL, "no command given");
  const char *a = argv[1];
  if (is_help(a)) { print_main_help(); return 0; }
  if (!strcmp(a, "--version") || !strcmp(a, "-V")) { printf("kiln %s\n", KILN_VERSION); return 0; }
  if (a[0] == '-') return usage_error(NULL, "unknown option '%s'", a);
  const cmd *c = find_cmd(a);
  if (!c) return usage_error(NULL, "unknown command '%s'", a);
  for (int i = 2; i < argc && c->fn != cmd_db; i++) /* `kiln db` prints its own help */
    if (is_help(argv[i])) { print_cmd_help(c); return 0; }
  return c->fn(c, argc - 2, argv + 2);
}
