/* cmd_tune.c: `kiln tune MODEL.onnx`: measures kernel parameters for
 * every tunable kernel instance of a model on this device and stores them
 * in the tuning database; --compare-strategies replays the model strategy
 * on exhaustive times. */
#include "kiln_cli.h"
#include "kiln_db.h"
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct tune_args {
  kiln_cli_list pos, inputs;
  kiln_cli_shapes shapes;
  bool json, nofusion, compare;
  uint64_t seed, max_trials;
  double budget, max_gflop, fusion_close;
  const char *devsel, *dbpath, *strategy, *families, *evict_mb, *precision;
} tune_args;

/* --fusion-close: a factor above 1, or 0 for none (stored as -1). */
static bool parse_fusion_close(const char *v, void *target) {
  char *end = NULL;
  double x = strtod(v, &end);
  if (!*v || *end || !(x == 0 || x > 1)) return false; /* inf: every grouping with a prediction is close */
  *(double *)target = x == 0 ? -1 : x;
  return true;
}

#define A tune_args
static const kiln_cli_opt OPTS[] = {
  KILN_OPT_DB(A, dbpath, "tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db)"),
  {.name = "--budget", .kind = KILN_OPT_DOUBLE, .off = offsetof(A, budget), .value = "SECONDS", .err = "--budget needs a number of seconds",
   .help = "stop after this much time (recorded instances are kept; rerun resumes)"},
  {.name = "--evict-mb", .kind = KILN_OPT_STRING, .off = offsetof(A, evict_mb), .value = "MB",
   .help = "an experiment, off by default: overwrite a buffer of MB megabytes before every timed\n"
           "run, so that candidates do not find their weights in a cache the run before left\n"
           "them in, as a GPU's L2 does between repeats"},
  {.name = "--max-trials", .kind = KILN_OPT_INT, .off = offsetof(A, max_trials), .value = "N", .max = 1000000,
   .err = "--max-trials needs a non-negative integer",
   .help = "candidates measured per kernel instance (default: model ~10%, at most 48; else all)"},
  {.name = "--strategy", .kind = KILN_OPT_STRING, .off = offsetof(A, strategy), .value = "NAME", .choices = "model|exhaustive|random",
   .err = "--strategy must be model, exhaustive or random",
   .help = "model (default: rank the space with the cost model, measure the most promising,\n"
           "refit, repeat; probes the device first if needed), exhaustive or random; then\n"
           "the contenders (within 1.3x of the fastest repeat, at most 16) are timed again\n"
           "together in alternating rounds, and the one with the lowest typical time there\n"
           "(interquartile mean: not one lucky run) is kept"},
  {.name = "--families", .kind = KILN_OPT_STRING, .off = offsetof(A, families), .value = "LIST", .nonempty = true,
   .err = "--families needs a comma list of kernel families",
   .help = "only these kernel families (comma list, e.g. conv,gemm; \"fusion\":\n"
           "the fusion groupings below)"},
  {.name = "--max-gflop", .kind = KILN_OPT_DOUBLE, .off = offsetof(A, max_gflop), .value = "X", .open = true,
   .err = "--max-gflop needs a positive number", .help = "skip instances whose default candidate does more than X GFLOP"},
  {.name = "--compare-strategies", .kind = KILN_OPT_FLAG, .off = offsetof(A, compare),
   .help = "measure every candidate (reusing this device's records of the instance) in\n"
           "three passes, each in its own shuffled order (the fastest counts: a minute of\n"
           "contention does not sink a candidate), the contenders for best once more together,\n"
           "replay the model strategy on those times and print per instance: candidates, how\n"
           "many the model measures, and its pick against the exhaustive best"},
  {.name = "--fusion-close", .kind = KILN_OPT_DOUBLE, .off = offsetof(A, fusion_close), .value = "X", .parse = parse_fusion_close,
   .err = "--fusion-close needs a factor above 1, or 0 for none",
   .help = "after the kernels, time every fusion grouping whose predicted fused and\n"
           "separate times are within a factor X (default 1.5; 0: none; attention\n"
           "groupings at any factor above 1) both ways in the whole model and record\n"
           "both per device and subgraph signature;\n"
           "`kiln run` and `kiln plan` then follow the measurement"},
  KILN_OPT_INPUTS(A, inputs, "as for `kiln run`; unbound inputs are random"),
  KILN_OPT_SHAPES(A, shapes, "bind an input's shape, or a symbolic dimension"),
  KILN_OPT_SEED(A, seed, "seed for the random inputs and the random strategy (default 0)"),
  KILN_OPT_DEVICE(A, devsel, KILN_CLI_DEVICE_HELP),
  KILN_OPT_NOFUSION(A, nofusion, "tune the kernels of the unfused plan"),
  KILN_OPT_PRECISION(A, precision),
  KILN_OPT_JSON(A, json, "print one JSON object with the per-instance table"),
};
#undef A

