/* family_params.c: correctness of every tunable kernel family of the
 * registry (kernels/family.c) across its parameter spaces, not only at the
 * defaults: "norm" (LayerNormalization, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization, with the fused activations
 * and the per-channel form of the exported GroupNorm pattern), "reduce"
 * (Reduce*), "softmax" (Softmax, LogSoftmax, with a fused scale and additive
 * mask), "pool" and "gpool" (windowed and global pools), "eltwise" (unary,
 * clip, broadcast, Where, variadic ops), and a case each of "gemm", "conv"
 * and "attention" (gemm_params.c, conv_params.c and attention_test.c test
 * those in depth). For a spread of shapes (lengths not divisible by the
 * vector widths or the elements per work-item, lines shorter and longer
 * than the work-groups, strided and contiguous lines, broadcasting) each
 * node runs on the device with forced parameter vectors (the tuner's
 * override, kiln_exec.ov_params): the defaults and, for every solver of its
 * family, vectors that together take every value of every parameter the
 * solver reads where the descriptor's constraints allow it
 * (tests/solver_cover.h), compared with the CPU reference: max |dev - ref|
 * <= 1e-4 * max |ref| + 1e-5 (exact for integer outputs). The vector a
 * node runs untuned (kiln_exec_tparams without a database) must be valid
 * for it: the descriptor's defaults, or in cases that expect them invalid
 * (gpool's vectors of 8 on planes of 4 or on integers) the valid vector
 * nearest to them. Fails too when a
 * registered tunable family has no case here (solvers valid for no case on
 * this device are noted). Exit 0 = pass, 1 = fail, 77 = skipped.
 *
 * --half (ctest family_params_half): the fp16-storage variants (an fp16
 * plan, runtime/precision.c) of every case whose op has them
 * (KILN_OP_HALF): every float input and output stored as half, the inputs
 * rounded to half before the reference runs, so that the device differs
 * from it only by fp32 accumulation order and the half rounding of the
 * outputs: max |dev - ref| <= 1e-3 * max |ref| + 1e-5. Ops without tunable
 * parameters (movement ops, KilnCast) run once. */
#include "kiln_internal.h"
#include "cl_defaults.h"


static kiln_device *dev;
static uint64_t rng = 0xfa11;
static int fails, runs;

#include "test_rng.h"
#include "family.h"
#include "solver_cover.h"

/* ---- a one-node graph ---- */

#define MAXIN 4
typedef struct {
  const char *label, *op;
  int opset;
  int nin, nout;
  int dtype[MAXIN];          /* 0: float */
  int rank[MAXIN];
  int64_t dims[MAXIN][6];
  const char *attrs;         /* "name=i:3;name=f:0.5;name=s:SiLU;name=is:1,2" */
  int cond_input;            /* index of a bool input (Where), -1 none */
  unsigned consts;           /* inputs that are constants (bit i: input i; weights packed at plan time) */
  int dflt_invalid;          /* the family's defaults are not valid for this instance (it runs the nearest valid vector) */
} case_t;

static int parse_attrs(const char *s, kiln_attr *a, int64_t (*ints)[8]) {
  int n = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", s ? s : "");
  for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
    char *eq = strchr(tok, '='), *colon = eq ? strchr(eq, ':') : NULL;
    if (!eq || !colon) continue;
    *eq = 0;
    *colon = 0;
    memset(&a[n], 0, sizeof a[n]);
    a[n].name = strdup(tok);
    const char *ty = eq + 1, *v = colon + 1;
    if (!strcmp(ty, "i")) { a[n].type = KILN_ATTR_INT; a[n].i = atoll(v); }
    else if (!strcmp(ty, "f")) { a[n].type = KILN_ATTR_FLOAT; a[n].f = (float)atof(v); }
    else if (!strcmp(ty, "s")) { a[n].type = KILN_ATTR_STRING; a[n].s = strdup(v); }
    else {
      a[n].type = KILN_ATTR_INTS;
      int c = 0;
      for (const char *q = v; *q && c < 8; c++) {
        ints[n][c] = strtoll(q, (char **)&q, 10);
        if (*q == ',') q++;
      }
      a[n].n = c;
      a[n].ints = ints[n];
    }
    n++;
  }
  return n;
}

