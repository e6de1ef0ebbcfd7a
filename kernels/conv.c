/* kernels/conv.c: the "conv" kernel family beside its OpenCL source
 * (kernels/conv.cl): the instance description of a Conv node and its
 * algorithms as solvers, in one registry (conv_solvers below).
 *
 * A Conv node runs one solver, chosen per shape by the tuner through the
 * parameter CONV_ALGO, the solver's index in the registry (tuning records
 * store that index, so solvers are only ever appended). A solver is
 *   name      what `kiln plan`, the tests and the notes call it;
 *   uses      the parameters (CP_*) it reads; valid() pins every other one to
 *             its default, so the space holds no duplicates;
 *   applies   whether it can run this instance at all on this device, and
 *             its own constraints on the parameters it reads;
 *   prefer    its rank as the untuned default for this instance (the
 *             applicable solver of highest rank runs untuned; 0: never);
 *   features  what the cost model reads about a candidate;
 *   launch    the kernels it enqueues (a context holds the node's buffers).
 * Adding an algorithm is one entry here plus its kernels in conv.cl (built
 * with -DCONV_ALGO=<index>); the parameter tests (tests/conv_params.c), the
 * tuner and the cost model enumerate the registry.
 *
 * The solvers:
 *   direct   conv_direct, any shape (the only one for non-constant weights
 *            besides the local-memory GEMM);
 *   1x1      conv_gemm / conv_gemm_s on the input itself (1x1 kernels, no
 *            pads; strides through a gather);
 *   im2col   conv_im2col into scratch, then conv_gemm;
 *   dw       conv_dw, depthwise (group == C == OC);
 *   wino     Winograd F(2x2,3x3) for 2-D 3x3 stride-1 dilation-1 group-1:
 *            wino_in, 16 conv_gemm products, wino_out;
 *   local    conv_im2col, then the GPU-style conv_gemm_local;
 *   panel    conv_im2col_p into scratch in panels of GEMM_TN columns, then
 *            gemm.cl's gemm_panel (the gemm family's CPU kernel, built with
 *            ROWCH=1 for the per-channel bias and epilogue) on the weights
 *            packed in panels of GEMM_TM rows (AP=1): blocks of GEMM_TM rows
 *            x GEMM_TN columns, several per work-item (conv_panel_mb),
 *            work-groups of PANEL_WG panels; on a 1x1 stride-1 convolution
 *            (no pads) the copy would be the input itself in panels, so
 *            there conv_pw reads the input's rows in place instead, with
 *            gemm_panel's register block and the same parameters (1.4-3.6x
 *            faster than copy + gemm_panel on mobilenet_v2's 1x1 layers);
 *   winop    Winograd as wino, the 16 products by gemm_panel on panels of
 *            GEMM_TN tiles written by wino_in_p;
 *   dwv      depthwise 2-D with vector loads along the output row (conv_dwv,
 *            CONVDW_VW outputs per step);
 *   winop4   Winograd F(4x4,3x3) for the same convolutions as wino: 6x6
 *            input patches per 4x4 output tile (wino4_in_p, in panels), 36
 *            products by gemm_panel on the weights transformed once per plan
 *            (pack_wino4_oc), wino4_out with bias and epilogue: 1.78x fewer
 *            multiplications than F(2x2,3x3), 4x fewer than direct, with a
 *            larger rounding error (tests/conv_params.c holds it to the same
 *            1e-4 of max |ref|); reads and writes NCHW16c/NCHW8c values too
 *            (-DWINO_INB / -DWINO_OUTB, a block's channels in dimension 0):
 *            8 tiles x 8 channels a work-item, turned around in registers
 *            (conv.cl wino4_in_b / wino4_out_b): resnet's blocked 3x3s at
 *            56x56, 28x28 and 14x14 take 550, 510 and 515 us (blocked dirc:
 *            ~1100-1300; bench_conv_layer --blk 3);
 *   dwr      depthwise 2-D (conv_dwr): CONVDW_R output rows of a channel per
 *            work-item, CONVDW_VW outputs of each at a time, the weights in
 *            registers, the rows' interior read as whole vectors with no
 *            tests (the column split and the loops' bounds compile-time
 *            constants), vector stores; work-groups of whole channel planes;
 *   dirv     direct 2-D over at most DIRV_CMAX input channels per group (the
 *            CNN stems, 3 channels): conv_dirv, CONV_TOC output channels of
 *            an output row per work-item in vectors of CONVDW_VW along the
 *            row (dwr's input loads and column split), the weights packed
 *            in panels of CONV_TOC channels (pack_panels);
 *   dirc     direct 2-D with the vectors along the output channels
 *            (conv_dirc): CONV_TP output pixels x CONVDW_R vectors of
 *            CONVDW_VW channels per work-item, each input element loaded
 *            once per tap and broadcast, the weights in panels of VW*R
 *            channels (pack_panels); full lanes on small planes (resnet's
 *            7x7 and 14x14 layers) and no im2col for strided ones; a padded
 *            input copied once with its pads (conv_pad); windows up to
 *            DIRC_KMAX taps. It also reads and writes blocked values
 *            (runtime/layout.c: -DDIRC_INB=16 or 8 with the input's pixels
 *            that far apart, -DDIRC_OUTB storing its channel vectors as they
 *            are) and has a consecutive-pixel path for 1x1 stride-1 layers;
 *   dw16     depthwise 2-D on NCHW16c (or NCHW8c) values (conv_dw16):
 *            CONV_TP outputs of a row x one block of channels per work-item,
 *            one vector load per input
 *            pixel, no lanes along the row; the only depthwise solver for
 *            instances whose values runtime/layout.c blocked (keys l=16i16o),
 *            where dirc is the only one for the other convolutions and
 *            dirv may write them.
 * The GEMM-based solvers (1x1, im2col, wino) share the register tile
 * GEMM_TM x GEMM_TN of conv_gemm and read the weights packed once per plan
 * into panels of GEMM_TM rows (Winograd: the transformed weights), so they
 * need constant weights. */
#include "kiln_internal.h"
#include "ops/window.h"
#include "conv.h"

enum { CONV_A_DIRECT, CONV_A_1X1, CONV_A_IM2COL, CONV_A_DW, CONV_A_WINO, CONV_A_LOCAL, CONV_A_PANEL, CONV_A_WINOP, CONV_A_DWV, CONV_A_WINOP4, CONV_A_DWR, CONV_A_DIRV, CONV_A_DIRC,
       CONV_A_DW16 };
static const kiln_kparam conv_kparams[CP_COUNT] = {
  [CP_ALGO] = {"CONV_ALGO", 0, {0}, CONV_A_DIRECT}, /* values: the registry's indices (conv_tunable_of) */
  [CP_TOC] = {"CONV_TOC", 3, {4, 8, 16}, 8},
  [CP_TP] = {"CONV_TP", 3, {4, 8, 16}, 8},
  [CP_DWTP] = {"CONVDW_TP", 3, {4, 8, 16}, 8},
  [CP_GTM] = {"GEMM_TM", 4, {2, 4, 6, 8}, 4},
  [CP_GTN] = {"GEMM_TN", 3, {8, 16, 32}, 8},
  [CP_GORD] = {"GEMM_ORDER", 2, {0, 1}, 0},
  [CP_LTS] = {"LG_TS", 3, {8, 16, 32}, 16},
  [CP_LWPT] = {"LG_WPT", 3, {1, 2, 4}, 1},
  [CP_PWG] = {"PANEL_WG", 3, {1, 2, 4}, 4},
  [CP_DWVW] = {"CONVDW_VW", 3, {4, 8, 16}, 8},
  [CP_DWR] = {"CONVDW_R", 3, {1, 2, 4}, 1},
};
_Static_assert(CP_COUNT <= KILN_MAX_KPARAMS, "too many conv parameters");

/* kiln_tunable.dims of a Conv instance */
enum { CD_FLAGS, CD_M, CD_K, CD_P, CD_NB, CD_C, CD_WT, CD_ESZ, CD_OH, CD_IN, CD_KK };
/* CF_PAD: a window reaches past the input (pads; dirc copies it padded first).
 * CF_XS: the input scaled per image and channel (input 3, a squeeze-excite
 * gate fused by runtime/passes.c); panel's conv_pw and dirc read it.
 * CF_INB, CF_OUTB: the input, the output blocked (kiln_value.blk,
 * runtime/layout.c), in blocks of 16 channels, of 8 with CF_INB8, CF_OUTB8;
 * only dirc and dw16 (16 only) read or write that layout, dirv writes it.
 * CF_EFULL: a fused epilogue reads an operand of the output's size */
enum { CF_DW = 1, CF_1X1 = 2, CF_WINO = 4, CF_WCONST = 8, CF_1X1S = 16, CF_3D = 32, CF_XS = 64, CF_PAD = 128, CF_INB = 256, CF_OUTB = 512, CF_EFULL = 1024,
       CF_INB8 = 2048, CF_OUTB8 = 4096 };
#define CF_BLK (CF_INB | CF_OUTB)

static int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/* work-items per group of conv_direct (one tile of CONV_TOC x CONV_TP outputs each) */
#define CONV_DIRECT_WG 64

/* Columns of the GEMM's B operand: pixels (or Winograd tiles) rounded up so
 * that every GEMM_TN tile of a scratch buffer can be read unguarded. */
static int64_t conv_ldb(int64_t cols) { return round_up(cols, 32); }

static int64_t conv_wino_tiles(const win_geom *w) { return ceil_div(w->out[1], 2) * ceil_div(w->out[2], 2); }

/* F(4x4,3x3) tiles of an instance: OH = dims[CD_OH] (2-D: OD = 1), OW = P / OH */
#define CONV_WINO4_TILES(t) (ceil_div((t)->dims[CD_OH], 4) * ceil_div((t)->dims[CD_P] / ((t)->dims[CD_OH] > 0 ? (t)->dims[CD_OH] : 1), 4))

/* ---- what a launch needs: the node's buffers and geometry ------------------ */

typedef struct conv_ctx {
  kiln_exec *x;
  kiln_node *n;
  const win_geom *w;
  const int *p;            /* the parameter vector */
  int dt;                  /* element type of the device buffers (float16: fp16 storage) */
  size_t esz;              /* host element size (weights are packed on the host as the model holds them) */
  size_t desz;             /* device element size (scratch buffers) */
  char opts[512];          /* type options plus the parameters as -D */
  cl_int m[24];            /* geometry (kiln__win_meta) */
  cl_mem mb;               /* the same in a device buffer */
  cl_mem bx, bw, bb, by;   /* input, weights, bias (the weights when there is none), output */
  cl_mem ep[2];            /* epilogue operands */
  cl_int has_bias;
  int64_t icg, ocg, K, osz; /* channels per group in and out, GEMM depth, output pixels */
} conv_ctx;

/* ---- weight packing ----------------------------------------------------------- */

/* Weights [G][M][K] (element size esz) into panels [G][ceil(M/tm)][K][tm],
 * zero rows past M. Returns a malloc'd block of *bytes. */
static void *pack_panels(const conv_ctx *c, int tm, size_t *bytes) {
  const win_geom *w = c->w;
  int64_t G = w->group, M = c->ocg, K = c->K, nmb = ceil_div(M, tm);
  size_t esz = c->esz;
  *bytes = (size_t)(G * nmb * K * tm) * esz;
  unsigned char *a = calloc(*bytes ? *bytes : 1, 1);
  if (!a) return NULL;
  const unsigned char *src = kiln_in(c->x->g, c->n, 1)->data;
  for (int64_t g = 0; g < G; g++)
    for (int64_t m = 0; m < M; m++) {
      int64_t mb = m / tm, i = m % tm;
      const unsigned char *row = src + (size_t)((g * M + m) * K) * esz;
      unsigned char *dst = a + (size_t)(((g * nmb + mb) * K) * tm + i) * esz;
      for (int64_t k = 0; k < K; k++) memcpy(dst + (size_t)(k * tm) * esz, row + (size_t)k * esz, esz);
    }
  return a;
}

/* Winograd F(r x r, 3x3) weights U = G g G^T (G: a x 3, a = r + 2) per
 * (oc, c), packed as panels [a*a][ceil(OC/tm)][C][tm]. */
