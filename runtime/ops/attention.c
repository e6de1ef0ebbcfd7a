/* ops/attention.c: the internal op KilnAttention, written by the plan-time
 * attention rewrite (passes.c) in place of MatMul -> Softmax -> MatMul:
 *
 *   Y = transpose(softmax(scale * Q K^T + mask) V, o_perm)
 *
 * Inputs: 0 the source of Q, 1 the source of K^T, 2 the source of V, 3 the
 * additive mask (optional, broadcast to the scores' shape). Each source is
 * read through its transpose: the logical operand is transpose(input,
 * <x>_perm) (attributes q_perm, k_perm, v_perm; absent = identity), so the
 * Transpose nodes that fed the matrix products are not run. Logical shapes
 * follow MatMul: Q [.., S, D], K^T [.., D, Skv], V [.., Skv, Dv], batch
 * dimensions broadcast; O [.., S, Dv] is stored as transpose(O, o_perm).
 * Attribute kiln_scale (default 1) multiplies the scores.
 *
 * CPU reference: per row, the full softmax in double precision. Device:
 * kernels/attention.cl, tunable family "attention" (solvers rows and
 * blocked, kernels/attention.c). */
#include "kiln_internal.h"
#include "family.h"
#include <math.h>

#define AT_CL "attention.cl"
#define AT_MAXB 6    /* batch dimensions; matches ATT_MAXB in attention.cl */
#define AT_MAXD 1024 /* head dimensions (private arrays of the kernel) */
#define AT_META (3 + AT_MAXB + 5 * (AT_MAXB + 2))

enum { OP_Q, OP_K, OP_V, OP_M, OP_O };

/* Geometry of a node: sizes, the output batch dims and every operand's
 * strides over them (elements). */
typedef struct {
  int nb;                        /* batch dimensions of O */
  int64_t bdims[AT_MAXB];
  int64_t batch;                 /* product of bdims */
  int64_t S, Skv, D, Dv;
  int64_t st[5][AT_MAXB + 2];    /* per operand: batch strides, row stride, column stride */
  int orank;                     /* rank of the logical O */
  int64_t odims[KILN_MAX_RANK];  /* logical O */
  int64_t ydims[KILN_MAX_RANK];  /* the output: transpose(O, o_perm) */
  bool unit;                     /* every operand's column stride is 1 (vector loads) */
  bool mask;
} at_geom;

/* Logical dims and strides of transpose(x, perm attr) (perm absent: identity). */
static int logical(const kiln_node *n, const char *attr, const kiln_value *x, int64_t *dims, int64_t *st, kiln_error *err) {
  const int64_t *p = NULL;
  int np = kiln_attr_ints(n, attr, &p);
  int64_t xs[KILN_MAX_RANK];
  kiln_strides(x->rank, x->dims, xs);
  if (np >= 0 && np != x->rank) return kiln__err(err, KILN_ESHAPE, "%s has %d entries for rank %d", attr, np, x->rank);
  bool seen[KILN_MAX_RANK] = {false};
  for (int a = 0; a < x->rank; a++) {
    int s = np >= 0 ? (int)p[a] : a;
    if (s < 0 || s >= x->rank || seen[s]) return kiln__err(err, KILN_ESHAPE, "%s is not a permutation", attr);
    seen[s] = true;
    dims[a] = x->dims[s];
    st[a] = xs[s];
  }
  return 0;
}

/* Strides of a logical operand (rank r, dims d, strides s) over O's batch dims. */
static int batch_strides(const at_geom *G, int r, const int64_t *d, const int64_t *s, int64_t *out, const char *what, kiln_error *err) {
  for (int i = 0; i < G->nb; i++) {
    int a = i - (G->nb - (r - 2));
    if (a < 0 || d[a] == 1) out[i] = 0;
    else if (d[a] == G->bdims[i]) out[i] = s[a];
    else return kiln__err(err, KILN_ESHAPE, "%s batch dimension %lld does not broadcast to %lld", what, (long long)d[a], (long long)G->bdims[i]);
  }
  return 0;
}

