/* ops/reduce.c: ONNX reductions and row-wise ops: Reduce{Sum,Mean,Max,Min,Prod,
 * L1,L2,LogSum,LogSumExp,SumSquare}, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax,
 * CumSum, TopK, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: shape
 * inference, CPU reference and the OpenCL path (kernels/reduce.cl). */
#include "kiln_internal.h"
#include "family.h"
#include <math.h>

#define RD_CL "reduce.cl"
#define RD_WG KILN_RD_WG
#define RD_WG_MIN_REDUCE KILN_RD_WG_MIN_REDUCE
#define RD_WG_MIN_SOFTMAX KILN_RD_WG_MIN_SOFTMAX

enum { RD_SUM, RD_MEAN, RD_MAX, RD_MIN, RD_PROD, RD_L1, RD_L2, RD_LOGSUM, RD_LOGSUMEXP, RD_SUMSQUARE };
enum { SM_SOFTMAX, SM_LOGSOFTMAX, SM_HARDMAX };

/* ---- shared helpers -------------------------------------------------------- */

static int64_t prod_dims(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

/* Kernel `name` of reduce.cl for element type dtype (and class-index type
 * tidx), built with work-group size wg and line step vw (tunable families;
 * the defaults build the one program every other reduce.cl kernel uses). */
static cl_kernel rd_kernel_p(kiln_exec *x, int dtype, int tidx, int wg, int vw, const char *name, kiln_error *err) {
  if (dtype == KILN_DT_DOUBLE && !x->d->has_fp64) {
    kiln__err(err, KILN_EUNSUPPORTED, "float64 needs cl_khr_fp64, which the device lacks");
    return NULL;
  }
  char t[256], o[360];
  int n = snprintf(o, sizeof o, "%s -DTI=%s", kiln_cl_type_opts(dtype, t, sizeof t), tidx == KILN_DT_INT32 ? "int" : "long");
  if (wg > 1 && wg != RD_WG) n += snprintf(o + n, sizeof o - (size_t)n, " -DRD_WG=%d", wg);
  if (vw > 1) snprintf(o + n, sizeof o - (size_t)n, " -DRD_VW=%d", vw);
  return kiln_cl_kernel(x->d, RD_CL, o, name, err);
}

static cl_kernel rd_kernel(kiln_exec *x, int dtype, int tidx, const char *name, kiln_error *err) {
  return rd_kernel_p(x, dtype, tidx, RD_WG, 1, name, err);
}

/* ---- tunable families "reduce" and "softmax" (kernels/reduce.c): line reductions ---- */

/* Descriptor of a line reduction family over `lines` lines of `len`
 * elements (contig: unit stride), with the family's default parameters. */
static void lines_tunable(kiln_graph *g, const kiln_node *n, const kiln_family *fam, int64_t lines, int64_t len, bool contig, int passes,
                          const char *extra, kiln_tunable *t) {
  const kiln_value *xv = kiln_in(g, n, 0);
  kiln_family_begin(fam, kiln_dev_dtype(xv), t); /* fp16 storage: instances of their own */
  int o = kiln_family_key_dims(t->shape_key, sizeof t->shape_key, snprintf(t->shape_key, sizeof t->shape_key, "%s:", n->op_type), "x", xv);
  if (o < (int)sizeof t->shape_key)
    snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, ",lines=%lld,len=%lld,contig=%d%s", (long long)lines, (long long)len, contig, extra);
  t->dims[LD_LINES] = lines;
  t->dims[LD_LEN] = len;
  t->dims[LD_CONTIG] = contig;
  t->dims[LD_ESIZE] = (int64_t)kiln_dtype_size(kiln_dev_dtype(xv));
  t->dims[LD_PASSES] = passes;
  kiln_family_end(fam, t);
}

/* Smallest and largest value of integer dtype dt (int64 range for 64-bit types). */
static void int_limits(int dt, int64_t *lo, int64_t *hi) {
  int bits = 8 * (int)kiln_dtype_size(dt);
  bool sgn = dt == KILN_DT_INT8 || dt == KILN_DT_INT16 || dt == KILN_DT_INT32 || dt == KILN_DT_INT64;
  if (bits >= 64) { *lo = INT64_MIN; *hi = INT64_MAX; }
  else if (sgn) { *lo = -((int64_t)1 << (bits - 1)); *hi = ((int64_t)1 << (bits - 1)) - 1; }
  else { *lo = 0; *hi = ((int64_t)1 << bits) - 1; }
  if (dt == KILN_DT_BOOL) *hi = 1;
}

static bool dev_int_type(int dt) {
  return dt == KILN_DT_INT32 || dt == KILN_DT_INT64 || dt == KILN_DT_INT8 || dt == KILN_DT_UINT8;
}

static int float_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(dt));
  return 0;
}

/* Softmax, LogSoftmax, Hardmax: float, double, and float16 (the kernels'
 * half storage, fp32 arithmetic). */
static int sm_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (kiln_in(g, n, 0)->dtype == KILN_DT_FLOAT16 && (!kiln_has_in(n, 1) || kiln_in(g, n, 1)->dtype == KILN_DT_FLOAT16)) return 0;
  return float_check(g, n, err);
}

static int numeric_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE && !dev_int_type(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(dt));
  return 0;
}

/* ---- Reduce* ------------------------------------------------------------------ */