static void *pack_wino_g(const conv_ctx *cx, int tm, int a_, const double (*Gm)[3], size_t *bytes) {
  int64_t OC = cx->w->oc, C = cx->w->c, nmb = ceil_div(OC, tm), aa = a_ * a_;
  const kiln_value *wv = kiln_in(cx->x->g, cx->n, 1);
  int dt = wv->dtype;
  *bytes = (size_t)(aa * nmb * C * tm) * cx->esz;
  void *a = calloc(*bytes ? *bytes : 1, 1);
  if (!a) return NULL;
  /* float weights (the common case) are read and written directly: the generic
   * per-element kiln_load_f/kiln_store_f made this ~10% of a first run */
  const float *wf = dt == KILN_DT_FLOAT ? (const float *)wv->data : NULL;
  float *af = dt == KILN_DT_FLOAT ? (float *)a : NULL;
  for (int64_t oc = 0; oc < OC; oc++)
    for (int64_t c = 0; c < C; c++) {
      double gk[3][3], tmp[6][3];
      for (int i = 0; i < 9; i++)
        gk[i / 3][i % 3] = wf ? wf[(oc * C + c) * 9 + i] : kiln_load_f(wv->data, dt, (oc * C + c) * 9 + i);
      for (int i = 0; i < a_; i++)
        for (int j = 0; j < 3; j++) tmp[i][j] = Gm[i][0] * gk[0][j] + Gm[i][1] * gk[1][j] + Gm[i][2] * gk[2][j];
      int64_t base = ((oc / tm) * C + c) * tm + oc % tm, step = nmb * C * tm; /* element of xi = 0, xi stride */
      for (int i = 0; i < a_; i++)
        for (int j = 0; j < a_; j++) {
          double u = tmp[i][0] * Gm[j][0] + tmp[i][1] * Gm[j][1] + tmp[i][2] * Gm[j][2];
          int64_t k = base + (a_ * i + j) * step;
          if (af) af[k] = (float)u;
          else kiln_store_f(a, dt, k, u);
        }
    }
  return a;
}

static const double wino2_G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
/* F(4x4,3x3) (Lavin and Gray): points 0, +-1, +-2 and infinity */
static const double wino4_G[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                     {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};

static void *pack_wino(const conv_ctx *cx, int tm, size_t *bytes) { return pack_wino_g(cx, tm, 4, wino2_G, bytes); }
static void *pack_wino4(const conv_ctx *c, int tm, size_t *bytes);

typedef void *(*conv_pack_fn)(const conv_ctx *c, int tm, size_t *bytes);
/* What a node's packed weights (param slot 1) were packed by and for. */
typedef struct { conv_pack_fn pack; int tm; } conv_pack_state;

/* The weights packed by `pack` for tm in param slot 1, packing and uploading
 * them when the node's current block was packed for something else. */
static cl_mem conv_packed(const conv_ctx *c, conv_pack_fn pack, int tm, kiln_error *err) {
  kiln_node *n = c->n;
  conv_pack_state *st = n->state;
  if (st && n->param[1] && st->pack == pack && st->tm == tm) return n->param[1];
  if (!st && !(st = n->state = calloc(1, sizeof *st))) { kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  if (n->param[1]) { clReleaseMemObject(n->param[1]); n->param[1] = NULL; n->param_bytes[1] = 0; }
  if (!kiln_in(c->x->g, n, 1)->data) { kiln__err(err, KILN_EINTERNAL, "Conv weights are not constant"); return NULL; }
  size_t bytes;
  void *a = pack(c, tm, &bytes);
  if (!a) { kiln__err(err, KILN_ENOMEM, "out of memory"); return NULL; }
  if (c->dt == KILN_DT_FLOAT16 && pack != pack_wino4) { /* fp16 storage: the packed float weights converted once, in place
                                                          * (winop4's stay fp32: its output transform amplifies their rounding) */
    uint16_t *h = a;
    const float *f = a;
    bytes /= 2;
    for (size_t i = 0; i < bytes / 2; i++) h[i] = kiln__f2h(f[i]);
  }
  cl_mem b = kiln_exec_param(c->x, n, 1, a, bytes, err);
  free(a);
  if (!b) return NULL;
  st->pack = pack;
  st->tm = tm;
  n->packed_w1 = true; /* the kernels of this plan read these, not the raw weights */
  return b;
}

static int conv_flags(const win_geom *w, bool wc);

/* ---- shared launches ---------------------------------------------------------- */

/* conv_gemm's operands: Y[batch] = A[batch] . B[batch] over G1 groups. */
typedef struct {
  cl_mem A, B, Y;
  cl_int M, K, P, ldb, pload, ldy, G1;
  cl_long sa, sbo, sbi, syo, syi; /* strides of A per group, of B and Y per outer batch and per group */
  cl_int has_bias, epi;           /* add the bias; apply the node's epilogue */
  int64_t batches;
  const cl_int *sg;               /* conv_gemm_s's gather geometry SH, SW, IW, OW, or NULL */
} conv_gemm_args;

static int conv_gemm_launch(const conv_ctx *c, const conv_gemm_args *a, kiln_error *err) {
  kiln_exec *x = c->x;
  cl_kernel k = kiln_epi_kernel(x, c->n, "conv.cl", c->opts, a->sg ? "conv_gemm_s" : "conv_gemm", err);
  if (!k) return err->status;
  cl_mem e[2];
  kiln_epi_bufs(x, c->n, a->Y, e);
  if (kiln_cl_args(k, err, KARG(a->A), KARG(a->B), KARG(c->bb), KARG(a->Y), KARG(a->M), KARG(a->K), KARG(a->P), KARG(a->ldb), KARG(a->pload),
                   KARG(a->ldy), KARG(a->G1), KARG(a->sa), KARG(a->sbo), KARG(a->sbi), KARG(a->syo), KARG(a->syi), KARG(a->has_bias),
                   KARG(a->epi), KARG(e[0]), KARG(e[1]), KEND))
    return err->status;
  for (int i = 0; a->sg && i < 4; i++) {
    cl_int r = kiln_cl_arg(k, 20 + i, sizeof(cl_int), &a->sg[i]);
    if (r != CL_SUCCESS) return kiln__err(err, KILN_ECL, "clSetKernelArg: %s", kiln__clerror(r));
  }
  int tm = c->p[CP_GTM], tn = c->p[CP_GTN];
  size_t gws[3] = {(size_t)ceil_div(a->P, tn), (size_t)ceil_div(a->M, tm), (size_t)a->batches};
  if (c->p[CP_GORD]) { size_t t = gws[0]; gws[0] = gws[1]; gws[1] = t; }
  return kiln_exec_launch(x, k, 3, gws, NULL, err);
}

/* gemm.cl's gemm_panel over B in panels of GEMM_TN columns (solvers panel
 * and winop): Y = A . Bp (+ C per row when has_c), batches (n, inner) with
 * the batch metadata meta (gemm.cl batch_offsets), rows M in blocks of
 * GEMM_TM, PANEL_WG panels per work-group. rowch: per-row bias and the
 * node's epilogue (else a plain product). */
typedef struct {
  cl_mem A, Bp, C, Y;
  cl_int M, N, K, has_c;
  cl_long sam, sak, scm, scn;
  int64_t inner;        /* batches per image: groups, or the 16 Winograd products */
  int64_t meta[1 + 3 * 8];
  bool rowch;
  bool f32;             /* fp16 storage: the product in fp32 all the same (winop4's transformed weights and tiles) */
} conv_panel_args;

/* Row blocks of GEMM_TM per gemm_panel work-item (its MB): up to 64 rows,
 * while at least 8 work-items remain. */
static int conv_panel_mb(int64_t M, int tm, int64_t np, int64_t batches) {
  int mb = 8;
  while (mb > 1 && ((int64_t)mb * tm > 64 || np * ceil_div(ceil_div(M, tm), mb) * batches < 8 || ceil_div(M, tm) <= mb / 2)) mb /= 2;
  return mb;
}

static int conv_panel_gemm(const conv_ctx *c, conv_panel_args *a, kiln_error *err) {
  kiln_exec *x = c->x;
  int tm = c->p[CP_GTM], tn = c->p[CP_GTN], vw = tn % 16 ? 8 : 16;
  int64_t np = ceil_div(a->N, tn), batches = c->w->n * a->inner;
  int mb = conv_panel_mb(a->M, tm, np, batches);
  cl_mem bm = kiln_exec_param(x, c->n, 2, a->meta, sizeof a->meta, err);
  if (!bm) return err->status;
  char gopts[512];
  kiln_cl_type_opts(a->f32 && c->dt == KILN_DT_FLOAT16 ? KILN_DT_FLOAT : c->dt, gopts, sizeof gopts);
  size_t gl = strlen(gopts);
  /* A: the weights packed in panels of GEMM_TM rows (AP=1) */
  snprintf(gopts + gl, sizeof gopts - gl, " -DKERNEL=1 -DTM=%d -DNV=%d -DVW=%d -DWGM=1 -DWGN=%d -DKWI=1 -DSA=0 -DKWG=16 -DMB=%d -DAP=1%s%s", tm,
           tn / vw, vw, c->p[CP_PWG], mb, a->rowch ? " -DROWCH=1" : "", "");
  cl_kernel k = a->rowch ? kiln_epi_kernel(x, c->n, "gemm.cl", gopts, "gemm_panel", err) : kiln_cl_kernel(x->d, "gemm.cl", gopts, "gemm_panel", err);
  if (!k) return err->status;
  cl_mem e0 = a->rowch ? c->ep[0] : c->bw, e1 = a->rowch ? c->ep[1] : c->bw;
  int rc;
  if (c->dt == KILN_DT_DOUBLE) {
    cl_double one = 1;
    rc = kiln_cl_args(k, err, KARG(a->M), KARG(a->N), KARG(a->K), KARG(one), KARG(one), KARG(a->A), KARG(a->sam), KARG(a->sak), KARG(a->Bp),
                      KARG(a->C), KARG(a->scm), KARG(a->scn), KARG(a->has_c), KARG(a->Y), KARG(bm), KARG(e0), KARG(e1), KEND);
  } else {
    cl_float one = 1;
    rc = kiln_cl_args(k, err, KARG(a->M), KARG(a->N), KARG(a->K), KARG(one), KARG(one), KARG(a->A), KARG(a->sam), KARG(a->sak), KARG(a->Bp),
                      KARG(a->C), KARG(a->scm), KARG(a->scn), KARG(a->has_c), KARG(a->Y), KARG(bm), KARG(e0), KARG(e1), KEND);
  }
  if (rc) return err->status;
  size_t wgn = (size_t)c->p[CP_PWG];
  size_t gg[3] = {(size_t)ceil_div(np, (int64_t)wgn) * wgn, (size_t)ceil_div(ceil_div(a->M, tm), mb), (size_t)batches};
  size_t lg[3] = {wgn, 1, 1};
  return kiln_exec_launch(x, k, 3, gg, lg, err);
}

/* The ninth argument of a kernel built with -DPW_XSCALE (conv_pw, conv_dirc):
 * the input's scales per (n, c). */
static int set_xscale(cl_kernel k, cl_mem xs, kiln_error *err) {
  cl_int r = kiln_cl_arg(k, 8, sizeof xs, &xs);
  return r == CL_SUCCESS ? 0 : kiln__err(err, KILN_ECL, "clSetKernelArg: %s", kiln__clerror(r));
}

/* conv_im2col into a scratch buffer of ldb columns (solvers im2col, local). */
static cl_mem conv_im2col(const conv_ctx *c, cl_int ldb, kiln_error *err) {
  const win_geom *w = c->w;
  cl_mem col = kiln_exec_scratch(c->x, c->n, 0, (size_t)(w->n * w->group * c->K * ldb) * c->desz, err);
  if (!col) return NULL;
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", c->opts, "conv_im2col", err);
  if (!k || kiln_cl_args(k, err, KARG(c->bx), KARG(col), KARG(c->mb), KARG(ldb), KEND)) return NULL;
  size_t gws[3] = {(size_t)(w->out[0] * w->out[1]), (size_t)c->K, (size_t)(w->n * w->group)};
  return kiln_exec_launch(c->x, k, 3, gws, NULL, err) ? NULL : col;
}

/* wino_out (wino4_out when r = 4): the output transform of the products Mw
 * (ldo columns). */
static int conv_wino_out(const conv_ctx *c, int r, const char *opts, cl_mem Mw, cl_int TW, cl_int T_, cl_int ldo, kiln_error *err) {
  const kiln_value *yv = kiln_out(c->x->g, kiln_epi_result_node(c->x->g, c->n), 0);
  const bool ob = r == 4 && yv->blk; /* blocked output: wino4_out_b (WINO_OUTB), 8 channels x 8 tiles a work-item */
  cl_kernel ko = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, r == 4 ? (ob ? "wino4_out_b" : "wino4_out") : "wino_out", err);
  if (!ko) return err->status;
  if (kiln_cl_args(ko, err, KARG(Mw), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(TW), KARG(T_), KARG(ldo), KARG(c->has_bias), KARG(c->ep[0]),
                   KARG(c->ep[1]), KEND))
    return err->status;
  size_t go[3] = {(size_t)(r == 4 ? ceil_div(T_, 8) : T_), (size_t)c->w->oc, (size_t)c->w->n}; /* wino4_out: 8 tiles per work-item */
  int64_t oc = c->w->oc; /* wino4_out: 2.3 kB of private arrays per work-item, groups of at most 8 (see winop_launch_of) */
  size_t lo[3] = {1, (size_t)(oc % 8 == 0 ? 8 : oc % 4 == 0 ? 4 : oc % 2 == 0 ? 2 : 1), 1};
  if (ob) { /* OC a multiple of the block (runtime/layout.c); 9 kB of private arrays a work-item: groups of 2 */
    go[1] = go[0], go[0] = (size_t)(oc / 8);
    lo[0] = oc % 16 == 0 ? 2 : 1, lo[1] = 1;
  }
  return kiln_exec_launch(c->x, ko, 3, go, r == 4 ? lo : NULL, err);
}

/* ---- the solvers ------------------------------------------------------------------ */

#define USES(a) (1u << (a))
#define GEMM_USES (USES(CP_GTM) | USES(CP_GTN) | USES(CP_GORD))
#define PANEL_USES (USES(CP_GTM) | USES(CP_GTN) | USES(CP_PWG))

/* Dimensions and byte counts that every solver's features start from. */
typedef struct {
  int64_t M, K, P, nb, c, esz;
  double macs, wbytes, ybytes, in_bytes;
} conv_sizes;

static conv_sizes sizes_of(const kiln_tunable *t, kiln_features *f) {
  conv_sizes s = {t->dims[CD_M], t->dims[CD_K], t->dims[CD_P], t->dims[CD_NB], t->dims[CD_C], t->dims[CD_ESZ], 0, 0, 0, 0};
  s.macs = (double)s.nb * s.M * s.K * s.P;
  s.wbytes = (double)s.nb * s.M * s.K * s.esz;
  s.ybytes = (double)s.nb * s.M * s.P * s.esz;
  s.in_bytes = (double)s.nb * s.K * s.P * s.esz; /* upper bound of the input (taps re-read from cache) */
  double x_bytes = (double)s.nb * (double)t->dims[CD_IN] * s.esz; /* the input itself */
  memset(f, 0, sizeof *f);
  f->flops = 2 * s.macs;
  f->launches = 1;
  f->footprint = x_bytes + s.wbytes + s.ybytes; /* plus the intermediate buffers, written once and read once */
  return s;
}

/* GEMM tiles much taller than the output channels, or much wider than the
 * pixels (Winograd: tiles), only multiply zeros (the defaults always stay). */
static int gemm_tile_fits(const kiln_tunable *t, const int *p, int64_t cols) {
  if (p[CP_GTM] != t->params[CP_GTM].dflt && p[CP_GTM] > 2 * t->dims[CD_M] && p[CP_GTM] > 2) return -1;
  if (p[CP_GTN] != t->params[CP_GTN].dflt && p[CP_GTN] > 2 * cols && p[CP_GTN] > 8) return -1;
  return 0;
}

static bool fits_alloc(double elems, const kiln_tunable *t, const kiln_device_info *d) {
  return elems * (double)t->dims[CD_ESZ] <= (double)d->max_alloc;
}

static bool wconst(const kiln_tunable *t) { return t->dims[CD_FLAGS] & CF_WCONST; }

/* -- direct ------------------------------------------------------------------ */

static int direct_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  /* tiles far wider than the channels (the default always stays) */
  if (p[CP_TOC] != t->params[CP_TOC].dflt && p[CP_TOC] > 2 * t->dims[CD_M] && p[CP_TOC] > 4) return -1;
  return 0;
}

