/* onnx_load.c: ONNX ModelProto (protobuf-c, generated at build time) to the
 * kiln graph IR: values, nodes, attributes, initializers with external data,
 * input shapes with symbolic dimensions, and a topological sort that refuses
 * cycles. */
#include "kiln_internal.h"
#include "onnx.pb-c.h"
#include <errno.h>
#include <libgen.h>
#include <sys/stat.h>

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

int kiln_graph_find_value(const kiln_graph *g, const char *name) {
  for (int i = 0; i < g->nvals; i++)
    if (strcmp(g->vals[i].name, name) == 0) return i;
  return -1;
}

int kiln_graph_add_value(kiln_graph *g, const char *name) {
  int id = kiln_graph_find_value(g, name);
  if (id >= 0) return id;
  if (g->nvals == g->capvals) {
    int cap = g->capvals ? g->capvals * 2 : 64;
    kiln_value *nv = realloc(g->vals, (size_t)cap * sizeof *nv);
    if (!nv) return -1;
    g->vals = nv;
    g->capvals = cap;
  }
  kiln_value *v = &g->vals[g->nvals];
  memset(v, 0, sizeof *v);
  v->name = xstrdup(name);
  v->rank = -1;
  v->producer = -1;
  return g->nvals++;
}

void kiln__node_free_attrs(kiln_node *n) {
  for (int a = 0; a < n->nattr; a++) {
    kiln_attr *at = &n->attrs[a];
    free(at->name); free(at->s); free(at->floats); free(at->ints);
    for (int k = 0; at->strings && k < at->n; k++) free(at->strings[k]);
    free(at->strings);
    kiln_tensor_free(at->t);
    kiln_graph_free(at->g); /* a control-flow body */
  }
  free(n->attrs);
  n->attrs = NULL;
  n->nattr = 0;
}

void kiln__node_free_fields(kiln_node *n) {
  free(n->name); free(n->op_type); free(n->domain); free(n->in); free(n->out);
  kiln__node_free_attrs(n);
  free(n->state);
}

void kiln_graph_free(kiln_graph *g) {
  if (!g) return;
  for (int i = 0; i < g->nvals; i++) {
    free(g->vals[i].name);
    free(g->vals[i].data);
    for (int k = 0; k < KILN_MAX_RANK; k++) free(g->vals[i].dim_param[k]);
    if (g->vals[i].buf) clReleaseMemObject(g->vals[i].buf);
  }
  for (int i = 0; i < g->nnodes; i++) {
    kiln_node *n = &g->nodes[i];
    kiln__node_free_fields(n);
    kiln__replay_free(n);
    for (int k = 0; k < 4; k++) {
      if (n->param[k]) clReleaseMemObject(n->param[k]);
      if (n->scratch[k]) clReleaseMemObject(n->scratch[k]);
    }
  }
  free(g->nodes); free(g->vals); free(g->inputs); free(g->outputs); free(g->path);
  free(g->pdec);
  free(g);
}

/* ---- TensorProto -> host tensor ---- */

/* Opens a tensor's external data file and seeks to its offset, after
 * checking that the file holds `bytes` bytes there; *fp is the open file. */
static int open_external(const Onnx__TensorProto *tp, const char *base_dir, size_t bytes, FILE **fp, kiln_error *err) {
  const char *loc = NULL;
  int64_t off = 0, len = -1;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
    if (!k || !v) continue;
    if (!strcmp(k, "location")) loc = v;
    else if (!strcmp(k, "offset")) off = strtoll(v, NULL, 10);
    else if (!strcmp(k, "length")) len = strtoll(v, NULL, 10);
  }
  const char *tname = tp->name ? tp->name : "?";
  if (!loc) return kiln__err(err, KILN_EPARSE, "tensor '%s': external data without a location", tname);
  if (loc[0] == '/' || strstr(loc, ".."))
    return kiln__err(err, KILN_EPARSE, "tensor '%s': external data location '%s' leaves the model's folder", tname, loc);
  if (off < 0 || (len >= 0 && (uint64_t)len != bytes))
    return kiln__err(err, KILN_EPARSE, "tensor '%s': external data length %lld does not match its shape (%zu bytes)", tname, (long long)len, bytes);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", base_dir ? base_dir : ".", loc);
  FILE *f = fopen(path, "rb");
  if (!f) return kiln__err(err, KILN_EIO, "tensor '%s': cannot open external data file %s: %s", tname, path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < (uint64_t)off || (uint64_t)st.st_size - (uint64_t)off < bytes ||
      fseeko(f, off, SEEK_SET) != 0) {
    fclose(f);
    return kiln__err(err, KILN_EPARSE, "tensor '%s': external data file %s is shorter than offset %lld + %zu bytes", tname, path, (long long)off, bytes);
  }
  *fp = f;
  return 0;
}

