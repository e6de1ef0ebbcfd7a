/* ops/sequence.c: ONNX sequence ops (SequenceEmpty, SequenceConstruct,
 * SequenceInsert, SequenceErase, SequenceAt, SequenceLength, SplitToSequence,
 * ConcatFromSequence).
 *
 * Sequences are resolved at plan time: a sequence value holds a kiln_seq that
 * lists views of tensor values (a whole tensor or a slice along one axis).
 * Positions must therefore be known when planning (constants or small integer
 * inputs, which sessions bind by value). The only device work is copying
 * element views into output tensors, done with rectangular buffer copies. */
#include "kiln_internal.h"

static kiln_seq *seq_new(int n, int elem_dtype) {
  kiln_seq *s = calloc(1, sizeof *s + sizeof(kiln_seq_item) * (size_t)(n > 0 ? n : 1));
  if (s) { s->n = n; s->elem_dtype = elem_dtype; }
  return s;
}

static int set_seq_out(kiln_graph *g, kiln_node *n, kiln_seq *s, kiln_error *err) {
  if (!s) return kiln__err(err, KILN_ENOMEM, "out of memory");
  kiln_value *o = kiln_out(g, n, 0);
  free(o->data);
  o->data = s;
  o->dtype = KILN_DT_SEQUENCE;
  o->rank = 0;
  return 0;
}

static const kiln_seq *seq_in(kiln_graph *g, kiln_node *n, int i, kiln_error *err) {
  kiln_value *v = kiln_in(g, n, i);
  if (!v || v->dtype != KILN_DT_SEQUENCE || !v->data) { kiln__err(err, KILN_EUNSUPPORTED, "input %d is not a sequence resolved at plan time", i); return NULL; }
  return v->data;
}

/* Reads an optional scalar position input; returns 0 and sets *pos, or an error. */
static int position(kiln_graph *g, kiln_node *n, int i, int64_t dflt, int64_t *pos, kiln_error *err) {
  kiln_value *v = kiln_in(g, n, i);
  if (!v) { *pos = dflt; return 0; }
  if (!v->data) return kiln__err(err, KILN_EUNSUPPORTED, "position input '%s' must be known at plan time (output shape depends on tensor data)", v->name);
  *pos = kiln_value_geti(v, 0);
  return 0;
}

/* Shape of a sequence element view. */
static void item_shape(kiln_graph *g, const kiln_seq_item *it, int *rank, int64_t *dims) {
  const kiln_value *v = &g->vals[it->vid];
  *rank = 0;
  for (int k = 0; k < v->rank; k++) {
    if (k == it->axis) {
      if (!it->keepdims) continue;
      dims[(*rank)++] = it->len;
    } else dims[(*rank)++] = v->dims[k];
  }
}

static int empty_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  return set_seq_out(g, n, seq_new(0, (int)kiln_attr_int(n, "dtype", KILN_DT_FLOAT)), err);
}

static int construct_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_seq *s = seq_new(n->nin, n->nin ? kiln_in(g, n, 0)->dtype : KILN_DT_FLOAT);
  if (!s) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < n->nin; i++) {
    if (!kiln_has_in(n, i)) { free(s); return kiln__err(err, KILN_EINVAL, "empty input %d", i); }
    s->items[i] = (kiln_seq_item){.vid = n->in[i], .axis = -1, .keepdims = 1};
  }
  return set_seq_out(g, n, s, err);
}

static int insert_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  const kiln_seq *in = seq_in(g, n, 0, err);
  if (!in) return err->status;
  int64_t pos;
  int rc = position(g, n, 2, in->n, &pos, err);
  if (rc) return rc;
  if (pos < 0) pos += in->n;
  if (pos < 0 || pos > in->n) return kiln__err(err, KILN_EINVAL, "position %lld out of range for a sequence of %d", (long long)pos, in->n);
  kiln_seq *s = seq_new(in->n + 1, in->elem_dtype);
  if (!s) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0, j = 0; i <= in->n; i++) {
    if (i == pos) s->items[i] = (kiln_seq_item){.vid = n->in[1], .axis = -1, .keepdims = 1};
    else s->items[i] = in->items[j++];
  }
  return set_seq_out(g, n, s, err);
}

