/* solver_cover.h: the parameter vectors the param tests (family_params.c,
 * gemm_params.c, conv_params.c) run for a tunable instance, taken from the
 * family registry (kernels/family.h), and the run of one vector against the
 * CPU reference. No list of families, solvers or parameter values lives in
 * the tests: a solver or parameter added to a family is run by them.
 *
 * The vectors of an instance t (sc_vectors): its defaults (as they run:
 * kiln_tunable_defaults, valid for t); then for every
 * solver of t's family a small set of valid vectors that together take
 * every value of every parameter the solver reads (a greedy cover over
 * candidates: sample k setting each parameter read to its k-th candidate,
 * random valid vectors, and for each (parameter, value) a vector found by
 * search), the parameters it does not read at their defaults. So every
 * value of every parameter of every solver runs where the instance and the
 * device allow it, in few vectors (few kernel compiles).
 * Include after kiln_internal.h, family.h and test_rng.h. */
#ifndef KILN_TESTS_SOLVER_COVER_H
#define KILN_TESTS_SOLVER_COVER_H
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SC_MAXVEC 256
typedef int sc_vec[KILN_MAX_KPARAMS];

static int sc_reads(const kiln_family *f, const kiln_solver *s, int j) { return j != f->selector && (s->uses >> j & 1); }

/* Sample k of solver si into p; 0 when k is past the solver's samples. */
static int sc_sample(const kiln_family *f, const kiln_tunable *t, int si, int k, int *p) {
  const kiln_solver *s = kiln_family_solver(f, si);
  int longest = 1;
  for (int j = 0; j < t->nparams; j++)
    if (sc_reads(f, s, j) && t->params[j].nvals > longest) longest = t->params[j].nvals;
  if (k >= longest) return 0;
  for (int j = 0; j < t->nparams; j++) p[j] = sc_reads(f, s, j) ? t->params[j].vals[k % t->params[j].nvals] : t->params[j].dflt;
  if (f->selector >= 0) p[f->selector] = s->select;
  return 1;
}

static int sc_has(sc_vec *v, int n, const int *p, int np) {
  for (int i = 0; i < n; i++) if (!memcmp(v[i], p, sizeof(int) * (size_t)np)) return 1;
  return 0;
}

static int sc_push(sc_vec *v, int *n, const int *p, int np) {
  if (*n >= SC_MAXVEC || sc_has(v, *n, p, np)) return 0;
  memset(v[*n], 0, sizeof v[*n]);
  memcpy(v[(*n)++], p, sizeof(int) * (size_t)np);
  return 1;
}

/* A valid vector of solver si with p[j] = val (j >= 0; the others drawn at
 * random among the solver's candidates, the last try keeps them at their
 * defaults); 1 if found. */
static int sc_search(const kiln_family *f, const kiln_tunable *t, const kiln_tunable *tv, const kiln_device_info *info, int si, int j, int val,
                     int *p) {
  const kiln_solver *s = kiln_family_solver(f, si);
  for (int tries = 0; tries < 2000; tries++) {
    for (int q = 0; q < t->nparams; q++) {
      const kiln_kparam *kp = &t->params[q];
      p[q] = sc_reads(f, s, q) && tries < 1999 && kp->nvals ? kp->vals[next_u64() % (uint64_t)kp->nvals] : kp->dflt;
    }
    if (f->selector >= 0) p[f->selector] = s->select;
    if (j >= 0) p[j] = val;
    if (!tv->valid || tv->valid(tv, p, info) == 0) return 1;
  }
  return 0;
}

/* (parameter, value) pairs of solver si that vector p takes and that no
 * vector of v[0..n) of the same solver takes. */
static int sc_gain(const kiln_family *f, const kiln_tunable *t, int si, sc_vec *v, int n, const int *p) {
  int g = 0;
  for (int j = 0; j < t->nparams; j++) {
    if (!sc_reads(f, kiln_family_solver(f, si), j)) continue;
    int seen = 0;
    for (int i = 0; i < n && !seen; i++) seen = v[i][j] == p[j] && kiln_family_solver_of(f, v[i]) == si;
    g += !seen;
  }
  return g;
}

#define SC_POOL 400
/* Appends to v a few vectors of solver si that together take every value
 * of every parameter it reads that any valid vector takes: candidates are
 * the cyclic samples, random valid vectors and one vector per (parameter,
 * value) found by search; the greedy cover of their pairs is kept. */
