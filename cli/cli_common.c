/* cli_common.c: helpers shared by the subcommands in cli/cmd_*.c: one-line
 * errors, exit codes, option values, --shape parsing, input binding (files
 * and seeded random tensors, as `kiln run --random` draws them) and JSON
 * strings. Only the public API in kiln.h is used. */
#include "kiln_cli.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int kiln_cli__exit_code(int status) {
  switch (status) {
  case KILN_OK: return 0;
  case KILN_EPARSE: case KILN_EUNSUPPORTED: case KILN_ESHAPE: case KILN_ENOTFOUND:
  case KILN_ENODEVICE: case KILN_EIO: case KILN_ELIMIT: case KILN_EINVAL: case KILN_EDB:
    return 2;
  default: return 1;
  }
}

void kiln_cli__error(const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p; p++) if (*p == '\n' || *p == '\r') *p = ' ';
  fflush(stdout);
  fprintf(stderr, "kiln: error: %s\n", msg);
}

void kiln_cli__note_cpu_fallback(const kiln_device *d, const char *devsel) {
  if (devsel && *devsel) return; /* the user chose the device */
  const kiln_device_info *in = kiln_device_get_info(d);
  const char *lib = in && !in->is_gpu ? kiln_unregistered_gpu_driver() : NULL;
  if (lib)
    fprintf(stderr, "kiln: note: running on %s, not a GPU: NVIDIA's OpenCL library at %s is installed but no ICD file names it "
                    "(echo %s > /etc/OpenCL/vendors/nvidia.icd)\n", in->name, lib, lib);
}

int kiln_cli__fail(const kiln_error *err, int status) {
  kiln_cli__error("%s", err && err->msg[0] ? err->msg : kiln_strerror(status));
  return kiln_cli__exit_code(status);
}

int kiln_cli__usage(const char *cmd, const char *synopsis, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kiln_cli__error("%s", msg);
  fprintf(stderr, "usage: kiln %s %s\n(see 'kiln %s --help')\n", cmd, synopsis, cmd);
  return 2;
}

int kiln_cli__opt_val(int argc, char **argv, int *i, const char *name, const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') { *val = a + n + 1; return 1; }
  if (a[n] != 0) return 0;
  if (*i + 1 >= argc) return -1;
  *val = argv[++*i];
  return 1;
}

bool kiln_cli__parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

bool kiln_cli__parse_shape(const char *arg, kiln_shape_binding *b, char *namebuf, size_t nl, char *why, size_t wl) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg) { snprintf(why, wl, "--shape %s: expected NAME=D0,D1,...", arg); return false; }
  if ((size_t)(eq - arg) >= nl) { snprintf(why, wl, "--shape: name too long"); return false; }
  memcpy(namebuf, arg, (size_t)(eq - arg));
  namebuf[eq - arg] = 0;
  b->name = namebuf;
  b->rank = 0;
  const char *p = eq + 1;
  if (!strcmp(p, "[]") || !*p) return true;
  while (*p) {
    char *end;
    if (*p < '0' || *p > '9') { snprintf(why, wl, "--shape %s: dimensions must be non-negative integers", arg); return false; }
    errno = 0;
    long long d = strtoll(p, &end, 10);
    if (errno || (*end && *end != ',')) { snprintf(why, wl, "--shape %s: dimensions must be non-negative integers", arg); return false; }
    if (b->rank == KILN_MAX_RANK) { snprintf(why, wl, "--shape %s: more than %d dimensions", arg, KILN_MAX_RANK); return false; }
    b->dims[b->rank++] = d;
    p = *end ? end + 1 : end;
  }
  return true;
}

void kiln_cli__json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p == '\n') fputs("\\n", f);
    else if (*p == '\t') fputs("\\t", f);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

void kiln_cli__json_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

/* splitmix64, as `kiln run --random` uses it. */
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int e = (int)((x >> 23) & 255) - 127 + 15;
  uint32_t m = x & 0x7fffff;
  if (e <= 0) return (uint16_t)sign;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  return (uint16_t)(sign | (uint32_t)e << 10 | (m + 0x1000) >> 13);
}

/* Uniform [-1,1) floats, integers 0..9, booleans. */
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
    default: break;
    }
  }
}

void kiln_cli__inputs_free(kiln_cli__inputs *b) {
  if (!b) return;
  for (int i = 0; i < b->n; i++) kiln_tensor_free(b->t ? b->t[i] : NULL);
  free(b->t);
  free(b->info);
  free(b->random);
  memset(b, 0, sizeof *b);
}