int kiln_tensor_from_proto(const void *proto, const char *base_dir, kiln_tensor **out, kiln_error *err) {
  const Onnx__TensorProto *tp = proto;
  const char *tname = tp->name ? tp->name : "?";
  int dt = tp->has_data_type ? tp->data_type : 0;
  if (kiln_dtype_size(dt) == 0 && dt != KILN_DT_STRING)
    return kiln__err(err, KILN_EUNSUPPORTED, "tensor '%s': element type %s (%d) is not supported", tname, kiln_dtype_name(dt), dt);
  if (tp->n_dims > KILN_MAX_RANK)
    return kiln__err(err, KILN_EUNSUPPORTED, "tensor '%s': rank %zu exceeds kiln's limit of %d", tname, tp->n_dims, KILN_MAX_RANK);
  /* The size the shape needs, checked against the data the proto holds
   * before anything is allocated: a few bytes of file must not claim GiBs. */
  int64_t n = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    if (tp->dims[i] < 0) return kiln__err(err, KILN_EPARSE, "tensor '%s': negative dimension", tname);
    if (tp->dims[i] && n > INT64_MAX / 16 / tp->dims[i]) return kiln__err(err, KILN_ELIMIT, "tensor '%s': shape too large", tname);
    n *= tp->dims[i];
  }
  size_t es = kiln_dtype_size(dt), bytes = (size_t)n * es;
  FILE *ext = NULL;
  int rc = 0;
  if (dt == KILN_DT_STRING) {
    if (tp->n_string_data != (size_t)n) return kiln__err(err, KILN_EPARSE, "tensor '%s': has %zu strings, shape needs %lld", tname, tp->n_string_data, (long long)n);
  } else if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    if ((rc = open_external(tp, base_dir, bytes, &ext, err)) != 0) return rc;
  } else if (tp->has_raw_data) {
    if (tp->raw_data.len != bytes)
      return kiln__err(err, KILN_EPARSE, "tensor '%s': raw data has %zu bytes, shape needs %zu", tname, tp->raw_data.len, bytes);
  } else {
    size_t have;
    switch (dt) {
    case KILN_DT_FLOAT: have = tp->n_float_data; break;
    case KILN_DT_DOUBLE: have = tp->n_double_data; break;
    case KILN_DT_INT64: have = tp->n_int64_data; break;
    case KILN_DT_UINT32: case KILN_DT_UINT64: have = tp->n_uint64_data; break;
    default: have = tp->n_int32_data; break; /* FLOAT16, BFLOAT16 and the small integer types */
    }
    if (have != (size_t)n)
      return kiln__err(err, KILN_EPARSE, "tensor '%s': has %zu elements, shape needs %lld", tname, have, (long long)n);
  }
  kiln_tensor *t = kiln_tensor_new(dt, (int)tp->n_dims, tp->dims);
  if (!t) { if (ext) fclose(ext); return kiln__err(err, KILN_ELIMIT, "tensor '%s': shape too large", tname); }
  t->name = tp->name ? strdup(tp->name) : NULL;
  if (dt == KILN_DT_STRING) {
    for (int64_t k = 0; k < n; k++) {
      char *sv = malloc(tp->string_data[k].len + 1);
      if (!sv) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); break; }
      if (tp->string_data[k].len) memcpy(sv, tp->string_data[k].data, tp->string_data[k].len);
      sv[tp->string_data[k].len] = 0;
      ((char **)t->data)[k] = sv;
    }
  } else if (ext) {
    if (fread(t->data, 1, bytes, ext) != bytes)
      rc = kiln__err(err, KILN_EIO, "tensor '%s': short read of external data", tname);
    fclose(ext);
  } else if (tp->has_raw_data) {
    if (bytes) memcpy(t->data, tp->raw_data.data, bytes);
  } else {
    switch (dt) {
    case KILN_DT_FLOAT: if (bytes) memcpy(t->data, tp->float_data, bytes); break;
    case KILN_DT_DOUBLE: if (bytes) memcpy(t->data, tp->double_data, bytes); break;
    case KILN_DT_INT64: if (bytes) memcpy(t->data, tp->int64_data, bytes); break;
    case KILN_DT_UINT32: case KILN_DT_UINT64:
      for (int64_t k = 0; k < n; k++) kiln_store_i(t->data, dt, k, (int64_t)tp->uint64_data[k]);
      break;
    case KILN_DT_FLOAT16: case KILN_DT_BFLOAT16:
      for (int64_t k = 0; k < n; k++) ((uint16_t *)t->data)[k] = (uint16_t)tp->int32_data[k];
      break;
    default:
      for (int64_t k = 0; k < n; k++) kiln_store_i(t->data, dt, k, tp->int32_data[k]);
      break;
    }
  }
  if (rc) { kiln_tensor_free(t); return rc; }
  *out = t;
  return 0;
}

