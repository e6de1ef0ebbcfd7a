/* ops/misc.c: recurrent and signal-processing ONNX ops: RNN, GRU, LSTM
 * (kernels/rnn.cl), HannWindow, HammingWindow, BlackmanWindow,
 * MelWeightMatrix, DFT and STFT (kernels/misc.cl). Each op has shape
 * inference, a plain C reference (double arithmetic) and an OpenCL path. */
#include "kiln_internal.h"
#include <math.h>
#include <strings.h>

#define MI_PI 3.14159265358979323846

/* Build options for misc.cl / rnn.cl: the element type plus MI_FP64. */
static const char *mi_opts(kiln_device *d, int dtype, char *buf, size_t len) {
  char t[256];
  kiln_cl_type_opts(dtype, t, sizeof t);
  snprintf(buf, len, "%s -DMI_FP64=%d", t, d->has_fp64 ? 1 : 0);
  return buf;
}

/* Kernel name of misc.cl built for element type dtype. */
static cl_kernel mi_kernel(kiln_exec *x, int dtype, const char *name, kiln_error *err) {
  char opts[320];
  return kiln_cl_kernel(x->d, "misc.cl", mi_opts(x->d, dtype, opts, sizeof opts), name, err);
}

static bool mi_float_type(int dt) { return dt == KILN_DT_FLOAT || dt == KILN_DT_DOUBLE; }

/* Scalar integer input i known at plan time; returns false if unknown. */
static bool mi_scalar_int(kiln_graph *g, kiln_node *n, int i, int64_t *v) {
  kiln_value *x = kiln_in(g, n, i);
  if (!x || !x->data || kiln_value_numel(x) < 1) return false;
  *v = kiln_value_geti(x, 0);
  return true;
}

/* ======================================================================
 * Window functions
 * ==================================================================== */

enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN };

static int window_kind(const kiln_node *n) {
  if (!strcmp(n->op_type, "HannWindow")) return WIN_HANN;
  if (!strcmp(n->op_type, "HammingWindow")) return WIN_HAMMING;
  return WIN_BLACKMAN;
}

static int window_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int64_t size;
  if (!kiln_has_in(n, 0)) return kiln__err(err, KILN_EINVAL, "needs the size input");
  if (!mi_scalar_int(g, n, 0, &size)) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (size)");
  if (size < 0) return kiln__err(err, KILN_ESHAPE, "window size %lld is negative", (long long)size);
  int dt = (int)kiln_attr_int(n, "output_datatype", KILN_DT_FLOAT);
  if (kiln_dtype_size(dt) == 0 || dt == KILN_DT_STRING) return kiln__err(err, KILN_EUNSUPPORTED, "output_datatype %d", dt);
  kiln_set_out(g, n, 0, dt, 1, &size);
  return 0;
}

/* Denominator of the window's phase: N if periodic, else N - 1. */
static int64_t window_denom(const kiln_node *n, int64_t size) { return kiln_attr_int(n, "periodic", 1) ? size : size - 1; }

static int window_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *y = kiln_out(g, n, 0);
  int64_t size = y->dims[0], n1 = window_denom(n, size);
  int kind = window_kind(n);
  for (int64_t k = 0; k < size; k++) {
    double x = 2.0 * MI_PI * (double)k / (double)n1, v;
    if (kind == WIN_HANN) v = 0.5 - 0.5 * cos(x);
    else if (kind == WIN_HAMMING) v = 25.0 / 46.0 - (21.0 / 46.0) * cos(x);
    else v = 0.42 - 0.5 * cos(x) + 0.08 * cos(2.0 * x);
    kiln_store_f(out[0], y->dtype, k, v);
  }
  return 0;
}

static int window_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *y = kiln_out(x->g, n, 0);
  cl_kernel k = mi_kernel(x, y->dtype, "window_fill", err);
  if (!k) return err->status;
  cl_mem by = kiln_out_buf(x, n, 0);
  cl_long size = y->dims[0], n1 = window_denom(n, size);
  cl_int kind = window_kind(n);
  if (kiln_cl_args(k, err, KARG(by), KARG(size), KARG(n1), KARG(kind), KEND)) return err->status;
  size_t gws = (size_t)size;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int float_out_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_out(g, n, 0)->dtype;
  if (!mi_float_type(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "output dtype %s", kiln_dtype_name(dt));
  return 0;
}

/* ======================================================================
 * MelWeightMatrix
 * ==================================================================== */

static int mel_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int64_t nmel, dftl, sr;
  for (int i = 0; i < 5; i++)
    if (!kiln_has_in(n, i)) return kiln__err(err, KILN_EINVAL, "needs 5 inputs");
  if (!mi_scalar_int(g, n, 0, &nmel) || !mi_scalar_int(g, n, 1, &dftl))
    return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (num_mel_bins, dft_length)");
  if (nmel < 0 || dftl < 0) return kiln__err(err, KILN_ESHAPE, "negative num_mel_bins or dft_length");
  if (mi_scalar_int(g, n, 2, &sr) && sr <= 0) return kiln__err(err, KILN_ESHAPE, "sample_rate %lld must be positive", (long long)sr);
  int dt = (int)kiln_attr_int(n, "output_datatype", KILN_DT_FLOAT);
  if (kiln_dtype_size(dt) == 0 || dt == KILN_DT_STRING) return kiln__err(err, KILN_EUNSUPPORTED, "output_datatype %d", dt);
  int64_t d[2] = {dftl / 2 + 1, nmel};
  kiln_set_out(g, n, 0, dt, 2, d);
  return 0;
}

