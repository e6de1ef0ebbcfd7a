/* seq_io.c: sequence-typed graph inputs and outputs (ONNX seq(tensor)).
 *
 * Inside a plan a sequence is a kiln_seq listing views of tensor values
 * (ops/sequence.c). A sequence input's items become values of the graph of
 * their own, named "<input>[i]", bound like inputs (host data, a device
 * buffer uploaded before each run); the input's kiln_seq lists them. A
 * sequence output is gathered after a run from its items' device buffers
 * (or, for the reference run, their host buffers) into tensors the session
 * owns. Also: reading a SequenceProto file. */
#include "kiln_internal.h"
#include "onnx.pb-c.h"
#include <errno.h>

typedef struct kiln_seq_io {
  int nin, nout;
  kiln_tensor ***in;    /* per graph input: its items, or NULL when it is a tensor */
  int *in_n;
  bool *in_none;        /* per graph input: an optional holding nothing */
  kiln_tensor ***out[2];/* per graph output, [0] device run, [1] reference run */
  int *out_n[2];
} kiln_seq_io;

void kiln_sequence_free(kiln_tensor **items, int n) {
  for (int i = 0; items && i < n; i++) kiln_tensor_free(items[i]);
  free(items);
}

static kiln_tensor *tensor_copy(const kiln_tensor *t) {
  kiln_tensor *c = kiln_tensor_new(t->dtype, t->rank, t->dims);
  if (c) memcpy(c->data, t->data, (size_t)kiln_tensor_numel(t) * kiln_dtype_size(t->dtype));
  return c;
}

/* ---- SequenceProto: name = 1, elem_type = 2, tensor_values = 3 ---- */

static int varint(const uint8_t *p, size_t len, size_t *o, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 64 && *o < len; sh += 7) {
    uint8_t b = p[(*o)++];
    *v |= (uint64_t)(b & 127) << sh;
    if (!(b & 128)) return 0;
  }
  return -1;
}

static int read_all(const char *path, uint8_t **buf, size_t *len, kiln_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return kiln__err(err, KILN_EIO, "%s: cannot open: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long l = ftell(f);
  fseek(f, 0, SEEK_SET);
  *buf = malloc((size_t)(l > 0 ? l : 1));
  if (!*buf || l < 0 || fread(*buf, 1, (size_t)l, f) != (size_t)l) { fclose(f); free(*buf); *buf = NULL; return kiln__err(err, KILN_EIO, "%s: read failed", path); }
  fclose(f);
  *len = (size_t)l;
  return 0;
}

/* Parses a SequenceProto (optional = 0) or an OptionalProto (optional = 1):
 * name = 1, elem_type = 2, tensor(s) = 3, and for an optional a sequence
 * (field 5) parsed again as a SequenceProto. */
static int parse_value(const uint8_t *buf, size_t len, int optional, kiln_tensor ***items, int *n, int *has_seq, kiln_error *err) {
  int rc = 0, cnt = 0, cap = 0, elem = -1;
  kiln_tensor **v = NULL;
  *has_seq = 0;
  for (size_t o = 0; o < len && !rc;) {
    uint64_t tag, x;
    if (varint(buf, len, &o, &tag)) { rc = KILN_EPARSE; break; }
    int field = (int)(tag >> 3), wt = (int)(tag & 7);
    if (wt == 0) { if (varint(buf, len, &o, &x)) rc = KILN_EPARSE; else if (field == 2) elem = (int)x; continue; }
    if (wt != 2 || varint(buf, len, &o, &x) || x > (uint64_t)len - o) { rc = KILN_EPARSE; break; }
    if (field == 3) {
      Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, (size_t)x, buf + o);
      kiln_tensor *t = NULL;
      if (!tp) rc = KILN_EPARSE;
      else rc = kiln_tensor_from_proto(tp, ".", &t, err);
      if (tp) onnx__tensor_proto__free_unpacked(tp, NULL);
      if (!rc) {
        kiln_tensor **nv = kiln__grow(v, cnt, &cap, sizeof *nv, 8);
        if (!nv) { kiln_tensor_free(t); rc = KILN_ENOMEM; break; }
        v = nv;
      }
      if (!rc) v[cnt++] = t;
    } else if (field == 5 && optional) {
      int dummy;
      kiln_sequence_free(v, cnt);
      v = NULL;
      cnt = 0;
      rc = parse_value(buf + o, (size_t)x, 0, &v, &cnt, &dummy, err);
      *has_seq = 1;
    } else if (field != 1) rc = KILN_EUNSUPPORTED; /* sparse tensors, nested sequences, maps */
    o += (size_t)x;
  }
  if (!rc && !optional && elem != 1 && elem != 0) rc = KILN_EUNSUPPORTED;
  if (rc) { kiln_sequence_free(v, cnt); return rc; }
  *items = v;
  *n = cnt;
  return 0;
}

