/* opts.h: the one option parser of the `kiln` command. Every command (and
 * every `kiln db` subcommand) declares its options once, in a table of
 * kiln_cli_opt rows, and its positional arguments in its kiln_cli_cmd; the
 * parser reads argv against that table into the command's argument struct,
 * and the same table prints `kiln <cmd> --help` and the usage line, so help
 * and parsing cannot drift apart.
 *
 * Accepted forms: "--name VALUE", "--name=VALUE", flags as "--name" alone,
 * a short alias ("-o") the same way. Any "--help" or "-h" argument prints
 * the command's help instead of running it. Errors are one line
 * "kiln: error: <message>" plus the usage line on stderr, exit status 2. */
#ifndef KILN_CLI_OPTS_H
#define KILN_CLI_OPTS_H

#include "kiln.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KILN_CLI_MAX_SHAPES 64 /* --shape bindings per command */
#define KILN_CLI_MAX_LIST 64   /* values of one repeatable option, positionals */

/* What an option's value is, and the type of its target field. */
typedef enum kiln_cli_kind {
  KILN_OPT_FLAG,   /* no value; bool, set true */
  KILN_OPT_INT,    /* uint64_t, decimal, within [min, max] (max 0: no upper bound) */
  KILN_OPT_DOUBLE, /* double, not NaN, >= dmin (> dmin with open); infinity unless finite */
  KILN_OPT_STRING, /* const char *, pointing into argv; one of choices when set */
  KILN_OPT_LIST,   /* kiln_cli_list: repeatable string */
  KILN_OPT_SHAPE,  /* kiln_cli_shapes: repeatable NAME=D0,D1,... */
  KILN_OPT_KIND_COUNT
} kiln_cli_kind;

typedef struct kiln_cli_list {
  const char *v[KILN_CLI_MAX_LIST];
  int n;
} kiln_cli_list;

typedef struct kiln_cli_shapes {
  kiln_shape_binding b[KILN_CLI_MAX_SHAPES];
  char names[KILN_CLI_MAX_SHAPES][256];
  int n;
} kiln_cli_shapes;

typedef struct kiln_cli_opt {
  const char *name;    /* "--repeat" */
  const char *alias;   /* short form ("-o"), or NULL */
  kiln_cli_kind kind;
  size_t off;          /* offset of the target field in the command's argument struct */
  const char *value;   /* value name in help and usage ("N", "FILE"); unused for flags */
  const char *help;    /* help text; '\n' starts a continuation line */
  const char *err;     /* message for a missing or bad value (default: "<name> needs a value") */
  uint64_t min, max;   /* INT: accepted range (max 0: none) */
  double dmin;         /* DOUBLE: smallest accepted value ... */
  bool open;           /* ... excluded when set */
  bool finite;         /* DOUBLE: infinity is a bad value */
  bool nonempty;       /* STRING, LIST: "" is a bad value */
  const char *choices; /* STRING: the accepted words, "npy|pb" */
  const char *env;     /* (optional) STRING: the environment variable (of kiln_cli_env) whose value, when set, is the default */
  /* (optional) parses v into target instead of the kind's parser; false:
   * a bad value (err is printed). */
  bool (*parse)(const char *v, void *target);
} kiln_cli_opt;

/* Command flags, shown in the help. */
enum { KILN_CLI_NEEDS_DEVICE = 1 << 0, KILN_CLI_USES_DEVICE = 1 << 1 };

/* A command, or a subcommand of `kiln db` (then name is "db show"). */
typedef struct kiln_cli_cmd {
  const char *name;
  int (*fn)(int argc, char **argv); /* the arguments after the name; returns the exit status */
  unsigned flags;
  const char *summary;
  const char *args;        /* positionals in the usage line ("MODEL.onnx"), or NULL */
  int min_pos, max_pos;    /* accepted number of positionals */
  const char *missing;     /* error when fewer than min_pos ("no model given") */
  const char *extra_hint;  /* appended to "unexpected argument 'X'" (" (one model at a time)") */
  size_t pos_off;          /* kiln_cli_list of positionals in the argument struct (when max_pos > 0) */
  const kiln_cli_opt *opts;
  int nopts;
  const char *notes;       /* (optional) text printed before the options in --help */
  const char *footer;      /* (optional) text printed after them */
  /* (optional) prints the help instead of the generated one (`kiln db`,
   * whose options belong to its subcommands) */
  void (*print_help)(FILE *f);
} kiln_cli_cmd;

#define KILN_CLI_NOPTS(t) ((int)(sizeof(t) / sizeof((t)[0])))
/* Designated initializers of a kiln_cli_cmd: its option table t; one model
 * file as the positional argument, kept in the kiln_cli_list pos of T. */