static int mel_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *y = kiln_out(g, n, 0);
  int64_t nmel = kiln_load_i(in[0], kiln_in(g, n, 0)->dtype, 0), dftl = kiln_load_i(in[1], kiln_in(g, n, 1)->dtype, 0);
  int64_t sr = kiln_load_i(in[2], kiln_in(g, n, 2)->dtype, 0);
  double lo = kiln_load_f(in[3], kiln_in(g, n, 3)->dtype, 0), hi = kiln_load_f(in[4], kiln_in(g, n, 4)->dtype, 0);
  if (sr <= 0) return kiln__err(err, KILN_EINVAL, "sample_rate %lld must be positive", (long long)sr);
  int64_t nspec = dftl / 2 + 1;
  int64_t *bins = malloc(sizeof(int64_t) * (size_t)(nmel + 2));
  double *w = calloc((size_t)(nspec * nmel + 1), sizeof(double));
  if (!bins || !w) { free(bins); free(w); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  double lmel = 2595.0 * log10(1.0 + lo / 700.0), hmel = 2595.0 * log10(1.0 + hi / 700.0);
  double step = (hmel - lmel) / (double)(nmel + 2);
  for (int64_t k = 0; k < nmel + 2; k++) {
    double hz = 700.0 * (pow(10.0, ((double)k * step + lmel) / 2595.0) - 1.0);
    bins[k] = (int64_t)floor((double)(dftl + 1) * hz / (double)sr);
  }
  for (int64_t i = 0; i < nmel; i++) {
    int64_t l = bins[i], c = bins[i + 1], r = bins[i + 2];
    if (c == l) {
      if (c >= 0 && c < nspec) w[c * nmel + i] = 1.0;
    } else {
      for (int64_t j = l; j <= c; j++)
        if (j >= 0 && j < nspec) w[j * nmel + i] = (double)(j - l) / (double)(c - l);
    }
    for (int64_t j = c; j < r; j++)
      if (j >= 0 && j < nspec) w[j * nmel + i] = (double)(r - j) / (double)(r - c);
  }
  for (int64_t k = 0; k < nspec * nmel; k++) kiln_store_f(out[0], y->dtype, k, w[k]);
  free(bins);
  free(w);
  return 0;
}

static int mel_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *y = kiln_out(g, n, 0);
  cl_kernel k = mi_kernel(x, y->dtype, "mel_fill", err);
  if (!k) return err->status;
  int64_t v;
  cl_long nspec = y->dims[0], nmel = y->dims[1], dftl = 0, sr = 1;
  if (mi_scalar_int(g, n, 1, &v)) dftl = v;
  if (mi_scalar_int(g, n, 2, &v)) sr = v;
  cl_mem by = kiln_out_buf(x, n, 0), blo = kiln_in_buf(x, n, 3), bhi = kiln_in_buf(x, n, 4);
  if (kiln_cl_args(k, err, KARG(by), KARG(nspec), KARG(nmel), KARG(dftl), KARG(sr), KARG(blo), KARG(bhi), KEND)) return err->status;
  size_t gws[2] = {(size_t)nmel, (size_t)nspec};
  return kiln_exec_launch(x, k, 2, gws, NULL, err);
}

static int mel_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int64_t v;
  if (float_out_check(g, n, err)) return err->status;
  if (!mi_scalar_int(g, n, 2, &v)) return kiln__err(err, KILN_EUNSUPPORTED, "sample_rate not known at plan time");
  if (v <= 0) return kiln__err(err, KILN_EUNSUPPORTED, "sample_rate %lld must be positive", (long long)v);
  if (kiln_in(g, n, 3)->dtype != KILN_DT_FLOAT || kiln_in(g, n, 4)->dtype != KILN_DT_FLOAT)
    return kiln__err(err, KILN_EUNSUPPORTED, "edge frequencies of type %s", kiln_dtype_name(kiln_in(g, n, 3)->dtype));
  return 0;
}

/* ======================================================================
 * DFT (opset 17: axis attribute; opset 20: axis input)
 * ==================================================================== */

typedef struct {
  int axis;
  int64_t outer, len_in, inner, nfft, nout;
  int comps, inverse;
} dft_geom;

static int dft_geometry(kiln_graph *g, kiln_node *n, dft_geom *q, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0);
  if (!x) return kiln__err(err, KILN_EINVAL, "needs an input");
  int r = x->rank;
  if (r < 2 || (x->dims[r - 1] != 1 && x->dims[r - 1] != 2))
    return kiln__err(err, KILN_ESHAPE, "input '%s' must have rank >= 2 and a last dimension of 1 or 2", x->name);
  int64_t a = n->opset >= 20 ? -2 : kiln_attr_int(n, "axis", 1);
  if (n->opset >= 20 && kiln_has_in(n, 2) && !mi_scalar_int(g, n, 2, &a))
    return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (axis)");
  if (a < 0) a += r;
  if (a < 0 || a > r - 2) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)a, r);
  q->axis = (int)a;
  q->len_in = x->dims[a];
  q->nfft = q->len_in;
  if (kiln_has_in(n, 1)) {
    int64_t v;
    if (!mi_scalar_int(g, n, 1, &v)) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (dft_length)");
    if (v < 1) return kiln__err(err, KILN_ESHAPE, "dft_length %lld must be positive", (long long)v);
    q->nfft = v;
  }
  if (q->nfft < 1) return kiln__err(err, KILN_ESHAPE, "DFT of length 0 along axis %d", q->axis);
  q->nout = kiln_attr_int(n, "onesided", 0) ? q->nfft / 2 + 1 : q->nfft;
  q->outer = 1;
  for (int i = 0; i < a; i++) q->outer *= x->dims[i];
  q->inner = 1;
  for (int i = (int)a + 1; i < r - 1; i++) q->inner *= x->dims[i];
  q->comps = (int)x->dims[r - 1];
  q->inverse = kiln_attr_int(n, "inverse", 0) != 0;
  return 0;
}

