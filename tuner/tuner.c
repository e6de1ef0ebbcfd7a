/* tuner.c: the measuring autotuner. For every tunable kernel instance of a
 * planned session (deduplicated by instance key), candidates from the
 * instance's parameter space are run on the device with the node's real
 * inputs, checked against the CPU reference, and timed from OpenCL profiling
 * events (warm-up, then repeats until the spread is small or a cap is hit).
 * Every candidate, including failures, is stored in the tuning database;
 * an instance is marked tuned when its search ends, so a killed run resumes
 * where it stopped. */
#include "kiln_internal.h"
#include "kiln_db.h"
#include "kiln_costmodel.h"
#include <math.h>
#include <time.h>

#define MIN_REPEATS 5
#define MAX_REPEATS 40
#define TARGET_SPREAD 0.05
#define MAX_REL_ERR 1e-3
#define SLOW_FACTOR 8.0  /* a candidate this much slower than the best so far is not repeated */

/* the shared helpers of runtime/util.c, by their local names */
#define now_s kiln__now_s
#define cmpd kiln__cmp_double
#define cmpu64 kiln__cmp_u64
#define splitmix kiln__splitmix

typedef struct {
  int node;           /* representative node index */
  int count;          /* nodes sharing the instance key */
  kiln_tunable t;
} instance;

/* Runs node n once with the exec context's override; returns the summed
 * kernel time (ns) from profiling events, or a negative status. */
/* kiln_tune_options.evict_mb = N (`kiln tune --evict-mb N`, an experiment,
 * off by default): before each run, overwrite an N MB buffer, so that the run does not find its weights and
 * inputs in a cache where the run before left them. On an H100, whose 50 MB
 * L2 keeps a layer's 9 MB of weights between repeats, resnet18's layer4
 * convolution measured 127 us in the tuner and took 200 us inside the model,
 * where the weights come from memory. The fill is its own command before the
 * node's kernels, outside their profiled span. */
static int evict_caches(kiln_exec *x, kiln_error *err) {
  kiln_device *d = x->d;
  size_t bytes = x->evict_bytes;
  if (!bytes) return 0;
  if (bytes > d->info.max_alloc) bytes = (size_t)d->info.max_alloc & ~(size_t)3;
  if (!d->evict || d->evict_bytes != bytes) {
    if (d->evict) clReleaseMemObject(d->evict);
    d->evict_bytes = 0;
    if (!(d->evict = kiln_cl_alloc(d, bytes, err))) return err->status;
    d->evict_bytes = bytes;
  }
  d->evict_salt++;
  cl_int e = clEnqueueFillBuffer(d->q, d->evict, &d->evict_salt, sizeof d->evict_salt, 0, bytes, 0, NULL, NULL);
  return e == CL_SUCCESS ? 0 : kiln__err(err, KILN_ECL, "cache eviction fill: %s", kiln__clerror(e));
}

