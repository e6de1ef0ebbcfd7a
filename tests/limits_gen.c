/* limits_gen.c: writes the ONNX models of tests/limits.sh into a directory,
 * encoding the protobuf wire format by hand (no python, no protobuf library:
 * the deepest model cannot be built by a recursive packer either).
 *
 *   big_tensor.onnx    y = Expand(x[1], [65536, 65536]): a 16 GiB float
 *                      intermediate, more than any device's max allocation
 *   shape_overflow.onnx y = Expand(x[1], [2^32, 2^32, 4]): the element count
 *                      overflows 64 bits
 *   input_overflow.onnx an input declared [2^32, 2^32, 4]
 *   cycle.onnx         a = Add(x, b), b = Relu(a): a cycle
 *   weights.onnx       y = x + W, W a 1-D float initializer of 32768 elements
 *                      (131 kB of raw data in the model file)
 *   ext.onnx           the same with W in ext.bin beside it (a 200-byte
 *                      model file with 131 kB of external data)
 *   nested_ok.onnx     an If whose branches nest 20 levels of If (60 levels
 *                      of messages): within the nesting limit
 *   nested_deep.onnx   200000 levels of If inside If (4 MB): protobuf-c's
 *                      recursive unpacker would overflow the stack
 *   type_deep.onnx     an input of type sequence(sequence(...(float))) nested
 *                      100000 levels
 *
 * usage: limits_gen OUTDIR */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- an append buffer for protobuf messages ---- */
typedef struct { uint8_t *p; size_t n, cap; } buf;

static void reserve(buf *b, size_t more) {
  if (b->n + more <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + more) cap *= 2;
  b->p = realloc(b->p, cap);
  if (!b->p) { perror("limits_gen"); exit(1); }
  b->cap = cap;
}
static void raw(buf *b, const void *d, size_t n) { reserve(b, n); if (n) memcpy(b->p + b->n, d, n); b->n += n; }
static void varint(buf *b, uint64_t v) {
  uint8_t t[10];
  size_t n = 0;
  do { t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
  raw(b, t, n);
}
static void tag(buf *b, int field, int wt) { varint(b, ((uint64_t)field << 3) | (uint64_t)wt); }
static void f_int(buf *b, int field, int64_t v) { tag(b, field, 0); varint(b, (uint64_t)v); }
static void f_bytes(buf *b, int field, const void *d, size_t n) { tag(b, field, 2); varint(b, n); raw(b, d, n); }
static void f_str(buf *b, int field, const char *s) { f_bytes(b, field, s, strlen(s)); }
/* appends sub as message field `field` and frees it */
static void f_msg(buf *b, int field, buf *sub) { f_bytes(b, field, sub->p, sub->n); free(sub->p); memset(sub, 0, sizeof *sub); }

/* ---- ONNX messages (field numbers of onnx.proto) ---- */
enum { FLOAT = 1, INT64 = 7 };

/* ValueInfoProto of a tensor; rank < 0: no shape */
static void value_info(buf *g, int field, const char *name, int elem, int rank, const int64_t *dims) {
  buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
  f_str(&vi, 1, name);
  f_int(&tt, 1, elem);
  if (rank >= 0) {
    for (int i = 0; i < rank; i++) { buf d = {0}; f_int(&d, 1, dims[i]); f_msg(&sh, 1, &d); }
    f_msg(&tt, 2, &sh);
  }
  f_msg(&tp, 1, &tt);
  f_msg(&vi, 2, &tp);
  f_msg(g, field, &vi);
}
static void node(buf *g, const char *op, const char *name, int nin, const char **in, int nout, const char **out) {
  buf n = {0};
  for (int i = 0; i < nin; i++) f_str(&n, 1, in[i]);
  for (int i = 0; i < nout; i++) f_str(&n, 2, out[i]);
  f_str(&n, 3, name);
  f_str(&n, 4, op);
  f_msg(g, 1, &n);
}
/* TensorProto initializer: dims, type, raw data (or external data) */
static void initializer(buf *g, const char *name, int elem, int rank, const int64_t *dims, const void *data, size_t bytes, const char *ext) {
  buf t = {0};
  for (int i = 0; i < rank; i++) f_int(&t, 1, dims[i]);
  f_int(&t, 2, elem);
  f_str(&t, 8, name);
  if (ext) {
    char len[32];
    snprintf(len, sizeof len, "%zu", bytes);
    buf e1 = {0}, e2 = {0}, e3 = {0};
    f_str(&e1, 1, "location"); f_str(&e1, 2, ext); f_msg(&t, 13, &e1);
    f_str(&e2, 1, "offset"); f_str(&e2, 2, "0"); f_msg(&t, 13, &e2);
    f_str(&e3, 1, "length"); f_str(&e3, 2, len); f_msg(&t, 13, &e3);
    f_int(&t, 14, 1); /* data_location = EXTERNAL */
  } else {
    f_bytes(&t, 9, data, bytes);
  }
  f_msg(g, 5, &t);
}
/* ModelProto around graph g (freed); opset 13 */
static void model(buf *m, buf *g) {
  buf op = {0};
  f_int(m, 1, 8); /* ir_version */
  f_str(&op, 1, "");
  f_int(&op, 2, 13);
  f_msg(m, 8, &op);
  f_msg(m, 7, g);
}

static const char *dir;
static void save(const char *name, buf *m) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(m->p, 1, m->n, f) != m->n || fclose(f) != 0) { perror(path); exit(1); }
  free(m->p);
  memset(m, 0, sizeof *m);
}
static void save_model(const char *name, buf *g) { buf m = {0}; f_str(g, 2, name); model(&m, g); save(name, &m); }

