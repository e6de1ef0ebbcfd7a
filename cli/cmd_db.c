/* cmd_db.c: `kiln db ...`, the tuning-database subcommands: list, show,
 * stats, coverage, export, import, merge, verify, prune, each with its own
 * option table (cli/opts.h); uses kiln.h and db/kiln_db.h only. Errors are one line
 * "kiln: error: <message>" on stderr; exit 2 for bad input (arguments,
 * missing, refused or corrupt files), 1 for other failures (a check that
 * finds problems, OpenCL errors). Every subcommand takes --json. */
#include "kiln_cli.h"
#include "kiln_db.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2
#define db_error kiln_cli__error
#define fail_err kiln_cli__fail

/* ---- JSON ----------------------------------------------------------------- */

static void jstr(const char *s) { kiln_cli__json_str(stdout, s); }

static void json_record(int64_t device, const kiln_record *r, int best, int stale) {
  kiln_cli__jprintf(stdout, "{\"device\":%L,\"best\":%b,\"stale\":%b,\"family\":%s,\"dtype\":%s,\"shape_key\":%s,\"epilogue\":%s,\"params\":%s,", (long long)device, best != 0,
                    stale != 0, r->family, kiln_dtype_name(r->dtype), r->shape_key, r->epilogue, r->params);
  kiln_cli__jprintf(stdout, "\"median_ns\":%g,\"min_ns\":%g,\"spread\":%g,\"samples\":%d,\"max_err\":%g,\"status\":%s,\"origin\":%s,",
                    r->median_ns, r->min_ns > 0 ? r->min_ns : NAN, r->spread, r->samples, r->max_err, r->status, r->origin);
  kiln_cli__jprintf(stdout, "\"source_hash\":%s,\"kiln_version\":%s,\"source_db\":%s,\"alt\":%d,\"disagree\":%b,\"verified\":%b,\"retimed\":%b,\"chosen\":%b,",
                    r->source_hash, r->kiln_version, r->source_db, r->alt, (r->flags & KILN_REC_DISAGREE) != 0, (r->flags & KILN_REC_VERIFIED) != 0,
                    (r->flags & KILN_REC_RETIMED) != 0, (r->flags & KILN_REC_CHOSEN) && !stale);
  kiln_cli__jprintf(stdout, "\"looks\":%d,\"verified_ns\":%g,\"created\":%L}", 1 + !!(r->flags & KILN_REC_SECOND) + !!(r->flags & KILN_REC_THIRD),
                    r->verified_ns > 0 ? r->verified_ns : NAN, (long long)r->created);
}

/* ---- arguments ---------------------------------------------------------------- */

/* The arguments of every subcommand; each one's table fills what it takes. */
typedef struct dbargs {
  const kiln_cli_cmd *sub;
  kiln_cli_list pos, retime;
  kiln_cli_shapes shapes;
  bool json, all, stale, binaries, no_binaries, with_binaries;
  const char *db, *out, *device, *family;
  kiln_db *h;           /* the subcommand's database, for those cmd_db opens read-only */
  const char *path;     /* its path */
  char pathbuf[4096];
} dbargs;

/* The database a subcommand works on: FILE, --db, $KILN_DB, default. */
static const char *db_path(const dbargs *a, char *buf, size_t len) {
  if (a->pos.n > 0) return a->pos.v[0];
  if (a->db) return a->db;
  return kiln_cli__default_db(buf, len);
}

static int open_ro(const char *path, kiln_db **db) {
  kiln_error err = {0};
  int rc = kiln_db_open(path, KILN_DB_READONLY, db, &err);
  if (rc == KILN_ENOTFOUND) { db_error("%s: no such tuning database", path); return EXIT_USAGE; }
  return rc ? fail_err(&err, rc) : 0;
}

/* ---- list ------------------------------------------------------------------- */

typedef struct { bool json; int n; } list_ctx;

static void list_one(const kiln_db_device_row *d, void *ctx) {
  list_ctx *c = ctx;
  if (c->json) {
    kiln_cli__jprintf(stdout, "%r{\"id\":%L,\"name\":%s,\"vendor\":%s,\"platform\":%s,\"driver\":%s,\"fingerprint\":%s,\"family\":%s", c->n ? "," : "",
                      (long long)d->id, d->name, d->vendor, d->platform, d->driver, d->fingerprint, d->family);
    printf(",\"searched_instances\":%lld", (long long)d->searched);
    printf(",\"records\":%lld,\"ok_records\":%lld,\"tuned_instances\":%lld,\"imported\":%lld,\"disagree\":%lld,\"demoted\":%lld,\"probe\":%s}",
           (long long)d->records, (long long)d->ok_records, (long long)d->tuned, (long long)d->imported, (long long)d->disagree,
           (long long)d->demoted, d->has_probe ? "true" : "false");
  } else {
    printf("%4lld  %-40.40s %8lld %8lld %7lld %8lld %8lld %7lld  %s\n", (long long)d->id, d->name, (long long)d->records, (long long)d->ok_records,
           (long long)d->tuned, (long long)d->imported, (long long)d->disagree, (long long)d->demoted, d->has_probe ? "yes" : "no");
    printf("      %s\n", d->fingerprint);
  }
  c->n++;
}