static int dft_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  dft_geom q;
  int rc = dft_geometry(g, n, &q, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0);
  if (!kiln_dtype_is_float(x->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "input dtype %s", kiln_dtype_name(x->dtype));
  int64_t d[KILN_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  d[q.axis] = q.nout;
  d[x->rank - 1] = 2;
  kiln_set_out(g, n, 0, x->dtype, x->rank, d);
  return 0;
}

/* Adds x[xi] (real, or complex when comps is 2) scaled by w and rotated by
 * ang to (re, im): one term of a DFT's (or STFT's) sum. */
static void dft_term(const void *x, int dt, int64_t xi, int comps, double w, double ang, double *re, double *im) {
  double xr = kiln_load_f(x, dt, xi) * w, xm = comps == 2 ? kiln_load_f(x, dt, xi + 1) * w : 0.0;
  *re += xr * cos(ang) - xm * sin(ang);
  *im += xr * sin(ang) + xm * cos(ang);
}

static void store_complex(void *y, int dt, int64_t yi, double re, double im) {
  kiln_store_f(y, dt, yi, re);
  kiln_store_f(y, dt, yi + 1, im);
}

static int dft_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  dft_geom q;
  int rc = dft_geometry(g, n, &q, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  int64_t m_end = q.len_in < q.nfft ? q.len_in : q.nfft;
  double sgn = q.inverse ? 1.0 : -1.0;
  for (int64_t o = 0; o < q.outer; o++)
    for (int64_t k = 0; k < q.nout; k++)
      for (int64_t c = 0; c < q.inner; c++) {
        double re = 0, im = 0;
        for (int64_t m = 0; m < m_end; m++) {
          double ang = sgn * 2.0 * MI_PI * (double)((k * m) % q.nfft) / (double)q.nfft;
          int64_t xi = ((o * q.len_in + m) * q.inner + c) * q.comps;
          dft_term(in[0], dt, xi, q.comps, 1.0, ang, &re, &im);
        }
        if (q.inverse) { re /= (double)q.nfft; im /= (double)q.nfft; }
        store_complex(out[0], dt, ((o * q.nout + k) * q.inner + c) * 2, re, im);
      }
  return 0;
}

static int dft_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  dft_geom q;
  int rc = dft_geometry(x->g, n, &q, err);
  if (rc) return rc;
  cl_kernel k = mi_kernel(x, kiln_in(x->g, n, 0)->dtype, "dft", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_long outer = q.outer, len_in = q.len_in, inner = q.inner, nfft = q.nfft, nout = q.nout;
  cl_int comps = q.comps, inverse = q.inverse;
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(outer), KARG(len_in), KARG(inner), KARG(nfft), KARG(nout), KARG(comps), KARG(inverse), KEND))
    return err->status;
  size_t gws = (size_t)(q.outer * q.nout * q.inner);
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

/* ======================================================================
 * STFT (opset 17)
 * ==================================================================== */

typedef struct {
  int64_t batch, len, frames, nbins, flen, step;
  int comps;
  bool window;
} stft_geom;

static int stft_geometry(kiln_graph *g, kiln_node *n, stft_geom *q, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *w = kiln_in(g, n, 2);
  if (!x || !kiln_has_in(n, 1)) return kiln__err(err, KILN_EINVAL, "needs signal and frame_step");
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return kiln__err(err, KILN_ESHAPE, "signal '%s' must be [batch, length, 1 or 2]", x->name);
  if (!mi_scalar_int(g, n, 1, &q->step)) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (frame_step)");
  if (q->step < 1) return kiln__err(err, KILN_ESHAPE, "frame_step %lld must be positive", (long long)q->step);
  int64_t fl = -1;
  if (kiln_has_in(n, 3) && !mi_scalar_int(g, n, 3, &fl)) return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data (frame_length)");
  q->window = w != NULL;
  if (w) {
    if (w->rank != 1) return kiln__err(err, KILN_ESHAPE, "window must be 1-D");
    if (fl >= 0 && fl != w->dims[0]) return kiln__err(err, KILN_ESHAPE, "frame_length %lld differs from the window length %lld", (long long)fl, (long long)w->dims[0]);
    fl = w->dims[0];
  }
  if (fl < 1) return kiln__err(err, KILN_ESHAPE, "STFT needs a window or a positive frame_length");
  q->batch = x->dims[0];
  q->len = x->dims[1];
  q->comps = (int)x->dims[2];
  if (fl > q->len) return kiln__err(err, KILN_ESHAPE, "frame_length %lld exceeds the signal length %lld", (long long)fl, (long long)q->len);
  q->flen = fl;
  q->frames = (q->len - fl) / q->step + 1;
  q->nbins = kiln_attr_int(n, "onesided", 1) ? fl / 2 + 1 : fl;
  return 0;
}

static int stft_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  stft_geom q;
  int rc = stft_geometry(g, n, &q, err);
  if (rc) return rc;
  kiln_value *x = kiln_in(g, n, 0);
  if (!kiln_dtype_is_float(x->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "signal dtype %s", kiln_dtype_name(x->dtype));
  int64_t d[4] = {q.batch, q.frames, q.nbins, 2};
  kiln_set_out(g, n, 0, x->dtype, 4, d);
  return 0;
}

static int stft_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  stft_geom q;
  int rc = stft_geometry(g, n, &q, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype, wdt = q.window ? kiln_in(g, n, 2)->dtype : 0;
  for (int64_t b = 0; b < q.batch; b++)
    for (int64_t f = 0; f < q.frames; f++)
      for (int64_t k = 0; k < q.nbins; k++) {
        double re = 0, im = 0;
        for (int64_t m = 0; m < q.flen; m++) {
          double ang = -2.0 * MI_PI * (double)((k * m) % q.flen) / (double)q.flen;
          double wv = q.window ? kiln_load_f(in[2], wdt, m) : 1.0;
          int64_t xi = (b * q.len + f * q.step + m) * q.comps;
          dft_term(in[0], dt, xi, q.comps, wv, ang, &re, &im);
        }
        store_complex(out[0], dt, ((b * q.frames + f) * q.nbins + k) * 2, re, im);
      }
  return 0;
}