/* The parameters node n runs with nothing tuned or predicted (no override,
 * no database: kiln_exec_tparams) must be valid for its instance t; where
 * the descriptor's defaults are not, the valid vector nearest to them. The
 * descriptor's defaults themselves may be invalid only in cases that expect
 * it (cc->dflt_invalid). 0 if so, else prints a FAIL line. */
static int check_defaults(kiln_graph *g, kiln_node *n, const kiln_tunable *t, const case_t *cc) {
  int dflt[KILN_MAX_KPARAMS];
  char ds[256], rs[256];
  for (int i = 0; i < t->nparams; i++) dflt[i] = t->params[i].dflt;
  bool invalid = t->valid && t->valid(t, dflt, &dev->info);
  kiln_exec x = {.d = dev, .g = g, .ov_node = -1};
  n->tparams_origin = NULL;
  const int *p = kiln_exec_tparams(&x, n, t);
  kiln_tunable_str(t, dflt, ds, sizeof ds);
  kiln_tunable_str(t, p, rs, sizeof rs);
  n->tparams_origin = NULL;
  if (t->valid && t->valid(t, p, &dev->info)) { printf("FAIL %-44s runs invalid parameters untuned: %s\n", cc->label, rs); return 1; }
  if (invalid && !cc->dflt_invalid) { /* a fallback meant as the exception: cases say where they expect it */
    printf("FAIL %-44s the descriptor's defaults %s are not valid here (runs %s)\n", cc->label, ds, rs);
    return 1;
  }
  if (invalid) printf("     %-44s defaults %s not valid here: runs %s\n", cc->label, ds, rs);
  else if (cc->dflt_invalid) printf("note %-44s defaults %s valid here: the fallback is not exercised\n", cc->label, ds);
  return 0;
}

/* gpool's kernel that runs untuned, gpool_plane (PL_WG=1), at every vector
 * width valid for the case, in its mode and storage: the cover takes each
 * PL_VW value once, not necessarily with PL_WG=1 (a max pool stored as half
 * at PL_VW=8 faulted on POCL, an aligned load on a plane off the boundary,
 * while the cover had run that width only in gpool_wg). Returns the number
 * that failed; *nrun counts the runs. */
static int gpool_plane_widths(kiln_graph *g, kiln_node *n, void **host, const kiln_tunable *t, const char *label, int *nrun) {
  int bad = 0, p[KILN_MAX_KPARAMS];
  for (int k = 0; k < t->params[PP_B].nvals; k++) {
    for (int i = 0; i < t->nparams; i++) p[i] = t->params[i].dflt;
    p[PP_A] = 1;
    p[PP_B] = t->params[PP_B].vals[k];
    if (t->valid && t->valid(t, p, &dev->info)) continue;
    bad += sc_run(dev, g, n, host, t, p, label);
    (*nrun)++;
  }
  return bad;
}

/* pool_row's 3x3 stride-2 max path shares input rows between PL_ROWS output
 * rows and builds 16-wide blocks from two-source permutes (a left pad, a
 * moved last block, a last group of fewer rows going a row at a time): every
 * valid PL_WPI x PL_ROWS pair runs for those cases, not only a cover. */
static int pool_row_pairs(kiln_graph *g, kiln_node *n, void **host, const kiln_tunable *t, const char *label, int *nrun) {
  int bad = 0, p[KILN_MAX_KPARAMS];
  if (!t->dims[PD_OW] || t->dims[PD_WIN] != 9) return 0;
  for (int a = 0; a < t->params[PP_A].nvals; a++)
    for (int c = 0; c < t->params[PP_C].nvals; c++) {
      for (int i = 0; i < t->nparams; i++) p[i] = t->params[i].dflt;
      p[PP_A] = t->params[PP_A].vals[a];
      p[PP_B] = 0;
      p[PP_C] = t->params[PP_C].vals[c];
      if (t->valid && t->valid(t, p, &dev->info)) continue;
      bad += sc_run(dev, g, n, host, t, p, label);
      (*nrun)++;
    }
  return bad;
}