static int cmd_list(dbargs *a) {
  int rc = 0; /* a->h: opened read-only by cmd_db */
  kiln_error err = {0};
  list_ctx c = {.json = a->json};
  if (a->json) { printf("{\"db\":"); jstr(a->path); printf(",\"devices\":["); }
  else printf("%s\n%4s  %-40s %8s %8s %7s %8s %8s %7s  %s\n", a->path, "id", "device", "records", "ok", "tuned", "imported", "disagree", "demoted", "probe");
  rc = kiln_db_each_device(a->h, list_one, &c, &err);
  if (a->json) printf("]}\n");
  else if (!c.n) printf("(no devices)\n");
  return rc ? fail_err(&err, rc) : 0;
}

/* ---- show ------------------------------------------------------------------- */

typedef struct {
  bool json, all;
  const char *family;
  int n;
  int64_t dev;          /* device of the buffered instance */
  kiln_record *buf;     /* the records of one instance (in listing order) */
  int nbuf, cap;
  bool oom;
  const char *kernel_dir; /* where lookups read kernel sources (KILN_KERNEL_DIR; NULL: embedded) */
  char hfamily[32];     /* the family whose current source hash is hash */
  char hash[32];
} show_ctx;

static void us(char *b, size_t n, double ns) {
  if (ns > 0) snprintf(b, n, "%.1f", ns / 1e3);
  else snprintf(b, n, "-");
}

/* One record's line of `db show` (under its instance's line). */
static void show_record(const kiln_record *r, bool best, bool stale, bool all) {
  char mn[32], md[32], flags[96] = "";
  us(mn, sizeof mn, r->min_ns);
  us(md, sizeof md, r->median_ns);
  if (best) strcat(flags, " best");
  else if (!all) strcat(flags, " (no usable record)");
  if (r->flags & KILN_REC_DISAGREE) strcat(flags, " disagree");
  if (r->flags & KILN_REC_VERIFIED) strcat(flags, " verified");
  if (r->flags & KILN_REC_RETIMED) strcat(flags, " retimed");
  if ((r->flags & KILN_REC_CHOSEN) && !stale) strcat(flags, " chosen"); /* its flag counts for nothing now */
  if (strcmp(r->kiln_version, KILN_VERSION)) strcat(flags, " prior");
  if (stale) strcat(flags, " stale");
  printf("      %10s %10s %5.1f%% n=%-3d %-8s %-9s %s%s%s%s%s%s\n", mn, md, r->spread * 100, r->samples, r->status, r->origin, r->params,
         flags[0] ? "  [" : "", flags[0] ? flags + 1 : "", flags[0] ? "]" : "", r->source_db[0] ? " from " : "", r->source_db);
}

/* One instance's records: the best is marked by kiln_db_pick_best, the rule
 * every lookup uses (the record kiln run, plan and tune pick), over the
 * records of the current kernel sources, which are all a lookup reads (the
 * others are marked stale). */
static void show_flush(show_ctx *c) {
  if (!c->nbuf) return;
  const kiln_record **pv = malloc(sizeof *pv * (size_t)c->nbuf);
  int *at = malloc(sizeof *at * (size_t)c->nbuf);
  char *stale = malloc((size_t)c->nbuf);
  if (!pv || !at || !stale) { free(pv); free(at); free(stale); c->oom = true; c->nbuf = 0; return; }
  if (strcmp(c->hfamily, c->buf[0].family)) {
    snprintf(c->hfamily, sizeof c->hfamily, "%s", c->buf[0].family);
    kiln_db_family_source_hash(c->hfamily, c->kernel_dir, c->hash, sizeof c->hash);
  }
  int n = 0;
  for (int i = 0; i < c->nbuf; i++) {
    stale[i] = (char)kiln_db_record_stale(&c->buf[i], c->hash);
    if (!stale[i]) { at[n] = i; pv[n++] = &c->buf[i]; }
  }
  int best = kiln_db_pick_best(pv, NULL, n);
  if (best >= 0) best = at[best];
  free(pv);
  free(at);
  const kiln_record *h = &c->buf[best >= 0 ? best : 0];
  if (!c->json)
    printf("%4lld  %-7s %-6s %s%s%s\n", (long long)c->dev, h->family, kiln_dtype_name(h->dtype), h->shape_key, h->epilogue[0] ? " + " : "", h->epilogue);
  for (int i = 0; i < c->nbuf; i++) {
    if (!c->all && i != (best >= 0 ? best : 0)) continue;
    if (c->json) {
      if (c->n) putchar(',');
      json_record(c->dev, &c->buf[i], i == best, stale[i]);
    } else show_record(&c->buf[i], i == best, stale[i], c->all);
    c->n++;
  }
  free(stale);
  c->nbuf = 0;
}

static void show_one(int64_t device, const kiln_record *r, void *ctx) {
  show_ctx *c = ctx;
  if (c->family && strcmp(c->family, r->family)) return;
  const kiln_record *p = c->nbuf ? &c->buf[0] : NULL;
  if (p && (device != c->dev || strcmp(p->family, r->family) || p->dtype != r->dtype || strcmp(p->shape_key, r->shape_key) || strcmp(p->epilogue, r->epilogue)))
    show_flush(c);
  if (c->nbuf == c->cap) {
    int cap = c->cap ? c->cap * 2 : 16;
    kiln_record *nb = realloc(c->buf, sizeof *nb * (size_t)cap);
    if (!nb) { c->oom = true; return; }
    c->buf = nb;
    c->cap = cap;
  }
  c->dev = device;
  c->buf[c->nbuf++] = *r;
}