double kiln__tune_run_once(kiln_exec *x, kiln_node *n, kiln_error *err) {
  for (int i = 0; i < x->nevents; i++) clReleaseEvent(x->events[i]);
  x->nevents = 0;
  int erc = evict_caches(x, err);
  if (erc) return erc;
  int rc = n->op->dev(x, n, err);
  cl_int e = clFinish(x->d->q);
  if (rc) return rc;
  if (e != CL_SUCCESS) return kiln__err(err, KILN_ECL, "clFinish: %s", kiln__clerror(e));
  /* the span from the first event's start to the last event's end: it
   * covers gaps between the node's kernels and work that a library enqueues
   * without returning events (CLBlast returns only its last kernel's event;
   * the op enqueues a marker before calling it) */
  cl_ulong lo = 0, hi = 0;
  for (int i = 0; i < x->nevents; i++) {
    cl_ulong a = 0, b = 0;
    clGetEventProfilingInfo(x->events[i], CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
    clGetEventProfilingInfo(x->events[i], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
    if (a && (!lo || a < lo)) lo = a;
    if (b > hi) hi = b;
  }
  return hi > lo ? (double)(hi - lo) : 0;
}

/* Max error of the node's device outputs against host reference outputs,
 * normalized by the reference's largest magnitude; INFINITY on NaN/Inf where
 * the reference is finite. */
double kiln__tune_output_error(kiln_exec *x, kiln_node *n, void **ref, kiln_error *err) {
  double worst = 0;
  n = kiln_epi_result_node(x->g, n); /* a head with a fused epilogue writes its group's output */
  for (int k = 0; k < n->nout; k++) {
    kiln_value *v = kiln_out(x->g, n, k);
    if (!v || !ref[n->out[k]]) continue;
    size_t bytes = kiln_value_bytes(v);
    void *got = malloc(bytes ? bytes : 1);
    if (!got) return INFINITY;
    if (kiln__value_read(x->d, v, got, err)) { free(got); return INFINITY; }
    int64_t cnt = kiln_value_numel(v);
    double maxref = 0, maxdiff = 0;
    for (int64_t i = 0; i < cnt; i++) {
      double r = kiln_load_f(ref[n->out[k]], v->dtype, i), d = kiln_load_f(got, v->dtype, i);
      if (isfinite(r) && !isfinite(d)) { free(got); return INFINITY; }
      if (!isfinite(r)) continue;
      if (fabs(r) > maxref) maxref = fabs(r);
      if (fabs(d - r) > maxdiff) maxdiff = fabs(d - r);
    }
    free(got);
    double e = maxdiff / (maxref > 1e-6 ? maxref : 1e-6);
    /* a half-stored output rounds to 11 bits (up to 4.9e-4 of max |ref| by
     * itself): it is held to 4x the fp32 tolerance, counted in fp32 units */
    if (v->half) e /= 4;
    if (e > worst) worst = e;
  }
  return worst;
}

/* ---- order of the instances: by expected gain ---- */

/* Instances predicted below this share of the model's time are tuned only
 * with budget left over once the larger ones are done (until then, and when
 * the budget runs out first, they keep the cost model's predictions). */
#define TUNE_SHARE_MIN 0.005

typedef struct { double ns; int idx; } share_key;

static int cmp_share(const void *a, const void *b) {
  const share_key *x = a, *y = b;
  if (x->ns != y->ns) return x->ns > y->ns ? -1 : 1;
  return x->idx - y->idx;
}

/* Sorts inst[0..n) by predicted share of the model's time, largest first:
 * the time a run would take each instance (kiln_cm_predict_run: its
 * database record's, else the cost model's prediction of its pick, else the
 * base estimate of its defaults) times its count. share[i] gets the sorted
 * instance i's share of the sum (all 0 when nothing could be predicted, and
 * the order is kept). Instances without cost-model features count 0. */
static int order_by_share(kiln_db *db, int64_t device, kiln_device *d, instance *inst, int n, double *share) {
  share_key *k = calloc((size_t)n + 1, sizeof *k);
  instance *tmp = calloc((size_t)n + 1, sizeof *tmp);
  if (!k || !tmp) { free(k); free(tmp); return KILN_ENOMEM; }
  kiln_cm_state *cm = kiln_cm_state_for_device(db, device, d);
  double total = 0;
  for (int i = 0; i < n; i++) {
    double ns = 0;
    int how;
    if (!cm || kiln_cm_predict_run(cm, &inst[i].t, &ns, &how) != 0 || !(ns > 0) || !isfinite(ns)) ns = 0;
    k[i].ns = ns * inst[i].count;
    k[i].idx = i;
    total += k[i].ns;
  }
  kiln_cm_state_free(cm);
  qsort(k, (size_t)n, sizeof *k, cmp_share);
  for (int i = 0; i < n; i++) {
    tmp[i] = inst[k[i].idx];
    share[i] = total > 0 ? k[i].ns / total : 0;
  }
  memcpy(inst, tmp, sizeof *inst * (size_t)n);
  free(k);
  free(tmp);
  return 0;
}

/* ---- one candidate's measurement ---- */

typedef struct {
  kiln_session *s;
  kiln_db *db;
  kiln_exec *x;
  kiln_node *n;
  int node;
  const kiln_tunable *t;
  void **host;
  const char *hash;
  const kiln_tune_options *opt;
  kiln_tune_result *r;
  int ii, ninst, limit;
  double t0;
  const int *cands;
  const kiln_features *feat;  /* NULL: computed per candidate */
  const double *pred;         /* NULL: none */
  double best;                /* best "ok" median so far (ns) */
  int best_k, measured;
  int rc;                     /* a database failure stops the run */
  kiln_error *err;
  double share, share_before; /* the instance's predicted share of the model's time, and the instances' before it */
  int extra;                  /* a second search with budget left over (extra_pass) */
} trial_ctx;

/* Measures candidate k of the instance and stores its record. Returns its
 * median (ns), -1 when it was rejected (failed, wrong, or unstable), or NAN
 * when the run must stop (budget spent after at least one trial, or a
 * database failure in c->rc). */
static double measure_candidate(trial_ctx *c, int k) {
  const kiln_tunable *t = c->t;
  if (c->opt->stop && *c->opt->stop) return NAN; /* interrupted: the record before this one was finished */
  if (c->opt->budget_s > 0 && now_s() - c->t0 > c->opt->budget_s && c->measured > 0) return NAN;
  const int *p = c->cands + (size_t)k * (size_t)t->nparams;
  kiln_tune_result *r = c->r;
  kiln_record rec;
  memset(&rec, 0, sizeof rec);
  snprintf(rec.family, sizeof rec.family, "%s", t->family);
  rec.dtype = t->dtype;
  snprintf(rec.shape_key, sizeof rec.shape_key, "%s", t->shape_key);
  snprintf(rec.epilogue, sizeof rec.epilogue, "%s", t->epilogue);
  kiln_tunable_str(t, p, rec.params, sizeof rec.params);
  snprintf(rec.source_hash, sizeof rec.source_hash, "%s", c->hash);
  kiln_tunable_opts(t, p, rec.build_options, sizeof rec.build_options);
  snprintf(rec.origin, sizeof rec.origin, "measured");
  rec.median_ns = -1;
  if (c->feat) kiln_features_to_array(&c->feat[k], rec.feat, &rec.nfeat);
  else if (t->features) {
    kiln_features f1;
    memset(&f1, 0, sizeof f1);
    t->features(t, p, &f1);
    kiln_features_to_array(&f1, rec.feat, &rec.nfeat);
  }
  if (c->pred) rec.predicted_ns = c->pred[k];
  kiln_exec *x = c->x;
  kiln_node *n = c->n;
  x->ov_node = c->node;
  x->ov_params = p;
  kiln_error e2 = {0};
  double w = kiln__tune_run_once(x, n, &e2); /* warm-up; compiles the candidate */
  if (w < 0 && e2.status == KILN_ELIMIT) { /* the budget ran out before its compile: no verdict on it */
    x->ov_params = NULL;
    x->ov_node = -1;
    return NAN;
  }
  r->trials++;
  c->measured++;
  double best = c->best;
  if (w < 0) {
    snprintf(rec.status, sizeof rec.status, "%s", strstr(e2.msg, "build") ? "compile_error" : "launch_error");
    r->rejected++;
  } else {
    rec.max_err = kiln__tune_output_error(x, n, c->host, &e2);
    if (!isfinite(rec.max_err)) { snprintf(rec.status, sizeof rec.status, "nan"); r->rejected++; }
    else if (rec.max_err > MAX_REL_ERR) { snprintf(rec.status, sizeof rec.status, "wrong"); r->rejected++; }
    else {
      double ts[MAX_REPEATS];
      int cnt = 0, slow = 0;
      double spread = 1;
      while (cnt < MAX_REPEATS) {
        double v = kiln__tune_run_once(x, n, &e2);
        if (v < 0) break;
        ts[cnt++] = v;
        /* far slower than the best so far in two samples: evidence enough.
         * One is not: a stall of the machine (the VAE's 256x512x512 GEMM read
         * 17 ms once on POCL, 0.97 ms in another run) would throw out a
         * candidate that may be the best */
        if (cnt == 2 && isfinite(best) && ts[0] > SLOW_FACTOR * best && v > SLOW_FACTOR * best) {
          rec.median_ns = rec.min_ns = v < ts[0] ? v : ts[0];
          slow = 1;
          break;
        }
        if (cnt >= MIN_REPEATS) {
          double tmp[MAX_REPEATS];
          memcpy(tmp, ts, sizeof(double) * (size_t)cnt);
          qsort(tmp, (size_t)cnt, sizeof(double), cmpd);
          double med = tmp[cnt / 2], p10 = tmp[cnt / 10], p90 = tmp[(cnt * 9) / 10 < cnt ? (cnt * 9) / 10 : cnt - 1];
          spread = med > 0 ? (p90 - p10) / med : 0;
          rec.median_ns = med;
          if (spread < TARGET_SPREAD || med * cnt > 2e9) break;
        }
      }
      rec.samples = cnt;
      rec.spread = spread;
      rec.min_ns = ts[0];
      for (int q = 1; q < cnt; q++) if (ts[q] < rec.min_ns) rec.min_ns = ts[q];
      if (slow) {
        snprintf(rec.status, sizeof rec.status, "slow"); /* measured twice; not a candidate for best */
      } else if (cnt < MIN_REPEATS) { snprintf(rec.status, sizeof rec.status, "launch_error"); r->rejected++; rec.median_ns = rec.min_ns = -1; }
      else {
        snprintf(rec.status, sizeof rec.status, "ok");
        if (k == 0) r->default_ns = kiln_record_ns(&rec);
        if (kiln_record_ns(&rec) < c->best) { c->best = kiln_record_ns(&rec); c->best_k = k; }
      }
    }
  }
  x->ov_params = NULL;
  x->ov_node = -1;
  if ((c->rc = kiln_db_put(c->db, c->s->db_device, &rec, c->err)) != 0) return NAN;
  if (c->opt->progress) {
    double el = now_s() - c->t0;
    kiln_tune_progress pg = {.instance = c->ii + 1, .ninstances = c->ninst, .family = t->family, .shape_key = t->shape_key,
                             .trial = c->measured, .ntrials = c->limit, .best_ns = isfinite(c->best) ? c->best : -1,
                             .default_ns = r->default_ns, .elapsed_s = el};
    double done = (double)c->measured / (c->limit > 0 ? c->limit : 1);
    pg.share = c->share;
    pg.covered = c->share_before + c->share * done;
    double frac = (c->ii + done) / c->ninst;
    pg.eta_s = frac > 0 ? el / frac - el : 0;
    if (c->extra) { /* everything was searched once: the budget left */
      pg.extra = 1;
      pg.covered = 1;
      pg.eta_s = c->opt->budget_s - el > 0 ? c->opt->budget_s - el : 0;
    }
    c->opt->progress(&pg, c->opt->ctx);
  }
  return strcmp(rec.status, "ok") && strcmp(rec.status, "slow") ? -1 : kiln_record_ns(&rec);
}

/* ---- the model strategy ---- */

/* Candidates the model strategy measures out of nc (without --max-trials):
 * a tenth, at least MODEL_MIN_TRIALS (the default and the best predicted
 * among them), and at most MODEL_MAX_TRIALS: every candidate is a program
 * build (0.3-2 s on POCL), and a tenth of a GEMM space (3,000-10,000
 * candidates) would be hundreds of builds per instance. With a floor of 2,
 * the depthwise convolutions of mobilenet_v2 (small spaces) were tuned on
 * the default and one prediction only: the vector width 16 that the prior
 * picks without a database was never measured, and tuned mobilenet_v2 ran
 * slower than untuned. */
#define MODEL_MIN_TRIALS 8
#define MODEL_MAX_TRIALS 48
static int model_limit(int nc) {
  int l = nc / 10;
  if (l < MODEL_MIN_TRIALS) l = MODEL_MIN_TRIALS;
  if (l > MODEL_MAX_TRIALS) l = MODEL_MAX_TRIALS;
  return l > nc ? nc : l;
}

#define EXPLORE_FACTOR 4.0
#define EXPLORE_SECOND 2.0
/* Length of the first "NAME=V" item of a canonical parameter string. */
static size_t first_item(const char *p) {
  const char *c = strchr(p, ',');
  return c ? (size_t)(c - p) : strlen(p);
}

/* Index among alg[0..na) (one candidate per algorithm) of candidate q's
 * algorithm, its first parameter value; na when none. */
static int alg_of(char (*ps)[256], const int *alg, int na, int q) {
  size_t l = first_item(ps[q]);
  int a = 0;
  while (a < na && !(first_item(ps[alg[a]]) == l && !strncmp(ps[alg[a]], ps[q], l))) a++;
  return a;
}

/* The unmeasured candidate to explore next, or -1: among those predicted
 * within EXPLORE_FACTOR of the best unmeasured prediction, the lowest
 * predicted whose first parameter value (the algorithm) no measured candidate
 * has; else of an algorithm looked at once whose look measured within
 * EXPLORE_SECOND of the fastest so far (got[]: the measured times, <= 0
 * rejected). One tile is weak evidence about an algorithm: replaying
 * resnet18's convolutions from a fresh database, Winograd's one look was a
 * poor tile (3.4 ms where its best is 1.9 ms) and the rest of the budget went
 * to the panel GEMM (2.0 ms). */
static int explore_pick(char (*ps)[256], const double *pred, const char *done, const double *got, int nc) {
  /* the algorithms measured: looks and fastest look each */
  enum { MAXALG = 64 };
  int alg[MAXALG], looks[MAXALG], na = 0, best = -1, k = -1, klooks = 0;
  double own[MAXALG], fastest = INFINITY;
  for (int q = 0; q < nc; q++) {
    if (!done[q]) {
      if (best < 0 || pred[q] < pred[best]) best = q;
      continue;
    }
    if (got[q] > 0 && got[q] < fastest) fastest = got[q];
    int a = alg_of(ps, alg, na, q);
    if (a == na) {
      if (na == MAXALG) continue;
      alg[na] = q, looks[na] = 0, own[na++] = INFINITY;
    }
    looks[a]++;
    if (got[q] > 0 && got[q] < own[a]) own[a] = got[q];
  }
  if (best < 0) return -1;
  for (int q = 0; q < nc; q++) {
    if (done[q] || !(pred[q] <= EXPLORE_FACTOR * pred[best])) continue;
    int a = alg_of(ps, alg, na, q);
    int lk = a < na ? looks[a] : 0;
    if (lk > 1 || (lk == 1 && !(own[a] <= EXPLORE_SECOND * fastest))) continue;
    if (k < 0 || lk < klooks || (lk == klooks && pred[q] < pred[k])) { k = q; klooks = lk; }
  }
  return k;
}

/* Refits the family's correction on the samples (skip_key's left out) and
 * predicts the instance's unmeasured candidates with it and the transfer from
 * instances of similar shape (kiln_costmodel.h). */
static void refit(const kiln_devmodel *dm, const char *family, const char *key, kiln_cm_samples *smp, const char *skip_key, kiln_correction *corr,
                  const kiln_features *feat, char (*ps)[256], int nc, const char *done, double *pred) {
  kiln_cm_fit_samples(dm, family, smp, skip_key, corr);
  /* too few of the device's own records: the built-in prior for devices of
   * its kind, as kiln run does (replayed on resnet18's convolutions, out of
   * the prior's sample, a fresh database's picks went from 1.097x to 1.018x
   * the exhaustive best: the first instances no longer start blind) */
  if (corr->nsamples < KILN_CM_MIN_SAMPLES) kiln_cm_prior(dm, family, corr);
  kiln_cm_transfer ts;
  int tr = kiln_cm_transfer_init(&ts, dm, corr, smp, skip_key, key) == 0;
  for (int q = 0; q < nc; q++)
    if (!done[q]) pred[q] = kiln_cm_predict_ns(dm, corr, &feat[q], ps[q]) * (tr ? kiln_cm_transfer_factor(&ts, ps[q]) : 1);
  if (tr) kiln_cm_transfer_free(&ts);
}

/* The model strategy over one instance's nc candidates (default at 0):
 * measure the best predicted first (what an untuned run picks) and the
 * default second -- a budget that ends after one measurement must not leave
 * the default as the instance's only record: vae_decoder_16 tuned with
 * --budget 300 kept its 128-channel 128x128 conv+Add at the default's 114 ms
 * where the untuned run's predicted Winograd takes ~12 ms (813 vs 440 ms per
 * inference) -- then in rounds the `round` unmeasured candidates with
 * the lowest prediction, refitting the family's correction on the samples
 * (the prior ones plus every one measured here, appended to smp) between
 * rounds, until `limit` are measured; the incumbent (when >= 0: what a run
 * without a database picks) third, unless measured already. meas(ctx, k) returns the candidate's
 * time (ns; < 0 rejected; NAN: stop). order[] receives the measured
 * candidates in order, pred[] the predictions (updated as refits happen).
 * Returns the number measured. */
static int model_search(const kiln_devmodel *dm, const char *family, const char *key, kiln_cm_samples *smp, const char *skip_key,
                        const kiln_features *feat, char (*ps)[256], int nc, int limit, double (*meas)(void *ctx, int k), void *ctx, int *order,
                        double *pred, int incumbent, const double *pre) {
  kiln_correction *corr = malloc(sizeof *corr);
  char *done = calloc((size_t)nc + 1, 1);
  double *got = calloc((size_t)nc + 1, sizeof(double));
  int cnt = 0;
  if (!corr || !done || !got) { free(corr); free(done); free(got); return 0; }
  /* pre[k] != 0: measured by an earlier search (its time, < 0 rejected), not again */
  for (int k = 0; pre && k < nc; k++)
    if (pre[k] != 0) done[k] = 1, got[k] = pre[k];
  int round = limit / 4 > 1 ? limit / 4 : 1;
  while (cnt < limit) {
    int k = -1;
    if (cnt == 1 && !done[0]) k = 0; /* the default second */
    else if (cnt == 2 && incumbent >= 0 && incumbent < nc && !done[incumbent]) k = incumbent;
    else {
      if (cnt <= 2 || (cnt - 1) % round == 0) refit(dm, family, key, smp, skip_key, corr, feat, ps, nc, done, pred);
      /* exploration: while half the budget is left, the best-predicted
       * candidate of each value of the first parameter (the algorithm or
       * kernel selector) that has no measurement on this instance yet and is
       * predicted within EXPLORE_FACTOR of the best; a correction fitted
       * without any record of an algorithm cannot rank it, so otherwise
       * the search would never leave the algorithm it already knows */
      if (cnt >= 2 && cnt * 2 <= limit) k = explore_pick(ps, pred, done, got, nc);
      if (k < 0)
        for (int q = 0; q < nc; q++) if (!done[q] && (k < 0 || pred[q] < pred[k])) k = q;
    }
    if (k < 0) break;
    if (cnt == 0) refit(dm, family, key, smp, skip_key, corr, feat, ps, nc, done, pred);
    double v = meas(ctx, k);
    if (isnan(v)) break;
    done[k] = 1;
    got[k] = v;
    order[cnt++] = k;
    if (v > 0) kiln_cm_samples_add(smp, &feat[k], ps[k], key, v);
  }
  free(corr);
  free(done);
  free(got);
  return cnt;
}

static double meas_real(void *ctx, int k) { return measure_candidate(ctx, k); }

typedef struct { const double *ns; } replay_ctx;
static double meas_replay(void *ctx, int k) { const replay_ctx *r = ctx; return r->ns[k]; }

#define TOGETHER_MAX 16 /* candidates timed together */
#define TOGETHER_REPS 16 /* rounds at most */
#define TOGETHER_BLOCK 3 /* runs of one candidate in a row per round; the first not counted */

/* Candidates p[0..k) timed back to back in alternating rounds (one warm-up
 * round first), so all of them see the same machine noise. In each round a
 * candidate runs TOGETHER_BLOCK times in a row and the first run does not
 * count: like the repeats of a single measurement, the counted runs find the
 * caches holding the candidate's own data, not another candidate's (timed
 * strictly alternating, every run paid for the other's traffic and the
 * re-timed finalists lost rank to candidates measured alone). med[i]
 * receives candidate i's typical time, the interquartile mean of its counted
 * runs (the middle half, averaged: a kernel whose runs fall in two modes on
 * POCL counts each mode as often as it occurs, and a stall at either end
 * counts not at all), mn[i] the fastest (both < 0 when none succeeded),
 * spread[i] (if not NULL) (p90 - p10) / typical, cnt[i] (if not NULL) how
 * many runs succeeded. */
static void time_rounds(kiln_exec *x, kiln_node *n, int node, const int *const *p, int k, int reps, double *med, double *mn, double *spread,
                        int *cnt) {
  double v[TOGETHER_MAX][TOGETHER_REPS * (TOGETHER_BLOCK - 1)];
  int nv[TOGETHER_MAX] = {0};
  if (k > TOGETHER_MAX) k = TOGETHER_MAX;
  if (reps > TOGETHER_REPS) reps = TOGETHER_REPS;
  x->ov_node = node;
  for (int round = -1; round < reps; round++)
    for (int i = 0; i < k; i++) {
      x->ov_params = p[i];
      for (int b = 0; b < TOGETHER_BLOCK; b++) {
        kiln_error e = {0};
        double ns = kiln__tune_run_once(x, n, &e);
        if (round >= 0 && b > 0 && ns > 0) v[i][nv[i]++] = ns;
      }
    }
  x->ov_params = NULL;
  x->ov_node = -1;
  for (int i = 0; i < k; i++) {
    qsort(v[i], (size_t)nv[i], sizeof(double), cmpd);
    int lo = nv[i] / 4, hi = nv[i] - nv[i] / 4;
    double sum = 0;
    for (int q = lo; q < hi; q++) sum += v[i][q];
    med[i] = nv[i] ? sum / (hi - lo) : -1;
    mn[i] = nv[i] ? v[i][0] : -1;
    if (spread) spread[i] = nv[i] ? (v[i][nv[i] - 1 - nv[i] / 10] - v[i][nv[i] / 10]) / med[i] : 0;
    if (cnt) cnt[i] = nv[i];
  }
}

/* Noise. On a shared machine a POCL kernel spread over every core waits for
 * whichever of its worker threads another process has descheduled: while
 * one core was busy elsewhere, the transformer demo's 16x64 LayerNorm, 1.3 us
 * alone, read 10-14 us typical in the tuner's rounds (fastest 1.3-5.7 us;
 * spreads of 66-280%), a 23 us 16x16 Winograd conv 52-58 us, and the duels
 * compared that noise: the demo database so tuned kept a LayerNorm 1.3x slower
 * than its runner-up and failed `kiln db verify --retime` in 9 of 10 idle
 * runs. Rounds in which any candidate's typical time is more than NOISY_RATIO
 * times its fastest are noise-dominated (quiet rounds read 1.03-1.15); short
 * ones are timed again, up to NOISY_RETRIES times after a pause, and the
 * quietest attempt is kept. verify does not judge a record on rounds that
 * stay noise-dominated. */
#define NOISY_RATIO 1.5
#define NOISY_RETRIES 3
#define NOISY_RETRY_S 0.25 /* only rounds shorter than this are timed again */

static double noise_of(const double *med, const double *mn, int k) {
  double w = 0;
  for (int i = 0; i < k; i++)
    if (med[i] > 0 && mn[i] > 0 && med[i] / mn[i] > w) w = med[i] / mn[i];
  return w;
}

int kiln__tune_time_together(kiln_exec *x, kiln_node *n, int node, const int *const *p, int k, int reps, double *med, double *mn, double *spread,
                             int *cnt) {
  if (k > TOGETHER_MAX) k = TOGETHER_MAX;
  double m2[TOGETHER_MAX], n2[TOGETHER_MAX], s2[TOGETHER_MAX];
  int c2[TOGETHER_MAX];
  double t = now_s();
  time_rounds(x, n, node, p, k, reps, med, mn, spread, cnt);
  double w = noise_of(med, mn, k);
  for (int a = 1; a <= NOISY_RETRIES && w > NOISY_RATIO && now_s() - t < NOISY_RETRY_S; a++) {
    struct timespec pause = {0, 50000000L << (a - 1)}; /* 50, 100, 200 ms: let a spell of contention pass */
    nanosleep(&pause, NULL);
    t = now_s();
    time_rounds(x, n, node, p, k, reps, m2, n2, s2, c2);
    double w2 = noise_of(m2, n2, k);
    if (w2 > 0 && w2 < w) {
      w = w2;
      memcpy(med, m2, sizeof(double) * (size_t)k);
      memcpy(mn, n2, sizeof(double) * (size_t)k);
      if (spread) memcpy(spread, s2, sizeof(double) * (size_t)k);
      if (cnt) memcpy(cnt, c2, sizeof(int) * (size_t)k);
    }
  }
  return w > NOISY_RATIO;
}

/* ---- more looks (compare mode) ----
 * The fastest repeat of one measurement is robust against interference that
 * comes and goes within its repeats, not against a minute of contention that
 * covers all of them: such a candidate looks slower than it is and is never
 * looked at again. The exhaustive reference of --compare-strategies therefore
 * times every candidate twice more, in a second and a third pass, each in its
 * own shuffled order (minutes later for most), and keeps the fastest repeat of
 * all three. With two looks, one candidate in ten or so still read 1.3-1.7x
 * its time in a fresh process (resnet18's 64->128 1x1 stride-2 convolution:
 * 397 us in both looks, 217-299 us in two later runs). */
#define SECOND_REPS 10
/* A candidate judged far slower than the best ("slow", from two samples) is
 * looked at again too, with fewer repeats: a spell of contention can cover
 * both samples (a 0.9 ms GEMM candidate of the VAE stayed at 17 ms) */
#define SLOW_REPS 2

/* Times candidate k of the instance again (see above) unless its record rec
 * (the record as stored; status "" when none) had this look (flag: SECOND or
 * THIRD) or was re-timed as a contender; returns its time as recorded
 * afterwards (ns; <= 0: not ok; NAN: a database failure). best: the
 * instance's fastest time so far (ns), against which a "slow" record that
 * reads faster now becomes "ok". */
static double another_look(trial_ctx *c, int k, kiln_record *rec, int flag, double best) {
  int slow = !strcmp(rec->status, "slow");
  if (strcmp(rec->status, "ok") && !slow) return rec->status[0] ? -1 : 0;
  if (rec->flags & (flag | KILN_REC_RETIMED)) return kiln_record_ns(rec);
  kiln_exec *x = c->x;
  x->ov_node = c->node;
  x->ov_params = c->cands + (size_t)k * (size_t)c->t->nparams;
  kiln_error e = {0};
  double mn = -1;
  for (int i = -1; i < (slow ? SLOW_REPS : SECOND_REPS); i++) { /* one warm-up run */
    double v = kiln__tune_run_once(x, c->n, &e);
    if (v < 0) break;
    if (i >= 0 && (mn < 0 || v < mn)) mn = v;
  }
  x->ov_params = NULL;
  x->ov_node = -1;
  if (mn > 0 && mn < kiln_record_ns(rec)) rec->min_ns = mn;
  else if (!(rec->min_ns > 0)) rec->min_ns = rec->median_ns;
  if (slow && mn > 0 && !(mn > SLOW_FACTOR * best)) { /* the slow samples were a stall */
    snprintf(rec->status, sizeof rec->status, "ok");
    rec->median_ns = mn;
  }
  rec->flags |= flag;
  if ((c->rc = kiln_db_put(c->db, c->s->db_device, rec, c->err)) != 0) return NAN;
  return kiln_record_ns(rec);
}

/* ---- contenders ----
 * One pass over a space measures each candidate in its own moment: on a
 * shared machine a spell of contention can cover all of a candidate's
 * repeats, and the best of a pass is partly the luckiest (two exhaustive
 * passes over a 512-channel convolution on POCL: Kendall tau 0.88 between
 * them, yet each pass's best measured 1.05x and 1.25x the other pass's best).
 * So the contenders, every candidate within CONTEND_RATIO of the fastest (at
 * most TOGETHER_MAX, at least 2), are timed again back to back in alternating
 * rounds, where all of them meet the same noise, and their records take the
 * fastest repeat and the typical time (interquartile mean) of that re-timing
 * (flag RETIMED). The typical time decides among them, and they rank before
 * every record that was not re-timed (kiln_record_rank_cmp in db/kiln_db.h):
 * the fastest repeat screens, a fair comparison decides. An instance with a
 * record re-timed so among its fastest is left as it is (reruns reproduce the
 * same records). */
#define CONTEND_RATIO 1.3
#define FINAL_ROUNDS 10

typedef struct {
  const char *hash;
  kiln_record r[TOGETHER_MAX];
  int n;
  char dparams[256];  /* the descriptor's defaults */
  kiln_record dflt;   /* their record, when have_dflt */
  int have_dflt;
} contender_ctx;

static void contender_rec(const kiln_record *r, void *ctx) {
  contender_ctx *f = ctx;
  if (strcmp(r->origin, "measured") || r->alt || strcmp(r->status, "ok") || !(r->median_ns > 0) || strcmp(r->source_hash, f->hash)) return;
  if (!strcmp(r->params, f->dparams)) { f->dflt = *r; f->have_dflt = 1; }
  int at = f->n;
  while (at > 0 && kiln_record_ns(&f->r[at - 1]) > kiln_record_ns(r)) at--;
  if (at >= TOGETHER_MAX) return;
  int last = f->n < TOGETHER_MAX ? f->n : TOGETHER_MAX - 1;
  memmove(&f->r[at + 1], &f->r[at], sizeof f->r[0] * (size_t)(last - at));
  f->r[at] = *r;
  if (f->n < TOGETHER_MAX) f->n++;
}

/* Duels. Timed all together, a dozen small kernels each read several times
 * their time alone: on POCL the 16 contenders of the transformer demo's
 * M=16 N=64 K=256 product all read 15-16 us typical (fastest 3.8-15 us),
 * and the one ranked first read 6.1 us against its runner-up's 3.4 us when
 * `kiln db verify --retime` timed the two alone, failing 9 of 10 idle runs.
 * So the leader of those rounds (the first by typical time) then meets the
 * strongest others one at a time, two candidates in alternating rounds as
 * verify times a record against its runner-up; the faster of the two by
 * typical time leads on (no margin for the incumbent: with one, a leader
 * 15% slower than its runner-up stayed chosen whenever its duel happened to
 * be noisy, and verify, whose margin is that run's noise, demoted it in 6 of
 * 10 idle runs).
 * The last leader is flagged CHOSEN, which lookups rank first. The
 * challengers: the runner-up by typical time and the fastest by fastest
 * repeat, DUELS at most, then the defaults. */
#define DUELS 4
static int duel_contenders(kiln_db *db, int64_t device, kiln_exec *x, kiln_node *n, int node, kiln_record *r, int (*p)[KILN_MAX_KPARAMS],
                           const int *cnt, int k, int di, double *lead_ns, double *dflt_ns, int *noisy, kiln_error *err) {
  int lead = -1, order[TOGETHER_MAX], nc = 0;
  for (int i = 0; i < k; i++)
    if (cnt[i] >= 3 && (lead < 0 || kiln_record_rank_cmp(&r[i], &r[lead]) < 0)) lead = i;
  if (lead < 0) return 0;
  int second = -1; /* the runner-up by typical time: verify's rival */
  for (int i = 0; i < k; i++)
    if (i != lead && cnt[i] >= 3 && (second < 0 || kiln_record_rank_cmp(&r[i], &r[second]) < 0)) second = i;
  if (second >= 0) order[nc++] = second;
  while (nc < DUELS) { /* then the fastest by fastest repeat not yet in */
    int c = -1;
    for (int i = 0; i < k; i++) {
      int in = i == lead || cnt[i] < 3;
      for (int j = 0; j < nc && !in; j++) in = order[j] == i;
      if (!in && (c < 0 || r[i].min_ns < r[c].min_ns)) c = i;
    }
    if (c < 0) break;
    order[nc++] = c;
  }
  /* the defaults (di, when re-timed) meet the last leader in the last duel:
   * a winner is never kept slower than the defaults timed in the same rounds,
   * and that duel's times are the ones the tune summary compares */
  int with_dflt = di >= 0 && di < k && cnt[di] >= 3;
  for (int j = 0; j < nc; j++)
    if (order[j] == di) order[j] = order[--nc], j--;
  if (with_dflt) order[nc++] = di;
  *lead_ns = *dflt_ns = -1;
  for (int j = 0; j < nc; j++) {
    if (order[j] == lead) continue; /* the defaults already lead */
    const int *pq[2] = {p[lead], p[order[j]]};
    double typ[2], mn[2], spread[2];
    int got[2];
    /* rounds that stay noise-dominated after the retries still compare typical
     * times: their fastest runs are no better (the demo's LayerNorm under
     * contention: fastest 6.0 us for the candidate that takes 2.3 us quiet,
     * 12.5 us for the one that takes 1.2 us) */
    *noisy |= kiln__tune_time_together(x, n, node, pq, 2, FINAL_ROUNDS, typ, mn, spread, got);
    int won = got[0] >= 3 && got[1] >= 3 && typ[1] < typ[0];
    if (order[j] == di && got[0] >= 3 && got[1] >= 3) {
      *lead_ns = won ? typ[1] : typ[0];
      *dflt_ns = typ[1];
    }
    if (won) lead = order[j];
  }
  r[lead].flags |= KILN_REC_CHOSEN;
  return kiln_db_put(db, device, &r[lead], err);
}

/* Re-times the instance's contenders (see above) and stores their new
 * times. *best_ns / params (when not NULL) receive, afterwards, the best as
 * lookups rank it (its time and parameters), and *default_ns the defaults'
 * time: when both were re-timed, their typical times in the same rounds,
 * else (default_ns untouched) the best's fastest repeat.
 * Returns a database status (0 when nothing needed doing). */
static int retime_contenders(kiln_db *db, int64_t device, kiln_exec *x, kiln_node *n, int node, const kiln_tunable *t, const char *hash,
                            double *best_ns, double *default_ns, char *params, size_t plen, int again, int *noisy, kiln_error *err) {
  contender_ctx *f = calloc(1, sizeof *f);
  if (!f) return kiln__err(err, KILN_ENOMEM, "out of memory");
  f->hash = hash;
  int dv[KILN_MAX_KPARAMS];
  for (int i = 0; i < t->nparams; i++) dv[i] = t->params[i].dflt;
  kiln_tunable_str(t, dv, f->dparams, sizeof f->dparams);
  int rc = kiln_db_each(db, device, t->family, t->dtype, t->shape_key, t->epilogue, contender_rec, f, err);
  int k = 0, done = 0;
  for (int i = 0; i < f->n; i++) done |= (f->r[i].flags & KILN_REC_RETIMED) != 0;
  if (again) { /* timed again (noise the first time): the duels choose anew */
    done = 0;
    for (int i = 0; i < f->n && !rc; i++)
      if (f->r[i].flags & KILN_REC_CHOSEN) {
        f->r[i].flags &= ~KILN_REC_CHOSEN;
        rc = kiln_db_put(db, device, &f->r[i], err);
      }
    if (f->have_dflt) f->dflt.flags &= ~KILN_REC_CHOSEN;
  }
  if (!rc && f->n >= 2 && !done) {
    double lim = CONTEND_RATIO * kiln_record_ns(&f->r[0]);
    for (k = 2; k < f->n && kiln_record_ns(&f->r[k]) <= lim; k++) {}
    /* the defaults always run in the same rounds: a winner that is not
     * faster than them there is not kept (the defaults' re-timed record
     * then ranks first) */
    int di = -1;
    for (int i = 0; i < f->n && di < 0; i++) if (!strcmp(f->r[i].params, f->dparams)) di = i;
    if (f->have_dflt && (di < 0 || di >= k)) {
      if (k == TOGETHER_MAX) k--;
      if (di < 0) { /* outside the kept records: in at position k, the rest one down */
        int last = f->n < TOGETHER_MAX ? f->n : TOGETHER_MAX - 1;
        memmove(&f->r[k + 1], &f->r[k], sizeof f->r[0] * (size_t)(last - k));
        if (f->n < TOGETHER_MAX) f->n++;
      } else f->r[di] = f->r[k];
      f->r[k++] = f->dflt;
    }
  }
  int p[TOGETHER_MAX][KILN_MAX_KPARAMS];
  const int *pp[TOGETHER_MAX];
  for (int i = 0; i < k; i++) {
    if (kiln_tunable_parse(t, f->r[i].params, p[i])) k = 0; /* a record of other parameters: leave it */
    pp[i] = p[i];
  }
  double med[TOGETHER_MAX], mn[TOGETHER_MAX], spread[TOGETHER_MAX];
  int cnt[TOGETHER_MAX];
  int nz = 0;
  if (!rc && k) nz = kiln__tune_time_together(x, n, node, pp, k, FINAL_ROUNDS, med, mn, spread, cnt);
  for (int i = 0; i < k && !rc; i++) {
    kiln_record *r = &f->r[i];
    if (cnt[i] >= 3) { /* else keep the first measurement */
      r->median_ns = med[i];
      r->min_ns = mn[i];
      r->spread = spread[i];
      r->samples = cnt[i];
      r->flags |= KILN_REC_RETIMED;
      rc = kiln_db_put(db, device, r, err);
    }
  }
  int dk = -1; /* the defaults among the re-timed */
  for (int i = 0; i < k; i++) if (!strcmp(f->r[i].params, f->dparams)) dk = i;
  double duel_lead = -1, duel_dflt = -1;
  if (!rc && k >= 2) rc = duel_contenders(db, device, x, n, node, f->r, p, cnt, k, dk, &duel_lead, &duel_dflt, &nz, err);
  if (noisy) *noisy = nz;
  int b = -1, di = -1; /* the best as lookups will rank it; the defaults */
  for (int i = 0; i < f->n && !rc; i++) {
    if (b < 0 || kiln_record_rank_cmp(&f->r[i], &f->r[b]) < 0) b = i;
    if (!strcmp(f->r[i].params, f->dparams)) di = i;
  }
  if (b >= 0) {
    /* both re-timed in the same rounds: their typical times there compare */
    int same = di >= 0 && kiln_record_retimed(&f->r[b]) && kiln_record_retimed(&f->r[di]);
    if (best_ns) *best_ns = same ? kiln_record_rank_ns(&f->r[b]) : kiln_record_ns(&f->r[b]);
    if (default_ns && same) *default_ns = kiln_record_rank_ns(&f->r[di]);
    if (duel_lead > 0 && duel_dflt > 0) { /* the chosen and the defaults met in the last duel: those times */
      if (best_ns) *best_ns = duel_lead;
      if (default_ns) *default_ns = duel_dflt;
    }
    if (params) snprintf(params, plen, "%s", f->r[b].params);
  }
  free(f);
  return rc;
}

/* Fills ns[k] (and rec[k] when rec is not NULL) from the instance's records
 * of candidate k (of kernel source hash, when not NULL). */
typedef struct { const kiln_tunable *t; const int *cands; int nc; double *ns; kiln_record *rec; const char *hash; } lookup_ctx;
static void lookup_rec(const kiln_record *r, void *ctx) {
  lookup_ctx *l = ctx;
  if (strcmp(r->origin, "measured") || r->alt || (l->hash && strcmp(r->source_hash, l->hash))) return;
  int p[KILN_MAX_KPARAMS];
  if (kiln_tunable_parse(l->t, r->params, p)) return;
  for (int k = 0; k < l->nc; k++)
    if (!memcmp(p, l->cands + (size_t)k * (size_t)l->t->nparams, sizeof(int) * (size_t)l->t->nparams)) {
      l->ns[k] = strcmp(r->status, "ok") && strcmp(r->status, "slow") ? -1 : kiln_record_ns(r);
      if (l->rec) l->rec[k] = *r;
    }
}

/* ---- stored features ----
 * The cost model fits on the features stored with each record. When kiln's
 * feature definitions change (a new figure, a corrected count), the records
 * of an older kiln would teach it the old meaning: so before tuning, every
 * record of the model's instances gets its features recomputed from its
 * parameters, and those that differ are rewritten (nothing is measured). */
typedef struct { const kiln_tunable *t; kiln_record *r; int n, cap, oom; } stale_ctx;

static void stale_rec(const kiln_record *r, void *ctx) {
  stale_ctx *c = ctx;
  int p[KILN_MAX_KPARAMS];
  if (kiln_tunable_parse(c->t, r->params, p)) return; /* another kiln's parameters: leave it */
  kiln_features f;
  memset(&f, 0, sizeof f);
  c->t->features(c->t, p, &f);
  double a[KILN_REC_MAXFEAT];
  int na = 0;
  kiln_features_to_array(&f, a, &na);
  /* stored as text with 9 significant digits: equal at that precision is equal */
  int same = na == r->nfeat;
  for (int i = 0; i < na && same; i++) same = fabs(a[i] - r->feat[i]) <= 1e-8 * fabs(a[i]);
  if (same) return;
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 64;
    kiln_record *nr = realloc(c->r, sizeof *nr * (size_t)cap);
    if (!nr) { c->oom = 1; return; }
    c->r = nr;
    c->cap = cap;
  }
  c->r[c->n] = *r;
  memcpy(c->r[c->n].feat, a, sizeof(double) * (size_t)na);
  c->r[c->n].nfeat = na;
  c->n++;
}

/* Rewrites the stale features of an instance's records; returns a database
 * status, *count the records rewritten. */
static int refresh_features(kiln_db *db, int64_t device, const kiln_tunable *t, int *count, kiln_error *err) {
  *count = 0;
  if (!t->features) return 0;
  stale_ctx c = {.t = t};
  int rc = kiln_db_each(db, device, t->family, t->dtype, t->shape_key, t->epilogue, stale_rec, &c, err);
  if (!rc && c.oom) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < c.n && !rc; i++)
    if ((rc = kiln_db_put(db, device, &c.r[i], err)) == 0) (*count)++;
  free(c.r);
  return rc;
}