static int reduce_op(const char *t) {
  static const char *const names[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                      "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (!strcmp(t, names[i])) return i;
  return -1;
}

/* Axes to reduce: from input 1 (ReduceSum opset 13+, the others opset 18+) or
 * the `axes` attribute. Empty axes reduce everything, or nothing (*noop) with
 * noop_with_empty_axes. */
static int reduce_mask(kiln_graph *g, kiln_node *n, bool *mask, bool *noop, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  int64_t axes[KILN_MAX_RANK];
  int na = 0;
  memset(mask, 0, sizeof(bool) * KILN_MAX_RANK);
  *noop = false;
  if (kiln_has_in(n, 1)) {
    kiln_value *a = kiln_in(g, n, 1);
    if (!a->data) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (axes '%s')", a->name);
    int64_t c = kiln_value_numel(a);
    if (c > KILN_MAX_RANK) return kiln__err(err, KILN_ESHAPE, "%lld axes for a rank-%d input", (long long)c, x->rank);
    for (na = 0; na < c; na++) axes[na] = kiln_value_geti(a, na);
  } else {
    const int64_t *v;
    int c = kiln_attr_ints(n, "axes", &v);
    if (c > KILN_MAX_RANK) return kiln__err(err, KILN_ESHAPE, "%d axes for a rank-%d input", c, x->rank);
    for (na = 0; na < c; na++) axes[na] = v[na];
  }
  if (na == 0) {
    if (kiln_attr_int(n, "noop_with_empty_axes", 0)) *noop = true;
    else for (int i = 0; i < x->rank; i++) mask[i] = true;
    return 0;
  }
  for (int k = 0; k < na; k++) {
    int ax = kiln_axis(axes[k], x->rank);
    if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)axes[k], x->rank);
    mask[ax] = true;
  }
  return 0;
}

static int reduce_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  if (!x) return kiln__err(err, KILN_EINVAL, "needs an input");
  bool mask[KILN_MAX_RANK], noop;
  int rc = reduce_mask(g, n, mask, &noop, err);
  if (rc) return rc;
  if (noop) { kiln_set_out(g, n, 0, x->dtype, x->rank, x->dims); return 0; }
  bool keep = kiln_attr_int(n, "keepdims", 1) != 0;
  int64_t d[KILN_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (!mask[i]) d[r++] = x->dims[i];
    else if (keep) d[r++] = 1;
  }
  kiln_set_out(g, n, 0, x->dtype, r, d);
  return 0;
}

static int reduce_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int op = reduce_op(n->op_type), dt = x->dtype;
  bool mask[KILN_MAX_RANK], noop;
  int rc = reduce_mask(g, n, mask, &noop, err);
  if (rc) return rc;
  int64_t total = kiln_value_numel(x), nout = kiln_value_numel(y);
  if (noop) { memcpy(out[0], in[0], kiln_value_bytes(x)); return 0; }
  /* output strides over the input's axes (0 on reduced axes) */
  int64_t ost[KILN_MAX_RANK], count = 1, s = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    if (mask[i]) { ost[i] = 0; count *= x->dims[i]; }
    else { ost[i] = s; s *= x->dims[i]; }
  }
  bool isf = kiln_dtype_is_float(dt) || op == RD_L2 || op == RD_LOGSUM || op == RD_LOGSUMEXP;
  double *af = calloc((size_t)(nout ? nout : 1), sizeof *af);
  int64_t *ai = calloc((size_t)(nout ? nout : 1), sizeof *ai);
  if (!af || !ai) { free(af); free(ai); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  int64_t lo = 0, hi = 0;
  if (!kiln_dtype_is_float(dt)) int_limits(dt, &lo, &hi);
  for (int64_t o = 0; o < nout; o++) {
    af[o] = op == RD_MAX ? -INFINITY : op == RD_MIN ? INFINITY : op == RD_PROD ? 1.0 : 0.0;
    ai[o] = op == RD_MAX ? lo : op == RD_MIN ? hi : op == RD_PROD ? 1 : 0;
  }
  for (int64_t i = 0; i < total; i++) {
    int64_t rem = i, o = 0;
    for (int d = x->rank - 1; d >= 0; d--) { o += (rem % x->dims[d]) * ost[d]; rem /= x->dims[d]; }
    if (isf) {
      double v = kiln_load_f(in[0], dt, i);
      switch (op) {
      case RD_MAX: if (v > af[o] || isnan(v)) af[o] = isnan(af[o]) ? af[o] : v; break;
      case RD_MIN: if (v < af[o] || isnan(v)) af[o] = isnan(af[o]) ? af[o] : v; break;
      case RD_PROD: af[o] *= v; break;
      case RD_L1: af[o] += fabs(v); break;
      case RD_L2: case RD_SUMSQUARE: af[o] += v * v; break;
      case RD_LOGSUMEXP: af[o] += exp(v); break;
      default: af[o] += v; break;
      }
    } else {
      int64_t v = kiln_load_i(in[0], dt, i);
      switch (op) {
      case RD_MAX: if (v > ai[o]) ai[o] = v; break;
      case RD_MIN: if (v < ai[o]) ai[o] = v; break;
      /* unsigned arithmetic: integer overflow wraps (as in the narrower output type) */
      case RD_PROD: ai[o] = (int64_t)((uint64_t)ai[o] * (uint64_t)v); break;
      case RD_L1: ai[o] = (int64_t)((uint64_t)ai[o] + (uint64_t)(v < 0 ? -v : v)); break;
      case RD_SUMSQUARE: ai[o] = (int64_t)((uint64_t)ai[o] + (uint64_t)v * (uint64_t)v); break;
      default: ai[o] = (int64_t)((uint64_t)ai[o] + (uint64_t)v); break;
      }
    }
  }
  for (int64_t o = 0; o < nout; o++) {
    if (isf) {
      double v = af[o];
      if (op == RD_MEAN) v /= (double)count;
      else if (op == RD_L2) v = sqrt(v);
      else if (op == RD_LOGSUM || op == RD_LOGSUMEXP) v = log(v);
      kiln_store_f(out[0], y->dtype, o, v);
    } else {
      int64_t v = ai[o];
      if (op == RD_MEAN) v = count ? v / count : 0;
      kiln_store_i(out[0], y->dtype, o, v);
    }
  }
  free(af);
  free(ai);
  return 0;
}

