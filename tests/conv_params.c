/* conv_params.c: correctness of the tunable Conv (family "conv") across its
 * algorithms and parameter space, not only at the defaults. For a spread of
 * shapes (edge tiles, odd sizes, N > 1, strides, asymmetric pads, dilations,
 * groups, depthwise with rows wide enough for whole vectors, 1x1 with and
 * without stride, 3x3 stride 1 for Winograd, 1-D and 3-D, bias or not,
 * constant or computed weights, float and double, the input scaled per image
 * and channel as the squeeze-excite pattern leaves a 1x1 Conv) each node runs on the device with forced parameter vectors
 * (the tuner's override, kiln_exec.ov_params): every solver of the conv
 * family's registry (kernels/conv.c) that applies to the shape, each with
 * every value of the parameters it reads (tests/solver_cover.h), and is
 * compared with the CPU reference: max |dev - ref| <= 1e-4 * max |ref| +
 * 1e-5. The node's state is kept between vectors, as in a tuning run, so
 * repacking of the weights is exercised too. Fails too when a registered
 * solver ran for no case. Exit 0 = pass, 1 = fail, 77 = skipped. */
#include "kiln_internal.h"
#include "cl_defaults.h"
#include "conv.h"


static kiln_device *dev;
static uint64_t rng = 0x5eed;
static int fails, runs;

#include "test_rng.h"
#include "solver_cover.h"

typedef struct {
  const char *label;
  int dtype, nsp;
  int64_t n, c, m, in[3], k[3];
  int64_t s[3], d[3], pads[6]; /* per spatial dim; zeros mean 1 for s and d */
  int64_t group;
  int bias, wconst;
  int xscale; /* input 3: X scaled per (n, c) (internal attribute kiln_xscale, runtime/passes.c) */
  int blk;    /* bit 0: the input, bit 1: the output blocked (kiln_value.blk, runtime/layout.c) in blocks of 16; bit 2, 3: of 8 instead */
} conv_case;

