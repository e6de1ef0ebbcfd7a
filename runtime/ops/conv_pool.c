/* ops/conv_pool.c: convolution, pooling and resampling ONNX ops: Conv,
 * ConvTranspose, ConvInteger, QLinearConv, MaxPool, AveragePool, LpPool, GlobalAveragePool,
 * GlobalMaxPool, GlobalLpPool, MaxUnpool, Resize, Upsample, GridSample.
 * Shape inference, CPU references and the OpenCL paths (kernels/conv.cl,
 * kernels/pool.cl, kernels/resize.cl). */
#include "kiln_internal.h"
#include "family.h"
#include "window.h"
#include <math.h>

/* ---- window geometry (Conv, ConvTranspose, pools) ------------------------- */

static int ints_attr(const kiln_node *n, const char *name, int want, int64_t *dst, int64_t dflt, kiln_error *err) {
  const int64_t *v;
  int cnt = kiln_attr_ints(n, name, &v);
  if (cnt < 0) { for (int i = 0; i < want; i++) dst[i] = dflt; return 0; }
  if (cnt != want) return kiln__err(err, KILN_ESHAPE, "attribute %s has %d values, expected %d", name, cnt, want);
  for (int i = 0; i < want; i++) dst[i] = v[i];
  return 0;
}

/* Reads the geometry of a Conv / ConvTranspose / pooling node from its input
 * shapes and attributes and computes the output spatial size. */
int kiln__win_setup(kiln_graph *g, kiln_node *n, int kind, win_geom *w, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  memset(w, 0, sizeof *w);
  if (!x) return kiln__err(err, KILN_EINVAL, "missing input X");
  if (x->rank < 3) return kiln__err(err, KILN_ESHAPE, "input '%s' has rank %d; expected N, C and at least one spatial dim", x->name, x->rank);
  int ns = x->rank - 2, o = SP - ns;
  if (ns > SP) return kiln__err(err, KILN_EUNSUPPORTED, "%d spatial dims (at most %d are supported)", ns, SP);
  w->nsp = ns;
  w->n = x->dims[0];
  w->c = w->oc = x->dims[1];
  w->group = 1;
  for (int i = 0; i < SP; i++) { w->in[i] = w->out[i] = w->k[i] = w->s[i] = w->d[i] = 1; w->pb[i] = w->pe[i] = 0; }
  for (int i = 0; i < ns; i++) w->in[o + i] = x->dims[2 + i];
  if (kind == WIN_GLOBAL) {
    for (int i = 0; i < ns; i++) w->k[o + i] = w->in[o + i];
    return 0;
  }
  int64_t k[SP], s[SP], d[SP], pads[2 * SP];
  int rc;
  const int64_t *ks;
  int nk = kiln_attr_ints(n, "kernel_shape", &ks);
  if (kind == WIN_CONV || kind == WIN_CONVT) {
    bool qlinear = !strcmp(n->op_type, "QLinearConv");
    kiln_value *wt = kiln_in(g, n, qlinear ? 3 : 1);
    if (!wt) return kiln__err(err, KILN_EINVAL, "missing weight input");
    if (wt->rank != x->rank) return kiln__err(err, KILN_ESHAPE, "weight '%s' has rank %d, input has rank %d", wt->name, wt->rank, x->rank);
    w->group = kiln_attr_int(n, "group", 1);
    if (w->group < 1) return kiln__err(err, KILN_EINVAL, "group %lld", (long long)w->group);
    for (int i = 0; i < ns; i++) k[i] = wt->dims[2 + i];
    if (nk >= 0) {
      if (nk != ns) return kiln__err(err, KILN_ESHAPE, "kernel_shape has %d values, expected %d", nk, ns);
      for (int i = 0; i < ns; i++)
        if (ks[i] != k[i]) return kiln__err(err, KILN_ESHAPE, "kernel_shape does not match the weight shape");
    }
    if (kind == WIN_CONV) {
      w->oc = wt->dims[0];
      if (wt->dims[1] * w->group != w->c || w->oc % w->group)
        return kiln__err(err, KILN_ESHAPE, "weight '%s' [%lld,%lld,...] does not fit %lld input channels in %lld groups", wt->name,
                         (long long)wt->dims[0], (long long)wt->dims[1], (long long)w->c, (long long)w->group);
    } else {
      if (wt->dims[0] != w->c || w->c % w->group)
        return kiln__err(err, KILN_ESHAPE, "weight '%s' has %lld input channels, X has %lld (groups %lld)", wt->name,
                         (long long)wt->dims[0], (long long)w->c, (long long)w->group);
      w->oc = wt->dims[1] * w->group;
    }
    kiln_value *b = qlinear ? kiln_in(g, n, 8) : !strcmp(n->op_type, "ConvInteger") ? NULL : kiln_in(g, n, 2);
    if (b && (b->rank != 1 || b->dims[0] != w->oc)) return kiln__err(err, KILN_ESHAPE, "bias '%s' must have shape [%lld]", b->name, (long long)w->oc);
  } else {
    if (nk != ns) return kiln__err(err, KILN_ESHAPE, "kernel_shape must have %d values", ns);
    for (int i = 0; i < ns; i++) k[i] = ks[i];
  }
  if ((rc = ints_attr(n, "strides", ns, s, 1, err)) || (rc = ints_attr(n, "dilations", ns, d, 1, err)) ||
      (rc = ints_attr(n, "pads", 2 * ns, pads, 0, err)))
    return rc;
  for (int i = 0; i < ns; i++) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1) return kiln__err(err, KILN_EINVAL, "kernel, strides and dilations must be positive");
    w->k[o + i] = k[i]; w->s[o + i] = s[i]; w->d[o + i] = d[i];
    w->pb[o + i] = pads[i]; w->pe[o + i] = pads[ns + i];
  }
  const char *ap = kiln_attr_str(n, "auto_pad", "NOTSET");
  int autop = !strcmp(ap, "SAME_UPPER") ? 1 : !strcmp(ap, "SAME_LOWER") ? 2 : !strcmp(ap, "VALID") ? 3 : 0;
  if (!autop && strcmp(ap, "NOTSET") && *ap) return kiln__err(err, KILN_EUNSUPPORTED, "auto_pad '%s'", ap);
  int ceil_mode = kind == WIN_POOL ? (int)kiln_attr_int(n, "ceil_mode", 0) : 0;
  if (kind == WIN_CONVT) {
    int64_t opad[SP], oshape[SP];
    if ((rc = ints_attr(n, "output_padding", ns, opad, 0, err))) return rc;
    const int64_t *os;
    int nos = kiln_attr_ints(n, "output_shape", &os);
    if (nos >= 0 && nos != ns && nos != ns + 2) return kiln__err(err, KILN_ESHAPE, "output_shape has %d values", nos);
    for (int i = 0; i < ns; i++) {
      int a = o + i;
      int64_t ek = (w->k[a] - 1) * w->d[a] + 1, full = w->s[a] * (w->in[a] - 1) + opad[i] + ek;
      if (nos >= 0 || autop == 1 || autop == 2) {
        oshape[i] = nos >= 0 ? os[nos - ns + i] : w->in[a] * w->s[a];
        int64_t total = full - oshape[i];
        if (total < 0) total = 0;
        if (autop == 1) { w->pb[a] = total / 2; w->pe[a] = total - total / 2; }
        else { w->pb[a] = total - total / 2; w->pe[a] = total / 2; }
        w->out[a] = oshape[i];
      } else {
        if (autop == 3) w->pb[a] = w->pe[a] = 0;
        w->out[a] = full - w->pb[a] - w->pe[a];
      }
      if (w->out[a] < 0) return kiln__err(err, KILN_ESHAPE, "negative output size along spatial axis %d", i);
    }
    return 0;
  }
  for (int i = 0; i < ns; i++) {
    int a = o + i;
    int64_t ek = (w->k[a] - 1) * w->d[a] + 1;
    if (autop == 1 || autop == 2) {
      w->out[a] = ceil_div(w->in[a], w->s[a]);
      int64_t total = (w->out[a] - 1) * w->s[a] + ek - w->in[a];
      if (total < 0) total = 0;
      if (autop == 1) { w->pb[a] = total / 2; w->pe[a] = total - total / 2; }
      else { w->pb[a] = total - total / 2; w->pe[a] = total / 2; }
      continue;
    }
    if (autop == 3) w->pb[a] = w->pe[a] = 0;
    int64_t span = w->in[a] + w->pb[a] + w->pe[a] - ek;
    if (span < 0) return kiln__err(err, KILN_ESHAPE, "kernel (extent %lld) larger than the padded input (%lld) along spatial axis %d",
                                   (long long)ek, (long long)(w->in[a] + w->pb[a] + w->pe[a]), i);
    if (ceil_mode) {
      w->out[a] = ceil_div(span, w->s[a]) + 1;
      /* the last window must start inside the input or the leading pad */
      if ((w->out[a] - 1) * w->s[a] >= w->in[a] + w->pb[a]) w->out[a]--;
    } else w->out[a] = span / w->s[a] + 1;
  }
  return 0;
}

static void win_out_dims(const win_geom *w, int64_t ch, int64_t *dims) {
  dims[0] = w->n;
  dims[1] = ch;
  for (int i = 0; i < w->nsp; i++) dims[2 + i] = w->out[SP - w->nsp + i];
}

/* Geometry for the kernels (see M_* in conv.cl and the header of pool.cl). */
int kiln__win_meta(const win_geom *w, cl_int *m, int nm, kiln_error *err) {
  int64_t v[32] = {0};
  v[0] = w->n; v[1] = w->c; v[2] = w->oc; v[3] = w->group; v[4] = w->c / w->group; v[5] = w->oc / w->group;
  for (int i = 0; i < SP; i++) {
    v[6 + i] = w->in[i]; v[9 + i] = w->out[i]; v[12 + i] = w->k[i];
    v[15 + i] = w->s[i]; v[18 + i] = w->d[i]; v[21 + i] = w->pb[i]; v[24 + i] = w->pe[i];
  }
  int64_t tot_in = w->n * w->c * w->in[0] * w->in[1] * w->in[2], tot_out = w->n * (w->oc > w->c ? w->oc : w->c) * w->out[0] * w->out[1] * w->out[2];
  if (tot_in > INT32_MAX || tot_out > INT32_MAX) return kiln__err(err, KILN_ELIMIT, "tensor too large for 32-bit indexing");
  for (int i = 0; i < nm; i++) m[i] = (cl_int)v[i];
  return 0;
}

static int float_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s (float and double are supported)", kiln_dtype_name(dt));
  return 0;
}

