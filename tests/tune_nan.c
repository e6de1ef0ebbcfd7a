/* tune_nan.c: the tuner rejects candidates whose output has NaN or Inf
 * where the CPU reference is finite, and records them with status "nan".
 *
 * A MatMul (13x17 @ 17x19, family "gemm") is tuned exhaustively over 8
 * candidates. The test swaps the node's op for a copy whose device function
 * runs the real kernel and then, for some candidates (chosen from a hash of
 * the parameter vector), overwrites one element of the output: the last one
 * with NaN, or the first one with +Inf. It then checks, over the records the
 * tuner stored: every poisoned vector has status "nan" and counts as
 * rejected; every other vector is "ok" (or "slow"); the best record is an unpoisoned
 * one; the default vector (never poisoned) is among the ok ones. The other
 * half of the rule ("where the reference does not") is checked on
 * kiln__tune_output_error directly, since a MatMul of finite inputs has a
 * finite reference: NaN on the device where the reference holds NaN too is
 * no error.
 * Exit 0 = pass, 1 = fail, 77 = skipped (no OpenCL device). */
#include "kiln_internal.h"
#include "kiln_db.h"
#include "onnx.pb-c.h"
#include <math.h>
#include <unistd.h>

#define SKIP 77
#define M 13
#define K 17
#define N 19

static int fails;
#define CHECK(c, ...) do { if (!(c)) { fails++; printf("FAIL: " __VA_ARGS__); printf("\n"); } } while (0)

static const kiln_op_def *real_op;
static kiln_op_def poison_op;
static kiln_tunable tun; /* the node's tunable description (parameter names) */

/* 0: leave alone, 1: NaN in the last element, 2: +Inf in the first */
static int poison_kind(const int *p) {
  int dflt = 1;
  for (int i = 0; i < tun.nparams; i++) if (p[i] != tun.params[i].dflt) dflt = 0;
  if (dflt) return 0;
  uint32_t h = 2166136261u;
  for (int i = 0; i < tun.nparams; i++) { h ^= (uint32_t)p[i]; h *= 16777619u; }
  return (int)(h % 3);
}

static int poison_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  int rc = real_op->dev(x, n, err);
  if (rc || !x->ov_params || x->ov_node != (int)(n - x->g->nodes)) return rc;
  int kind = poison_kind(x->ov_params);
  if (!kind) return 0;
  kiln_value *y = kiln_out(x->g, n, 0);
  float v = kind == 1 ? NAN : INFINITY;
  size_t off = kind == 1 ? kiln_value_bytes(y) - sizeof v : 0;
  cl_int e = clEnqueueWriteBuffer(x->d->q, y->buf, CL_TRUE, off, sizeof v, &v, 0, NULL, NULL);
  return e == CL_SUCCESS ? 0 : kiln__err(err, KILN_ECL, "poisoning the output: %d", (int)e);
}

