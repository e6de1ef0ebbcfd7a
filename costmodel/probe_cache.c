/* probe_cache.c: the device figures a session's cost model rests on when its
 * tuning database holds no probe of the device (or there is no database):
 * the quick probe (probe.c, well under 2 s), run on first use and kept per
 * device in the user's cache, next to the compiled programs
 * ($KILN_CACHE_DIR, else ~/.cache/kiln/programs): probe-<key>.json, where
 * key hashes the device's exact fingerprint and the probe's version, so a
 * new driver or a kiln whose probe measures differently probes again.
 *
 * The cache never fails a run: a file that does not parse is probed again
 * and replaced, and a directory that cannot be written leaves the figures to
 * this session alone; either way with a note (kiln_cm_figsrc.note). With no
 * cache directory (KILN_CACHE_DIR=off) or KILN_PROBE=off nothing is probed
 * (a probe per run would cost every run its time): the caller falls back to
 * the built-in prior's figures for devices of this kind. */
#include "kiln_costmodel.h"
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Bump when the quick probe measures differently: old files are then ignored. */
#define QUICK_PROBE_VERSION 4

static uint64_t fnv1a(uint64_t h, const char *s) {
  for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ull; }
  return h;
}

/* Creates every missing folder of path; 0, or -1 with errno. */
static int make_dirs(const char *path) {
  char p[600];
  snprintf(p, sizeof p, "%s", path);
  for (char *q = p + 1; *q; q++) {
    if (*q != '/') continue;
    *q = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
    *q = '/';
  }
  return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The whole file (malloc'd, NUL-terminated; NULL if missing or over 64 KiB). */
static char *read_small(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(65537);
  size_t n = buf ? fread(buf, 1, 65536, f) : 0;
  int more = buf && fgetc(f) != EOF;
  fclose(f);
  if (!buf || more || n == 0) { free(buf); return NULL; }
  buf[n] = 0;
  return buf;
}

/* The key line a cache file starts with, for device d. */
static void cache_key(const kiln_device *d, char *key, size_t len) {
  char exact[1024], family[512];
  kiln_db_fingerprint(&d->info, exact, sizeof exact, family, sizeof family);
  char ver[32];
  snprintf(ver, sizeof ver, "quick-probe-%d", QUICK_PROBE_VERSION);
  uint64_t h = fnv1a(fnv1a(1469598103934665603ull, exact), ver);
  snprintf(key, len, "%016llx", (unsigned long long)h);
}

/* Figures of a file's text: the key line, then the probe JSON. 0 if it is
 * this device's and the cost model reads every figure it needs from it. */
static int parse_cached(const char *text, const char *key, const kiln_device_info *info, char **json) {
  size_t kl = strlen(key);
  if (strncmp(text, key, kl) || text[kl] != '\n') return -1;
  kiln_devmodel m;
  if (kiln_devmodel_from_probe(text + kl + 1, info, &m, NULL) != 0 || !m.complete) return -1;
  for (int i = 0; i < 5; i++) if (!(m.flops[i] > 0 && m.flops[i] < 1e9)) return -1;
  for (int i = 0; i < m.nbw; i++) if (!(m.bw[i] > 0 && m.bw[i] < 1e9)) return -1;
  *json = strdup(text + kl + 1);
  return *json ? 0 : -1;
}

/* Writes key and json to path through a temporary file renamed into place;
 * 0, or -1 with errno. */
static int write_atomic(const char *dir, const char *path, const char *key, const char *json) {
  if (make_dirs(dir) != 0) return -1;
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", path); /* unique per writer: sessions in two threads may write at once */
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!f) {
    int e = errno;
    if (fd >= 0) { close(fd); remove(tmp); }
    errno = e;
    return -1;
  }
  int ok = fprintf(f, "%s\n%s\n", key, json) > 0;
  int e = errno;
  if (fclose(f) != 0) { ok = 0; e = errno; }
  if (ok && rename(tmp, path) == 0) return 0;
  if (ok) e = errno;
  remove(tmp);
  errno = e;
  return -1;
}

int kiln_cm_probe_cached(kiln_device *d, char **json, kiln_cm_figsrc *src) {
  memset(src, 0, sizeof *src);
  *json = NULL;
  if (d->opt.no_probe || !d->cache_dir[0]) return KILN_ENOTFOUND; /* asked for (KILN_PROBE=off, no cache): no note */
  char key[32];
  cache_key(d, key, sizeof key);
  snprintf(src->path, sizeof src->path, "%s/probe-%s.json", d->cache_dir, key);
  char *text = read_small(src->path);
  if (text) {
    int ok = parse_cached(text, key, &d->info, json) == 0;
    free(text);
    if (ok) { src->kind = KILN_CM_FIGS_CACHED; return 0; }
    snprintf(src->note, sizeof src->note, "%s: not a probe of this device (corrupt?); probed again", src->path);
  } else if (access(src->path, F_OK) == 0) {
    snprintf(src->note, sizeof src->note, "%s: unreadable; probed again", src->path);
  }
  kiln_error err = {0};
  struct timespec t0, t1;
  double c0 = d->compile_ms;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = kiln_probe_quick(d, json, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  src->probe_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  src->probe_compile_ms = d->compile_ms - c0;
  if (rc) {
    snprintf(src->note, sizeof src->note, "quick probe failed: %s", err.msg);
    src->path[0] = 0;
    return rc;
  }
  src->kind = KILN_CM_FIGS_PROBED;
  if (write_atomic(d->cache_dir, src->path, key, *json) != 0) {
    char why[160];
    snprintf(why, sizeof why, "%s", strerror(errno));
    snprintf(src->note, sizeof src->note, "could not cache the probe in %s (%s): figures for this run only", src->path, why);
    src->path[0] = 0;
  }
  return 0;
}
