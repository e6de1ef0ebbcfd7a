/* cmd_report.c: `kiln report`: one self-contained HTML page about a tuning
 * database, for people: per device, the probe's figures (bandwidth against
 * working-set size, arithmetic rate against vector width), the cost model's
 * predicted against measured time of every measured candidate per kernel
 * family (the prediction recorded when the candidate was measured, and the
 * final fit on all records), the search's convergence per kernel instance
 * (best so far against trials, in the order the records were created), the
 * default and tuned time of every instance, and fused-epilogue choices. With
 * --model, the model's ops on this device: default, tuned and measured times
 * per node. Plots are inline SVG written here; the page has no script and
 * fetches nothing.
 *
 * Everything is read through db/kiln_db.h. An instance's default time is its first measured record:
 * the tuner measures the descriptor's default first. */
#include "kiln_cli.h"
#include "kiln_costmodel.h"
#include "kiln_db.h"
#include "report_svg.h"
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define esc kiln_report_esc
#define fmt_ns kiln_report_fmt_ns
#define px kiln_report_px
#define py kiln_report_py
#define nice_range kiln_report_nice_range
#define svg_axes kiln_report_svg_axes
#define svg_open kiln_report_svg_open
#define legend kiln_report_legend
#define plot_bars kiln_report_plot_bars
#define PALETTE KILN_REPORT_PALETTE
#define MAX_FAMILIES 32

/* ---- data ------------------------------------------------------------------ */

typedef struct {
  kiln_record *r;
  int n, cap;
} rec_list;

typedef struct {
  const kiln_record *first;   /* records[first..] of this instance, in creation order */
  int *idx, n, cap;           /* indices into the device's record list */
  double default_ns, best_ns; /* ns; < 0 when unknown */
  int ok, failed, best_i, tuned;
} instance;

typedef struct {
  char name[32];
  int records, measured, with_pred;
  kiln_cm_eval eval;
  int have_eval;
  kiln_correction corr;
} family_rep;

typedef struct {
  int64_t id;
  kiln_device_info info;
  char fingerprint[512];
  char *probe;            /* JSON or NULL */
  kiln_devmodel dm;
  int have_dm;
  rec_list recs;
  double *final_pred;     /* per record: the final fit's prediction (ns), <= 0 if none */
  instance *inst;
  int ninst;
  family_rep fam[MAX_FAMILIES];
  int nfam;
} device_rep;

static void collect(const kiln_record *r, void *ctx) {
  rec_list *l = ctx;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 256;
    kiln_record *nr = realloc(l->r, sizeof *nr * (size_t)cap);
    if (!nr) return;
    l->r = nr;
    l->cap = cap;
  }
  l->r[l->n++] = *r;
}

static bool same_instance(const kiln_record *a, const kiln_record *b) {
  return a->dtype == b->dtype && !strcmp(a->family, b->family) && !strcmp(a->shape_key, b->shape_key) && !strcmp(a->epilogue, b->epilogue);
}

/* Groups the records into instances (records come by family, shape key, id). */
static int group_instances(kiln_db *db, device_rep *d) {
  d->inst = calloc((size_t)d->recs.n + 1, sizeof *d->inst);
  if (!d->inst) return -1;
  for (int i = 0; i < d->recs.n; i++) {
    const kiln_record *r = &d->recs.r[i];
    instance *in = NULL;
    for (int k = d->ninst - 1; k >= 0 && !in; k--) if (same_instance(d->inst[k].first, r)) in = &d->inst[k];
    if (!in) {
      in = &d->inst[d->ninst++];
      in->first = r;
      in->default_ns = in->best_ns = -1;
      in->best_i = -1;
      in->tuned = kiln_db_is_tuned(db, d->id, r->family, r->dtype, r->shape_key, r->epilogue);
    }
    if (in->n == in->cap) {
      int cap = in->cap ? in->cap * 2 : 16;
      int *ni = realloc(in->idx, sizeof(int) * (size_t)cap);
      if (!ni) return -1;
      in->idx = ni;
      in->cap = cap;
    }
    in->idx[in->n++] = i;
    if (!strcmp(r->status, "ok") && kiln_record_ns(r) > 0) {
      if (in->ok == 0 && in->failed == 0) in->default_ns = kiln_record_ns(r); /* the first candidate is the default */
      in->ok++;
      /* the best as lookups rank it (kiln_record_rank_cmp: contenders re-timed together first) */
      if (in->best_i < 0 || kiln_record_rank_cmp(r, &d->recs.r[in->best_i]) < 0) { in->best_ns = kiln_record_ns(r); in->best_i = i; }
    } else in->failed++;
  }
  return 0;
}

static void device_free(device_rep *d) {
  free(d->probe);
  free(d->recs.r);
  free(d->final_pred);
  for (int i = 0; i < d->ninst; i++) free(d->inst[i].idx);
  free(d->inst);
}