static int erase_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  const kiln_seq *in = seq_in(g, n, 0, err);
  if (!in) return err->status;
  int64_t pos;
  int rc = position(g, n, 1, in->n - 1, &pos, err);
  if (rc) return rc;
  if (pos < 0) pos += in->n;
  if (pos < 0 || pos >= in->n) return kiln__err(err, KILN_EINVAL, "position %lld out of range for a sequence of %d", (long long)pos, in->n);
  kiln_seq *s = seq_new(in->n - 1, in->elem_dtype);
  if (!s) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0, j = 0; i < in->n; i++)
    if (i != pos) s->items[j++] = in->items[i];
  return set_seq_out(g, n, s, err);
}

static int length_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  const kiln_seq *in = seq_in(g, n, 0, err);
  if (!in) return err->status;
  kiln_value *o = kiln_out(g, n, 0);
  kiln_set_out(g, n, 0, KILN_DT_INT64, 0, NULL);
  free(o->data);
  o->data = malloc(sizeof(int64_t));
  if (!o->data) return kiln__err(err, KILN_ENOMEM, "out of memory");
  *(int64_t *)o->data = in->n;
  o->is_const = true;
  return 0;
}

static int split_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  kiln_value *x = kiln_in(g, n, 0), *sp = kiln_in(g, n, 1);
  int axis = kiln_axis(kiln_attr_int(n, "axis", 0), x->rank);
  if (axis < 0) return kiln__err(err, KILN_EINVAL, "axis out of range");
  int keepdims = (int)kiln_attr_int(n, "keepdims", 1);
  int64_t D = x->dims[axis];
  int64_t sizes[4096];
  int cnt = 0;
  if (!sp) {
    if (D > 4096) return kiln__err(err, KILN_ELIMIT, "too many sequence elements");
    for (int64_t i = 0; i < D; i++) sizes[cnt++] = 1;
  } else {
    if (!sp->data) return kiln__err(err, KILN_EUNSUPPORTED, "split input '%s' must be known at plan time", sp->name);
    keepdims = 1;
    int64_t ns = kiln_value_numel(sp);
    if (sp->rank == 0) {
      int64_t c = kiln_value_geti(sp, 0);
      if (c <= 0) return kiln__err(err, KILN_EINVAL, "split size %lld", (long long)c);
      for (int64_t s0 = 0; s0 < D && cnt < 4096; s0 += c) sizes[cnt++] = (D - s0 < c) ? D - s0 : c;
    } else {
      int64_t tot = 0;
      for (int64_t i = 0; i < ns && cnt < 4096; i++) { sizes[cnt++] = kiln_value_geti(sp, i); tot += sizes[cnt - 1]; }
      if (tot != D) return kiln__err(err, KILN_ESHAPE, "split sizes sum to %lld, axis has %lld", (long long)tot, (long long)D);
    }
  }
  kiln_seq *s = seq_new(cnt, x->dtype);
  if (!s) return kiln__err(err, KILN_ENOMEM, "out of memory");
  int64_t start = 0;
  for (int i = 0; i < cnt; i++) {
    s->items[i] = (kiln_seq_item){.vid = n->in[0], .axis = axis, .start = start, .len = sizes[i], .keepdims = keepdims};
    start += sizes[i];
  }
  return set_seq_out(g, n, s, err);
}

static int at_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  const kiln_seq *in = seq_in(g, n, 0, err);
  if (!in) return err->status;
  int64_t pos;
  int rc = position(g, n, 1, 0, &pos, err);
  if (rc) return rc;
  if (pos < 0) pos += in->n;
  if (pos < 0 || pos >= in->n) return kiln__err(err, KILN_EINVAL, "position %lld out of range for a sequence of %d", (long long)pos, in->n);
  int r;
  int64_t d[KILN_MAX_RANK];
  item_shape(g, &in->items[pos], &r, d);
  kiln_set_out(g, n, 0, g->vals[in->items[pos].vid].dtype, r, d);
  if (!n->state) n->state = malloc(sizeof(int64_t));
  if (!n->state) return kiln__err(err, KILN_ENOMEM, "out of memory");
  *(int64_t *)n->state = pos;
  return 0;
}

