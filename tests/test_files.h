/* test_files.h: what the database tests (db_test.c, db_faults.c) share:
 * reading a whole file (they compare a file's bytes before and after) and
 * the tables of the version-1 schema (for the migration tests). */
#ifndef KILN_TEST_FILES_H
#define KILN_TEST_FILES_H
#include <stdio.h>
#include <stdlib.h>

/* The bytes of file p (NUL-terminated, malloc'd) and their count in *n;
 * NULL and *n = 0 when it cannot be opened. */
static inline char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) { *n = 0; return NULL; }
  fseek(f, 0, SEEK_END);
  long l = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)(l > 0 ? l : 0) + 1);
  *n = b ? fread(b, 1, (size_t)(l > 0 ? l : 0), f) : 0;
  if (b) b[*n] = 0;
  fclose(f);
  return b;
}
/* The tables of a version-1 tuning database (devices, records, tuned,
 * binaries), as SQL statements. */
#define KILN_TEST_V1_TABLES                                                                                                   \
  "CREATE TABLE devices (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL UNIQUE, family TEXT NOT NULL, platform TEXT, vendor TEXT, name TEXT," \
  " driver TEXT, version TEXT, compute_units INTEGER, max_clock_mhz INTEGER, global_mem INTEGER, local_mem INTEGER, max_alloc INTEGER," \
  " max_work_group INTEGER, probe TEXT, created INTEGER);" \
  "CREATE TABLE records (id INTEGER PRIMARY KEY, device INTEGER NOT NULL REFERENCES devices(id), family TEXT NOT NULL, dtype INTEGER NOT NULL," \
  " shape_key TEXT NOT NULL, epilogue TEXT NOT NULL DEFAULT '', params TEXT NOT NULL, median_ns REAL, spread REAL, samples INTEGER, max_err REAL," \
  " status TEXT NOT NULL, origin TEXT NOT NULL, source_hash TEXT, build_options TEXT, kiln_version TEXT, created INTEGER," \
  " UNIQUE(device, family, dtype, shape_key, epilogue, params));" \
  "CREATE TABLE tuned (device INTEGER NOT NULL, family TEXT NOT NULL, dtype INTEGER NOT NULL, shape_key TEXT NOT NULL, epilogue TEXT NOT NULL DEFAULT ''," \
  " trials INTEGER, created INTEGER, PRIMARY KEY(device, family, dtype, shape_key, epilogue));" \
  "CREATE TABLE binaries (key TEXT PRIMARY KEY, binary BLOB NOT NULL, created INTEGER);"

#endif