/* Reduced layout of node n: kept and reduced axes merged (size-1 axes
 * dropped); returns the number of reduced elements per output and sets
 * *contig when they form one unit-stride run. */
static int64_t reduce_layout(const kiln_value *xv, const bool *mask, int *nk, int *nr, int64_t *kd, int64_t *ks, int64_t *rd, int64_t *rs) {
  int64_t st[KILN_MAX_RANK];
  int last = -1;
  *nk = *nr = 0;
  kiln_strides(xv->rank, xv->dims, st);
  for (int i = 0; i < xv->rank; i++) {
    if (xv->dims[i] == 1) continue;
    int cat = mask[i];
    if (cat == last) {
      if (cat) { rd[*nr - 1] *= xv->dims[i]; rs[*nr - 1] = st[i]; }
      else { kd[*nk - 1] *= xv->dims[i]; ks[*nk - 1] = st[i]; }
    } else if (cat) { rd[*nr] = xv->dims[i]; rs[(*nr)++] = st[i]; }
    else { kd[*nk] = xv->dims[i]; ks[(*nk)++] = st[i]; }
    last = cat;
  }
  return prod_dims(rd, 0, *nr);
}

/* Tunable descriptor of a Reduce* node (family "reduce"). */
static int reduce_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  kiln_value *xv = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  bool mask[KILN_MAX_RANK], noop;
  kiln_error e = {0};
  if (!xv || !y || reduce_mask(g, n, mask, &noop, &e) || noop) return 1;
  int nk, nr;
  int64_t kd[KILN_MAX_RANK], ks[KILN_MAX_RANK], rd[KILN_MAX_RANK], rs[KILN_MAX_RANK];
  int64_t rc = reduce_layout(xv, mask, &nk, &nr, kd, ks, rd, rs);
  char extra[32];
  snprintf(extra, sizeof extra, ",op=%d", reduce_op(n->op_type));
  lines_tunable(g, n, &kiln_family_reduce, kiln_value_numel(y), rc, nr == 1 && rs[0] == 1, reduce_op(n->op_type) == RD_LOGSUMEXP ? 2 : 1, extra, t);
  return 0;
}

static int reduce_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  bool mask[KILN_MAX_RANK], noop;
  int rc = reduce_mask(g, n, mask, &noop, err);
  if (rc) return rc;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_long nout = kiln_value_numel(y);
  if (noop) {
    cl_kernel k = rd_kernel(x, kiln_dev_dtype(y), 0, "rd_copy", err);
    if (!k || kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(nout), KEND)) return err->status;
    size_t gws = (size_t)nout;
    return kiln_exec_launch(x, k, 1, &gws, NULL, err);
  }
  /* merge neighbouring axes of the same kind, dropping size-1 axes */
  int64_t meta[3 + 4 * KILN_MAX_RANK] = {0};
  int64_t *kd = meta + 3, *ks = kd + KILN_MAX_RANK, *rd = ks + KILN_MAX_RANK, *rs = rd + KILN_MAX_RANK;
  int nk = 0, nr = 0;
  reduce_layout(xv, mask, &nk, &nr, kd, ks, rd, rs);
  meta[0] = nk;
  meta[1] = nr;
  meta[2] = prod_dims(rd, 0, nr);
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  kiln_tunable t;
  int wg = meta[2] >= RD_WG_MIN_REDUCE ? RD_WG : 1, vw = 1;
  kiln_lines_default(nout, meta[2], nr == 1 && rs[0] == 1, RD_WG_MIN_REDUCE, &wg, &vw);
  if (reduce_tunable(g, n, &t) == 0) {
    const int *p = kiln_exec_tparams(x, n, &t);
    wg = p[LP_WG];
    vw = t.dims[LD_CONTIG] ? p[LP_VW] : 1;
  }
  cl_kernel k = rd_kernel_p(x, kiln_dev_dtype(y), 0, wg, vw, wg > 1 ? "reduce_wg" : "reduce_item", err);
  cl_int op = reduce_op(n->op_type);
  if (!k || kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(mb), KARG(nout), KARG(op), KEND)) return err->status;
  size_t gws = (size_t)nout * (size_t)wg, lws = (size_t)wg;
  return kiln_exec_launch(x, k, 1, &gws, wg > 1 ? &lws : NULL, err);
}

static int reduce_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype, op = reduce_op(n->op_type);
  if (dt == KILN_DT_FLOAT || dt == KILN_DT_DOUBLE || dt == KILN_DT_FLOAT16) return 0; /* float16: half storage, fp32 accumulation */
  if (!dev_int_type(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(dt));
  if (op == RD_L2 || op == RD_LOGSUM || op == RD_LOGSUMEXP) return kiln__err(err, KILN_EUNSUPPORTED, "%s of integer dtype %s", n->op_type, kiln_dtype_name(dt));
  return 0;
}

/* ---- ArgMax / ArgMin ----------------------------------------------------------- */

static int arg_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  if (!x) return kiln__err(err, KILN_EINVAL, "needs an input");
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), x->rank);
  if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)kiln_attr_int(n, "axis", 0), x->rank);
  bool keep = kiln_attr_int(n, "keepdims", 1) != 0;
  int64_t d[KILN_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (i != ax) d[r++] = x->dims[i];
    else if (keep) d[r++] = 1;
  }
  kiln_set_out(g, n, 0, KILN_DT_INT64, r, d);
  return 0;
}