static int concat_infer(kiln_graph *g, kiln_node *n, kiln_error *err) {
  const kiln_seq *in = seq_in(g, n, 0, err);
  if (!in) return err->status;
  if (in->n == 0) return kiln__err(err, KILN_EINVAL, "empty sequence");
  int new_axis = (int)kiln_attr_int(n, "new_axis", 0);
  int r0;
  int64_t d0[KILN_MAX_RANK];
  item_shape(g, &in->items[0], &r0, d0);
  int orank = r0 + new_axis;
  int axis = kiln_axis(kiln_attr_int(n, "axis", 0), orank);
  if (axis < 0) return kiln__err(err, KILN_EINVAL, "axis out of range");
  int64_t od[KILN_MAX_RANK];
  int64_t tot = 0;
  for (int i = 0; i < in->n; i++) {
    int r;
    int64_t d[KILN_MAX_RANK];
    item_shape(g, &in->items[i], &r, d);
    if (r != r0) return kiln__err(err, KILN_ESHAPE, "sequence elements differ in rank");
    for (int k = 0; k < r; k++)
      if (!new_axis && k != axis && d[k] != d0[k]) return kiln__err(err, KILN_ESHAPE, "sequence elements differ in shape");
    tot += new_axis ? 1 : d[axis];
  }
  for (int k = 0, j = 0; k < orank; k++) {
    if (k == axis) od[k] = tot, j += !new_axis;
    else od[k] = d0[j++];
  }
  kiln_set_out(g, n, 0, g->vals[in->items[0].vid].dtype, orank, od);
  return 0;
}

/* Geometry of copying element view `it` as [outer rows] x [row bytes] from
 * its source value: source offset, source row pitch. */
static void view_rect(kiln_graph *g, const kiln_seq_item *it, int64_t *outer, int64_t *row_bytes, int64_t *src_off, int64_t *src_pitch) {
  const kiln_value *v = &g->vals[it->vid];
  size_t es = kiln_dtype_size(v->dtype);
  if (it->axis < 0) {
    *outer = 1;
    *row_bytes = kiln_value_numel(v) * (int64_t)es;
    *src_off = 0;
    *src_pitch = *row_bytes;
    return;
  }
  int64_t o = 1, in = 1;
  for (int k = 0; k < it->axis; k++) o *= v->dims[k];
  for (int k = it->axis + 1; k < v->rank; k++) in *= v->dims[k];
  *outer = o;
  *row_bytes = it->len * in * (int64_t)es;
  *src_off = it->start * in * (int64_t)es;
  *src_pitch = v->dims[it->axis] * in * (int64_t)es;
}

/* Geometry of element `it` as `rows` rows of row_bytes at src_off with
 * src_pitch, where rows is forced to `want_rows` when the element is a whole
 * (contiguous) tensor; returns -1 when a sliced view cannot be laid out so. */
static int view_rows(kiln_graph *g, const kiln_seq_item *it, int64_t want_rows, int64_t *rows, int64_t *rb, int64_t *so, int64_t *sp) {
  int64_t outer;
  view_rect(g, it, &outer, rb, so, sp);
  if (want_rows <= 0 || outer == want_rows) { *rows = outer; return 0; }
  if (it->axis >= 0) return -1;
  if (want_rows == 0 || *rb % want_rows) return -1;
  *rows = want_rows;
  *rb /= want_rows;
  *sp = *rb;
  return 0;
}

/* Host copy of a view into dst rows of pitch dst_pitch starting at dst_off. */
static void host_copy(kiln_graph *g, const kiln_seq_item *it, int64_t want_rows, void *dst, int64_t dst_off, int64_t dst_pitch) {
  int64_t rows, rb, so, sp;
  if (view_rows(g, it, want_rows, &rows, &rb, &so, &sp)) return;
  const void *src = (g->ref_host && g->ref_host[it->vid]) ? g->ref_host[it->vid] : g->vals[it->vid].data;
  for (int64_t r = 0; r < rows; r++) memcpy((char *)dst + dst_off + r * dst_pitch, (const char *)src + so + r * sp, (size_t)rb);
}

static int dev_copy(kiln_exec *x, const kiln_seq_item *it, int64_t want_rows, cl_mem dst, int64_t dst_off, int64_t dst_pitch, kiln_error *err) {
  int64_t rows, rb, so, sp;
  if (view_rows(x->g, it, want_rows, &rows, &rb, &so, &sp)) return kiln__err(err, KILN_EUNSUPPORTED, "sequence element layout not supported");
  if (rows == 0 || rb == 0) return 0;
  cl_mem src = x->g->vals[it->vid].buf;
  if (!src) return kiln__err(err, KILN_EINTERNAL, "sequence element '%s' has no device buffer", x->g->vals[it->vid].name);
  size_t so3[3] = {(size_t)so, 0, 0}, do3[3] = {(size_t)dst_off, 0, 0}, reg[3] = {(size_t)rb, (size_t)rows, 1};
  kiln__rec_other();
  cl_int e = clEnqueueCopyBufferRect(x->d->q, src, dst, so3, do3, reg, (size_t)sp, (size_t)sp * (size_t)rows, (size_t)dst_pitch, (size_t)dst_pitch * (size_t)rows, 0, NULL, NULL);
  if (e != CL_SUCCESS) return kiln__err(err, KILN_ECL, "clEnqueueCopyBufferRect: %s", kiln__clerror(e));
  x->launches++;
  return 0;
}