int kiln_sequence_read(const char *path, kiln_tensor ***items, int *n, kiln_error *err) {
  uint8_t *buf;
  size_t len;
  int rc = read_all(path, &buf, &len, err), has_seq;
  if (rc) return rc;
  rc = parse_value(buf, len, 0, items, n, &has_seq, err);
  free(buf);
  if (rc) return kiln__err(err, rc, "%s: not a SequenceProto of tensors%s", path, rc == KILN_EUNSUPPORTED ? " (sequences of sequences, maps or sparse tensors are not supported)" : "");
  return 0;
}

int kiln_optional_read(const char *path, kiln_tensor **t, kiln_tensor ***items, int *n, kiln_error *err) {
  uint8_t *buf;
  size_t len;
  kiln_tensor **v = NULL;
  int cnt = 0, has_seq = 0;
  int rc = read_all(path, &buf, &len, err);
  if (rc) return rc;
  rc = parse_value(buf, len, 1, &v, &cnt, &has_seq, err);
  free(buf);
  if (rc) return kiln__err(err, rc, "%s: not an OptionalProto of a tensor or a sequence of tensors", path);
  *t = NULL, *items = NULL, *n = -1;
  if (has_seq) *items = v, *n = cnt;
  else if (cnt == 1) { *t = v[0]; free(v); }
  else if (cnt == 0) free(v);
  else { kiln_sequence_free(v, cnt); return kiln__err(err, KILN_EPARSE, "%s: an optional with %d tensors", path, cnt); }
  return 0;
}

/* ---- session side ---- */

static kiln_seq_io *sio_of(kiln_session *s) {
  if (!s->sio) {
    kiln_seq_io *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->nin = s->m->g->ninputs;
    q->nout = s->m->g->noutputs;
    q->in = calloc((size_t)q->nin + 1, sizeof *q->in);
    q->in_n = calloc((size_t)q->nin + 1, sizeof *q->in_n);
    q->in_none = calloc((size_t)q->nin + 1, sizeof *q->in_none);
    for (int k = 0; k < 2; k++) {
      q->out[k] = calloc((size_t)q->nout + 1, sizeof *q->out[k]);
      q->out_n[k] = calloc((size_t)q->nout + 1, sizeof *q->out_n[k]);
    }
    s->sio = q;
    if (!q->in || !q->in_n || !q->in_none || !q->out[0] || !q->out[1] || !q->out_n[0] || !q->out_n[1]) { kiln__seq_free(s); return NULL; }
  }
  return s->sio;
}

void kiln__seq_free(kiln_session *s) {
  kiln_seq_io *q = s->sio;
  if (!q) return;
  for (int i = 0; q->in && i < q->nin; i++) kiln_sequence_free(q->in[i], q->in_n[i]);
  for (int k = 0; k < 2; k++) {
    for (int i = 0; q->out[k] && i < q->nout; i++) kiln_sequence_free(q->out[k][i], q->out_n[k][i]);
    free(q->out[k]);
    free(q->out_n[k]);
  }
  free(q->in);
  free(q->in_n);
  free(q->in_none);
  free(q);
  s->sio = NULL;
}

void kiln__seq_clear_input(kiln_session *s, int i) {
  kiln_seq_io *q = s->sio;
  if (!q) return;
  kiln_sequence_free(q->in[i], q->in_n[i]);
  q->in[i] = NULL;
  q->in_n[i] = 0;
  q->in_none[i] = false;
}

bool kiln__seq_is_input(const kiln_session *s, int i) { return s->sio && (s->sio->in[i] || s->sio->in_none[i]); }

int kiln_session_set_input_none(kiln_session *s, const char *name, kiln_error *err) {
  kiln_graph *g = s->m->g;
  int idx = -1;
  for (int i = 0; i < g->ninputs; i++)
    if (!strcmp(g->vals[g->inputs[i]].name, name)) idx = i;
  if (idx < 0) return kiln__err(err, KILN_ENOTFOUND, "the model has no input named '%s'", name);
  if (!g->vals[g->inputs[idx]].optional) return kiln__err(err, KILN_EINVAL, "input '%s' is not optional", name);
  kiln_seq_io *q = sio_of(s);
  if (!q) return kiln__err(err, KILN_ENOMEM, "out of memory");
  kiln_sequence_free(q->in[idx], q->in_n[idx]);
  q->in[idx] = NULL;
  q->in_n[idx] = 0;
  q->in_none[idx] = true;
  kiln_tensor_free(s->in[idx]);
  s->in[idx] = kiln_tensor_new(KILN_DT_UINT8, 1, (int64_t[]){0});
  s->planned = false;
  return s->in[idx] ? 0 : kiln__err(err, KILN_ENOMEM, "out of memory");
}