static void sc_cover_solver(const kiln_family *f, const kiln_tunable *t, const kiln_tunable *tv, const kiln_device_info *info, int si, sc_vec *v,
                            int *n) {
  sc_vec *pool = malloc(sizeof(sc_vec) * SC_POOL);
  if (!pool) return;
  int np = 0, p[KILN_MAX_KPARAMS];
  for (int k = 0; np < SC_POOL && sc_sample(f, t, si, k, p); k++)
    if (!tv->valid || tv->valid(tv, p, info) == 0) memcpy(pool[np++], p, sizeof p);
  for (int r = 0; r < 200 && np < SC_POOL; r++)
    if (sc_search(f, t, tv, info, si, -1, 0, p)) memcpy(pool[np++], p, sizeof p);
  for (int j = 0; j < t->nparams; j++)
    for (int c = 0; sc_reads(f, kiln_family_solver(f, si), j) && c < t->params[j].nvals && np < SC_POOL; c++)
      if (sc_search(f, t, tv, info, si, j, t->params[j].vals[c], p)) memcpy(pool[np++], p, sizeof p);
  for (;;) {
    int best = -1, bg = 0;
    for (int i = 0; i < np; i++) {
      int g = sc_gain(f, t, si, v, *n, pool[i]);
      if (g > bg) { bg = g; best = i; }
    }
    /* a solver whose every parameter is pinned still runs once */
    if (best < 0 && np > 0 && !sc_gain(f, t, si, v, *n, pool[0]) && kiln_family_solver_of(f, pool[0]) == si) {
      int ran = 0;
      for (int i = 0; i < *n && !ran; i++) ran = kiln_family_solver_of(f, v[i]) == si;
      if (!ran) best = 0;
    }
    if (best < 0 || !sc_push(v, n, pool[best], t->nparams)) break;
  }
  free(pool);
}

/* The vectors to run for instance t of family f (see the header): valid
 * for tv (t itself, or a copy whose dims are widened to lift pruning that
 * only saves tuning time) on info. Returns the count. */
static int sc_vectors(const kiln_family *f, const kiln_tunable *t, const kiln_tunable *tv, const kiln_device_info *info, sc_vec *v) {
  int n = 0, p[KILN_MAX_KPARAMS];
  kiln_tunable_defaults(t, info, p); /* what runs untuned: the descriptor's defaults, or the valid vector nearest to them */
  sc_push(v, &n, p, t->nparams);
  for (int si = 0; si < f->nsolvers; si++) sc_cover_solver(f, t, tv, info, si, v, &n);
  return n;
}

/* Runs node n (one of graph g, at index 0, its outputs' buffers filled with
 * poison first) on the device with the forced parameters p and compares
 * each output with the CPU reference host[]: max |dev - ref| <= 1e-4 *
 * max |ref| + 1e-5 (1e-3 for an output stored as half, whose rounding
 * alone is up to 4.9e-4 of it), exact for integer outputs. 0 if it
 * matches; otherwise prints a FAIL line and returns 1. */
