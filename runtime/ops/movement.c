/* ops/movement.c: ONNX data-movement ops: Identity, Dropout (inference),
 * Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice,
 * Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND,
 * Expand, Tile, Pad, Shape, Size, ConstantOfShape, Constant, Range,
 * DepthToSpace, SpaceToDepth, OneHot, Trilu, ReverseSequence, EyeLike,
 * NonZero, Compress, Unique.
 *
 * Device side: ops whose output has the input's bytes (Reshape and friends)
 * are one clEnqueueCopyBuffer; permutations and sub-blocks (Transpose, Slice,
 * Concat, Split, Expand, Tile, DepthToSpace, SpaceToDepth) are strided copies
 * (kernels/movement.cl, mv_strided) described by a small meta record per copy;
 * index ops have their own kernels. movement.cl moves raw bits and is built
 * once per element size; the scatters with reductions need arithmetic and use
 * kernels/movement_scatter.cl built per element type.
 *
 * Ops whose output shape depends on tensor data (NonZero, Unique, Range,
 * Compress's condition) are computed at plan time when their inputs are
 * known, and unsupported otherwise. The CPU references below are plain loops
 * written independently of the kernels. */
#include "kiln_internal.h"
#include <math.h>

#define MAXR KILN_MAX_RANK
#define SMAX 16                 /* max rank of a strided copy (movement.cl) */
#define SMETA (3 + 3 * SMAX)    /* longs per strided-copy record */
#define DIRECT_LIMIT ((size_t)1 << 20) /* bytes: ConstantOfShape outputs computed at plan time */

/* ---- shared helpers ----------------------------------------------------- */

static int not_known(kiln_error *err, const kiln_value *v) {
  return kiln__err(err, KILN_EUNSUPPORTED, "output shape depends on tensor data ('%s' is not known at plan time)", v->name);
}

static int64_t prod(const int64_t *d, int a, int b) {
  int64_t p = 1;
  for (int i = a; i < b; i++) p *= d[i];
  return p;
}

/* Coordinates of row-major index i in a tensor of dims d[r]. */
static void unravel(int64_t i, int r, const int64_t *d, int64_t *c) {
  for (int k = r - 1; k >= 0; k--) {
    c[k] = d[k] ? i % d[k] : 0;
    i = d[k] ? i / d[k] : 0;
  }
}

static inline void ecopy(void *dst, int64_t di, const void *src, int64_t si, size_t es) {
  memcpy((char *)dst + di * (int64_t)es, (const char *)src + si * (int64_t)es, es);
}

/* Reads a known 1-D (or scalar) integer value into out[max]; returns the count or -1. */
static int read_ints(const kiln_value *v, int64_t *out, int max) {
  int64_t c = kiln_value_numel(v);
  if (!v->data || c > max) return -1;
  for (int64_t i = 0; i < c; i++) out[i] = kiln_value_geti(v, i);
  return (int)c;
}

/* Sets output i with host data computed at plan time (takes ownership of data). */
static void out_data(kiln_graph *g, kiln_node *n, int i, int dtype, int rank, const int64_t *dims, void *data) {
  kiln_value *v = kiln_out(g, n, i);
  if (!v) { free(data); return; }
  kiln_set_out(g, n, i, dtype, rank, dims);
  free(v->data);
  v->data = data;
  v->is_const = true;
}

/* Bit pattern of the value `val` stored as dtype (first kiln_dtype_size bytes). */
static void value_bits(int dtype, double val, unsigned char *bits) {
  memset(bits, 0, 8);
  kiln_store_f(bits, dtype, 0, val);
}

/* ---- device helpers ----------------------------------------------------- */

/* A kernel of movement.cl for elements of es bytes. */
static cl_kernel kbits(kiln_exec *x, size_t es, const char *name, kiln_error *err) {
  const char *o = es == 1 ? "-DT=uchar" : es == 2 ? "-DT=ushort" : es == 4 ? "-DT=uint" : "-DT=ulong";
  if (es != 1 && es != 2 && es != 4 && es != 8) { kiln__err(err, KILN_EUNSUPPORTED, "element size %zu", es); return NULL; }
  return kiln_cl_kernel(x->d, "movement.cl", o, name, err);
}

/* Device copy of `bytes` (counted as a launch). */
static int dev_copy(kiln_exec *x, cl_mem src, cl_mem dst, size_t bytes, kiln_error *err) {
  if (!bytes || src == dst) return 0;
  kiln__rec_other();
  cl_int e = clEnqueueCopyBuffer(x->d->q, src, dst, 0, 0, bytes, 0, NULL, NULL);
  if (e != CL_SUCCESS) return kiln__err(err, KILN_ECL, "clEnqueueCopyBuffer(%zu bytes): %s", bytes, kiln__clerror(e));
  x->launches++;
  return 0;
}

static int launch1(kiln_exec *x, cl_kernel k, int64_t n, kiln_error *err) {
  size_t gws = (size_t)n;
  return kiln_exec_launch(x, k, 1, &gws, NULL, err);
}

/* One strided copy: n elements, meta record m (rank, soff, doff, dims, ss, ds). */
typedef struct sjob {
  cl_mem src, dst;
  int64_t n;
  int64_t m[SMETA];
} sjob;

/* Describes dst[doff + sum c*ds] = src[soff + sum c*ss] over dims[rank],
 * dropping size-1 axes and merging axes that are contiguous in both. */
static void sjob_set(sjob *j, cl_mem src, cl_mem dst, int rank, const int64_t *dims, const int64_t *ss, int64_t soff, const int64_t *ds, int64_t doff) {
  int64_t nd[SMAX], ns[SMAX], nds[SMAX];
  int k = 0;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    n *= dims[i];
    if (dims[i] == 1) continue;
    if (k > 0 && ns[k - 1] == ss[i] * dims[i] && nds[k - 1] == ds[i] * dims[i]) {
      nd[k - 1] *= dims[i];
      ns[k - 1] = ss[i];
      nds[k - 1] = ds[i];
      continue;
    }
    nd[k] = dims[i]; ns[k] = ss[i]; nds[k] = ds[i];
    k++;
  }
  memset(j, 0, sizeof *j);
  j->src = src;
  j->dst = dst;
  j->n = n;
  j->m[0] = k;
  j->m[1] = soff;
  j->m[2] = doff;
  for (int i = 0; i < k; i++) { j->m[3 + i] = nd[i]; j->m[3 + SMAX + i] = ns[i]; j->m[3 + 2 * SMAX + i] = nds[i]; }
}

/* Runs strided copies; their records go to param slot 0 of the node. */
static int sjobs_run(kiln_exec *x, kiln_node *n, size_t es, const sjob *jobs, int nj, kiln_error *err) {
  if (nj <= 0) return 0;
  int64_t *meta = malloc(sizeof(int64_t) * SMETA * (size_t)nj);
  if (!meta) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < nj; i++) memcpy(meta + (size_t)i * SMETA, jobs[i].m, sizeof jobs[i].m);
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof(int64_t) * SMETA * (size_t)nj, err);
  free(meta);
  if (!mb) return err->status;
  cl_kernel k = NULL, kr = NULL;
  for (int i = 0; i < nj; i++) {
    if (jobs[i].n <= 0) continue;
    cl_int mi = i;
    int r = (int)jobs[i].m[0];
    int64_t L = r > 0 ? jobs[i].m[3 + r - 1] : 0;
    if (r > 0 && L >= 8 && jobs[i].m[3 + SMAX + r - 1] == 1 && jobs[i].m[3 + 2 * SMAX + r - 1] == 1) {
      /* contiguous rows in both: runs of 16 per work-item (mv_strided_rows) */
      if (!kr && !(kr = kbits(x, es, "mv_strided_rows", err))) return err->status;
      cl_long rows = jobs[i].n / L;
      if (kiln_cl_args(kr, err, KARG(jobs[i].src), KARG(jobs[i].dst), KARG(mb), KARG(mi), KARG(rows), KEND)) return err->status;
      size_t gws[2] = {(size_t)((L + 15) / 16), (size_t)rows};
      if (kiln_exec_launch(x, kr, 2, gws, NULL, err)) return err->status;
      continue;
    }
    if (!k && !(k = kbits(x, es, "mv_strided", err))) return err->status;
    cl_long cnt = jobs[i].n;
    if (kiln_cl_args(k, err, KARG(jobs[i].src), KARG(jobs[i].dst), KARG(mb), KARG(mi), KARG(cnt), KEND)) return err->status;
    if (launch1(x, k, cnt, err)) return err->status;
  }
  return 0;
}

/* A strided copy that is a batched 2-D transpose, dst[b][r][c] =
 * src[soff + b*R*C + c*R + r] with dst contiguous from doff: mv_transpose2
 * (8x8 tiles) instead of mv_strided. 1 when it ran (or failed: *rc), 0 when
 * the job is not one. Planes of fewer than 8 rows or columns stay with
 * mv_strided (no whole tile). */
static int try_transpose2(kiln_exec *x, size_t es, const sjob *j, int *rc, kiln_error *err) {
  int k = (int)j->m[0];
  const int64_t *nd = j->m + 3, *ns = j->m + 3 + SMAX, *nds = j->m + 3 + 2 * SMAX;
  if (k != 2 && k != 3) return 0;
  int64_t R = nd[k - 2], C = nd[k - 1], B = k == 3 ? nd[0] : 1;
  if (ns[k - 2] != 1 || ns[k - 1] != R || nds[k - 1] != 1 || nds[k - 2] != C || R < 8 || C < 8) return 0;
  if (k == 3 && (ns[0] != R * C || nds[0] != R * C)) return 0;
  cl_kernel kr = kbits(x, es, "mv_transpose2", err);
  if (!kr) { *rc = err->status; return 1; }
  cl_long r = R, c = C, so = j->m[1], dof = j->m[2];
  if (kiln_cl_args(kr, err, KARG(j->src), KARG(j->dst), KARG(r), KARG(c), KARG(so), KARG(dof), KEND)) { *rc = err->status; return 1; }
  size_t gws[3] = {(size_t)((C + 7) / 8), (size_t)((R + 7) / 8), (size_t)B};
  *rc = kiln_exec_launch(x, kr, 3, gws, NULL, err);
  return 1;
}

/* Strided copy of a whole tensor of dims d: source strides ss (elements). */
static int run_gather_view(kiln_exec *x, kiln_node *n, size_t es, cl_mem src, cl_mem dst, int rank, const int64_t *dims, const int64_t *ss, int64_t soff, kiln_error *err) {
  int64_t ds[SMAX];
  kiln_strides(rank, dims, ds);
  sjob j;
  sjob_set(&j, src, dst, rank, dims, ss, soff, ds, 0);
  int rc = 0;
  if (try_transpose2(x, es, &j, &rc, err)) return rc;
  return sjobs_run(x, n, es, &j, 1, err);
}

/* ---- copies: Identity, Reshape, Flatten, Squeeze, Unsqueeze ------------- */

/* Bytes per element of v's device buffer (2 for fp16 storage, precision.c). */
static size_t dev_es(const kiln_value *v) { return v->half ? 2 : kiln_dtype_size(v->dtype); }

static int copy_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)err;
  size_t b = kiln_value_bytes(kiln_out(g, n, 0));
  if (b) memcpy(out[0], in[0], b);
  return 0;
}

static int copy_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  return dev_copy(x, kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), kiln_value_dev_bytes(kiln_out(x->g, n, 0)), err);
}

static int identity_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  (void)err;
  kiln_value *a = kiln_in(g, n, 0);
  if (!a) return kiln__err(err, KILN_EINVAL, "needs an input");
  if (a->dtype == KILN_DT_SEQUENCE && a->data) return kiln__seq_copy(kiln_out(g, n, 0), a->data, err); /* the same list of tensors */
  kiln_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  return 0;
}

static int reshape_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t sh[MAXR + 1];
  int ns;
  if (n->opset < 5) {
    const int64_t *v;
    ns = kiln_attr_ints(n, "shape", &v);
    if (ns < 0) return kiln__err(err, KILN_EINVAL, "Reshape-1 needs the 'shape' attribute");
    if (ns > MAXR) return kiln__err(err, KILN_EUNSUPPORTED, "rank %d > %d", ns, MAXR);
    memcpy(sh, v, sizeof(int64_t) * (size_t)ns);
  } else {
    kiln_value *s = kiln_in(g, n, 1);
    if (!s) return kiln__err(err, KILN_EINVAL, "needs a shape input");
    if (!s->data) return not_known(err, s);
    if ((ns = read_ints(s, sh, MAXR)) < 0) return kiln__err(err, KILN_EUNSUPPORTED, "target rank %lld > %d", (long long)kiln_value_numel(s), MAXR);
  }
  bool allowzero = kiln_attr_int(n, "allowzero", 0) != 0;
  int neg = -1;
  int64_t known = 1, total = kiln_value_numel(a);
  for (int i = 0; i < ns; i++) {
    if (sh[i] == 0 && !allowzero) {
      if (i >= a->rank) return kiln__err(err, KILN_ESHAPE, "shape[%d] = 0 copies a dimension the input (rank %d) does not have", i, a->rank);
      sh[i] = a->dims[i];
    }
    if (sh[i] == -1) {
      if (neg >= 0) return kiln__err(err, KILN_ESHAPE, "more than one -1 in the target shape");
      neg = i;
      continue;
    }
    if (sh[i] < 0) return kiln__err(err, KILN_ESHAPE, "invalid dimension %lld in the target shape", (long long)sh[i]);
    known *= sh[i];
  }
  if (neg >= 0) {
    if (known == 0) return kiln__err(err, KILN_ESHAPE, "cannot infer -1 with a zero-size target shape");
    if (total % known) return kiln__err(err, KILN_ESHAPE, "cannot reshape %lld elements to the target shape", (long long)total);
    sh[neg] = total / known;
  } else if (known != total)
    return kiln__err(err, KILN_ESHAPE, "cannot reshape %lld elements to %lld", (long long)total, (long long)known);
  kiln_set_out(g, n, 0, a->dtype, ns, sh);
  return 0;
}

