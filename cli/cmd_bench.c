/* cmd_bench.c: `kiln bench MODEL.onnx`: the latency distribution of a model
 * on this device (min, median, p90, mean, max over timed runs after a
 * warm-up) and its sequential throughput, with the tuning database's
 * parameters when there is one. Latencies are each run's wall time as the
 * session reports it (kiln_run_stats.last_ms: upload of inputs, kernels,
 * download of outputs). */
#include "kiln_cli.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Quantile q of sorted v[0..n) with linear interpolation. */
static double quantile(const double *v, int n, double q) {
  if (n <= 0) return NAN;
  double pos = q * (n - 1);
  int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

/* --profile: per node, the span of its kernels in every timed run (profiling
 * events), and per run the device-busy time and the span first start .. last end. */
typedef struct {
  int nn;                 /* nodes (from the first profiled run) */
  kiln_node_time *first;  /* names, from the first run */
  double *span;           /* [run][node] */
  double *busy, *total;   /* per run */
  int cap;
  double copy_gbps;       /* the session's device figures (kiln_param_basis); 0: none */
  double copy_mib;        /* ... the working set of that figure */
  char figures[32];       /* ... and where they come from */
} prof;

static int prof_add(prof *p, kiln_session *s, int run) {
  kiln_node_time *t = NULL;
  int n = 0;
  if (kiln_session_node_times(s, &t, &n) != 0) return 0;
  if (!p->first) { p->first = t; p->nn = n; }
  if (run >= p->cap) {
    int cap = p->cap ? p->cap * 2 : 32;
    double *sp = realloc(p->span, sizeof(double) * (size_t)cap * (size_t)(p->nn ? p->nn : 1));
    double *bu = realloc(p->busy, sizeof(double) * (size_t)cap), *to = realloc(p->total, sizeof(double) * (size_t)cap);
    if (sp) p->span = sp;
    if (bu) p->busy = bu;
    if (to) p->total = to;
    if (!sp || !bu || !to) { if (t != p->first) free(t); return 1; }
    p->cap = cap;
  }
  double busy = 0, end = 0;
  for (int i = 0; i < p->nn; i++) p->span[(size_t)run * (size_t)p->nn + (size_t)i] = 0;
  for (int i = 0; i < n; i++) {
    busy += t[i].span_us;
    if (t[i].start_us + t[i].span_us > end) end = t[i].start_us + t[i].span_us;
    for (int j = 0; j < p->nn; j++)
      if (!strcmp(p->first[j].node, t[i].node)) { p->span[(size_t)run * (size_t)p->nn + (size_t)j] = t[i].span_us; break; }
  }
  p->busy[run] = busy;
  p->total[run] = end;
  if (t != p->first) free(t);
  return 0;
}

static double median_of(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, kiln_cli__cmp_double);
  return quantile(v, n, 0.5);
}

/* per node median span over the runs, into med[] */
static void prof_medians(const prof *p, int runs, double *med) {
  double *col = malloc(sizeof(double) * (size_t)(runs > 0 ? runs : 1));
  for (int j = 0; j < p->nn; j++) {
    if (!col) { med[j] = NAN; continue; }
    for (int r = 0; r < runs; r++) col[r] = p->span[(size_t)r * (size_t)p->nn + (size_t)j];
    med[j] = median_of(col, runs);
  }
  free(col);
}

static int cmp_desc_idx(const void *a, const void *b, void *ctx) {
  const double *m = ctx;
  double x = m[*(const int *)a], y = m[*(const int *)b];
  return x > y ? -1 : x < y;
}

/* GB/s of the bytes a node's kernels must move, at span us */
static double gbps(const kiln_node_time *t, double us) { return us > 0 ? t->bytes / (us * 1e3) : 0; }

