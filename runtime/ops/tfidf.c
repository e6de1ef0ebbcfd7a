/* ops/tfidf.c: TfIdfVectorizer over integer inputs (pool_int64s) on the
 * device (kernels/tfidf.cl) with its CPU reference. The pool lists the
 * n-grams by length (ngram_counts: where each length starts); ngram_indexes
 * gives each n-gram's output column. An n-gram of length n > 1 matches items
 * d apart for d = 1 .. max_skip_count + 1; unigrams are counted once. */
#include "kiln_internal.h"

typedef struct tf_grams {
  int ng;               /* n-grams in the pool */
  int *n, *off, *col;   /* length, offset into the pool, output column */
  float *w;             /* weights (1 when none) */
  int64_t ncols;
} tf_grams;

static void grams_free(tf_grams *t) { free(t->n); free(t->off); free(t->col); free(t->w); memset(t, 0, sizeof *t); }

static int grams_of(const kiln_node *n, tf_grams *t, kiln_error *err) {
  memset(t, 0, sizeof *t);
  const int64_t *pool, *cnts, *idx;
  const float *wts;
  int np = kiln_attr_ints(n, "pool_int64s", &pool), nc = kiln_attr_ints(n, "ngram_counts", &cnts), ni = kiln_attr_ints(n, "ngram_indexes", &idx);
  int nw = kiln_attr_floats(n, "weights", &wts);
  if (kiln_attr_find(n, "pool_strings")) return kiln__err(err, KILN_EUNSUPPORTED, "string pools are not supported");
  if (np < 0 || nc <= 0 || ni < 0) return kiln__err(err, KILN_EINVAL, "pool_int64s, ngram_counts and ngram_indexes are required");
  t->n = calloc((size_t)ni + 1, sizeof(int)), t->off = calloc((size_t)ni + 1, sizeof(int)), t->col = calloc((size_t)ni + 1, sizeof(int));
  t->w = calloc((size_t)ni + 1, sizeof(float));
  if (!t->n || !t->off || !t->col || !t->w) { grams_free(t); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  int j = 0, q = 0;
  int64_t lo = kiln_attr_int(n, "min_gram_length", 1), hi = kiln_attr_int(n, "max_gram_length", 1);
  for (int k = 0; k < nc; k++) { /* length k + 1 from cnts[k] to the next start; lengths outside [min, max] count nothing (their columns stay 0) */
    int64_t end = k + 1 < nc ? cnts[k + 1] : np;
    for (int64_t o = cnts[k]; o + k < end && q < ni; o += k + 1, q++) {
      if (k + 1 < lo || k + 1 > hi) continue;
      t->n[j] = k + 1, t->off[j] = (int)o, t->col[j] = (int)idx[q];
      t->w[j] = nw > q ? wts[q] : 1.0f;
      j++;
    }
  }
  t->ng = j;
  for (q = 0; q < ni; q++) if (idx[q] + 1 > t->ncols) t->ncols = idx[q] + 1;
  for (int a = 0; a < j; a++)
    for (int b = a + 1; b < j; b++)
      if (t->col[a] == t->col[b]) { grams_free(t); return kiln__err(err, KILN_EUNSUPPORTED, "two n-grams share output column %d", t->col[a]); }
  return 0;
}

static int mode_of(const kiln_node *n) {
  const char *m = kiln_attr_str(n, "mode", "TF");
  return !strcmp(m, "TF") ? 0 : !strcmp(m, "IDF") ? 1 : !strcmp(m, "TFIDF") ? 2 : -1;
}

static int tf_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  if (x->rank < 1 || x->rank > 2) return kiln__err(err, KILN_ESHAPE, "X must be [N] or [B, N]");
  if (mode_of(n) < 0) return kiln__err(err, KILN_EINVAL, "mode '%s'", kiln_attr_str(n, "mode", ""));
  tf_grams t;
  int rc = grams_of(n, &t, err);
  if (rc) return rc;
  int64_t d[2] = {x->dims[0], t.ncols};
  if (x->rank == 1) d[0] = t.ncols;
  kiln_set_out(g, n, 0, KILN_DT_FLOAT, x->rank, d);
  grams_free(&t);
  return 0;
}

static int tf_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt != KILN_DT_INT32 && dt != KILN_DT_INT64) return kiln__err(err, KILN_EUNSUPPORTED, "X of type %s", kiln_dtype_name(dt));
  return 0;
}

static void row_geom(kiln_graph *g, kiln_node *n, int64_t *rows, int64_t *len) {
  kiln_value *x = kiln_in(g, n, 0);
  *rows = x->rank == 2 ? x->dims[0] : 1;
  *len = x->dims[x->rank - 1];
}