static int flatten_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t ax = kiln_attr_int(n, "axis", 1);
  if (ax < 0) ax += a->rank;
  if (ax < 0 || ax > a->rank) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)kiln_attr_int(n, "axis", 1), a->rank);
  int64_t d[2] = {prod(a->dims, 0, (int)ax), prod(a->dims, (int)ax, a->rank)};
  kiln_set_out(g, n, 0, a->dtype, 2, d);
  return 0;
}

/* Axes of Squeeze/Unsqueeze (attribute before opset 13, input after) into
 * axes[]; *na = -1 when absent. Returns 0 or an error status. */
static int get_axes(kiln_graph *g, kiln_node *n, int slot, int64_t *axes, int *na, kiln_error *err) {
  *na = -1;
  if (n->opset < 13) {
    const int64_t *v;
    int c = kiln_attr_ints(n, "axes", &v);
    if (c > MAXR) return kiln__err(err, KILN_EUNSUPPORTED, "too many axes");
    if (c > 0) memcpy(axes, v, sizeof(int64_t) * (size_t)c);
    *na = c;
    return 0;
  }
  kiln_value *s = kiln_in(g, n, slot);
  if (!s) return 0;
  if (!s->data) return not_known(err, s);
  if ((*na = read_ints(s, axes, MAXR)) < 0) return kiln__err(err, KILN_EUNSUPPORTED, "too many axes");
  return 0;
}

static int squeeze_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t axes[MAXR];
  int na;
  if (get_axes(g, n, 1, axes, &na, err)) return err->status;
  bool drop[MAXR] = {0};
  if (na < 0) {
    for (int i = 0; i < a->rank; i++) drop[i] = a->dims[i] == 1;
  } else {
    for (int i = 0; i < na; i++) {
      int ax = kiln_axis(axes[i], a->rank);
      if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)axes[i], a->rank);
      if (a->dims[ax] != 1) return kiln__err(err, KILN_ESHAPE, "cannot squeeze axis %d of size %lld", ax, (long long)a->dims[ax]);
      drop[ax] = true;
    }
  }
  int64_t d[MAXR];
  int r = 0;
  for (int i = 0; i < a->rank; i++)
    if (!drop[i]) d[r++] = a->dims[i];
  kiln_set_out(g, n, 0, a->dtype, r, d);
  return 0;
}

static int unsqueeze_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t axes[MAXR];
  int na;
  if (get_axes(g, n, 1, axes, &na, err)) return err->status;
  if (na < 0) return kiln__err(err, KILN_EINVAL, "Unsqueeze needs axes");
  int r = a->rank + na;
  if (r > MAXR) return kiln__err(err, KILN_EUNSUPPORTED, "output rank %d > %d", r, MAXR);
  bool ins[MAXR] = {0};
  for (int i = 0; i < na; i++) {
    int ax = kiln_axis(axes[i], r);
    if (ax < 0 || ins[ax]) return kiln__err(err, KILN_ESHAPE, "invalid or repeated axis %lld for output rank %d", (long long)axes[i], r);
    ins[ax] = true;
  }
  int64_t d[MAXR];
  for (int i = 0, k = 0; i < r; i++) d[i] = ins[i] ? 1 : a->dims[k++];
  kiln_set_out(g, n, 0, a->dtype, r, d);
  return 0;
}

/* ---- Dropout (inference) ------------------------------------------------- */

static int dropout_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  bool training = false;
  double ratio = 0.5;
  if (n->opset < 7) training = kiln_attr_int(n, "is_test", 0) == 0;
  if (n->opset < 12) ratio = kiln_attr_float(n, "ratio", 0.5f);
  else {
    kiln_value *t = kiln_in(g, n, 2), *r = kiln_in(g, n, 1);
    if (t) {
      if (!t->data) return kiln__err(err, KILN_EUNSUPPORTED, "training_mode '%s' is not known at plan time", t->name);
      training = kiln_value_geti(t, 0) != 0;
    }
    if (r && training) {
      if (!r->data) return kiln__err(err, KILN_EUNSUPPORTED, "ratio '%s' is not known at plan time", r->name);
      ratio = kiln_value_getf(r, 0);
    }
  }
  if (training && ratio != 0) return kiln__err(err, KILN_EUNSUPPORTED, "training-mode Dropout (random masks) is not supported");
  kiln_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  kiln_set_out(g, n, 1, n->opset >= 10 ? KILN_DT_BOOL : a->dtype, a->rank, a->dims);
  return 0;
}

static int dropout_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  copy_ref(g, n, in, out, err);
  kiln_value *m = kiln_out(g, n, 1);
  if (m) for (int64_t i = 0, c = kiln_value_numel(m); i < c; i++) kiln_store_i(out[1], m->dtype, i, 1);
  return 0;
}

/* Fills buffer b (n elements of dtype) with the value v on the device. */
static int dev_fill(kiln_exec *x, cl_mem b, int dtype, int64_t cnt, const unsigned char *bits, kiln_error *err) {
  if (cnt <= 0) return 0;
  size_t es = kiln_dtype_size(dtype);
  cl_kernel k = kbits(x, es, "mv_fill", err);
  if (!k) return err->status;
  cl_long c = cnt;
  if (kiln_cl_args(k, err, KARG(b), es, (const void *)bits, KARG(c), KEND)) return err->status;
  return launch1(x, k, cnt, err);
}

static int dropout_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  if (copy_dev(x, n, err)) return err->status;
  kiln_value *m = kiln_out(x->g, n, 1);
  if (!m) return 0;
  unsigned char one[8];
  value_bits(m->dtype, 1, one);
  return dev_fill(x, kiln_out_buf(x, n, 1), m->dtype, kiln_value_numel(m), one, err);
}

/* ---- Transpose ----------------------------------------------------------- */

static int get_perm(kiln_node *n, int r, int *perm, kiln_error *err) {
  const int64_t *p;
  int c = kiln_attr_ints(n, "perm", &p);
  if (c < 0) { for (int i = 0; i < r; i++) perm[i] = r - 1 - i; return 0; }
  if (c != r) return kiln__err(err, KILN_ESHAPE, "perm has %d entries for rank %d", c, r);
  bool seen[MAXR] = {0};
  for (int i = 0; i < r; i++) {
    int a = kiln_axis(p[i], r);
    if (a < 0 || seen[a]) return kiln__err(err, KILN_ESHAPE, "perm is not a permutation");
    seen[a] = true;
    perm[i] = a;
  }
  return 0;
}

static int transpose_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int perm[MAXR];
  if (get_perm(n, a->rank, perm, err)) return err->status;
  int64_t d[MAXR];
  for (int i = 0; i < a->rank; i++) d[i] = a->dims[perm[i]];
  kiln_set_out(g, n, 0, a->dtype, a->rank, d);
  return 0;
}

static int transpose_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int perm[MAXR];
  if (get_perm(n, a->rank, perm, err)) return err->status;
  int64_t as[MAXR], c[MAXR];
  kiln_strides(a->rank, a->dims, as);
  size_t es = kiln_dtype_size(a->dtype);
  for (int64_t i = 0, t = kiln_value_numel(y); i < t; i++) {
    unravel(i, y->rank, y->dims, c);
    int64_t off = 0;
    for (int k = 0; k < y->rank; k++) off += c[k] * as[perm[k]];
    ecopy(out[0], i, in[0], off, es);
  }
  return 0;
}

static int transpose_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int perm[MAXR];
  if (get_perm(n, a->rank, perm, err)) return err->status;
  int64_t as[MAXR], ss[MAXR];
  kiln_strides(a->rank, a->dims, as);
  for (int i = 0; i < a->rank; i++) ss[i] = as[perm[i]];
  return run_gather_view(x, n, dev_es(a), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), y->rank, y->dims, ss, 0, err);
}

/* ---- Concat ------------------------------------------------------------- */

/* Concat's axis into *axp; returns 0 or an error status. */
static int concat_axis(kiln_graph *g, kiln_node *n, int *axp, kiln_error *err) {
  kiln_value *a = NULL;
  for (int i = 0; i < n->nin && !a; i++) a = kiln_in(g, n, i);
  if (!a) return kiln__err(err, KILN_EINVAL, "needs inputs");
  if (!kiln_attr_find(n, "axis")) return kiln__err(err, KILN_EINVAL, "needs the 'axis' attribute");
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range for rank %d", (long long)kiln_attr_int(n, "axis", 0), a->rank);
  *axp = ax;
  return 0;
}

static int concat_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int ax;
  if (concat_axis(g, n, &ax, err)) return err->status;
  kiln_value *a = NULL;
  int64_t d[MAXR];
  for (int i = 0; i < n->nin; i++) {
    kiln_value *v = kiln_in(g, n, i);
    if (!v) continue;
    if (!a) { a = v; memcpy(d, v->dims, sizeof d); d[ax] = 0; }
    if (v->rank != a->rank || v->dtype != a->dtype) return kiln__err(err, KILN_ESHAPE, "input '%s' differs in rank or type", v->name);
    for (int k = 0; k < a->rank; k++)
      if (k != ax && v->dims[k] != a->dims[k]) return kiln__err(err, KILN_ESHAPE, "input '%s' differs in dimension %d", v->name, k);
    d[ax] += v->dims[ax];
  }
  kiln_set_out(g, n, 0, a->dtype, a->rank, d);
  return 0;
}

static int concat_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  int ax;
  if (concat_axis(g, n, &ax, err)) return err->status;
  kiln_value *y = kiln_out(g, n, 0);
  size_t es = kiln_dtype_size(y->dtype);
  int64_t outer = prod(y->dims, 0, ax), inner = prod(y->dims, ax + 1, y->rank);
  int64_t ychunk = y->dims[ax] * inner;
  char *yo = out[0];
  int64_t pos = 0;
  for (int i = 0; i < n->nin; i++) {
    kiln_value *v = kiln_in(g, n, i);
    if (!v) continue;
    int64_t chunk = v->dims[ax] * inner;
    for (int64_t o = 0; o < outer; o++)
      memcpy(yo + (o * ychunk + pos) * (int64_t)es, (const char *)in[i] + o * chunk * (int64_t)es, (size_t)chunk * es);
    pos += chunk;
  }
  return 0;
}

static int concat_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  int ax;
  if (concat_axis(x->g, n, &ax, err)) return err->status;
  kiln_value *y = kiln_out(x->g, n, 0);
  int64_t ys[MAXR], vs[MAXR];
  kiln_strides(y->rank, y->dims, ys);
  sjob *jobs = calloc((size_t)n->nin + 1, sizeof *jobs);
  if (!jobs) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int nj = 0;
  int64_t pos = 0;
  for (int i = 0; i < n->nin; i++) {
    kiln_value *v = kiln_in(x->g, n, i);
    if (!v) continue;
    kiln_strides(v->rank, v->dims, vs);
    sjob_set(&jobs[nj++], kiln_in_buf(x, n, i), kiln_out_buf(x, n, 0), v->rank, v->dims, vs, 0, ys, pos * ys[ax]);
    pos += v->dims[ax];
  }
  int rc = sjobs_run(x, n, dev_es(y), jobs, nj, err);
  free(jobs);
  return rc;
}

/* ---- Split --------------------------------------------------------------- */