/* Loads everything the page shows about one device. */
static int load_device(kiln_db *db, device_rep *d, kiln_error *err) {
  char fams[MAX_FAMILIES][32];
  int nf = kiln_db_families(db, d->id, fams, MAX_FAMILIES);
  kiln_db_get_probe(db, d->id, &d->probe);
  d->have_dm = d->probe && kiln_devmodel_from_probe(d->probe, &d->info, &d->dm, NULL) == 0;
  for (int f = 0; f < nf; f++) {
    int before = d->recs.n;
    int rc = kiln_db_each_family(db, d->id, fams[f], collect, &d->recs, err);
    if (rc) return rc;
    family_rep *fr = &d->fam[d->nfam++];
    snprintf(fr->name, sizeof fr->name, "%s", fams[f]);
    fr->records = d->recs.n - before;
    if (d->have_dm) {
      kiln_cm_fit_db(db, d->id, &d->dm, fams[f], &fr->corr, NULL);
      fr->have_eval = kiln_cm_evaluate(db, d->id, &d->dm, fams[f], NULL, &fr->eval, NULL) == 0 && fr->eval.records > 0;
    }
  }
  d->final_pred = calloc((size_t)d->recs.n + 1, sizeof(double));
  if (!d->final_pred) return KILN_ENOMEM;
  for (int i = 0; i < d->recs.n; i++) {
    const kiln_record *r = &d->recs.r[i];
    family_rep *fr = NULL;
    for (int f = 0; f < d->nfam; f++) if (!strcmp(d->fam[f].name, r->family)) fr = &d->fam[f];
    if (!fr || strcmp(r->status, "ok") || r->median_ns <= 0) continue;
    fr->measured++;
    if (r->predicted_ns > 0) fr->with_pred++;
    if (d->have_dm && r->nfeat > 0) {
      kiln_features ft;
      memset(&ft, 0, sizeof ft);
      kiln_features_from_array(r->feat, r->nfeat, &ft);
      d->final_pred[i] = kiln_cm_predict_ns(&d->dm, &fr->corr, &ft, r->params);
    }
  }
  if (group_instances(db, d)) return KILN_ENOMEM;
  return 0;
}

/* Device rows collected by kiln_db_each_device. */
typedef struct {
  device_rep *d;
  int n, cap;
  bool oom;
} dev_list;

static void collect_device(const kiln_db_device_row *row, void *ctx) {
  dev_list *l = ctx;
  if (l->oom) return;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 4;
    device_rep *nd = realloc(l->d, sizeof *nd * (size_t)cap);
    if (!nd) { l->oom = true; return; }
    l->d = nd;
    l->cap = cap;
  }
  device_rep *d = &l->d[l->n++];
  memset(d, 0, sizeof *d);
  d->id = row->id;
  snprintf(d->fingerprint, sizeof d->fingerprint, "%s", row->fingerprint);
}

/* Devices with a row in the database, with their stored descriptions, in
 * row order. */
static int list_devices(kiln_db *db, device_rep **out, int *n, kiln_error *err) {
  dev_list l = {0};
  int rc = kiln_db_each_device(db, collect_device, &l, err);
  if (!rc && l.oom) rc = KILN_ENOMEM;
  for (int i = 0; !rc && i < l.n; i++) rc = kiln_db_device_info(db, l.d[i].id, &l.d[i].info, err);
  if (rc) { free(l.d); l.d = NULL; l.n = 0; }
  *out = l.d;
  *n = l.n;
  return rc;
}

/* ---- plots (the primitives are in report_svg.c) ------------------------------- */

/* Predicted against measured, one plot per family, two series. */
static int plot_scatter(FILE *f, const device_rep *d, const family_rep *fr) {
  plot p = {.W = 440, .H = 360, .L = 70, .R = 26, .T = 10, .B = 40, .lx = true, .ly = true};
  double lo = INFINITY, hi = 0;
  int npts = 0;
  for (int i = 0; i < d->recs.n; i++) {
    const kiln_record *r = &d->recs.r[i];
    if (strcmp(r->family, fr->name) || strcmp(r->status, "ok") || r->median_ns <= 0) continue;
    double v[3] = {r->median_ns, r->predicted_ns, d->final_pred[i]};
    if (r->predicted_ns <= 0 && d->final_pred[i] <= 0) continue;
    npts++;
    for (int k = 0; k < 3; k++) if (v[k] > 0) { lo = fmin(lo, v[k]); hi = fmax(hi, v[k]); }
  }
  if (!npts) return 0;
  nice_range(&lo, &hi, true);
  p.x0 = p.y0 = lo;
  p.x1 = p.y1 = hi;
  char label[96];
  snprintf(label, sizeof label, "predicted against measured time, family %s", fr->name);
  svg_open(f, &p, label);
  svg_axes(f, &p, "measured (median)", "predicted", true, true);
  fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='diag'/>", px(&p, lo), py(&p, lo), px(&p, hi), py(&p, hi));
  for (int s = 0; s < 2; s++) {
    fprintf(f, "<g fill='%s' fill-opacity='0.55'>", PALETTE[s]);
    for (int i = 0; i < d->recs.n; i++) {
      const kiln_record *r = &d->recs.r[i];
      double pv = s == 0 ? r->predicted_ns : d->final_pred[i];
      if (strcmp(r->family, fr->name) || strcmp(r->status, "ok") || r->median_ns <= 0 || pv <= 0) continue;
      char a[32], b[32];
      fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3'><title>", px(&p, r->median_ns), py(&p, pv));
      esc(f, r->shape_key);
      fprintf(f, " | %s: measured %s, predicted %s</title></circle>", r->params, fmt_ns(a, sizeof a, r->median_ns), fmt_ns(b, sizeof b, pv));
    }
    fputs("</g>", f);
  }
  legend(f, &p, 0, PALETTE[0], "prediction when measured");
  legend(f, &p, 1, PALETTE[1], "final fit on all records");
  fputs("</svg>", f);
  return npts;
}