static int cmd_show(dbargs *a) {
  int rc = 0; /* a->h: opened read-only by cmd_db */
  kiln_error err = {0};
  int64_t dev = -1;
  if (a->device && (rc = kiln_db_find_device(a->h, a->device, &dev, &err)) != 0) return fail_err(&err, rc);
  show_ctx c = {.json = a->json, .all = a->all, .family = a->family, .dev = -1, .kernel_dir = kiln_cli_env.kernel_dir};
  if (a->json) { printf("{\"db\":"); jstr(a->path); printf(",\"all\":%s,\"records\":[", a->all ? "true" : "false"); }
  else printf("%s: %s per kernel instance; the best is what kiln run, plan and tune pick, never a stale one\n"
              "(stale: measured on other kernel sources than this kiln's, which no lookup reads; typical: the median of a record's\n"
              " repeats, or for contenders re-timed together, marked retimed, the interquartile mean of those rounds, which ranks them first)\n"
              "%4s  %-7s %-6s %s\n      %10s %10s %6s %-5s %-8s %-9s %s\n",
              a->path, a->all ? "every record" : "the best record (--all: every record)", "dev", "family", "dtype", "instance [+ fused epilogue]",
              "min us", "typical us", "spread", "n", "status", "origin", "parameters");
  rc = kiln_db_each_record(a->h, dev, show_one, &c, &err);
  show_flush(&c);
  free(c.buf);
  if (c.oom && !rc) { db_error("out of memory"); return 1; }
  if (a->json) printf("]}\n");
  else if (!c.n) printf("(no records)\n");
  return rc ? fail_err(&err, rc) : 0;
}

/* ---- stats ------------------------------------------------------------------ */

static int cmd_stats(dbargs *a) {
  int rc = 0; /* a->h: opened read-only by cmd_db */
  kiln_error err = {0}, ierr = {0};
  kiln_db_stats s;
  rc = kiln_db_stats_get(a->h, &s, &err);
  int integ = rc ? 0 : kiln_db_integrity(a->h, &ierr);
  if (rc) return fail_err(&err, rc);
  if (a->json) {
    printf("{\"db\":"); jstr(a->path);
    printf(",\"schema\":%d,\"schema_on_disk\":%d,\"devices\":%lld,\"records\":%lld,\"ok_records\":%lld,\"failed\":%lld,\"demoted\":%lld", s.schema,
           s.schema_on_disk, (long long)s.c.devices, (long long)s.c.records, (long long)s.c.ok_records, (long long)s.failed, (long long)s.demoted);
    printf(",\"measured\":%lld,\"imported\":%lld,\"predicted\":%lld,\"disagree\":%lld,\"verified\":%lld,\"other_version\":%lld", (long long)s.measured,
           (long long)s.imported, (long long)s.predicted, (long long)s.disagree, (long long)s.verified, (long long)s.other_version);
    printf(",\"tuned_instances\":%lld,\"searched_instances\":%lld,\"binaries\":%lld,\"bytes\":%lld,\"integrity\":", (long long)s.tuned,
           (long long)s.searched, (long long)s.c.binaries,
           (long long)s.bytes);
    jstr(integ ? ierr.msg : "ok");
    printf("}\n");
  } else {
    printf("database:   %s\n", a->path);
    printf("schema:     v%d%s\n", s.schema_on_disk, s.schema_on_disk < s.schema ? " (older; read through an in-memory migration)" : "");
    printf("devices:    %lld\n", (long long)s.c.devices);
    printf("records:    %lld (%lld ok, %lld failed, %lld demoted)\n", (long long)s.c.records, (long long)s.c.ok_records, (long long)s.failed, (long long)s.demoted);
    printf("origins:    %lld measured, %lld imported, %lld predicted\n", (long long)s.measured, (long long)s.imported, (long long)s.predicted);
    printf("evidence:   %lld disagreeing, %lld verified on this machine, %lld from another kiln version (priors)\n", (long long)s.disagree,
           (long long)s.verified, (long long)s.other_version);
    printf("tuned:      %lld instances with a usable measured record (%lld searched to the end)\nbinaries:   %lld\nsize:       %.1f KiB\nintegrity:  %s\n",
           (long long)s.tuned, (long long)s.searched, (long long)s.c.binaries,
           (double)s.bytes / 1024, integ ? ierr.msg : "ok");
  }
  if (integ) { db_error("%s", ierr.msg); return 1; }
  return 0;
}

/* ---- models on this device (coverage, verify --retime) ------------------------ */

/* Loads a model and makes a session on d with seeded random inputs. */
static int model_session(const char *path, const dbargs *a, kiln_device *d, kiln_model **m, kiln_session **s) {
  kiln_error err = {0};
  kiln_load_options lo = {.shapes = a->shapes.b, .nshapes = a->shapes.n, .max_model_bytes = kiln_cli__max_model_bytes(0)};
  kiln_cli__inputs b = {0};
  int rc;
  if ((rc = kiln_model_load(path, &lo, m, &err)) != 0) return fail_err(&err, rc);
  if ((rc = kiln_model_check_supported(*m, &err)) != 0) return fail_err(&err, rc);
  if ((rc = kiln_session_create(*m, d, s, &err)) != 0) return fail_err(&err, rc);
  if ((rc = kiln_cli__bind_inputs(*m, NULL, 0, true, 0, NULL, &b)) == 0) rc = kiln_cli__set_inputs(*s, &b);
  kiln_cli__inputs_free(&b);
  return rc;
}