typedef struct { bool tty, json; int last_instance, last_extra; } tune_ui;

static void tune_progress(const kiln_tune_progress *p, void *ctx) {
  tune_ui *ui = ctx;
  if (ui->json) return;
  char best[32] = "-", dflt[32] = "-";
  if (p->best_ns > 0) snprintf(best, sizeof best, "%.1f us", p->best_ns / 1e3);
  if (p->default_ns > 0) snprintf(dflt, sizeof dflt, "%.1f us", p->default_ns / 1e3);
  const char *ex = p->extra ? "budget left, searching further: " : "";
  if (ui->tty) {
    fprintf(stderr, "\r\033[K%s[%d/%d] %s %s (%.1f%%): trial %d/%d, default %s, best %s, %.0f%% of predicted time covered, ETA %.0f s", ex, p->instance,
            p->ninstances, p->family, p->shape_key, 100 * p->share, p->trial, p->ntrials, dflt, best, 100 * p->covered, p->eta_s);
    if (p->trial == p->ntrials) fputc('\n', stderr);
  } else if (p->trial == p->ntrials || p->instance != ui->last_instance || p->extra != ui->last_extra) {
    /* plain lines when not on a terminal: one when an instance starts and one when it ends */
    fprintf(stderr, "%s[%d/%d] %s %s (%.1f%% of predicted model time): trial %d/%d, default %s, best %s, %.0f%% of predicted time covered, elapsed %.0f s, ETA %.0f s\n",
            ex, p->instance, p->ninstances, p->family, p->shape_key, 100 * p->share, p->trial, p->ntrials, dflt, best, 100 * p->covered, p->elapsed_s, p->eta_s);
  }
  ui->last_instance = p->instance;
  ui->last_extra = p->extra;
}