static int at_geometry(kiln_graph *g, const kiln_node *n, at_geom *G, kiln_error *err) {
  memset(G, 0, sizeof *G);
  kiln_value *qx = kiln_in(g, n, 0), *kx = kiln_in(g, n, 1), *vx = kiln_in(g, n, 2), *mx = kiln_in(g, n, 3);
  if (!qx || !kx || !vx) return kiln__err(err, KILN_EINVAL, "needs Q, K^T and V");
  int64_t qd[KILN_MAX_RANK], qs[KILN_MAX_RANK], kd[KILN_MAX_RANK], ks[KILN_MAX_RANK], vd[KILN_MAX_RANK], vs[KILN_MAX_RANK];
  int rc;
  if ((rc = logical(n, "q_perm", qx, qd, qs, err)) || (rc = logical(n, "k_perm", kx, kd, ks, err)) || (rc = logical(n, "v_perm", vx, vd, vs, err))) return rc;
  int rq = qx->rank, rk = kx->rank, rv = vx->rank;
  if (rq < 2 || rk < 2 || rv < 2) return kiln__err(err, KILN_ESHAPE, "Q, K^T and V need rank >= 2");
  G->S = qd[rq - 2];
  G->D = qd[rq - 1];
  G->Skv = kd[rk - 1];
  G->Dv = vd[rv - 1];
  if (kd[rk - 2] != G->D) return kiln__err(err, KILN_ESHAPE, "Q has head dimension %lld, K^T %lld", (long long)G->D, (long long)kd[rk - 2]);
  if (vd[rv - 2] != G->Skv) return kiln__err(err, KILN_ESHAPE, "K has %lld keys, V %lld", (long long)G->Skv, (long long)vd[rv - 2]);
  /* O's batch: broadcast of the three operands' batch dims */
  int r = rq > rk ? rq : rk;
  if (rv > r) r = rv;
  G->nb = r - 2;
  if (G->nb > AT_MAXB) return kiln__err(err, KILN_EUNSUPPORTED, "%d batch dimensions (at most %d)", G->nb, AT_MAXB);
  G->batch = 1;
  for (int i = 0; i < G->nb; i++) {
    int64_t b = 1;
    const int64_t *ds[3] = {qd, kd, vd};
    const int rs[3] = {rq, rk, rv};
    for (int o = 0; o < 3; o++) {
      int a = i - (G->nb - (rs[o] - 2));
      if (a < 0 || ds[o][a] == 1) continue;
      if (b != 1 && ds[o][a] != b) return kiln__err(err, KILN_ESHAPE, "batch dimensions do not broadcast");
      b = ds[o][a];
    }
    G->bdims[i] = b;
    G->batch *= b;
  }
  if ((rc = batch_strides(G, rq, qd, qs, G->st[OP_Q], "Q", err)) || (rc = batch_strides(G, rk, kd, ks, G->st[OP_K], "K^T", err)) ||
      (rc = batch_strides(G, rv, vd, vs, G->st[OP_V], "V", err)))
    return rc;
  G->st[OP_Q][AT_MAXB] = qs[rq - 2];
  G->st[OP_Q][AT_MAXB + 1] = qs[rq - 1];
  G->st[OP_K][AT_MAXB] = ks[rk - 1]; /* key */
  G->st[OP_K][AT_MAXB + 1] = ks[rk - 2]; /* head dimension */
  G->st[OP_V][AT_MAXB] = vs[rv - 2];
  G->st[OP_V][AT_MAXB + 1] = vs[rv - 1];
  if (mx) { /* broadcast to [batch.., S, Skv] (right-aligned) */
    if (mx->rank > r) return kiln__err(err, KILN_ESHAPE, "mask rank %d exceeds the scores' rank %d", mx->rank, r);
    int64_t ms[KILN_MAX_RANK], full[KILN_MAX_RANK];
    kiln_strides(mx->rank, mx->dims, ms);
    for (int i = 0; i < G->nb; i++) full[i] = G->bdims[i];
    full[r - 2] = G->S;
    full[r - 1] = G->Skv;
    int64_t fst[KILN_MAX_RANK];
    for (int i = 0; i < r; i++) {
      int a = i - (r - mx->rank);
      if (a < 0 || mx->dims[a] == 1) fst[i] = 0;
      else if (mx->dims[a] == full[i]) fst[i] = ms[a];
      else return kiln__err(err, KILN_ESHAPE, "mask dimension %lld does not broadcast to %lld", (long long)mx->dims[a], (long long)full[i]);
    }
    for (int i = 0; i < G->nb; i++) G->st[OP_M][i] = fst[i];
    G->st[OP_M][AT_MAXB] = fst[r - 2];
    G->st[OP_M][AT_MAXB + 1] = fst[r - 1];
    G->mask = true;
  }
  /* O and the stored output */
  G->orank = r;
  for (int i = 0; i < G->nb; i++) G->odims[i] = G->bdims[i];
  G->odims[r - 2] = G->S;
  G->odims[r - 1] = G->Dv;
  const int64_t *op = NULL;
  int nop = kiln_attr_ints(n, "o_perm", &op);
  if (nop >= 0 && nop != r) return kiln__err(err, KILN_ESHAPE, "o_perm has %d entries for rank %d", nop, r);
  int perm[KILN_MAX_RANK];
  bool seen[KILN_MAX_RANK] = {false};
  for (int a = 0; a < r; a++) {
    perm[a] = nop >= 0 ? (int)op[a] : a;
    if (perm[a] < 0 || perm[a] >= r || seen[perm[a]]) return kiln__err(err, KILN_ESHAPE, "o_perm is not a permutation");
    seen[perm[a]] = true;
    G->ydims[a] = G->odims[perm[a]];
  }
  int64_t ys[KILN_MAX_RANK], os[KILN_MAX_RANK];
  kiln_strides(r, G->ydims, ys);
  for (int a = 0; a < r; a++) os[perm[a]] = ys[a];
  for (int i = 0; i < G->nb; i++) G->st[OP_O][i] = os[i];
  G->st[OP_O][AT_MAXB] = os[r - 2];
  G->st[OP_O][AT_MAXB + 1] = os[r - 1];
  G->unit = G->st[OP_Q][AT_MAXB + 1] == 1 && G->st[OP_K][AT_MAXB + 1] == 1 && G->st[OP_V][AT_MAXB + 1] == 1 && G->st[OP_O][AT_MAXB + 1] == 1;
  return 0;
}

