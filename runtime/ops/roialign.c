/* ops/roialign.c: RoiAlign (opset 10 and 16) on the device
 * (kernels/roialign.cl) and its CPU reference, following ONNX Runtime's
 * arithmetic: bins of the region, a grid of bilinear samples per bin
 * (sampling_ratio, else ceil of the bin size), averaged or maximized. */
#include "kiln_internal.h"
#include <math.h>

static int half_pixel(const kiln_node *n) {
  const char *m = kiln_attr_str(n, "coordinate_transformation_mode", n->opset >= 16 ? "half_pixel" : "output_half_pixel");
  return !strcmp(m, "half_pixel");
}

static int roi_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *r = kiln_in(g, n, 1), *b = kiln_in(g, n, 2);
  if (!r || !b || x->rank != 4 || r->rank != 2 || r->dims[1] != 4 || b->rank != 1 || b->dims[0] != r->dims[0])
    return kiln__err(err, KILN_ESHAPE, "X must be [N,C,H,W], rois [R,4] and batch_indices [R]");
  const char *mode = kiln_attr_str(n, "mode", "avg");
  if (strcmp(mode, "avg") && strcmp(mode, "max")) return kiln__err(err, KILN_EINVAL, "mode '%s'", mode);
  int64_t d[4] = {r->dims[0], x->dims[1], kiln_attr_int(n, "output_height", 1), kiln_attr_int(n, "output_width", 1)};
  if (d[2] <= 0 || d[3] <= 0) return kiln__err(err, KILN_EINVAL, "output size");
  kiln_set_out(g, n, 0, x->dtype, 4, d);
  return 0;
}

static int roi_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if ((dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) || kiln_in(g, n, 1)->dtype != dt || kiln_in(g, n, 2)->dtype != KILN_DT_INT64)
    return kiln__err(err, KILN_EUNSUPPORTED, "types %s / %s", kiln_dtype_name(dt), kiln_dtype_name(kiln_in(g, n, 2)->dtype));
  return 0;
}

/* One output element, in double or float as the kernel (real = the type). */
#define ROI_BODY(real)                                                                                                                                 \
  real off = hp ? (real)0.5 : (real)0;                                                                                                                 \
  real sw = roi[0] * (real)scale - off, sh = roi[1] * (real)scale - off, ew = roi[2] * (real)scale - off, eh = roi[3] * (real)scale - off;             \
  real rw = ew - sw, rh = eh - sh;                                                                                                                     \
  if (!hp) { rw = rw > 1 ? rw : 1; rh = rh > 1 ? rh : 1; }                                                                                             \
  real bh = rh / (real)PH, bw = rw / (real)PW;                                                                                                         \
  int64_t gh = sampling > 0 ? sampling : (int64_t)ceil(rh / (real)PH), gw = sampling > 0 ? sampling : (int64_t)ceil(rw / (real)PW);                    \
  int64_t cnt = gh * gw > 1 ? gh * gw : 1;                                                                                                             \
  real acc = 0;                                                                                                                                        \
  int first = 1;                                                                                                                                       \
  for (int64_t iy = 0; iy < gh; iy++) {                                                                                                                \
    real yy = sh + (real)ph * bh + ((real)iy + (real)0.5) * bh / (real)gh;                                                                             \
    for (int64_t ix = 0; ix < gw; ix++) {                                                                                                              \
      real xx = sw + (real)pw * bw + ((real)ix + (real)0.5) * bw / (real)gw;                                                                           \
      real v = 0;                                                                                                                                      \
      if (!(yy < (real)-1 || yy > (real)H || xx < (real)-1 || xx > (real)W)) {                                                                         \
        real yc = yy <= 0 ? (real)0 : yy, xc = xx <= 0 ? (real)0 : xx;                                                                                 \
        int64_t yl = (int64_t)yc, xl = (int64_t)xc, yh, xh;                                                                                            \
        if (yl >= H - 1) { yh = yl = H - 1; yc = (real)yl; } else yh = yl + 1;                                                                         \
        if (xl >= W - 1) { xh = xl = W - 1; xc = (real)xl; } else xh = xl + 1;                                                                         \
        real ly = yc - (real)yl, lx = xc - (real)xl, hy = (real)1 - ly, hx = (real)1 - lx;                                                             \
        real a = hy * hx * img[yl * W + xl], b = hy * lx * img[yl * W + xh], c2 = ly * hx * img[yh * W + xl], d = ly * lx * img[yh * W + xh];          \
        v = is_max ? fmax(fmax(a, b), fmax(c2, d)) : a + b + c2 + d;                                                                                   \
      }                                                                                                                                                \
      if (is_max) { acc = first ? v : (real)fmax(acc, v); first = 0; }                                                                                 \
      else acc += v;                                                                                                                                   \
    }                                                                                                                                                  \
  }                                                                                                                                                    \
  out = is_max ? acc : acc / (real)cnt;

