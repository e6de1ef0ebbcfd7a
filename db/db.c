/* db.c: the SQLite tuning database (see kiln_db.h): validation on open,
 * schema creation and migrations, devices, records, tuned-instance markers and
 * the binary cache. WAL mode with a busy timeout and retries with backoff keeps
 * concurrent `kiln tune` processes from failing; every write is a transaction,
 * so a killed process leaves a consistent file. */
#include "db_internal.h"
#include <ctype.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int kiln__err(kiln_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static const char *SCHEMA_V1 =
  "CREATE TABLE IF NOT EXISTS devices ("
  "  id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL UNIQUE, family TEXT NOT NULL,"
  "  platform TEXT, vendor TEXT, name TEXT, driver TEXT, version TEXT,"
  "  compute_units INTEGER, max_clock_mhz INTEGER, global_mem INTEGER, local_mem INTEGER,"
  "  max_alloc INTEGER, max_work_group INTEGER, probe TEXT, created INTEGER);"
  "CREATE TABLE IF NOT EXISTS records ("
  "  id INTEGER PRIMARY KEY, device INTEGER NOT NULL REFERENCES devices(id),"
  "  family TEXT NOT NULL, dtype INTEGER NOT NULL, shape_key TEXT NOT NULL, epilogue TEXT NOT NULL DEFAULT '',"
  "  params TEXT NOT NULL, median_ns REAL, spread REAL, samples INTEGER, max_err REAL,"
  "  status TEXT NOT NULL, origin TEXT NOT NULL, source_hash TEXT, build_options TEXT,"
  "  kiln_version TEXT, created INTEGER,"
  "  UNIQUE(device, family, dtype, shape_key, epilogue, params));"
  "CREATE INDEX IF NOT EXISTS records_instance ON records(device, family, dtype, shape_key, epilogue);"
  "CREATE TABLE IF NOT EXISTS tuned ("
  "  device INTEGER NOT NULL, family TEXT NOT NULL, dtype INTEGER NOT NULL, shape_key TEXT NOT NULL,"
  "  epilogue TEXT NOT NULL DEFAULT '', trials INTEGER, created INTEGER,"
  "  PRIMARY KEY(device, family, dtype, shape_key, epilogue));"
  "CREATE TABLE IF NOT EXISTS binaries (key TEXT PRIMARY KEY, binary BLOB NOT NULL, created INTEGER);";

const char *kiln_db_path(const kiln_db *db) { return db->path; }

const char *kiln_db_default_path(char *buf, size_t len) {
  const char *home = getenv("HOME");
  snprintf(buf, len, "%s/.cache/kiln/tuning.db", home && *home ? home : ".");
  return buf;
}

/* Runs SQL, retrying with backoff while the database is busy. */
static int exec_retry(kiln_db *db, const char *sql, kiln_error *err) {
  int delay_us = 1000;
  for (int attempt = 0;; attempt++) {
    char *msg = NULL;
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK) return 0;
    if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && attempt < 200) {
      sqlite3_free(msg);
      usleep((useconds_t)delay_us);
      if (delay_us < 100000) delay_us *= 2;
      continue;
    }
    int st = kiln__err(err, KILN_EDB, "%s: %s", db->path, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return st;
  }
}

static int step_retry(kiln_db *db, sqlite3_stmt *st) {
  int delay_us = 1000;
  for (int attempt = 0;; attempt++) {
    int rc = sqlite3_step(st);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || attempt >= 200) return rc;
    sqlite3_reset(st);
    usleep((useconds_t)delay_us);
    if (delay_us < 100000) delay_us *= 2;
  }
}

static int pragma_int(sqlite3 *h, const char *sql, int64_t *v) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) { *v = sqlite3_column_int64(st, 0); rc = SQLITE_OK; }
  sqlite3_finalize(st);
  return rc;
}

/* Writes a consistent copy of the open database h to `to` with SQLite's
 * backup API (content still in the WAL included). */
static int backup_file(sqlite3 *h, const char *to) {
  sqlite3 *dst = NULL;
  int rc = sqlite3_open_v2(to, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(dst, 10000);
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", h, "main");
    rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(dst);
    if (b && sqlite3_backup_finish(b) != SQLITE_OK && rc == SQLITE_DONE) rc = SQLITE_ERROR;
  }
  sqlite3_close(dst);
  if (rc != SQLITE_DONE && errno == 0) errno = EIO;
  return rc == SQLITE_DONE ? 0 : -1;
}