/* ---- coverage --------------------------------------------------------------- */

static const char *cov_source(const kiln_coverage *c, char *buf, size_t n) {
  if (!c->found) snprintf(buf, n, c->priors ? "none usable (%d prior%s of another version)" : "none", c->priors, c->priors == 1 ? "" : "s");
  else if (c->local) snprintf(buf, n, "measured here");
  else if (!c->exact) snprintf(buf, n, "device family, %s", c->from);
  else if (c->layer == 0) snprintf(buf, n, "imported%s%s", c->needs_verify ? ", not verified yet" : ", verified", "");
  else snprintf(buf, n, "shared %s%s", c->from, c->needs_verify ? " (not verified yet)" : "");
  return buf;
}

static int cmd_coverage(dbargs *a) {
  int rc = 0;
  const char *model = a->pos.v[0];
  char buf[4096];
  const char *path = a->db ? a->db : kiln_cli__default_db(buf, sizeof buf);
  kiln_error err = {0};
  kiln_db *db = NULL;
  kiln_device *d = NULL;
  kiln_model *m = NULL;
  kiln_session *s = NULL;
  kiln_coverage *cv = NULL;
  int n = 0;
  if ((rc = kiln_db_open_layered(path, 1, kiln_cli_env.db_path, &db, &err)) != 0) {
    if (rc == KILN_ENOTFOUND && !strstr(err.msg, "shared")) { db_error("%s: no such tuning database", path); return EXIT_USAGE; }
    return fail_err(&err, rc);
  }
  const char *devsel = a->device; /* --device, else $KILN_DEVICE (the option table) */
  if ((rc = kiln_cli__device_open(devsel, &d, &err)) != 0) { rc = fail_err(&err, rc); goto done; }
  if ((rc = model_session(model, a, d, &m, &s)) != 0) goto done;
  if ((rc = kiln_db_coverage(s, db, &cv, &n, &err)) != 0) { rc = fail_err(&err, rc); goto done; }
  int found = 0, local = 0, tuned = 0; /* tuned: what kiln run and plan count as tuned (a lookup finds a measured record) */
  for (int i = 0; i < n; i++) { found += cv[i].found && cv[i].exact; local += cv[i].local; tuned += cv[i].found; }
  const kiln_device_info *di = kiln_device_get_info(d);
  if (a->json) {
    printf("{\"model\":"); jstr(model);
    printf(",\"device\":"); jstr(di->name);
    printf(",\"db\":"); jstr(path);
    printf(",\"shared\":[");
    for (int i = 0; i < kiln_db_nshared(db); i++) { if (i) putchar(','); jstr(kiln_db_path(kiln_db_shared(db, i))); }
    printf("],\"instances\":%d,\"tuned\":%d,\"covered\":%d,\"measured_here\":%d,\"kernels\":[", n, tuned, found, local);
    for (int i = 0; i < n; i++) {
      kiln_coverage *c = &cv[i];
      kiln_cli__jprintf(stdout, "%r{\"family\":%s,\"dtype\":%s,\"shape_key\":%s,\"epilogue\":%s,\"nodes\":%d,\"found\":%b,\"exact\":%b,\"local\":%b,",
                        i ? "," : "", c->family, c->dtype, c->shape_key, c->epilogue, c->nodes, c->found != 0, c->exact != 0, c->local != 0);
      kiln_cli__jprintf(stdout, "\"layer\":%d,\"needs_verify\":%b,\"tuned_marker\":%b,\"priors\":%d,\"params\":%z,\"origin\":%z,\"from\":%z,",
                        c->layer, c->needs_verify != 0, c->tuned_marker != 0, c->priors, c->found ? c->params : NULL, c->found ? c->origin : NULL,
                        c->found ? c->from : NULL);
      kiln_cli__jprintf(stdout, "\"median_ns\":%g,\"disagree\":%b}", c->found ? c->median_ns : NAN, (c->flags & KILN_REC_DISAGREE) != 0);
    }
    printf("]}\n");
  } else {
    printf("%s on %s: %d of %d kernel instances tuned; %d have records for this exact device (%d measured here)\n", model, di->name, tuned, n, found, local);
    printf("database: %s", path);
    for (int i = 0; i < kiln_db_nshared(db); i++) printf("%s%s", i ? ", " : "; shared: ", kiln_db_path(kiln_db_shared(db, i)));
    printf("\n%-7s %-6s %-44s %5s %-34s %10s  %s\n", "family", "dtype", "instance", "nodes", "parameters", "median us", "from");
    for (int i = 0; i < n; i++) {
      kiln_coverage *c = &cv[i];
      char med[32] = "-", src[700];
      if (c->found) snprintf(med, sizeof med, "%.1f", c->median_ns / 1e3);
      printf("%-7s %-6s %-44.44s %5d %-34.34s %10s  %s%s\n", c->family, c->dtype, c->shape_key, c->nodes, c->found ? c->params : "(defaults)", med,
             cov_source(c, src, sizeof src), c->flags & KILN_REC_DISAGREE ? " [disagreeing measurements]" : "");
    }
  }
done:
  free(cv);
  kiln_session_free(s);
  kiln_model_free(m);
  kiln_device_close(d);
  kiln_db_close(db);
  return rc;
}

