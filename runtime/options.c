/* options.c: the one table of kiln's environment variables and the one
 * place that reads them (kiln_options_from_env). Each row names a variable,
 * the kiln_options field it fills, how its value is parsed, what it changes
 * and the key that change enters; `kiln --help` prints the table and
 * tests/env_table.sh checks the README's copy against it. */
#include "kiln_internal.h"
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum {
  ENV_STRING,  /* const char *, NULL when unset or "" */
  ENV_OFF,     /* int: 1 when the value is "off" or "0" */
  ENV_SET,     /* int: 1 when set, not "" and not "0" */
  ENV_FORCE,   /* int: "" auto, "0" KILN_FUSE_NEVER, another number KILN_FUSE_ALWAYS */
  ENV_KERNELS, /* unsigned mask of a comma list of gemm KERNEL values 0..2 */
  ENV_BYTES,   /* uint64_t, a positive decimal number */
} env_kind;

/* The table: name, kind, field, value, what it changes, the key it enters. */
#define KILN_ENV_TABLE(XX)                                                                                              \
  XX("KILN_DEVICE", ENV_STRING, device, "SEL", "the device of commands run without --device",                          \
     "none: records are keyed by the device found")                                                                     \
  XX("KILN_DB", ENV_STRING, db, "FILE", "your tuning database (default ~/.cache/kiln/tuning.db)", "none: a location")  \
  XX("KILN_DB_PATH", ENV_STRING, db_path, "FILE1:FILE2", "shared databases, read-only, consulted after yours",         \
     "none: a location (records keep their device key)")                                                                \
  XX("KILN_CACHE_DIR", ENV_STRING, cache_dir, "DIR or off",                                                               \
     "compiled programs, quick probe and predictions (default ~/.cache/kiln/programs)", "none: a location")             \
  XX("KILN_KERNEL_DIR", ENV_STRING, kernel_dir, "DIR", "kernels/*.cl read from DIR instead of the embedded copies",    \
     "kernel source hash: program cache, records, predictions")                                                         \
  XX("KILN_PROBE", ENV_OFF, no_probe, "off", "no quick probe: predictions rest on the built-in prior's figures",       \
     "predictions cache (its figures)")                                                                                 \
  XX("KILN_GEMM_KERNELS", ENV_KERNELS, gemm_kernels, "0,1,2",                                                          \
     "gemm kernels searched: 0 tiled, 1 panel, 2 CLBlast (default: all on GPUs, 0,1 on CPUs)",                          \
     "predictions cache; tune's resume marker")                                                                         \
  XX("KILN_ATTENTION_FUSE", ENV_FORCE, attention_fuse, "0 or 1",                                                          \
     "attention fusion forced on (1) or off (0) instead of the cost model's choice", "none: plans are not kept")        \
  XX("KILN_NO_PREDICT", ENV_SET, no_predict, "1", "parameters without a record are the descriptor defaults",           \
     "none: predictions are neither read nor kept")                                                                     \
  XX("KILN_BLOCKED", ENV_OFF, no_blocked, "off",                                                                         \
     "no NCHW16c values: depthwise convolutions and their neighbours in the model's layout", "none: plans are not kept") \
  XX("KILN_REPLAY", ENV_OFF, no_replay, "off",                                                                           \
     "every run enqueues each node through its op (no replay of the launches recorded on an earlier run)",              \
     "none: recordings live in the session's plan")                                                                    \
  XX("KILN_MAX_MODEL_BYTES", ENV_BYTES, max_model_bytes, "N",                                                          \
     "refuse larger models (default 4 GiB; --max-model-bytes overrides)", "none: a limit")

#define DOC(nm, kd, field, val, chg, k) {nm, val, chg, k},
static const kiln_env_var DOCS[] = {KILN_ENV_TABLE(DOC)};
#undef DOC
#define PARSE(nm, kd, field, val, chg, k) {kd, offsetof(kiln_options, field)},
static const struct env_parse { env_kind kind; size_t off; } PARSES[] = {KILN_ENV_TABLE(PARSE)};
#undef PARSE
#define NROWS ((int)(sizeof DOCS / sizeof DOCS[0]))

const kiln_env_var *kiln_env_vars(int *n) {
  *n = NROWS;
  return DOCS;
}

static int parse_kernels(const char *e, unsigned *mask) {
  unsigned m = 0;
  for (const char *c = e; *c;) {
    if (*c < '0' || *c > '2' || (c[1] && c[1] != ',')) return -1;
    m |= 1u << (*c - '0');
    c += c[1] ? 2 : 1;
  }
  *mask = m;
  return m ? 0 : -1;
}