/* Migrations from version v to v+1; index 0 creates version 1. */
static const char *const MIGRATIONS[] = {
  NULL, /* v0 -> v1: SCHEMA_V1 */
  /* v1 -> v2: cost-model features and predictions on records */
  "ALTER TABLE records ADD COLUMN features TEXT; ALTER TABLE records ADD COLUMN predicted_ns REAL;",
  /* v2 -> v3: shared databases. `alt` joins the unique key so that two
   * measurements of one candidate that disagree beyond their noise can both be
   * kept (and flagged); flags (KILN_REC_*), the file a record was imported
   * from, and the time re-measured when an imported record was verified. */
  "CREATE TABLE records_v3 ("
  "  id INTEGER PRIMARY KEY, device INTEGER NOT NULL REFERENCES devices(id),"
  "  family TEXT NOT NULL, dtype INTEGER NOT NULL, shape_key TEXT NOT NULL, epilogue TEXT NOT NULL DEFAULT '',"
  "  params TEXT NOT NULL, median_ns REAL, spread REAL, samples INTEGER, max_err REAL,"
  "  status TEXT NOT NULL, origin TEXT NOT NULL, source_hash TEXT, build_options TEXT,"
  "  kiln_version TEXT, created INTEGER, features TEXT, predicted_ns REAL,"
  "  alt INTEGER NOT NULL DEFAULT 0, flags INTEGER NOT NULL DEFAULT 0, source_db TEXT, verified_ns REAL,"
  "  UNIQUE(device, family, dtype, shape_key, epilogue, params, alt));"
  "INSERT INTO records_v3(id,device,family,dtype,shape_key,epilogue,params,median_ns,spread,samples,max_err,status,origin,"
  "  source_hash,build_options,kiln_version,created,features,predicted_ns)"
  " SELECT id,device,family,dtype,shape_key,epilogue,params,median_ns,spread,samples,max_err,status,origin,"
  "  source_hash,build_options,kiln_version,created,features,predicted_ns FROM records;"
  "DROP TABLE records;"
  "ALTER TABLE records_v3 RENAME TO records;"
  "CREATE INDEX IF NOT EXISTS records_instance ON records(device, family, dtype, shape_key, epilogue);",
  /* v3 -> v4: the fastest repeat of a measurement (what candidates are ranked by, kiln_record_ns) */
  "ALTER TABLE records ADD COLUMN min_ns REAL;",
};
_Static_assert(sizeof MIGRATIONS / sizeof MIGRATIONS[0] == KILN_DB_SCHEMA, "one migration per schema version");

static int create_fresh(const char *path, int mkdirs, kiln_error *err) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash && !mkdirs) {
    struct stat ds;
    if (slash == dir) slash[1] = 0;
    else *slash = 0;
    if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode))
      return kiln__err(err, KILN_ENOTFOUND, "%s: directory %s does not exist (create it first; kiln does not make directory trees for --db)", path, dir);
  } else if (slash) {
    *slash = 0;
    for (char *p = dir + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(dir, 0755); *p = '/'; }
    mkdir(dir, 0755);
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.new-%d-%ld", path, (int)getpid(), (long)time(NULL));
  sqlite3 *h = NULL;
  int rc = sqlite3_open_v2(tmp, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  char *msg = NULL;
  if (rc == SQLITE_OK) rc = sqlite3_exec(h, SCHEMA_V1, NULL, NULL, &msg);
  for (int v = 1; rc == SQLITE_OK && v < KILN_DB_SCHEMA; v++) rc = sqlite3_exec(h, MIGRATIONS[v], NULL, NULL, &msg);
  char set[128];
  snprintf(set, sizeof set, "PRAGMA application_id=%d; PRAGMA user_version=%d;", KILN_DB_APP_ID, KILN_DB_SCHEMA);
  if (rc == SQLITE_OK) rc = sqlite3_exec(h, set, NULL, NULL, &msg);
  int st = 0;
  if (rc != SQLITE_OK) st = kiln__err(err, KILN_EDB, "%s: cannot create: %s", path, msg ? msg : sqlite3_errstr(rc));
  sqlite3_free(msg);
  if (h) sqlite3_close(h);
  if (!st && link(tmp, path) != 0 && errno != EEXIST) st = kiln__err(err, KILN_EDB, "%s: cannot create: %s", path, strerror(errno));
  unlink(tmp);
  return st;
}

/* Read-only open of an older schema: copies the database into memory with
 * SQLite's backup API and migrates the copy; db->h becomes the copy. */
static int migrate_in_memory(kiln_db *db, int64_t ver, kiln_error *err) {
  sqlite3 *mem = NULL;
  if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    sqlite3_close(mem);
    return kiln__err(err, KILN_EDB, "%s: cannot migrate schema version %lld in memory: out of memory", db->path, (long long)ver);
  }
  sqlite3_backup *b = sqlite3_backup_init(mem, "main", db->h, "main");
  int rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(mem);
  if (b) sqlite3_backup_finish(b);
  char *msg = NULL;
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  for (int64_t v = ver; rc == SQLITE_OK && v < KILN_DB_SCHEMA; v++) rc = sqlite3_exec(mem, v == 0 ? SCHEMA_V1 : MIGRATIONS[v], NULL, NULL, &msg);
  if (rc != SQLITE_OK) {
    int st = kiln__err(err, KILN_EDB, "%s: cannot migrate schema version %lld in memory: %s", db->path, (long long)ver, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    sqlite3_close(mem);
    return st;
  }
  sqlite3_close(db->h);
  db->h = mem;
  return 0;
}

/* The SQLite header (first n <= 100 bytes of a file of `size` bytes) before
 * SQLite reads anything: magic string, and a page count that fits the size. */
static int check_header(const char *label, const unsigned char *hdr, size_t n, uint64_t size, kiln_error *err) {
  if (n < 100 || memcmp(hdr, "SQLite format 3", 16) != 0)
    return kiln__err(err, KILN_EDB, "%s: not an SQLite database (bad header; left untouched)", label);
  unsigned page = ((unsigned)hdr[16] << 8) | hdr[17];
  if (page == 1) page = 65536;
  uint32_t npages = ((uint32_t)hdr[28] << 24) | ((uint32_t)hdr[29] << 16) | ((uint32_t)hdr[30] << 8) | hdr[31];
  if (page && npages && size < (uint64_t)page * npages)
    return kiln__err(err, KILN_EDB, "%s: truncated database (%llu bytes, header says %llu; left untouched)", label, (unsigned long long)size, (unsigned long long)page * npages);
  return 0;
}

static int validate_open(kiln_db *db, int exists, int on_disk, kiln_error *err);

/* 0 when this process can write `path` and create files in its directory
 * (SQLite's journal, -wal and -shm files); else -1 with the reason in why. */
static int writable_here(const char *path, const struct stat *stt, char *why, size_t wlen) {
  if (access(path, W_OK) != 0) {
    snprintf(why, wlen, "not writable for you (owner uid %u, mode %04o)", (unsigned)stt->st_uid, (unsigned)(stt->st_mode & 07777));
    return -1;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) slash[1] = 0;
  else *slash = 0;
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(why, wlen, "its directory %s is not writable for you", dir);
    return -1;
  }
  return 0;
}

