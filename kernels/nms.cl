/* nms.cl: NonMaxSuppression in four steps.
 *   nms_iou:     sup[b][i][j] = 1 when boxes i and j of batch b overlap by
 *                more than the IoU threshold (the IoU matrix, in parallel);
 *   nms_rank:    per (batch, class), the candidates (score above the score
 *                threshold) ordered by descending score, ties by index;
 *   nms_select:  per (batch, class), the greedy pass over that order,
 *                keeping a box unless a kept one suppresses it, up to the
 *                maximum per class (one work-item each: the pass is serial);
 *   nms_compact: the kept (batch, class, box) rows in batch, class, pick
 *                order into the output, and their total count.
 * The box arithmetic is the CPU reference's, in float without contraction,
 * so that both decide every comparison alike. */
#pragma OPENCL FP_CONTRACT OFF

/* corners of box p (center_point_box: [xc, yc, w, h], else two corners in any order) */
static void corners(__global const float *p, int center, float *x0, float *y0, float *x1, float *y1) {
  if (center) {
    float hw = p[2] / 2.0f, hh = p[3] / 2.0f;
    *x0 = p[0] - hw; *x1 = p[0] + hw; *y0 = p[1] - hh; *y1 = p[1] + hh;
  } else {
    *y0 = fmin(p[0], p[2]); *y1 = fmax(p[0], p[2]); *x0 = fmin(p[1], p[3]); *x1 = fmax(p[1], p[3]);
  }
}

__kernel void nms_iou(__global const float *boxes, __global uchar *sup, long nbox, int center, __global const float *thr, int has_thr) {
  long j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
  if (i >= nbox || j >= nbox) return;
  float t = has_thr ? thr[0] : 0.0f;
  float ax0, ay0, ax1, ay1, bx0, by0, bx1, by1;
  corners(boxes + (b * nbox + i) * 4, center, &ax0, &ay0, &ax1, &ay1);
  corners(boxes + (b * nbox + j) * 4, center, &bx0, &by0, &bx1, &by1);
  float iw = fmax(fmin(ax1, bx1) - fmax(ax0, bx0), 0.0f), ih = fmax(fmin(ay1, by1) - fmax(ay0, by0), 0.0f);
  float inter = iw * ih;
  float aa = (ax1 - ax0) * (ay1 - ay0), ab = (bx1 - bx0) * (by1 - by0);
  float uni = aa + ab - inter;
  uchar s = 0;
  if (inter > 0.0f && aa > 0.0f && ab > 0.0f && uni > 0.0f) s = inter / uni > t;
  sup[(b * nbox + i) * nbox + j] = s;
}

static int candidate(float s, __global const float *sth, int has_sth) { return !has_sth || s > sth[0]; }

/* order[bc][r] = the candidate of rank r; one work-item per (bc, box) */
__kernel void nms_rank(__global const float *scores, __global int *order, long nbox, __global const float *sth, int has_sth) {
  long i = get_global_id(0), bc = get_global_id(1);
  if (i >= nbox) return;
  __global const float *s = scores + bc * nbox;
  float si = s[i];
  if (!candidate(si, sth, has_sth)) return;
  int r = 0;
  for (long j = 0; j < nbox; j++) {
    float sj = s[j];
    if (candidate(sj, sth, has_sth) && (sj > si || (sj == si && j < i))) r++;
  }
  order[bc * nbox + r] = (int)i;
}

/* keep[bc][0..count[bc]) = kept boxes in pick order */
__kernel void nms_select(__global const float *scores, __global const int *order, __global const uchar *sup, __global int *keep, __global int *count,
                         long nbox, long ncls, long maxo_plan, __global const long *maxo, int has_maxo, __global const float *sth, int has_sth) {
  long bc = get_global_id(0);
  long b = bc / ncls;
  long lim = has_maxo ? maxo[0] : maxo_plan;
  if (lim > nbox) lim = nbox;
  __global const float *s = scores + bc * nbox;
  int ncand = 0;
  for (long j = 0; j < nbox; j++) ncand += candidate(s[j], sth, has_sth);
  __global int *kp = keep + bc * nbox;
  int nk = 0;
  for (int r = 0; r < ncand && nk < lim; r++) {
    int i = order[bc * nbox + r];
    int ok = 1;
    for (int q = 0; q < nk && ok; q++) ok = !sup[(b * nbox + kp[q]) * nbox + i];
    if (ok) kp[nk++] = i;
  }
  count[bc] = nk;
}

/* one work-item per (bc); total[0] = rows written */
__kernel void nms_compact(__global const int *keep, __global const int *count, __global long *out, __global long *total, long nbox, long ncls, long nbc) {
  long bc = get_global_id(0);
  if (bc >= nbc) return;
  long off = 0;
  for (long q = 0; q < bc; q++) off += count[q];
  for (int k = 0; k < count[bc]; k++) {
    out[(off + k) * 3 + 0] = bc / ncls;
    out[(off + k) * 3 + 1] = bc % ncls;
    out[(off + k) * 3 + 2] = keep[bc * nbox + k];
  }
  if (bc == nbc - 1) total[0] = off + count[bc];
}
