/* kiln_db.h: the SQLite tuning database: schema and migrations, device
 * fingerprints, tuning records with lookup, and the compiled-binary cache.
 *
 * A database file is identified by PRAGMA application_id = KILN_DB_APP_ID and
 * versioned by PRAGMA user_version. Opening never modifies a file that is not
 * a kiln database (or is newer than this build understands). */
#ifndef KILN_DB_H
#define KILN_DB_H

#include "kiln.h"
#include <stdint.h>

#define KILN_DB_APP_ID 0x6b696c6e /* "kiln" */
#define KILN_DB_SCHEMA 4 /* v2: records carry cost-model features and the prediction; v3: alt, flags, source_db, verified_ns; v4: min_ns */

/* kiln_db_open, kiln_db_close, kiln_db_path and kiln_db_default_path are in kiln.h. */

/* Removes the database file at path and its -wal and -shm files, if there
 * are any (a database being written to a temporary name, a fixture). */
void kiln_db_remove_files(const char *path);

/* Device fingerprint strings: exact (everything that can change results or
 * speed) and family (vendor + name without memory size). */
void kiln_db_fingerprint(const kiln_device_info *info, char *exact, size_t elen, char *family, size_t flen);

/* Returns the id of the device row for `info`, inserting it when missing
 * (not in read-only mode: then KILN_ENOTFOUND). */
int kiln_db_device(kiln_db *db, const kiln_device_info *info, int64_t *id, kiln_error *err);

/* One measured (or predicted) kernel candidate. */
#define KILN_REC_MAXFEAT 12
typedef struct kiln_record {
  char family[32];        /* kernel family, e.g. "gemm" */
  int dtype;
  char shape_key[192];    /* exact shape key of the instance */
  char epilogue[64];      /* fused epilogue signature, "" for none */
  char params[256];       /* canonical "NAME=V,NAME=V" (sorted by descriptor order) */
  double median_ns;       /* ns; <0 when the candidate failed */
  double spread;          /* (p90 - p10) / median */
  int samples;
  double max_err;         /* max relative error vs the CPU reference */
  char status[16];        /* "ok", "wrong", "compile_error", "launch_error", "nan" */
  char origin[16];        /* "measured", "imported", "predicted" */
  char source_hash[24];   /* hex hash of the kernel source */
  char build_options[256];
  char kiln_version[16];
  int64_t created;        /* unix seconds */
  int nfeat;
  double feat[KILN_REC_MAXFEAT]; /* cost-model features (kiln_features order), nfeat == 0 if none */
  double predicted_ns;    /* cost-model prediction when measured; <= 0 if none */
  int alt;                /* 0; 1.. for further measurements of the same candidate kept by a merge */
  int flags;              /* KILN_REC_* */
  char source_db[128];    /* file an imported record came from (base name), "" if measured here */
  double verified_ns;     /* median re-measured when an imported record was verified; <= 0 if never */
  double min_ns;          /* the fastest of the timed repeats (ns); <= 0 if not recorded (schema < 4) */
} kiln_record;

/* The time candidates are ranked by: the fastest repeat where recorded, else
 * the median. On a shared machine interference only ever adds time, and the
 * fastest repeat is what stays put between passes: over one convolution's
 * 127 candidates timed in three separate passes on POCL, Kendall tau between
 * passes was 0.83 by the fastest repeat against 0.76 by the median, and a
 * pass's best was 1.11x (median: 1.45x) the best of another pass. */
static inline double kiln_record_ns(const kiln_record *r) { return r->min_ns > 0 ? r->min_ns : r->median_ns; }
/* The same in SQL over a records row. */
#define KILN_RECORD_NS_SQL "(CASE WHEN min_ns>0 THEN min_ns ELSE median_ns END)"


