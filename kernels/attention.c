/* kernels/attention.c: the "attention" kernel family beside its OpenCL
 * source (kernels/attention.cl): softmax(scale * Q K^T + mask) V with an
 * online softmax, two solvers (ATT_ALGO: 0 rows, 1 blocked; see
 * attention.cl). Parameters of rows: ATT_QR query rows per work-item, ATT_KB keys per online-softmax block, ATT_VW vector width along the head
 * dimensions, ATT_DVS work-items sharing a row block (each owns Dv/DVS
 * output columns); of blocked: ATT_BQ query rows per work-item (vector
 * lanes), ATT_BK keys per block; both: ATT_WG work-group size (0: the driver's). The defaults
 * are derived per instance (attention_defaults). The op
 * (runtime/ops/attention.c, KilnAttention) describes the heads (dims AD_*)
 * and launches. */
#include "family.h"
#include <math.h>

static const kiln_kparam at_params[AP_COUNT] = {
  [AP_ALGO] = {"ATT_ALGO", 2, {AA_ROWS, AA_BLOCKED}, AA_BLOCKED},
  [AP_QR] = {"ATT_QR", 4, {1, 2, 4, 8}, 1},
  [AP_KB] = {"ATT_KB", 4, {8, 16, 32, 64}, 16},
  [AP_VW] = {"ATT_VW", 4, {1, 2, 4, 8}, 1},
  [AP_DVS] = {"ATT_DVS", 4, {1, 2, 4, 8}, 1},
  [AP_WG] = {"ATT_WG", 8, {0, 1, 2, 4, 16, 32, 64, 128}, 0},
  [AP_BQ] = {"ATT_BQ", 3, {4, 8, 16}, 16},
  [AP_BK] = {"ATT_BK", 6, {4, 8, 12, 16, 24, 32}, 16},
};

#define ROWS_USES (1u << AP_ALGO | 1u << AP_QR | 1u << AP_KB | 1u << AP_VW | 1u << AP_DVS | 1u << AP_WG)
#define BLOCKED_USES (1u << AP_ALGO | 1u << AP_BQ | 1u << AP_BK | 1u << AP_WG)
static const kiln_solver at_solvers[] = {{"rows", ROWS_USES, AA_ROWS}, {"blocked", BLOCKED_USES, AA_BLOCKED}};

static bool at_is_default(const kiln_tunable *t, const int *p) {
  for (int i = 0; i < t->nparams; i++) if (p[i] != t->params[i].dflt) return false;
  return true;
}

/* Private elements of a blocked work-item: Q^T and the accumulators, BQ lanes each. */
static int64_t blocked_private(const kiln_tunable *t, int bq) { return (int64_t)bq * (t->dims[AD_D] + t->dims[AD_DV]); }
#define AT_MAX_PRIVATE 16384 /* elements (64 KiB of float) */

static int at_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int64_t S = t->dims[AD_S], Skv = t->dims[AD_SKV], D = t->dims[AD_D], Dv = t->dims[AD_DV];
  const int qr = p[AP_QR], kb = p[AP_KB], vw = p[AP_VW], dvs = p[AP_DVS], wg = p[AP_WG];
  if (dev && dev->max_work_group && wg > 0 && (size_t)wg > dev->max_work_group) return 1;
  if (p[AP_ALGO] != AA_ROWS && p[AP_ALGO] != AA_BLOCKED) return 1;
  const unsigned uses = at_solvers[p[AP_ALGO]].uses;
  for (int i = 0; i < t->nparams; i++)
    if (!(uses >> i & 1) && p[i] != t->params[i].dflt) return 1; /* pinned: the other solver's */
  if (p[AP_ALGO] == AA_BLOCKED) {
    const int bq = p[AP_BQ], bk = p[AP_BK];
    if (bq != 4 && bq != 8 && bq != 16) return 1;
    if (bk < 1 || bk > 32) return 1;
    if (blocked_private(t, bq) > AT_MAX_PRIVATE) return 1;
    if (at_is_default(t, p)) return 0;
    if (bq > 4 && bq >= 2 * S) return 1;
    if (bk > 4 && bk >= 2 * Skv) return 1;
    return 0;
  }
  if (Dv % dvs) return 1;
  if (vw > 1 && (!t->dims[AD_UNIT] || D % vw || (Dv / dvs) % vw)) return 1;
  if (at_is_default(t, p)) return 0; /* the defaults run every shape */
  /* private memory per work-item (elements): Q rows, accumulators, scores */
  if ((int64_t)qr * (D + Dv / dvs + kb) > 4096) return 1;
  if (qr > 1 && qr > S) return 1;
  if (kb > 8 && kb >= 2 * Skv) return 1;
  return 0;
}

