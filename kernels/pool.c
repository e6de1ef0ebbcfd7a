/* kernels/pool.c: the pooling kernel families beside their OpenCL source
 * (kernels/pool.cl), one solver each:
 *   pool   windowed pools (MaxPool, AveragePool, LpPool): PL_WPI outputs per
 *          work-item (2-D windows: consecutive outputs of a row, read as
 *          vectors by pool_row; else pool_fwd by flat index), PL_WG
 *          work-items per group (0: the driver's choice);
 *   gpool  global pools (GlobalAveragePool, GlobalMaxPool, GlobalLpPool):
 *          PL_WG work-items per plane (1: a work-item per plane, gpool_plane
 *          for float types, reading vectors of PL_VW, else pool_fwd; more:
 *          gpool_wg, float types) with a step of PL_VW consecutive
 *          elements.
 * The op (runtime/ops/conv_pool.c) describes the planes (dims PD_*) and
 * launches. */
#include "family.h"
#include <math.h>

static size_t max_wg(const kiln_device_info *dev) { return dev && dev->max_work_group ? dev->max_work_group : 256; }

static const kiln_kparam pool_params[PP_COUNT] = {
  [PP_A] = {"PL_WPI", 5, {1, 2, 4, 8, 16}, 8}, /* 2-D pools (pool_row): the row vector width; squeezenet's 3x3/2 MaxPools
                                              tuned 4-5.7x faster at 8 (or 4) than at 1; pool_defaults sets it per
                                              instance (the prior has no pool entry, so the default is what runs) */
  [PP_B] = {"PL_WG", 5, {0, 32, 64, 128, 256}, 0},
  [PP_C] = {"PL_ROWS", 4, {1, 2, 4, 8}, 1}, /* pool_row: output rows per work-item (3x3/2 max pools share input rows) */
};

static int pool_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int wpi = p[PP_A], wg = p[PP_B], rows = p[PP_C];
  if ((size_t)wg > max_wg(dev)) return 1;
  if (wpi > 1 && (int64_t)wpi > t->dims[PD_OUT]) return 1;       /* more than a plane's outputs */
  if (wg > 0 && (int64_t)wg * wpi / 2 >= t->dims[PD_OUT] * t->dims[PD_PLANES]) return 1;
  if (rows > 1 && (!t->dims[PD_OW] || rows > t->dims[PD_OH])) return 1; /* pool_fwd has no rows; no more rows than the plane */
  if (t->dims[PD_OW] && wpi > 1 && wpi > t->dims[PD_OW]) return 1;     /* blocks wider than a row go an output at a time */
  return 0;
}

/* pool_row's defaults by the output row: the widest block a row holds (16
 * lanes: two-source permutes split the stride-2 taps) and 4 rows a
 * work-item. Measured (kiln tune, POCL, squeezenet's 64x111x111 3x3/2 max
 * pool): PL_WPI=8 one row 70-73 us, 16 one row 53-59, 16 two rows 42-48,
 * 16 four rows 40-44, eight rows 41-45. */
static void pool_defaults(kiln_tunable *t) {
  const int64_t ow = t->dims[PD_OW], oh = t->dims[PD_OH];
  if (!ow) return;
  int wpi = 16;
  while (wpi > 1 && wpi > ow) wpi /= 2;
  t->params[PP_A].dflt = wpi;
  t->params[PP_C].dflt = oh >= 8 ? 4 : 1;
}

static void pool_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double planes = (double)t->dims[PD_PLANES], out = (double)t->dims[PD_OUT], win = (double)t->dims[PD_WIN], es = (double)t->dims[PD_ESIZE];
  memset(f, 0, sizeof *f);
  f->flops = planes * out * win;
  f->launches = 1;
  f->bytes = planes * (out * win + out) * es; /* windows overlap: counted per output (caches catch some) */
  f->vec = p[PP_A];
  f->wg_size = p[PP_B] ? p[PP_B] : 64;
  f->work_groups = ceil(planes * ceil(out / p[PP_A]) / f->wg_size);
}