/* Axis and per-output sizes (sz has n->nout entries). Returns 0 or an error. */
static int split_sizes(kiln_graph *g, kiln_node *n, int *axp, int64_t *sz, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis out of range for rank %d", a->rank);
  int no = n->nout;
  int64_t D = a->dims[ax];
  kiln_value *s = (n->opset >= 13 || n->opset < 2) ? kiln_in(g, n, 1) : NULL;
  const int64_t *sa = NULL;
  int ns = n->opset < 13 ? kiln_attr_ints(n, "split", &sa) : -1;
  if (s) {
    if (!s->data) return not_known(err, s);
    if (kiln_value_numel(s) != no) return kiln__err(err, KILN_ESHAPE, "split has %lld entries for %d outputs", (long long)kiln_value_numel(s), no);
    for (int i = 0; i < no; i++) sz[i] = kiln_value_geti(s, i);
  } else if (ns >= 0) {
    if (ns != no) return kiln__err(err, KILN_ESHAPE, "split has %d entries for %d outputs", ns, no);
    for (int i = 0; i < no; i++) sz[i] = sa[i];
  } else if (kiln_attr_find(n, "num_outputs")) {
    int64_t k = kiln_attr_int(n, "num_outputs", no);
    if (k != no || k <= 0) return kiln__err(err, KILN_ESHAPE, "num_outputs %lld for %d outputs", (long long)k, no);
    int64_t c = (D + k - 1) / k;
    for (int i = 0; i < no; i++) { int64_t left = D - c * i; sz[i] = left < 0 ? 0 : left < c ? left : c; }
  } else {
    if (no <= 0 || D % no) return kiln__err(err, KILN_ESHAPE, "dimension %lld does not split into %d equal parts", (long long)D, no);
    for (int i = 0; i < no; i++) sz[i] = D / no;
  }
  int64_t tot = 0;
  for (int i = 0; i < no; i++) {
    if (sz[i] < 0) return kiln__err(err, KILN_ESHAPE, "negative split size");
    tot += sz[i];
  }
  if (tot != D) return kiln__err(err, KILN_ESHAPE, "split sizes sum to %lld, dimension is %lld", (long long)tot, (long long)D);
  *axp = ax;
  return 0;
}

static int split_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t *sz = calloc((size_t)n->nout + 1, sizeof *sz);
  if (!sz) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int ax, rc = split_sizes(g, n, &ax, sz, err);
  for (int i = 0; !rc && i < n->nout; i++) {
    int64_t d[MAXR];
    memcpy(d, a->dims, sizeof d);
    d[ax] = sz[i];
    kiln_set_out(g, n, i, a->dtype, a->rank, d);
  }
  free(sz);
  return rc;
}

static int split_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t *sz = calloc((size_t)n->nout + 1, sizeof *sz);
  if (!sz) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int ax, rc = split_sizes(g, n, &ax, sz, err);
  if (!rc) {
    size_t es = kiln_dtype_size(a->dtype);
    int64_t outer = prod(a->dims, 0, ax), inner = prod(a->dims, ax + 1, a->rank), achunk = a->dims[ax] * inner, pos = 0;
    for (int i = 0; i < n->nout; i++) {
      int64_t chunk = sz[i] * inner;
      if (out[i])
        for (int64_t o = 0; o < outer; o++)
          memcpy((char *)out[i] + o * chunk * (int64_t)es, (const char *)in[0] + (o * achunk + pos) * (int64_t)es, (size_t)chunk * es);
      pos += chunk;
    }
  }
  free(sz);
  return rc;
}

static int split_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0);
  int64_t *sz = calloc((size_t)n->nout + 1, sizeof *sz);
  sjob *jobs = calloc((size_t)n->nout + 1, sizeof *jobs);
  int ax, nj = 0, rc = (!sz || !jobs) ? kiln__err(err, KILN_ENOMEM, "out of memory") : split_sizes(x->g, n, &ax, sz, err);
  if (!rc) {
    int64_t as[MAXR], ys[MAXR], pos = 0;
    kiln_strides(a->rank, a->dims, as);
    for (int i = 0; i < n->nout; i++) {
      kiln_value *y = kiln_out(x->g, n, i);
      if (y) {
        kiln_strides(y->rank, y->dims, ys);
        sjob_set(&jobs[nj++], kiln_in_buf(x, n, 0), kiln_out_buf(x, n, i), y->rank, y->dims, as, pos * as[ax], ys, 0);
      }
      pos += sz[i];
    }
    rc = sjobs_run(x, n, dev_es(a), jobs, nj, err);
  }
  free(sz);
  free(jobs);
  return rc;
}

/* ---- Slice --------------------------------------------------------------- */

/* Per-axis start, step and count of a Slice (opset 1 attributes, opset 10 inputs). */
static int slice_params(kiln_graph *g, kiln_node *n, int64_t *st, int64_t *sp, int64_t *cnt, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int r = a->rank;
  for (int k = 0; k < r; k++) { st[k] = 0; sp[k] = 1; cnt[k] = a->dims[k]; }
  int64_t starts[MAXR], ends[MAXR], axes[MAXR], steps[MAXR];
  int ns, ne, na = -1, np = -1;
  if (n->opset < 10) {
    const int64_t *v;
    ns = kiln_attr_ints(n, "starts", &v);
    if (ns < 0 || ns > MAXR) return kiln__err(err, KILN_EINVAL, "bad 'starts'");
    memcpy(starts, v, sizeof(int64_t) * (size_t)ns);
    ne = kiln_attr_ints(n, "ends", &v);
    if (ne < 0 || ne > MAXR) return kiln__err(err, KILN_EINVAL, "bad 'ends'");
    memcpy(ends, v, sizeof(int64_t) * (size_t)ne);
    na = kiln_attr_ints(n, "axes", &v);
    if (na > MAXR) return kiln__err(err, KILN_EINVAL, "bad 'axes'");
    if (na > 0) memcpy(axes, v, sizeof(int64_t) * (size_t)na);
  } else {
    kiln_value *vs = kiln_in(g, n, 1), *ve = kiln_in(g, n, 2), *va = kiln_in(g, n, 3), *vp = kiln_in(g, n, 4);
    if (!vs || !ve) return kiln__err(err, KILN_EINVAL, "needs starts and ends");
    kiln_value *vv[4] = {vs, ve, va, vp};
    for (int i = 0; i < 4; i++)
      if (vv[i] && !vv[i]->data) return not_known(err, vv[i]);
    ns = read_ints(vs, starts, MAXR);
    ne = read_ints(ve, ends, MAXR);
    if (va) na = read_ints(va, axes, MAXR);
    if (vp) np = read_ints(vp, steps, MAXR);
    if (ns < 0 || ne < 0 || (va && na < 0) || (vp && np < 0)) return kiln__err(err, KILN_EINVAL, "too many slice entries");
  }
  if (ne != ns || (na >= 0 && na != ns) || (np >= 0 && np != ns)) return kiln__err(err, KILN_ESHAPE, "starts/ends/axes/steps lengths differ");
  bool seen[MAXR] = {0};
  for (int j = 0; j < ns; j++) {
    int ax = kiln_axis(na >= 0 ? axes[j] : j, r);
    if (ax < 0 || seen[ax]) return kiln__err(err, KILN_ESHAPE, "invalid or repeated axis %lld", (long long)(na >= 0 ? axes[j] : j));
    seen[ax] = true;
    int64_t d = a->dims[ax], s = starts[j], e = ends[j], p = np >= 0 ? steps[j] : 1;
    if (p == 0) return kiln__err(err, KILN_ESHAPE, "step 0");
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t c;
    if (p > 0) {
      s = s < 0 ? 0 : s > d ? d : s;
      e = e < 0 ? 0 : e > d ? d : e;
      c = e > s ? (e - s - 1) / p + 1 : 0;
    } else {
      s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
      e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
      int64_t q = p == INT64_MIN ? INT64_MAX : -p;
      c = (d > 0 && s > e) ? (s - e - 1) / q + 1 : 0;
    }
    st[ax] = c ? s : 0;
    sp[ax] = p;
    cnt[ax] = c;
  }
  return 0;
}

static int slice_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t st[MAXR], sp[MAXR], c[MAXR];
  if (slice_params(g, n, st, sp, c, err)) return err->status;
  kiln_set_out(g, n, 0, a->dtype, a->rank, c);
  return 0;
}

static int slice_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t st[MAXR], sp[MAXR], c[MAXR], as[MAXR], co[MAXR];
  if (slice_params(g, n, st, sp, c, err)) return err->status;
  kiln_strides(a->rank, a->dims, as);
  size_t es = kiln_dtype_size(a->dtype);
  for (int64_t i = 0, t = kiln_value_numel(y); i < t; i++) {
    unravel(i, y->rank, y->dims, co);
    int64_t off = 0;
    for (int k = 0; k < y->rank; k++) off += (st[k] + co[k] * sp[k]) * as[k];
    ecopy(out[0], i, in[0], off, es);
  }
  return 0;
}

static int slice_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int64_t st[MAXR], sp[MAXR], c[MAXR], as[MAXR], ss[MAXR], off = 0;
  if (slice_params(x->g, n, st, sp, c, err)) return err->status;
  kiln_strides(a->rank, a->dims, as);
  for (int k = 0; k < a->rank; k++) { ss[k] = as[k] * sp[k]; off += st[k] * as[k]; }
  return run_gather_view(x, n, dev_es(a), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), y->rank, y->dims, ss, off, err);
}

/* ---- Expand, Tile -------------------------------------------------------- */

static int expand_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *s = kiln_in(g, n, 1);
  if (!s) return kiln__err(err, KILN_EINVAL, "needs a shape input");
  if (!s->data) return not_known(err, s);
  int64_t sh[MAXR], d[MAXR];
  int ns = read_ints(s, sh, MAXR), r;
  if (ns < 0) return kiln__err(err, KILN_EUNSUPPORTED, "target rank > %d", MAXR);
  if (kiln_broadcast_shape(a->rank, a->dims, ns, sh, &r, d)) return kiln__err(err, KILN_ESHAPE, "input '%s' does not broadcast to the target shape", a->name);
  kiln_set_out(g, n, 0, a->dtype, r, d);
  return 0;
}

/* The reference of Expand and Tile: output element c copies input element
 * c mod dims, axis by axis over the input's trailing axes (an Expand's axis
 * of size 1 broadcasts: c mod 1 = 0; a Tile's axis repeats). */
static int repeat_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)err;
  kiln_value *a = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t as[MAXR], c[MAXR];
  kiln_strides(a->rank, a->dims, as);
  size_t es = kiln_dtype_size(a->dtype);
  int lead = y->rank - a->rank;
  for (int64_t i = 0, t = kiln_value_numel(y); i < t; i++) {
    unravel(i, y->rank, y->dims, c);
    int64_t off = 0;
    for (int k = 0; k < a->rank; k++) off += (c[k + lead] % a->dims[k]) * as[k];
    ecopy(out[0], i, in[0], off, es);
  }
  return 0;
}

static int expand_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int64_t ss[MAXR];
  kiln_bcast_strides(a, y->rank, ss);
  return run_gather_view(x, n, dev_es(a), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), y->rank, y->dims, ss, 0, err);
}

static int tile_repeats(kiln_graph *g, kiln_node *n, int64_t *rep, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *r = kiln_in(g, n, 1);
  if (n->opset < 6) return kiln__err(err, KILN_EUNSUPPORTED, "Tile-1 (tiles/axis inputs) is not supported");
  if (!r) return kiln__err(err, KILN_EINVAL, "needs repeats");
  if (!r->data) return not_known(err, r);
  if (read_ints(r, rep, MAXR) != a->rank) return kiln__err(err, KILN_ESHAPE, "repeats must have %d entries", a->rank);
  for (int i = 0; i < a->rank; i++)
    if (rep[i] < 0) return kiln__err(err, KILN_ESHAPE, "negative repeat");
  return 0;
}

static int tile_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t rep[MAXR], d[MAXR];
  if (tile_repeats(g, n, rep, err)) return err->status;
  for (int i = 0; i < a->rank; i++) d[i] = a->dims[i] * rep[i];
  kiln_set_out(g, n, 0, a->dtype, a->rank, d);
  return 0;
}

static int tile_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int64_t rep[MAXR], as[MAXR], ys[MAXR], d[SMAX], ss[SMAX], ds[SMAX];
  if (tile_repeats(x->g, n, rep, err)) return err->status;
  kiln_strides(a->rank, a->dims, as);
  kiln_strides(y->rank, y->dims, ys);
  /* output axis k viewed as [rep_k, dim_k]: the repeat index moves dim_k output rows, nothing in the input */
  for (int k = 0; k < a->rank; k++) {
    d[2 * k] = rep[k]; ss[2 * k] = 0; ds[2 * k] = a->dims[k] * ys[k];
    d[2 * k + 1] = a->dims[k]; ss[2 * k + 1] = as[k]; ds[2 * k + 1] = ys[k];
  }
  sjob j;
  sjob_set(&j, kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), 2 * a->rank, d, ss, 0, ds, 0);
  return sjobs_run(x, n, dev_es(a), &j, 1, err);
}

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------ */