static int write_model(const char *path) {
  Onnx__TypeProto tp[3];
  Onnx__TypeProto__Tensor tt[3];
  Onnx__TensorShapeProto sh[3];
  Onnx__TensorShapeProto__Dimension dv[3][2], *dp[3][2];
  Onnx__ValueInfoProto vi[3], *pin[2], *pout[1];
  const char *names[3] = {"a", "b", "y"};
  int64_t dims[3][2] = {{M, K}, {K, N}, {M, N}};
  for (int i = 0; i < 3; i++) {
    onnx__type_proto__init(&tp[i]);
    onnx__type_proto__tensor__init(&tt[i]);
    onnx__tensor_shape_proto__init(&sh[i]);
    for (int k = 0; k < 2; k++) {
      onnx__tensor_shape_proto__dimension__init(&dv[i][k]);
      dv[i][k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dv[i][k].dim_value = dims[i][k];
      dp[i][k] = &dv[i][k];
    }
    sh[i].n_dim = 2;
    sh[i].dim = dp[i];
    tt[i].has_elem_type = 1;
    tt[i].elem_type = KILN_DT_FLOAT;
    tt[i].shape = &sh[i];
    tp[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp[i].tensor_type = &tt[i];
    onnx__value_info_proto__init(&vi[i]);
    vi[i].name = (char *)names[i];
    vi[i].type = &tp[i];
  }
  pin[0] = &vi[0]; pin[1] = &vi[1]; pout[0] = &vi[2];
  Onnx__NodeProto np = ONNX__NODE_PROTO__INIT, *pnp = &np;
  char *ins[2] = {"a", "b"}, *outs[1] = {"y"};
  np.name = "mm";
  np.op_type = "MatMul";
  np.n_input = 2; np.input = ins;
  np.n_output = 1; np.output = outs;
  Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
  gp.name = "tune_nan";
  gp.n_node = 1; gp.node = &pnp;
  gp.n_input = 2; gp.input = pin;
  gp.n_output = 1; gp.output = pout;
  return kiln__onnx_write_graph(path, &gp, 13, "kiln tune_nan", NULL) ? -1 : 0;
}

typedef struct { int n, nan, ok, other, bad; } tally;
static void each_rec(const kiln_record *r, void *ctx) {
  tally *t = ctx;
  int p[KILN_MAX_KPARAMS];
  t->n++;
  if (kiln_tunable_parse(&tun, r->params, p) != 0) { t->bad++; printf("FAIL: record params '%s' do not parse\n", r->params); return; }
  int kind = poison_kind(p);
  /* "slow": measured fine, stopped early as much slower than the best */
  int passed = !strcmp(r->status, "ok") || !strcmp(r->status, "slow");
  if (!strcmp(r->status, "nan")) t->nan++;
  else if (passed) t->ok++;
  else t->other++;
  int want_nan = kind != 0;
  if (want_nan != !strcmp(r->status, "nan") || (!want_nan && !passed)) {
    t->bad++;
    printf("FAIL: [%s] poisoned=%d recorded status '%s' (max_err %g)\n", r->params, kind, r->status, r->max_err);
  } else {
    printf("  [%s] %s%s\n", r->params, r->status, kind == 1 ? " (NaN injected)" : kind == 2 ? " (Inf injected)" : "");
  }
}

int main(void) {
  char dir[] = "/tmp/kiln-tune-nan.XXXXXX";
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
  char model[256], dbpath[256];
  snprintf(model, sizeof model, "%s/mm.onnx", dir);
  snprintf(dbpath, sizeof dbpath, "%s/tuning.db", dir);
  kiln_error err = {0};
  kiln_device *d = NULL;
  if (kiln_device_open(NULL, &d, &err) != 0) { printf("SKIP: no OpenCL device: %s\n", err.msg); rmdir(dir); return SKIP; }
  kiln_device_set_options(d, &(kiln_options){.cache_dir = "off"}, &err); /* no program cache */
  kiln_model *m = NULL;
  kiln_session *s = NULL;
  kiln_db *db = NULL;
  kiln_tensor *a = kiln_tensor_new(KILN_DT_FLOAT, 2, (int64_t[]){M, K}), *b = kiln_tensor_new(KILN_DT_FLOAT, 2, (int64_t[]){K, N});
  for (int i = 0; i < M * K; i++) ((float *)a->data)[i] = (float)((i * 7) % 11) / 5.0f - 1;
  for (int i = 0; i < K * N; i++) ((float *)b->data)[i] = (float)((i * 5) % 13) / 6.0f - 1;
  int rc = write_model(model);
  if (!rc) rc = kiln_model_load(model, NULL, &m, &err);
  if (!rc) rc = kiln_session_create(m, d, &s, &err);
  if (!rc) rc = kiln_session_set_input(s, "a", a, &err);
  if (!rc) rc = kiln_session_set_input(s, "b", b, &err);
  if (!rc) rc = kiln_db_open(dbpath, KILN_DB_CREATE, &db, &err);
  if (rc) { printf("FAIL: setup: %s\n", err.msg); return 1; }
  /* the MatMul node: swap its op for the poisoning copy */
  kiln_graph *g = m->g;
  kiln_node *mm = NULL;
  for (int i = 0; i < g->nnodes; i++) if (g->nodes[i].op && g->nodes[i].op->tunable) mm = &g->nodes[i];
  if (!mm || mm->op->tunable(g, mm, &tun) != 0) {
    /* shapes are inferred when the session plans: run once first */
    if ((rc = kiln_session_run(s, &err)) != 0) { printf("FAIL: run: %s\n", err.msg); return 1; }
    for (int i = 0; i < g->nnodes; i++) if (g->nodes[i].op && g->nodes[i].op->tunable) mm = &g->nodes[i];
    if (!mm || mm->op->tunable(g, mm, &tun) != 0) { printf("FAIL: no tunable MatMul node\n"); return 1; }
  }
  real_op = mm->op;
  poison_op = *real_op;
  poison_op.dev = poison_dev;
  mm->op = &poison_op;

  kiln_tune_options o = {.strategy = "exhaustive", .max_trials = 8, .seed = 1};
  kiln_tune_result *res = NULL;
  int nres = 0;
  if ((rc = kiln_tune(s, db, &o, &res, &nres, &err)) != 0) { printf("FAIL: kiln_tune: %s\n", err.msg); return 1; }
  CHECK(nres == 1, "%d tuned instances, want 1", nres);
  int64_t dev_id = 0;
  if ((rc = kiln_db_device(db, &d->info, &dev_id, &err)) != 0) { printf("FAIL: device row: %s\n", err.msg); return 1; }
  /* the instance as planned for the run (its key may differ from the
   * description before planning, e.g. packB) */
  CHECK(real_op->tunable(g, mm, &tun) == 0, "no tunable description after tuning");
  printf("instance key: %s / %s\n", tun.shape_key, tun.epilogue);
  tally t = {0};
  for (int i = 0; i < nres; i++) {
    printf("instance %s %s: %d trials, %d rejected, best [%s]\n", res[i].family, res[i].shape_key, res[i].trials, res[i].rejected, res[i].params);
    kiln_db_each_family(db, dev_id, tun.family, each_rec, &t, &err);
    CHECK(res[i].rejected == t.nan, "tuner counted %d rejected, %d records say nan", res[i].rejected, t.nan);
    int p[KILN_MAX_KPARAMS];
    CHECK(kiln_tunable_parse(&tun, res[i].params, p) == 0 && !poison_kind(p), "best vector [%s] is a poisoned one", res[i].params);
  }
  CHECK(t.bad == 0, "%d records with the wrong status", t.bad);
  CHECK(t.n >= 5, "only %d candidates measured", t.n);
  CHECK(t.nan >= 2, "only %d poisoned candidates (want >= 2 for the test to mean something)", t.nan);
  CHECK(t.ok >= 1, "no candidate passed");
  kiln_record best;
  if (kiln_db_best(db, dev_id, tun.family, tun.dtype, tun.shape_key, tun.epilogue, NULL, &best, &err) == 0) {
    int p[KILN_MAX_KPARAMS];
    CHECK(!strcmp(best.status, "ok") && kiln_tunable_parse(&tun, best.params, p) == 0 && !poison_kind(p), "the database's best record [%s] (%s) is poisoned",
          best.params, best.status);
  } else CHECK(0, "no best record: %s", err.msg);

  /* "where the reference does not": NaN on the device where the reference
   * is NaN too is not an error; where the reference is finite it is */
  {
    kiln_exec x = {.d = d, .g = g};
    kiln_value *y = kiln_out(g, mm, 0);
    size_t bytes = kiln_value_bytes(y);
    float *ref = calloc(bytes / 4, 4), *dv = calloc(bytes / 4, 4);
    void **host = calloc((size_t)g->nvals, sizeof *host);
    host[mm->out[0]] = ref;
    dv[3] = NAN;
    clEnqueueWriteBuffer(d->q, y->buf, CL_TRUE, 0, bytes, dv, 0, NULL, NULL);
    double e1 = kiln__tune_output_error(&x, mm, host, &err);
    ref[3] = NAN;
    double e2 = kiln__tune_output_error(&x, mm, host, &err);
    CHECK(!isfinite(e1), "NaN on the device vs a finite reference: error %g, want Inf", e1);
    CHECK(isfinite(e2) && e2 == 0, "NaN on the device where the reference is NaN: error %g, want 0", e2);
    free(ref); free(dv); free(host);
  }

  free(res);
  mm->op = real_op;
  kiln_db_close(db);
  kiln_session_free(s);
  kiln_model_free(m);
  kiln_device_close(d);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  unlink(model);
  unlink(dbpath);
  char p2[300];
  snprintf(p2, sizeof p2, "%s-wal", dbpath); unlink(p2);
  snprintf(p2, sizeof p2, "%s-shm", dbpath); unlink(p2);
  rmdir(dir);
  if (fails) { printf("tune_nan: %d failure(s)\n", fails); return 1; }
  printf("tune_nan: %d candidates, %d rejected as nan, %d ok\n", t.n, t.nan, t.ok);
  return 0;
}