/* "file:<path, percent-encoded>?immutable=1": SQLite reads the file without
 * locking it and without making a journal or -shm file beside it. */
static void immutable_uri(const char *path, char *out, size_t len) {
  size_t o = (size_t)snprintf(out, len, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p && o + 4 < len; p++) {
    if (isalnum(*p) || strchr("/._-~", *p)) out[o++] = (char)*p;
    else o += (size_t)snprintf(out + o, len - o, "%%%02X", *p);
  }
  out[o] = 0;
  snprintf(out + o, len - o, "?immutable=1");
}

int kiln_db_is_readonly(const kiln_db *db) { return db->readonly; }

int kiln_db_open(const char *path, int flags, kiln_db **out, kiln_error *err) {
  struct stat stt;
  int exists = stat(path, &stt) == 0;
  if (exists && !S_ISREG(stt.st_mode)) return kiln__err(err, KILN_EDB, "%s: not a regular file", path);
  if (exists && stt.st_size == 0) return kiln__err(err, KILN_EDB, "%s: empty file, not a kiln tuning database (left untouched)", path);
  if (!exists && !(flags & KILN_DB_CREATE)) return kiln__err(err, KILN_ENOTFOUND, "%s: no such tuning database", path);
  if (!exists) {
    /* create it complete under a temporary name and link it into place, so a
     * process opening it concurrently never sees a half-made (empty) file */
    int rc = create_fresh(path, !(flags & KILN_DB_NO_MKDIR), err);
    if (rc) return rc;
    if (stat(path, &stt) != 0) return kiln__err(err, KILN_EDB, "%s: cannot create: %s", path, strerror(errno));
    exists = 1;
  }
  if (exists && stt.st_size < 512) return kiln__err(err, KILN_EDB, "%s: truncated or not an SQLite file (%lld bytes; left untouched)", path, (long long)stt.st_size);
  if (exists) {
    /* Check the header before SQLite touches anything. */
    FILE *f = fopen(path, "rb");
    unsigned char hdr[100] = {0};
    size_t n = f ? fread(hdr, 1, sizeof hdr, f) : 0;
    if (f) fclose(f);
    int st = check_header(path, hdr, n, (uint64_t)stt.st_size, err);
    if (st) return st;
  } else {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
      *slash = 0;
      for (char *p = dir + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(dir, 0755); *p = '/'; }
      mkdir(dir, 0755);
    }
  }
  /* a file this user cannot write is read, never written: SQLite's immutable
   * open makes no journal or -shm file beside it and changes no byte */
  char why[512];
  int cannot_write = writable_here(path, &stt, why, sizeof why) != 0;
  if (cannot_write && (flags & KILN_DB_WRITE))
    return kiln__err(err, KILN_EDB, "%s: %s, so kiln cannot write it; write into a database of your own (--db FILE, or the default "
                     "~/.cache/kiln/tuning.db) and read this one through --db or KILN_DB_PATH", path, why);
  kiln_db *db = calloc(1, sizeof *db);
  if (!db) return kiln__err(err, KILN_ENOMEM, "out of memory");
  db->path = strdup(path);
  db->readonly = (flags & KILN_DB_READONLY) != 0 || cannot_write;
  int oflags = db->readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | (exists ? 0 : SQLITE_OPEN_CREATE));
  char uri[8400];
  if (cannot_write) immutable_uri(path, uri, sizeof uri);
  int rc = sqlite3_open_v2(cannot_write ? uri : path, &db->h, oflags | SQLITE_OPEN_NOMUTEX | (cannot_write ? SQLITE_OPEN_URI : 0), NULL);
  int st = 0;
  if (rc != SQLITE_OK) { st = kiln__err(err, KILN_EDB, "%s: cannot open: %s", path, sqlite3_errstr(rc)); goto fail; }
  if ((st = validate_open(db, exists, 1, err)) != 0) goto fail;
  *out = db;
  return 0;