static int at_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  at_geom G;
  int rc = at_geometry(g, n, &G, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  if (!kiln_dtype_is_float(dt) || kiln_in(g, n, 1)->dtype != dt || kiln_in(g, n, 2)->dtype != dt || (G.mask && kiln_in(g, n, 3)->dtype != dt))
    return kiln__err(err, KILN_EUNSUPPORTED, "Q, K, V and the mask need one float type");
  kiln_set_out(g, n, 0, dt, G.orank, G.ydims);
  return 0;
}

/* Offsets of batch entry b in every operand. */
static void batch_offsets(const at_geom *G, int64_t b, int64_t off[5]) {
  for (int e = 0; e < 5; e++) off[e] = 0;
  for (int d = G->nb - 1; d >= 0; d--) {
    int64_t c = b % G->bdims[d];
    b /= G->bdims[d];
    for (int e = 0; e < 5; e++) off[e] += c * G->st[e][d];
  }
}

static int at_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  at_geom G;
  int rc = at_geometry(g, n, &G, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  double sc = kiln_attr_float(n, "kiln_scale", 1.0f);
  double *p = malloc(sizeof(double) * (size_t)(G.Skv ? G.Skv : 1));
  if (!p) return kiln__err(err, KILN_ENOMEM, "out of memory");
  const int64_t (*st)[AT_MAXB + 2] = G.st;
  for (int64_t b = 0; b < G.batch; b++) {
    int64_t off[5];
    batch_offsets(&G, b, off);
    for (int64_t i = 0; i < G.S; i++) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < G.Skv; j++) {
        double a = 0;
        for (int64_t d = 0; d < G.D; d++)
          a += kiln_load_f(in[0], dt, off[OP_Q] + i * st[OP_Q][AT_MAXB] + d * st[OP_Q][AT_MAXB + 1]) *
               kiln_load_f(in[1], dt, off[OP_K] + j * st[OP_K][AT_MAXB] + d * st[OP_K][AT_MAXB + 1]);
        a *= sc;
        if (G.mask) a += kiln_load_f(in[3], dt, off[OP_M] + i * st[OP_M][AT_MAXB] + j * st[OP_M][AT_MAXB + 1]);
        p[j] = a;
        if (a > m) m = a;
      }
      for (int64_t j = 0; j < G.Skv; j++) { p[j] = exp(p[j] - m); s += p[j]; }
      for (int64_t c = 0; c < G.Dv; c++) {
        double a = 0;
        for (int64_t j = 0; j < G.Skv; j++) a += p[j] * kiln_load_f(in[2], dt, off[OP_V] + j * st[OP_V][AT_MAXB] + c * st[OP_V][AT_MAXB + 1]);
        kiln_store_f(out[0], dt, off[OP_O] + i * st[OP_O][AT_MAXB] + c * st[OP_O][AT_MAXB + 1], a / s);
      }
    }
  }
  free(p);
  return 0;
}