int kiln_cli__bind_inputs(kiln_model *m, const char *const *args, int nargs, uint64_t seed, kiln_cli__inputs *b) {
  kiln_error err = {0};
  b->n = kiln_model_num_inputs(m);
  b->info = calloc((size_t)b->n + 1, sizeof *b->info);
  b->t = calloc((size_t)b->n + 1, sizeof *b->t);
  b->random = calloc((size_t)b->n + 1, sizeof *b->random);
  if (!b->info || !b->t || !b->random) { kiln_cli__error("out of memory"); return 1; }
  for (int i = 0; i < b->n; i++) kiln_model_input_info(m, i, &b->info[i]);
  /* named bindings first, then bare files in order */
  for (int pass = 0; pass < 2; pass++) {
    for (int a = 0; a < nargs; a++) {
      const char *arg = args[a], *eq = strchr(arg, '='), *file = arg;
      struct stat st;
      int idx = -1;
      bool named = eq && eq != arg && stat(arg, &st) != 0; /* "x=y.npy" is a file name only if it exists */
      if (named) {
        if (pass == 1) continue;
        file = eq + 1;
        for (int i = 0; i < b->n; i++)
          if (strlen(b->info[i].name) == (size_t)(eq - arg) && !strncmp(b->info[i].name, arg, (size_t)(eq - arg))) idx = i;
        if (idx < 0) { kiln_cli__error("--input %s: the model has no input named '%.*s'", arg, (int)(eq - arg), arg); return 2; }
        if (b->t[idx]) { kiln_cli__error("--input %s: input '%s' is bound twice", arg, b->info[idx].name); return 2; }
      } else {
        if (pass == 0) continue;
        for (int i = 0; i < b->n && idx < 0; i++) if (!b->t[i]) idx = i;
        if (idx < 0) { kiln_cli__error("--input %s: every input is already bound", arg); return 2; }
      }
      int rc = kiln_tensor_read(file, &b->t[idx], &err);
      if (rc) return kiln_cli__fail(&err, rc);
    }
  }
  uint64_t rng = seed;
  for (int i = 0; i < b->n; i++) {
    if (b->t[i]) continue;
    kiln_value_info *vi = &b->info[i];
    if (vi->rank < 0) { kiln_cli__error("input '%s' has no declared shape: bind it with --shape %s=D0,D1,... or --input", vi->name, vi->name); return 2; }
    int64_t dims[KILN_MAX_RANK];
    for (int k = 0; k < vi->rank; k++) {
      dims[k] = vi->dims[k];
      if (dims[k] < 0) {
        kiln_cli__error("input '%s' dimension %d%s%s%s is not known: bind it with --shape", vi->name, k, vi->dim_names[k] ? " ('" : "",
                        vi->dim_names[k] ? vi->dim_names[k] : "", vi->dim_names[k] ? "')" : "");
        return 2;
      }
    }
    if (kiln_dtype_size(vi->dtype) == 0) { kiln_cli__error("input '%s' has dtype %s, which kiln cannot generate", vi->name, kiln_dtype_name(vi->dtype)); return 2; }
    if (!(b->t[i] = kiln_tensor_new(vi->dtype, vi->rank, dims))) { kiln_cli__error("input '%s': tensor too large", vi->name); return 2; }
    fill_random(b->t[i], &rng);
    b->random[i] = true;
  }
  return 0;
}

int kiln_cli__set_inputs(kiln_session *s, const kiln_cli__inputs *b) {
  kiln_error err = {0};
  for (int i = 0; i < b->n; i++) {
    int rc = kiln_session_set_input(s, b->info[i].name, b->t[i], &err);
    if (rc) return kiln_cli__fail(&err, rc);
  }
  return 0;
}

int kiln_cli__open_db(const char *explicit_path, int flags, kiln_db **db) {
  char buf[4096];
  const char *path = explicit_path ? explicit_path : kiln_db_default_path(buf, sizeof buf);
  struct stat st;
  kiln_error err = {0};
  *db = NULL;
  if (!explicit_path && !(flags & KILN_DB_CREATE) && stat(path, &st) != 0) return 0;
  int rc = kiln_db_open(path, flags, db, &err);
  if (rc == KILN_ENOTFOUND) { kiln_cli__error("--db %s: no such tuning database (create one with `kiln tune`)", path); return 2; }
  if (rc) return kiln_cli__fail(&err, rc);
  return 0;
}

/* What kiln_param_basis.figures says, in words. */
static const char *basis_words(const kiln_param_basis *b, char *buf, size_t len) {
  if (!strcmp(b->figures, "probe")) return "on the database's probe of this device";
  if (!strcmp(b->figures, "quick probe")) {
    snprintf(buf, len, "on a quick probe of this device (%.2f s, %.2f s of it compiling; %s)", b->probe_ms / 1e3, b->probe_compile_ms / 1e3,
             b->cache[0] ? "now cached" : "not cached");
    return buf;
  }
  if (!strcmp(b->figures, "cached quick probe")) return "on the cached quick probe of this device";
  if (!strcmp(b->figures, "prior")) return "on the built-in prior's figures (no probe of this device)";
  return "";
}

void kiln_cli__print_tuning(FILE *o, const char *label, const char *dbpath, const kiln_session *s, const kiln_param_stats *ps) {
  kiln_param_basis b;
  char words[128];
  kiln_session_param_basis(s, &b);
  fprintf(o, "%s%s: %d tunable kernel%s: %d tuned (measured), %d with parameters predicted by the cost model %s, %d with descriptor defaults%s\n",
          label, dbpath ? dbpath : "no tuning database", ps->tunable, ps->tunable == 1 ? "" : "s", ps->tuned, ps->predicted, basis_words(&b, words, sizeof words),
          ps->defaulted, dbpath || !ps->tunable ? "" : " (run `kiln tune` to measure them)");
  if (b.note[0]) fprintf(stderr, "kiln: note: %s\n", b.note);
}

void kiln_cli__json_basis(FILE *o, const kiln_session *s) {
  kiln_param_basis b;
  kiln_session_param_basis(s, &b);
  fprintf(o, ",\"figures\":");
  kiln_cli__json_str(o, b.figures);
  fprintf(o, ",\"probe_ms\":");
  kiln_cli__json_num(o, b.probe_ms);
  fprintf(o, ",\"probe_compile_ms\":");
  kiln_cli__json_num(o, b.probe_compile_ms);
  fprintf(o, ",\"note\":");
  if (b.note[0]) kiln_cli__json_str(o, b.note);
  else fprintf(o, "null");
}