static int direct_prefer(const kiln_tunable *t) { return 1; /* runs anything: the last resort */ }

static void direct_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  conv_sizes s = sizes_of(t, f);
  int toc = p[CP_TOC], tp = p[CP_TP];
  int64_t oh = t->dims[CD_OH] > 0 ? t->dims[CD_OH] : 1; /* rows of tiles: each row's last tile may be partial */
  int64_t tiles = oh * ceil_div(s.P / oh, tp);
  f->flops = 2.0 * s.nb * round_up(s.M, toc) * s.K * (double)(tiles * tp); /* whole tiles, edges included */
  f->wg_size = CONV_DIRECT_WG;
  f->work_groups = (double)s.nb * ceil_div(tiles, CONV_DIRECT_WG) * ceil_div(s.M, toc);
  f->bytes = s.wbytes * (double)tiles + s.in_bytes * (double)ceil_div(s.M, toc) + s.ybytes;
  /* a weight times CONV_TP neighbouring inputs of a row: one vector
   * multiply-add once the compiler unrolls the loop (POCL runs the
   * 64-channel 56x56 layer at 31 GFLOP/s, twice the probe's scalar rate).
   * Counted as scalar, the base put these kernels 4-16x too slow and the
   * fit learnt a compensation that misled it on memory-bound instances:
   * held out on four sweeps' merged records, regret 1.088 -> 1.061; on a
   * fresh sweep 1.118 -> 1.084. The cost: the cold replay of resnet18's
   * convolutions (model strategy, no other records) went 1.001x -> 1.055x
   * the best, Winograd left unexplored on three 3x3 layers */
  f->vec = tp;
}

static int direct_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", c->opts, "conv_direct", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(c->bx), KARG(c->bw), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(c->has_bias), KARG(c->ep[0]), KARG(c->ep[1]),
                   KEND))
    return err->status;
  /* work-groups of CONV_DIRECT_WG tiles along the pixels (the kernel
   * skips the tiles past the last row): left to POCL, up to 4096 work-items
   * went into one group, so a whole 64-channel 56x56 layer ran on one
   * core (15.6 ms median against 9.3 ms in groups of 64) */
  size_t lws[3] = {CONV_DIRECT_WG, 1, 1};
  if (lws[0] > c->x->d->info.max_work_group) lws[0] = c->x->d->info.max_work_group;
  size_t gws[3] = {(size_t)round_up(ceil_div(w->out[2], c->p[CP_TP]) * w->out[1] * w->out[0], (int64_t)lws[0]),
                   (size_t)(w->group * ceil_div(c->ocg, c->p[CP_TOC])), (size_t)w->n};
  return kiln_exec_launch(c->x, k, 3, gws, lws, err);
}

/* -- 1x1, im2col and panel: one GEMM of the weights with the pixels ----------- */

static int gemm1x1_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  if (!wconst(t) || !(t->dims[CD_FLAGS] & (CF_1X1 | CF_1X1S))) return -1;
  return gemm_tile_fits(t, p, t->dims[CD_P]);
}

/* 1x1 over a pixel count that is a multiple of 8; strided 1x1, and 1x1 over
 * other pixel counts (the GEMM's last tile reads guarded), ran faster on
 * POCL/CPU as im2col + GEMM on a padded buffer */
static int gemm1x1_prefer(const kiln_tunable *t) { return wconst(t) && (t->dims[CD_FLAGS] & CF_1X1) && t->dims[CD_P] % 8 == 0 ? 4 : 0; }

static void gemm_features(const kiln_tunable *t, const int *p, kiln_features *f, int algo) {
  conv_sizes s = sizes_of(t, f);
  int tm = p[CP_GTM], tn = p[CP_GTN];
  int64_t ldb = algo == CONV_A_PANEL ? round_up(s.P, tn) : conv_ldb(s.P);
  double col = (double)s.nb * s.K * ldb * s.esz;
  f->flops = 2.0 * s.nb * round_up(s.M, tm) * s.K * round_up(s.P, tn); /* whole register tiles */
  f->work_groups = (double)s.nb * ceil_div(s.P, tn) * ceil_div(s.M, tm);
  f->bytes = s.wbytes * (double)ceil_div(s.P, tn) + col * (double)ceil_div(s.M, tm) + s.ybytes;
  if (algo != CONV_A_1X1) {
    f->bytes += 2.0 * col;
    f->launches = 2;
    f->footprint += 2.0 * col;
    f->gathered = (double)s.nb * s.K * ldb;
  }
  if (algo == CONV_A_PANEL) {
    f->wg_size = p[CP_PWG];
    f->work_groups = (double)s.nb * ceil_div(ceil_div(s.P, tn), p[CP_PWG]) * ceil_div(s.M, tm);
    f->bytes = s.wbytes * (double)ceil_div(s.P, tn) + col * (2 + (double)ceil_div(s.M, tm)) + s.ybytes;
  }
  /* conv_gemm reads B ([K][ldb]: the input itself for 1x1, the im2col
   * buffer) a row of GEMM_TN columns per k, once per block of GEMM_TM
   * output channels. Rows a page or more apart put every k of a block on
   * another page: no prefetch runs across them and each needs its own TLB
   * entry, so these reads go at the rate of a layout change's scattered
   * accesses, not at a cache's bandwidth: counted as strided elements
   * (the probe's "gather" rate, outside the correction). Measured on POCL/CPU (bench_conv_layer,
   * 1x1 256->128, conv_gemm TM=8 TN=32 against conv_pw): 28x28 (rows 3 KiB
   * apart) 2.4 vs 1.3 ms; 56x56 17 vs 5.2; 128x128 (64 KiB) 92-240 vs
   * 20-30 ms, where the old features, which priced these re-reads at the
   * fastest cache's bandwidth, let a database's fit predict 8 ms and pick
   * it over conv_pw for vae_decoder_16's 128x128 shortcut. */
  int64_t brow = algo == CONV_A_1X1 ? t->dims[CD_IN] / (s.K > 0 ? s.K : 1) : ldb; /* elements between B's rows */
  if (algo != CONV_A_PANEL && (double)brow * s.esz >= 4096) f->strided = (double)s.nb * s.K * s.P * (double)ceil_div(s.M, tm);
  f->vec = 8;
}

static void gemm1x1_features(const kiln_tunable *t, const int *p, kiln_features *f) { gemm_features(t, p, f, CONV_A_1X1); }

static int gemm1x1_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  int tm = c->p[CP_GTM];
  cl_mem A = conv_packed(c, pack_panels, tm, err);
  if (!A) return err->status;
  int64_t isz = w->in[0] * w->in[1] * w->in[2];
  bool strided = w->s[0] * w->s[1] * w->s[2] != 1;
  cl_int sg[4] = {(cl_int)w->s[1], (cl_int)w->s[2], (cl_int)w->in[2], (cl_int)w->out[2]};
  conv_gemm_args a = {.A = A, .B = c->bx, .Y = c->by, .M = (cl_int)c->ocg, .K = (cl_int)c->K, .P = (cl_int)c->osz, .ldb = (cl_int)isz,
                      .pload = (cl_int)c->osz, .ldy = (cl_int)c->osz, .G1 = (cl_int)w->group, .sa = ceil_div(c->ocg, tm) * c->K * tm,
                      .sbo = w->c * isz, .sbi = c->icg * isz, .syo = w->oc * c->osz, .syi = c->ocg * c->osz, .has_bias = c->has_bias,
                      .epi = 1, .batches = w->n * w->group, .sg = strided ? sg : NULL};
  return conv_gemm_launch(c, &a, err);
}