/* ---- attributes, nodes ---- */

/* A malloc'd copy of n elements of es bytes, with room for one more (never
 * a zero-byte allocation); NULL when out of memory. */
static void *copy_array(const void *src, size_t n, size_t es) {
  void *p = malloc((n + 1) * es);
  if (p && n) memcpy(p, src, n * es);
  return p;
}

static int convert_attr(const Onnx__AttributeProto *ap, kiln_attr *a, const char *base_dir, const char *nname, kiln_error *err) {
  a->name = xstrdup(ap->name);
  int type = ap->has_type ? (int)ap->type : 0;
  if (!type) { /* IR v1 style: infer from fields */
    if (ap->has_f) type = 1; else if (ap->has_i) type = 2; else if (ap->has_s) type = 3; else if (ap->t) type = 4;
    else if (ap->g) type = 5; else if (ap->n_floats) type = 6; else if (ap->n_ints) type = 7; else if (ap->n_strings) type = 8;
  }
  switch (type) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: a->type = KILN_ATTR_FLOAT; a->f = ap->f; break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: a->type = KILN_ATTR_INT; a->i = ap->i; break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
    a->type = KILN_ATTR_STRING;
    a->s = malloc(ap->s.len + 1);
    if (!a->s) return kiln__err(err, KILN_ENOMEM, "out of memory");
    if (ap->s.len) memcpy(a->s, ap->s.data, ap->s.len);
    a->s[ap->s.len] = 0;
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
    a->type = KILN_ATTR_TENSOR;
    if (!ap->t) return kiln__err(err, KILN_EPARSE, "node '%s': attribute '%s' has no tensor", nname, a->name);
    return kiln_tensor_from_proto(ap->t, base_dir, &a->t, err);
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: a->type = KILN_ATTR_GRAPH; break; /* subgraphs: not supported by ops yet */
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
    a->type = KILN_ATTR_FLOATS; a->n = (int)ap->n_floats;
    if (!(a->floats = copy_array(ap->floats, ap->n_floats, sizeof(float)))) return kiln__err(err, KILN_ENOMEM, "out of memory");
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    a->type = KILN_ATTR_INTS; a->n = (int)ap->n_ints;
    if (!(a->ints = copy_array(ap->ints, ap->n_ints, sizeof(int64_t)))) return kiln__err(err, KILN_ENOMEM, "out of memory");
    break;
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
    a->type = KILN_ATTR_STRINGS; a->n = (int)ap->n_strings;
    a->strings = calloc(ap->n_strings + 1, sizeof(char *));
    if (!a->strings) return kiln__err(err, KILN_ENOMEM, "out of memory");
    for (size_t k = 0; k < ap->n_strings; k++) {
      a->strings[k] = malloc(ap->strings[k].len + 1);
      if (!a->strings[k]) return kiln__err(err, KILN_ENOMEM, "out of memory");
      memcpy(a->strings[k], ap->strings[k].data, ap->strings[k].len);
      a->strings[k][ap->strings[k].len] = 0;
    }
    break;
  default: a->type = 0; break; /* TENSORS, GRAPHS, sparse: kept as unknown */
  }
  return 0;
}

static int set_value_info(kiln_graph *g, int id, const Onnx__ValueInfoProto *vi) {
  kiln_value *v = &g->vals[id];
  const Onnx__TypeProto *ty = vi->type;
  if (ty && ty->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && ty->optional_type && ty->optional_type->elem_type) {
    v->optional = true;
    ty = ty->optional_type->elem_type;
  }
  if (ty && ty->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) { v->dtype = KILN_DT_SEQUENCE; v->rank = 0; return 0; }
  if (ty != vi->type) { /* the optional's tensor type */
    Onnx__ValueInfoProto inner = *vi;
    inner.type = (Onnx__TypeProto *)ty;
    return set_value_info(g, id, &inner);
  }
  if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type) return 0;
  const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
  if (tt->has_elem_type) v->dtype = tt->elem_type;
  if (tt->shape) {
    if (tt->shape->n_dim > KILN_MAX_RANK) return KILN_EUNSUPPORTED;
    v->rank = (int)tt->shape->n_dim;
    for (int k = 0; k < v->rank; k++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
      v->dims[k] = -1;
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) v->dims[k] = d->dim_value;
      else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param)
        v->dim_param[k] = strdup(d->dim_param);
    }
  }
  return 0;
}