/* ---- Conv / ConvTranspose --------------------------------------------------- */

static int conv_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  win_geom w;
  int rc = kiln__win_setup(g, n, !strcmp(n->op_type, "Conv") ? WIN_CONV : WIN_CONVT, &w, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0), *wt = kiln_in(g, n, 1);
  if (wt->dtype != x->dtype) return kiln__err(err, KILN_ESHAPE, "weight dtype %s differs from input dtype %s", kiln_dtype_name(wt->dtype), kiln_dtype_name(x->dtype));
  if (n->nin > 3) { /* internal: input 3 scales X per (n, c) (a squeeze-excite gate, runtime/passes.c) */
    kiln_value *s = kiln_in(g, n, 3);
    if (!kiln_attr_find(n, "kiln_xscale") || !s || strcmp(n->op_type, "Conv")) return kiln__err(err, KILN_EINVAL, "%s takes at most 3 inputs", n->op_type);
    bool ok = s->dtype == x->dtype && s->rank == x->rank && s->dims[0] == x->dims[0] && s->dims[1] == x->dims[1];
    for (int i = 2; i < s->rank && ok; i++) ok = s->dims[i] == 1;
    if (!ok) return kiln__err(err, KILN_ESHAPE, "input scale '%s' is not one value per image and channel of '%s'", s->name, x->name);
  }
  int64_t d[KILN_MAX_RANK];
  win_out_dims(&w, w.oc, d);
  kiln_set_out(g, n, 0, x->dtype, x->rank, d);
  return 0;
}

/* CPU reference Conv: per output channel, accumulate every (input channel,
 * kernel tap) contribution over the output plane in double. */
#define CONV_REF(TYPE)                                                                                                   \
  static void conv_ref_##TYPE(const win_geom *w, const TYPE *x, const TYPE *wt, const TYPE *b, TYPE *y, double *acc) { \
    int64_t icg = w->c / w->group, ocg = w->oc / w->group, kk = w->k[0] * w->k[1] * w->k[2];                          \
    int64_t isz = w->in[0] * w->in[1] * w->in[2], osz = w->out[0] * w->out[1] * w->out[2];                            \
    for (int64_t n = 0; n < w->n; n++)                                                                                   \
      for (int64_t oc = 0; oc < w->oc; oc++) {                                                                           \
        int64_t grp = oc / ocg;                                                                                          \
        for (int64_t p = 0; p < osz; p++) acc[p] = b ? (double)b[oc] : 0.0;                                              \
        for (int64_t ic = 0; ic < icg; ic++) {                                                                           \
          const TYPE *xc = x + (n * w->c + grp * icg + ic) * isz;                                                        \
          for (int64_t kd = 0; kd < w->k[0]; kd++)                                                                       \
            for (int64_t kh = 0; kh < w->k[1]; kh++)                                                                     \
              for (int64_t kw = 0; kw < w->k[2]; kw++) {                                                                 \
                double wv = wt[(oc * icg + ic) * kk + (kd * w->k[1] + kh) * w->k[2] + kw];                              \
                for (int64_t od = 0; od < w->out[0]; od++) {                                                             \
                  int64_t id = od * w->s[0] - w->pb[0] + kd * w->d[0];                                                   \
                  if (id < 0 || id >= w->in[0]) continue;                                                                \
                  for (int64_t oh = 0; oh < w->out[1]; oh++) {                                                           \
                    int64_t ih = oh * w->s[1] - w->pb[1] + kh * w->d[1];                                                 \
                    if (ih < 0 || ih >= w->in[1]) continue;                                                              \
                    double *ar = acc + (od * w->out[1] + oh) * w->out[2];                                                \
                    const TYPE *xr = xc + (id * w->in[1] + ih) * w->in[2];                                               \
                    for (int64_t ow = 0; ow < w->out[2]; ow++) {                                                         \
                      int64_t iw = ow * w->s[2] - w->pb[2] + kw * w->d[2];                                               \
                      if (iw >= 0 && iw < w->in[2]) ar[ow] += wv * (double)xr[iw];                                       \
                    }                                                                                                    \
                  }                                                                                                      \
                }                                                                                                        \
              }                                                                                                          \
        }                                                                                                                \
        TYPE *yc = y + (n * w->oc + oc) * osz;                                                                           \
        for (int64_t p = 0; p < osz; p++) yc[p] = (TYPE)acc[p];                                                          \
      }                                                                                                                  \
  }
CONV_REF(float)
CONV_REF(double)

/* CPU reference ConvTranspose: scatter every input element times every kernel
 * tap into the output (accumulated in double). */
#define CONVT_REF(TYPE)                                                                                                  \
  static void convt_ref_##TYPE(const win_geom *w, const TYPE *x, const TYPE *wt, const TYPE *b, TYPE *y, double *acc) { \
    int64_t icg = w->c / w->group, ocg = w->oc / w->group, kk = w->k[0] * w->k[1] * w->k[2];                          \
    int64_t isz = w->in[0] * w->in[1] * w->in[2], osz = w->out[0] * w->out[1] * w->out[2];                            \
    for (int64_t i = 0; i < w->n * w->oc * osz; i++) acc[i] = b ? (double)b[(i / osz) % w->oc] : 0.0;                  \
    for (int64_t n = 0; n < w->n; n++)                                                                                   \
      for (int64_t ic = 0; ic < w->c; ic++) {                                                                            \
        int64_t grp = ic / icg;                                                                                          \
        for (int64_t ip = 0; ip < isz; ip++) {                                                                           \
          double xv = x[(n * w->c + ic) * isz + ip];                                                                     \
          int64_t iw = ip % w->in[2], ih = (ip / w->in[2]) % w->in[1], id = ip / (w->in[2] * w->in[1]);                \
          for (int64_t j = 0; j < ocg; j++) {                                                                            \
            double *yc = acc + (n * w->oc + grp * ocg + j) * osz;                                                        \
            const TYPE *wk = wt + (ic * ocg + j) * kk;                                                                   \
            for (int64_t kd = 0; kd < w->k[0]; kd++) {                                                                   \
              int64_t od = id * w->s[0] - w->pb[0] + kd * w->d[0];                                                       \
              if (od < 0 || od >= w->out[0]) continue;                                                                   \
              for (int64_t kh = 0; kh < w->k[1]; kh++) {                                                                 \
                int64_t oh = ih * w->s[1] - w->pb[1] + kh * w->d[1];                                                     \
                if (oh < 0 || oh >= w->out[1]) continue;                                                                 \
                for (int64_t kw = 0; kw < w->k[2]; kw++) {                                                               \
                  int64_t ow = iw * w->s[2] - w->pb[2] + kw * w->d[2];                                                   \
                  if (ow < 0 || ow >= w->out[2]) continue;                                                               \
                  yc[(od * w->out[1] + oh) * w->out[2] + ow] += xv * (double)wk[(kd * w->k[1] + kh) * w->k[2] + kw];    \
                }                                                                                                        \
              }                                                                                                          \
            }                                                                                                            \
          }                                                                                                              \
        }                                                                                                                \
      }                                                                                                                  \
    for (int64_t i = 0; i < w->n * w->oc * osz; i++) y[i] = (TYPE)acc[i];                                                \
  }
CONVT_REF(float)
CONVT_REF(double)

static int conv_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  bool tr = strcmp(n->op_type, "Conv") != 0;
  win_geom w;
  int rc = kiln__win_setup(g, n, tr ? WIN_CONVT : WIN_CONV, &w, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) return kiln__err(err, KILN_EUNSUPPORTED, "%s on %s", n->op_type, kiln_dtype_name(dt));
  int64_t osz = w.out[0] * w.out[1] * w.out[2];
  size_t cnt = (size_t)(tr ? w.n * w.oc * osz : osz);
  double *acc = malloc((cnt ? cnt : 1) * sizeof *acc);
  if (!acc) return kiln__err(err, KILN_ENOMEM, "out of memory");
  void *x = in[0], *xs = NULL;
  if (!tr && kiln_has_in(n, 3)) { /* X scaled per (n, c) by input 3 (conv_infer checked its shape) */
    int64_t plane = w.in[0] * w.in[1] * w.in[2], ne = w.n * w.c * plane;
    if (!(xs = malloc((size_t)(ne ? ne : 1) * kiln_dtype_size(dt)))) { free(acc); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    for (int64_t i = 0; i < ne; i++) kiln_store_f(xs, dt, i, kiln_load_f(in[0], dt, i) * kiln_load_f(in[3], dt, i / plane));
    x = xs;
  }
  if (dt == KILN_DT_FLOAT) (tr ? convt_ref_float : conv_ref_float)(&w, x, in[1], in[2], out[0], acc);
  else (tr ? convt_ref_double : conv_ref_double)(&w, x, in[1], in[2], out[0], acc);
  free(acc);
  free(xs);
  return 0;
}

/* Conv runs the conv family's solvers (kernels/conv.c); ConvTranspose its
 * one gather kernel. */
static int conv_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  if (strcmp(n->op_type, "Conv")) return 1;
  kiln_value *xv = kiln_in(g, n, 0);
  if (!xv || (xv->dtype != KILN_DT_FLOAT && xv->dtype != KILN_DT_DOUBLE)) return 1;
  win_geom w;
  kiln_error e = {0};
  if (kiln__win_setup(g, n, WIN_CONV, &w, &e)) return 1;
  return kiln__conv_tunable_of(g, n, &w, t);
}

static int convt_dev(kiln_exec *x, kiln_node *n, const win_geom *w, kiln_error *err) {
  cl_int m[24];
  int rc = kiln__win_meta(w, m, 24, err);
  if (rc) return rc;
  cl_mem mb = kiln_exec_param(x, n, 0, m, sizeof m, err);
  if (!mb) return err->status;
  char opts[256];
  kiln_cl_type_opts(kiln_dev_dtype(kiln_in(x->g, n, 0)), opts, sizeof opts);
  cl_mem bx = kiln_in_buf(x, n, 0), bw = kiln_in_buf(x, n, 1), bb = kiln_in_buf(x, n, 2), by = kiln_out_buf(x, n, 0);
  cl_int has_bias = bb != NULL;
  if (!bb) bb = bw;
  cl_kernel k = kiln_cl_kernel(x->d, "conv.cl", opts, "convt_gather", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(bx), KARG(bw), KARG(bb), KARG(by), KARG(mb), KARG(has_bias), KEND)) return err->status;
  size_t gws[3] = {(size_t)(w->out[0] * w->out[1] * w->out[2]), (size_t)w->oc, (size_t)w->n};
  return kiln_exec_launch(x, k, 3, gws, NULL, err);
}