fail:
  if (db->h) sqlite3_close(db->h);
  free(db->path);
  free(db);
  return st ? st : KILN_EDB;
}

/* The checks and migrations of kiln_db_open on the open handle db->h (the
 * file existed before when `exists`); `on_disk`: db->h is the file, so a
 * writable migration leaves a backup beside it. */
static int validate_open(kiln_db *db, int exists, int on_disk, kiln_error *err) {
  const char *path = db->path;
  int rc, st = 0;
  sqlite3_busy_timeout(db->h, 10000);
  int64_t app = 0, ver = 0;
  if (exists) {
    if ((rc = pragma_int(db->h, "PRAGMA application_id", &app)) != SQLITE_OK || (rc = pragma_int(db->h, "PRAGMA user_version", &ver)) != SQLITE_OK) {
      st = kiln__err(err, KILN_EDB, "%s: not a readable SQLite database: %s (left untouched)", path, sqlite3_errmsg(db->h));
      goto fail;
    }
    if (app != KILN_DB_APP_ID) {
      st = kiln__err(err, KILN_EDB, "%s: an SQLite file of another application (application_id 0x%llx), not a kiln tuning database (left untouched)", path, (unsigned long long)app);
      goto fail;
    }
    if (ver > KILN_DB_SCHEMA) {
      st = kiln__err(err, KILN_EDB, "%s: schema version %lld is newer than this kiln understands (%d): upgrade kiln (file left untouched)", path, (long long)ver, KILN_DB_SCHEMA);
      goto fail;
    }
    if (ver < 0) { /* would index MIGRATIONS[] below 0 */
      st = kiln__err(err, KILN_EDB, "%s: schema version %lld is not a kiln schema (file left untouched)", path, (long long)ver);
      goto fail;
    }
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db->h, "PRAGMA quick_check", -1, &q, NULL) != SQLITE_OK) {
      st = kiln__err(err, KILN_EDB, "%s: corrupt database: %s (left untouched)", path, sqlite3_errmsg(db->h));
      goto fail;
    }
    rc = sqlite3_step(q);
    const char *res = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
    int ok = res && !strcmp(res, "ok");
    char why[256];
    snprintf(why, sizeof why, "%s", res ? res : sqlite3_errmsg(db->h));
    sqlite3_finalize(q);
    if (!ok) { st = kiln__err(err, KILN_EDB, "%s: corrupt database: %s (left untouched)", path, why); goto fail; }
  }
  db->schema_on_disk = (int)ver;
  if (db->readonly) {
    /* an older schema is migrated in a private in-memory copy; the file is not touched */
    if (ver < KILN_DB_SCHEMA && (st = migrate_in_memory(db, ver, err)) != 0) goto fail;
    return 0;
  }
  if ((st = exec_retry(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", err))) goto fail;
  if (ver < KILN_DB_SCHEMA) {
    if (exists && ver > 0 && on_disk) {
      char bak[4200];
      snprintf(bak, sizeof bak, "%s.bak-v%lld", path, (long long)ver);
      if (backup_file(db->h, bak) != 0) { st = kiln__err(err, KILN_EDB, "%s: cannot write backup %s before migrating: %s", path, bak, strerror(errno)); goto fail; }
    }
    if ((st = exec_retry(db, "BEGIN IMMEDIATE", err))) goto fail;
    /* re-read under the write lock: another process may have migrated */
    pragma_int(db->h, "PRAGMA user_version", &ver);
    if (ver < 0 || ver > KILN_DB_SCHEMA)
      st = kiln__err(err, KILN_EDB, "%s: schema version changed to %lld while opening (file left untouched)", path, (long long)ver);
    for (int64_t v = ver; v < KILN_DB_SCHEMA && !st; v++) {
      const char *sql = v == 0 ? SCHEMA_V1 : MIGRATIONS[v];
      st = exec_retry(db, sql, err);
    }
    char set[128];
    snprintf(set, sizeof set, "PRAGMA application_id=%d; PRAGMA user_version=%d;", KILN_DB_APP_ID, KILN_DB_SCHEMA);
    if (!st) st = exec_retry(db, set, err);
    if (st) { sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL); goto fail; }
    if ((st = exec_retry(db, "COMMIT", err))) goto fail;
  }
  return 0;
fail:
  return st ? st : KILN_EDB;
}

int kiln__db_open_image(const void *data, size_t len, int flags, kiln_db **out, kiln_error *err) {
  const char *label = "<memory>";
  if (len == 0) return kiln__err(err, KILN_EDB, "%s: empty file, not a kiln tuning database (left untouched)", label);
  if (len < 512) return kiln__err(err, KILN_EDB, "%s: truncated or not an SQLite file (%llu bytes; left untouched)", label, (unsigned long long)len);
  int st = check_header(label, data, len < 100 ? len : 100, (uint64_t)len, err);
  if (st) return st;
  kiln_db *db = calloc(1, sizeof *db);
  if (!db || !(db->path = strdup(label))) { free(db); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  db->readonly = (flags & KILN_DB_READONLY) != 0;
  unsigned char *copy = sqlite3_malloc64(len);
  int rc = copy ? sqlite3_open_v2(":memory:", &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) : SQLITE_NOMEM;
  if (rc == SQLITE_OK) {
    memcpy(copy, data, len);
    /* SQLite owns (and frees) the copy from here on, also on failure */
    rc = sqlite3_deserialize(db->h, "main", copy, (sqlite3_int64)len, (sqlite3_int64)len,
                             SQLITE_DESERIALIZE_FREEONCLOSE | (db->readonly ? SQLITE_DESERIALIZE_READONLY : SQLITE_DESERIALIZE_RESIZEABLE));
    copy = NULL;
  }
  sqlite3_free(copy);
  if (rc != SQLITE_OK) st = kiln__err(err, KILN_EDB, "%s: cannot open: %s", label, sqlite3_errstr(rc));
  else st = validate_open(db, 1, 0, err);
  if (st) {
    sqlite3_close(db->h);
    free(db->path);
    free(db);
    return st;
  }
  *out = db;
  return 0;
}

void kiln_db_close(kiln_db *db) {
  if (!db) return;
  for (int i = 0; i < db->nshared; i++) kiln_db_close(db->shared[i]);
  free(db->shared);
  sqlite3_close(db->h);
  free(db->path);
  free(db);
}

void kiln_db_fingerprint(const kiln_device_info *in, char *exact, size_t elen, char *family, size_t flen) {
  /* A CPU device's global memory is the host's (PoCL reports a share of the
   * memory free when the process starts, which changes from run to run), so
   * it is left out of a CPU device's exact fingerprint. */
  char gmem[32];
  if (in->is_gpu) snprintf(gmem, sizeof gmem, "%llu", (unsigned long long)in->global_mem);
  else snprintf(gmem, sizeof gmem, "host");
  snprintf(exact, elen, "%s|%s|%s|%s|%s|cu=%d|mhz=%d|gmem=%s|lmem=%llu|wg=%zu", in->platform, in->vendor, in->name, in->driver, in->version,
           in->compute_units, in->max_clock_mhz, gmem, (unsigned long long)in->local_mem, in->max_work_group);
  /* family: vendor + name with memory sizes ("8GB", "16 GB") removed */
  char name[128];
  size_t o = 0;
  for (const char *p = in->name; *p && o + 1 < sizeof name; p++) {
    if (isdigit((unsigned char)*p)) {
      const char *q = p;
      while (isdigit((unsigned char)*q)) q++;
      const char *r = q;
      while (*r == ' ') r++;
      if (!strncasecmp(r, "GB", 2) || !strncasecmp(r, "MB", 2)) { p = r + 1; continue; }
    }
    name[o++] = *p;
  }
  name[o] = 0;
  while (o && name[o - 1] == ' ') name[--o] = 0;
  snprintf(family, flen, "%s|%s", in->vendor, name);
}

int kiln_db_device(kiln_db *db, const kiln_device_info *in, int64_t *id, kiln_error *err) {
  char fp[1024], fam[512];
  kiln_db_fingerprint(in, fp, sizeof fp, fam, sizeof fam);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT id FROM devices WHERE fingerprint=?", -1, &st, NULL) != SQLITE_OK)
    return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  sqlite3_bind_text(st, 1, fp, -1, SQLITE_TRANSIENT);
  int rc = step_retry(db, st);
  if (rc == SQLITE_ROW) { *id = sqlite3_column_int64(st, 0); sqlite3_finalize(st); return 0; }
  sqlite3_finalize(st);
  if (db->readonly) return kiln__err(err, KILN_ENOTFOUND, "%s: no records for device %s", db->path, in->name);
  if (sqlite3_prepare_v2(db->h,
        "INSERT OR IGNORE INTO devices(fingerprint,family,platform,vendor,name,driver,version,compute_units,max_clock_mhz,"
        "global_mem,local_mem,max_alloc,max_work_group,created) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
    return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  sqlite3_bind_text(st, 1, fp, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, fam, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, in->platform, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, in->vendor, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 5, in->name, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 6, in->driver, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 7, in->version, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 8, in->compute_units);
  sqlite3_bind_int(st, 9, in->max_clock_mhz);
  sqlite3_bind_int64(st, 10, (sqlite3_int64)in->global_mem);
  sqlite3_bind_int64(st, 11, (sqlite3_int64)in->local_mem);
  sqlite3_bind_int64(st, 12, (sqlite3_int64)in->max_alloc);
  sqlite3_bind_int64(st, 13, (sqlite3_int64)in->max_work_group);
  sqlite3_bind_int64(st, 14, (sqlite3_int64)time(NULL));
  rc = step_retry(db, st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return kiln__err(err, KILN_EDB, "%s: inserting device: %s", db->path, sqlite3_errmsg(db->h));
  return kiln_db_device(db, in, id, err);
}

void kiln__db_bind_instance(sqlite3_stmt *st, int at, const char *family, int dtype, const char *shape_key, const char *epilogue) {
  sqlite3_bind_text(st, at, family, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, at + 1, dtype);
  sqlite3_bind_text(st, at + 2, shape_key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, at + 3, epilogue ? epilogue : "", -1, SQLITE_TRANSIENT);
}

void kiln__db_bind_text_or_null(sqlite3_stmt *st, int i, const char *s) {
  if (s) sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, i);
}

/* Binds parameters 1..18 of a records insert (device .. predicted_ns) and 23 (min_ns) from r. */
void kiln__db_bind_record(sqlite3_stmt *st, int64_t device, const kiln_record *r) {
  sqlite3_bind_int64(st, 1, device);
  kiln__db_bind_instance(st, 2, r->family, r->dtype, r->shape_key, r->epilogue);
  sqlite3_bind_text(st, 6, r->params, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 7, r->median_ns);
  sqlite3_bind_double(st, 8, r->spread);
  sqlite3_bind_int(st, 9, r->samples);
  sqlite3_bind_double(st, 10, r->max_err);
  sqlite3_bind_text(st, 11, r->status[0] ? r->status : "ok", -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 12, r->origin[0] ? r->origin : "measured", -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 13, r->source_hash, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 14, r->build_options, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 15, r->kiln_version[0] ? r->kiln_version : KILN_VERSION, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 16, r->created ? r->created : (sqlite3_int64)time(NULL));
  char feats[256] = "";
  size_t fo = 0;
  for (int i = 0; i < r->nfeat && i < KILN_REC_MAXFEAT; i++) fo += (size_t)snprintf(feats + fo, sizeof feats - fo, "%s%.9g", i ? "," : "", r->feat[i]);
  if (r->nfeat) sqlite3_bind_text(st, 17, feats, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, 17);
  if (r->predicted_ns > 0) sqlite3_bind_double(st, 18, r->predicted_ns);
  else sqlite3_bind_null(st, 18);
  if (r->min_ns > 0) sqlite3_bind_double(st, 23, r->min_ns);
  else sqlite3_bind_null(st, 23);
}

int kiln_db_put(kiln_db *db, int64_t device, const kiln_record *r, kiln_error *err) {
  if (db->readonly) return kiln__err(err, KILN_EDB, "%s: opened read-only", db->path);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h,
        "INSERT OR REPLACE INTO records(device,family,dtype,shape_key,epilogue,params,median_ns,spread,samples,max_err,"
        "status,origin,source_hash,build_options,kiln_version,created,features,predicted_ns,flags,min_ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?20,?23)", -1, &st, NULL) != SQLITE_OK)
    return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  kiln__db_bind_record(st, device, r);
  sqlite3_bind_int(st, 20, r->flags);
  int rc = step_retry(db, st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return kiln__err(err, KILN_EDB, "%s: storing a record: %s", db->path, sqlite3_errmsg(db->h));
  return 0;
}

static void read_record(sqlite3_stmt *st, kiln_record *r) {
  memset(r, 0, sizeof *r);
#define TXT(col, field) snprintf(r->field, sizeof r->field, "%s", sqlite3_column_text(st, col) ? (const char *)sqlite3_column_text(st, col) : "")
  TXT(0, family);
  r->dtype = sqlite3_column_int(st, 1);
  TXT(2, shape_key);
  TXT(3, epilogue);
  TXT(4, params);
  r->median_ns = sqlite3_column_double(st, 5);
  r->spread = sqlite3_column_double(st, 6);
  r->samples = sqlite3_column_int(st, 7);
  r->max_err = sqlite3_column_double(st, 8);
  TXT(9, status);
  TXT(10, origin);
  TXT(11, source_hash);
  TXT(12, build_options);
  TXT(13, kiln_version);
  r->created = sqlite3_column_int64(st, 14);
  const char *f = (const char *)sqlite3_column_text(st, 15);
  r->nfeat = 0;
  while (f && *f && r->nfeat < KILN_REC_MAXFEAT) {
    char *end;
    r->feat[r->nfeat++] = strtod(f, &end);
    if (end == f) break;
    f = *end == ',' ? end + 1 : end;
  }
  r->predicted_ns = sqlite3_column_double(st, 16);
  r->alt = sqlite3_column_int(st, 17);
  r->flags = sqlite3_column_int(st, 18);
  TXT(19, source_db);
  r->verified_ns = sqlite3_column_double(st, 20);
  r->min_ns = sqlite3_column_double(st, 21);
#undef TXT
}


static int prep_instance(kiln_db *db, sqlite3_stmt **st, const char *sql, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue, kiln_error *err) {
  if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) != SQLITE_OK) return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  sqlite3_bind_int64(*st, 1, device);
  kiln__db_bind_instance(*st, 2, family, dtype, shape_key, epilogue);
  return 0;
}

int kiln_db_best(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue,
                 const char *source_hash, kiln_record *out, kiln_error *err) {
  sqlite3_stmt *st;
  int rc = prep_instance(db, &st, "SELECT " RECORD_COLS " FROM records WHERE device=? AND family=? AND dtype=? AND shape_key=? AND epilogue=?"
                                  " AND status='ok' AND (?6 IS NULL OR source_hash=?6) ORDER BY " KILN_RECORD_RANK_SQL " LIMIT 1",
                         device, family, dtype, shape_key, epilogue, err);
  if (rc) return rc;
  kiln__db_bind_text_or_null(st, 6, source_hash);
  rc = step_retry(db, st);
  if (rc == SQLITE_ROW) { read_record(st, out); sqlite3_finalize(st); return 0; }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  return KILN_ENOTFOUND;
}

int kiln_db_each(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue,
                 void (*fn)(const kiln_record *r, void *ctx), void *ctx, kiln_error *err) {
  sqlite3_stmt *st;
  int rc = prep_instance(db, &st, "SELECT " RECORD_COLS " FROM records WHERE device=? AND family=? AND dtype=? AND shape_key=? AND epilogue=? ORDER BY id",
                         device, family, dtype, shape_key, epilogue, err);
  if (rc) return rc;
  kiln_record r;
  while ((rc = step_retry(db, st)) == SQLITE_ROW) { read_record(st, &r); fn(&r, ctx); }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
}

int kiln_db_each_family(kiln_db *db, int64_t device, const char *family, void (*fn)(const kiln_record *r, void *ctx), void *ctx, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT " RECORD_COLS " FROM records WHERE device=? AND family=? ORDER BY shape_key, id", -1, &st, NULL) != SQLITE_OK)
    return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  sqlite3_bind_int64(st, 1, device);
  sqlite3_bind_text(st, 2, family, -1, SQLITE_TRANSIENT);
  kiln_record r;
  int rc;
  while ((rc = step_retry(db, st)) == SQLITE_ROW) { read_record(st, &r); fn(&r, ctx); }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
}

int kiln_db_mark_tuned(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue, int trials, kiln_error *err) {
  sqlite3_stmt *st;
  int rc = prep_instance(db, &st, "INSERT OR REPLACE INTO tuned(device,family,dtype,shape_key,epilogue,trials,created) VALUES(?,?,?,?,?,?,?)",
                         device, family, dtype, shape_key, epilogue, err);
  if (rc) return rc;
  sqlite3_bind_int(st, 6, trials);
  sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
  rc = step_retry(db, st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
}

int kiln_db_is_tuned(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue) {
  sqlite3_stmt *st;
  if (prep_instance(db, &st, "SELECT 1 FROM tuned WHERE device=? AND family=? AND dtype=? AND shape_key=? AND epilogue=?", device, family, dtype, shape_key, epilogue, NULL)) return 0;
  int rc = step_retry(db, st);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW;
}

int kiln_db_binary_get(kiln_db *db, const char *key, unsigned char **bin, size_t *len) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT binary FROM binaries WHERE key=?", -1, &st, NULL) != SQLITE_OK) return KILN_EDB;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
  int rc = step_retry(db, st), res = KILN_ENOTFOUND;
  if (rc == SQLITE_ROW) {
    int n = sqlite3_column_bytes(st, 0);
    const void *p = sqlite3_column_blob(st, 0);
    *bin = malloc((size_t)n + 1);
    if (*bin && p) { memcpy(*bin, p, (size_t)n); *len = (size_t)n; res = 0; }
    else { free(*bin); *bin = NULL; res = KILN_ENOMEM; }
  }
  sqlite3_finalize(st);
  for (int i = 0; res == KILN_ENOTFOUND && i < db->nshared; i++) res = kiln_db_binary_get(db->shared[i], key, bin, len);
  return res;
}

int kiln_db_binary_put(kiln_db *db, const char *key, const unsigned char *bin, size_t len, kiln_error *err) {
  if (db->readonly) return 0;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "INSERT OR REPLACE INTO binaries(key,binary,created) VALUES(?,?,?)", -1, &st, NULL) != SQLITE_OK)
    return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_blob(st, 2, bin, (int)len, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
  int rc = step_retry(db, st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
}

int kiln_db_counts_get(kiln_db *db, kiln_db_counts *c, kiln_error *err) {
  memset(c, 0, sizeof *c);
  if (pragma_int(db->h, "SELECT count(*) FROM devices", &c->devices) || pragma_int(db->h, "SELECT count(*) FROM records", &c->records) ||
      pragma_int(db->h, "SELECT count(*) FROM records WHERE status='ok'", &c->ok_records) ||
      pragma_int(db->h, "SELECT count(*) FROM tuned", &c->tuned_instances) || pragma_int(db->h, "SELECT count(*) FROM binaries", &c->binaries))
    return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  return 0;
}

int kiln_db_integrity(kiln_db *db, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK) return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  int rc = sqlite3_step(st);
  int ok = rc == SQLITE_ROW && sqlite3_column_text(st, 0) && !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
  char why[256];
  snprintf(why, sizeof why, "%s", rc == SQLITE_ROW && sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : sqlite3_errmsg(db->h));
  sqlite3_finalize(st);
  return ok ? 0 : kiln__err(err, KILN_EDB, "%s: integrity check failed: %s", db->path, why);
}