static int d2s_check(kiln_graph *g, kiln_node *n, bool d2s, int64_t *b, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  *b = kiln_attr_int(n, "blocksize", 0);
  if (a->rank != 4) return kiln__err(err, KILN_ESHAPE, "input must be 4-D");
  if (*b <= 0) return kiln__err(err, KILN_EINVAL, "blocksize must be positive");
  if (d2s && a->dims[1] % (*b * *b)) return kiln__err(err, KILN_ESHAPE, "channels %lld not divisible by blocksize^2", (long long)a->dims[1]);
  if (!d2s && (a->dims[2] % *b || a->dims[3] % *b)) return kiln__err(err, KILN_ESHAPE, "spatial size not divisible by blocksize");
  const char *m = kiln_attr_str(n, "mode", "DCR");
  if (d2s && strcmp(m, "DCR") && strcmp(m, "CRD")) return kiln__err(err, KILN_EINVAL, "unknown mode '%s'", m);
  return 0;
}

static int d2s_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t b;
  if (d2s_check(g, n, true, &b, err)) return err->status;
  int64_t d[4] = {a->dims[0], a->dims[1] / (b * b), a->dims[2] * b, a->dims[3] * b};
  kiln_set_out(g, n, 0, a->dtype, 4, d);
  return 0;
}

static int s2d_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t b;
  if (d2s_check(g, n, false, &b, err)) return err->status;
  int64_t d[4] = {a->dims[0], a->dims[1] * b * b, a->dims[2] / b, a->dims[3] / b};
  kiln_set_out(g, n, 0, a->dtype, 4, d);
  return 0;
}

static int d2s_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t b;
  if (d2s_check(g, n, true, &b, err)) return err->status;
  bool crd = !strcmp(kiln_attr_str(n, "mode", "DCR"), "CRD");
  int64_t C = a->dims[1], H = a->dims[2], W = a->dims[3], Co = y->dims[1], Ho = y->dims[2], Wo = y->dims[3];
  size_t es = kiln_dtype_size(a->dtype);
  for (int64_t nn = 0; nn < a->dims[0]; nn++)
    for (int64_t c = 0; c < Co; c++)
      for (int64_t h = 0; h < Ho; h++)
        for (int64_t w = 0; w < Wo; w++) {
          int64_t i = h % b, j = w % b;
          int64_t ci = crd ? c * b * b + i * b + j : (i * b + j) * Co + c;
          ecopy(out[0], ((nn * Co + c) * Ho + h) * Wo + w, in[0], ((nn * C + ci) * H + h / b) * W + w / b, es);
        }
  return 0;
}

static int s2d_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t b;
  if (d2s_check(g, n, false, &b, err)) return err->status;
  int64_t C = a->dims[1], H = a->dims[2], W = a->dims[3], Co = y->dims[1], Ho = y->dims[2], Wo = y->dims[3];
  size_t es = kiln_dtype_size(a->dtype);
  for (int64_t nn = 0; nn < a->dims[0]; nn++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t w = 0; w < W; w++) {
          int64_t co = ((h % b) * b + w % b) * C + c;
          ecopy(out[0], ((nn * Co + co) * Ho + h / b) * Wo + w / b, in[0], ((nn * C + c) * H + h) * W + w, es);
        }
  return 0;
}

static int d2s_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0);
  int64_t b;
  if (d2s_check(x->g, n, true, &b, err)) return err->status;
  bool crd = !strcmp(kiln_attr_str(n, "mode", "DCR"), "CRD");
  int64_t N = a->dims[0], C = a->dims[1], H = a->dims[2], W = a->dims[3], Co = C / (b * b), HW = H * W;
  /* output viewed as [N, Co, H, b, W, b] */
  int64_t d[6] = {N, Co, H, b, W, b};
  int64_t dcr[6] = {C * HW, HW, W, b * Co * HW, 1, Co * HW};
  int64_t crds[6] = {C * HW, b * b * HW, W, b * HW, 1, HW};
  return run_gather_view(x, n, dev_es(a), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), 6, d, crd ? crds : dcr, 0, err);
}

static int s2d_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0);
  int64_t b;
  if (d2s_check(x->g, n, false, &b, err)) return err->status;
  int64_t N = a->dims[0], C = a->dims[1], H = a->dims[2], W = a->dims[3], HW = H * W;
  /* output viewed as [N, b, b, C, H/b, W/b] */
  int64_t d[6] = {N, b, b, C, H / b, W / b};
  int64_t ss[6] = {C * HW, W, 1, HW, b * W, b};
  return run_gather_view(x, n, dev_es(a), kiln_in_buf(x, n, 0), kiln_out_buf(x, n, 0), 6, d, ss, 0, err);
}

/* ---- Gather, GatherElements, GatherND ------------------------------------ */

static bool is_index_type(int dt) { return dt == KILN_DT_INT32 || dt == KILN_DT_INT64; }

/* Index value wrapped for an axis of size a; returns -1 when out of range. */
static int64_t wrap_index(int64_t v, int64_t a) {
  if (v < 0) v += a;
  return (v < 0 || v >= a) ? -1 : v;
}

static int gather_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  if (!ix || !is_index_type(ix->dtype)) return kiln__err(err, KILN_EINVAL, "indices must be int32 or int64");
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis out of range for rank %d", a->rank);
  int r = a->rank - 1 + ix->rank;
  if (r > MAXR) return kiln__err(err, KILN_EUNSUPPORTED, "output rank %d > %d", r, MAXR);
  int64_t d[MAXR];
  int k = 0;
  for (int i = 0; i < ax; i++) d[k++] = a->dims[i];
  for (int i = 0; i < ix->rank; i++) d[k++] = ix->dims[i];
  for (int i = ax + 1; i < a->rank; i++) d[k++] = a->dims[i];
  kiln_set_out(g, n, 0, a->dtype, r, d);
  return 0;
}

static int gather_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  int64_t O = prod(a->dims, 0, ax), A = a->dims[ax], N = prod(a->dims, ax + 1, a->rank), I = kiln_value_numel(ix);
  size_t es = kiln_dtype_size(a->dtype);
  for (int64_t o = 0; o < O; o++)
    for (int64_t j = 0; j < I; j++) {
      int64_t id = wrap_index(kiln_load_i(in[1], ix->dtype, j), A);
      if (id < 0) return kiln__err(err, KILN_EINVAL, "index %lld out of range for axis of size %lld", (long long)kiln_load_i(in[1], ix->dtype, j), (long long)A);
      memcpy((char *)out[0] + ((o * I + j) * N) * (int64_t)es, (const char *)in[0] + ((o * A + id) * N) * (int64_t)es, (size_t)N * es);
    }
  return 0;
}

/* Gather along an axis of x viewed as [O, A, N] with I indices (int32/int64, kiln code icode). */
static int dev_gather(kiln_exec *x, size_t es, cl_mem xb, cl_mem ib, cl_mem yb, int64_t O, int64_t A, int64_t N, int64_t I, int icode, kiln_error *err) {
  int64_t total = O * I * N;
  if (total <= 0) return 0;
  cl_kernel k = kbits(x, es, "mv_gather", err);
  if (!k) return err->status;
  cl_long cI = I, cA = A, cN = N, cn = total;
  cl_int ic = icode;
  if (kiln_cl_args(k, err, KARG(xb), KARG(ib), KARG(yb), KARG(cI), KARG(cA), KARG(cN), KARG(ic), KARG(cn), KEND)) return err->status;
  return launch1(x, k, total, err);
}

static int gather_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *ix = kiln_in(x->g, n, 1);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  return dev_gather(x, dev_es(a), kiln_in_buf(x, n, 0), kiln_in_buf(x, n, 1), kiln_out_buf(x, n, 0),
                    prod(a->dims, 0, ax), a->dims[ax], prod(a->dims, ax + 1, a->rank), kiln_value_numel(ix), ix->dtype, err);
}

static int gather_el_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  if (!ix || !is_index_type(ix->dtype)) return kiln__err(err, KILN_EINVAL, "indices must be int32 or int64");
  if (ix->rank != a->rank) return kiln__err(err, KILN_ESHAPE, "indices rank %d differs from data rank %d", ix->rank, a->rank);
  if (kiln_axis(kiln_attr_int(n, "axis", 0), a->rank) < 0) return kiln__err(err, KILN_ESHAPE, "axis out of range");
  kiln_set_out(g, n, 0, a->dtype, ix->rank, ix->dims);
  return 0;
}

static int gather_el_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  int64_t as[MAXR], c[MAXR];
  kiln_strides(a->rank, a->dims, as);
  size_t es = kiln_dtype_size(a->dtype);
  for (int64_t i = 0, t = kiln_value_numel(ix); i < t; i++) {
    unravel(i, ix->rank, ix->dims, c);
    int64_t id = wrap_index(kiln_load_i(in[1], ix->dtype, i), a->dims[ax]);
    if (id < 0) return kiln__err(err, KILN_EINVAL, "index out of range");
    c[ax] = id;
    int64_t off = 0;
    for (int k = 0; k < a->rank; k++) off += c[k] * as[k];
    ecopy(out[0], i, in[0], off, es);
  }
  return 0;
}

/* The launch of a kernel over `total` outputs that reads the node's inputs 0
 * and 1 into output 0 with a metadata block and the dtype of input 1 (an
 * index or length tensor): Gather(Elements, ND), ReverseSequence. */
static int launch_meta2(kiln_exec *x, kiln_node *n, const char *kname, int esize, const int64_t *meta, size_t mbytes, int64_t total,
                        kiln_error *err) {
  cl_mem mb = kiln_exec_param(x, n, 0, meta, mbytes, err);
  if (!mb) return err->status;
  cl_kernel k = kbits(x, esize, kname, err);
  if (!k) return err->status;
  cl_mem xb = kiln_in_buf(x, n, 0), ib = kiln_in_buf(x, n, 1), yb = kiln_out_buf(x, n, 0);
  cl_int ic = kiln_in(x->g, n, 1)->dtype;
  cl_long cn = total;
  if (kiln_cl_args(k, err, KARG(xb), KARG(ib), KARG(yb), KARG(mb), KARG(ic), KARG(cn), KEND)) return err->status;
  return launch1(x, k, total, err);
}

static int gather_el_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *ix = kiln_in(x->g, n, 1);
  int64_t total = kiln_value_numel(ix);
  if (total <= 0) return 0;
  int64_t meta[3 + 2 * MAXR] = {0};
  meta[0] = ix->rank;
  meta[1] = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  meta[2] = a->dims[meta[1]];
  for (int i = 0; i < ix->rank; i++) meta[3 + i] = ix->dims[i];
  kiln_strides(a->rank, a->dims, meta + 3 + MAXR);
  return launch_meta2(x, n, "mv_gather_elements", (int)kiln_dtype_size(a->dtype), meta, sizeof meta, total, err);
}

static int gather_nd_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  if (!ix || ix->dtype != KILN_DT_INT64) return kiln__err(err, KILN_EINVAL, "indices must be int64");
  int64_t b = kiln_attr_int(n, "batch_dims", 0);
  if (ix->rank < 1) return kiln__err(err, KILN_ESHAPE, "indices must have rank >= 1");
  int64_t k = ix->dims[ix->rank - 1];
  if (b < 0 || b >= ix->rank || b >= a->rank || k < 0 || b + k > a->rank) return kiln__err(err, KILN_ESHAPE, "bad batch_dims/index depth");
  for (int i = 0; i < b; i++)
    if (a->dims[i] != ix->dims[i]) return kiln__err(err, KILN_ESHAPE, "batch dimensions differ");
  int64_t d[MAXR];
  int r = 0;
  for (int i = 0; i < ix->rank - 1; i++) d[r++] = ix->dims[i];
  for (int i = (int)(b + k); i < a->rank; i++) {
    if (r >= MAXR) return kiln__err(err, KILN_EUNSUPPORTED, "output rank > %d", MAXR);
    d[r++] = a->dims[i];
  }
  kiln_set_out(g, n, 0, a->dtype, r, d);
  return 0;
}

static int gather_nd_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  int b = (int)kiln_attr_int(n, "batch_dims", 0);
  int k = (int)ix->dims[ix->rank - 1];
  int64_t as[MAXR];
  kiln_strides(a->rank, a->dims, as);
  int64_t B = prod(a->dims, 0, b), Q = prod(ix->dims, b, ix->rank - 1), S = prod(a->dims, b + k, a->rank), DB = prod(a->dims, b, a->rank);
  size_t es = kiln_dtype_size(a->dtype);
  const int64_t *id = in[1];
  for (int64_t bt = 0; bt < B; bt++)
    for (int64_t q = 0; q < Q; q++) {
      int64_t off = bt * DB;
      for (int j = 0; j < k; j++) {
        int64_t v = wrap_index(id[(bt * Q + q) * k + j], a->dims[b + j]);
        if (v < 0) return kiln__err(err, KILN_EINVAL, "index out of range");
        off += v * as[b + j];
      }
      memcpy((char *)out[0] + (bt * Q + q) * S * (int64_t)es, (const char *)in[0] + off * (int64_t)es, (size_t)S * es);
    }
  return 0;
}