static int at_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  const kiln_seq *s = kiln_in(g, n, 0)->data;
  const kiln_seq_item *it = &s->items[*(int64_t *)n->state];
  int64_t outer, rb, so, sp;
  view_rect(g, it, &outer, &rb, &so, &sp);
  host_copy(g, it, 0, out[0], 0, rb);
  return 0;
}

static int at_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  const kiln_seq *s = kiln_in(x->g, n, 0)->data;
  const kiln_seq_item *it = &s->items[*(int64_t *)n->state];
  int64_t outer, rb, so, sp;
  view_rect(x->g, it, &outer, &rb, &so, &sp);
  return dev_copy(x, it, 0, kiln_out_buf(x, n, 0), 0, rb, err);
}

/* Concatenation: each element is copied into rows of the output. */
static void concat_geom(kiln_graph *g, kiln_node *n, int64_t *dst_pitch, int64_t *offs, int64_t *rows) {
  const kiln_seq *s = kiln_in(g, n, 0)->data;
  kiln_value *y = kiln_out(g, n, 0);
  int axis = kiln_axis(kiln_attr_int(n, "axis", 0), y->rank);
  size_t es = kiln_dtype_size(y->dtype);
  int64_t in = 1;
  for (int k = axis + 1; k < y->rank; k++) in *= y->dims[k];
  *dst_pitch = y->dims[axis] * in * (int64_t)es;
  *rows = 1;
  for (int k = 0; k < axis; k++) *rows *= y->dims[k];
  int64_t cum = 0;
  for (int i = 0; i < s->n; i++) {
    offs[i] = cum * in * (int64_t)es;
    int r;
    int64_t d[KILN_MAX_RANK];
    item_shape(g, &s->items[i], &r, d);
    cum += kiln_attr_int(n, "new_axis", 0) ? 1 : d[axis];
  }
}

static int concat_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) {
  const kiln_seq *s = kiln_in(g, n, 0)->data;
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)s->n), pitch, rows;
  if (!offs) return kiln__err(err, KILN_ENOMEM, "out of memory");
  concat_geom(g, n, &pitch, offs, &rows);
  for (int i = 0; i < s->n; i++) host_copy(g, &s->items[i], rows, out[0], offs[i], pitch);
  free(offs);
  return 0;
}

static int concat_dev(kiln_exec *x, kiln_node *n, kiln_error *err) {
  const kiln_seq *s = kiln_in(x->g, n, 0)->data;
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)s->n), pitch, rows;
  if (!offs) return kiln__err(err, KILN_ENOMEM, "out of memory");
  concat_geom(x->g, n, &pitch, offs, &rows);
  int rc = 0;
  for (int i = 0; i < s->n && !rc; i++) rc = dev_copy(x, &s->items[i], rows, kiln_out_buf(x, n, 0), offs[i], pitch, err);
  free(offs);
  return rc;
}

/* Ops that only build sequences: nothing to compute on either side. */
static int nothing_ref(kiln_graph *g, kiln_node *n, void **in, void **out, kiln_error *err) { return 0; }
static int nothing_dev(kiln_exec *x, kiln_node *n, kiln_error *err) { return 0; }

const kiln_op_def kiln_ops_sequence[] = {
  {"SequenceEmpty", empty_infer, nothing_ref, nothing_dev, NULL},
  {"SequenceConstruct", construct_infer, nothing_ref, nothing_dev, NULL},
  {"SequenceInsert", insert_infer, nothing_ref, nothing_dev, NULL},
  {"SequenceErase", erase_infer, nothing_ref, nothing_dev, NULL},
  {"SequenceLength", length_infer, nothing_ref, nothing_dev, NULL},
  {"SplitToSequence", split_infer, nothing_ref, nothing_dev, NULL},
  {"SequenceAt", at_infer, at_ref, at_dev, NULL},
  {"ConcatFromSequence", concat_infer, concat_ref, concat_dev, NULL},
  {NULL},
};
