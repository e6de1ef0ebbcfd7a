/* kiln_cli.h: the commands of `kiln` (one file each, cli/cmd_<name>.c) and
 * the helpers they share. Each command takes the arguments after its name,
 * parses them against its option table (opts.h), prints errors as one line
 * "kiln: error: <message>" on stderr and returns the process exit status:
 * 0 success, 2 bad input or environment, 1 any other failure. */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include "kiln.h"
#include "opts.h"
#include <stdbool.h>
#include <stdio.h>

/* The commands, one file each (cli/cmd_<name>.c); cli/kiln.c dispatches
 * from a table of these. Each command's fn parses its arguments with
 * kiln_cli_parse against its own option table (opts.h). */
extern const kiln_cli_cmd kiln_cli_cmd_run, kiln_cli_cmd_info, kiln_cli_cmd_devices, kiln_cli_cmd_demo, kiln_cli_cmd_tune,
  kiln_cli_cmd_probe, kiln_cli_cmd_predict, kiln_cli_cmd_model, kiln_cli_cmd_plan, kiln_cli_cmd_bench, kiln_cli_cmd_report,
  kiln_cli_cmd_db;
/* The subcommands of `kiln db` (cmd_db.c), for `kiln --list-options`. */
extern const kiln_cli_cmd *const kiln_cli_db_subcommands[];
extern const int kiln_cli_db_nsubcommands;

/* ---- helpers shared by cli/cmd_*.c (cli_common.c) -------------------------- */

/* Exit status for a kiln status: 0, 2 (bad input or environment) or 1. */
int kiln_cli__exit_code(int status);
/* Prints "kiln: error: <msg>" as one line on stderr (after flushing stdout). */
void kiln_cli__error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints err's message (or the status's) and returns its exit status. */
int kiln_cli__fail(const kiln_error *err, int status);
/* After opening the default device (devsel NULL or ""): a note on stderr when
 * it is not a GPU while NVIDIA's OpenCL library is installed unregistered,
 * so a run does not land on the CPU unnoticed. */
void kiln_cli__note_cpu_fallback(const kiln_device *d, const char *devsel);
/* A non-negative decimal integer; false on junk or overflow. */
bool kiln_cli__parse_u64(const char *s, uint64_t *out);
/* "NAME=D0,D1,..." into b (the name is copied into namebuf); false with a reason in why. */
bool kiln_cli__parse_shape(const char *arg, kiln_shape_binding *b, char *namebuf, size_t nl, char *why, size_t wl);
/* A JSON string literal / number (NaN and infinities as null). */
void kiln_cli__json_str(FILE *f, const char *s);
void kiln_cli__json_num(FILE *f, double v);
/* A JSON string literal, or null for NULL. */
void kiln_cli__json_str_or_null(FILE *f, const char *s);
/* printf for JSON text: copies fmt to f, replacing %s with a JSON string
 * (const char *, NULL: ""), %z likewise but NULL: null, %g with a JSON
 * number (double, null when not finite), %d with an int, %L with a long
 * long, %b with true/false (int), %r with raw text (const char *) and %%
 * with '%'. The compiler cannot check these: pass exactly those types. */
void kiln_cli__jprintf(FILE *f, const char *fmt, ...);

/* The KILN_* environment, read once by main (kiln_cli__load_env) through
 * the library's kiln_options_from_env: the table of runtime/options.c. */
extern kiln_options kiln_cli_env;
/* Fills kiln_cli_env; 0, or the exit status after printing a malformed
 * variable's error. */
int kiln_cli__load_env(void);
/* The value of a string variable of the table ("KILN_DEVICE", "KILN_DB",
 * "KILN_DB_PATH") as loaded, or NULL; for option rows' .env defaults. */
const char *kiln_cli__env_string(const char *name);
/* The user's tuning database: $KILN_DB, else the library's default path. */
const char *kiln_cli__default_db(char *buf, size_t len);
/* kiln_device_open with the environment's device options applied. */
int kiln_cli__device_open(const char *selector, kiln_device **out, kiln_error *err);
/* The model size limit: explicit (--max-model-bytes) when set, else $KILN_MAX_MODEL_BYTES (0: the library's). */
uint64_t kiln_cli__max_model_bytes(uint64_t explicit_limit);