static void run_case(const case_t *cc) {
  /* each case's inputs from a seed of its own label: a case added or moved
   * leaves the others' data as it was (a new case once shifted the shared
   * stream under a Winograd fp16 case, which then failed) */
  rng = 0xfa11;
  for (const char *l = cc->label; *l; l++) rng = (rng ^ (unsigned char)*l) * 0x100000001b3ull;
  kiln_graph g = {0};
  kiln_node n = {0};
  kiln_error err = {0};
  kiln_attr attrs[8];
  int64_t ints[8][8];
  int in[MAXIN], out[3];
  n.name = (char *)cc->label;
  n.op_type = (char *)cc->op;
  n.domain = "";
  n.opset = cc->opset;
  n.nin = cc->nin;
  n.nout = cc->nout;
  n.in = in;
  n.out = out;
  n.attrs = attrs;
  n.nattr = parse_attrs(cc->attrs, attrs, ints);
  n.fuse_root = -1;
  g.nodes = &n; /* the override (kiln_exec.ov_node 0) is matched by node index */
  g.nnodes = 1;
  n.op = kiln_op_lookup("", cc->op);
  for (int i = 0; i < cc->nin; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "x%d", i);
    in[i] = kiln_graph_add_value(&g, nm);
    kiln_value *v = &g.vals[in[i]];
    v->dtype = cc->dtype[i] ? cc->dtype[i] : KILN_DT_FLOAT;
    v->rank = cc->rank[i];
    for (int a = 0; a < v->rank; a++) v->dims[a] = cc->dims[i][a];
    int64_t ne = kiln_value_numel(v);
    v->data = malloc(kiln_value_bytes(v) + 8);
    v->is_const = cc->consts >> i & 1;
    for (int64_t k = 0; k < ne; k++) {
      if (i == cc->cond_input) ((uint8_t *)v->data)[k] = next_u64() & 1;
      else if (!strcmp(cc->op, "Resize") && i == 2) ((float *)v->data)[k] = k < 2 ? 1.f : 2.f; /* scales: 2x upsampling of H and W */
      else if (kiln_dtype_is_float(v->dtype)) kiln_store_f(v->data, v->dtype, k, unif() * 3 + 0.25);
      else kiln_store_i(v->data, v->dtype, k, (int64_t)(next_u64() % 41) - 20);
    }
  }
  for (int k = 0; k < cc->nout; k++) {
    char nm[8];
    snprintf(nm, sizeof nm, "y%d", k);
    out[k] = kiln_graph_add_value(&g, nm);
  }
  void **host = calloc((size_t)g.nvals, sizeof(void *));
  int tested = 0, bad = 0;
  kiln_tunable t;
  if (sc_half) { /* only ops with half kernels; their float tensors stored as half */
    bool kc = n.op && !strcmp(cc->op, "KilnCast"), kc_in = kc && strstr(cc->label, "to fp32"); /* a conversion: one side half */
    if (!n.op || (!(n.op->flags & KILN_OP_HALF) && !kc) || n.op->infer(&g, &n, &err)) goto done;
    bool any = false;
    for (int v = 0; v < g.nvals; v++) {
      kiln_value *val = &g.vals[v];
      if (val->dtype != KILN_DT_FLOAT || (kc && (v == in[0]) != (bool)kc_in)) continue;
      val->half = any = true;
      for (int64_t k = 0; val->data && k < kiln_value_numel(val); k++) ((float *)val->data)[k] = kiln__h2f(kiln__f2h(((float *)val->data)[k]));
    }
    if (!any) goto done;
  }
  if (!n.op || n.op->infer(&g, &n, &err) || (n.op->dev_check && n.op->dev_check(&g, &n, &err)) || kiln_node_run_ref_host(&g, &n, host, &err)) {
    printf("FAIL %-44s setup: %s\n", cc->label, err.msg);
    fails++;
    goto done;
  }
  if (sc_upload(dev, &g, &err)) { printf("FAIL %s setup: %s\n", cc->label, err.msg); fails++; goto done; }
  if (sc_half && (!n.op->tunable || n.op->tunable(&g, &n, &t))) { /* movement ops, Cast, KilnCast: one run */
    kiln_tunable t0 = {.family = "fixed"};
    int p0[1] = {0};
    bad = sc_run(dev, &g, &n, host, &t0, p0, cc->label);
    runs++;
    if (bad) fails++;
    printf("%s %-44s %-8s fp16 storage\n", bad ? "FAIL" : "ok  ", cc->label, "fixed");
    goto done;
  }
  if (!n.op->tunable || n.op->tunable(&g, &n, &t)) { printf("FAIL %-44s no tunable descriptor\n", cc->label); fails++; goto done; }
  if (cl_defaults_check(&t, cc->label)) fails++;
  if (check_defaults(&g, &n, &t, cc)) { fails++; goto done; }
  int nsolv;
  bad = sc_run_all(dev, &g, &n, host, &t, &t, &dev->info, cc->label, &tested, &nsolv);
  if (!strcmp(t.family, "gpool")) bad += gpool_plane_widths(&g, &n, host, &t, cc->label, &tested);
  if (!strcmp(t.family, "pool") && strstr(cc->label, "(rows shared)")) bad += pool_row_pairs(&g, &n, host, &t, cc->label, &tested);
  runs += tested;
  if (bad) fails++;
  printf("%s %-44s %-8s %d parameter vectors%s\n", bad ? "FAIL" : "ok  ", cc->label, t.family, tested, sc_half ? " (fp16 storage)" : "");
  if (sc_half && t.dtype != KILN_DT_FLOAT16) { printf("FAIL %-44s fp16 instance keyed %s, not float16\n", cc->label, kiln_dtype_name(t.dtype)); fails++; }
