/* kernels/gemm.c: the "gemm" kernel family beside its OpenCL source
 * (kernels/gemm.cl): one batched strided matrix product, its parameter
 * vector and solvers, features for the cost model.
 *
 * Parameters, in descriptor order (GP_* in family.h). TM, NV, VW, WGM, WGN,
 * KWI, SA and KWG are -D defines of kernels/gemm.cl and mean the same in the
 * tiled and panel kernels (SA=1: the work-group shares KWG-deep tiles,
 * through local memory in the tiled kernel, through the cache between
 * barriers in the panel kernel); KWG is pinned to its default when SA=0, so
 * the space is not a product of irrelevant values. For CLBlast the same
 * vector maps onto Xgemm's parameters (clb_params in runtime/ops/gemm_norm.c).
 * KILN_MAX_KPARAMS (12) rules out a separate set of names per kernel. The
 * space (1.4 million combinations before valid()) stays under the
 * enumeration cap of runtime/tunable.c (ENUM_MAX).
 * MB and AP are the panel kernel's only (pinned to their defaults
 * elsewhere): MB blocks of TM rows per work-item on the same B panel, and
 * A packed into row panels of TM rows (one more launch per run) so that
 * the inner loop reads both operands through two advancing pointers: on
 * POCL (LLVM, AVX-512) an 8 x 32 block compiles to 2 vector loads, 8
 * broadcasts and 16 FMAs per step of K with no address arithmetic, where
 * TM strided rows of A ran out of registers. With packed A and a small
 * TM x NR block, gemm.cl computes RB of the MB blocks together (up to 16
 * accumulators), so small TM is not latency-bound (conv's panel solvers
 * choose GEMM_TM themselves).
 * K in blocks (all MB row blocks over one 256-deep slice of the B panel,
 * accumulators parked in private memory between slices, so that the slice
 * stays in L1) was tried and ran 1.25-1.45x slower than the whole K per
 * block on bert_encoder's three product shapes, with the defaults and with
 * the prior's picks (bench_gemm_layer, 60 rounds alternated, load 5): not
 * kept.
 * Defaults (used where nothing was measured or predicted): the panel kernel
 * with 8 x 32 blocks (float16 vectors), 8 blocks (64 rows) per work-item,
 * one work-item per group, A packed: the fastest of the candidates timed on
 * resnet18's and bert's GEMM shapes on a 2-core AVX-512 EPYC under POCL
 * (2.5-4x the former 4 x 16 default); on a GPU the tiled kernel is
 * expected to win, and tuning decides.
 *
 * The solvers (KERNEL):
 *   tiled    0, gemm.cl's gemm: MWG x NWG tiles per work-group, local-memory
 *            tiling, the right shape for GPUs;
 *   panel    1, gemm_panel: B packed into column panels of NR = NV*VW
 *            elements contiguous along K (once per plan when B is a constant,
 *            else each run by gemm_pack_b into a scratch buffer); each
 *            work-item computes a TM x NR block in vector registers, no local
 *            memory: the CPU shape;
 *   clblast  2, CLBlast's Xgemm (float and double), its tuning parameters
 *            mapped from the same vector and set with CLBlastOverrideParameters.
 * valid() is the op's (runtime/ops/gemm_norm.c gemm_valid: the KERNEL values
 * offered depend on KILN_GEMM_KERNELS, read there); the launches are the op's
 * too (gemm_tiled, gemm_panel, gemm_clblast), over its gemm_desc. */
#include "family.h"
#include <math.h>

const kiln_kparam kiln_gemm_params[GP_COUNT] = {
  [GP_KERNEL] = {"KERNEL", 3, {GK_TILED, GK_PANEL, GK_CLBLAST}, GK_PANEL},
  [GP_TM] = {"TM", 6, {1, 2, 4, 6, 8, 12}, 8},
  [GP_NV] = {"NV", 4, {1, 2, 3, 4}, 2},
  [GP_VW] = {"VW", 4, {1, 4, 8, 16}, 16},
  [GP_WGM] = {"WGM", 4, {1, 2, 4, 8}, 1},
  [GP_WGN] = {"WGN", 5, {1, 2, 4, 8, 16}, 1},
  [GP_KWI] = {"KWI", 3, {1, 2, 4}, 1},
  [GP_SA] = {"SA", 2, {0, 1}, 0},
  [GP_KWG] = {"KWG", 5, {16, 32, 64, 128, 256}, 16},
  [GP_MB] = {"MB", 4, {1, 2, 4, 8}, 8},
  [GP_AP] = {"AP", 2, {0, 1}, 1},
};
_Static_assert(GP_COUNT <= KILN_MAX_KPARAMS && GP_COUNT <= KILN_MAX_KPARAMS_NODE, "gemm parameter vector too long");

