/* cmd_db.c: `kiln db ...`, the tuning-database subcommands: list, show,
 * stats, coverage, export, import, merge, verify, prune. Self-contained
 * option parsing; uses kiln.h and db/kiln_db.h only. Errors are one line
 * "kiln: error: <message>" on stderr; exit 2 for bad input (arguments,
 * missing, refused or corrupt files), 1 for other failures (a check that
 * finds problems, OpenCL errors). Every subcommand takes --json. */
#include "kiln.h"
#include "kiln_db.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXIT_USAGE 2

int kiln_cli_db(int argc, char **argv);

static void db_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void db_error(const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p; p++) if (*p == '\n' || *p == '\r') *p = ' ';
  fflush(stdout);
  fprintf(stderr, "kiln: error: %s\n", msg);
}

static int exit_for(int status) {
  switch (status) {
  case KILN_OK: return 0;
  case KILN_EPARSE: case KILN_EUNSUPPORTED: case KILN_ESHAPE: case KILN_ENOTFOUND:
  case KILN_ENODEVICE: case KILN_EIO: case KILN_ELIMIT: case KILN_EINVAL: case KILN_EDB:
    return EXIT_USAGE;
  default: return 1;
  }
}

static int fail_err(const kiln_error *err, int status) {
  db_error("%s", err->msg[0] ? err->msg : kiln_strerror(status));
  return exit_for(status);
}

static int usage(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- help ----------------------------------------------------------------- */

static const struct sub_help { const char *name, *synopsis, *summary; } SUBS[] = {
  {"list", "[FILE] [--json]", "devices in the database with their record counts"},
  {"show", "[FILE] [--device SEL] [--family NAME] [--all] [--json]", "per kernel instance the best record (--all: every record)"},
  {"stats", "[FILE] [--json]", "schema, counts by origin and status, disagreements, size, integrity"},
  {"coverage", "MODEL.onnx [--db FILE] [--device SEL] [--shape NAME=D0,...]... [--json]",
   "which of the model's kernel instances have records for this device, and from where"},
  {"export", "[FILE] [--device SEL] -o OUT [--with-binaries] [--json]", "write a new database with one device's (or all) records (program binaries only --with-binaries)"},
  {"import", "FILE [--db FILE] [--json]", "merge a shared file into the user database (records become origin \"imported\")"},
  {"merge", "A B [C...] -o OUT [--no-binaries] [--json]", "merge databases by evidence into a new file"},
  {"verify", "FILE [--retime MODEL.onnx]... [--device SEL] [--shape NAME=D0,...]... [--json]",
   "integrity and consistency checks; --retime times the file's records for this device on a model"},
  {"prune", "[FILE] [--stale] [--binaries] [--json]", "drop demoted records, orphaned markers and devices (--stale: other kiln versions)"},
};

static void print_help(FILE *f) {
  fprintf(f, "usage: kiln db <subcommand> [options]\n\nTuning databases: inspect, share, merge and check them.\n\nsubcommands:\n");
  for (size_t i = 0; i < sizeof SUBS / sizeof SUBS[0]; i++) fprintf(f, "  %-9s %s\n            %s\n", SUBS[i].name, SUBS[i].synopsis, SUBS[i].summary);
  fprintf(f, "\nFILE defaults to --db FILE, $KILN_DB, else ~/.cache/kiln/tuning.db (the user database).\n"
             "Shared read-only databases: KILN_DB_PATH=file1:file2 (consulted by coverage, after the user database).\n"
             "--device SEL: for show/export a device row (id from `kiln db list` or a substring of its fingerprint);\n"
             "for coverage/verify the OpenCL device (index, P:D or name substring, default $KILN_DEVICE).\n"
             "Merging keeps, per device fingerprint and candidate, the record with the better evidence; measurements\n"
             "that disagree beyond their noise are both kept and flagged; other kiln/kernel versions are kept as priors.\n"
             "exit status: 0 ok, 2 bad arguments or a missing, refused or corrupt file, 1 other failures.\n");
}

static int usage(const char *sub, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  db_error("%s", msg);
  for (size_t i = 0; sub && i < sizeof SUBS / sizeof SUBS[0]; i++)
    if (!strcmp(SUBS[i].name, sub)) fprintf(stderr, "usage: kiln db %s %s\n", sub, SUBS[i].synopsis);
  if (!sub) fprintf(stderr, "usage: kiln db <list|show|stats|coverage|export|import|merge|verify|prune> [options]   (see 'kiln db --help')\n");
  return EXIT_USAGE;
}

/* ---- JSON ----------------------------------------------------------------- */

static void jstr(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if (*p == '\n') fputs("\\n", stdout);
    else if (*p == '\t') fputs("\\t", stdout);
    else if (*p < 0x20) printf("\\u%04x", *p);
    else putchar(*p);
  }
  putchar('"');
}
static void jnum(double v) {
  if (isfinite(v)) printf("%.9g", v);
  else fputs("null", stdout);
}
static void jkey(const char *k, bool first) { printf("%s\"%s\":", first ? "" : ",", k); }

