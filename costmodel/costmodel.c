/* costmodel.c: base estimates from probed (or spec-sheet) device figures,
 * per-family corrections fitted on measured records, and the held-out
 * evaluation behind `kiln model eval`. See kiln_costmodel.h. */
#include "kiln_costmodel.h"
#include "family.h"
#include <ctype.h>
#include <math.h>
#include <strings.h>

/* ---- device models ---- */

static double probe_value(const char *json, const char *name, double dflt) {
  char key[80];
  snprintf(key, sizeof key, "\"%s\":{\"value\":", name);
  const char *p = strstr(json, key);
  if (!p) return dflt;
  return strtod(p + strlen(key), NULL);
}

int kiln_devmodel_from_probe(const char *json, const kiln_device_info *info, kiln_devmodel *m, kiln_error *err) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", info ? info->name : "device");
  if (info) m->info = *info;
  m->compute_units = info && info->compute_units > 0 ? info->compute_units : 1;
  static const char *vecs[5] = {"flops_vec1", "flops_vec2", "flops_vec4", "flops_vec8", "flops_vec16"};
  for (int i = 0; i < 5; i++) m->flops[i] = probe_value(json, vecs[i], 0);
  if (m->flops[0] <= 0) return kiln__err(err, KILN_EPARSE, "device probe has no arithmetic figures");
  static const struct { const char *name; double size; } bws[] = {
    {"copy_32KiB", 32768}, {"copy_256KiB", 262144}, {"copy_2MiB", 2097152}, {"copy_16MiB", 16777216}, {"copy_128MiB", 134217728}};
  for (size_t i = 0; i < sizeof bws / sizeof bws[0]; i++) {
    double v = probe_value(json, bws[i].name, 0);
    if (v > 0) { m->bw_size[m->nbw] = bws[i].size; m->bw[m->nbw] = v; m->nbw++; }
  }
  if (!m->nbw) return kiln__err(err, KILN_EPARSE, "device probe has no bandwidth figures");
  m->local_bw = probe_value(json, "local", m->bw[0]);
  m->launch_us = probe_value(json, "launch", 10);
  m->dep_us = probe_value(json, "launch_sync", m->launch_us);
  /* a probe from before the gather figure: a copy's rate at the largest size (4 bytes read, 4 written) */
  m->gather = probe_value(json, "gather", m->bw[m->nbw - 1] / 8);
  /* a probe from before the span figures: the wall-clock ones stand in */
  m->span_us = probe_value(json, "launch_span", m->launch_us);
  m->next_us = probe_value(json, "launch_next", m->launch_us + m->dep_us);
  m->complete = probe_value(json, "gather", 0) > 0 && probe_value(json, "launch_next", 0) > 0;
  return 0;
}

/* Spec-sheet figures: FP32 rate, DRAM bandwidth, last-level cache size, compute units. */
static const struct profile {
  const char *key, *name;
  double tflops, dram_gbps, llc_mb, llc_gbps, local_gbps, launch_us;
  int cu, max_wg;
  uint64_t local_mem;
} profiles[] = {
  {"rtx3060", "NVIDIA GeForce RTX 3060", 12.7, 360, 3, 1400, 9000, 4, 28, 1024, 49152},
  {"h100", "NVIDIA H100 SXM", 67.0, 3350, 50, 10000, 33000, 3, 132, 1024, 49152},
  {"rx7900xtx", "AMD Radeon RX 7900 XTX", 61.4, 960, 96, 3500, 20000, 4, 96, 1024, 65536},
  {"arc-a770", "Intel Arc A770", 19.7, 560, 16, 1800, 8000, 6, 32, 1024, 65536},
  {"m2", "Apple M2 (10-core GPU)", 3.6, 100, 8, 400, 2000, 8, 10, 1024, 32768},
};

/* Whether profile key (e.g. "h100") names the device called name ("NVIDIA
 * H100 80GB HBM3"): the key's letters and digits appear in a row among the
 * name's, case aside. */
static int profile_names(const char *key, const char *name) {
  char k[64], n[256];
  size_t a = 0, b = 0;
  for (; *key && a + 1 < sizeof k; key++) if (isalnum((unsigned char)*key)) k[a++] = (char)tolower((unsigned char)*key);
  for (; *name && b + 1 < sizeof n; name++) if (isalnum((unsigned char)*name)) n[b++] = (char)tolower((unsigned char)*name);
  k[a] = n[b] = 0;
  return a > 0 && strstr(n, k) != NULL;
}

int kiln_cm_profile_model(const char *name, kiln_devmodel *m, kiln_cm_basis *basis, kiln_error *err) {
  int rc = kiln_devmodel_profile(name, m, err);
  if (rc) return rc;
  kiln_cm_basis unused;
  if (!basis) basis = &unused;
  memset(basis, 0, sizeof *basis);
  const char *pd = kiln_cm_prior_device(&m->info), *pj = kiln_cm_prior_probe(&m->info);
  if (pd) snprintf(basis->prior_device, sizeof basis->prior_device, "%s", pd);
  if (pd && pj && profile_names(name, pd)) { /* the prior was measured on this kind of device: its probe, not the spec sheet */
    kiln_devmodel pm;
    if (kiln_devmodel_from_probe(pj, &m->info, &pm, NULL) == 0) {
      snprintf(pm.name, sizeof pm.name, "%s", m->name);
      *m = pm;
      basis->measured_probe = 1;
    }
  }
  return 0;
}

const char *const *kiln_devmodel_profiles(void) {
  static const char *names[sizeof profiles / sizeof profiles[0] + 1];
  for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) names[i] = profiles[i].key;
  return names;
}

int kiln_devmodel_profile(const char *name, kiln_devmodel *m, kiln_error *err) {
  for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
    const struct profile *p = &profiles[i];
    if (strcasecmp(name, p->key)) continue;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", p->name);
    /* SIMT devices: vector width barely matters for arithmetic; wide vectors cost registers */
    double f = p->tflops * 1e3;
    m->flops[0] = f; m->flops[1] = f; m->flops[2] = f; m->flops[3] = 0.9 * f; m->flops[4] = 0.75 * f;
    m->bw_size[0] = p->llc_mb * 0.5 * 1048576; m->bw[0] = p->llc_gbps;
    m->bw_size[1] = p->llc_mb * 4 * 1048576; m->bw[1] = p->dram_gbps;
    m->nbw = 2;
    m->local_bw = p->local_gbps;
    m->launch_us = p->launch_us;
    m->dep_us = 2 * p->launch_us;
    m->span_us = p->launch_us;
    m->next_us = m->launch_us + m->dep_us;
    m->gather = p->dram_gbps / 8;
    m->complete = 1;
    m->compute_units = p->cu;
    snprintf(m->info.name, sizeof m->info.name, "%s", p->name);
    snprintf(m->info.platform, sizeof m->info.platform, "profile");
    m->info.compute_units = p->cu;
    m->info.max_work_group = (size_t)p->max_wg;
    m->info.local_mem = p->local_mem;
    m->info.global_mem = (uint64_t)8 << 30;
    m->info.max_alloc = (uint64_t)2 << 30;
    m->info.is_gpu = 1;
    return 0;
  }
  char names[256] = "";
  size_t o = 0;
  for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", profiles[i].key);
  return kiln__err(err, KILN_ENOTFOUND, "no device profile '%s' (known: %s)", name, names);
}

/* ---- prediction ---- */

static double peak_for_vec(const kiln_devmodel *m, double vec) {
  int i = vec >= 16 ? 4 : vec >= 8 ? 3 : vec >= 4 ? 2 : vec >= 2 ? 1 : 0;
  return m->flops[i] > 0 ? m->flops[i] : m->flops[0];
}

