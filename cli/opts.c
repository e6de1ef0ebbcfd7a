/* opts.c: the table-driven option parser, help and usage printer of the
 * `kiln` command (see opts.h). Parsing and help read the same rows. */
#include "opts.h"
#include "kiln_cli.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const KIND_NAMES[] = {
  [KILN_OPT_FLAG] = "flag", [KILN_OPT_INT] = "int", [KILN_OPT_DOUBLE] = "double",
  [KILN_OPT_STRING] = "string", [KILN_OPT_LIST] = "list", [KILN_OPT_SHAPE] = "shape",
};
_Static_assert(sizeof KIND_NAMES / sizeof KIND_NAMES[0] == KILN_OPT_KIND_COUNT, "option kind names out of sync");

#define HELP_COL 24   /* help text starts in this column */
#define USAGE_WRAP 110 /* usage lines wrap before this column */

static bool repeatable(const kiln_cli_opt *o) { return o->kind == KILN_OPT_LIST || o->kind == KILN_OPT_SHAPE; }

/* "--name VALUE" (or "-o, --name VALUE" with an alias) into buf. */
static void opt_label(const kiln_cli_opt *o, char *buf, size_t n) {
  const char *lead = o->alias ? o->alias : "";
  snprintf(buf, n, "%s%s%s%s%s", lead, *lead ? ", " : "", o->name, o->kind == KILN_OPT_FLAG ? "" : " ",
           o->kind == KILN_OPT_FLAG ? "" : o->value ? o->value : o->choices ? o->choices : "VALUE");
}

void kiln_cli_print_usage(const kiln_cli_cmd *c, FILE *f) {
  kiln_cli_print_synopsis(c, f, fprintf(f, "usage: kiln %s", c->name), 15);
}

void kiln_cli_print_synopsis(const kiln_cli_cmd *c, FILE *f, int col, int indent) {
  if (c->args) col += fprintf(f, " %s", c->args);
  for (int i = 0; i < c->nopts; i++) {
    const kiln_cli_opt *o = &c->opts[i];
    char tok[256];
    snprintf(tok, sizeof tok, "[%s%s%s]%s", o->alias ? o->alias : o->name, o->kind == KILN_OPT_FLAG ? "" : " ",
             o->kind == KILN_OPT_FLAG ? "" : o->choices ? o->choices : o->value ? o->value : "VALUE", repeatable(o) ? "..." : "");
    if (col + 1 + (int)strlen(tok) > USAGE_WRAP) col = fprintf(f, "\n%*s", indent, "") - 1;
    col += fprintf(f, " %s", tok);
  }
  fputc('\n', f);
}

/* Prints text with every line after the first indented to the help column. */
static void print_indented(FILE *f, const char *text) {
  for (const char *p = text; *p; p++) {
    fputc(*p, f);
    if (*p == '\n' && p[1]) fprintf(f, "%*s", HELP_COL, "");
  }
  fputc('\n', f);
}

void kiln_cli_print_help(const kiln_cli_cmd *c, FILE *f) {
  if (c->print_help) { c->print_help(f); return; }
  kiln_cli_print_usage(c, f);
  fprintf(f, "\n%s.\n", c->summary);
  if (c->flags & KILN_CLI_NEEDS_DEVICE) fprintf(f, "Needs an OpenCL device.\n");
  if (c->flags & KILN_CLI_USES_DEVICE) fprintf(f, "Uses an OpenCL device when one is available.\n");
  if (c->notes) fprintf(f, "\n%s", c->notes);
  fprintf(f, "\noptions:\n");
  for (int i = 0; i < c->nopts; i++) {
    char label[256];
    const kiln_cli_opt *o = &c->opts[i];
    opt_label(o, label, sizeof label);
    int w = fprintf(f, "  %s", label);
    fprintf(f, "%*s", w < HELP_COL - 1 ? HELP_COL - w : 2, "");
    print_indented(f, o->help ? o->help : "");
    if (o->env && !(o->help && strstr(o->help, o->env))) fprintf(f, "%*s(default $%s)\n", HELP_COL, "", o->env);
  }
  fprintf(f, "  %-*s%s\n", HELP_COL - 2, "-h, --help", "show this help");
  if (c->footer) fprintf(f, "\n%s", c->footer);
}

int kiln_cli_usage_error(const kiln_cli_cmd *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kiln_cli__error("%s", msg);
  kiln_cli_print_usage(c, stderr);
  fprintf(stderr, "(see 'kiln %s --help')\n", c->name);
  return 2;
}

/* A value that makes `kiln <cmd> <opt> VALUE` parse: for the option test. */
static const char *sample_value(const kiln_cli_opt *o, char *buf, size_t n) {
  switch (o->kind) {
  case KILN_OPT_FLAG: return "";
  case KILN_OPT_INT: snprintf(buf, n, "%llu", (unsigned long long)(o->min > 1 ? o->min : 1)); return buf;
  case KILN_OPT_DOUBLE: snprintf(buf, n, "%g", o->dmin + 2); return buf;
  case KILN_OPT_SHAPE: return "x=1,2";
  case KILN_OPT_STRING:
    if (o->choices) { snprintf(buf, n, "%.*s", (int)strcspn(o->choices, "|"), o->choices); return buf; }
    return "v";
  default: return "v";
  }
}

