/* fusion_test.c: epilogue fusion (runtime/fusion.c) against the CPU
 * reference. Small graphs of a Conv, Gemm or MatMul followed by element-wise
 * tails (Relu, Clip, Sigmoid, HardSigmoid, HardSwish, SiLU as Mul(x,
 * Sigmoid(x)), GELU as its Erf pattern, a residual Add, a scalar and a
 * per-channel operand) are planned by kiln_fusion_plan; the test checks that
 * the expected nodes joined the head's kernel (or did not, where an inner
 * value escapes), then runs the graph on the device with the head's
 * parameters forced to every Conv algorithm / GEMM kernel that applies and
 * compares the group's output with the reference of the unfused nodes:
 * max |dev - ref| <= 1e-4 * max |ref| + 1e-5. Residual operands of two
 * cases end where an inaccessible page begins (guarded_buf): a kernel that
 * runs the epilogue on lanes past the output's end (a partial last column
 * block) reads past the operand and the test dies with SIGSEGV (on POCL;
 * under Oclgrind, an invalid read). --case LABEL runs one case.
 * Exit 0 = pass, 1 = fail, 77 = skipped (no device). */
#include "kiln_internal.h"
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#define SKIP 77
#define MAXN 16
#define MAXV 48

static kiln_device *dev;
static int quick; /* --quick (default suite): fewer tile variants per algorithm / kernel */
static const char *only; /* --case LABEL: only that case (tests/oclgrind.sh) */
static uint64_t rng = 0xf05e;
static int fails, runs;

#include "test_rng.h"

/* A graph under construction. */
typedef struct {
  kiln_graph g;
  kiln_node nodes[MAXN];
  int ins[MAXN][3], outs[MAXN][1];
  kiln_attr attrs[MAXN][4];
  int head;
  int guard; /* a value whose device buffer ends at an inaccessible page (-1: none), see guarded_buf */
  void *gmap;
  size_t glen;
} tgraph;

static int val(tgraph *t, const char *name, int rank, const int64_t *dims, int is_const, double scale) {
  int v = kiln_graph_add_value(&t->g, name);
  kiln_value *x = &t->g.vals[v];
  x->dtype = KILN_DT_FLOAT;
  x->producer = -1;
  if (rank >= 0) {
    x->rank = rank;
    memcpy(x->dims, dims, sizeof(int64_t) * (size_t)rank);
    x->is_const = is_const;
    x->is_input = !is_const;
    int64_t ne = kiln_value_numel(x);
    x->data = malloc(kiln_value_bytes(x) + 8);
    for (int64_t k = 0; k < ne; k++) kiln_store_f(x->data, x->dtype, k, scale * unif());
  }
  return v;
}

static int scalar(tgraph *t, const char *name, float f) {
  int64_t one = 1;
  int v = val(t, name, 0, &one, 1, 0);
  ((float *)t->g.vals[v].data)[0] = f;
  return v;
}

/* A device buffer of b bytes (b a multiple of 128) on host memory that ends
 * where an inaccessible page begins: on a CPU device that uses the host
 * memory itself (POCL does with CL_MEM_USE_HOST_PTR) a kernel that reads
 * past the buffer's end faults (SIGSEGV) instead of reading whatever
 * follows. The mapping goes to *map, *len (munmap them after the buffer). */
static cl_mem guarded_buf(size_t b, const void *data, void **map, size_t *len, kiln_error *err) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = (b + pg - 1) / pg * pg;
  *len = body + pg;
  *map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (*map == MAP_FAILED) { *map = NULL; kiln__err(err, KILN_ENOMEM, "mmap"); return NULL; }
  char *at = (char *)*map + body - b;
  mprotect((char *)*map + body, pg, PROT_NONE);
  memcpy(at, data, b);
  cl_int e;
  cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, b, at, &e);
  if (e != CL_SUCCESS) kiln__err(err, KILN_ECL, "clCreateBuffer(USE_HOST_PTR): %d", e);
  return e == CL_SUCCESS ? m : NULL;
}