static double bw_for(const kiln_devmodel *m, double bytes) {
  /* the figure measured at the smallest size that holds the working set */
  for (int i = 0; i < m->nbw; i++)
    if (bytes <= m->bw_size[i]) return m->bw[i];
  return m->bw[m->nbw - 1];
}

/* Components of the base estimate (ns). */
static void parts(const kiln_devmodel *m, const kiln_features *f, double *compute, double *mem, double *local, double *gather, double *launch,
                  double *eff) {
  double groups = f->work_groups > 0 ? f->work_groups : 1, cu = m->compute_units > 0 ? m->compute_units : 1;
  double waves = ceil(groups / cu);
  *eff = groups / (waves * cu); /* last-wave tail */
  *compute = f->flops / peak_for_vec(m, f->vec);              /* GFLOP/s == flop/ns */
  *mem = f->bytes / bw_for(m, f->bytes);
  if (f->footprint > 0) {
    /* two levels: the compulsory traffic at the bandwidth for its size, the
     * rest (re-reads) at the best figure measured, a cache's; whichever takes
     * longer. The gathered elements' write and first read (8 bytes each) are
     * the layout change's, timed as such (*gather) */
    double top = m->bw[0], gw = 8 * f->gathered;
    for (int i = 1; i < m->nbw; i++) if (m->bw[i] > top) top = m->bw[i];
    double fp = f->footprint > gw ? f->footprint - gw : 0, by = f->bytes > gw ? f->bytes - gw : 0;
    double dram = fp / bw_for(m, fp), cached = by / top;
    *mem = dram > cached ? dram : cached;
  }
  /* layout changes by index arithmetic, at the probed rate: a kernel of their
   * own before the work they feed */
  *gather = m->gather > 0 ? f->gathered / m->gather : 0;
  *local = f->bytes_local / (m->local_bw > 0 ? m->local_bw : 1);
  /* kernels of one candidate run back to back, each waiting for the one
   * before: the span the tuner measures holds a kernel's fixed duration and
   * a gap per kernel after the first (on POCL 0.4 us and 3 us, where the
   * wall-clock launch figures read 3 us and 25-46 us) */
  double nl = f->launches > 0 ? f->launches : 1;
  *launch = (m->span_us + (nl - 1) * m->next_us) * 1e3;
}

/* Reads of rows a page or more apart (kiln_features.strided), at the probed
 * rate of scattered accesses. A cost the correction does not scale: the
 * records its weights were fitted on (the built-in prior's among them) have
 * none, and as part of the base its share terms would cancel it (a fit that
 * learnt "memory-dominated estimates are pessimistic" turned vae_decoder_16's
 * 1x1 at 64 KiB rows from 92 ms measured into 0.2 us predicted). */
static double strided_ns(const kiln_devmodel *m, const kiln_features *f) { return f->strided > 0 && m->gather > 0 ? f->strided / m->gather : 0; }

/* The base estimate (ns) split into the kernels' work and the fixed part that
 * the correction does not scale (launches, strided reads). */
static void base_split(const kiln_devmodel *m, const kiln_features *f, double *work, double *fixed) {
  double c, mem, l, g, eff;
  parts(m, f, &c, &mem, &l, &g, fixed, &eff);
  double body = c > mem ? c : mem;
  if (l > body) body = l;
  *work = body / eff + g;
  *fixed += strided_ns(m, f);
}

double kiln_cm_base_ns(const kiln_devmodel *m, const kiln_features *f) {
  double w, la;
  base_split(m, f, &w, &la);
  return w + la;
}

/* Generic correction features of a candidate (x[0..KILN_CM_NB)). */
static void corr_x(const kiln_devmodel *m, const kiln_features *f, double *x) {
  double c, mem, l, g, la, eff;
  parts(m, f, &c, &mem, &l, &g, &la, &eff);
  double base = kiln_cm_base_ns(m, f) - strided_ns(m, f); /* the terms below are shares of what the correction scales */
  x[0] = 1;
  x[1] = log1p(c) - log1p(base);       /* how compute-bound */
  x[2] = log1p(mem) - log1p(base);     /* how memory-bound */
  x[3] = log(l / base + 0.01);          /* local traffic (its share: the time of none is no size term) */
  x[4] = log(f->wg_size > 0 ? f->wg_size : 1);
  x[5] = log(f->vec > 0 ? f->vec : 1);
  x[6] = log(eff);
  x[7] = log1p(base) - 10;             /* time not proportional to the base estimate (centred near 20 us) */
  if (x[7] < -6) x[7] = -6;             /* bounded like the scale terms (full_x) */
  if (x[7] > 6) x[7] = 6;
  x[8] = log(f->work_groups > 0 ? f->work_groups : 1);
  x[9] = log(f->launches > 0 ? f->launches : 1);
  /* how bound by compulsory traffic (a panel written and read once that no
   * cache holds) rather than by re-reads a cache may serve */
  double fb = f->footprint > 0 ? f->footprint : f->bytes;
  x[10] = log1p(fb / bw_for(m, fb)) - log1p(base);
  /* how much of the time layout changes could take: a gathered element
   * moved (read and written, 8 bytes) at the bandwidth of its buffer */
  double gb = 8 * f->gathered;
  x[11] = log((gb > 0 ? gb / bw_for(m, gb) : 0) / base + 0.01);
}

/* Calls fn for every indicator token of canonical parameter text: each
 * "NAME=V", "FIRST=V&NAME=V" pairing the first parameter (the algorithm or
 * kernel selector) with the rest, and "FIRST=V&A=x&B=y" for every two of the
 * rest (a tile's shape: the time of TM=8 depends on TN). Tokens of
 * parameters an algorithm does not read are constant under its FIRST=V and
 * never enter the fit's dictionary (kiln_cm_fit). */
#define TOK_MAXITEMS 16
static void param_tokens(const char *params, void (*fn)(const char *tok, void *ctx), void *ctx) {
  if (!params || !*params) return;
  char item[TOK_MAXITEMS][24], tok[72];
  int n = 0;
  const char *p = params;
  while (*p && n < TOK_MAXITEMS) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    size_t l = len >= 24 ? 23 : len;
    memcpy(item[n], p, l);
    item[n][l] = 0;
    n++;
    p += len;
    if (*p == ',') p++;
  }
  for (int i = 0; i < n; i++) {
    fn(item[i], ctx);
    if (i == 0) continue;
    snprintf(tok, sizeof tok, "%s&%s", item[0], item[i]);
    fn(tok, ctx);
  }
  for (int i = 1; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      snprintf(tok, sizeof tok, "%s&%s&%s", item[0], item[i], item[j]);
      fn(tok, ctx);
    }
}

typedef struct { const kiln_correction *c; double *x, scale; } tokctx;

/* Sets the indicator (and scale term) of a token found in the dictionary. */
static void tok_visit(const char *tok, void *ctx) {
  tokctx *t = ctx;
  for (int i = 0; i < t->c->ntok; i++)
    if (!strcmp(t->c->tok[i], tok)) {
      t->x[KILN_CM_NB + i] = 1;
      t->x[KILN_CM_NB + KILN_CM_MAXTOK + i] = t->scale;
      return;
    }
}

/* Token counts over the training records (open list; the dictionary is built from it). */
typedef struct { char (*tok)[72]; int *cnt, n, cap; } tokcount;

