/* ops/gemm_norm.c: matrix products and normalizations: MatMul, Gemm, Einsum,
 * Det, MatMulInteger, QLinearMatMul, QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, BatchNormalization, InstanceNormalization,
 * LayerNormalization, GroupNormalization, MeanVarianceNormalization, LRN.
 * Shape inference, CPU references (OpenBLAS for float products) and the
 * OpenCL paths (kernels/gemm.cl, kernels/norm.cl). */
#include "kiln_internal.h"
#include "family.h"
#include <cblas.h>
#include <clblast_c.h>
#include <limits.h>
#include <math.h>

#define MAXR KILN_MAX_RANK

/* ---- small helpers -------------------------------------------------------- */

/* A kernel argument of the element type T (float, double, int, long). */
typedef struct {
  size_t size;
  union { float f; double d; cl_int i; cl_long l; } v;
} targ;

static targ targ_make(int dt, double x) {
  targ t;
  memset(&t, 0, sizeof t);
  switch (dt) {
  case KILN_DT_DOUBLE: t.size = 8; t.v.d = x; break;
  case KILN_DT_INT32: t.size = 4; t.v.i = (cl_int)x; break;
  case KILN_DT_INT64: t.size = 8; t.v.l = (cl_long)x; break;
  default: t.size = 4; t.v.f = (float)x; break;
  }
  return t;
}
#define TARG(t) (t).size, (const void *)&(t).v

static int64_t prod(const int64_t *d, int a, int b) {
  int64_t p = 1;
  for (int i = a; i < b; i++) p *= d[i];
  return p;
}

static int need_inputs(kiln_graph *g, kiln_node *n, int cnt, kiln_error *err) {
  for (int i = 0; i < cnt; i++)
    if (!kiln_has_in(n, i)) return kiln__err(err, KILN_EINVAL, "node '%s' (%s): input %d is required", n->name, n->op_type, i);
  (void)g;
  return 0;
}

static int check_float(kiln_graph *g, kiln_node *n, int dt, kiln_error *err) {
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE)
    return kiln__err(err, KILN_EUNSUPPORTED, "%s on %s is not implemented on the device", n->op_type, kiln_dtype_name(dt));
  (void)g;
  return 0;
}

/* ===========================================================================
 * GEMM core: one batched strided matrix product on the device, tunable
 * (family "gemm"). Three implementations, chosen by the parameter KERNEL:
 *   0  gemm (kernels/gemm.cl): CLBlast-style register and local-memory
 *      tiling, the right shape for GPUs;
 *   1  gemm_panel: B packed into column panels of NR = NV*VW elements
 *      contiguous along K (once per plan when B is a constant, else each run
 *      by gemm_pack_b into a scratch buffer); each work-item computes
 *      MB blocks of TM x NR in vector registers one after another on the
 *      same panel, no local memory: the CPU shape; with AP=1 A is packed
 *      too (gemm_pack_a, each run), into row panels of TM rows;
 *   2  CLBlast's Xgemm (float and double), its tuning parameters mapped from
 *      the same vector (see clb_params) and set with CLBlastOverrideParameters.
 * ======================================================================== */

typedef struct {
  int64_t M, N, K;
  int64_t sam, sak, sbk, sbn;          /* element strides of A(m,k), B(k,n) */
  int nb;                              /* batch rank */
  int64_t bd[MAXR], bsa[MAXR], bsb[MAXR]; /* batch dims, batch strides of A and B */
  int has_c;
  int64_t scm, scn;                    /* bias strides (0 = broadcast) */
  double alpha, beta;
  int64_t nbz;                         /* distinct B matrices (dense, K*N apart) */
  int b_const;                         /* B is known at plan time: pack it once */
} gemm_desc;

static int64_t gemm_batches(const gemm_desc *d) { return prod(d->bd, 0, d->nb); }

static int gemm_desc_check(const gemm_desc *d, kiln_error *err) {
  if (d->M > INT_MAX || d->N > INT_MAX || d->K > INT_MAX) return kiln__err(err, KILN_EUNSUPPORTED, "matrix dimension above 2^31");
  return 0;
}

/* The gemm family's parameters, solvers and features: kernels/gemm.c. */
static const kiln_kparam *const gemm_params = kiln_gemm_params;

/* The KERNEL values offered to the tuner: those of the device's option
 * kiln_options.gemm_kernels (KILN_GEMM_KERNELS; bit k: KERNEL=k), else all
 * three, CLBlast (2) on GPUs only (gemm_valid). Records of a KERNEL value
 * outside the set are not used. */
static void gemm_kernels_offered(kiln_kparam *k, unsigned mask) {
  if (!mask) return;
  k->nvals = 0;
  for (int v = GK_TILED; v <= GK_CLBLAST; v++)
    if (mask & (1u << v)) k->vals[k->nvals++] = v;
}

static unsigned gemm_mask(const kiln_graph *g) { return g && g->dev_opt ? g->dev_opt->gemm_kernels : 0; }

/* fp16 storage needs one of gemm.cl's kernels: CLBlast has no half GEMM. */
static int gemm_half_check(const kiln_graph *g, const kiln_value *y, kiln_error *err) {
  unsigned m = gemm_mask(g);
  if (y->half && m && !(m & ((1u << GK_TILED) | (1u << GK_PANEL))))
    return kiln__err(err, KILN_EUNSUPPORTED, "fp16 storage: KILN_GEMM_KERNELS offers CLBlast only, which has no half GEMM");
  return 0;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Accumulator vectors of the block gemm_panel computes at once: TM x NV, or
 * with packed A the RB row blocks of gemm.cl's RB (the largest power of two
 * up to MB with RB*TM*NV <= 16) together. */
static int panel_accumulators(int tm, int nv, int mb, int ap) {
  int rb = 1;
  while (ap && rb * 2 <= mb && rb * 2 <= 16 / (tm * nv)) rb *= 2;
  return rb * tm * nv;
}

static int gemm_valid(const kiln_tunable *t, const int *p, const kiln_device_info *dev) {
  const int kern = p[GP_KERNEL], tm = p[GP_TM], nv = p[GP_NV], vw = p[GP_VW], wgm = p[GP_WGM], wgn = p[GP_WGN], kwi = p[GP_KWI];
  const int sa = p[GP_SA], kwg = p[GP_KWG], mb = p[GP_MB], ap = p[GP_AP];
  const int64_t M = t->dims[GD_M], N = t->dims[GD_N], esize = t->dims[GD_ESIZE] == 2 ? 4 : t->dims[GD_ESIZE]; /* local tiles: fp16 storage computes in float */
  if (kern == GK_CLBLAST && t->epilogue[0]) return 1; /* CLBlast's kernels take no epilogue */
  if ((size_t)wgm * (size_t)wgn > (dev && dev->max_work_group ? dev->max_work_group : 256)) return 1;
  if (tm * nv > 24) return 1;                         /* accumulators beyond any register file */
  /* redundant tiles above the defaults: a smaller value already covers the
   * whole matrix (the defaults stay valid for every shape) */
  if (tm > gemm_params[GP_TM].dflt && (tm + 1) / 2 >= M) return 1;
  if (nv * vw > gemm_params[GP_NV].dflt * gemm_params[GP_VW].dflt && (nv * vw + 1) / 2 >= N) return 1;
  if (wgm > gemm_params[GP_WGM].dflt && ceil_div(M, tm) <= wgm / 2) return 1;
  if (wgn > gemm_params[GP_WGN].dflt && ceil_div(N, (int64_t)nv * vw) <= wgn / 2) return 1;
  /* hopeless candidates (pruned so a tuning budget is not spent on them):
   * fewer than 16 outputs per work-item where the matrix has many more, and
   * local-memory sharing in groups of fewer than 16 work-items */
  if ((int64_t)tm * nv * vw < 16 && M * N >= 1024) return 1;
  if (kern == GK_TILED && sa && wgm * wgn < 16) return 1;
  /* CPU devices: the tiled kernel measured 5x (SA=0) to 40x (SA=1) slower
   * than the panel kernel at every size tried on POCL (one SA=1 candidate:
   * 76 s per 2048^3 run against 2 s), so it is left to GPUs */
  if (kern == GK_TILED && dev && !dev->is_gpu) return 1;
  /* CLBlast on CPU devices: its GPU-style kernels never beat the panel kernel
   * on POCL (bench_gemm), and CLBlast rebuilds its programs in every process
   * (no on-disk cache), so it is left to GPUs unless KILN_GEMM_KERNELS names it */
  if (kern == GK_CLBLAST && dev && !dev->is_gpu && !t->dims[GD_KMASK]) return 1;
  bool offered = false;
  for (int i = 0; i < t->params[GP_KERNEL].nvals; i++) offered |= t->params[GP_KERNEL].vals[i] == kern;
  if (!offered) return 1;
  int64_t local = 0;
  /* MB and AP: the panel kernel's only; several row blocks per work-item
   * only without barriers, and only where there are more row blocks than a
   * smaller MB covers */
  if (kern != GK_PANEL && (mb != gemm_params[GP_MB].dflt || ap != gemm_params[GP_AP].dflt)) return 1;
  if (kern == GK_PANEL && sa && mb != 1) return 1;
  if (mb > 1 && mb != gemm_params[GP_MB].dflt && ceil_div(M, tm) <= mb / 2) return 1;
  switch (kern) {
  case GK_TILED:
    if (!sa && kwg != gemm_params[GP_KWG].dflt) return 1;
    if (sa && (kwg % kwi || kwg > 64)) return 1;
    if (sa) local = (int64_t)kwg * (wgm * tm + wgn * nv * vw) * esize;
    break;
  case GK_PANEL:
    if (!sa && kwg != gemm_params[GP_KWG].dflt) return 1;
    if (sa && (kwg % kwi || kwg < 64)) return 1;     /* short blocks: barriers cost more than they save */
    /* CPU devices: A unpacked only where there is one row block (packing
     * a GEMV's row gains nothing), and at least 8 accumulators per block
     * where there are 8 rows (fewer are a chain of dependent FMAs: 2-4x
     * slower on POCL/AVX-512; the cost model's prior, fitted before A
     * could be packed, picked 1 x 64 blocks of unpacked A for bert) */
    if (dev && !dev->is_gpu && !ap && ceil_div(M, tm) > 1) return 1;
    if (dev && !dev->is_gpu && M >= 8 && panel_accumulators(tm, nv, mb, ap) < 8) return 1;
    break;
  case GK_CLBLAST:
    if (t->dtype != KILN_DT_FLOAT && t->dtype != KILN_DT_DOUBLE) return 1;
    /* CLBlast's Xgemm constraints with MDIMA = MDIMC, NDIMB = NDIMC */
    if (kwg % kwi || kwg % wgm || kwg % wgn || kwg > 64) return 1;
    if (wgm * wgn < 2) return 1;
    local = (int64_t)(sa ? kwg * wgm * tm + kwg * wgn * nv * vw : 0) * esize;
    break;
  default:
    return 1;
  }
  if (dev && dev->local_mem && (uint64_t)local > dev->local_mem) return 1;
  return 0;
}

/* Fills the tunable descriptor of a product d of element type dt. */
static void gemm_tunable_fill(const gemm_desc *d, int dt, unsigned kmask, kiln_tunable *t) {
  kiln_family_begin(&kiln_family_gemm, dt, t);
  int cmode = !d->has_c ? 0 : d->scm == 0 && d->scn == 0 ? 1 : d->scm == 0 ? 2 : d->scn == 0 ? 3 : 4;
  snprintf(t->shape_key, sizeof t->shape_key, "M=%lld,N=%lld,K=%lld,batch=%lld,nbB=%lld,tA=%d,tB=%d,packB=%d,bias=%d", (long long)d->M,
           (long long)d->N, (long long)d->K, (long long)gemm_batches(d), (long long)d->nbz, d->sak != 1, d->sbn != 1, d->b_const, cmode);
  gemm_kernels_offered(&t->params[GP_KERNEL], kmask);
  t->dims[GD_KMASK] = kmask;
  t->dims[GD_M] = d->M;
  t->dims[GD_N] = d->N;
  t->dims[GD_K] = d->K;
  t->dims[GD_BATCH] = gemm_batches(d);
  t->dims[GD_NBZ] = d->nbz;
  t->dims[GD_BCONST] = d->b_const;
  t->dims[GD_ESIZE] = kiln_dtype_size(dt);
  t->valid = gemm_valid; /* the op's: it reads the device's gemm_kernels option (GD_KMASK) */
  kiln_family_end(&kiln_family_gemm, t);
}

/* Batch metadata of gemm.cl (nb, dims, A strides, B strides); B strides are
 * scaled by bscale_num / bscale_den (packed B); apack > 0: A is packed, apack
 * elements per batch, batch after batch (gemm_pack_a). */
static cl_mem gemm_meta(kiln_exec *x, kiln_node *n, int slot, const gemm_desc *d, int64_t bnum, int64_t bden, int64_t apack, kiln_error *err) {
  int64_t meta[1 + 3 * MAXR] = {0};
  meta[0] = d->nb;
  int64_t inner = apack;
  for (int i = d->nb - 1; i >= 0; i--) {
    meta[1 + i] = d->bd[i];
    meta[1 + MAXR + i] = apack ? inner : d->bsa[i];
    meta[1 + 2 * MAXR + i] = bden ? d->bsb[i] / bden * bnum : 0;
    inner *= d->bd[i];
  }
  return kiln_exec_param(x, n, slot, meta, sizeof meta, err);
}