static void json_record(int64_t device, const kiln_record *r, int best) {
  printf("{\"device\":%lld,\"best\":%s", (long long)device, best ? "true" : "false");
  jkey("family", 0); jstr(r->family);
  jkey("dtype", 0); jstr(kiln_dtype_name(r->dtype));
  jkey("shape_key", 0); jstr(r->shape_key);
  jkey("epilogue", 0); jstr(r->epilogue);
  jkey("params", 0); jstr(r->params);
  jkey("median_ns", 0); jnum(r->median_ns);
  jkey("min_ns", 0); if (r->min_ns > 0) jnum(r->min_ns); else printf("null");
  jkey("spread", 0); jnum(r->spread);
  printf(",\"samples\":%d", r->samples);
  jkey("max_err", 0); jnum(r->max_err);
  jkey("status", 0); jstr(r->status);
  jkey("origin", 0); jstr(r->origin);
  jkey("source_hash", 0); jstr(r->source_hash);
  jkey("kiln_version", 0); jstr(r->kiln_version);
  jkey("source_db", 0); jstr(r->source_db);
  printf(",\"alt\":%d,\"disagree\":%s,\"verified\":%s,\"retimed\":%s,\"looks\":%d,\"verified_ns\":", r->alt,
         r->flags & KILN_REC_DISAGREE ? "true" : "false", r->flags & KILN_REC_VERIFIED ? "true" : "false",
         r->flags & KILN_REC_RETIMED ? "true" : "false", 1 + !!(r->flags & KILN_REC_SECOND) + !!(r->flags & KILN_REC_THIRD));
  if (r->verified_ns > 0) jnum(r->verified_ns); else printf("null");
  printf(",\"created\":%lld}", (long long)r->created);
}

/* ---- option parsing --------------------------------------------------------- */

/* "--name VALUE" / "--name=VALUE": 1 and *val on a match, 0 if not this
 * option, -1 if the value is missing. */
static int optv(int argc, char **argv, int *i, const char *name, const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') { *val = a + n + 1; return 1; }
  if (a[n] != 0) return 0;
  if (*i + 1 >= argc) return -1;
  *val = argv[++*i];
  return 1;
}

typedef struct dbargs {
  const char *sub;
  bool json, all, stale, binaries, no_binaries, with_binaries;
  const char *file, *db, *out, *device, *family;
  const char *pos[64];
  int npos;
  const char *retime[16];
  int nretime;
  kiln_shape_binding shapes[32];
  char shape_names[32][256];
  int nshapes;
} dbargs;

static bool parse_dims(const char *arg, kiln_shape_binding *b, char *nm, size_t nl) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || (size_t)(eq - arg) >= nl) return false;
  memcpy(nm, arg, (size_t)(eq - arg));
  nm[eq - arg] = 0;
  b->name = nm;
  b->rank = 0;
  const char *p = eq + 1;
  while (*p) {
    char *end;
    if (*p < '0' || *p > '9' || b->rank == KILN_MAX_RANK) return false;
    errno = 0;
    long long d = strtoll(p, &end, 10);
    if (errno || (*end && *end != ',')) return false;
    b->dims[b->rank++] = d;
    p = *end ? end + 1 : end;
  }
  return true;
}

