/* stream.c: weights that do not fit the device memory budget stream.
 *
 * With kiln_session_set_max_memory, a plan whose buffers, weights and
 * per-node blocks (packed weights, scratch) would exceed the budget keeps
 * the activations resident and uploads the weights of some kernels from host
 * memory before each run of those kernels, releasing them after: the device
 * holds the resident part plus one kernel's streamed weights at a time.
 *
 * Which kernels stream is decided after the activations are placed
 * (session.c's allocate_buffers leaves every candidate weight without a
 * buffer): a weight of at least KILN_STREAM_MIN bytes that only one kernel
 * reads is a candidate; kernels stay resident smallest first while the
 * resident bytes plus the largest streamed kernel's bytes fit. A kernel's
 * bytes are its weights plus what it derives from them per plan (weights
 * packed into the layout the kernel reads: up to 4x for Winograd F(4x4),
 * estimated by op before the first run, measured after it).
 *
 * After a streamed kernel is enqueued, its weights, its per-node blocks
 * (kiln_exec_param: packed weights; kiln_exec_scratch) and its op state are
 * released (the queue keeps the buffers until the kernel is done), so every
 * run of it is like its plan's first: what it derives from its weights (a
 * packing on the host, a setup launch) is derived again from the weights
 * uploaded for that run. A kernel that reads its weights only as packed on
 * the host (node.packed_w1) gets no upload of the raw ones. Uploads go on
 * the session's in-order queue right before the kernel, so the outputs are
 * the unconstrained plan's to the bit. */
#include "kiln_internal.h"
#include <stdlib.h>
#include <string.h>

#define KILN_STREAM_MIN ((size_t)64 << 10)

/* The node whose launch computes node i (its fused group's root, or itself). */
static int executor(const kiln_graph *g, int i) {
  const kiln_node *n = &g->nodes[i];
  return n->fuse_root >= 0 && !n->fgroup ? n->fuse_root : i;
}

/* Marks the weights that may stream (before buffers are placed): at least
 * KILN_STREAM_MIN bytes and read by the nodes of one kernel only. */
void kiln__stream_mark(kiln_graph *g, uint64_t max_memory) {
  for (int v = 0; v < g->nvals; v++) g->vals[v].streamed = g->vals[v].stream_ok = false;
  for (int i = 0; i < g->nnodes; i++) { g->nodes[i].streamed = false; }
  if (!max_memory) return;
  int *ex = malloc(sizeof(int) * (size_t)(g->nvals + 1));
  if (!ex) return; /* nothing streams: the plan then says it does not fit */
  for (int v = 0; v < g->nvals; v++) ex[v] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    const kiln_node *n = &g->nodes[i];
    if (n->folded) continue;
    int e = executor(g, i);
    for (int k = 0; k < n->nin; k++) {
      int v = n->in[k];
      if (v < 0) continue;
      ex[v] = ex[v] == -1 || ex[v] == e ? e : -2; /* -2: read by several kernels */
    }
  }
  for (int v = 0; v < g->nvals; v++) {
    kiln_value *val = &g->vals[v];
    if (!val->is_const || val->is_output || ex[v] < 0 || val->dtype == KILN_DT_STRING || val->dtype == KILN_DT_SEQUENCE) continue;
    if (kiln_value_dev_bytes(val) >= KILN_STREAM_MIN) val->streamed = val->stream_ok = true;
  }
  free(ex);
}

/* Whether a Conv may run Winograd F(4x4,3x3), whose transformed weights are
 * 4x the model's: a 2-D 3x3 kernel, strides and dilations 1, one group (the
 * conv family's CF_WINO, kernels/conv.c, read off the node here: the plan
 * streams before any kernel is chosen). Its
 * other algorithms pack the weights once (panels rounded up to whole tiles). */
static bool conv_packs_4x(const kiln_graph *g, const kiln_node *n) {
  const kiln_value *w = n->nin > 1 && n->in[1] >= 0 ? &g->vals[n->in[1]] : NULL;
  if (!w || w->rank != 4 || w->dims[2] != 3 || w->dims[3] != 3) return false;
  const kiln_attr *a;
  if ((a = kiln_attr_find(n, "group")) && a->i != 1) return false;
  if ((a = kiln_attr_find(n, "strides"))) for (int k = 0; k < a->n; k++) if (a->ints[k] != 1) return false;
  if ((a = kiln_attr_find(n, "dilations"))) for (int k = 0; k < a->n; k++) if (a->ints[k] != 1) return false;
  return true;
}