static int at_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  at_geom G;
  int rc = at_geometry(g, n, &G, err);
  if (rc) return rc;
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt != KILN_DT_FLOAT && dt != KILN_DT_DOUBLE) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(dt));
  if (G.D > AT_MAXD || G.Dv > AT_MAXD || G.D < 1 || G.Dv < 1)
    return kiln__err(err, KILN_EUNSUPPORTED, "head dimensions %lld, %lld (1..%d)", (long long)G.D, (long long)G.Dv, AT_MAXD);
  return 0;
}

/* ---- tunable family "attention": kernels/attention.c ---- */

static int at_tunable(kiln_graph *g, kiln_node *n, kiln_tunable *t) {
  at_geom G;
  kiln_error e = {0};
  if (at_geometry(g, n, &G, &e)) return 1;
  kiln_value *mv = kiln_in(g, n, 3);
  kiln_family_begin(&kiln_family_attention, kiln_in(g, n, 0)->dtype, t);
  int o = snprintf(t->shape_key, sizeof t->shape_key, "Attention:b=");
  for (int i = 0; i < G.nb; i++) o += snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, "%s%lld", i ? "x" : "", (long long)G.bdims[i]);
  o += snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, ",s=%lld,skv=%lld,d=%lld,dv=%lld", (long long)G.S, (long long)G.Skv, (long long)G.D,
                (long long)G.Dv);
  /* layout: the transposes read (row-major sources) */
  static const char *const perms[4] = {"q_perm", "k_perm", "v_perm", "o_perm"};
  for (int k = 0; k < 4 && o < (int)sizeof t->shape_key; k++) {
    const int64_t *p = NULL;
    int np = kiln_attr_ints(n, perms[k], &p);
    if (np < 0) continue;
    o += snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, ",%c=", perms[k][0]);
    for (int a = 0; a < np && o < (int)sizeof t->shape_key; a++) o += snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, "%d", (int)p[a]);
  }
  if (mv && o < (int)sizeof t->shape_key) {
    o += snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, ",m=");
    for (int d = 0; d < mv->rank && o < (int)sizeof t->shape_key; d++) o += snprintf(t->shape_key + o, sizeof t->shape_key - (size_t)o, "%s%lld", d ? "x" : "", (long long)mv->dims[d]);
  }
  if (kiln_attr_float(n, "kiln_scale", 1.0f) != 1.0f) snprintf(t->epilogue, sizeof t->epilogue, "scale");
  t->dims[AD_BATCH] = G.batch;
  t->dims[AD_S] = G.S;
  t->dims[AD_SKV] = G.Skv;
  t->dims[AD_D] = G.D;
  t->dims[AD_DV] = G.Dv;
  t->dims[AD_UNIT] = G.unit;
  t->dims[AD_MASK] = G.mask;
  t->dims[AD_ESIZE] = (int64_t)kiln_dtype_size(t->dtype);
  kiln_family_end(&kiln_family_attention, t);
  return 0;
}