static void run_case(const conv_case *cc) {
  if (!sc_selected(cc->label)) return;
  kiln_graph g = {0};
  kiln_node n = {0};
  kiln_error err = {0};
  int ns = cc->nsp;
  int64_t st[3], dl[3], pads[6];
  for (int i = 0; i < ns; i++) { st[i] = cc->s[i] ? cc->s[i] : 1; dl[i] = cc->d[i] ? cc->d[i] : 1; }
  for (int i = 0; i < 2 * ns; i++) pads[i] = cc->pads[i];
  kiln_attr attrs[5] = {{.name = "strides", .type = KILN_ATTR_INTS, .n = ns, .ints = st},
                        {.name = "dilations", .type = KILN_ATTR_INTS, .n = ns, .ints = dl},
                        {.name = "pads", .type = KILN_ATTR_INTS, .n = 2 * ns, .ints = pads},
                        {.name = "group", .type = KILN_ATTR_INT, .i = cc->group},
                        {.name = "kiln_xscale", .type = KILN_ATTR_INT, .i = 1}};
  n.name = (char *)cc->label;
  n.op_type = "Conv";
  n.domain = "";
  n.opset = 13;
  n.nin = cc->xscale ? 4 : cc->bias ? 3 : 2;
  n.nout = 1;
  int in[4] = {-1, -1, -1, -1}, out[1];
  n.in = in;
  n.out = out;
  n.attrs = attrs;
  n.nattr = cc->xscale ? 5 : 4;
  n.op = kiln_op_lookup("", "Conv");
  g.nodes = &n; /* the override (kiln_exec.ov_node 0) is matched by node index */
  g.nnodes = 1;
  const char *names[4] = {"x", "w", "b", "s"};
  for (int i = 0; i < n.nin; i++) {
    if (i == 2 && !cc->bias) continue;
    in[i] = kiln_graph_add_value(&g, names[i]);
    kiln_value *v = &g.vals[in[i]];
    v->dtype = cc->dtype;
    if (i == 0) {
      v->rank = 2 + ns;
      v->dims[0] = cc->n;
      v->dims[1] = cc->c;
      for (int a = 0; a < ns; a++) v->dims[2 + a] = cc->in[a];
    } else if (i == 1) {
      v->rank = 2 + ns;
      v->dims[0] = cc->m;
      v->dims[1] = cc->c / cc->group;
      for (int a = 0; a < ns; a++) v->dims[2 + a] = cc->k[a];
      v->is_const = cc->wconst;
    } else if (i == 2) {
      v->rank = 1;
      v->dims[0] = cc->m;
      v->is_const = 1;
    } else { /* the scale, computed: [N, C, 1.., 1] */
      v->rank = 2 + ns;
      v->dims[0] = cc->n;
      v->dims[1] = cc->c;
      for (int a = 0; a < ns; a++) v->dims[2 + a] = 1;
    }
    int64_t ne = kiln_value_numel(v);
    v->data = malloc(kiln_value_bytes(v) + 8);
    for (int64_t k = 0; k < ne; k++) kiln_store_f(v->data, v->dtype, k, unif());
  }
  out[0] = kiln_graph_add_value(&g, "y");
  void **host = calloc((size_t)g.nvals, sizeof(void *));
  int tested = 0, bad = 0, algos = 0;
  if (n.op->infer(&g, &n, &err) || n.op->dev_check(&g, &n, &err) || kiln_node_run_ref_host(&g, &n, host, &err)) {
    printf("FAIL %-34s setup: %s\n", cc->label, err.msg);
    fails++;
    goto done;
  }
  g.vals[in[0]].blk = cc->blk & 1 ? (cc->blk & 4 ? 8 : 16) : 0;
  g.vals[out[0]].blk = cc->blk & 2 ? (cc->blk & 8 ? 8 : 16) : 0;
  if (sc_upload(dev, &g, &err)) { printf("FAIL %s setup: %s\n", cc->label, err.msg); fails++; goto done; }
  /* a non-constant weight keeps its host copy only for the reference */
  if (!cc->wconst) { free(g.vals[in[1]].data); g.vals[in[1]].data = NULL; }
  kiln_tunable t;
  if (!n.op->tunable || n.op->tunable(&g, &n, &t)) { printf("FAIL %-34s no tunable descriptor\n", cc->label); fails++; goto done; }
  if (cl_defaults_check(&t, cc->label)) fails++;
  int dflt[KILN_MAX_KPARAMS];
  for (int i = 0; i < t.nparams; i++) dflt[i] = t.params[i].dflt;
  if (t.valid(&t, dflt, &dev->info)) { printf("FAIL %-34s defaults are not valid\n", cc->label); fails++; goto done; }
  /* valid for the instance itself: the run refuses anything else */
  bad = sc_run_all(dev, &g, &n, host, &t, &t, &dev->info, cc->label, &tested, &algos);
  runs += tested;
  if (bad) fails++;
  printf("%s %-34s %d parameter vectors, %d algorithms\n", bad ? "FAIL" : "ok  ", cc->label, tested, algos);
done:
  sc_free_graph(&g, &n, host);
}