int kiln_db_set_probe(kiln_db *db, int64_t device, const char *json, kiln_error *err) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "UPDATE devices SET probe=? WHERE id=?", -1, &st, NULL) != SQLITE_OK)
    return kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
  sqlite3_bind_text(st, 1, json, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, device);
  int rc = step_retry(db, st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : kiln__err(err, KILN_EDB, "%s: %s", db->path, sqlite3_errmsg(db->h));
}

int kiln_db_get_probe(kiln_db *db, int64_t device, char **json) {
  sqlite3_stmt *st;
  *json = NULL;
  if (sqlite3_prepare_v2(db->h, "SELECT probe FROM devices WHERE id=?", -1, &st, NULL) != SQLITE_OK) return KILN_EDB;
  sqlite3_bind_int64(st, 1, device);
  int rc = step_retry(db, st), res = KILN_ENOTFOUND;
  if (rc == SQLITE_ROW && sqlite3_column_text(st, 0)) { *json = strdup((const char *)sqlite3_column_text(st, 0)); res = *json ? 0 : KILN_ENOMEM; }
  sqlite3_finalize(st);
  return res;
}

int kiln_db_families(kiln_db *db, int64_t device, char (*out)[32], int cap) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db->h, "SELECT DISTINCT family FROM records WHERE device=? AND family<>'fusion' ORDER BY family", -1, &st, NULL) != SQLITE_OK) return 0;
  sqlite3_bind_int64(st, 1, device);
  int n = 0;
  while (n < cap && step_retry(db, st) == SQLITE_ROW) snprintf(out[n++], 32, "%s", sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : "");
  sqlite3_finalize(st);
  return n;
}

