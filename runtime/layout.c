/* layout.c: blocked channel layouts. A depthwise convolution vectorised
 * along its output row (conv.cl's dwr) spends its time on the row's edges
 * and, at stride 2, on the shuffles that take every second input; in
 * NCHW16c (x [N][C/16][H][W][16]) each input pixel is one vector of 16
 * channels with no lanes along the row at all (conv.cl's conv_dw16, 2-3.4x
 * faster on mobilenet_v2's and efficientnet_b0's stride-2 layers). A
 * regular convolution (dirc) reading NCHW16c finds the 16 input channels
 * of a pixel in one cache line where NCHW puts them a plane apart: 7-15%
 * faster on resnet's and squeezenet's 3x3s (resnet50 24.5 -> 20.8 ms).
 *
 * Layout changes as copies would cost what that gains, so none is added: a
 * value is stored blocked (kiln_value.blk = B, the CPU device's float
 * vector width: NCHW16c or NCHW8c) only when the kernel that writes it and
 * every reader work in that layout themselves. Writers: convolutions (dirc
 * stores its channel vectors as they are, dirv transposes, dw16), 2-D max
 * pools (pool_blk) and channel Concats (their copies move whole blocks).
 * Readers: convolutions (dirc, with the input's pixel stride B, a padded
 * one through conv_pad's copy in blocks; dw16; winop4, a writer too),
 * GlobalAveragePool
 * (gpool_b16, B = 16), max pools, Concats, and fused epilogue operands of
 * the output's size, which the head reads at the output's index: they take
 * the output's layout (a residual Add's input). These ties, dw16's input
 * and output, a max pool's and a Concat's values in the same layout, are
 * solved as a fixpoint; the values left are joined into regions through
 * the nodes between them, and a region is kept as described below (regions
 * whose convolutions Winograd serves better stay NCHW). Model inputs and
 * outputs, constants, values in fp16 storage and 1x1 planes stay NCHW.
 *
 * Blocked instances have keys of their own (l=16i16o, ...), so the tuner
 * measures them separately; host transfers (kiln__value_read/_upload)
 * convert to and from NCHW, so the tuner's checks, `--check` and the tests
 * compare in the model's layout. KILN_BLOCKED=off plans every value NCHW. */
#include "kiln_internal.h"
#include "ops/window.h"

/* The node whose kernel writes value v: its producer, or the head of the
 * epilogue group it ends; NULL when an element-wise group computes it or
 * it is not written at all (inside a fused group). */
static kiln_node *writer_of(kiln_graph *g, int v) {
  int p = g->vals[v].producer;
  if (p < 0) return NULL;
  kiln_node *P = &g->nodes[p];
  if (P->fgroup) return P->fgroup->head >= 0 && P->out[0] == v ? &g->nodes[P->fgroup->head] : NULL;
  return P->fuse_root < 0 ? P : NULL;
}