/* The per-instance table of `kiln tune --compare-strategies`. */
static int print_compare(const char *path, const char *dev, const char *dbpath, const kiln_tune_result *res, int nres, bool json) {
  int n = 0, ncand = 0, nmeas = 0;
  double sum_frac = 0, sum_cold = 0, sum_warm = 0, sum_re = 0;
  int nre = 0;
  if (json) {
    printf("{\"model\":"); kiln_cli__json_str(stdout, path);
    printf(",\"device\":"); kiln_cli__json_str(stdout, dev);
    printf(",\"db\":"); kiln_cli__json_str(stdout, dbpath);
    printf(",\"instances\":[");
  } else {
    printf("\nmodel strategy replayed on the exhaustive times of each instance (ratio = time of the model's pick / exhaustive best):\n");
    printf("(cands: the space, or the compared subset/the space under --max-trials)\n");
    printf("%-6s %-44s %9s %8s %6s %11s %9s %9s %9s  %s\n", "family", "instance", "cands", "measured", "frac", "best us", "cold", "warm",
           "retimed", "model's pick (cold)");
  }
  for (int i = 0; i < nres; i++) {
    const kiln_tune_result *r = &res[i];
    int ok = r->best_ns > 0 && r->cmp_cold_ns > 0 && r->cmp_measured > 0;
    int space = r->cmp_space > 0 ? r->cmp_space : r->candidates;
    double frac = space > 0 ? (double)r->cmp_measured / space : 0;
    double cold = ok ? r->cmp_cold_ns / r->best_ns : NAN, warm = ok && r->cmp_warm_ns > 0 ? r->cmp_warm_ns / r->best_ns : NAN;
    double re = ok && r->cmp_pick_ns > 0 && r->cmp_best_ns > 0 ? r->cmp_pick_ns / r->cmp_best_ns : NAN;
    if (ok) {
      n++; ncand += space; nmeas += r->cmp_measured;
      sum_frac += frac; sum_cold += cold; sum_warm += isnan(warm) ? cold : warm;
      if (!isnan(re)) { sum_re += re; nre++; }
    }
    if (json) {
      printf("%s{\"family\":", i ? "," : ""); kiln_cli__json_str(stdout, r->family);
      printf(",\"shape_key\":"); kiln_cli__json_str(stdout, r->shape_key);
      printf(",\"candidates\":%d,\"compared\":%d,\"covered\":%s,\"model_measured\":%d,\"best_ns\":", r->candidates, space, ok ? "true" : "false", r->cmp_measured);
      kiln_cli__json_num(stdout, r->best_ns);
      printf(",\"best_params\":"); kiln_cli__json_str(stdout, r->params);
      printf(",\"model_params\":"); kiln_cli__json_str(stdout, r->cmp_params);
      printf(",\"cold_ratio\":"); kiln_cli__json_num(stdout, cold);
      printf(",\"warm_ratio\":"); kiln_cli__json_num(stdout, warm);
      printf(",\"retimed_pick_ns\":"); kiln_cli__json_num(stdout, r->cmp_pick_ns);
      printf(",\"retimed_best_ns\":"); kiln_cli__json_num(stdout, r->cmp_best_ns);
      printf("}");
    } else if (ok) {
      char cs[32];
      if (space < r->candidates) snprintf(cs, sizeof cs, "%d/%d", space, r->candidates);
      else snprintf(cs, sizeof cs, "%d", space);
      printf("%-6s %-44.44s %9s %8d %5.1f%% %11.1f %8.3fx %8.3fx %8.3fx  %s\n", r->family, r->shape_key, cs, r->cmp_measured, frac * 100,
             r->best_ns / 1e3, cold, warm, re, r->cmp_params);
    } else {
      printf("%-6s %-44.44s %9d %8s %6s %11s %9s %9s %9s  (not covered: budget or failures)\n", r->family, r->shape_key, r->candidates, "-", "-", "-", "-",
             "-", "-");
    }
  }
  if (json) {
    printf("],\"covered\":%d,\"mean_fraction_measured\":", n); kiln_cli__json_num(stdout, n ? sum_frac / n : NAN);
    printf(",\"mean_cold_ratio\":"); kiln_cli__json_num(stdout, n ? sum_cold / n : NAN);
    printf(",\"mean_warm_ratio\":"); kiln_cli__json_num(stdout, n ? sum_warm / n : NAN);
    printf(",\"mean_retimed_ratio\":"); kiln_cli__json_num(stdout, nre ? sum_re / nre : NAN);
    printf("}\n");
  } else if (n) {
    printf("mean over %d covered instances: measured %.1f%% of the candidates (%d of %d in all), pick / best %.3fx cold, %.3fx warm, %.3fx re-timed\n", n,
           100 * sum_frac / n, nmeas, ncand, sum_cold / n, sum_warm / n, nre ? sum_re / nre : NAN);
  } else printf("no instance covered\n");
  return 0;
}