static int conv_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  bool tr = strcmp(n->op_type, "Conv") != 0;
  win_geom w;
  int rc = kiln__win_setup(x->g, n, tr ? WIN_CONVT : WIN_CONV, &w, err);
  if (rc) return rc;
  return tr ? convt_dev(x, n, &w, err) : kiln__conv_run(x, n, &w, err);
}

static int conv_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s (float and double are supported)", kiln_dtype_name(dt));
  return 0;
}

/* ---- ConvInteger / QLinearConv ------------------------------------------------- */

/* Input slots: ConvInteger (x, w, x_zero_point, w_zero_point);
 * QLinearConv (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B). */
typedef struct { int x, w, xzp, wzp, xs, ws, ys, yzp, b; } q8_slots;

static q8_slots q8_slots_of(const kiln_node *n) {
  if (!strcmp(n->op_type, "QLinearConv")) return (q8_slots){0, 3, 2, 5, 1, 4, 6, 7, 8};
  return (q8_slots){0, 1, 2, 3, -1, -1, -1, -1, -1};
}

static bool is_8bit(int dt) { return dt == KILN_DT_UINT8 || dt == KILN_DT_INT8; }

static int q8_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  q8_slots s = q8_slots_of(n);
  win_geom w;
  int rc = kiln__win_setup(g, n, WIN_CONV, &w, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, s.x), *wt = kiln_in(g, n, s.w);
  if (!is_8bit(x->dtype) || !is_8bit(wt->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "%s on %s x %s", n->op_type, kiln_dtype_name(x->dtype), kiln_dtype_name(wt->dtype));
  int slots[4] = {s.xzp, s.wzp, s.yzp, -1};
  for (int i = 0; slots[i] >= 0; i++) {
    kiln_value *z = kiln_in(g, n, slots[i]);
    if (z && !is_8bit(z->dtype)) return kiln__err(err, KILN_ESHAPE, "zero point '%s' must be 8-bit", z->name);
    if (z && kiln_value_numel(z) != 1 && !(slots[i] == s.wzp && kiln_value_numel(z) == w.oc))
      return kiln__err(err, KILN_EUNSUPPORTED, "zero point '%s' with %lld values", z->name, (long long)kiln_value_numel(z));
  }
  if (s.xs >= 0) {
    int sl[3] = {s.xs, s.ws, s.ys};
    for (int i = 0; i < 3; i++) {
      kiln_value *v = kiln_in(g, n, sl[i]);
      if (!v || v->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_ESHAPE, "scales must be float32");
      if (kiln_value_numel(v) != 1 && !(sl[i] == s.ws && kiln_value_numel(v) == w.oc)) return kiln__err(err, KILN_ESHAPE, "scale '%s' has %lld values", v->name, (long long)kiln_value_numel(v));
    }
    kiln_value *b = kiln_in(g, n, s.b);
    if (b && b->dtype != KILN_DT_INT32) return kiln__err(err, KILN_ESHAPE, "bias must be int32");
  }
  int64_t d[KILN_MAX_RANK];
  win_out_dims(&w, w.oc, d);
  kiln_value *yz = s.yzp >= 0 ? kiln_in(g, n, s.yzp) : NULL;
  int odt = s.xs < 0 ? KILN_DT_INT32 : yz ? yz->dtype : KILN_DT_UINT8;
  kiln_set_out(g, n, 0, odt, x->rank, d);
  return 0;
}

/* CPU reference: integer convolution in int64 with zero points subtracted;
 * QLinearConv requantizes with round-half-to-even and saturation. */
static int q8_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  q8_slots s = q8_slots_of(n);
  win_geom w;
  int rc = kiln__win_setup(g, n, WIN_CONV, &w, err);
  if (rc) return rc;
  int xdt = kiln_in(g, n, s.x)->dtype, wdt = kiln_in(g, n, s.w)->dtype;
  kiln_value *wzv = kiln_in(g, n, s.wzp), *wsv = s.ws >= 0 ? kiln_in(g, n, s.ws) : NULL;
  int64_t icg = w.c / w.group, ocg = w.oc / w.group, kk = w.k[0] * w.k[1] * w.k[2];
  int64_t isz = w.in[0] * w.in[1] * w.in[2], yi = 0;
  int64_t xz = in[s.xzp] ? kiln_load_i(in[s.xzp], kiln_in(g, n, s.xzp)->dtype, 0) : 0;
  int odt = kiln_out(g, n, 0)->dtype;
  for (int64_t nn = 0; nn < w.n; nn++)
    for (int64_t oc = 0; oc < w.oc; oc++) {
      int64_t grp = oc / ocg;
      int64_t wz = in[s.wzp] ? kiln_load_i(in[s.wzp], wzv->dtype, kiln_value_numel(wzv) > 1 ? oc : 0) : 0;
      for (int64_t od = 0; od < w.out[0]; od++)
        for (int64_t oh = 0; oh < w.out[1]; oh++)
          for (int64_t ow = 0; ow < w.out[2]; ow++, yi++) {
            int64_t acc = 0;
            for (int64_t ic = 0; ic < icg; ic++)
              for (int64_t kd = 0; kd < w.k[0]; kd++)
                for (int64_t kh = 0; kh < w.k[1]; kh++)
                  for (int64_t kw = 0; kw < w.k[2]; kw++) {
                    int64_t id = od * w.s[0] - w.pb[0] + kd * w.d[0], ih = oh * w.s[1] - w.pb[1] + kh * w.d[1], iw = ow * w.s[2] - w.pb[2] + kw * w.d[2];
                    if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1] || iw < 0 || iw >= w.in[2]) continue;
                    int64_t xv = kiln_load_i(in[s.x], xdt, (nn * w.c + grp * icg + ic) * isz + (id * w.in[1] + ih) * w.in[2] + iw) - xz;
                    int64_t wv = kiln_load_i(in[s.w], wdt, (oc * icg + ic) * kk + (kd * w.k[1] + kh) * w.k[2] + kw) - wz;
                    acc += xv * wv;
                  }
            if (s.xs < 0) { ((int32_t *)out[0])[yi] = (int32_t)acc; continue; }
            if (in[s.b]) acc += ((const int32_t *)in[s.b])[oc];
            float scale = ((const float *)in[s.xs])[0] * ((const float *)in[s.ws])[kiln_value_numel(wsv) > 1 ? oc : 0] / ((const float *)in[s.ys])[0];
            int64_t yz = in[s.yzp] ? kiln_load_i(in[s.yzp], odt, 0) : 0;
            int64_t q = (int64_t)nearbyintf((float)acc * scale) + yz;
            int64_t lo = odt == KILN_DT_INT8 ? -128 : 0, hi = odt == KILN_DT_INT8 ? 127 : 255;
            kiln_store_i(out[0], odt, yi, q < lo ? lo : q > hi ? hi : q);
          }
    }
  (void)err;
  return 0;
}

static int q8_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  q8_slots s = q8_slots_of(n);
  win_geom w;
  int rc = kiln__win_setup(g, n, WIN_CONV, &w, err);
  if (rc) return rc;
  cl_int m[24];
  if ((rc = kiln__win_meta(&w, m, 24, err))) return rc;
  cl_mem mb = kiln_exec_param(x, n, 0, m, sizeof m, err);
  if (!mb) return err->status;
  char opts[256];
  cl_kernel k = kiln_cl_kernel(x->d, "conv.cl", kiln_cl_type_opts(KILN_DT_FLOAT, opts, sizeof opts), "conv_q8", err);
  if (!k) return err->status;
  kiln_value *wzv = kiln_in(g, n, s.wzp), *wsv = s.ws >= 0 ? kiln_in(g, n, s.ws) : NULL, *yzv = s.yzp >= 0 ? kiln_in(g, n, s.yzp) : NULL;
  cl_int flags = (kiln_in(g, n, s.x)->dtype == KILN_DT_INT8) | (kiln_in(g, n, s.w)->dtype == KILN_DT_INT8) << 1 |
                 kiln_has_in(n, s.xzp) << 2 | kiln_has_in(n, s.wzp) << 3 | (wzv && kiln_value_numel(wzv) > 1) << 4 |
                 (s.xs >= 0) << 5 | (kiln_out(g, n, 0)->dtype == KILN_DT_INT8) << 6 | (s.b >= 0 && kiln_has_in(n, s.b)) << 7 |
                 (wsv && kiln_value_numel(wsv) > 1) << 8;
  cl_mem bx = kiln_in_buf(x, n, s.x), by = kiln_out_buf(x, n, 0), any = bx;
  cl_mem b[8];
  int sl[8] = {s.w, s.xzp, s.wzp, s.xs, s.ws, s.ys, s.yzp, s.b};
  for (int i = 0; i < 8; i++) { b[i] = sl[i] >= 0 ? kiln_in_buf(x, n, sl[i]) : NULL; if (!b[i]) b[i] = any; }
  /* a missing y_zero_point means 0: the kernel reads it only with flag 32, so give it a zeroed scratch byte */
  if (s.yzp >= 0 && !yzv) {
    b[6] = kiln_exec_scratch(x, n, 0, 4, err);
    if (!b[6]) return err->status;
    static const cl_uint zero = 0;
    if (kiln_cl_write(x->d, b[6], &zero, sizeof zero, err)) return err->status;
  }
  if (kiln_cl_args(k, err, KARG(bx), KARG(b[0]), KARG(b[1]), KARG(b[2]), KARG(b[3]), KARG(b[4]), KARG(b[5]), KARG(b[6]), KARG(b[7]),
                   KARG(by), KARG(by), KARG(mb), KARG(flags), KEND))
    return err->status;
  size_t gws[3] = {(size_t)(w.out[0] * w.out[1] * w.out[2]), (size_t)w.oc, (size_t)w.n};
  return kiln_exec_launch(x, k, 3, gws, NULL, err);
}

/* ---- pooling ---------------------------------------------------------------- */

enum { POOL_MAX = 0, POOL_AVG = 1, POOL_AVG_PAD = 2, POOL_LP = 3 };

static int pool_kind(const kiln_node *n, int *mode, bool *global) {
  const char *t = n->op_type;
  *global = !strncmp(t, "Global", 6);
  if (*global) t += 6;
  if (!strcmp(t, "MaxPool")) *mode = POOL_MAX;
  else if (!strcmp(t, "AveragePool")) *mode = kiln_attr_int(n, "count_include_pad", 0) ? POOL_AVG_PAD : POOL_AVG;
  else *mode = POOL_LP;
  return 0;
}