/* Orders nodes so every producer precedes its consumers (Kahn's algorithm
 * in repeated sweeps, which keeps the given order where it is valid);
 * KILN_EPARSE naming a node on a cycle ("the <what> has a cycle ..."). */
int kiln__graph_toposort(kiln_graph *g, const char *what, kiln_error *err) {
  int n = g->nnodes;
  if (!n) return 0;
  int *prod = malloc(sizeof(int) * (size_t)(g->nvals > 0 ? g->nvals : 1));
  int *order = malloc(sizeof(int) * (size_t)n);
  char *done = calloc((size_t)n, 1);
  if (!prod || !order || !done) { free(prod); free(order); free(done); return kiln__err(err, KILN_ENOMEM, "out of memory"); }
  for (int i = 0; i < g->nvals; i++) prod[i] = -1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].nout; k++)
      if (g->nodes[i].out[k] >= 0) prod[g->nodes[i].out[k]] = i;
  int cnt = 0, progress = 1;
  while (cnt < n && progress) {
    progress = 0;
    for (int i = 0; i < n; i++) {
      if (done[i]) continue;
      int ready = 1; /* every input's producer placed (a node reading its own output never is) */
      for (int k = 0; k < g->nodes[i].nin && ready; k++) {
        int v = g->nodes[i].in[k];
        if (v >= 0 && prod[v] >= 0 && !done[prod[v]]) ready = 0;
      }
      if (ready) { done[i] = 1; order[cnt++] = i; progress = 1; }
    }
  }
  int rc = 0;
  if (cnt < n) {
    int bad = 0;
    while (done[bad]) bad++;
    rc = kiln__err(err, KILN_EPARSE, "the %s has a cycle through node '%s' (%s)", what, g->nodes[bad].name, g->nodes[bad].op_type);
  } else {
    kiln_node *nn = malloc(sizeof(kiln_node) * ((size_t)n + 1));
    if (!nn) rc = kiln__err(err, KILN_ENOMEM, "out of memory");
    else {
      for (int i = 0; i < n; i++) nn[i] = g->nodes[order[i]];
      free(g->nodes);
      g->nodes = nn;
      g->capnodes = n;
      for (int i = 0; i < n; i++)
        for (int k = 0; k < nn[i].nout; k++)
          if (nn[i].out[k] >= 0) g->vals[nn[i].out[k]].producer = i;
    }
  }
  free(prod); free(order); free(done);
  return rc;
}

/* Bytes of a tensor's external data, from its shape (UINT64_MAX when the
 * shape's size overflows); 0 for data inside the model file. */
static uint64_t external_bytes(const Onnx__TensorProto *tp) {
  if (!tp->has_data_location || tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) return 0;
  uint64_t n = kiln_dtype_size(tp->has_data_type ? tp->data_type : 0);
  for (size_t i = 0; i < tp->n_dims; i++) {
    if (tp->dims[i] < 0) return 0; /* refused by kiln_tensor_from_proto */
    if (tp->dims[i] && n > UINT64_MAX / (uint64_t)tp->dims[i]) return UINT64_MAX;
    n *= (uint64_t)tp->dims[i];
  }
  return n;
}

/* Nesting depth limit for the protobuf messages of a model. Subgraphs
 * (If/Loop/Scan bodies: graph -> node -> attribute -> graph ...) and
 * sequence/map/optional types nest without bound in the schema, and
 * protobuf-c's unpacker recurses once per level with no limit of its own, so a
 * few MB of nested messages would overflow the stack. 100 is the default
 * recursion limit of Google's protobuf parsers; it allows ~30 levels of
 * nested subgraphs. */
#define KILN_ONNX_MAX_NESTING 100

static int read_varint(const uint8_t *p, size_t len, size_t *o, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64 && *o < len; shift += 7) {
    uint8_t b = p[(*o)++];
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) { *v = r; return 0; }
  }
  return -1;
}

/* Walks the wire format of a message of type d (without unpacking it) and
 * returns 1 if its sub-messages nest deeper than KILN_ONNX_MAX_NESTING, else
 * 0. Malformed bytes also give 0: the unpacker reports those. The recursion
 * here stops at the limit. */