/* Adds node op(ins...) -> new value; returns the output value id. */
static int node(tgraph *t, const char *op, int nin, const int *ins, int nattr, const kiln_attr *attrs) {
  int i = t->g.nnodes++;
  kiln_node *n = &t->nodes[i];
  memset(n, 0, sizeof *n);
  char nm[32];
  snprintf(nm, sizeof nm, "n%d_%s", i, op);
  n->name = strdup(nm);
  n->op_type = (char *)op;
  n->domain = "";
  n->opset = 13;
  n->nin = nin;
  n->nout = 1;
  n->in = t->ins[i];
  n->out = t->outs[i];
  memcpy(n->in, ins, sizeof(int) * (size_t)nin);
  if (nattr) memcpy(t->attrs[i], attrs, sizeof(kiln_attr) * (size_t)nattr); /* attrs may be NULL when there are none */
  n->attrs = t->attrs[i];
  n->nattr = nattr;
  n->op = kiln_op_lookup("", op);
  n->fuse_root = -1;
  char vn[32];
  snprintf(vn, sizeof vn, "v%d", i);
  n->out[0] = val(t, vn, -1, NULL, 0, 0);
  t->g.vals[n->out[0]].producer = i;
  return n->out[0];
}

static kiln_attr aints(const char *nm, int cnt, const int64_t *v) {
  kiln_attr a = {0};
  a.name = (char *)nm;
  a.type = KILN_ATTR_INTS;
  a.n = cnt;
  a.ints = (int64_t *)v;
  return a;
}
static kiln_attr aint(const char *nm, int64_t v) {
  kiln_attr a = {0};
  a.name = (char *)nm;
  a.type = KILN_ATTR_INT;
  a.i = v;
  return a;
}
static kiln_attr afloat(const char *nm, float v) {
  kiln_attr a = {0};
  a.name = (char *)nm;
  a.type = KILN_ATTR_FLOAT;
  a.f = v;
  return a;
}

/* Parameter vectors to force on the head: for Conv the defaults of each
 * algorithm (and a second tile shape), for GEMM the defaults and a few
 * valid vectors of each kernel but CLBlast. Returns the count. */
static int head_vectors(kiln_tunable *t, int (*p)[KILN_MAX_KPARAMS], int cap) {
  int cnt = 0;
  kiln_device_info info = dev->info;
  info.is_gpu = 1; /* the tiled GEMM too */
  for (int i = 0; i < t->nparams; i++) p[0][i] = t->params[i].dflt;
  cnt = 1;
  if (!strcmp(t->family, "conv")) {
    static const char *alt[] = {"", "GEMM_TM=8,GEMM_TN=16,GEMM_ORDER=1"};
    for (int a = 0; a < t->params[0].nvals && cnt < cap; a++)
      for (int s = 0; s < 2 && cnt < cap; s++) {
        int q[KILN_MAX_KPARAMS];
        for (int i = 0; i < t->nparams; i++) q[i] = t->params[i].dflt;
        q[0] = a;
        if (s) {
          if (quick) continue; /* --quick: each algorithm at its default tile only */
          if (a != 1 && a != 2 && a != 4 && a != 6 && a != 7 && a != 10 && a != 12) continue;
          for (int i = 0; i < t->nparams; i++) {
            /* dirc: 4-wide channel vectors, two a panel, 4 pixels: the
             * epilogue on its accumulators for the vectors wholly inside
             * the layer's channels, after the gather for a partial one */
            if (a == 12 && !strcmp(t->params[i].name, "CONV_TP")) q[i] = 4;
            if (a == 12 && !strcmp(t->params[i].name, "CONVDW_VW")) q[i] = 4;
            if (a == 12 && !strcmp(t->params[i].name, "CONVDW_R")) q[i] = 2;
            if (a == 12) continue;
            /* dwr: 4 rows a work-item (rows paired through a 16-wide epilogue) */
            if (a == 10 && !strcmp(t->params[i].name, "CONVDW_R")) q[i] = 4;
            if (a == 10) continue;
            if (!strcmp(t->params[i].name, "GEMM_TM")) q[i] = 8;
            if (!strcmp(t->params[i].name, "GEMM_TN")) q[i] = 16;
            if (!strcmp(t->params[i].name, "GEMM_ORDER") && a < 6) q[i] = 1;
            if (!strcmp(t->params[i].name, "PANEL_WG") && a >= 6) q[i] = 2;
          }
        }
        (void)alt;
        if (a == 5) for (int i = 0; i < t->nparams; i++) if (!strcmp(t->params[i].name, "LG_WPT")) q[i] = 2;
        kiln_tunable tb = *t;
        tb.dims[1] = tb.dims[3] = tb.dims[6] = 4096;
        if (t->valid(&tb, q, &info)) continue;
        if (t->valid(t, q, &dev->info)) continue; /* and on this instance (dirc's 4-wide vectors need whole blocks of its channels) */
        if (!memcmp(q, p[0], sizeof(int) * (size_t)t->nparams)) continue;
        memcpy(p[cnt++], q, sizeof q);
      }
    return cnt;
  }
  int ik = -1;
  for (int i = 0; i < t->nparams; i++) if (!strcmp(t->params[i].name, "KERNEL")) ik = i;
  kiln_tunable tb = *t;
  tb.dims[0] = tb.dims[1] = tb.dims[2] = 4096;
  int got[2] = {0};
  for (int tries = 0; tries < 100000 && cnt < cap; tries++) {
    int q[KILN_MAX_KPARAMS];
    for (int i = 0; i < t->nparams; i++) q[i] = t->params[i].vals[next_u64() % (uint64_t)t->params[i].nvals];
    if (q[ik] > 1 || got[q[ik]] >= (quick ? 1 : 2) || tb.valid(&tb, q, &info)) continue;
    got[q[ik]]++;
    memcpy(p[cnt++], q, sizeof q);
  }
  return cnt;
}

