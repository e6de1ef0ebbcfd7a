/* kernels/family.c: the registry of kernel families (see family.h) and what
 * every family shares: starting an instance's descriptor, its solvers, the
 * epilogue slots of the sources that take a fused epilogue. */
#include "family.h"

/* Kernel sources of no tunable family: each is still run under Oclgrind
 * (tests/oclgrind.sh FAMILY) through the ops that use it. */
#define KERNELS(src, group) (&(const kiln_family){.name = "", .file = src, .oclgrind = group, .selector = -1})

/* Every family, in the order the Oclgrind runs are registered. A new family
 * is its descriptor (beside its .cl source) and one line here. */
const kiln_family *const kiln_families[] = {
  &kiln_family_eltwise,
  KERNELS("elementwise_cast.cl", "cast"),
  KERNELS("movement.cl", "movement"),
  KERNELS("movement_scatter.cl", "scatter"),
  &kiln_family_reduce,
  &kiln_family_softmax,
  &kiln_family_norm,
  &kiln_family_gemm,
  &kiln_family_conv,
  &kiln_family_pool,
  &kiln_family_gpool,
  KERNELS("resize.cl", "resize"),
  KERNELS("rnn.cl", "rnn"),
  KERNELS("misc.cl", "misc"),
  KERNELS("strings.cl", "strings"),
  KERNELS(NULL, "sequence"), /* sequence ops: buffer copies, no kernel source */
  KERNELS("nms.cl", "detect"), /* detection and the rest: NonMaxSuppression, RoiAlign, */
  KERNELS("roialign.cl", "detect"), /* TfIdfVectorizer, the training optimizers */
  KERNELS("tfidf.cl", "detect"),
  KERNELS("training.cl", "detect"),
  &kiln_family_attention,
};
const int kiln_nfamilies = (int)(sizeof kiln_families / sizeof kiln_families[0]);

const kiln_family *kiln_family_find(const char *name) {
  for (int i = 0; name && i < kiln_nfamilies; i++)
    if (kiln_families[i]->nparams && !strcmp(kiln_families[i]->name, name)) return kiln_families[i];
  return NULL;
}

const kiln_solver *kiln_family_solver(const kiln_family *f, int i) {
  return (const kiln_solver *)(const void *)((const char *)f->solvers + (size_t)i * f->solver_size);
}

int kiln_family_solver_of(const kiln_family *f, const int *p) {
  for (int i = 0; i < f->nsolvers; i++) {
    const kiln_solver *s = kiln_family_solver(f, i);
    if (f->selector < 0 || s->select == p[f->selector]) return i;
  }
  return -1;
}

void kiln_family_begin(const kiln_family *f, int dtype, kiln_tunable *t) {
  memset(t, 0, sizeof *t);
  t->family = f->name;
  t->file = f->file;
  t->dtype = dtype;
  t->nparams = f->nparams;
  memcpy(t->params, f->params, sizeof(kiln_kparam) * (size_t)f->nparams);
  t->valid = f->valid;
  t->features = f->features;
}

void kiln_family_end(const kiln_family *f, kiln_tunable *t) {
  if (f->defaults) f->defaults(t);
}

int kiln_family_key_dims(char *key, size_t len, int o, const char *tag, const kiln_value *v) {
  if (o >= 0 && (size_t)o < len) o += snprintf(key + o, len - (size_t)o, "%s=", tag);
  for (int i = 0; i < v->rank && o >= 0 && (size_t)o < len; i++) o += snprintf(key + o, len - (size_t)o, "%s%lld", i ? "x" : "", (long long)v->dims[i]);
  return o;
}

int kiln_family_epi_slot(const char *file) {
  int slot = 0;
  for (int i = 0; i < kiln_nfamilies; i++) {
    const kiln_family *f = kiln_families[i];
    if (!f->epilogue || !f->file) continue;
    size_t n = strcspn(f->file, ","); /* the family's own source is listed first */
    if (strlen(file) == n && !strncmp(f->file, file, n)) return slot;
    slot++;
  }
  return -1;
}