static void tok_count(const char *tok, void *ctx) {
  tokcount *tc = ctx;
  for (int i = 0; i < tc->n; i++)
    if (!strcmp(tc->tok[i], tok)) { tc->cnt[i]++; return; }
  if (tc->n == tc->cap) {
    int cap = tc->cap ? 2 * tc->cap : 256;
    char (*nt)[72] = realloc(tc->tok, sizeof *nt * (size_t)cap);
    if (nt) tc->tok = nt;
    int *nc = realloc(tc->cnt, sizeof *nc * (size_t)cap);
    if (nc) tc->cnt = nc;
    if (!nt || !nc) return;
    tc->cap = cap;
  }
  snprintf(tc->tok[tc->n], sizeof tc->tok[0], "%s", tok);
  tc->cnt[tc->n++] = 1;
}

static int tok_find(const tokcount *tc, const char *tok) {
  for (int i = 0; i < tc->n; i++) if (!strcmp(tc->tok[i], tok)) return tc->cnt[i];
  return 0;
}

/* The dictionary of a fit: every "NAME=V" and every "FIRST=V&NAME=V" whose
 * NAME varies under FIRST=V of the training records (as many as fit), then
 * the "FIRST=V&A=x&B=y" tokens whose A and B both vary under FIRST=V seen at
 * least twice (a token present in every record of its FIRST=V adds nothing
 * the FIRST=V token does not have, and would weaken its ridge penalty). */
static void tok_dictionary(kiln_correction *c, const char *const *params, const double *ns, int n) {
  tokcount tc = {0};
  for (int i = 0; i < n; i++)
    if (ns[i] > 0 && params) param_tokens(params[i], tok_count, &tc);
  c->ntok = 0;
  int used = 0;
  for (int i = 0; i < n; i++) used += ns[i] > 0;
  /* tile-shape tokens add up to a few hundred indicators: only once there
   * are records enough to fit them (replaying the model strategy on
   * resnet18's sweeps, with them from the first instance the cold-start
   * picks were 1.30x the best, without them 1.15x) */
  int passes = used >= KILN_CM_TRIPLE_MIN ? 2 : 1;
  for (int pass = 0; pass < passes; pass++)
    for (int i = 0; i < tc.n && c->ntok < KILN_CM_MAXTOK; i++) {
      const char *a1 = strchr(tc.tok[i], '&'), *a2 = a1 ? strchr(a1 + 1, '&') : NULL;
      if ((a2 != NULL) != (pass == 1) || strlen(tc.tok[i]) >= sizeof c->tok[0]) continue;
      if (passes == 2 && tc.cnt[i] < KILN_CM_TOK_MIN) continue;
      if (a1) {
        char f[72], fa[72], fb[72];
        snprintf(f, sizeof f, "%.*s", (int)(a1 - tc.tok[i]), tc.tok[i]);
        int nf = tok_find(&tc, f);
        if (!a2 && tc.cnt[i] >= nf) continue; /* a parameter that FIRST=V pins */
        if (a2) {
          snprintf(fa, sizeof fa, "%.*s", (int)(a2 - tc.tok[i]), tc.tok[i]);
          snprintf(fb, sizeof fb, "%s%s", f, a2);
          if (tok_find(&tc, fa) >= nf || tok_find(&tc, fb) >= nf || tc.cnt[i] < 2) continue;
        }
      }
      snprintf(c->tok[c->ntok++], sizeof c->tok[0], "%s", tc.tok[i]);
    }
  free(tc.tok);
  free(tc.cnt);
}

static double scale_of(const kiln_features *f) {
  double sc = log(f->flops > 1 ? f->flops : 1) - 20;
  return sc < -5 ? -5 : sc > 5 ? 5 : sc;
}

/* Full feature vector (generic + indicators of the correction's tokens and
 * their scale terms). */
static void full_x(const kiln_devmodel *m, const kiln_correction *c, const kiln_features *f, const char *params, double *x) {
  memset(x, 0, sizeof(double) * KILN_CM_NX);
  corr_x(m, f, x);
  /* scale terms: log flops centred near 0.5 GFLOP, bounded to the range
   * the fit saw, so that an instance far smaller or larger than the
   * training ones (a 4-channel 1x1 of 8 kFLOP) does not extrapolate a
   * token's slope */
  double sc = scale_of(f);
  if (c->sc_hi > c->sc_lo) sc = sc < c->sc_lo ? c->sc_lo : sc > c->sc_hi ? c->sc_hi : sc;
  tokctx t = {c, x, sc};
  param_tokens(params, tok_visit, &t);
}

double kiln_cm_predict_ns(const kiln_devmodel *m, const kiln_correction *c, const kiln_features *f, const char *params) {
  double work, la;
  base_split(m, f, &work, &la);
  if (!c || c->nsamples == 0) return work + la;
  double x[KILN_CM_NX], y = 0;
  full_x(m, c, f, params, x);
  for (int i = 0; i < KILN_CM_NX; i++) y += c->w[i] * x[i];
  if (y > 30) y = 30; /* overflow guard only: a tighter clamp ties the candidates it cuts off */
  if (y < -30) y = -30;
  return work * exp(y) + la; /* the correction scales the kernels' work, not the fixed launch costs */
}

/* Solves A w = b (n x n, row-major) by Gaussian elimination with partial pivoting. */
static void solve(double *A, double *b, double *w, int n) {
  for (int c = 0; c < n; c++) {
    int piv = c;
    for (int r = c + 1; r < n; r++) if (fabs(A[r * n + c]) > fabs(A[piv * n + c])) piv = r;
    if (piv != c) {
      for (int k = 0; k < n; k++) { double t = A[c * n + k]; A[c * n + k] = A[piv * n + k]; A[piv * n + k] = t; }
      double t = b[c]; b[c] = b[piv]; b[piv] = t;
    }
    if (fabs(A[c * n + c]) < 1e-12) continue;
    for (int r = c + 1; r < n; r++) {
      double f = A[r * n + c] / A[c * n + c];
      if (f == 0) continue;
      for (int k = c; k < n; k++) A[r * n + k] -= f * A[c * n + k];
      b[r] -= f * b[c];
    }
  }
  for (int c = n - 1; c >= 0; c--) {
    if (fabs(A[c * n + c]) < 1e-12) { w[c] = 0; continue; }
    double v = b[c];
    for (int k = c + 1; k < n; k++) v -= A[c * n + k] * w[k];
    w[c] = v / A[c * n + c];
  }
}

