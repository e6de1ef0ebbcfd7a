/* kernels/elementwise.c: the "eltwise" kernel family beside its OpenCL
 * source (kernels/elementwise.cl): the unary, clip, broadcast, Where and
 * variadic kernels, one solver. Parameters: EW_WPI elements per work-item
 * (1: one per work-item, GPUs) and EW_WG the work-group size (0: the
 * driver's choice). Casts (elementwise_cast.cl) keep one element per
 * work-item and are not tuned. The op (runtime/ops/elementwise.c)
 * describes the tensor (dims ED_*) and launches. */
#include "family.h"
#include <math.h>

static const kiln_kparam ew_params[EP_COUNT] = {
  [EP_WPI] = {"EW_WPI", 5, {1, 8, 16, 32, 64}, KILN_EW_WPI}, /* 1: one element per work-item (GPUs) */
  [EP_WG] = {"EW_WG", 4, {0, 64, 128, 256}, 0},
};

static int ew_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int wpi = p[EP_WPI], wg = p[EP_WG];
  if (dev && dev->max_work_group && (size_t)wg > dev->max_work_group) return 1;
  if (wpi > 8 && wpi / 2 >= t->dims[ED_INNER] && wpi != KILN_EW_WPI) return 1; /* the same as a smaller run */
  if (wg > 0 && (int64_t)wg * wpi / 2 >= t->dims[ED_TOTAL]) return 1;  /* a group wider than the tensor */
  return 0;
}

static void ew_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  memset(f, 0, sizeof *f);
  const double total = (double)t->dims[ED_TOTAL];
  f->flops = total * (double)t->dims[ED_LAUNCHES];
  f->bytes = (double)t->dims[ED_BYTES];
  f->vec = p[EP_WPI];
  f->wg_size = p[EP_WG] ? p[EP_WG] : 64;
  f->work_groups = ceil(total / p[EP_WPI] / f->wg_size);
  f->launches = (double)t->dims[ED_LAUNCHES];
}

static const kiln_solver ew_solvers[] = {{"eltwise", ~0u, -1}};

const kiln_family kiln_family_eltwise = {.name = "eltwise", .file = "elementwise.cl", .oclgrind = "elementwise", .nparams = EP_COUNT,
                                          .params = ew_params, .selector = -1, KILN_SOLVERS(ew_solvers), .valid = ew_valid, .features = ew_features};