/* ---- export / import / merge --------------------------------------------------- */

static void print_merge_stats(const kiln_merge_stats *s, bool json) {
  if (json) {
    printf("\"devices_added\":%lld,\"records_added\":%lld,\"replaced\":%lld,\"kept\":%lld,\"duplicate\":%lld,\"disagree\":%lld,\"priors\":%lld,"
           "\"tuned\":%lld,\"binaries\":%lld", (long long)s->devices, (long long)s->added, (long long)s->replaced, (long long)s->kept, (long long)s->duplicate,
           (long long)s->disagree, (long long)s->priors, (long long)s->tuned, (long long)s->binaries);
  } else {
    printf("records: %lld added, %lld replaced by better evidence, %lld kept (existing evidence better), %lld already present,\n"
           "         %lld disagreeing (both kept, flagged), %lld kept as priors (another kiln or kernel version)\n"
           "devices added: %lld; tuned markers: %lld; binaries added: %lld\n", (long long)s->added, (long long)s->replaced, (long long)s->kept,
           (long long)s->duplicate, (long long)s->disagree, (long long)s->priors, (long long)s->devices, (long long)s->tuned, (long long)s->binaries);
  }
}

static int cmd_export(dbargs *a) {
  int rc = 0;
  if (!a->out) return kiln_cli_usage_error(a->sub, "-o OUT is required");
  char buf[4096];
  const char *path = db_path(a, buf, sizeof buf);
  kiln_db *db = NULL;
  if ((rc = open_ro(path, &db)) != 0) return rc;
  kiln_error err = {0};
  /* program binaries are the machine's cache, not tuning results: left out
   * (most of a tuned file's bytes) unless asked for */
  kiln_merge_options o = {.device = -1, .no_binaries = !a->with_binaries};
  if (a->device && (rc = kiln_db_find_device(db, a->device, &o.device, &err)) != 0) { kiln_db_close(db); return fail_err(&err, rc); }
  kiln_merge_stats st;
  rc = kiln_db_write_merged(a->out, &db, 1, &o, &st, &err);
  kiln_db_close(db);
  if (rc) return fail_err(&err, rc);
  if (a->json) { printf("{\"from\":"); jstr(path); printf(",\"output\":"); jstr(a->out); printf(",\"device\":%lld,", (long long)o.device); print_merge_stats(&st, 1); printf("}\n"); }
  else { printf("exported %s%s to %s\n", a->device ? "one device of " : "", path, a->out); print_merge_stats(&st, 0); }
  return 0;
}

static int cmd_import(dbargs *a) {
  int rc = 0;
  const char *file = a->pos.v[0];
  char buf[4096];
  const char *path = a->db ? a->db : kiln_cli__default_db(buf, sizeof buf);
  kiln_db *src = NULL, *db = NULL;
  kiln_error err = {0};
  if ((rc = open_ro(file, &src)) != 0) return rc;
  if ((rc = kiln_db_open(path, KILN_DB_CREATE | KILN_DB_WRITE, &db, &err)) != 0) { kiln_db_close(src); return fail_err(&err, rc); }
  kiln_merge_options o = {.device = -1, .import = 1, .no_binaries = a->no_binaries};
  kiln_merge_stats st;
  rc = kiln_db_merge(db, src, &o, &st, &err);
  kiln_db_close(src);
  kiln_db_close(db);
  if (rc) return fail_err(&err, rc);
  if (a->json) { printf("{\"file\":"); jstr(file); printf(",\"db\":"); jstr(path); putchar(','); print_merge_stats(&st, 1); printf("}\n"); }
  else {
    printf("imported %s into %s\n", file, path);
    print_merge_stats(&st, 0);
    printf("imported records for this machine's device are re-timed on first use (kiln tune; kiln run --verify-imported)\n");
  }
  return 0;
}

static int cmd_merge(dbargs *a) {
  int rc = 0;
  if (!a->out) return kiln_cli_usage_error(a->sub, "-o OUT is required");
  kiln_db *srcs[64] = {0};
  for (int i = 0; i < a->pos.n && !rc; i++) rc = open_ro(a->pos.v[i], &srcs[i]);
  kiln_error err = {0};
  kiln_merge_stats st;
  kiln_merge_options o = {.device = -1, .no_binaries = a->no_binaries};
  int lrc = rc ? 0 : kiln_db_write_merged(a->out, srcs, a->pos.n, &o, &st, &err);
  for (int i = 0; i < a->pos.n; i++) kiln_db_close(srcs[i]);
  if (rc) return rc;
  if (lrc) return fail_err(&err, lrc);
  if (a->json) {
    printf("{\"inputs\":[");
    for (int i = 0; i < a->pos.n; i++) { if (i) putchar(','); jstr(a->pos.v[i]); }
    printf("],\"output\":"); jstr(a->out); putchar(','); print_merge_stats(&st, 1); printf("}\n");
  } else {
    printf("merged %d files into %s\n", a->pos.n, a->out);
    print_merge_stats(&st, 0);
  }
  return 0;
}

/* ---- verify ------------------------------------------------------------------- */

typedef struct { bool json; int n; } prob_ctx;
static void print_problem(const char *p, void *ctx) {
  prob_ctx *c = ctx;
  if (c->json) { if (c->n) putchar(','); jstr(p); }
  else printf("problem: %s\n", p);
  c->n++;
}