int kiln_session_set_input_sequence(kiln_session *s, const char *name, kiln_tensor *const *items, int n, kiln_error *err) {
  kiln_graph *g = s->m->g;
  int idx = -1;
  for (int i = 0; i < g->ninputs; i++)
    if (!strcmp(g->vals[g->inputs[i]].name, name)) idx = i;
  if (idx < 0) return kiln__err(err, KILN_ENOTFOUND, "the model has no input named '%s'", name);
  if (g->vals[g->inputs[idx]].dtype != KILN_DT_SEQUENCE) return kiln__err(err, KILN_EINVAL, "input '%s' is not a sequence", name);
  kiln_seq_io *q = sio_of(s);
  if (!q) return kiln__err(err, KILN_ENOMEM, "out of memory");
  q->in_none[idx] = false;
  kiln_tensor **c = calloc((size_t)n + 1, sizeof *c);
  if (!c) return kiln__err(err, KILN_ENOMEM, "out of memory");
  for (int i = 0; i < n; i++)
    if (items[i]->dtype == KILN_DT_STRING || !(c[i] = tensor_copy(items[i]))) { kiln_sequence_free(c, i); return kiln__err(err, KILN_EUNSUPPORTED, "sequence item %d: not supported", i); }
  kiln_sequence_free(q->in[idx], q->in_n[idx]);
  q->in[idx] = c;
  q->in_n[idx] = n;
  /* the tensor slot holds an empty stand-in, so that the input counts as given */
  kiln_tensor_free(s->in[idx]);
  s->in[idx] = kiln_tensor_new(KILN_DT_UINT8, 1, (int64_t[]){0});
  s->planned = false;
  return s->in[idx] ? 0 : kiln__err(err, KILN_ENOMEM, "out of memory");
}