static void panel_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double M = (double)t->dims[GD_M], N = (double)t->dims[GD_N], K = (double)t->dims[GD_K], Z = (double)t->dims[GD_BATCH];
  const double es = (double)t->dims[GD_ESIZE], nbz = (double)t->dims[GD_NBZ];
  const double esa = es == 2 ? 4 : es; /* packed A: float under fp16 storage (gemm.cl APF) */
  const int tm = p[GP_TM], wgm = p[GP_WGM], wgn = p[GP_WGN];
  const double tn = (double)p[GP_NV] * p[GP_VW], mt = ceil(M / tm), nt = ceil(N / tn), mw = ceil(mt / p[GP_MB]);
  f->footprint += nbz * K * (nt * tn - N) * es; /* the B panel, padded to whole tiles */
  if (p[GP_AP]) f->footprint += Z * mt * tm * K * esa; /* A packed */
  if (!t->dims[GD_BCONST]) {
    f->footprint += nbz * K * nt * tn * es; /* packed, then read */
    f->gathered = nbz * K * nt * tn;
  }
  f->flops = 2 * mt * tm * nt * tn * K * Z; /* whole register tiles, edges included */
  /* every row block reads its TM rows of A; every work-item its B panel
   * once for its MB row blocks */
  f->bytes = Z * (M * K * nt * (p[GP_AP] ? esa : es) + (nt * tn * K * mw + M * N) * es);
  if (!t->dims[GD_BCONST]) f->bytes += nbz * K * (N + nt * tn) * es; /* packing */
  if (p[GP_AP]) f->bytes += Z * K * (M * es + mt * tm * esa);       /* packing A */
  f->launches = (t->dims[GD_BCONST] ? 1 : 2) + (p[GP_AP] ? 1 : 0);
  f->work_groups = ceil(nt / wgn) * ceil(mw / wgm) * Z;
}

/* tiles of MWG x NWG per work-group, read once per work-group (SA) or per
 * work-item (no local memory) */
static void tiled_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double M = (double)t->dims[GD_M], N = (double)t->dims[GD_N], K = (double)t->dims[GD_K], Z = (double)t->dims[GD_BATCH];
  const double es = (double)t->dims[GD_ESIZE];
  const int kern = p[GP_KERNEL], tm = p[GP_TM], wgm = p[GP_WGM], wgn = p[GP_WGN];
  const double tn = (double)p[GP_NV] * p[GP_VW], mt = ceil(M / tm), nt = ceil(N / tn);
  double mwg = (double)wgm * tm, nwg = (double)wgn * tn;
  double gm = ceil(M / mwg), gn = ceil(N / nwg);
  if (p[GP_SA] || kern == GK_CLBLAST) {
    f->bytes = Z * (M * K * gn + K * N * gm + M * N) * es;
    f->bytes_local = Z * (M * K * gn * wgn + K * N * gm * wgm) * es; /* each element read by a row / column of work-items */
  } else {
    f->bytes = Z * (M * K * nt + K * N * mt + M * N) * es;
  }
  f->work_groups = gm * gn * Z;
  f->launches = kern == GK_CLBLAST ? 3 : 1; /* CLBlast: transposes around its kernel */
}

static void gemm_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  const double M = (double)t->dims[GD_M], N = (double)t->dims[GD_N], K = (double)t->dims[GD_K], Z = (double)t->dims[GD_BATCH];
  const double es = (double)t->dims[GD_ESIZE], nbz = (double)t->dims[GD_NBZ];
  memset(f, 0, sizeof *f);
  f->flops = 2 * M * N * K * Z;
  f->vec = p[GP_VW];
  f->wg_size = (double)p[GP_WGM] * p[GP_WGN];
  f->footprint = Z * (M * K + M * N) * es + nbz * K * N * es;
  if (p[GP_KERNEL] == GK_PANEL) panel_features(t, p, f);
  else tiled_features(t, p, f);
}

static const kiln_solver gemm_solvers[] = {
  {"tiled", ~0u, GK_TILED},
  {"panel", ~0u, GK_PANEL},
  {"clblast", ~0u, GK_CLBLAST},
};

const kiln_family kiln_family_gemm = {.name = "gemm", .file = "gemm.cl", .oclgrind = "gemm", .nparams = GP_COUNT, .params = kiln_gemm_params,
                                       .selector = GP_KERNEL, KILN_SOLVERS(gemm_solvers), .epilogue = 1, .features = gemm_features};