/* 1 when the run must stop before starting more work: the budget (which
 * counts from kiln_tune's start, verification and probe included) is spent,
 * or the caller asked to stop. */
static int out_of_time(const kiln_tune_options *o, double t0) {
  return (o->stop && *o->stop) || (o->budget_s > 0 && now_s() - t0 > o->budget_s);
}

/* Checks opt.families against the families of the model's instances (and
 * "fusion"): an unknown name is KILN_EINVAL naming the valid ones. */
static int check_families(const char *list, const instance *inst, int ninst, kiln_error *err) {
  if (!list || !*list) return 0;
  char valid[512] = "";
  size_t o = 0;
  for (int i = 0; i < ninst; i++) {
    char probe[40];
    snprintf(probe, sizeof probe, ", %s,", inst[i].t.family);
    char have[520];
    snprintf(have, sizeof have, ", %s,", valid);
    if (!strstr(have, probe) && o < sizeof valid) o += (size_t)snprintf(valid + o, sizeof valid - o, "%s%s", o ? ", " : "", inst[i].t.family);
  }
  if (o < sizeof valid) snprintf(valid + o, sizeof valid - o, "%sfusion", o ? ", " : "");
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
    char probe[80], have[520];
    snprintf(probe, sizeof probe, ", %s,", name);
    snprintf(have, sizeof have, ", %s,", valid);
    if (!n || !strstr(have, probe))
      return kiln__err(err, KILN_EINVAL, "unknown kernel family '%s' for this model (its families: %s)", name, valid);
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

int kiln_tune_check_families(kiln_session *s, const char *families, kiln_error *err) {
  if (!families || !*families) return 0;
  int rc = kiln__session_ensure_plan(s, err);
  if (rc) return rc;
  kiln_graph *g = s->m->g;
  instance *all = calloc(64, sizeof *all);
  if (!all) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int nall = 0;
  for (int i = 0; i < g->nnodes && nall < 64; i++) {
    kiln_node *n = &g->nodes[i];
    kiln_tunable t;
    memset(&t, 0, sizeof t);
    if (n->folded || !n->op || !n->op->tunable || n->op->tunable(g, n, &t) != 0) continue;
    int k = 0;
    while (k < nall && strcmp(all[k].t.family, t.family)) k++;
    if (k == nall) all[nall++].t = t;
  }
  rc = check_families(families, all, nall, err);
  free(all);
  return rc;
}

/* The shape key of t's resume marker: its own, with the search space
 * appended when the device's options narrowed it (KILN_GEMM_KERNELS), so that
 * a narrowed search does not pass for a search of the whole space. */
static void marker_key(const kiln_device *d, const kiln_tunable *t, char *buf, size_t n) {
  int len = snprintf(buf, n, "%s", t->shape_key);
  if (!d->opt.gemm_kernels || strcmp(t->family, "gemm")) return;
  len += snprintf(buf + len, n - (size_t)len, "|KERNEL=");
  for (int v = 0, k = 0; v < 3; v++)
    if (d->opt.gemm_kernels & (1u << v)) len += snprintf(buf + len, n - (size_t)len, "%s%d", k++ ? "," : "", v);
}

/* One kiln_tune run: what the searches of its instances share. */
typedef struct tune_run {
  kiln_session *s;
  kiln_db *db;
  kiln_device *d;
  kiln_graph *g;
  kiln_tune_options opt;
  int random, model;  /* the strategy */
  double t0;          /* the budget counts from here */
  instance *inst;
  int ninst;
  kiln_tune_result *res;
  void **host;        /* reference buffers per value */
  double *share;      /* predicted share of the model's time per instance */
  kiln_devmodel dm;
  int have_dm;
  kiln_exec x;
  kiln_cm_samples cold; /* compare: what the model strategy alone would have measured so far in this run */
  int *deferred, ndeferred; /* instances whose contenders met noise-dominated rounds: timed again at the end */
  double reserve_s;   /* budget kept for the fusion step after the kernels (extra_pass leaves it) */
  kiln_error *err;
} tune_run;

/* The candidates of one instance: parameters, features, parameter text,
 * predictions, and the order a model search measured them in. */
typedef struct cand_set {
  int *cands;
  kiln_features *feat;
  double *pred;
  char (*ps)[256];
  int *order;
  int nc, np;
} cand_set;

static void cand_set_free(cand_set *cs) {
  free(cs->cands);
  free(cs->feat);
  free(cs->pred);
  free(cs->ps);
  free(cs->order);
}

/* 1 when the comma list families (NULL or "": all) names family. */
static int family_listed(const char *families, const char *family) {
  if (!families || !*families) return 1;
  const char *f = strstr(families, family);
  size_t fl = strlen(family);
  return f && (f == families || f[-1] == ',') && (!f[fl] || f[fl] == ',');
}

/* The instances to tune: one per distinct (family, dtype, shape key,
 * epilogue) of the model's tunable nodes, of the families asked for, within
 * max_gflop; an unknown family in the list is KILN_EINVAL. */
static int collect_tune_instances(tune_run *R) {
  kiln_graph *g = R->g;
  const kiln_tune_options *opt = &R->opt;
  int nall = 0;
  instance *all = calloc(64, sizeof *all); /* one instance per family, for the names --families may use */
  if (!all) return kiln__err(R->err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded || !n->op->tunable) continue;
    kiln_tunable t;
    memset(&t, 0, sizeof t);
    if (n->op->tunable(g, n, &t) != 0) continue;
    int known = 0;
    for (int k = 0; k < nall && k < 64 && !known; k++) known = !strcmp(all[k].t.family, t.family);
    if (!known && nall < 64) all[nall++].t = t;
    if (!family_listed(opt->families, t.family)) continue;
    if (opt->max_gflop > 0 && t.features) {
      int dp[KILN_MAX_KPARAMS];
      kiln_features f;
      memset(&f, 0, sizeof f);
      for (int q = 0; q < t.nparams; q++) dp[q] = t.params[q].dflt;
      t.features(&t, dp, &f);
      if (f.flops > opt->max_gflop * 1e9) continue;
    }
    int dup = -1;
    for (int k = 0; k < R->ninst && dup < 0; k++) {
      const kiln_tunable *u = &R->inst[k].t;
      if (!strcmp(u->family, t.family) && u->dtype == t.dtype && !strcmp(u->shape_key, t.shape_key) && !strcmp(u->epilogue, t.epilogue)) dup = k;
    }
    if (dup >= 0) { R->inst[dup].count++; continue; }
    R->inst[R->ninst].node = i;
    R->inst[R->ninst].count = 1;
    R->inst[R->ninst].t = t;
    R->ninst++;
  }
  int rc = check_families(opt->families, all, nall, R->err);
  free(all);
  return rc;
}