static int gather_nd_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *ix = kiln_in(x->g, n, 1), *y = kiln_out(x->g, n, 0);
  int b = (int)kiln_attr_int(n, "batch_dims", 0);
  int k = (int)ix->dims[ix->rank - 1];
  int64_t total = kiln_value_numel(y);
  if (total <= 0) return 0;
  int64_t as[MAXR], meta[4 + 2 * MAXR] = {0};
  kiln_strides(a->rank, a->dims, as);
  meta[0] = k;
  meta[1] = prod(ix->dims, b, ix->rank - 1);
  meta[2] = prod(a->dims, b + k, a->rank);
  meta[3] = prod(a->dims, b, a->rank);
  for (int j = 0; j < k; j++) { meta[4 + j] = a->dims[b + j]; meta[4 + MAXR + j] = as[b + j]; }
  return launch_meta2(x, n, "mv_gather_nd", (int)kiln_dtype_size(a->dtype), meta, sizeof meta, total, err);
}

/* ---- Scatter, ScatterElements, ScatterND ---------------------------------- */

/* Reduction code: 0 none, 1 add, 2 mul, 3 max, 4 min; -1 unknown. */
static int reduction(const kiln_node *n) {
  const char *r = kiln_attr_str(n, "reduction", "none");
  return !strcmp(r, "none") ? 0 : !strcmp(r, "add") ? 1 : !strcmp(r, "mul") ? 2 : !strcmp(r, "max") ? 3 : !strcmp(r, "min") ? 4 : -1;
}

/* Applies one update to element k of y in the reference. */
static void ref_reduce(void *y, int dt, int64_t k, const void *u, int64_t j, int red) {
  if (red == 0) { ecopy(y, k, u, j, kiln_dtype_size(dt)); return; }
  if (kiln_dtype_is_float(dt)) {
    double a = kiln_load_f(y, dt, k), b = kiln_load_f(u, dt, j);
    kiln_store_f(y, dt, k, red == 1 ? a + b : red == 2 ? a * b : red == 3 ? (a > b ? a : b) : (a < b ? a : b));
  } else {
    int64_t a = kiln_load_i(y, dt, k), b = kiln_load_i(u, dt, j);
    kiln_store_i(y, dt, k, red == 1 ? a + b : red == 2 ? a * b : red == 3 ? (a > b ? a : b) : (a < b ? a : b));
  }
}

static int scatter_el_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1), *u = kiln_in(g, n, 2);
  if (!ix || !u) return kiln__err(err, KILN_EINVAL, "needs data, indices and updates");
  if (!is_index_type(ix->dtype)) return kiln__err(err, KILN_EINVAL, "indices must be int32 or int64");
  if (ix->rank != a->rank || u->rank != a->rank || u->dtype != a->dtype) return kiln__err(err, KILN_ESHAPE, "ranks or types of data, indices and updates differ");
  for (int i = 0; i < ix->rank; i++)
    if (ix->dims[i] != u->dims[i]) return kiln__err(err, KILN_ESHAPE, "indices and updates shapes differ");
  if (kiln_axis(kiln_attr_int(n, "axis", 0), a->rank) < 0) return kiln__err(err, KILN_ESHAPE, "axis out of range");
  if (reduction(n) < 0) return kiln__err(err, KILN_EUNSUPPORTED, "reduction '%s'", kiln_attr_str(n, "reduction", ""));
  kiln_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  return 0;
}

static int scatter_el_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank), red = reduction(n);
  memcpy(out[0], in[0], kiln_value_bytes(a));
  int64_t as[MAXR], c[MAXR];
  kiln_strides(a->rank, a->dims, as);
  for (int64_t i = 0, t = kiln_value_numel(ix); i < t; i++) {
    unravel(i, ix->rank, ix->dims, c);
    int64_t id = wrap_index(kiln_load_i(in[1], ix->dtype, i), a->dims[ax]);
    if (id < 0) return kiln__err(err, KILN_EINVAL, "index out of range");
    c[ax] = id;
    int64_t off = 0;
    for (int k = 0; k < a->rank; k++) off += c[k] * as[k];
    ref_reduce(out[0], a->dtype, off, in[2], i, red);
  }
  return 0;
}

static int scatter_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (reduction(n) != 0 && (dt == KILN_DT_BOOL || dt == KILN_DT_FLOAT16))
    return kiln__err(err, KILN_EUNSUPPORTED, "reduction '%s' on %s", kiln_attr_str(n, "reduction", ""), kiln_dtype_name(dt));
  if (!kiln_cl_type(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(dt));
  return 0;
}

static cl_kernel kscatter(kiln_exec *x, int dtype, const char *name, kiln_error *err) {
  char opts[256];
  return kiln_cl_kernel(x->d, "movement_scatter.cl", kiln_cl_type_opts(dtype, opts, sizeof opts), name, err);
}

static int scatter_el_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *u = kiln_in(x->g, n, 2);
  cl_mem yb = kiln_out_buf(x, n, 0);
  if (dev_copy(x, kiln_in_buf(x, n, 0), yb, kiln_value_bytes(a), err)) return err->status;
  int ax = kiln_axis(kiln_attr_int(n, "axis", 0), a->rank);
  int64_t lines = 1;
  for (int i = 0; i < u->rank; i++)
    if (i != ax) lines *= u->dims[i];
  if (kiln_value_numel(u) <= 0 || lines <= 0) return 0;
  int64_t meta[4 + 3 * MAXR] = {0};
  meta[0] = a->rank;
  meta[1] = ax;
  meta[2] = a->dims[ax];
  meta[3] = u->dims[ax];
  for (int i = 0; i < u->rank; i++) meta[4 + i] = u->dims[i];
  kiln_strides(u->rank, u->dims, meta + 4 + MAXR);
  kiln_strides(a->rank, a->dims, meta + 4 + 2 * MAXR);
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  cl_kernel k = kscatter(x, a->dtype, "mvs_scatter_elements", err);
  if (!k) return err->status;
  cl_mem ib = kiln_in_buf(x, n, 1), ub = kiln_in_buf(x, n, 2);
  cl_int ic = kiln_in(x->g, n, 1)->dtype, red = reduction(n);
  cl_long cn = lines;
  if (kiln_cl_args(k, err, KARG(yb), KARG(ib), KARG(ub), KARG(mb), KARG(ic), KARG(red), KARG(cn), KEND)) return err->status;
  return launch1(x, k, lines, err);
}

static int scatter_nd_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1), *u = kiln_in(g, n, 2);
  if (!ix || !u) return kiln__err(err, KILN_EINVAL, "needs data, indices and updates");
  if (ix->dtype != KILN_DT_INT64) return kiln__err(err, KILN_EINVAL, "indices must be int64");
  if (ix->rank < 1) return kiln__err(err, KILN_ESHAPE, "indices must have rank >= 1");
  int64_t k = ix->dims[ix->rank - 1];
  if (k < 0 || k > a->rank) return kiln__err(err, KILN_ESHAPE, "index depth %lld > data rank %d", (long long)k, a->rank);
  /* updates shape = indices.shape[:-1] + data.shape[k:] */
  if (u->dtype != a->dtype || u->rank != ix->rank - 1 + a->rank - (int)k) return kiln__err(err, KILN_ESHAPE, "updates shape does not match");
  for (int i = 0; i < ix->rank - 1; i++)
    if (u->dims[i] != ix->dims[i]) return kiln__err(err, KILN_ESHAPE, "updates shape does not match");
  for (int i = (int)k; i < a->rank; i++)
    if (u->dims[ix->rank - 1 + i - k] != a->dims[i]) return kiln__err(err, KILN_ESHAPE, "updates shape does not match");
  if (reduction(n) < 0) return kiln__err(err, KILN_EUNSUPPORTED, "reduction '%s'", kiln_attr_str(n, "reduction", ""));
  kiln_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  return 0;
}

static int scatter_nd_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *ix = kiln_in(g, n, 1);
  int k = (int)ix->dims[ix->rank - 1], red = reduction(n);
  memcpy(out[0], in[0], kiln_value_bytes(a));
  int64_t as[MAXR];
  kiln_strides(a->rank, a->dims, as);
  int64_t Q = prod(ix->dims, 0, ix->rank - 1), S = prod(a->dims, k, a->rank);
  const int64_t *id = in[1];
  for (int64_t q = 0; q < Q; q++) {
    int64_t off = 0;
    for (int j = 0; j < k; j++) {
      int64_t v = wrap_index(id[q * k + j], a->dims[j]);
      if (v < 0) return kiln__err(err, KILN_EINVAL, "index out of range");
      off += v * as[j];
    }
    for (int64_t s = 0; s < S; s++) ref_reduce(out[0], a->dtype, off + s, in[2], q * S + s, red);
  }
  return 0;
}

static int scatter_nd_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *ix = kiln_in(x->g, n, 1);
  cl_mem yb = kiln_out_buf(x, n, 0);
  if (dev_copy(x, kiln_in_buf(x, n, 0), yb, kiln_value_bytes(a), err)) return err->status;
  int k = (int)ix->dims[ix->rank - 1], red = reduction(n);
  int64_t Q = prod(ix->dims, 0, ix->rank - 1), S = prod(a->dims, k, a->rank);
  if (Q <= 0 || S <= 0) return 0;
  int64_t as[MAXR], meta[3 + 2 * MAXR] = {0};
  kiln_strides(a->rank, a->dims, as);
  meta[0] = k;
  meta[1] = Q;
  meta[2] = S;
  for (int j = 0; j < k; j++) { meta[3 + j] = a->dims[j]; meta[3 + MAXR + j] = as[j]; }
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  cl_kernel kk = kscatter(x, a->dtype, red ? "mvs_scatter_nd_red" : "mvs_scatter_nd", err);
  if (!kk) return err->status;
  cl_mem ib = kiln_in_buf(x, n, 1), ub = kiln_in_buf(x, n, 2);
  cl_int ic = ix->dtype, cr = red;
  cl_long cn = red ? S : Q * S;
  int rc = red ? kiln_cl_args(kk, err, KARG(yb), KARG(ib), KARG(ub), KARG(mb), KARG(ic), KARG(cr), KARG(cn), KEND)
               : kiln_cl_args(kk, err, KARG(yb), KARG(ib), KARG(ub), KARG(mb), KARG(ic), KARG(cn), KEND);
  if (rc) return err->status;
  return launch1(x, kk, cn, err);
}

/* ---- Pad ----------------------------------------------------------------- */

/* Pads (begin/end per axis) and mode (0 constant, 1 reflect, 2 edge, 3 wrap). */
static int pad_params(kiln_graph *g, kiln_node *n, int64_t *pb, int64_t *pe, int *mode, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int r = a->rank;
  for (int i = 0; i < r; i++) pb[i] = pe[i] = 0;
  const char *m = kiln_attr_str(n, "mode", "constant");
  *mode = !strcmp(m, "constant") ? 0 : !strcmp(m, "reflect") ? 1 : !strcmp(m, "edge") ? 2 : !strcmp(m, "wrap") ? 3 : -1;
  if (*mode < 0) return kiln__err(err, KILN_EUNSUPPORTED, "pad mode '%s'", m);
  int64_t p[2 * MAXR], axes[MAXR];
  int np, na = r;
  for (int i = 0; i < r; i++) axes[i] = i;
  if (n->opset < 11) {
    const int64_t *v;
    np = kiln_attr_ints(n, n->opset < 2 ? "paddings" : "pads", &v);
    if (np < 0) np = kiln_attr_ints(n, "pads", &v);
    if (np < 0 || np > 2 * MAXR) return kiln__err(err, KILN_EINVAL, "needs the 'pads' attribute");
    memcpy(p, v, sizeof(int64_t) * (size_t)np);
  } else {
    kiln_value *vp = kiln_in(g, n, 1), *va = kiln_in(g, n, 3);
    if (!vp) return kiln__err(err, KILN_EINVAL, "needs pads");
    if (!vp->data) return not_known(err, vp);
    if ((np = read_ints(vp, p, 2 * MAXR)) < 0) return kiln__err(err, KILN_EINVAL, "too many pads");
    if (va) {
      if (!va->data) return not_known(err, va);
      if ((na = read_ints(va, axes, MAXR)) < 0) return kiln__err(err, KILN_EINVAL, "too many axes");
    }
  }
  if (np != 2 * na) return kiln__err(err, KILN_ESHAPE, "pads has %d entries for %d axes", np, na);
  for (int i = 0; i < na; i++) {
    int ax = kiln_axis(axes[i], r);
    if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis %lld out of range", (long long)axes[i]);
    pb[ax] = p[i];
    pe[ax] = p[na + i];
  }
  for (int i = 0; i < r; i++) {
    int64_t o = a->dims[i] + pb[i] + pe[i];
    if (o < 0) return kiln__err(err, KILN_ESHAPE, "negative output size on axis %d", i);
    if (*mode && a->dims[i] == 0 && o > 0) return kiln__err(err, KILN_ESHAPE, "mode '%s' cannot pad an empty axis", m);
  }
  return 0;
}

