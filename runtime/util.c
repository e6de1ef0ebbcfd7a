/* util.c: status messages, dtype tables, attribute and value helpers,
 * broadcasting and generic element access shared by the runtime and ops. */
#include "kiln_internal.h"
#include <math.h>
#include <time.h>

const char *kiln_strerror(int status) {
  switch (status) {
#define XX(name, val, msg) case val: return msg;
    KILN_STATUS_MAP(XX)
#undef XX
  }
  return "unknown status";
}

int kiln__err(kiln_error *err, int status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
  }
  return status;
}

double kiln__now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void *kiln__grow(void *v, int n, int *cap, size_t es, int first) {
  if (n < *cap) return v;
  int c = *cap ? *cap * 2 : first;
  void *nv = realloc(v, es * (size_t)c);
  if (nv) *cap = c;
  return nv;
}

int kiln__cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int kiln__cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

uint64_t kiln__splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static const struct { const char *name; size_t size; } dtypes[KILN_DT_COUNT] = {
  [KILN_DT_UNDEFINED] = {"undefined", 0}, [KILN_DT_FLOAT] = {"float32", 4}, [KILN_DT_UINT8] = {"uint8", 1},
  [KILN_DT_INT8] = {"int8", 1},           [KILN_DT_UINT16] = {"uint16", 2}, [KILN_DT_INT16] = {"int16", 2},
  [KILN_DT_INT32] = {"int32", 4},         [KILN_DT_INT64] = {"int64", 8},   [KILN_DT_STRING] = {"string", 0},
  [KILN_DT_BOOL] = {"bool", 1},           [KILN_DT_FLOAT16] = {"float16", 2}, [KILN_DT_DOUBLE] = {"float64", 8},
  [KILN_DT_UINT32] = {"uint32", 4},       [KILN_DT_UINT64] = {"uint64", 8},
  [KILN_DT_COMPLEX64] = {"complex64", 0}, [KILN_DT_COMPLEX128] = {"complex128", 0}, [KILN_DT_BFLOAT16] = {"bfloat16", 2},
};
_Static_assert(sizeof dtypes / sizeof dtypes[0] == KILN_DT_COUNT, "dtype table out of sync");

const char *kiln_dtype_name(int dt) { return (dt >= 0 && dt < KILN_DT_COUNT) ? dtypes[dt].name : "unknown"; }
size_t kiln_dtype_size(int dt) { return (dt >= 0 && dt < KILN_DT_COUNT) ? dtypes[dt].size : 0; }

const kiln_attr *kiln_attr_find(const kiln_node *n, const char *name) {
  for (int i = 0; i < n->nattr; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}
int64_t kiln_attr_int(const kiln_node *n, const char *name, int64_t dflt) {
  const kiln_attr *a = kiln_attr_find(n, name);
  if (!a) return dflt;
  if (a->type == KILN_ATTR_FLOAT) return (int64_t)a->f;
  return a->i;
}
float kiln_attr_float(const kiln_node *n, const char *name, float dflt) {
  const kiln_attr *a = kiln_attr_find(n, name);
  if (!a) return dflt;
  if (a->type == KILN_ATTR_INT) return (float)a->i;
  return a->f;
}
const char *kiln_attr_str(const kiln_node *n, const char *name, const char *dflt) {
  const kiln_attr *a = kiln_attr_find(n, name);
  return (a && a->type == KILN_ATTR_STRING && a->s) ? a->s : dflt;
}
int kiln_attr_ints(const kiln_node *n, const char *name, const int64_t **vals) {
  const kiln_attr *a = kiln_attr_find(n, name);
  if (!a || a->type != KILN_ATTR_INTS) { *vals = NULL; return -1; }
  *vals = a->ints;
  return a->n;
}
int kiln_attr_floats(const kiln_node *n, const char *name, const float **vals) {
  const kiln_attr *a = kiln_attr_find(n, name);
  if (!a || a->type != KILN_ATTR_FLOATS) { *vals = NULL; return -1; }
  *vals = a->floats;
  return a->n;
}

int64_t kiln_value_numel(const kiln_value *v) {
  if (v->rank < 0) return -1;
  int64_t n = 1;
  for (int i = 0; i < v->rank; i++) n *= v->dims[i];
  return n;
}
size_t kiln_value_bytes(const kiln_value *v) {
  int64_t n = kiln_value_numel(v);
  if (v->dtype == KILN_DT_STRING) return n < 0 ? 0 : (size_t)n * (size_t)v->strw;
  return n < 0 ? 0 : (size_t)n * kiln_dtype_size(v->dtype);
}
size_t kiln_value_dev_bytes(const kiln_value *v) {
  if (!v->half) return kiln_value_bytes(v);
  int64_t n = kiln_value_numel(v);
  return n < 0 ? 0 : (size_t)n * 2;
}
void kiln_set_out(kiln_graph *g, const kiln_node *n, int i, int dtype, int rank, const int64_t *dims) {
  kiln_value *v = kiln_out(g, n, i);
  if (!v) return;
  v->dtype = dtype;
  v->rank = rank;
  for (int k = 0; k < rank; k++) v->dims[k] = dims[k];
}

void kiln_strides(int rank, const int64_t *dims, int64_t *st) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) { st[i] = s; s *= dims[i]; }
}