/* The pool's kind and window geometry; 0 ok. */
static int pool_setup(kiln_graph *g, kiln_node *n, int *mode, bool *global, win_geom *w, kiln_error *err) {
  pool_kind(n, mode, global);
  return kiln__win_setup(g, n, *global ? WIN_GLOBAL : WIN_POOL, w, err);
}

static int pool_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int mode;
  bool global;
  win_geom w;
  int rc = pool_setup(g, n, &mode, &global, &w, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0);
  int64_t d[KILN_MAX_RANK];
  win_out_dims(&w, w.c, d);
  kiln_set_out(g, n, 0, x->dtype, x->rank, d);
  if (kiln_has_out(n, 1)) {
    if (mode != POOL_MAX || global) return kiln__err(err, KILN_EINVAL, "only MaxPool has a second output");
    kiln_set_out(g, n, 1, KILN_DT_INT64, x->rank, d);
  }
  return 0;
}

static int pool_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  int mode;
  bool global;
  win_geom w;
  int rc = pool_setup(g, n, &mode, &global, &w, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  double p = mode == POOL_LP ? (double)kiln_attr_int(n, "p", 2) : 0;
  int order = (int)kiln_attr_int(n, "storage_order", 0);
  int64_t isz = w.in[0] * w.in[1] * w.in[2];
  int64_t yi = 0;
  for (int64_t nc = 0; nc < w.n * w.c; nc++)
    for (int64_t od = 0; od < w.out[0]; od++)
      for (int64_t oh = 0; oh < w.out[1]; oh++)
        for (int64_t ow = 0; ow < w.out[2]; ow++, yi++) {
          int64_t o3[3] = {od, oh, ow}, lo[3], cnt_pad = 1;
          for (int a = 0; a < 3; a++) {
            lo[a] = o3[a] * w.s[a] - w.pb[a];
            int64_t c = 0;
            for (int64_t t = 0; t < w.k[a]; t++) {
              int64_t pos = lo[a] + t * w.d[a];
              if (pos >= -w.pb[a] && pos < w.in[a] + w.pe[a]) c++;
            }
            cnt_pad *= c;
          }
          double best = -INFINITY, sum = 0;
          int64_t bidx = -1, cnt = 0;
          for (int64_t kd = 0; kd < w.k[0]; kd++)
            for (int64_t kh = 0; kh < w.k[1]; kh++)
              for (int64_t kw = 0; kw < w.k[2]; kw++) {
                int64_t id = lo[0] + kd * w.d[0], ih = lo[1] + kh * w.d[1], iw = lo[2] + kw * w.d[2];
                if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1] || iw < 0 || iw >= w.in[2]) continue;
                int64_t off = (id * w.in[1] + ih) * w.in[2] + iw;
                double v = kiln_load_f(in[0], dt, nc * isz + off);
                cnt++;
                if (mode == POOL_MAX) {
                  if (bidx < 0 || v > best) { best = v; bidx = order ? id + w.in[0] * (ih + w.in[1] * iw) : off; }
                } else if (mode == POOL_LP) sum += pow(fabs(v), p);
                else sum += v;
              }
          double r;
          if (mode == POOL_MAX) r = bidx < 0 ? 0 : best;
          else if (mode == POOL_LP) r = pow(sum, 1.0 / p);
          else if (mode == POOL_AVG_PAD) r = cnt_pad ? sum / (double)cnt_pad : 0;
          else r = cnt ? sum / (double)cnt : 0;
          if (kiln_dtype_is_float(dt)) kiln_store_f(out[0], dt, yi, r);
          else kiln_store_i(out[0], dt, yi, (int64_t)r);
          if (out[1]) ((int64_t *)out[1])[yi] = bidx < 0 ? -1 : nc * isz + bidx;
        }
  return 0;
}

/* ---- tunable families "pool" and "gpool": kernels/pool.c ---- */

/* Whether a windowed pool runs pool_row (2-D windows along output rows). */
static bool pool_rows(const win_geom *w) { return w->in[0] == 1 && w->out[0] == 1 && w->k[0] == 1 && w->pb[0] == 0; }

/* Descriptor of a pooling node (families "pool" and "gpool"). */
static int pool_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  int mode;
  bool global;
  win_geom w;
  kiln_error e = {0};
  kiln_value *xv = kiln_in(g, n, 0);
  if (!xv || xv->blk || pool_setup(g, n, &mode, &global, &w, &e)) return 1; /* NCHW16c: gpool_b16, nothing to tune */
  kiln_family_begin(global ? &kiln_family_gpool : &kiln_family_pool, kiln_dev_dtype(xv), t); /* fp16 storage: instances of their own */
  int o = kiln_family_key_dims(t->shape_key, sizeof t->shape_key, snprintf(t->shape_key, sizeof t->shape_key, "%s:", n->op_type), "x", xv);
  if (o < (int)sizeof t->shape_key)
    snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, ",k=%lldx%lldx%lld,s=%lldx%lldx%lld,d=%lldx%lldx%lld,p=%lld.%lld.%lld.%lld.%lld.%lld,mode=%d,ind=%d",
             (long long)w.k[0], (long long)w.k[1], (long long)w.k[2], (long long)w.s[0], (long long)w.s[1], (long long)w.s[2], (long long)w.d[0],
             (long long)w.d[1], (long long)w.d[2], (long long)w.pb[0], (long long)w.pb[1], (long long)w.pb[2], (long long)w.pe[0], (long long)w.pe[1],
             (long long)w.pe[2], mode, kiln_has_out(n, 1));
  t->dims[PD_PLANES] = w.n * w.c;
  t->dims[PD_OUT] = w.out[0] * w.out[1] * w.out[2];
  t->dims[PD_IN] = w.in[0] * w.in[1] * w.in[2];
  t->dims[PD_WIN] = w.k[0] * w.k[1] * w.k[2];
  t->dims[PD_ESIZE] = (int64_t)kiln_dtype_size(kiln_dev_dtype(xv));
  t->dims[PD_FLOAT] = xv->dtype == KILN_DT_FLOAT || xv->dtype == KILN_DT_DOUBLE;
  t->dims[PD_OW] = !global && pool_rows(&w) ? w.out[2] : 0;
  t->dims[PD_OH] = w.out[1];
  kiln_family_end(global ? &kiln_family_gpool : &kiln_family_pool, t);
  return 0;
}

/* A global pool of float type by gpool_plane: a work-item per plane, vw
 * elements at a time, groups of up to 64 planes while 8 groups remain. */
static int gpool_plane(kiln_exec *x, kiln_node *n, const win_geom *w, int mode, cl_float p, int vw, kiln_error *err) {
  char opts[400], tb[256];
  snprintf(opts, sizeof opts, "%s -DPL_MODE=%d -DPL_VW=%d", kiln_cl_type_opts(kiln_dev_dtype(kiln_in(x->g, n, 0)), tb, sizeof tb), mode, vw);
  cl_kernel k = kiln_cl_kernel(x->d, "pool.cl", opts, "gpool_plane", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_long S = w->in[0] * w->in[1] * w->in[2], planes = w->n * w->c;
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(S), KARG(planes), KARG(p), KEND)) return err->status;
  size_t lws = 64;
  while (lws > 1 && (size_t)planes < 8 * lws) lws /= 2;
  if (lws > x->d->info.max_work_group) lws = 1;
  size_t gws = ((size_t)planes + lws - 1) / lws * lws;
  return kiln_exec_launch(x, k, 1, &gws, &lws, err);
}

/* A MaxPool whose input and output are in blocks of B channels
 * (kiln__pool_blk_ok; runtime/layout.c): pool.cl's pool_blk, a work-item per
 * output pixel and block, the geometry as constants. Not tunable. */
static int pool_blk_dev(kiln_exec *x, kiln_node *n, const win_geom *w, int B, kiln_error *err) {
  cl_int m[27];
  int rc = kiln__win_meta(w, m, 27, err);
  if (rc) return rc;
  char opts[700];
  kiln_cl_type_opts(KILN_DT_FLOAT, opts, sizeof opts);
  /* pool.cl's PL_GEOM order: N, C, in[3], out[3], k[3], s[3], d[3], pb[3], pe[3] */
  int pm[23] = {m[0], m[1]};
  for (int i = 0; i < 3; i++) {
    pm[2 + i] = m[6 + i]; pm[5 + i] = m[9 + i]; pm[8 + i] = m[12 + i]; pm[11 + i] = m[15 + i];
    pm[14 + i] = m[18 + i]; pm[17 + i] = m[21 + i]; pm[20 + i] = m[24 + i];
  }
  size_t o = strlen(opts);
  o += (size_t)snprintf(opts + o, sizeof opts - o, " -DPL_WPI=1 -DPL_MODE=0 -DPL_IND=0 -DPL_ORDER=0 -DPL_BLK=%d -DPL_GEOM=", B);
  for (int i = 0; i < 23 && o < sizeof opts; i++) o += (size_t)snprintf(opts + o, sizeof opts - o, "%s%d", i ? "," : "", pm[i]);
  cl_kernel k = kiln_cl_kernel(x->d, "pool.cl", opts, "pool_blk", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KEND)) return err->status;
  size_t gws[3] = {(size_t)w->out[2], (size_t)w->out[1], (size_t)(w->n * w->c / B)};
  return kiln_exec_launch(x, k, 3, gws, NULL, err);
}

int kiln__pool_blk_ok(kiln_graph *g, kiln_node *n) {
  int mode;
  bool global;
  win_geom w;
  kiln_error e = {0};
  if (strcmp(n->op_type, "MaxPool") || n->folded || kiln_has_out(n, 1)) return 0;
  if (pool_setup(g, n, &mode, &global, &w, &e) || global || mode != POOL_MAX) return 0;
  return w.in[0] == 1 && w.out[0] == 1 && w.k[0] == 1 && w.pb[0] == 0; /* 2-D */
}