static int nesting_too_deep(const uint8_t *p, size_t len, const ProtobufCMessageDescriptor *d, int depth) {
  if (depth > KILN_ONNX_MAX_NESTING) return 1;
  size_t o = 0;
  while (o < len) {
    uint64_t tag, v;
    if (read_varint(p, len, &o, &tag)) return 0;
    switch (tag & 7) {
    case 0: if (read_varint(p, len, &o, &v)) return 0; break;
    case 1: if (len - o < 8) return 0; o += 8; break;
    case 5: if (len - o < 4) return 0; o += 4; break;
    case 2: {
      if (read_varint(p, len, &o, &v) || v > len - o) return 0;
      const ProtobufCFieldDescriptor *f = tag >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3)) : NULL;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && nesting_too_deep(p + o, (size_t)v, f->descriptor, depth + 1)) return 1;
      o += (size_t)v;
      break;
    }
    default: return 0; /* groups and invalid wire types: the unpacker refuses them */
    }
  }
  return 0;
}

/* Builds the graph from a serialized ModelProto. `path` names the model in
 * messages and in g->path (NULL for a buffer: messages say "<memory>");
 * base_dir resolves external data. */
static int load_graph(const Onnx__GraphProto *gp, const Onnx__ModelProto *mp, const char *label, const char *base_dir, uint64_t max_bytes, uint64_t *totalp,
                      bool sub, kiln_graph **out, kiln_error *err);

/* The values subgraph `body` reads from enclosing scopes (its inputs after
 * the declared ones) become extra inputs of node n in g, once each, so that
 * ordering and buffer lifetimes in g see them. */
static int add_captures(kiln_graph *g, kiln_node *n, const kiln_graph *body, kiln_error *err) {
  for (int i = body->nformal; i < body->ninputs; i++) {
    int v = kiln_graph_add_value(g, body->vals[body->inputs[i]].name);
    if (v < 0) return kiln__err(err, KILN_ENOMEM, "out of memory");
    bool have = false;
    for (int k = 0; k < n->nin; k++) have |= n->in[k] == v && k >= n->nin_formal;
    if (have) continue;
    int *ni = realloc(n->in, sizeof(int) * (size_t)(n->nin + 2));
    if (!ni) return kiln__err(err, KILN_ENOMEM, "out of memory");
    n->in = ni;
    n->in[n->nin++] = v;
  }
  return 0;
}

/* Captured values that are initializers of the enclosing graph become
 * initializers of the subgraph (a copy of their data), so that a body's
 * weights are constants of its plan, not inputs uploaded on every
 * iteration; nested subgraphs see them as initializers in turn. */
static int inline_constant_captures(kiln_graph *g, kiln_error *err) {
  for (int i = 0; i < g->nnodes; i++)
    for (int a = 0; a < g->nodes[i].nattr; a++) {
      kiln_graph *b = g->nodes[i].attrs[a].g;
      if (!b) continue;
      int keep = b->nformal;
      for (int k = b->nformal; k < b->ninputs; k++) {
        kiln_value *bv = &b->vals[b->inputs[k]];
        int o = kiln_graph_find_value(g, bv->name);
        if (o < 0 || !g->vals[o].is_initializer || !g->vals[o].data) { b->inputs[keep++] = b->inputs[k]; continue; }
        const kiln_value *ov = &g->vals[o];
        size_t bytes = ov->dtype == KILN_DT_STRING ? (size_t)kiln_value_numel(ov) * (size_t)ov->strw : kiln_value_bytes(ov);
        free(bv->data);
        if (!(bv->data = malloc(bytes ? bytes : 1))) return kiln__err(err, KILN_ENOMEM, "out of memory");
        memcpy(bv->data, ov->data, bytes);
        bv->dtype = ov->dtype, bv->rank = ov->rank, bv->strw = ov->strw;
        memcpy(bv->dims, ov->dims, sizeof bv->dims);
        bv->is_input = false;
        bv->is_initializer = bv->is_const = true;
      }
      b->ninputs = keep;
      int rc = inline_constant_captures(b, err);
      if (rc) return rc;
    }
  return 0;
}