static int pad_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t pb[MAXR], pe[MAXR], d[MAXR];
  int mode;
  if (pad_params(g, n, pb, pe, &mode, err)) return err->status;
  for (int i = 0; i < a->rank; i++) d[i] = a->dims[i] + pb[i] + pe[i];
  kiln_set_out(g, n, 0, a->dtype, a->rank, d);
  return 0;
}

/* Bits of the attribute pad value (opset < 11) or zero. */
static void pad_attr_value(kiln_node *n, int dtype, unsigned char *bits) {
  value_bits(dtype, n->opset < 11 ? kiln_attr_float(n, "value", 0.0f) : 0.0, bits);
}

static int pad_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t pb[MAXR], pe[MAXR], as[MAXR], c[MAXR];
  int mode;
  if (pad_params(g, n, pb, pe, &mode, err)) return err->status;
  unsigned char cv[8];
  pad_attr_value(n, a->dtype, cv);
  size_t es = kiln_dtype_size(a->dtype);
  if (n->opset >= 11 && in[2] && kiln_value_numel(kiln_in(g, n, 2)) > 0) memcpy(cv, in[2], es);
  kiln_strides(a->rank, a->dims, as);
  for (int64_t i = 0, t = kiln_value_numel(y); i < t; i++) {
    unravel(i, y->rank, y->dims, c);
    int64_t off = 0;
    bool constant = false;
    for (int k = 0; k < a->rank && !constant; k++) {
      int64_t d = a->dims[k], p = c[k] - pb[k];
      if (p < 0 || p >= d) {
        if (mode == 0) { constant = true; break; }
        if (mode == 2) p = p < 0 ? 0 : d - 1;
        else if (mode == 3) p = ((p % d) + d) % d;
        else if (d == 1) p = 0;
        else while (p < 0 || p >= d) p = p < 0 ? -p : 2 * (d - 1) - p;
      }
      off += p * as[k];
    }
    if (constant) memcpy((char *)out[0] + i * (int64_t)es, cv, es);
    else ecopy(out[0], i, in[0], off, es);
  }
  return 0;
}

static int pad_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int64_t pb[MAXR], pe[MAXR];
  int mode;
  if (pad_params(x->g, n, pb, pe, &mode, err)) return err->status;
  int64_t total = kiln_value_numel(y);
  if (total <= 0) return 0;
  int64_t meta[1 + 4 * MAXR] = {0};
  meta[0] = a->rank;
  for (int i = 0; i < a->rank; i++) { meta[1 + i] = y->dims[i]; meta[1 + MAXR + i] = a->dims[i]; meta[1 + 3 * MAXR + i] = pb[i]; }
  kiln_strides(a->rank, a->dims, meta + 1 + 2 * MAXR);
  cl_mem mb = kiln_exec_param(x, n, 0, meta, sizeof meta, err);
  if (!mb) return err->status;
  cl_mem cvb;
  kiln_value *cvv = n->opset >= 11 ? kiln_in(x->g, n, 2) : NULL;
  if (cvv && kiln_value_numel(cvv) > 0) cvb = kiln_in_buf(x, n, 2);
  else {
    unsigned char cv[8];
    pad_attr_value(n, a->dtype, cv);
    if (!(cvb = kiln_exec_param(x, n, 1, cv, kiln_dtype_size(a->dtype), err))) return err->status;
  }
  cl_kernel k = kbits(x, kiln_dtype_size(a->dtype), "mv_pad", err);
  if (!k) return err->status;
  cl_mem xb = kiln_in_buf(x, n, 0), yb = kiln_out_buf(x, n, 0);
  /* an empty input is only padded with the constant */
  cl_mem xsrc = kiln_value_numel(a) > 0 ? xb : cvb;
  cl_int md = mode;
  cl_long cn = total;
  if (kiln_cl_args(k, err, KARG(xsrc), KARG(yb), KARG(cvb), KARG(mb), KARG(md), KARG(cn), KEND)) return err->status;
  return launch1(x, k, total, err);
}

/* ---- Shape, Size, Constant, ConstantOfShape, Range ----------------------- */

static int shape_range(kiln_node *n, int r, int64_t *s, int64_t *e) {
  int64_t a = kiln_attr_int(n, "start", 0), b = kiln_attr_int(n, "end", r);
  if (a < 0) a += r;
  if (b < 0) b += r;
  a = a < 0 ? 0 : a > r ? r : a;
  b = b < 0 ? 0 : b > r ? r : b;
  *s = a;
  *e = b < a ? a : b;
  return 0;
}

static int shape_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t s, e;
  shape_range(n, a->rank, &s, &e);
  int64_t cnt = e - s;
  int64_t *d = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
  if (!d) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int64_t i = 0; i < cnt; i++) d[i] = a->dims[s + i];
  out_data(g, n, 0, KILN_DT_INT64, 1, &cnt, d);
  return 0;
}

static int shape_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)in; (void)err;
  kiln_value *a = kiln_in(g, n, 0);
  int64_t s, e;
  shape_range(n, a->rank, &s, &e);
  for (int64_t i = s; i < e; i++) ((int64_t *)out[0])[i - s] = a->dims[i];
  return 0;
}

static int size_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int64_t *d = malloc(sizeof(int64_t));
  if (!d) return kiln__err(err, KILN_ENOMEM, "out of memory");
  *d = kiln_value_numel(kiln_in(g, n, 0));
  out_data(g, n, 0, KILN_DT_INT64, 0, NULL, d);
  return 0;
}

static int size_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)in; (void)err;
  *(int64_t *)out[0] = kiln_value_numel(kiln_in(g, n, 0));
  return 0;
}

/* The Constant's value as a (dtype, rank, dims, data pointer); data is not owned. */
static int constant_value(kiln_node *n, int *dt, int *rank, int64_t *dims, const void **data, kiln_error *err) {
  const kiln_attr *a;
  if ((a = kiln_attr_find(n, "value")) && a->type == KILN_ATTR_TENSOR && a->t) {
    if (!kiln_dtype_size(a->t->dtype)) return kiln__err(err, KILN_EUNSUPPORTED, "Constant of type %s", kiln_dtype_name(a->t->dtype));
    *dt = a->t->dtype;
    *rank = a->t->rank;
    memcpy(dims, a->t->dims, sizeof(int64_t) * (size_t)a->t->rank);
    *data = a->t->data;
    return 0;
  }
  if ((a = kiln_attr_find(n, "value_float")) && a->type == KILN_ATTR_FLOAT) { *dt = KILN_DT_FLOAT; *rank = 0; *data = &a->f; return 0; }
  if ((a = kiln_attr_find(n, "value_int")) && a->type == KILN_ATTR_INT) { *dt = KILN_DT_INT64; *rank = 0; *data = &a->i; return 0; }
  if ((a = kiln_attr_find(n, "value_floats")) && a->type == KILN_ATTR_FLOATS) { *dt = KILN_DT_FLOAT; *rank = 1; dims[0] = a->n; *data = a->floats; return 0; }
  if ((a = kiln_attr_find(n, "value_ints")) && a->type == KILN_ATTR_INTS) { *dt = KILN_DT_INT64; *rank = 1; dims[0] = a->n; *data = a->ints; return 0; }
  return kiln__err(err, KILN_EUNSUPPORTED, "Constant without a supported value (sparse and string values are not supported)");
}

static int constant_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt, rank;
  int64_t dims[MAXR];
  const void *src;
  if (constant_value(n, &dt, &rank, dims, &src, err)) return err->status;
  size_t b = (size_t)prod(dims, 0, rank) * kiln_dtype_size(dt);
  void *d = malloc(b ? b : 1);
  if (!d) return kiln__err(err, KILN_ENOMEM, "out of memory");
  if (b) memcpy(d, src, b);
  out_data(g, n, 0, dt, rank, dims, d);
  return 0;
}

static int constant_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)in;
  int dt, rank;
  int64_t dims[MAXR];
  const void *src;
  if (constant_value(n, &dt, &rank, dims, &src, err)) return err->status;
  size_t b = kiln_value_bytes(kiln_out(g, n, 0));
  if (b) memcpy(out[0], src, b);
  return 0;
}

/* ConstantOfShape's fill value: dtype and bits. */
static int cos_value(kiln_node *n, int *dt, unsigned char *bits, kiln_error *err) {
  const kiln_attr *a = kiln_attr_find(n, "value");
  memset(bits, 0, 8);
  *dt = KILN_DT_FLOAT;
  if (!a) return 0;
  if (a->type != KILN_ATTR_TENSOR || !a->t || kiln_tensor_numel(a->t) != 1 || !kiln_dtype_size(a->t->dtype))
    return kiln__err(err, KILN_EUNSUPPORTED, "'value' must be a one-element numeric tensor");
  *dt = a->t->dtype;
  memcpy(bits, a->t->data, kiln_dtype_size(*dt));
  return 0;
}

static int cos_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *s = kiln_in(g, n, 0);
  if (!s->data) return not_known(err, s);
  int64_t d[MAXR];
  int r = read_ints(s, d, MAXR), dt;
  if (r < 0) return kiln__err(err, KILN_EUNSUPPORTED, "rank > %d", MAXR);
  for (int i = 0; i < r; i++)
    if (d[i] < 0) return kiln__err(err, KILN_ESHAPE, "negative dimension");
  unsigned char bits[8];
  if (cos_value(n, &dt, bits, err)) return err->status;
  size_t es = kiln_dtype_size(dt), b = (size_t)prod(d, 0, r) * es;
  if (s->is_const || b > DIRECT_LIMIT) { kiln_set_out(g, n, 0, dt, r, d); return 0; } /* folded by ref, or filled on the device */
  char *data = malloc(b ? b : 1);
  if (!data) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (size_t i = 0; i < b; i += es) memcpy(data + i, bits, es);
  out_data(g, n, 0, dt, r, d, data);
  return 0;
}

static int cos_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)in;
  kiln_value *y = kiln_out(g, n, 0);
  unsigned char bits[8];
  int dt;
  if (cos_value(n, &dt, bits, err)) return err->status;
  size_t es = kiln_dtype_size(dt);
  for (int64_t i = 0, t = kiln_value_numel(y); i < t; i++) memcpy((char *)out[0] + i * (int64_t)es, bits, es);
  return 0;
}

static int cos_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *y = kiln_out(x->g, n, 0);
  unsigned char bits[8];
  int dt;
  if (cos_value(n, &dt, bits, err)) return err->status;
  return dev_fill(x, kiln_out_buf(x, n, 0), dt, kiln_value_numel(y), bits, err);
}

static int range_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)err;
  kiln_value *y = kiln_out(g, n, 0);
  int dt = y->dtype;
  int64_t t = kiln_value_numel(y);
  if (kiln_dtype_is_float(dt)) {
    double s = kiln_load_f(in[0], dt, 0), d = kiln_load_f(in[2], dt, 0);
    for (int64_t i = 0; i < t; i++) kiln_store_f(out[0], dt, i, s + (double)i * d);
  } else {
    int64_t s = kiln_load_i(in[0], dt, 0), d = kiln_load_i(in[2], dt, 0);
    for (int64_t i = 0; i < t; i++) kiln_store_i(out[0], dt, i, s + i * d);
  }
  return 0;
}

static int range_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *v[3] = {kiln_in(g, n, 0), kiln_in(g, n, 1), kiln_in(g, n, 2)};
  for (int i = 0; i < 3; i++) {
    if (!v[i]) return kiln__err(err, KILN_EINVAL, "needs start, limit and delta");
    if (!v[i]->data) return not_known(err, v[i]);
    if (kiln_value_numel(v[i]) != 1) return kiln__err(err, KILN_ESHAPE, "'%s' must be a scalar", v[i]->name);
  }
  int dt = v[0]->dtype;
  int64_t cnt;
  if (kiln_dtype_is_float(dt)) {
    double s = kiln_value_getf(v[0], 0), l = kiln_value_getf(v[1], 0), d = kiln_value_getf(v[2], 0);
    if (d == 0 || d != d) return kiln__err(err, KILN_EINVAL, "delta must be nonzero");
    double c = ceil((l - s) / d);
    cnt = c > 0 ? (int64_t)c : 0;
  } else {
    int64_t s = kiln_value_geti(v[0], 0), l = kiln_value_geti(v[1], 0), d = kiln_value_geti(v[2], 0);
    if (d == 0) return kiln__err(err, KILN_EINVAL, "delta must be nonzero");
    cnt = d > 0 ? (l > s ? (l - s - 1) / d + 1 : 0) : (s > l ? (s - l - 1) / (-d) + 1 : 0);
  }
  size_t es = kiln_dtype_size(dt);
  if ((size_t)cnt * es > ((size_t)256 << 20)) return kiln__err(err, KILN_EUNSUPPORTED, "Range of %lld elements", (long long)cnt);
  kiln_set_out(g, n, 0, dt, 1, &cnt);
  void *data = calloc((size_t)cnt + 1, es);
  if (!data) return kiln__err(err, KILN_ENOMEM, "out of memory");
  void *ins[3] = {v[0]->data, v[1]->data, v[2]->data}, *outs[1] = {data};
  int rc = range_ref(g, n, ins, outs, err);
  if (rc) { free(data); return rc; }
  out_data(g, n, 0, dt, 1, &cnt, data);
  return 0;
}