static int at_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  at_geom G;
  int rc = at_geometry(x->g, n, &G, err);
  if (rc) return rc;
  kiln_tunable t;
  if (at_tunable(x->g, n, &t)) return kiln__err(err, KILN_EINTERNAL, "attention: no descriptor");
  const int *p = kiln_exec_tparams(x, n, &t);
  if (t.valid(&t, p, &x->d->info)) {
    char ps[128];
    kiln_tunable_str(&t, p, ps, sizeof ps);
    return kiln__err(err, KILN_EINVAL, "attention: parameters %s are not valid for this instance", ps);
  }
  if (t.dtype == KILN_DT_DOUBLE && !x->d->has_fp64) return kiln__err(err, KILN_EUNSUPPORTED, "float64 needs cl_khr_fp64, which the device lacks");
  int64_t meta[AT_META] = {0};
  meta[0] = G.nb;
  meta[1] = G.S;
  meta[2] = G.Skv;
  for (int i = 0; i < G.nb; i++) meta[3 + i] = G.bdims[i];
  for (int e = 0; e < 5; e++) memcpy(meta + 3 + AT_MAXB + e * (AT_MAXB + 2), G.st[e], sizeof G.st[e]);
  cl_mem mm = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mm) return err->status;
  char ty[256], opts[512];
  snprintf(opts, sizeof opts, "%s -DATT_D=%lld -DATT_DV=%lld", kiln_cl_type_opts(t.dtype, ty, sizeof ty), (long long)G.D, (long long)G.Dv);
  const bool blocked = p[AP_ALGO] == AA_BLOCKED;
  if (blocked) /* K's and V's strides as constants: a key block's loads at fixed offsets */
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), " -DATT_KRS=%lld -DATT_KCS=%lld -DATT_VRS=%lld -DATT_VCS=%lld",
             (long long)G.st[OP_K][AT_MAXB], (long long)G.st[OP_K][AT_MAXB + 1], (long long)G.st[OP_V][AT_MAXB], (long long)G.st[OP_V][AT_MAXB + 1]);
  kiln_tunable_opts(&t, p, opts, sizeof opts);
  cl_kernel k = kiln_cl_kernel(x->d, AT_CL, opts, "attention", err);
  if (!k) return err->status;
  cl_mem bq = kiln_in_buf(x, n, 0), bk = kiln_in_buf(x, n, 1), bv = kiln_in_buf(x, n, 2), bm = G.mask ? kiln_in_buf(x, n, 3) : bq, bo = kiln_out_buf(x, n, 0);
  double sc = kiln_attr_float(n, "kiln_scale", 1.0f);
  cl_float sf = (cl_float)sc;
  cl_double sd = sc;
  size_t ss = t.dtype == KILN_DT_DOUBLE ? sizeof sd : sizeof sf;
  const void *sp = t.dtype == KILN_DT_DOUBLE ? (const void *)&sd : (const void *)&sf;
  cl_int has_mask = G.mask;
  const int qr = blocked ? p[AP_BQ] : p[AP_QR], dvs = blocked ? 1 : p[AP_DVS], wg = p[AP_WG];
  cl_long items = (cl_long)(G.batch * ((G.S + qr - 1) / qr) * dvs);
  if ((rc = kiln_cl_args(k, err, KARG(bq), KARG(bk), KARG(bv), KARG(bm), KARG(bo), KARG(mm), ss, sp, KARG(has_mask), KARG(items), KEND)) != 0) return rc;
  size_t lws = (size_t)wg, gws = wg > 0 ? (size_t)((items + wg - 1) / wg) * (size_t)wg : (size_t)items;
  return kiln_exec_launch(x, k, 1, &gws, wg > 0 ? &lws : NULL, err);
}

const kiln_op_def kiln_ops_attention[] = {
  {.name = "KilnAttention", .infer = at_infer, .ref = at_ref, .dev = at_dev, .dev_check = at_check, .tunable = at_tunable},
  {NULL},
};