static int load_model(const void *buf, size_t len, const char *path, const char *base_dir, uint64_t max_bytes, kiln_graph **out, kiln_error *err) {
  const char *label = path ? path : "<memory>";
  if (!max_bytes) max_bytes = (uint64_t)4 << 30;
  if ((uint64_t)len > max_bytes)
    return kiln__err(err, KILN_ELIMIT, "%s: model is %llu bytes, more than the limit of %llu bytes", label, (unsigned long long)len, (unsigned long long)max_bytes);
  if (len == 0) return kiln__err(err, KILN_EPARSE, "%s: empty file, not an ONNX model", label);
  if (nesting_too_deep(buf, len, &onnx__model_proto__descriptor, 0))
    return kiln__err(err, KILN_ELIMIT, "%s: messages nested more than %d levels deep (subgraphs inside subgraphs, or nested sequence/map types): refused before parsing",
                     label, KILN_ONNX_MAX_NESTING);
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
  if (!mp) return kiln__err(err, KILN_EPARSE, "%s: not a valid ONNX model (protobuf parse failed: truncated or not an ONNX file)", label);
  int rc = 0;
  kiln_graph *g = NULL;
  if (!mp->graph || (mp->graph->n_node == 0 && mp->graph->n_output == 0)) {
    rc = kiln__err(err, KILN_EPARSE, "%s: not a valid ONNX model (no graph)", label);
    goto fail;
  }
  uint64_t total = len;
  if ((rc = load_graph(mp->graph, mp, label, base_dir, max_bytes, &total, false, &g, err)) != 0) goto fail;
  if ((rc = inline_constant_captures(g, err)) != 0) goto fail;
  if (path && !(g->path = strdup(path))) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto fail; }
  onnx__model_proto__free_unpacked(mp, NULL);
  *out = g;
  return 0;
fail:
  onnx__model_proto__free_unpacked(mp, NULL);
  kiln_graph_free(g);
  return rc ? rc : KILN_EINTERNAL;
}

/* One GraphProto (the model's, or a Loop/If/Scan body when sub is set) into
 * a graph. A subgraph may read values of the enclosing scopes: they become
 * extra inputs of the subgraph after its declared ones (g->nformal counts
 * those), and the enclosing node reads them as extra inputs too (load_node). */
