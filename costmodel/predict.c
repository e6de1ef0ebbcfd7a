/* predict.c: `kiln predict`: per-node predicted times of a model on a device
 * model (this device's probe, or a spec-sheet profile of a device that is not
 * present), the algorithm and parameters the cost model would choose, and,
 * when the device is present, the measured time of each node for comparison.
 * Nodes without a tunable kernel are estimated as memory-bound element-wise
 * work (their inputs and outputs cross global memory once). */
#include "kiln_costmodel.h"
#include <math.h>

static double node_bytes(kiln_graph *g, kiln_node *n) {
  double b = 0;
  for (int k = 0; k < n->nin; k++) { kiln_value *v = kiln_in(g, n, k); if (v && !v->is_const) b += (double)kiln_value_bytes(v); }
  for (int k = 0; k < n->nout; k++) { kiln_value *v = kiln_out(g, n, k); if (v) b += (double)kiln_value_bytes(v); }
  return b;
}

/* Per-node kernel time on the device from profiling events (ns), after a warm-up run. */
static int measure_nodes(kiln_session *s, double *ns, kiln_error *err) {
  int rc = kiln_session_run(s, err);
  if (rc) return rc;
  kiln_graph *g = s->m->g;
  kiln_exec x = {.d = s->d, .g = g, .db = s->db, .recs = s->recs, .db_device = s->db_device, .pred = s->pred, .cm = s->cm, .ov_node = -1, .profile = true};
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    ns[i] = -1;
    if (n->folded || n->skip_dev || (n->fuse_root >= 0 && !n->fgroup)) continue; /* fused members run with their group's root */
    double best = INFINITY;
    for (int r = 0; r < 3; r++) {
      x.nevents = 0;
      if ((rc = kiln_node_dev(&x, n, err)) != 0) break;
      clFinish(s->d->q);
      double t = 0;
      for (int e = 0; e < x.nevents; e++) {
        cl_ulong a = 0, b = 0;
        clGetEventProfilingInfo(x.events[e], CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
        clGetEventProfilingInfo(x.events[e], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
        if (b > a) t += (double)(b - a);
        clReleaseEvent(x.events[e]);
      }
      if (t < best) best = t;
    }
    x.nevents = 0;
    if (rc) break;
    ns[i] = best;
  }
  free(x.events);
  return rc;
}

int kiln_predict(kiln_model *m, const char *profile, kiln_session *s, kiln_db *db, kiln_node_prediction **out, int *nout, kiln_error *err) {
  kiln_graph *g = m->g;
  kiln_devmodel dm;
  int rc;
  *out = NULL;
  *nout = 0;
  if (profile) {
    if ((rc = kiln_cm_profile_model(profile, &dm, NULL, err)) != 0) return rc;
    if ((rc = kiln_graph_plan(g, err)) != 0) return rc;
  } else {
    if (!s || !db) return kiln__err(err, KILN_EINVAL, "predicting for this device needs a session and a probed database");
    if ((rc = kiln_session_set_db(s, db, err)) != 0) return rc;
    if ((rc = kiln_cm_load(db, s->db_device, &s->d->info, &dm, err)) != 0) return rc;
    if ((rc = kiln__session_ensure_plan(s, err)) != 0) return rc;
    g = m->g; /* the session's current plan (plans per input shape: plan_cache.c) */
  }
  kiln_node_prediction *p = calloc((size_t)g->nnodes + 1, sizeof *p);
  double *meas = calloc((size_t)g->nnodes + 1, sizeof(double));
  if (!p || !meas) { free(p); free(meas); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  if (!profile && (rc = measure_nodes(s, meas, err)) != 0) { free(p); free(meas); return rc; }
  kiln_correction corr[16];
  int ncorr = 0;
  int cnt = 0;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded) continue;
    kiln_node_prediction *q = &p[cnt++];
    snprintf(q->node, sizeof q->node, "%s", n->name);
    snprintf(q->op, sizeof q->op, "%s", n->op_type);
    q->measured_ns = profile ? -1 : meas[i];
    kiln_tunable t;
    memset(&t, 0, sizeof t);
    if (n->op->tunable && n->op->tunable(g, n, &t) == 0 && t.features) {
      const kiln_correction *c = NULL;
      for (int k = 0; k < ncorr; k++) if (!strcmp(corr[k].family, t.family)) c = &corr[k];
      if (!c && ncorr < 16) {
        kiln_correction *nc = &corr[ncorr];
        memset(nc, 0, sizeof *nc);
        if (!profile) kiln_cm_fit_db(db, s->db_device, &dm, t.family, nc, NULL); /* this device: its measured records */
        else if (kiln_cm_prior(&dm, t.family, nc) != 0) nc->nsamples = 0; /* a profile: the GPU prior's, where it has one */
        snprintf(nc->family, sizeof nc->family, "%s", t.family);
        c = &corr[ncorr++];
      }
      int *cands = NULL;
      int nc = kiln_tunable_enumerate(&t, &dm.info, &cands);
      double best = INFINITY;
      int bi = -1;
      char ps[256];
      for (int k = 0; k < nc; k++) {
        kiln_features f;
        memset(&f, 0, sizeof f);
        t.features(&t, cands + (size_t)k * (size_t)t.nparams, &f);
        kiln_tunable_str(&t, cands + (size_t)k * (size_t)t.nparams, ps, sizeof ps);
        double v = kiln_cm_predict_ns(&dm, c, &f, ps);
        if (v < best) { best = v; bi = k; }
      }
      snprintf(q->family, sizeof q->family, "%s", t.family);
      snprintf(q->shape_key, sizeof q->shape_key, "%s", t.shape_key);
      if (bi >= 0) {
        kiln_tunable_str(&t, cands + (size_t)bi * (size_t)t.nparams, q->params, sizeof q->params);
        q->predicted_ns = best;
      }
      free(cands);
    } else {
      kiln_features f = {0};
      kiln_value *o = kiln_out(g, n, 0);
      double items = o ? (double)kiln_value_numel(o) : 1;
      f.flops = items;
      f.bytes = node_bytes(g, n);
      f.work_groups = ceil(items / 256) > 0 ? ceil(items / 256) : 1;
      f.wg_size = 256;
      f.vec = 1;
      f.launches = 1;
      snprintf(q->family, sizeof q->family, "elementwise");
      q->predicted_ns = kiln_cm_base_ns(&dm, &f);
    }
  }
  free(meas);
  *out = p;
  *nout = cnt;
  return 0;
}