static int cmd_verify(dbargs *a) {
  int rc = 0;
  const char *file = a->pos.v[0];
  kiln_db *db = NULL;
  if ((rc = open_ro(file, &db)) != 0) return rc;
  kiln_error err = {0}, ierr = {0};
  int integ = kiln_db_integrity(db, &ierr);
  int bad = 0, retimed = 0, missed = 0;
  if (a->json) { printf("{\"file\":"); jstr(file); printf(",\"integrity\":"); jstr(integ ? ierr.msg : "ok"); printf(",\"problems\":["); }
  else printf("%s: integrity %s\n", file, integ ? ierr.msg : "ok");
  prob_ctx pc = {.json = a->json};
  int np = integ ? 0 : kiln_db_check(db, print_problem, &pc, &err);
  if (np < 0) { if (a->json) printf("]}\n"); kiln_db_close(db); return fail_err(&err, np); }
  bad = integ != 0 || np > 0;
  if (a->json) printf("],\"retimed\":[");
  kiln_device *d = NULL;
  if (a->retime.n && !integ) {
    const char *devsel = a->device; /* --device, else $KILN_DEVICE (the option table) */
    if ((rc = kiln_cli__device_open(devsel, &d, &err)) != 0) { if (a->json) printf("]}\n"); kiln_db_close(db); return fail_err(&err, rc); }
    for (int k = 0; k < a->retime.n && !rc; k++) {
      kiln_model *m = NULL;
      kiln_session *s = NULL;
      kiln_verify_result *vr = NULL;
      int nv = 0;
      if ((rc = model_session(a->retime.v[k], a, d, &m, &s)) == 0) {
        kiln_verify_options vo = {.dry_run = 1, .all = 1};
        if ((rc = kiln_verify_imported(s, db, &vo, &vr, &nv, &err)) != 0) rc = fail_err(&err, rc);
      }
      for (int i = 0; i < nv; i++) {
        kiln_verify_result *r = &vr[i];
        retimed++;
        missed += !r->passed;
        if (a->json) {
          if (retimed > 1) putchar(',');
          kiln_cli__jprintf(stdout, "{\"model\":%s,\"family\":%s,\"shape_key\":%s,\"params\":%s,\"recorded_ns\":%g,\"measured_ns\":%g,",
                            a->retime.v[k], r->family, r->shape_key, r->params, r->recorded_ns, r->measured_ns);
          kiln_cli__jprintf(stdout, "\"tolerance\":%g,\"measured_min_ns\":%g,\"rival\":%s,\"rival_ns\":%g,\"rival_min_ns\":%g,\"noisy\":%b,\"passed\":%b}",
                            r->tolerance, r->measured_min_ns, r->rival, r->rival_ns > 0 ? r->rival_ns : NAN,
                            r->rival_min_ns > 0 ? r->rival_min_ns : NAN, r->noisy != 0, r->passed != 0);
        } else
          printf("retime %-7s %s%s%s: %s\n    typical %.1f us vs %.1f us for %s in the same rounds (fastest %.1f vs %.1f us; margin %.0f%%;"
                 " recorded %.1f us): %s\n",
                 r->family, r->shape_key, r->epilogue[0] ? " + " : "", r->epilogue, r->params, r->measured_ns / 1e3, r->rival_ns / 1e3,
                 r->rival[0] ? r->rival : "(no rival)", r->measured_min_ns / 1e3, r->rival_min_ns / 1e3, r->tolerance * 100, r->recorded_ns / 1e3,
                 !r->passed ? (r->max_err > 1e-3 ? "WRONG" : "SLOWER than its rival")
                 : r->noisy ? "holds (noise-dominated rounds, another process busy: not judged on time)" : "holds");
      }
      free(vr);
      kiln_session_free(s);
      kiln_model_free(m);
    }
  }
  kiln_device_close(d);
  kiln_db_close(db);
  if (a->json) printf("],\"ok\":%s}\n", !bad && !missed && !rc ? "true" : "false");
  else if (!rc) {
    if (a->retime.n) printf("re-timed %d record%s on this device against their runners-up: %d hold, %d do not\n", retimed, retimed == 1 ? "" : "s", retimed - missed, missed);
    printf("%s\n", bad || missed ? "verify: PROBLEMS FOUND" : "verify: ok");
  }
  if (rc) return rc;
  if (integ) { db_error("%s", ierr.msg); return 1; }
  if (bad) { db_error("%s: %d consistency problem%s", file, np, np == 1 ? "" : "s"); return 1; }
  if (missed) { db_error("%s: %d record%s slower than their runner-up (or wrong) on this device", file, missed, missed == 1 ? "" : "s"); return 1; }
  return 0;
}

/* ---- prune -------------------------------------------------------------------- */