/* Set by SIGINT during `kiln tune` (kiln_tune_options.stop). */
static volatile int tune_interrupted;
static void on_tune_sigint(int sig) { (void)sig; tune_interrupted = 1; }
static double tune_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "tuned X of Y instances" after a tune, and what to do about the rest. */
/* Instances tuned, and in all (fusion groupings aside). */
static void count_tuned(const kiln_tune_result *res, int nres, int *tuned, int *total) {
  *tuned = *total = 0;
  for (int i = 0; i < nres; i++) {
    if (!strcmp(res[i].family, "fusion")) continue;
    (*total)++;
    *tuned += res[i].tuned;
  }
}

static void tune_summary(FILE *f, const kiln_tune_result *res, int nres, const char *why) {
  int tuned, total;
  count_tuned(res, nres, &tuned, &total);
  fprintf(f, "tuned %d of %d instances%s%s", tuned, total, why ? "; " : "", why ? why : "");
  if (tuned < total) fprintf(f, "; running the same `kiln tune` again resumes where this one stopped");
  fprintf(f, "\n");
}

/* Runs the tuner with SIGINT finishing the record being measured; *why
 * says why it stopped early (interrupted, budget spent), else stays "". */
static int run_tuner(kiln_session *s, kiln_db *db, kiln_tune_options *o, kiln_tune_result **res, int *nres, char *why, size_t len, kiln_error *err) {
  struct sigaction sa = {0}, old_sa;
  sa.sa_handler = on_tune_sigint;
  sigemptyset(&sa.sa_mask);
  tune_interrupted = 0;
  o->stop = &tune_interrupted;
  sigaction(SIGINT, &sa, &old_sa);
  double t0 = tune_clock();
  int rc = kiln_tune(s, db, o, res, nres, err);
  sigaction(SIGINT, &old_sa, NULL);
  double spent = tune_clock() - t0;
  int tuned = 0, total = 0;
  if (rc == 0) count_tuned(*res, *nres, &tuned, &total);
  why[0] = 0;
  if (tune_interrupted) snprintf(why, len, "interrupted after %.0f s", spent);
  else if (o->budget_s > 0 && (spent > o->budget_s || rc == KILN_ELIMIT || (tuned < total && spent > 0.9 * o->budget_s)))
    /* ELIMIT, or instances left: a compile that would end past the budget was not started */
    snprintf(why, len, "the %.0f s budget is spent (%.0f s)", o->budget_s, spent);
  return rc;
}