/* Record flags. DISAGREE: a merge found measurements of this candidate that
 * disagree beyond their noise (or on correctness) and kept them all;
 * VERIFIED: an imported record was re-timed on this machine (verified_ns);
 * SECOND, THIRD: timed again in a second and a third pass over its
 * instance's space (kiln tune --compare-strategies), min_ns the fastest of
 * all passes;
 * RETIMED: one of an instance's contenders for best, timed again together
 * with the others in alternating rounds; median_ns (the interquartile mean of
 * those rounds' times) and min_ns (their fastest) come from that re-timing;
 * CHOSEN: the contender that won the duels that end tuning an instance (see
 * tuner/tuner.c, retime_contenders). */
enum { KILN_REC_DISAGREE = 1, KILN_REC_VERIFIED = 2, KILN_REC_SECOND = 4, KILN_REC_RETIMED = 8, KILN_REC_THIRD = 16, KILN_REC_CHOSEN = 32 };

/* How an instance's records rank for "best" (kiln_db_pick_best, every
 * lookup, `kiln db show`). A single measurement's fastest repeat
 * (kiln_record_ns) is what screens candidates: measured at different moments
 * on a shared machine, interference only adds time. But it is a poor judge
 * between close candidates: on POCL some kernels are bimodal (a winner by
 * fastest repeat read 36 us fastest / 75 us median against a runner-up's
 * 47 / 59 us, and `kiln db verify --retime`, timing the two together again,
 * failed 7 of 10 idle runs). So the contenders for best are timed
 * again together in alternating rounds (KILN_REC_RETIMED), where all of them
 * meet the same noise, and a re-timed record ranks by its typical time there
 * (median_ns: the interquartile mean of those rounds). The contender that
 * then won its duels (KILN_REC_CHOSEN) ranks first; re-timed records rank
 * before any record that was not (they took part in a fair comparison; the
 * others only in a screening), then by that time; the rest by kiln_record_ns. */
static inline int kiln_record_retimed(const kiln_record *r) { return (r->flags & KILN_REC_RETIMED) && r->median_ns > 0; }
static inline double kiln_record_rank_ns(const kiln_record *r) { return kiln_record_retimed(r) ? r->median_ns : kiln_record_ns(r); }
/* -1, 0, 1 as a ranks before, with, after b */
static inline int kiln_record_rank_cmp(const kiln_record *a, const kiln_record *b) {
  int ca = !(a->flags & KILN_REC_CHOSEN) + !kiln_record_retimed(a), cb = !(b->flags & KILN_REC_CHOSEN) + !kiln_record_retimed(b);
  if (ca != cb) return ca < cb ? -1 : 1;
  double ta = kiln_record_rank_ns(a), tb = kiln_record_rank_ns(b);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}
/* The same order in SQL (three ORDER BY terms). */
#define KILN_RECORD_RANK_SQL "((flags & 32) = 0), ((flags & 8) = 0 OR NOT median_ns > 0), (CASE WHEN (flags & 8) <> 0 AND median_ns > 0 THEN median_ns WHEN min_ns > 0 THEN min_ns ELSE median_ns END)"

/* Relative tolerance of agreement: two medians agree (and an imported record
 * holds on re-timing) when they differ by at most max(KILN_DB_TOLERANCE,
 * 3 x the recorded spread). */
#define KILN_DB_TOLERANCE 0.25

/* Calls fn for every record of a family on a device (any instance, any status). */
int kiln_db_each_family(kiln_db *db, int64_t device, const char *family, void (*fn)(const kiln_record *r, void *ctx), void *ctx, kiln_error *err);

/* Inserts or replaces the record with the same (device, instance, params). */
int kiln_db_put(kiln_db *db, int64_t device, const kiln_record *r, kiln_error *err);
/* Best "ok" record (first by KILN_RECORD_RANK_SQL) for an instance on a device whose
 * source hash matches `source_hash` (NULL: any). KILN_ENOTFOUND if none. */
int kiln_db_best(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue,
                 const char *source_hash, kiln_record *out, kiln_error *err);
/* Calls fn for every record of an instance (any status). */
int kiln_db_each(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue,
                 void (*fn)(const kiln_record *r, void *ctx), void *ctx, kiln_error *err);
/* Marks an instance as fully tuned (resume skips it) / asks whether it is. */
int kiln_db_mark_tuned(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue,
                       int trials, kiln_error *err);