static int cmd_prune(dbargs *a) {
  int rc = 0;
  char buf[4096];
  const char *path = db_path(a, buf, sizeof buf);
  kiln_db *db = NULL;
  kiln_error err = {0};
  rc = kiln_db_open(path, KILN_DB_WRITE, &db, &err);
  if (rc == KILN_ENOTFOUND) { db_error("%s: no such tuning database", path); return EXIT_USAGE; }
  if (rc) return fail_err(&err, rc);
  kiln_prune_stats ps;
  rc = kiln_db_prune(db, a->stale, a->binaries, &ps, &err);
  kiln_db_close(db);
  if (rc) return fail_err(&err, rc);
  if (a->json) {
    printf("{\"db\":"); jstr(path);
    printf(",\"records\":%lld,\"tuned\":%lld,\"devices\":%lld,\"binaries\":%lld}\n", (long long)ps.records, (long long)ps.tuned, (long long)ps.devices,
           (long long)ps.binaries);
  } else
    printf("%s: removed %lld records, %lld tuned markers, %lld devices, %lld binaries\n", path, (long long)ps.records, (long long)ps.tuned,
           (long long)ps.devices, (long long)ps.binaries);
  return 0;
}

/* ---- subcommands and their options --------------------------------------------- */

#define O_JSON KILN_OPT_JSON(dbargs, json, "print one JSON object")
#define O_DB KILN_OPT_DB(dbargs, db, "the user database (default $KILN_DB, else ~/.cache/kiln/tuning.db)")
#define O_OUT                                                                                                               \
  {.name = "--output", .alias = "-o", .kind = KILN_OPT_STRING, .off = offsetof(dbargs, out), .value = "OUT", .nonempty = true,  \
   .err = "-o needs a file", .help = "the database file to write (must not exist)"}
#define O_DEVROW                                                                                                            \
  {.name = "--device", .kind = KILN_OPT_STRING, .off = offsetof(dbargs, device), .value = "SEL",                           \
   .help = "a device row: its id (see `kiln db list`) or a substring of its fingerprint"}
#define O_DEVICE KILN_OPT_DEVICE(dbargs, device, KILN_CLI_DEVICE_HELP)
#define O_NOBIN                                                                                                             \
  {.name = "--no-binaries", .kind = KILN_OPT_FLAG, .off = offsetof(dbargs, no_binaries), .help = "leave cached program binaries out"}
#define O_WITHBIN                                                                                                           \
  {.name = "--with-binaries", .kind = KILN_OPT_FLAG, .off = offsetof(dbargs, with_binaries),                                 \
   .help = "also copy the cached program binaries (left out by default: they are this machine's cache, not tuning results)"}
#define O_SHAPES KILN_OPT_SHAPES(dbargs, shapes, "bind an input's shape or a symbolic dimension of the model")

static const kiln_cli_opt LIST_OPTS[] = {O_DB, O_JSON};
static const kiln_cli_opt SHOW_OPTS[] = {
  O_DB, O_DEVROW,
  {.name = "--family", .kind = KILN_OPT_STRING, .off = offsetof(dbargs, family), .value = "NAME", .nonempty = true, .err = "--family needs a name",
   .help = "only this kernel family (conv, gemm, ...)"},
  {.name = "--all", .kind = KILN_OPT_FLAG, .off = offsetof(dbargs, all), .help = "every record of each instance, not only the best"},
  O_JSON,
};
static const kiln_cli_opt COVERAGE_OPTS[] = {O_DB, O_DEVICE, O_SHAPES, O_JSON};
static const kiln_cli_opt EXPORT_OPTS[] = {O_DB, O_DEVROW, O_OUT, O_WITHBIN, O_NOBIN, O_JSON};
static const kiln_cli_opt IMPORT_OPTS[] = {O_DB, O_NOBIN, O_JSON};
static const kiln_cli_opt MERGE_OPTS[] = {O_OUT, O_NOBIN, O_JSON};
static const kiln_cli_opt VERIFY_OPTS[] = {
  {.name = "--retime", .kind = KILN_OPT_LIST, .off = offsetof(dbargs, retime), .value = "MODEL.onnx", .nonempty = true,
   .err = "--retime needs a model file", .help = "time the file's records for this device on the kernels of this model"},
  O_DEVICE, O_SHAPES, O_JSON,
};
static const kiln_cli_opt PRUNE_OPTS[] = {
  O_DB,
  {.name = "--stale", .kind = KILN_OPT_FLAG, .off = offsetof(dbargs, stale), .help = "also drop records of other kiln versions"},
  {.name = "--binaries", .kind = KILN_OPT_FLAG, .off = offsetof(dbargs, binaries), .help = "also drop cached program binaries"},
  O_JSON,
};

#define FILE_ARG .args = "[FILE]", .max_pos = 1
#define SUB(n, opts_) .name = "db " n, .pos_off = offsetof(dbargs, pos), .opts = opts_, .nopts = KILN_CLI_NOPTS(opts_)
#define FILE_NOTE "FILE defaults to --db FILE, $KILN_DB, else ~/.cache/kiln/tuning.db (the user database).\n"

