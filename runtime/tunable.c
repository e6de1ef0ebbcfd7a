/* tunable.c: parameter vectors of tunable kernels (text form, build options)
 * and the choice of parameters for a node at run time: tuner override, then
 * the tuning database's best record for this device, then the cost model's
 * choice, then the defaults (made valid: kiln_tunable_defaults). */
#include "kiln_internal.h"
#include "kiln_db.h"

int kiln_tunable_get(const kiln_tunable *t, const int *p, const char *name) {
  for (int i = 0; i < t->nparams; i++)
    if (!strcmp(t->params[i].name, name)) return p[i];
  return -1;
}

void kiln_tunable_opts(const kiln_tunable *t, const int *p, char *buf, size_t len) {
  size_t o = strlen(buf);
  for (int i = 0; i < t->nparams && o < len; i++) o += (size_t)snprintf(buf + o, len - o, " -D%s=%d", t->params[i].name, p[i]);
}

void kiln_tunable_str(const kiln_tunable *t, const int *p, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < t->nparams && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%s=%d", i ? "," : "", t->params[i].name, p[i]);
}

int kiln_tunable_parse(const kiln_tunable *t, const char *s, int *p) {
  for (int i = 0; i < t->nparams; i++) p[i] = t->params[i].dflt;
  while (s && *s) {
    const char *eq = strchr(s, '=');
    if (!eq) return -1;
    size_t nl = (size_t)(eq - s);
    int found = 0;
    for (int i = 0; i < t->nparams; i++)
      if (strlen(t->params[i].name) == nl && !strncmp(t->params[i].name, s, nl)) { p[i] = atoi(eq + 1); found = 1; }
    if (!found) return -1; /* a parameter this build does not know */
    s = strchr(eq, ',');
    if (s) s++;
  }
  /* a parameter the text lacks keeps its default: records written before a
   * build added a parameter were measured at what is now its default (new
   * parameters must default to the behaviour that existed before them) */
  return 0;
}

/* Enumerates the valid candidates of t (default first); returns count. */
/* The product of the value counts is walked whole (up to ENUM_MAX; valid()
 * is cheap): families whose algorithms pin the parameters they do not read
 * keep few valid candidates out of a large product (conv: ~470,000
 * combinations, a few hundred valid). */
#define ENUM_MAX 4000000
int kiln_tunable_enumerate(const kiln_tunable *t, const kiln_device_info *dev, int **out) {
  int64_t total = 1;
  for (int i = 0; i < t->nparams; i++) total *= t->params[i].nvals > 0 ? t->params[i].nvals : 1;
  if (total > ENUM_MAX) total = ENUM_MAX;
  size_t cap = 1024;
  int *all = malloc(sizeof(int) * cap * (size_t)(t->nparams > 0 ? t->nparams : 1));
  if (!all) { *out = NULL; return 0; }
  int n = 0, np = t->nparams;
  int dflt[KILN_MAX_KPARAMS];
  for (int i = 0; i < np; i++) dflt[i] = t->params[i].dflt;
  if (!t->valid || t->valid(t, dflt, dev) == 0) { memcpy(all, dflt, sizeof(int) * (size_t)np); n++; }
  /* combination c as an odometer (the last parameter turns fastest): one
   * increment per step instead of a division per parameter, which was most of
   * a first run's time spent predicting without a database */
  int idx[KILN_MAX_KPARAMS] = {0}, p[KILN_MAX_KPARAMS];
  for (int i = 0; i < np; i++) p[i] = t->params[i].nvals > 0 ? t->params[i].vals[0] : t->params[i].dflt;
  for (int64_t c = 0; c < total; c++) {
    for (int i = np - 1; c > 0 && i >= 0; i--) {
      const kiln_kparam *kp = &t->params[i];
      if (kp->nvals > 0 && ++idx[i] < kp->nvals) { p[i] = kp->vals[idx[i]]; break; }
      idx[i] = 0;
      p[i] = kp->nvals > 0 ? kp->vals[0] : kp->dflt;
    }
    if (!memcmp(p, dflt, sizeof(int) * (size_t)np)) continue;
    if (t->valid && t->valid(t, p, dev) != 0) continue;
    if ((size_t)n + 1 >= cap) {
      size_t npp = (size_t)(np > 0 ? np : 1), want = cap * 2;
      if (want > (size_t)ENUM_MAX * 2 || want > SIZE_MAX / sizeof(int) / npp) break;
      int *na = realloc(all, sizeof(int) * want * npp);
      if (!na) break;
      all = na;
      cap *= 2;
    }
    memcpy(all + (size_t)n * (size_t)np, p, sizeof(int) * (size_t)np);
    n++;
  }
  /* defaults that are invalid here (a family's default that suits most of
   * its instances but not this one, or not this device): the valid vector
   * nearest to them (fewest parameters changed; the first such in the walk)
   * stands first, as what runs when nothing was measured */
  if (n > 1 && t->valid && t->valid(t, dflt, dev) != 0) {
    int best = 0, bd = np + 1;
    for (int k = 0; k < n && bd > 1; k++) {
      int d = 0;
      for (int i = 0; i < np; i++) d += all[(size_t)k * (size_t)np + (size_t)i] != dflt[i];
      if (d < bd) { bd = d; best = k; }
    }
    memcpy(p, all + (size_t)best * (size_t)np, sizeof(int) * (size_t)np);
    memmove(all + (size_t)np, all, sizeof(int) * (size_t)np * (size_t)best);
    memcpy(all, p, sizeof(int) * (size_t)np);
  }
  *out = all;
  return n;
}