static int pool_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  int mode;
  bool global;
  win_geom w;
  int rc = pool_setup(g, n, &mode, &global, &w, err);
  if (rc) return rc;
  if (kiln_in(g, n, 0)->blk && !global) /* blocked in and out (layout.c): a 2-D MaxPool of floats */
    return pool_blk_dev(x, n, &w, kiln_in(g, n, 0)->blk, err);
  if (kiln_in(g, n, 0)->blk) { /* NCHW16c input (layout.c, blocks of 16 only): a GlobalAveragePool of floats */
    char opts[300];
    kiln_cl_type_opts(KILN_DT_FLOAT, opts, sizeof opts);
    strncat(opts, " -DPL_B16=1", sizeof opts - strlen(opts) - 1);
    cl_kernel k = kiln_cl_kernel(x->d, "pool.cl", opts, "gpool_b16", err);
    if (!k) return err->status;
    cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
    cl_long S = w.in[0] * w.in[1] * w.in[2], blocks = w.n * w.c / 16;
    if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(S), KARG(blocks), KEND)) return err->status;
    size_t gws = (size_t)blocks;
    return kiln_exec_launch(x, k, 1, &gws, NULL, err);
  }
  kiln_tunable t;
  int pa = 1, pb = global ? 1 : 0, pc = 1; /* without a descriptor: one element per work-item, the driver's work-group */
  if (pool_tunable(g, n, &t) == 0) {
    const int *p = kiln_exec_tparams(x, n, &t);
    pa = p[PP_A];
    pb = p[PP_B];
    if (!global) pc = p[PP_C];
  }
  char opts[600], tb[256];
  cl_float p = mode == POOL_LP ? (cl_float)kiln_attr_int(n, "p", 2) : 0.f;
  cl_int cm = mode;
  if (global && pa > 1) { /* a work-group per plane */
    snprintf(opts, sizeof opts, "%s -DPL_WG=%d -DPL_VW=%d", kiln_cl_type_opts(kiln_dev_dtype(kiln_in(g, n, 0)), tb, sizeof tb), pa, pb);
    cl_kernel k = kiln_cl_kernel(x->d, "pool.cl", opts, "gpool_wg", err);
    if (!k) return err->status;
    cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
    cl_long S = w.in[0] * w.in[1] * w.in[2];
    if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(S), KARG(cm), KARG(p), KEND)) return err->status;
    size_t gws = (size_t)(w.n * w.c) * (size_t)pa, lws = (size_t)pa;
    return kiln_exec_launch(x, k, 1, &gws, &lws, err);
  }
  int xdt = kiln_in(g, n, 0)->dtype;
  if (global && (xdt == KILN_DT_FLOAT || xdt == KILN_DT_DOUBLE)) return gpool_plane(x, n, &w, mode, p, pb, err); /* PL_WG = 1 */
  int wpi = global ? 1 : pa, wg = global ? 0 : pb;
  cl_int m[27], pm[23];
  if ((rc = kiln__win_meta(&w, m, 27, err))) return rc;
  /* pool.cl layout: N, C, in[3], out[3], k[3], s[3], d[3], pb[3], pe[3] */
  pm[0] = m[0]; pm[1] = m[1];
  for (int i = 0; i < 3; i++) {
    pm[2 + i] = m[6 + i]; pm[5 + i] = m[9 + i]; pm[8 + i] = m[12 + i]; pm[11 + i] = m[15 + i];
    pm[14 + i] = m[18 + i]; pm[17 + i] = m[21 + i]; pm[20 + i] = m[24 + i];
  }
  cl_mem mb = kiln_exec_param(x, n, 0, pm, sizeof pm, err);
  if (!mb) return err->status;
  /* the defaults build the program every pool.cl kernel shares */
  kiln_cl_type_opts(kiln_dev_dtype(kiln_in(g, n, 0)), opts, sizeof opts);
  const bool rows = !global && pool_rows(&w);
  const int prows = rows ? pc : 1;
  snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DPL_WPI=%d", wpi);
  if (prows > 1) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DPL_ROWS=%d", prows);
  if (rows && wpi > 1) { /* pool_row's shuffle masks: unsigned of the element's size (fp16 storage computes in float) */
    const int pdt = kiln_dev_dtype(kiln_in(g, n, 0));
    const char *mt = kiln_cl_utype(pdt == KILN_DT_FLOAT16 ? 4 : kiln_dtype_size(pdt));
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DPL_MASKT=%s", mt ? mt : "uint");
  }
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0), bi = kiln_out_buf(x, n, 1);
  cl_int with_ind = bi != NULL, order = (cl_int)kiln_attr_int(n, "storage_order", 0);
  if (!global) {
    /* windowed pools: geometry and mode as constants (one program per
     * geometry; the generic kernel's run-time window loops and mode branches
     * cost ~10x on POCL: resnet18's MaxPool 6-7 ms) */
    size_t o = strlen(opts);
    o += (size_t)snprintf(opts + o, sizeof opts - o, " -DPL_MODE=%d -DPL_IND=%d -DPL_ORDER=%d -DPL_GEOM=", mode, with_ind, order);
    for (int i = 0; i < 23 && o < sizeof opts; i++) o += (size_t)snprintf(opts + o, sizeof opts - o, "%s%d", i ? "," : "", pm[i]);
  }
  /* 2-D windows go along output rows (pool_row: PL_WPI outputs of a row per
   * work-item, vector loads inside the input); others by flat index */
  cl_kernel k = kiln_cl_kernel(x->d, "pool.cl", opts, rows ? "pool_row" : "pool_fwd", err);
  if (!k) return err->status;
  if (!bi) bi = by;
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(bi), KARG(mb), KARG(cm), KARG(p), KARG(with_ind), KARG(order), KEND)) return err->status;
  if (rows) {
    /* PL_WG work-items per group: along the row first, then rows */
    size_t r0 = (size_t)((w.out[2] + wpi - 1) / wpi), OH = (size_t)((w.out[1] + prows - 1) / prows), l0 = 1, l1 = 1;
    if (wg > 0) {
      while (l0 * 2 <= (size_t)wg && l0 * 2 <= r0) l0 *= 2;
      l1 = (size_t)wg / l0;
      while (l1 > 1 && l1 / 2 >= OH) l1 /= 2;
    }
    size_t gws[3] = {(r0 + l0 - 1) / l0 * l0, (OH + l1 - 1) / l1 * l1, (size_t)(w.n * w.c)}, lws[3] = {l0, l1, 1};
    return kiln_exec_launch(x, k, 3, gws, wg > 0 ? lws : NULL, err);
  }
  size_t P = (size_t)(w.out[0] * w.out[1] * w.out[2]), g0 = (P + (size_t)wpi - 1) / (size_t)wpi;
  if (wg > 0) g0 = (g0 + (size_t)wg - 1) / (size_t)wg * (size_t)wg; /* the kernel skips items past the plane */
  size_t gws[2] = {g0, (size_t)(w.n * w.c)}, lws[2] = {(size_t)wg, 1};
  return kiln_exec_launch(x, k, 2, gws, wg > 0 ? lws : NULL, err);
}

static int pool_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int mode;
  bool global;
  pool_kind(n, &mode, &global);
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt == KILN_DT_FLOAT || dt == KILN_DT_DOUBLE) return 0;
  if (mode == POOL_MAX && (dt == KILN_DT_UINT8 || dt == KILN_DT_INT8)) return 0;
  return kiln__err(err, KILN_EUNSUPPORTED, "%s on %s", n->op_type, kiln_dtype_name(dt));
}

/* ---- MaxUnpool ---------------------------------------------------------------- */

/* The unpooled shape implied by the attributes; indices refer to it. An
 * explicit output_shape pads (or crops) that shape at the end of each dim. */
static int unpool_default_shape(kiln_graph *g, kiln_node *n, int64_t *d, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  int ns = x->rank - 2, rc;
  int64_t s[KILN_MAX_RANK], p[2 * KILN_MAX_RANK];
  const int64_t *ks;
  if (kiln_attr_ints(n, "kernel_shape", &ks) != ns) return kiln__err(err, KILN_ESHAPE, "kernel_shape must have %d values", ns);
  if ((rc = ints_attr(n, "strides", ns, s, 1, err)) || (rc = ints_attr(n, "pads", 2 * ns, p, 0, err))) return rc;
  d[0] = x->dims[0];
  d[1] = x->dims[1];
  for (int i = 0; i < ns; i++) {
    d[2 + i] = (x->dims[2 + i] - 1) * s[i] - p[i] - p[ns + i] + ks[i];
    if (d[2 + i] < 0) return kiln__err(err, KILN_ESHAPE, "negative output dimension");
  }
  return 0;
}

static int unpool_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *ind = kiln_in(g, n, 1), *os = kiln_in(g, n, 2);
  if (!x || !ind) return kiln__err(err, KILN_EINVAL, "needs X and I");
  if (x->rank < 3) return kiln__err(err, KILN_ESHAPE, "input rank %d", x->rank);
  if (ind->dtype != KILN_DT_INT64 || ind->rank != x->rank) return kiln__err(err, KILN_ESHAPE, "indices must be int64 with the shape of X");
  for (int i = 0; i < x->rank; i++)
    if (ind->dims[i] != x->dims[i]) return kiln__err(err, KILN_ESHAPE, "indices must have the shape of X");
  int64_t d[KILN_MAX_RANK];
  int rc = unpool_default_shape(g, n, d, err);
  if (rc) return rc;
  if (os) {
    if (!os->data) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (output_shape)");
    if (kiln_value_numel(os) != x->rank) return kiln__err(err, KILN_ESHAPE, "output_shape has %lld values, expected %d", (long long)kiln_value_numel(os), x->rank);
    for (int i = 0; i < x->rank; i++) {
      d[i] = kiln_value_geti(os, i);
      if (d[i] < 0) return kiln__err(err, KILN_ESHAPE, "negative output_shape");
    }
  }
  kiln_set_out(g, n, 0, x->dtype, x->rank, d);
  return 0;
}

static int unpool_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t dd[KILN_MAX_RANK], nd = 1;
  int rc = unpool_default_shape(g, n, dd, err);
  if (rc) return rc;
  for (int i = 0; i < x->rank; i++) nd *= dd[i];
  int64_t nx = kiln_value_numel(x), ny = kiln_value_numel(y);
  size_t es = kiln_dtype_size(x->dtype);
  memset(out[0], 0, (size_t)ny * es);
  const int64_t *ind = in[1];
  for (int64_t i = 0; i < nx; i++) {
    if (ind[i] < 0 || ind[i] >= nd) return kiln__err(err, KILN_EINVAL, "index %lld out of range [0, %lld)", (long long)ind[i], (long long)nd);
    /* coordinates in the default shape, placed at the same coordinates of y */
    int64_t rem = ind[i], off = 0, st = 1;
    bool inside = true;
    for (int a = x->rank - 1; a >= 0; a--) {
      int64_t c = rem % dd[a];
      rem /= dd[a];
      if (c >= y->dims[a]) inside = false;
      off += c * st;
      st *= y->dims[a];
    }
    if (inside) memcpy((char *)out[0] + off * (int64_t)es, (const char *)in[0] + i * (int64_t)es, es);
  }
  return 0;
}