static int stft_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  stft_geom q;
  int rc = stft_geometry(x->g, n, &q, err);
  if (rc) return rc;
  cl_kernel k = mi_kernel(x, kiln_in(x->g, n, 0)->dtype, "stft", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), bw = q.window ? kiln_in_buf(x, n, 2) : bx, by = kiln_out_buf(x, n, 0);
  cl_long batch = q.batch, len = q.len, frames = q.frames, nbins = q.nbins, flen = q.flen, step = q.step;
  cl_int comps = q.comps, hw = q.window;
  if (kiln_cl_args(k, err, KARG(bx), KARG(bw), KARG(by), KARG(batch), KARG(len), KARG(comps), KARG(frames), KARG(nbins), KARG(flen),
                   KARG(step), KARG(hw), KEND))
    return err->status;
  size_t gws = (size_t)(q.batch * q.frames * q.nbins);
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int stft_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (!mi_float_type(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "signal dtype %s", kiln_dtype_name(dt));
  if (kiln_has_in(n, 2) && kiln_in(g, n, 2)->dtype != dt) return kiln__err(err, KILN_EUNSUPPORTED, "window dtype differs from the signal's");
  return 0;
}

static int signal_in_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (!mi_float_type(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "input dtype %s", kiln_dtype_name(dt));
  return 0;
}

/* ======================================================================
 * RNN / GRU / LSTM
 * ==================================================================== */

enum { RK_RNN, RK_GRU, RK_LSTM };

enum { ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKYRELU, ACT_THRESHOLDEDRELU, ACT_SCALEDTANH, ACT_HARDSIGMOID,
       ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS, ACT_COUNT };

static const struct {
  const char *name;
  int nalpha, nbeta;      /* parameters consumed from activation_alpha / _beta */
  float alpha, beta;      /* defaults */
} act_table[ACT_COUNT] = {
  [ACT_RELU] = {"Relu", 0, 0, 0, 0},
  [ACT_TANH] = {"Tanh", 0, 0, 0, 0},
  [ACT_SIGMOID] = {"Sigmoid", 0, 0, 0, 0},
  [ACT_AFFINE] = {"Affine", 1, 1, 1.0f, 0.0f},
  [ACT_LEAKYRELU] = {"LeakyRelu", 1, 0, 0.01f, 0},
  [ACT_THRESHOLDEDRELU] = {"ThresholdedRelu", 1, 0, 1.0f, 0},
  [ACT_SCALEDTANH] = {"ScaledTanh", 1, 1, 1.0f, 1.0f},
  [ACT_HARDSIGMOID] = {"HardSigmoid", 1, 1, 0.2f, 0.5f},
  [ACT_ELU] = {"Elu", 1, 0, 1.0f, 0},
  [ACT_SOFTSIGN] = {"Softsign", 0, 0, 0, 0},
  [ACT_SOFTPLUS] = {"Softplus", 0, 0, 0, 0},
};
_Static_assert(sizeof act_table / sizeof act_table[0] == ACT_COUNT, "activation table out of sync");

/* Everything an RNN node's attributes and input shapes decide. */
typedef struct {
  int kind;                 /* RK_* */
  int G;                    /* gates: 1, 3, 4 */
  int64_t S, B, I, H, D;    /* sequence, batch, input, hidden, directions */
  int layout;
  int rev[2];               /* direction d runs in reverse */
  bool has_clip;
  float clip;
  int lbr;                  /* GRU linear_before_reset */
  int input_forget;         /* LSTM */
  float act[2][3][3];       /* [direction][f,g,h][code, alpha, beta] */
} rnn_geom;

static int rnn_kind(const kiln_node *n) {
  if (!strcmp(n->op_type, "LSTM")) return RK_LSTM;
  if (!strcmp(n->op_type, "GRU")) return RK_GRU;
  return RK_RNN;
}