static int load_graph(const Onnx__GraphProto *gp, const Onnx__ModelProto *mp, const char *label, const char *base_dir, uint64_t max_bytes, uint64_t *totalp,
                      bool sub, kiln_graph **out, kiln_error *err) {
  int rc = 0;
  kiln_graph *g = calloc(1, sizeof *g);
  if (!g) return kiln__err(err, KILN_ENOMEM, "out of memory");
  g->ir_version = mp->has_ir_version ? (int)mp->ir_version : 0;
  g->opset = 0;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const char *dom = mp->opset_import[i]->domain;
    if (!dom || !*dom || !strcmp(dom, "ai.onnx")) g->opset = (int)mp->opset_import[i]->version;
  }
  if (!g->opset) g->opset = 1;
  uint64_t total = *totalp, len = *totalp;
  /* initializers; the limit covers the model file and its external data */
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    if (!tp->name || !*tp->name) { rc = kiln__err(err, KILN_EPARSE, "%s: initializer %zu has no name", label, i); goto fail; }
    uint64_t ext = external_bytes(tp);
    if (ext > max_bytes - total) {
      rc = kiln__err(err, KILN_ELIMIT, "%s: model is more than the limit of %llu bytes with its external data (%llu bytes in the file, tensor '%s' adds %s%llu)",
                     label, (unsigned long long)max_bytes, (unsigned long long)len, tp->name, ext == UINT64_MAX ? "more than " : "",
                     (unsigned long long)(ext == UINT64_MAX ? max_bytes : ext));
      goto fail;
    }
    total += ext;
    if (kiln_graph_find_value(g, tp->name) >= 0) { rc = kiln__err(err, KILN_EPARSE, "%s: initializer '%s' is given twice", label, tp->name); goto fail; }
    kiln_tensor *t = NULL;
    if ((rc = kiln_tensor_from_proto(tp, base_dir, &t, err)) != 0) {
      char tmp[1024]; snprintf(tmp, sizeof tmp, "%s: %s", label, err ? err->msg : ""); if (err) snprintf(err->msg, sizeof err->msg, "%s", tmp);
      goto fail;
    }
    int id = kiln_graph_add_value(g, tp->name);
    if (id < 0) { kiln_tensor_free(t); rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto fail; }
    kiln_value *v = &g->vals[id];
    v->dtype = t->dtype; v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof v->dims);
    if (t->dtype == KILN_DT_STRING) { /* values hold strings as packed rows (see kiln_strings_pack) */
      v->strw = kiln_strings_width(t);
      v->data = kiln_strings_pack(t, v->strw);
      if (!v->data) { kiln_tensor_free(t); rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto fail; }
    } else { v->data = t->data; t->data = NULL; }
    v->is_const = v->is_initializer = true;
    kiln_tensor_free(t);
  }
  if (gp->n_sparse_initializer) { rc = kiln__err(err, KILN_EUNSUPPORTED, "%s: sparse initializers are not supported", label); goto fail; }
  /* inputs */
  g->inputs = calloc(gp->n_input + 1, sizeof(int));
  for (size_t i = 0; i < gp->n_input; i++) {
    if (!gp->input[i]->name) { rc = kiln__err(err, KILN_EPARSE, "%s: graph input %zu has no name", label, i); goto fail; }
    int id = kiln_graph_add_value(g, gp->input[i]->name);
    if (id < 0) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto fail; }
    if (g->vals[id].is_initializer) continue; /* IR<4 lists initializers as inputs */
    if (set_value_info(g, id, gp->input[i])) { rc = kiln__err(err, KILN_EUNSUPPORTED, "%s: input '%s' has rank above %d", label, gp->input[i]->name, KILN_MAX_RANK); goto fail; }
    g->vals[id].is_input = true;
    g->inputs[g->ninputs++] = id;
  }
  /* nodes */
  g->nodes = calloc(gp->n_node + 1, sizeof(kiln_node));
  g->capnodes = (int)gp->n_node;
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    kiln_node *n = &g->nodes[g->nnodes++];
    char nm[64];
    snprintf(nm, sizeof nm, "%s_%zu", np->op_type ? np->op_type : "node", i);
    n->name = xstrdup(np->name && *np->name ? np->name : nm);
    n->op_type = xstrdup(np->op_type);
    n->domain = xstrdup(np->domain);
    n->opset = g->opset;
    for (size_t k = 0; k < mp->n_opset_import; k++) {
      const char *dom = mp->opset_import[k]->domain ? mp->opset_import[k]->domain : "";
      const char *nd = n->domain;
      if (!strcmp(dom, nd) || (!*nd && !strcmp(dom, "ai.onnx")) || (!*dom && !strcmp(nd, "ai.onnx"))) n->opset = (int)mp->opset_import[k]->version;
    }
    n->nin = n->nin_formal = (int)np->n_input; n->nout = (int)np->n_output;
    n->in = malloc(sizeof(int) * (np->n_input + 1));
    n->out = malloc(sizeof(int) * (np->n_output + 1));
    n->attrs = calloc(np->n_attribute + 1, sizeof(kiln_attr));
    if (!n->in || !n->out || !n->attrs) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto fail; }
    for (size_t k = 0; k < np->n_input; k++)
      n->in[k] = (np->input[k] && *np->input[k]) ? kiln_graph_add_value(g, np->input[k]) : -1;
    for (size_t k = 0; k < np->n_output; k++) {
      n->out[k] = (np->output[k] && *np->output[k]) ? kiln_graph_add_value(g, np->output[k]) : -1;
      if (n->out[k] >= 0 && (g->vals[n->out[k]].producer >= 0 || g->vals[n->out[k]].is_initializer || g->vals[n->out[k]].is_input)) {
        if (g->vals[n->out[k]].producer >= 0 || g->vals[n->out[k]].is_input) {
          rc = kiln__err(err, KILN_EPARSE, "%s: value '%s' is produced twice (node '%s')", label, np->output[k], n->name);
          goto fail;
        }
      }
      if (n->out[k] >= 0) g->vals[n->out[k]].producer = (int)i;
    }
    for (size_t k = 0; k < np->n_attribute; k++) {
      n->nattr++;
      if ((rc = convert_attr(np->attribute[k], &n->attrs[k], base_dir, n->name, err)) != 0) goto fail;
      if (n->attrs[k].type == KILN_ATTR_GRAPH && np->attribute[k]->g) {
        if ((rc = load_graph(np->attribute[k]->g, mp, label, base_dir, max_bytes, &total, true, &n->attrs[k].g, err)) != 0) goto fail;
        if ((rc = add_captures(g, n, n->attrs[k].g, err)) != 0) goto fail;
      }
    }
    n->op = kiln_op_lookup(n->domain, n->op_type);
  }
  g->nformal = g->ninputs;
  /* every node input must come from somewhere; in a subgraph, from the
   * enclosing scopes (a capture: an extra input) */
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) {
      int v = g->nodes[i].in[k];
      if (sub && v >= 0 && !g->vals[v].is_input && !g->vals[v].is_initializer && g->vals[v].producer < 0) {
        int *ni = realloc(g->inputs, sizeof(int) * (size_t)(g->ninputs + 1));
        if (!ni) { rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto fail; }
        g->inputs = ni;
        g->inputs[g->ninputs++] = v;
        g->vals[v].is_input = true;
      }
      if (v >= 0 && !g->vals[v].is_input && !g->vals[v].is_initializer && g->vals[v].producer < 0) {
        rc = kiln__err(err, KILN_EPARSE, "%s: node '%s' reads '%s', which no node, input or initializer provides", label, g->nodes[i].name, g->vals[v].name);
        goto fail;
      }
    }
  /* outputs */
  g->outputs = calloc(gp->n_output + 1, sizeof(int));
  for (size_t i = 0; i < gp->n_output; i++) {
    if (!gp->output[i]->name) { rc = kiln__err(err, KILN_EPARSE, "%s: graph output %zu has no name", label, i); goto fail; }
    int id = kiln_graph_find_value(g, gp->output[i]->name);
    if (sub && (id < 0 || (g->vals[id].producer < 0 && !g->vals[id].is_input && !g->vals[id].is_initializer))) {
      /* a subgraph output that is a value of an enclosing scope */
      int *ni = realloc(g->inputs, sizeof(int) * (size_t)(g->ninputs + 1));
      if (!ni || (id = kiln_graph_add_value(g, gp->output[i]->name)) < 0) { if (ni) g->inputs = ni; rc = kiln__err(err, KILN_ENOMEM, "out of memory"); goto fail; }
      g->inputs = ni;
      g->inputs[g->ninputs++] = id;
      g->vals[id].is_input = true;
    }
    if (id < 0) { rc = kiln__err(err, KILN_EPARSE, "%s: output '%s' is not produced by any node", label, gp->output[i]->name); goto fail; }
    /* the declared type, for kiln_model_output_info before a plan (planning infers it again) */
    if (!g->vals[id].is_input && !g->vals[id].is_initializer && g->vals[id].rank < 0 && set_value_info(g, id, gp->output[i])) g->vals[id].rank = -1;
    g->vals[id].is_output = true;
    if (gp->output[i]->type && gp->output[i]->type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) g->vals[id].optional = true;
    g->outputs[g->noutputs++] = id;
  }
  if ((rc = kiln__graph_toposort(g, "graph", err)) != 0) {
    char tmp[1024]; snprintf(tmp, sizeof tmp, "%s: %s", label, err ? err->msg : ""); if (err) snprintf(err->msg, sizeof err->msg, "%s", tmp);
    goto fail;
  }
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      if (g->nodes[i].in[k] >= 0) g->vals[g->nodes[i].in[k]].nconsumers++;
  *totalp = total;
  *out = g;
  return 0;