/* "Op+Op+..." of a fused group's nodes into q->ops, and how many it covers. */
static void group_ops(kiln_graph *g, const kiln_fgroup *fg, kiln_plan_kernel *q) {
  size_t o = 0;
  for (int k = 0; k < fg->nnodes && o < sizeof q->ops; k++)
    o += (size_t)snprintf(q->ops + o, sizeof q->ops - o, "%s%s", k ? "+" : "", g->nodes[fg->nodes[k]].op_type);
  q->nodes_covered = fg->nnodes;
}

/* Family (with `suffix`), parameters, their origin and (given a device model)
 * the prediction of node n's tunable kernel into q; -1 if n has none. */
static int describe_tunable(kiln_session *s, kiln_graph *g, kiln_node *n, const kiln_devmodel *dm, const char *suffix,
                            kiln_plan_kernel *q) {
  kiln_tunable t;
  memset(&t, 0, sizeof t);
  if (!n->op->tunable || n->op->tunable(g, n, &t) != 0) return -1;
  snprintf(q->family, sizeof q->family, "%s%s", t.family, suffix);
  snprintf(q->origin, sizeof q->origin, "%s", n->tparams_origin ? n->tparams_origin : "default");
  kiln_tunable_str(&t, n->tparams, q->params, sizeof q->params);
  if (dm && t.features) {
    kiln_correction *c = malloc(sizeof *c);
    if (c) {
      kiln_cm_fit_db(s->db, s->db_device, dm, t.family, c, NULL);
      kiln_features f;
      memset(&f, 0, sizeof f);
      t.features(&t, n->tparams, &f);
      q->predicted_ns = kiln_cm_predict_ns(dm, c, &f, q->params);
      free(c);
    }
  }
  return 0;
}

int kiln_session_plan_info(kiln_session *s, int measure, kiln_plan_kernel **out, int *nout, kiln_error *err) {
  *out = NULL;
  *nout = 0;
  int rc = kiln__session_ensure_plan(s, err);
  if (rc) return rc;
  kiln_graph *g = s->m->g;
  double *meas = calloc((size_t)g->nnodes + 1, sizeof(double));
  kiln_plan_kernel *p = calloc((size_t)g->nnodes + 1, sizeof *p);
  if (!meas || !p) { free(meas); free(p); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  for (int i = 0; i < g->nnodes; i++) meas[i] = -1;
  if (measure && (rc = measure_nodes(s, meas, err)) != 0) { free(meas); free(p); return rc; }
  else if (!measure && (rc = kiln_session_run(s, err)) != 0) { free(meas); free(p); return rc; } /* chooses parameters */
  kiln_devmodel dm;
  int have_dm = s->db && kiln_cm_load(s->db, s->db_device, &s->d->info, &dm, NULL) == 0;
  int cnt = 0;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded || n->skip_dev || (n->fuse_root >= 0 && !n->fgroup)) continue;
    kiln_plan_kernel *q = &p[cnt++];
    snprintf(q->node, sizeof q->node, "%s", n->name);
    /* a fused group's kernel runs in its nodes' precision (all the same: no conversion inside a group) */
    const kiln_node *pn = n->fgroup && n->fgroup->head >= 0 ? &g->nodes[n->fgroup->head] : n;
    snprintf(q->precision, sizeof q->precision, "%s", !pn->prec_why ? "-" : pn->half ? "fp16" : "fp32");
    snprintf(q->precision_why, sizeof q->precision_why, "%s", pn->prec_why ? pn->prec_why : s->precision ? "no float tensors" : "fp32 plan");
    q->measured_ns = meas[i];
    q->predicted_ns = -1;
    if (n->fgroup && n->fgroup->head >= 0) { /* an epilogue: the head's kernel, parameters and instance */
      group_ops(g, n->fgroup, q);
      describe_tunable(s, g, &g->nodes[n->fgroup->head], have_dm ? &dm : NULL, "+epi", q);
      continue;
    }
    if (n->fgroup) {
      group_ops(g, n->fgroup, q);
      snprintf(q->family, sizeof q->family, "fused");
      snprintf(q->origin, sizeof q->origin, "generated");
      continue;
    }
    snprintf(q->ops, sizeof q->ops, "%s", n->op_type);
    q->nodes_covered = 1;
    if (describe_tunable(s, g, n, have_dm ? &dm : NULL, "", q) != 0) snprintf(q->origin, sizeof q->origin, "fixed");
  }
  free(meas);
  *out = p;
  *nout = cnt;
  return 0;
}