static int im2col_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  if (!wconst(t) || (t->dims[CD_FLAGS] & CF_DW)) return -1;
  if (!fits_alloc((double)t->dims[CD_NB] * t->dims[CD_K] * conv_ldb(t->dims[CD_P]), t, d)) return -1;
  return gemm_tile_fits(t, p, t->dims[CD_P]);
}

static int im2col_prefer(const kiln_tunable *t) { return wconst(t) && !(t->dims[CD_FLAGS] & CF_DW) ? 2 : 0; }

static void im2col_features(const kiln_tunable *t, const int *p, kiln_features *f) { gemm_features(t, p, f, CONV_A_IM2COL); }

static int im2col_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  int tm = c->p[CP_GTM];
  cl_int ldb = (cl_int)conv_ldb(c->osz);
  cl_mem col = conv_im2col(c, ldb, err);
  if (!col) return err->status;
  cl_mem A = conv_packed(c, pack_panels, tm, err);
  if (!A) return err->status;
  conv_gemm_args a = {.A = A, .B = col, .Y = c->by, .M = (cl_int)c->ocg, .K = (cl_int)c->K, .P = (cl_int)c->osz, .ldb = ldb, .pload = ldb,
                      .ldy = (cl_int)c->osz, .G1 = (cl_int)w->group, .sa = ceil_div(c->ocg, tm) * c->K * tm, .sbo = w->group * c->K * ldb,
                      .sbi = c->K * ldb, .syo = w->oc * c->osz, .syi = c->ocg * c->osz, .has_bias = c->has_bias, .epi = 1,
                      .batches = w->n * w->group};
  return conv_gemm_launch(c, &a, err);
}

/* panel on a 1x1 stride-1 convolution: conv_pw on the input itself */

/* Row blocks of GEMM_TM per conv_pw work-item: all of them up to 96 rows
 * (the input is then read once), else an even split into parts of at most
 * 64 rows; fewer while under 8 work-items would remain. */
static int pw_mb_of(int64_t M, int tm, int64_t np, int64_t nb) {
  int64_t nmb = ceil_div(M, tm), parts = nmb * tm <= 96 ? 1 : ceil_div(nmb * tm, 64);
  while (parts < nmb && np * parts * nb < 8) parts++;
  return (int)ceil_div(nmb, parts);
}


static int panel_pw_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  int tm = c->p[CP_GTM], tn = c->p[CP_GTN];
  cl_mem A = conv_packed(c, pack_panels, tm, err);
  if (!A) return err->status;
  int64_t np = ceil_div(c->osz, tn), nmb = ceil_div(c->ocg, tm), NB = w->n * w->group;
  int mb = pw_mb_of(c->ocg, tm, np, NB);
  cl_mem xs = kiln_in_buf(c->x, c->n, 3); /* the input's scales per (n, c) (CF_XS) */
  char opts[sizeof c->opts + 48];
  snprintf(opts, sizeof opts, "%s -DPW_MB=%d%s", c->opts, mb, xs ? " -DPW_XSCALE=1" : "");
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, "conv_pw", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(c->bx), KARG(A), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(c->has_bias), KARG(c->ep[0]), KARG(c->ep[1]),
                   KEND))
    return err->status;
  if (xs && set_xscale(k, xs, err)) return err->status;
  size_t wg = (size_t)c->p[CP_PWG];
  size_t gws[3] = {(size_t)ceil_div(np, (int64_t)wg) * wg, (size_t)ceil_div(nmb, mb), (size_t)NB};
  size_t lws[3] = {wg, 1, 1};
  return kiln_exec_launch(c->x, k, 3, gws, lws, err);
}

static int panel_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  if (!wconst(t) || (t->dims[CD_FLAGS] & CF_DW)) return -1;
  if (!fits_alloc((double)t->dims[CD_NB] * t->dims[CD_K] * round_up(t->dims[CD_P], p[CP_GTN]), t, d)) return -1;
  return gemm_tile_fits(t, p, t->dims[CD_P]);
}

/* On 1x1 stride-1 instances (conv_pw, no copy) these still count the copy
 * into panels: the built-in prior was fitted on them, and with the copy's
 * bytes, launch and gathered elements taken out it ranked panel below
 * im2col + conv_gemm on every 1x1 layer of mobilenet_v2, which conv_pw
 * runs 2-4x faster (bench/conv_layer.c). A prior refitted on records of
 * conv_pw can take the features as they are. */
static void panel_features(const kiln_tunable *t, const int *p, kiln_features *f) { gemm_features(t, p, f, CONV_A_PANEL); }

static int panel_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  if (conv_flags(w, true) & CF_1X1) return panel_pw_launch(c, err);
  int tn = c->p[CP_GTN];
  int64_t np = ceil_div(c->osz, tn), G = w->group, NB = w->n * G;
  cl_mem col = kiln_exec_scratch(c->x, c->n, 0, (size_t)(NB * np * c->K * tn) * c->desz, err);
  if (!col) return err->status;
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", c->opts, "conv_im2col_p", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(c->bx), KARG(col), KARG(c->mb), KEND)) return err->status;
  size_t gws[3] = {(size_t)c->K, (size_t)(w->out[0] * w->out[1]), (size_t)NB};
  int rc = kiln_exec_launch(c->x, k, 3, gws, NULL, err);
  if (rc) return rc;
  /* batches (n, g): packed weights ceil(M/TM)*K*TM apart, panel buffers np*K*TN apart */
  int tm = c->p[CP_GTM];
  cl_mem A = conv_packed(c, pack_panels, tm, err);
  if (!A) return err->status;
  conv_panel_args a = {.A = A, .Bp = col, .C = c->bb, .Y = c->by, .M = (cl_int)c->ocg, .N = (cl_int)c->osz, .K = (cl_int)c->K,
                       .has_c = c->has_bias, .sam = c->K, .sak = 1, .scm = 0, .scn = w->oc, .inner = G, .meta = {2, w->n, G}, .rowch = true};
  a.meta[1 + 8 + 1] = ceil_div(c->ocg, tm) * c->K * tm;
  a.meta[1 + 16] = G * np * c->K * tn;
  a.meta[1 + 16 + 1] = np * c->K * tn;
  return conv_panel_gemm(c, &a, err);
}

/* -- local: im2col, then a GPU-style GEMM with tiles in local memory --------- */

static int local_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  int ts = p[CP_LTS], wpt = p[CP_LWPT]; /* reads the weights as they are: computed weights too */
  if (ts % wpt || (size_t)(ts / wpt * ts) > d->max_work_group) return -1;
  /* GPU-style: on CPUs one representative candidate stays in the space */
  if (!d->is_gpu && (ts != 16 || wpt != 2)) return -1;
  if ((uint64_t)(2 * ts * (ts + 1) * (t->dims[CD_ESZ] == 2 ? 4 : t->dims[CD_ESZ])) > d->local_mem) return -1; /* fp16 storage: float tiles */
  if (t->dims[CD_FLAGS] & CF_DW) return -1;
  return fits_alloc((double)t->dims[CD_NB] * t->dims[CD_K] * conv_ldb(t->dims[CD_P]), t, d) ? 0 : -1;
}

static void local_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  conv_sizes s = sizes_of(t, f);
  int ts = p[CP_LTS], wpt = p[CP_LWPT];
  int64_t ldb = conv_ldb(s.P);
  f->flops = 2.0 * s.nb * round_up(s.M, ts) * s.K * round_up(s.P, ts);
  f->work_groups = (double)s.nb * ceil_div(s.P, ts) * ceil_div(s.M, ts);
  f->wg_size = (double)(ts / wpt * ts);
  f->bytes = s.wbytes * (double)ceil_div(s.P, ts) + (double)s.nb * s.K * ldb * s.esz * (2 + (double)ceil_div(s.M, ts)) + s.ybytes;
  f->bytes_local = 2.0 * s.macs / ts * s.esz * 2;
  f->footprint += 2.0 * s.nb * s.K * ldb * s.esz;
  f->gathered = (double)s.nb * s.K * ldb;
  f->vec = 1;
  f->launches = 2;
}

static int local_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  cl_int ldb = (cl_int)conv_ldb(c->osz);
  cl_mem col = conv_im2col(c, ldb, err);
  if (!col) return err->status;
  int ts = c->p[CP_LTS], wpt = c->p[CP_LWPT];
  cl_kernel kl = kiln_epi_kernel(c->x, c->n, "conv.cl", c->opts, "conv_gemm_local", err);
  if (!kl) return err->status;
  cl_int M = (cl_int)c->ocg, Kc = (cl_int)c->K, P = (cl_int)c->osz, G = (cl_int)w->group;
  if (kiln_cl_args(kl, err, KARG(c->bw), KARG(col), KARG(c->bb), KARG(c->by), KARG(M), KARG(Kc), KARG(P), KARG(ldb), KARG(G), KARG(c->has_bias),
                   KARG(c->ep[0]), KARG(c->ep[1]), KEND))
    return err->status;
  size_t gl[3] = {(size_t)(ceil_div(c->osz, ts) * (ts / wpt)), (size_t)(ceil_div(c->ocg, ts) * ts), (size_t)(w->n * w->group)};
  size_t ll[3] = {(size_t)(ts / wpt), (size_t)ts, 1};
  return kiln_exec_launch(c->x, kl, 3, gl, ll, err);
}

/* -- Winograd F(2x2,3x3) and F(4x4,3x3): products between two transforms ---- */

/* The tiles of F(r x r, 3x3) (r = 2 or 4) for an instance. */
static int64_t wino_tiles_of(const kiln_tunable *t, int r) { return r == 4 ? CONV_WINO4_TILES(t) : t->dims[CD_WT]; }

static int wino_applies_of(const kiln_tunable *t, const int *p, const kiln_device_info *d, int r) {
  if (!wconst(t) || !(t->dims[CD_FLAGS] & CF_WINO)) return -1;
  int64_t c = t->dims[CD_C], M = t->dims[CD_M], T = wino_tiles_of(t, r);
  if (!fits_alloc((double)t->dims[CD_NB] * (r + 2) * (r + 2) * (c > M ? c : M) * conv_ldb(T), t, d)) return -1;
  return gemm_tile_fits(t, p, T);
}

static int wino_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) { return wino_applies_of(t, p, d, 2); }
/* winop4's 36 products are K = C deep and T/4 of F(2x2)'s width: with
 * register tiles of 2 rows (GEMM_TM=2) they ran 2.5-4x slower than with 4
 * or 6 on every resnet18 3x3 shape on POCL (64..512 channels, 56x56..7x7),
 * and the cost model's prior, fitted before winop4 existed, favours 2 */
static int wino4_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  return p[CP_GTM] < 4 ? -1 : wino_applies_of(t, p, d, 4);
}

static int wino_prefer(const kiln_tunable *t) { return wconst(t) && (t->dims[CD_FLAGS] & CF_WINO) ? 3 : 0; }

/* r = 2: the (r+2)^2 = 16 products and 32 / 24 operations per tile and
 * channel in the input / output transforms; r = 4: 36 products, 288 / 130
 * operations (wino4_in_p, wino4_out) */
static void wino_features_of(const kiln_tunable *t, const int *p, kiln_features *f, bool panel, int r) {
  conv_sizes s = sizes_of(t, f);
  int tm = p[CP_GTM], tn = p[CP_GTN];
  double nx = (r + 2) * (r + 2), tin = r == 4 ? 288 : 32, tout = r == 4 ? 130 : 24;
  int64_t T = wino_tiles_of(t, r), ldb = panel ? round_up(T, tn) : conv_ldb(T);
  if (panel) f->wg_size = p[CP_PWG];
  double gm = (double)s.nb * nx * round_up(s.M, tm) * s.c * round_up(T, tn); /* multiply-adds of the products, whole tiles */
  f->flops = 2 * gm + (double)s.nb * (s.c * ldb * tin + s.M * T * tout);
  f->work_groups = (double)s.nb * nx * ceil_div(T, tn) * ceil_div(s.M, tm);
  f->bytes = (double)s.nb * nx * s.M * s.c * s.esz * (double)ceil_div(T, tn) + (double)s.nb * nx * s.c * ldb * s.esz * (2 + (double)ceil_div(s.M, tm)) +
             (double)s.nb * nx * s.M * ldb * s.esz * 2 + s.ybytes + (double)s.nb * s.c * s.P * s.esz;
  f->footprint += (double)s.nb * nx * (s.c + s.M) * ldb * s.esz * 2 + nx * s.M * s.c * s.esz - s.wbytes; /* transformed tiles; weights as the products */
  if (r == 4) /* wino4_in_p reads each patch by index (36 per tile and channel) and stores vectors of 8 tiles;
                wino4_out loads vectors and stores each tile's 16 outputs by index; their blocked
                forms (wino4_in_b, wino4_out_b) load and store whole vectors of channels */
    f->gathered = (double)s.nb * ((t->dims[CD_FLAGS] & CF_INB ? 0 : 36.0 * s.c) + (t->dims[CD_FLAGS] & CF_OUTB ? 0 : 16.0 * s.M)) * (double)T;
  else
    f->gathered = (double)s.nb * nx * (s.c + s.M) * (double)T; /* input tiles in, output tiles out */
  f->vec = 8;
  f->launches = 3;
}