/* Bytes of the streamed weights kernel e's nodes read; *conv: 1 a Conv, 2
 * one that may pack them 4x (conv_packs_4x). */
static uint64_t weight_bytes(const kiln_graph *g, int e, int *conv, bool *gemm) {
  uint64_t b = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const kiln_node *n = &g->nodes[i];
    if (n->folded || executor(g, i) != e) continue;
    bool any = false;
    for (int k = 0; k < n->nin; k++)
      if (n->in[k] >= 0 && g->vals[n->in[k]].streamed) { b += kiln_value_dev_bytes(&g->vals[n->in[k]]); any = true; }
    if (any && !strcmp(n->op_type, "Conv") && !*conv) *conv = conv_packs_4x(g, n) ? 2 : 1;
    if (any && (!strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm"))) *gemm = true;
  }
  return b;
}

/* Kernel e's bytes while it runs: its weights and what it derives from them
 * (the op's worst case: Winograd F(4x4) packs 4x the weights, the other conv
 * algorithms and the GEMMs a copy, rounded up to whole tiles: 5/4). */
static uint64_t kernel_bytes(uint64_t w, int conv, bool gemm) { return w + (conv == 2 ? 4 * w : conv || gemm ? w + w / 4 : 0); }

/* Uploads kernel e's streamed weights (dry: only counts them) into *bytes. */
static int upload_weights(kiln_session *s, int e, bool dry, uint64_t *bytes, kiln_error *err) {
  kiln_graph *g = s->m->g;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded || executor(g, i) != e) continue;
    for (int k = 0; k < n->nin; k++) {
      int v = n->in[k];
      if (v < 0 || !g->vals[v].streamed || g->vals[v].buf) continue;
      if (k == 1 && n->packed_w1) continue; /* its kernel packs these on the host: the raw ones are not read */
      kiln_value *val = &g->vals[v];
      size_t b = kiln_value_dev_bytes(val);
      *bytes += b;
      if (dry) continue;
      if (!(val->buf = kiln_cl_alloc(s->d, b, err))) return err ? err->status : KILN_ECL;
      int rc = kiln__value_upload(s->d, val, err);
      if (rc) return rc;
    }
  }
  return 0;
}

/* Before kernel e runs: its streamed weights uploaded (other kernels made to
 * stream first when they would not fit beside them). */
int kiln__stream_before(kiln_session *s, int e, kiln_error *err) {
  if (!s->m->g->nodes[e].streamed) return 0;
  uint64_t need = 0, b = 0;
  upload_weights(s, e, true, &need, NULL);
  kiln__stream_make_room(s, e, need);
  int rc = upload_weights(s, e, false, &b, err);
  s->stream_run_bytes += b;
  s->stream_live = b;
  return rc;
}

/* After kernel e was enqueued: its streamed buffers released (the queue
 * keeps them until the kernel is done); the window it needed recorded. */
void kiln__stream_after(kiln_session *s, int e) {
  kiln_graph *g = s->m->g;
  if (!g->nodes[e].streamed) return;
  uint64_t window = 0;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded || executor(g, i) != e) continue;
    for (int k = 0; k < n->nin; k++) {
      int v = n->in[k];
      if (v < 0 || !g->vals[v].streamed || !g->vals[v].buf) continue;
      window += kiln_value_dev_bytes(&g->vals[v]);
      clReleaseMemObject(g->vals[v].buf);
      g->vals[v].buf = NULL;
    }
    for (int k = 0; k < 4; k++) {
      if (n->param[k]) { /* uploaded by this run (packed on the host from the weights) */
        window += n->param_bytes[k];
        s->stream_run_bytes += n->param_bytes[k];
        clReleaseMemObject(n->param[k]);
      }
      if (n->scratch[k]) { window += n->scratch_bytes[k]; clReleaseMemObject(n->scratch[k]); }
      n->param[k] = n->scratch[k] = NULL;
      n->param_bytes[k] = n->scratch_bytes[k] = 0;
    }
    if (n->state && n->op && n->op->release) n->op->release(n);
    free(n->state);
    n->state = NULL;
  }
  if (window > s->stream_window) s->stream_window = window;
  s->stream_live = 0;
}

