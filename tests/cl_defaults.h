/* cl_defaults.h: a family's defaults live in two places, the host descriptor
 * (kiln_kparam.dflt, what kiln runs when nothing is tuned) and the `.cl`
 * file's `#ifndef NAME / #define NAME v` lines (what the source compiles to
 * standalone, e.g. under oclgrind or in a kernel developer's own harness).
 * cl_defaults_check() fails when the two disagree for any parameter of t
 * that a file of t->file defines that way, except where the define's comment
 * says "the host always sets it": a default the host derives per instance
 * (attention's tiles) or a name two families read differently (pool.cl's
 * PL_WG), whose .cl value only serves a standalone compile. Include after
 * kiln_internal.h. */
#ifndef KILN_TESTS_CL_DEFAULTS_H
#define KILN_TESTS_CL_DEFAULTS_H
#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The value of `#define name v` following `#ifndef name` in src; 1 if found. */
static int cl_default_of(const char *src, const char *name, long *v) {
  size_t nl = strlen(name);
  for (const char *p = strstr(src, "#ifndef "); p; p = strstr(p + 1, "#ifndef ")) {
    const char *q = p + 8;
    while (*q == ' ') q++;
    if (strncmp(q, name, nl) || (isalnum((unsigned char)q[nl]) || q[nl] == '_')) continue;
    const char *d = strstr(q, "#define ");
    if (!d) return 0;
    d += 8;
    while (*d == ' ') d++;
    if (strncmp(d, name, nl) || (d[nl] != ' ' && d[nl] != '\t')) continue;
    char *end;
    *v = strtol(d + nl, &end, 10);
    const char *eol = strchr(end, '\n');
    const char *host = strstr(end, "the host always sets it");
    if (host && (!eol || host < eol)) return 0; /* derived by the host: exempt */
    return end != d + nl;
  }
  return 0;
}

/* 0 if every parameter of t that a file of t->file gives a standalone
 * default has the host's default; else prints each mismatch and returns 1. */
static int cl_defaults_check(const kiln_tunable *t, const char *label) {
  char files[256];
  snprintf(files, sizeof files, "%s", t->file ? t->file : "");
  int bad = 0;
  for (char *save = NULL, *f = strtok_r(files, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
    char *owned;
    const char *src = kiln_cl_source(f, &owned);
    if (!src) continue;
    for (int i = 0; i < t->nparams; i++) {
      long v;
      if (cl_default_of(src, t->params[i].name, &v) && v != t->params[i].dflt) {
        printf("FAIL %s: %s: kernels/%s defaults %s=%ld, the host descriptor %d\n", label, t->family, f, t->params[i].name, v,
               t->params[i].dflt);
        bad = 1;
      }
    }
    free(owned);
  }
  return bad;
}
#endif
