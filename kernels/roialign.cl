/* roialign.cl: RoiAlign, one work-item per output element (roi, channel,
 * bin row, bin column): the average (or maximum) of bilinear samples on a
 * grid in the bin, as ONNX Runtime computes them. T is the element type. */
#pragma OPENCL FP_CONTRACT OFF
#if T_IS_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

__kernel void roialign(__global const T *x, __global const T *rois, __global const long *bidx, __global T *y, long C, long H, long W, long PH, long PW,
                       float scale, int sampling, int half_pixel, int is_max, long total) {
  long gid = get_global_id(0);
  if (gid >= total) return;
  long pw = gid % PW, ph = (gid / PW) % PH, c = (gid / (PW * PH)) % C, r = gid / (PW * PH * C);
  __global const T *roi = rois + r * 4;
  T off = half_pixel ? (T)0.5 : (T)0;
  T sw = roi[0] * (T)scale - off, sh = roi[1] * (T)scale - off, ew = roi[2] * (T)scale - off, eh = roi[3] * (T)scale - off;
  T rw = ew - sw, rh = eh - sh;
  if (!half_pixel) { rw = fmax(rw, (T)1); rh = fmax(rh, (T)1); }
  T bh = rh / (T)PH, bw = rw / (T)PW;
  long gh = sampling > 0 ? sampling : (long)ceil(rh / (T)PH), gw = sampling > 0 ? sampling : (long)ceil(rw / (T)PW);
  long cnt = gh * gw > 1 ? gh * gw : 1;
  __global const T *img = x + (bidx[r] * C + c) * H * W;
  T acc = 0;
  int first = 1;
  for (long iy = 0; iy < gh; iy++) {
    T yy = sh + (T)ph * bh + ((T)iy + (T)0.5) * bh / (T)gh;
    for (long ix = 0; ix < gw; ix++) {
      T xx = sw + (T)pw * bw + ((T)ix + (T)0.5) * bw / (T)gw;
      T v = 0;
      if (!(yy < (T)-1 || yy > (T)H || xx < (T)-1 || xx > (T)W)) {
        T yc = yy <= 0 ? (T)0 : yy, xc = xx <= 0 ? (T)0 : xx;
        long yl = (long)yc, xl = (long)xc, yh, xh;
        if (yl >= H - 1) { yh = yl = H - 1; yc = (T)yl; } else yh = yl + 1;
        if (xl >= W - 1) { xh = xl = W - 1; xc = (T)xl; } else xh = xl + 1;
        T ly = yc - (T)yl, lx = xc - (T)xl, hy = (T)1 - ly, hx = (T)1 - lx;
        T a = hy * hx * img[yl * W + xl], b = hy * lx * img[yl * W + xh], cc = ly * hx * img[yh * W + xl], d = ly * lx * img[yh * W + xh];
        v = is_max ? fmax(fmax(a, b), fmax(cc, d)) : a + b + cc + d;
      }
      if (is_max) { acc = first ? v : fmax(acc, v); first = 0; }
      else acc += v;
    }
  }
  y[gid] = is_max ? acc : acc / (T)cnt;
}