int kiln_tunable_defaults(const kiln_tunable *t, const kiln_device_info *dev, int *p) {
  for (int i = 0; i < t->nparams; i++) p[i] = t->params[i].dflt;
  if (!t->valid || t->valid(t, p, dev) == 0) return 0;
  int *all = NULL, n = kiln_tunable_enumerate(t, dev, &all);
  if (n > 0) memcpy(p, all, sizeof(int) * (size_t)t->nparams);
  free(all);
  return n > 0 ? 0 : -1;
}

const int *kiln_exec_tparams(kiln_exec *x, kiln_node *n, const kiln_tunable *t) {
  int idx = (int)(n - x->g->nodes);
  if (x->ov_params && x->ov_node == idx) {
    kiln__rec_other(); /* parameters of the tuner's choosing: not a run to replay */
    return x->ov_params;
  }
  if (n->tparams_origin) return n->tparams;
  /* the defaults, or where they are invalid for this instance or device the
   * valid vector nearest to them: a kernel never runs parameters its
   * descriptor rejects (none valid at all: the defaults, and the op reports
   * what fails) */
  kiln_tunable_defaults(t, &x->d->info, n->tparams);
  n->tparams_origin = "default";
  if (x->db && x->recs) {
    kiln_lookup lk; /* measured here, else imported / shared files (KILN_DB_PATH), else the device family */
    char hash[24];
    kiln_source_hash(x->d, t->file, hash, sizeof hash);
    if (x->recs->best_layered(x->db, x->db_device, &x->d->info, t->family, t->dtype, t->shape_key, t->epilogue, hash, &lk, NULL) == 0) {
      int p[KILN_MAX_KPARAMS];
      if (kiln_tunable_parse(t, lk.rec.params, p) == 0 && (!t->valid || t->valid(t, p, &x->d->info) == 0)) {
        memcpy(n->tparams, p, sizeof(int) * (size_t)t->nparams);
        n->tparams_origin = "tuned";
        return n->tparams;
      }
    }
  }
  /* nothing measured: the cost model's choice, when the device was probed */
  if (x->cm && x->pred) {
    int p[KILN_MAX_KPARAMS];
    if (x->pred->choose(x->cm, t, p, NULL) == 0) {
      memcpy(n->tparams, p, sizeof(int) * (size_t)t->nparams);
      n->tparams_origin = "predicted";
    }
  }
  return n->tparams;
}