static void wino_features(const kiln_tunable *t, const int *p, kiln_features *f) { wino_features_of(t, p, f, false, 2); }
static void winop_features(const kiln_tunable *t, const int *p, kiln_features *f) { wino_features_of(t, p, f, true, 2); }
static void winop4_features(const kiln_tunable *t, const int *p, kiln_features *f) { wino_features_of(t, p, f, true, 4); }

static int wino_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  int tm = c->p[CP_GTM];
  cl_int T_ = (cl_int)conv_wino_tiles(w), TW = (cl_int)ceil_div(w->out[2], 2), ldb = (cl_int)conv_ldb(T_);
  cl_mem A = conv_packed(c, pack_wino, tm, err);
  if (!A) return err->status;
  cl_mem V = kiln_exec_scratch(c->x, c->n, 0, (size_t)(w->n * 16 * w->c * ldb) * c->desz, err);
  if (!V) return err->status;
  cl_mem Mw = kiln_exec_scratch(c->x, c->n, 1, (size_t)(w->n * 16 * w->oc * ldb) * c->desz, err);
  if (!Mw) return err->status;
  cl_kernel ki = kiln_epi_kernel(c->x, c->n, "conv.cl", c->opts, "wino_in", err);
  if (!ki) return err->status;
  if (kiln_cl_args(ki, err, KARG(c->bx), KARG(V), KARG(c->mb), KARG(TW), KARG(T_), KARG(ldb), KEND)) return err->status;
  size_t gi[3] = {(size_t)ldb, (size_t)w->c, (size_t)w->n};
  int rc = kiln_exec_launch(c->x, ki, 3, gi, NULL, err);
  if (rc) return rc;
  conv_gemm_args a = {.A = A, .B = V, .Y = Mw, .M = (cl_int)w->oc, .K = (cl_int)w->c, .P = T_, .ldb = ldb, .pload = ldb, .ldy = ldb, .G1 = 16,
                      .sa = ceil_div(w->oc, tm) * w->c * tm, .sbo = 16 * w->c * ldb, .sbi = w->c * ldb, .syo = 16 * w->oc * ldb,
                      .syi = w->oc * ldb, .has_bias = 0, .epi = 0, .batches = w->n * 16};
  if ((rc = conv_gemm_launch(c, &a, err))) return rc;
  return conv_wino_out(c, 2, c->opts, Mw, TW, T_, ldb, err);
}

/* Winograd F(4x4,3x3) weights, in panels of GEMM_TM rows like pack_wino's */
static void *pack_wino4(const conv_ctx *c, int tm, size_t *bytes) { return pack_wino_g(c, tm, 6, wino4_G, bytes); }

/* Winograd F(r x r, 3x3), r = 2 (winop) or 4 (winop4): the input transform
 * into panels, the (r+2)^2 products by gemm_panel, the output transform. */
static int winop_launch_of(const conv_ctx *c, int r, kiln_error *err) {
  const win_geom *w = c->w;
  int tn = c->p[CP_GTN];
  int64_t nx = (r + 2) * (r + 2); /* products */
  cl_int TW = (cl_int)ceil_div(w->out[2], r), T_ = (cl_int)(ceil_div(w->out[1], r) * TW);
  int64_t np = ceil_div(T_, tn);
  int tm = c->p[CP_GTM];
  cl_mem A = conv_packed(c, r == 4 ? pack_wino4 : pack_wino, tm, err);
  if (!A) return err->status;
  size_t vsz = r == 4 ? c->esz : c->desz; /* winop4's transformed tiles: fp32 in fp16 storage too (conv.cl WST), as its weights */
  cl_mem V = kiln_exec_scratch(c->x, c->n, 0, (size_t)(w->n * nx * np * w->c * tn) * vsz, err);
  if (!V) return err->status;
  cl_mem Mw = kiln_exec_scratch(c->x, c->n, 1, (size_t)(w->n * nx * w->oc * T_) * vsz, err);
  if (!Mw) return err->status;
  /* winop4 reads and writes blocked values itself (-DWINO_INB, -DWINO_OUTB) */
  char opts[sizeof c->opts + 64];
  const kiln_value *xv = kiln_in(c->x->g, c->n, 0), *yv = kiln_out(c->x->g, kiln_epi_result_node(c->x->g, c->n), 0);
  size_t ol = (size_t)snprintf(opts, sizeof opts, "%s", c->opts);
  if (r == 4 && xv->blk) ol += (size_t)snprintf(opts + ol, sizeof opts - ol, " -DWINO_INB=%d", xv->blk);
  if (r == 4 && yv->blk) snprintf(opts + ol, sizeof opts - ol, " -DWINO_OUTB=%d", yv->blk);
  const bool ib = r == 4 && xv->blk; /* blocked input: wino4_in_b (WINO_INB), 8 channels x 8 tiles a work-item */
  cl_kernel ki = kiln_cl_kernel(c->x->d, "conv.cl", opts, r == 4 ? (ib ? "wino4_in_b" : "wino4_in_p") : "wino_in_p", err);
  if (!ki) return err->status;
  if (kiln_cl_args(ki, err, KARG(c->bx), KARG(V), KARG(c->mb), KARG(TW), KARG(T_), KEND)) return err->status;
  size_t gi[3] = {(size_t)w->c, (size_t)(np * tn), (size_t)w->n};
  if (r == 4) { gi[0] = (size_t)(np * tn / 8); gi[1] = (size_t)w->c; } /* wino4_in_p: 8 tiles per work-item, tiles first */
  /* wino4_in_p holds 2.3 kB of private arrays per work-item: left to POCL a
   * work-group of 32x128 overflowed its stack (SIGSEGV, vae_decoder_16), so
   * groups of at most 4x8 */
  size_t li[3] = {(size_t)(tn / 8), (size_t)(w->c % 8 == 0 ? 8 : w->c % 4 == 0 ? 4 : w->c % 2 == 0 ? 2 : 1), 1};
  if (ib) { /* C a multiple of the block; 9 kB of private arrays a work-item: groups of 2 */
    gi[1] = gi[0], gi[0] = (size_t)(w->c / 8);
    li[0] = w->c % 16 == 0 ? 2 : 1, li[1] = 1;
  }
  int rc = kiln_exec_launch(c->x, ki, 3, gi, r == 4 ? li : NULL, err);
  if (rc) return rc;
  /* batches (n, xi): U_xi (packed in panels of GEMM_TM rows) ceil(OC/TM)*C*TM
   * apart, V panels np*C*TN apart; no epilogue here: the output transform
   * applies it */
  conv_panel_args a = {.A = A, .Bp = V, .C = c->bw, .Y = Mw, .M = (cl_int)w->oc, .N = T_, .K = (cl_int)w->c, .has_c = 0, .sam = 1,
                       .sak = w->oc, .scm = 0, .scn = 1, .inner = nx, .meta = {2, w->n, nx}, .rowch = false, .f32 = r == 4};
  a.meta[1 + 8 + 1] = ceil_div(w->oc, tm) * w->c * tm;
  a.meta[1 + 16] = nx * np * w->c * tn;
  a.meta[1 + 16 + 1] = np * w->c * tn;
  if ((rc = conv_panel_gemm(c, &a, err))) return rc;
  return conv_wino_out(c, r, opts, Mw, TW, T_, T_, err);
}

static int winop_launch(const conv_ctx *c, kiln_error *err) { return winop_launch_of(c, 2, err); }
static int winop4_launch(const conv_ctx *c, kiln_error *err) { return winop_launch_of(c, 4, err); }

/* -- depthwise ---------------------------------------------------------------- */

/* dwr (below) runs every 2-D depthwise convolution of up to DWR_KMAX taps
 * 2.4-4.9x faster than dw and dwv (bench_conv_layer, mobilenet_v2's
 * shapes on POCL): they stay for what dwr does not hold, 3-D (dw) and
 * larger kernels (both) */
#define DWR_KMAX 49
static bool dwr_covers(const kiln_tunable *t) { return (t->dims[CD_FLAGS] & CF_DW) && !(t->dims[CD_FLAGS] & CF_3D) && t->dims[CD_K] <= DWR_KMAX; }
static int dw_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) { return t->dims[CD_FLAGS] & CF_DW && !dwr_covers(t) ? 0 : -1; }
static int dwv_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  return (t->dims[CD_FLAGS] & CF_DW) && !(t->dims[CD_FLAGS] & CF_3D) && !dwr_covers(t) ? 0 : -1; /* 2-D only */
}

static int dw_prefer(const kiln_tunable *t) { return t->dims[CD_FLAGS] & CF_DW ? 5 : 0; }

static void dw_features_of(const kiln_tunable *t, int step, double vec, kiln_features *f) {
  conv_sizes s = sizes_of(t, f);
  int64_t oh = t->dims[CD_OH] > 0 ? t->dims[CD_OH] : 1;
  f->flops = 2.0 * s.nb * s.K * oh * round_up(s.P / oh, step); /* rows in whole tiles or vectors */
  f->bytes = s.in_bytes + s.ybytes + s.wbytes;
  f->vec = vec;
}

static void dw_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  dw_features_of(t, p[CP_DWTP], 1, f);
  f->work_groups = (double)t->dims[CD_NB] * ceil_div(t->dims[CD_P], p[CP_DWTP]);
}

static void dwv_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  dw_features_of(t, p[CP_DWVW], p[CP_DWVW], f);
  f->work_groups = (double)t->dims[CD_NB] * (double)t->dims[CD_OH];
}

/* c's build options plus -DCONV_GEOM=<the 24 ints of its geometry>: the
 * kernels built so (dw, dwv, dwr, dirv) have the geometry as constants, one
 * program per shape, so that their tap loops' bounds are known */
static void geom_opts(const conv_ctx *c, char *opts, size_t len) {
  size_t o = (size_t)snprintf(opts, len, "%s -DCONV_GEOM=", c->opts);
  for (int i = 0; i < 24 && o < len; i++) o += (size_t)snprintf(opts + o, len - o, "%s%d", i ? "," : "", c->m[i]);
}

static int dw_launch_of(const conv_ctx *c, bool vec, kiln_error *err) {
  const win_geom *w = c->w;
  /* the geometry as constants (one program per depthwise shape) */
  char opts[sizeof c->opts + 256];
  geom_opts(c, opts, sizeof opts);
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, vec ? "conv_dwv" : "conv_dw", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(c->bx), KARG(c->bw), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(c->has_bias), KARG(c->ep[0]), KARG(c->ep[1]),
                   KEND))
    return err->status;
  size_t gws[3] = {(size_t)(ceil_div(w->out[2], c->p[CP_DWTP]) * w->out[1] * w->out[0]), (size_t)w->c, (size_t)w->n};
  if (vec) gws[0] = (size_t)(w->out[0] * w->out[1]);
  return kiln_exec_launch(c->x, k, 3, gws, NULL, err);
}

static int dw_launch(const conv_ctx *c, kiln_error *err) { return dw_launch_of(c, false, err); }
static int dwv_launch(const conv_ctx *c, kiln_error *err) { return dw_launch_of(c, true, err); }

/* dwr: up to DWR_KMAX taps, held in registers (conv.cl's DWR_KMAX) */
static int dwr_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  if (!dwr_covers(t)) return -1;
  /* more rows per work-item than the output has only repeat the guarded path */
  if (p[CP_DWR] != t->params[CP_DWR].dflt && p[CP_DWR] > t->dims[CD_OH]) return -1;
  return 0;
}