/* ---- OneHot, Trilu, EyeLike, ReverseSequence ----------------------------- */

static int onehot_params(kiln_graph *g, kiln_node *n, int *axis, int64_t *depth, kiln_error *err) {
  kiln_value *ix = kiln_in(g, n, 0), *dv = kiln_in(g, n, 1), *vals = kiln_in(g, n, 2);
  if (!dv || !vals) return kiln__err(err, KILN_EINVAL, "needs indices, depth and values");
  if (!dv->data) return not_known(err, dv);
  if (kiln_value_numel(vals) != 2) return kiln__err(err, KILN_ESHAPE, "values must have 2 elements");
  *depth = kiln_dtype_is_float(dv->dtype) ? (int64_t)kiln_value_getf(dv, 0) : kiln_value_geti(dv, 0);
  if (*depth < 0) return kiln__err(err, KILN_ESHAPE, "negative depth");
  int64_t a = kiln_attr_int(n, "axis", -1);
  if (a < 0) a += ix->rank + 1;
  if (a < 0 || a > ix->rank) return kiln__err(err, KILN_ESHAPE, "axis out of range");
  if (ix->rank + 1 > MAXR) return kiln__err(err, KILN_EUNSUPPORTED, "output rank > %d", MAXR);
  *axis = (int)a;
  return 0;
}

static int onehot_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *ix = kiln_in(g, n, 0);
  int ax;
  int64_t depth, d[MAXR];
  if (onehot_params(g, n, &ax, &depth, err)) return err->status;
  for (int i = 0, k = 0; i <= ix->rank; i++) d[i] = i == ax ? depth : ix->dims[k++];
  kiln_set_out(g, n, 0, kiln_in(g, n, 2)->dtype, ix->rank + 1, d);
  return 0;
}

static int onehot_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *ix = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int ax;
  int64_t depth;
  if (onehot_params(g, n, &ax, &depth, err)) return err->status;
  int64_t outer = prod(ix->dims, 0, ax), inner = prod(ix->dims, ax, ix->rank);
  size_t es = kiln_dtype_size(y->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < inner; k++) {
      int64_t v = kiln_load_i(in[0], ix->dtype, o * inner + k);
      if (v < 0) v += depth;
      for (int64_t d = 0; d < depth; d++) ecopy(out[0], (o * depth + d) * inner + k, in[2], v == d ? 1 : 0, es);
    }
  return 0;
}

static int onehot_check(kiln_graph *g, kiln_node *n, kiln_error *err) {
  int dt = kiln_in(g, n, 0)->dtype;
  if (dt == KILN_DT_FLOAT16 || !kiln_dtype_size(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "indices of type %s", kiln_dtype_name(dt));
  return 0;
}

static int onehot_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *ix = kiln_in(x->g, n, 0), *y = kiln_out(x->g, n, 0);
  int ax;
  int64_t depth;
  if (onehot_params(x->g, n, &ax, &depth, err)) return err->status;
  int64_t total = kiln_value_numel(y);
  if (total <= 0) return 0;
  cl_kernel k = kbits(x, kiln_dtype_size(y->dtype), "mv_onehot", err);
  if (!k) return err->status;
  cl_mem ib = kiln_in_buf(x, n, 0), vb = kiln_in_buf(x, n, 2), yb = kiln_out_buf(x, n, 0);
  cl_long cd = depth, ci = prod(ix->dims, ax, ix->rank), cn = total;
  cl_int ic = ix->dtype;
  if (kiln_cl_args(k, err, KARG(ib), KARG(vb), KARG(yb), KARG(cd), KARG(ci), KARG(ic), KARG(cn), KEND)) return err->status;
  return launch1(x, k, total, err);
}

static int trilu_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *k = kiln_in(g, n, 1);
  if (a->rank < 2) return kiln__err(err, KILN_ESHAPE, "input rank must be >= 2");
  if (k && (kiln_value_numel(k) != 1 || !is_index_type(k->dtype))) return kiln__err(err, KILN_ESHAPE, "k must be an integer scalar");
  kiln_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  return 0;
}

static int trilu_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)err;
  kiln_value *a = kiln_in(g, n, 0), *kv = kiln_in(g, n, 1);
  int64_t k = kv ? kiln_load_i(in[1], kv->dtype, 0) : 0;
  bool upper = kiln_attr_int(n, "upper", 1) != 0;
  int64_t R = a->dims[a->rank - 2], C = a->dims[a->rank - 1];
  size_t es = kiln_dtype_size(a->dtype);
  memset(out[0], 0, kiln_value_bytes(a));
  for (int64_t b = 0, B = prod(a->dims, 0, a->rank - 2); b < B; b++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++)
        if (upper ? j >= i + k : j <= i + k) ecopy(out[0], (b * R + i) * C + j, in[0], (b * R + i) * C + j, es);
  return 0;
}

static int trilu_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0), *kv = kiln_in(x->g, n, 1);
  int64_t total = kiln_value_numel(a);
  if (total <= 0) return 0;
  cl_mem kb;
  if (kv && kv->dtype == KILN_DT_INT64) kb = kiln_in_buf(x, n, 1);
  else {
    int64_t k = kv ? (kv->data ? kiln_value_geti(kv, 0) : 0) : 0;
    if (kv && !kv->data) return kiln__err(err, KILN_EUNSUPPORTED, "int32 k must be known at plan time");
    if (!(kb = kiln_exec_param(x, n, 0, &k, sizeof k, err))) return err->status;
  }
  cl_kernel kk = kbits(x, kiln_dtype_size(a->dtype), "mv_trilu", err);
  if (!kk) return err->status;
  cl_mem xb = kiln_in_buf(x, n, 0), yb = kiln_out_buf(x, n, 0);
  cl_long R = a->dims[a->rank - 2], C = a->dims[a->rank - 1], cn = total;
  cl_int up = kiln_attr_int(n, "upper", 1) != 0;
  if (kiln_cl_args(kk, err, KARG(xb), KARG(yb), KARG(kb), KARG(R), KARG(C), KARG(up), KARG(cn), KEND)) return err->status;
  return launch1(x, kk, total, err);
}

static int eyelike_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  if (a->rank != 2) return kiln__err(err, KILN_ESHAPE, "input must be 2-D");
  int dt = (int)kiln_attr_int(n, "dtype", a->dtype);
  if (!kiln_dtype_size(dt)) return kiln__err(err, KILN_EUNSUPPORTED, "dtype %s", kiln_dtype_name(dt));
  kiln_set_out(g, n, 0, dt, 2, a->dims);
  return 0;
}

static int eyelike_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)in; (void)err;
  kiln_value *y = kiln_out(g, n, 0);
  int64_t k = kiln_attr_int(n, "k", 0);
  for (int64_t i = 0; i < y->dims[0]; i++)
    for (int64_t j = 0; j < y->dims[1]; j++) kiln_store_i(out[0], y->dtype, i * y->dims[1] + j, j - i == k);
  return 0;
}

static int eyelike_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *y = kiln_out(x->g, n, 0);
  int64_t total = kiln_value_numel(y);
  if (total <= 0) return 0;
  size_t es = kiln_dtype_size(y->dtype);
  unsigned char one[8];
  value_bits(y->dtype, 1, one);
  cl_kernel k = kbits(x, es, "mv_eye", err);
  if (!k) return err->status;
  cl_mem yb = kiln_out_buf(x, n, 0);
  cl_long C = y->dims[1], kk = kiln_attr_int(n, "k", 0), cn = total;
  if (kiln_cl_args(k, err, KARG(yb), es, (const void *)one, KARG(C), KARG(kk), KARG(cn), KEND)) return err->status;
  return launch1(x, k, total, err);
}

static int revseq_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *l = kiln_in(g, n, 1);
  int ta = kiln_axis(kiln_attr_int(n, "time_axis", 0), a->rank), ba = kiln_axis(kiln_attr_int(n, "batch_axis", 1), a->rank);
  if (a->rank < 2 || ta < 0 || ba < 0 || ta == ba || ta > 1 || ba > 1) return kiln__err(err, KILN_ESHAPE, "bad time/batch axes");
  if (!l || kiln_value_numel(l) != a->dims[ba] || !is_index_type(l->dtype)) return kiln__err(err, KILN_ESHAPE, "sequence_lens must have one integer per batch");
  kiln_set_out(g, n, 0, a->dtype, a->rank, a->dims);
  return 0;
}

static int revseq_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *l = kiln_in(g, n, 1);
  int ta = kiln_axis(kiln_attr_int(n, "time_axis", 0), a->rank), ba = kiln_axis(kiln_attr_int(n, "batch_axis", 1), a->rank);
  int64_t as[MAXR], c[MAXR];
  kiln_strides(a->rank, a->dims, as);
  size_t es = kiln_dtype_size(a->dtype);
  for (int64_t i = 0, t = kiln_value_numel(a); i < t; i++) {
    unravel(i, a->rank, a->dims, c);
    int64_t L = kiln_load_i(in[1], l->dtype, c[ba]);
    if (L < 0 || L > a->dims[ta]) return kiln__err(err, KILN_EINVAL, "sequence length %lld out of range", (long long)L);
    int64_t src = c[ta] < L ? L - 1 - c[ta] : c[ta];
    ecopy(out[0], i, in[0], i + (src - c[ta]) * as[ta], es);
  }
  return 0;
}

static int revseq_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0);
  int64_t total = kiln_value_numel(a);
  if (total <= 0) return 0;
  int64_t meta[3 + 2 * MAXR] = {0};
  meta[0] = a->rank;
  meta[1] = kiln_axis(kiln_attr_int(n, "time_axis", 0), a->rank);
  meta[2] = kiln_axis(kiln_attr_int(n, "batch_axis", 1), a->rank);
  for (int i = 0; i < a->rank; i++) meta[3 + i] = a->dims[i];
  kiln_strides(a->rank, a->dims, meta + 3 + MAXR);
  return launch_meta2(x, n, "mv_revseq", (int)kiln_dtype_size(a->dtype), meta, sizeof meta, total, err);
}

/* ---- NonZero, Compress, Unique (data-dependent shapes) ------------------- */

static bool elem_nonzero(const void *p, int dt, int64_t k) {
  return kiln_dtype_is_float(dt) ? kiln_load_f(p, dt, k) != 0 : kiln_load_i(p, dt, k) != 0;
}

static int nonzero_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  if (!a->data) return not_known(err, a);
  int64_t t = kiln_value_numel(a), nz = 0, c[MAXR];
  for (int64_t i = 0; i < t; i++) nz += elem_nonzero(a->data, a->dtype, i);
  int64_t d[2] = {a->rank, nz};
  int64_t *o = malloc(sizeof(int64_t) * (size_t)(a->rank * nz + 1));
  if (!o) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int64_t i = 0, j = 0; i < t; i++) {
    if (!elem_nonzero(a->data, a->dtype, i)) continue;
    unravel(i, a->rank, a->dims, c);
    for (int k = 0; k < a->rank; k++) o[k * nz + j] = c[k];
    j++;
  }
  out_data(g, n, 0, KILN_DT_INT64, 2, d, o);
  return 0;
}

static int nonzero_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  (void)err;
  kiln_value *a = kiln_in(g, n, 0), *y = kiln_out(g, n, 0);
  int64_t nz = y->dims[1], c[MAXR];
  int64_t *o = out[0];
  for (int64_t i = 0, j = 0, t = kiln_value_numel(a); i < t && j < nz; i++) {
    if (!elem_nonzero(in[0], a->dtype, i)) continue;
    unravel(i, a->rank, a->dims, c);
    for (int k = 0; k < a->rank; k++) o[k * nz + j] = c[k];
    j++;
  }
  return 0;
}

/* Compress: view of the input as [O, A, N] and the selected indices along A. */
static int compress_params(kiln_graph *g, kiln_node *n, int64_t *O, int64_t *A, int64_t *N, int64_t **sel, int64_t *ns, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *c = kiln_in(g, n, 1);
  if (!c) return kiln__err(err, KILN_EINVAL, "needs a condition");
  if (!c->data) return not_known(err, c);
  const kiln_attr *at = kiln_attr_find(n, "axis");
  if (at) {
    int ax = kiln_axis(at->i, a->rank);
    if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis out of range");
    *O = prod(a->dims, 0, ax); *A = a->dims[ax]; *N = prod(a->dims, ax + 1, a->rank);
  } else { *O = 1; *A = kiln_value_numel(a); *N = 1; }
  int64_t m = kiln_value_numel(c);
  if (m > *A) m = *A;
  *sel = malloc(sizeof(int64_t) * (size_t)(m + 1));
  if (!*sel) return kiln__err(err, KILN_ENOMEM, "out of memory");
  *ns = 0;
  for (int64_t i = 0; i < m; i++)
    if (kiln_value_geti(c, i)) (*sel)[(*ns)++] = i;
  return 0;
}