/* Plans t's graph, checks the grouping (want_members nodes after the head
 * in its epilogue, 0: no epilogue group) and compares every vector's
 * output of the graph's last value with the reference. */
static void run(tgraph *t, const char *label, int want_members) {
  kiln_graph *g = &t->g;
  g->nodes = t->nodes;
  g->capnodes = MAXN;
  kiln_error err = {0};
  int bad = 0, tested = 0;
  void **host = NULL;
  void *got = NULL;
  kiln_fusion_decision *dec = NULL;
  int ndec = 0;
  if (only && strcmp(label, only)) goto done;
  for (int i = 0; i < g->nnodes; i++) {
    if (g->nodes[i].op->infer(g, &g->nodes[i], &err)) { printf("FAIL %-40s infer: %s\n", label, err.msg); fails++; goto done; }
  }
  int last = g->nodes[g->nnodes - 1].out[0];
  g->vals[last].is_output = true;
  host = calloc((size_t)g->nvals, sizeof(void *));
  for (int i = 0; i < g->nnodes; i++)
    if (kiln_node_run_ref_host(g, &g->nodes[i], host, &err)) { printf("FAIL %-40s reference: %s\n", label, err.msg); fails++; goto done; }
  g->fusion = true;
  if (kiln_fusion_plan(g, NULL, &dec, &ndec, &err)) { printf("FAIL %-40s plan: %s\n", label, err.msg); fails++; goto done; }
  kiln_node *h = &g->nodes[t->head];
  int members = h->epi ? h->epi->nnodes - 1 : 0;
  if (members != want_members) {
    printf("FAIL %-40s %d nodes joined the head's epilogue, expected %d\n", label, members, want_members);
    fails++;
    goto done;
  }
  for (int v = 0; v < g->nvals; v++) {
    kiln_value *x = &g->vals[v];
    size_t b = kiln_value_bytes(x);
    if (v == t->guard && x->data && b % 128 == 0) {
      if (!(x->buf = guarded_buf(b, x->data, &t->gmap, &t->glen, &err))) { printf("FAIL %-40s %s\n", label, err.msg); fails++; goto done; }
      continue;
    }
    x->buf = kiln_cl_alloc(dev, b ? b : 16, &err);
    if (x->data && b) kiln_cl_write(dev, x->buf, x->data, b, &err);
  }
  kiln_tunable tt;
  if (h->op->tunable(g, h, &tt)) { printf("FAIL %-40s head has no tunable descriptor\n", label); fails++; goto done; }
  if (!!tt.epilogue[0] != !!want_members) { printf("FAIL %-40s epilogue key '%s'\n", label, tt.epilogue); fails++; goto done; }
  int vec[12][KILN_MAX_KPARAMS];
  int nv = head_vectors(&tt, vec, 12);
  kiln_value *y = &g->vals[last];
  size_t yb = kiln_value_bytes(y);
  int64_t ne = kiln_value_numel(y);
  got = malloc(yb + 8);
  for (int vi = 0; vi < nv; vi++) {
    char ps[256];
    kiln_tunable_str(&tt, vec[vi], ps, sizeof ps);
    kiln_exec x = {.d = dev, .g = g, .ov_node = t->head, .ov_params = vec[vi]};
    if (t->gmap) { printf("     %-40s %s (an operand ends at an inaccessible page)\n", label, ps); fflush(stdout); } /* what ran, should it fault */
    float nanv = NAN;
    clEnqueueFillBuffer(dev->q, y->buf, &nanv, sizeof nanv, 0, yb, 0, NULL, NULL);
    int rc = 0;
    for (int i = 0; i < g->nnodes && !rc; i++) {
      kiln_node *n = &g->nodes[i];
      if (n->fuse_root >= 0 && !n->fgroup) continue;
      rc = kiln_node_dev(&x, n, &err);
    }
    runs++;
    tested++;
    if (rc || kiln_cl_read(dev, y->buf, got, yb, &err)) {
      printf("FAIL %-40s %s: %s\n", label, ps, err.msg);
      memset(&err, 0, sizeof err);
      bad++;
      continue;
    }
    double maxref = 0, maxdiff = 0;
    int64_t at = -1;
    for (int64_t k = 0; k < ne; k++) {
      double r = ((float *)host[last])[k], d = ((float *)got)[k];
      if (fabs(r) > maxref) maxref = fabs(r);
      double e = isfinite(d) ? fabs(d - r) : INFINITY;
      if (!(e <= maxdiff)) { maxdiff = e; at = k; }
    }
    if (!(maxdiff <= 1e-4 * maxref + 1e-5)) {
      printf("FAIL %-40s %s: max err %.3g at %lld (max |ref| %.3g)\n", label, ps, maxdiff, (long long)at, maxref);
      bad++;
    }
  }
  if (bad) fails++;
  printf("%s %-40s %d nodes fused, %d parameter vectors (%s)\n", bad ? "FAIL" : "ok  ", label, members, tested, tt.epilogue[0] ? tt.epilogue : "no epilogue");
done:
  free(got);
  free(dec);
  kiln_fusion_free(g);
  for (int i = 0; i < g->nvals; i++) {
    if (host) free(host[i]);
    free(g->vals[i].data);
    if (g->vals[i].buf) clReleaseMemObject(g->vals[i].buf);
    free(g->vals[i].name);
  }
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    for (int k = 0; k < 4; k++) {
      if (n->param[k]) clReleaseMemObject(n->param[k]);
      if (n->scratch[k]) clReleaseMemObject(n->scratch[k]);
    }
    free(n->state);
    free(n->name);
  }
  free(host);
  free(g->vals);
  if (t->gmap) munmap(t->gmap, t->glen);
  memset(t, 0, sizeof *t);
  t->guard = -1;
}