/* Opens the tuning database at explicit_path, else the default path; without
 * an explicit path, without KILN_DB_CREATE and (with shared) without
 * $KILN_DB_PATH, a missing default file leaves *db NULL. With shared, the
 * read-only databases listed in $KILN_DB_PATH are attached (a user database
 * is then created to layer them on). Returns 0 or an exit status (error printed). */
int kiln_cli__open_db(const char *explicit_path, int flags, bool shared, kiln_db **db);
/* qsort comparator of doubles, ascending. */
int kiln_cli__cmp_double(const void *a, const void *b);

/* ---- inputs, outputs and comparison (cli_tensors.c) ------------------------ */
/* The line about where the session's kernel parameters came from (tuned,
 * predicted by the cost model and on which device figures, defaults), after
 * label; dbpath NULL: no database. A note about the probe cache goes to stderr. */
void kiln_cli__print_tuning(FILE *o, const char *label, const char *dbpath, const kiln_session *s, const kiln_param_stats *ps);
/* ,"figures":...,"probe_ms":...,"note":... of kiln_session_param_basis, for a JSON object. */
void kiln_cli__json_basis(FILE *o, const kiln_session *s);

/* A model's inputs bound for a run: from files, the rest random. */
typedef struct kiln_cli__inputs {
  int n;                 /* model inputs */
  kiln_value_info *info; /* declared (after --shape) */
  kiln_tensor **t;       /* bound tensors, owned; NULL = unbound */
  bool *random;          /* t[i] was generated */
} kiln_cli__inputs;
/* Binds args ("NAME=FILE", or "FILE" for the first input not bound yet)
 * and, with random, fills the other inputs with seeded random values
 * (uniform [-1,1) floats, integers 0..9, random booleans); a symbolic
 * dimension takes its size from a bound input with the same one. why names
 * the option that asked for random values in errors ("--random"), or NULL.
 * Returns 0 or an exit status (error printed); free b with
 * kiln_cli__inputs_free either way. */
int kiln_cli__bind_inputs(kiln_model *m, const char *const *args, int nargs, bool random, uint64_t seed, const char *why,
                          kiln_cli__inputs *b);
void kiln_cli__inputs_free(kiln_cli__inputs *b);
/* Gives every bound tensor to the session; 0 or an exit status. */
int kiln_cli__set_inputs(kiln_session *s, const kiln_cli__inputs *b);

/* ---- a model on a device (cli_model.c) ------------------------------------ */

/* What a model command sets up; kiln_cli__ctx_free releases all of it. */
typedef struct kiln_cli__ctx {
  kiln_model *m;
  kiln_device *d;
  kiln_session *s;
  kiln_db *db;          /* set by the command between load and session, or NULL */
  kiln_cli__inputs b;
  const char *precision; /* --precision, or NULL (fp32) */
} kiln_cli__ctx;
/* What kiln_cli__ctx_load reads and binds. */
typedef struct kiln_cli__load {
  const char *path;
  const kiln_cli_shapes *shapes;  /* --shape bindings, or NULL */
  uint64_t max_model_bytes;       /* 0: the default limit */
  const kiln_cli_list *inputs;    /* --input values, or NULL */
  bool random;                    /* fill the unbound inputs (kiln_cli__bind_inputs) */
  uint64_t seed;
  const char *random_why;         /* the option named in random-input errors, or NULL */
} kiln_cli__load;
/* Loads the model, checks every op is supported and binds the inputs (all
 * before any device is opened). 0 or an exit status (error printed). */
int kiln_cli__ctx_load(kiln_cli__ctx *x, const kiln_cli__load *o);
enum {
  KILN_CLI_NOTE_CPU = 1 << 0,       /* note on stderr when the default device is a CPU (kiln_cli__note_cpu_fallback) */
  KILN_CLI_NO_FUSION = 1 << 1,      /* --no-fusion */
  KILN_CLI_SESSION_NO_DB = 1 << 2,  /* the session does not read x->db (kiln tune hands it to the tuner) */
};
/* Opens the device devsel, makes the session, gives it x->db (when set)
 * and the bound inputs. 0 or an exit status (error printed). */