static void prof_print(prof *p, int runs) {
  if (!p->nn || runs <= 0) { printf("profile:    no kernels were timed\n"); return; }
  double *med = malloc(sizeof(double) * (size_t)p->nn);
  int *idx = malloc(sizeof(int) * (size_t)p->nn);
  if (!med || !idx) { free(med); free(idx); return; }
  prof_medians(p, runs, med);
  double busy = median_of(p->busy, runs), total = median_of(p->total, runs);
  printf("profile:    device busy %.3f ms, first kernel start to last end %.3f ms (medians over %d runs); per node:\n", busy / 1e3, total / 1e3, runs);
  for (int j = 0; j < p->nn; j++) idx[j] = j;
  qsort_r(idx, (size_t)p->nn, sizeof(int), cmp_desc_idx, med);
  int show = p->nn < 25 ? p->nn : 25;
  for (int k = 0; k < show; k++) {
    int j = idx[k];
    printf("  %9.1f us %5.1f%% %7.1f GB/s  %-18.18s %s\n", med[j], busy > 0 ? 100 * med[j] / busy : 0, gbps(&p->first[j], med[j]), p->first[j].op,
           p->first[j].node);
  }
  if (p->nn > show) printf("  (%d more nodes)\n", p->nn - show);
  /* the memory-bound kernels against the device's copy bandwidth */
  int nm = 0, slow = 0, worst = -1;
  double mt = 0, low = 0;
  for (int j = 0; j < p->nn; j++) {
    if (p->first[j].compute || !(med[j] > 0)) continue;
    nm++;
    mt += med[j];
    double r = gbps(&p->first[j], med[j]);
    if (p->copy_gbps > 0 && r < 0.5 * p->copy_gbps) slow++;
    if (worst < 0 || r < low) worst = j, low = r;
  }
  if (nm) {
    printf("memory-bound: %d kernels (element-wise, norms, reductions, pooling, data movement), %.3f ms (%.1f%% of busy)", nm, mt / 1e3,
           busy > 0 ? 100 * mt / busy : 0);
    if (p->copy_gbps > 0)
      printf("; %d below half the copy bandwidth (%.1f GB/s at %.0f MiB, %s); slowest %.1f GB/s (%.0f%%)", slow, p->copy_gbps, p->copy_mib, p->figures, low,
             100 * low / p->copy_gbps);
    else printf("; slowest %.1f GB/s", low);
    printf(" %s %s\n", p->first[worst].op, p->first[worst].node);
  }
  free(med);
  free(idx);
}

static void prof_json(FILE *o, prof *p, int runs) {
  double *med = p->nn ? malloc(sizeof(double) * (size_t)p->nn) : NULL;
  if (med) prof_medians(p, runs, med);
  fprintf(o, ",\"profile\":{\"busy_ms\":");
  kiln_cli__json_num(o, runs > 0 && p->busy ? median_of(p->busy, runs) / 1e3 : NAN);
  fprintf(o, ",\"span_ms\":");
  kiln_cli__json_num(o, runs > 0 && p->total ? median_of(p->total, runs) / 1e3 : NAN);
  fprintf(o, ",\"copy_gbps\":");
  kiln_cli__json_num(o, p->copy_gbps > 0 ? p->copy_gbps : NAN);
  fprintf(o, ",\"copy_mib\":");
  kiln_cli__json_num(o, p->copy_gbps > 0 ? p->copy_mib : NAN);
  fprintf(o, ",\"nodes\":[");
  for (int j = 0; med && j < p->nn; j++) {
    fprintf(o, "%s{\"node\":", j ? "," : "");
    kiln_cli__json_str(o, p->first[j].node);
    fprintf(o, ",\"op\":");
    kiln_cli__json_str(o, p->first[j].op);
    fprintf(o, ",\"median_us\":");
    kiln_cli__json_num(o, med[j]);
    fprintf(o, ",\"bytes\":%.0f,\"gbps\":", p->first[j].bytes);
    kiln_cli__json_num(o, gbps(&p->first[j], med[j]));
    fprintf(o, ",\"compute\":%s}", p->first[j].compute ? "true" : "false");
  }
  fprintf(o, "]}");
  free(med);
}