int kiln__seq_bind(kiln_session *s, kiln_error *err) {
  kiln_seq_io *q = s->sio;
  kiln_graph *g = s->m->g;
  for (int i = 0; q && i < q->nin; i++) {
    g->vals[g->inputs[i]].none = q->in_none[i];
    if (q->in_none[i]) { /* an empty stand-in */
      kiln_value *v = &g->vals[g->inputs[i]];
      if (v->dtype == KILN_DT_SEQUENCE) { free(v->data); v->data = NULL; }
      v->dtype = KILN_DT_UINT8, v->rank = 1, v->dims[0] = 0;
      continue;
    }
    if (!q->in[i]) continue;
    kiln_value *sv = &g->vals[g->inputs[i]];
    kiln_seq *sq = calloc(1, sizeof *sq + sizeof(kiln_seq_item) * (size_t)(q->in_n[i] + 1));
    if (!sq) return kiln__err(err, KILN_ENOMEM, "out of memory");
    sq->n = q->in_n[i];
    sq->elem_dtype = q->in_n[i] ? q->in[i][0]->dtype : KILN_DT_FLOAT;
    for (int k = 0; k < q->in_n[i]; k++) {
      char nm[512];
      snprintf(nm, sizeof nm, "%s[%d]", sv->name, k);
      int vid = kiln_graph_add_value(g, nm);
      if (vid < 0) { free(sq); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
      sv = &g->vals[g->inputs[i]]; /* the values may have moved */
      kiln_value *v = &g->vals[vid];
      const kiln_tensor *t = q->in[i][k];
      v->dtype = t->dtype;
      v->rank = t->rank;
      memcpy(v->dims, t->dims, sizeof v->dims);
      v->is_input = true;
      free(v->data);
      size_t b = kiln_value_bytes(v);
      if (!(v->data = malloc(b ? b : 1))) { free(sq); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
      memcpy(v->data, t->data, b);
      sq->items[k] = (kiln_seq_item){.vid = vid, .axis = -1, .keepdims = 1};
    }
    free(sv->data);
    sv->data = sq;
    sv->dtype = KILN_DT_SEQUENCE;
    sv->rank = 0;
  }
  return 0;
}

int kiln__seq_upload(kiln_session *s, kiln_error *err) {
  kiln_seq_io *q = s->sio;
  kiln_graph *g = s->m->g;
  for (int i = 0; q && i < q->nin; i++) {
    if (!q->in[i]) continue;
    const kiln_seq *sq = g->vals[g->inputs[i]].data;
    for (int k = 0; sq && k < sq->n; k++) {
      kiln_value *v = &g->vals[sq->items[k].vid];
      int rc;
      if (v->buf && (rc = kiln_cl_write(s->d, v->buf, v->data, kiln_value_bytes(v), err)) != 0) return rc;
    }
  }
  return 0;
}

/* Item `it` of a sequence as a new tensor, from src (the whole source value's bytes; NULL: shape only). */
kiln_tensor *kiln__seq_item_tensor(kiln_graph *g, const kiln_seq_item *it, const void *src) {
  const kiln_value *v = &g->vals[it->vid];
  int64_t d[KILN_MAX_RANK];
  int r = 0;
  for (int k = 0; k < v->rank; k++) {
    if (k == it->axis) { if (it->keepdims) d[r++] = it->len; }
    else d[r++] = v->dims[k];
  }
  kiln_tensor *t = kiln_tensor_new(v->dtype, r, d);
  if (!t || !src) return t;
  size_t es = kiln_dtype_size(v->dtype);
  if (it->axis < 0) { memcpy(t->data, src, kiln_value_bytes(v)); return t; }
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < it->axis; k++) outer *= v->dims[k];
  for (int k = it->axis + 1; k < v->rank; k++) inner *= v->dims[k];
  for (int64_t o = 0; o < outer; o++)
    memcpy((char *)t->data + (size_t)(o * it->len * inner) * es, (const char *)src + (size_t)((o * v->dims[it->axis] + it->start) * inner) * es, (size_t)(it->len * inner) * es);
  return t;
}

int kiln__seq_collect(kiln_session *s, void **host, kiln_error *err) {
  kiln_graph *g = s->m->g;
  int which = host ? 1 : 0;
  for (int i = 0; i < g->noutputs; i++) {
    kiln_value *ov = &g->vals[g->outputs[i]];
    if (ov->dtype != KILN_DT_SEQUENCE) continue;
    kiln_seq_io *q = sio_of(s);
    if (!q) return kiln__err(err, KILN_ENOMEM, "out of memory");
    const kiln_seq *sq = ov->data;
    kiln_sequence_free(q->out[which][i], q->out_n[which][i]);
    q->out[which][i] = NULL;
    q->out_n[which][i] = 0;
    if (!sq) return kiln__err(err, KILN_EUNSUPPORTED, "output '%s': sequence not resolved at plan time", ov->name);
    kiln_tensor **items = calloc((size_t)sq->n + 1, sizeof *items);
    if (!items) return kiln__err(err, KILN_ENOMEM, "out of memory");
    q->out[which][i] = items;
    for (int k = 0; k < sq->n; k++) {
      kiln_value *v = &g->vals[sq->items[k].vid];
      size_t b = kiln_value_bytes(v);
      void *tmp = NULL;
      const void *src = host && host[sq->items[k].vid] ? host[sq->items[k].vid] : NULL;
      if (!src && !host && v->buf && !v->is_const) {
        if (!(tmp = malloc(b ? b : 1))) return kiln__err(err, KILN_ENOMEM, "out of memory");
        int rc = kiln_cl_read(s->d, v->buf, tmp, b, err);
        if (rc) { free(tmp); return rc; }
        src = tmp;
      }
      if (!src) src = v->data;
      if (!src) return kiln__err(err, KILN_EINTERNAL, "sequence item '%s' has no data", v->name);
      items[k] = kiln__seq_item_tensor(g, &sq->items[k], src);
      free(tmp);
      if (!items[k]) return kiln__err(err, KILN_ENOMEM, "out of memory");
      q->out_n[which][i] = k + 1;
    }
  }
  return 0;
}

int kiln_session_output_sequence(const kiln_session *s, int i, int ref, kiln_tensor *const **items) {
  if (!s->sio || i < 0 || i >= s->sio->nout || !s->sio->out[ref ? 1 : 0][i]) return -1;
  *items = s->sio->out[ref ? 1 : 0][i];
  return s->sio->out_n[ref ? 1 : 0][i];
}

int kiln__seq_copy(kiln_value *o, const kiln_seq *sq, kiln_error *err) {
  size_t b = sizeof *sq + sizeof(kiln_seq_item) * (size_t)(sq->n + 1);
  free(o->data);
  if (!(o->data = malloc(b))) return kiln__err(err, KILN_ENOMEM, "out of memory");
  memcpy(o->data, sq, b - sizeof(kiln_seq_item));
  o->dtype = KILN_DT_SEQUENCE;
  o->rank = 0;
  return 0;
}