static int rnn_geometry(kiln_graph *g, kiln_node *n, rnn_geom *q, kiln_error *err) {
  memset(q, 0, sizeof *q);
  q->kind = rnn_kind(n);
  q->G = q->kind == RK_LSTM ? 4 : q->kind == RK_GRU ? 3 : 1;
  int nact = q->kind == RK_LSTM ? 3 : q->kind == RK_GRU ? 2 : 1;
  kiln_value *x = kiln_in(g, n, 0), *w = kiln_in(g, n, 1), *r = kiln_in(g, n, 2);
  if (!x || !w || !r) return kiln__err(err, KILN_EINVAL, "needs inputs X, W and R");
  if (x->rank != 3 || w->rank != 3 || r->rank != 3) return kiln__err(err, KILN_ESHAPE, "X, W and R must be 3-D");
  const char *dir = kiln_attr_str(n, "direction", "forward");
  if (!strcmp(dir, "forward")) q->D = 1;
  else if (!strcmp(dir, "reverse")) { q->D = 1; q->rev[0] = 1; }
  else if (!strcmp(dir, "bidirectional")) { q->D = 2; q->rev[1] = 1; }
  else return kiln__err(err, KILN_EUNSUPPORTED, "direction '%s'", dir);
  q->layout = (int)kiln_attr_int(n, "layout", 0);
  if (q->layout != 0 && q->layout != 1) return kiln__err(err, KILN_EUNSUPPORTED, "layout %d", q->layout);
  q->S = q->layout ? x->dims[1] : x->dims[0];
  q->B = q->layout ? x->dims[0] : x->dims[1];
  q->I = x->dims[2];
  q->H = kiln_attr_int(n, "hidden_size", r->dims[2]);
  int64_t GH = q->G * q->H;
  if (w->dims[0] != q->D || w->dims[1] != GH || w->dims[2] != q->I)
    return kiln__err(err, KILN_ESHAPE, "W has shape [%lld,%lld,%lld], expected [%lld,%lld,%lld]", (long long)w->dims[0], (long long)w->dims[1],
                     (long long)w->dims[2], (long long)q->D, (long long)GH, (long long)q->I);
  if (r->dims[0] != q->D || r->dims[1] != GH || r->dims[2] != q->H)
    return kiln__err(err, KILN_ESHAPE, "R has shape [%lld,%lld,%lld], expected [%lld,%lld,%lld]", (long long)r->dims[0], (long long)r->dims[1],
                     (long long)r->dims[2], (long long)q->D, (long long)GH, (long long)q->H);
  kiln_value *b = kiln_in(g, n, 3);
  if (b && (b->rank != 2 || b->dims[0] != q->D || b->dims[1] != 2 * GH)) return kiln__err(err, KILN_ESHAPE, "B must be [%lld, %lld]", (long long)q->D, (long long)(2 * GH));
  kiln_value *sl = kiln_in(g, n, 4);
  if (sl && (sl->rank != 1 || sl->dims[0] != q->B)) return kiln__err(err, KILN_ESHAPE, "sequence_lens must be [%lld]", (long long)q->B);
  for (int i = 5; i <= 6; i++) {
    kiln_value *s = kiln_in(g, n, i);
    if (i == 6 && q->kind != RK_LSTM) break;
    int64_t want[3] = {q->layout ? q->B : q->D, q->layout ? q->D : q->B, q->H};
    if (s && (s->rank != 3 || s->dims[0] != want[0] || s->dims[1] != want[1] || s->dims[2] != want[2]))
      return kiln__err(err, KILN_ESHAPE, "%s must be [%lld, %lld, %lld]", i == 5 ? "initial_h" : "initial_c", (long long)want[0], (long long)want[1],
                       (long long)want[2]);
  }
  kiln_value *p = q->kind == RK_LSTM ? kiln_in(g, n, 7) : NULL;
  if (p && (p->rank != 2 || p->dims[0] != q->D || p->dims[1] != 3 * q->H)) return kiln__err(err, KILN_ESHAPE, "P must be [%lld, %lld]", (long long)q->D, (long long)(3 * q->H));
  const kiln_attr *ca = kiln_attr_find(n, "clip");
  if (ca) { q->has_clip = true; q->clip = kiln_attr_float(n, "clip", 0); }
  q->lbr = (int)kiln_attr_int(n, "linear_before_reset", 0);
  q->input_forget = (int)kiln_attr_int(n, "input_forget", 0);
  /* activations: nact per direction, defaults Sigmoid/Tanh/Tanh (RNN: Tanh) */
  const kiln_attr *aa = kiln_attr_find(n, "activations");
  const float *alphas = NULL, *betas = NULL;
  int nal = kiln_attr_floats(n, "activation_alpha", &alphas), nbe = kiln_attr_floats(n, "activation_beta", &betas);
  int ia = 0, ib = 0;
  for (int d = 0; d < q->D; d++)
    for (int s = 0; s < nact; s++) {
      const char *name;
      if (aa && aa->type == KILN_ATTR_STRINGS && aa->n > 0) {
        int idx = d * nact + s;
        if (aa->n == nact) idx = s; /* one set given for both directions */
        else if (aa->n != nact * q->D) return kiln__err(err, KILN_EINVAL, "activations has %d entries, expected %lld", aa->n, (long long)(nact * q->D));
        name = aa->strings[idx];
      } else name = q->kind == RK_RNN ? "Tanh" : s == 0 ? "Sigmoid" : "Tanh";
      int code = -1;
      for (int c = 0; c < ACT_COUNT; c++)
        if (!strcasecmp(name, act_table[c].name)) code = c;
      if (code < 0) return kiln__err(err, KILN_EUNSUPPORTED, "activation '%s'", name);
      float al = act_table[code].alpha, be = act_table[code].beta;
      if (act_table[code].nalpha && alphas && ia < nal) al = alphas[ia++];
      if (act_table[code].nbeta && betas && ib < nbe) be = betas[ib++];
      q->act[d][s][0] = (float)code;
      q->act[d][s][1] = al;
      q->act[d][s][2] = be;
    }
  return 0;
}