/* y = Expand(x[1], shape) with a constant shape */
static void expand_model(const char *file, int rank, const int64_t *shape) {
  buf g = {0};
  int64_t one = 1, r = rank;
  node(&g, "Expand", "expand", 2, (const char *[]){"x", "shape"}, 1, (const char *[]){"y"});
  initializer(&g, "shape", INT64, 1, &r, shape, sizeof(int64_t) * (size_t)rank, NULL);
  value_info(&g, 11, "x", FLOAT, 1, &one);
  value_info(&g, 12, "y", FLOAT, -1, NULL);
  save_model(file, &g);
}

/* If nodes nested `levels` deep, each then/else branch a graph holding the
 * next If; the innermost branches output a constant. The wire bytes are built
 * from the inside out into one buffer written backwards, so depth costs
 * linear time and no recursion. Returns the GraphProto bytes of the outer
 * branch (in b->p + b->n - len .. end, with len returned). */
typedef struct { uint8_t *p; size_t cap, start; } rbuf; /* bytes at p[start .. cap) */
static void rreserve(rbuf *b, size_t more) {
  if (b->start >= more) return;
  size_t used = b->cap - b->start, cap = b->cap ? b->cap : 1024;
  while (cap - used < more) cap *= 2;
  uint8_t *np = malloc(cap);
  if (!np) { perror("limits_gen"); exit(1); }
  if (used) memcpy(np + cap - used, b->p + b->start, used);
  free(b->p);
  b->p = np;
  b->start = cap - used;
  b->cap = cap;
}
static void rraw(rbuf *b, const void *d, size_t n) {
  if (!n) return;
  rreserve(b, n);
  b->start -= n;
  memcpy(b->p + b->start, d, n);
}
static void rvarint(rbuf *b, uint64_t v) {
  uint8_t t[10];
  size_t n = 0;
  do { t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
  rraw(b, t, n);
}
static size_t rlen(const rbuf *b) { return b->cap - b->start; }
/* prepends a small message (fields already encoded in f) and its tag; the
 * bytes after it so far, of length inner, become part of it: writes
 * tag, len(f + inner) and f in front */
static void rwrap(rbuf *b, int field, const buf *f, size_t inner) {
  rraw(b, f->p, f->n);
  rvarint(b, f->n + inner);
  rvarint(b, ((uint64_t)field << 3) | 2);
}

static void nested_if(const char *file, int levels) {
  rbuf r = {0};
  /* innermost branch: a graph with a Constant node and its output */
  buf inner = {0};
  {
    buf n = {0}, a = {0}, t = {0};
    float one = 1;
    f_str(&n, 2, "c");
    f_str(&n, 4, "Constant");
    f_int(&t, 2, FLOAT);
    f_bytes(&t, 9, &one, sizeof one);
    f_str(&a, 1, "value");
    f_msg(&a, 5, &t);
    f_int(&a, 20, 4); /* TENSOR */
    f_msg(&n, 5, &a);
    f_msg(&inner, 1, &n);
    f_str(&inner, 2, "leaf");
    value_info(&inner, 12, "c", FLOAT, 0, NULL);
  }
  rraw(&r, inner.p, inner.n);
  free(inner.p);
  /* each level: graph { node { input "cond"; output "c"; op_type "If"; attribute { name "then_branch"; type GRAPH; g { <inner> } } } output c } */
  for (int i = 0; i < levels; i++) {
    size_t in = rlen(&r);
    buf attr = {0}, nd = {0}, gr = {0}, tail = {0};
    /* attribute: name, type, then field 6 (g) = the inner graph */
    f_str(&attr, 1, "then_branch");
    f_int(&attr, 20, 5); /* GRAPH */
    rvarint(&r, in);
    rvarint(&r, (6 << 3) | 2);
    rraw(&r, attr.p, attr.n);
    size_t alen = rlen(&r);
    /* node: input, output, op_type, then attribute (field 5) */
    f_str(&nd, 1, "cond");
    f_str(&nd, 2, "c");
    f_str(&nd, 4, "If");
    rvarint(&r, alen);
    rvarint(&r, (5 << 3) | 2);
    rraw(&r, nd.p, nd.n);
    size_t nlen = rlen(&r);
    /* graph: node (field 1) first, its output after */
    value_info(&tail, 12, "c", FLOAT, 0, NULL);
    f_str(&tail, 2, "branch");
    (void)gr;
    /* the tail fields follow the node: they go after it, which in a
     * backwards buffer means before it was written; protobuf allows any
     * field order, so put them in front instead */
    rvarint(&r, nlen);
    rvarint(&r, (1 << 3) | 2);
    rraw(&r, tail.p, tail.n);
    free(attr.p); free(nd.p); free(tail.p);
  }
  /* the outer model: ModelProto { ir_version, opset, graph = the outermost
   * branch plus the input "cond" } */
  buf cond = {0};
  int64_t none = 0;
  (void)none;
  value_info(&cond, 11, "cond", 9 /* BOOL */, 0, NULL);
  rraw(&r, cond.p, cond.n);
  free(cond.p);
  size_t glen = rlen(&r);
  rvarint(&r, glen);
  rvarint(&r, (7 << 3) | 2);
  buf head = {0}, op = {0};
  f_int(&head, 1, 8);
  f_str(&op, 1, "");
  f_int(&op, 2, 13);
  f_msg(&head, 8, &op);
  rraw(&r, head.p, head.n);
  free(head.p);
  buf m = {0};
  raw(&m, r.p + r.start, rlen(&r));
  free(r.p);
  save(file, &m);
}

/* an input whose type is sequence(sequence(...(tensor float))) */
static void nested_type(const char *file, int levels) {
  rbuf r = {0};
  buf tt = {0}, elem = {0};
  f_int(&elem, 1, FLOAT);
  f_msg(&tt, 1, &elem); /* TypeProto { tensor_type { elem_type } } */
  rraw(&r, tt.p, tt.n);
  free(tt.p);
  buf none = {0};
  for (int i = 0; i < levels; i++) {
    /* Sequence { elem_type (1) = TypeProto }, TypeProto { sequence_type (4) = Sequence } */
    rwrap(&r, 1, &none, rlen(&r));
    rwrap(&r, 4, &none, rlen(&r));
  }
  /* ValueInfoProto { name, type (2) } */
  rwrap(&r, 2, &none, rlen(&r));
  buf nm = {0};
  f_str(&nm, 1, "x");
  rwrap(&r, 11, &nm, rlen(&r)); /* GraphProto.input */
  free(nm.p);
  buf g = {0}, m = {0};
  raw(&g, r.p + r.start, rlen(&r));
  free(r.p);
  node(&g, "Identity", "id", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
  value_info(&g, 12, "y", FLOAT, -1, NULL);
  f_str(&g, 2, "deep_type");
  model(&m, &g);
  save(file, &m);
}

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: limits_gen OUTDIR\n"); return 2; }
  dir = argv[1];

  expand_model("big_tensor.onnx", 2, (const int64_t[]){65536, 65536});
  expand_model("shape_overflow.onnx", 3, (const int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32, 4});
  {
    buf g = {0};
    node(&g, "Relu", "relu", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    value_info(&g, 11, "x", FLOAT, 3, (const int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32, 4});
    value_info(&g, 12, "y", FLOAT, -1, NULL);
    save_model("input_overflow.onnx", &g);
  }
  {
    buf g = {0};
    int64_t one = 1;
    node(&g, "Add", "add_in_cycle", 2, (const char *[]){"x", "b"}, 1, (const char *[]){"a"});
    node(&g, "Relu", "relu_in_cycle", 1, (const char *[]){"a"}, 1, (const char *[]){"b"});
    value_info(&g, 11, "x", FLOAT, 1, &one);
    value_info(&g, 12, "b", FLOAT, 1, &one);
    save_model("cycle.onnx", &g);
  }
  {
    enum { N = 32768 };
    static float w[N];
    for (int i = 0; i < N; i++) w[i] = (float)(i % 7) * 0.25f;
    int64_t n = N;
    for (int ext = 0; ext < 2; ext++) {
      buf g = {0};
      node(&g, "Add", "add_w", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
      initializer(&g, "W", FLOAT, 1, &n, w, sizeof w, ext ? "ext.bin" : NULL);
      value_info(&g, 11, "x", FLOAT, 1, &n);
      value_info(&g, 12, "y", FLOAT, -1, NULL);
      save_model(ext ? "ext.onnx" : "weights.onnx", &g);
    }
    buf e = {0};
    raw(&e, w, sizeof w);
    save("ext.bin", &e);
  }
  nested_if("nested_ok.onnx", 20);
  nested_if("nested_deep.onnx", 200000);
  nested_type("type_deep.onnx", 100000);
  return 0;
}