fail:
  kiln_graph_free(g);
  return rc ? rc : KILN_EINTERNAL;
}

int kiln_onnx_load_buffer(const void *buf, size_t len, const char *base_dir, uint64_t max_bytes, kiln_graph **out, kiln_error *err) {
  return load_model(buf, len, NULL, base_dir ? base_dir : ".", max_bytes, out, err);
}

int kiln_onnx_load(const char *path, uint64_t max_bytes, kiln_graph **out, kiln_error *err) {
  if (!max_bytes) max_bytes = (uint64_t)4 << 30;
  struct stat st;
  if (stat(path, &st) != 0) return kiln__err(err, KILN_EIO, "%s: cannot open model: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return kiln__err(err, KILN_EIO, "%s: not a regular file", path);
  if ((uint64_t)st.st_size > max_bytes)
    return kiln__err(err, KILN_ELIMIT, "%s: model is %lld bytes, more than the limit of %llu bytes", path, (long long)st.st_size, (unsigned long long)max_bytes);
  if (st.st_size == 0) return kiln__err(err, KILN_EPARSE, "%s: empty file, not an ONNX model", path);
  size_t len = (size_t)st.st_size;
  char *pathcopy = strdup(path);
  if (!pathcopy) return kiln__err(err, KILN_ENOMEM, "out of memory");
  FILE *f = fopen(path, "rb");
  if (!f) { free(pathcopy); return kiln__err(err, KILN_EIO, "%s: cannot open model: %s", path, strerror(errno)); }
  uint8_t *buf = malloc(len);
  int rc = 0;
  if (!buf) rc = kiln__err(err, KILN_ENOMEM, "%s: out of memory reading %zu bytes", path, len);
  else if (fread(buf, 1, len, f) != len) rc = kiln__err(err, KILN_EIO, "%s: short read", path);
  fclose(f);
  if (!rc) rc = load_model(buf, len, path, dirname(pathcopy), max_bytes, out, err);
  free(buf);
  free(pathcopy);
  return rc;
}
