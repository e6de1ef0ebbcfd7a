/* db_internal.h: what db.c shares with the other files of db/ (share.c):
 * the handle, the record column list and retrying SQL helpers. Not for use
 * outside db/. */
#ifndef KILN_DB_INTERNAL_H
#define KILN_DB_INTERNAL_H

#include "kiln_db.h"
#include <sqlite3.h>

struct kiln_db {
  sqlite3 *h;
  char *path;
  int readonly;
  int schema_on_disk;       /* user_version of the file when opened (< KILN_DB_SCHEMA: migrated, in memory if read-only) */
  struct kiln_db **shared;  /* read-only layers consulted by kiln_db_best_layered (owned) */
  int nshared;
};

/* Columns read by kiln__db_read_record, in order (RECORD_COLS_R: prefixed "r.");
 * a column selected after them is column RECORD_NCOLS. */
#define RECORD_COLS "family,dtype,shape_key,epilogue,params,median_ns,spread,samples,max_err,status,origin,source_hash,build_options,kiln_version,created,features,predicted_ns,alt,flags,source_db,verified_ns,min_ns"
#define RECORD_NCOLS 22
#define RECORD_COLS_R "r.family,r.dtype,r.shape_key,r.epilogue,r.params,r.median_ns,r.spread,r.samples,r.max_err,r.status,r.origin,r.source_hash,r.build_options,r.kiln_version,r.created,r.features,r.predicted_ns,r.alt,r.flags,r.source_db,r.verified_ns,r.min_ns"

/* sqlite3_exec / sqlite3_step retrying with backoff while the database is busy. */
int kiln__db_exec(kiln_db *db, const char *sql, kiln_error *err);
/* Starts a write transaction (BEGIN IMMEDIATE); KILN_EDB for a database opened read-only. */
int kiln__db_begin_write(kiln_db *db, kiln_error *err);
int kiln__db_step(kiln_db *db, sqlite3_stmt *st);
/* Fills r from a row whose first columns are RECORD_COLS. */
void kiln__db_read_record(sqlite3_stmt *st, kiln_record *r);
/* Sets err to KILN_EDB with the database's path and SQLite's last message. */
int kiln__db_sqlerr(kiln_db *db, kiln_error *err, const char *what);

/* Creates the current schema in db->h (an empty database) and sets its
 * application_id and user_version; returns an SQLite code. */
int kiln__db_create_schema(kiln_db *db, kiln_error *err);

/* Binds an instance key (family, dtype, shape key, epilogue; NULL
 * epilogue: "") to parameters at..at+3 (db.c). */
void kiln__db_bind_instance(sqlite3_stmt *st, int at, const char *family, int dtype, const char *shape_key, const char *epilogue);
/* Binds text s, or NULL when s is NULL, to parameter i. */
void kiln__db_bind_text_or_null(sqlite3_stmt *st, int i, const char *s);

/* Binds parameters 1..18 of a records insert (device .. predicted_ns) from r (db.c). */
void kiln__db_bind_record(sqlite3_stmt *st, int64_t device, const kiln_record *r);

/* kiln_db_open on a database file's bytes instead of a file: a private
 * in-memory copy (sqlite3_deserialize) goes through the same header, schema,
 * application_id and quick_check validation, and migration (in place when
 * writable, without the backup file). Messages name the database
 * "<memory>". Used by the fuzz target tests/fuzz/fuzz_db.c (db.c). */
int kiln__db_open_image(const void *data, size_t len, int flags, kiln_db **out, kiln_error *err);

#endif /* KILN_DB_INTERNAL_H */