/* Best so far against trials for one instance; failed candidates as crosses. */
static void plot_convergence(FILE *f, const device_rep *d, const instance *in) {
  plot p = {.W = 360, .H = 220, .L = 66, .R = 16, .T = 8, .B = 36, .ly = true};
  double lo = INFINITY, hi = 0;
  for (int k = 0; k < in->n; k++) {
    const kiln_record *r = &d->recs.r[in->idx[k]];
    if (!strcmp(r->status, "ok") && r->median_ns > 0) { lo = fmin(lo, r->median_ns); hi = fmax(hi, r->median_ns); }
  }
  if (!(hi > 0)) return;
  nice_range(&lo, &hi, true);
  p.x0 = 0.5;
  p.x1 = in->n + 0.5;
  p.y0 = lo;
  p.y1 = hi;
  svg_open(f, &p, "search convergence: best time so far against trials");
  svg_axes(f, &p, "trial", "time", false, true);
  double best = INFINITY;
  fprintf(f, "<polyline class='best' points='");
  for (int k = 0; k < in->n; k++) {
    const kiln_record *r = &d->recs.r[in->idx[k]];
    if (!strcmp(r->status, "ok") && r->median_ns > 0 && r->median_ns < best) {
      if (isfinite(best)) fprintf(f, "%.1f,%.1f ", px(&p, k + 1), py(&p, best));
      best = r->median_ns;
    }
    if (isfinite(best)) fprintf(f, "%.1f,%.1f ", px(&p, k + 1), py(&p, best));
  }
  if (isfinite(best)) fprintf(f, "%.1f,%.1f", px(&p, in->n + 0.5), py(&p, best));
  fputs("'/>", f);
  for (int k = 0; k < in->n; k++) {
    const kiln_record *r = &d->recs.r[in->idx[k]];
    char a[32];
    double x = px(&p, k + 1);
    if (!strcmp(r->status, "ok") && r->median_ns > 0) {
      fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3' class='%s'><title>trial %d%s: %s, %s", x, py(&p, r->median_ns), k == 0 ? "dflt" : "trial",
              k + 1, k == 0 ? " (default)" : "", fmt_ns(a, sizeof a, r->median_ns), r->params);
      if (r->predicted_ns > 0) fprintf(f, ", predicted %s", fmt_ns(a, sizeof a, r->predicted_ns));
      fputs("</title></circle>", f);
    } else {
      double y = p.T + 6;
      fprintf(f, "<path d='M%.1f %.1fl6 6m0 -6l-6 6' class='fail'><title>trial %d: %s, %s</title></path>", x - 3, y - 3, k + 1, r->status, r->params);
    }
  }
  fputs("</svg>", f);
}

/* ---- the device probe ---------------------------------------------------------- */

/* Next "name":{"value":V,"spread":S,"unit":"U"} entry of the probe JSON after *pos. */
static bool probe_next(const char **pos, char *name, size_t nl, double *value, double *spread, char *unit, size_t ul) {
  const char *s = *pos;
  while ((s = strchr(s, '"')) != NULL) {
    const char *e = strchr(s + 1, '"');
    if (!e) return false;
    if (e[1] == ':' && e[2] == '{') {
      snprintf(name, nl, "%.*s", (int)(e - s - 1), s + 1);
      const char *obj = e + 3, *end = strchr(obj, '}');
      if (!end) return false;
      const char *v = strstr(obj, "\"value\":"), *sp = strstr(obj, "\"spread\":"), *u = strstr(obj, "\"unit\":\"");
      *value = v && v < end ? strtod(v + 8, NULL) : NAN;
      *spread = sp && sp < end ? strtod(sp + 9, NULL) : NAN;
      unit[0] = 0;
      if (u && u < end) {
        const char *ue = strchr(u + 8, '"');
        if (ue) snprintf(unit, ul, "%.*s", (int)(ue - u - 8), u + 8);
      }
      *pos = end + 1;
      return true;
    }
    s = e + 1;
  }
  return false;
}