static int gemm_tiled(kiln_exec *x, kiln_node *n, int dt, const kiln_tunable *t, const int *p, const gemm_desc *d, cl_mem A, cl_mem B, cl_mem C,
                      cl_mem Y, kiln_error *err) {
  cl_mem mb = gemm_meta(x, n, 0, d, 1, 1, 0, err);
  if (!mb) return err->status;
  char opts[600];
  kiln_cl_type_opts(dt, opts, sizeof opts);
  kiln_tunable_opts(t, p, opts, sizeof opts);
  cl_kernel k = kiln_epi_kernel(x, n, "gemm.cl", opts, "gemm", err);
  if (!k) return err->status;
  cl_int M = (cl_int)d->M, N = (cl_int)d->N, K = (cl_int)d->K, has_c = d->has_c;
  targ alpha = targ_make(dt, d->alpha), beta = targ_make(dt, d->beta);
  cl_long sam = d->sam, sak = d->sak, sbk = d->sbk, sbn = d->sbn, scm = d->scm, scn = d->scn;
  if (!C) C = A;
  cl_mem e[2];
  kiln_epi_bufs(x, n, Y, e);
  if (kiln_cl_args(k, err, KARG(M), KARG(N), KARG(K), TARG(alpha), TARG(beta), KARG(A), KARG(sam), KARG(sak), KARG(B), KARG(sbk), KARG(sbn),
                   KARG(C), KARG(scm), KARG(scn), KARG(has_c), KARG(Y), KARG(mb), KARG(e[0]), KARG(e[1]), KEND))
    return err->status;
  int64_t wgm = p[GP_WGM], wgn = p[GP_WGN], mwg = wgm * p[GP_TM], nwg = wgn * p[GP_NV] * p[GP_VW];
  size_t gws[3] = {(size_t)(ceil_div(d->N, nwg) * wgn), (size_t)(ceil_div(d->M, mwg) * wgm), (size_t)gemm_batches(d)};
  size_t lws[3] = {(size_t)wgn, (size_t)wgm, 1};
  return kiln_exec_launch(x, k, 3, gws, lws, err);
}

/* A of every batch packed into row panels of TM rows (gemm.cl gemm_pack_a)
 * in scratch[1], rows (M rounded up to TM) x K elements of esize bytes per
 * batch; batch offsets of A from param slot 2.
 * Returns the packed buffer, NULL on error. */
#define KILN_GEMM_PKK 16 /* gemm.cl's PKK */
static cl_mem gemm_pack_a(kiln_exec *x, kiln_node *n, const char *opts, const gemm_desc *d, cl_mem A, int64_t rows, int64_t tm, size_t esize,
                          kiln_error *err) {
  const int64_t Z = gemm_batches(d);
  cl_mem ma = gemm_meta(x, n, 2, d, 1, 1, 0, err);
  if (!ma) return NULL;
  cl_kernel k = kiln_epi_kernel(x, n, "gemm.cl", opts, "gemm_pack_a", err);
  if (!k) return NULL;
  size_t bytes = (size_t)(rows * d->K * Z) * esize;
  cl_mem Ap = kiln_exec_scratch(x, n, 1, bytes ? bytes : 16, err);
  if (!Ap || !bytes) return Ap;
  cl_int M = (cl_int)d->M, K = (cl_int)d->K;
  cl_long sam = d->sam, sak = d->sak;
  if (kiln_cl_args(k, err, KARG(M), KARG(K), KARG(A), KARG(sam), KARG(sak), KARG(Ap), KARG(ma), KEND)) return NULL;
  size_t gws[3] = {(size_t)ceil_div(d->K, KILN_GEMM_PKK), (size_t)(rows / tm), (size_t)Z}; /* PKK steps of K of a panel per work-item */
  return kiln_exec_launch(x, k, 3, gws, NULL, err) ? NULL : Ap;
}

/* n->state of a node using the panel kernel: what scratch[0] holds. */
typedef struct {
  cl_mem packed;      /* scratch buffer the packing went to */
  int nr;             /* panel width it was packed with */
} gemm_pack_state;

static int gemm_panel(kiln_exec *x, kiln_node *n, int dt, const kiln_tunable *t, const int *p, const gemm_desc *d, cl_mem A, cl_mem B, cl_mem C,
                      cl_mem Y, kiln_error *err) {
  const int64_t nr = (int64_t)p[GP_NV] * p[GP_VW], np = ceil_div(d->N, nr), psz = np * nr * d->K; /* packed elements per B matrix */
  const int64_t tm = p[GP_TM], asz = p[GP_AP] ? ceil_div(d->M, tm) * tm * d->K : 0; /* packed elements per A matrix */
  cl_mem mb = gemm_meta(x, n, 1, d, psz, d->K * d->N, asz, err);
  if (!mb) return err->status;
  char opts[600];
  kiln_cl_type_opts(dt, opts, sizeof opts);
  kiln_tunable_opts(t, p, opts, sizeof opts);
  /* fp16 storage: A is packed into float row panels (gemm.cl APF), so the
   * inner loop converts only B */
  const int apf = asz && dt == KILN_DT_FLOAT16;
  if (apf) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DAPF=1");
  cl_kernel kp = kiln_epi_kernel(x, n, "gemm.cl", opts, "gemm_pack_b", err);
  if (!kp) return err->status;
  cl_kernel k = kiln_epi_kernel(x, n, "gemm.cl", opts, "gemm_panel", err);
  if (!k) return err->status;
  size_t pbytes = (size_t)(psz * d->nbz) * (size_t)kiln_dtype_size(dt);
  cl_mem Bp = kiln_exec_scratch(x, n, 0, pbytes ? pbytes : 16, err);
  if (!Bp) return err->status;
  gemm_pack_state *st = n->state;
  if (!st && !(st = n->state = calloc(1, sizeof *st))) return kiln__err(err, KILN_ENOMEM, "out of memory");
  cl_int M = (cl_int)d->M, N = (cl_int)d->N, K = (cl_int)d->K, has_c = d->has_c;
  if (!d->b_const || st->packed != Bp || st->nr != nr) {
    cl_long sbk = d->sbk, sbn = d->sbn, sbz = d->K * d->N;
    if (kiln_cl_args(kp, err, KARG(N), KARG(K), KARG(B), KARG(sbk), KARG(sbn), KARG(sbz), KARG(Bp), KEND)) return err->status;
    size_t gws[3] = {(size_t)np, (size_t)d->K, (size_t)d->nbz}; /* a panel's NR values at one k per work-item */
    /* a constant B is packed once per plan: a setup launch */
    if ((d->b_const ? kiln_exec_launch_setup : kiln_exec_launch)(x, kp, 3, gws, NULL, err)) return err->status;
    st->packed = Bp;
    st->nr = (int)nr;
  }
  targ alpha = targ_make(dt, d->alpha), beta = targ_make(dt, d->beta);
  cl_long sam = d->sam, sak = d->sak, scm = d->scm, scn = d->scn;
  if (!C) C = A;
  cl_mem Ap = A;
  if (asz && !(Ap = gemm_pack_a(x, n, opts, d, A, asz / d->K, tm, apf ? sizeof(float) : (size_t)kiln_dtype_size(dt), err))) return err->status;
  cl_mem e[2];
  kiln_epi_bufs(x, n, Y, e);
  if (kiln_cl_args(k, err, KARG(M), KARG(N), KARG(K), TARG(alpha), TARG(beta), KARG(Ap), KARG(sam), KARG(sak), KARG(Bp), KARG(C), KARG(scm),
                   KARG(scn), KARG(has_c), KARG(Y), KARG(mb), KARG(e[0]), KARG(e[1]), KEND))
    return err->status;
  int64_t wgm = p[GP_WGM], wgn = p[GP_WGN], rows = ceil_div(ceil_div(d->M, tm), p[GP_MB]); /* work-items along M */
  size_t gws[3] = {(size_t)(ceil_div(np, wgn) * wgn), (size_t)(ceil_div(rows, wgm) * wgm), (size_t)gemm_batches(d)};
  size_t lws[3] = {(size_t)wgn, (size_t)wgm, 1};
  return kiln_exec_launch(x, k, 3, gws, lws, err);
}

/* Records a launch made outside kiln_exec_launch (CLBlast's event). */
static void gemm_add_event(kiln_exec *x, cl_event ev) {
  x->launches++;
  if (!ev) return;
  if (!x->profile) { clReleaseEvent(ev); return; }
  if (x->nevents == x->capevents) {
    int cap = x->capevents ? x->capevents * 2 : 16;
    cl_event *ne = realloc(x->events, sizeof *ne * (size_t)cap);
    if (!ne) { clReleaseEvent(ev); return; }
    x->events = ne;
    x->capevents = cap;
  }
  x->events[x->nevents++] = ev;
}

/* CLBlast's Xgemm parameters for vector p: MWG = WGM*TM, NWG = WGN*NV*VW,
 * KWG, MDIMC = MDIMA = WGM, NDIMC = NDIMB = WGN, KWI, VWM = the largest of
 * 4, 2, 1 dividing TM, VWN = VW, SA = SB = SA, STRM = STRN = 0, GEMMK = 0,
 * KREG = 1. Names in CLBlast's order. */
#define CLB_NPARAMS 16
static const char *clb_names[CLB_NPARAMS] = {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
                                             "NDIMC", "NWG", "SA", "SB", "STRM", "STRN", "VWM", "VWN"};
static void clb_params(const int *p, size_t *v) {
  int tm = p[GP_TM], vwm = tm % 4 == 0 ? 4 : tm % 2 == 0 ? 2 : 1;
  size_t vals[CLB_NPARAMS] = {0, 1, (size_t)p[GP_KWG], (size_t)p[GP_KWI], (size_t)p[GP_WGM], (size_t)p[GP_WGM], (size_t)(p[GP_WGM] * tm),
                              (size_t)p[GP_WGN], (size_t)p[GP_WGN], (size_t)(p[GP_WGN] * p[GP_NV] * p[GP_VW]), (size_t)p[GP_SA],
                              (size_t)p[GP_SA], 0, 0, (size_t)vwm, (size_t)p[GP_VW]};
  memcpy(v, vals, sizeof vals);
}

static int gemm_clblast(kiln_exec *x, kiln_node *n, int dt, const kiln_tunable *t, const int *p, const gemm_desc *d, cl_mem A, cl_mem B,
                        cl_mem C, cl_mem Y, kiln_error *err) {
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) return kiln__err(err, KILN_EUNSUPPORTED, "CLBlast GEMM on %s", kiln_dtype_name(dt));
  const int64_t Z = gemm_batches(d), M = d->M, N = d->N, K = d->K;
  if (M == 0 || N == 0 || Z == 0) return 0;
  double beta = 0;
  if (d->has_c || K == 0) {
    /* Y = C broadcast (or 0); CLBlast then computes alpha*A*B + beta*Y */
    char opts[200];
    kiln_cl_type_opts(dt, opts, sizeof opts);
    cl_kernel k = kiln_cl_kernel(x->d, "gemm.cl", opts, "gemm_fill_c", err);
    if (!k) return err->status;
    cl_int iM = (cl_int)M, iN = (cl_int)N, has_c = d->has_c;
    cl_long scm = d->scm, scn = d->scn;
    if (!C) C = Y;
    if (kiln_cl_args(k, err, KARG(iM), KARG(iN), KARG(C), KARG(scm), KARG(scn), KARG(has_c), KARG(Y), KEND)) return err->status;
    size_t gws[3] = {(size_t)N, (size_t)M, (size_t)Z};
    if (kiln_exec_launch(x, k, 3, gws, NULL, err)) return err->status;
    beta = d->has_c ? d->beta : 0;
    if (K == 0) return 0;
  }
  const CLBlastPrecision prec = dt == KILN_DT_FLOAT ? CLBlastPrecisionSingle : CLBlastPrecisionDouble;
  size_t vals[CLB_NPARAMS];
  clb_params(p, vals);
  /* CLBlast keeps overrides per device and precision, process-wide, and
   * caches its programs per parameter set: setting them on every call is
   * cheap and keeps nodes with different records apart. */
  CLBlastStatusCode cs = CLBlastOverrideParameters(x->d->dev, "Xgemm", prec, CLB_NPARAMS, clb_names, vals);
  if (cs != CLBlastSuccess) return kiln__err(err, KILN_ECL, "CLBlastOverrideParameters(Xgemm): status %d", (int)cs);
  /* row-major op(A): A(m,k) = A[m*sam + k*sak] */
  CLBlastTranspose ta = d->sak == 1 && (d->sam >= K || M == 1) ? CLBlastTransposeNo : CLBlastTransposeYes;
  CLBlastTranspose tb = d->sbn == 1 && (d->sbk >= N || K == 1) ? CLBlastTransposeNo : CLBlastTransposeYes;
  size_t lda = (size_t)(ta == CLBlastTransposeNo ? (d->sam > K ? d->sam : K) : (d->sak > M ? d->sak : M));
  size_t ldb = (size_t)(tb == CLBlastTransposeNo ? (d->sbk > N ? d->sbk : N) : (d->sbn > K ? d->sbn : K));
  if (!lda) lda = 1;
  if (!ldb) ldb = 1;
  cl_event ev = NULL, mark = NULL;
  cl_command_queue q = x->d->q;
  kiln__rec_other(); /* CLBlast enqueues its own kernels: not replayed */
  /* profiling: a marker before the call, so the span from its start to the
   * end of CLBlast's (last) event covers all of CLBlast's kernels */
  if (x->profile && clEnqueueMarkerWithWaitList(q, 0, NULL, &mark) == CL_SUCCESS) gemm_add_event(x, mark), x->launches--;
  if (Z == 1) {
    if (dt == KILN_DT_FLOAT)
      cs = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)M, (size_t)N, (size_t)K, (float)d->alpha, A, 0, lda, B, 0, ldb, (float)beta, Y, 0,
                        (size_t)N, &q, &ev);
    else
      cs = CLBlastDgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)M, (size_t)N, (size_t)K, d->alpha, A, 0, lda, B, 0, ldb, beta, Y, 0, (size_t)N, &q,
                        &ev);
  } else {
    size_t *off = malloc(sizeof(size_t) * 3 * (size_t)Z);
    double *ab = malloc(sizeof(double) * 2 * (size_t)Z);
    if (!off || !ab) { free(off); free(ab); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
    float *abf = (float *)ab;
    for (int64_t z = 0; z < Z; z++) {
      int64_t ao = 0, bo = 0, r = z;
      for (int i = d->nb - 1; i >= 0; i--) {
        int64_t c = r % d->bd[i];
        r /= d->bd[i];
        ao += c * d->bsa[i];
        bo += c * d->bsb[i];
      }
      off[z] = (size_t)ao;
      off[Z + z] = (size_t)bo;
      off[2 * Z + z] = (size_t)(z * M * N);
      if (dt == KILN_DT_FLOAT) { abf[z] = (float)d->alpha; abf[Z + z] = (float)beta; }
      else { ab[z] = d->alpha; ab[Z + z] = beta; }
    }
    if (dt == KILN_DT_FLOAT)
      cs = CLBlastSgemmBatched(CLBlastLayoutRowMajor, ta, tb, (size_t)M, (size_t)N, (size_t)K, abf, A, off, lda, B, off + Z, ldb, abf + Z, Y,
                               off + 2 * Z, (size_t)N, (size_t)Z, &q, &ev);
    else
      cs = CLBlastDgemmBatched(CLBlastLayoutRowMajor, ta, tb, (size_t)M, (size_t)N, (size_t)K, ab, A, off, lda, B, off + Z, ldb, ab + Z, Y,
                               off + 2 * Z, (size_t)N, (size_t)Z, &q, &ev);
    free(off);
    free(ab);
  }
  if (cs != CLBlastSuccess) return kiln__err(err, KILN_ECL, "CLBlast %cgemm%s: status %d", dt == KILN_DT_FLOAT ? 'S' : 'D', Z > 1 ? "Batched" : "", (int)cs);
  gemm_add_event(x, ev);
  (void)t;
  (void)n;
  return 0;
}