/* Conv head: x [n,c,h,w] * w [m,c/group,k,k] (+ bias), pad p, stride s. */
static int conv(tgraph *t, int64_t n, int64_t c, int64_t m, int64_t hw, int64_t k, int64_t s, int64_t p, int64_t group, int *xout) {
  int64_t xd[4] = {n, c, hw, hw + 1}, wd[4] = {m, c / group, k, k}, bd[1] = {m};
  int ins[3] = {val(t, "x", 4, xd, 0, 1), val(t, "w", 4, wd, 1, 0.5), val(t, "b", 1, bd, 1, 0.5)};
  if (xout) *xout = ins[0];
  static int64_t st[2], pads[4];
  st[0] = st[1] = s;
  pads[0] = pads[1] = pads[2] = pads[3] = p;
  kiln_attr a[3] = {aints("strides", 2, st), aints("pads", 4, pads), aint("group", group)};
  t->head = t->g.nnodes;
  return node(t, "Conv", 3, ins, 3, a);
}

static int un(tgraph *t, const char *op, int x) { return node(t, op, 1, &x, 0, NULL); }
static int bin(tgraph *t, const char *op, int a, int b) {
  int ins[2] = {a, b};
  return node(t, op, 2, ins, 0, NULL);
}
static int gelu(tgraph *t, int x) {
  int d = bin(t, "Div", x, scalar(t, "sqrt2", 1.41421356f));
  int e = un(t, "Erf", d);
  int a = bin(t, "Add", e, scalar(t, "one", 1.0f));
  int m = bin(t, "Mul", x, a);
  return bin(t, "Mul", m, scalar(t, "half", 0.5f));
}