static int roi_ref(kiln_graph *g, kiln_node *n, void **in, void **outp, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *yv = kiln_out(g, n, 0);
  int64_t C = x->dims[1], H = x->dims[2], W = x->dims[3], PH = yv->dims[2], PW = yv->dims[3], R = yv->dims[0], N = x->dims[0];
  float scale = kiln_attr_float(n, "spatial_scale", 1.0f);
  int sampling = (int)kiln_attr_int(n, "sampling_ratio", 0), hp = half_pixel(n), is_max = !strcmp(kiln_attr_str(n, "mode", "avg"), "max");
  const int64_t *bi = in[2];
  for (int64_t r = 0; r < R; r++) {
    if (bi[r] < 0 || bi[r] >= N) return kiln__err(err, KILN_EINVAL, "batch index %lld out of range", (long long)bi[r]);
    for (int64_t c = 0; c < C; c++)
      for (int64_t ph = 0; ph < PH; ph++)
        for (int64_t pw = 0; pw < PW; pw++) {
          int64_t o = ((r * C + c) * PH + ph) * PW + pw;
          if (x->dtype == KILN_DT_DOUBLE) {
            const double *roi = (const double *)in[1] + r * 4, *img = (const double *)in[0] + (bi[r] * C + c) * H * W;
            double out;
            ROI_BODY(double)
            ((double *)outp[0])[o] = out;
          } else {
            const float *roi = (const float *)in[1] + r * 4, *img = (const float *)in[0] + (bi[r] * C + c) * H * W;
            float out;
            ROI_BODY(float)
            ((float *)outp[0])[o] = out;
          }
        }
  }
  return 0;
}

static int roi_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *xv = kiln_in(x->g, n, 0), *yv = kiln_out(x->g, n, 0);
  char opts[256];
  cl_kernel k = kiln_cl_kernel(x->d, "roialign.cl", kiln_cl_type_opts(xv->dtype, opts, sizeof opts), "roialign", err);
  if (!k) return err->status;
  cl_long C = xv->dims[1], H = xv->dims[2], W = xv->dims[3], PH = yv->dims[2], PW = yv->dims[3], total = kiln_value_numel(yv);
  cl_float scale = kiln_attr_float(n, "spatial_scale", 1.0f);
  cl_int sampling = (cl_int)kiln_attr_int(n, "sampling_ratio", 0), hp = half_pixel(n), is_max = !strcmp(kiln_attr_str(n, "mode", "avg"), "max");
  cl_mem bx = kiln_in_buf(x, n, 0), br = kiln_in_buf(x, n, 1), bb = kiln_in_buf(x, n, 2), by = kiln_out_buf(x, n, 0);
  if (kiln_cl_args(k, err, KARG(bx), KARG(br), KARG(bb), KARG(by), KARG(C), KARG(H), KARG(W), KARG(PH), KARG(PW), KARG(scale), KARG(sampling), KARG(hp), KARG(is_max),
                   KARG(total), KEND))
    return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

const kiln_op_def kiln_ops_roialign[] = {
  {.name = "RoiAlign", .infer = roi_infer, .ref = roi_ref, .dev = roi_dev, .dev_check = roi_check},
  {NULL},
};