static void prof_free(prof *p) {
  free(p->first);
  free(p->span);
  free(p->busy);
  free(p->total);
}

typedef struct bench_args {
  kiln_cli_list pos, inputs;
  kiln_cli_shapes shapes;
  bool json, nofusion, profile;
  uint64_t seed, repeat, warmup;
  double duration;
  const char *dbpath, *devsel, *precision;
} bench_args;

#define A bench_args
static const kiln_cli_opt OPTS[] = {
  KILN_OPT_DB(A, dbpath, "tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db if it exists)"),
  {.name = "--repeat", .kind = KILN_OPT_INT, .off = offsetof(A, repeat), .value = "N", .min = 1, .max = 1000000,
   .err = "--repeat needs an integer from 1 to 1000000", .help = "timed runs (default 20; fewer when --duration runs out first)"},
  {.name = "--warmup", .kind = KILN_OPT_INT, .off = offsetof(A, warmup), .value = "N", .max = 1000, .err = "--warmup needs an integer from 0 to 1000",
   .help = "untimed runs first (default 2; the first plans the model and compiles kernels)"},
  {.name = "--duration", .kind = KILN_OPT_DOUBLE, .off = offsetof(A, duration), .value = "SECONDS", .open = true, .finite = true,
   .err = "--duration needs a positive number of seconds", .help = "stop timing after this long (at least one timed run; default: no limit)"},
  KILN_OPT_INPUTS(A, inputs, "bind an input from a .pb or .npy file; other inputs are random\n"
           "(uniform [-1,1) floats, integers 0..9)"),
  KILN_OPT_SHAPES(A, shapes, "bind an input's shape or a symbolic dimension"),
  KILN_OPT_SEED(A, seed, "seed for random inputs (default 0)"),
  KILN_OPT_DEVICE(A, devsel, KILN_CLI_DEVICE_HELP),
  KILN_OPT_NOFUSION(A, nofusion, "run every node as its own kernel (for comparison)"),
  KILN_OPT_PRECISION(A, precision),
  {.name = "--profile", .kind = KILN_OPT_FLAG, .off = offsetof(A, profile),
   .help = "time every node's kernels in each run (profiling events) and print the\n"
           "slowest nodes (median), device-busy time and kernel span per run"},
  KILN_OPT_JSON(A, json, "print one JSON object on stdout and nothing else"),
};
#undef A