static int arg_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), x->rank);
  bool is_min = !strcmp(n->op_type, "ArgMin"), last = kiln_attr_int(n, "select_last_index", 0) != 0;
  int64_t outer = prod_dims(x->dims, 0, ax), len = x->dims[ax], inner = prod_dims(x->dims, ax + 1, x->rank);
  int64_t *y = out[0];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t best = 0, bi = 0;
      double bv = 0;
      for (int64_t j = 0; j < len; j++) {
        int64_t p = (o * len + j) * inner + i;
        bool better;
        if (kiln_dtype_is_float(x->dtype)) {
          double v = kiln_load_f(in[0], x->dtype, p);
          better = j == 0 || (is_min ? v < bv : v > bv) || (last && v == bv);
          if (better) bv = v;
        } else {
          int64_t v = kiln_load_i(in[0], x->dtype, p);
          better = j == 0 || (is_min ? v < bi : v > bi) || (last && v == bi);
          if (better) bi = v;
        }
        if (better) best = j;
      }
      y[o * inner + i] = best;
    }
  (void)err;
  return 0;
}

static int arg_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *xv = kiln_in(x->g, n, 0);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), xv->rank);
  cl_long len = xv->dims[ax], inner = prod_dims(xv->dims, ax + 1, xv->rank), total = prod_dims(xv->dims, 0, ax) * inner;
  cl_int is_min = !strcmp(n->op_type, "ArgMin"), last = kiln_attr_int(n, "select_last_index", 0) != 0;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_kernel k = rd_kernel(x, xv->dtype, 0, "arg_reduce", err);
  if (!k || kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(total), KARG(len), KARG(inner), KARG(is_min), KARG(last), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

/* ---- Softmax / LogSoftmax / Hardmax ------------------------------------------- */

/* Lines of the op: before opset 13 the input is coerced to 2-D at `axis`
 * (default 1); from 13 on it works along the single `axis` (default -1). */
static int sm_geom(const kiln_value *x, const kiln_node *n, int64_t *outer, int64_t *len, int64_t *inner, kiln_error *err) {
  bool old = n->opset < 13;
  int64_t a = kiln_attr_int(n, "axis", old ? 1 : -1);
  if (x->rank == 0) { *outer = *len = *inner = 1; return 0; }
  if (old && (a == x->rank || a == -x->rank - 1)) a = x->rank; /* everything in the outer part */
  else if ((a = kiln_axis(a, x->rank)) < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)kiln_attr_int(n, "axis", 0), x->rank);
  *outer = prod_dims(x->dims, 0, (int)a);
  if (old) { *len = prod_dims(x->dims, (int)a, x->rank); *inner = 1; }
  else { *len = x->dims[a]; *inner = prod_dims(x->dims, (int)a + 1, x->rank); }
  return 0;
}

static int sm_mode(const char *t) { return !strcmp(t, "Softmax") ? SM_SOFTMAX : !strcmp(t, "LogSoftmax") ? SM_LOGSOFTMAX : SM_HARDMAX; }

static int sm_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  if (!x) return kiln__err(err, KILN_EINVAL, "needs an input");
  if (!kiln_dtype_is_float(x->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(x->dtype));
  int64_t o, l, i;
  int rc = sm_geom(x, n, &o, &l, &i, err);
  if (rc) return rc;
  kiln_set_out(g, n, 0, x->dtype, x->rank, x->dims);
  return 0;
}

/* Softmax-family reference on lines [outer, len, inner] from src (dtype sdt) into dst (dtype ddt). */
static void sm_lines(const void *src, int sdt, void *dst, int ddt, int64_t outer, int64_t len, int64_t inner, int mode) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t b = o * len * inner + i, am = 0;
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < len; j++) {
        double v = kiln_load_f(src, sdt, b + j * inner);
        if (v > m) { m = v; am = j; }
      }
      for (int64_t j = 0; j < len; j++) s += exp(kiln_load_f(src, sdt, b + j * inner) - m);
      for (int64_t j = 0; j < len; j++) {
        double v = kiln_load_f(src, sdt, b + j * inner), r;
        if (mode == SM_HARDMAX) r = j == am ? 1.0 : 0.0;
        else if (mode == SM_SOFTMAX) r = exp(v - m) / s;
        else r = v - m - log(s);
        kiln_store_f(dst, ddt, b + j * inner, r);
      }
    }
}

/* The scale and additive mask a plan-time pass (passes.c) fused in front of
 * a Softmax / LogSoftmax along the last axis: internal attribute
 * "kiln_scale" and the mask as input 1 (broadcast to the input's shape). */
static double sm_scale(const kiln_node *n) { return kiln_attr_float(n, "kiln_scale", 1.0f); }

static int sm_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  int64_t o, l, i;
  int rc = sm_geom(x, n, &o, &l, &i, err);
  if (rc) return rc;
  double sc = sm_scale(n);
  kiln_value *mv = kiln_in(g, n, 1);
  if (sc == 1.0 && !mv) {
    sm_lines(in[0], x->dtype, out[0], x->dtype, o, l, i, sm_mode(n->op_type));
    return 0;
  }
  int64_t ne = kiln_value_numel(x), mst[KILN_MAX_RANK] = {0};
  double *t = malloc(sizeof(double) * (size_t)(ne ? ne : 1));
  if (!t) return kiln__err(err, KILN_ENOMEM, "out of memory");
  if (mv) kiln_bcast_strides(mv, x->rank, mst);
  for (int64_t k = 0; k < ne; k++) {
    double v = kiln_load_f(in[0], x->dtype, k) * sc;
    if (mv) {
      int64_t rem = k, mo = 0;
      for (int d = x->rank - 1; d >= 0; d--) { mo += (rem % x->dims[d]) * mst[d]; rem /= x->dims[d]; }
      v += kiln_load_f(in[1], mv->dtype, mo);
    }
    t[k] = v;
  }
  sm_lines(t, KILN_DT_DOUBLE, out[0], x->dtype, o, l, i, sm_mode(n->op_type));
  free(t);
  return 0;
}

