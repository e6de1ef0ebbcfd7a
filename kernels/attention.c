/* kernels/attention.c: the "attention" kernel family beside its OpenCL
 * source (kernels/attention.cl): softmax(scale * Q K^T + mask) V with an
 * online softmax, one solver. Parameters: ATT_QR query rows per work-item,
 * ATT_KB keys per online-softmax block, ATT_VW vector width along the head
 * dimensions, ATT_DVS work-items sharing a row block (each owns Dv/DVS
 * output columns), ATT_WG work-group size (0: the driver's). The defaults
 * are derived per instance (attention_defaults). The op
 * (runtime/ops/attention.c, KilnAttention) describes the heads (dims AD_*)
 * and launches. */
#include "family.h"
#include <math.h>

static const kiln_kparam at_params[AP_COUNT] = {
  [AP_QR] = {"ATT_QR", 4, {1, 2, 4, 8}, 1},
  [AP_KB] = {"ATT_KB", 4, {8, 16, 32, 64}, 16},
  [AP_VW] = {"ATT_VW", 4, {1, 2, 4, 8}, 1},
  [AP_DVS] = {"ATT_DVS", 4, {1, 2, 4, 8}, 1},
  [AP_WG] = {"ATT_WG", 5, {0, 16, 32, 64, 128}, 0},
};

static bool at_is_default(const kiln_tunable *t, const int *p) {
  for (int i = 0; i < t->nparams; i++) if (p[i] != t->params[i].dflt) return false;
  return true;
}

static int at_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int64_t S = t->dims[AD_S], Skv = t->dims[AD_SKV], D = t->dims[AD_D], Dv = t->dims[AD_DV];
  const int qr = p[AP_QR], kb = p[AP_KB], vw = p[AP_VW], dvs = p[AP_DVS], wg = p[AP_WG];
  if (dev && dev->max_work_group && wg > 0 && (size_t)wg > dev->max_work_group) return 1;
  if (Dv % dvs) return 1;
  if (vw > 1 && (!t->dims[AD_UNIT] || D % vw || (Dv / dvs) % vw)) return 1;
  if (at_is_default(t, p)) return 0; /* the defaults run every shape */
  /* private memory per work-item (elements): Q rows, accumulators, scores */
  if ((int64_t)qr * (D + Dv / dvs + kb) > 4096) return 1;
  if (qr > 1 && qr > S) return 1;
  if (kb > 8 && kb >= 2 * Skv) return 1;
  return 0;
}

static void at_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double B = (double)t->dims[AD_BATCH], S = (double)t->dims[AD_S], Skv = (double)t->dims[AD_SKV], D = (double)t->dims[AD_D],
               Dv = (double)t->dims[AD_DV], es = (double)t->dims[AD_ESIZE];
  const double qr = p[AP_QR], dvs = p[AP_DVS], dvc = Dv / dvs;
  const double items = B * ceil(S / qr) * dvs;
  memset(f, 0, sizeof *f);
  /* per item: QR rows x Skv keys of a dot product, the softmax update, DVC columns of P V */
  f->flops = items * qr * Skv * (2 * D + 2 * dvc + 6);
  /* each item reads every key's K row and its V slice: from memory once per
   * batch entry when one entry's K and V fit in 1 MiB (the re-reads then come
   * from on-chip caches, counted as local traffic), else every time; Q (once
   * per slice), O and the mask once */
  const double kv = Skv * (D + Dv) * es, rereads = items * Skv * (D + dvc) * es;
  f->bytes = es * (B * S * D * dvs + B * S * Dv + (t->dims[AD_MASK] ? B * S * Skv * dvs : 0));
  if (kv <= 1048576) { f->bytes += B * kv; f->bytes_local = rereads; }
  else f->bytes += rereads;
  f->wg_size = p[AP_WG] > 0 ? p[AP_WG] : 64;
  f->work_groups = ceil(items / f->wg_size);
  f->vec = p[AP_VW];
  f->launches = 1;
}

/* defaults per instance, from tuning BERT's heads on a CPU (QR=8, KB=64,
 * VW=8 ran 5x faster than QR=1, KB=16, VW=1): the widest vectors the head
 * dims and strides allow, the longest key block up to the keys, the most
 * query rows that keep a work-item's private arrays within 2048 elements */
static void at_defaults(kiln_tunable *t) {
  const int64_t S = t->dims[AD_S], Skv = t->dims[AD_SKV], D = t->dims[AD_D], Dv = t->dims[AD_DV];
  int vw = 1, kb = Skv >= 64 ? 64 : Skv >= 32 ? 32 : 16, qr = 1;
  for (int w = 8; w > 1 && vw == 1; w /= 2)
    if (t->dims[AD_UNIT] && D % w == 0 && Dv % w == 0) vw = w;
  for (int r = 8; r > 1 && qr == 1; r /= 2)
    if (r <= S && (int64_t)r * (D + Dv + kb) <= 2048) qr = r;
  t->params[AP_QR].dflt = qr;
  t->params[AP_KB].dflt = kb;
  t->params[AP_VW].dflt = vw;
}

static const kiln_solver at_solvers[] = {{"attention", ~0u, -1}};

/* .oclgrind NULL: not yet among tests/oclgrind.sh's families */
const kiln_family kiln_family_attention = {.name = "attention", .file = "attention.cl", .nparams = AP_COUNT, .params = at_params, .selector = -1,
                                            KILN_SOLVERS(at_solvers), .valid = at_valid, .features = at_features, .defaults = at_defaults};