static int parse_row(const kiln_env_var *doc, const struct env_parse *r, const char *e, kiln_options *o, kiln_error *err) {
  void *t = (char *)o + r->off;
  switch (r->kind) {
  case ENV_STRING: *(const char **)t = *e ? e : NULL; return 0;
  case ENV_OFF: *(int *)t = !strcmp(e, "off") || !strcmp(e, "0"); return 0;
  case ENV_SET: *(int *)t = *e && strcmp(e, "0") != 0; return 0;
  case ENV_FORCE: *(int *)t = !*e ? KILN_FUSE_AUTO : atoi(e) ? KILN_FUSE_ALWAYS : KILN_FUSE_NEVER; return 0;
  case ENV_KERNELS:
    if (!*e) return 0;
    if (parse_kernels(e, t)) return kiln__err(err, KILN_EINVAL, "%s=%s: not a comma list of 0 (tiled), 1 (panel), 2 (CLBlast)", doc->name, e);
    return 0;
  case ENV_BYTES: {
    if (!*e) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    if (errno || *end || *e == '-' || v == 0) return kiln__err(err, KILN_EINVAL, "%s=%s: not a positive number of bytes", doc->name, e);
    *(uint64_t *)t = v;
    return 0;
  }
  }
  return 0;
}

int kiln_options_from_env(kiln_options *o, kiln_error *err) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < NROWS; i++) {
    const char *e = getenv(DOCS[i].name);
    int rc = e ? parse_row(&DOCS[i], &PARSES[i], e, o, err) : 0;
    if (rc) return rc;
  }
  return 0;
}

int kiln_device_set_options(kiln_device *d, const kiln_options *o, kiln_error *err) {
  static const kiln_options none = {0};
  if (!o) o = &none;
  const char *cd = o->cache_dir, *home = getenv("HOME");
  if ((cd && strlen(cd) >= sizeof d->cache_dir) || (o->kernel_dir && strlen(o->kernel_dir) >= sizeof d->opt.kernel_dir))
    return kiln__err(err, KILN_EINVAL, "cache or kernel directory path too long (%zu bytes at most)", sizeof d->cache_dir - 1);
  if (cd && !strcmp(cd, "off")) d->cache_dir[0] = 0;
  else if (cd && *cd) snprintf(d->cache_dir, sizeof d->cache_dir, "%s", cd);
  else if (home && *home) snprintf(d->cache_dir, sizeof d->cache_dir, "%s/.cache/kiln/programs", home);
  else d->cache_dir[0] = 0;
  snprintf(d->opt.kernel_dir, sizeof d->opt.kernel_dir, "%s", o->kernel_dir ? o->kernel_dir : "");
  d->opt.no_probe = o->no_probe != 0;
  d->opt.gemm_kernels = o->gemm_kernels & 7u;
  d->opt.attention_fuse = o->attention_fuse;
  d->opt.no_predict = o->no_predict != 0;
  d->opt.no_blocked = o->no_blocked != 0;
  d->opt.no_replay = o->no_replay != 0;
  return 0;
}

/* POCL's CPU device runs kernels on a worker thread per core. Left to the
 * scheduler, Linux took the first ~12 inferences (~60 ms) of a process to
 * spread them over this 2-core machine's cores: the kernels ran on one core,
 * squeezenet 4.7 ms an inference against 3.1 after (device busy 4.5 against
 * 2.9; CPU time the same), so a `kiln run` of one inference, and the first
 * runs of every benchmark, ran entirely in that phase. POCL_AFFINITY=1 pins
 * worker i to CPU i from the start. Set before the first OpenCL call, unless
 * the user set POCL_AFFINITY, or the process may not run on every online
 * CPU (taskset, a cpuset): POCL pins by CPU number, outside such a mask.
 * Other platforms ignore the variable. */
void kiln__cpu_driver_env(void) {
  static int done;
  if (done) return;
  done = 1;
  if (getenv("POCL_AFFINITY")) return;
#ifdef __linux__
  cpu_set_t set;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 2 || n > CPU_SETSIZE || sched_getaffinity(0, sizeof set, &set)) return;
  for (long i = 0; i < n; i++)
    if (!CPU_ISSET((int)i, &set)) return;
  setenv("POCL_AFFINITY", "1", 0);
#endif
}