/* Tunable descriptor of a Softmax / LogSoftmax node (family "softmax"). */
static int sm_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  kiln_value *xv = kiln_in(g, n, 0);
  int64_t o, l, i;
  kiln_error e = {0};
  if (!xv || sm_mode(n->op_type) == SM_HARDMAX || sm_geom(xv, n, &o, &l, &i, &e)) return 1;
  lines_tunable(g, n, &kiln_family_softmax, o * i, l, i == 1, 3, "", t);
  double sc = sm_scale(n);
  kiln_value *mv = kiln_in(g, n, 1);
  if (sc != 1.0 || mv) {
    int k = snprintf(t->epilogue, sizeof t->epilogue, "%sscale", sc != 1.0 ? "" : "no");
    if (mv && k < (int)sizeof t->epilogue) {
      snprintf(t->epilogue + k, sizeof t->epilogue - (size_t)k, "+mask=");
      for (int d = 0; d < mv->rank; d++) {
        size_t u = strlen(t->epilogue);
        snprintf(t->epilogue + u, sizeof t->epilogue - u, "%s%lld", d ? "x" : "", (long long)mv->dims[d]);
      }
    }
  }
  return 0;
}

/* Enqueues softmax-family lines [outer, len, inner] from bx into by with
 * work-group size wg (1: a work-item per line) and line step vw, inputs
 * scaled by scale plus mask (NULL: none; mm: its offsets, see reduce.cl). */
static int sm_launch_p(kiln_exec *x, int dtype, cl_mem bx, cl_mem by, cl_long outer, cl_long len, cl_long inner, cl_int mode, int wg, int vw,
                       double scale, cl_mem mask, cl_mem mm, kiln_error *err) {
  if (mode == SM_HARDMAX) wg = 1;
  cl_kernel k = rd_kernel_p(x, dtype, 0, wg, vw, wg > 1 ? "softmax_wg" : "softmax_item", err);
  cl_long rows = outer * inner;
  cl_int has_mask = mask != NULL;
  if (!mask) mask = mm = bx;
  cl_float sf = (cl_float)scale;
  cl_double sd = scale;
  size_t ss = dtype == KILN_DT_DOUBLE ? sizeof sd : sizeof sf;
  const void *sp = dtype == KILN_DT_DOUBLE ? (const void *)&sd : (const void *)&sf;
  if (!k || kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(rows), KARG(len), KARG(inner), KARG(mode), ss, sp, KARG(has_mask), KARG(mask), KARG(mm), KEND))
    return err->status;
  size_t gws = (size_t)rows * (size_t)wg, lws = (size_t)wg;
  return kiln_exec_launch(x, k, 1, &gws, wg > 1 ? &lws : NULL, err);
}

static int sm_launch(kiln_exec *x, int dtype, cl_mem bx, cl_mem by, cl_long outer, cl_long len, cl_long inner, cl_int mode, kiln_error *err) {
  int wg = mode != SM_HARDMAX && len >= RD_WG_MIN_SOFTMAX ? RD_WG : 1;
  return sm_launch_p(x, dtype, bx, by, outer, len, inner, mode, wg, 1, 1.0, NULL, NULL, err);
}

static int sm_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *xv = kiln_in(x->g, n, 0);
  int64_t o, l, i;
  int rc = sm_geom(xv, n, &o, &l, &i, err);
  if (rc) return rc;
  kiln_tunable t;
  int wg = sm_mode(n->op_type) != SM_HARDMAX && l >= RD_WG_MIN_SOFTMAX ? RD_WG : 1, vw = 1;
  kiln_lines_default(o * i, l, i == 1, sm_mode(n->op_type) != SM_HARDMAX ? RD_WG_MIN_SOFTMAX : INT64_MAX, &wg, &vw);
  if (sm_tunable(x->g, n, &t) == 0) {
    const int *p = kiln_exec_tparams(x, n, &t);
    wg = p[LP_WG];
    vw = t.dims[LD_CONTIG] ? p[LP_VW] : 1;
  }
  cl_mem mask = NULL, mm = NULL;
  kiln_value *mv = kiln_in(x->g, n, 1);
  if (mv) {
    if (i != 1) return kiln__err(err, KILN_EINTERNAL, "fused softmax mask needs the last axis");
    int64_t meta[2 + 2 * KILN_MAX_RANK] = {0}, st[KILN_MAX_RANK];
    kiln_bcast_strides(mv, xv->rank, st);
    meta[0] = xv->rank - 1;
    for (int d = 0; d < xv->rank - 1; d++) { meta[1 + d] = xv->dims[d]; meta[1 + KILN_MAX_RANK + d] = st[d]; }
    meta[1 + 2 * KILN_MAX_RANK] = st[xv->rank - 1];
    if (!(mm = kiln_exec_param(x, n, 0, meta, sizeof meta, err))) return err->status;
    mask = kiln_in_buf(x, n, 1);
  }
  return sm_launch_p(x, kiln_dev_dtype(xv), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), o, l, i, sm_mode(n->op_type), wg, vw, sm_scale(n), mask, mm, err);
}

/* ---- CumSum --------------------------------------------------------------------- */

static int cumsum_axis(kiln_graph *g, kiln_node *n, const void *axis_data, int *ax, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *a = kiln_in(g, n, 1);
  if (!a) return kiln__err(err, KILN_EINVAL, "needs the axis input");
  if (!axis_data) return kiln__err(err, KILN_EUNSUPPORTED, "axis '%s' must be known at plan time", a->name);
  if (kiln_value_numel(a) != 1) return kiln__err(err, KILN_ESHAPE, "axis must be a scalar");
  int64_t v = kiln_load_i(axis_data, a->dtype, 0);
  if ((*ax = kiln_axis(v, x->rank)) < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)v, x->rank);
  return 0;
}

static int cumsum_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *a = kiln_in(g, n, 1);
  if (!x || !a) return kiln__err(err, KILN_EINVAL, "needs two inputs");
  int ax;
  if (a->data) {
    int rc = cumsum_axis(g, n, a->data, &ax, err);
    if (rc) return rc;
  }
  kiln_set_out(g, n, 0, x->dtype, x->rank, x->dims);
  return 0;
}