static int dwr_prefer(const kiln_tunable *t) { return dwr_covers(t) ? 6 : 0; }

/* Channels per conv_dwr work-group (a divisor of C): whole planes, doubled
 * while a group holds at most 4096 outputs and 8 groups remain, so that
 * small planes do not make a group each (960 groups of 7 work-items for
 * mobilenet_v2's 7x7 layers; the effect of this split alone is not measured). */
static int64_t dwr_cg(int64_t C, int64_t N, int64_t P, int64_t rows, size_t max_wg) {
  int64_t cg = 1;
  while (C % (2 * cg) == 0 && 2 * cg * P <= 4096 && C / (2 * cg) * N >= 8 && (size_t)(2 * cg * rows) <= max_wg) cg *= 2;
  return cg;
}

static void dwr_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  dw_features_of(t, p[CP_DWVW], p[CP_DWVW], f);
  int64_t oh = t->dims[CD_OH] > 0 ? t->dims[CD_OH] : 1, rows = ceil_div(oh, p[CP_DWR]), C = t->dims[CD_C];
  int64_t N = C > 0 ? t->dims[CD_NB] / C : 1, cg = dwr_cg(C, N, t->dims[CD_P], rows, 4096);
  f->work_groups = (double)t->dims[CD_NB] / (double)cg;
  f->wg_size = (double)(rows * cg);
}

static int dwr_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  char opts[sizeof c->opts + 256];
  geom_opts(c, opts, sizeof opts);
  /* the window's rows as a loop: over 3x3 at stride 2 (conv.cl, DWR_KH_LOOP) */
  if (w->k[1] * w->k[2] > 9 && w->s[2] >= 2) {
    size_t o = strlen(opts);
    snprintf(opts + o, sizeof opts - o, " -DDWR_KH_LOOP=1");
  }
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, "conv_dwr", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(c->bx), KARG(c->bw), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(c->has_bias), KARG(c->ep[0]), KARG(c->ep[1]),
                   KEND))
    return err->status;
  int64_t rows = ceil_div(w->out[1], c->p[CP_DWR]);
  size_t max_wg = c->x->d->info.max_work_group;
  int64_t cg = dwr_cg(w->c, w->n, w->out[1] * w->out[2], rows, max_wg);
  size_t gws[3] = {(size_t)rows, (size_t)w->c, (size_t)w->n}, lws[3] = {(size_t)rows, (size_t)cg, 1};
  return kiln_exec_launch(c->x, k, 3, gws, (size_t)rows * (size_t)cg <= max_wg ? lws : NULL, err);
}

/* -- dirv: direct along the output row, for few input channels ------------ */

/* Input channels per group up to which dirv applies: the stems of the bench
 * CNNs have 3. Each tap of a row block is one vector load (two at stride 2)
 * for CONV_TOC multiply-adds. bench_conv_layer against winop4 (3x3 stride 1,
 * POCL): 16->64 at 55x55 dirv 214 us vs 249; 32->128 at 27x27 233 vs 197;
 * 64->64 at 56x56 750 vs 538 (and 13x13 rows, shorter than a vector, lose). */
#define DIRV_CMAX 16
static int dirv_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  int64_t kk = t->dims[CD_KK], icg = kk > 0 ? t->dims[CD_K] / kk : 0;
  if (!wconst(t) || (t->dims[CD_FLAGS] & (CF_DW | CF_3D | CF_XS | CF_INB)) || kk < 2 || icg < 1 || icg > DIRV_CMAX || t->dims[CD_ESZ] == 8) return -1;
  /* a blocked output: lanes stored one by one, the epilogue on the vector of pixels before */
  if ((t->dims[CD_FLAGS] & CF_OUTB) && (t->dims[CD_FLAGS] & CF_EFULL)) return -1;
  /* and only the tile that transposes a whole block of channels x pixels in
   * registers (TOC == VW == the block): the others store a blocked output
   * lane by lane, 1.5-3x slower on the stems of squeezenet1_1 and
   * mobilenet_v2 (bench_conv_layer --blk 2), which the cost model's
   * features do not see (the untuned plans picked 4-pixel tiles) */
  int B = t->dims[CD_FLAGS] & CF_OUTB8 ? 8 : 16;
  if ((t->dims[CD_FLAGS] & CF_OUTB) && (p[CP_TOC] != B || p[CP_DWVW] != B)) return -1;
  /* more channels per work-item than the layer has: zeros multiplied */
  if (p[CP_TOC] != t->params[CP_TOC].dflt && p[CP_TOC] > 2 * t->dims[CD_M] && p[CP_TOC] > 4) return -1;
  return 0;
}

static void dirv_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  conv_sizes s = sizes_of(t, f);
  int toc = p[CP_TOC], vw = p[CP_DWVW];
  int64_t oh = t->dims[CD_OH] > 0 ? t->dims[CD_OH] : 1, ow = s.P / oh, mb = ceil_div(s.M, toc);
  f->flops = 2.0 * s.nb * (double)(mb * toc) * s.K * (double)(oh * round_up(ow, vw)); /* whole vectors and channel blocks */
  f->work_groups = (double)s.nb * (double)oh * (double)mb;
  /* the input rows re-read per channel block (from cache), the weights once per row */
  f->bytes = s.in_bytes / (double)(t->dims[CD_KK] > 0 ? t->dims[CD_KK] : 1) * (double)mb + s.wbytes * (double)oh + s.ybytes;
  f->vec = vw;
}

static int dirv_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  int toc = c->p[CP_TOC];
  cl_mem A = conv_packed(c, pack_panels, toc, err);
  if (!A) return err->status;
  char opts[sizeof c->opts + 256];
  geom_opts(c, opts, sizeof opts);
  int yblk = kiln_out(c->x->g, kiln_epi_result_node(c->x->g, c->n), 0)->blk;
  if (yblk) {
    size_t o = strlen(opts);
    snprintf(opts + o, sizeof opts - o, " -DDIRV_OUTB=%d", yblk);
  }
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, "conv_dirv", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(c->bx), KARG(A), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(c->has_bias), KARG(c->ep[0]), KARG(c->ep[1]), KEND))
    return err->status;
  size_t gws[3] = {(size_t)w->out[1], (size_t)ceil_div(c->ocg, toc), (size_t)(w->n * w->group)};
  return kiln_exec_launch(c->x, k, 3, gws, NULL, err);
}

/* -- dirc: direct with vectors along the output channels ------------------ */

/* Taps per window up to which dirc applies (a row's taps unrolled in the kernel, the rows not) */
#define DIRC_KMAX 49
/* Accumulator vectors per work-item (CONV_TP x CONVDW_R) at most: AVX-512 has 32 registers */
#define DIRC_ACC 16

/* Work-items per work-group along the pixels of one channel panel. */
static int64_t dirc_wg(int64_t npb) { return npb < 32 ? npb : 32; }

/* the default only where the layout leaves no other solver (blocked values) */
static int dirc_prefer(const kiln_tunable *t) { return t->dims[CD_FLAGS] & CF_BLK && !(t->dims[CD_FLAGS] & CF_DW) ? 9 : 0; }

static int dirc_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  int64_t kk = t->dims[CD_KK], icg = kk > 0 ? t->dims[CD_K] / kk : 0;
  if (!wconst(t) || (t->dims[CD_FLAGS] & (CF_DW | CF_3D)) || kk < 1 || kk > DIRC_KMAX || icg < 1 || t->dims[CD_ESZ] == 8) return -1;
  if (p[CP_TP] * p[CP_DWR] > DIRC_ACC) return -1;
  /* on a CPU with 16-wide float vectors, channel vectors of 4 use a quarter
   * of each register: resnet18's 512-channel 3x3s at 7x7 took 2839-2928 us
   * with VW 4 x R 2 (the untuned pick: the built-in prior's correction
   * favours narrow vectors there) against 1182-1219 with VW 16 x R 4, and no
   * tune on this device kept a VW 4 */
  if (!d->is_gpu && d->native_vec_float >= 16 && 2 * p[CP_DWVW] < d->native_vec_float && p[CP_DWVW] != t->params[CP_DWVW].dflt) return -1;
  /* a blocked output's channel vectors lie inside one block (8: VW 4 or 8) */
  if ((t->dims[CD_FLAGS] & CF_OUTB8) && p[CP_DWVW] > 8) return -1;
  /* a panel wider than the layer's channels (twice rounded up) only multiplies zeros */
  if (p[CP_DWR] > 1 && (int64_t)p[CP_DWVW] * p[CP_DWR] > 2 * round_up(t->dims[CD_M], p[CP_DWVW])) return -1;
  if (p[CP_TP] > 4 && p[CP_TP] > 2 * t->dims[CD_P]) return -1;
  return 0;
}

static void dirc_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  conv_sizes s = sizes_of(t, f);
  int tp = p[CP_TP], pw = p[CP_DWVW] * p[CP_DWR];
  int64_t npb = ceil_div(s.P, tp), mb = ceil_div(s.M, pw), wg = dirc_wg(npb), ngr = ceil_div(npb, wg);
  f->flops = 2.0 * s.nb * (double)(mb * pw) * s.K * (double)(npb * tp); /* whole panels and pixel blocks */
  f->work_groups = (double)s.nb * (double)mb * (double)ngr;
  f->wg_size = (double)wg;
  /* the input read once per channel panel, the weights once per work-group (from cache after) */
  double x_bytes = (double)s.nb * (double)t->dims[CD_IN] * s.esz;
  f->bytes = x_bytes * (double)mb + s.wbytes * (double)ngr + s.ybytes;
  f->vec = p[CP_DWVW];
  if (t->dims[CD_FLAGS] & CF_PAD) { /* conv_pad's copy first (the padded plane taken as the input's) */
    f->launches = 2;
    f->bytes += 2 * x_bytes;
    f->footprint += x_bytes;
  }
}

/* The input plane dirc reads, padded (*ihp x *iwp, larger than the input's
 * when a window reaches past it: then conv_pad copies it so). */
static bool dirc_padded(const win_geom *w, int64_t *ihp, int64_t *iwp) {
  int64_t ih = w->in[1], iw = w->in[2];
  int64_t rh = (w->out[1] - 1) * w->s[1] + (w->k[1] - 1) * w->d[1] + 1, rw = (w->out[2] - 1) * w->s[2] + (w->k[2] - 1) * w->d[2] + 1;
  *ihp = ih + w->pb[1] > rh ? ih + w->pb[1] : rh;
  *iwp = iw + w->pb[2] > rw ? iw + w->pb[2] : rw;
  return w->pb[1] || w->pb[2] || rh > ih || rw > iw;
}

static int dirc_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  int tp = c->p[CP_TP], pw = c->p[CP_DWVW] * c->p[CP_DWR];
  cl_mem A = conv_packed(c, pack_panels, pw, err);
  if (!A) return err->status;
  char opts[sizeof c->opts + 320];
  geom_opts(c, opts, sizeof opts);
  cl_mem xs = kiln_in_buf(c->x, c->n, 3); /* the input's scales per (n, c) (CF_XS) */
  if (xs) { size_t o = strlen(opts); snprintf(opts + o, sizeof opts - o, " -DPW_XSCALE=1"); }
  const kiln_value *xv = kiln_in(c->x->g, c->n, 0), *yv = kiln_out(c->x->g, kiln_epi_result_node(c->x->g, c->n), 0);
  int64_t ihp, iwp;
  bool padded = dirc_padded(w, &ihp, &iwp);
  if (w->k[1] * w->k[2] == 1 && w->s[1] * w->s[2] == 1 && !padded) {
    size_t o = strlen(opts); /* 1x1 stride 1 without pads: the kernel's consecutive-pixel path */
    snprintf(opts + o, sizeof opts - o, " -DDIRC_1X1=1");
  }
  if (xv->blk || yv->blk) {
    size_t o = strlen(opts);
    if (xv->blk) o += (size_t)snprintf(opts + o, sizeof opts - o, " -DDIRC_INB=%d", xv->blk);
    if (yv->blk) snprintf(opts + o, sizeof opts - o, " -DDIRC_OUTB=%d", yv->blk);
  }
  cl_mem xin = c->bx;
  if (padded) {
    size_t o = strlen(opts);
    snprintf(opts + o, sizeof opts - o, " -DDIRC_IHP=%lld -DDIRC_IWP=%lld", (long long)ihp, (long long)iwp);
    xin = kiln_exec_scratch(c->x, c->n, 0, (size_t)(w->n * w->c * ihp * iwp) * c->desz, err);
    if (!xin) return err->status;
    cl_kernel kp = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, "conv_pad", err);
    if (!kp || kiln_cl_args(kp, err, KARG(c->bx), KARG(xin), KEND)) return err->status;
    size_t gp[2] = {(size_t)ihp, (size_t)(w->n * w->c / (xv->blk ? xv->blk : 1))}; /* blocked: a block's row per work-item */
    if (kiln_exec_launch(c->x, kp, 2, gp, NULL, err)) return err->status;
  }
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, "conv_dirc", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(xin), KARG(A), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(c->has_bias), KARG(c->ep[0]), KARG(c->ep[1]), KEND))
    return err->status;
  if (xs && set_xscale(k, xs, err)) return err->status;
  int64_t npb = ceil_div(c->osz, tp), wg = dirc_wg(npb);
  size_t gws[3] = {(size_t)round_up(npb, wg), (size_t)ceil_div(c->ocg, pw), (size_t)(w->n * w->group)}, lws[3] = {(size_t)wg, 1, 1};
  return kiln_exec_launch(c->x, k, 3, gws, (size_t)wg <= c->x->d->info.max_work_group ? lws : NULL, err);
}