/* Sets CLBlast's Xgemm parameters on device `dev` for element type dtype
 * (float or double) from a gemm-family parameter string ("KERNEL=2,TM=..."),
 * as a KERNEL=2 candidate does; lets benchmarks run CLBlast itself with the
 * parameters kiln's tuner found. Returns 0 or a negative status. */
int kiln__gemm_clblast_override(cl_device_id dev, int dtype, const char *params, kiln_error *err) {
  kiln_tunable t;
  gemm_desc d = {.M = 1, .N = 1, .K = 1, .nbz = 1};
  gemm_tunable_fill(&d, dtype, 0, &t);
  int p[KILN_MAX_KPARAMS];
  if (kiln_tunable_parse(&t, params, p) || p[GP_KERNEL] != GK_CLBLAST) return kiln__err(err, KILN_EINVAL, "not a CLBlast gemm record: '%s'", params);
  if (dtype != KILN_DT_FLOAT && dtype != KILN_DT_DOUBLE) return kiln__err(err, KILN_EUNSUPPORTED, "CLBlast GEMM on %s", kiln_dtype_name(dtype));
  size_t vals[CLB_NPARAMS];
  clb_params(p, vals);
  CLBlastStatusCode cs = CLBlastOverrideParameters(dev, "Xgemm", dtype == KILN_DT_FLOAT ? CLBlastPrecisionSingle : CLBlastPrecisionDouble,
                                                   CLB_NPARAMS, clb_names, vals);
  if (cs != CLBlastSuccess) return kiln__err(err, KILN_ECL, "CLBlastOverrideParameters(Xgemm): status %d", (int)cs);
  return 0;
}

/* Runs product d with the node's tunable parameters. */
static int gemm_launch(kiln_exec *x, kiln_node *n, int dt, const gemm_desc *d, cl_mem A, cl_mem B, cl_mem C, cl_mem Y, kiln_error *err) {
  kiln_tunable t;
  gemm_tunable_fill(d, dt, gemm_mask(x->g), &t);
  if (n->epi) snprintf(t.epilogue, sizeof t.epilogue, "%s", n->epi->sig);
  const int *p = kiln_exec_tparams(x, n, &t);
  if (n->epi && p[GP_KERNEL] == GK_CLBLAST) return kiln__err(err, KILN_EINTERNAL, "CLBlast's GEMM cannot apply the epilogue %s", t.epilogue);
  switch (p[GP_KERNEL]) {
  case GK_TILED: return gemm_tiled(x, n, dt, &t, p, d, A, B, C, Y, err);
  case GK_PANEL: return gemm_panel(x, n, dt, &t, p, d, A, B, C, Y, err);
  case GK_CLBLAST: return gemm_clblast(x, n, dt, &t, p, d, A, B, C, Y, err);
  }
  return kiln__err(err, KILN_EINVAL, "node '%s': gemm KERNEL=%d unknown", n->name, p[GP_KERNEL]);
}

/* ---- MatMul-style shapes (numpy semantics) ---- */

typedef struct {
  int64_t M, N, K;
  int rank;                 /* output rank */
  int64_t dims[MAXR];       /* output dims */
  int nb;
  int64_t bd[MAXR], bsa[MAXR], bsb[MAXR];
} mm_shape;

static int mm_shape_of(const kiln_value *a, const kiln_value *b, mm_shape *s, kiln_error *err) {
  memset(s, 0, sizeof *s);
  int ra = a->rank, rb = b->rank;
  if (ra < 1 || rb < 1) return kiln__err(err, KILN_ESHAPE, "MatMul operands must have rank >= 1 (got %d and %d)", ra, rb);
  s->M = ra >= 2 ? a->dims[ra - 2] : 1;
  s->K = a->dims[ra - 1];
  int64_t kb = rb >= 2 ? b->dims[rb - 2] : b->dims[0];
  s->N = rb >= 2 ? b->dims[rb - 1] : 1;
  if (kb != s->K) return kiln__err(err, KILN_ESHAPE, "MatMul inner dimensions differ: %lld vs %lld", (long long)s->K, (long long)kb);
  int abr = ra > 2 ? ra - 2 : 0, bbr = rb > 2 ? rb - 2 : 0;
  if (kiln_broadcast_shape(abr, a->dims, bbr, b->dims, &s->nb, s->bd)) return kiln__err(err, KILN_ESHAPE, "MatMul batch dimensions do not broadcast");
  int64_t sa[MAXR], sb[MAXR];
  kiln_strides(ra, a->dims, sa);
  kiln_strides(rb, b->dims, sb);
  for (int i = 0; i < s->nb; i++) {
    int ka = i - (s->nb - abr), kb2 = i - (s->nb - bbr);
    s->bsa[i] = (ka < 0 || a->dims[ka] == 1) ? 0 : sa[ka];
    s->bsb[i] = (kb2 < 0 || b->dims[kb2] == 1) ? 0 : sb[kb2];
  }
  s->rank = 0;
  for (int i = 0; i < s->nb; i++) s->dims[s->rank++] = s->bd[i];
  if (ra >= 2) s->dims[s->rank++] = s->M;
  if (rb >= 2) s->dims[s->rank++] = s->N;
  return 0;
}

/* Offsets of batch z of A and B (elements). */
static void mm_batch_off(const mm_shape *s, int64_t z, int64_t *ao, int64_t *bo) {
  *ao = *bo = 0;
  for (int d = s->nb - 1; d >= 0; d--) {
    int64_t c = z % s->bd[d];
    z /= s->bd[d];
    *ao += c * s->bsa[d];
    *bo += c * s->bsb[d];
  }
}

/* ---- MatMul ---- */

static int matmul_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 2, err)) return err->status;
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 1);
  if (a->dtype != b->dtype) return kiln__err(err, KILN_ESHAPE, "MatMul input types differ (%s vs %s)", kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
  mm_shape s;
  if (mm_shape_of(a, b, &s, err)) return err->status;
  kiln_set_out(g, n, 0, a->dtype, s.rank, s.dims);
  return 0;
}

static int matmul_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 1), *y = kiln_out(g, n, 0);
  mm_shape s;
  if (mm_shape_of(a, b, &s, err)) return err->status;
  int64_t nbat = prod(s.bd, 0, s.nb), M = s.M, N = s.N, K = s.K;
  if (M == 0 || N == 0) return 0;
  for (int64_t z = 0; z < nbat; z++) {
    int64_t ao, bo, yo = z * M * N;
    mm_batch_off(&s, z, &ao, &bo);
    if (y->dtype == KILN_DT_FLOAT) {
      if (K == 0) { memset((float *)out[0] + yo, 0, sizeof(float) * (size_t)(M * N)); continue; }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, (const float *)in[0] + ao, (int)K,
                  (const float *)in[1] + bo, (int)N, 0.0f, (float *)out[0] + yo, (int)N);
    } else if (y->dtype == KILN_DT_DOUBLE) {
      if (K == 0) { memset((double *)out[0] + yo, 0, sizeof(double) * (size_t)(M * N)); continue; }
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, (const double *)in[0] + ao, (int)K,
                  (const double *)in[1] + bo, (int)N, 0.0, (double *)out[0] + yo, (int)N);
    } else if (kiln_dtype_is_float(y->dtype)) {
      for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < N; j++) {
          double acc = 0;
          for (int64_t k = 0; k < K; k++) acc += kiln_load_f(in[0], a->dtype, ao + m * K + k) * kiln_load_f(in[1], b->dtype, bo + k * N + j);
          kiln_store_f(out[0], y->dtype, yo + m * N + j, acc);
        }
    } else {
      for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < N; j++) {
          int64_t acc = 0;
          for (int64_t k = 0; k < K; k++) acc += kiln_load_i(in[0], a->dtype, ao + m * K + k) * kiln_load_i(in[1], b->dtype, bo + k * N + j);
          kiln_store_i(out[0], y->dtype, yo + m * N + j, acc);
        }
    }
  }
  return 0;
}

static int matmul_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_out(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE && dt != KILN_DT_INT32 && dt != KILN_DT_INT64)
    return kiln__err(err, KILN_EUNSUPPORTED, "MatMul on %s is not implemented on the device", kiln_dtype_name(dt));
  mm_shape s;
  if (mm_shape_of(kiln_in(g, n, 0), kiln_in(g, n, 1), &s, err) || gemm_half_check(g, kiln_out(g, n, 0), err)) return err->status;
  gemm_desc d = {.M = s.M, .N = s.N, .K = s.K};
  return gemm_desc_check(&d, err);
}

/* The product a MatMul node computes. */
static int matmul_desc(kiln_graph *g, kiln_node *n, gemm_desc *d, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 1);
  mm_shape s;
  if (mm_shape_of(a, b, &s, err)) return err->status;
  memset(d, 0, sizeof *d);
  d->M = s.M, d->N = s.N, d->K = s.K, d->sam = s.K, d->sak = 1, d->sbk = s.N, d->sbn = 1, d->nb = s.nb, d->alpha = 1, d->beta = 0;
  memcpy(d->bd, s.bd, sizeof d->bd);
  memcpy(d->bsa, s.bsa, sizeof d->bsa);
  memcpy(d->bsb, s.bsb, sizeof d->bsb);
  d->nbz = s.K * s.N != 0 ? kiln_value_numel(b) / (s.K * s.N) : 1;
  d->b_const = b->is_const;
  return 0;
}

static int matmul_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  gemm_desc d;
  if (matmul_desc(x->g, n, &d, err)) return err->status;
  return gemm_launch(x, n, kiln_dev_dtype(kiln_out(x->g, n, 0)), &d, kiln_in_buf(x, n, 0), kiln_in_buf(x, n, 1), NULL, kiln_epi_out(x, n), err);
}

static int matmul_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  gemm_desc d;
  kiln_error e = {0};
  if (matmul_desc(g, n, &d, &e)) return 1;
  gemm_tunable_fill(&d, kiln_dev_dtype(kiln_out(g, n, 0)), gemm_mask(g), t); /* fp16 storage: instances of their own */
  if (n->epi) snprintf(t->epilogue, sizeof t->epilogue, "%s", n->epi->sig);
  return 0;
}

/* ---- Gemm ---- */

typedef struct {
  int64_t M, N, K;
  int ta, tb;
  double alpha, beta;
  int has_c;
  int64_t scm, scn;
} gemm_shape;

static int gemm_shape_of(kiln_graph *g, kiln_node *n, gemm_shape *s, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 1), *c = kiln_in(g, n, 2);
  if (!a || !b) return kiln__err(err, KILN_EINVAL, "Gemm needs inputs A and B");
  if (a->rank != 2 || b->rank != 2) return kiln__err(err, KILN_ESHAPE, "Gemm needs 2-D A and B (got ranks %d and %d)", a->rank, b->rank);
  s->ta = kiln_attr_int(n, "transA", 0) != 0;
  s->tb = kiln_attr_int(n, "transB", 0) != 0;
  s->alpha = kiln_attr_float(n, "alpha", 1.0f);
  s->beta = kiln_attr_float(n, "beta", 1.0f);
  s->M = s->ta ? a->dims[1] : a->dims[0];
  s->K = s->ta ? a->dims[0] : a->dims[1];
  int64_t kb = s->tb ? b->dims[1] : b->dims[0];
  s->N = s->tb ? b->dims[0] : b->dims[1];
  if (kb != s->K) return kiln__err(err, KILN_ESHAPE, "Gemm inner dimensions differ: %lld vs %lld", (long long)s->K, (long long)kb);
  s->has_c = c != NULL && s->beta != 0;
  s->scm = s->scn = 0;
  if (c) {
    if (c->rank > 2) return kiln__err(err, KILN_ESHAPE, "Gemm bias C has rank %d", c->rank);
    int64_t cm = c->rank == 2 ? c->dims[0] : 1, cn = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
    if ((cm != 1 && cm != s->M) || (cn != 1 && cn != s->N))
      return kiln__err(err, KILN_ESHAPE, "Gemm bias C does not broadcast to [%lld,%lld]", (long long)s->M, (long long)s->N);
    s->scm = cm == 1 ? 0 : cn;
    s->scn = cn == 1 ? 0 : 1;
  }
  return 0;
}

static int gemm_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  gemm_shape s;
  if (gemm_shape_of(g, n, &s, err)) return err->status;
  int64_t d[2] = {s.M, s.N};
  kiln_set_out(g, n, 0, kiln_in(g, n, 0)->dtype, 2, d);
  return 0;
}

