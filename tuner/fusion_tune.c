/* fusion_tune.c: `kiln tune` measures the fusion groupings whose predicted
 * fused and separate times are close (within a factor), and records both
 * times per (device, subgraph signature) in the tuning database (family
 * "fusion", instance = the signature, params FUSE=1 / FUSE=0). The planner
 * (fusion.c, kiln__fusion_choose) then decides those groupings by the
 * recorded times on this device and by prediction everywhere else.
 *
 * A grouping is timed inside a whole-model run: the plan is built with the
 * grouping forced fused, then forced separate (the session's force_sig), and
 * its time is the span from the first kernel start to the last kernel end
 * over the node range its members cover (profiling events), so the launch
 * gaps between separate kernels count. Two alternating rounds of REPS runs
 * per variant; the median of each is recorded. */
#include "kiln_internal.h"
#include "kiln_db.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REPS 5
#define ROUNDS 2

/* One run; the span (ns) of the kernels of nodes [lo, hi] (or of the fused
 * groups they belong to) in *ns, or a negative value when none launched. */
static int timed_run(kiln_session *s, int lo, int hi, double *ns, kiln_error *err) {
  int rc = kiln_session_run(s, err);
  if (rc) return rc;
  int64_t a = 0, b = 0;
  kiln_graph *g = s->m->g;
  for (int j = lo; j <= hi; j++) {
    /* a member of a fused group launches nothing itself: its group's root does */
    int i = g->nodes[j].fuse_root >= 0 ? g->nodes[j].fuse_root : j;
    if (s->ev_lo[i] && (!a || s->ev_lo[i] < a)) a = s->ev_lo[i];
    if (s->ev_hi[i] > b) b = s->ev_hi[i];
  }
  *ns = b > a ? (double)(b - a) : -1;
  return 0;
}

/* An attention grouping's time in one run: the kernels of its members
 * (d->members: node names), each once, summed; in the fused plan that is the
 * attention kernel (the Softmax's name), in the separate one the products,
 * the softmax and the transposes. Gaps between their launches are not
 * counted: the members need not be neighbours in the plan (a projection may
 * run between the transposes), so a span would count other kernels. */
static int members_run(kiln_session *s, const kiln_fusion_decision *d, double *ns, kiln_error *err) {
  int rc = kiln_session_run(s, err);
  if (rc) return rc;
  kiln_graph *g = s->m->g;
  bool *seen = calloc((size_t)g->nnodes + 1, sizeof *seen);
  if (!seen) return kiln__err(err, KILN_ENOMEM, "out of memory");
  double sum = 0;
  int found = 0;
  for (int j = 0; j < g->nnodes; j++) {
    const char *nm = g->nodes[j].name, *p = d->members;
    size_t l = nm ? strlen(nm) : 0;
    bool member = false;
    while (l && !member && (p = strstr(p, nm)) != NULL) { /* a whole line of the list */
      member = (p == d->members || p[-1] == '\n') && p[l] == '\n';
      p += l;
    }
    if (!member) continue;
    found++;
    int i = g->nodes[j].fuse_root >= 0 ? g->nodes[j].fuse_root : j; /* a fused member launches through its group's root */
    if (seen[i] || !s->ev_lo || !s->ev_lo[i] || s->ev_hi[i] <= s->ev_lo[i]) continue;
    seen[i] = true;
    sum += (double)(s->ev_hi[i] - s->ev_lo[i]);
  }
  free(seen);
  *ns = found && sum > 0 ? sum : -1;
  return 0;
}

static int put(kiln_session *s, kiln_db *db, const kiln_fusion_decision *d, int fused, double med, double mn, double spread, int cnt, kiln_error *err) {
  kiln_record r;
  memset(&r, 0, sizeof r);
  snprintf(r.family, sizeof r.family, "fusion");
  snprintf(r.shape_key, sizeof r.shape_key, "%s", d->sig);
  kiln_source_hash(s->d, KILN_FUSION_SOURCES, r.source_hash, sizeof r.source_hash); /* a shared database's records all carry one (kiln db verify) */
  snprintf(r.params, sizeof r.params, "FUSE=%d", fused);
  r.median_ns = med;
  r.min_ns = mn; /* the fastest repeat, as the kernels' records carry */
  r.spread = spread;
  r.samples = cnt;
  snprintf(r.status, sizeof r.status, "%s", med > 0 ? "ok" : "launch_error");
  snprintf(r.origin, sizeof r.origin, "measured");
  r.predicted_ns = fused ? d->pred_fused_ns : d->pred_unfused_ns;
  return kiln_db_put(db, s->db_device, &r, err);
}

static bool is_attention(const kiln_fusion_decision *d) { return d->kind && !strcmp(d->kind, "attention"); }

/* Whether decision i of dec is one kiln__tune_fusion measures: a signature,
 * no record yet, both predictions, a close call (attention: any), not a
 * duplicate of an earlier one. */
