/* kernels/norm.c: the "norm" kernel family beside its OpenCL source
 * (kernels/norm.cl): norm_rows, one row normalization (LayerNormalization,
 * InstanceNormalization, GroupNormalization, MeanVarianceNormalization, with
 * a fused Relu or SiLU) per work-group or work-item. Parameters: NORM_WG
 * work-items per row (one work-group per row; 1: a work-item per row),
 * NORM_VW the vector width of the loads along a contiguous row, NORM_BLK the
 * solver:
 *   cyclic  0, the row's elements dealt to the work-items in turn;
 *   block   1, a contiguous block of the row per work-item.
 * The op (runtime/ops/gemm_norm.c) describes the rows (dims ND_*) and
 * launches norm_rows with the parameters as -D. */
#include "family.h"

static const kiln_kparam norm_params[NP_COUNT] = {
  [NP_WG] = {"NORM_WG", 6, {1, 16, 32, 64, 128, 256}, KILN_NORM_WG}, /* work-items per row (one work-group per row) */
  [NP_VW] = {"NORM_VW", 5, {1, 2, 4, 8, 16}, 1},                          /* vector width of the loads along a contiguous row */
  [NP_BLK] = {"NORM_BLK", 2, {0, 1}, 0},                              /* 1: a contiguous block of the row per work-item */
};
#define NORM_ITEM_MIN_ROWS 64 /* rows from which the default is a work-item per row */

static int norm_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int wg = p[NP_WG], vw = p[NP_VW];
  const int64_t L = t->dims[ND_L];
  if (dev && dev->max_work_group && (size_t)wg > dev->max_work_group) return 1;
  if (p[NP_BLK] && wg == 1) return 1;                            /* the same as cyclic */
  if (vw > 1 && (!t->dims[ND_CONTIG] || L < vw)) return 1;
  /* blocks with vectors: an item past the row's end (l * chunk >= L) still
   * takes the scalar tail [L / vw * vw, L) (norm.cl's t0 = v1 * NORM_VW), so
   * with L % vw != 0 the tail is counted once per such item: wrong means and
   * variances (found by tests/family_params.c once its forced parameters
   * reached the node) */
  if (p[NP_BLK] && vw > 1 && L % vw) {
    const int64_t chunk = ((L + wg - 1) / wg + vw - 1) / vw * vw;
    if ((int64_t)(wg - 1) * chunk >= L) return 1;
  }
  /* work-items with nothing to do: a smaller group covers the row (the
   * default stays valid for every shape) */
  if (wg > norm_params[NP_WG].dflt && (int64_t)wg * vw / 2 >= L) return 1;
  if (wg > 16 && vw > 1 && (int64_t)wg * vw / 2 >= L) return 1;
  return 0;
}

static void norm_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double rows = (double)t->dims[ND_ROWS], L = (double)t->dims[ND_L], es = (double)t->dims[ND_ESIZE];
  memset(f, 0, sizeof *f);
  f->flops = rows * L * (6 + 2 * (double)t->dims[ND_AFFINE]);
  f->bytes = rows * L * es * 4;              /* three passes over x, one write of y */
  f->bytes_local = rows * (double)p[NP_WG] * es * 4;
  f->work_groups = rows;
  f->wg_size = p[NP_WG];
  f->vec = p[NP_VW];
  f->launches = 1;
}

/* Contiguous rows read 8 elements a time, whatever their count: a
 * GroupNormalization row of 65536 (vae_decoder_16, 32 rows) took 10.1 ms on
 * POCL element by element and 1.2 ms with 8-wide loads (cyclic, the same
 * group of 64; a contiguous block per item: 1.0 ms), and GPUs read 32-byte
 * vectors of neighbouring items as well as single floats. The group then
 * shrinks (64, 32, 16) until its items have work (norm_valid). Many rows: a
 * work-item per row (on POCL a LayerNormalization of 2048 rows of 320 ran
 * 26 ms with a work-group of 64 per row). */
static void norm_defaults(kiln_tunable *t) {
  const int vw = !t->dims[ND_CONTIG] ? 1 : t->dims[ND_L] >= 16 ? 16 : t->dims[ND_L] >= 8 ? 8 : 1;
  t->params[NP_VW].dflt = vw;
  if (t->dims[ND_ROWS] >= NORM_ITEM_MIN_ROWS) {
    t->params[NP_WG].dflt = 1;
    return;
  }
  int wg = KILN_NORM_WG;
  while (vw > 1 && wg > 16 && (int64_t)wg * vw / 2 >= t->dims[ND_L]) wg /= 2;
  t->params[NP_WG].dflt = wg;
}

static const kiln_solver norm_solvers[] = {
  {"cyclic", ~0u, 0},
  {"block", ~0u, 1},
};

const kiln_family kiln_family_norm = {.name = "norm", .file = "norm.cl", .oclgrind = "norm", .nparams = NP_COUNT, .params = norm_params,
                                       .selector = NP_BLK, KILN_SOLVERS(norm_solvers), .valid = norm_valid, .features = norm_features,
                                       .defaults = norm_defaults};