static int gemm_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  gemm_shape s;
  if (gemm_shape_of(g, n, &s, err)) return err->status;
  int dt = kiln_out(g, n, 0)->dtype;
  int64_t M = s.M, N = s.N, K = s.K;
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 1);
  int lda = (int)a->dims[1], ldb = (int)b->dims[1];
  if (M == 0 || N == 0) return 0;
  if (dt == KILN_DT_FLOAT && K > 0) {
    cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, (float)s.alpha,
                in[0], lda, in[1], ldb, 0.0f, out[0], (int)N);
  } else if (dt == KILN_DT_DOUBLE && K > 0) {
    cblas_dgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, s.alpha,
                in[0], lda, in[1], ldb, 0.0, out[0], (int)N);
  } else {
    for (int64_t m = 0; m < M; m++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += kiln_load_f(in[0], a->dtype, s.ta ? k * M + m : m * K + k) * kiln_load_f(in[1], b->dtype, s.tb ? j * K + k : k * N + j);
        kiln_store_f(out[0], dt, m * N + j, s.alpha * acc);
      }
  }
  if (s.has_c) {
    kiln_value *c = kiln_in(g, n, 2);
    for (int64_t m = 0; m < M; m++)
      for (int64_t j = 0; j < N; j++)
        kiln_store_f(out[0], dt, m * N + j, kiln_load_f(out[0], dt, m * N + j) + s.beta * kiln_load_f(in[2], c->dtype, m * s.scm + j * s.scn));
  }
  return 0;
}

static int gemm_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (check_float(g, n, kiln_out(g, n, 0)->dtype, err) || gemm_half_check(g, kiln_out(g, n, 0), err)) return err->status;
  gemm_shape s;
  if (gemm_shape_of(g, n, &s, err)) return err->status;
  gemm_desc d = {.M = s.M, .N = s.N, .K = s.K};
  return gemm_desc_check(&d, err);
}

/* The product a Gemm node computes. */
static int gemm_node_desc(kiln_graph *g, kiln_node *n, gemm_desc *d, kiln_error *err) {
  gemm_shape s;
  if (gemm_shape_of(g, n, &s, err)) return err->status;
  memset(d, 0, sizeof *d);
  d->M = s.M, d->N = s.N, d->K = s.K, d->nb = 0, d->alpha = s.alpha, d->beta = s.beta, d->has_c = s.has_c, d->scm = s.scm, d->scn = s.scn;
  d->sam = s.ta ? 1 : s.K;
  d->sak = s.ta ? s.M : 1;
  d->sbk = s.tb ? 1 : s.N;
  d->sbn = s.tb ? s.K : 1;
  d->nbz = 1;
  d->b_const = kiln_in(g, n, 1)->is_const;
  return 0;
}

static int gemm_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  gemm_desc d;
  if (gemm_node_desc(x->g, n, &d, err)) return err->status;
  return gemm_launch(x, n, kiln_dev_dtype(kiln_out(x->g, n, 0)), &d, kiln_in_buf(x, n, 0), kiln_in_buf(x, n, 1), d.has_c ? kiln_in_buf(x, n, 2) : NULL,
                     kiln_epi_out(x, n), err);
}

static int gemm_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  gemm_desc d;
  kiln_error e = {0};
  if (gemm_node_desc(g, n, &d, &e)) return 1;
  gemm_tunable_fill(&d, kiln_dev_dtype(kiln_out(g, n, 0)), gemm_mask(g), t); /* fp16 storage: instances of their own */
  if (n->epi) snprintf(t->epilogue, sizeof t->epilogue, "%s", n->epi->sig);
  return 0;
}

/* ===========================================================================
 * Einsum
 * ======================================================================== */

#define EMAX 16   /* labels per side (output / contracted), as in gemm.cl */
#define EIN 8     /* operands handled by the reference */

typedef struct {
  int nin;
  int nlab;                        /* labels: ellipsis dims first, then letters */
  int64_t dim[EMAX * 2];
  int64_t st[EIN][EMAX * 2];       /* per operand, per label stride (summed for repeats) */
  int nout, out[EMAX];             /* output labels */
  int nsum, sum[EMAX];             /* contracted labels */
} einsum_plan;

static int einsum_plan_of(kiln_graph *g, kiln_node *n, einsum_plan *p, kiln_error *err) {
  memset(p, 0, sizeof *p);
  const char *eq = kiln_attr_str(n, "equation", NULL);
  if (!eq) return kiln__err(err, KILN_EINVAL, "Einsum without an equation");
  char buf[512];
  size_t bl = 0;
  for (const char *c = eq; *c && bl + 1 < sizeof buf; c++)
    if (*c != ' ') buf[bl++] = *c;
  buf[bl] = 0;
  char *arrow = strstr(buf, "->");
  char *rhs = NULL;
  if (arrow) { *arrow = 0; rhs = arrow + 2; }
  p->nin = n->nin;
  if (p->nin < 1 || p->nin > EIN) return kiln__err(err, KILN_EUNSUPPORTED, "Einsum with %d operands", p->nin);
  /* split the left-hand side into terms */
  char *terms[EIN];
  int nt = 0;
  for (char *t = buf;; ) {
    if (nt >= EIN) return kiln__err(err, KILN_EUNSUPPORTED, "Einsum with too many terms");
    terms[nt++] = t;
    char *c = strchr(t, ',');
    if (!c) break;
    *c = 0;
    t = c + 1;
  }
  if (nt != p->nin) return kiln__err(err, KILN_ESHAPE, "Einsum equation '%s' has %d terms for %d inputs", eq, nt, p->nin);
  /* ellipsis rank */
  int ne = 0, ell[EIN] = {0}, nlet[EIN] = {0};
  for (int i = 0; i < nt; i++) {
    kiln_value *v = kiln_in(g, n, i);
    if (!v) return kiln__err(err, KILN_EINVAL, "Einsum input %d is missing", i);
    for (const char *c = terms[i]; *c; c++) {
      if (*c == '.') {
        if (strncmp(c, "...", 3)) return kiln__err(err, KILN_ESHAPE, "Einsum equation '%s': bad ellipsis", eq);
        ell[i] = 1;
        c += 2;
      } else if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')) nlet[i]++;
      else return kiln__err(err, KILN_ESHAPE, "Einsum equation '%s': bad character '%c'", eq, *c);
    }
    int e = v->rank - nlet[i];
    if (e < 0 || (e > 0 && !ell[i])) return kiln__err(err, KILN_ESHAPE, "Einsum term '%s' does not match the rank %d of input %d", terms[i], v->rank, i);
    ell[i] = ell[i] ? e : 0;
    if (ell[i] > ne) ne = ell[i];
  }
  /* labels: 0..ne-1 ellipsis dims, then letters in order of appearance */
  char letters[64];
  int nl = 0;
  for (int i = 0; i < ne; i++) p->dim[i] = 1;
  int count[EMAX * 2] = {0};
  for (int i = 0; i < nt; i++) {
    kiln_value *v = kiln_in(g, n, i);
    int64_t s[MAXR];
    kiln_strides(v->rank, v->dims, s);
    int ax = 0;
    for (const char *c = terms[i]; *c; c++) {
      if (*c == '.') {
        for (int k = 0; k < ell[i]; k++, ax++) {
          int lab = ne - ell[i] + k;
          int64_t d = v->dims[ax];
          if (d != 1) {
            if (p->dim[lab] != 1 && p->dim[lab] != d) return kiln__err(err, KILN_ESHAPE, "Einsum: ellipsis dimensions do not broadcast");
            p->dim[lab] = d;
            p->st[i][lab] += s[ax];
          }
        }
        c += 2;
        continue;
      }
      int lab = -1;
      for (int k = 0; k < nl; k++) if (letters[k] == *c) lab = ne + k;
      if (lab < 0) {
        if (ne + nl >= EMAX * 2) return kiln__err(err, KILN_EUNSUPPORTED, "Einsum with too many labels");
        letters[nl] = *c;
        lab = ne + nl++;
        p->dim[lab] = v->dims[ax];
      } else if (p->dim[lab] != v->dims[ax]) {
        return kiln__err(err, KILN_ESHAPE, "Einsum: label '%c' has sizes %lld and %lld", *c, (long long)p->dim[lab], (long long)v->dims[ax]);
      }
      p->st[i][lab] += s[ax];
      count[lab]++;
      ax++;
    }
  }
  p->nlab = ne + nl;
  int used[EMAX * 2] = {0};
  if (rhs) {
    int has_ell = 0;
    for (const char *c = rhs; *c; c++) {
      if (*c == '.') {
        if (strncmp(c, "...", 3)) return kiln__err(err, KILN_ESHAPE, "Einsum equation '%s': bad ellipsis", eq);
        has_ell = 1;
        for (int k = 0; k < ne; k++) { if (p->nout >= EMAX) goto too_many; p->out[p->nout++] = k; used[k] = 1; }
        c += 2;
        continue;
      }
      int lab = -1;
      for (int k = 0; k < nl; k++) if (letters[k] == *c) lab = ne + k;
      if (lab < 0 || used[lab]) return kiln__err(err, KILN_ESHAPE, "Einsum equation '%s': bad output label '%c'", eq, *c);
      if (p->nout >= EMAX) goto too_many;
      p->out[p->nout++] = lab;
      used[lab] = 1;
    }
    (void)has_ell;
  } else {
    for (int k = 0; k < ne; k++) { p->out[p->nout++] = k; used[k] = 1; }
    for (int ch = 0; ch < 128; ch++)
      for (int k = 0; k < nl; k++)
        if (letters[k] == ch && count[ne + k] == 1) {
          if (p->nout >= EMAX) goto too_many;
          p->out[p->nout++] = ne + k;
          used[ne + k] = 1;
        }
  }
  for (int k = 0; k < p->nlab; k++)
    if (!used[k]) {
      if (p->nsum >= EMAX) goto too_many;
      p->sum[p->nsum++] = k;
    }
  return 0;
too_many:
  return kiln__err(err, KILN_EUNSUPPORTED, "Einsum with more than %d output or contracted labels", EMAX);
}

static int einsum_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  einsum_plan p;
  if (einsum_plan_of(g, n, &p, err)) return err->status;
  int dt = kiln_in(g, n, 0)->dtype;
  for (int i = 1; i < p.nin; i++)
    if (kiln_in(g, n, i)->dtype != dt) return kiln__err(err, KILN_ESHAPE, "Einsum input types differ");
  if (p.nout > MAXR) return kiln__err(err, KILN_EUNSUPPORTED, "Einsum output rank %d", p.nout);
  int64_t d[MAXR];
  for (int i = 0; i < p.nout; i++) d[i] = p.dim[p.out[i]];
  kiln_set_out(g, n, 0, dt, p.nout, d);
  return 0;
}

static int einsum_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  einsum_plan p;
  if (einsum_plan_of(g, n, &p, err)) return err->status;
  kiln_value *y = kiln_out(g, n, 0);
  int isf = kiln_dtype_is_float(y->dtype);
  int64_t total = kiln_value_numel(y), cnt = 1;
  for (int k = 0; k < p.nsum; k++) cnt *= p.dim[p.sum[k]];
  for (int64_t o = 0; o < total; o++) {
    int64_t base[EIN] = {0}, rem = o;
    for (int d = p.nout - 1; d >= 0; d--) {
      int lab = p.out[d];
      int64_t c = rem % p.dim[lab];
      rem /= p.dim[lab];
      for (int i = 0; i < p.nin; i++) base[i] += c * p.st[i][lab];
    }
    double accf = 0;
    int64_t acci = 0;
    for (int64_t s = 0; s < cnt; s++) {
      int64_t off[EIN], r2 = s;
      memcpy(off, base, sizeof off);
      for (int d = p.nsum - 1; d >= 0; d--) {
        int lab = p.sum[d];
        int64_t c = r2 % p.dim[lab];
        r2 /= p.dim[lab];
        for (int i = 0; i < p.nin; i++) off[i] += c * p.st[i][lab];
      }
      if (isf) {
        double v = 1;
        for (int i = 0; i < p.nin; i++) v *= kiln_load_f(in[i], kiln_in(g, n, i)->dtype, off[i]);
        accf += v;
      } else {
        int64_t v = 1;
        for (int i = 0; i < p.nin; i++) v *= kiln_load_i(in[i], kiln_in(g, n, i)->dtype, off[i]);
        acci += v;
      }
    }
    if (isf) kiln_store_f(out[0], y->dtype, o, accf);
    else kiln_store_i(out[0], y->dtype, o, acci);
  }
  return 0;
}

static int einsum_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_out(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE && dt != KILN_DT_INT32 && dt != KILN_DT_INT64)
    return kiln__err(err, KILN_EUNSUPPORTED, "Einsum on %s is not implemented on the device", kiln_dtype_name(dt));
  if (n->nin > 2) return kiln__err(err, KILN_EUNSUPPORTED, "Einsum with %d operands (the device handles 1 or 2)", n->nin);
  return 0;
}

static int einsum_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  einsum_plan p;
  if (einsum_plan_of(g, n, &p, err)) return err->status;
  int64_t meta[3 + 6 * EMAX] = {0};
  meta[0] = p.nout;
  meta[1] = p.nsum;
  meta[2] = p.nin;
  for (int i = 0; i < p.nout; i++) {
    meta[3 + i] = p.dim[p.out[i]];
    meta[3 + 2 * EMAX + i] = p.st[0][p.out[i]];
    meta[3 + 4 * EMAX + i] = p.nin > 1 ? p.st[1][p.out[i]] : 0;
  }
  for (int i = 0; i < p.nsum; i++) {
    meta[3 + EMAX + i] = p.dim[p.sum[i]];
    meta[3 + 3 * EMAX + i] = p.st[0][p.sum[i]];
    meta[3 + 5 * EMAX + i] = p.nin > 1 ? p.st[1][p.sum[i]] : 0;
  }
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  kiln_value *y = kiln_out(g, n, 0);
  char opts[200];
  cl_kernel k = kiln_cl_kernel(x->d, "gemm.cl", kiln_cl_type_opts(y->dtype, opts, sizeof opts), "einsum", err);
  if (!k) return err->status;
  cl_mem b0 = kiln_in_buf(x, n, 0), b1 = p.nin > 1 ? kiln_in_buf(x, n, 1) : b0, by = kiln_out_buf(x, n, 0);
  cl_long total = kiln_value_numel(y);
  if (kiln_cl_args(k, err, KARG(b0), KARG(b1), KARG(by), KARG(mb), KARG(total), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

/* ===========================================================================
 * Det
 * ======================================================================== */

static int det_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 1, err)) return err->status;
  kiln_value *a = kiln_in(g, n, 0);
  if (a->rank < 2 || a->dims[a->rank - 1] != a->dims[a->rank - 2]) return kiln__err(err, KILN_ESHAPE, "Det needs [..., n, n] input");
  kiln_set_out(g, n, 0, a->dtype, a->rank - 2, a->dims);
  return 0;
}