static int sc_run(kiln_device *d, kiln_graph *g, kiln_node *n, void **host, const kiln_tunable *t, int *p, const char *label) {
  kiln_error err = {0};
  size_t maxb = 8;
  for (int k = 0; k < n->nout; k++) {
    size_t b = n->out[k] >= 0 ? kiln_value_bytes(&g->vals[n->out[k]]) : 0;
    if (b > maxb) maxb = b;
  }
  unsigned char *got = malloc(maxb + 8);
  if (!got) return 1;
  for (int k = 0; k < n->nout; k++) {
    kiln_value *y = n->out[k] >= 0 ? &g->vals[n->out[k]] : NULL;
    if (!y || !kiln_value_bytes(y)) continue;
    memset(got, 0x7f, maxb + 8); /* as half too: a NaN */
    kiln_cl_write(d, y->buf, got, kiln_value_dev_bytes(y), &err);
  }
  kiln_exec x = {.d = d, .g = g, .ov_node = 0, .ov_params = p};
  char ps[256];
  kiln_tunable_str(t, p, ps, sizeof ps);
  int bad = 0;
  if (kiln_exec_tparams(&x, n, t) != p) { /* the override is matched by node index: n must be g->nodes[0] */
    printf("FAIL %-44s %s: the forced parameters do not reach the node\n", label, ps);
    free(got);
    return 1;
  }
  if (getenv("SC_VERBOSE")) fprintf(stderr, "run %s %s\n", label, ps);
  if (n->op->dev(&x, n, &err)) {
    printf("FAIL %-44s %s: %s\n", label, ps, err.msg);
    free(got);
    return 1;
  }
  clFinish(d->q);
  for (int k = 0; k < n->nout && !bad; k++) {
    kiln_value *y = n->out[k] >= 0 ? &g->vals[n->out[k]] : NULL;
    size_t yb = y ? kiln_value_bytes(y) : 0;
    if (!yb) continue;
    if (kiln__value_read(d, y, got, &err)) { printf("FAIL %-44s read: %s\n", label, err.msg); bad = 1; break; }
    int64_t ne = kiln_value_numel(y), at = -1;
    double maxref = 0, maxdiff = 0;
    bool isf = kiln_dtype_is_float(y->dtype);
    for (int64_t e = 0; e < ne; e++) {
      double r = isf ? kiln_load_f(host[n->out[k]], y->dtype, e) : (double)kiln_load_i(host[n->out[k]], y->dtype, e);
      double v = isf ? kiln_load_f(got, y->dtype, e) : (double)kiln_load_i(got, y->dtype, e);
      if (fabs(r) > maxref) maxref = fabs(r);
      double de = isfinite(v) ? fabs(v - r) : (isfinite(r) ? INFINITY : 0);
      if (!(de <= maxdiff)) { maxdiff = de; at = e; }
    }
    double tol = isf ? (y->half ? 1e-3 : 1e-4) * maxref + 1e-5 : 0;
    if (!(maxdiff <= tol)) {
      printf("FAIL %-44s %s: output %d max err %.3g at %lld (max |ref| %.3g)\n", label, ps, k, maxdiff, (long long)at, maxref);
      bad = 1;
    }
  }
  free(got);
  return bad;
}

/* Per family of the registry: whether a case instantiated it, and the
 * solvers that ran (for the end-of-test check). */
static unsigned sc_ran[64];
static bool sc_seen[64];
/* Solvers a test leaves out on purpose (it prints why). */
static unsigned sc_skip[64];

/* Runs every vector of sc_vectors for node n; returns the number that
 * failed, *nrun the number run, *nsolvers the solvers among them; marks the
 * solvers that ran in sc_ran. */
static inline int sc_run_all(kiln_device *d, kiln_graph *g, kiln_node *n, void **host, const kiln_tunable *t, const kiln_tunable *tv,
                      const kiln_device_info *info, const char *label, int *nrun, int *nsolvers) {
  unsigned mine = 0;
  const kiln_family *f = kiln_family_find(t->family);
  *nrun = *nsolvers = 0;
  if (!f) { printf("FAIL %-44s family '%s' is not in the registry (kernels/family.c)\n", label, t->family); return 1; }
  int fi = 0;
  while (fi < kiln_nfamilies && kiln_families[fi] != f) fi++;
  if (fi < 64) sc_seen[fi] = true;
  sc_vec *v = malloc(sizeof(sc_vec) * SC_MAXVEC);
  if (!v) return 1;
  int nv = sc_vectors(f, t, tv, info, v), bad = 0;
  /* SC_ONLY=i runs only vector i (tests/oclgrind.sh runs each vector in a
   * process of its own under the uninitialized-value plugin); SC_TRACE=1
   * prints each vector's index and parameters on stderr before it runs */
  const char *only = getenv("SC_ONLY");
  for (int i = 0; i < nv; i++) {
    if (only && atoi(only) != i) continue;
    int si = kiln_family_solver_of(f, v[i]);
    if (getenv("SC_TRACE")) {
      char ps[512];
      kiln_tunable_str(t, v[i], ps, sizeof ps);
      fprintf(stderr, "[sc] %s vector %d: %s\n", label, i, ps);
    }
    bad += sc_run(d, g, n, host, t, v[i], label);
    (*nrun)++;
    if (si >= 0 && si < 32) mine |= 1u << si;
  }
  if (fi < 64) sc_ran[fi] |= mine;
  for (int si = 0; si < 32; si++) *nsolvers += mine >> si & 1;
  free(v);
  return bad;
}