static int unpool_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0), *yv = kiln_out(g, n, 0);
  cl_long meta[1 + 3 * KILN_MAX_RANK] = {0};
  int64_t dd[KILN_MAX_RANK], st[KILN_MAX_RANK];
  int rc = unpool_default_shape(g, n, dd, err);
  if (rc) return rc;
  kiln_strides(yv->rank, yv->dims, st);
  meta[0] = yv->rank;
  for (int a = 0; a < yv->rank; a++) { meta[1 + a] = dd[a]; meta[1 + KILN_MAX_RANK + a] = yv->dims[a]; meta[1 + 2 * KILN_MAX_RANK + a] = st[a]; }
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  char opts[256];
  kiln_cl_type_opts(xv->dtype, opts, sizeof opts);
  cl_kernel kz = kiln_cl_kernel(x->d, "pool.cl", opts, "fill_zero", err);
  if (!kz) return err->status;
  cl_kernel ks = kiln_cl_kernel(x->d, "pool.cl", opts, "unpool_scatter", err);
  if (!ks) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), bi = kiln_in_buf(x, n, 1), by = kiln_out_buf(x, n, 0);
  cl_long nx = kiln_value_numel(xv), ny = kiln_value_numel(yv);
  if (kiln_cl_args(kz, err, KARG(by), KARG(ny), KEND)) return err->status;
  size_t gz = (size_t)ny, gs = (size_t)nx;
  if ((rc = kiln_exec_launch(x, kz, 1, &gz, NULL, err))) return rc;
  if (kiln_cl_args(ks, err, KARG(bx), KARG(bi), KARG(by), KARG(mb), KARG(nx), KEND)) return err->status;
  return kiln_exec_launch(x, ks, 1, &gs, NULL, err);
}

static int unpool_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (!kiln_cl_type(dt) || dt == KILN_DT_FLOAT16) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(dt));
  return 0;
}

/* ---- Resize / Upsample ---------------------------------------------------------- */

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum { CT_HALF_PIXEL, CT_ASYMMETRIC, CT_ALIGN_CORNERS, CT_PYTORCH_HALF_PIXEL, CT_TF_HALF_PIXEL_NN, CT_TF_CROP_AND_RESIZE, CT_HALF_PIXEL_SYMMETRIC };
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

typedef struct {
  int rank;
  int64_t in[KILN_MAX_RANK], out[KILN_MAX_RANK];
  double scale[KILN_MAX_RANK], roi0[KILN_MAX_RANK], roi1[KILN_MAX_RANK];
  int mode, ctm, nearest, exclude_outside, antialias;
  double cubic_a, extrap;
} rs_params;

static int lookup(const char *s, const char *const *names, int *out) {
  for (int i = 0; names[i]; i++)
    if (!strcmp(s, names[i])) { *out = i; return 0; }
  return -1;
}

/* Reads Resize/Upsample attributes and the plan-time values of roi, scales
 * and sizes, and computes the output shape (following the ONNX reference). */
static int rs_setup(kiln_graph *g, kiln_node *n, rs_params *p, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  memset(p, 0, sizeof *p);
  if (!x) return kiln__err(err, KILN_EINVAL, "missing input X");
  int r = p->rank = x->rank;
  for (int i = 0; i < r; i++) { p->in[i] = x->dims[i]; p->scale[i] = 1; p->roi0[i] = 0; p->roi1[i] = 1; }
  bool upsample = !strcmp(n->op_type, "Upsample");
  bool legacy = upsample || n->opset < 11;
  static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
  const char *ms = kiln_attr_str(n, "mode", "nearest");
  if (!strcmp(ms, "bilinear") || !strcmp(ms, "trilinear")) ms = "linear";
  if (lookup(ms, modes, &p->mode)) return kiln__err(err, KILN_EUNSUPPORTED, "mode '%s'", ms);
  p->cubic_a = kiln_attr_float(n, "cubic_coeff_a", -0.75f);
  p->extrap = kiln_attr_float(n, "extrapolation_value", 0.f);
  p->exclude_outside = (int)kiln_attr_int(n, "exclude_outside", 0);
  p->antialias = (int)kiln_attr_int(n, "antialias", 0);
  if (legacy) {
    /* Upsample and Resize-10: asymmetric coordinates; nearest rounds down when
     * upsampling and up when downsampling (as onnxruntime does). */
    p->ctm = CT_ASYMMETRIC;
    p->nearest = NM_SIMPLE;
    if (p->mode == RS_CUBIC) return kiln__err(err, KILN_EUNSUPPORTED, "cubic mode before opset 11");
  } else {
    static const char *const ctms[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                       "tf_crop_and_resize", "half_pixel_symmetric", NULL};
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
    const char *cs = kiln_attr_str(n, "coordinate_transformation_mode", "half_pixel");
    const char *ns = kiln_attr_str(n, "nearest_mode", "round_prefer_floor");
    if (lookup(cs, ctms, &p->ctm)) return kiln__err(err, KILN_EUNSUPPORTED, "coordinate_transformation_mode '%s'", cs);
    if (lookup(ns, nms, &p->nearest)) return kiln__err(err, KILN_EUNSUPPORTED, "nearest_mode '%s'", ns);
  }
  /* axes (opset 18) */
  int axes[KILN_MAX_RANK], nax = r;
  const int64_t *av;
  int na = kiln_attr_ints(n, "axes", &av);
  if (na >= 0) {
    nax = na;
    for (int i = 0; i < na; i++) {
      axes[i] = kiln_axis(av[i], r);
      if (axes[i] < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range", (long long)av[i]);
    }
  } else for (int i = 0; i < r; i++) axes[i] = i;
  kiln_value *scales = NULL, *sizes = NULL, *roi = NULL;
  double sc[KILN_MAX_RANK];
  if (upsample && n->opset < 9) {
    const float *f;
    int nf = kiln_attr_floats(n, "scales", &f);
    if (nf != r) return kiln__err(err, KILN_ESHAPE, "scales attribute must have %d values", r);
    for (int i = 0; i < r; i++) sc[i] = f[i];
  } else {
    if (legacy) scales = kiln_in(g, n, 1);
    else { roi = kiln_in(g, n, 1); scales = kiln_in(g, n, 2); sizes = kiln_in(g, n, 3); }
    if (scales && kiln_value_numel(scales) == 0) scales = NULL;
    if (sizes && kiln_value_numel(sizes) == 0) sizes = NULL;
    if (roi && kiln_value_numel(roi) == 0) roi = NULL;
    if (!scales && !sizes) return kiln__err(err, KILN_EINVAL, "needs scales or sizes");
    if (scales && sizes) return kiln__err(err, KILN_EINVAL, "only one of scales and sizes may be given");
    kiln_value *v = scales ? scales : sizes;
    if (!v->data) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data ('%s')", v->name);
    if (kiln_value_numel(v) != nax) return kiln__err(err, KILN_ESHAPE, "'%s' has %lld values, expected %d", v->name, (long long)kiln_value_numel(v), nax);
    for (int i = 0; i < nax; i++) sc[i] = scales ? kiln_value_getf(v, i) : 0;
    if (sizes) {
      int64_t sz[KILN_MAX_RANK];
      for (int i = 0; i < nax; i++) sz[i] = kiln_value_geti(v, i);
      const char *pol = kiln_attr_str(n, "keep_aspect_ratio_policy", "stretch");
      int policy = !strcmp(pol, "not_larger") ? 1 : !strcmp(pol, "not_smaller") ? 2 : 0;
      if (!policy && strcmp(pol, "stretch")) return kiln__err(err, KILN_EUNSUPPORTED, "keep_aspect_ratio_policy '%s'", pol);
      double agg = policy == 1 ? INFINITY : -INFINITY;
      for (int i = 0; i < nax; i++) {
        double s = p->in[axes[i]] ? (double)sz[i] / (double)p->in[axes[i]] : 1.0;
        sc[i] = s;
        if (policy == 1 && s < agg) agg = s;
        if (policy == 2 && s > agg) agg = s;
      }
      for (int i = 0; i < nax; i++) {
        int a = axes[i];
        if (policy) { p->scale[a] = agg; p->out[a] = (int64_t)(agg * (double)p->in[a] + 0.5); }
        else { p->scale[a] = sc[i]; p->out[a] = sz[i]; }
      }
    }
    if (roi) {
      if (!roi->data) return kiln__err(err, KILN_EUNSUPPORTED, "roi is not known at plan time");
      if (kiln_value_numel(roi) != 2 * nax) return kiln__err(err, KILN_ESHAPE, "roi must have %d values", 2 * nax);
      for (int i = 0; i < nax; i++) { p->roi0[axes[i]] = kiln_value_getf(roi, i); p->roi1[axes[i]] = kiln_value_getf(roi, nax + i); }
    }
  }
  for (int i = 0; i < r; i++) {
    bool in_axes = false;
    for (int k = 0; k < nax; k++) in_axes |= axes[k] == i;
    if (!in_axes) p->out[i] = p->in[i];
  }
  if (!sizes) {
    for (int i = 0; i < nax; i++) {
      int a = axes[i];
      if (!(sc[i] > 0)) return kiln__err(err, KILN_EINVAL, "scale %g must be positive", sc[i]);
      p->scale[a] = sc[i];
      p->out[a] = (int64_t)floor(sc[i] * (double)p->in[a]);
    }
  }
  if (p->ctm == CT_TF_CROP_AND_RESIZE && !roi && !legacy) {
    for (int i = 0; i < r; i++) { p->roi0[i] = 0; p->roi1[i] = 1; }
  }
  return 0;
}

/* Input coordinate of output coordinate xo along an axis (ONNX reference
 * semantics). Sets *outside for tf_crop_and_resize coordinates outside the input. */
static double rs_coord(const rs_params *p, int a, double xo, bool *outside) {
  double s = p->scale[a], in = (double)p->in[a], ow = s * in, xi;
  *outside = false;
  switch (p->ctm) {
  case CT_ASYMMETRIC: xi = xo / s; break;
  case CT_ALIGN_CORNERS: xi = ow == 1 ? 0 : xo * (in - 1) / (ow - 1); break;
  case CT_PYTORCH_HALF_PIXEL: xi = ow == 1 ? -0.5 : (xo + 0.5) / s - 0.5; break;
  case CT_TF_HALF_PIXEL_NN: xi = (xo + 0.5) / s; break;
  case CT_TF_CROP_AND_RESIZE:
    xi = ow == 1 ? (p->roi1[a] - p->roi0[a]) * (in - 1) / 2 : xo * (p->roi1[a] - p->roi0[a]) * (in - 1) / (ow - 1);
    xi += p->roi0[a] * (in - 1);
    if (xi < 0 || xi > in - 1) *outside = true;
    break;
  case CT_HALF_PIXEL_SYMMETRIC: {
    double adj = (double)p->out[a] / ow, center = in / 2, off = center * (1 - adj);
    xi = off + (xo + 0.5) / s - 0.5;
    break;
  }
  default: xi = (xo + 0.5) / s - 0.5; break;
  }
  return xi;
}

static double cubic_w(double t, double A) {
  t = fabs(t);
  if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0;
}

/* Taps (input index, weight) of output coordinate xo along axis a; returns the
 * count (at most cap), or -1 when the coordinate is outside the crop box. */
static int rs_taps(const rs_params *p, int a, int64_t xo, int64_t *idx, double *wt, int cap) {
  bool outside;
  double xi = rs_coord(p, a, (double)xo, &outside);
  if (outside) return -1;
  int64_t in = p->in[a];
  double fl = floor(xi);
  if (p->mode == RS_NEAREST) {
    double r = xi - fl;
    int64_t k;
    if (r == 0) k = (int64_t)fl;
    else switch (p->nearest) {
      case NM_ROUND_PREFER_CEIL: k = (int64_t)fl + (r >= 0.5); break;
      case NM_FLOOR: k = (int64_t)fl; break;
      case NM_CEIL: k = (int64_t)fl + 1; break;
      case NM_SIMPLE: k = p->scale[a] < 1 ? (int64_t)ceil(xi) : (int64_t)fl; break;
      default: k = (int64_t)fl + (r > 0.5); break;
    }
    idx[0] = k < 0 ? 0 : k >= in ? in - 1 : k;
    wt[0] = 1;
    return 1;
  }
  double sc = p->antialias && p->scale[a] < 1 ? p->scale[a] : 1.0;
  double support = p->mode == RS_LINEAR ? 1 : 2;
  int64_t start = (int64_t)floor(-support / sc) + 1, cnt = 2 - 2 * start;
  if (cnt > cap) return -2;
  /* the ONNX reference picks the taps nearest to xi, preferring smaller ones */
  int64_t base = (xi == fl ? (int64_t)fl - 1 : (int64_t)fl) + start;
  double sum = 0;
  for (int64_t t = 0; t < cnt; t++) {
    int64_t j = base + t;
    double d = ((double)j - xi) * sc, w;
    if (p->mode == RS_LINEAR) w = d < 0 ? 1 + d : 1 - d, w = w < 0 ? 0 : w;
    else w = cubic_w(d, p->cubic_a);
    if (p->exclude_outside && (j < 0 || j >= in)) w = 0;
    idx[t] = j < 0 ? 0 : j >= in ? in - 1 : j;
    wt[t] = w;
    sum += w;
  }
  if ((sc != 1.0 || p->exclude_outside) && sum != 0)
    for (int64_t t = 0; t < cnt; t++) wt[t] /= sum;
  return (int)cnt;
}

#define RS_MAXTAPS 256

static int resize_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  rs_params p;
  int rc = rs_setup(g, n, &p, err);
  if (rc) return rc;
  kiln_set_out(g, n, 0, kiln_in(g, n, 0)->dtype, p.rank, p.out);
  return 0;
}