int kiln_db_is_tuned(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue);

/* Compiled-binary cache keyed by a hash of source, options, device and driver. */
int kiln_db_binary_get(kiln_db *db, const char *key, unsigned char **bin, size_t *len);
int kiln_db_binary_put(kiln_db *db, const char *key, const unsigned char *bin, size_t len, kiln_error *err);

/* The device probe's figures as JSON on the device row (set / get; get
 * returns KILN_ENOTFOUND when the device was never probed; *json is malloc'd). */
int kiln_db_set_probe(kiln_db *db, int64_t device, const char *json, kiln_error *err);
int kiln_db_get_probe(kiln_db *db, int64_t device, char **json);

/* Distinct kernel families with records for a device; returns the count (<= cap).
 * The "fusion" records of kiln tune (groupings timed fused and separate) are no
 * kernel family and are left out. */
int kiln_db_families(kiln_db *db, int64_t device, char (*out)[32], int cap);

/* Counts for `kiln db stats`. */
typedef struct kiln_db_counts { int64_t devices, records, ok_records, tuned_instances, binaries; } kiln_db_counts;
int kiln_db_counts_get(kiln_db *db, kiln_db_counts *c, kiln_error *err);

/* Runs PRAGMA integrity_check; 0 if "ok". */
int kiln_db_integrity(kiln_db *db, kiln_error *err);

/* ==== Shared databases (db/share.c) ======================================
 *
 * Layering: a writable user database plus read-only shared databases attached
 * to it (KILN_DB_PATH, ':'-separated). Lookups prefer records measured on this
 * machine, then the best evidence from imported records and shared files for
 * this exact device, then records of the same device family. Writes go only to
 * the user database. Records from another kernel-source hash or kiln version
 * are kept (cost-model priors) but never chosen by a lookup. */

/* Schema version of the file as opened (older files are migrated). */
int kiln_db_schema_on_disk(const kiln_db *db);

/* Opens `path` read-only and attaches it as a shared layer of db (owned by db
 * from then on). A bad file is refused with KILN_EDB, as by kiln_db_open. */
int kiln_db_attach_shared(kiln_db *db, const char *path, kiln_error *err);
/* Attaches every file of a ':'-separated list (NULL or "": none; the user
 * database's own path and empty entries are skipped). Stops at the first error. */
int kiln_db_attach_path_list(kiln_db *db, const char *list, kiln_error *err);
int kiln_db_nshared(const kiln_db *db);
/* kiln_db_open_layered and kiln_db_describe are in kiln.h. */
kiln_db *kiln_db_shared(kiln_db *db, int i);

/* A layered lookup's answer. */
typedef struct kiln_lookup {
  kiln_record rec;       /* the chosen record (for disagreeing measurements: the slowest) */
  char from[512];        /* path of the database it came from */
  int layer;             /* 0 = the user database, i >= 1 = shared database i-1 */
  int exact;             /* 1: this exact device fingerprint; 0: same device family */
  int local;             /* 1: measured on this machine (user database, origin "measured") */
  int needs_verify;      /* 1: imported / shared record for this exact device not yet re-timed here */
} kiln_lookup;

/* The one rule that picks an instance's best record, used by every lookup
 * (kiln_db_best_layered: --db, imported records, KILN_DB_PATH layers) and by
 * `kiln db show`: among the usable records of v (status "ok", not a
 * prediction, positive time, this kiln version, and no "wrong", "nan" or
 * "demoted" row of the same candidate (params and source hash) in the same
 * layer), the first by kiln_record_rank_cmp, where disagreeing measurements of one
 * candidate count with their slowest (the first row carrying it stands for
 * it); ties go to the earlier index. layer (NULL: all one layer) tells which
 * rows came from the same file. Returns the index, or -1 when none is usable. */
int kiln_db_pick_best(const kiln_record *const *v, const int *layer, int n);
/* The source hash that lookups ask of family's records now: the hash of the
 * family's kernel sources as the runtime reads them (kernels/<file> from
 * kernel_dir when it has the file, else the embedded copy; kernel_dir NULL or
 * "": embedded). 0, or KILN_ENOTFOUND (buf "") when this kiln has no tunable
 * family of that name. */