int main(int argc, char **argv) {
  int rc = sc_start(argc, argv, &dev);
  if (rc) return rc;
  const int F = KILN_DT_FLOAT, D = KILN_DT_DOUBLE;
  /* label, dtype, nsp, N, C, M, in, k, strides, dilations, pads, group, bias, wconst */
  const conv_case cases[] = {
    {"3x3 s1 p1 edge tiles", F, 2, 1, 3, 5, {9, 11}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"3x3 s1 p0 N=2 no bias", F, 2, 2, 8, 12, {7, 13}, {3, 3}, {0}, {0}, {0}, 1, 0, 1},
    {"3x3 s1 p1 C=32 M=40", F, 2, 1, 32, 40, {20, 19}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"3x3 s2 p1", F, 2, 1, 6, 10, {10, 10}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"3x3 dil 2 p2", F, 2, 1, 4, 6, {9, 9}, {3, 3}, {0}, {2, 2}, {2, 2, 2, 2}, 1, 1, 1},
    {"1x1 s1", F, 2, 1, 8, 9, {11, 7}, {1, 1}, {0}, {0}, {0}, 1, 1, 1},
    {"1x1 s1 N=3 no bias", F, 2, 3, 17, 33, {5, 5}, {1, 1}, {0}, {0}, {0}, 1, 0, 1},
    {"1x1 s2", F, 2, 1, 16, 20, {9, 9}, {1, 1}, {2, 2}, {0}, {0}, 1, 1, 1},
    /* panel's conv_pw: rows split over work-items in parts that are not
     * multiples of its register block (120 rows), a partial last column
     * block (169 pixels), and groups */
    {"1x1 s1 C=40 M=120 13x13", F, 2, 1, 40, 120, {13, 13}, {1, 1}, {0}, {0}, {0}, 1, 1, 1},
    {"1x1 s1 grouped N=2", F, 2, 2, 12, 18, {6, 7}, {1, 1}, {0}, {0}, {0}, 3, 1, 1},
    {"1x1 s2x3 grouped", F, 2, 2, 12, 8, {10, 11}, {1, 1}, {2, 3}, {0}, {0}, 4, 1, 1},
    {"3x3 group 2 p1", F, 2, 1, 8, 6, {8, 8}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 2, 1, 1},
    {"depthwise 3x3 s1 p1", F, 2, 1, 12, 12, {15, 13}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 12, 1, 1},
    {"depthwise 3x3 s2 p1 N=2", F, 2, 2, 7, 7, {14, 9}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 7, 0, 1},
    {"depthwise 5x5 s2 p2 wide", F, 2, 1, 5, 5, {7, 45}, {5, 5}, {2, 2}, {0}, {2, 2, 1, 2}, 5, 1, 1},
    {"depthwise 3x3 s3 dil 2 p3", F, 2, 1, 4, 4, {11, 37}, {3, 3}, {3, 3}, {2, 2}, {3, 1, 3, 2}, 4, 1, 1},
    {"7x7 s2 p3", F, 2, 1, 3, 8, {23, 23}, {7, 7}, {2, 2}, {0}, {3, 3, 3, 3}, 1, 1, 1},
    {"2x3 asymmetric pads", F, 2, 1, 5, 7, {8, 10}, {2, 3}, {0}, {0}, {0, 1, 1, 2}, 1, 1, 1},
    {"1x1 C=1 M=1 1x1 image", F, 2, 1, 1, 1, {1, 1}, {1, 1}, {0}, {0}, {0}, 1, 1, 1},
    {"3x3 s1 p1 C=1 M=1", F, 2, 1, 1, 1, {5, 6}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 0, 1},
    {"1-D k3 s1 p1", F, 1, 2, 4, 6, {20}, {3}, {0}, {0}, {1, 1}, 1, 1, 1},
    {"3-D 2x2x2", F, 3, 1, 2, 3, {4, 5, 6}, {2, 2, 2}, {0}, {0}, {0}, 1, 1, 1},
    {"3x3 s1 p1 computed weights", F, 2, 1, 6, 10, {9, 9}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 0},
    {"3x3 s2 M=2 computed weights", F, 2, 1, 3, 2, {8, 9}, {3, 3}, {2, 2}, {0}, {1, 0, 1, 1}, 1, 0, 0},
    {"1x1 C=8 M=1", F, 2, 1, 8, 1, {6, 7}, {1, 1}, {0}, {0}, {0}, 1, 1, 1},
    {"3x3 s1 C=4 M=1 wide", F, 2, 1, 4, 1, {3, 40}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"double 3x3 s1 p1", D, 2, 1, 5, 7, {9, 8}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    {"double 1x1 s2", D, 2, 1, 6, 5, {7, 7}, {1, 1}, {2, 2}, {0}, {0}, 1, 0, 1},
    /* dwr's interior (whole vectors of 16 and 4 along rows of 70 and 75),
     * its row blocks past OH (13 rows in blocks of 2 and 4), stride 2 */
    {"depthwise 3x3 s1 p1 wide rows", F, 2, 1, 3, 3, {13, 70}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 3, 1, 1},
    {"depthwise 3x3 s2 p1 wide rows N=2", F, 2, 2, 4, 4, {15, 75}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 4, 1, 1},
    {"depthwise 5x5 s1 p2 no bias", F, 2, 1, 2, 2, {9, 40}, {5, 5}, {0}, {0}, {2, 2, 2, 2}, 2, 0, 1},
    /* over 3x3 at stride 2 dwr loops over the window's rows (DWR_KH_LOOP) */
    {"depthwise 5x5 s2 p2 rows as a loop", F, 2, 1, 3, 3, {13, 45}, {5, 5}, {2, 2}, {0}, {2, 2, 2, 2}, 3, 1, 1},
    {"double depthwise 3x3 s2 p1 wide", D, 2, 1, 3, 3, {9, 70}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 3, 1, 1},
    /* dirv (the stems): whole vectors of 16 along rows of 61 and 57 at
     * stride 2, channel blocks past M (20 and 24 in blocks of 16), N=2 */
    {"stem 7x7 s2 p3 C=3 M=20 wide", F, 2, 1, 3, 20, {21, 121}, {7, 7}, {2, 2}, {0}, {3, 3, 3, 3}, 1, 1, 1},
    {"stem 3x3 s2 p1 C=3 M=24 N=2", F, 2, 2, 3, 24, {9, 113}, {3, 3}, {2, 2}, {0}, {0, 1, 1, 1}, 1, 0, 1},
    /* a stem-like 5x5 at stride 1 with uneven pads, rows of a whole and a
     * partial column block, two images */
    {"stem 5x5 s1 p2.1 C=4 M=16 N=2", F, 2, 2, 4, 16, {6, 35}, {5, 5}, {0}, {0}, {2, 1, 1, 2}, 1, 1, 1},
    {"5x5 s1 p2 C=3 M=6 (oclgrind)", F, 2, 1, 3, 6, {5, 41}, {5, 5}, {0}, {0}, {2, 2, 2, 2}, 1, 1, 1},
    {"3x3 s1 p1 C=16 M=40 wide (dirv's widest)", F, 2, 1, 16, 40, {7, 55}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1},
    /* winop4's input transform loading 8 tiles' rows whole (rows of 17
     * tiles, two tile rows inside the image: the first 16 tiles of each),
     * the rest element by element; N=2; and in double */
    {"3x3 s1 p0 wide rows N=2 (winop4's row loads)", F, 2, 2, 3, 5, {10, 70}, {3, 3}, {0}, {0}, {0}, 1, 1, 1},
    {"double 3x3 s1 p0 wide rows", D, 2, 1, 2, 3, {6, 38}, {3, 3}, {0}, {0}, {0}, 1, 0, 1},
    /* what dwr leaves to dw and dwv: more taps than it holds, and 3-D */
    {"depthwise 9x9 s1 p4", F, 2, 1, 3, 3, {12, 21}, {9, 9}, {0}, {0}, {4, 4, 4, 4}, 3, 1, 1},
    {"3-D depthwise 3x3x3 p1", F, 3, 1, 4, 4, {5, 6, 7}, {3, 3, 3}, {0}, {0}, {1, 1, 1, 1, 1, 1}, 4, 1, 1},
    /* the squeeze-excite gate read by conv_pw (panel on 1x1 stride 1) */
    {"1x1 s1 input scaled N=2", F, 2, 2, 24, 40, {9, 13}, {1, 1}, {0}, {0}, {0}, 1, 1, 1, 1},
    {"1x1 s1 input scaled no bias", F, 2, 1, 16, 20, {7, 7}, {1, 1}, {0}, {0}, {0}, 1, 0, 1, 1},
    {"double 1x1 s1 input scaled", D, 2, 1, 8, 6, {5, 9}, {1, 1}, {0}, {0}, {0}, 1, 1, 1, 1},
    /* NCHW16c values (runtime/layout.c): dw16 between them, dirc writing
     * and reading them (1x1 partial pixel blocks, channel panels past M,
     * the input scales, a padded stem writing) */
    {"depthwise 3x3 s1 p1 NCHW16c N=2", F, 2, 2, 32, 32, {9, 13}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 32, 1, 1, 0, 3},
    {"depthwise 3x3 s2 p1 NCHW16c no bias", F, 2, 1, 16, 16, {8, 37}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 16, 0, 1, 0, 3},
    {"depthwise 5x5 s2 p2 NCHW16c", F, 2, 1, 16, 16, {11, 21}, {5, 5}, {2, 2}, {0}, {2, 2, 2, 2}, 16, 1, 1, 0, 3},
    {"depthwise 7x7 s1 p3 NCHW16c 2x2", F, 2, 1, 16, 16, {2, 2}, {7, 7}, {0}, {0}, {3, 3, 3, 3}, 16, 1, 1, 0, 3},
    {"1x1 s1 NCHW16c in and out N=2", F, 2, 2, 32, 48, {7, 9}, {1, 1}, {0}, {0}, {0}, 1, 1, 1, 0, 3},
    {"1x1 s1 NCHW16c in M=24", F, 2, 1, 16, 24, {5, 13}, {1, 1}, {0}, {0}, {0}, 1, 1, 1, 0, 1},
    {"1x1 s1 NCHW16c in, input scaled", F, 2, 2, 32, 20, {6, 7}, {1, 1}, {0}, {0}, {0}, 1, 1, 1, 1, 1},
    {"1x1 s1 NCHW16c out C=24", F, 2, 1, 24, 32, {5, 11}, {1, 1}, {0}, {0}, {0}, 1, 0, 1, 0, 2},
    {"stem 3x3 s2 p1 NCHW16c out", F, 2, 1, 3, 32, {9, 17}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 1, 1, 1, 0, 2},
    /* dirc reading a padded copy of a blocked input (conv_pad in blocks) */
    {"3x3 s1 p1 NCHW16c in and out N=2", F, 2, 2, 32, 32, {7, 10}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1, 0, 3},
    {"3x3 s2 p1.0 NCHW16c in, NCHW out M=20", F, 2, 1, 16, 20, {9, 12}, {3, 3}, {2, 2}, {0}, {1, 0, 1, 1}, 1, 0, 1, 0, 1},
    /* winop4 reading and writing blocked values (wino4_in_p's WINO_INB,
     * wino4_out's WINO_OUTB): partial 4x4 tiles at the edges, one side
     * blocked, blocks of 8 */
    {"3x3 s1 p1 NCHW16c in and out, edge tiles", F, 2, 1, 16, 32, {9, 11}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1, 0, 3},
    {"3x3 s1 p1 NCHW16c out N=2", F, 2, 2, 8, 16, {6, 13}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1, 0, 2},
    {"3x3 s1 p0 NCHW16c in M=20 no bias", F, 2, 1, 16, 20, {10, 9}, {3, 3}, {0}, {0}, {0}, 1, 0, 1, 0, 1},
    {"3x3 s1 p1 NCHW8c in and out", F, 2, 1, 24, 16, {7, 7}, {3, 3}, {0}, {0}, {1, 1, 1, 1}, 1, 1, 1, 0, 15},
    /* blocks of 8 channels (the layout on devices with 8-wide vectors) */
    {"depthwise 3x3 s2 p1 NCHW8c", F, 2, 1, 24, 24, {9, 19}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 24, 1, 1, 0, 15},
    {"1x1 s1 NCHW8c in and out C=24 M=40", F, 2, 2, 24, 40, {5, 9}, {1, 1}, {0}, {0}, {0}, 1, 1, 1, 0, 15},
    {"1x1 s1 NCHW8c in, NCHW16c out", F, 2, 1, 24, 32, {7, 7}, {1, 1}, {0}, {0}, {0}, 1, 0, 1, 0, 7},
    {"1x1 s1 NCHW16c in, NCHW8c out", F, 2, 1, 32, 24, {6, 11}, {1, 1}, {0}, {0}, {0}, 1, 1, 1, 0, 11},
    {"stem 3x3 s2 p1 NCHW8c out", F, 2, 1, 3, 24, {9, 17}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}, 1, 1, 1, 0, 10},
    {"5x5 s1 p2 NCHW8c in and out", F, 2, 1, 16, 24, {6, 9}, {5, 5}, {0}, {0}, {2, 2, 2, 2}, 1, 1, 1, 0, 15},
  };
  for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
    if (cases[i].dtype == D && !dev->has_fp64) continue;
    run_case(&cases[i]);
  }
  if (sc_nonly == 0 && sc_check(false, true)) fails++;
  printf("%d parameter vectors run, %d cases failed\n", runs, fails);
  kiln_device_close(dev);
  return fails ? 1 : 0;
}