/* The end-of-test check. every_family: each tunable family of the
 * registry must have been instantiated by a case; strict: each solver of
 * an instantiated family must have run (else a solver valid for no case on
 * this device is only noted). 0 if it passes. */
static int sc_check(bool every_family, bool strict) {
  int bad = 0;
  for (int fi = 0; fi < kiln_nfamilies && fi < 64; fi++) {
    const kiln_family *f = kiln_families[fi];
    if (!f->nparams) continue;
    if (!sc_seen[fi]) {
      if (every_family) printf("FAIL family %s: no case instantiates it (add one)\n", f->name);
      bad |= every_family;
      continue;
    }
    for (int si = 0; si < f->nsolvers; si++)
      if (!((sc_ran[fi] | sc_skip[fi]) >> si & 1)) {
        printf("%s family %s: solver %s valid for no case on this device\n", strict ? "FAIL" : "note", f->name, kiln_family_solver(f, si)->name);
        bad |= strict;
      }
  }
  return bad;
}

/* ---- what the three tests share around a one-node graph ---- */

/* A device buffer for every value of g, holding its host data if any; 0 ok. */
static inline int sc_upload(kiln_device *d, kiln_graph *g, kiln_error *err) {
  for (int i = 0; i < g->nvals; i++) {
    kiln_value *v = &g->vals[i];
    size_t b = kiln_value_dev_bytes(v);
    v->buf = kiln_cl_alloc(d, b ? b : 16, err);
    if (!v->buf || (v->data && b && kiln__value_upload(d, v, err))) return 1; /* half: converted */
  }
  clFinish(d->q);
  return 0;
}

/* Frees the values of g (their host data, buffers and names), the node's
 * device state and the references host[]. */
static inline void sc_free_graph(kiln_graph *g, kiln_node *n, void **host) {
  for (int i = 0; i < g->nvals; i++) {
    if (host) free(host[i]);
    free(g->vals[i].data);
    if (g->vals[i].buf) clReleaseMemObject(g->vals[i].buf);
    free(g->vals[i].name);
  }
  for (int k = 0; k < 4; k++) {
    if (n->param[k]) clReleaseMemObject(n->param[k]);
    if (n->scratch[k]) clReleaseMemObject(n->scratch[k]);
  }
  free(n->state);
  free(host);
  free(g->vals);
}

/* --device SEL and --case LABEL (repeatable: run only the cases with one of
 * these labels; tests/oclgrind.sh runs a few small ones under Oclgrind).
 * 0 ok, 2 (printed) on a usage error. */
static const char *sc_only[16];
static int sc_nonly;
static bool sc_half; /* --half: the tests that know it run their fp16-storage variants */
static inline int sc_args(int argc, char **argv, const char **devsel) {
  *devsel = NULL;
  for (int i = 1; i < argc; i += 2) {
    if (!strcmp(argv[i], "--half")) { sc_half = true; i--; continue; }
    if (i + 1 < argc && !strcmp(argv[i], "--device")) *devsel = argv[i + 1];
    else if (i + 1 < argc && !strcmp(argv[i], "--case") && sc_nonly < 16) sc_only[sc_nonly++] = argv[i + 1];
    else { fprintf(stderr, "usage: %s [--device SEL] [--case LABEL]... [--half]\n", argv[0]); return 2; }
  }
  return 0;
}
/* The arguments, then the device into *d: 0, else the exit status (2 on a
 * usage error, 77 = skipped when no device opens). */
static inline int sc_start(int argc, char **argv, kiln_device **d) {
  const char *devsel;
  kiln_error err = {0};
  if (sc_args(argc, argv, &devsel)) return 2;
  if (kiln_device_open(devsel, d, &err)) {
    printf("skipped: %s\n", err.msg);
    return 77;
  }
  kiln_options env; /* KILN_CACHE_DIR, KILN_GEMM_KERNELS and the rest, as the kiln command reads them */
  if (kiln_options_from_env(&env, &err) || kiln_device_set_options(*d, &env, &err)) { printf("FAIL: %s\n", err.msg); return 1; }
  return 0;
}
static inline int sc_selected(const char *label) {
  for (int i = 0; i < sc_nonly; i++) if (!strcmp(label, sc_only[i])) return 1;
  return sc_nonly == 0;
}
#endif