static int det_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t sz = a->dims[a->rank - 1], nm = prod(a->dims, 0, a->rank - 2);
  double *w = malloc(sizeof(double) * (size_t)(sz * sz + 1));
  if (!w) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int64_t b = 0; b < nm; b++) {
    for (int64_t e = 0; e < sz * sz; e++) w[e] = kiln_load_f(in[0], a->dtype, b * sz * sz + e);
    double d = 1;
    for (int64_t c = 0; c < sz; c++) {
      int64_t p = c;
      for (int64_t r = c + 1; r < sz; r++) if (fabs(w[r * sz + c]) > fabs(w[p * sz + c])) p = r;
      if (w[p * sz + c] == 0) { d = 0; break; }
      if (p != c) { for (int64_t k = 0; k < sz; k++) { double t = w[c * sz + k]; w[c * sz + k] = w[p * sz + k]; w[p * sz + k] = t; } d = -d; }
      d *= w[c * sz + c];
      for (int64_t r = c + 1; r < sz; r++) {
        double f = w[r * sz + c] / w[c * sz + c];
        for (int64_t k = c; k < sz; k++) w[r * sz + k] -= f * w[c * sz + k];
      }
    }
    kiln_store_f(out[0], a->dtype, b, d);
  }
  free(w);
  return 0;
}

static int det_check(kiln_graph *g, kiln_node *n, kiln_error *err) { return check_float(g, n, kiln_out(g, n, 0)->dtype, err); }

static int det_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0);
  int64_t sz = a->dims[a->rank - 1];
  cl_long nm = prod(a->dims, 0, a->rank - 2);
  cl_mem work = kiln_exec_scratch(x, n, 0, kiln_value_bytes(a), err);
  if (!work) return err->status;
  char opts[200];
  cl_kernel k = kiln_cl_kernel(x->d, "gemm.cl", kiln_cl_type_opts(a->dtype, opts, sizeof opts), "det", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  cl_int ni = (cl_int)sz;
  if (kiln_cl_args(k, err, KARG(bx), KARG(work), KARG(by), KARG(ni), KARG(nm), KEND)) return err->status;
  size_t gws = (size_t)nm;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

/* ===========================================================================
 * Quantized products: MatMulInteger, QLinearMatMul
 * ======================================================================== */

static bool is_q8(int dt) { return dt == KILN_DT_UINT8 || dt == KILN_DT_INT8; }

/* Mode of a zero point / scale: 0 absent, 1 per tensor, 2 per row (len M) or
 * per column (len N); -1 unsupported layout. */
static int q_mode(const kiln_value *v, int64_t len) {
  if (!v) return 0;
  int64_t ne = kiln_value_numel(v);
  if (ne == 1) return 1;
  if (v->rank == 1 && ne == len) return 2;
  return -1;
}

static int mmi_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 2, err)) return err->status;
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 1);
  if (!is_q8(a->dtype) || !is_q8(b->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "MatMulInteger on %s x %s", kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
  mm_shape s;
  if (mm_shape_of(a, b, &s, err)) return err->status;
  if (q_mode(kiln_in(g, n, 2), s.M) < 0 || q_mode(kiln_in(g, n, 3), s.N) < 0) return kiln__err(err, KILN_EUNSUPPORTED, "MatMulInteger zero point layout");
  kiln_set_out(g, n, 0, KILN_DT_INT32, s.rank, s.dims);
  return 0;
}

/* Shared CPU loop of the quantized products: acc(z,m,n) in int64. */
static void qmm_ref_acc(kiln_graph *g, kiln_node *n, const mm_shape *s, void *a, void *b, const kiln_value *za, void *zap,
                        const kiln_value *zb, void *zbp, void (*emit)(void *ctx, int64_t idx, int64_t m, int64_t nn, int64_t acc), void *ctx) {
  kiln_value *av = kiln_in(g, n, 0), *bv = kiln_in(g, n, n->op_type[0] == 'Q' ? 3 : 1);
  int ma = q_mode(za, s->M), mb = q_mode(zb, s->N);
  int64_t nbat = prod(s->bd, 0, s->nb);
  for (int64_t z = 0; z < nbat; z++) {
    int64_t ao, bo;
    mm_batch_off(s, z, &ao, &bo);
    for (int64_t m = 0; m < s->M; m++)
      for (int64_t j = 0; j < s->N; j++) {
        int64_t zpa = ma ? kiln_load_i(zap, za->dtype, ma == 2 ? m : 0) : 0, zpb = mb ? kiln_load_i(zbp, zb->dtype, mb == 2 ? j : 0) : 0;
        int64_t acc = 0;
        for (int64_t k = 0; k < s->K; k++)
          acc += (kiln_load_i(a, av->dtype, ao + m * s->K + k) - zpa) * (kiln_load_i(b, bv->dtype, bo + k * s->N + j) - zpb);
        emit(ctx, (z * s->M + m) * s->N + j, m, j, acc);
      }
  }
}

static void mmi_emit(void *ctx, int64_t idx, int64_t m, int64_t nn, int64_t acc) { ((int32_t *)ctx)[idx] = (int32_t)acc; }

static int mmi_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  mm_shape s;
  if (mm_shape_of(kiln_in(g, n, 0), kiln_in(g, n, 1), &s, err)) return err->status;
  qmm_ref_acc(g, n, &s, in[0], in[1], kiln_in(g, n, 2), in[2], kiln_in(g, n, 3), in[3], mmi_emit, out[0]);
  return 0;
}

static const char *qopts(int ta, int tb, int ty, char *buf, size_t len) {
  snprintf(buf, len, "-DQA=%s -DQB=%s -DQY=%s -DQY_MIN=%d -DQY_MAX=%d", kiln_cl_type(ta), kiln_cl_type(tb), kiln_cl_type(ty),
           ty == KILN_DT_INT8 ? -128 : 0, ty == KILN_DT_INT8 ? 127 : 255);
  return buf;
}

/* The shape of a quantized product of inputs 0 and ib into *s and its
 * batch metadata (gemm.cl's matmul_int, qlinear_matmul) into *mb; 0 ok. */
static int qmm_setup(kiln_exec *x, kiln_node *n, int ib, mm_shape *s, cl_mem *mb, kiln_error *err) {
  if (mm_shape_of(kiln_in(x->g, n, 0), kiln_in(x->g, n, ib), s, err)) return err->status;
  int64_t meta[1 + 3 * MAXR] = {0};
  meta[0] = s->nb;
  for (int i = 0; i < s->nb; i++) { meta[1 + i] = s->bd[i]; meta[1 + MAXR + i] = s->bsa[i]; meta[1 + 2 * MAXR + i] = s->bsb[i]; }
  *mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  return *mb ? 0 : err->status;
}

static int mmi_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 1);
  mm_shape s;
  cl_mem mb;
  if (qmm_setup(x, n, 1, &s, &mb, err)) return err->status;
  char opts[200];
  cl_kernel k = kiln_cl_kernel(x->d, "gemm.cl", qopts(a->dtype, b->dtype, KILN_DT_UINT8, opts, sizeof opts), "matmul_int", err);
  if (!k) return err->status;
  cl_int M = (cl_int)s.M, N = (cl_int)s.N, K = (cl_int)s.K;
  cl_int azm = q_mode(kiln_in(g, n, 2), s.M), bzm = q_mode(kiln_in(g, n, 3), s.N);
  cl_mem ba = kiln_in_buf(x, n, 0), bb = kiln_in_buf(x, n, 1), by = kiln_out_buf(x, n, 0);
  cl_mem bza = azm ? kiln_in_buf(x, n, 2) : ba, bzb = bzm ? kiln_in_buf(x, n, 3) : bb;
  if (kiln_cl_args(k, err, KARG(M), KARG(N), KARG(K), KARG(ba), KARG(bb), KARG(bza), KARG(azm), KARG(bzb), KARG(bzm), KARG(by), KARG(mb), KEND))
    return err->status;
  size_t gws[3] = {(size_t)s.N, (size_t)s.M, (size_t)prod(s.bd, 0, s.nb)};
  return kiln_exec_launch(x, k, 3, gws, NULL, err);
}

/* A quantized product of inputs 0 and ib within the kernels' int sizes. */
static int qmm_check(kiln_graph *g, kiln_node *n, int ib, kiln_error *err) {
  mm_shape s;
  if (mm_shape_of(kiln_in(g, n, 0), kiln_in(g, n, ib), &s, err)) return err->status;
  if (s.M > INT_MAX || s.N > INT_MAX || s.K > INT_MAX) return kiln__err(err, KILN_EUNSUPPORTED, "matrix dimension above 2^31");
  return 0;
}
static int mmi_check(kiln_graph *g, kiln_node *n, kiln_error *err) { return qmm_check(g, n, 1, err); }

/* QLinearMatMul inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point. */
static int qlmm_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 8, err)) return err->status;
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 3), *yz = kiln_in(g, n, 7);
  if (!is_q8(a->dtype) || !is_q8(b->dtype) || !is_q8(yz->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "QLinearMatMul on %s x %s", kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
  static const int scales[3] = {1, 4, 6};
  for (int i = 0; i < 3; i++)
    if (kiln_in(g, n, scales[i])->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "QLinearMatMul scale of type %s", kiln_dtype_name(kiln_in(g, n, scales[i])->dtype));
  mm_shape s;
  if (mm_shape_of(a, b, &s, err)) return err->status;
  if (q_mode(kiln_in(g, n, 1), s.M) < 1 || q_mode(kiln_in(g, n, 2), s.M) < 1 || q_mode(kiln_in(g, n, 4), s.N) < 1 || q_mode(kiln_in(g, n, 5), s.N) < 1 ||
      kiln_value_numel(kiln_in(g, n, 6)) != 1 || kiln_value_numel(yz) != 1)
    return kiln__err(err, KILN_EUNSUPPORTED, "QLinearMatMul scale / zero point layout");
  kiln_set_out(g, n, 0, yz->dtype, s.rank, s.dims);
  return 0;
}

typedef struct { kiln_graph *g; kiln_node *n; void **in; void *out; int64_t M, N; } qlmm_ctx;

static void qlmm_emit(void *ctx, int64_t idx, int64_t m, int64_t nn, int64_t acc) {
  qlmm_ctx *c = ctx;
  kiln_value *as = kiln_in(c->g, c->n, 1), *bs = kiln_in(c->g, c->n, 4), *yz = kiln_in(c->g, c->n, 7);
  float sa = ((float *)c->in[1])[q_mode(as, c->M) == 2 ? m : 0], sb = ((float *)c->in[4])[q_mode(bs, c->N) == 2 ? nn : 0];
  float sy = ((float *)c->in[6])[0];
  double v = rint((double)acc * (double)(sa * sb / sy)) + (double)kiln_load_i(c->in[7], yz->dtype, 0);
  double lo = yz->dtype == KILN_DT_INT8 ? -128 : 0, hi = yz->dtype == KILN_DT_INT8 ? 127 : 255;
  kiln_store_i(c->out, yz->dtype, idx, (int64_t)(v < lo ? lo : v > hi ? hi : v));
}

static int qlmm_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  mm_shape s;
  if (mm_shape_of(kiln_in(g, n, 0), kiln_in(g, n, 3), &s, err)) return err->status;
  qlmm_ctx c = {g, n, in, out[0], s.M, s.N};
  qmm_ref_acc(g, n, &s, in[0], in[3], kiln_in(g, n, 2), in[2], kiln_in(g, n, 5), in[5], qlmm_emit, &c);
  return 0;
}

static int qlmm_check(kiln_graph *g, kiln_node *n, kiln_error *err) { return qmm_check(g, n, 3, err); }

static int qlmm_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *a = kiln_in(g, n, 0), *b = kiln_in(g, n, 3);
  mm_shape s;
  cl_mem mb;
  if (qmm_setup(x, n, 3, &s, &mb, err)) return err->status;
  char opts[200];
  cl_kernel k = kiln_cl_kernel(x->d, "gemm.cl", qopts(a->dtype, b->dtype, kiln_in(g, n, 7)->dtype, opts, sizeof opts), "qlinear_matmul", err);
  if (!k) return err->status;
  cl_int M = (cl_int)s.M, N = (cl_int)s.N, K = (cl_int)s.K, one = 1;
  cl_int asm_ = q_mode(kiln_in(g, n, 1), s.M), azm = q_mode(kiln_in(g, n, 2), s.M);
  cl_int bsm = q_mode(kiln_in(g, n, 4), s.N), bzm = q_mode(kiln_in(g, n, 5), s.N);
  cl_mem ba = kiln_in_buf(x, n, 0), bas = kiln_in_buf(x, n, 1), baz = kiln_in_buf(x, n, 2);
  cl_mem bb = kiln_in_buf(x, n, 3), bbs = kiln_in_buf(x, n, 4), bbz = kiln_in_buf(x, n, 5);
  cl_mem bys = kiln_in_buf(x, n, 6), byz = kiln_in_buf(x, n, 7), by = kiln_out_buf(x, n, 0);
  if (kiln_cl_args(k, err, KARG(M), KARG(N), KARG(K), KARG(ba), KARG(bas), KARG(asm_), KARG(baz), KARG(azm), KARG(bb), KARG(bbs), KARG(bsm),
                   KARG(bbz), KARG(bzm), KARG(bys), KARG(byz), KARG(one), KARG(by), KARG(mb), KEND))
    return err->status;
  size_t gws[3] = {(size_t)s.N, (size_t)s.M, (size_t)prod(s.bd, 0, s.nb)};
  return kiln_exec_launch(x, k, 3, gws, NULL, err);
}

/* Work-group size of the row reductions in norm.cl (a power of two). */
#define NORM_WG KILN_NORM_WG