done:
  for (int a = 0; a < n.nattr; a++) { free(attrs[a].name); free(attrs[a].s); }
  sc_free_graph(&g, &n, host);
}


int main(int argc, char **argv) {
  int rc = sc_start(argc, argv, &dev);
  if (rc) return rc;
  const int I32 = KILN_DT_INT32, D = KILN_DT_DOUBLE, B = KILN_DT_BOOL;
  /* label, op, opset, nin, nout, dtypes, ranks, dims, attrs, bool input */
  const case_t cases[] = {
    /* norm */
    {"LayerNorm 3x37 (L % 8 != 0)", "LayerNormalization", 17, 3, 1, {0}, {2, 1, 1}, {{3, 37}, {37}, {37}}, "axis=i:-1", -1},
    {"LayerNorm 2x5x24 axis 1, stats", "LayerNormalization", 17, 3, 3, {0}, {3, 2, 2}, {{2, 5, 24}, {5, 24}, {5, 24}}, "axis=i:1", -1},
    {"LayerNorm 4x1001 + Relu", "LayerNormalization", 17, 2, 1, {0}, {2, 1}, {{4, 1001}, {1001}}, "axis=i:-1;kiln_activation=s:Relu", -1},
    {"InstanceNorm 2x3x7x5", "InstanceNormalization", 6, 3, 1, {0}, {4, 1, 1}, {{2, 3, 7, 5}, {3}, {3}}, "epsilon=f:1e-5", -1},
    {"InstanceNorm 1x2x33x31 + SiLU", "InstanceNormalization", 6, 3, 1, {0}, {4, 1, 1}, {{1, 2, 33, 31}, {2}, {2}}, "kiln_activation=s:SiLU", -1},
    {"GroupNorm 2x6x5x3 G=3 (per group)", "GroupNormalization", 18, 3, 1, {0}, {4, 1, 1}, {{2, 6, 5, 3}, {3}, {3}}, "num_groups=i:3", -1},
    {"GroupNorm 1x8x9x7 G=4 per channel", "GroupNormalization", 21, 3, 1, {0}, {4, 1, 1}, {{1, 8, 9, 7}, {8}, {8}}, "num_groups=i:4", -1},
    {"GroupNorm pattern 1x32x13x11 G=8 + SiLU", "GroupNormalization", 18, 3, 1, {0}, {4, 1, 1}, {{1, 32, 13, 11}, {32}, {32}},
     "num_groups=i:8;kiln_per_channel=i:1;kiln_activation=s:SiLU;epsilon=f:1e-6", -1},
    {"MVN 2x3x4x5 (strided rows)", "MeanVarianceNormalization", 13, 1, 1, {0}, {4}, {{2, 3, 4, 5}}, NULL, -1},
    {"double LayerNorm 3x29", "LayerNormalization", 17, 3, 1, {D, D, D}, {2, 1, 1}, {{3, 29}, {29}, {29}}, "axis=i:-1", -1},
    /* reduce */
    {"ReduceSum 4x33x5 axis 1 (strided)", "ReduceSum", 11, 1, 1, {0}, {3}, {{4, 33, 5}}, "axes=is:1", -1},
    {"ReduceMean 6x301 axis -1", "ReduceMean", 13, 1, 1, {0}, {2}, {{6, 301}}, "axes=is:-1", -1},
    {"ReduceMax 3x7x129 axis 2", "ReduceMax", 13, 1, 1, {0}, {3}, {{3, 7, 129}}, "axes=is:2;keepdims=i:0", -1},
    {"ReduceLogSumExp 5x517", "ReduceLogSumExp", 13, 1, 1, {0}, {2}, {{5, 517}}, "axes=is:1", -1},
    {"ReduceL2 2x3x4 axes 0,2", "ReduceL2", 13, 1, 1, {0}, {3}, {{2, 3, 4}}, "axes=is:0,2", -1},
    {"ReduceSum int32 4x67", "ReduceSum", 11, 1, 1, {I32}, {2}, {{4, 67}}, "axes=is:1", -1},
    {"ReduceMin 1x1000 (all)", "ReduceMin", 13, 1, 1, {0}, {2}, {{1, 1000}}, NULL, -1},
    /* softmax */
    {"Softmax 5x37", "Softmax", 13, 1, 1, {0}, {2}, {{5, 37}}, NULL, -1},
    {"Softmax 3x300", "Softmax", 13, 1, 1, {0}, {2}, {{3, 300}}, NULL, -1},
    {"Softmax 4x9x6 axis 1 (strided)", "Softmax", 13, 1, 1, {0}, {3}, {{4, 9, 6}}, "axis=i:1", -1},
    {"LogSoftmax 2x513", "LogSoftmax", 13, 1, 1, {0}, {2}, {{2, 513}}, NULL, -1},
    {"Softmax scale 0.125 2x3x37", "Softmax", 13, 1, 1, {0}, {3}, {{2, 3, 37}}, "kiln_scale=f:0.125", -1},
    {"Softmax scale+mask[1,1,37] 2x3x37", "Softmax", 13, 2, 1, {0}, {3, 3}, {{2, 3, 37}, {1, 1, 37}}, "kiln_scale=f:0.35", -1},
    {"Softmax mask[2,1,1,301] 2x2x3x301", "Softmax", 13, 2, 1, {0}, {4, 4}, {{2, 2, 3, 301}, {2, 1, 1, 301}}, NULL, -1},
    {"LogSoftmax scale+mask[3,1] 3x300", "LogSoftmax", 13, 2, 1, {0}, {2, 2}, {{3, 300}, {3, 1}}, "kiln_scale=f:2", -1},
    /* pool */
    {"MaxPool 2x3x11x13 k3 s2 p1", "MaxPool", 12, 1, 1, {0}, {4}, {{2, 3, 11, 13}}, "kernel_shape=is:3,3;strides=is:2,2;pads=is:1,1,1,1", -1},
    {"MaxPool indices 1x2x9x7 k2 s1", "MaxPool", 12, 1, 2, {0}, {4}, {{1, 2, 9, 7}}, "kernel_shape=is:2,2", -1},
    {"AveragePool 1x4x9x10 k2 s2 incl pad", "AveragePool", 19, 1, 1, {0}, {4}, {{1, 4, 9, 10}}, "kernel_shape=is:2,2;strides=is:2,2;pads=is:0,1,1,0;count_include_pad=i:1", -1},
    {"LpPool 1x3x8x8 k3", "LpPool", 18, 1, 1, {0}, {4}, {{1, 3, 8, 8}}, "kernel_shape=is:3,3;p=i:3", -1},
    /* pool_row's vector blocks (whole windows inside, 8 outputs of a row) beside its edge blocks */
    {"MaxPool 1x2x20x41 k3 s2 (row vectors)", "MaxPool", 12, 1, 1, {0}, {4}, {{1, 2, 20, 41}}, "kernel_shape=is:3,3;strides=is:2,2", -1},
    {"AveragePool 1x3x12x30 k3 s1 p1 (row vectors)", "AveragePool", 19, 1, 1, {0}, {4}, {{1, 3, 12, 30}}, "kernel_shape=is:3,3;pads=is:1,1,1,1", -1},
    /* 3-wide stride-2 rows (one load and an element per window row), the partial last block moved left */
    {"MaxPool 1x3x27x27 k3 s2 ceil (row end moved)", "MaxPool", 12, 1, 1, {0}, {4}, {{1, 3, 27, 27}}, "kernel_shape=is:3,3;strides=is:2,2;ceil_mode=i:1", -1},
    {"AveragePool 1x2x15x35 k3 s2 (row vectors)", "AveragePool", 19, 1, 1, {0}, {4}, {{1, 2, 15, 35}}, "kernel_shape=is:3,3;strides=is:2,2", -1},
    {"MaxPool 1x2x31x45 k3 s2 p1 (rows shared)", "MaxPool", 12, 1, 1, {0}, {4}, {{1, 2, 31, 45}}, "kernel_shape=is:3,3;strides=is:2,2;pads=is:1,1,1,1", -1},
    {"MaxPool 1x3x39x39 k3 s2 ceil (rows shared)", "MaxPool", 12, 1, 1, {0}, {4}, {{1, 3, 39, 39}}, "kernel_shape=is:3,3;strides=is:2,2;ceil_mode=i:1", -1},
    {"MaxPool 1x2x9x40 k3 s2 p1 (left pad in vectors)", "MaxPool", 12, 1, 1, {0}, {4}, {{1, 2, 9, 40}}, "kernel_shape=is:3,3;strides=is:2,2;pads=is:1,1,1,1", -1},
    {"AveragePool 1x2x9x37 k2x3 s2 incl pad", "AveragePool", 19, 1, 1, {0}, {4}, {{1, 2, 9, 37}}, "kernel_shape=is:2,3;strides=is:2,2;pads=is:0,1,1,1;count_include_pad=i:1", -1},
    {"GlobalAveragePool 2x5x7x9", "GlobalAveragePool", 1, 1, 1, {0}, {4}, {{2, 5, 7, 9}}, NULL, -1},
    {"GlobalMaxPool 1x3x33x33", "GlobalMaxPool", 1, 1, 1, {0}, {4}, {{1, 3, 33, 33}}, NULL, -1},
    {"GlobalLpPool 1x4x5x3", "GlobalLpPool", 2, 1, 1, {0}, {4}, {{1, 4, 5, 3}}, "p=i:2", -1},
    {"double GlobalAveragePool 1x3x10x10", "GlobalAveragePool", 1, 1, 1, {D}, {4}, {{1, 3, 10, 10}}, NULL, -1},
    /* gpool's default vectors of 8 do not fit these: planes of 4, and an
     * integer type (pool_fwd, one element at a time) */
    {"GlobalAveragePool 2x5x2x2 (plane < PL_VW)", "GlobalAveragePool", 1, 1, 1, {0}, {4}, {{2, 5, 2, 2}}, NULL, -1, 0, 1},
    {"GlobalMaxPool int8 1x3x7x5", "GlobalMaxPool", 1, 1, 1, {KILN_DT_INT8}, {4}, {{1, 3, 7, 5}}, NULL, -1, 0, 1},
    /* eltwise */
    {"Add 3x37 + 37", "Add", 14, 2, 1, {0}, {2, 1}, {{3, 37}, {37}}, NULL, -1},
    {"Mul 2x3x5 * 2x1x5", "Mul", 14, 2, 1, {0}, {3, 3}, {{2, 3, 5}, {2, 1, 5}}, NULL, -1},
    {"Sub 1001 - 1001", "Sub", 14, 2, 1, {0}, {1, 1}, {{1001}, {1001}}, NULL, -1},
    {"Relu 1001", "Relu", 14, 1, 1, {0}, {1}, {{1001}}, NULL, -1},
    {"Sigmoid 7x9", "Sigmoid", 13, 1, 1, {0}, {2}, {{7, 9}}, NULL, -1},
    {"Clip 123", "Clip", 6, 1, 1, {0}, {1}, {{123}}, "min=f:-0.5;max=f:0.75", -1},
    {"Where 5x1 ? 5x7 : 7", "Where", 16, 3, 1, {B, 0, 0}, {2, 2, 1}, {{5, 1}, {5, 7}, {7}}, NULL, 0},
    {"Sum of three 3x13", "Sum", 13, 3, 1, {0}, {2, 2, 1}, {{3, 13}, {3, 13}, {13}}, NULL, -1},
    {"Mean of three 2x11", "Mean", 13, 3, 1, {0}, {2, 2, 2}, {{2, 11}, {1, 11}, {2, 1}}, NULL, -1},
    {"Add int32 3x7", "Add", 14, 2, 1, {I32, I32}, {2, 2}, {{3, 7}, {3, 7}}, NULL, -1},
    /* gemm, conv, attention: their solvers in depth in gemm_params, conv_params, attention_test */
    {"MatMul 5x33 @ 33x17", "MatMul", 13, 2, 1, {0}, {2, 2}, {{5, 33}, {33, 17}}, NULL, -1},
    {"Conv 1x3x9x7 k3 (computed weights)", "Conv", 11, 2, 1, {0}, {4, 4}, {{1, 3, 9, 7}, {4, 3, 3, 3}}, "pads=is:1,1,1,1", -1},
    /* their fp16-storage variants (--half only): every solver the conv
     * family offers these shapes (constant weights: 1x1, im2col, panel,
     * Winograd wino/winop/winop4, depthwise dw/dwv, dirv) and the gemm family's
     * packed constant B */
    {"Conv 1x8x10x9 k3 const w+b (Winograd)", "Conv", 11, 3, 1, {0}, {4, 4, 1}, {{1, 8, 10, 9}, {12, 8, 3, 3}, {12}}, "pads=is:1,1,1,1", -1, 6},
    /* rows of 17 tiles: winop4's input transform loads 8 tiles' rows whole (wino4_in_p) */
    {"Conv 1x3x10x70 k3 const w+b (Winograd rows)", "Conv", 11, 3, 1, {0}, {4, 4, 1}, {{1, 3, 10, 70}, {5, 3, 3, 3}, {5}}, NULL, -1, 6},
    {"Conv stem 1x3x15x37 k7 s2 const w+b (dirv)", "Conv", 11, 3, 1, {0}, {4, 4, 1}, {{1, 3, 15, 37}, {20, 3, 7, 7}, {20}},
     "strides=is:2,2;pads=is:3,3,3,3", -1, 6},
    {"Conv 1x16x7x9 1x1 const w", "Conv", 11, 2, 1, {0}, {4, 4}, {{1, 16, 7, 9}, {10, 16, 1, 1}}, NULL, -1, 2},
    {"Conv 1x8x9x11 1x1 s2 const w+b", "Conv", 11, 3, 1, {0}, {4, 4, 1}, {{1, 8, 9, 11}, {8, 8, 1, 1}, {8}}, "strides=is:2,2", -1, 6},
    {"Conv depthwise 1x6x11x13 k3 s2 const", "Conv", 11, 3, 1, {0}, {4, 4, 1}, {{1, 6, 11, 13}, {6, 1, 3, 3}, {6}},
     "group=i:6;strides=is:2,2;pads=is:1,1,1,1", -1, 6},
    {"Gemm 5x19 @ (13x19)^T + bias const B", "Gemm", 13, 3, 1, {0}, {2, 2, 1}, {{5, 19}, {13, 19}, {13}}, "transB=i:1", -1, 6},
    {"ConvTranspose 1x4x5x5 k3 s2", "ConvTranspose", 11, 3, 1, {0}, {4, 4, 1}, {{1, 4, 5, 5}, {4, 3, 3, 3}, {3}}, "strides=is:2,2", -1, 6},
    {"Resize 1x3x5x7 linear x2", "Resize", 13, 3, 1, {0}, {4, 1, 1}, {{1, 3, 5, 7}, {0}, {4}}, "mode=s:linear", -1, 6},
    {"Resize 1x3x5x11 nearest x2", "Resize", 13, 3, 1, {0}, {4, 1, 1}, {{1, 3, 5, 11}, {0}, {4}}, NULL, -1, 6},
    {"KilnAttention 2x5x8, Skv 7, Dv 4", "KilnAttention", 1, 3, 1, {0}, {3, 3, 3}, {{2, 5, 8}, {2, 8, 7}, {2, 7, 4}}, "kiln_scale=f:0.35", -1},
    /* ops without tunable parameters: their fp16-storage variants (--half only) */
    {"Transpose 3x5x7 perm 2,0,1", "Transpose", 13, 1, 1, {0}, {3}, {{3, 5, 7}}, "perm=is:2,0,1", -1},
    {"Transpose 2x24x19 perm 0,2,1 (tiles)", "Transpose", 13, 1, 1, {0}, {3}, {{2, 24, 19}}, "perm=is:0,2,1", -1},
    {"Concat 2x3 ++ 2x5 axis 1", "Concat", 13, 2, 1, {0}, {2, 2}, {{2, 3}, {2, 5}}, "axis=i:1", -1},
    {"Split 2x8 axis 1 in 2", "Split", 11, 1, 2, {0}, {2}, {{2, 8}}, "axis=i:1", -1},
    {"DepthToSpace 1x8x3x5 b2", "DepthToSpace", 13, 1, 1, {0}, {4}, {{1, 8, 3, 5}}, "blocksize=i:2", -1},
    {"Cast float to int32 37", "Cast", 13, 1, 1, {0}, {1}, {{37}}, "to=i:6", -1},
    {"KilnCast 1001 to fp16", "KilnCast", 1, 1, 1, {0}, {1}, {{1001}}, NULL, -1},
    {"KilnCast 3x77 to fp32", "KilnCast", 1, 1, 1, {0}, {2}, {{3, 77}}, NULL, -1},
  };
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    if ((cases[i].dtype[0] == D && !dev->has_fp64) || !sc_selected(cases[i].label)) continue;
    const kiln_op_def *od = kiln_op_lookup("", cases[i].op);
    if (!sc_half && od && (!od->tunable || !strcmp(cases[i].op, "Cast") || cases[i].consts)) continue; /* the fixed cases: their fp16 variants only */
    run_case(&cases[i]);
  }
  if (sc_nonly == 0 && !sc_half && sc_check(true, false)) fails++;
  printf("%d parameter vectors run, %d cases failed\n", runs, fails);
  kiln_device_close(dev);
  return fails ? 1 : 0;
}