static void fit_core(const kiln_devmodel *m, const char *family, const kiln_features *fs, const char *const *params, const double *ns,
                     const double *wt, int n, kiln_correction *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->family, sizeof c->family, "%s", family ? family : "");
  /* the token dictionary: the parameter values of the training records
   * (tokens that vary under their FIRST=V; see param_tokens) */
  tok_dictionary(c, params, ns, n);
  c->sc_lo = INFINITY;
  c->sc_hi = -INFINITY;
  for (int i = 0; i < n; i++)
    if (ns[i] > 0) {
      double sc = scale_of(&fs[i]);
      if (sc < c->sc_lo) c->sc_lo = sc;
      if (sc > c->sc_hi) c->sc_hi = sc;
    }
  if (!(c->sc_hi > c->sc_lo)) c->sc_lo = c->sc_hi = 0;
  /* the active columns: the generic features, the tokens and their scale terms */
  int col[KILN_CM_NX], pos[KILN_CM_NX], nx = 0;
  for (int r = 0; r < KILN_CM_NX; r++) {
    int active = r < KILN_CM_NB || (r < KILN_CM_NB + KILN_CM_MAXTOK ? r - KILN_CM_NB < c->ntok : r - KILN_CM_NB - KILN_CM_MAXTOK < c->ntok);
    pos[r] = active ? nx : -1;
    if (active) col[nx++] = r;
  }
  double *A = calloc((size_t)nx * (size_t)nx, sizeof(double)), *b = calloc((size_t)nx, sizeof(double)), *w = calloc((size_t)nx, sizeof(double));
  if (!A || !b || !w) { free(A); free(b); free(w); c->ntok = 0; return; }
  int used = 0;
  for (int i = 0; i < n; i++) {
    if (!(ns[i] > 0)) continue;
    double x[KILN_CM_NX], xv[KILN_CM_NX];
    int nz[KILN_CM_NX], nnz = 0;
    full_x(m, c, &fs[i], params ? params[i] : NULL, x);
    /* the log ratio of the measured work to the estimated work (launch
     * costs off both; a measurement below the launch estimate counts as a
     * quarter of itself) */
    double est, la;
    base_split(m, &fs[i], &est, &la);
    double work = ns[i] - la;
    if (work < 0.25 * ns[i]) work = 0.25 * ns[i];
    double y = log(work) - log(est);
    for (int r = 0; r < KILN_CM_NX; r++)
      if (x[r] != 0 && pos[r] >= 0) { nz[nnz] = pos[r]; xv[nnz++] = x[r]; }
    double wi = wt ? wt[i] : 1;
    for (int a = 0; a < nnz; a++) {
      b[nz[a]] += wi * xv[a] * y;
      for (int k = 0; k < nnz; k++) A[nz[a] * nx + nz[k]] += wi * xv[a] * xv[k];
    }
    used++;
  }
  if (used) {
    /* ridge: shrink towards "the base estimate is right"; light on the
     * intercept, lighter on the indicators (each is seen by a part of the
     * records only; more on their scale terms) */
    for (int q = 0; q < nx; q++) {
      int r = col[q];
      A[q * nx + q] += r == 0 ? 0.01 : r < KILN_CM_NB ? 1.0 : r < KILN_CM_NB + KILN_CM_MAXTOK ? 1.0 : 3.0;
    }
    solve(A, b, w, nx);
    for (int q = 0; q < nx; q++) c->w[col[q]] = w[q];
    c->nsamples = used;
  } else c->ntok = 0;
  free(w);
  free(A);
  free(b);
}

void kiln_features_to_array(const kiln_features *f, double *a, int *n) {
  a[0] = f->flops; a[1] = f->bytes; a[2] = f->bytes_local; a[3] = f->work_groups; a[4] = f->wg_size; a[5] = f->vec; a[6] = f->launches;
  a[7] = f->footprint;
  a[8] = f->gathered;
  a[9] = f->strided;
  *n = 10;
}
void kiln_features_from_array(const double *a, int n, kiln_features *f) {
  memset(f, 0, sizeof *f);
  if (n >= 7) { f->flops = a[0]; f->bytes = a[1]; f->bytes_local = a[2]; f->work_groups = a[3]; f->wg_size = a[4]; f->vec = a[5]; f->launches = a[6]; }
  if (n >= 8) f->footprint = a[7]; /* records of kiln before footprints: 0, unknown */
  if (n >= 9) f->gathered = a[8];
  if (n >= 10) f->strided = a[9];
}

/* ---- database-backed fitting and evaluation ---- */

int kiln_cm_samples_add(kiln_cm_samples *s, const kiln_features *f, const char *params, const char *key, double ns) {
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 256;
    kiln_features *nf = realloc(s->f, sizeof *nf * (size_t)cap);
    if (nf) s->f = nf;
    double *nn = realloc(s->ns, sizeof *nn * (size_t)cap);
    if (nn) s->ns = nn;
    char (*nk)[320] = realloc(s->key, sizeof *nk * (size_t)cap);
    if (nk) s->key = nk;
    char (*np)[256] = realloc(s->par, sizeof *np * (size_t)cap);
    if (np) s->par = np;
    const char **npp = realloc(s->pp, sizeof *npp * (size_t)cap);
    if (npp) s->pp = npp;
    if (!nf || !nn || !nk || !np || !npp) return KILN_ENOMEM;
    s->cap = cap;
  }
  s->f[s->n] = *f;
  s->ns[s->n] = ns;
  snprintf(s->key[s->n], sizeof s->key[0], "%s", key ? key : "");
  snprintf(s->par[s->n], sizeof s->par[0], "%s", params ? params : "");
  s->n++;
  return 0;
}

void kiln_cm_instance_key(int dtype, const char *shape_key, const char *epilogue, char *buf, size_t len) {
  snprintf(buf, len, "%d|%s|%s", dtype, shape_key, epilogue);
}
void kiln_cm_record_key(const kiln_record *r, char *buf, size_t len) { kiln_cm_instance_key(r->dtype, r->shape_key, r->epilogue, buf, len); }

static void collect(const kiln_record *r, void *ctx) {
  kiln_cm_samples *s = ctx;
  if ((strcmp(r->status, "ok") && strcmp(r->status, "slow")) || r->nfeat < 7 || !(kiln_record_ns(r) > 0) || strcmp(r->origin, "measured")) return;
  kiln_features f;
  kiln_features_from_array(r->feat, r->nfeat, &f);
  char key[320];
  kiln_cm_record_key(r, key, sizeof key);
  kiln_cm_samples_add(s, &f, r->params, key, kiln_record_ns(r));
}

int kiln_cm_samples_db(kiln_db *db, int64_t device, const char *family, kiln_cm_samples *s, kiln_error *err) {
  return kiln_db_each_family(db, device, family, collect, s, err);
}

static int cmp_key_ctx(const void *x, const void *y, void *ctx) {
  const kiln_cm_samples *s = ctx;
  int a = *(const int *)x, b = *(const int *)y, c = strcmp(s->key[a], s->key[b]);
  return c ? c : (a > b) - (a < b);
}

void kiln_cm_fit_samples(const kiln_devmodel *m, const char *family, kiln_cm_samples *s, const char *skip_key, kiln_correction *c) {
  /* leave out one instance: its rows get no weight (ns 0 is skipped by the fit) */
  double *ns = malloc(sizeof(double) * (size_t)(s->n + 1)), *wt = malloc(sizeof(double) * (size_t)(s->n + 1));
  if (!ns || !wt) { free(ns); free(wt); memset(c, 0, sizeof *c); return; }
  for (int i = 0; i < s->n; i++) { s->pp[i] = s->par[i]; ns[i] = skip_key && !strcmp(s->key[i], skip_key) ? 0 : s->ns[i]; }
  /* each record weighs (its instance's best / its time)^KILN_CM_FOCUS (at
   * least 0.05): the fit cares most about the region the picks come from,
   * not about how much slower a hopeless candidate is */
  int *ord = malloc(sizeof(int) * (size_t)(s->n + 1));
  for (int i = 0; i < s->n; i++) wt[i] = 1;
  if (ord) {
    for (int i = 0; i < s->n; i++) ord[i] = i;
    qsort_r(ord, (size_t)s->n, sizeof(int), cmp_key_ctx, s);
    for (int a = 0; a < s->n;) {
      int b = a;
      double best = INFINITY;
      while (b < s->n && !strcmp(s->key[ord[b]], s->key[ord[a]])) { if (ns[ord[b]] > 0 && ns[ord[b]] < best) best = ns[ord[b]]; b++; }
      for (int q = a; q < b; q++)
        if (ns[ord[q]] > 0) wt[ord[q]] = fmax(0.05, pow(best / ns[ord[q]], KILN_CM_FOCUS));
      a = b;
    }
  }
  fit_core(m, family, s->f, s->pp, ns, wt, s->n, c);
  free(ord);
  free(ns);
  free(wt);
}