static void write_probe(FILE *f, const device_rep *d) {
  fputs("<h3>Device probe</h3>", f);
  if (!d->probe) { fputs("<p class='note'>This device was never probed (<code>kiln probe</code>).</p>", f); return; }
  if (d->have_dm) {
    const kiln_devmodel *m = &d->dm;
    fputs("<div class='row'>", f);
    /* bandwidth against working-set size */
    plot p = {.W = 420, .H = 260, .L = 60, .R = 24, .T = 10, .B = 40, .lx = true, .ly = false};
    double lo = m->bw_size[0], hi = m->bw_size[m->nbw - 1], blo = 0, bhi = 0;
    for (int i = 0; i < m->nbw; i++) bhi = fmax(bhi, m->bw[i]);
    nice_range(&lo, &hi, true);
    nice_range(&blo, &bhi, false);
    p.x0 = lo; p.x1 = hi; p.y0 = 0; p.y1 = bhi;
    svg_open(f, &p, "copy bandwidth against working-set size");
    svg_axes(f, &p, "working set (bytes)", "copy bandwidth (GB/s)", false, false);
    fputs("<polyline class='best' points='", f);
    for (int i = 0; i < m->nbw; i++) fprintf(f, "%.1f,%.1f ", px(&p, m->bw_size[i]), py(&p, m->bw[i]));
    fputs("'/>", f);
    for (int i = 0; i < m->nbw; i++)
      fprintf(f, "<circle cx='%.1f' cy='%.1f' r='4' class='dflt'><title>%.0f KiB: %.2f GB/s</title></circle>", px(&p, m->bw_size[i]), py(&p, m->bw[i]),
              m->bw_size[i] / 1024, m->bw[i]);
    fputs("</svg>", f);
    /* arithmetic rate against vector width */
    plot q = {.W = 360, .H = 260, .L = 60, .R = 12, .T = 10, .B = 40, .x0 = 0, .x1 = 5};
    double flo = 0, fhi = 0;
    for (int i = 0; i < 5; i++) fhi = fmax(fhi, m->flops[i]);
    nice_range(&flo, &fhi, false);
    q.y0 = 0; q.y1 = fhi;
    svg_open(f, &q, "arithmetic rate against vector width");
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' class='frame'/>", q.L, q.T, q.W - q.L - q.R, q.H - q.T - q.B);
    for (int i = 0; i < 5; i++) {
      double x0 = px(&q, i + 0.15), x1 = px(&q, i + 0.85), y = py(&q, m->flops[i]);
      fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s'><title>vec%d: %.1f GFLOP/s</title></rect>", x0, y, x1 - x0,
              q.H - q.B - y, PALETTE[0], 1 << i, m->flops[i]);
      fprintf(f, "<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%d</text>", (x0 + x1) / 2, q.H - q.B + 14, 1 << i);
      fprintf(f, "<text x='%.1f' y='%.1f' class='tick' text-anchor='middle'>%.0f</text>", (x0 + x1) / 2, y - 3, m->flops[i]);
    }
    fprintf(f, "<text x='%.1f' y='%.1f' class='axis' text-anchor='middle'>vector width</text>", (q.L + q.W - q.R) / 2, q.H - 4);
    fprintf(f, "<text transform='translate(12,%.1f) rotate(-90)' class='axis' text-anchor='middle'>GFLOP/s</text></svg>", (q.T + q.H - q.B) / 2);
    fputs("</div>", f);
  }
  fputs("<table><tr><th>figure</th><th>value</th><th>unit</th><th>spread</th></tr>", f);
  const char *pos = d->probe;
  char name[64], unit[32];
  double v, s;
  while (probe_next(&pos, name, sizeof name, &v, &s, unit, sizeof unit)) {
    fputs("<tr><td>", f);
    esc(f, name);
    fprintf(f, "</td><td class='num'>%.4g</td><td>", v);
    esc(f, unit);
    fprintf(f, "</td><td class='num'>%.1f%%</td></tr>", s * 100);
  }
  fputs("</table>", f);
}

/* ---- the model's ops (--model) ---------------------------------------------------- */

typedef struct {
  const char *path, *devsel;
  kiln_node_prediction *pred;
  int npred;
  int64_t device_id;   /* device row of the session's device, -1 if none */
  char device[128];
  char error[1024];    /* why the section is empty */
  char note[1200];     /* what is missing from it */
} model_rep;

static const instance *find_instance(const device_rep *d, const char *family, const char *shape_key) {
  for (int i = 0; i < d->ninst; i++)
    if (!strcmp(d->inst[i].first->family, family) && !strcmp(d->inst[i].first->shape_key, shape_key)) return &d->inst[i];
  return NULL;
}

static void load_model(kiln_db *db, model_rep *mr) {
  kiln_error err = {0};
  kiln_model *m = NULL;
  kiln_device *d = NULL;
  kiln_session *s = NULL;
  kiln_cli__inputs b = {0};
  int rc;
  mr->device_id = -1;
  kiln_load_options lo = {.max_model_bytes = kiln_cli__max_model_bytes(0)};
  if ((rc = kiln_model_load(mr->path, &lo, &m, &err)) != 0 || (rc = kiln_model_check_supported(m, &err)) != 0) goto fail;
  if ((rc = kiln_cli__bind_inputs(m, NULL, 0, true, 0, NULL, &b)) != 0) { snprintf(mr->error, sizeof mr->error, "the model's inputs cannot be drawn at random"); goto out; }
  if ((rc = kiln_cli__device_open(mr->devsel, &d, &err)) != 0) goto fail;
  snprintf(mr->device, sizeof mr->device, "%s", kiln_device_get_info(d)->name);
  if (kiln_db_device(db, kiln_device_get_info(d), &mr->device_id, &err) != 0) {
    mr->device_id = -1;
    snprintf(mr->error, sizeof mr->error, "the database has no records for this device (%s)", mr->device);
    goto out;
  }
  if ((rc = kiln_session_create(m, d, &s, &err)) != 0) goto fail;
  for (int i = 0; i < b.n; i++) if ((rc = kiln_session_set_input(s, b.info[i].name, b.t[i], &err)) != 0) goto fail;
  if ((rc = kiln_predict(m, NULL, s, db, &mr->pred, &mr->npred, &err)) != 0) {
    /* without a probe of this device: the node -> kernel instance mapping
     * from a spec-sheet profile (shape keys do not depend on the device);
     * times measured now and predictions are left out */
    const char *const *prof = kiln_costmodel_profiles();
    snprintf(mr->note, sizeof mr->note, "%s: the measured-now and predicted columns are empty", err.msg);
    memset(&err, 0, sizeof err);
    if (!prof || !prof[0] || (rc = kiln_predict(m, prof[0], NULL, NULL, &mr->pred, &mr->npred, &err)) != 0) goto fail;
    for (int i = 0; i < mr->npred; i++) mr->pred[i].measured_ns = mr->pred[i].predicted_ns = -1, mr->pred[i].params[0] = 0;
  }
  goto out;
fail:
  snprintf(mr->error, sizeof mr->error, "%s", err.msg[0] ? err.msg : kiln_strerror(rc));
out:
  kiln_cli__inputs_free(&b);
  kiln_session_free(s);
  kiln_device_close(d);
  kiln_model_free(m);
}