static int cumsum_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  int ax, rc = cumsum_axis(g, n, in[1], &ax, err);
  if (rc) return rc;
  bool excl = kiln_attr_int(n, "exclusive", 0) != 0, rev = kiln_attr_int(n, "reverse", 0) != 0, isf = kiln_dtype_is_float(x->dtype);
  int64_t outer = prod_dims(x->dims, 0, ax), len = x->dims[ax], inner = prod_dims(x->dims, ax + 1, x->rank);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double sf = 0;
      int64_t si = 0;
      for (int64_t t = 0; t < len; t++) {
        int64_t j = rev ? len - 1 - t : t, p = (o * len + j) * inner + i;
        if (isf) {
          double v = kiln_load_f(in[0], x->dtype, p);
          kiln_store_f(out[0], x->dtype, p, excl ? sf : sf + v);
          sf += v;
        } else {
          int64_t v = kiln_load_i(in[0], x->dtype, p);
          kiln_store_i(out[0], x->dtype, p, excl ? si : si + v);
          si += v;
        }
      }
    }
  return 0;
}

static int cumsum_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0);
  int ax, rc = cumsum_axis(g, n, kiln_in(g, n, 1)->data, &ax, err);
  if (rc) return rc;
  cl_long len = xv->dims[ax], inner = prod_dims(xv->dims, ax + 1, xv->rank), lines = prod_dims(xv->dims, 0, ax) * inner;
  cl_int excl = kiln_attr_int(n, "exclusive", 0) != 0, rev = kiln_attr_int(n, "reverse", 0) != 0;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_kernel k = rd_kernel(x, xv->dtype, 0, "cumsum_line", err);
  if (!k || kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(lines), KARG(len), KARG(inner), KARG(excl), KARG(rev), KEND)) return err->status;
  size_t gws = (size_t)lines;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int cumsum_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int rc = numeric_check(g, n, err);
  if (rc) return rc;
  if (!kiln_in(g, n, 1)->data) return kiln__err(err, KILN_EUNSUPPORTED, "axis must be known at plan time");
  return 0;
}

/* ---- TopK ----------------------------------------------------------------------- */

static int topk_geom(kiln_graph *g, kiln_node *n, const void *kdata, int *ax, int64_t *k, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  if (n->opset < 10) *k = kiln_attr_int(n, "k", -1);
  else {
    kiln_value *kv = kiln_in(g, n, 1);
    if (!kv) return kiln__err(err, KILN_EINVAL, "needs the k input");
    if (!kdata) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (k '%s')", kv->name);
    if (kiln_value_numel(kv) != 1) return kiln__err(err, KILN_ESHAPE, "k must have one element");
    *k = kiln_load_i(kdata, kv->dtype, 0);
  }
  int64_t a = kiln_attr_int(n, "axis", -1);
  if ((*ax = kiln_axis(a, x->rank)) < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)a, x->rank);
  if (*k < 0 || *k > x->dims[*ax]) return kiln__err(err, KILN_ESHAPE, "k=%lld out of range for an axis of %lld", (long long)*k, (long long)x->dims[*ax]);
  return 0;
}

static int topk_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  if (!x) return kiln__err(err, KILN_EINVAL, "needs an input");
  int ax;
  int64_t k, d[KILN_MAX_RANK];
  kiln_value *kv = kiln_in(g, n, 1);
  int rc = topk_geom(g, n, kv ? kv->data : NULL, &ax, &k, err);
  if (rc) return rc;
  memcpy(d, x->dims, sizeof d);
  d[ax] = k;
  kiln_set_out(g, n, 0, x->dtype, x->rank, d);
  kiln_set_out(g, n, 1, KILN_DT_INT64, x->rank, d);
  return 0;
}

typedef struct { double f; int64_t i, idx; } topk_item;
/* Orders for qsort: best first (by the float or the integer key,
 * descending or ascending), ties by lower index. */
static int topk_order(const topk_item *p, const topk_item *q, bool isf, bool desc) {
  if (isf ? p->f != q->f : p->i != q->i) return (isf ? (desc ? p->f > q->f : p->f < q->f) : (desc ? p->i > q->i : p->i < q->i)) ? -1 : 1;
  return p->idx < q->idx ? -1 : p->idx > q->idx;
}
static int topk_cmp_fdesc(const void *a, const void *b) { return topk_order(a, b, true, true); }
static int topk_cmp_fasc(const void *a, const void *b) { return topk_order(a, b, true, false); }
static int topk_cmp_idesc(const void *a, const void *b) { return topk_order(a, b, false, true); }
static int topk_cmp_iasc(const void *a, const void *b) { return topk_order(a, b, false, false); }

static int topk_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  int ax;
  int64_t k;
  int rc = topk_geom(g, n, kiln_has_in(n, 1) ? in[1] : NULL, &ax, &k, err);
  if (rc) return rc;
  bool largest = kiln_attr_int(n, "largest", 1) != 0, isf = kiln_dtype_is_float(x->dtype);
  int (*cmp)(const void *, const void *) = isf ? (largest ? topk_cmp_fdesc : topk_cmp_fasc) : (largest ? topk_cmp_idesc : topk_cmp_iasc);
  int64_t outer = prod_dims(x->dims, 0, ax), len = x->dims[ax], inner = prod_dims(x->dims, ax + 1, x->rank);
  topk_item *it = malloc(sizeof *it * (size_t)(len ? len : 1));
  if (!it) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      for (int64_t j = 0; j < len; j++) {
        int64_t p = (o * len + j) * inner + i;
        it[j].idx = j;
        if (isf) it[j].f = kiln_load_f(in[0], x->dtype, p);
        else it[j].i = kiln_load_i(in[0], x->dtype, p);
      }
      qsort(it, (size_t)len, sizeof *it, cmp);
      for (int64_t j = 0; j < k; j++) {
        int64_t p = (o * k + j) * inner + i;
        if (out[0] && isf) kiln_store_f(out[0], x->dtype, p, it[j].f);
        else if (out[0]) kiln_store_i(out[0], x->dtype, p, it[j].i);
        if (out[1]) ((int64_t *)out[1])[p] = it[j].idx;
      }
    }
  free(it);
  return 0;
}