int kiln_db_family_source_hash(const char *family, const char *kernel_dir, char *buf, size_t len);
/* The kernel sources a fusion grouping's variants run, whatever its kind
 * (Conv or GEMM heads and their element-wise tails, im2col, attention with
 * the products, softmax and transposes it replaces): the source hash of
 * every "fusion" record (kiln tune writes it, lookups and `kiln db` read it). */
#define KILN_FUSION_SOURCES "conv.cl,gemm.cl,elementwise.cl,attention.cl,reduce.cl,movement.cl"
/* 1 when r was measured on other kernel sources than hash (from
 * kiln_db_family_source_hash; "" or NULL: no current source, so any record
 * is stale): no lookup uses it, and `kiln db show` marks it stale, never best. */
int kiln_db_record_stale(const kiln_record *r, const char *hash);

/* Best usable record for an instance on the device `info` (whose row in the
 * user database is `device`, or -1): (1) among the user database's "ok"
 * records measured here, kiln_db_pick_best's choice; else (2) among "ok"
 * records for this exact fingerprint that are imported or in shared files
 * (all layers together), kiln_db_pick_best's choice (the same rule, so a
 * second user reading the first user's file, through --db, KILN_DB_PATH or an
 * import, picks what the first user picks); else (3) the same from devices of
 * the same family. Every level needs the
 * current kiln version (and source_hash), and levels 2 and 3 skip candidates demoted or failed on correctness
 * in the user database or in their own file. source_hash NULL: any.
 * Returns 0, KILN_ENOTFOUND, or KILN_EDB. */
int kiln_db_best_layered(kiln_db *db, int64_t device, const kiln_device_info *info, const char *family, int dtype, const char *shape_key,
                         const char *epilogue, const char *source_hash, kiln_lookup *out, kiln_error *err);
/* Records of an instance for this exact device, in all layers, that a lookup
 * does not use because of another source hash or kiln version (priors). */
int kiln_db_count_priors(kiln_db *db, const kiln_device_info *info, const char *family, int dtype, const char *shape_key,
                         const char *epilogue, const char *source_hash);

/* Records the outcome of re-timing an imported record `r` on this machine
 * (user database, device row `device`): passed -> flag VERIFIED; else status
 * "demoted" and the instance's tuned marker is removed (kiln tune measures it
 * again). measured_ns is stored as verified_ns. A record that lives only in a
 * shared file is copied into the user database (origin "imported"). */
int kiln_db_set_verdict(kiln_db *db, int64_t device, const kiln_device_info *info, const kiln_record *r, int passed, double measured_ns, kiln_error *err);

/* Merging by evidence. For each record of src, by device fingerprint and
 * (instance, params): a new candidate is added; for a measurement of the
 * same candidate with the same source hash and kiln version, the better
 * evidence is kept (ok before failed; >= 5 samples; lower spread/sqrt(samples);
 * more samples; lower median) when the two agree within their noise; when
 * they disagree beyond it (or one failed its correctness check), both are kept
 * and flagged KILN_REC_DISAGREE. Records of another source hash or kiln
 * version are kept beside, as priors. Tuned markers, device probes and the
 * binary cache are carried over. Merging a file into itself changes nothing.
 * All in one transaction of dst. */
typedef struct kiln_merge_options {
  int64_t device;        /* src device row to take (-1: all) */
  int import;            /* records measured elsewhere become origin "imported" with source_db set */
  int no_binaries;       /* do not copy the binary cache */
} kiln_merge_options;
typedef struct kiln_merge_stats {
  int64_t devices, added, replaced, kept, duplicate, disagree, priors, tuned, binaries;
} kiln_merge_stats;
int kiln_db_merge(kiln_db *dst, kiln_db *src, const kiln_merge_options *o, kiln_merge_stats *st, kiln_error *err);

/* Writes a new self-contained database file `path` (refused if it exists)
 * from the sources, merged in order, via a temporary file renamed into place:
 * a crash never leaves a partial `path`. */
