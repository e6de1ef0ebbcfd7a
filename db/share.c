/* share.c: tuning databases that users share (see kiln_db.h, "Shared
 * databases"): read-only layers and the layered lookup, verdicts of re-timed
 * imported records, merging by evidence, export to a new file, listings,
 * statistics, consistency checks and pruning. */
#include "db_internal.h"
#include "family.h"
#include "kiln_internal.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int kiln__err(kiln_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int kiln_db_schema_on_disk(const kiln_db *db) { return db->schema_on_disk; }
int kiln_db_nshared(const kiln_db *db) { return db->nshared; }
kiln_db *kiln_db_shared(kiln_db *db, int i) { return i >= 0 && i < db->nshared ? db->shared[i] : NULL; }

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* ---- layers ------------------------------------------------------------- */

int kiln_db_attach_shared(kiln_db *db, const char *path, kiln_error *err) {
  kiln_db *s = NULL;
  int rc = kiln_db_open(path, KILN_DB_READONLY, &s, err);
  if (rc == KILN_ENOTFOUND) return kiln__err(err, KILN_ENOTFOUND, "%s: no such shared tuning database", path);
  if (rc) return rc;
  kiln_db **n = realloc(db->shared, sizeof *n * (size_t)(db->nshared + 1));
  if (!n) { kiln_db_close(s); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  db->shared = n;
  n[db->nshared++] = s;
  return 0;
}

int kiln_db_attach_path_list(kiln_db *db, const char *list, kiln_error *err) {
  if (!list) return 0;
  struct stat self, st;
  int have_self = stat(db->path, &self) == 0;
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n > 0 && n < 4096) {
      char path[4096];
      memcpy(path, p, n);
      path[n] = 0;
      /* a missing entry is skipped, as in PATH; the user database itself too */
      if (stat(path, &st) == 0 && !(have_self && st.st_dev == self.st_dev && st.st_ino == self.st_ino)) {
        int rc = kiln_db_attach_shared(db, path, err);
        if (rc) return rc;
      }
    }
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

/* An empty database in memory, read-only from then on, to carry layers. */
static int open_empty(kiln_db **out, kiln_error *err) {
  kiln_db *db = calloc(1, sizeof *db);
  if (!db || !(db->path = strdup("(none)"))) { free(db); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  int rc = sqlite3_open_v2(":memory:", &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  kiln_error e2 = {0};
  /* the schema, as a fresh file gets it (kiln__db_open_image's path would need a file image) */
  if (rc == SQLITE_OK) rc = kiln__db_create_schema(db, &e2);
  if (rc != SQLITE_OK) {
    sqlite3_close(db->h);
    free(db->path);
    free(db);
    return kiln__err(err, KILN_EDB, "cannot make an in-memory database: %s", e2.msg[0] ? e2.msg : sqlite3_errstr(rc));
  }
  db->readonly = 1;
  db->schema_on_disk = KILN_DB_SCHEMA;
  *out = db;
  return 0;
}

int kiln_db_open_layered(const char *path, int must_exist, const char *layers, kiln_db **out, kiln_error *err) {
  struct stat st;
  *out = NULL;
  int have_layers = layers && *layers, rc;
  int exists = stat(path, &st) == 0;
  if (!exists && must_exist) return kiln__err(err, KILN_ENOTFOUND, "%s: no such tuning database (create one with `kiln tune`)", path);
  if (!exists && !have_layers) return 0;
  kiln_db *db = NULL;
  rc = exists ? kiln_db_open(path, 0, &db, err) : open_empty(&db, err);
  if (rc) return rc;
  if (have_layers && (rc = kiln_db_attach_path_list(db, layers, err)) != 0) { kiln_db_close(db); return rc; }
  *out = db;
  return 0;
}

void kiln_db_describe(const kiln_db *db, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  if (!db) return;
  if (strcmp(db->path, "(none)")) o += (size_t)snprintf(buf, len, "%s", db->path);
  for (int i = 0; i < db->nshared && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? " + " : "", db->shared[i]->path);
  if (!buf[0]) snprintf(buf, len, "(none)");
}

/* ---- layered lookup ------------------------------------------------------ */

enum { DEV_ID, DEV_FP, DEV_FAMILY };          /* how candidates' device is matched */
enum { ORIG_ANY, ORIG_MEASURED, ORIG_NOT_MEASURED };

typedef struct cand {
  kiln_record r;
  int layer;
} cand;

typedef struct cands { cand *v; int n, cap; } cands;

/* Appends the "ok" records of an instance in layer L to c. */
static int query_cands(kiln_db *L, int layer, int devmode, int64_t devid, const char *fp, const char *fam, const char *family, int dtype,
                       const char *shape_key, const char *epilogue, const char *hash, int need_version, int origins, cands *c, kiln_error *err) {
  char sql[2048];
  const char *devcond = devmode == DEV_ID ? "r.device=?1" : devmode == DEV_FP ? "d.fingerprint=?2" : "d.family=?3 AND d.fingerprint<>?2";
  const char *orig = origins == ORIG_MEASURED ? " AND r.origin='measured'" : origins == ORIG_NOT_MEASURED ? " AND r.origin<>'measured'" : "";
  snprintf(sql, sizeof sql,
           "SELECT " RECORD_COLS_R " FROM records r JOIN devices d ON d.id=r.device WHERE %s"
           " AND r.family=?4 AND r.dtype=?5 AND r.shape_key=?6 AND r.epilogue=?7 AND r.status='ok' AND r.origin<>'predicted'%s"
           " AND (?8 IS NULL OR r.source_hash=?8) AND (?9 IS NULL OR r.kiln_version=?9)"
           " AND r.median_ns>0"
           " AND NOT EXISTS (SELECT 1 FROM records b WHERE b.device=r.device AND b.family=r.family AND b.dtype=r.dtype"
           "   AND b.shape_key=r.shape_key AND b.epilogue=r.epilogue AND b.params=r.params AND b.source_hash IS r.source_hash"
           "   AND b.status IN ('wrong','nan','demoted'))",
           devcond, orig);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(L->h, sql, -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(L, err, "lookup");
  sqlite3_bind_int64(st, 1, devid);
  sqlite3_bind_text(st, 2, fp ? fp : "", -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, fam ? fam : "", -1, SQLITE_TRANSIENT);
  kiln__db_bind_instance(st, 4, family, dtype, shape_key, epilogue);
  kiln__db_bind_text_or_null(st, 8, hash);
  if (need_version) sqlite3_bind_text(st, 9, KILN_VERSION, -1, SQLITE_STATIC);
  else sqlite3_bind_null(st, 9);
  int rc;
  while ((rc = kiln__db_step(L, st)) == SQLITE_ROW) {
    cand *nv = kiln__grow(c->v, c->n, &c->cap, sizeof *nv, 16);
    if (!nv) { sqlite3_finalize(st); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    c->v = nv;
    cand *x = &c->v[c->n++];
    kiln__db_read_record(st, &x->r);
    x->layer = layer;
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__db_sqlerr(L, err, "lookup");
}

/* 1 if the user database has demoted (or found wrong) this candidate here. */
static int demoted_here(kiln_db *db, int64_t device, const kiln_record *r) {
  if (device < 0) return 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT 1 FROM records WHERE device=?1 AND family=?2 AND dtype=?3 AND shape_key=?4 AND epilogue=?5 AND params=?6"
                                " AND source_hash IS ?7 AND status IN ('demoted','wrong','nan') LIMIT 1", -1, &st, NULL) != SQLITE_OK) return 0;
  sqlite3_bind_int64(st, 1, device);
  kiln__db_bind_instance(st, 2, r->family, r->dtype, r->shape_key, r->epilogue);
  sqlite3_bind_text(st, 6, r->params, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 7, r->source_hash, -1, SQLITE_TRANSIENT);
  int found = kiln__db_step(db, st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return found;
}

/* Eligible for kiln_db_pick_best: an "ok" measurement (not a prediction) of
 * this kiln version with a positive time. */
static int pickable(const kiln_record *r) {
  return !strcmp(r->status, "ok") && strcmp(r->origin, "predicted") && r->median_ns > 0 && kiln_record_ns(r) > 0 && !strcmp(r->kiln_version, KILN_VERSION);
}

int kiln_db_family_source_hash(const char *family, const char *kernel_dir, char *buf, size_t len) {
  if (family && !strcmp(family, "fusion")) { /* no family of kernels: the sources its groupings run */
    kiln_source_hash_in(kernel_dir, KILN_FUSION_SOURCES, buf, len);
    return 0;
  }
  const kiln_family *f = kiln_family_find(family);
  if (!f || !f->file) { if (len) buf[0] = 0; return KILN_ENOTFOUND; }
  kiln_source_hash_in(kernel_dir, f->file, buf, len);
  return 0;
}

int kiln_db_record_stale(const kiln_record *r, const char *hash) { return !hash || !hash[0] || strcmp(r->source_hash, hash) != 0; }

static int same_candidate(const kiln_record *a, const kiln_record *b) {
  return !strcmp(a->params, b->params) && !strcmp(a->source_hash, b->source_hash);
}

int kiln_db_pick_best(const kiln_record *const *v, const int *layer, int n) {
  int best = -1;
  const kiln_record *bs = NULL;
  for (int i = 0; i < n; i++) {
    if (!pickable(v[i])) continue;
    const kiln_record *eff = v[i];
    int out = 0, stands = 1;
    for (int j = 0; j < n && !out; j++) {
      if (j == i || (layer && layer[j] != layer[i]) || !same_candidate(v[j], v[i])) continue;
      const char *st = v[j]->status;
      if (!strcmp(st, "wrong") || !strcmp(st, "nan") || !strcmp(st, "demoted")) out = 1; /* failed or demoted in its file */
      else if (pickable(v[j])) {
        int c = kiln_record_rank_cmp(v[j], v[i]);
        if (kiln_record_rank_cmp(v[j], eff) > 0) eff = v[j];
        if (c > 0 || (c == 0 && j < i)) stands = 0;
      }
    }
    /* disagreeing measurements of one candidate count with their slowest,
     * and the (first) row that carries it stands for the candidate */
    if (out || !stands) continue;
    if (!bs || kiln_record_rank_cmp(eff, bs) < 0) { bs = eff; best = i; }
  }
  return best;
}

/* kiln_db_pick_best over the candidates gathered from the layers. */
static int pick(cands *c) {
  const kiln_record **pv = malloc(sizeof *pv * (size_t)(c->n ? c->n : 1));
  int *layer = malloc(sizeof *layer * (size_t)(c->n ? c->n : 1));
  int k = -1;
  if (pv && layer) {
    for (int i = 0; i < c->n; i++) { pv[i] = &c->v[i].r; layer[i] = c->v[i].layer; }
    k = kiln_db_pick_best(pv, layer, c->n);
  }
  free(pv);
  free(layer);
  return k;
}

int kiln_db_best_layered(kiln_db *db, int64_t device, const kiln_device_info *info, const char *family, int dtype, const char *shape_key,
                         const char *epilogue, const char *source_hash, kiln_lookup *out, kiln_error *err) {
  char fp[1024], fam[512];
  kiln_db_fingerprint(info, fp, sizeof fp, fam, sizeof fam);
  cands c = {0};
  int rc = 0, k = -1, level;
  memset(out, 0, sizeof *out);
  for (level = 1; level <= 3 && k < 0 && !rc; level++) {
    c.n = 0;
    if (level == 1) {
      /* measured on this machine */
      if (device >= 0) rc = query_cands(db, 0, DEV_ID, device, fp, fam, family, dtype, shape_key, epilogue, source_hash, 1, ORIG_MEASURED, &c, err);
      if (!rc) k = pick(&c);
      continue;
    }
    int devmode = level == 2 ? DEV_FP : DEV_FAMILY;
    for (int L = 0; L <= db->nshared && !rc; L++) {
      kiln_db *h = L == 0 ? db : db->shared[L - 1];
      int from = c.n;
      rc = query_cands(h, L, devmode, -1, fp, fam, family, dtype, shape_key, epilogue, source_hash, 1, L == 0 && level == 2 ? ORIG_NOT_MEASURED : ORIG_ANY, &c, err);
      /* drop what the user database has demoted on this machine */
      for (int i = from; !rc && i < c.n; i++)
        if (L > 0 && demoted_here(db, device, &c.v[i].r)) { c.v[i] = c.v[--c.n]; i--; }
    }
    if (!rc) k = pick(&c);
  }
  if (!rc && k >= 0) {
    level--;
    out->rec = c.v[k].r;
    out->layer = c.v[k].layer;
    out->exact = level <= 2;
    out->local = level == 1;
    snprintf(out->from, sizeof out->from, "%s", out->layer == 0 ? db->path : db->shared[out->layer - 1]->path);
    out->needs_verify = out->exact && !out->local && !(out->rec.flags & KILN_REC_VERIFIED);
  }
  free(c.v);
  if (rc) return rc;
  return k >= 0 ? 0 : KILN_ENOTFOUND;
}

int kiln_db_count_priors(kiln_db *db, const kiln_device_info *info, const char *family, int dtype, const char *shape_key,
                         const char *epilogue, const char *source_hash) {
  char fp[1024], fam[512];
  kiln_db_fingerprint(info, fp, sizeof fp, fam, sizeof fam);
  int total = 0;
  for (int L = 0; L <= db->nshared; L++) {
    kiln_db *h = L == 0 ? db : db->shared[L - 1];
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->h, "SELECT count(*) FROM records r JOIN devices d ON d.id=r.device WHERE d.fingerprint=?1 AND r.family=?2"
                                 " AND r.dtype=?3 AND r.shape_key=?4 AND r.epilogue=?5 AND r.status='ok'"
                                 " AND ((?6 IS NOT NULL AND r.source_hash IS NOT ?6) OR r.kiln_version IS NOT ?7)", -1, &st, NULL) != SQLITE_OK) continue;
    sqlite3_bind_text(st, 1, fp, -1, SQLITE_TRANSIENT);
    kiln__db_bind_instance(st, 2, family, dtype, shape_key, epilogue);
    kiln__db_bind_text_or_null(st, 6, source_hash);
    sqlite3_bind_text(st, 7, KILN_VERSION, -1, SQLITE_STATIC);
    if (kiln__db_step(h, st) == SQLITE_ROW) total += sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
  }
  return total;
}

/* ---- writing records ------------------------------------------------------ */

/* Inserts r (all columns) for device; alt < 0: the next free alt of its key. */
static int insert_record(kiln_db *db, int64_t device, const kiln_record *r, int alt, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h,
        "INSERT INTO records(device,family,dtype,shape_key,epilogue,params,median_ns,spread,samples,max_err,status,origin,source_hash,"
        "build_options,kiln_version,created,features,predicted_ns,alt,flags,source_db,verified_ns,min_ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,"
        "?14,?15,?16,?17,?18,CASE WHEN ?19>=0 THEN ?19 ELSE (SELECT coalesce(max(alt)+1,0) FROM records WHERE device=?1 AND family=?2 AND dtype=?3"
        " AND shape_key=?4 AND epilogue=?5 AND params=?6) END,?20,?21,?22,?23)", -1, &st, NULL) != SQLITE_OK)
    return kiln__db_sqlerr(db, err, "storing a record");
  kiln__db_bind_record(st, device, r);
  sqlite3_bind_int(st, 19, alt);
  sqlite3_bind_int(st, 20, r->flags);
  if (r->source_db[0]) sqlite3_bind_text(st, 21, r->source_db, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, 21);
  if (r->verified_ns > 0) sqlite3_bind_double(st, 22, r->verified_ns);
  else sqlite3_bind_null(st, 22);
  int rc = kiln__db_step(db, st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__db_sqlerr(db, err, "storing a record");
}

static int bind_key(sqlite3_stmt *st, int64_t device, const kiln_record *r) {
  sqlite3_bind_int64(st, 1, device);
  kiln__db_bind_instance(st, 2, r->family, r->dtype, r->shape_key, r->epilogue);
  return 0;
}

int kiln_db_set_verdict(kiln_db *db, int64_t device, const kiln_device_info *info, const kiln_record *r, int passed, double measured_ns, kiln_error *err) {
  if (db->readonly) return kiln__err(err, KILN_EDB, "%s: opened read-only", db->path);
  int rc;
  if (device < 0 && (rc = kiln_db_device(db, info, &device, err)) != 0) return rc;
  if ((rc = kiln__db_begin_write(db, err)) != 0) return rc;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "UPDATE records SET status=CASE WHEN ?9 THEN status ELSE 'demoted' END, flags=flags|2, verified_ns=?10"
                                " WHERE device=?1 AND family=?2 AND dtype=?3 AND shape_key=?4 AND epilogue=?5 AND params=?6"
                                " AND origin<>'measured' AND status IN ('ok','demoted') AND source_hash IS ?7 AND kiln_version IS ?8", -1, &st, NULL) != SQLITE_OK) {
    rc = kiln__db_sqlerr(db, err, "recording a verdict");
    goto fail;
  }
  bind_key(st, device, r);
  sqlite3_bind_text(st, 6, r->params, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 7, r->source_hash, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 8, r->kiln_version, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 9, passed);
  sqlite3_bind_double(st, 10, measured_ns);
  int src = kiln__db_step(db, st);
  sqlite3_finalize(st);
  if (src != SQLITE_DONE) { rc = kiln__db_sqlerr(db, err, "recording a verdict"); goto fail; }
  if (sqlite3_changes(db->h) == 0) {
    /* the record lives in a shared file: keep the verdict here */
    kiln_record c = *r;
    snprintf(c.origin, sizeof c.origin, "imported");
    if (!passed) snprintf(c.status, sizeof c.status, "demoted");
    c.flags |= KILN_REC_VERIFIED;
    c.verified_ns = measured_ns;
    if ((rc = insert_record(db, device, &c, -1, err)) != 0) goto fail;
  }
  if (!passed) {
    if (sqlite3_prepare_v2(db->h, "DELETE FROM tuned WHERE device=?1 AND family=?2 AND dtype=?3 AND shape_key=?4 AND epilogue=?5", -1, &st, NULL) != SQLITE_OK) {
      rc = kiln__db_sqlerr(db, err, "recording a verdict");
      goto fail;
    }
    bind_key(st, device, r);
    src = kiln__db_step(db, st);
    sqlite3_finalize(st);
    if (src != SQLITE_DONE) { rc = kiln__db_sqlerr(db, err, "recording a verdict"); goto fail; }
  }
  return kiln__db_exec(db, "COMMIT", err);
fail:
  sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* ---- merging by evidence ------------------------------------------------- */

static int is_ok(const kiln_record *r) { return !strcmp(r->status, "ok") && r->median_ns > 0; }
static int failed_correctness(const kiln_record *r) { return !strcmp(r->status, "wrong") || !strcmp(r->status, "nan"); }
static double clean_spread(double s) { return isfinite(s) && s > 0 ? s : 0; }

/* Two "ok" medians of one candidate agree within their noise. */
static int agree(const kiln_record *a, const kiln_record *b) {
  double lo = fmin(a->median_ns, b->median_ns), hi = fmax(a->median_ns, b->median_ns);
  double tol = fmax(KILN_DB_TOLERANCE, 3 * fmax(clean_spread(a->spread), clean_spread(b->spread)));
  return hi <= lo * (1 + tol);
}

/* 1 if a is better evidence than b (both "ok"). */
static int better_evidence(const kiln_record *a, const kiln_record *b) {
  int ea = a->samples >= 5, eb = b->samples >= 5;
  if (ea != eb) return ea;
  double na = clean_spread(a->spread) / sqrt(a->samples > 0 ? a->samples : 1), nb = clean_spread(b->spread) / sqrt(b->samples > 0 ? b->samples : 1);
  if (na < nb * 0.9) return 1;
  if (nb < na * 0.9) return 0;
  if (a->samples != b->samples) return a->samples > b->samples;
  return a->median_ns < b->median_ns;
}

static int same_measurement(const kiln_record *a, const kiln_record *b) {
  return a->median_ns == b->median_ns && a->samples == b->samples && a->created == b->created && !strcmp(a->status, b->status);
}

#define MAX_ALTS 16

static int update_flags(kiln_db *db, int64_t id, int flags, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "UPDATE records SET flags=flags|?1 WHERE id=?2", -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(db, err, "merging");
  sqlite3_bind_int(st, 1, flags);
  sqlite3_bind_int64(st, 2, id);
  int rc = kiln__db_step(db, st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__db_sqlerr(db, err, "merging");
}

static int delete_id(kiln_db *db, int64_t id, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "DELETE FROM records WHERE id=?1", -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(db, err, "merging");
  sqlite3_bind_int64(st, 1, id);
  int rc = kiln__db_step(db, st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__db_sqlerr(db, err, "merging");
}

/* Merges one record r into dst's device row dev. */
static int merge_record(kiln_db *dst, int64_t dev, const kiln_record *r, int import, kiln_merge_stats *ms, kiln_error *err) {
  kiln_record e[MAX_ALTS];
  int64_t ids[MAX_ALTS];
  int n = 0, maxalt = -1, rc;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(dst->h, "SELECT " RECORD_COLS ",id FROM records WHERE device=?1 AND family=?2 AND dtype=?3 AND shape_key=?4"
                                 " AND epilogue=?5 AND params=?6 ORDER BY alt", -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(dst, err, "merging");
  bind_key(st, dev, r);
  sqlite3_bind_text(st, 6, r->params, -1, SQLITE_TRANSIENT);
  while ((rc = kiln__db_step(dst, st)) == SQLITE_ROW) {
    kiln_record t;
    kiln__db_read_record(st, &t);
    if (t.alt > maxalt) maxalt = t.alt;
    if (n < MAX_ALTS) { e[n] = t; ids[n] = sqlite3_column_int64(st, RECORD_NCOLS); n++; }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return kiln__db_sqlerr(dst, err, "merging");
  int prior = strcmp(r->kiln_version, KILN_VERSION) != 0;
  int compat[MAX_ALTS], nc = 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(e[i].source_hash, r->source_hash) && !strcmp(e[i].kiln_version, r->kiln_version)) compat[nc++] = i;
  if (nc == 0) { /* a new candidate, or one of another source/kiln version kept beside */
    if ((rc = insert_record(dst, dev, r, n ? maxalt + 1 : 0, err)) != 0) return rc;
    if (prior || n) ms->priors++;
    else ms->added++;
    return 0;
  }
  for (int k = 0; k < nc; k++)
    if (same_measurement(&e[compat[k]], r)) { ms->duplicate++; return 0; }
  int rok = is_ok(r), rbad = failed_correctness(r);
  for (int k = 0; k < nc; k++) {
    kiln_record *x = &e[compat[k]];
    /* a measurement made on this machine is never replaced by an imported one */
    int keep_local = import && !strcmp(x->origin, "measured");
    if (is_ok(x) && rok && agree(x, r)) {
      if (!keep_local && better_evidence(r, x)) {
        kiln_record nr = *r;
        nr.flags |= x->flags & KILN_REC_DISAGREE;
        if ((rc = delete_id(dst, ids[compat[k]], err)) || (rc = insert_record(dst, dev, &nr, x->alt, err))) return rc;
        ms->replaced++;
      } else ms->kept++;
      return 0;
    }
  }
  for (int k = 0; k < nc; k++) {
    kiln_record *x = &e[compat[k]];
    if (!is_ok(x) && !failed_correctness(x) && rok && !(import && !strcmp(x->origin, "measured"))) { /* a compile/launch error gives way to a measurement */
      if ((rc = delete_id(dst, ids[compat[k]], err)) || (rc = insert_record(dst, dev, r, x->alt, err))) return rc;
      ms->replaced++;
      return 0;
    }
  }
  if (!rok && !rbad) { ms->kept++; return 0; }
  if (rbad)
    for (int k = 0; k < nc; k++)
      if (failed_correctness(&e[compat[k]])) { ms->kept++; return 0; }
  if (n >= MAX_ALTS) { ms->kept++; return 0; }
  /* disagreement beyond the noise (or on correctness): keep both, flagged */
  kiln_record nr = *r;
  nr.flags |= KILN_REC_DISAGREE;
  if ((rc = insert_record(dst, dev, &nr, maxalt + 1, err)) != 0) return rc;
  for (int k = 0; k < nc; k++)
    if ((rc = update_flags(dst, ids[compat[k]], KILN_REC_DISAGREE, err)) != 0) return rc;
  ms->disagree++;
  return 0;
}

typedef struct devmap { int64_t src, dst; } devmap;

static int merge_devices(kiln_db *dst, kiln_db *src, int64_t only, devmap **map, int *nmap, kiln_merge_stats *ms, kiln_error *err) {
  sqlite3_stmt *st, *find = NULL, *ins = NULL, *probe = NULL;
  if (sqlite3_prepare_v2(src->h, "SELECT id,fingerprint,family,platform,vendor,name,driver,version,compute_units,max_clock_mhz,global_mem,local_mem,"
                                 "max_alloc,max_work_group,probe,created FROM devices WHERE ?1<0 OR id=?1 ORDER BY id", -1, &st, NULL) != SQLITE_OK)
    return kiln__db_sqlerr(src, err, "reading devices");
  int rc = 0;
  if (sqlite3_prepare_v2(dst->h, "SELECT id FROM devices WHERE fingerprint=?1", -1, &find, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(dst->h, "INSERT INTO devices(fingerprint,family,platform,vendor,name,driver,version,compute_units,max_clock_mhz,global_mem,"
                                 "local_mem,max_alloc,max_work_group,probe,created) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)", -1, &ins, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(dst->h, "UPDATE devices SET probe=?1 WHERE id=?2 AND probe IS NULL", -1, &probe, NULL) != SQLITE_OK) {
    rc = kiln__db_sqlerr(dst, err, "merging devices");
    goto out;
  }
  sqlite3_bind_int64(st, 1, only);
  int src_rc;
  while ((src_rc = kiln__db_step(src, st)) == SQLITE_ROW) {
    int64_t sid = sqlite3_column_int64(st, 0), did = -1;
    sqlite3_reset(find);
    sqlite3_bind_value(find, 1, sqlite3_column_value(st, 1));
    if (kiln__db_step(dst, find) == SQLITE_ROW) did = sqlite3_column_int64(find, 0);
    sqlite3_reset(find);
    if (did < 0) {
      sqlite3_reset(ins);
      for (int c = 1; c <= 15; c++) sqlite3_bind_value(ins, c, sqlite3_column_value(st, c));
      if (kiln__db_step(dst, ins) != SQLITE_DONE) { rc = kiln__db_sqlerr(dst, err, "merging devices"); goto out; }
      did = sqlite3_last_insert_rowid(dst->h);
      ms->devices++;
    } else if (sqlite3_column_type(st, 14) != SQLITE_NULL) {
      sqlite3_reset(probe);
      sqlite3_bind_value(probe, 1, sqlite3_column_value(st, 14));
      sqlite3_bind_int64(probe, 2, did);
      if (kiln__db_step(dst, probe) != SQLITE_DONE) { rc = kiln__db_sqlerr(dst, err, "merging devices"); goto out; }
    }
    devmap *nm = realloc(*map, sizeof *nm * (size_t)(*nmap + 1));
    if (!nm) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto out; }
    *map = nm;
    nm[(*nmap)++] = (devmap){sid, did};
  }
  if (src_rc != SQLITE_DONE) rc = kiln__db_sqlerr(src, err, "reading devices");
out:
  sqlite3_finalize(st);
  sqlite3_finalize(find);
  sqlite3_finalize(ins);
  sqlite3_finalize(probe);
  return rc;
}

static int64_t map_dev(const devmap *m, int n, int64_t sid) {
  for (int i = 0; i < n; i++) if (m[i].src == sid) return m[i].dst;
  return -1;
}

int kiln_db_merge(kiln_db *dst, kiln_db *src, const kiln_merge_options *o, kiln_merge_stats *ms, kiln_error *err) {
  kiln_merge_options opt = {.device = -1};
  if (o) opt = *o;
  kiln_merge_stats dummy;
  if (!ms) ms = &dummy;
  memset(ms, 0, sizeof *ms);
  int rc = kiln__db_begin_write(dst, err);
  if (rc) return rc;
  devmap *map = NULL;
  int nmap = 0, src_rc;
  sqlite3_stmt *st = NULL, *ins = NULL;
  if ((rc = merge_devices(dst, src, opt.device, &map, &nmap, ms, err)) != 0) goto fail;
  /* records, oldest first */
  if (sqlite3_prepare_v2(src->h, "SELECT " RECORD_COLS ",device FROM records WHERE ?1<0 OR device=?1 ORDER BY id", -1, &st, NULL) != SQLITE_OK) {
    rc = kiln__db_sqlerr(src, err, "reading records");
    goto fail;
  }
  sqlite3_bind_int64(st, 1, opt.device);
  while ((src_rc = kiln__db_step(src, st)) == SQLITE_ROW) {
    kiln_record r;
    kiln__db_read_record(st, &r);
    int64_t dev = map_dev(map, nmap, sqlite3_column_int64(st, RECORD_NCOLS));
    if (dev < 0) continue; /* a record of a device row that does not exist (reported by kiln db verify) */
    if (opt.import) {
      if (!strcmp(r.origin, "measured")) snprintf(r.origin, sizeof r.origin, "imported");
      if (!r.source_db[0]) snprintf(r.source_db, sizeof r.source_db, "%s", base_name(src->path));
      r.flags &= ~KILN_REC_VERIFIED; /* verification belongs to the machine that did it */
      r.verified_ns = 0;
    }
    if ((rc = merge_record(dst, dev, &r, opt.import, ms, err)) != 0) goto fail;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (src_rc != SQLITE_DONE) { rc = kiln__db_sqlerr(src, err, "reading records"); goto fail; }
  /* tuned markers: only for instances with an "ok" record of this kiln version (else kiln tune measures them again) */
  if (sqlite3_prepare_v2(src->h, "SELECT t.device,t.family,t.dtype,t.shape_key,t.epilogue,t.trials,t.created FROM tuned t WHERE (?1<0 OR t.device=?1)"
                                 " AND EXISTS (SELECT 1 FROM records r WHERE r.device=t.device AND r.family=t.family AND r.dtype=t.dtype"
                                 " AND r.shape_key=t.shape_key AND r.epilogue=t.epilogue AND r.status='ok' AND r.kiln_version=?2)", -1, &st, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(dst->h, "INSERT INTO tuned(device,family,dtype,shape_key,epilogue,trials,created) VALUES(?1,?2,?3,?4,?5,?6,?7)"
                                 " ON CONFLICT(device,family,dtype,shape_key,epilogue) DO UPDATE SET trials=max(coalesce(trials,0),coalesce(excluded.trials,0))", -1, &ins, NULL) != SQLITE_OK) {
    rc = kiln__db_sqlerr(dst, err, "merging tuned markers");
    goto fail;
  }
  sqlite3_bind_int64(st, 1, opt.device);
  sqlite3_bind_text(st, 2, KILN_VERSION, -1, SQLITE_STATIC);
  while ((src_rc = kiln__db_step(src, st)) == SQLITE_ROW) {
    int64_t dev = map_dev(map, nmap, sqlite3_column_int64(st, 0));
    if (dev < 0) continue;
    sqlite3_reset(ins);
    sqlite3_bind_int64(ins, 1, dev);
    for (int c = 1; c <= 6; c++) sqlite3_bind_value(ins, c + 1, sqlite3_column_value(st, c));
    if (kiln__db_step(dst, ins) != SQLITE_DONE) { rc = kiln__db_sqlerr(dst, err, "merging tuned markers"); goto fail; }
    ms->tuned++;
  }
  sqlite3_finalize(st);
  sqlite3_finalize(ins);
  st = ins = NULL;
  if (src_rc != SQLITE_DONE) { rc = kiln__db_sqlerr(src, err, "reading tuned markers"); goto fail; }
  /* the binary cache (keys hash source, options, device and driver) */
  if (!opt.no_binaries) {
    if (sqlite3_prepare_v2(src->h, "SELECT key,binary,created FROM binaries ORDER BY key", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(dst->h, "INSERT OR IGNORE INTO binaries(key,binary,created) VALUES(?1,?2,?3)", -1, &ins, NULL) != SQLITE_OK) {
      rc = kiln__db_sqlerr(dst, err, "merging binaries");
      goto fail;
    }
    while ((src_rc = kiln__db_step(src, st)) == SQLITE_ROW) {
      sqlite3_reset(ins);
      for (int c = 0; c < 3; c++) sqlite3_bind_value(ins, c + 1, sqlite3_column_value(st, c));
      if (kiln__db_step(dst, ins) != SQLITE_DONE) { rc = kiln__db_sqlerr(dst, err, "merging binaries"); goto fail; }
      ms->binaries += sqlite3_changes(dst->h);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(ins);
    st = ins = NULL;
    if (src_rc != SQLITE_DONE) { rc = kiln__db_sqlerr(src, err, "reading binaries"); goto fail; }
  }
  free(map);
  return kiln__db_exec(dst, "COMMIT", err);
fail:
  sqlite3_finalize(st);
  sqlite3_finalize(ins);
  free(map);
  sqlite3_exec(dst->h, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

int kiln_db_write_merged(const char *path, kiln_db *const *srcs, int nsrcs, const kiln_merge_options *o, kiln_merge_stats *st, kiln_error *err) {
  struct stat sb;
  if (stat(path, &sb) == 0) return kiln__err(err, KILN_EINVAL, "%s: already exists (not overwritten)", path);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
  kiln_db_remove_files(tmp); /* and what a crashed earlier writer left beside it */
  kiln_db *out = NULL;
  int rc = kiln_db_open(tmp, KILN_DB_CREATE, &out, err);
  if (rc) return rc;
  kiln_merge_stats total = {0}, one;
  for (int i = 0; i < nsrcs && !rc; i++) {
    rc = kiln_db_merge(out, srcs[i], o, &one, err);
    total.devices += one.devices; total.added += one.added; total.replaced += one.replaced; total.kept += one.kept;
    total.duplicate += one.duplicate; total.disagree += one.disagree; total.priors += one.priors; total.tuned += one.tuned;
    total.binaries += one.binaries;
  }
  /* a self-contained file: no -wal beside it */
  if (!rc) rc = kiln__db_exec(out, "PRAGMA journal_mode=DELETE", err);
  kiln_db_close(out);
  if (!rc && link(tmp, path) != 0) rc = kiln__err(err, errno == EEXIST ? KILN_EINVAL : KILN_EIO, "%s: cannot write: %s", path, strerror(errno));
  kiln_db_remove_files(tmp);
  if (!rc && st) *st = total;
  return rc;
}

/* ---- listings ------------------------------------------------------------ */

int kiln_db_each_device(kiln_db *db, void (*fn)(const kiln_db_device_row *d, void *ctx), void *ctx, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h,
        "SELECT d.id,d.fingerprint,d.family,d.name,d.vendor,d.platform,d.driver,d.probe IS NOT NULL,"
        " (SELECT count(*) FROM records r WHERE r.device=d.id),"
        " (SELECT count(*) FROM records r WHERE r.device=d.id AND r.status='ok'),"
        " (" KILN_TUNED_INSTANCES_SQL("r.device=d.id") "),"
        " (SELECT count(*) FROM records r WHERE r.device=d.id AND r.origin='imported'),"
        " (SELECT count(*) FROM records r WHERE r.device=d.id AND (r.flags&1)<>0),"
        " (SELECT count(*) FROM records r WHERE r.device=d.id AND r.status='demoted'),"
        " (SELECT count(*) FROM tuned t WHERE t.device=d.id AND t.family<>'fusion')"
        " FROM devices d ORDER BY d.id", -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(db, err, "listing devices");
  sqlite3_bind_text(st, 1, KILN_VERSION, -1, SQLITE_STATIC);
  int rc;
  while ((rc = kiln__db_step(db, st)) == SQLITE_ROW) {
    kiln_db_device_row d;
    memset(&d, 0, sizeof d);
    d.id = sqlite3_column_int64(st, 0);
#define T(c, f) snprintf(d.f, sizeof d.f, "%s", sqlite3_column_text(st, c) ? (const char *)sqlite3_column_text(st, c) : "")
    T(1, fingerprint); T(2, family); T(3, name); T(4, vendor); T(5, platform); T(6, driver);
#undef T
    d.has_probe = sqlite3_column_int(st, 7);
    d.records = sqlite3_column_int64(st, 8);
    d.ok_records = sqlite3_column_int64(st, 9);
    d.tuned = sqlite3_column_int64(st, 10);
    d.imported = sqlite3_column_int64(st, 11);
    d.disagree = sqlite3_column_int64(st, 12);
    d.demoted = sqlite3_column_int64(st, 13);
    d.searched = sqlite3_column_int64(st, 14);
    fn(&d, ctx);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__db_sqlerr(db, err, "listing devices");
}

int kiln_db_find_device(kiln_db *db, const char *sel, int64_t *id, kiln_error *err) {
  sqlite3_stmt *st;
  int numeric = *sel != 0;
  for (const char *p = sel; *p; p++) if (!isdigit((unsigned char)*p)) numeric = 0;
  if (sqlite3_prepare_v2(db->h, numeric ? "SELECT id FROM devices WHERE id=?1" : "SELECT id FROM devices WHERE instr(lower(fingerprint), lower(?1))>0",
                         -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(db, err, "finding a device");
  if (numeric) sqlite3_bind_int64(st, 1, strtoll(sel, NULL, 10));
  else sqlite3_bind_text(st, 1, sel, -1, SQLITE_TRANSIENT);
  int n = 0;
  while (kiln__db_step(db, st) == SQLITE_ROW) { if (!n) *id = sqlite3_column_int64(st, 0); n++; }
  sqlite3_finalize(st);
  if (n == 0) return kiln__err(err, KILN_ENOTFOUND, "%s: no device matches '%s' (see `kiln db list`)", db->path, sel);
  if (n > 1) return kiln__err(err, KILN_EINVAL, "%s: %d devices match '%s'; give the id from `kiln db list`", db->path, n, sel);
  return 0;
}

int kiln_db_device_info(kiln_db *db, int64_t id, kiln_device_info *out, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h,
        "SELECT fingerprint,platform,vendor,name,driver,version,compute_units,max_clock_mhz,global_mem,local_mem,max_alloc,max_work_group"
        " FROM devices WHERE id=?1", -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(db, err, "reading a device");
  sqlite3_bind_int64(st, 1, id);
  int rc = kiln__db_step(db, st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? kiln__err(err, KILN_ENOTFOUND, "%s: no device %lld", db->path, (long long)id) : kiln__db_sqlerr(db, err, "reading a device");
  }
  memset(out, 0, sizeof *out);
#define T(c, f) snprintf(out->f, sizeof out->f, "%s", sqlite3_column_text(st, c) ? (const char *)sqlite3_column_text(st, c) : "")
  T(1, platform); T(2, vendor); T(3, name); T(4, driver); T(5, version);
#undef T
  const char *fp = (const char *)sqlite3_column_text(st, 0);
  out->is_gpu = !(fp && strstr(fp, "|gmem=host|"));
  out->compute_units = sqlite3_column_int(st, 6);
  out->max_clock_mhz = sqlite3_column_int(st, 7);
  out->global_mem = (uint64_t)sqlite3_column_int64(st, 8);
  out->local_mem = (uint64_t)sqlite3_column_int64(st, 9);
  out->max_alloc = (uint64_t)sqlite3_column_int64(st, 10);
  out->max_work_group = (size_t)sqlite3_column_int64(st, 11);
  out->platform_index = out->device_index = -1;
  sqlite3_finalize(st);
  return 0;
}

int kiln_db_each_record(kiln_db *db, int64_t device, void (*fn)(int64_t device, const kiln_record *r, void *ctx), void *ctx, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT " RECORD_COLS ",device FROM records WHERE ?1<0 OR device=?1"
                                " ORDER BY device,family,dtype,shape_key,epilogue,status<>'ok'," KILN_RECORD_RANK_SQL ",alt", -1, &st, NULL) != SQLITE_OK)
    return kiln__db_sqlerr(db, err, "listing records");
  sqlite3_bind_int64(st, 1, device);
  int rc;
  kiln_record r;
  while ((rc = kiln__db_step(db, st)) == SQLITE_ROW) {
    kiln__db_read_record(st, &r);
    fn(sqlite3_column_int64(st, RECORD_NCOLS), &r, ctx);
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__db_sqlerr(db, err, "listing records");
}

static int64_t count_q(kiln_db *db, const char *sql, int *bad) {
  sqlite3_stmt *st;
  int64_t v = 0;
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) { *bad = 1; return 0; }
  sqlite3_bind_text(st, 1, KILN_VERSION, -1, SQLITE_STATIC);
  if (kiln__db_step(db, st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  else *bad = 1;
  sqlite3_finalize(st);
  return v;
}

int kiln_db_stats_get(kiln_db *db, kiln_db_stats *s, kiln_error *err) {
  memset(s, 0, sizeof *s);
  int rc = kiln_db_counts_get(db, &s->c, err);
  if (rc) return rc;
  int bad = 0;
  s->schema = KILN_DB_SCHEMA;
  s->schema_on_disk = db->schema_on_disk;
  s->measured = count_q(db, "SELECT count(*) FROM records WHERE origin='measured'", &bad);
  s->imported = count_q(db, "SELECT count(*) FROM records WHERE origin='imported'", &bad);
  s->predicted = count_q(db, "SELECT count(*) FROM records WHERE origin='predicted'", &bad);
  s->demoted = count_q(db, "SELECT count(*) FROM records WHERE status='demoted'", &bad);
  s->failed = count_q(db, "SELECT count(*) FROM records WHERE status NOT IN ('ok','demoted')", &bad);
  s->disagree = count_q(db, "SELECT count(*) FROM records WHERE (flags&1)<>0", &bad);
  s->verified = count_q(db, "SELECT count(*) FROM records WHERE (flags&2)<>0", &bad);
  s->other_version = count_q(db, "SELECT count(*) FROM records WHERE kiln_version IS NOT ?1", &bad);
  s->bytes = count_q(db, "SELECT page_count*page_size FROM pragma_page_count(), pragma_page_size()", &bad);
  s->tuned = count_q(db, KILN_TUNED_INSTANCES_SQL("1"), &bad);
  s->searched = count_q(db, "SELECT count(*) FROM tuned WHERE family<>'fusion'", &bad);
  return bad ? kiln__db_sqlerr(db, err, "statistics") : 0;
}

/* ---- consistency checks ---------------------------------------------------- */

static int params_wellformed(const char *s) {
  if (!*s) return 1; /* a kernel without parameters */
  while (*s) {
    const char *eq = strchr(s, '=');
    if (!eq || eq == s) return 0;
    for (const char *p = s; p < eq; p++) if (!isalnum((unsigned char)*p) && *p != '_') return 0;
    const char *v = eq + 1;
    if (*v == '-') v++;
    if (!isdigit((unsigned char)*v)) return 0;
    while (isdigit((unsigned char)*v)) v++;
    if (*v && *v != ',') return 0;
    s = *v ? v + 1 : v;
  }
  return 1;
}

int kiln_db_check(kiln_db *db, void (*fn)(const char *problem, void *ctx), void *ctx, kiln_error *err) {
  static const struct { const char *what, *sql; } q[] = {
    {"records of a device row that does not exist", "SELECT count(*) FROM records WHERE device NOT IN (SELECT id FROM devices)"},
    {"tuned markers of a device row that does not exist", "SELECT count(*) FROM tuned WHERE device NOT IN (SELECT id FROM devices)"},
    {"\"ok\" records without a positive median", "SELECT count(*) FROM records WHERE status='ok' AND NOT (median_ns>0)"},
    {"\"ok\" records without samples", "SELECT count(*) FROM records WHERE status='ok' AND NOT (samples>=1)"},
    {"\"ok\" records with a negative or missing spread", "SELECT count(*) FROM records WHERE status='ok' AND NOT (spread>=0)"},
    {"records with an unknown status", "SELECT count(*) FROM records WHERE status NOT IN ('ok','slow','wrong','nan','compile_error','launch_error','demoted')"},
    {"records with an unknown origin", "SELECT count(*) FROM records WHERE origin NOT IN ('measured','imported','predicted')"},
    {"records without a kernel source hash or kiln version", "SELECT count(*) FROM records WHERE coalesce(source_hash,'')='' OR coalesce(kiln_version,'')=''"},
  };
  int problems = 0;
  char msg[512];
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    int bad = 0;
    int64_t n = count_q(db, q[i].sql, &bad);
    if (bad) return kiln__db_sqlerr(db, err, "checking");
    if (n > 0) {
      problems++;
      snprintf(msg, sizeof msg, "%lld %s", (long long)n, q[i].what);
      if (fn) fn(msg, ctx);
    }
  }
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT DISTINCT family,params FROM records", -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(db, err, "checking");
  int64_t badp = 0;
  char first[300] = "";
  while (kiln__db_step(db, st) == SQLITE_ROW) {
    const char *p = (const char *)sqlite3_column_text(st, 1);
    if (!p || !params_wellformed(p)) {
      if (!badp++) snprintf(first, sizeof first, "%s: '%s'", sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : "?", p ? p : "(null)");
    }
  }
  sqlite3_finalize(st);
  if (badp) {
    problems++;
    snprintf(msg, sizeof msg, "%lld parameter strings not of the form NAME=V,... (first %s)", (long long)badp, first);
    if (fn) fn(msg, ctx);
  }
  return problems;
}

/* ---- pruning --------------------------------------------------------------- */

static int exec_count(kiln_db *db, const char *sql, int64_t *n, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) return kiln__db_sqlerr(db, err, "pruning");
  if (sqlite3_bind_parameter_count(st) >= 1) sqlite3_bind_text(st, 1, KILN_VERSION, -1, SQLITE_STATIC);
  int rc = kiln__db_step(db, st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return kiln__db_sqlerr(db, err, "pruning");
  if (n) *n += sqlite3_changes(db->h);
  return 0;
}

int kiln_db_prune(kiln_db *db, int stale, int binaries, kiln_prune_stats *ps, kiln_error *err) {
  kiln_prune_stats dummy;
  if (!ps) ps = &dummy;
  memset(ps, 0, sizeof *ps);
  int rc = kiln__db_begin_write(db, err);
  if (rc) return rc;
  if ((rc = exec_count(db, "DELETE FROM records WHERE status='demoted'", &ps->records, err))) goto fail;
  if (stale && (rc = exec_count(db, "DELETE FROM records WHERE kiln_version IS NOT ?1", &ps->records, err))) goto fail;
  if ((rc = exec_count(db, "DELETE FROM tuned WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.device=tuned.device AND r.family=tuned.family"
                           " AND r.dtype=tuned.dtype AND r.shape_key=tuned.shape_key AND r.epilogue=tuned.epilogue AND r.status='ok')", &ps->tuned, err))) goto fail;
  if ((rc = exec_count(db, "DELETE FROM devices WHERE probe IS NULL AND id NOT IN (SELECT device FROM records) AND id NOT IN (SELECT device FROM tuned)",
                       &ps->devices, err))) goto fail;
  if (binaries && (rc = exec_count(db, "DELETE FROM binaries", &ps->binaries, err))) goto fail;
  if ((rc = kiln__db_exec(db, "COMMIT", err))) return rc;
  return kiln__db_exec(db, "VACUUM", err);
fail:
  sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}