static int topk_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0), *kv = kiln_in(g, n, 1);
  int ax;
  int64_t k;
  int rc = topk_geom(g, n, kv ? kv->data : NULL, &ax, &k, err);
  if (rc) return rc;
  cl_long len = xv->dims[ax], inner = prod_dims(xv->dims, ax + 1, xv->rank), total = kiln_value_numel(xv), kk = k;
  cl_int largest = kiln_attr_int(n, "largest", 1) != 0;
  cl_mem bx = kiln_in_buf(x, n, 0), bv = kiln_out_buf(x, n, 0), bi = kiln_out_buf(x, n, 1);
  size_t nsel = (size_t)(prod_dims(xv->dims, 0, ax) * kk * inner) + 1;
  /* an output that is not wanted is written to scratch */
  if (!bi && !(bi = kiln_exec_scratch(x, n, 0, sizeof(int64_t) * nsel, err))) return err->status;
  if (!bv && !(bv = kiln_exec_scratch(x, n, 1, kiln_dtype_size(xv->dtype) * nsel, err))) return err->status;
  cl_kernel kern = rd_kernel(x, xv->dtype, 0, "topk_rank", err);
  if (!kern || kiln_cl_args(kern, err, KARG(bx), KARG(bv), KARG(bi), KARG(total), KARG(len), KARG(inner), KARG(kk), KARG(largest), KEND)) return err->status;
  size_t gws = (size_t)(kk ? total : 0);
  return kiln_exec_launch(x, kern, 1, &gws, NULL, err);
}

/* ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ------------------------- */

typedef struct { int64_t N, C, D; int red; bool has_ii; int64_t ii; } loss_geom;
enum { RED_NONE, RED_SUM, RED_MEAN };

static int loss_geom_get(kiln_graph *g, kiln_node *n, loss_geom *lg, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *t = kiln_in(g, n, 1), *w = kiln_in(g, n, 2);
  if (!x || !t) return kiln__err(err, KILN_EINVAL, "needs input and target");
  if (x->rank < 2) return kiln__err(err, KILN_ESHAPE, "input must have rank >= 2 ([N, C, ...]), got %d", x->rank);
  if (t->rank != x->rank - 1 || t->dims[0] != x->dims[0]) return kiln__err(err, KILN_ESHAPE, "target shape does not match input [N, C, d...]");
  for (int i = 1; i < t->rank; i++)
    if (t->dims[i] != x->dims[i + 1]) return kiln__err(err, KILN_ESHAPE, "target shape does not match input [N, C, d...]");
  if (t->dtype != KILN_DT_INT64 && t->dtype != KILN_DT_INT32) return kiln__err(err, KILN_EUNSUPPORTED, "target dtype %s", kiln_dtype_name(t->dtype));
  if (!kiln_dtype_is_float(x->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(x->dtype));
  if (w && (w->rank != 1 || w->dims[0] != x->dims[1] || w->dtype != x->dtype)) return kiln__err(err, KILN_ESHAPE, "weight must be [C] of the input's dtype");
  lg->N = x->dims[0];
  lg->C = x->dims[1];
  lg->D = prod_dims(x->dims, 2, x->rank);
  const char *r = kiln_attr_str(n, "reduction", "mean");
  if (!strcmp(r, "none")) lg->red = RED_NONE;
  else if (!strcmp(r, "sum")) lg->red = RED_SUM;
  else if (!strcmp(r, "mean")) lg->red = RED_MEAN;
  else return kiln__err(err, KILN_EINVAL, "unknown reduction '%s'", r);
  lg->has_ii = kiln_attr_find(n, "ignore_index") != NULL;
  lg->ii = kiln_attr_int(n, "ignore_index", 0);
  return 0;
}

static int loss_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  loss_geom lg;
  int rc = loss_geom_get(g, n, &lg, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0), *t = kiln_in(g, n, 1);
  if (lg.red == RED_NONE) kiln_set_out(g, n, 0, x->dtype, t->rank, t->dims);
  else kiln_set_out(g, n, 0, x->dtype, 0, NULL);
  kiln_set_out(g, n, 1, x->dtype, x->rank, x->dims); /* SCE's log_prob */
  return 0;
}

/* NLL of log-probabilities lp ([N, C, D] as doubles) into out (dtype dt). */
static void nll_host(const loss_geom *lg, const double *lp, const void *t, int tdt, const void *w, int wdt, void *out, int dt) {
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < lg->N; b++)
    for (int64_t d = 0; d < lg->D; d++) {
      int64_t g = b * lg->D + d, c = kiln_load_i(t, tdt, g);
      double l, ww;
      if (lg->has_ii && c == lg->ii) l = ww = 0;
      else if (c < 0 || c >= lg->C) { l = NAN; ww = 0; }
      else {
        ww = w ? kiln_load_f(w, wdt, c) : 1.0;
        l = -lp[(b * lg->C + c) * lg->D + d] * ww;
      }
      if (lg->red == RED_NONE) kiln_store_f(out, dt, g, l);
      sum += l;
      wsum += ww;
    }
  if (lg->red == RED_SUM) kiln_store_f(out, dt, 0, sum);
  else if (lg->red == RED_MEAN) kiln_store_f(out, dt, 0, sum / wsum);
}

/* NegativeLogLikelihoodLoss on the input as log-probabilities, or
 * SoftmaxCrossEntropyLoss (softmax: on their log-softmax, stored into the
 * optional second output). */
