/* run_sets.h: input sets of `kiln run --inputs-from DIR` (run_sets.c). */
#ifndef KILN_RUN_SETS_H
#define KILN_RUN_SETS_H
#include "kiln.h"
#include <stdbool.h>

typedef struct kiln_cli__set {
  char name[256];        /* the subdirectory */
  kiln_tensor **t;       /* per model input; NULL: keeps the value bound before */
  double first_ms, median_ms; /* first run (planning when the shapes are new) and the median of the others */
  int plans_after;       /* plans the session had built after this set */
  bool checked, check_ok;
  double max_rel;        /* --check: vs the CPU reference */
} kiln_cli__set;

typedef struct kiln_cli__sets {
  kiln_cli__set *v;
  int n, ninputs;
} kiln_cli__sets;

/* Reads DIR's sets in order; 0 or an exit status (error printed). */
int kiln_cli__sets_read(kiln_model *m, const char *dir, kiln_cli__sets *out);
/* Gives a set's tensors to the session; 0 or an exit status (error printed). */
int kiln_cli__sets_bind(kiln_session *s, kiln_model *m, const kiln_cli__set *set);
void kiln_cli__sets_free(kiln_cli__sets *ss);
#endif