static int cmd_bench(int argc, char **argv) {
  bench_args a = {.repeat = 20, .warmup = 2};
  int rc = kiln_cli_parse(&kiln_cli_cmd_bench, argc, argv, &a);
  if (rc) return kiln_cli_parse_exit(rc);
  const char *path = a.pos.v[0], *devsel = a.devsel, *dbpath = a.dbpath;
  bool json = a.json, nofusion = a.nofusion, profile = a.profile;
  uint64_t repeat = a.repeat, warmup = a.warmup;
  double duration = a.duration;
  kiln_error err = {0};
  kiln_cli__ctx x = {0};
  kiln_model_stats mst = {0};
  kiln_param_stats ps = {0};
  kiln_run_stats rs = {0};
  double *ms = calloc((size_t)repeat, sizeof *ms), first_ms = NAN, load_s = 0, plan_s = 0;
  prof pf = {0};
  if (!ms) { kiln_cli__error("out of memory"); rc = 1; goto done; }
  double t0 = now_s();
  kiln_cli__load lo = {.path = path, .shapes = &a.shapes, .inputs = &a.inputs, .random = true, .seed = a.seed};
  if ((rc = kiln_cli__ctx_load(&x, &lo)) != 0) goto done;
  load_s = now_s() - t0;
  if ((rc = kiln_cli__open_db(dbpath, 0, true, &x.db)) != 0) goto done;
  x.precision = a.precision;
  if ((rc = kiln_cli__ctx_session(&x, devsel, KILN_CLI_NOTE_CPU | (nofusion ? KILN_CLI_NO_FUSION : 0))) != 0) goto done;
  kiln_session *s = x.s;
  const kiln_db *db = x.db;
  const kiln_cli__inputs b = x.b;
  if (profile) kiln_session_set_profiling(s, 1);

  /* warm-up: the first run plans the model and compiles its kernels */
  t0 = now_s();
  kiln_session_get_stats(s, &rs);
  double c0 = rs.compile_ms, first_compile_ms = NAN;
  for (uint64_t r = 0; r < warmup; r++) {
    if ((rc = kiln_session_run(s, &err)) != 0) { rc = kiln_cli__fail(&err, rc); goto done; }
    kiln_session_get_stats(s, &rs);
    if (r == 0) first_ms = rs.last_ms, first_compile_ms = rs.compile_ms - c0;
  }
  plan_s = now_s() - t0;
  {
    kiln_param_basis pb;
    kiln_session_param_basis(s, &pb);
    pf.copy_gbps = pb.copy_gbps;
    pf.copy_mib = pb.copy_bytes / 1048576;
    snprintf(pf.figures, sizeof pf.figures, "%s", pb.figures);
  }
  int n = 0;
  double t_start = now_s(), wall = 0;
  while ((uint64_t)n < repeat) {
    if ((rc = kiln_session_run(s, &err)) != 0) { rc = kiln_cli__fail(&err, rc); goto done; }
    kiln_session_get_stats(s, &rs);
    if (profile && (rc = prof_add(&pf, s, n)) != 0) { kiln_cli__error("out of memory"); goto done; }
    ms[n++] = rs.last_ms;
    wall = now_s() - t_start;
    if (duration > 0 && wall >= duration) break;
  }
  if (warmup == 0) first_ms = ms[0];
  kiln_model_get_stats(x.m, &mst);
  kiln_session_param_stats(s, &ps);

  double *sorted = malloc(sizeof(double) * (size_t)n), sum = 0, sq = 0;
  if (!sorted) { kiln_cli__error("out of memory"); rc = 1; goto done; }
  memcpy(sorted, ms, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof *sorted, kiln_cli__cmp_double);
  for (int k = 0; k < n; k++) { sum += ms[k]; sq += ms[k] * ms[k]; }
  double mean = sum / n, sd = n > 1 ? sqrt(fmax(0, (sq - n * mean * mean) / (n - 1))) : 0;
  double mn = sorted[0], med = quantile(sorted, n, 0.5), p90 = quantile(sorted, n, 0.9), mx = sorted[n - 1];
  /* sequential throughput: inferences (batch items when the first input has a batch dimension) per second of run time */
  int64_t batch = b.n > 0 && b.t[0] && b.t[0]->rank > 0 ? b.t[0]->dims[0] : 1;
  double ips = sum > 0 ? 1e3 * n / sum : 0;
  double gflops = mst.flops > 0 && med > 0 ? mst.flops / (med * 1e6) : NAN;
  free(sorted);
  const kiln_device_info *di = kiln_device_get_info(x.d);

  if (json) {
    FILE *o = stdout;
    printf("{\"model\":"); kiln_cli__json_str(o, path);
    printf(",\"device\":"); kiln_cli__json_str(o, di->name);
    printf(",\"platform\":"); kiln_cli__json_str(o, di->platform);
    printf(",\"db\":"); char dbdesc[4096];
    kiln_db_describe(db, dbdesc, sizeof dbdesc);
    if (db) kiln_cli__json_str(o, dbdesc); else printf("null");
    printf(",\"tuning\":{\"tunable\":%d,\"tuned\":%d,\"predicted\":%d,\"default\":%d", ps.tunable, ps.tuned, ps.predicted, ps.defaulted);
    kiln_cli__json_basis(o, s);
    printf("}");
    printf(",\"warmup\":%llu,\"runs\":%d,\"latency_ms\":{\"min\":", (unsigned long long)warmup, n); kiln_cli__json_num(o, mn);
    printf(",\"median\":"); kiln_cli__json_num(o, med);
    printf(",\"p90\":"); kiln_cli__json_num(o, p90);
    printf(",\"mean\":"); kiln_cli__json_num(o, mean);
    printf(",\"max\":"); kiln_cli__json_num(o, mx);
    printf(",\"stddev\":"); kiln_cli__json_num(o, sd);
    printf(",\"first\":"); kiln_cli__json_num(o, first_ms);
    printf(",\"first_compile_ms\":"); kiln_cli__json_num(o, first_compile_ms);
    printf(",\"samples\":[");
    for (int k = 0; k < n; k++) { if (k) printf(","); kiln_cli__json_num(o, ms[k]); }
    printf("]},\"throughput\":{\"inferences_per_s\":"); kiln_cli__json_num(o, ips);
    printf(",\"items_per_s\":"); kiln_cli__json_num(o, ips * (double)batch);
    printf(",\"batch\":%lld,\"gflops\":", (long long)batch); kiln_cli__json_num(o, gflops);
    printf("},\"model_flops\":"); kiln_cli__json_num(o, mst.flops);
    printf(",\"load_s\":"); kiln_cli__json_num(o, load_s);
    printf(",\"warmup_s\":"); kiln_cli__json_num(o, plan_s);
    if (profile) prof_json(o, &pf, n);
    printf(",\"fusion\":%s,\"precision\":\"%s\",\"kernels_launched\":%d,\"device_bytes\":%llu}\n", nofusion ? "false" : "true",
           kiln_precision_name(kiln_session_precision(x.s)), rs.kernels_launched, (unsigned long long)rs.device_bytes);
  } else {
    printf("model:      %s (%d nodes, %.3g GFLOP per inference)\n", path, mst.nodes, mst.flops / 1e9);
    printf("device:     %s (%s)\n", di->name, di->platform);
    char dbd[4096];
    kiln_db_describe(db, dbd, sizeof dbd);
    kiln_cli__print_tuning(stdout, "tuning:     ", db ? dbd : NULL, s, &ps);
    printf("warm-up:    %llu run%s in %.2f s (first run %.1f ms: %.1f ms of it compiling, %.1f ms planning and running)\n",
           (unsigned long long)warmup, warmup == 1 ? "" : "s", plan_s, first_ms, first_compile_ms, first_ms - first_compile_ms);
    printf("latency:    %d runs: min %.3f ms, median %.3f ms, p90 %.3f ms (mean %.3f, max %.3f, stddev %.3f)\n", n, mn, med, p90, mean, mx, sd);
    printf("kernels:    %d launches per inference%s\n", rs.kernels_launched, nofusion ? " (fusion off)" : "");
    printf("throughput: %.2f inferences/s sequential", ips);
    if (batch > 1) printf(" (%.1f items/s at batch %lld)", ips * (double)batch, (long long)batch);
    if (isfinite(gflops)) printf(", %.2f GFLOP/s at the median", gflops);
    printf("\n");
    if (duration > 0 && (uint64_t)n < repeat) printf("(stopped after %.1f s: --duration)\n", wall);
  }
  if (profile && !json) prof_print(&pf, n);
done:
  prof_free(&pf);
  kiln_cli__ctx_free(&x);
  free(ms);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_bench = {.name = "bench", .fn = cmd_bench, .flags = KILN_CLI_NEEDS_DEVICE, KILN_CLI_MODEL_ARG(bench_args), .extra_hint = " (inputs are given with --input)", KILN_CLI_OPTS(OPTS),
  .summary = "measure a model's latency distribution (min, median, p90) and throughput on this device"};