int main(int argc, char **argv) {
  kiln_error err = {0};
  const char *devsel = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) devsel = argv[++i];
  }
  if (kiln_device_open(devsel, &dev, &err)) {
    printf("skipped: %s\n", err.msg);
    return SKIP;
  }
  kiln_options env; /* KILN_CACHE_DIR, KILN_KERNEL_DIR and the rest, as the kiln command reads them */
  if (kiln_options_from_env(&env, &err) || kiln_device_set_options(dev, &env, &err)) { printf("FAIL: %s\n", err.msg); return 1; }
  tgraph *t = calloc(1, sizeof *t);
  t->guard = -1;
  int x, y, z, r;

  y = conv(t, 1, 8, 12, 9, 3, 1, 1, 1, NULL);
  un(t, "Relu", y);
  run(t, "Conv 3x3 + Relu", 1);

  y = conv(t, 2, 6, 6, 7, 3, 1, 1, 1, &x);
  bin(t, "Add", y, x);
  un(t, "Relu", t->g.nnodes ? t->nodes[t->g.nnodes - 1].out[0] : -1);
  run(t, "Conv 3x3 + Add(residual x) + Relu", 2);

  y = conv(t, 1, 5, 7, 8, 3, 2, 1, 1, NULL);
  {
    int ins[3] = {y, scalar(t, "lo", 0.0f), scalar(t, "hi", 0.3f)};
    node(t, "Clip", 3, ins, 0, NULL);
  }
  run(t, "Conv 3x3 s2 + Clip(0, 0.3)", 1);

  y = conv(t, 1, 8, 8, 10, 3, 1, 1, 8, NULL);
  {
    int ins[3] = {y, scalar(t, "lo", 0.0f), scalar(t, "hi", 6.0f)};
    node(t, "Clip", 3, ins, 0, NULL);
  }
  run(t, "depthwise Conv + Clip(0, 6)", 1);

  /* rows of 41: dwr's whole-vector interior and a partial last vector */
  y = conv(t, 1, 4, 4, 40, 3, 1, 1, 4, &x);
  z = un(t, "Sigmoid", y);
  z = bin(t, "Mul", y, z);
  bin(t, "Add", z, x);
  run(t, "depthwise Conv wide + SiLU + Add(residual x)", 3);

  y = conv(t, 1, 16, 10, 8, 1, 1, 0, 1, NULL);
  z = un(t, "Sigmoid", y);
  bin(t, "Mul", y, z);
  run(t, "Conv 1x1 + SiLU (Mul(x, Sigmoid(x)))", 2);

  /* 18 rows of 19: dwr at 4 rows a work-item pairs rows through the 16-wide
   * epilogue (no full-size operand), a last work-item of 2 rows, and a
   * partial last vector that takes the 8-wide path */
  y = conv(t, 1, 3, 3, 18, 3, 1, 1, 3, NULL);
  z = un(t, "Sigmoid", y);
  bin(t, "Mul", y, z);
  run(t, "depthwise Conv + SiLU, rows paired", 2);

  /* a residual operand read by the epilogue at the flat output index: 5x6
   * pixels leave every column block size a partial last block, and the
   * operand's buffer ends at an inaccessible page (guarded_buf), so an
   * epilogue run on the lanes past the last row's end reads outside it */
  y = conv(t, 1, 16, 16, 5, 1, 1, 0, 1, &x);
  t->guard = x;
  z = bin(t, "Add", y, x);
  un(t, "Relu", z);
  run(t, "Conv 1x1 + Add(residual x, guarded) + Relu", 2);
  y = conv(t, 1, 16, 16, 5, 3, 1, 1, 1, &x);
  t->guard = x;
  bin(t, "Add", y, x);
  run(t, "Conv 3x3 + Add(residual x, guarded)", 1);

  y = conv(t, 1, 7, 9, 6, 3, 1, 1, 1, NULL);
  gelu(t, y);
  run(t, "Conv 3x3 + GELU (Erf pattern)", 5);

  y = conv(t, 1, 4, 6, 7, 3, 1, 0, 1, NULL);
  {
    int64_t cd[3] = {6, 1, 1};
    z = bin(t, "Mul", y, scalar(t, "scale", 0.75f));
    z = bin(t, "Add", z, val(t, "chan", 3, cd, 1, 1));
    z = node(t, "HardSigmoid", 1, &z, 2, (kiln_attr[]){afloat("alpha", 0.3f), afloat("beta", 0.4f)});
    un(t, "HardSwish", z);
  }
  run(t, "Conv + Mul(scalar) + Add(per channel) + HardSigmoid + HardSwish", 4);

  y = conv(t, 1, 6, 5, 6, 1, 2, 0, 1, NULL);
  {
    int64_t sd[1] = {1};
    z = bin(t, "Mul", y, val(t, "s_in", 1, sd, 0, 1)); /* a scalar computed at run time */
    un(t, "Sigmoid", z);
  }
  run(t, "Conv 1x1 s2 + Mul(runtime scalar) + Sigmoid", 2);

  y = conv(t, 1, 6, 6, 8, 3, 1, 1, 1, NULL);
  r = un(t, "Relu", y);
  t->g.vals[y].is_output = true; /* the conv's own output escapes: nothing fuses */
  (void)r;
  run(t, "Conv whose output is a graph output", 0);

  /* Gemm: a [5,13] x b^T [11,13] + c [11] */
  {
    int64_t ad[2] = {5, 13}, bd[2] = {11, 13}, cd[1] = {11};
    int ins[3] = {val(t, "a", 2, ad, 0, 1), val(t, "b", 2, bd, 1, 1), val(t, "c", 1, cd, 1, 1)};
    t->head = 0;
    y = node(t, "Gemm", 3, ins, 2, (kiln_attr[]){aint("transB", 1), afloat("alpha", 0.5f)});
    un(t, "Relu", y);
    run(t, "Gemm transB + bias + Relu", 1);
  }
  {
    int64_t ad[3] = {2, 5, 7}, bd[2] = {7, 19}, cd[1] = {19};
    int ins[2] = {val(t, "a", 3, ad, 0, 1), val(t, "b", 2, bd, 1, 1)};
    t->head = 0;
    y = node(t, "MatMul", 2, ins, 0, NULL);
    z = bin(t, "Add", val(t, "bias", 1, cd, 1, 1), y);
    gelu(t, z);
    run(t, "MatMul batched + Add(bias) + GELU", 6);
  }
  {
    int64_t ad[3] = {3, 4, 6}, bd[3] = {3, 6, 10}, rd[3] = {3, 4, 10};
    int ins[2] = {val(t, "a", 3, ad, 0, 1), val(t, "b", 3, bd, 0, 1)};
    t->head = 0;
    y = node(t, "MatMul", 2, ins, 0, NULL);
    z = bin(t, "Mul", y, scalar(t, "scale", 0.125f));
    bin(t, "Add", z, val(t, "res", 3, rd, 0, 1));
    run(t, "MatMul (computed B) * 0.125 + residual", 2);
  }
  free(t);
  printf("%d parameter vectors run, %d cases failed\n", runs, fails);
  kiln_device_close(dev);
  return fails ? 1 : 0;
}
