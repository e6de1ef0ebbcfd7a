/* kernels/reduce.c: the line-reduction kernel families "reduce" (Reduce*)
 * and "softmax" (Softmax, LogSoftmax with a fused scale and mask) beside
 * their OpenCL source (kernels/reduce.cl). Parameters: WG work-items per
 * line (1: one work-item per line, the *_item kernels; else one work-group
 * of that size per line, the *_wg kernels) and VW the step of consecutive
 * elements per work-item along a unit-stride line. One solver each; the ops
 * (runtime/ops/reduce.c) describe the lines (dims LD_*) and launch. */
#include "family.h"
#include <math.h>

static const kiln_kparam lines_params[LP_COUNT] = {
  [LP_WG] = {"WG", 6, {1, 16, 32, 64, 128, 256}, KILN_RD_WG},
  [LP_VW] = {"VW", 4, {1, 2, 4, 8}, 1},
};

static int lines_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int wg = p[LP_WG], vw = p[LP_VW];
  const int64_t len = t->dims[LD_LEN];
  if (dev && dev->max_work_group && (size_t)wg > dev->max_work_group) return 1;
  if (vw > 1 && (!t->dims[LD_CONTIG] || len < vw)) return 1;
  /* groups wider than the line leave items idle (the default stays valid) */
  if (wg > 16 && wg != t->params[LP_WG].dflt && (int64_t)wg * vw / 2 >= len) return 1;
  return 0;
}

/* softmax_wg with work-items that take no element of the line (WG * VW >
 * len) crashes on POCL (a segfault in softmax_wg, found by
 * tests/family_params.c once its forced parameters reached the node:
 * Softmax 5x37 WG=64, 5x63 WG=64, 5x70 WG=128, LogSoftmax 3x300 WG=256
 * VW=2; reduce_wg runs such groups fine): such groups are left out */
static int softmax_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  if (p[LP_WG] > 1 && (int64_t)p[LP_WG] * p[LP_VW] > t->dims[LD_LEN] && p[LP_WG] != t->params[LP_WG].dflt) return 1;
  return lines_valid(t, p, dev);
}

static void lines_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double lines = (double)t->dims[LD_LINES], len = (double)t->dims[LD_LEN], es = (double)t->dims[LD_ESIZE];
  const double passes = (double)t->dims[LD_PASSES];
  memset(f, 0, sizeof *f);
  f->flops = lines * len * passes * 2;
  f->bytes = lines * len * es * passes + lines * es * (passes > 1 ? len : 1);
  f->bytes_local = p[LP_WG] > 1 ? lines * (double)p[LP_WG] * es * 2 : 0;
  f->work_groups = p[LP_WG] > 1 ? lines : ceil(lines / 64);
  f->wg_size = p[LP_WG] > 1 ? p[LP_WG] : 64;
  f->vec = p[LP_VW];
  f->launches = 1;
}

/* With at least RD_ITEM_MIN_LINES lines, a work-item per line, reading
 * unit-stride lines 8 elements at a time (float types: vector lanes;
 * measured on POCL, where a ReduceMean of 2048 lines of 320 ran 6x faster
 * than with a work-group per line); fewer lines: a work-group of RD_WG for
 * lines of at least min_wg elements. */
#define RD_ITEM_MIN_LINES 64
void kiln_lines_default(int64_t lines, int64_t len, bool contig, int64_t min_wg, int *wg, int *vw) {
  *wg = len >= min_wg && lines < RD_ITEM_MIN_LINES ? KILN_RD_WG : 1;
  *vw = *wg == 1 && contig && len >= 8 ? 8 : 1;
}

static void lines_defaults_of(kiln_tunable *t, int64_t min_wg) {
  kiln_lines_default(t->dims[LD_LINES], t->dims[LD_LEN], t->dims[LD_CONTIG] != 0, min_wg, &t->params[LP_WG].dflt, &t->params[LP_VW].dflt);
}
static void reduce_defaults(kiln_tunable *t) { lines_defaults_of(t, KILN_RD_WG_MIN_REDUCE); }
static void softmax_defaults(kiln_tunable *t) { lines_defaults_of(t, KILN_RD_WG_MIN_SOFTMAX); }

static const kiln_solver reduce_solvers[] = {{"lines", ~0u, -1}};
static const kiln_solver softmax_solvers[] = {{"lines", ~0u, -1}};

#define LINES_FAMILY(nm, solv, val, dflts)                                                                                                                \
  {.name = nm, .file = "reduce.cl", .oclgrind = nm, .nparams = LP_COUNT, .params = lines_params, .selector = -1, KILN_SOLVERS(solv),             \
   .valid = val, .features = lines_features, .defaults = dflts}
const kiln_family kiln_family_reduce = LINES_FAMILY("reduce", reduce_solvers, lines_valid, reduce_defaults);
const kiln_family kiln_family_softmax = LINES_FAMILY("softmax", softmax_solvers, softmax_valid, softmax_defaults);