/* Build options of norm.cl's floating-point kernels. */
static const char *norm_opts(int dt, char *buf, size_t len) {
  char t[200];
  snprintf(buf, len, "%s -DNORM_WG=%d", kiln_cl_type_opts(dt, t, sizeof t), NORM_WG);
  return buf;
}

/* ===========================================================================
 * QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
 * ======================================================================== */

/* Per-axis layout of a scale for input x: element i uses (i / adiv) % alen. */
static int q_axis(kiln_node *n, const kiln_value *xv, const kiln_value *sc, int64_t *adiv, int64_t *alen, kiln_error *err) {
  *adiv = 1;
  *alen = 1;
  int64_t ns = kiln_value_numel(sc);
  if (sc->rank == 0 || (ns == 1 && sc->rank == 1)) return 0;
  if (sc->rank != 1) return kiln__err(err, KILN_EUNSUPPORTED, "%s with a %d-D scale (blocked quantization)", n->op_type, sc->rank);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 1), xv->rank);
  if (ax < 0 || xv->dims[ax] != ns) return kiln__err(err, KILN_ESHAPE, "%s: scale of %lld elements does not match axis %d", n->op_type, (long long)ns, ax);
  *adiv = prod(xv->dims, ax + 1, xv->rank);
  *alen = ns;
  return 0;
}

/* q_axis, and a zero point zp (NULL: none) of one value per scale value. */
static int q_axis_zp(kiln_node *n, kiln_value *xv, kiln_value *sc, kiln_value *zp, kiln_error *err) {
  int64_t adiv, alen;
  if (q_axis(n, xv, sc, &adiv, &alen, err)) return err->status;
  if (zp && kiln_value_numel(zp) != alen) return kiln__err(err, KILN_ESHAPE, "%s zero point size differs from the scale's", n->op_type);
  return 0;
}

static int quant_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 2, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1), *zp = kiln_in(g, n, 2);
  int odt = zp ? zp->dtype : KILN_DT_UINT8;
  if (!is_q8(odt)) return kiln__err(err, KILN_EUNSUPPORTED, "QuantizeLinear to %s", kiln_dtype_name(odt));
  if (xv->dtype != KILN_DT_FLOAT || sc->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "QuantizeLinear from %s", kiln_dtype_name(xv->dtype));
  if (q_axis_zp(n, xv, sc, zp, err)) return err->status;
  kiln_set_out(g, n, 0, odt, xv->rank, xv->dims);
  return 0;
}

static int quant_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1), *zp = kiln_in(g, n, 2), *y = kiln_out(g, n, 0);
  int64_t adiv, alen;
  if (q_axis(n, xv, sc, &adiv, &alen, err)) return err->status;
  double lo = y->dtype == KILN_DT_INT8 ? -128 : 0, hi = y->dtype == KILN_DT_INT8 ? 127 : 255;
  int64_t total = kiln_value_numel(xv);
  for (int64_t i = 0; i < total; i++) {
    int64_t a = (i / adiv) % alen;
    float sc = ((const float *)in[1])[a], q = sc != 0 ? ((const float *)in[0])[i] / sc : 0.0f;
    double v = rint((double)q) + (zp ? (double)kiln_load_i(in[2], zp->dtype, a) : 0.0);
    kiln_store_i(out[0], y->dtype, i, (int64_t)(v < lo ? lo : v > hi ? hi : v));
  }
  return 0;
}

/* Launches quantize / dequantize k over node n's input (x, scale, zero
 * point or no_zp when there is none, y; the axis as a divisor and length). */
static int q_launch(kiln_exec *x, kiln_node *n, cl_kernel k, cl_mem no_zp, int64_t adiv, int64_t alen, kiln_error *err) {
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), bs = kiln_in_buf(x, n, 1), by = kiln_out_buf(x, n, 0);
  cl_int has_zp = kiln_has_in(n, 2);
  cl_mem bz = has_zp ? kiln_in_buf(x, n, 2) : no_zp;
  cl_long ad = adiv, al = alen, total = kiln_value_numel(kiln_in(x->g, n, 0));
  if (kiln_cl_args(k, err, KARG(bx), KARG(bs), KARG(bz), KARG(has_zp), KARG(by), KARG(ad), KARG(al), KARG(total), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int quant_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1), *y = kiln_out(g, n, 0);
  int64_t adiv, alen;
  if (q_axis(n, xv, sc, &adiv, &alen, err)) return err->status;
  char opts[200];
  cl_kernel k = kiln_cl_kernel(x->d, "norm.cl", kiln_cl_type_opts(y->dtype, opts, sizeof opts), "quantize", err);
  return q_launch(x, n, k, kiln_out_buf(x, n, 0), adiv, alen, err);
}

static int dequant_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 2, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1), *zp = kiln_in(g, n, 2);
  if (!is_q8(xv->dtype) && xv->dtype != KILN_DT_INT32) return kiln__err(err, KILN_EUNSUPPORTED, "DequantizeLinear from %s", kiln_dtype_name(xv->dtype));
  if (sc->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "DequantizeLinear with a %s scale", kiln_dtype_name(sc->dtype));
  if (zp && zp->dtype != xv->dtype) return kiln__err(err, KILN_ESHAPE, "DequantizeLinear zero point type differs from the input's");
  if (q_axis_zp(n, xv, sc, zp, err)) return err->status;
  kiln_set_out(g, n, 0, KILN_DT_FLOAT, xv->rank, xv->dims);
  return 0;
}

static int dequant_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1), *zp = kiln_in(g, n, 2);
  int64_t adiv, alen;
  if (q_axis(n, xv, sc, &adiv, &alen, err)) return err->status;
  int64_t total = kiln_value_numel(xv);
  for (int64_t i = 0; i < total; i++) {
    int64_t a = (i / adiv) % alen;
    int64_t d = kiln_load_i(in[0], xv->dtype, i) - (zp ? kiln_load_i(in[2], zp->dtype, a) : 0);
    ((float *)out[0])[i] = (float)d * ((const float *)in[1])[a];
  }
  return 0;
}

static int dequant_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0), *sc = kiln_in(g, n, 1);
  int64_t adiv, alen;
  if (q_axis(n, xv, sc, &adiv, &alen, err)) return err->status;
  char topts[260], opts[300];
  snprintf(opts, sizeof opts, "%s -DQT=%s", norm_opts(KILN_DT_FLOAT, topts, sizeof topts), kiln_cl_type(xv->dtype));
  cl_kernel k = kiln_cl_kernel(x->d, "norm.cl", opts, "dequantize", err);
  return q_launch(x, n, k, kiln_in_buf(x, n, 0), adiv, alen, err);
}

static int dynq_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 1, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0);
  if (xv->dtype != KILN_DT_FLOAT) return kiln__err(err, KILN_EUNSUPPORTED, "DynamicQuantizeLinear from %s", kiln_dtype_name(xv->dtype));
  kiln_set_out(g, n, 0, KILN_DT_UINT8, xv->rank, xv->dims);
  kiln_set_out(g, n, 1, KILN_DT_FLOAT, 0, NULL);
  kiln_set_out(g, n, 2, KILN_DT_UINT8, 0, NULL);
  return 0;
}

static int dynq_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0);
  const float *xp = in[0];
  int64_t total = kiln_value_numel(xv);
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < total; i++) { if (xp[i] < lo) lo = xp[i]; if (xp[i] > hi) hi = xp[i]; }
  float scale = (hi - lo) / 255.0f;
  float zf = scale != 0 ? 0.0f - lo / scale : 0.0f;
  zf = zf < 0 ? 0 : zf > 255 ? 255 : zf;
  uint8_t zp = (uint8_t)rintf(zf);
  if (out[1]) *(float *)out[1] = scale;
  if (out[2]) *(uint8_t *)out[2] = zp;
  if (out[0])
    for (int64_t i = 0; i < total; i++) {
      float v = (scale != 0 ? rintf(xp[i] / scale) : 0.0f) + zp;
      ((uint8_t *)out[0])[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  (void)err;
  return 0;
}

static int dynq_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0);
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0), bs = kiln_out_buf(x, n, 1), bz = kiln_out_buf(x, n, 2);
  if (!bs && !(bs = kiln_exec_scratch(x, n, 0, sizeof(float), err))) return err->status;
  if (!bz && !(bz = kiln_exec_scratch(x, n, 1, 1, err))) return err->status;
  cl_long total = kiln_value_numel(xv);
  char opts[260];
  cl_kernel k = kiln_cl_kernel(x->d, "norm.cl", norm_opts(KILN_DT_FLOAT, opts, sizeof opts), "dq_params", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(bx), KARG(total), KARG(bs), KARG(bz), KEND)) return err->status;
  size_t wg = NORM_WG;
  if (kiln_exec_launch(x, k, 1, &wg, &wg, err)) return err->status;
  if (!by) return 0;
  k = kiln_cl_kernel(x->d, "norm.cl", kiln_cl_type_opts(KILN_DT_UINT8, opts, sizeof opts), "quantize", err);
  if (!k) return err->status;
  cl_int has_zp = 1;
  cl_long one = 1;
  if (kiln_cl_args(k, err, KARG(bx), KARG(bs), KARG(bz), KARG(has_zp), KARG(by), KARG(one), KARG(one), KARG(total), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

/* ===========================================================================
 * Row normalizations: LayerNormalization, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization (norm.cl's norm_rows)
 * ======================================================================== */

/* Rows of x: outer index set (dims/strides) times inner (normalized) index
 * set; scale/bias index of element j of row r:
 * ((r / rdiv) % rmod) * rmul + (j / jdiv) % jmod. */
typedef struct {
  int64_t rows, L;
  int no, ni;
  int64_t od[MAXR], os[MAXR], id[MAXR], is[MAXR];
  int64_t rdiv, rmod, rmul, jdiv, jmod;
} norm_layout;

/* Appends axis (d, s) to a dims/strides list, merging with the previous axis
 * when contiguous and dropping size-1 axes. */
static void nl_push(int *cnt, int64_t *dims, int64_t *st, int64_t d, int64_t s) {
  if (d == 1) return;
  if (*cnt > 0 && st[*cnt - 1] == d * s) { dims[*cnt - 1] *= d; st[*cnt - 1] = s; return; }
  dims[*cnt] = d;
  st[*cnt] = s;
  (*cnt)++;
}

/* Layout normalizing x over the axes flagged in red. */
static void nl_axes(const kiln_value *x, const bool *red, norm_layout *l) {
  memset(l, 0, sizeof *l);
  int64_t s[MAXR];
  kiln_strides(x->rank, x->dims, s);
  l->rows = l->L = 1;
  for (int i = 0; i < x->rank; i++) {
    if (red[i]) { nl_push(&l->ni, l->id, l->is, x->dims[i], s[i]); l->L *= x->dims[i]; }
    else { nl_push(&l->no, l->od, l->os, x->dims[i], s[i]); l->rows *= x->dims[i]; }
  }
  if (l->ni == 0) { l->ni = 1; l->id[0] = 1; l->is[0] = 0; }
  l->rdiv = l->rmod = l->jdiv = l->jmod = 1;
  l->rmul = 0;
}

static int64_t nl_off(int cnt, const int64_t *dims, const int64_t *st, int64_t i) {
  int64_t o = 0;
  for (int d = cnt - 1; d >= 0; d--) { o += (i % dims[d]) * st[d]; i /= dims[d]; }
  return o;
}

/* CPU reference of a row normalization (double accumulation). flags as in
 * norm.cl: 1 scale, 2 bias, 4 epsilon on the std dev, 8 mean, 16 invstd,
 * 32 single-valued scale, 64 single-valued bias, 128 Relu after, 256 SiLU
 * (x * Sigmoid(x)) after. */
static void norm_rows_ref(const norm_layout *l, int flags, double eps, const void *x, void *y, int dt, const void *scale, int sdt,
                          const void *bias, int bdt, void *mean, void *inv, int mdt) {
  for (int64_t r = 0; r < l->rows; r++) {
    int64_t base = nl_off(l->no, l->od, l->os, r);
    double s = 0;
    for (int64_t j = 0; j < l->L; j++) s += kiln_load_f(x, dt, base + nl_off(l->ni, l->id, l->is, j));
    double mu = l->L && !(flags & 512) ? s / (double)l->L : 0, v = 0;
    for (int64_t j = 0; j < l->L; j++) {
      double d = kiln_load_f(x, dt, base + nl_off(l->ni, l->id, l->is, j)) - mu;
      v += d * d;
    }
    v = l->L ? v / (double)l->L : 0;
    double iv = (flags & 4) ? 1.0 / (sqrt(v) + eps) : 1.0 / sqrt(v + eps);
    int64_t srow = ((r / l->rdiv) % l->rmod) * l->rmul;
    for (int64_t j = 0; j < l->L; j++) {
      int64_t o = base + nl_off(l->ni, l->id, l->is, j), si = srow + (j / l->jdiv) % l->jmod;
      double t = (kiln_load_f(x, dt, o) - mu) * iv;
      if (flags & 1) t *= kiln_load_f(scale, sdt, (flags & 32) ? 0 : si);
      if (flags & 2) t += kiln_load_f(bias, bdt, (flags & 64) ? 0 : si);
      if (flags & 128) t = t > 0 ? t : 0;
      else if (flags & 256) t = t / (1.0 + exp(-t));
      kiln_store_f(y, dt, o, t);
    }
    if ((flags & 8) && mean) kiln_store_f(mean, mdt, r, mu);
    if ((flags & 16) && inv) kiln_store_f(inv, mdt, r, iv);
  }
}

/* ---- the "norm" tunable family (kernels/norm.c): norm.cl's norm_rows ---- */

/* Activation fused after a normalization by the plan-time pass (passes.c,
 * internal attribute "kiln_activation"): norm.cl flag bits. */
static int norm_act_flags(const kiln_node *n) {
  const char *a = kiln_attr_str(n, "kiln_activation", "");
  return !strcmp(a, "Relu") ? 128 : !strcmp(a, "SiLU") ? 256 : 0;
}

/* Descriptor of node n's row normalization with layout l and flags. */
static void norm_tunable_fill(kiln_graph *g, const kiln_node *n, const norm_layout *l, int flags, kiln_tunable *t) {
  const kiln_value *xv = kiln_in(g, n, 0);
  kiln_family_begin(&kiln_family_norm, kiln_dev_dtype(xv), t); /* fp16 storage: instances of their own */
  int o = kiln_family_key_dims(t->shape_key, sizeof t->shape_key, snprintf(t->shape_key, sizeof t->shape_key, "%s:", n->op_type), "x", xv);
  if (o < (int)sizeof t->shape_key)
    snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, ",rows=%lld,L=%lld,flags=%d", (long long)l->rows, (long long)l->L, flags & (127 | 512));
  snprintf(t->epilogue, sizeof t->epilogue, "%s", (flags & 128) ? "relu" : (flags & 256) ? "silu" : "");
  t->dims[ND_ROWS] = l->rows;
  t->dims[ND_L] = l->L;
  t->dims[ND_CONTIG] = l->ni == 1 && l->is[0] == 1;
  t->dims[ND_ESIZE] = (int64_t)kiln_dtype_size(kiln_dev_dtype(xv));
  t->dims[ND_AFFINE] = (flags & 3) != 0;
  kiln_family_end(&kiln_family_norm, t);
}

static int norm_rows_dev(kiln_exec *x, kiln_node *n, const norm_layout *l, int flags, double eps, int dt, cl_mem bx, cl_mem by, cl_mem bs,
                         cl_mem bb, cl_mem bm, cl_mem bi, kiln_error *err) {
  kiln_tunable t;
  norm_tunable_fill(x->g, n, l, flags, &t);
  const int *p = kiln_exec_tparams(x, n, &t);
  int wg = p[NP_WG], vw = t.dims[ND_CONTIG] ? p[NP_VW] : 1, blk = p[NP_BLK];
  int64_t meta[3 + 4 * MAXR + 5] = {0};
  meta[0] = l->L;
  meta[1] = l->no;
  for (int i = 0; i < l->no; i++) { meta[2 + i] = l->od[i]; meta[2 + MAXR + i] = l->os[i]; }
  meta[2 + 2 * MAXR] = l->ni;
  for (int i = 0; i < l->ni; i++) { meta[3 + 2 * MAXR + i] = l->id[i]; meta[3 + 3 * MAXR + i] = l->is[i]; }
  int64_t *sp = meta + 3 + 4 * MAXR;
  sp[0] = l->rdiv; sp[1] = l->rmod; sp[2] = l->rmul; sp[3] = l->jdiv; sp[4] = l->jmod;
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  char opts[300], tb[200];
  /* the defaults build the same program as the other norm.cl kernels */
  int o = snprintf(opts, sizeof opts, "%s -DNORM_WG=%d", kiln_cl_type_opts(dt, tb, sizeof tb), wg);
  if (vw > 1) o += snprintf(opts + o, sizeof opts - (size_t)o, " -DNORM_VW=%d", vw);
  if (blk) snprintf(opts + o, sizeof opts - (size_t)o, " -DNORM_BLK=1");
  cl_kernel k = kiln_cl_kernel(x->d, "norm.cl", opts, "norm_rows", err);
  if (!k) return err->status;
  if (!bs) bs = bx;
  if (!bb) bb = bx;
  if (!bm) bm = by;
  if (!bi) bi = by;
  cl_int fl = flags;
  targ te = targ_make(dt, eps);
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(mb), KARG(bs), KARG(bb), KARG(fl), TARG(te), KARG(bm), KARG(bi), KEND)) return err->status;
  if (l->rows == 0) return 0;
  size_t gws = (size_t)l->rows * (size_t)wg, lws = (size_t)wg;
  return kiln_exec_launch(x, k, 1, &gws, wg > 1 ? &lws : NULL, err); /* 1: groups of the implementation's choice */
}