static int tf_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  tf_grams t;
  int rc = grams_of(n, &t, err);
  if (rc) return rc;
  int64_t rows, len;
  row_geom(g, n, &rows, &len);
  int dt = kiln_in(g, n, 0)->dtype, mode = mode_of(n), maxd = (int)kiln_attr_int(n, "max_skip_count", 0) + 1;
  float *y = out[0];
  memset(y, 0, sizeof(float) * (size_t)(rows * t.ncols));
  for (int64_t r = 0; r < rows; r++)
    for (int j = 0; j < t.ng; j++) {
      const int64_t *p = kiln_attr_find(n, "pool_int64s")->ints + t.off[j];
      int64_t cnt = 0;
      for (int d = 1; d <= (t.n[j] == 1 ? 1 : maxd); d++)
        for (int64_t i = 0; i + (int64_t)(t.n[j] - 1) * d < len; i++) {
          int ok = 1;
          for (int k = 0; k < t.n[j] && ok; k++) ok = kiln_load_i(in[0], dt, r * len + i + (int64_t)k * d) == p[k];
          cnt += ok;
        }
      y[r * t.ncols + t.col[j]] = mode == 0 ? (float)cnt : mode == 1 ? (cnt ? t.w[j] : 0.0f) : (float)cnt * t.w[j];
    }
  grams_free(&t);
  return 0;
}

static int tf_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  tf_grams t;
  int rc = grams_of(n, &t, err);
  if (rc) return rc;
  int64_t rows, len;
  row_geom(x->g, n, &rows, &len);
  const kiln_attr *pa = kiln_attr_find(n, "pool_int64s");
  char opts[64];
  snprintf(opts, sizeof opts, "-DXT=%s", kiln_in(x->g, n, 0)->dtype == KILN_DT_INT32 ? "int" : "long");
  cl_kernel k = kiln_cl_kernel(x->d, "tfidf.cl", opts, "tfidf", err);
  cl_mem pool = k ? kiln_exec_param(x, n, 0, pa->ints, sizeof(int64_t) * (size_t)(pa->n + 1), err) : NULL;
  cl_mem gn = pool ? kiln_exec_param(x, n, 1, t.n, sizeof(int) * (size_t)(t.ng + 1), err) : NULL;
  cl_mem goff = gn ? kiln_exec_param(x, n, 2, t.off, sizeof(int) * (size_t)(t.ng + 1), err) : NULL;
  cl_mem gcol = goff ? kiln_exec_param(x, n, 3, t.col, sizeof(int) * (size_t)(t.ng + 1), err) : NULL;
  cl_mem w = gcol ? kiln_exec_scratch(x, n, 0, sizeof(float) * (size_t)(t.ng + 1), err) : NULL;
  cl_mem by = kiln_out_buf(x, n, 0), bx = kiln_in_buf(x, n, 0);
  cl_long clen = len, ncols = t.ncols;
  cl_int ng = t.ng, maxd = (cl_int)kiln_attr_int(n, "max_skip_count", 0) + 1, mode = mode_of(n);
  float zero = 0;
  if (!w) rc = err->status;
  kiln__rec_other();
  if (!rc && clEnqueueWriteBuffer(x->d->q, w, CL_TRUE, 0, sizeof(float) * (size_t)(t.ng + 1), t.w, 0, NULL, NULL) != CL_SUCCESS)
    rc = kiln__err(err, KILN_ECL, "upload of the weights failed");
  if (!rc && clEnqueueFillBuffer(x->d->q, by, &zero, sizeof zero, 0, kiln_value_bytes(kiln_out(x->g, n, 0)), 0, NULL, NULL) != CL_SUCCESS)
    rc = kiln__err(err, KILN_ECL, "clEnqueueFillBuffer failed");
  if (!rc) x->launches++;
  if (!rc && kiln_cl_args(k, err, KARG(bx), KARG(pool), KARG(gn), KARG(goff), KARG(gcol), KARG(w), KARG(by), KARG(clen), KARG(ncols), KARG(ng), KARG(maxd), KARG(mode), KEND))
    rc = err->status;
  size_t gws[2] = {(size_t)t.ng, (size_t)rows};
  if (!rc) rc = kiln_exec_launch(x, k, 2, gws, NULL, err);
  grams_free(&t);
  return rc;
}

const kiln_op_def kiln_ops_tfidf[] = {
  {.name = "TfIdfVectorizer", .infer = tf_infer, .ref = tf_ref, .dev = tf_dev, .dev_check = tf_check},
  {NULL},
};
