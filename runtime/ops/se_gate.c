/* ops/se_gate.c: the internal op KilnSEGate, written by the plan-time
 * squeeze-excite rewrite (passes.c fuse_se_gate) in place of
 * GlobalAveragePool -> Conv 1x1 -> Relu or SiLU -> Conv 1x1 -> Sigmoid:
 *
 *   Y[n, c, 0, 0] = sigmoid(B2[c] + sum_r W2[c, r, 0, 0] * act(B1[r] + sum_k W1[r, k, 0, 0] * mean(X[n, k])))
 *
 * Inputs: 0 X [N, C, H, W] (float32), 1 W1 [Cr, C, 1, 1], 2 B1 [Cr]
 * (optional), 3 W2 [C, Cr, 1, 1], 4 B2 [C] (optional), the weights
 * constant. Attribute kiln_act: "Relu" or "SiLU". Output [N, C, 1, 1].
 * CPU reference in double precision; device: kernels/se_gate.cl, one launch
 * where the unfused graph takes three (the gate's [N, C, 1, 1] values are
 * tiny: the launches and the gaps between them were most of its time).
 * X may come in NCHW16c (runtime/layout.c). Not tunable. */
#include "kiln_internal.h"
#include <math.h>

#define SE_WG 64
#define SE_CMAX KILN_SE_CMAX
#define SE_RMAX KILN_SE_RMAX

typedef struct {
  int64_t N, C, Cr, S;
  bool b1, b2, silu;
} se_geom;

static int se_geometry(kiln_graph *g, const kiln_node *n, se_geom *G, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *w1 = kiln_in(g, n, 1), *w2 = kiln_in(g, n, 3), *b1 = kiln_in(g, n, 2), *b2 = kiln_in(g, n, 4);
  if (n->nin != 5 || !x || !w1 || !w2) return kiln__err(err, KILN_EINVAL, "KilnSEGate takes X, W1, B1, W2, B2");
  if (x->dtype != KILN_DT_FLOAT || x->rank != 4) return kiln__err(err, KILN_EUNSUPPORTED, "KilnSEGate: X must be float32 of rank 4");
  G->N = x->dims[0];
  G->C = x->dims[1];
  G->S = x->dims[2] * x->dims[3];
  G->Cr = w1->rank == 4 ? w1->dims[0] : -1;
  if (w1->dtype != KILN_DT_FLOAT || w1->rank != 4 || w1->dims[1] != G->C || w1->dims[2] != 1 || w1->dims[3] != 1)
    return kiln__err(err, KILN_ESHAPE, "KilnSEGate: W1 must be [Cr, %lld, 1, 1]", (long long)G->C);
  if (w2->dtype != KILN_DT_FLOAT || w2->rank != 4 || w2->dims[0] != G->C || w2->dims[1] != G->Cr || w2->dims[2] != 1 || w2->dims[3] != 1)
    return kiln__err(err, KILN_ESHAPE, "KilnSEGate: W2 must be [%lld, %lld, 1, 1]", (long long)G->C, (long long)G->Cr);
  if (b1 && (b1->dtype != KILN_DT_FLOAT || kiln_value_numel(b1) != G->Cr)) return kiln__err(err, KILN_ESHAPE, "KilnSEGate: B1 must have Cr elements");
  if (b2 && (b2->dtype != KILN_DT_FLOAT || kiln_value_numel(b2) != G->C)) return kiln__err(err, KILN_ESHAPE, "KilnSEGate: B2 must have C elements");
  G->b1 = b1 != NULL;
  G->b2 = b2 != NULL;
  const char *act = kiln_attr_str(n, "kiln_act", "Relu");
  if (strcmp(act, "Relu") && strcmp(act, "SiLU")) return kiln__err(err, KILN_EINVAL, "KilnSEGate: kiln_act '%s' is neither Relu nor SiLU", act);
  G->silu = !strcmp(act, "SiLU");
  return 0;
}

static int se_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  se_geom G;
  int rc = se_geometry(g, n, &G, err);
  if (rc) return rc;
  int64_t d[4] = {G.N, G.C, 1, 1};
  kiln_set_out(g, n, 0, KILN_DT_FLOAT, 4, d);
  return 0;
}