static const struct db_sub {
  kiln_cli_cmd cmd;
  int (*run)(dbargs *a);
  bool open_ro; /* cmd_db opens the database (FILE, --db, $KILN_DB, default) read-only first */
} SUBS[] = {
  {{SUB("list", LIST_OPTS), FILE_ARG, .summary = "devices in the database with their record counts", .footer = FILE_NOTE}, cmd_list, true},
  {{SUB("show", SHOW_OPTS), FILE_ARG, .summary = "per kernel instance the best record (--all: every record)", .footer = FILE_NOTE}, cmd_show, true},
  {{SUB("stats", LIST_OPTS), FILE_ARG, .summary = "schema, counts by origin and status, disagreements, size, integrity", .footer = FILE_NOTE},
   cmd_stats, true},
  {{SUB("coverage", COVERAGE_OPTS), .args = "MODEL.onnx", .min_pos = 1, .max_pos = 1, .missing = "no model given",
    .flags = KILN_CLI_NEEDS_DEVICE, .summary = "which of the model's kernel instances have records for this device, and from where",
    .footer = "Shared read-only databases: KILN_DB_PATH=file1:file2 (consulted after the user database).\n"}, cmd_coverage},
  {{SUB("export", EXPORT_OPTS), FILE_ARG, .summary = "write a new database with one device's (or all) records (program binaries only with --with-binaries)", .footer = FILE_NOTE}, cmd_export},
  {{SUB("import", IMPORT_OPTS), .args = "FILE", .min_pos = 1, .max_pos = 1, .missing = "no file given",
    .summary = "merge a shared file into the user database (records become origin \"imported\")"}, cmd_import},
  {{SUB("merge", MERGE_OPTS), .args = "A B [C...]", .min_pos = 2, .max_pos = KILN_CLI_MAX_LIST, .missing = "merge needs at least two files",
    .summary = "merge databases by evidence into a new file",
    .footer = "Merging keeps, per device fingerprint and candidate, the record with the better evidence; measurements\n"
              "that disagree beyond their noise are both kept and flagged; other kiln/kernel versions are kept as priors.\n"},
   cmd_merge},
  {{SUB("verify", VERIFY_OPTS), .args = "FILE", .min_pos = 1, .max_pos = 1, .missing = "no file given", .flags = KILN_CLI_USES_DEVICE,
    .summary = "integrity and consistency checks; --retime times the file's records for this device on a model"}, cmd_verify},
  {{SUB("prune", PRUNE_OPTS), FILE_ARG, .summary = "drop demoted records, orphaned markers and devices (--stale: other kiln versions)",
    .footer = FILE_NOTE}, cmd_prune},
};
#define NSUBS ((int)(sizeof SUBS / sizeof SUBS[0]))

const kiln_cli_cmd *const kiln_cli_db_subcommands[] = {
  &SUBS[0].cmd, &SUBS[1].cmd, &SUBS[2].cmd, &SUBS[3].cmd, &SUBS[4].cmd, &SUBS[5].cmd, &SUBS[6].cmd, &SUBS[7].cmd, &SUBS[8].cmd,
};
const int kiln_cli_db_nsubcommands = NSUBS;
_Static_assert(sizeof kiln_cli_db_subcommands / sizeof kiln_cli_db_subcommands[0] == sizeof SUBS / sizeof SUBS[0], "db subcommand list out of sync");

static void print_db_help(FILE *f) {
  fprintf(f, "usage: kiln db <subcommand> [options]\n       kiln db <subcommand> --help\n\n"
             "Tuning databases: inspect, share, merge and check them.\n\nsubcommands:\n");
  for (int i = 0; i < NSUBS; i++) {
    kiln_cli_print_synopsis(&SUBS[i].cmd, f, fprintf(f, "  %-9s", SUBS[i].cmd.name + 3), 12);
    fprintf(f, "            %s\n", SUBS[i].cmd.summary);
  }
  fprintf(f, "\nFILE defaults to --db FILE, $KILN_DB, else ~/.cache/kiln/tuning.db (the user database).\n"
             "Shared read-only databases: KILN_DB_PATH=file1:file2 (consulted by coverage, after the user database).\n"
             "--device SEL: for show/export a device row (id from `kiln db list` or a substring of its fingerprint);\n"
             "for coverage/verify the OpenCL device (index, P:D or name substring, default $KILN_DEVICE).\n"
             "exit status: 0 ok, 2 bad arguments or a missing, refused or corrupt file, 1 other failures.\n");
}

static int db_usage(const char *msg, const char *arg) {
  kiln_cli__error("%s%s%s", msg, arg ? arg : "", arg ? "'" : "");
  fprintf(stderr, "usage: kiln db <list|show|stats|coverage|export|import|merge|verify|prune> [options]   (see 'kiln db --help')\n");
  return EXIT_USAGE;
}

static int cmd_db(int argc, char **argv) {
  const struct db_sub *sub = NULL;
  for (int i = 0; argc > 0 && i < NSUBS; i++)
    if (!strcmp(SUBS[i].cmd.name + 3, argv[0])) sub = &SUBS[i];
  if (!sub) { /* --help anywhere without a known subcommand: the list of them */
    for (int i = 0; i < argc; i++)
      if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { print_db_help(stdout); return 0; }
    return argc < 1 ? db_usage("no subcommand given", NULL) : db_usage("unknown subcommand '", argv[0]);
  }
  dbargs *a = calloc(1, sizeof *a);
  if (!a) { db_error("out of memory"); return 1; }
  a->sub = &sub->cmd;
  int rc = kiln_cli_parse(&sub->cmd, argc - 1, argv + 1, a);
  if (rc) rc = kiln_cli_parse_exit(rc);
  else {
    if (sub->open_ro) rc = open_ro(a->path = db_path(a, a->pathbuf, sizeof a->pathbuf), &a->h);
    if (!rc) rc = sub->run(a);
  }
  kiln_db_close(a->h);
  free(a);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_db = {.name = "db", .fn = cmd_db,
  .args = "<list|show|stats|coverage|export|import|merge|verify|prune> [options]  (kiln db <subcommand> --help)",
  .print_help = print_db_help,
  .summary = "inspect, share, merge and check tuning databases"};