/* ---- for the other files of db/ (db_internal.h) ---- */

int kiln__db_exec(kiln_db *db, const char *sql, kiln_error *err) { return exec_retry(db, sql, err); }

int kiln__db_begin_write(kiln_db *db, kiln_error *err) {
  if (db->readonly) return kiln__err(err, KILN_EDB, "%s: opened read-only", db->path);
  return exec_retry(db, "BEGIN IMMEDIATE", err);
}

void kiln_db_remove_files(const char *path) {
  char aux[4300];
  unlink(path);
  snprintf(aux, sizeof aux, "%s-wal", path);
  unlink(aux);
  snprintf(aux, sizeof aux, "%s-shm", path);
  unlink(aux);
}
int kiln__db_create_schema(kiln_db *db, kiln_error *err) {
  char *msg = NULL;
  int rc = sqlite3_exec(db->h, SCHEMA_V1, NULL, NULL, &msg);
  for (int v = 1; rc == SQLITE_OK && v < KILN_DB_SCHEMA; v++) rc = sqlite3_exec(db->h, MIGRATIONS[v], NULL, NULL, &msg);
  char set[128];
  snprintf(set, sizeof set, "PRAGMA application_id=%d; PRAGMA user_version=%d;", KILN_DB_APP_ID, KILN_DB_SCHEMA);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db->h, set, NULL, NULL, &msg);
  if (rc != SQLITE_OK && err) kiln__err(err, KILN_EDB, "%s", msg ? msg : sqlite3_errstr(rc));
  sqlite3_free(msg);
  return rc;
}
int kiln__db_step(kiln_db *db, sqlite3_stmt *st) { return step_retry(db, st); }
void kiln__db_read_record(sqlite3_stmt *st, kiln_record *r) { read_record(st, r); }
int kiln__db_sqlerr(kiln_db *db, kiln_error *err, const char *what) {
  return kiln__err(err, KILN_EDB, "%s: %s%s%s", db->path, what ? what : "", what ? ": " : "", sqlite3_errmsg(db->h));
}
