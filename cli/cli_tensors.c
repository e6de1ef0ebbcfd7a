/* cli_tensors.c: tensors for the `kiln` commands: binding a model's inputs
 * (files, then seeded random values), summaries and JSON of tensors, the
 * device-vs-CPU-reference comparison and writing outputs to files. Only
 * the public API in kiln.h is used. */
#include "kiln_cli.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define print_error kiln_cli__error
#define fail kiln_cli__fail
#define EXIT_USAGE 2

double kiln_cli__getf(const kiln_tensor *t, int64_t k) {
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
const char *kiln_cli__fmt_shape(char *buf, size_t n, int rank, const int64_t *dims, const char *const *names) {
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

void kiln_cli__json_shape(FILE *f, int rank, const int64_t *dims, const char *const *names) {
  if (rank < 0) { fputs("null", f); return; }
  fputc('[', f);
  for (int k = 0; k < rank; k++) {
    if (k) fputc(',', f);
    if (dims[k] >= 0) fprintf(f, "%lld", (long long)dims[k]);
    else if (names && names[k]) kiln_cli__json_str(f, names[k]);
    else fputs("null", f);
  }
  fputc(']', f);
}


kiln_cli__tstats kiln_cli__tensor_stats(const kiln_tensor *t) {
  kiln_cli__tstats s = {INFINITY, -INFINITY, 0, kiln_tensor_numel(t), 0};
  double sum = 0;
  int64_t fin = 0;
  for (int64_t k = 0; k < s.n; k++) {
    double v = kiln_cli__getf(t, k);
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

void kiln_cli__print_tensor(const char *label, const kiln_tensor *t) {
  char sh[256];
  kiln_cli__tstats st = kiln_cli__tensor_stats(t);
  printf("%s '%s': %s %s  min %.6g  max %.6g  mean %.6g", label, t->name ? t->name : "?", kiln_dtype_name(t->dtype),
         kiln_cli__fmt_shape(sh, sizeof sh, t->rank, t->dims, NULL), st.min, st.max, st.mean);
  if (st.nonfinite) printf("  (%lld NaN/inf)", (long long)st.nonfinite);
  printf("\n    values:");
  int64_t show = st.n < 8 ? st.n : 8;
  for (int64_t k = 0; k < show; k++) printf("%s %.6g", k ? "," : "", kiln_cli__getf(t, k));
  if (st.n > show) printf(", ... (%lld elements)", (long long)st.n);
  printf("\n");
}

/* Compares dev with ref element by element (the rule is in kiln_cli.h). */
static void compare_tensor(const kiln_tensor *dev, const kiln_tensor *ref, double rtol, bool scaled, kiln_cli__cmp *r) {
  memset(r, 0, sizeof *r);
  r->ok = true;
  bool same = dev->dtype == ref->dtype && dev->rank == ref->rank;
  for (int k = 0; same && k < dev->rank; k++) same = dev->dims[k] == ref->dims[k];
  if (!same) {
    char a[128], b[128];
    snprintf(r->why, sizeof r->why, "device gave %s %s, reference %s %s", kiln_dtype_name(dev->dtype),
             kiln_cli__fmt_shape(a, sizeof a, dev->rank, dev->dims, NULL), kiln_dtype_name(ref->dtype), kiln_cli__fmt_shape(b, sizeof b, ref->rank, ref->dims, NULL));
    r->ok = false;
    r->max_abs = r->max_rel = r->max_scaled = INFINITY;
    return;
  }
  int64_t n = kiln_tensor_numel(ref);
  double scale = 0;
  for (int64_t k = 0; k < n; k++) { double v = fabs(kiln_cli__getf(ref, k)); if (isfinite(v) && v > scale) scale = v; }
  double floor = scale * 1e-2;
  if (floor < 1e-30) floor = 1e-30;
  for (int64_t k = 0; k < n; k++) {
    double d = kiln_cli__getf(dev, k), w = kiln_cli__getf(ref, k), e, rel;
    if (isnan(d) || isnan(w) || isinf(d) || isinf(w)) {
      if ((isnan(d) && isnan(w)) || d == w) continue;
      e = rel = INFINITY;
    } else {
      e = fabs(d - w);
      rel = e / fmax(fabs(w), floor);
    }
    if (e > r->max_abs) r->max_abs = e;
    if (rel > r->max_rel) r->max_rel = rel;
    double q = scaled ? e / fmax(scale, 1e-30) : rel; /* what the tolerance applies to */
    bool bad = q > rtol && (scaled || e > KILN_CLI_CHECK_SCALED_FLOOR * scale);
    if (bad && (r->ok || e >= r->max_abs)) { /* report the worst element */
      r->ok = false;
      snprintf(r->why, sizeof r->why, "worst at element %lld: device %.7g, reference %.7g", (long long)k, d, w);
    }
  }
  r->max_scaled = r->max_abs / fmax(scale, 1e-30);
}

void kiln_cli__inputs_free(kiln_cli__inputs *b) {
  if (!b) return;
  for (int i = 0; b->t && i < b->n; i++) kiln_tensor_free(b->t[i]);
  free(b->t);
  free(b->info);
  free(b->random);
  memset(b, 0, sizeof *b);
}

static int input_index(const kiln_cli__inputs *b, const char *name) {
  for (int i = 0; i < b->n; i++) if (!strcmp(b->info[i].name, name)) return i;
  return -1;
}

static void input_names(const kiln_cli__inputs *b, char *buf, size_t n) {
  size_t l = 0;
  buf[0] = 0;
  for (int i = 0; i < b->n && l < n; i++) l += (size_t)snprintf(buf + l, n - l, "%s'%s'", i ? ", " : "", b->info[i].name);
  if (!b->n && n) snprintf(buf, n, "none");
}

int kiln_cli__bind_inputs(kiln_model *m, const char *const *args, int nargs, bool random, uint64_t seed, const char *why,
                          kiln_cli__inputs *b) {
  kiln_error err = {0};
  char pre[64];
  snprintf(pre, sizeof pre, "%s%s", why ? why : "", why ? ": " : "");
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
      print_error("%sinput '%s' has no declared shape: bind it with --shape %s=D0,D1,...", pre, vi->name, vi->name);
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
          print_error("%sinput '%s' dimension %d ('%s') is not known: bind it with --shape %s=SIZE or --shape %s=D0,D1,...", pre, vi->name, k, vi->dim_names[k], vi->dim_names[k], vi->name);
        else
          print_error("%sinput '%s' dimension %d is not known: bind it with --shape %s=D0,D1,...", pre, vi->name, k, vi->name);
        return EXIT_USAGE;
      }
    }
    if (kiln_dtype_size(vi->dtype) == 0) {
      print_error("%sinput '%s' has dtype %s, which kiln cannot generate", pre, vi->name, kiln_dtype_name(vi->dtype));
      return EXIT_USAGE;
    }
    kiln_tensor *t = kiln_tensor_new(vi->dtype, vi->rank, dims);
    if (!t) { print_error("%sinput '%s': tensor too large", pre, vi->name); return EXIT_USAGE; }
    fill_random(t, &rng);
    b->t[i] = t;
    b->random[i] = true;
  }
  return 0;
}

int kiln_cli__set_inputs(kiln_session *s, const kiln_cli__inputs *b) {
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

int kiln_cli__mkdir_p(const char *path) {
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
int kiln_cli__write_outputs(const char *dir, const char *ext, const kiln_tensor *const *outs, int n, bool quiet) {
  kiln_error err = {0};
  if (kiln_cli__mkdir_p(dir) != 0) { print_error("--output-dir %s: cannot create directory: %s", dir, strerror(errno)); return EXIT_USAGE; }
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

void kiln_cli__check_free(kiln_cli__check *r) {
  for (int i = 0; i < r->nref; i++) kiln_tensor_free(r->ref[i]);
  free(r->ref);
  free(r->cmp);
  memset(r, 0, sizeof *r);
}

int kiln_cli__check_reference(kiln_session *s, int nout, kiln_cli__check *r) {
  kiln_error err = {0};
  int rc = kiln_session_run_reference(s, &r->ref, &r->nref, &err);
  if (rc) return fail(&err, rc);
  r->cmp = calloc((size_t)nout + 1, sizeof *r->cmp);
  if (!r->cmp) { print_error("out of memory"); return 1; }
  r->ok = true;
  r->scaled = kiln_session_precision(s) != KILN_PRECISION_FP32;
  r->rtol = r->scaled ? KILN_CLI_CHECK_RTOL_FP16 : KILN_CLI_CHECK_RTOL;
  for (int i = 0; i < nout && i < r->nref; i++) {
    compare_tensor(kiln_session_output(s, i), r->ref[i], r->rtol, r->scaled, &r->cmp[i]);
    if (r->cmp[i].max_scaled > r->max_scaled || isnan(r->cmp[i].max_scaled)) r->max_scaled = r->cmp[i].max_scaled;
    if (r->cmp[i].max_abs > r->max_abs || isnan(r->cmp[i].max_abs)) r->max_abs = r->cmp[i].max_abs;
    if (r->cmp[i].max_rel > r->max_rel || isnan(r->cmp[i].max_rel)) r->max_rel = r->cmp[i].max_rel;
    if (!r->cmp[i].ok) r->ok = false;
  }
  return 0;
}