void kiln_cm_fit(const kiln_devmodel *m, const char *family, const kiln_features *fs, const char *const *params, const double *ns, int n,
                 kiln_correction *c) {
  fit_core(m, family, fs, params, ns, NULL, n, c);
}

void kiln_cm_samples_free(kiln_cm_samples *s) { free(s->f); free(s->ns); free(s->key); free(s->par); free(s->pp); }

int kiln_cm_load(kiln_db *db, int64_t device, const kiln_device_info *info, kiln_devmodel *m, kiln_error *err) {
  char *json = NULL;
  int rc = kiln_db_get_probe(db, device, &json);
  if (rc) return kiln__err(err, KILN_ENOTFOUND, "the device was never probed (run `kiln probe`)");
  rc = kiln_devmodel_from_probe(json, info, m, err);
  free(json);
  return rc;
}

int kiln_cm_fit_db(kiln_db *db, int64_t device, const kiln_devmodel *m, const char *family, kiln_correction *c, kiln_error *err) {
  kiln_cm_samples s = {0};
  int rc = kiln_cm_samples_db(db, device, family, &s, err);
  if (!rc) kiln_cm_fit_samples(m, family, &s, NULL, c);
  kiln_cm_samples_free(&s);
  return rc;
}

/* ---- transfer between instances (kiln_costmodel.h) ---- */

/* The numbers of an instance key's shape part ("dtype|shape|epilogue"). */
static int key_nums(const char *key, double *v, int max) {
  const char *p = strchr(key, '|'), *e;
  if (!p) return 0;
  p++;
  e = strchr(p, '|');
  if (!e) e = p + strlen(p);
  int n = 0;
  while (p < e && n < max) {
    if (*p >= '0' && *p <= '9') {
      char *q;
      v[n++] = strtod(p, &q);
      p = q;
    } else p++;
  }
  return n;
}

/* Distance between two instance keys (INFINITY: another dtype or layout). */
static double inst_dist(const char *a, const double *va, int na, const char *b) {
  double vb[48];
  int nb = key_nums(b, vb, 48);
  const char *da = strchr(a, '|'), *db = strchr(b, '|');
  if (na != nb || !da || !db || da - a != db - b || strncmp(a, b, (size_t)(da - a))) return INFINITY;
  double d = 0;
  for (int i = 0; i < na; i++) d += fabs(log1p(va[i]) - log1p(vb[i])) * (va[i] <= 16 && vb[i] <= 16 ? KILN_CM_TR_SMALL : 1);
  if (strcmp(strrchr(a, '|'), strrchr(b, '|'))) d += KILN_CM_TR_EPI;
  return d;
}

static int cmp_par_ctx(const void *x, const void *y, void *ctx) {
  const kiln_cm_samples *s = ctx;
  return strcmp(s->par[*(const int *)x], s->par[*(const int *)y]);
}

int kiln_cm_transfer_init(kiln_cm_transfer *ts, const kiln_devmodel *m, const kiln_correction *c, const kiln_cm_samples *s, const char *skip_key,
                          const char *target_key) {
  memset(ts, 0, sizeof *ts);
  ts->s = s;
  ts->ix = malloc(sizeof(int) * (size_t)(s->n + 1));
  double *w = malloc(sizeof(double) * (size_t)(s->n + 1));
  if (!ts->ix || !w) { free(w); kiln_cm_transfer_free(ts); return KILN_ENOMEM; }
  /* the samples near enough to count, then sorted by parameter text (a
   * lookup per candidate is a binary search, not a pass over the samples) */
  double vt[48];
  int nt = key_nums(target_key, vt, 48), last = -1;
  double lastw = 0;
  for (int j = 0; j < s->n; j++) {
    w[j] = 0;
    if (!(s->ns[j] > 0) || (skip_key && !strcmp(s->key[j], skip_key)) || !strcmp(s->key[j], target_key)) continue;
    if (last < 0 || strcmp(s->key[j], s->key[last])) { /* one distance per run of one instance's samples */
      double d = inst_dist(target_key, vt, nt, s->key[j]);
      lastw = isfinite(d) ? exp(-d / KILN_CM_TR_H) : 0;
      last = j;
    }
    if (lastw < 1e-6) continue;
    w[j] = lastw;
    ts->ix[ts->n++] = j;
  }
  qsort_r(ts->ix, (size_t)ts->n, sizeof(int), cmp_par_ctx, (void *)s);
  ts->res = malloc(sizeof(double) * (size_t)(ts->n + 1));
  ts->w = malloc(sizeof(double) * (size_t)(ts->n + 1));
  if (!ts->res || !ts->w) { free(w); kiln_cm_transfer_free(ts); return KILN_ENOMEM; }
  for (int q = 0; q < ts->n; q++) {
    int j = ts->ix[q];
    ts->w[q] = w[j];
    ts->res[q] = log(s->ns[j]) - log(kiln_cm_predict_ns(m, c, &s->f[j], s->par[j]));
  }
  free(w);
  return 0;
}

void kiln_cm_transfer_free(kiln_cm_transfer *ts) {
  free(ts->ix);
  free(ts->res);
  free(ts->w);
  memset(ts, 0, sizeof *ts);
}

double kiln_cm_transfer_factor(const kiln_cm_transfer *ts, const char *params) {
  int lo = 0, hi = ts->n; /* the first entry whose parameters are not below params */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (strcmp(ts->s->par[ts->ix[mid]], params) < 0) lo = mid + 1;
    else hi = mid;
  }
  double acc = 0, wsum = 0;
  for (int q = lo; q < ts->n && !strcmp(ts->s->par[ts->ix[q]], params); q++) { acc += ts->w[q] * ts->res[q]; wsum += ts->w[q]; }
  return wsum > 0 ? exp(acc / (wsum + KILN_CM_TR_K0)) : 1;
}

/* Debugging aid (`kiln model eval --dump <part of an instance key>`): a held-out
 * candidate's measured and predicted time, its base estimate and launch
 * part, and the correction's terms that move it by more than 5%. */
static void dump_candidate(const kiln_devmodel *m, const kiln_correction *c, const kiln_features *f, const char *params, double ns, double pred) {
  double work, la, x[KILN_CM_NX];
  base_split(m, f, &work, &la);
  fprintf(stderr, "measured %.2f us predicted %.2f us (work %.2f us launch %.2f us) %s\n", ns / 1e3, pred / 1e3, work / 1e3, la / 1e3, params);
  full_x(m, c, f, params, x);
  for (int r = 0; r < KILN_CM_NX; r++)
    if (x[r] != 0 && fabs(c->w[r] * x[r]) > 0.05) {
      if (r < KILN_CM_NB) fprintf(stderr, "  x[%d]", r);
      else fprintf(stderr, "  %s %s", r < KILN_CM_NB + KILN_CM_MAXTOK ? "token" : "scale", c->tok[(r - KILN_CM_NB) % KILN_CM_MAXTOK]);
      fprintf(stderr, " w %.3f x %.3f\n", c->w[r], x[r]);
    }
}

static double kendall(const double *a, const double *b, int n) {
  long conc = 0, disc = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      double x = (a[i] - a[j]) * (b[i] - b[j]);
      if (x > 0) conc++;
      else if (x < 0) disc++;
    }
  return conc + disc ? (double)(conc - disc) / (double)(conc + disc) : 0;
}