/* ---- LayerNormalization ---- */

static int ln_layout(kiln_graph *g, kiln_node *n, norm_layout *l, int *axis, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0), *w = kiln_in(g, n, 1), *b = kiln_in(g, n, 2);
  int ax = kiln_axis(kiln_attr_int(n, "axis", -1), xv->rank);
  if (ax < 0) return kiln__err(err, KILN_ESHAPE, "LayerNormalization axis %lld out of range", (long long)kiln_attr_int(n, "axis", -1));
  bool red[MAXR] = {0};
  for (int i = ax; i < xv->rank; i++) red[i] = true;
  nl_axes(xv, red, l);
  for (int k = 1; k <= 2; k++) {
    kiln_value *v = k == 1 ? w : b;
    if (!v) continue;
    int64_t ne = kiln_value_numel(v);
    if (ne != 1 && ne != l->L) return kiln__err(err, KILN_EUNSUPPORTED, "LayerNormalization %s of %lld elements for rows of %lld", k == 1 ? "scale" : "bias", (long long)ne, (long long)l->L);
    if (ne != 1 && v->rank > xv->rank - ax)
      return kiln__err(err, KILN_ESHAPE, "LayerNormalization %s rank %d above the normalized rank %d", k == 1 ? "scale" : "bias", v->rank, xv->rank - ax);
  }
  int64_t nw = w ? kiln_value_numel(w) : 1, nb = b ? kiln_value_numel(b) : 1;
  l->jmod = (nw > 1 || nb > 1) ? l->L : 1;
  if (axis) *axis = ax;
  return 0;
}

static int ln_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 2, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0);
  if (!kiln_dtype_is_float(xv->dtype)) return kiln__err(err, KILN_ESHAPE, "LayerNormalization on %s", kiln_dtype_name(xv->dtype));
  norm_layout l;
  int ax;
  if (ln_layout(g, n, &l, &ax, err)) return err->status;
  kiln_set_out(g, n, 0, xv->dtype, xv->rank, xv->dims);
  int64_t d[MAXR];
  for (int i = 0; i < xv->rank; i++) d[i] = i < ax ? xv->dims[i] : 1;
  int mdt = kiln_attr_int(n, "stash_type", 1) == 1 ? KILN_DT_FLOAT : xv->dtype;
  kiln_set_out(g, n, 1, mdt, xv->rank, d);
  kiln_set_out(g, n, 2, mdt, xv->rank, d);
  return 0;
}

static int ln_flags(kiln_node *n, kiln_value *w, kiln_value *b) {
  return (w ? 1 : 0) | (b ? 2 : 0) | (kiln_has_out(n, 1) ? 8 : 0) | (kiln_has_out(n, 2) ? 16 : 0) |
         (w && kiln_value_numel(w) == 1 ? 32 : 0) | (b && kiln_value_numel(b) == 1 ? 64 : 0) | norm_act_flags(n) |
         (kiln_attr_int(n, "kiln_rms", 0) ? 512 : 0); /* passes.c: a decomposed RMSNorm */
}

static int ln_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  norm_layout l;
  if (ln_layout(g, n, &l, NULL, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0), *w = kiln_in(g, n, 1), *b = kiln_in(g, n, 2);
  kiln_value *mv = kiln_out(g, n, 1) ? kiln_out(g, n, 1) : kiln_out(g, n, 2);
  norm_rows_ref(&l, ln_flags(n, w, b), kiln_attr_float(n, "epsilon", 1e-5f), in[0], out[0], xv->dtype, in[1], w->dtype, in[2], b ? b->dtype : 0,
                out[1], out[2], mv ? mv->dtype : 0);
  return 0;
}

/* The normalizations' types: float, double, and float16 (norm.cl's half
 * storage, fp32 arithmetic). */
static int norm_float(kiln_graph *g, kiln_node *n, int dt, kiln_error *err) { return dt == KILN_DT_FLOAT16 ? 0 : check_float(g, n, dt, err); }

static int ln_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0);
  if (norm_float(g, n, xv->dtype, err)) return err->status;
  for (int i = 1; i < 3; i++) {
    if (kiln_has_in(n, i) && kiln_in(g, n, i)->dtype != xv->dtype) return kiln__err(err, KILN_EUNSUPPORTED, "LayerNormalization with mixed types");
    if (kiln_has_out(n, i) && kiln_out(g, n, i)->dtype != xv->dtype) return kiln__err(err, KILN_EUNSUPPORTED, "LayerNormalization statistics in %s", kiln_dtype_name(kiln_out(g, n, i)->dtype));
  }
  return 0;
}

static int ln_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  norm_layout l;
  if (ln_layout(x->g, n, &l, NULL, err)) return err->status;
  kiln_value *xv = kiln_in(x->g, n, 0), *w = kiln_in(x->g, n, 1), *b = kiln_in(x->g, n, 2);
  return norm_rows_dev(x, n, &l, ln_flags(n, w, b), kiln_attr_float(n, "epsilon", 1e-5f), kiln_dev_dtype(xv), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0),
                       kiln_in_buf(x, n, 1), kiln_in_buf(x, n, 2), kiln_out_buf(x, n, 1), kiln_out_buf(x, n, 2), err);
}

/* ---- InstanceNormalization ---- */

static int in_layout(kiln_graph *g, kiln_node *n, norm_layout *l, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0), *s = kiln_in(g, n, 1), *b = kiln_in(g, n, 2);
  if (xv->rank < 2) return kiln__err(err, KILN_ESHAPE, "InstanceNormalization input of rank %d", xv->rank);
  int64_t C = xv->dims[1];
  if (kiln_value_numel(s) != C || kiln_value_numel(b) != C) return kiln__err(err, KILN_ESHAPE, "InstanceNormalization scale/bias must have %lld elements", (long long)C);
  bool red[MAXR] = {0};
  for (int i = 2; i < xv->rank; i++) red[i] = true;
  nl_axes(xv, red, l);
  l->rmod = C;
  l->rmul = 1;
  return 0;
}

/* InstanceNormalization and GroupNormalization: rows of a layout (in_layout,
 * gn_layout) with a scale and a bias (flags 3) and the fused activation. */
typedef int (*norm_layout_fn)(kiln_graph *g, kiln_node *n, norm_layout *l, kiln_error *err);

static int affine_norm_infer(kiln_graph *g, kiln_node *n, norm_layout_fn layout, kiln_error *err) {
  if (need_inputs(g, n, 3, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0);
  norm_layout l;
  if (layout(g, n, &l, err)) return err->status;
  kiln_set_out(g, n, 0, xv->dtype, xv->rank, xv->dims);
  return 0;
}

static int affine_norm_ref(kiln_graph *g, kiln_node *n, void **in, void **out, norm_layout_fn layout, kiln_error *err) {
  norm_layout l;
  if (layout(g, n, &l, err)) return err->status;
  norm_rows_ref(&l, 3 | norm_act_flags(n), kiln_attr_float(n, "epsilon", 1e-5f), in[0], out[0], kiln_in(g, n, 0)->dtype, in[1], kiln_in(g, n, 1)->dtype, in[2],
                kiln_in(g, n, 2)->dtype, NULL, NULL, 0);
  return 0;
}

static int affine_norm_dev(kiln_exec *x, kiln_node *n, norm_layout_fn layout, kiln_error *err) {
  norm_layout l;
  if (layout(x->g, n, &l, err)) return err->status;
  return norm_rows_dev(x, n, &l, 3 | norm_act_flags(n), kiln_attr_float(n, "epsilon", 1e-5f), kiln_dev_dtype(kiln_in(x->g, n, 0)), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0),
                       kiln_in_buf(x, n, 1), kiln_in_buf(x, n, 2), NULL, NULL, err);
}

static int in_infer(kiln_graph *g, kiln_node *n, kiln_error *err) { return affine_norm_infer(g, n, in_layout, err); }
static int in_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return affine_norm_ref(g, n, in, out, in_layout, err); }

static int same_float_inputs(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (norm_float(g, n, dt, err)) return err->status;
  for (int i = 1; i < n->nin; i++)
    if (kiln_has_in(n, i) && kiln_in(g, n, i)->dtype != dt) return kiln__err(err, KILN_EUNSUPPORTED, "%s with mixed input types", n->op_type);
  return 0;
}

static int in_dev(kiln_exec *x, kiln_node *n, kiln_error *err) { return affine_norm_dev(x, n, in_layout, err); }

/* ---- GroupNormalization (scale/bias per group in opset 18, per channel from 21) ---- */

static int gn_layout(kiln_graph *g, kiln_node *n, norm_layout *l, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0), *s = kiln_in(g, n, 1), *b = kiln_in(g, n, 2);
  int64_t G = kiln_attr_int(n, "num_groups", 0);
  if (xv->rank < 2) return kiln__err(err, KILN_ESHAPE, "GroupNormalization input of rank %d", xv->rank);
  int64_t N = xv->dims[0], C = xv->dims[1], sp = prod(xv->dims, 2, xv->rank);
  if (G <= 0 || C % G) return kiln__err(err, KILN_ESHAPE, "GroupNormalization: %lld channels in %lld groups", (long long)C, (long long)G);
  int per_ch = n->opset >= 21 || kiln_attr_int(n, "kiln_per_channel", 0); /* passes.c: the exported Reshape/InstanceNormalization pattern */
  int64_t want = per_ch ? C : G;
  if (kiln_value_numel(s) != want || kiln_value_numel(b) != want) return kiln__err(err, KILN_ESHAPE, "GroupNormalization scale/bias must have %lld elements", (long long)want);
  memset(l, 0, sizeof *l);
  l->rows = N * G;
  l->L = C / G * sp;
  l->no = l->ni = 1;
  l->od[0] = l->rows;
  l->os[0] = l->L;
  l->id[0] = l->L;
  l->is[0] = 1;
  l->rdiv = 1;
  l->rmod = G;
  l->rmul = per_ch ? C / G : 1;
  l->jdiv = per_ch ? (sp ? sp : 1) : 1;
  l->jmod = per_ch ? C / G : 1;
  return 0;
}

static int gn_infer(kiln_graph *g, kiln_node *n, kiln_error *err) { return affine_norm_infer(g, n, gn_layout, err); }
static int gn_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return affine_norm_ref(g, n, in, out, gn_layout, err); }
static int gn_dev(kiln_exec *x, kiln_node *n, kiln_error *err) { return affine_norm_dev(x, n, gn_layout, err); }