int kiln_db_write_merged(const char *path, kiln_db *const *srcs, int nsrcs, const kiln_merge_options *o, kiln_merge_stats *st, kiln_error *err);

/* One device row with its counts (kiln db list). */
typedef struct kiln_db_device_row {
  int64_t id;
  char fingerprint[1024], family[512], name[128], vendor[128], platform[128], driver[64];
  int64_t records, ok_records, imported, disagree, demoted;
  int64_t tuned;     /* instances with a usable measured record (KILN_TUNED_INSTANCES_SQL) */
  int64_t searched;  /* instances whose search ran to its end (tuned markers) */
  int has_probe;
} kiln_db_device_row;
int kiln_db_each_device(kiln_db *db, void (*fn)(const kiln_db_device_row *d, void *ctx), void *ctx, kiln_error *err);
/* Finds a device row: a decimal row id, else a case-insensitive substring of
 * the fingerprint (must match one row). KILN_ENOTFOUND / KILN_EINVAL (ambiguous). */
int kiln_db_find_device(kiln_db *db, const char *sel, int64_t *id, kiln_error *err);
/* The description stored with device row id, for a device that need not be
 * present (a shared database's records). is_gpu is read off the fingerprint:
 * a CPU device's leaves its memory size out. */
int kiln_db_device_info(kiln_db *db, int64_t id, kiln_device_info *out, kiln_error *err);
/* Calls fn for every record (device -1: all devices), by device and instance. */
int kiln_db_each_record(kiln_db *db, int64_t device, void (*fn)(int64_t device, const kiln_record *r, void *ctx), void *ctx, kiln_error *err);

/* Counts for kiln db stats beyond kiln_db_counts. */
typedef struct kiln_db_stats {
  kiln_db_counts c;
  int schema, schema_on_disk;
  int64_t measured, imported, predicted, demoted, failed, disagree, verified, other_version, bytes;
  int64_t tuned;     /* instances (all devices) with a usable measured record */
  int64_t searched;  /* instances whose search ran to its end (tuned markers; c.tuned_instances counts fusion's too) */
} kiln_db_stats;

/* What counts as a tuned kernel instance everywhere (kiln run, bench, plan,
 * db coverage, list, stats): one with a record a lookup can use, an "ok"
 * measurement (not a prediction) of this kiln version (bound as ?1) with a
 * positive time; `where` selects the rows of records r. The tuned markers
 * (kiln_db_mark_tuned) say something else: the search ran to its end. */
#define KILN_TUNED_INSTANCES_SQL(where) \
  "SELECT count(*) FROM (SELECT DISTINCT r.device,r.family,r.dtype,r.shape_key,r.epilogue FROM records r WHERE " where \
  " AND r.status='ok' AND r.origin<>'predicted' AND r.median_ns>0 AND r.kiln_version=?1 AND r.family<>'fusion')"
int kiln_db_stats_get(kiln_db *db, kiln_db_stats *s, kiln_error *err);

/* Consistency checks beyond SQLite's integrity check: every record's device
 * exists, "ok" records have a positive median, samples >= 1 and a finite spread,
 * statuses and origins are known, params read "NAME=V,...". Calls fn (if not
 * NULL) per problem; returns the number of problems (or a negative status). */
int kiln_db_check(kiln_db *db, void (*fn)(const char *problem, void *ctx), void *ctx, kiln_error *err);

/* kiln db prune: removes demoted records, tuned markers without an "ok"
 * record, devices with nothing left; with `stale`, records of another kiln
 * version; with `binaries`, the binary cache. Then VACUUM. */
typedef struct kiln_prune_stats { int64_t records, tuned, devices, binaries; } kiln_prune_stats;
int kiln_db_prune(kiln_db *db, int stale, int binaries, kiln_prune_stats *st, kiln_error *err);

/* ==== Verification and coverage (tuner/verify.c) ======================== */