static int rnn_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  rnn_geom q;
  int rc = rnn_geometry(g, n, &q, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  if (!kiln_dtype_is_float(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "X dtype %s", kiln_dtype_name(dt));
  int64_t y[4], s[3];
  if (q.layout) { y[0] = q.B; y[1] = q.S; y[2] = q.D; y[3] = q.H; s[0] = q.B; s[1] = q.D; s[2] = q.H; }
  else { y[0] = q.S; y[1] = q.D; y[2] = q.B; y[3] = q.H; s[0] = q.D; s[1] = q.B; s[2] = q.H; }
  kiln_set_out(g, n, 0, dt, 4, y);
  kiln_set_out(g, n, 1, dt, 3, s);
  if (q.kind == RK_LSTM) kiln_set_out(g, n, 2, dt, 3, s);
  return 0;
}

static double ref_act(const float *a, double x) {
  double al = a[1], be = a[2];
  switch ((int)a[0]) {
  case ACT_RELU: return x > 0 ? x : 0;
  case ACT_TANH: return tanh(x);
  case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case ACT_AFFINE: return al * x + be;
  case ACT_LEAKYRELU: return x >= 0 ? x : al * x;
  case ACT_THRESHOLDEDRELU: return x > al ? x : 0;
  case ACT_SCALEDTANH: return al * tanh(be * x);
  case ACT_HARDSIGMOID: { double v = al * x + be; return v < 0 ? 0 : v > 1 ? 1 : v; }
  case ACT_ELU: return x >= 0 ? x : al * (exp(x) - 1.0);
  case ACT_SOFTSIGN: return x / (1.0 + fabs(x));
  case ACT_SOFTPLUS: return log(1.0 + exp(x));
  }
  return x;
}

static double ref_clip(const rnn_geom *q, double x) {
  if (!q->has_clip) return x;
  return x < -q->clip ? -q->clip : x > q->clip ? q->clip : x;
}

/* CPU reference of RNN / GRU / LSTM: per direction and batch entry, a plain
 * loop over the time steps in double precision. */
static int rnn_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  rnn_geom q;
  int rc = rnn_geometry(g, n, &q, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  int64_t S = q.S, B = q.B, I = q.I, H = q.H, D = q.D, G = q.G, GH = G * H;
  int wdt = kiln_in(g, n, 1)->dtype, rdt = kiln_in(g, n, 2)->dtype;
  int bdt = in[3] ? kiln_in(g, n, 3)->dtype : 0, sdt = in[4] ? kiln_in(g, n, 4)->dtype : 0;
  int hdt = in[5] ? kiln_in(g, n, 5)->dtype : 0;
  int cdt = (q.kind == RK_LSTM && n->nin > 6 && in[6]) ? kiln_in(g, n, 6)->dtype : 0;
  int pdt = (q.kind == RK_LSTM && n->nin > 7 && in[7]) ? kiln_in(g, n, 7)->dtype : 0;
  double *h = calloc((size_t)H + 1, sizeof(double)), *c = calloc((size_t)H + 1, sizeof(double));
  double *hn = calloc((size_t)H + 1, sizeof(double)), *gate = calloc((size_t)GH + 1, sizeof(double));
  double *xr = calloc((size_t)I + 1, sizeof(double)), *tmp = calloc((size_t)H + 1, sizeof(double));
  if (!h || !c || !hn || !gate || !xr || !tmp) {
    free(h); free(c); free(hn); free(gate); free(xr); free(tmp);
    return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
#define XI(t, b, i) ((q.layout ? (b) * S + (t) : (t) * B + (b)) * I + (i))
#define YI(t, d, b, j) ((q.layout ? ((b) * S + (t)) * D + (d) : ((t) * D + (d)) * B + (b)) * H + (j))
#define SI(d, b, j) ((q.layout ? (b) * D + (d) : (d) * B + (b)) * H + (j))
#define WV(d, row, i) kiln_load_f(in[1], wdt, ((d) * GH + (row)) * I + (i))
#define RV(d, row, k) kiln_load_f(in[2], rdt, ((d) * GH + (row)) * H + (k))
#define WB(d, row) (in[3] ? kiln_load_f(in[3], bdt, (d) * 2 * GH + (row)) : 0.0)
#define RB(d, row) (in[3] ? kiln_load_f(in[3], bdt, (d) * 2 * GH + GH + (row)) : 0.0)
  if (out[0])
    for (int64_t k = 0; k < S * D * B * H; k++) kiln_store_f(out[0], dt, k, 0.0);
  for (int64_t d = 0; d < D; d++) {
    const float *af = q.act[d][0], *ag = q.act[d][1], *ah = q.act[d][2];
    for (int64_t b = 0; b < B; b++) {
      int64_t len = in[4] ? kiln_load_i(in[4], sdt, b) : S;
      if (len > S) len = S;
      for (int64_t j = 0; j < H; j++) {
        h[j] = in[5] ? kiln_load_f(in[5], hdt, SI(d, b, j)) : 0.0;
        c[j] = cdt ? kiln_load_f(in[6], cdt, SI(d, b, j)) : 0.0;
      }
      for (int64_t s = 0; s < len; s++) {
        int64_t t = q.rev[d] ? len - 1 - s : s;
        for (int64_t i = 0; i < I; i++) xr[i] = kiln_load_f(in[0], dt, XI(t, b, i));
        /* gate[row] = W x + Wb (+ Rb + R h except for GRU's h gate) */
        for (int64_t row = 0; row < GH; row++) {
          double a = WB(d, row);
          for (int64_t i = 0; i < I; i++) a += WV(d, row, i) * xr[i];
          gate[row] = a;
        }
        if (q.kind == RK_RNN) {
          for (int64_t j = 0; j < H; j++) {
            double a = gate[j] + RB(d, j);
            for (int64_t k = 0; k < H; k++) a += RV(d, j, k) * h[k];
            hn[j] = ref_act(af, ref_clip(&q, a));
          }
        } else if (q.kind == RK_LSTM) {
          for (int64_t j = 0; j < H; j++) {
            double pre[4];
            for (int gi = 0; gi < 4; gi++) {
              double a = gate[gi * H + j] + RB(d, gi * H + j);
              for (int64_t k = 0; k < H; k++) a += RV(d, gi * H + j, k) * h[k];
              pre[gi] = a;
            }
            double pi = pdt ? kiln_load_f(in[7], pdt, d * 3 * H + j) : 0.0;
            double po = pdt ? kiln_load_f(in[7], pdt, d * 3 * H + H + j) : 0.0;
            double pf = pdt ? kiln_load_f(in[7], pdt, d * 3 * H + 2 * H + j) : 0.0;
            double ig = ref_act(af, ref_clip(&q, pre[0] + pi * c[j]));
            double fg = q.input_forget ? 1.0 - ig : ref_act(af, ref_clip(&q, pre[2] + pf * c[j]));
            double cg = ref_act(ag, ref_clip(&q, pre[3]));
            double cn = fg * c[j] + ig * cg;
            double og = ref_act(af, ref_clip(&q, pre[1] + po * cn));
            tmp[j] = cn;
            hn[j] = og * ref_act(ah, cn);
          }
          memcpy(c, tmp, sizeof(double) * (size_t)H);
        } else { /* GRU: z, r, h */
          double *z = tmp;
          for (int64_t j = 0; j < H; j++) {
            double az = gate[j] + RB(d, j), ar = gate[H + j] + RB(d, H + j), rh = RB(d, 2 * H + j);
            for (int64_t k = 0; k < H; k++) {
              az += RV(d, j, k) * h[k];
              ar += RV(d, H + j, k) * h[k];
            }
            z[j] = ref_act(af, ref_clip(&q, az));
            double r = ref_act(af, ref_clip(&q, ar));
            if (q.lbr) {
              for (int64_t k = 0; k < H; k++) rh += RV(d, 2 * H + j, k) * h[k];
              hn[j] = gate[2 * H + j] + r * rh; /* pre-activation, finished below */
            } else hn[j] = r; /* r, finished below */
          }
          if (!q.lbr) {
            /* hn holds r: h~_j = g(Wh x + Wbh + Rh (r (.) h) + Rbh) */
            double *rhv = gate + H; /* reuse: z/r rows of gate are no longer needed */
            for (int64_t k = 0; k < H; k++) rhv[k] = hn[k] * h[k];
            for (int64_t j = 0; j < H; j++) {
              double a = gate[2 * H + j] + RB(d, 2 * H + j);
              for (int64_t k = 0; k < H; k++) a += RV(d, 2 * H + j, k) * rhv[k];
              hn[j] = a;
            }
          }
          for (int64_t j = 0; j < H; j++) hn[j] = (1.0 - z[j]) * ref_act(ag, ref_clip(&q, hn[j])) + z[j] * h[j];
        }
        memcpy(h, hn, sizeof(double) * (size_t)H);
        if (out[0])
          for (int64_t j = 0; j < H; j++) kiln_store_f(out[0], dt, YI(t, d, b, j), h[j]);
      }
      for (int64_t j = 0; j < H; j++) {
        if (out[1]) kiln_store_f(out[1], dt, SI(d, b, j), h[j]);
        if (q.kind == RK_LSTM && n->nout > 2 && out[2]) kiln_store_f(out[2], dt, SI(d, b, j), c[j]);
      }
    }
  }
#undef XI
#undef YI
#undef SI
#undef WV
#undef RV
#undef WB
#undef RB
  free(h); free(c); free(hn); free(gate); free(xr); free(tmp);
  return 0;
}

/* meta indices shared with kernels/rnn.cl */
enum { M_S, M_B, M_I, M_H, M_D, M_LAYOUT, M_REV, M_HASB, M_HASSEQ, M_HASP, M_IFORGET, M_HASY, M_G, M_HASCLIP, M_HASIH, M_HASIC, M_COUNT };

static int rnn_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  rnn_geom q;
  int rc = rnn_geometry(g, n, &q, err);
  if (rc) return rc;
  bool lstm = q.kind == RK_LSTM;
  cl_long meta[M_COUNT] = {0};
  meta[M_S] = q.S; meta[M_B] = q.B; meta[M_I] = q.I; meta[M_H] = q.H; meta[M_D] = q.D; meta[M_LAYOUT] = q.layout;
  meta[M_REV] = q.rev[0] | (q.rev[1] << 1);
  meta[M_HASB] = kiln_has_in(n, 3); meta[M_HASSEQ] = kiln_has_in(n, 4);
  meta[M_HASP] = lstm && kiln_has_in(n, 7); meta[M_IFORGET] = lstm && q.input_forget;
  meta[M_HASY] = kiln_has_out(n, 0); meta[M_G] = q.G; meta[M_HASCLIP] = q.has_clip;
  meta[M_HASIH] = kiln_has_in(n, 5); meta[M_HASIC] = lstm && kiln_has_in(n, 6);
  cl_mem bm = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!bm) return err->status;
  cl_mem bact = kiln_exec_param(x, n, 1, q.act, sizeof q.act, err);
  if (!bact) return err->status;
  int dt = kiln_in(g, n, 0)->dtype;
  size_t es = kiln_dtype_size(dt);
  size_t state = (size_t)(q.D * q.B * q.H);
  cl_mem bxw = kiln_exec_scratch(x, n, 0, (size_t)(q.D * q.S * q.B * q.G * q.H) * es, err);
  if (!bxw) return err->status;
  cl_mem bh = kiln_exec_scratch(x, n, 1, 2 * state * es, err);
  if (!bh) return err->status;
  cl_mem bc = kiln_exec_scratch(x, n, 2, 2 * state * es, err); /* LSTM: cell state; GRU: z and r(.)h */
  if (!bc) return err->status;
  char opts[320];
  const char *o = mi_opts(x->d, dt, opts, sizeof opts);
  cl_kernel kxw = kiln_cl_kernel(x->d, "rnn.cl", o, "rnn_xw", err);
  cl_kernel kinit = kxw ? kiln_cl_kernel(x->d, "rnn.cl", o, "rnn_init", err) : NULL;
  cl_kernel kfin = kinit ? kiln_cl_kernel(x->d, "rnn.cl", o, "rnn_final", err) : NULL;
  if (!kfin) return err->status;
  cl_kernel ks = NULL, ks2 = NULL;
  if (q.kind == RK_RNN) ks = kiln_cl_kernel(x->d, "rnn.cl", o, "rnn_step", err);
  else if (lstm) ks = kiln_cl_kernel(x->d, "rnn.cl", o, "lstm_step", err);
  else if (q.lbr) ks = kiln_cl_kernel(x->d, "rnn.cl", o, "gru_step_lbr", err);
  else {
    ks = kiln_cl_kernel(x->d, "rnn.cl", o, "gru_step_a", err);
    ks2 = ks ? kiln_cl_kernel(x->d, "rnn.cl", o, "gru_step_b", err) : NULL;
    if (!ks2) return err->status;
  }
  if (!ks) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), bw = kiln_in_buf(x, n, 1), br = kiln_in_buf(x, n, 2);
  cl_mem bb = kiln_has_in(n, 3) ? kiln_in_buf(x, n, 3) : bx;
  cl_mem bseq = kiln_has_in(n, 4) ? kiln_in_buf(x, n, 4) : bm;
  cl_mem bih = kiln_has_in(n, 5) ? kiln_in_buf(x, n, 5) : bx;
  cl_mem bic = lstm && kiln_has_in(n, 6) ? kiln_in_buf(x, n, 6) : bx;
  cl_mem bp = lstm && kiln_has_in(n, 7) ? kiln_in_buf(x, n, 7) : bx;
  cl_mem by = kiln_has_out(n, 0) ? kiln_out_buf(x, n, 0) : bxw;
  cl_mem byh = kiln_has_out(n, 1) ? kiln_out_buf(x, n, 1) : bxw;
  cl_mem byc = lstm && kiln_has_out(n, 2) ? kiln_out_buf(x, n, 2) : bxw;
  cl_float clip = q.clip;
  size_t sgws[3] = {(size_t)q.H, (size_t)q.B, (size_t)q.D};
  rc = 0;
  {
    size_t gws[3] = {(size_t)(q.G * q.H), (size_t)(q.S * q.B), (size_t)q.D};
    if (kiln_cl_args(kxw, err, KARG(bx), KARG(bw), KARG(bb), KARG(bxw), KARG(bm), KEND) || kiln_exec_launch(x, kxw, 3, gws, NULL, err)) rc = err->status;
  }
  if (!rc && (kiln_cl_args(kinit, err, KARG(bih), KARG(bic), KARG(bh), KARG(bc), KARG(bm), KEND) || kiln_exec_launch(x, kinit, 3, sgws, NULL, err)))
    rc = err->status;
  for (cl_long step = 0; !rc && step < q.S; step++) {
    cl_long hin = (step & 1) * (cl_long)state, hout = ((step + 1) & 1) * (cl_long)state;
    if (q.kind == RK_RNN || (q.kind == RK_GRU && q.lbr)) {
      if (kiln_cl_args(ks, err, KARG(bxw), KARG(br), KARG(bb), KARG(bseq), KARG(bh), KARG(hin), KARG(hout), KARG(by), KARG(bact), KARG(bm), KARG(step),
                       KARG(clip), KEND) ||
          kiln_exec_launch(x, ks, 3, sgws, NULL, err))
        rc = err->status;
    } else if (lstm) {
      if (kiln_cl_args(ks, err, KARG(bxw), KARG(br), KARG(bb), KARG(bseq), KARG(bp), KARG(bh), KARG(hin), KARG(hout), KARG(bc), KARG(by), KARG(bact), KARG(bm),
                       KARG(step), KARG(clip), KEND) ||
          kiln_exec_launch(x, ks, 3, sgws, NULL, err))
        rc = err->status;
    } else if (kiln_cl_args(ks, err, KARG(bxw), KARG(br), KARG(bb), KARG(bseq), KARG(bh), KARG(hin), KARG(hout), KARG(bc), KARG(bact), KARG(bm), KARG(step),
                            KARG(clip), KEND) ||
               kiln_exec_launch(x, ks, 3, sgws, NULL, err) ||
               kiln_cl_args(ks2, err, KARG(bxw), KARG(br), KARG(bb), KARG(bseq), KARG(bh), KARG(hin), KARG(hout), KARG(bc), KARG(by), KARG(bact), KARG(bm),
                            KARG(step), KARG(clip), KEND) ||
               kiln_exec_launch(x, ks2, 3, sgws, NULL, err))
      rc = err->status;
  }
  if (!rc) {
    cl_long hfin = (q.S & 1) * (cl_long)state;
    cl_int has_yh = kiln_has_out(n, 1), has_yc = lstm && kiln_has_out(n, 2);
    if (kiln_cl_args(kfin, err, KARG(bh), KARG(hfin), KARG(bc), KARG(byh), KARG(byc), KARG(has_yh), KARG(has_yc), KARG(bm), KEND) ||
        kiln_exec_launch(x, kfin, 3, sgws, NULL, err))
      rc = err->status;
  }
  return rc;
}