/* Parses the options every subcommand knows (each then rejects what it does not use). */
static int parse_args(const char *sub, int argc, char **argv, dbargs *a) {
  memset(a, 0, sizeof *a);
  a->sub = sub;
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r;
    if (!strcmp(argv[i], "--json")) a->json = true;
    else if (!strcmp(argv[i], "--all")) a->all = true;
    else if (!strcmp(argv[i], "--stale")) a->stale = true;
    else if (!strcmp(argv[i], "--binaries")) a->binaries = true;
    else if (!strcmp(argv[i], "--no-binaries")) a->no_binaries = true;
    else if (!strcmp(argv[i], "--with-binaries")) a->with_binaries = true;
    else if ((r = optv(argc, argv, &i, "--db", &v)) != 0) { if (r < 0 || !*v) return usage(sub, "--db needs a file"); a->db = v; }
    else if ((r = optv(argc, argv, &i, "-o", &v)) != 0 || (r = optv(argc, argv, &i, "--output", &v)) != 0) {
      if (r < 0 || !*v) return usage(sub, "-o needs a file");
      a->out = v;
    } else if ((r = optv(argc, argv, &i, "--device", &v)) != 0) { if (r < 0) return usage(sub, "--device needs a value"); a->device = v; }
    else if ((r = optv(argc, argv, &i, "--family", &v)) != 0) { if (r < 0 || !*v) return usage(sub, "--family needs a name"); a->family = v; }
    else if ((r = optv(argc, argv, &i, "--retime", &v)) != 0) {
      if (r < 0 || !*v) return usage(sub, "--retime needs a model file");
      if (a->nretime == 16) return usage(sub, "too many --retime models");
      a->retime[a->nretime++] = v;
    } else if ((r = optv(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0 || a->nshapes == 32 || !parse_dims(v, &a->shapes[a->nshapes], a->shape_names[a->nshapes], sizeof a->shape_names[0]))
        return usage(sub, "--shape needs NAME=D0,D1,... with non-negative integers");
      a->nshapes++;
    } else if (argv[i][0] == '-' && argv[i][1]) return usage(sub, "unknown option '%s'", argv[i]);
    else {
      if (a->npos == 64) return usage(sub, "too many arguments");
      a->pos[a->npos++] = argv[i];
    }
  }
  return 0;
}

/* Rejects options a subcommand does not take; `allowed` lists them ("json,db,..."). */
static int only(const dbargs *a, const char *allowed, int maxpos) {
  struct { bool set; const char *name, *opt; } o[] = {
    {a->all, "all", "--all"}, {a->stale, "stale", "--stale"}, {a->binaries, "binaries", "--binaries"},
    {a->no_binaries, "no-binaries", "--no-binaries"}, {a->with_binaries, "with-binaries", "--with-binaries"}, {a->db != NULL, "db", "--db"}, {a->out != NULL, "o", "-o"},
    {a->device != NULL, "device", "--device"}, {a->family != NULL, "family", "--family"}, {a->nretime > 0, "retime", "--retime"},
    {a->nshapes > 0, "shape", "--shape"},
  };
  for (size_t i = 0; i < sizeof o / sizeof o[0]; i++) {
    if (!o[i].set) continue;
    char key[32];
    snprintf(key, sizeof key, ",%s,", o[i].name);
    char list[256];
    snprintf(list, sizeof list, ",%s,", allowed);
    if (!strstr(list, key)) return usage(a->sub, "option %s does not apply to `kiln db %s`", o[i].opt, a->sub);
  }
  if (a->npos > maxpos) return usage(a->sub, "unexpected argument '%s'", a->pos[maxpos]);
  return 0;
}