#define KILN_CLI_OPTS(t) .opts = t, .nopts = KILN_CLI_NOPTS(t)
#define KILN_CLI_MODEL_ARG(T) .args = "MODEL.onnx", .min_pos = 1, .max_pos = 1, .missing = "no model given", .pos_off = offsetof(T, pos)

/* kiln_cli_parse's result after printing the help: the command exits 0. */
#define KILN_CLI_HELP (-1)

/* Parses argv[0..argc) into args (already holding the defaults) against
 * c's table. Returns 0, KILN_CLI_HELP after printing the help, or 2 after
 * printing a usage error. */
int kiln_cli_parse(const kiln_cli_cmd *c, int argc, char **argv, void *args);
/* The exit status for a kiln_cli_parse result other than 0. */
static inline int kiln_cli_parse_exit(int rc) { return rc == KILN_CLI_HELP ? 0 : rc; }

/* Prints `kiln <cmd> --help` (usage line, summary, device needs, options). */
void kiln_cli_print_help(const kiln_cli_cmd *c, FILE *f);
/* Prints "usage: kiln <cmd> <synopsis>" built from the table. */
void kiln_cli_print_usage(const kiln_cli_cmd *c, FILE *f);
/* Prints the synopsis (positionals, then "[--option VALUE]" per row) and a
 * newline; col: the column the line is at, indent: where wrapped lines start. */
void kiln_cli_print_synopsis(const kiln_cli_cmd *c, FILE *f, int col, int indent);
/* Prints a usage error for c: "kiln: error: <msg>", the usage line and a
 * pointer to --help, on stderr. Returns 2. */
int kiln_cli_usage_error(const kiln_cli_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line per option name of c, tab-separated: command, option, kind, a
 * value the option accepts, its other name (the alias, or for the alias the
 * long name); for `kiln --list-options` (tests/cli_options.sh runs each). */
void kiln_cli_list_options(const kiln_cli_cmd *c, FILE *f);

/* Rows shared by several commands; field is a member of the command's
 * argument struct type T. */
#define KILN_OPT_JSON(T, field, text) {.name = "--json", .kind = KILN_OPT_FLAG, .off = offsetof(T, field), .help = text}
#define KILN_OPT_DEVICE(T, field, text)                                                                                  \
  {.name = "--device", .kind = KILN_OPT_STRING, .off = offsetof(T, field), .value = "SEL", .help = text, .env = "KILN_DEVICE"}
#define KILN_OPT_DB(T, field, text)                                                                                      \
  {.name = "--db", .kind = KILN_OPT_STRING, .off = offsetof(T, field), .value = "FILE", .help = text,                    \
   .err = "--db needs a file", .nonempty = true}
#define KILN_OPT_SHAPES(T, field, text)                                                                                  \
  {.name = "--shape", .kind = KILN_OPT_SHAPE, .off = offsetof(T, field), .value = "NAME=D0,...", .help = text,            \
   .err = "--shape needs a value NAME=D0,D1,..."}
#define KILN_OPT_INPUTS(T, field, text)                                                                                  \
  {.name = "--input", .kind = KILN_OPT_LIST, .off = offsetof(T, field), .value = "[NAME=]FILE", .help = text,            \
   .err = "--input needs a value NAME=FILE or FILE"}
#define KILN_OPT_SEED(T, field, text)                                                                                    \
  {.name = "--seed", .kind = KILN_OPT_INT, .off = offsetof(T, field), .value = "N", .help = text,                        \
   .err = "--seed needs a non-negative integer"}
#define KILN_OPT_NOFUSION(T, field, text) {.name = "--no-fusion", .kind = KILN_OPT_FLAG, .off = offsetof(T, field), .help = text}
#define KILN_OPT_PRECISION(T, field)                                                                                     \
  {.name = "--precision", .kind = KILN_OPT_STRING, .off = offsetof(T, field), .value = "fp32|fp16|auto", .choices = "fp32|fp16|auto", \
   .err = "--precision must be fp32, fp16 or auto",                                                                      \
   .help = "device storage of float tensors (default fp32): fp16 stores them as half\n"                               \
           "(arithmetic in fp32) where a node has half kernels, weights converted once;\n"                            \
           "auto only where the node's measured fp16 error stays under 2e-3 of max |ref|.\n"                           \
           "Inputs and outputs keep their types; `kiln plan` shows each node's choice"}

/* The help text of --device for commands that open an OpenCL device. */
#define KILN_CLI_DEVICE_HELP                                                                                              \
  "device: index, P:D or a name substring (see `kiln devices`;\n"                                                        \
  "default $KILN_DEVICE, else the first GPU, else the first device)"

#endif /* KILN_CLI_OPTS_H */
