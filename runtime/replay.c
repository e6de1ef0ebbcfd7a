/* replay.c: a node's launches recorded on one run of a plan and replayed on
 * the next ones.
 *
 * Enqueuing a node's kernels costs the host far more than the launch itself:
 * the op derives its descriptor and shape key, formats the program's build
 * options, finds the program by them, sets the arguments. On POCL that was
 * 5-10 us a launch (efficientnet_b0: 0.55-0.62 ms of host time for its 100
 * launches, mobilenet_v2 0.42-0.70 for 54), and on a CPU device the host
 * thread takes that time from the cores that run the kernels: 5 us of host
 * time added a launch made efficientnet_b0 0.24 ms slower a run. On a GPU the
 * host time is all there is between kernels.
 *
 * So while a node's dev function runs, the arguments it sets (kiln_cl_args,
 * kiln__rec_arg) and the launches it makes (kiln_exec_launch) are recorded;
 * a later run of the same plan sets those arguments and makes those launches
 * again without calling the op. A node is replayed only when its recording is
 * clean: at least one launch, nothing else enqueued (an upload, a copy, a
 * read-back, a launch that packs weights: kiln__rec_other), no argument
 * larger than a scalar or a buffer, and the same tunable parameters (and
 * their origin; an epilogue group's are its head's) and database as when
 * it was recorded. Each recorded launch gets a kernel object of its own
 * (own_kernel) with its arguments set and its local size chosen once, so a
 * replayed launch is one enqueue. Dynamic nodes, and every node after one on the run, run
 * their op every time; so does every node of a session under a memory budget
 * (stream.c moves buffers between runs) and every one while KILN_REPLAY=off.
 * A plan's release (kiln__session_release_plan) frees its recordings, so a
 * recording never outlives the buffers it names. A node whose op runs a
 * session of its own (If, Loop, Scan: their bodies) is never replayed: the
 * nested kiln_session_run marks the recording it interrupts (kiln__rec_other)
 * and records its own nodes in turn. */
#include "kiln_internal.h"

#define RARG_MAX 16 /* bytes of one recorded argument: scalars, vectors of 4, cl_mem */
#define RARG_IDX 64 /* argument indices recorded per kernel */

typedef struct {
  cl_kernel k;
  cl_uint idx;
  size_t sz;
  bool local; /* __local memory of sz bytes (no value) */
  unsigned char v[RARG_MAX];
} rarg;

typedef struct {
  cl_kernel k;
  int dims;
  bool has_lws;
  size_t gws[3], lws[3];
  int a0, na; /* its arguments: args[a0 .. a0+na) */
  bool owned; /* k is this launch's own kernel object, its arguments set once (kiln__replay_end) */
} rlaunch;

typedef struct kiln_replay {
  struct kiln_replay *prev; /* the recording this one interrupted (a node whose op runs a session: control flow) */
  bool bad;  /* something was enqueued that a replay would not repeat */
  bool done; /* a clean recording, ready to replay */
  const char *origin; /* n->tparams_origin when recorded: NULL for a node without tunable parameters */
  const void *db; /* the run's database when recorded (another: parameters may be chosen otherwise) */
  int64_t db_device;
  int tparams[KILN_MAX_KPARAMS_NODE];
  rarg *log, *args; /* arguments as set (the node's whole run), as each launch used them */
  int nlog, caplog, nargs, capargs;
  rlaunch *l;
  int nl, capl;
} kiln_replay;

/* the node this thread is recording, NULL when none; the ones it
 * interrupted are its prev chain */
static _Thread_local kiln_replay *rec;

static void rec_free(kiln_replay *r) {
  if (!r) return;
  for (int i = 0; i < r->nl; i++) clReleaseKernel(r->l[i].k);
  free(r->log);
  free(r->args);
  free(r->l);
  free(r);
}

void kiln__replay_free(kiln_node *n) {
  rec_free(n->replay);
  n->replay = NULL;
}

static bool grow(void **p, int *cap, int need, size_t esz) {
  if (need <= *cap) return true;
  int c = *cap ? *cap * 2 : 8;
  while (c < need) c *= 2;
  void *np = realloc(*p, esz * (size_t)c);
  if (!np) return false;
  *p = np;
  *cap = c;
  return true;
}

void kiln__rec_arg(cl_kernel k, cl_uint idx, size_t sz, const void *p) {
  kiln_replay *r = rec;
  if (!r || r->bad) return;
  if (idx >= RARG_IDX || (p && sz > RARG_MAX) || !grow((void **)&r->log, &r->caplog, r->nlog + 1, sizeof *r->log)) { r->bad = true; return; }
  rarg *a = &r->log[r->nlog++];
  a->k = k;
  a->idx = idx;
  a->sz = sz;
  a->local = p == NULL;
  if (p) memcpy(a->v, p, sz);
}