static void write_model(FILE *f, const device_rep *devs, int ndev, model_rep *mr) {
  fputs("<h2 id='model'>Model: ", f);
  esc(f, mr->path);
  fputs("</h2>", f);
  const device_rep *d = NULL;
  for (int i = 0; i < ndev; i++) if (devs[i].id == mr->device_id) d = &devs[i];
  /* Per node, the instance's records on this device row, else on another row
   * of the same device name (an older fingerprint of the same device). */
  int nalt = 0;
  if (mr->error[0] || !d) {
    fputs("<p class='note'>No per-op figures: ", f);
    esc(f, mr->error[0] ? mr->error : "the device is not in the database");
    fputs("</p>", f);
    return;
  }
  fputs("<p>Each op of the model on ", f);
  esc(f, mr->device);
  fputs(": the default and tuned time of its kernel instance from the database (measured by <code>kiln tune</code>), the time measured now "
        "in the model with the database's parameters (profiling events, best of 3), and the cost model's prediction. Ops without a tunable "
        "kernel show only the time measured now.</p>", f);
  if (mr->note[0]) { fputs("<p class='note'>", f); esc(f, mr->note); fputs("</p>", f); }
  bar_row *rows = calloc((size_t)mr->npred + 1, sizeof *rows);
  int nrows = 0;
  double tot_def = 0, tot_tuned = 0, tot_meas = 0;
  fputs("<table><tr><th>node</th><th>op</th><th>kernel instance</th><th>default</th><th>tuned</th><th>speedup</th><th>measured now</th>"
        "<th>predicted</th><th>parameters now</th></tr>", f);
  for (int i = 0; i < mr->npred; i++) {
    const kiln_node_prediction *q = &mr->pred[i];
    const instance *in = q->shape_key[0] ? find_instance(d, q->family, q->shape_key) : NULL;
    for (int k = 0; k < ndev && q->shape_key[0] && !in; k++)
      if (&devs[k] != d && !strcmp(devs[k].info.name, d->info.name) && (in = find_instance(&devs[k], q->family, q->shape_key)) != NULL) nalt++;
    char a[32], b[32], c[32], e[32];
    double dn = in ? in->default_ns : -1, tn = in ? in->best_ns : -1;
    if (q->measured_ns > 0) tot_meas += q->measured_ns;
    if (dn > 0 && tn > 0) { tot_def += dn; tot_tuned += tn; }
    fputs("<tr><td>", f);
    esc(f, q->node);
    fputs("</td><td>", f);
    esc(f, q->op);
    fputs("</td><td class='key'>", f);
    if (q->shape_key[0]) { esc(f, q->family); fputs(" ", f); esc(f, q->shape_key); }
    fprintf(f, "</td><td class='num'>%s</td><td class='num'>%s</td><td class='num'>", fmt_ns(a, sizeof a, dn), fmt_ns(b, sizeof b, tn));
    if (dn > 0 && tn > 0) fprintf(f, "%.2fx", dn / tn); else fputs("-", f);
    fprintf(f, "</td><td class='num'>%s</td><td class='num'>%s</td><td class='key'>", fmt_ns(c, sizeof c, q->measured_ns), fmt_ns(e, sizeof e, q->predicted_ns));
    esc(f, q->params);
    fputs("</td></tr>", f);
    if (rows && q->shape_key[0] && (dn > 0 || tn > 0)) {
      snprintf(rows[nrows].label, sizeof rows[nrows].label, "%.40s (%s)", q->node, q->op);
      rows[nrows].a = dn;
      rows[nrows].b = tn;
      nrows++;
    }
  }
  char a[32], b[32], c[32];
  fprintf(f, "<tr class='total'><td colspan='3'>total</td><td class='num'>%s</td><td class='num'>%s</td><td class='num'>", fmt_ns(a, sizeof a, tot_def),
          fmt_ns(b, sizeof b, tot_tuned));
  if (tot_def > 0 && tot_tuned > 0) fprintf(f, "%.2fx", tot_def / tot_tuned); else fputs("-", f);
  fprintf(f, "</td><td class='num'>%s</td><td></td><td></td></tr></table>", fmt_ns(c, sizeof c, tot_meas));
  if (nalt)
    fprintf(f, "<p class='note'>%d op%s took default and tuned times from another database row of the same device name (an older "
               "fingerprint of this device).</p>", nalt, nalt == 1 ? "" : "s");
  if (nrows) {
    fputs("<h3>Default and tuned time per op</h3><div class='plot'>", f);
    plot_bars(f, rows, nrows, "default and tuned time per op of the model", "default parameters", "tuned parameters");
    fputs("</div>", f);
  } else fputs("<p class='note'>None of this model's kernel instances has records in the database yet (run <code>kiln tune</code> on it).</p>", f);
  free(rows);
}

/* ---- the page ------------------------------------------------------------------------ */