void kiln_bcast_strides(const kiln_value *v, int r, int64_t *st) {
  int64_t s[KILN_MAX_RANK];
  kiln_strides(v->rank, v->dims, s);
  for (int i = 0; i < r; i++) {
    int k = i - (r - v->rank);
    st[i] = (k < 0 || v->dims[k] == 1) ? 0 : s[k];
  }
}

int kiln_broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out) {
  int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    int64_t da = i - (r - ra) >= 0 ? a[i - (r - ra)] : 1;
    int64_t db = i - (r - rb) >= 0 ? b[i - (r - rb)] : 1;
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else return KILN_ESHAPE;
  }
  *rout = r;
  return 0;
}

static float half_to_float(uint16_t h) {
  uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  float f;
  if (e == 0) f = ldexpf((float)m, -24);
  else if (e == 31) f = m ? NAN : INFINITY;
  else f = ldexpf((float)(m | 1024), (int)e - 25);
  return s ? -f : f;
}
static uint16_t float_to_half(float f) {
  uint32_t x; memcpy(&x, &f, 4);
  uint32_t s = (x >> 16) & 0x8000; int e = (int)((x >> 23) & 255) - 127 + 15; uint32_t m = x & 0x7fffff;
  if (((x >> 23) & 255) == 255) return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
  if (e >= 31) return (uint16_t)(s | 0x7c00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)s;
    m |= 0x800000;
    uint32_t sh = (uint32_t)(14 - e);
    uint32_t r = m >> sh; uint32_t rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(s | r);
  }
  uint32_t r = (uint32_t)(e << 10) | (m >> 13); uint32_t rem = m & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
  return (uint16_t)(s | r);
}

uint16_t kiln__f2h(float f) { return float_to_half(f); }
float kiln__h2f(uint16_t h) { return half_to_float(h); }

double kiln_load_f(const void *p, int dt, int64_t k) {
  switch (dt) {
  case KILN_DT_FLOAT: return ((const float *)p)[k];
  case KILN_DT_DOUBLE: return ((const double *)p)[k];
  case KILN_DT_FLOAT16: return half_to_float(((const uint16_t *)p)[k]);
  case KILN_DT_BFLOAT16: { uint32_t u = (uint32_t)((const uint16_t *)p)[k] << 16; float f; memcpy(&f, &u, 4); return f; }
  case KILN_DT_UINT64: return (double)((const uint64_t *)p)[k];
  default: return (double)kiln_load_i(p, dt, k);
  }
}
int64_t kiln_load_i(const void *p, int dt, int64_t k) {
  switch (dt) {
  case KILN_DT_UINT8: case KILN_DT_BOOL: return ((const uint8_t *)p)[k];
  case KILN_DT_INT8: return ((const int8_t *)p)[k];
  case KILN_DT_UINT16: return ((const uint16_t *)p)[k];
  case KILN_DT_INT16: return ((const int16_t *)p)[k];
  case KILN_DT_INT32: return ((const int32_t *)p)[k];
  case KILN_DT_INT64: return ((const int64_t *)p)[k];
  case KILN_DT_UINT32: return ((const uint32_t *)p)[k];
  case KILN_DT_UINT64: return (int64_t)((const uint64_t *)p)[k];
  case KILN_DT_FLOAT: case KILN_DT_DOUBLE: case KILN_DT_FLOAT16: case KILN_DT_BFLOAT16: {
    double v = kiln_load_f(p, dt, k);
    if (v != v) return 0;
    if (v >= 9.2e18) return INT64_MAX;
    if (v <= -9.2e18) return INT64_MIN;
    return (int64_t)v;
  }
  default: return 0;
  }
}
void kiln_store_f(void *p, int dt, int64_t k, double v) {
  switch (dt) {
  case KILN_DT_FLOAT: ((float *)p)[k] = (float)v; return;
  case KILN_DT_DOUBLE: ((double *)p)[k] = v; return;
  case KILN_DT_FLOAT16: ((uint16_t *)p)[k] = float_to_half((float)v); return;
  case KILN_DT_BFLOAT16: {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) ((uint16_t *)p)[k] = 0x7fc0;
    else ((uint16_t *)p)[k] = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); /* round to nearest even */
    return;
  }
  case KILN_DT_BOOL: ((uint8_t *)p)[k] = v != 0; return;
  default: {
    int64_t iv = 0;
    if (v == v) iv = v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    kiln_store_i(p, dt, k, iv);
  }
  }
}
void kiln_store_i(void *p, int dt, int64_t k, int64_t v) {
  switch (dt) {
  case KILN_DT_UINT8: ((uint8_t *)p)[k] = (uint8_t)v; return;
  case KILN_DT_BOOL: ((uint8_t *)p)[k] = v != 0; return;
  case KILN_DT_INT8: ((int8_t *)p)[k] = (int8_t)v; return;
  case KILN_DT_UINT16: ((uint16_t *)p)[k] = (uint16_t)v; return;
  case KILN_DT_INT16: ((int16_t *)p)[k] = (int16_t)v; return;
  case KILN_DT_INT32: ((int32_t *)p)[k] = (int32_t)v; return;
  case KILN_DT_INT64: ((int64_t *)p)[k] = v; return;
  case KILN_DT_UINT32: ((uint32_t *)p)[k] = (uint32_t)v; return;
  case KILN_DT_UINT64: ((uint64_t *)p)[k] = (uint64_t)v; return;
  case KILN_DT_FLOAT: case KILN_DT_DOUBLE: case KILN_DT_FLOAT16: case KILN_DT_BFLOAT16: kiln_store_f(p, dt, k, (double)v); return;
  default: return;
  }
}