/* The cost model's device figures (R->dm): the device's probe, run now
 * when the device has none (or, with a short budget, the built-in prior's). */
static int tune_device_model(tune_run *R) {
  kiln_device *d = R->d;
  int want = R->opt.probe || R->model;
  R->have_dm = kiln_cm_load(R->db, R->s->db_device, &d->info, &R->dm, NULL) == 0;
  /* a probe by a kiln that measured fewer figures is run again (the model
   * would otherwise stand in a guess for the missing one) */
  if (R->have_dm && !R->dm.complete && want) R->have_dm = 0;
  if (!R->have_dm && want && R->opt.budget_s > 0 && R->opt.budget_s < KILN_TUNE_PROBE_MIN_BUDGET) {
    /* the probe (~30 s on a loaded CPU device) would spend a short budget
     * alone: the built-in prior's figures for a device of this kind stand in */
    const char *pj = kiln_cm_prior_probe(&d->info);
    R->have_dm = pj && kiln_devmodel_from_probe(pj, &d->info, &R->dm, NULL) == 0;
  }
  if (!R->have_dm && want) {
    kiln_probe_figure *figs = NULL;
    int nf = 0, rc = kiln_probe(d, R->db, &figs, &nf, R->err);
    if (rc) return rc;
    free(figs);
    R->have_dm = kiln_cm_load(R->db, R->s->db_device, &d->info, &R->dm, NULL) == 0;
  }
  if (R->opt.compare && !R->have_dm) return kiln__err(R->err, KILN_ENOTFOUND, "comparing strategies needs the device's probe");
  return 0;
}

