/* fuzz_db.c: libFuzzer target for opening and reading a tuning database.
 * The bytes are opened as a database image in memory (kiln__db_open_image:
 * sqlite3_deserialize of a private copy, then kiln_db_open's own checks:
 * header, application_id, schema version, quick_check, migration), first
 * read-only and, when that succeeds, read through the lookup API for the
 * instances the image lists: kiln_db_best, kiln_db_each, kiln_db_is_tuned,
 * the binary cache, probes, kiln_db_counts_get. Then it is opened writable
 * (an old schema is migrated in place) and a device row is looked up or
 * added (the writable open repeats the same checks, so only images that
 * passed them read-only are opened writable). Nothing touches the file
 * system: with a file per input the target ran at ~100 executions/s, in
 * memory it needs ~1.5 ms of CPU per input (SQLite under ASan). */
#include "db_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void count_rec(const kiln_record *r, void *ctx) { (void)r; (*(int *)ctx)++; }

/* Looks up the instances, binaries and devices the file lists (read with
 * SQLite directly, since the kiln API only answers for known keys). */
static void read_all(kiln_db *db) {
  kiln_error err = {0};
  kiln_db_counts c;
  kiln_db_counts_get(db, &c, &err);
  /* the keys the image lists, read with SQLite directly (the kiln API only
   * answers for known keys); statements are finalized before the lookups'
   * own statements run on the same handle */
  sqlite3 *h = db->h;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(h, "SELECT device, family, dtype, shape_key, epilogue, source_hash FROM records LIMIT 8", -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      int64_t dev = sqlite3_column_int64(st, 0);
      char fam[256], key[1024], epi[256], hash[256];
      snprintf(fam, sizeof fam, "%s", sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "");
      int dtype = sqlite3_column_int(st, 2);
      snprintf(key, sizeof key, "%s", sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3) : "");
      snprintf(epi, sizeof epi, "%s", sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "");
      snprintf(hash, sizeof hash, "%s", sqlite3_column_text(st, 5) ? (const char *)sqlite3_column_text(st, 5) : "");
      kiln_record r;
      int n = 0;
      kiln_db_best(db, dev, fam, dtype, key, epi, NULL, &r, &err);
      kiln_db_best(db, dev, fam, dtype, key, epi, hash, &r, &err);
      kiln_db_each(db, dev, fam, dtype, key, epi, count_rec, &n, &err);
      kiln_db_is_tuned(db, dev, fam, dtype, key, epi);
    }
  }
  sqlite3_finalize(st);
  st = NULL;
  if (sqlite3_prepare_v2(h, "SELECT key FROM binaries LIMIT 4", -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      unsigned char *bin = NULL;
      size_t len = 0;
      char key[1024];
      snprintf(key, sizeof key, "%s", sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : "");
      if (kiln_db_binary_get(db, key, &bin, &len) == 0) free(bin);
    }
  }
  sqlite3_finalize(st);
  st = NULL;
  if (sqlite3_prepare_v2(h, "SELECT id FROM devices LIMIT 4", -1, &st, NULL) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      char *json = NULL;
      if (kiln_db_get_probe(db, sqlite3_column_int64(st, 0), &json) == 0) free(json);
    }
  }
  sqlite3_finalize(st);
  /* the fixed keys of a lookup miss */
  kiln_record r;
  kiln_db_best(db, 1, "gemm", KILN_DT_FLOAT, "M=1,N=1,K=1", "", NULL, &r, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_error err = {0};
  kiln_db *db = NULL;
  if (kiln__db_open_image(data, size, KILN_DB_READONLY, &db, &err) != 0) return 0;
  /* the writable open runs the same checks: an image refused read-only is
   * refused writable too, so only accepted images go on */
  {
    read_all(db);
    kiln_device_info info = {0};
    int64_t dev;
    snprintf(info.name, sizeof info.name, "fuzz device 8 GB");
    kiln_db_device(db, &info, &dev, &err);
    kiln_db_close(db);
  }
  db = NULL;
  if (kiln__db_open_image(data, size, 0, &db, &err) == 0) {
    kiln_db_counts c;
    kiln_db_counts_get(db, &c, &err);
    kiln_device_info info = {0};
    int64_t dev;
    snprintf(info.name, sizeof info.name, "fuzz device");
    kiln_db_device(db, &info, &dev, &err);
    kiln_db_close(db);
  }
  return 0;
}