static const char *CSS =
  "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1200px;color:#1d2733;padding:0 16px}"
  "h1{font-size:24px}h2{margin-top:36px;border-bottom:1px solid #d5dbe1;padding-bottom:4px}h3{margin-top:24px}"
  "table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #d5dbe1;padding:3px 8px;text-align:left;vertical-align:top}"
  "th{background:#f1f4f7}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.key{font:12px ui-monospace,monospace;"
  "max-width:420px;overflow-wrap:anywhere}tr.total td{font-weight:600}"
  ".note{color:#5b6875;font-style:italic}.row,.grid-plots{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}"
  ".card{border:1px solid #d5dbe1;border-radius:6px;padding:8px;background:#fff}.card p{margin:2px 0 6px;font:12px ui-monospace,monospace;max-width:360px;overflow-wrap:anywhere}"
  "svg{background:#fff}svg text{font:11px system-ui,sans-serif;fill:#1d2733}svg .tick{fill:#5b6875;font-size:10px}svg .axis{font-size:12px}"
  "svg .legend{font-size:11px}svg .rowlabel{font:11px ui-monospace,monospace}"
  ".frame{fill:none;stroke:#aab4bf}.grid{stroke:#e6eaee}.diag{stroke:#888;stroke-dasharray:4 3}"
  ".best{fill:none;stroke:#2ca02c;stroke-width:2}.trial{fill:#1f77b4;fill-opacity:.6}.dflt{fill:#d62728}.fail{stroke:#d62728;stroke-width:1.5;fill:none}"
  "code{background:#f1f4f7;padding:1px 4px;border-radius:3px}";

static void write_device(FILE *f, const device_rep *d, int di) {
  char a[32], b[32];
  fprintf(f, "<h2 id='dev%d'>Device: ", di);
  esc(f, d->info.name);
  fputs("</h2><p>", f);
  esc(f, d->info.platform);
  fprintf(f, ", driver ");
  esc(f, d->info.driver);
  fprintf(f, ", %d compute units at %d MHz, %.1f GiB global memory, %llu KiB local memory, max work-group %zu.<br><span class='note'>fingerprint: ",
          d->info.compute_units, d->info.max_clock_mhz, (double)d->info.global_mem / (1 << 30), (unsigned long long)(d->info.local_mem / 1024),
          d->info.max_work_group);
  esc(f, d->fingerprint);
  fprintf(f, "</span></p><p>%d records in %d kernel instances of %d families.</p>", d->recs.n, d->ninst, d->nfam);
  write_probe(f, d);

  /* cost model */
  fputs("<h3>Cost model: predicted against measured time</h3>", f);
  fputs("<p>Every measured candidate that passed the correctness check. Blue: the prediction the tuner recorded when it chose to measure the "
        "candidate (fitted on the records before it); red: the final fit on all of this family's records (in-sample). On the dashed line "
        "the prediction is exact. Hold-out scores (<code>kiln model eval</code>): each instance ranked by a fit on the others.</p>", f);
  fputs("<table><tr><th>family</th><th>records</th><th>measured ok</th><th>with a recorded prediction</th><th>instances</th><th>Kendall &tau;</th>"
        "<th>top-1</th><th>top-5</th><th>regret</th></tr>", f);
  for (int i = 0; i < d->nfam; i++) {
    const family_rep *fr = &d->fam[i];
    int ni = 0;
    for (int k = 0; k < d->ninst; k++) ni += !strcmp(d->inst[k].first->family, fr->name);
    fputs("<tr><td>", f);
    esc(f, fr->name);
    fprintf(f, "</td><td class='num'>%d</td><td class='num'>%d</td><td class='num'>%d</td><td class='num'>%d</td>", fr->records, fr->measured, fr->with_pred, ni);
    if (fr->have_eval)
      fprintf(f, "<td class='num'>%.2f</td><td class='num'>%.0f%%</td><td class='num'>%.0f%%</td><td class='num'>%.2f</td></tr>", fr->eval.kendall_tau,
              fr->eval.top1 * 100, fr->eval.top5 * 100, fr->eval.regret);
    else fputs("<td colspan='4' class='note'>needs a probe and two tuned instances</td></tr>", f);
  }
  fputs("</table><div class='grid-plots'>", f);
  int any = 0;
  for (int i = 0; i < d->nfam; i++) {
    fputs("<div class='card'><b>", f);
    esc(f, d->fam[i].name);
    fputs("</b><br>", f);
    int n = plot_scatter(f, d, &d->fam[i]);
    if (!n) fputs("<p class='note'>no candidate with features and a measurement</p>", f);
    any += n;
    fputs("</div>", f);
  }
  fputs("</div>", f);
  if (!any) fputs("<p class='note'>No predictions to plot: the records carry no cost-model features or the device was never probed.</p>", f);

  /* convergence */
  fputs("<h3>Search convergence per kernel instance</h3><p>Each candidate's median time in the order the tuner measured it (red: the "
        "descriptor default, measured first), the best so far (green), and rejected candidates (crosses at the top: wrong result, compile or "
        "launch error). Hover for parameters.</p><div class='grid-plots'>", f);
  for (int i = 0; i < d->ninst; i++) {
    const instance *in = &d->inst[i];
    fputs("<div class='card'><b>", f);
    esc(f, in->first->family);
    fprintf(f, "</b> %s%s<p>", in->tuned ? "tuned" : "partly searched", in->first->epilogue[0] ? ", fused" : "");
    esc(f, in->first->shape_key);
    if (in->first->epilogue[0]) { fputs(" + ", f); esc(f, in->first->epilogue); }
    fprintf(f, "</p><p>%d trials, %d rejected; default %s, best %s", in->n, in->failed, fmt_ns(a, sizeof a, in->default_ns), fmt_ns(b, sizeof b, in->best_ns));
    if (in->default_ns > 0 && in->best_ns > 0) fprintf(f, " (%.2fx)", in->default_ns / in->best_ns);
    fputs("</p>", f);
    if (in->ok) plot_convergence(f, d, in);
    else fputs("<p class='note'>no candidate passed</p>", f);
    fputs("</div>", f);
  }
  fputs("</div>", f);

  /* default and tuned per instance */
  fputs("<h3>Default and tuned time per kernel instance</h3>", f);
  bar_row *rows = calloc((size_t)d->ninst + 1, sizeof *rows);
  int nrows = 0;
  fputs("<table><tr><th>family</th><th>instance</th><th>default</th><th>tuned</th><th>speedup</th><th>trials</th><th>tuned parameters</th></tr>", f);
  for (int i = 0; i < d->ninst; i++) {
    const instance *in = &d->inst[i];
    fputs("<tr><td>", f);
    esc(f, in->first->family);
    fputs("</td><td class='key'>", f);
    esc(f, in->first->shape_key);
    fprintf(f, "</td><td class='num'>%s</td><td class='num'>%s</td><td class='num'>", fmt_ns(a, sizeof a, in->default_ns), fmt_ns(b, sizeof b, in->best_ns));
    if (in->default_ns > 0 && in->best_ns > 0) fprintf(f, "%.2fx", in->default_ns / in->best_ns); else fputs("-", f);
    fprintf(f, "</td><td class='num'>%d</td><td class='key'>", in->n);
    if (in->best_i >= 0) esc(f, d->recs.r[in->best_i].params);
    fputs("</td></tr>", f);
    if (rows && (in->default_ns > 0 || in->best_ns > 0)) {
      snprintf(rows[nrows].label, sizeof rows[nrows].label, "%s %.44s", in->first->family, in->first->shape_key);
      rows[nrows].a = in->default_ns;
      rows[nrows].b = in->best_ns;
      nrows++;
    }
  }
  fputs("</table><div class='plot'>", f);
  plot_bars(f, rows, nrows, "default and tuned time per kernel instance", "default parameters", "tuned parameters");
  fputs("</div>", f);
  free(rows);

  /* fusion */
  fputs("<h3>Fusion choices</h3>", f);
  int nfused = 0;
  for (int i = 0; i < d->ninst; i++) nfused += d->inst[i].first->epilogue[0] != 0;
  if (!nfused) {
    fputs("<p class='note'>No fused kernel in this device's records: every instance has an empty epilogue signature (each op runs as its "
          "own kernel).</p>", f);
    return;
  }
  fputs("<p>Instances tuned with a fused epilogue, next to the same instance without one when it was measured too.</p><table><tr><th>family</th>"
        "<th>instance</th><th>epilogue</th><th>fused best</th><th>unfused best</th></tr>", f);
  for (int i = 0; i < d->ninst; i++) {
    const instance *in = &d->inst[i];
    if (!in->first->epilogue[0]) continue;
    double unf = -1;
    for (int k = 0; k < d->ninst; k++)
      if (!d->inst[k].first->epilogue[0] && !strcmp(d->inst[k].first->family, in->first->family) && !strcmp(d->inst[k].first->shape_key, in->first->shape_key))
        unf = d->inst[k].best_ns;
    fputs("<tr><td>", f);
    esc(f, in->first->family);
    fputs("</td><td class='key'>", f);
    esc(f, in->first->shape_key);
    fputs("</td><td class='key'>", f);
    esc(f, in->first->epilogue);
    fprintf(f, "</td><td class='num'>%s</td><td class='num'>%s</td></tr>", fmt_ns(a, sizeof a, in->best_ns), fmt_ns(b, sizeof b, unf));
  }
  fputs("</table>", f);
}