/* The database a subcommand works on: FILE, --db, $KILN_DB, default. */
static const char *db_path(const dbargs *a, char *buf, size_t len) {
  if (a->npos > 0) return a->pos[0];
  if (a->db) return a->db;
  return kiln_db_default_path(buf, len);
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
    printf("%s{\"id\":%lld", c->n ? "," : "", (long long)d->id);
    jkey("name", 0); jstr(d->name);
    jkey("vendor", 0); jstr(d->vendor);
    jkey("platform", 0); jstr(d->platform);
    jkey("driver", 0); jstr(d->driver);
    jkey("fingerprint", 0); jstr(d->fingerprint);
    jkey("family", 0); jstr(d->family);
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
  int rc = only(a, "db", 1);
  if (rc) return rc;
  char buf[4096];
  const char *path = db_path(a, buf, sizeof buf);
  kiln_db *db = NULL;
  if ((rc = open_ro(path, &db)) != 0) return rc;
  kiln_error err = {0};
  list_ctx c = {.json = a->json};
  if (a->json) { printf("{\"db\":"); jstr(path); printf(",\"devices\":["); }
  else printf("%s\n%4s  %-40s %8s %8s %7s %8s %8s %7s  %s\n", path, "id", "device", "records", "ok", "tuned", "imported", "disagree", "demoted", "probe");
  rc = kiln_db_each_device(db, list_one, &c, &err);
  if (a->json) printf("]}\n");
  else if (!c.n) printf("(no devices)\n");
  kiln_db_close(db);
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
} show_ctx;

static void us(char *b, size_t n, double ns) {
  if (ns > 0) snprintf(b, n, "%.1f", ns / 1e3);
  else snprintf(b, n, "-");
}

/* One instance's records: the best is marked by kiln_db_pick_best, the rule
 * every lookup uses (the record kiln run, plan and tune pick). */
static void show_flush(show_ctx *c) {
  if (!c->nbuf) return;
  const kiln_record **pv = malloc(sizeof *pv * (size_t)c->nbuf);
  if (!pv) { c->oom = true; c->nbuf = 0; return; }
  for (int i = 0; i < c->nbuf; i++) pv[i] = &c->buf[i];
  int best = kiln_db_pick_best(pv, NULL, c->nbuf);
  free(pv);
  const kiln_record *h = &c->buf[best >= 0 ? best : 0];
  if (!c->json) {
    printf("%4lld  %-7s %-6s %s%s%s\n", (long long)c->dev, h->family, kiln_dtype_name(h->dtype), h->shape_key, h->epilogue[0] ? " + " : "", h->epilogue);
  }
  for (int i = 0; i < c->nbuf; i++) {
    const kiln_record *r = &c->buf[i];
    if (!c->all && i != (best >= 0 ? best : 0)) continue;
    if (c->json) {
      if (c->n) putchar(',');
      json_record(c->dev, r, i == best);
      c->n++;
      continue;
    }
    char mn[32], md[32], flags[96] = "";
    us(mn, sizeof mn, r->min_ns);
    us(md, sizeof md, r->median_ns);
    if (i == best) strcat(flags, " best");
    else if (!c->all) strcat(flags, " (no usable record)");
    if (r->flags & KILN_REC_DISAGREE) strcat(flags, " disagree");
    if (r->flags & KILN_REC_VERIFIED) strcat(flags, " verified");
    if (r->flags & KILN_REC_RETIMED) strcat(flags, " retimed");
    if (strcmp(r->kiln_version, KILN_VERSION)) strcat(flags, " prior");
    printf("      %10s %10s %5.1f%% n=%-3d %-8s %-9s %s%s%s%s%s%s\n", mn, md, r->spread * 100, r->samples, r->status, r->origin, r->params,
           flags[0] ? "  [" : "", flags[0] ? flags + 1 : "", flags[0] ? "]" : "", r->source_db[0] ? " from " : "", r->source_db);
    c->n++;
  }
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
  int rc = only(a, "db,device,family,all", 1);
  if (rc) return rc;
  char buf[4096];
  const char *path = db_path(a, buf, sizeof buf);
  kiln_db *db = NULL;
  if ((rc = open_ro(path, &db)) != 0) return rc;
  kiln_error err = {0};
  int64_t dev = -1;
  if (a->device && (rc = kiln_db_find_device(db, a->device, &dev, &err)) != 0) { kiln_db_close(db); return fail_err(&err, rc); }
  show_ctx c = {.json = a->json, .all = a->all, .family = a->family, .dev = -1};
  if (a->json) { printf("{\"db\":"); jstr(path); printf(",\"all\":%s,\"records\":[", a->all ? "true" : "false"); }
  else printf("%s: %s per kernel instance; the best is what kiln run, plan and tune pick\n%4s  %-7s %-6s %s\n      %10s %10s %6s %-5s %-8s %-9s %s\n", path,
              a->all ? "every record" : "the best record (--all: every record)", "dev", "family", "dtype", "instance [+ fused epilogue]", "min us",
              "median us", "spread", "n", "status", "origin", "parameters");
  rc = kiln_db_each_record(db, dev, show_one, &c, &err);
  show_flush(&c);
  free(c.buf);
  if (c.oom && !rc) { db_error("out of memory"); kiln_db_close(db); return 1; }
  if (a->json) printf("]}\n");
  else if (!c.n) printf("(no records)\n");
  kiln_db_close(db);
  return rc ? fail_err(&err, rc) : 0;
}