/* CPU reference: for every output element, compute the taps of each axis and
 * sum over their cartesian product. */
static int resize_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  rs_params p;
  int rc = rs_setup(g, n, &p, err);
  if (rc) return rc;
  int r = p.rank, dt = kiln_in(g, n, 0)->dtype;
  int64_t total = 1, ist[KILN_MAX_RANK];
  for (int a = 0; a < r; a++) total *= p.out[a];
  kiln_strides(r, p.in, ist);
  int64_t (*idx)[RS_MAXTAPS] = malloc(sizeof(int64_t) * RS_MAXTAPS * (r ? r : 1));
  double (*wt)[RS_MAXTAPS] = malloc(sizeof(double) * RS_MAXTAPS * (r ? r : 1));
  if (!idx || !wt) { free(idx); free(wt); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  for (int64_t i = 0; i < total; i++) {
    int64_t rem = i, o[KILN_MAX_RANK];
    int nt[KILN_MAX_RANK], c[KILN_MAX_RANK] = {0};
    bool ext = false;
    for (int a = r - 1; a >= 0; a--) { o[a] = rem % p.out[a]; rem /= p.out[a]; }
    for (int a = 0; a < r && !ext; a++) {
      nt[a] = rs_taps(&p, a, o[a], idx[a], wt[a], RS_MAXTAPS);
      if (nt[a] == -2) { free(idx); free(wt); return kiln__err(err, KILN_EUNSUPPORTED, "antialias filter wider than %d taps", RS_MAXTAPS); }
      if (nt[a] < 0) ext = true;
    }
    double v = 0;
    if (ext) v = p.extrap;
    else
      for (;;) {
        double w = 1;
        int64_t src = 0;
        for (int a = 0; a < r; a++) { w *= wt[a][c[a]]; src += idx[a][c[a]] * ist[a]; }
        if (w != 0) v += w * kiln_load_f(in[0], dt, src);
        int a = r - 1;
        for (; a >= 0; a--) { if (++c[a] < nt[a]) break; c[a] = 0; }
        if (a < 0) break;
      }
    if (kiln_dtype_is_float(dt)) kiln_store_f(out[0], dt, i, v);
    else kiln_store_i(out[0], dt, i, (int64_t)nearbyint(v));
  }
  free(idx);
  free(wt);
  return 0;
}

static int resize_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  rs_params p;
  int rc = rs_setup(g, n, &p, err);
  if (rc) return rc;
  int r = p.rank;
  /* per-axis tap tables, with taps of zero weight dropped */
  int64_t nt[KILN_MAX_RANK] = {0}, off[KILN_MAX_RANK] = {0}, tot = 0;
  int64_t ti[RS_MAXTAPS];
  double tw[RS_MAXTAPS];
  for (int a = 0; a < r; a++) {
    nt[a] = 1;
    for (int64_t o = 0; o < p.out[a]; o++) {
      int c = rs_taps(&p, a, o, ti, tw, RS_MAXTAPS), nz = 0;
      if (c == -2) return kiln__err(err, KILN_EUNSUPPORTED, "antialias filter wider than %d taps", RS_MAXTAPS);
      for (int t = 0; t < c; t++) nz += tw[t] != 0;
      if (nz > nt[a]) nt[a] = nz;
    }
    off[a] = tot;
    tot += nt[a] * (p.out[a] ? p.out[a] : 1);
  }
  if (tot > INT32_MAX) return kiln__err(err, KILN_ELIMIT, "resize tables too large");
  cl_int *tidx = calloc((size_t)tot + 1, sizeof *tidx);
  cl_float *twt = calloc((size_t)tot + 1, sizeof *twt);
  if (!tidx || !twt) { free(tidx); free(twt); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  for (int a = 0; a < r; a++)
    for (int64_t o = 0; o < p.out[a]; o++) {
      cl_int *di = tidx + off[a] + o * nt[a];
      cl_float *dw = twt + off[a] + o * nt[a];
      int c = rs_taps(&p, a, o, ti, tw, RS_MAXTAPS), k = 0;
      if (c < 0) { for (int t = 0; t < nt[a]; t++) { di[t] = -1; dw[t] = 0; } continue; }
      for (int t = 0; t < c; t++)
        if (tw[t] != 0) { di[k] = (cl_int)ti[t]; dw[k] = (cl_float)tw[t]; k++; }
      for (; k < nt[a]; k++) { di[k] = (cl_int)ti[0]; dw[k] = 0; }
    }
  /* only the last two axes resample (the leading ones map each index to
   * itself with weight 1): resize_hw, planes of H x W without index division */
  bool hw = r >= 2;
  for (int a = 0; a < r - 2 && hw; a++) {
    hw = nt[a] == 1 && p.out[a] == p.in[a];
    for (int64_t o = 0; o < p.out[a] && hw; o++) hw = tidx[off[a] + o] == o && twt[off[a] + o] == 1.0f;
  }
  int64_t planes = 1;
  for (int a = 0; a < r - 2; a++) planes *= p.out[a];
  if (hw) {
    hw = p.in[r - 2] <= INT32_MAX && p.in[r - 1] <= INT32_MAX && p.out[r - 2] <= INT32_MAX && p.out[r - 1] <= INT32_MAX && planes > 0;
  }
  int dt = kiln_dev_dtype(kiln_in(g, n, 0)); /* float16: fp16 storage */
  /* nearest upsampling by integer factors of the last two axes: resize_up, no tables */
  int64_t fh = hw && p.in[r - 2] ? p.out[r - 2] / p.in[r - 2] : 0, fw = hw && p.in[r - 1] ? p.out[r - 1] / p.in[r - 1] : 0;
  bool up = hw && fh >= 1 && fw >= 1 && fh * fw > 1 && p.out[r - 2] == fh * p.in[r - 2] &&
            p.out[r - 1] == fw * p.in[r - 1] && nt[r - 2] == 1 && nt[r - 1] == 1;
  for (int a = r - 2; a < r && up; a++)
    for (int64_t o = 0; o < p.out[a] && up; o++) up = tidx[off[a] + o] == o / (a == r - 2 ? fh : fw) && twt[off[a] + o] == 1.0f;
  if (up) {
    free(tidx);
    free(twt);
    char uo[300];
    kiln_cl_type_opts(dt, uo, sizeof uo);
    /* 16-input blocks where the element has an unsigned vector type of its
     * size for shuffle()'s mask (resize.cl, RU_MASK) */
    const char *mask = kiln_cl_utype(kiln_dtype_size(dt));
    const int ruv = mask ? 16 : 8;
    if (mask) snprintf(uo + strlen(uo), sizeof uo - strlen(uo), " -DRU_MASK=%s16", mask);
    cl_kernel k = kiln_cl_kernel(x->d, "resize.cl", uo, "resize_up", err);
    if (!k) return err->status;
    cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
    cl_int H = (cl_int)p.in[r - 2], W = (cl_int)p.in[r - 1], FH = (cl_int)fh, FW = (cl_int)fw;
    if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(H), KARG(W), KARG(FH), KARG(FW), KEND)) return err->status;
    size_t gws[3] = {(size_t)((W + ruv - 1) / ruv), (size_t)H, (size_t)planes}; /* RU_V (resize.cl) inputs a work-item */
    return kiln_exec_launch(x, k, 3, gws, NULL, err);
  }
  cl_mem ib = kiln_exec_param(x, n, 1, tidx, sizeof *tidx * (size_t)(tot + 1), err);
  cl_mem wb = ib ? kiln_exec_param(x, n, 2, twt, sizeof *twt * (size_t)(tot + 1), err) : NULL;
  free(tidx);
  free(twt);
  if (!wb) return err->status;
  char opts[256];
  cl_kernel k = kiln_cl_kernel(x->d, "resize.cl", kiln_cl_type_opts(dt, opts, sizeof opts), hw ? "resize_hw" : "resize_taps", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_float ext = (cl_float)p.extrap;
  cl_int round_int = !kiln_dtype_is_float(dt);
  if (hw) {
    cl_int H = (cl_int)p.in[r - 2], W = (cl_int)p.in[r - 1], Ho = (cl_int)p.out[r - 2], Wo = (cl_int)p.out[r - 1];
    cl_int offh = (cl_int)off[r - 2], offw = (cl_int)off[r - 1], nth = (cl_int)nt[r - 2], ntw = (cl_int)nt[r - 1];
    if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(ib), KARG(wb), KARG(H), KARG(W), KARG(Ho), KARG(Wo), KARG(offh), KARG(offw), KARG(nth), KARG(ntw),
                     KARG(ext), KARG(round_int), KEND))
      return err->status;
    if (!Ho || !Wo) return 0;
    size_t gws[3] = {(size_t)Wo, (size_t)Ho, (size_t)planes};
    return kiln_exec_launch(x, k, 3, gws, NULL, err);
  }
  cl_long meta[33] = {0};
  int64_t st[KILN_MAX_RANK];
  kiln_strides(r, p.in, st);
  meta[0] = r;
  for (int a = 0; a < r; a++) { meta[1 + a] = p.out[a]; meta[9 + a] = st[a]; meta[17 + a] = nt[a]; meta[25 + a] = off[a]; }
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  cl_long total = kiln_value_numel(kiln_out(g, n, 0));
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(mb), KARG(ib), KARG(wb), KARG(total), KARG(ext), KARG(round_int), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int resize_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt == KILN_DT_FLOAT || dt == KILN_DT_DOUBLE || dt == KILN_DT_UINT8 || dt == KILN_DT_INT8 || dt == KILN_DT_INT32 || dt == KILN_DT_INT64) return 0;
  return kiln__err(err, KILN_EUNSUPPORTED, "%s on %s", n->op_type, kiln_dtype_name(dt));
}