typedef struct report_args {
  bool json;
  const char *dbpath, *out, *model, *devsel;
} report_args;

static const kiln_cli_opt OPTS[] = {
  KILN_OPT_DB(report_args, dbpath, "tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db)"),
  {.name = "--model", .kind = KILN_OPT_STRING, .off = offsetof(report_args, model), .value = "MODEL.onnx", .nonempty = true,
   .err = "--model needs an ONNX file",
   .help = "also show this model's ops on this device: default and tuned kernel\n"
           "times per op (needs an OpenCL device; inputs are random)"},
  KILN_OPT_DEVICE(report_args, devsel, "the device for --model (the report covers every device in the database)"),
  {.name = "--output", .alias = "-o", .kind = KILN_OPT_STRING, .off = offsetof(report_args, out), .value = "FILE", .nonempty = true,
   .err = "-o needs a file name",
   .help = "where to write the page (default report.html); one file, inline SVG,\n"
           "nothing fetched from a network"},
  KILN_OPT_JSON(report_args, json, "also print a JSON summary of what the page shows on stdout"),
};

static int cmd_report(int argc, char **argv) {
  report_args a = {.out = "report.html"};
  int rc = kiln_cli_parse(&kiln_cli_cmd_report, argc, argv, &a);
  if (rc) return kiln_cli_parse_exit(rc);
  const char *dbpath = a.dbpath, *out = a.out;
  bool json = a.json;
  model_rep mr = {.devsel = a.devsel, .path = a.model};
  struct stat st;
  if (mr.path && stat(mr.path, &st) != 0) { kiln_cli__error("--model %s: no such file", mr.path); return 2; }
  char buf[4096];
  if (!dbpath) dbpath = kiln_cli__default_db(buf, sizeof buf);
  kiln_error err = {0};
  kiln_db *db = NULL;
  device_rep *devs = NULL;
  int ndev = 0;
  FILE *f = NULL;
  char tmp[4200];
  tmp[0] = 0;
  if ((rc = kiln_db_open(dbpath, KILN_DB_READONLY, &db, &err)) != 0) {
    if (rc == KILN_ENOTFOUND) { kiln_cli__error("--db %s: no such tuning database (create one with `kiln tune`)", dbpath); rc = 2; }
    else rc = kiln_cli__fail(&err, rc);
    goto done;
  }
  if ((rc = list_devices(db, &devs, &ndev, &err)) != 0) { rc = kiln_cli__fail(&err, rc); goto done; }
  for (int i = 0; i < ndev; i++)
    if ((rc = load_device(db, &devs[i], &err)) != 0) { rc = kiln_cli__fail(&err, rc); goto done; }
  if (mr.path) {
    load_model(db, &mr);
    if (mr.error[0]) fprintf(stderr, "kiln: warning: --model %s: %s (the page says so)\n", mr.path, mr.error);
  }
  kiln_db_counts cnt = {0};
  kiln_db_counts_get(db, &cnt, NULL);

  /* written under a temporary name and renamed, so a failed run leaves no partial page */
  snprintf(tmp, sizeof tmp, "%s.tmp", out);
  if (!(f = fopen(tmp, "w"))) { kiln_cli__error("%s: cannot write: %s", out, strerror(errno)); rc = 2; tmp[0] = 0; goto done; }
  time_t now = time(NULL);
  char when[64];
  strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  fprintf(f, "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
             "<title>kiln tuning report</title><style>%s</style></head><body>\n<h1>kiln tuning report</h1>", CSS);
  fputs("<p>Database <code>", f);
  esc(f, dbpath);
  fprintf(f, "</code>: %lld device%s, %lld records (%lld ok), %lld tuned instances, %lld cached binaries. Written by kiln %s on %s.</p>",
          (long long)cnt.devices, cnt.devices == 1 ? "" : "s", (long long)cnt.records, (long long)cnt.ok_records, (long long)cnt.tuned_instances,
          (long long)cnt.binaries, KILN_VERSION, when);
  fputs("<ul>", f);
  for (int i = 0; i < ndev; i++) {
    fprintf(f, "<li><a href='#dev%d'>", i);
    esc(f, devs[i].info.name);
    fprintf(f, "</a>: %d records, %d instances</li>", devs[i].recs.n, devs[i].ninst);
  }
  if (mr.path) { fputs("<li><a href='#model'>model ", f); esc(f, mr.path); fputs("</a></li>", f); }
  fputs("</ul>", f);
  if (!ndev) fputs("<p class='note'>The database has no devices yet: run <code>kiln tune MODEL.onnx --db FILE</code>.</p>", f);
  if (mr.path) write_model(f, devs, ndev, &mr);
  for (int i = 0; i < ndev; i++) write_device(f, &devs[i], i);
  fputs("\n</body></html>\n", f);
  if (ferror(f) | fclose(f)) { f = NULL; kiln_cli__error("%s: write failed", out); rc = 1; goto done; }
  f = NULL;
  if (rename(tmp, out) != 0) { kiln_cli__error("%s: cannot write: %s", out, strerror(errno)); rc = 2; goto done; }
  tmp[0] = 0;
  if (json) {
    printf("{\"output\":"); kiln_cli__json_str(stdout, out);
    printf(",\"db\":"); kiln_cli__json_str(stdout, dbpath);
    printf(",\"devices\":[");
    for (int i = 0; i < ndev; i++) {
      const device_rep *d = &devs[i];
      int conv = 0, bars = 0;
      for (int k = 0; k < d->ninst; k++) { conv += d->inst[k].ok > 0; bars += d->inst[k].default_ns > 0 || d->inst[k].best_ns > 0; }
      printf("%s{\"name\":", i ? "," : ""); kiln_cli__json_str(stdout, d->info.name);
      printf(",\"probe\":%s,\"records\":%d,\"instances\":%d,\"convergence_plots\":%d,\"instance_bars\":%d,\"families\":[", d->probe ? "true" : "false",
             d->recs.n, d->ninst, conv, bars);
      for (int k = 0; k < d->nfam; k++) {
        const family_rep *fr = &d->fam[k];
        printf("%s{\"family\":", k ? "," : ""); kiln_cli__json_str(stdout, fr->name);
        printf(",\"records\":%d,\"measured\":%d,\"with_prediction\":%d,\"kendall_tau\":", fr->records, fr->measured, fr->with_pred);
        kiln_cli__json_num(stdout, fr->have_eval ? fr->eval.kendall_tau : NAN);
        printf("}");
      }
      printf("]}");
    }
    printf("],\"model\":");
    if (!mr.path) printf("null");
    else {
      printf("{\"path\":"); kiln_cli__json_str(stdout, mr.path);
      printf(",\"ops\":%d,\"error\":", mr.npred);
      if (mr.error[0]) kiln_cli__json_str(stdout, mr.error); else printf("null");
      printf("}");
    }
    printf("}\n");
  } else {
    printf("wrote %s: %d device%s", out, ndev, ndev == 1 ? "" : "s");
    for (int i = 0; i < ndev; i++) printf("%s %s (%d records, %d instances)", i ? "," : ":", devs[i].info.name, devs[i].recs.n, devs[i].ninst);
    if (mr.path) printf("; model %s: %d ops", mr.path, mr.npred);
    printf("\n");
  }
done:
  if (f) fclose(f);
  if (tmp[0]) remove(tmp);
  for (int i = 0; i < ndev; i++) device_free(&devs[i]);
  free(devs);
  free(mr.pred);
  kiln_db_close(db);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_report = {.name = "report", .fn = cmd_report, .flags = KILN_CLI_USES_DEVICE, KILN_CLI_OPTS(OPTS),
  .summary = "write a self-contained HTML report of a tuning database (plots of the cost model, search, speedups)"};