/* Resident bytes of per-node blocks (parameters and scratch) not streamed. */
uint64_t kiln__stream_node_bytes(const kiln_graph *g) {
  uint64_t b = 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < 4; k++) b += g->nodes[i].param_bytes[k] + g->nodes[i].scratch_bytes[k];
  return b;
}

typedef struct { int e; uint64_t w, bytes; } stream_cand;
static int cmp_cand(const void *a, const void *b) {
  const stream_cand *x = a, *y = b;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

static int make_resident(kiln_session *s, const stream_cand *c, kiln_error *err) {
  kiln_graph *g = s->m->g;
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    if (n->folded || executor(g, i) != c->e) continue;
    for (int k = 0; k < n->nin; k++) {
      int v = n->in[k];
      if (v < 0 || !g->vals[v].streamed) continue;
      kiln_value *val = &g->vals[v];
      val->streamed = false;
      size_t b = kiln_value_dev_bytes(val);
      if (!(val->buf = kiln_cl_alloc(s->d, b, err))) return err ? err->status : KILN_ECL;
      int rc = kiln__value_upload(s->d, val, err);
      if (rc) return rc;
      s->st.device_bytes += b;
    }
  }
  return 0;
}

/* After allocate_buffers placed everything but the streamable weights:
 * decides which kernels stream (none when everything fits), uploads the
 * others' weights, and sets the plan's predicted peak. KILN_ELIMIT when even
 * streaming every candidate does not fit. */
int kiln__stream_plan(kiln_session *s, kiln_error *err) {
  kiln_graph *g = s->m->g;
  s->stream_window = 0;
  s->stream_run_bytes = 0;
  s->stream_peak_plan = s->st.device_bytes;
  if (!s->max_memory) return 0;
  stream_cand *c = malloc(sizeof *c * (size_t)(g->nnodes + 1));
  if (!c) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int nc = 0;
  uint64_t all = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].folded || executor(g, i) != i) continue;
    int conv = 0;
    bool gemm = false;
    uint64_t w = weight_bytes(g, i, &conv, &gemm);
    if (!w) continue;
    c[nc] = (stream_cand){i, w, kernel_bytes(w, conv, gemm)};
    all += c[nc++].bytes;
  }
  qsort(c, (size_t)nc, sizeof *c, cmp_cand);
  uint64_t base = s->st.device_bytes + kiln__stream_node_bytes(g), resident = 0;
  int r = 0; /* c[0..r) resident, c[r..nc) streamed (the largest last) */
  if (base + all <= s->max_memory) r = nc;
  else
    while (r < nc - 1 && base + resident + c[r].bytes + c[nc - 1].bytes <= s->max_memory) resident += c[r++].bytes;
  uint64_t window = r < nc ? c[nc - 1].bytes : 0;
  int rc = 0;
  if (base + resident + window > s->max_memory)
    rc = kiln__err(err, KILN_ELIMIT,
                   "the plan needs %llu bytes of device memory (%.1f MiB) even with its weights streamed one kernel at a time "
                   "(%.1f MiB of activations and other buffers, %.1f MiB for the largest kernel's weights), more than the limit %llu",
                   (unsigned long long)(base + window), (base + window) / 1048576.0, base / 1048576.0, window / 1048576.0,
                   (unsigned long long)s->max_memory);
  for (int k = 0; k < r && !rc; k++) rc = make_resident(s, &c[k], err);
  for (int k = r; k < nc && !rc; k++) {
    for (int i = 0; i < g->nnodes; i++)
      if (!g->nodes[i].folded && executor(g, i) == c[k].e) g->nodes[i].streamed = true;
  }
  s->stream_peak_plan = base + resident + window;
  free(c);
  return rc;
}