static int loss_ref(kiln_graph *g, kiln_node *n, void **in, void **out, bool softmax, kiln_error *err) {
  loss_geom lg;
  int rc = loss_geom_get(g, n, &lg, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0), *t = kiln_in(g, n, 1), *w = kiln_in(g, n, 2);
  int64_t cnt = kiln_value_numel(x);
  double *lp = malloc(sizeof *lp * (size_t)(cnt ? cnt : 1));
  if (!lp) return kiln__err(err, KILN_ENOMEM, "out of memory");
  if (softmax) {
    sm_lines(in[0], x->dtype, lp, KILN_DT_DOUBLE, lg.N, lg.C, lg.D, SM_LOGSOFTMAX);
    if (out[1]) for (int64_t i = 0; i < cnt; i++) kiln_store_f(out[1], x->dtype, i, lp[i]);
  } else {
    for (int64_t i = 0; i < cnt; i++) lp[i] = kiln_load_f(in[0], x->dtype, i);
  }
  nll_host(&lg, lp, in[1], t->dtype, w ? in[2] : NULL, w ? w->dtype : 0, out[0], x->dtype);
  free(lp);
  return 0;
}
static int nll_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return loss_ref(g, n, in, out, false, err); }
static int sce_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return loss_ref(g, n, in, out, true, err); }

/* Enqueues the NLL of log-probabilities in buffer lp into output 0. */
static int nll_launch(kiln_exec *x, kiln_node *n, const loss_geom *lg, cl_mem lp, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0), *t = kiln_in(g, n, 1);
  size_t es = kiln_dtype_size(xv->dtype);
  cl_long cnt = lg->N * lg->D, C = lg->C, D = lg->D, ii = lg->ii;
  cl_int has_ii = lg->has_ii, has_w = kiln_has_in(n, 2), mean = lg->red == RED_MEAN;
  cl_mem bt = kiln_in_buf(x, n, 1), bw = has_w ? kiln_in_buf(x, n, 2) : lp, by = kiln_out_buf(x, n, 0);
  cl_mem bl = lg->red == RED_NONE ? by : kiln_exec_scratch(x, n, 0, es * (size_t)(cnt + 1), err);
  cl_mem bwt = kiln_exec_scratch(x, n, 1, es * (size_t)(cnt + 1), err);
  if (!bl || !bwt) return err->status;
  cl_kernel k = rd_kernel(x, xv->dtype, t->dtype, "nll_elem", err);
  if (!k || kiln_cl_args(k, err, KARG(lp), KARG(bt), KARG(bw), KARG(bl), KARG(bwt), KARG(cnt), KARG(C), KARG(D), KARG(ii), KARG(has_ii), KARG(has_w), KEND)) return err->status;
  size_t gws = (size_t)cnt;
  int rc = kiln_exec_launch(x, k, 1, &gws, NULL, err);
  if (rc || lg->red == RED_NONE) return rc;
  k = rd_kernel(x, xv->dtype, t->dtype, "nll_reduce", err);
  if (!k || kiln_cl_args(k, err, KARG(bl), KARG(bwt), KARG(by), KARG(cnt), KARG(mean), KEND)) return err->status;
  size_t one = RD_WG, lws = RD_WG;
  return kiln_exec_launch(x, k, 1, &one, &lws, err);
}

static int nll_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  loss_geom lg;
  int rc = loss_geom_get(x->g, n, &lg, err);
  if (rc) return rc;
  return nll_launch(x, n, &lg, kiln_in_buf(x, n, 0), err);
}

static int sce_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  loss_geom lg;
  int rc = loss_geom_get(x->g, n, &lg, err);
  if (rc) return rc;
  kiln_value *xv = kiln_in(x->g, n, 0);
  cl_mem lp = kiln_out_buf(x, n, 1);
  if (!lp && !(lp = kiln_exec_scratch(x, n, 2, kiln_value_bytes(xv) + 1, err))) return err->status;
  if ((rc = sm_launch(x, xv->dtype, kiln_in_buf(x, n, 0), lp, lg.N, lg.C, lg.D, SM_LOGSOFTMAX, err)) != 0) return rc;
  return nll_launch(x, n, &lg, lp, err);
}

const kiln_op_def kiln_ops_reduce[] = {
  {.name = "ReduceSum", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceMean", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceMax", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceMin", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceProd", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceL1", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceL2", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceLogSum", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceLogSumExp", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ReduceSumSquare", .infer = reduce_infer, .ref = reduce_ref, .dev = reduce_dev, .dev_check = reduce_check, .tunable = reduce_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "ArgMax", .infer = arg_infer, .ref = arg_ref, .dev = arg_dev, .dev_check = numeric_check},
  {.name = "ArgMin", .infer = arg_infer, .ref = arg_ref, .dev = arg_dev, .dev_check = numeric_check},
  {.name = "Softmax", .infer = sm_infer, .ref = sm_ref, .dev = sm_dev, .dev_check = sm_check, .tunable = sm_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "LogSoftmax", .infer = sm_infer, .ref = sm_ref, .dev = sm_dev, .dev_check = sm_check, .tunable = sm_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "Hardmax", .infer = sm_infer, .ref = sm_ref, .dev = sm_dev, .dev_check = sm_check, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "CumSum", .infer = cumsum_infer, .ref = cumsum_ref, .dev = cumsum_dev, .dev_check = cumsum_check},
  {.name = "TopK", .infer = topk_infer, .ref = topk_ref, .dev = topk_dev, .dev_check = numeric_check},
  {.name = "NegativeLogLikelihoodLoss", .infer = loss_infer, .ref = nll_ref, .dev = nll_dev, .dev_check = float_check},
  {.name = "SoftmaxCrossEntropyLoss", .infer = loss_infer, .ref = sce_ref, .dev = sce_dev, .dev_check = float_check},
  {.name = NULL},
};