/* -- dw16: depthwise in NCHW16c (NCHW8c) ---------------------------------- */

/* Only where runtime/layout.c blocked both sides, in the same blocks;
 * dilation 1, windows up to 7x7 (the kernel unrolls the window's row), float. */
static int dw16_applies(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  int64_t fl = t->dims[CD_FLAGS];
  if ((fl & CF_BLK) != CF_BLK || !(fl & CF_DW) || (fl & CF_3D) || !wconst(t) || t->dims[CD_ESZ] != 4) return -1;
  int B = fl & CF_INB8 ? 8 : 16;
  if (!(fl & CF_INB8) != !(fl & CF_OUTB8) || t->dims[CD_KK] > 49 || t->dims[CD_C] % B) return -1;
  int64_t oh = t->dims[CD_OH] > 0 ? t->dims[CD_OH] : 1, ow = t->dims[CD_P] / oh;
  if (p[CP_TP] != t->params[CP_TP].dflt && p[CP_TP] > 4 && p[CP_TP] > 2 * ow) return -1; /* a block much wider than the row */
  return 0;
}

static int dw16_prefer(const kiln_tunable *t) { return (t->dims[CD_FLAGS] & CF_BLK) == CF_BLK && (t->dims[CD_FLAGS] & CF_DW) ? 9 : 0; }

static void dw16_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  dw_features_of(t, 1, 16, f);
  int64_t oh = t->dims[CD_OH] > 0 ? t->dims[CD_OH] : 1, ow = t->dims[CD_P] / oh;
  f->work_groups = (double)ceil_div(ow, p[CP_TP]) * (double)oh * (double)(t->dims[CD_NB] / (t->dims[CD_FLAGS] & CF_INB8 ? 8 : 16));
  f->flops = 2.0 * (double)t->dims[CD_NB] * (double)t->dims[CD_KK] * (double)(oh * round_up(ow, p[CP_TP]));
}

/* The weights [C][1][KH][KW] as [C/tm][KH][KW][tm] (tm: the block, 16 or 8). */
static void *pack_dw16(const conv_ctx *c, int tm, size_t *bytes) {
  int64_t C = c->w->c, KK = c->K;
  size_t esz = c->esz;
  *bytes = (size_t)(C * KK) * esz;
  unsigned char *a = malloc(*bytes ? *bytes : 1);
  if (!a) return NULL;
  const unsigned char *src = kiln_in(c->x->g, c->n, 1)->data;
  for (int64_t ch = 0; ch < C; ch++)
    for (int64_t k = 0; k < KK; k++) memcpy(a + (size_t)(((ch / tm) * KK + k) * tm + ch % tm) * esz, src + (size_t)(ch * KK + k) * esz, esz);
  return a;
}

static int dw16_launch(const conv_ctx *c, kiln_error *err) {
  const win_geom *w = c->w;
  int B = kiln_in(c->x->g, c->n, 0)->blk;
  cl_mem A = conv_packed(c, pack_dw16, B, err);
  if (!A) return err->status;
  char opts[sizeof c->opts + 256];
  geom_opts(c, opts, sizeof opts);
  size_t ol = strlen(opts);
  snprintf(opts + ol, sizeof opts - ol, " -DDW_B=%d", B);
  cl_kernel k = kiln_epi_kernel(c->x, c->n, "conv.cl", opts, "conv_dw16", err);
  if (!k) return err->status;
  if (kiln_cl_args(k, err, KARG(c->bx), KARG(A), KARG(c->bb), KARG(c->by), KARG(c->mb), KARG(c->has_bias), KARG(c->ep[0]), KARG(c->ep[1]), KEND))
    return err->status;
  size_t gws[3] = {(size_t)ceil_div(w->out[2], c->p[CP_TP]), (size_t)w->out[1], (size_t)(w->n * w->c / B)};
  return kiln_exec_launch(c->x, k, 3, gws, NULL, err);
}

static int never(const kiln_tunable *t) { return 0; }

/* The registry; an entry's index is its CONV_ALGO value, so entries are
 * only ever appended (tuning records name them by index). */
const kiln_conv_solver kiln_conv_solvers[] = {
  [CONV_A_DIRECT] = {{"direct", USES(CP_TOC) | USES(CP_TP), CONV_A_DIRECT}, direct_applies, direct_prefer, direct_features, direct_launch},
  [CONV_A_1X1] = {{"1x1", GEMM_USES, CONV_A_1X1}, gemm1x1_applies, gemm1x1_prefer, gemm1x1_features, gemm1x1_launch},
  [CONV_A_IM2COL] = {{"im2col", GEMM_USES, CONV_A_IM2COL}, im2col_applies, im2col_prefer, im2col_features, im2col_launch},
  [CONV_A_DW] = {{"dw", USES(CP_DWTP), CONV_A_DW}, dw_applies, dw_prefer, dw_features, dw_launch},
  [CONV_A_WINO] = {{"wino", GEMM_USES, CONV_A_WINO}, wino_applies, wino_prefer, wino_features, wino_launch},
  [CONV_A_LOCAL] = {{"local", USES(CP_LTS) | USES(CP_LWPT), CONV_A_LOCAL}, local_applies, never, local_features, local_launch},
  [CONV_A_PANEL] = {{"panel", PANEL_USES, CONV_A_PANEL}, panel_applies, never, panel_features, panel_launch},
  [CONV_A_WINOP] = {{"winop", PANEL_USES, CONV_A_WINOP}, wino_applies, never, winop_features, winop_launch},
  [CONV_A_DWV] = {{"dwv", USES(CP_DWVW), CONV_A_DWV}, dwv_applies, never, dwv_features, dwv_launch},
  [CONV_A_WINOP4] = {{"winop4", PANEL_USES, CONV_A_WINOP4}, wino4_applies, never, winop4_features, winop4_launch},
  [CONV_A_DWR] = {{"dwr", USES(CP_DWVW) | USES(CP_DWR), CONV_A_DWR}, dwr_applies, dwr_prefer, dwr_features, dwr_launch},
  [CONV_A_DIRV] = {{"dirv", USES(CP_TOC) | USES(CP_DWVW), CONV_A_DIRV}, dirv_applies, never, dirv_features, dirv_launch},
  [CONV_A_DIRC] = {{"dirc", USES(CP_TP) | USES(CP_DWVW) | USES(CP_DWR), CONV_A_DIRC}, dirc_applies, dirc_prefer, dirc_features, dirc_launch},
  [CONV_A_DW16] = {{"dw16", USES(CP_TP), CONV_A_DW16}, dw16_applies, dw16_prefer, dw16_features, dw16_launch},
};
const int kiln_conv_nsolvers = (int)(sizeof kiln_conv_solvers / sizeof kiln_conv_solvers[0]);
_Static_assert(sizeof kiln_conv_solvers / sizeof kiln_conv_solvers[0] <= 16, "CONV_ALGO holds at most 16 values (kiln_kparam.vals)");

/* ---- the family: instance description, validity, features, run ------------------- */

static int conv_valid(const kiln_tunable *t, const int *p, const kiln_device_info *d) {
  int algo = p[CP_ALGO];
  if (algo < 0 || algo >= kiln_conv_nsolvers) return -1;
  /* a scaled input: conv_pw (1x1 stride 1 under panel) and conv_dirc read the scales */
  if ((t->dims[CD_FLAGS] & CF_XS) && !(algo == CONV_A_DIRC || (algo == CONV_A_PANEL && (t->dims[CD_FLAGS] & CF_1X1)))) return -1;
  /* NCHW16c values: dirc, dw16 and winop4 only, dirv writing them */
  if ((t->dims[CD_FLAGS] & CF_BLK) && algo != CONV_A_DIRC && algo != CONV_A_DW16 && algo != CONV_A_WINOP4 &&
      !(algo == CONV_A_DIRV && (t->dims[CD_FLAGS] & CF_BLK) == CF_OUTB))
    return -1;
  const kiln_conv_solver *s = &kiln_conv_solvers[algo];
  for (int i = 1; i < CP_COUNT; i++)
    if (!(s->base.uses >> i & 1) && p[i] != t->params[i].dflt) return -1; /* pinned */
  return s->applies(t, p, d);
}

static void conv_features(const kiln_tunable *t, const int *p, kiln_features *f) {
  if (p[CP_ALGO] < 0 || p[CP_ALGO] >= kiln_conv_nsolvers) { memset(f, 0, sizeof *f); return; }
  kiln_conv_solvers[p[CP_ALGO]].features(t, p, f);
}

/* The untuned choice: the solver that ranks this instance highest. */
static int conv_default_algo(const kiln_tunable *t) {
  int best = CONV_A_DIRECT, rank = 0;
  for (int i = 0; i < kiln_conv_nsolvers; i++) {
    int r = kiln_conv_solvers[i].prefer(t);
    if (r > rank) { rank = r; best = i; }
  }
  return best;
}

/* the panel solvers run gemm.cl's gemm_panel */
const kiln_family kiln_family_conv = {.name = "conv", .file = "conv.cl,gemm.cl", .oclgrind = "conv", .nparams = CP_COUNT, .params = conv_kparams,
                                       .selector = CP_ALGO, KILN_SOLVERS(kiln_conv_solvers), .epilogue = 1, .valid = conv_valid,
                                       .features = conv_features};

/* The flags (CF_*) of a Conv instance. */
static int conv_flags(const win_geom *w, bool wc) {
  int64_t icg = w->c / w->group, ocg = w->oc / w->group, kk = w->k[0] * w->k[1] * w->k[2];
  bool nopad = !w->pb[0] && !w->pb[1] && !w->pb[2] && !w->pe[0] && !w->pe[1] && !w->pe[2];
  int fl = wc ? CF_WCONST : 0;
  if (icg == 1 && ocg == 1) fl |= CF_DW;
  if (w->nsp == 3) fl |= CF_3D;
  if (kk == 1 && nopad) {
    if (w->s[0] * w->s[1] * w->s[2] == 1) fl |= CF_1X1;
    else if (w->in[0] == 1) fl |= CF_1X1S; /* 1-D/2-D strided: gathered */
  }
  if (w->k[0] == 1 && w->k[1] == 3 && w->k[2] == 3 && w->in[0] == 1 && w->s[1] == 1 && w->s[2] == 1 && w->d[1] == 1 && w->d[2] == 1 && w->group == 1)
    fl |= CF_WINO;
  int64_t ihp, iwp;
  if (dirc_padded(w, &ihp, &iwp)) fl |= CF_PAD;
  return fl;
}