static int cmp_idx_ctx_sort(const void *x, const void *y, void *ctx) {
  const double *v = ctx;
  double a = v[*(const int *)x], b = v[*(const int *)y];
  return a < b ? -1 : a > b;
}

int kiln_cm_evaluate(kiln_db *db, int64_t device, const kiln_devmodel *m, const char *family, const kiln_cm_eval_debug *dbg, kiln_cm_eval *out,
                     kiln_error *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->family, sizeof out->family, "%s", family);
  kiln_cm_samples s = {0};
  int rc = kiln_db_each_family(db, device, family, collect, &s, err);
  if (rc) { kiln_cm_samples_free(&s); return rc; }
  out->records = s.n;
  double *pred = malloc(sizeof(double) * (size_t)(s.n + 1));
  int *idx = malloc(sizeof(int) * (size_t)(s.n + 1));
  kiln_correction *c = malloc(sizeof *c);
  double *pi = malloc(sizeof(double) * (size_t)(s.n + 1)), *mi = malloc(sizeof(double) * (size_t)(s.n + 1));
  if (!pred || !idx || !pi || !mi || !c) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto done; }
  const char *dump = dbg && dbg->dump && *dbg->dump ? dbg->dump : NULL;
  /* distinct instances: held out one at a time */
  for (int i = 0; i < s.n; i++) {
    int first = 1;
    for (int k = 0; k < i && first; k++) if (!strcmp(s.key[k], s.key[i])) first = 0;
    if (!first) continue;
    int ni = 0;
    kiln_cm_fit_samples(m, family, &s, s.key[i], c);
    kiln_cm_transfer ts;
    if ((rc = kiln_cm_transfer_init(&ts, m, c, &s, s.key[i], s.key[i])) != 0) { rc = kiln__err(err, rc, "out of memory"); goto done; }
    for (int k = 0; k < s.n; k++)
      if (!strcmp(s.key[k], s.key[i])) {
        pi[ni] = kiln_cm_predict_ns(m, c, &s.f[k], s.par[k]) * kiln_cm_transfer_factor(&ts, s.par[k]);
        if (dump && strstr(s.key[k], dump)) dump_candidate(m, c, &s.f[k], s.par[k], s.ns[k], pi[ni]);
        mi[ni] = s.ns[k];
        idx[ni] = ni;
        ni++;
      }
    kiln_cm_transfer_free(&ts);
    if (ni < 2) continue;
    out->instances++;
    out->kendall_tau += kendall(pi, mi, ni);
    qsort_r(idx, (size_t)ni, sizeof(int), cmp_idx_ctx_sort, pi);
    int best = 0;
    for (int k = 1; k < ni; k++) if (mi[k] < mi[best]) best = k;
    out->top1 += idx[0] == best;
    int in5 = 0;
    for (int k = 0; k < ni && k < 5; k++) in5 |= idx[k] == best;
    out->top5 += in5;
    out->regret += mi[idx[0]] / mi[best];
    if (dbg && dbg->trace) { /* debugging aid: per held-out instance, its pick and best */
      int pk = -1, bk = -1, q = 0;
      for (int k = 0; k < s.n; k++)
        if (!strcmp(s.key[k], s.key[i])) { if (q == idx[0]) pk = k; if (q == best) bk = k; q++; }
      fprintf(stderr, "%s n=%d tau=%.3f regret=%.3f\n  pick %.1f us (pred %.1f) %s\n  best %.1f us (pred %.1f) %s\n", s.key[i], ni, kendall(pi, mi, ni),
              mi[idx[0]] / mi[best], mi[idx[0]] / 1e3, pi[idx[0]] / 1e3, s.par[pk], mi[best] / 1e3, pi[best] / 1e3, s.par[bk]);
    }
  }
  if (out->instances) {
    out->kendall_tau /= out->instances;
    out->top1 /= out->instances;
    out->top5 /= out->instances;
    out->regret /= out->instances;
  }
done:
  free(pred); free(idx); free(pi); free(mi); free(c);
  kiln_cm_samples_free(&s);
  return rc;
}

/* ---- session state: choosing parameters nothing measured ---- */

struct kiln_cm_state {
  kiln_db *db;
  int64_t device;
  const kiln_device *d;     /* its options: kernel directory, gemm kernels, predictions off */
  kiln_devmodel dm;
  kiln_cm_figsrc figs;      /* where dm's figures came from */
  /* kiln_cm_choose's answers by instance (family, dtype, shape key, epilogue):
   * a model's repeated blocks ask again, and each answer enumerates the whole
   * parameter space (up to millions of combinations for conv) */
  struct cm_memo { char key[400]; int rc; int p[KILN_MAX_KPARAMS]; double ns; } *memo;
  int nmemo, capmemo;
  /* Without a database the answers depend only on the figures, the prior and
   * the kernel sources, so they are kept in the user's cache beside the
   * probe, and a later run does not enumerate again (predicted-<hash>.txt,
   * one line per instance: key, status, predicted ns, parameters). */
  char choices[700];        /* "" none */
  int choices_loaded;
  kiln_correction corr[16];
  kiln_cm_samples smp[16];  /* the device's records of corr[i]'s family (the transfer's source) */
  int ncorr;
};

/* The state on the database's probe of the device, else on the figures of
 * the quick probe of d, else on the built-in prior's. */
static kiln_cm_state *state_new(kiln_db *db, int64_t device, const kiln_device_info *info, kiln_device *d) {
  kiln_cm_state *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->db = db;
  st->device = device;
  if (db && kiln_cm_load(db, device, info, &st->dm, NULL) == 0) { st->figs.kind = KILN_CM_FIGS_DB; return st; }
  char *json = NULL;
  if (kiln_cm_probe_cached(d, &json, &st->figs) == 0 && kiln_devmodel_from_probe(json, info, &st->dm, NULL) == 0) {
    free(json);
    return st;
  }
  free(json);
  /* never probed: the built-in prior's probe of a device of this kind */
  st->figs.kind = KILN_CM_FIGS_PRIOR;
  const char *pj = kiln_cm_prior_probe(info);
  if (!pj || kiln_devmodel_from_probe(pj, info, &st->dm, NULL) != 0) { free(st); return NULL; }
  return st;
}

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) { h ^= ((const unsigned char *)p)[i]; h *= 1099511628211ull; }
  return h;
}

kiln_cm_state *kiln_cm_state_for_device(kiln_db *db, int64_t device, kiln_device *d) {
  kiln_cm_state *st = state_new(db, device, &d->info, d);
  if (st) st->d = d;
  if (st && !db && d->cache_dir[0]) { /* the answers' file: device, figures, prior and kiln version in its name */
    const kiln_devmodel *m = &st->dm;
    char exact[1024], family[512];
    kiln_db_fingerprint(&d->info, exact, sizeof exact, family, sizeof family);
    uint64_t h = kiln_cm_prior_hash(&d->info);
    h = mix(h, KILN_VERSION, strlen(KILN_VERSION));
    /* how choose() ranks: an answer file of an earlier rule is not reused
     * (2: only the solvers the fit measured, kiln_cm_solver_measured) */
    static const int choose_rev = 2;
    h = mix(h, &choose_rev, sizeof choose_rev);
    h = mix(h, exact, strlen(exact));
    h = mix(h, m->flops, sizeof m->flops);
    h = mix(h, m->bw, sizeof(double) * (size_t)m->nbw);
    h = mix(h, m->bw_size, sizeof(double) * (size_t)m->nbw);
    double more[6] = {m->local_bw, m->launch_us, m->dep_us, m->span_us, m->next_us, m->gather};
    h = mix(h, more, sizeof more);
    h = mix(h, &d->opt.gemm_kernels, sizeof d->opt.gemm_kernels); /* the search space (KILN_GEMM_KERNELS) */
    snprintf(st->choices, sizeof st->choices, "%s/predicted-%016llx.txt", d->cache_dir, (unsigned long long)h);
  }
  return st;
}