/* ---- stats ------------------------------------------------------------------ */

static int cmd_stats(dbargs *a) {
  int rc = only(a, "db", 1);
  if (rc) return rc;
  char buf[4096];
  const char *path = db_path(a, buf, sizeof buf);
  kiln_db *db = NULL;
  if ((rc = open_ro(path, &db)) != 0) return rc;
  kiln_error err = {0}, ierr = {0};
  kiln_db_stats s;
  rc = kiln_db_stats_get(db, &s, &err);
  int integ = rc ? 0 : kiln_db_integrity(db, &ierr);
  kiln_db_close(db);
  if (rc) return fail_err(&err, rc);
  if (a->json) {
    printf("{\"db\":"); jstr(path);
    printf(",\"schema\":%d,\"schema_on_disk\":%d,\"devices\":%lld,\"records\":%lld,\"ok_records\":%lld,\"failed\":%lld,\"demoted\":%lld", s.schema,
           s.schema_on_disk, (long long)s.c.devices, (long long)s.c.records, (long long)s.c.ok_records, (long long)s.failed, (long long)s.demoted);
    printf(",\"measured\":%lld,\"imported\":%lld,\"predicted\":%lld,\"disagree\":%lld,\"verified\":%lld,\"other_version\":%lld", (long long)s.measured,
           (long long)s.imported, (long long)s.predicted, (long long)s.disagree, (long long)s.verified, (long long)s.other_version);
    printf(",\"tuned_instances\":%lld,\"searched_instances\":%lld,\"binaries\":%lld,\"bytes\":%lld,\"integrity\":", (long long)s.tuned, (long long)s.searched, (long long)s.c.binaries,
           (long long)s.bytes);
    jstr(integ ? ierr.msg : "ok");
    printf("}\n");
  } else {
    printf("database:   %s\n", path);
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

static uint64_t rng(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Loads a model and makes a session on d with seeded random inputs. */
static int model_session(const char *path, const dbargs *a, kiln_device *d, kiln_model **m, kiln_session **s) {
  kiln_error err = {0};
  kiln_load_options lo = {.shapes = a->shapes, .nshapes = a->nshapes};
  int rc;
  if ((rc = kiln_model_load(path, &lo, m, &err)) != 0) return fail_err(&err, rc);
  if ((rc = kiln_model_check_supported(*m, &err)) != 0) return fail_err(&err, rc);
  if ((rc = kiln_session_create(*m, d, s, &err)) != 0) return fail_err(&err, rc);
  uint64_t seed = 0;
  for (int i = 0; i < kiln_model_num_inputs(*m); i++) {
    kiln_value_info vi;
    kiln_model_input_info(*m, i, &vi);
    for (int k = 0; k < vi.rank; k++)
      if (vi.dims[k] < 0) { db_error("%s: input '%s' has an unbound dimension; bind it with --shape", path, vi.name); return EXIT_USAGE; }
    if (vi.rank < 0) { db_error("%s: input '%s' has an unknown rank; bind it with --shape", path, vi.name); return EXIT_USAGE; }
    kiln_tensor *t = kiln_tensor_new(vi.dtype, vi.rank, vi.dims);
    if (!t) { db_error("%s: input '%s': unsupported type or shape", path, vi.name); return EXIT_USAGE; }
    int64_t n = kiln_tensor_numel(t);
    for (int64_t k = 0; k < n; k++) {
      uint64_t r = rng(&seed);
      double u = (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0;
      switch (t->dtype) {
      case KILN_DT_FLOAT: ((float *)t->data)[k] = (float)u; break;
      case KILN_DT_DOUBLE: ((double *)t->data)[k] = u; break;
      case KILN_DT_INT64: ((int64_t *)t->data)[k] = (int64_t)(r % 10); break;
      case KILN_DT_INT32: ((int32_t *)t->data)[k] = (int32_t)(r % 10); break;
      case KILN_DT_BOOL: case KILN_DT_UINT8: ((uint8_t *)t->data)[k] = (uint8_t)(r & 1); break;
      default: break; /* zeros */
      }
    }
    rc = kiln_session_set_input(*s, vi.name, t, &err);
    kiln_tensor_free(t);
    if (rc) return fail_err(&err, rc);
  }
  return 0;
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
  int rc = only(a, "db,device,shape", 1);
  if (rc) return rc;
  if (a->npos < 1) return usage(a->sub, "no model given");
  const char *model = a->pos[0];
  char buf[4096];
  const char *path = a->db ? a->db : kiln_db_default_path(buf, sizeof buf);
  kiln_error err = {0};
  kiln_db *db = NULL;
  kiln_device *d = NULL;
  kiln_model *m = NULL;
  kiln_session *s = NULL;
  kiln_coverage *cv = NULL;
  int n = 0;
  if ((rc = kiln_db_open_layered(path, 1, getenv("KILN_DB_PATH"), &db, &err)) != 0) {
    if (rc == KILN_ENOTFOUND && !strstr(err.msg, "shared")) { db_error("%s: no such tuning database", path); return EXIT_USAGE; }
    return fail_err(&err, rc);
  }
  const char *devsel = a->device ? a->device : getenv("KILN_DEVICE");
  if ((rc = kiln_device_open(devsel, &d, &err)) != 0) { rc = fail_err(&err, rc); goto done; }
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
      printf("%s{\"family\":", i ? "," : ""); jstr(c->family);
      jkey("dtype", 0); jstr(c->dtype);
      jkey("shape_key", 0); jstr(c->shape_key);
      jkey("epilogue", 0); jstr(c->epilogue);
      printf(",\"nodes\":%d,\"found\":%s,\"exact\":%s,\"local\":%s,\"layer\":%d,\"needs_verify\":%s,\"tuned_marker\":%s,\"priors\":%d", c->nodes,
             c->found ? "true" : "false", c->exact ? "true" : "false", c->local ? "true" : "false", c->layer, c->needs_verify ? "true" : "false",
             c->tuned_marker ? "true" : "false", c->priors);
      jkey("params", 0); if (c->found) jstr(c->params); else printf("null");
      jkey("origin", 0); if (c->found) jstr(c->origin); else printf("null");
      jkey("from", 0); if (c->found) jstr(c->from); else printf("null");
      jkey("median_ns", 0); if (c->found) jnum(c->median_ns); else printf("null");
      printf(",\"disagree\":%s}", c->flags & KILN_REC_DISAGREE ? "true" : "false");
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
  int rc = only(a, "db,device,o,no-binaries,with-binaries", 1);
  if (rc) return rc;
  if (!a->out) return usage(a->sub, "-o OUT is required");
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
  int rc = only(a, "db,no-binaries", 1);
  if (rc) return rc;
  if (a->npos < 1) return usage(a->sub, "no file given");
  const char *file = a->pos[0];
  char buf[4096];
  const char *path = a->db ? a->db : kiln_db_default_path(buf, sizeof buf);
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
  int rc = only(a, "o,no-binaries", 64);
  if (rc) return rc;
  if (a->npos < 2) return usage(a->sub, "merge needs at least two files");
  if (!a->out) return usage(a->sub, "-o OUT is required");
  kiln_db *srcs[64] = {0};
  for (int i = 0; i < a->npos && !rc; i++) rc = open_ro(a->pos[i], &srcs[i]);
  kiln_error err = {0};
  kiln_merge_stats st;
  kiln_merge_options o = {.device = -1, .no_binaries = a->no_binaries};
  int lrc = rc ? 0 : kiln_db_write_merged(a->out, srcs, a->npos, &o, &st, &err);
  for (int i = 0; i < a->npos; i++) kiln_db_close(srcs[i]);
  if (rc) return rc;
  if (lrc) return fail_err(&err, lrc);
  if (a->json) {
    printf("{\"inputs\":[");
    for (int i = 0; i < a->npos; i++) { if (i) putchar(','); jstr(a->pos[i]); }
    printf("],\"output\":"); jstr(a->out); putchar(','); print_merge_stats(&st, 1); printf("}\n");
  } else {
    printf("merged %d files into %s\n", a->npos, a->out);
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
  int rc = only(a, "device,retime,shape", 1);
  if (rc) return rc;
  if (a->npos < 1) return usage(a->sub, "no file given");
  const char *file = a->pos[0];
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
  if (a->nretime && !integ) {
    const char *devsel = a->device ? a->device : getenv("KILN_DEVICE");
    if ((rc = kiln_device_open(devsel, &d, &err)) != 0) { if (a->json) printf("]}\n"); kiln_db_close(db); return fail_err(&err, rc); }
    for (int k = 0; k < a->nretime && !rc; k++) {
      kiln_model *m = NULL;
      kiln_session *s = NULL;
      kiln_verify_result *vr = NULL;
      int nv = 0;
      if ((rc = model_session(a->retime[k], a, d, &m, &s)) == 0) {
        kiln_verify_options vo = {.dry_run = 1, .all = 1};
        if ((rc = kiln_verify_imported(s, db, &vo, &vr, &nv, &err)) != 0) rc = fail_err(&err, rc);
      }
      for (int i = 0; i < nv; i++) {
        kiln_verify_result *r = &vr[i];
        retimed++;
        missed += !r->passed;
        if (a->json) {
          if (retimed > 1) putchar(',');
          printf("{\"model\":"); jstr(a->retime[k]);
          jkey("family", 0); jstr(r->family);
          jkey("shape_key", 0); jstr(r->shape_key);
          jkey("params", 0); jstr(r->params);
          jkey("recorded_ns", 0); jnum(r->recorded_ns);
          jkey("measured_ns", 0); jnum(r->measured_ns);
          jkey("tolerance", 0); jnum(r->tolerance);
          jkey("measured_min_ns", 0); jnum(r->measured_min_ns);
          jkey("rival", 0); jstr(r->rival);
          jkey("rival_ns", 0); if (r->rival_ns > 0) jnum(r->rival_ns); else printf("null");
          printf(",\"passed\":%s}", r->passed ? "true" : "false");
        } else
          printf("retime %-7s %s%s%s: %s\n    fastest %.1f us vs %.1f us for %s in the same rounds (margin %.0f%%; recorded median %.1f us, now %.1f us): %s\n",
                 r->family, r->shape_key, r->epilogue[0] ? " + " : "", r->epilogue, r->params, r->measured_min_ns / 1e3, r->rival_ns / 1e3,
                 r->rival[0] ? r->rival : "(no rival)", r->tolerance * 100, r->recorded_ns / 1e3, r->measured_ns / 1e3,
                 r->passed ? "holds" : r->max_err > 1e-3 ? "WRONG" : "SLOWER than its rival");
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
    if (a->nretime) printf("re-timed %d record%s on this device against their runners-up: %d hold, %d do not\n", retimed, retimed == 1 ? "" : "s", retimed - missed, missed);
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
  int rc = only(a, "db,stale,binaries", 1);
  if (rc) return rc;
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

/* ---- dispatch ------------------------------------------------------------------ */

int kiln_cli_db(int argc, char **argv) {
  if (argc < 1) return usage(NULL, "no subcommand given");
  const char *sub = argv[0];
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { print_help(stdout); return 0; }
  static const struct { const char *name; int (*fn)(dbargs *a); } T[] = {
    {"list", cmd_list}, {"show", cmd_show}, {"stats", cmd_stats}, {"coverage", cmd_coverage}, {"export", cmd_export},
    {"import", cmd_import}, {"merge", cmd_merge}, {"verify", cmd_verify}, {"prune", cmd_prune},
  };
  for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
    if (strcmp(T[i].name, sub)) continue;
    dbargs *a = malloc(sizeof *a);
    if (!a) { db_error("out of memory"); return 1; }
    int rc = parse_args(sub, argc - 1, argv + 1, a);
    if (!rc) rc = T[i].fn(a);
    free(a);
    return rc;
  }
  return usage(NULL, "unknown subcommand '%s'", sub);
}