/* One instance re-timed by kiln_verify_imported. */
typedef struct kiln_verify_result {
  char family[32], shape_key[192], epilogue[64], params[256], from[512];
  int dtype;
  double recorded_ns;              /* its time as ranked (kiln_record_rank_ns) */
  double measured_ns;              /* its typical time in the alternating rounds (interquartile mean) */
  double measured_min_ns;          /* its fastest time in those rounds */
  char rival[256];                 /* what it was timed against: the runner-up record's
                                      parameters, else the defaults; "" when neither */
  double rival_ns;                 /* the rival's typical time in the same rounds; < 0 if none */
  double tolerance;                /* noise margin: the larger spread measured in those rounds (>= 5%) */
  double max_err;                  /* vs the CPU reference */
  int passed;                      /* 0 (demoted): wrong, or slower than the rival beyond the margin */
  double rival_min_ns;             /* the rival's fastest time in the same rounds; < 0 if none */
  int noisy;                       /* 1: the rounds stayed noise-dominated (a typical time over 1.5x
                                      the fastest, after retries): not judged on time */
} kiln_verify_result;
typedef struct kiln_verify_options {
  int dry_run;       /* only report; write nothing */
  int all;           /* re-time the chosen record of every instance, not only unverified imported ones */
  double tolerance;  /* 0: KILN_DB_TOLERANCE */
} kiln_verify_options;
/* Re-times, on the session's device, the record that a lookup in db (layers
 * included) picks for each tunable instance of the session's model when it is
 * an imported or shared record for this exact device not verified yet (inputs
 * must be set). Demotion needs evidence: the record's parameters are checked
 * against the CPU reference and timed against the runner-up (else the
 * defaults) in alternating rounds; a record that is wrong, or whose typical
 * time there (the interquartile mean, as the tuner ranks contenders) is
 * slower than its rival's by more than the spread measured in those rounds, is demoted
 * (kiln_db_set_verdict) and the next choice is checked in turn; one that holds
 * is flagged verified. A busy machine makes both slower alike, so a record is
 * never demoted for missing its recorded time. The
 * session uses db afterwards and chooses parameters again on its next run.
 * *out (caller frees) lists what was re-timed. */
int kiln_verify_imported(kiln_session *s, kiln_db *db, const kiln_verify_options *o, kiln_verify_result **out, int *nout, kiln_error *err);

/* Coverage of a model's kernel instances by db (layers included) on the session's device. */
typedef struct kiln_coverage {
  char family[32], shape_key[192], epilogue[64], dtype[16];
  char params[256];          /* of the record a lookup picks, "" if none */
  char default_params[256];  /* the descriptor's defaults */
  char source_hash[24];      /* of the kernel source in this build */
  char origin[16];           /* of the picked record */
  char from[512];            /* its database */
  int nodes;                 /* nodes sharing the instance */
  int found, exact, local, layer, needs_verify, tuned_marker;
  int priors;                /* records kept from another source hash or kiln version */
  double median_ns, spread;
  int samples, flags;
} kiln_coverage;
int kiln_db_coverage(kiln_session *s, kiln_db *db, kiln_coverage **out, int *nout, kiln_error *err);

/* The tuning records as the runtime reads them. runtime/ calls the database
 * only through this table, which the public kiln_session_set_db
 * (db/session_db.c) hands to a session, so runtime/ links without db/
 * (tests/layering.sh, kiln_layer_check_runtime). */
typedef struct kiln_record_source {
  int (*device)(kiln_db *db, const kiln_device_info *info, int64_t *id, kiln_error *err);
  int (*nshared)(const kiln_db *db);
  int (*each)(kiln_db *db, int64_t device, const char *family, int dtype, const char *shape_key, const char *epilogue,
              void (*fn)(const kiln_record *r, void *ctx), void *ctx, kiln_error *err);
  int (*best_layered)(kiln_db *db, int64_t device, const kiln_device_info *info, const char *family, int dtype, const char *shape_key,
                      const char *epilogue, const char *source_hash, kiln_lookup *out, kiln_error *err);
  int (*binary_get)(kiln_db *db, const char *key, unsigned char **bin, size_t *len);
} kiln_record_source;
extern const kiln_record_source kiln_db_records;

#endif /* KILN_DB_H */