/* Kernel i's streamable weights with buffers and its node blocks (bytes). */
static uint64_t resident_kernel_bytes(const kiln_graph *g, int i) {
  uint64_t b = 0;
  for (int j = 0; j < g->nnodes; j++) {
    const kiln_node *m = &g->nodes[j];
    if (m->folded || executor(g, j) != i) continue;
    for (int k = 0; k < m->nin; k++)
      if (m->in[k] >= 0 && g->vals[m->in[k]].stream_ok && g->vals[m->in[k]].buf) b += kiln_value_dev_bytes(&g->vals[m->in[k]]);
    for (int k = 0; k < 4; k++) b += m->param_bytes[k] + m->scratch_bytes[k];
  }
  return b;
}

/* Makes kernel e stream from now on: its streamable weights and node blocks
 * released (the queue keeps buffers a pending kernel reads), derived again
 * when it next runs. */
static void stream_kernel(kiln_session *s, int e) {
  kiln_graph *g = s->m->g;
  for (int j = 0; j < g->nnodes; j++) {
    kiln_node *m = &g->nodes[j];
    if (m->folded || executor(g, j) != e) continue;
    m->streamed = true;
    for (int k = 0; k < m->nin; k++) {
      kiln_value *v = m->in[k] >= 0 ? &g->vals[m->in[k]] : NULL;
      if (!v || !v->stream_ok || !v->buf) continue;
      clReleaseMemObject(v->buf);
      v->buf = NULL;
      v->streamed = true;
      s->st.device_bytes -= kiln_value_dev_bytes(v);
    }
    for (int k = 0; k < 4; k++) {
      if (m->param[k]) clReleaseMemObject(m->param[k]);
      if (m->scratch[k]) clReleaseMemObject(m->scratch[k]);
      m->param[k] = m->scratch[k] = NULL;
      m->param_bytes[k] = m->scratch_bytes[k] = 0;
    }
    if (m->state && m->op && m->op->release) m->op->release(m);
    free(m->state);
    m->state = NULL;
  }
}

/* The resident kernel (not `except`, not streamed) holding the most bytes
 * that streaming releases; -1 when none holds any. */
static int largest_resident(const kiln_graph *g, int except, uint64_t *bytes) {
  int best = -1;
  *bytes = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const kiln_node *n = &g->nodes[i];
    if (n->folded || executor(g, i) != i || n->streamed || i == except) continue;
    uint64_t b = resident_kernel_bytes(g, i);
    if (b > *bytes) { best = i; *bytes = b; }
  }
  return best;
}

/* After a run whose measured peak exceeded the budget (the plan estimated
 * what kernels allocate for themselves at their first run: packed weights,
 * scratch): more kernels stream, the largest resident ones first, their
 * buffers released now; their derived blocks are made again on the next run
 * and kept on the host from then on. */
void kiln__stream_tighten(kiln_session *s) {
  kiln_graph *g = s->m->g;
  for (;;) {
    uint64_t peak = s->st.device_bytes + kiln__stream_node_bytes(g) + s->stream_window, b;
    if (!s->max_memory || peak <= s->max_memory) return;
    int best = largest_resident(g, -1, &b);
    if (best < 0) return; /* nothing left to stream: the run reports its peak */
    stream_kernel(s, best);
    if (b > s->stream_window) s->stream_window = b;
  }
}

/* Within a run, before a node block of `bytes` is allocated for kernel cur:
 * while the resident buffers, the node blocks, the weights uploaded for the
 * kernel being enqueued and the new block would exceed the budget, the
 * largest other resident kernel streams from now on (what a kernel allocates
 * at its first run is not known when the plan is made; without this the
 * first run's peak went over the budget: the full SD UNet at half its fp32
 * weights, 1.806 GB for a 1.719 GB budget). Records the run's peak. */
void kiln__stream_make_room(kiln_session *s, int cur, uint64_t bytes) {
  kiln_graph *g = s->m->g;
  uint64_t held = s->st.device_bytes + kiln__stream_node_bytes(g) + s->stream_live;
  while (s->max_memory && held + bytes > s->max_memory) {
    uint64_t b;
    int e = largest_resident(g, executor(g, cur), &b);
    if (e < 0) break; /* nothing else to release: the run reports its peak */
    stream_kernel(s, e);
    if (b > s->stream_window) s->stream_window = b;
    held = s->st.device_bytes + kiln__stream_node_bytes(g) + s->stream_live;
  }
  if (held + bytes > s->stream_peak_run) s->stream_peak_run = held + bytes;
}
