/* ops/nms.c: NonMaxSuppression, on the device (kernels/nms.cl: the IoU
 * matrix per batch, the score order and the greedy pass per batch and
 * class, the compaction of the kept rows) and its CPU reference.
 *
 * How many rows come out depends on the data: the output is planned for the
 * most there can be (batches x classes x min(max per class, boxes)), and
 * after a run the count is read back (8 bytes) and the output's shape set
 * to it (KILN_OP_DYNAMIC); nodes after it are inferred again. */
#include "kiln_internal.h"
#include <math.h>

/* Plan-time maximum kept per class: the max_output_boxes_per_class input
 * when known (0 when absent), else every box. */
static int64_t plan_max(kiln_graph *g, kiln_node *n, int64_t nbox) {
  kiln_value *m = kiln_in(g, n, 2);
  if (!m) return 0;
  if (!m->data) return nbox;
  int64_t v = kiln_value_geti(m, 0);
  return v < 0 ? 0 : v < nbox ? v : nbox;
}

static int nms_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *bx = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1);
  if (!sc || bx->rank != 3 || bx->dims[2] != 4 || sc->rank != 3 || sc->dims[0] != bx->dims[0] || sc->dims[2] != bx->dims[1])
    return kiln__err(err, KILN_ESHAPE, "boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]");
  for (int i = 2; i < 5; i++) {
    kiln_value *v = kiln_in(g, n, i);
    if (v && kiln_value_numel(v) != 1) return kiln__err(err, KILN_ESHAPE, "input %d must hold one value", i);
  }
  int64_t d[2] = {bx->dims[0] * sc->dims[1] * plan_max(g, n, bx->dims[1]), 3};
  kiln_set_out(g, n, 0, KILN_DT_INT64, 2, d);
  return 0;
}

static int nms_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *bx = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1);
  if (bx->dtype != KILN_DT_FLOAT || sc->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "boxes and scores of type %s", kiln_dtype_name(bx->dtype));
  for (int i = 3; i < 5; i++)
    if (kiln_has_in(n, i) && kiln_in(g, n, i)->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "threshold of type %s", kiln_dtype_name(kiln_in(g, n, i)->dtype));
  if (kiln_has_in(n, 2) && kiln_in(g, n, 2)->dtype != KILN_DT_INT64) return kiln__err(err, KILN_EUNSUPPORTED, "max_output_boxes_per_class must be int64");
  double m = (double)bx->dims[0] * (double)bx->dims[1] * (double)bx->dims[1];
  if (m > (double)(1u << 30)) return kiln__err(err, KILN_EUNSUPPORTED, "the IoU matrix of %lld boxes per batch would take %.0f MiB", (long long)bx->dims[1], m / 1048576);
  return 0;
}

/* ---- CPU reference (the kernels' arithmetic, in the same order) ---- */

static void corners(const float *p, int center, float *c) {
  if (center) {
    float hw = p[2] / 2.0f, hh = p[3] / 2.0f;
    c[0] = p[0] - hw, c[2] = p[0] + hw, c[1] = p[1] - hh, c[3] = p[1] + hh;
  } else {
    c[1] = fminf(p[0], p[2]), c[3] = fmaxf(p[0], p[2]), c[0] = fminf(p[1], p[3]), c[2] = fmaxf(p[1], p[3]);
  }
}

static int suppresses(const float *a, const float *b, int center, float thr) {
  float ca[4], cb[4];
  corners(a, center, ca);
  corners(b, center, cb);
  float iw = fmaxf(fminf(ca[2], cb[2]) - fmaxf(ca[0], cb[0]), 0.0f), ih = fmaxf(fminf(ca[3], cb[3]) - fmaxf(ca[1], cb[1]), 0.0f);
  float inter = iw * ih;
  float aa = (ca[2] - ca[0]) * (ca[3] - ca[1]), ab = (cb[2] - cb[0]) * (cb[3] - cb[1]);
  float uni = aa + ab - inter;
  if (!(inter > 0.0f && aa > 0.0f && ab > 0.0f && uni > 0.0f)) return 0;
  return inter / uni > thr;
}

typedef struct { float s; int i; } scored;
static int by_score(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->s != y->s) return x->s > y->s ? -1 : 1;
  return x->i - y->i;
}

static int nms_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *bx = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1), *y = kiln_out(g, n, 0);
  int64_t B = bx->dims[0], N = bx->dims[1], C = sc->dims[1];
  int64_t lim = in[2] ? *(const int64_t *)in[2] : 0;
  if (lim > N) lim = N;
  float thr = in[3] ? *(const float *)in[3] : 0.0f;
  int center = (int)kiln_attr_int(n, "center_point_box", 0);
  const float *boxes = in[0], *scores = in[1];
  scored *ord = malloc(sizeof *ord * (size_t)(N + 1));
  int *kp = malloc(sizeof(int) * (size_t)(N + 1));
  if (!ord || !kp) { free(ord); free(kp); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  int64_t rows = 0, cap = y->dims[0], *o = out[0];
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < C; c++) {
      const float *s = scores + (b * C + c) * N;
      int nc = 0, nk = 0;
      for (int64_t j = 0; j < N; j++)
        if (!in[4] || s[j] > *(const float *)in[4]) ord[nc++] = (scored){s[j], (int)j};
      qsort(ord, (size_t)nc, sizeof *ord, by_score);
      for (int r = 0; r < nc && nk < lim; r++) {
        int ok = 1;
        for (int q = 0; q < nk && ok; q++) ok = !suppresses(boxes + (b * N + kp[q]) * 4, boxes + (b * N + ord[r].i) * 4, center, thr);
        if (ok) kp[nk++] = ord[r].i;
      }
      for (int k = 0; k < nk && rows < cap; k++, rows++) o[rows * 3] = b, o[rows * 3 + 1] = c, o[rows * 3 + 2] = kp[k];
    }
  free(ord);
  free(kp);
  y->dims[0] = rows; /* KILN_OP_DYNAMIC: the rows there are */
  return 0;
}