/* ---- MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes` ---- */

#define MVN_EPS 1e-9

static int mvn_layout(kiln_graph *g, kiln_node *n, norm_layout *l, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0);
  const int64_t *ax;
  int na = kiln_attr_ints(n, "axes", &ax);
  static const int64_t dflt[3] = {0, 2, 3};
  if (na < 0) { ax = dflt; na = 3; }
  bool red[MAXR] = {0};
  for (int i = 0; i < na; i++) {
    int a = kiln_axis(ax[i], xv->rank);
    if (a < 0) return kiln__err(err, KILN_ESHAPE, "MeanVarianceNormalization axis %lld out of range for rank %d", (long long)ax[i], xv->rank);
    red[a] = true;
  }
  nl_axes(xv, red, l);
  return 0;
}

static int mvn_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 1, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0);
  norm_layout l;
  if (mvn_layout(g, n, &l, err)) return err->status;
  kiln_set_out(g, n, 0, xv->dtype, xv->rank, xv->dims);
  return 0;
}

static int mvn_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  norm_layout l;
  if (mvn_layout(g, n, &l, err)) return err->status;
  norm_rows_ref(&l, 4, MVN_EPS, in[0], out[0], kiln_in(g, n, 0)->dtype, NULL, 0, NULL, 0, NULL, NULL, 0);
  return 0;
}

static int mvn_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  norm_layout l;
  if (mvn_layout(x->g, n, &l, err)) return err->status;
  return norm_rows_dev(x, n, &l, 4, MVN_EPS, kiln_dev_dtype(kiln_in(x->g, n, 0)), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), NULL, NULL, NULL, NULL, err);
}

/* ===========================================================================
 * BatchNormalization
 * ======================================================================== */

static bool bn_training(kiln_node *n) { return n->opset >= 14 && kiln_attr_int(n, "training_mode", 0) != 0; }

static int bn_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 5, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0);
  if (xv->rank < 2) return kiln__err(err, KILN_ESHAPE, "BatchNormalization input of rank %d", xv->rank);
  int64_t C = xv->dims[1];
  for (int i = 1; i < 5; i++)
    if (kiln_in(g, n, i)->rank != 1 || kiln_in(g, n, i)->dims[0] != C)
      return kiln__err(err, n->opset < 9 && kiln_attr_int(n, "spatial", 1) == 0 ? KILN_EUNSUPPORTED : KILN_ESHAPE,
                       "BatchNormalization input %d must have shape [%lld]", i, (long long)C);
  bool extra = false;
  for (int i = 1; i < n->nout; i++) extra |= kiln_has_out(n, i);
  if (extra && !bn_training(n)) return kiln__err(err, KILN_EUNSUPPORTED, "BatchNormalization training outputs (opset %d)", n->opset);
  kiln_set_out(g, n, 0, xv->dtype, xv->rank, xv->dims);
  for (int i = 1; i < 3; i++) kiln_set_out(g, n, i, kiln_in(g, n, 2 + i)->dtype, 1, &C);
  return 0;
}

static int bn_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0);
  int dt = xv->dtype;
  int64_t N = xv->dims[0], C = xv->dims[1], inner = prod(xv->dims, 2, xv->rank);
  double eps = kiln_attr_float(n, "epsilon", 1e-5f), mom = kiln_attr_float(n, "momentum", 0.9f);
  bool train = bn_training(n);
  for (int64_t c = 0; c < C; c++) {
    double mean = kiln_load_f(in[3], kiln_in(g, n, 3)->dtype, c), var = kiln_load_f(in[4], kiln_in(g, n, 4)->dtype, c);
    if (train) {
      double s = 0, q = 0, cnt = (double)(N * inner);
      for (int64_t b = 0; b < N; b++)
        for (int64_t i = 0; i < inner; i++) s += kiln_load_f(in[0], dt, (b * C + c) * inner + i);
      double bm = cnt ? s / cnt : 0;
      for (int64_t b = 0; b < N; b++)
        for (int64_t i = 0; i < inner; i++) { double d = kiln_load_f(in[0], dt, (b * C + c) * inner + i) - bm; q += d * d; }
      double bv = cnt ? q / cnt : 0;
      if (out[1]) kiln_store_f(out[1], kiln_out(g, n, 1)->dtype, c, mean * mom + bm * (1 - mom));
      if (out[2]) kiln_store_f(out[2], kiln_out(g, n, 2)->dtype, c, var * mom + bv * (1 - mom));
      mean = bm;
      var = bv;
    }
    double sc = kiln_load_f(in[1], kiln_in(g, n, 1)->dtype, c), bi = kiln_load_f(in[2], kiln_in(g, n, 2)->dtype, c);
    for (int64_t b = 0; b < N; b++)
      for (int64_t i = 0; i < inner; i++) {
        int64_t o = (b * C + c) * inner + i;
        kiln_store_f(out[0], dt, o, (kiln_load_f(in[0], dt, o) - mean) / sqrt(var + eps) * sc + bi);
      }
  }
  (void)err;
  return 0;
}

static int bn_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  kiln_value *xv = kiln_in(g, n, 0);
  int dt = kiln_dev_dtype(xv); /* fp16 storage: inference only (bn_check) */
  cl_long N = xv->dims[0], C = xv->dims[1], inner = prod(xv->dims, 2, xv->rank), total = kiln_value_numel(xv);
  char opts[260];
  norm_opts(dt, opts, sizeof opts);
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0), bm = kiln_in_buf(x, n, 3), bv = kiln_in_buf(x, n, 4);
  targ eps = targ_make(dt, kiln_attr_float(n, "epsilon", 1e-5f));
  if (bn_training(n)) {
    cl_kernel ks = kiln_cl_kernel(x->d, "norm.cl", opts, "bn_stats", err);
    if (!ks) return err->status;
    size_t es = kiln_dtype_size(dt) * (size_t)(C ? C : 1);
    cl_mem smean = kiln_exec_scratch(x, n, 0, es, err), svar = smean ? kiln_exec_scratch(x, n, 1, es, err) : NULL;
    if (!svar) return err->status;
    cl_mem rm = kiln_out_buf(x, n, 1), rv = kiln_out_buf(x, n, 2);
    cl_int has_rm = rm && rv;
    if (!has_rm) rm = rv = smean;
    targ mom = targ_make(dt, kiln_attr_float(n, "momentum", 0.9f));
    if (kiln_cl_args(ks, err, KARG(bx), KARG(N), KARG(C), KARG(inner), KARG(smean), KARG(svar), KARG(bm), KARG(bv), TARG(mom), KARG(has_rm), KARG(rm), KARG(rv), KEND))
      return err->status;
    size_t gws = (size_t)C * NORM_WG, lws = NORM_WG;
    if (C && kiln_exec_launch(x, ks, 1, &gws, &lws, err)) return err->status;
    bm = smean;
    bv = svar;
  }
  cl_kernel k = kiln_cl_kernel(x->d, "norm.cl", opts, "batchnorm", err);
  if (!k) return err->status;
  cl_mem bs = kiln_in_buf(x, n, 1), bb = kiln_in_buf(x, n, 2);
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(bs), KARG(bb), KARG(bm), KARG(bv), TARG(eps), KARG(C), KARG(inner), KARG(total), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int bn_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (same_float_inputs(g, n, err)) return err->status;
  if (bn_training(n) && (kiln_has_out(n, 1) != kiln_has_out(n, 2))) return kiln__err(err, KILN_EUNSUPPORTED, "BatchNormalization with only one running statistic");
  if (bn_training(n) && kiln_in(g, n, 0)->half) return kiln__err(err, KILN_EUNSUPPORTED, "BatchNormalization training in fp16 storage");
  return 0;
}

/* ===========================================================================
 * LRN
 * ======================================================================== */

static int lrn_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  if (need_inputs(g, n, 1, err)) return err->status;
  kiln_value *xv = kiln_in(g, n, 0);
  if (xv->rank < 2) return kiln__err(err, KILN_ESHAPE, "LRN input of rank %d", xv->rank);
  if (kiln_attr_int(n, "size", 0) < 1) return kiln__err(err, KILN_EINVAL, "LRN needs a positive size");
  kiln_set_out(g, n, 0, xv->dtype, xv->rank, xv->dims);
  return 0;
}

static int lrn_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *xv = kiln_in(g, n, 0);
  int dt = xv->dtype;
  int64_t C = xv->dims[1], inner = prod(xv->dims, 2, xv->rank), total = kiln_value_numel(xv), size = kiln_attr_int(n, "size", 1);
  double alpha = kiln_attr_float(n, "alpha", 1e-4f), beta = kiln_attr_float(n, "beta", 0.75f), bias = kiln_attr_float(n, "bias", 1.0f);
  for (int64_t i = 0; i < total; i++) {
    int64_t c = (i / inner) % C;
    int64_t lo = c - (size - 1) / 2, hi = c + size / 2;
    if (lo < 0) lo = 0;
    if (hi > C - 1) hi = C - 1;
    double s = 0;
    for (int64_t k = lo; k <= hi; k++) { double v = kiln_load_f(in[0], dt, i + (k - c) * inner); s += v * v; }
    kiln_store_f(out[0], dt, i, kiln_load_f(in[0], dt, i) / pow(bias + alpha / (double)size * s, beta));
  }
  (void)err;
  return 0;
}

static int lrn_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *xv = kiln_in(x->g, n, 0);
  int dt = xv->dtype;
  char opts[260];
  cl_kernel k = kiln_cl_kernel(x->d, "norm.cl", norm_opts(dt, opts, sizeof opts), "lrn", err);
  if (!k) return err->status;
  cl_long C = xv->dims[1], inner = prod(xv->dims, 2, xv->rank), total = kiln_value_numel(xv);
  cl_int size = (cl_int)kiln_attr_int(n, "size", 1);
  targ alpha = targ_make(dt, kiln_attr_float(n, "alpha", 1e-4f)), beta = targ_make(dt, kiln_attr_float(n, "beta", 0.75f)),
       bias = targ_make(dt, kiln_attr_float(n, "bias", 1.0f));
  cl_mem bx = kiln_in_buf(x, n, 0), by = kiln_out_buf(x, n, 0);
  if (kiln_cl_args(k, err, KARG(bx), KARG(by), KARG(C), KARG(inner), KARG(size), TARG(alpha), TARG(beta), TARG(bias), KARG(total), KEND)) return err->status;
  size_t gws = (size_t)total;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

static int float_check(kiln_graph *g, kiln_node *n, kiln_error *err) { return same_float_inputs(g, n, err); }

/* Tunable descriptor of a LayerNormalization, InstanceNormalization,
 * GroupNormalization or MeanVarianceNormalization node (family "norm"). */
static int norm_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  norm_layout l;
  kiln_error e = {0};
  int flags;
  kiln_value *xv = kiln_in(g, n, 0);
  if (!xv || (xv->dtype != KILN_DT_FLOAT && xv->dtype != KILN_DT_DOUBLE)) return 1;
  if (!strcmp(n->op_type, "LayerNormalization")) {
    if (ln_layout(g, n, &l, NULL, &e)) return 1;
    flags = ln_flags(n, kiln_in(g, n, 1), kiln_in(g, n, 2));
  } else if (!strcmp(n->op_type, "InstanceNormalization")) {
    if (in_layout(g, n, &l, &e)) return 1;
    flags = 3 | norm_act_flags(n);
  } else if (!strcmp(n->op_type, "GroupNormalization")) {
    if (gn_layout(g, n, &l, &e)) return 1;
    flags = 3 | norm_act_flags(n);
  } else {
    if (mvn_layout(g, n, &l, &e)) return 1;
    flags = 4;
  }
  norm_tunable_fill(g, n, &l, flags, t);
  return 0;
}

const kiln_op_def kiln_ops_gemm_norm[] = {
  {.name = "MatMul", .infer = matmul_infer, .ref = matmul_ref, .dev = matmul_dev, .dev_check = matmul_check, .tunable = matmul_tunable, .flags = KILN_OP_EPI_HEAD | KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "Gemm", .infer = gemm_infer, .ref = gemm_ref, .dev = gemm_dev, .dev_check = gemm_check, .tunable = gemm_tunable, .flags = KILN_OP_EPI_HEAD | KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "Einsum", .infer = einsum_infer, .ref = einsum_ref, .dev = einsum_dev, .dev_check = einsum_check},
  {.name = "Det", .infer = det_infer, .ref = det_ref, .dev = det_dev, .dev_check = det_check},
  {.name = "MatMulInteger", .infer = mmi_infer, .ref = mmi_ref, .dev = mmi_dev, .dev_check = mmi_check},
  {.name = "QLinearMatMul", .infer = qlmm_infer, .ref = qlmm_ref, .dev = qlmm_dev, .dev_check = qlmm_check},
  {.name = "QuantizeLinear", .infer = quant_infer, .ref = quant_ref, .dev = quant_dev, .dev_check = NULL},
  {.name = "DequantizeLinear", .infer = dequant_infer, .ref = dequant_ref, .dev = dequant_dev, .dev_check = NULL},
  {.name = "DynamicQuantizeLinear", .infer = dynq_infer, .ref = dynq_ref, .dev = dynq_dev, .dev_check = NULL},
  {.name = "BatchNormalization", .infer = bn_infer, .ref = bn_ref, .dev = bn_dev, .dev_check = bn_check, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "InstanceNormalization", .infer = in_infer, .ref = in_ref, .dev = in_dev, .dev_check = float_check, .tunable = norm_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "LayerNormalization", .infer = ln_infer, .ref = ln_ref, .dev = ln_dev, .dev_check = ln_check, .tunable = norm_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "GroupNormalization", .infer = gn_infer, .ref = gn_ref, .dev = gn_dev, .dev_check = float_check, .tunable = norm_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "MeanVarianceNormalization", .infer = mvn_infer, .ref = mvn_ref, .dev = mvn_dev, .dev_check = float_check, .tunable = norm_tunable, .flags = KILN_OP_HALF | KILN_OP_HALF_GAIN},
  {.name = "LRN", .infer = lrn_infer, .ref = lrn_ref, .dev = lrn_dev, .dev_check = float_check},
  {NULL},
};