void kiln_cm_state_basis(const kiln_cm_state *st, kiln_param_basis *b) {
  memset(b, 0, sizeof *b);
  static const char *const names[] = {[KILN_CM_FIGS_PRIOR] = "prior", [KILN_CM_FIGS_DB] = "probe", [KILN_CM_FIGS_CACHED] = "cached quick probe",
                                      [KILN_CM_FIGS_PROBED] = "quick probe"};
  snprintf(b->figures, sizeof b->figures, "%s", names[st->figs.kind]);
  snprintf(b->cache, sizeof b->cache, "%s", st->figs.path);
  snprintf(b->note, sizeof b->note, "%s", st->figs.note);
  b->probe_ms = st->figs.probe_ms;
  b->probe_compile_ms = st->figs.probe_compile_ms;
  b->copy_gbps = st->dm.nbw > 0 ? st->dm.bw[st->dm.nbw - 1] : 0;
  b->copy_bytes = st->dm.nbw > 0 ? st->dm.bw_size[st->dm.nbw - 1] : 0;
}

void kiln_cm_state_free(kiln_cm_state *st) {
  if (!st) return;
  free(st->memo);
  for (int i = 0; i < st->ncorr; i++) kiln_cm_samples_free(&st->smp[i]);
  free(st);
}

static int choose(kiln_cm_state *st, const kiln_tunable *t, int *p, double *pred_ns);

/* A new memo entry (NULL when out of memory). */
static struct cm_memo *memo_add(kiln_cm_state *st, const char *key, int rc, const int *p, int np, double ns) {
  if (st->nmemo == st->capmemo) {
    int cap = st->capmemo ? 2 * st->capmemo : 32;
    struct cm_memo *nm = realloc(st->memo, sizeof *nm * (size_t)cap);
    if (!nm) return NULL;
    st->memo = nm;
    st->capmemo = cap;
  }
  struct cm_memo *m = &st->memo[st->nmemo++];
  memset(m, 0, sizeof *m);
  snprintf(m->key, sizeof m->key, "%s", key);
  m->rc = rc;
  m->ns = ns;
  if (!rc) memcpy(m->p, p, sizeof(int) * (size_t)(np < KILN_MAX_KPARAMS ? np : KILN_MAX_KPARAMS));
  return m;
}

/* Reads the choices file into the memo (lines that do not parse are skipped). */
static void choices_load(kiln_cm_state *st) {
  st->choices_loaded = 1;
  FILE *f = st->choices[0] ? fopen(st->choices, "r") : NULL;
  if (!f) return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL, *tab3 = tab2 ? strchr(tab2 + 1, '\t') : NULL;
    if (!tab3 || !strchr(tab3, '\n')) continue;
    *tab1 = 0;
    int rc = atoi(tab1 + 1), p[KILN_MAX_KPARAMS] = {0}, np = 0;
    double ns = strtod(tab2 + 1, NULL);
    for (char *q = tab3 + 1; *q && *q != '\n' && np < KILN_MAX_KPARAMS; np++) {
      p[np] = (int)strtol(q, &q, 10);
      if (*q == ',') q++;
    }
    memo_add(st, line, rc, p, np, ns);
  }
  fclose(f);
}

/* Appends one answer to the choices file (failures only cost a later run the enumeration). */
static void choices_append(const kiln_cm_state *st, const char *key, int rc, const int *p, int np, double ns) {
  FILE *f = fopen(st->choices, "a");
  if (!f) return;
  char line[1024];
  int o = snprintf(line, sizeof line, "%s\t%d\t%.6g\t", key, rc, ns);
  for (int i = 0; i < np && !rc && o > 0 && o < (int)sizeof line - 16; i++) o += snprintf(line + o, sizeof line - (size_t)o, "%s%d", i ? "," : "", p[i]);
  if (o > 0 && o < (int)sizeof line - 2) { line[o++] = '\n'; fwrite(line, 1, (size_t)o, f); } /* one write: whole lines with O_APPEND */
  fclose(f);
}

/* 1 if p is in t's declared space and valid on the device (a kept answer may be stale or damaged). */
static int in_space(const kiln_cm_state *st, const kiln_tunable *t, const int *p) {
  for (int i = 0; i < t->nparams; i++) {
    const kiln_kparam *kp = &t->params[i];
    int ok = kp->nvals <= 0 ? p[i] == kp->dflt : 0;
    for (int k = 0; k < kp->nvals && !ok; k++) ok = p[i] == kp->vals[k];
    if (!ok) return 0;
  }
  return !t->valid || t->valid(t, p, &st->dm.info) == 0;
}

int kiln_cm_choose(kiln_cm_state *st, const kiln_tunable *t, int *p, double *pred_ns) {
  if (!t->features) return KILN_EUNSUPPORTED;
  if (st->d && st->d->opt.no_predict) return KILN_ENOTFOUND; /* descriptor defaults, for comparison */
  if (!st->choices_loaded) choices_load(st);
  char key[400], hash[24];
  kiln_source_hash(st->d, t->file, hash, sizeof hash);
  snprintf(key, sizeof key, "%s|%d|%s|%s|%s", t->family, t->dtype, t->shape_key, t->epilogue, hash);
  for (int i = 0; i < st->nmemo; i++) {
    struct cm_memo *m = &st->memo[i];
    if (strcmp(m->key, key)) continue;
    if (m->rc) return m->rc;
    if (!in_space(st, t, m->p)) break; /* a stale or damaged answer: asked again */
    memcpy(p, m->p, sizeof(int) * (size_t)t->nparams);
    if (pred_ns) *pred_ns = m->ns;
    return 0;
  }
  double ns = 0;
  int rc = choose(st, t, p, &ns);
  if (pred_ns && !rc) *pred_ns = ns;
  if ((rc == 0 || rc == KILN_ENOTFOUND) && memo_add(st, key, rc, p, t->nparams, ns) && st->choices[0]) choices_append(st, key, rc, p, t->nparams, ns);
  return rc;
}

/* kiln_cm_solver_measured, asked once per solver of a choice: seen/meas
 * keep the answers for up to 16 solvers. */
static bool solver_measured_memo(const kiln_correction *c, const kiln_cm_samples *smp, bool own, const char *ps, char (*seen)[64], bool *meas,
                                 int *nseen) {
  const char *comma = strchr(ps, ',');
  size_t l = comma ? (size_t)(comma - ps) : strlen(ps);
  if (l >= sizeof seen[0]) return kiln_cm_solver_measured(c, smp, own, ps);
  for (int i = 0; i < *nseen; i++)
    if (strlen(seen[i]) == l && !strncmp(seen[i], ps, l)) return meas[i];
  bool m = kiln_cm_solver_measured(c, smp, own, ps);
  if (*nseen < 16) {
    snprintf(seen[*nseen], sizeof seen[0], "%.*s", (int)l, ps);
    meas[(*nseen)++] = m;
  }
  return m;
}