/* The reference outputs of node n from its current inputs, into R->host. */
static int node_reference(tune_run *R, kiln_node *n) {
  kiln_graph *g = R->g;
  void **host = R->host;
  int rc = 0;
  for (int k = 0; k < n->nin && !rc; k++) {
    kiln_value *v = kiln_in(g, n, k);
    if (!v || v->is_const) continue;
    size_t b = kiln_value_bytes(v);
    free(host[n->in[k]]);
    host[n->in[k]] = malloc(b ? b : 1);
    if (!host[n->in[k]]) rc = kiln__err(R->err, KILN_ENOMEM, "out of memory");
    else rc = kiln__value_read(R->d, v, host[n->in[k]], R->err);
  }
  if (!rc) rc = kiln_node_run_ref_host(g, n, host, R->err);
  if (!rc) rc = kiln_epi_ref(R->d, g, n, host, R->err); /* a fused epilogue: compare the group's result */
  return rc;
}

/* t's valid candidates (random: the default first, the rest shuffled) with
 * their features and parameter text. */
static int enumerate_candidates(tune_run *R, const kiln_tunable *t, cand_set *cs) {
  int nc = kiln_tunable_enumerate(t, &R->d->info, &cs->cands), np = t->nparams;
  int *cands = cs->cands;
  cs->nc = nc;
  cs->np = np;
  if (R->random && nc > 2) { /* keep the default first, shuffle the rest */
    uint64_t seed = R->opt.seed ? R->opt.seed : 42;
    for (int k = nc - 1; k > 1; k--) {
      int j = 1 + (int)(splitmix(&seed) % (uint64_t)k);
      for (int q = 0; q < np; q++) { int tmp = cands[k * np + q]; cands[k * np + q] = cands[j * np + q]; cands[j * np + q] = tmp; }
    }
  }
  /* features, parameter text and predictions for every candidate */
  cs->feat = calloc((size_t)(nc + 1), sizeof *cs->feat);
  cs->pred = calloc((size_t)(nc + 1), sizeof(double));
  cs->ps = calloc((size_t)(nc + 1), sizeof *cs->ps);
  cs->order = calloc((size_t)(nc + 1), sizeof(int));
  if (!cs->feat || !cs->pred || !cs->ps || !cs->order) return kiln__err(R->err, KILN_ENOMEM, "out of memory");
  for (int k = 0; k < nc; k++) {
    if (t->features) t->features(t, cands + (size_t)k * (size_t)np, &cs->feat[k]);
    kiln_tunable_str(t, cands + (size_t)k * (size_t)np, cs->ps[k], sizeof cs->ps[k]);
  }
  return 0;
}