static bool to_measure(const kiln_fusion_decision *dec, int i, double close) {
  const kiln_fusion_decision *d = &dec[i];
  if (!d->sig[0] || d->meas_fused_ns > 0) return false; /* not measurable, or recorded already */
  double pf = d->pred_fused_ns, pu = d->pred_unfused_ns;
  if (!(pf >= 0) || !(pu > 0)) return false;
  /* an epilogue's predicted extra cost is often 0: an infinite ratio, measured
   * only with close = inf. Attention is measured whatever the prediction says:
   * the attention kernel's and the separate products' predictions come from
   * different models and were 2-3x apart on the same device (passes.c, at_gemm_rate) */
  double ratio = pf <= 0 ? INFINITY : pf > pu ? pf / pu : pu / pf;
  if (ratio > close && !is_attention(d)) return false; /* a clear call: the prediction stands */
  /* a duplicate signature (the same grouping elsewhere in the model) is measured once */
  for (int j = 0; j < i; j++)
    if (!strcmp(dec[j].sig, d->sig)) return false;
  return true;
}

int kiln__fusion_pending(const kiln_session *s, double close, int *attention) {
  int n = 0;
  *attention = 0;
  if (close <= 1) return 0;
  for (int i = 0; i < s->nfdec; i++)
    if (to_measure(s->fdec, i, close)) { n++; *attention += is_attention(&s->fdec[i]); }
  return n;
}

int kiln__tune_fusion(kiln_session *s, kiln_db *db, double close, kiln_tune_result **res, int *nres, kiln_error *err) {
  if (close <= 1) return 0;
  int rc = 0;
  /* the plan as it stands (predictions and earlier records) */
  kiln__session_replan(s);
  if ((rc = kiln_session_run(s, err)) != 0) return rc;
  int nd = s->nfdec;
  kiln_fusion_decision *dec = malloc(sizeof *dec * (size_t)(nd ? nd : 1));
  if (!dec) return kiln__err(err, KILN_ENOMEM, "out of memory");
  memcpy(dec, s->fdec, sizeof *dec * (size_t)nd);
  bool was_profile = s->profile, fresh = false, can_fresh = true;
  s->profile = true;
  /* attention groupings last: their variants leave a new graph behind, where
   * the other groupings' node ranges (dec) no longer hold */
  for (int pass_i = 0; pass_i < 2 * nd && !rc; pass_i++) {
    int i = pass_i % nd;
    kiln_fusion_decision *d = &dec[i];
    bool att = is_attention(d);
    if (att != (pass_i >= nd) || !to_measure(dec, i, close)) continue;
    if (att && !can_fresh) continue;
    double t[2][ROUNDS * REPS];
    int cnt[2] = {0, 0};
    bool nofresh = false;
    for (int round = 0; round < ROUNDS && !rc && !nofresh; round++)
      for (int f = 1; f >= 0 && !rc && !nofresh; f--) {
        s->force_sig = d->sig;
        s->force_fused = f;
        if (att) {
          kiln_error fe = {0};
          if (kiln__session_replan_fresh(s, &fe) != 0) { nofresh = true; break; } /* a model from memory, or its file changed */
          fresh = true;
        } else
          kiln__session_replan(s);
        double v;
        if ((rc = att ? members_run(s, d, &v, err) : timed_run(s, d->first_node, d->last_node, &v, err)) != 0) break; /* warm-up: plan, compile */
        for (int k = 0; k < REPS && !rc; k++)
          if ((rc = att ? members_run(s, d, &v, err) : timed_run(s, d->first_node, d->last_node, &v, err)) == 0 && v > 0) t[f][cnt[f]++] = v;
      }
    s->force_sig = NULL;
    if (rc) break;
    if (nofresh) { can_fresh = false; continue; } /* no new graph: no attention grouping can be measured */
    double med[2], mn[2], spread[2];
    for (int f = 0; f < 2; f++) {
      if (!cnt[f]) { med[f] = mn[f] = -1; spread[f] = 0; continue; }
      qsort(t[f], (size_t)cnt[f], sizeof(double), kiln__cmp_double);
      med[f] = t[f][cnt[f] / 2];
      mn[f] = t[f][0];
      spread[f] = med[f] > 0 ? (t[f][(cnt[f] * 9) / 10 < cnt[f] ? (cnt[f] * 9) / 10 : cnt[f] - 1] - t[f][cnt[f] / 10]) / med[f] : 0;
    }
    if ((rc = put(s, db, d, 1, med[1], mn[1], spread[1], cnt[1], err)) != 0 || (rc = put(s, db, d, 0, med[0], mn[0], spread[0], cnt[0], err)) != 0) break;
    kiln_tune_result *nr = realloc(*res, sizeof *nr * (size_t)(*nres + 1));
    if (!nr) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
    *res = nr;
    kiln_tune_result *r = &nr[(*nres)++];
    memset(r, 0, sizeof *r);
    snprintf(r->family, sizeof r->family, "fusion");
    snprintf(r->shape_key, sizeof r->shape_key, "%s %s at %s", d->kind, d->nodes, d->root);
    snprintf(r->dtype, sizeof r->dtype, "-");
    bool fused = med[1] > 0 && (med[0] <= 0 || med[1] < med[0]);
    snprintf(r->params, sizeof r->params, "FUSE=%d", fused);
    r->trials = 2;
    r->candidates = 2;
    r->default_ns = d->fused ? med[1] : med[0]; /* what the prediction chose */
    r->best_ns = fused ? med[1] : med[0];
  }
  s->profile = was_profile;
  s->force_sig = NULL;
  /* the plan of the recorded decisions; after an attention variant, on a new
   * graph (the last one was rewritten as that variant forced) */
  int rc2 = fresh ? kiln__session_replan_fresh(s, rc ? NULL : err) : 0;
  if (!fresh || rc2) kiln__session_replan(s);
  if (!rc) rc = rc2;
  free(dec);
  return rc;
}
