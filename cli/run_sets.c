/* run_sets.c: `kiln run --inputs-from DIR`: several input sets run one
 * after the other by one session (one process), each set a subdirectory of
 * DIR (0/, 1/, ... in numeric order, else by name) with one NAME.npy or
 * NAME.pb per model input. Inputs whose shapes change between sets are
 * planned once per distinct shape set (kiln_run_stats.plans_built). */
#include "kiln_cli.h"
#include "run_sets.h"
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool all_digits(const char *s) {
  if (!*s) return false;
  for (; *s; s++) if (*s < '0' || *s > '9') return false;
  return true;
}

static int cmp_set(const void *a, const void *b) {
  const kiln_cli__set *x = a, *y = b;
  if (all_digits(x->name) && all_digits(y->name)) {
    unsigned long long u = strtoull(x->name, NULL, 10), v = strtoull(y->name, NULL, 10);
    if (u != v) return u < v ? -1 : 1;
  }
  return strcmp(x->name, y->name);
}

/* Reads one set's files: every model input that has DIR/NAME.npy or .pb. */
static int read_set(kiln_model *m, const char *dir, kiln_cli__set *s) {
  int n = kiln_model_num_inputs(m), found = 0;
  if (!(s->t = calloc((size_t)n + 1, sizeof *s->t))) { kiln_cli__error("out of memory"); return 1; }
  for (int i = 0; i < n; i++) {
    kiln_value_info vi;
    kiln_model_input_info(m, i, &vi);
    static const char *const ext[] = {"npy", "pb"};
    for (int e = 0; e < 2 && !s->t[i]; e++) {
      char path[4400];
      struct stat st;
      snprintf(path, sizeof path, "%s/%s.%s", dir, vi.name, ext[e]);
      if (stat(path, &st) != 0) continue;
      kiln_error err = {0};
      int rc = kiln_tensor_read(path, &s->t[i], &err);
      if (rc) return kiln_cli__fail(&err, rc);
      found++;
    }
  }
  if (!found) {
    kiln_cli__error("--inputs-from: %s has no input file (NAME.npy or NAME.pb for an input of the model)", dir);
    return 2;
  }
  return 0;
}

int kiln_cli__sets_read(kiln_model *m, const char *dir, kiln_cli__sets *out) {
  memset(out, 0, sizeof *out);
  out->ninputs = kiln_model_num_inputs(m);
  DIR *d = opendir(dir);
  if (!d) { kiln_cli__error("--inputs-from %s: cannot open directory: %s", dir, strerror(errno)); return 2; }
  struct dirent *de;
  int cap = 0, rc = 0;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (out->n == cap) {
      cap = cap ? cap * 2 : 8;
      kiln_cli__set *ns = realloc(out->v, sizeof *ns * (size_t)cap);
      if (!ns) { rc = 1; kiln_cli__error("out of memory"); break; }
      out->v = ns;
    }
    kiln_cli__set *s = &out->v[out->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", de->d_name);
  }
  closedir(d);
  if (rc) return rc;
  if (!out->n) {
    kiln_cli__error("--inputs-from %s: no input sets (subdirectories 0/, 1/, ... each with NAME.npy or NAME.pb per input)", dir);
    return 2;
  }
  qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_set);
  for (int k = 0; k < out->n && !rc; k++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, out->v[k].name);
    rc = read_set(m, path, &out->v[k]);
  }
  return rc;
}

int kiln_cli__sets_bind(kiln_session *s, kiln_model *m, const kiln_cli__set *set) {
  for (int i = 0; i < kiln_model_num_inputs(m); i++) {
    if (!set->t[i]) continue;
    kiln_value_info vi;
    kiln_model_input_info(m, i, &vi);
    kiln_error err = {0};
    int rc = kiln_session_set_input(s, vi.name, set->t[i], &err);
    if (rc) {
      kiln_cli__error("input set '%s': %s", set->name, err.msg);
      return kiln_cli__exit_code(rc);
    }
  }
  return 0;
}

void kiln_cli__sets_free(kiln_cli__sets *ss) {
  for (int k = 0; k < ss->n; k++) {
    for (int i = 0; ss->v[k].t && i < ss->ninputs; i++) kiln_tensor_free(ss->v[k].t[i]);
    free(ss->v[k].t);
  }
  free(ss->v);
  memset(ss, 0, sizeof *ss);
}