/* Keeps limit candidates of an exhaustive sweep: the default and the
 * settings with the smallest hashes of their text, in enumeration order.
 * Spread over the space like a random sample, and the same settings
 * wherever two instances' spaces overlap (an evenly strided subset of spaces
 * of different sizes shared few, so nothing measured on one instance said
 * anything about a setting of another). -1 when out of memory. */
static int hash_subset(cand_set *cs, int limit) {
  int nc = cs->nc, np = cs->np;
  uint64_t *hk = malloc(sizeof(uint64_t) * (size_t)(nc + 1));
  if (!hk) return -1;
  for (int k = 0; k < nc; k++) {
    uint64_t h = 1469598103934665603ull;
    for (const char *c = cs->ps[k]; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    hk[k] = k == 0 ? 0 : splitmix(&h);
  }
  uint64_t *sorted = malloc(sizeof(uint64_t) * (size_t)(nc + 1));
  if (sorted) {
    memcpy(sorted, hk, sizeof(uint64_t) * (size_t)nc);
    qsort(sorted, (size_t)nc, sizeof(uint64_t), cmpu64);
    uint64_t cut = sorted[limit - 1];
    int w = 0;
    for (int k = 0; k < nc && w < limit; k++) {
      if (hk[k] > cut) continue;
      if (w != k) {
        memmove(cs->cands + w * np, cs->cands + k * np, sizeof(int) * (size_t)np);
        cs->feat[w] = cs->feat[k];
        cs->pred[w] = cs->pred[k]; /* (the strided subset this replaced left the predictions behind) */
        memmove(cs->ps[w], cs->ps[k], sizeof cs->ps[w]);
      }
      w++;
    }
    free(sorted);
  }
  free(hk);
  return 0;
}

/* compare: the second and third looks at the nc candidates timed in ns,
 * each pass in its own shuffled order: the first pass went through the
 * space in enumeration order, one algorithm's candidates after another, so a
 * spell of contention slowed a whole block of one algorithm at once (on one
 * VAE instance all its Winograd candidates read 40% slower than on its
 * twin); shuffled, a spell's candidates are scattered over the space. */
static int compare_more_looks(tune_run *R, trial_ctx *tc, const cand_set *cs, int nc, double *ns, int *stopped) {
  const kiln_tunable *t = tc->t;
  int rc = 0;
  int *look = malloc(sizeof(int) * (size_t)(nc + 1));
  kiln_record *recs = calloc((size_t)nc + 1, sizeof *recs); /* the records as stored, read once */
  if (!look || !recs) { free(look); look = NULL; rc = kiln__err(R->err, KILN_ENOMEM, "out of memory"); }
  else if (!*stopped) {
    lookup_ctx all = {t, cs->cands, nc, ns, recs};
    rc = kiln_db_each(R->db, R->s->db_device, t->family, t->dtype, t->shape_key, t->epilogue, lookup_rec, &all, R->err);
  }
  for (int k = 0; look && k < nc; k++) look[k] = k;
  uint64_t lseed = 0x5eed;
  static const int pass_flag[2] = {KILN_REC_SECOND, KILN_REC_THIRD};
  for (int pass = 0; pass < 2; pass++) {
    for (int k = nc - 1; look && k > 0; k--) {
      int j = (int)(splitmix(&lseed) % (uint64_t)(k + 1)), tmp = look[k];
      look[k] = look[j];
      look[j] = tmp;
    }
    double best = INFINITY;
    for (int j = 0; j < nc; j++) if (ns[j] > 0 && ns[j] < best) best = ns[j];
    for (int q = 0; look && q < nc && !*stopped && !rc; q++) {
      int k = look[q];
      if (ns[k] <= 0) continue;
      if (out_of_time(&R->opt, R->t0)) { *stopped = 1; break; }
      double v = another_look(tc, k, &recs[k], pass_flag[pass], best);
      if (isnan(v)) { *stopped = 1; if (tc->rc) rc = tc->rc; }
      else if (v > 0) {
        ns[k] = v;
        if (v < best) best = v;
      }
    }
  }
  free(look);
  free(recs);
  return rc;
}

/* compare: what the model strategy would have picked from the times ns of
 * the nc candidates (best bk), warm (the database's other instances of the
 * family as prior) and cold (only what it measured earlier in this run);
 * the cold pick and the best re-timed back to back. */
static void compare_replay(tune_run *R, trial_ctx *tc, cand_set *cs, int nc, double *ns, int bk, const kiln_cm_samples *smp, const char *key) {
  const kiln_tunable *t = tc->t;
  kiln_tune_result *r = tc->r;
  r->best_ns = ns[bk];
  if (ns[0] > 0) r->default_ns = ns[0];
  snprintf(r->params, sizeof r->params, "%s", cs->ps[bk]);
  replay_ctx rp = {ns};
  int lim = model_limit(nc);
  /* warm: the database's other instances of the family as prior (as after tuning other models) */
  kiln_cm_samples warm = {0};
  for (int q = 0; q < smp->n; q++)
    if (strcmp(smp->key[q], key)) kiln_cm_samples_add(&warm, &smp->f[q], smp->par[q], smp->key[q], smp->ns[q]);
  int cnt = model_search(&R->dm, t->family, key, &warm, NULL, cs->feat, cs->ps, nc, lim, meas_replay, &rp, cs->order, cs->pred, -1, NULL);
  kiln_cm_samples_free(&warm);
  int pick = -1;
  for (int q = 0; q < cnt; q++) if (ns[cs->order[q]] > 0 && (pick < 0 || ns[cs->order[q]] < ns[pick])) pick = cs->order[q];
  r->cmp_warm_ns = pick >= 0 ? ns[pick] : -1;
  /* cold: only what the model strategy itself measured earlier in this run */
  cnt = model_search(&R->dm, t->family, key, &R->cold, NULL, cs->feat, cs->ps, nc, lim, meas_replay, &rp, cs->order, cs->pred, -1, NULL);
  pick = -1;
  for (int q = 0; q < cnt; q++) if (ns[cs->order[q]] > 0 && (pick < 0 || ns[cs->order[q]] < ns[pick])) pick = cs->order[q];
  r->cmp_measured = cnt;
  r->cmp_cold_ns = pick >= 0 ? ns[pick] : -1;
  if (pick >= 0) {
    snprintf(r->cmp_params, sizeof r->cmp_params, "%s", cs->ps[pick]);
    /* the cold pick and the exhaustive best re-timed back to back */
    const int *pair[2] = {cs->cands + (size_t)pick * (size_t)cs->np, cs->cands + (size_t)bk * (size_t)cs->np};
    double t2[2], m2[2];
    kiln__tune_time_together(&R->x, tc->n, tc->node, pair, 2, FINAL_ROUNDS, m2, t2, NULL, NULL);
    r->cmp_pick_ns = t2[0];
    r->cmp_best_ns = t2[1];
  }
}

/* compare: every candidate's time, from this device's records of the
 * instance (an earlier exhaustive run) or measured now, looked at three
 * times, then the model strategy replayed on those times. */
static int compare_instance(tune_run *R, trial_ctx *tc, cand_set *cs, int limit, const kiln_cm_samples *smp, const char *key, int *stopped) {
  const kiln_tunable *t = tc->t;
  kiln_tune_result *r = tc->r;
  int nc = cs->nc, rc = 0;
  double *ns = malloc(sizeof(double) * (size_t)(nc + 1));
  if (!ns) return kiln__err(R->err, KILN_ENOMEM, "out of memory");
  for (int k = 0; k < nc; k++) ns[k] = 0;
  lookup_ctx lc = {t, cs->cands, nc, ns, NULL, NULL};
  kiln_db_each(R->db, R->s->db_device, t->family, t->dtype, t->shape_key, t->epilogue, lookup_rec, &lc, NULL);
  if (limit < nc) nc = limit; /* --max-trials: the evenly spread subset stands for the space */
  r->cmp_space = nc;
  tc->limit = nc;
  for (int k = 0; k < nc && !*stopped; k++) {
    if (ns[k] != 0) { r->trials++; tc->measured++; continue; }
    double v = measure_candidate(tc, k);
    if (isnan(v)) *stopped = 1;
    else ns[k] = v;
  }
  if (tc->rc) rc = tc->rc;
  if (!rc) rc = compare_more_looks(R, tc, cs, nc, ns, stopped);
  if (!*stopped && !rc) { /* the contenders timed again together; their times as recorded */
    rc = retime_contenders(R->db, R->s->db_device, &R->x, tc->n, tc->node, t, tc->hash, NULL, NULL, NULL, 0, 0, NULL, R->err);
    if (!rc) rc = kiln_db_each(R->db, R->s->db_device, t->family, t->dtype, t->shape_key, t->epilogue, lookup_rec, &lc, R->err);
  }
  int bk = -1;
  for (int k = 0; k < nc; k++) if (ns[k] > 0 && (bk < 0 || ns[k] < ns[bk])) bk = k;
  if (!*stopped && !rc && bk >= 0) compare_replay(R, tc, cs, nc, ns, bk, smp, key);
  free(ns);
  return rc;
}

/* Searches instance ii (unless a usable record marks it tuned) and records
 * its result in R->res[ii]; *over when the budget ran out before it began.
 * extra: a second search of an instance this run searched already (the
 * model strategy's next candidates, none measured before; see extra_pass). */
static int tune_instance(tune_run *R, int ii, int *over, int extra) {
  instance *in = &R->inst[ii];
  kiln_tunable *t = &in->t;
  kiln_node *n = &R->g->nodes[in->node];
  kiln_tune_result *r = &R->res[ii];
  const kiln_tune_options *opt = &R->opt;
  kiln_db *db = R->db;
  kiln_error *err = R->err;
  char hash[24];
  kiln_source_hash(R->d, t->file, hash, sizeof hash);
  kiln_lookup usable; /* a marker counts while a record of this kernel source and kiln version backs it */
  char mkey[sizeof t->shape_key + 32];
  marker_key(R->d, t, mkey, sizeof mkey);
  if (!extra && !opt->compare && kiln_db_is_tuned(db, R->s->db_device, t->family, t->dtype, mkey, t->epilogue) &&
      kiln_db_best_layered(db, R->s->db_device, &R->d->info, t->family, t->dtype, t->shape_key, t->epilogue, hash, &usable, NULL) == 0 && usable.exact) {
    r->skipped = r->tuned = 1;
    /* what run and plan will use (kiln_db_pick_best's choice) */
    r->best_ns = kiln_record_ns(&usable.rec);
    snprintf(r->params, sizeof r->params, "%s", usable.rec.params);
    return 0;
  }
  if (out_of_time(opt, R->t0)) { *over = 1; return 0; }
  int rc = node_reference(R, n); /* reference outputs from the node's current inputs */
  if (rc) return rc;
  cand_set cs = {0};
  rc = enumerate_candidates(R, t, &cs);
  r->candidates = cs.nc;
  if (rc) { cand_set_free(&cs); return rc; }
  int nc = cs.nc, np = cs.np;
  int use_model = R->have_dm && t->features;
  char key[320];
  kiln_cm_instance_key(t->dtype, t->shape_key, t->epilogue, key, sizeof key);
  kiln_cm_samples smp = {0};
  if (use_model) {
    kiln_cm_samples_db(db, R->s->db_device, t->family, &smp, NULL);
    kiln_correction *corr = malloc(sizeof *corr);
    if (corr) {
      kiln_cm_fit_samples(&R->dm, t->family, &smp, NULL, corr);
      for (int k = 0; k < nc; k++) cs.pred[k] = kiln_cm_predict_ns(&R->dm, corr, &cs.feat[k], cs.ps[k]);
      free(corr);
    }
  }
  /* what a run without a database picks, the built-in prior's best
   * prediction: the model search measures it third, so that a tuned plan
   * does not run something slower than the untuned one only because the
   * untuned pick went unmeasured (the search's refitted predictions rank
   * otherwise: squeezenet1_1's stem kept a dirv tile of 8 output channels,
   * 201 us in the model, where the untuned run's 16 took 174) */
  int incumbent = -1;
  if (use_model) {
    kiln_correction *pc = malloc(sizeof *pc);
    double bp = INFINITY;
    if (pc && kiln_cm_prior(&R->dm, t->family, pc) == 0)
      for (int k = 0; k < nc; k++) {
        double v = kiln_cm_predict_ns(&R->dm, pc, &cs.feat[k], cs.ps[k]);
        if (v < bp) bp = v, incumbent = k;
      }
    free(pc);
  }
  int limit = nc;
  if (opt->max_trials > 0 && limit > opt->max_trials) limit = opt->max_trials;
  if (!opt->compare && R->model && use_model && opt->max_trials <= 0) limit = model_limit(nc);
  double *pre = NULL; /* extra: the candidates measured before, left out */
  if (extra) {
    int npre = 0;
    pre = calloc((size_t)nc + 1, sizeof(double));
    lookup_ctx lc = {t, cs.cands, nc, pre, NULL, hash};
    if (!pre || !use_model || kiln_db_each(db, R->s->db_device, t->family, t->dtype, t->shape_key, t->epilogue, lookup_rec, &lc, NULL)) nc = 0;
    for (int k = 0; k < nc; k++) npre += pre[k] != 0;
    if (limit > nc - npre) limit = nc - npre;
    if (limit <= 0) { /* nothing left to measure */
      free(pre);
      kiln_cm_samples_free(&smp);
      cand_set_free(&cs);
      return 0;
    }
  }
  if ((opt->compare || !(R->model && use_model)) && !R->random && opt->max_trials > 0 && nc > opt->max_trials && hash_subset(&cs, limit)) {
    free(pre);
    kiln_cm_samples_free(&smp);
    cand_set_free(&cs);
    return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  trial_ctx tc = {.s = R->s, .db = db, .x = &R->x, .n = n, .node = in->node, .t = t, .host = R->host, .hash = hash, .opt = opt, .r = r,
                  .ii = ii, .ninst = R->ninst, .limit = limit, .t0 = R->t0, .cands = cs.cands, .feat = t->features ? cs.feat : NULL,
                  .pred = use_model ? cs.pred : NULL, .best = INFINITY, .best_k = -1, .err = err, .share = R->share[ii], .extra = extra};
  for (int q = 0; q < ii; q++) tc.share_before += R->share[q];
  int stopped = 0;
  if (opt->compare) {
    rc = compare_instance(R, &tc, &cs, limit, &smp, key, &stopped);
  } else if (R->model && use_model) {
    model_search(&R->dm, t->family, key, &smp, NULL, cs.feat, cs.ps, nc, limit, meas_real, &tc, cs.order, cs.pred, incumbent, pre);
    stopped = tc.measured < limit;
  } else {
    int k;
    for (k = 0; k < limit; k++) {
      double v = measure_candidate(&tc, k);
      if (isnan(v)) break;
    }
    stopped = k < limit;
  }
  kiln_cm_samples_free(&smp);
  free(pre);
  if (tc.rc) rc = tc.rc;
  /* extra: the first search's result stands unless this one ran to its end */
  char params0[sizeof r->params];
  double best0 = r->best_ns;
  snprintf(params0, sizeof params0, "%s", r->params);
  if (!opt->compare && tc.best_k >= 0) {
    r->best_ns = tc.best;
    kiln_tunable_str(t, cs.cands + (size_t)tc.best_k * (size_t)np, r->params, sizeof r->params);
    int noisy = 0;
    if (!rc && !stopped) {
      /* extra: the first search's contenders were re-timed and one chosen;
       * timed again with the new ones, the duels choose anew */
      rc = retime_contenders(db, R->s->db_device, &R->x, n, in->node, t, hash, &r->best_ns, &r->default_ns, r->params, sizeof r->params, extra, &noisy,
                             err);
      /* the budget ran out before a contender's compile (the default's, when
       * the search never measured it): the search's best stands, the
       * instance stays unmarked (a resume searches it again), and the run
       * stops here */
      if (rc == KILN_ELIMIT) {
        rc = 0;
        stopped = 1;
        *over = 1;
      }
    }
    r->noisy = noisy;
    /* timed again at the end (retime_deferred); not after an extra search: that pass comes after it */
    if (!rc && noisy && R->deferred && !extra && R->ndeferred < R->ninst) R->deferred[R->ndeferred++] = ii;
  }
  if (extra && (stopped || rc)) {
    r->best_ns = best0;
    snprintf(r->params, sizeof r->params, "%s", params0);
  }
  if (!rc && !stopped && tc.best_k >= 0) {
    /* the search ran to its end (or its per-instance cap): resume may skip it */
    rc = kiln_db_mark_tuned(db, R->s->db_device, t->family, t->dtype, mkey, t->epilogue, r->trials, err);
    r->tuned = !rc;
  }
  cand_set_free(&cs);
  if (rc) return rc;
  for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) { free(R->host[n->out[k]]); R->host[n->out[k]] = NULL; }
  return 0;
}

/* The instance's kept parameters (r->params) run once with the device
 * storing deferred programs as their kernels are asked for: the search's
 * candidates were built without their binaries (kiln__device_defer_binaries;
 * fetching one made POCL generate code for every kernel of the program: a
 * bert_encoder tune spent 25 of 60 s there, 25 programs built where 51 are
 * without), and the next run finds the winner's in the cache. */
static void save_winner(tune_run *R, int ii) {
  instance *in = &R->inst[ii];
  kiln_tune_result *r = &R->res[ii];
  int p[KILN_MAX_KPARAMS];
  if (!r->params[0] || kiln_tunable_parse(&in->t, r->params, p) != 0) return;
  kiln__device_defer_binaries(R->d, false, true);
  R->x.ov_node = in->node;
  R->x.ov_params = p;
  kiln_error e = {0};
  (void)kiln__tune_run_once(&R->x, &R->g->nodes[in->node], &e); /* a failure here leaves the program to be compiled by the next run */
  R->x.ov_params = NULL;
  R->x.ov_node = -1;
  kiln__device_defer_binaries(R->d, true, false);
}

/* Instances whose contenders met noise-dominated rounds (see "Noise": the
 * retries within a second did not end the spell) are timed again, and their
 * duels fought anew, after every other instance: seconds to minutes later.
 * On this project's 2-vCPU VM the tuner met whole spells in which a 1.3 us
 * LayerNorm read 4-12 us typical (2 of 6 tune runs of the transformer demo's
 * norm, every round of them), and one such run kept VW=4, 1.3x slower than
 * VW=8, which `kiln db verify --retime` then demoted in every idle run. When
 * the deferred instance was the last searched, the pass waits NOISE_WAIT_S
 * first. What stays noisy is reported (kiln_tune_result.noisy). */
#define NOISE_WAIT_S 2
static int retime_deferred(tune_run *R) {
  int rc = 0;
  for (int j = 0; j < R->ndeferred && !rc && !out_of_time(&R->opt, R->t0); j++) {
    int ii = R->deferred[j];
    if (j == 0 && ii == R->ninst - 1) {
      /* a pause that would end past the budget: the first verdicts stand */
      if (R->opt.budget_s > 0 && now_s() - R->t0 + NOISE_WAIT_S > R->opt.budget_s) break;
      struct timespec pause = {NOISE_WAIT_S, 0};
      nanosleep(&pause, NULL);
    }
    instance *in = &R->inst[ii];
    kiln_tune_result *r = &R->res[ii];
    char hash[24];
    kiln_source_hash(R->d, in->t.file, hash, sizeof hash);
    int noisy = 0;
    rc = retime_contenders(R->db, R->s->db_device, &R->x, &R->g->nodes[in->node], in->node, &in->t, hash, &r->best_ns, &r->default_ns,
                           r->params, sizeof r->params, 1, &noisy, R->err);
    if (rc == KILN_ELIMIT) { rc = 0; break; } /* a compile the budget refused: the first verdicts stand */
    r->noisy = noisy;
    if (!rc) save_winner(R, ii);
  }
  return rc;
}

/* The instances' results before their searches: names, no times yet. */
static void init_results(tune_run *R) {
  for (int ii = 0; ii < R->ninst; ii++) {
    kiln_tune_result *r = &R->res[ii];
    const kiln_tunable *t = &R->inst[ii].t;
    snprintf(r->family, sizeof r->family, "%s", t->family);
    snprintf(r->shape_key, sizeof r->shape_key, "%s", t->shape_key);
    snprintf(r->dtype, sizeof r->dtype, "%s", kiln_dtype_name(t->dtype));
    r->default_ns = r->best_ns = -1;
    r->share = R->share[ii];
    r->cmp_cold_ns = r->cmp_warm_ns = r->cmp_pick_ns = r->cmp_best_ns = -1;
  }
}

/* Everything before the searches: the session on db with imported records
 * verified, one full run, the instances, the device model, their order. */
static int tune_prepare(tune_run *R) {
  kiln_session *s = R->s;
  int rc = kiln_session_set_db(s, R->db, R->err);
  if (rc) return rc;
  /* imported / shared records for this device are re-timed before they are trusted (tuner/verify.c) */
  kiln_verify_result *vres = NULL;
  int nv = 0;
  if ((rc = kiln_verify_imported(s, R->db, NULL, &vres, &nv, R->err)) != 0) return rc;
  free(vres);
  /* one full run so every buffer holds the model's real data */
  if ((rc = kiln_session_run(s, R->err)) != 0) return rc;
  R->g = s->m->g;
  R->d = s->d;
  R->inst = calloc((size_t)R->g->nnodes + 1, sizeof *R->inst);
  R->res = calloc((size_t)R->g->nnodes + 1, sizeof *R->res);
  R->host = calloc((size_t)R->g->nvals + 1, sizeof(void *));
  if (!R->inst || !R->res || !R->host) return kiln__err(R->err, KILN_ENOMEM, "out of memory");
  if ((rc = collect_tune_instances(R)) != 0) return rc;
  /* the cost model: the device's probe (run now when the device has none) */
  if ((rc = tune_device_model(R)) != 0) return rc;
  /* the instances that matter most first: small ones get what budget is left */
  R->share = calloc((size_t)R->ninst + 1, sizeof(double));
  if (!R->share || order_by_share(R->db, s->db_device, R->d, R->inst, R->ninst, R->share) != 0) return kiln__err(R->err, KILN_ENOMEM, "out of memory");
  for (int ii = 0; ii < R->ninst && !rc; ii++) rc = refresh_features(R->db, s->db_device, &R->inst[ii].t, &R->res[ii].refreshed, R->err);
  return rc;
}

/* Budget left over. The model strategy measures a tenth of an instance's
 * candidates (MODEL_MIN_TRIALS..MODEL_MAX_TRIALS): a CNN's instances are
 * done long before a budget of minutes is (resnet50 with --budget 300: 25
 * instances searched in 2.7 min). What is left goes to the instances this
 * run searched, largest predicted share of the model's time first, each
 * above EXTRA_MIN_SHARE searched again for as many candidates as the first
 * search measured, none of them measured before, with the correction refitted
 * on everything measured so far; its contenders, old and new, are timed
 * again together and the duels choose anew. One such search per instance,
 * ending early when the budget does (resnet50: 72 more trials on 18
 * instances, done at 170 of 300 s); not without a budget (a run without one
 * ends when its searches do). */
#define EXTRA_MIN_SHARE 0.01
#define EXTRA_MIN_S 5.0
/* The share of a budget the extra pass leaves to the fusion step when the
 * plan holds groupings it will measure: an attention grouping (planned on
 * the model read again, both ways, twice) took 48 s of bert_encoder's 300. */
#define FUSION_RESERVE_ATT 0.25
#define FUSION_RESERVE 0.10
static int extra_pass(tune_run *R) {
  const kiln_tune_options *opt = &R->opt;
  if (opt->compare || !R->model || !R->have_dm || !(opt->budget_s > 0) || opt->max_trials > 0) return 0;
  int rc = 0, over = 0;
  for (int ii = 0; ii < R->ninst && !rc && !over; ii++) {
    if (opt->budget_s - (now_s() - R->t0) < EXTRA_MIN_S + R->reserve_s || (opt->stop && *opt->stop)) break;
    kiln_tune_result *r = &R->res[ii];
    if (R->share[ii] < EXTRA_MIN_SHARE || r->skipped || !r->tuned || !R->inst[ii].t.features) continue;
    int before = r->trials;
    rc = tune_instance(R, ii, &over, 1);
    if (!rc && r->trials > before) {
      r->extra = r->trials - before;
      save_winner(R, ii);
    }
  }
  return rc;
}

static int tune_body(kiln_session *s, kiln_db *db, const kiln_tune_options *o, kiln_tune_result **results, int *nresults, kiln_error *err) {
  tune_run R = {.s = s, .db = db, .err = err};
  R.t0 = now_s(); /* the budget covers everything from here: verification and the device probe too */
  if (o) R.opt = *o;
  if (!R.opt.strategy) R.opt.strategy = "model";
  R.random = !strcmp(R.opt.strategy, "random");
  R.model = !strcmp(R.opt.strategy, "model");
  if (!R.random && !R.model && strcmp(R.opt.strategy, "exhaustive"))
    return kiln__err(err, KILN_EINVAL, "unknown tuning strategy '%s' (model, exhaustive, random)", R.opt.strategy);
  if (R.opt.compare) R.model = 1, R.random = 0;
  *results = NULL;
  *nresults = 0;
  int rc = tune_prepare(&R);
  if (rc) {
    free(R.inst);
    free(R.res);
    free(R.host);
    free(R.share);
    return rc;
  }
  kiln_graph *g = R.g;
  R.x = (kiln_exec){.d = R.d, .g = g, .db = NULL, .ov_node = -1, .profile = true,
                    .evict_bytes = o && o->evict_mb > 0 ? (size_t)(o->evict_mb * 1048576.0) : 0};
  init_results(&R);
  int over = 0;
  R.deferred = calloc((size_t)R.ninst + 1, sizeof(int));
  kiln__device_defer_binaries(R.d, true, false);
  for (int ii = 0; ii < R.ninst && !over && !rc; ii++) {
    rc = tune_instance(&R, ii, &over, 0);
    if (!rc && !R.opt.compare && !R.res[ii].skipped) save_winner(&R, ii);
  }
  if (!rc && !R.opt.compare) rc = retime_deferred(&R);
  /* the fusion step after the kernels keeps its share of the budget: the
   * extra pass would spend all of it (bert_encoder with --budget 300 never
   * reached its attention grouping, which took 48 s to measure) */
  bool fam_fusion = !R.opt.families || !*R.opt.families || strstr(R.opt.families, "fusion");
  bool fusion_step = !R.opt.compare && R.opt.fusion_close >= 0 && g->fusion && fam_fusion;
  double close = R.opt.fusion_close > 0 ? R.opt.fusion_close : 1.5;
  int natt = 0, npend = fusion_step && R.opt.budget_s > 0 ? kiln__fusion_pending(s, close, &natt) : 0;
  if (npend) R.reserve_s = R.opt.budget_s * (natt ? FUSION_RESERVE_ATT : FUSION_RESERVE);
  if (!rc && !over) rc = extra_pass(&R);
  kiln__device_defer_binaries(R.d, false, false);
  free(R.deferred);
  kiln_cm_samples_free(&R.cold);
  for (int i = 0; i < R.x.nevents; i++) clReleaseEvent(R.x.events[i]);
  free(R.x.events);
  for (int i = 0; i < g->nvals; i++) free(R.host[i]);
  free(R.host);
  free(R.inst);
  free(R.share);
  /* the next run chooses parameters from the database again */
  for (int i = 0; i < g->nnodes; i++) g->nodes[i].tparams_origin = NULL;
  kiln_tune_result *res = R.res;
  int ninst = R.ninst;
  if (rc) { free(res); return rc; }
  /* fusion groupings whose predictions are close calls: measured and recorded
   * (tuner/fusion_tune.c), unless the budget is spent or --families leaves "fusion" out */
  if (fusion_step && !out_of_time(&R.opt, R.t0)) {
    rc = kiln__tune_fusion(s, db, close, &res, &ninst, err);
    /* KILN_ELIMIT: the budget refused a compile; the groupings measured so far are stored */
    if (rc && rc != KILN_ELIMIT) { free(res); return rc; }
  }
  *results = res;
  *nresults = ninst;
  return 0;
}

/* The budget and the stop also hold for compiling: with an empty program
 * cache, the model's own kernels (dozens, 0.1-1.5 s each on POCL) took
 * longer than a short budget before the first trial. A build that would
 * start after them is refused (KILN_ELIMIT, the count so far in the message);
 * what was compiled stays in the program cache for the next run. */
int kiln_tune(kiln_session *s, kiln_db *db, const kiln_tune_options *o, kiln_tune_result **results, int *nresults, kiln_error *err) {
  kiln__device_limit_builds(s->d, o && o->budget_s > 0 ? o->budget_s : 0, o ? o->stop : NULL);
  int rc = tune_body(s, db, o, results, nresults, err);
  kiln__device_limit_builds(s->d, 0, NULL);
  return rc;
}