int64_t kiln_value_geti(const kiln_value *v, int64_t k) { return kiln_load_i(v->data, v->dtype, k); }
double kiln_value_getf(const kiln_value *v, int64_t k) { return kiln_load_f(v->data, v->dtype, k); }

/* ---- host tensors ---- */

kiln_tensor *kiln_tensor_new(int dtype, int rank, const int64_t *dims) {
  if (rank < 0 || rank > KILN_MAX_RANK || (kiln_dtype_size(dtype) == 0 && dtype != KILN_DT_STRING)) return NULL;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) return NULL;
    if (dims[i] && n > INT64_MAX / 16 / dims[i]) return NULL;
    n *= dims[i];
  }
  if ((uint64_t)n * kiln_dtype_size(dtype) > (uint64_t)1 << 40) return NULL;
  kiln_tensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->data = calloc((size_t)(n ? n : 1), dtype == KILN_DT_STRING ? sizeof(char *) : kiln_dtype_size(dtype));
  if (!t->data) { free(t); return NULL; }
  return t;
}
void kiln_tensor_free(kiln_tensor *t) {
  if (!t) return;
  if (t->dtype == KILN_DT_STRING && t->data) {
    int64_t n = kiln_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) free(((char **)t->data)[i]);
  }
  free(t->name);
  free(t->data);
  free(t);
}
int64_t kiln_tensor_numel(const kiln_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

/* ---- string tensors: host (char *) <-> packed fixed-width rows ---- */

int64_t kiln_strings_width(const kiln_tensor *t) {
  int64_t n = kiln_tensor_numel(t), w = 1;
  for (int64_t i = 0; i < n; i++) {
    const char *p = ((char **)t->data)[i];
    int64_t l = p ? (int64_t)strlen(p) + 1 : 1;
    if (l > w) w = l;
  }
  return (w + 3) / 4 * 4;
}

void *kiln_strings_pack(const kiln_tensor *t, int64_t w) {
  int64_t n = kiln_tensor_numel(t);
  char *buf = calloc((size_t)(n ? n : 1), (size_t)w);
  if (!buf) return NULL;
  for (int64_t i = 0; i < n; i++) {
    const char *p = ((char **)t->data)[i];
    if (p) strncpy(buf + i * w, p, (size_t)w - 1);
  }
  return buf;
}

int kiln_strings_unpack(kiln_tensor *t, const void *packed, int64_t w) {
  int64_t n = kiln_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    const char *row = (const char *)packed + i * w;
    size_t l = strnlen(row, (size_t)w);
    char *s = malloc(l + 1);
    if (!s) return KILN_ENOMEM;
    memcpy(s, row, l);
    s[l] = 0;
    free(((char **)t->data)[i]);
    ((char **)t->data)[i] = s;
  }
  return 0;
}

size_t kiln_struct_size(const char *name) {
#define S(T) {#T, sizeof(T)}
  static const struct { const char *name; size_t size; } sizes[] = {
    S(kiln_error), S(kiln_tensor), S(kiln_device_info), S(kiln_shape_binding), S(kiln_load_options), S(kiln_value_info),
    S(kiln_model_stats), S(kiln_run_stats), S(kiln_node_time), S(kiln_fusion_info), S(kiln_plan_kernel), S(kiln_param_stats),
    S(kiln_param_basis), S(kiln_probe_figure), S(kiln_node_prediction), S(kiln_model_eval), S(kiln_tune_progress),
    S(kiln_tune_result), S(kiln_tune_options), S(kiln_options),
  };
#undef S
  for (size_t i = 0; name && i < sizeof sizes / sizeof sizes[0]; i++)
    if (!strcmp(sizes[i].name, name)) return sizes[i].size;
  return 0;
}