bool kiln_cm_solver_measured(const kiln_correction *c, const kiln_cm_samples *smp, bool own, const char *ps) {
  const char *comma = strchr(ps, ',');
  size_t l = comma ? (size_t)(comma - ps) : strlen(ps);
  if (own) {
    int cnt = 0;
    for (int i = 0; smp && i < smp->n && cnt < KILN_CM_TOK_MIN; i++)
      if (!strncmp(smp->par[i], ps, l) && (smp->par[i][l] == ',' || !smp->par[i][l])) cnt++;
    return cnt >= KILN_CM_TOK_MIN;
  }
  for (int i = 0; c && i < c->ntok; i++)
    if (strlen(c->tok[i]) == l && !strncmp(c->tok[i], ps, l)) return true;
  return false;
}

/* kiln_cm_choose without the memo. */
static int choose(kiln_cm_state *st, const kiln_tunable *t, int *p, double *pred_ns) {
  const kiln_correction *c = NULL;
  kiln_cm_samples *smp = NULL;
  for (int i = 0; i < st->ncorr; i++) if (!strcmp(st->corr[i].family, t->family)) c = &st->corr[i], smp = &st->smp[i];
  if (!c && st->ncorr < 16) {
    kiln_correction *nc = &st->corr[st->ncorr];
    smp = &st->smp[st->ncorr];
    memset(nc, 0, sizeof *nc);
    memset(smp, 0, sizeof *smp);
    if (st->db && kiln_cm_samples_db(st->db, st->device, t->family, smp, NULL) == 0) kiln_cm_fit_samples(&st->dm, t->family, smp, NULL, nc);
    /* too few of this device's own records: the built-in prior for devices of its kind */
    if (nc->nsamples < KILN_CM_MIN_SAMPLES) kiln_cm_prior(&st->dm, t->family, nc);
    snprintf(nc->family, sizeof nc->family, "%s", t->family);
    c = &st->corr[st->ncorr++];
  }
  /* The base estimate alone does not know how this device runs this family
   * (a GPU-style kernel can be 20x slower on a CPU than its roofline says):
   * replace the defaults only when the correction was fitted on enough
   * measurements (this device's, or the built-in prior's). */
  if (!c || c->nsamples < KILN_CM_MIN_SAMPLES) return KILN_ENOTFOUND;
  int *cands = NULL;
  int n = kiln_tunable_enumerate(t, &st->dm.info, &cands);
  if (n <= 0) { free(cands); return KILN_ENOTFOUND; }
  int best = 0, bestm = -1;
  double bp = INFINITY, bpm = INFINITY;
  char ps[256], key[320];
  /* the solvers the fit measured, where the family has a selector (its first parameter) */
  const kiln_family *fam = kiln_family_find(t->family);
  bool sel = fam && fam->selector == 0, own = smp && smp->n >= KILN_CM_MIN_SAMPLES;
  char seen[16][64];
  bool meas[16];
  int nseen = 0;
  kiln_cm_instance_key(t->dtype, t->shape_key, t->epilogue, key, sizeof key);
  kiln_cm_transfer ts;
  int tr = smp && smp->n > 0 && kiln_cm_transfer_init(&ts, &st->dm, c, smp, NULL, key) == 0;
  for (int k = 0; k < n; k++) {
    kiln_features f;
    memset(&f, 0, sizeof f);
    t->features(t, cands + (size_t)k * (size_t)t->nparams, &f);
    kiln_tunable_str(t, cands + (size_t)k * (size_t)t->nparams, ps, sizeof ps);
    double v = kiln_cm_predict_ns(&st->dm, c, &f, ps) * (tr ? kiln_cm_transfer_factor(&ts, ps) : 1);
    if (v < bp) { bp = v; best = k; }
    if (sel && v < bpm && solver_measured_memo(c, smp, own, ps, seen, meas, &nseen)) { bpm = v; bestm = k; }
  }
  if (tr) kiln_cm_transfer_free(&ts);
  if (bestm >= 0) { best = bestm; bp = bpm; } /* a solver the fit measured, while any is a candidate */
  memcpy(p, cands + (size_t)best * (size_t)t->nparams, sizeof(int) * (size_t)t->nparams);
  if (pred_ns) *pred_ns = bp;
  free(cands);
  return 0;
}

int kiln_cm_predict_run(kiln_cm_state *st, const kiln_tunable *t, double *pred_ns, int *how) {
  if (!t->features) return KILN_EUNSUPPORTED;
  if (st->db) { /* measured: the time of the record a run would use */
    kiln_lookup lk;
    char hash[24];
    kiln_source_hash(st->d, t->file, hash, sizeof hash);
    if (kiln_db_best_layered(st->db, st->device, &st->dm.info, t->family, t->dtype, t->shape_key, t->epilogue, hash, &lk, NULL) == 0 &&
        kiln_record_ns(&lk.rec) > 0) {
      *pred_ns = kiln_record_ns(&lk.rec);
      *how = 2;
      return 0;
    }
  }
  int p[KILN_MAX_KPARAMS];
  if (kiln_cm_choose(st, t, p, pred_ns) == 0) { *how = 1; return 0; }
  for (int i = 0; i < t->nparams; i++) p[i] = t->params[i].dflt;
  kiln_features f;
  memset(&f, 0, sizeof f);
  t->features(t, p, &f);
  *pred_ns = kiln_cm_base_ns(&st->dm, &f);
  *how = 0;
  return 0;
}

const char *const *kiln_costmodel_profiles(void) { return kiln_devmodel_profiles(); }

int kiln_costmodel_eval(kiln_db *db, kiln_device *d, kiln_model_eval **out, int *nout, kiln_error *err) {
  *out = NULL;
  *nout = 0;
  int64_t dev;
  int rc = kiln_db_device(db, &d->info, &dev, err);
  if (rc) return rc;
  return kiln_cm_eval_device(db, dev, &d->info, NULL, out, nout, err);
}

int kiln_cm_eval_device(kiln_db *db, int64_t dev, const kiln_device_info *info, const kiln_cm_eval_debug *dbg, kiln_model_eval **out, int *nout,
                        kiln_error *err) {
  *out = NULL;
  *nout = 0;
  int rc;
  kiln_devmodel m;
  if ((rc = kiln_cm_load(db, dev, info, &m, err)) != 0) return rc;
  char fams[32][32];
  int nf = kiln_db_families(db, dev, fams, 32);
  kiln_model_eval *e = calloc((size_t)nf + 1, sizeof *e);
  if (!e) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < nf; i++) {
    kiln_cm_eval ce;
    if ((rc = kiln_cm_evaluate(db, dev, &m, fams[i], dbg, &ce, err)) != 0) { free(e); return rc; }
    snprintf(e[i].family, sizeof e[i].family, "%s", ce.family);
    e[i].instances = ce.instances;
    e[i].records = ce.records;
    e[i].kendall_tau = ce.kendall_tau;
    e[i].top1 = ce.top1;
    e[i].top5 = ce.top5;
    e[i].regret = ce.regret;
  }
  *out = e;
  *nout = nf;
  return 0;
}

int kiln_cm_fusion_costs(const kiln_cm_state *st, double *launch_us, double *bw_gbps) {
  /* not this device's figures, or the quick probe's (a few samples): fusion keeps its defaults */
  if (st->figs.kind != KILN_CM_FIGS_DB) return KILN_ENOTFOUND;
  *launch_us = st->dm.launch_us;
  *bw_gbps = st->dm.bw[st->dm.nbw > 2 ? 2 : st->dm.nbw - 1]; /* a few-MiB working set */
  return 0;
}

/* The cost model as the runtime's predictor (kiln_internal.h: kiln_predictor). */
const kiln_predictor kiln_cm_predictor = {kiln_cm_state_for_device, kiln_cm_state_free, kiln_cm_state_basis,
                                          kiln_cm_choose, kiln_cm_fusion_costs, kiln_cm_predict_run};