/* ---- device ---- */

static int nms_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *bx = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1);
  cl_long B = bx->dims[0], N = bx->dims[1], C = sc->dims[1], BC = B * C, maxo_plan = plan_max(g, n, N);
  cl_int center = (cl_int)kiln_attr_int(n, "center_point_box", 0);
  cl_int has_thr = kiln_has_in(n, 3), has_sth = kiln_has_in(n, 4), has_maxo = kiln_has_in(n, 2);
  cl_mem boxes = kiln_in_buf(x, n, 0), scores = kiln_in_buf(x, n, 1), out = kiln_out_buf(x, n, 0);
  cl_mem thr = has_thr ? kiln_in_buf(x, n, 3) : boxes, sth = has_sth ? kiln_in_buf(x, n, 4) : boxes, maxo = has_maxo ? kiln_in_buf(x, n, 2) : boxes;
  cl_mem sup = kiln_exec_scratch(x, n, 0, (size_t)(B * N * N + 1), err);
  cl_mem order = sup ? kiln_exec_scratch(x, n, 1, sizeof(cl_int) * (size_t)(BC * N + 1), err) : NULL;
  cl_mem keep = order ? kiln_exec_scratch(x, n, 2, sizeof(cl_int) * (size_t)(BC * N + 1), err) : NULL;
  cl_mem cnt = keep ? kiln_exec_scratch(x, n, 3, sizeof(cl_int) * (size_t)(BC + 2) + 8, err) : NULL;
  if (!cnt) return err->status;
  const char *names[4] = {"nms_iou", "nms_rank", "nms_select", "nms_compact"};
  cl_kernel k[4];
  for (int i = 0; i < 4; i++)
    if (!(k[i] = kiln_cl_kernel(x->d, "nms.cl", "", names[i], err))) return err->status;
  /* the total sits after the counts in the same scratch buffer: a sub-buffer would need alignment, so nms_compact gets it as a second buffer */
  cl_mem total = kiln_exec_param(x, n, 0, &(cl_long){0}, sizeof(cl_long), err);
  if (!total) return err->status;
  if (BC == 0 || N == 0) { /* nothing kept */
    cl_long zero = 0;
    kiln__rec_other();
    cl_int e = clEnqueueWriteBuffer(x->d->q, total, CL_TRUE, 0, sizeof zero, &zero, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : kiln__err(err, KILN_ECL, "clEnqueueWriteBuffer: %s", kiln__clerror(e));
  }
  if (kiln_cl_args(k[0], err, KARG(boxes), KARG(sup), KARG(N), KARG(center), KARG(thr), KARG(has_thr), KEND) ||
      kiln_cl_args(k[1], err, KARG(scores), KARG(order), KARG(N), KARG(sth), KARG(has_sth), KEND) ||
      kiln_cl_args(k[2], err, KARG(scores), KARG(order), KARG(sup), KARG(keep), KARG(cnt), KARG(N), KARG(C), KARG(maxo_plan), KARG(maxo), KARG(has_maxo), KARG(sth),
                   KARG(has_sth), KEND) ||
      kiln_cl_args(k[3], err, KARG(keep), KARG(cnt), KARG(out), KARG(total), KARG(N), KARG(C), KARG(BC), KEND))
    return err->status;
  size_t g0[3] = {(size_t)N, (size_t)N, (size_t)B}, g1[2] = {(size_t)N, (size_t)BC}, g2 = (size_t)BC;
  int rc = kiln_exec_launch(x, k[0], 3, g0, NULL, err);
  if (!rc) rc = kiln_exec_launch(x, k[1], 2, g1, NULL, err);
  if (!rc) rc = kiln_exec_launch(x, k[2], 1, &g2, NULL, err);
  if (!rc) rc = kiln_exec_launch(x, k[3], 1, &g2, NULL, err);
  return rc;
}

/* The count of rows, read back. */
static int nms_resolve(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *y = kiln_out(x->g, n, 0);
  cl_long total = 0;
  if (!n->param[0]) return kiln__err(err, KILN_EINTERNAL, "no row count");
  int rc = kiln_cl_read(x->d, n->param[0], &total, sizeof total, err);
  if (rc) return rc;
  kiln_value *bx = kiln_in(x->g, n, 0), *sc = kiln_in(x->g, n, 1);
  int64_t cap = bx->dims[0] * sc->dims[1] * plan_max(x->g, n, bx->dims[1]);
  if (total < 0 || total > cap) return kiln__err(err, KILN_EINTERNAL, "the device kept %lld rows, at most %lld planned", (long long)total, (long long)cap);
  y->dims[0] = total;
  return 0;
}

const kiln_op_def kiln_ops_nms[] = {
  {.name = "NonMaxSuppression", .infer = nms_infer, .ref = nms_ref, .dev = nms_dev, .dev_check = nms_check, .flags = KILN_OP_DYNAMIC, .resolve = nms_resolve},
  {NULL},
};