static void conv_shape_key(const win_geom *w, bool bias, bool wc, char *key, size_t len) {
  int snp = snprintf(key, len, "N=%lld,C=%lld,", (long long)w->n, (long long)w->c);
  if (w->nsp == 3) snp += snprintf(key + snp, len - (size_t)snp, "D=%lld,", (long long)w->in[0]);
  snprintf(key + snp, len - (size_t)snp,
           "H=%lld,W=%lld,M=%lld,k=%lldx%lldx%lld,s=%lldx%lldx%lld,p=%lld.%lld.%lld.%lld.%lld.%lld,d=%lldx%lldx%lld,g=%lld,bias=%d,wc=%d",
           (long long)w->in[1], (long long)w->in[2], (long long)w->oc, (long long)w->k[0], (long long)w->k[1], (long long)w->k[2],
           (long long)w->s[0], (long long)w->s[1], (long long)w->s[2], (long long)w->pb[0], (long long)w->pb[1], (long long)w->pb[2],
           (long long)w->pe[0], (long long)w->pe[1], (long long)w->pe[2], (long long)w->d[0], (long long)w->d[1], (long long)w->d[2],
           (long long)w->group, bias, wc);
}

/* Describes a Conv node's tunable kernel: the instance key and the space
 * of the registry's solvers, with the default solver for the shape. */
int kiln__conv_tunable_of(kiln_graph *g, kiln_node *n, const win_geom *w, kiln_tunable *t) {
  kiln_value *xv = kiln_in(g, n, 0), *wv = kiln_in(g, n, 1);
  kiln_family_begin(&kiln_family_conv, kiln_dev_dtype(xv), t); /* fp16 storage: instances of their own */
  bool wc = wv->is_const && wv->data;
  const kiln_value *yv = kiln_out(g, kiln_epi_result_node(g, n), 0);
  int fl = conv_flags(w, wc) | (kiln_has_in(n, 3) ? CF_XS : 0) | (xv->blk ? CF_INB : 0) | (xv->blk == 8 ? CF_INB8 : 0) | (yv && yv->blk ? CF_OUTB : 0) |
           (yv && yv->blk == 8 ? CF_OUTB8 : 0) |
           (n->epi && !n->epi->nofull ? CF_EFULL : 0);
  t->dims[CD_FLAGS] = fl;
  t->dims[CD_M] = w->oc / w->group;
  t->dims[CD_K] = w->c / w->group * w->k[0] * w->k[1] * w->k[2];
  t->dims[CD_P] = w->out[0] * w->out[1] * w->out[2];
  t->dims[CD_NB] = w->n * w->group;
  t->dims[CD_C] = w->c;
  t->dims[CD_WT] = conv_wino_tiles(w);
  t->dims[CD_ESZ] = xv->half ? 2 : xv->dtype == KILN_DT_DOUBLE ? 8 : 4;
  t->dims[CD_OH] = w->out[0] * w->out[1];
  t->dims[CD_IN] = w->c / w->group * w->in[0] * w->in[1] * w->in[2];
  t->dims[CD_KK] = w->k[0] * w->k[1] * w->k[2];
  t->params[CP_ALGO].nvals = kiln_conv_nsolvers;
  for (int i = 0; i < kiln_conv_nsolvers; i++) t->params[CP_ALGO].vals[i] = i;
  int algo = conv_default_algo(t);
  /* the plan fused the im2col copy away (fusion.c: kiln__conv_im2col_costs) */
  if (algo == CONV_A_IM2COL && n->im2col_fused && (fl & (CF_1X1 | CF_1X1S))) algo = CONV_A_1X1;
  if ((fl & CF_XS) && !(fl & CF_BLK)) algo = CONV_A_PANEL;
  t->params[CP_ALGO].dflt = algo;
  conv_shape_key(w, kiln_has_in(n, 2), wc, t->shape_key, sizeof t->shape_key);
  if (fl & CF_XS) { size_t kl = strlen(t->shape_key); snprintf(t->shape_key + kl, sizeof t->shape_key - kl, ",xs=1"); }
  if (fl & CF_BLK) { /* blocked values: instances of their own (l=16i16o: input and output in blocks of 16) */
    size_t kl = strlen(t->shape_key);
    snprintf(t->shape_key + kl, sizeof t->shape_key - kl, ",l=%s%s%s%s", fl & CF_INB ? (fl & CF_INB8 ? "8" : "16") : "", fl & CF_INB ? "i" : "",
             fl & CF_OUTB ? (fl & CF_OUTB8 ? "8" : "16") : "", fl & CF_OUTB ? "o" : "");
  }
  if (n->epi) snprintf(t->epilogue, sizeof t->epilogue, "%s", n->epi->sig);
  kiln_family_end(&kiln_family_conv, t);
  return 0;
}

int kiln__conv_blk_roles(kiln_graph *g, kiln_node *n) {
  if (strcmp(n->op_type, "Conv") || n->folded) return 0;
  kiln_value *xv = kiln_in(g, n, 0), *wv = kiln_in(g, n, 1);
  if (!xv || !wv || xv->dtype != KILN_DT_FLOAT || xv->half || !wv->is_const || !wv->data) return 0;
  win_geom w;
  kiln_error e = {0};
  if (kiln__win_setup(g, n, WIN_CONV, &w, &e) || w.nsp != 2) return 0;
  int fl = conv_flags(&w, true), kk = (int)(w.k[1] * w.k[2]);
  if (fl & CF_DW)
    /* dw16: dilation 1, windows up to 7x7, whole blocks of 8 or 16 channels,
     * no input scales (passes.c fuses those into 1x1 convolutions) */
    return w.c % 8 == 0 && w.d[1] == 1 && w.d[2] == 1 && w.k[1] <= 7 && w.k[2] <= 7 && !kiln_has_in(n, 3) ? KILN_BLK_DW : 0;
  /* dirc (dirv too when it writes): one group, whole blocks of 8 or 16
   * channels; a padded input through conv_pad's copy in blocks */
  if (w.group != 1 || kk > DIRC_KMAX) return 0;
  return (w.oc % 8 == 0 ? KILN_BLK_WRITE : 0) | (w.c % 8 == 0 ? KILN_BLK_READ : 0);
}

bool kiln__conv_nchw_wino(kiln_exec *x, kiln_node *n) {
  kiln_tunable t;
  if (strcmp(n->op_type, "Conv") || n->folded || !n->op->tunable || n->op->tunable(x->g, n, &t)) return false;
  /* Winograd against blocked dirc (bench_conv_layer, alternated): faster on
   * 3x3s of 256 input channels and more with planes of 16x16 and more
   * (256x32x32 1731 vs 2330 us, 512x16x16 2155 vs 2537), by 8% at 256x14x14
   * (461 vs 500), not below 256 channels (64x56x56 ~500 vs 494-507 alone,
   * 636-701 in resnet18; 128x64x64 2785 vs 2511). By the instance's shape,
   * not its record or prediction: those change once a database exists, and
   * the plan that was tuned must stay the plan that runs with the records
   * (a db-fitted prediction of Winograd for resnet18's 256-channel layers
   * turned its tuned plan to NCHW, whose instances had no records: 14 ms
   * against 9.4 untuned) */
  int64_t kk = t.dims[CD_KK], icg = kk > 0 ? t.dims[CD_K] / kk : 0;
  return wconst(&t) && (t.dims[CD_FLAGS] & CF_WINO) && icg >= 256 && t.dims[CD_P] >= 256;
}

int kiln__conv_im2col_costs(kiln_graph *g, kiln_node *n, double bw_gbps, double launch_ns, double *copy_ns, double *direct_ns, char *why, size_t len) {
  if (strcmp(n->op_type, "Conv") || n->folded) return 1;
  kiln_value *xv = kiln_in(g, n, 0);
  if (!xv || xv->dtype != KILN_DT_FLOAT) return 1;
  win_geom w;
  kiln_error e = {0};
  if (kiln__win_setup(g, n, WIN_CONV, &w, &e)) return 1;
  kiln_tunable t;
  bool was = n->im2col_fused;
  n->im2col_fused = false;
  int rc = kiln__conv_tunable_of(g, n, &w, &t);
  n->im2col_fused = was;
  if (rc || t.params[CP_ALGO].dflt != CONV_A_IM2COL || !(t.dims[CD_FLAGS] & (CF_1X1 | CF_1X1S))) return 1;
  int64_t M = t.dims[CD_M], K = t.dims[CD_K], P = t.dims[CD_P], nb = t.dims[CD_NB];
  int tm = t.params[CP_GTM].dflt, tn = t.params[CP_GTN].dflt;
  double esz = 4, blocks = (double)ceil_div(M, tm), line = 64;
  bool strided = !(t.dims[CD_FLAGS] & CF_1X1);
  int64_t gathered = strided ? P : P % tn; /* columns read through the gather */
  double sw = strided ? (double)w.s[2] : 1;
  /* rows of B that start off 16-byte boundaries split the GEMM's vector
   * loads: measured on POCL (AVX2) for mobilenet_v2's unaligned 1x1 convs,
   * the GEMM on the input ran 0.6-1.1x the time of copy + GEMM at 14x14
   * (rows 16-byte aligned) and 1.3-2.7x at 7x7 (rows 4-byte aligned);
   * the factor stands for that until `kiln tune` measures the pair */
  double rowpen = (int64_t)(P * esz) % 64 == 0 ? 1.0 : (int64_t)(P * esz) % 16 == 0 ? 1.1 : 2.5;
  double b_direct = (double)nb * K * (double)(P - gathered) * esz * blocks * rowpen, b_copy = (double)nb * K * (double)conv_ldb(P) * esz * blocks;
  /* a gathered element costs its cache line unless its neighbours in the
   * row are used too (stride sw: one in sw elements of a line) */
  double gcost = strided ? (sw * esz < line ? sw * esz : line) : 2 * esz;
  b_direct += (double)nb * K * (double)gathered * gcost * blocks;
  double copy = 2.0 * nb * K * (double)conv_ldb(P) * esz;
  *copy_ns = launch_ns + (copy + b_copy) / bw_gbps;
  *direct_ns = b_direct / bw_gbps;
  snprintf(why, len, "%s 1x1 conv M=%lld K=%lld P=%lld: %lld gathered columns", strided ? "strided" : "unaligned", (long long)M, (long long)K,
           (long long)P, (long long)gathered);
  return 0;
}

/* Runs Conv node n (geometry w) with the solver its parameters name. */
int kiln__conv_run(kiln_exec *x, kiln_node *n, const win_geom *w, kiln_error *err) {
  kiln_graph *g = x->g;
  conv_ctx c = {.x = x, .n = n, .w = w};
  int rc = kiln__win_meta(w, c.m, 24, err);
  if (rc) return rc;
  if (!(c.mb = kiln_exec_param(x, n, 0, c.m, sizeof c.m, err))) return err->status;
  c.dt = kiln_dev_dtype(kiln_in(g, n, 0));
  c.esz = c.dt == KILN_DT_DOUBLE ? 8 : 4;
  c.desz = c.dt == KILN_DT_FLOAT16 ? 2 : c.esz;
  kiln_cl_type_opts(c.dt, c.opts, sizeof c.opts);
  c.bx = kiln_in_buf(x, n, 0);
  c.bw = kiln_in_buf(x, n, 1);
  c.bb = kiln_in_buf(x, n, 2);
  c.by = kiln_epi_out(x, n);
  kiln_epi_bufs(x, n, c.by, c.ep);
  c.has_bias = c.bb != NULL;
  if (!c.bb) c.bb = c.bw;
  kiln_tunable t;
  kiln__conv_tunable_of(g, n, w, &t);
  c.p = kiln_exec_tparams(x, n, &t);
  if (conv_valid(&t, c.p, &x->d->info)) {
    char ps[256];
    kiln_tunable_str(&t, c.p, ps, sizeof ps);
    return kiln__err(err, KILN_EINTERNAL, "Conv parameters %s do not fit %s", ps, t.shape_key);
  }
  kiln_tunable_opts(&t, c.p, c.opts, sizeof c.opts);
  c.icg = w->c / w->group;
  c.ocg = w->oc / w->group;
  c.K = c.icg * w->k[0] * w->k[1] * w->k[2];
  c.osz = w->out[0] * w->out[1] * w->out[2];
  if (w->n == 0 || c.osz == 0 || w->oc == 0) return 0;
  return kiln_conv_solvers[c.p[CP_ALGO]].launch(&c, err);
}