static int se_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  se_geom G;
  int rc = se_geometry(g, n, &G, err);
  if (rc) return rc;
  const float *x = in[0], *w1 = in[1], *b1 = in[2], *w2 = in[3], *b2 = in[4];
  float *y = out[0];
  double *m = malloc(sizeof(double) * (size_t)(G.C + G.Cr + 1)), *h = m ? m + G.C : NULL;
  if (!m) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int64_t b = 0; b < G.N; b++) {
    for (int64_t c = 0; c < G.C; c++) {
      double a = 0;
      for (int64_t j = 0; j < G.S; j++) a += x[(b * G.C + c) * G.S + j];
      m[c] = G.S ? a / (double)G.S : 0;
    }
    for (int64_t r = 0; r < G.Cr; r++) {
      double a = G.b1 ? b1[r] : 0;
      for (int64_t c = 0; c < G.C; c++) a += (double)w1[r * G.C + c] * m[c];
      h[r] = G.silu ? a / (1 + exp(-a)) : (a < 0 ? 0 : a);
    }
    for (int64_t c = 0; c < G.C; c++) {
      double a = G.b2 ? b2[c] : 0;
      for (int64_t r = 0; r < G.Cr; r++) a += (double)w2[c * G.Cr + r] * h[r];
      y[b * G.C + c] = (float)(1 / (1 + exp(-a)));
    }
  }
  free(m);
  return 0;
}

static int se_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  se_geom G;
  int rc = se_geometry(g, n, &G, err);
  if (rc) return rc;
  if (G.C > SE_CMAX || G.Cr > SE_RMAX) return kiln__err(err, KILN_EUNSUPPORTED, "KilnSEGate: at most %d channels and %d hidden values", SE_CMAX, SE_RMAX);
  if (!kiln_in(g, n, 1)->is_const || !kiln_in(g, n, 3)->is_const) return kiln__err(err, KILN_EUNSUPPORTED, "KilnSEGate: the weights must be constant");
  return 0;
}

static int se_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_graph *g = x->g;
  se_geom G;
  int rc = se_geometry(g, n, &G, err);
  if (rc) return rc;
  if (!G.N) return 0;
  kiln_value *xv = kiln_in(g, n, 0), *w2 = kiln_in(g, n, 3);
  if (xv->blk && (xv->blk != 16 || G.C % 16)) return kiln__err(err, KILN_EINTERNAL, "KilnSEGate: an input in blocks of %d", xv->blk);
  /* W2 transposed to [Cr][C]: the gate's 16 channels of one hidden value a vector */
  size_t wb = sizeof(float) * (size_t)(G.C * G.Cr);
  cl_mem w2t = n->param[0] && n->param_bytes[0] == wb ? n->param[0] : NULL; /* constant weights: once a plan */
  if (!w2t) {
    float *t = malloc(wb ? wb : 1);
    if (!t) return kiln__err(err, KILN_ENOMEM, "out of memory");
    const float *w = w2->data;
    for (int64_t c = 0; c < G.C; c++)
      for (int64_t r = 0; r < G.Cr; r++) t[r * G.C + c] = w[c * G.Cr + r];
    w2t = kiln_exec_param(x, n, 0, t, wb, err);
    free(t);
    if (!w2t) return err->status;
  }
  char opts[400];
  kiln_cl_type_opts(KILN_DT_FLOAT, opts, sizeof opts);
  size_t o = strlen(opts);
  snprintf(opts + o, sizeof opts - o, " -DSE_WG=%d -DSE_CMAX=%lld -DSE_RMAX=%lld%s%s", SE_WG, (long long)(G.C + 15) / 16 * 16, (long long)(G.Cr > 0 ? G.Cr : 1),
           G.silu ? " -DSE_SILU=1" : "", xv->blk ? " -DSE_B16=1" : "");
  cl_kernel k = kiln_cl_kernel(x->d, "se_gate.cl", opts, "se_gate", err);
  if (!k) return err->status;
  cl_mem bx = kiln_in_buf(x, n, 0), bw1 = kiln_in_buf(x, n, 1), by = kiln_out_buf(x, n, 0);
  cl_mem bb1 = G.b1 ? kiln_in_buf(x, n, 2) : bw1, bb2 = G.b2 ? kiln_in_buf(x, n, 4) : bw1; /* absent: any buffer, not read */
  cl_long S = G.S;
  cl_int C = (cl_int)G.C, Cr = (cl_int)G.Cr, flags = (G.b1 ? 1 : 0) | (G.b2 ? 2 : 0);
  if (kiln_cl_args(k, err, KARG(bx), KARG(bw1), KARG(bb1), KARG(w2t), KARG(bb2), KARG(by), KARG(S), KARG(C), KARG(Cr), KARG(flags), KEND)) return err->status;
  size_t gws = (size_t)G.N * SE_WG, lws = SE_WG;
  return kiln_exec_launch(x, k, 1, &gws, &lws, err);
}

const kiln_op_def kiln_ops_se_gate[] = {
  {.name = "KilnSEGate", .infer = se_infer, .ref = se_ref, .dev = se_dev, .dev_check = se_check},
  {NULL},
};