void kiln_cli_list_options(const kiln_cli_cmd *c, FILE *f) {
  for (int i = 0; i < c->nopts; i++) {
    const kiln_cli_opt *o = &c->opts[i];
    char buf[64];
    const char *v = sample_value(o, buf, sizeof buf);
    fprintf(f, "%s\t%s\t%s\t%s\t%s\n", c->name, o->name, KIND_NAMES[o->kind], v, o->alias ? o->alias : "");
    if (o->alias) fprintf(f, "%s\t%s\t%s\t%s\t%s\n", c->name, o->alias, KIND_NAMES[o->kind], v, o->name);
  }
}

/* The row argument a names ("--name", "--name=V", alias likewise); *val is
 * set after a '=' (else NULL). */
static const kiln_cli_opt *find_opt(const kiln_cli_cmd *c, const char *a, const char **val) {
  for (int i = 0; i < c->nopts; i++) {
    const char *names[2] = {c->opts[i].name, c->opts[i].alias};
    for (int k = 0; k < 2; k++) {
      size_t n = names[k] ? strlen(names[k]) : 0;
      if (!n || strncmp(a, names[k], n) != 0 || (a[n] && a[n] != '=')) continue;
      *val = a[n] == '=' ? a + n + 1 : NULL;
      return &c->opts[i];
    }
  }
  return NULL;
}

static bool in_choices(const char *choices, const char *v) {
  size_t n = strlen(v);
  for (const char *p = choices; *p;) {
    size_t l = strcspn(p, "|");
    if (l == n && !strncmp(p, v, n)) return true;
    p += l + (p[l] == '|');
  }
  return false;
}

/* Stores v (NULL: missing) into the target of o; 0 or the exit status of a usage error. */
static int store(const kiln_cli_cmd *c, const kiln_cli_opt *o, const char *v, void *args) {
  void *t = (char *)args + o->off;
  const char *err = o->err;
  char dflt[128];
  if (!err) { snprintf(dflt, sizeof dflt, "%s needs a value", o->name); err = dflt; }
  if (!v) return kiln_cli_usage_error(c, "%s", err); /* the value is missing */
  if (o->parse) return o->parse(v, t) ? 0 : kiln_cli_usage_error(c, "%s", err);
  switch (o->kind) {
  case KILN_OPT_INT: {
    uint64_t x;
    if (!kiln_cli__parse_u64(v, &x) || x < o->min || (o->max && x > o->max)) return kiln_cli_usage_error(c, "%s", err);
    *(uint64_t *)t = x;
    return 0;
  }
  case KILN_OPT_DOUBLE: {
    char *end = NULL;
    double x = strtod(v, &end);
    if (!*v || *end || isnan(x) || (o->finite && !isfinite(x)) || x < o->dmin || (o->open && x == o->dmin)) return kiln_cli_usage_error(c, "%s", err);
    *(double *)t = x;
    return 0;
  }
  case KILN_OPT_STRING:
    if ((o->nonempty && !*v) || (o->choices && !in_choices(o->choices, v))) return kiln_cli_usage_error(c, "%s", err);
    *(const char **)t = v;
    return 0;
  case KILN_OPT_LIST: {
    kiln_cli_list *l = t;
    if (o->nonempty && !*v) return kiln_cli_usage_error(c, "%s", err);
    if (l->n == KILN_CLI_MAX_LIST) return kiln_cli_usage_error(c, "too many %s options", o->name);
    l->v[l->n++] = v;
    return 0;
  }
  case KILN_OPT_SHAPE: {
    kiln_cli_shapes *s = t;
    char why[512];
    if (s->n == KILN_CLI_MAX_SHAPES) return kiln_cli_usage_error(c, "too many %s options", o->name);
    if (!kiln_cli__parse_shape(v, &s->b[s->n], s->names[s->n], sizeof s->names[0], why, sizeof why)) return kiln_cli_usage_error(c, "%s", why);
    s->n++;
    return 0;
  }
  default: return kiln_cli_usage_error(c, "%s takes no value", o->name);
  }
}

static bool is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

int kiln_cli_parse(const kiln_cli_cmd *c, int argc, char **argv, void *args) {
  for (int i = 0; i < argc; i++)
    if (is_help(argv[i])) { kiln_cli_print_help(c, stdout); return KILN_CLI_HELP; }
  for (int i = 0; i < c->nopts; i++) {
    const char *e = c->opts[i].env ? kiln_cli__env_string(c->opts[i].env) : NULL;
    if (e && c->opts[i].kind == KILN_OPT_STRING) *(const char **)((char *)args + c->opts[i].off) = e;
  }
    kiln_cli_list *pos = c->max_pos > 0 ? (kiln_cli_list *)((char *)args + c->pos_off) : NULL;
  int npos = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (a[0] == '-' && a[1]) {
      const kiln_cli_opt *o = find_opt(c, a, &v);
      if (!o) return kiln_cli_usage_error(c, "unknown option '%s'", a);
      if (o->kind == KILN_OPT_FLAG) {
        if (v) return kiln_cli_usage_error(c, "%s takes no value", o->name);
        *(bool *)((char *)args + o->off) = true;
        continue;
      }
      if (!v && i + 1 < argc) v = argv[++i];
      int rc = store(c, o, v, args);
      if (rc) return rc;
    } else {
      if (npos >= c->max_pos || npos >= KILN_CLI_MAX_LIST) return kiln_cli_usage_error(c, "unexpected argument '%s'%s", a, c->extra_hint ? c->extra_hint : "");
      pos->v[pos->n++] = a;
      npos++;
    }
  }
  if (npos < c->min_pos) return kiln_cli_usage_error(c, "%s", c->missing ? c->missing : "missing arguments");
  return 0;
}