static const kiln_kparam gpool_params[PP_COUNT] = {
  [PP_A] = {"PL_WG", 6, {1, 16, 32, 64, 128, 256}, 1},
  [PP_B] = {"PL_VW", 5, {1, 2, 4, 8, 16}, 8},
};
/* PL_VW's default 8 (16 on larger planes: gpool_defaults): measured by `kiln tune --families gpool` on efficientnet_b0's 11 global pools (POCL, idle):
 * with PL_WG=1, vectors of 8 were the fastest or within 10-25% of it on every plane size from 7x7 to 56x56
 * (144x56x56: 29.8 us vs 180.7 us at 1), 2.6x over the whole model's pools; the CPU prior has no gpool
 * family, so without a database this default is what runs. It is not valid for planes of fewer than 8
 * elements nor for integer types (pool_fwd): those run the valid vector nearest to it
 * (kiln_tunable_defaults), PL_WG=1,PL_VW=1. */

/* 16-wide on planes of 14x14 and more: `kiln tune --families gpool --strategy
 * exhaustive` on efficientnet_b0's 11 global pools (POCL, session 25) picked
 * PL_VW=16 for every plane from 14x14 to 56x56 (1.14-1.54x over 8: 144x56x56
 * 17.3 -> 11.6 us, 144x28x28 5.9 -> 3.9 us) and 8 on the 7x7 planes (ties). */
static void gpool_defaults(kiln_tunable *t) {
  if (t->dims[PD_FLOAT] && t->dims[PD_IN] >= 196) t->params[PP_B].dflt = 16;
}

static int gpool_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int wg = p[PP_A], vw = p[PP_B];
  if ((size_t)wg > max_wg(dev)) return 1;
  if (wg > 1 && !t->dims[PD_FLOAT]) return 1;                          /* gpool_wg: float types */
  if (wg == 1 && vw > 1 && !t->dims[PD_FLOAT]) return 1;                 /* pool_fwd: one element at a time */
  if (vw > 1 && (int64_t)vw > t->dims[PD_IN]) return 1;                  /* vectors longer than a plane */
  if (wg > 16 && (int64_t)wg * vw / 2 >= t->dims[PD_IN]) return 1;
  return 0;
}

static void gpool_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double planes = (double)t->dims[PD_PLANES], out = (double)t->dims[PD_OUT], in = (double)t->dims[PD_IN];
  const double win = (double)t->dims[PD_WIN], es = (double)t->dims[PD_ESIZE];
  memset(f, 0, sizeof *f);
  f->flops = planes * out * win;
  f->launches = 1;
  f->bytes = planes * (in + 1) * es;
  f->wg_size = p[PP_A];
  f->vec = p[PP_B];
  f->work_groups = p[PP_A] > 1 ? planes : ceil(planes / 64);
  f->bytes_local = p[PP_A] > 1 ? planes * p[PP_A] * es : 0;
}

static const kiln_solver pool_solvers[] = {{"pool_fwd", ~0u, -1}};
static const kiln_solver gpool_solvers[] = {{"gpool", ~0u, -1}};

#define POOL_FAMILY(nm, np, prm, solv, val, feat, dfl)                                                                                                      \
  {.name = nm, .file = "pool.cl", .oclgrind = "pool", .nparams = np, .params = prm, .selector = -1, KILN_SOLVERS(solv), .valid = val,  \
   .features = feat, .defaults = dfl}
const kiln_family kiln_family_pool = POOL_FAMILY("pool", PP_COUNT, pool_params, pool_solvers, pool_valid, pool_features, pool_defaults);
const kiln_family kiln_family_gpool = POOL_FAMILY("gpool", PP_C, gpool_params, gpool_solvers, gpool_valid, gpool_features, gpool_defaults);