static int rnn_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (!mi_float_type(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "X dtype %s", kiln_dtype_name(dt));
  for (int i = 1; i < n->nin && i < 8; i++)
    if (i != 4 && kiln_has_in(n, i) && kiln_in(g, n, i)->dtype != dt) return kiln__err(err, KILN_EUNSUPPORTED, "input %d has dtype %s, X has %s", i, kiln_dtype_name(kiln_in(g, n, i)->dtype), kiln_dtype_name(dt));
  if (kiln_has_in(n, 4) && kiln_in(g, n, 4)->dtype != KILN_DT_INT32) return kiln__err(err, KILN_EUNSUPPORTED, "sequence_lens dtype %s", kiln_dtype_name(kiln_in(g, n, 4)->dtype));
  return 0;
}

const kiln_op_def kiln_ops_misc[] = {
  {.name = "RNN", .infer = rnn_infer, .ref = rnn_ref, .dev = rnn_dev, .dev_check = rnn_check},
  {.name = "GRU", .infer = rnn_infer, .ref = rnn_ref, .dev = rnn_dev, .dev_check = rnn_check},
  {.name = "LSTM", .infer = rnn_infer, .ref = rnn_ref, .dev = rnn_dev, .dev_check = rnn_check},
  {.name = "HannWindow", .infer = window_infer, .ref = window_ref, .dev = window_dev, .dev_check = float_out_check},
  {.name = "HammingWindow", .infer = window_infer, .ref = window_ref, .dev = window_dev, .dev_check = float_out_check},
  {.name = "BlackmanWindow", .infer = window_infer, .ref = window_ref, .dev = window_dev, .dev_check = float_out_check},
  {.name = "MelWeightMatrix", .infer = mel_infer, .ref = mel_ref, .dev = mel_dev, .dev_check = mel_check},
  {.name = "DFT", .infer = dft_infer, .ref = dft_ref, .dev = dft_dev, .dev_check = signal_in_check},
  {.name = "STFT", .infer = stft_infer, .ref = stft_ref, .dev = stft_dev, .dev_check = stft_check},
  {NULL},
};
