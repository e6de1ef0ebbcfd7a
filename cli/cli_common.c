/* cli_common.c: helpers shared by the commands in cli/cmd_*.c: one-line
 * errors, exit codes, option values, --shape parsing, JSON strings and
 * opening the tuning database. Only the public API in kiln.h is used. */
#include "kiln_cli.h"
#include "kiln_db.h" /* kiln_db_attach_path_list */
#include <assert.h>
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

void kiln_cli__jprintf(FILE *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') { fputc(*p, f); continue; }
    switch (*++p) {
    case 's': kiln_cli__json_str(f, va_arg(ap, const char *)); break;
    case 'z': kiln_cli__json_str_or_null(f, va_arg(ap, const char *)); break;
    case 'g': kiln_cli__json_num(f, va_arg(ap, double)); break;
    case 'd': fprintf(f, "%d", va_arg(ap, int)); break;
    case 'L': fprintf(f, "%lld", va_arg(ap, long long)); break;
    case 'b': fputs(va_arg(ap, int) ? "true" : "false", f); break;
    case 'r': fputs(va_arg(ap, const char *), f); break;
    case '%': fputc('%', f); break;
    default: assert(!"kiln_cli__jprintf: unknown conversion"); p--; break;
    }
  }
  va_end(ap);
}

void kiln_cli__json_str_or_null(FILE *f, const char *s) {
  if (s) kiln_cli__json_str(f, s);
  else fputs("null", f);
}

int kiln_cli__cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

kiln_options kiln_cli_env;

int kiln_cli__load_env(void) {
  kiln_error err = {0};
  int rc = kiln_options_from_env(&kiln_cli_env, &err);
  return rc ? kiln_cli__fail(&err, rc) : 0;
}

const char *kiln_cli__env_string(const char *name) {
  if (!strcmp(name, "KILN_DEVICE")) return kiln_cli_env.device;
  if (!strcmp(name, "KILN_DB")) return kiln_cli_env.db;
  if (!strcmp(name, "KILN_DB_PATH")) return kiln_cli_env.db_path;
  return NULL;
}

const char *kiln_cli__default_db(char *buf, size_t len) {
  if (kiln_cli_env.db) { snprintf(buf, len, "%s", kiln_cli_env.db); return buf; }
  return kiln_db_default_path(buf, len);
}

int kiln_cli__device_open(const char *selector, kiln_device **out, kiln_error *err) {
  int rc = kiln_device_open(selector, out, err);
  if (rc == 0 && (rc = kiln_device_set_options(*out, &kiln_cli_env, err)) != 0) {
    kiln_device_close(*out);
    *out = NULL;
  }
  return rc;
}

uint64_t kiln_cli__max_model_bytes(uint64_t explicit_limit) { return explicit_limit ? explicit_limit : kiln_cli_env.max_model_bytes; }

int kiln_cli__open_db(const char *explicit_path, int flags, bool shared, kiln_db **db) {
  char buf[4096];
  const char *path = explicit_path ? explicit_path : kiln_cli__default_db(buf, sizeof buf);
  const char *list = shared ? kiln_cli_env.db_path : NULL;
  bool have_shared = list && *list;
  kiln_error err = {0};
  *db = NULL;
  if (!(flags & KILN_DB_CREATE)) {
    /* reading: the user database (read-only when it is not this user's to
     * write; nothing is created) with $KILN_DB_PATH's layers */
    int rc = kiln_db_open_layered(path, explicit_path != NULL, list, db, &err);
    if (rc == KILN_ENOTFOUND && explicit_path && !strstr(err.msg, "shared")) { kiln_cli__error("--db %s", err.msg); return 2; }
    return rc ? kiln_cli__fail(&err, rc) : 0;
  }
  int rc = kiln_db_open(path, flags, db, &err);
  if (!rc && have_shared && (rc = kiln_db_attach_path_list(*db, list, &err)) != 0) {
    kiln_db_close(*db);
    *db = NULL;
    return kiln_cli__fail(&err, rc);
  }
  if (rc == KILN_ENOTFOUND) { kiln_cli__error("%s", err.msg); return 2; } /* KILN_DB_NO_MKDIR: its directory is missing */
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