static int compress_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  int64_t O, A, N, *sel, ns;
  if (compress_params(g, n, &O, &A, &N, &sel, &ns, err)) return err->status;
  free(sel);
  const kiln_attr *at = kiln_attr_find(n, "axis");
  if (at) {
    int64_t d[MAXR];
    memcpy(d, a->dims, sizeof d);
    d[kiln_axis(at->i, a->rank)] = ns;
    kiln_set_out(g, n, 0, a->dtype, a->rank, d);
  } else kiln_set_out(g, n, 0, a->dtype, 1, &ns);
  return 0;
}

static int compress_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0), *c = kiln_in(g, n, 1);
  const kiln_attr *at = kiln_attr_find(n, "axis");
  int64_t O = 1, A = kiln_value_numel(a), N = 1;
  if (at) {
    int ax = kiln_axis(at->i, a->rank);
    O = prod(a->dims, 0, ax); A = a->dims[ax]; N = prod(a->dims, ax + 1, a->rank);
  }
  size_t es = kiln_dtype_size(a->dtype);
  int64_t m = kiln_value_numel(c), j = 0;
  (void)err;
  for (int64_t o = 0; o < O; o++)
    for (int64_t i = 0; i < A && i < m; i++)
      if (kiln_load_i(in[1], c->dtype, i))
        for (int64_t k = 0; k < N; k++) ecopy(out[0], j++, in[0], (o * A + i) * N + k, es);
  return 0;
}

static int compress_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(x->g, n, 0);
  int64_t O, A, N, *sel, ns;
  if (compress_params(x->g, n, &O, &A, &N, &sel, &ns, err)) return err->status;
  cl_mem sb = ns ? kiln_exec_param(x, n, 0, sel, sizeof(int64_t) * (size_t)ns, err) : NULL;
  free(sel);
  if (ns && !sb) return err->status;
  if (!ns) return 0;
  return dev_gather(x, kiln_dtype_size(a->dtype), kiln_in_buf(x, n, 0), sb, kiln_out_buf(x, n, 0), O, A, N, ns, KILN_DT_INT64, err);
}

/* Unique: slices j < M of the input viewed as [outer, M, inner]. */
typedef struct uctx {
  const void *p;
  int dt;
  int64_t outer, M, inner;
} uctx;

static int ucmp(const uctx *u, int64_t a, int64_t b) {
  for (int64_t o = 0; o < u->outer; o++)
    for (int64_t k = 0; k < u->inner; k++) {
      int64_t ia = (o * u->M + a) * u->inner + k, ib = (o * u->M + b) * u->inner + k;
      if (kiln_dtype_is_float(u->dt)) {
        double x = kiln_load_f(u->p, u->dt, ia), y = kiln_load_f(u->p, u->dt, ib);
        if (x != y) return x < y ? -1 : 1;
      } else if (u->dt == KILN_DT_UINT64) {
        uint64_t x = ((const uint64_t *)u->p)[ia], y = ((const uint64_t *)u->p)[ib];
        if (x != y) return x < y ? -1 : 1;
      } else {
        int64_t x = kiln_load_i(u->p, u->dt, ia), y = kiln_load_i(u->p, u->dt, ib);
        if (x != y) return x < y ? -1 : 1;
      }
    }
  return 0;
}

/* Stable merge sort of idx[0..n) by slice order. */
static void usort(const uctx *u, int64_t *idx, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  usort(u, idx, tmp, h);
  usort(u, idx + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = ucmp(u, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
}

/* Groups of equal slices: *U groups; first[u] (first occurrence), cnt[u] and
 * inv[j] (group of slice j), groups sorted or in order of first occurrence. */
static int unique_groups(kiln_graph *g, kiln_node *n, const void *xd, uctx *u, int64_t *U, int64_t **first, int64_t **cnt, int64_t **inv, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  const kiln_attr *at = kiln_attr_find(n, "axis");
  u->p = xd;
  u->dt = a->dtype;
  if (at) {
    int ax = kiln_axis(at->i, a->rank);
    if (ax < 0) return kiln__err(err, KILN_ESHAPE, "axis out of range");
    u->outer = prod(a->dims, 0, ax); u->M = a->dims[ax]; u->inner = prod(a->dims, ax + 1, a->rank);
  } else { u->outer = 1; u->M = kiln_value_numel(a); u->inner = 1; }
  int64_t M = u->M;
  int64_t *ord = malloc(sizeof(int64_t) * (size_t)(M + 1)), *tmp = malloc(sizeof(int64_t) * (size_t)(M + 1)), *grp = malloc(sizeof(int64_t) * (size_t)(M + 1));
  *first = malloc(sizeof(int64_t) * (size_t)(M + 1));
  *cnt = calloc((size_t)M + 1, sizeof(int64_t));
  *inv = malloc(sizeof(int64_t) * (size_t)(M + 1));
  if (!ord || !tmp || !grp || !*first || !*cnt || !*inv) {
    free(ord); free(tmp); free(grp); free(*first); free(*cnt); free(*inv);
    return kiln__err(err, KILN_ENOMEM, "out of memory");
  }
  for (int64_t j = 0; j < M; j++) ord[j] = j;
  usort(u, ord, tmp, M);
  int64_t ng = 0;
  for (int64_t j = 0; j < M; j++) {
    if (j == 0 || ucmp(u, ord[j - 1], ord[j]) != 0) ng++;
    grp[ord[j]] = ng - 1; /* sorted group id */
  }
  bool sorted = kiln_attr_int(n, "sorted", 1) != 0;
  int64_t *map = tmp; /* sorted group id -> output id */
  for (int64_t i = 0; i < ng; i++) map[i] = sorted ? i : -1;
  int64_t next = 0;
  for (int64_t j = 0; j < M; j++) {
    int64_t gi = grp[j];
    if (map[gi] < 0) map[gi] = next++;
    int64_t o = map[gi];
    if ((*cnt)[o]++ == 0) (*first)[o] = j;
    (*inv)[j] = o;
  }
  free(ord); free(tmp); free(grp);
  *U = ng;
  return 0;
}

/* Writes Unique's outputs into the buffers o[4] (any may be NULL). */
static void unique_write(kiln_graph *g, kiln_node *n, const uctx *u, int64_t U, const int64_t *first, const int64_t *cnt, const int64_t *inv, void **o) {
  size_t es = kiln_dtype_size(kiln_in(g, n, 0)->dtype);
  if (o[0])
    for (int64_t q = 0; q < u->outer; q++)
      for (int64_t i = 0; i < U; i++)
        memcpy((char *)o[0] + ((q * U + i) * u->inner) * (int64_t)es, (const char *)u->p + ((q * u->M + first[i]) * u->inner) * (int64_t)es, (size_t)u->inner * es);
  if (o[1]) memcpy(o[1], first, sizeof(int64_t) * (size_t)U);
  if (o[2]) memcpy(o[2], inv, sizeof(int64_t) * (size_t)u->M);
  if (o[3]) memcpy(o[3], cnt, sizeof(int64_t) * (size_t)U);
}

static int unique_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *a = kiln_in(g, n, 0);
  if (!a->data) return not_known(err, a);
  uctx u;
  int64_t U, *first, *cnt, *inv;
  if (unique_groups(g, n, a->data, &u, &U, &first, &cnt, &inv, err)) return err->status;
  const kiln_attr *at = kiln_attr_find(n, "axis");
  int64_t yd[MAXR];
  int yr = 1;
  if (at) { memcpy(yd, a->dims, sizeof yd); yd[kiln_axis(at->i, a->rank)] = U; yr = a->rank; }
  else yd[0] = U;
  size_t es = kiln_dtype_size(a->dtype);
  void *o[4] = {0};
  o[0] = kiln_has_out(n, 0) ? malloc((size_t)(u.outer * U * u.inner) * es + 1) : NULL;
  for (int i = 1; i < 4; i++) o[i] = kiln_has_out(n, i) ? malloc(sizeof(int64_t) * (size_t)((i == 2 ? u.M : U) + 1)) : NULL;
  bool oom = false;
  for (int i = 0; i < 4; i++) oom |= kiln_has_out(n, i) && !o[i];
  if (!oom) unique_write(g, n, &u, U, first, cnt, inv, o);
  free(first); free(cnt); free(inv);
  if (oom) { for (int i = 0; i < 4; i++) free(o[i]); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  int64_t du = U, dm = u.M;
  out_data(g, n, 0, a->dtype, yr, yd, o[0]);
  out_data(g, n, 1, KILN_DT_INT64, 1, &du, o[1]);
  out_data(g, n, 2, KILN_DT_INT64, 1, &dm, o[2]);
  out_data(g, n, 3, KILN_DT_INT64, 1, &du, o[3]);
  return 0;
}

static int unique_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  uctx u;
  int64_t U, *first, *cnt, *inv;
  if (unique_groups(g, n, in[0], &u, &U, &first, &cnt, &inv, err)) return err->status;
  void *o[4] = {0};
  for (int i = 0; i < 4 && i < n->nout; i++) o[i] = out[i];
  unique_write(g, n, &u, U, first, cnt, inv, o);
  free(first); free(cnt); free(inv);
  return 0;
}

/* ---- table ---------------------------------------------------------------- */

const kiln_op_def kiln_ops_movement[] = {
  {"Identity", identity_infer, copy_ref, copy_dev, NULL, NULL, KILN_OP_ALIAS | KILN_OP_HALF},
  {"Dropout", dropout_infer, dropout_ref, dropout_dev, NULL, NULL, KILN_OP_ALIAS},
  {"Reshape", reshape_infer, copy_ref, copy_dev, NULL, NULL, KILN_OP_ALIAS | KILN_OP_HALF},
  {"Flatten", flatten_infer, copy_ref, copy_dev, NULL, NULL, KILN_OP_ALIAS | KILN_OP_HALF},
  {"Squeeze", squeeze_infer, copy_ref, copy_dev, NULL, NULL, KILN_OP_ALIAS | KILN_OP_HALF},
  {"Unsqueeze", unsqueeze_infer, copy_ref, copy_dev, NULL, NULL, KILN_OP_ALIAS | KILN_OP_HALF},
  {"Transpose", transpose_infer, transpose_ref, transpose_dev, NULL, NULL, KILN_OP_HALF},
  {"Concat", concat_infer, concat_ref, concat_dev, NULL, NULL, KILN_OP_HALF | KILN_OP_CONCAT},
  {"Split", split_infer, split_ref, split_dev, NULL, NULL, KILN_OP_HALF},
  {"Slice", slice_infer, slice_ref, slice_dev, NULL, NULL, KILN_OP_HALF},
  {"Gather", gather_infer, gather_ref, gather_dev, NULL, NULL, KILN_OP_HALF},
  {"GatherElements", gather_el_infer, gather_el_ref, gather_el_dev, NULL, NULL},
  {"GatherND", gather_nd_infer, gather_nd_ref, gather_nd_dev, NULL, NULL},
  {"Scatter", scatter_el_infer, scatter_el_ref, scatter_el_dev, scatter_check, NULL},
  {"ScatterElements", scatter_el_infer, scatter_el_ref, scatter_el_dev, scatter_check, NULL},
  {"ScatterND", scatter_nd_infer, scatter_nd_ref, scatter_nd_dev, scatter_check, NULL},
  {"Expand", expand_infer, repeat_ref, expand_dev, NULL, NULL, KILN_OP_HALF},
  {"Tile", tile_infer, repeat_ref, tile_dev, NULL, NULL, KILN_OP_HALF},
  {"Pad", pad_infer, pad_ref, pad_dev, NULL, NULL},
  {"Shape", shape_infer, shape_ref, NULL, NULL, NULL},
  {"Size", size_infer, size_ref, NULL, NULL, NULL},
  {"ConstantOfShape", cos_infer, cos_ref, cos_dev, NULL, NULL},
  {"Constant", constant_infer, constant_ref, NULL, NULL, NULL},
  {"Range", range_infer, range_ref, NULL, NULL, NULL},
  {"DepthToSpace", d2s_infer, d2s_ref, d2s_dev, NULL, NULL, KILN_OP_HALF},
  {"SpaceToDepth", s2d_infer, s2d_ref, s2d_dev, NULL, NULL, KILN_OP_HALF},
  {"OneHot", onehot_infer, onehot_ref, onehot_dev, onehot_check, NULL},
  {"Trilu", trilu_infer, trilu_ref, trilu_dev, NULL, NULL},
  {"ReverseSequence", revseq_infer, revseq_ref, revseq_dev, NULL, NULL},
  {"EyeLike", eyelike_infer, eyelike_ref, eyelike_dev, NULL, NULL},
  {"NonZero", nonzero_infer, nonzero_ref, NULL, NULL, NULL},
  {"Compress", compress_infer, compress_ref, compress_dev, NULL, NULL},
  {"Unique", unique_infer, unique_ref, NULL, NULL, NULL},
  {NULL},
};