/* ---- GridSample (2-D) ------------------------------------------------------------ */

typedef struct { int mode, pad, align; } gs_params;

static int gs_setup(kiln_graph *g, kiln_node *n, gs_params *p, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *gr = kiln_in(g, n, 1);
  if (!x || !gr) return kiln__err(err, KILN_EINVAL, "needs X and grid");
  if (x->rank != 4) return kiln__err(err, KILN_EUNSUPPORTED, "GridSample on rank %d (only 4-D is supported)", x->rank);
  if (gr->rank != 4 || gr->dims[0] != x->dims[0] || gr->dims[3] != 2) return kiln__err(err, KILN_ESHAPE, "grid must have shape [N, Ho, Wo, 2]");
  if (gr->dtype != x->dtype) return kiln__err(err, KILN_ESHAPE, "grid dtype differs from X");
  static const char *const modes[] = {"nearest", "bilinear", "bicubic", NULL}, *const modes20[] = {"nearest", "linear", "cubic", NULL};
  static const char *const pads[] = {"zeros", "border", "reflection", NULL};
  const char *ms = kiln_attr_str(n, "mode", n->opset >= 20 ? "linear" : "bilinear"), *ps = kiln_attr_str(n, "padding_mode", "zeros");
  if (lookup(ms, modes, &p->mode) && lookup(ms, modes20, &p->mode)) return kiln__err(err, KILN_EUNSUPPORTED, "mode '%s'", ms);
  if (lookup(ps, pads, &p->pad)) return kiln__err(err, KILN_EUNSUPPORTED, "padding_mode '%s'", ps);
  p->align = (int)kiln_attr_int(n, "align_corners", 0);
  return 0;
}

static int gs_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  gs_params p;
  int rc = gs_setup(g, n, &p, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0), *gr = kiln_in(g, n, 1);
  int64_t d[4] = {x->dims[0], x->dims[1], gr->dims[1], gr->dims[2]};
  kiln_set_out(g, n, 0, x->dtype, 4, d);
  return 0;
}

static double gs_ref_reflect(double v, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return 0;
  while (v < lo || v > hi) {
    if (v < lo) v = lo + (lo - v);
    if (v > hi) v = hi - (v - hi);
  }
  return v;
}

static double gs_ref_pixel(const void *x, int dt, int64_t base, int64_t H, int64_t W, int64_t r, int64_t c, const gs_params *p) {
  if (p->pad == 0) {
    if (r < 0 || r >= H || c < 0 || c >= W) return 0;
  } else if (p->pad == 2) {
    if (r < 0 || r >= H) r = (int64_t)gs_ref_reflect((double)r, p->align ? 0 : -0.5, p->align ? (double)H - 1 : (double)H - 0.5);
    if (c < 0 || c >= W) c = (int64_t)gs_ref_reflect((double)c, p->align ? 0 : -0.5, p->align ? (double)W - 1 : (double)W - 0.5);
  }
  r = r < 0 ? 0 : r >= H ? H - 1 : r;
  c = c < 0 ? 0 : c >= W ? W - 1 : c;
  return kiln_load_f(x, dt, base + r * W + c);
}

static int gs_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  gs_params p;
  int rc = gs_setup(g, n, &p, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int dt = x->dtype;
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Ho = y->dims[2], Wo = y->dims[3];
  for (int64_t nn = 0; nn < N; nn++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < Ho * Wo; i++) {
        double gx = kiln_load_f(in[1], dt, (nn * Ho * Wo + i) * 2), gy = kiln_load_f(in[1], dt, (nn * Ho * Wo + i) * 2 + 1);
        gx = p.align ? (gx + 1) / 2 * (double)(W - 1) : ((gx + 1) * (double)W - 1) / 2;
        gy = p.align ? (gy + 1) / 2 * (double)(H - 1) : ((gy + 1) * (double)H - 1) / 2;
        if (p.mode != 2 && p.pad == 1) {
          gx = gx < 0 ? 0 : gx > (double)(W - 1) ? (double)(W - 1) : gx;
          gy = gy < 0 ? 0 : gy > (double)(H - 1) ? (double)(H - 1) : gy;
        } else if (p.mode != 2 && p.pad == 2) {
          gx = gs_ref_reflect(gx, p.align ? 0 : -0.5, p.align ? (double)W - 1 : (double)W - 0.5);
          gy = gs_ref_reflect(gy, p.align ? 0 : -0.5, p.align ? (double)H - 1 : (double)H - 0.5);
        }
        int64_t base = (nn * C + c) * H * W;
        double v = 0;
        if (p.mode == 0) v = gs_ref_pixel(in[0], dt, base, H, W, (int64_t)nearbyint(gy), (int64_t)nearbyint(gx), &p);
        else {
          int taps = p.mode == 1 ? 2 : 4;
          int64_t x0 = (int64_t)floor(gx) - (taps == 4), y0 = (int64_t)floor(gy) - (taps == 4);
          for (int a = 0; a < taps; a++)
            for (int b = 0; b < taps; b++) {
              double wy, wx;
              if (taps == 2) { wy = 1 - fabs(gy - (double)(y0 + a)); wx = 1 - fabs(gx - (double)(x0 + b)); }
              else { wy = cubic_w(gy - (double)(y0 + a), -0.75); wx = cubic_w(gx - (double)(x0 + b), -0.75); }
              v += wy * wx * gs_ref_pixel(in[0], dt, base, H, W, y0 + a, x0 + b, &p);
            }
        }
        kiln_store_f(out[0], dt, (nn * C + c) * Ho * Wo + i, v);
      }
  return 0;
}

static int gs_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  gs_params p;
  int rc = gs_setup(g, n, &p, err);
  if (rc) return rc;
  kiln_value *xv = kiln_in(g, n, 0), *yv = kiln_out(g, n, 0);
  char opts[256];
  cl_kernel k = kiln_cl_kernel(x->d, "resize.cl", kiln_cl_type_opts(xv->dtype, opts, sizeof opts), "grid_sample", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), bg = kiln_in_buf(x, n, 1), by = kiln_out_buf(x, n, 0);
  cl_int N = (cl_int)xv->dims[0], C = (cl_int)xv->dims[1], H = (cl_int)xv->dims[2], W = (cl_int)xv->dims[3];
  cl_int Ho = (cl_int)yv->dims[2], Wo = (cl_int)yv->dims[3], mode = p.mode, pad = p.pad, align = p.align;
  if (kiln_cl_args(k, err, KARG(bx), KARG(bg), KARG(by), KARG(N), KARG(C), KARG(H), KARG(W), KARG(Ho), KARG(Wo), KARG(mode), KARG(pad), KARG(align), KEND))
    return err->status;
  size_t gws[2] = {(size_t)Ho * (size_t)Wo, (size_t)N * (size_t)C};
  return kiln_exec_launch(x, k, 2, gws, NULL, err);
}

const kiln_op_def kiln_ops_conv_pool[] = {
  {"Conv", conv_infer, conv_ref, conv_dev, conv_check, conv_tunable, KILN_OP_EPI_HEAD | KILN_OP_EPI_NCHW | KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {"ConvTranspose", conv_infer, conv_ref, conv_dev, conv_check, NULL, KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {"MaxPool", pool_infer, pool_ref, pool_dev, pool_check, pool_tunable, KILN_OP_HALF},
  {"AveragePool", pool_infer, pool_ref, pool_dev, pool_check, pool_tunable, KILN_OP_HALF},
  {"LpPool", pool_infer, pool_ref, pool_dev, pool_check, pool_tunable, KILN_OP_HALF},
  {"GlobalAveragePool", pool_infer, pool_ref, pool_dev, pool_check, pool_tunable, KILN_OP_HALF},
  {"GlobalMaxPool", pool_infer, pool_ref, pool_dev, pool_check, pool_tunable, KILN_OP_HALF},
  {"GlobalLpPool", pool_infer, pool_ref, pool_dev, pool_check, pool_tunable, KILN_OP_HALF},
  {"MaxUnpool", unpool_infer, unpool_ref, unpool_dev, unpool_check, NULL},
  {"Resize", resize_infer, resize_ref, resize_dev, resize_check, NULL, KILN_OP_HALF},
  {"Upsample", resize_infer, resize_ref, resize_dev, resize_check, NULL, KILN_OP_HALF},
  {"ConvInteger", q8_infer, q8_ref, q8_dev, NULL, NULL},
  {"QLinearConv", q8_infer, q8_ref, q8_dev, NULL, NULL},
  {"GridSample", gs_infer, gs_ref, gs_dev, float_check, NULL},
  {NULL},
};