void kiln__rec_launch(cl_kernel k, int dims, const size_t *gws, const size_t *lws) {
  kiln_replay *r = rec;
  if (!r || r->bad) return;
  if (dims < 1 || dims > 3 || !grow((void **)&r->l, &r->capl, r->nl + 1, sizeof *r->l)) { r->bad = true; return; }
  rlaunch *L = &r->l[r->nl];
  memset(L, 0, sizeof *L);
  L->k = k;
  L->dims = dims;
  L->has_lws = lws != NULL;
  for (int i = 0; i < dims; i++) {
    L->gws[i] = gws[i];
    if (lws) L->lws[i] = lws[i];
  }
  /* the kernel's arguments as this launch sees them: the last value set for
   * each index during the node's run */
  uint64_t seen = 0;
  L->a0 = r->nargs;
  for (int i = r->nlog - 1; i >= 0; i--) {
    const rarg *a = &r->log[i];
    if (a->k != k || (seen >> a->idx & 1)) continue;
    seen |= 1ull << a->idx;
    if (!grow((void **)&r->args, &r->capargs, r->nargs + 1, sizeof *r->args)) { r->bad = true; return; }
    r->args[r->nargs++] = *a;
  }
  L->na = r->nargs - L->a0;
  clRetainKernel(k);
  r->nl++;
}

void kiln__rec_other(void) {
  if (rec) rec->bad = true;
}

void kiln__replay_stale(kiln_node *n) {
  for (kiln_replay *r = rec; r; r = r->prev)
    if (r == n->replay) { r->bad = true; return; } /* while recording it: not this recording either */
  kiln__replay_free(n);
}

/* The node whose tunable parameters n's kernel runs with: the head of the
 * epilogue group n ends (its Conv, Gemm, MatMul), else n. */
static const kiln_node *param_node(const kiln_exec *x, const kiln_node *n) {
  return n->fgroup && n->fgroup->head >= 0 ? &x->g->nodes[n->fgroup->head] : n;
}

/* Gives launch L a kernel object of its own, made from its kernel's program,
 * with its arguments set once here and its local size chosen once, so that
 * a replay only enqueues it (on POCL mobilenet_v2's 55 replayed launches
 * took 370-450 us of host time a run, 352-399 without setting arguments and
 * asking for work-group limits; the rest is POCL's enqueue, 2-3 us a
 * launch). Kernel objects are shared between the nodes (and
 * launches) whose programs match, so the shared one's arguments cannot be
 * left set. On any failure L keeps the shared kernel and sets its arguments
 * on every replay, as before. */
static void own_kernel(kiln_device *d, kiln_replay *r, rlaunch *L) {
  cl_program prog = NULL;
  char name[256];
  size_t nlen = 0;
  if (clGetKernelInfo(L->k, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL) != CL_SUCCESS ||
      clGetKernelInfo(L->k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, &nlen) != CL_SUCCESS || nlen == 0)
    return;
  cl_int e;
  cl_kernel k = clCreateKernel(prog, name, &e);
  if (e != CL_SUCCESS || !k) return;
  for (int j = 0; j < L->na; j++) {
    const rarg *a = &r->args[L->a0 + j];
    if (clSetKernelArg(k, a->idx, a->sz, a->local ? NULL : a->v) != CL_SUCCESS) { clReleaseKernel(k); return; }
  }
  if (!L->has_lws && kiln_cl_auto_lws(d, k, L->dims, L->gws, L->lws)) L->has_lws = true;
  kiln_cl_mark_launched(d, k, L->dims, L->gws, L->has_lws ? L->lws : NULL);
  clReleaseKernel(L->k);
  L->k = k;
  L->owned = true;
}

int kiln__replay_begin(kiln_exec *x, kiln_node *n) {
  kiln__replay_stale(n);
  kiln_replay *r = calloc(1, sizeof *r);
  if (!r) return KILN_ENOMEM;
  r->db = x->db;
  r->db_device = x->db_device;
  n->replay = r;
  r->prev = rec;
  rec = r;
  return 0;
}

void kiln__replay_end(const kiln_exec *x, kiln_node *n, bool ok) {
  kiln_replay *r = n->replay;
  if (!r) return;
  rec = r->prev;
  r->prev = NULL;
  const kiln_node *p = param_node(x, n);
  if (!ok || r->bad || r->nl == 0) { kiln__replay_free(n); return; }
  r->done = true;
  for (int i = 0; i < r->nl; i++) own_kernel(x->d, r, &r->l[i]);
  r->origin = p->tparams_origin;
  memcpy(r->tparams, p->tparams, sizeof r->tparams);
  /* the log served the launches; only their own arguments are kept */
  free(r->log);
  r->log = NULL;
  r->nlog = r->caplog = 0;
}

bool kiln__replay_ready(const kiln_exec *x, const kiln_node *n) {
  const kiln_replay *r = n->replay;
  if (!r || !r->done) return false;
  /* parameters chosen anew since (the tuner clears the origin), others, or
   * another database to choose them from: record again */
  const kiln_node *p = param_node(x, n);
  return r->origin == p->tparams_origin && !memcmp(r->tparams, p->tparams, sizeof r->tparams) && r->db == (const void *)x->db && r->db_device == x->db_device;
}

int kiln__replay_run(kiln_exec *x, kiln_node *n, kiln_error *err) {
  const kiln_replay *r = n->replay;
  for (int i = 0; i < r->nl; i++) {
    const rlaunch *L = &r->l[i];
    for (int j = 0; j < (L->owned ? 0 : L->na); j++) {
      const rarg *a = &r->args[L->a0 + j];
      cl_int e = clSetKernelArg(L->k, a->idx, a->sz, a->local ? NULL : a->v);
      if (e != CL_SUCCESS) return kiln__err(err, KILN_ECL, "replayed launch %d: argument %u: %s", i, a->idx, kiln__clerror(e));
    }
    int rc = kiln_exec_launch(x, L->k, L->dims, L->gws, L->has_lws ? L->lws : NULL, err);
    if (rc) return rc;
  }
  return 0;
}