static bool same_dims(const kiln_value *a, const kiln_value *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* A value that may be stored in blocks of B channels: an intermediate 4-D
 * float32 plane stack with whole blocks (a 1x1 plane is the same in both). */
static bool blockable(const kiln_value *v, int B) {
  return !v->is_input && !v->is_output && !v->is_const && !v->data && v->dtype == KILN_DT_FLOAT && !v->half && v->rank == 4 && v->dims[1] % B == 0 &&
         v->dims[2] * v->dims[3] > 1;
}

/* The epilogue group node r belongs to as a member after its head, or NULL. */
static kiln_fgroup *epi_member_of(kiln_graph *g, const kiln_node *r) {
  if (r->fuse_root < 0) return NULL;
  kiln_fgroup *G = g->nodes[r->fuse_root].fgroup;
  return G && G->head >= 0 && &g->nodes[G->head] != r ? G : NULL;
}

/* A Concat along the channels of 4-D values of whole blocks: its copy (or
 * the producers' writes into its output, session.c's in-place Concat) moves
 * each input's per-image range as it is, which holds the input's blocks
 * whole at a block boundary of the output: the same in either layout. */
static bool concat_blk_ok(kiln_graph *g, kiln_node *n, int B) {
  if (n->folded || !n->op || strcmp(n->op_type, "Concat") || n->nout < 1 || n->out[0] < 0) return false;
  const kiln_value *y = &g->vals[n->out[0]];
  if (y->rank != 4 || kiln_axis(kiln_attr_int(n, "axis", 0), 4) != 1) return false;
  for (int k = 0; k < n->nin; k++)
    if (n->in[k] < 0 || g->vals[n->in[k]].rank != 4 || g->vals[n->in[k]].dims[1] % B) return false;
  return true;
}

/* Whether node W can write its output 0 in blocks of B channels itself. */
static bool writes_blocked(kiln_graph *g, kiln_node *W, int B) {
  if (!W || W->folded || !W->op) return false;
  if (!strcmp(W->op_type, "Conv")) return (kiln__conv_blk_roles(g, W) & (KILN_BLK_DW | KILN_BLK_WRITE)) != 0;
  if (!strcmp(W->op_type, "MaxPool")) return kiln__pool_blk_ok(g, W) != 0;
  return concat_blk_ok(g, W, B);
}

/* Whether node r can read value v (its input slot k) in blocks of B channels. */
static bool reads_blocked(kiln_graph *g, kiln_node *r, int k, int v, int B) {
  if (r->folded || !r->op) return false;
  if (!strcmp(r->op_type, "Conv")) return k == 0 && (kiln__conv_blk_roles(g, r) & (KILN_BLK_DW | KILN_BLK_READ));
  if (!strcmp(r->op_type, "GlobalAveragePool")) return k == 0 && B == 16;
  if (!strcmp(r->op_type, "MaxPool")) return k == 0 && kiln__pool_blk_ok(g, r);
  if (!strcmp(r->op_type, "Concat")) return concat_blk_ok(g, r, B);
  /* an operand of a fused epilogue of the output's size: read at the
   * output's index, so in the output's layout (tied below) */
  kiln_fgroup *G = epi_member_of(g, r);
  if (!G) return false;
  const kiln_value *out = &g->vals[g->nodes[G->nodes[G->nnodes - 1]].out[0]];
  for (int e = 0; e < G->next; e++)
    if (G->ext[e] == v) return same_dims(&g->vals[v], out);
  return false;
}

/* Sets both marks to false unless they agree; true when it changed one. */
static bool tie(bool *cand, int a, int b) {
  if (a < 0 || b < 0 || cand[a] == cand[b]) return false;
  cand[a] = cand[b] = false;
  return true;
}

static int find(int *root, int v) {
  while (root[v] != v) v = root[v] = root[root[v]];
  return v;
}

static void join(int *root, int a, int b) { root[find(root, a)] = find(root, b); }

/* The nodes whose input and output layouts are tied (MaxPool: one value
 * in, one out; Concat: all of them), as (value, value) pairs through cb. */
static bool tie_through(kiln_graph *g, kiln_node *n, int B, bool (*cb)(void *, int, int), void *ctx) {
  bool changed = false;
  if (n->folded || !n->op || n->nout < 1 || n->out[0] < 0) return false;
  if (!strcmp(n->op_type, "MaxPool") && kiln__pool_blk_ok(g, n)) changed |= cb(ctx, n->in[0], n->out[0]);
  else if (concat_blk_ok(g, n, B))
    for (int k = 0; k < n->nin; k++) changed |= cb(ctx, n->in[k], n->out[0]);
  return changed;
}

static bool tie_cb(void *ctx, int a, int b) { return tie(ctx, a, b); }
static bool join_cb(void *ctx, int a, int b) {
  struct { int *root; bool *cand; } *j = ctx;
  if (a >= 0 && b >= 0 && j->cand[a] && j->cand[b]) join(j->root, a, b);
  return false;
}

int kiln__layout_plan(kiln_graph *g, int B, const kiln_layout_ctx *lc, int *nblocked) {
  bool enable = B == 16 || B == 8;
  int nb = 0;
  for (int i = 0; i < g->nvals; i++) g->vals[i].blk = 0;
  bool *cand = enable ? calloc((size_t)g->nvals + 1, sizeof *cand) : NULL;
  if (enable && !cand) return KILN_ENOMEM;
  /* the candidates: written by a kernel that can write the layout, read
   * only by ones that can read it */
  for (int v = 0; cand && v < g->nvals; v++) {
    if (!blockable(&g->vals[v], B)) continue;
    if (!writes_blocked(g, writer_of(g, v), B)) continue;
    bool ok = true;
    for (int i = 0; ok && i < g->nnodes; i++)
      for (int k = 0; ok && k < g->nodes[i].nin; k++)
        if (g->nodes[i].in[k] == v) ok = reads_blocked(g, &g->nodes[i], k, v, B);
    cand[v] = ok;
  }
  /* the ties: a depthwise convolution (dw16) takes its input and output in
   * the same layout; an epilogue's operands of the output's size are read
   * in the output's layout */
  for (bool changed = cand != NULL; changed;) {
    changed = false;
    for (int i = 0; i < g->nnodes; i++) {
      kiln_node *n = &g->nodes[i];
      changed |= tie_through(g, n, B, tie_cb, cand);
      if (n->folded || !n->op || strcmp(n->op_type, "Conv") || (n->fuse_root >= 0 && !n->epi)) continue;
      int out = kiln_epi_result_node(g, n)->out[0];
      if (kiln__conv_blk_roles(g, n) & KILN_BLK_DW) changed |= tie(cand, n->in[0], out);
      if (n->epi)
        for (int e = 0; e < n->epi->next; e++)
          if (same_dims(&g->vals[n->epi->ext[e]], &g->vals[out])) changed |= tie(cand, n->epi->ext[e], out);
    }
  }
  /* regions: the candidates joined by the nodes between them (convolutions
   * and their epilogues' ties, max pools, concats). A region holding a
   * depthwise convolution is kept (dw16 against dwr: 2-3.4x). One without is
   * kept when no convolution that reads or writes it is one Winograd serves
   * better in NCHW (lc->wino: a 3x3 of 256 channels or more on a plane of
   * 16x16 or more, by shape: kiln__conv_nchw_wino): against the NCHW solvers blocked
   * dirc measured (bench_conv_layer --blk, alternated) 7-15% faster on 3x3s
   * (64x56x56: 494-507 vs 565-576 us), as fast or faster than the panel GEMM
   * on 1x1s (resnet50's 1024->256 at 14x14: 271 vs 302), where Winograd
   * F(4,3) stays faster on 3x3s of 256 channels and more (kernels/conv.c,
   * kiln__conv_nchw_wino). Without lc only the first kind. */
  int *root = cand ? malloc(sizeof *root * ((size_t)g->nvals + 1)) : NULL;
  bool *has_dw = cand ? calloc((size_t)g->nvals + 1, sizeof *has_dw) : NULL, *wino = cand ? calloc((size_t)g->nvals + 1, sizeof *wino) : NULL;
  if (cand && (!root || !has_dw || !wino)) { free(cand); free(root); free(has_dw); free(wino); return KILN_ENOMEM; }
  for (int v = 0; root && v < g->nvals; v++) root[v] = v;
  struct { int *root; bool *cand; } jc = {root, cand};
  for (int i = 0; root && i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    tie_through(g, n, B, join_cb, &jc);
    if (n->folded || !n->op || strcmp(n->op_type, "Conv") || (n->fuse_root >= 0 && !n->epi) || n->in[0] < 0) continue;
    int out = kiln_epi_result_node(g, n)->out[0];
    if (out < 0 || !cand[out]) continue;
    if (cand[n->in[0]]) join(root, n->in[0], out);
    for (int e = 0; n->epi && e < n->epi->next; e++)
      if (cand[n->epi->ext[e]]) join(root, n->epi->ext[e], out);
  }
  for (int i = 0; root && i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded || !n->op || strcmp(n->op_type, "Conv") || (n->fuse_root >= 0 && !n->epi) || n->in[0] < 0) continue;
    int out = kiln_epi_result_node(g, n)->out[0];
    bool rin = cand[n->in[0]], rout = out >= 0 && cand[out];
    if (!rin && !rout) continue;
    if (rin && (kiln__conv_blk_roles(g, n) & KILN_BLK_DW)) has_dw[find(root, n->in[0])] = true;
    if (lc && lc->wino && !(kiln__conv_blk_roles(g, n) & KILN_BLK_DW) && lc->wino(lc->ctx, n)) {
      if (rin) wino[find(root, n->in[0])] = true;
      if (rout) wino[find(root, out)] = true;
    }
  }
  for (int v = 0; cand && v < g->nvals; v++) {
    int r = cand[v] ? find(root, v) : -1;
    if (r >= 0 && (has_dw[r] || (lc && lc->wino && !wino[r]))) { g->vals[v].blk = B; nb++; }
  }
  free(cand);
  free(root);
  free(has_dw);
  free(wino);
  if (nblocked) *nblocked = nb;
  return 0;
}