int kiln_cli__ctx_session(kiln_cli__ctx *x, const char *devsel, unsigned flags);
void kiln_cli__ctx_free(kiln_cli__ctx *x);

/* Element k of t as a double (any dtype). */
double kiln_cli__getf(const kiln_tensor *t, int64_t k);
/* "[d0,d1,...]" into buf; a symbolic dimension shows as its name, or
 * "name=size" once bound; an unknown unnamed one as '?'. Returns buf. */
const char *kiln_cli__fmt_shape(char *buf, size_t n, int rank, const int64_t *dims, const char *const *names);
/* A shape as a JSON array (symbolic dimensions as their names, unknown as null). */
void kiln_cli__json_shape(FILE *f, int rank, const int64_t *dims, const char *const *names);
/* "output 'name': dtype [shape]  min .. max .. mean .." and the first values, on stdout. */
void kiln_cli__print_tensor(const char *label, const kiln_tensor *t);

/* Summary of a tensor's finite values. */
typedef struct kiln_cli__tstats { double min, max, mean; int64_t n, nonfinite; } kiln_cli__tstats;
kiln_cli__tstats kiln_cli__tensor_stats(const kiln_tensor *t);

/* Device-vs-reference agreement. An element fails when |dev - ref| exceeds
 * KILN_CLI_CHECK_RTOL * max(|ref|, 1% of the output's largest |ref|):
 * relative for ordinary values, and near zero relative to the output's
 * scale, so float rounding in values that cancel to ~0 is not flagged;
 * and when it also exceeds KILN_CLI_CHECK_SCALED_FLOOR x the output's largest
 * |ref|. Both sides are fp32 summed in different orders: an element that is
 * the small sum of long, large, cancelling sums (vae_decoder_16's 4608-term
 * convolutions: -0.0164 on an output of scale ~0.8) differs by 2e-5 of the
 * scale, 1.3e-3 of itself, with nothing wrong. A wrong kernel differs by far
 * more than 1e-4 of the scale. */
#define KILN_CLI_CHECK_RTOL 1e-3
#define KILN_CLI_CHECK_SCALED_FLOOR 1e-4
/* A plan storing tensors in fp16 (--precision fp16/auto) is held to the
 * error relative to the output's largest |ref|: |dev - ref| <= 1e-2 x max |ref|
 * for every element (half storage rounds every stored value to 11 bits; the
 * rule above would flag values that cancel to ~1% of the scale). */
#define KILN_CLI_CHECK_RTOL_FP16 1e-2
typedef struct kiln_cli__cmp {
  double max_abs, max_rel; /* over all elements */
  double max_scaled;       /* max |dev - ref| / max |ref| */
  bool ok;
  char why[256];           /* first problem, when !ok */
} kiln_cli__cmp;
/* The CPU reference's outputs compared with the device's. */
typedef struct kiln_cli__check {
  kiln_tensor **ref;       /* reference outputs, owned */
  int nref;
  kiln_cli__cmp *cmp;      /* per output */
  double max_abs, max_rel; /* over all outputs */
  double max_scaled;       /* over all outputs */
  double rtol;             /* the tolerance applied */
  bool scaled;             /* to max_scaled (an fp16 plan), else to max_rel */
  bool ok;
} kiln_cli__check;
/* Runs the CPU reference of s and compares every output with the device's.
 * 0 or an exit status (error printed); free r with kiln_cli__check_free. */
int kiln_cli__check_reference(kiln_session *s, int nout, kiln_cli__check *r);
void kiln_cli__check_free(kiln_cli__check *r);

/* mkdir -p; 0 or -1 (errno set). */
int kiln_cli__mkdir_p(const char *path);
/* Writes every output to dir/<safe name>.<ext> all-or-nothing (each under a
 * temporary name first, renamed when all were written); prints "wrote F"
 * lines unless quiet. 0 or an exit status. */
int kiln_cli__write_outputs(const char *dir, const char *ext, const kiln_tensor *const *outs, int n, bool quiet);

#endif /* KILN_CLI_H */