/* Arithmetic per score of the blocked solver beside its 2 (D + Dv) FMA
 * flops: the vector exp, maximum and sum (an exp counted as 16 flops). */
#define AT_SCORE_FLOPS 20

static void at_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double B = (double)t->dims[AD_BATCH], S = (double)t->dims[AD_S], Skv = (double)t->dims[AD_SKV], D = (double)t->dims[AD_D],
               Dv = (double)t->dims[AD_DV], es = (double)t->dims[AD_ESIZE];
  memset(f, 0, sizeof *f);
  f->wg_size = p[AP_WG] > 0 ? p[AP_WG] : 64;
  f->launches = 1;
  if (p[AP_ALGO] == AA_BLOCKED) {
    /* per item: BQ rows (lanes) x every key block, padded */
    const double bq = p[AP_BQ], bk = p[AP_BK], items = B * ceil(S / bq), keys = ceil(Skv / bk) * bk;
    f->flops = items * bq * keys * (2 * D + 2 * Dv + AT_SCORE_FLOPS);
    /* K and V elements are read once per item as broadcasts (from cache once
     * one batch entry's K and V are in), Q, O and the mask once */
    const double kv = Skv * (D + Dv) * es;
    f->bytes = es * (B * S * (D + Dv) + (t->dims[AD_MASK] ? B * S * Skv : 0)) + B * kv;
    f->footprint = f->bytes;
    f->bytes_local = 0;
    f->vec = bq;
    f->work_groups = ceil(items / (p[AP_WG] > 0 ? p[AP_WG] : 1));
    return;
  }
  const double qr = p[AP_QR], dvs = p[AP_DVS], dvc = Dv / dvs;
  const double items = B * ceil(S / qr) * dvs;
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
  f->work_groups = ceil(items / f->wg_size);
  f->vec = p[AP_VW];
}

/* Defaults per instance. Blocked (the default solver): 16 query lanes (8
 * for double), fewer when Q^T and the accumulators would pass 8192
 * elements or the rows are few; 16 keys a block (16 score vectors in
 * registers); work-groups of 4 work-items (many groups for the device's
 * cores even at a few hundred items). Rows (ATT_ALGO=0), from tuning BERT's
 * heads on a CPU (QR=8, KB=64, VW=8 ran 5x faster than QR=1, KB=16, VW=1):
 * the widest vectors the head dims and strides allow, the longest key block
 * up to the keys, the most query rows that keep a work-item's private
 * arrays within 2048 elements. */
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
  int bq = t->dims[AD_ESIZE] > 4 ? 8 : 16;
  while (bq > 4 && (blocked_private(t, bq) > AT_MAX_PRIVATE / 2 || 2 * S <= bq)) bq /= 2;
  t->params[AP_BQ].dflt = bq;
  t->params[AP_BK].dflt = Skv >= 16 ? 16 : Skv > 8 ? 12 : Skv > 4 ? 8 : 4;
  t->params[AP_WG].dflt = 4;
  t->params[AP_ALGO].dflt = blocked_private(t, bq) <= AT_MAX_PRIVATE ? AA_BLOCKED : AA_ROWS;
}

const kiln_family kiln_family_attention = {.name = "attention", .file = "attention.cl", .oclgrind = "attention", .nparams = AP_COUNT, .params = at_params, .selector = AP_ALGO,
                                            KILN_SOLVERS(at_solvers), .valid = at_valid, .features = at_features, .defaults = at_defaults};