static int cmd_tune(int argc, char **argv) {
  tune_args a = {.strategy = "model"};
  int rc = kiln_cli_parse(&kiln_cli_cmd_tune, argc, argv, &a);
  if (rc) return kiln_cli_parse_exit(rc);
  const char *path = a.pos.v[0], *devsel = a.devsel, *dbpath = a.dbpath, *strategy = a.strategy;
  bool json = a.json, compare = a.compare;
  kiln_error err = {0};
  kiln_cli__ctx x = {0};
  kiln_tune_result *res = NULL;
  int nres = 0;
  char dbbuf[4096] = "";
  if (!dbpath) dbpath = kiln_cli__default_db(dbbuf, sizeof dbbuf);
  kiln_cli__load lo = {.path = path, .shapes = &a.shapes, .inputs = &a.inputs, .random = true, .seed = a.seed};
  if ((rc = kiln_cli__ctx_load(&x, &lo)) != 0) goto done;
  /* the session plans with descriptor defaults; the tuner reads and writes the database */
  x.precision = a.precision;
  if ((rc = kiln_cli__ctx_session(&x, devsel, KILN_CLI_NOTE_CPU | KILN_CLI_SESSION_NO_DB | (a.nofusion ? KILN_CLI_NO_FUSION : 0))) != 0) goto done;
  if ((rc = kiln_tune_check_families(x.s, a.families, &err)) != 0) { rc = kiln_cli__fail(&err, rc); goto done; }
  /* refused before any work when the file is not this user's to write; an
   * explicit --db's directory must exist (no directory tree made silently) */
  if ((rc = kiln_cli__open_db(dbpath, KILN_DB_CREATE | KILN_DB_WRITE | (dbbuf[0] ? 0 : KILN_DB_NO_MKDIR), true, &x.db)) != 0) goto done;
  kiln_session *s = x.s;
  kiln_db *db = x.db;
  tune_ui ui = {.tty = isatty(2) != 0, .json = json};
  double evict_mb = 0;
  if (a.evict_mb && *a.evict_mb) {
    char *end = NULL;
    evict_mb = strtod(a.evict_mb, &end);
    if (*end || !(evict_mb >= 0 && evict_mb <= 1e6)) { kiln_cli__error("--evict-mb needs a number of MB, got '%s'", a.evict_mb); rc = 2; goto done; }
  }
  kiln_tune_options o = {.budget_s = a.budget, .max_trials = (int)a.max_trials, .strategy = strategy, .seed = a.seed,
                         .families = a.families, .max_gflop = a.max_gflop, .compare = compare, .progress = tune_progress, .ctx = &ui,
                         .fusion_close = a.fusion_close, .evict_mb = evict_mb};
  if (compare) strategy = "exhaustive, then the model strategy replayed on its times";
  const kiln_device_info *di = kiln_device_get_info(x.d);
  if (!json) { printf("tuning %s on %s (%s)\ndatabase: %s, strategy %s\n", path, di->name, di->platform, dbpath, strategy); fflush(stdout); }
  if (!json && a.budget > 0 && a.budget < KILN_TUNE_PROBE_MIN_BUDGET) {
    int64_t dev_id;
    char *pj = NULL;
    if (kiln_db_device(db, di, &dev_id, NULL) != 0 || kiln_db_get_probe(db, dev_id, &pj) != 0)
      printf("this device was never probed: with a budget under %.0f s the cost model uses its built-in figures (run `kiln probe` once for better ones)\n",
             KILN_TUNE_PROBE_MIN_BUDGET);
    free(pj);
  }
  char why[128];
  if ((rc = run_tuner(s, db, &o, &res, &nres, why, sizeof why, &err)) != 0) {
    if (rc == KILN_ELIMIT && why[0]) { /* stopped while compiling the model's kernels, before any instance */
      FILE *f = json ? stderr : stdout;
      kiln_run_stats st;
      kiln_session_get_stats(s, &st);
      if (json) {
        printf("{\"model\":"); kiln_cli__json_str(stdout, path);
        printf(",\"instances\":[],\"stopped\":\"compiling\",\"programs_compiled\":%d}\n", st.programs_compiled);
      }
      fprintf(f, "tuned 0 instances: %s while compiling the model's kernels (%d compiled so far, kept in the program cache); "
                 "running the same `kiln tune` again resumes with them compiled\n", why, st.programs_compiled);
      rc = tune_interrupted ? 130 : 0;
    } else rc = kiln_cli__fail(&err, rc);
    goto done;
  }
  if (compare) rc = print_compare(path, di->name, dbpath, res, nres, json);
  else if (json) {
    printf("{\"model\":"); kiln_cli__json_str(stdout, path);
    printf(",\"device\":"); kiln_cli__json_str(stdout, di->name);
    printf(",\"db\":"); kiln_cli__json_str(stdout, dbpath);
    printf(",\"strategy\":"); kiln_cli__json_str(stdout, strategy);
    printf(",\"instances\":[");
    for (int i = 0; i < nres; i++) {
      kiln_tune_result *r = &res[i];
      printf("%s{\"family\":", i ? "," : ""); kiln_cli__json_str(stdout, r->family);
      printf(",\"dtype\":"); kiln_cli__json_str(stdout, r->dtype);
      printf(",\"shape_key\":"); kiln_cli__json_str(stdout, r->shape_key);
      printf(",\"params\":"); kiln_cli__json_str(stdout, r->params);
      printf(",\"candidates\":%d,\"trials\":%d,\"rejected\":%d,\"skipped\":%s,\"refreshed\":%d,\"default_ns\":", r->candidates, r->trials, r->rejected,
             r->skipped ? "true" : "false", r->refreshed);
      kiln_cli__json_num(stdout, r->default_ns);
      printf(",\"tuned_ns\":"); kiln_cli__json_num(stdout, r->best_ns);
      printf(",\"speedup\":"); kiln_cli__json_num(stdout, r->default_ns > 0 && r->best_ns > 0 ? r->default_ns / r->best_ns : NAN);
      printf(",\"share\":"); kiln_cli__json_num(stdout, r->share);
      printf(",\"noisy\":%s,\"extra_trials\":%d}", r->noisy ? "true" : "false", r->extra);
    }
    printf("]}\n");
  } else {
    printf("\n%-8s %-40s %12s %12s %8s %7s  %s\n", "family", "instance", "default us", "tuned us", "speedup", "trials", "parameters");
    double tot_d = 0, tot_t = 0;
    for (int i = 0; i < nres; i++) {
      kiln_tune_result *r = &res[i];
      char dd[32] = "-", tt[32] = "-", sp[32] = "-";
      if (r->default_ns > 0) snprintf(dd, sizeof dd, "%.1f", r->default_ns / 1e3);
      if (r->best_ns > 0) snprintf(tt, sizeof tt, "%.1f", r->best_ns / 1e3);
      if (r->default_ns > 0 && r->best_ns > 0) { snprintf(sp, sizeof sp, "%.2fx", r->default_ns / r->best_ns); tot_d += r->default_ns; tot_t += r->best_ns; }
      printf("%-8s %-40.40s %12s %12s %8s %7d  %s%s%s\n", r->family, r->shape_key, dd, tt, sp, r->trials, r->params, r->skipped ? " (already tuned)" : "",
             r->noisy ? " (noisy)" : "");
    }
    if (tot_t > 0) printf("total over newly tuned instances: default %.1f us, tuned %.1f us, %.2fx\n", tot_d / 1e3, tot_t / 1e3, tot_d / tot_t);
    int refreshed = 0;
    for (int i = 0; i < nres; i++) refreshed += res[i].refreshed;
    if (refreshed) printf("recomputed the cost-model features of %d stored records (written by a kiln with other feature definitions)\n", refreshed);
    if (!nres) printf("no tunable kernels in this model\n");
    int noisy = 0;
    for (int i = 0; i < nres; i++) noisy += res[i].noisy;
    int extra = 0, nextra = 0;
    for (int i = 0; i < nres; i++) extra += res[i].extra, nextra += res[i].extra > 0;
    if (extra)
      printf("budget left over: %d more trial%s on the %d instance%s with the largest predicted shares (trials include them)\n", extra, extra == 1 ? "" : "s",
             nextra, nextra == 1 ? "" : "s");
    if (noisy)
      printf("%d instance%s (noisy) compared on noise-dominated timings, also when timed again at the end (another process or the host\n"
             "took the CPUs): the pick may be a near-tie's coin flip; `kiln db verify --retime MODEL` re-times it later\n",
             noisy, noisy == 1 ? "" : "s");
    tune_summary(stdout, res, nres, why[0] ? why : NULL);
  }
  if (json) tune_summary(stderr, res, nres, why[0] ? why : NULL);
  if (tune_interrupted) rc = 130;
done:
  free(res);
  kiln_cli__ctx_free(&x);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_tune = {.name = "tune", .fn = cmd_tune, .flags = KILN_CLI_NEEDS_DEVICE, KILN_CLI_MODEL_ARG(tune_args), KILN_CLI_OPTS(OPTS),
  .summary = "measure kernel parameters for a model on this device and store them in the tuning database"};
