/* kiln_cli.h: subcommands of the `kiln` command that live in their own files
 * (cli/cmd_*.c). Each takes the arguments after its name, parses its own
 * options, prints errors as one line "kiln: error: <message>" on stderr and
 * returns the process exit status: 0 success, 2 bad input or environment,
 * 1 any other failure. The summary, synopsis and help strings are for the
 * dispatch table in cli/kiln.c (which prints `kiln <cmd> --help`). */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include "kiln.h"
#include <stdbool.h>
#include <stdio.h>

/* kiln bench: latency distribution and throughput of a model (cmd_bench.c). */
int kiln_cli_bench(int argc, char **argv);
#define KILN_CLI_BENCH_SUMMARY "measure a model's latency distribution (min, median, p90) and throughput on this device"
#define KILN_CLI_BENCH_SYNOPSIS                                                                                 \
  "MODEL.onnx [--db FILE] [--repeat N] [--warmup N] [--duration SECONDS] [--input [NAME=]FILE]...\n"           \
  "                [--shape NAME=D0,...]... [--seed N] [--device SEL] [--no-fusion] [--profile] [--json]"
#define KILN_CLI_BENCH_HELP                                                                                     \
  "  --db FILE             tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db if it exists)\n"    \
  "  --no-fusion           run every node as its own kernel (for comparison)\n"                                 \
  "  --profile             time every node's kernels in each run (profiling events) and print the\n"            \
  "                        slowest nodes (median), device-busy time and kernel span per run\n"                 \
  "  --repeat N            timed runs (default 20; fewer when --duration runs out first)\n"                    \
  "  --warmup N            untimed runs first (default 2; the first plans the model and compiles kernels)\n"   \
  "  --duration SECONDS    stop timing after this long (at least one timed run; default: no limit)\n"          \
  "  --input [NAME=]FILE   bind an input from a .pb or .npy file; other inputs are random\n"                   \
  "                        (uniform [-1,1) floats, integers 0..9)\n"                                            \
  "  --shape NAME=D0,...   bind an input's shape or a symbolic dimension\n"                                   \
  "  --seed N              seed for random inputs (default 0)\n"                                               \
  "  --device SEL          device (see `kiln devices`; default $KILN_DEVICE, else the first GPU)\n"            \
  "  --json                print one JSON object on stdout and nothing else\n"

/* kiln report: a self-contained HTML page about a tuning database (cmd_report.c). */
int kiln_cli_report(int argc, char **argv);
#define KILN_CLI_REPORT_SUMMARY "write a self-contained HTML report of a tuning database (plots of the cost model, search, speedups)"
#define KILN_CLI_REPORT_SYNOPSIS "[--db FILE] [--model MODEL.onnx] [--device SEL] [-o FILE.html] [--json]"
#define KILN_CLI_REPORT_HELP                                                                                    \
  "  --db FILE             tuning database (default $KILN_DB, else ~/.cache/kiln/tuning.db)\n"                 \
  "  --model MODEL.onnx    also show this model's ops on this device: default and tuned kernel\n"               \
  "                        times per op (needs an OpenCL device; inputs are random)\n"                          \
  "  --device SEL          the device for --model (the report covers every device in the database)\n"          \
  "  -o, --output FILE     where to write the page (default report.html); one file, inline SVG,\n"             \
  "                        nothing fetched from a network\n"                                                    \
  "  --json                also print a JSON summary of what the page shows on stdout\n"

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
/* Prints a usage error for `kiln <cmd>` with its synopsis; returns 2. */
int kiln_cli__usage(const char *cmd, const char *synopsis, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Matches argv[*i] against option `name` with a value ("--name V" or
 * "--name=V"): 1 and *val set on a match, 0 for another option, -1 if the
 * value is missing. */
int kiln_cli__opt_val(int argc, char **argv, int *i, const char *name, const char **val);
/* A non-negative decimal integer; false on junk or overflow. */
bool kiln_cli__parse_u64(const char *s, uint64_t *out);
/* "NAME=D0,D1,..." into b (the name is copied into namebuf); false with a reason in why. */
bool kiln_cli__parse_shape(const char *arg, kiln_shape_binding *b, char *namebuf, size_t nl, char *why, size_t wl);
/* A JSON string literal / number (NaN and infinities as null). */
void kiln_cli__json_str(FILE *f, const char *s);
void kiln_cli__json_num(FILE *f, double v);
/* The line about where the session's kernel parameters came from (tuned,
 * predicted by the cost model and on which device figures, defaults), after
 * label; dbpath NULL: no database. A note about the probe cache goes to stderr. */
void kiln_cli__print_tuning(FILE *o, const char *label, const char *dbpath, const kiln_session *s, const kiln_param_stats *ps);
/* ,"figures":...,"probe_ms":...,"note":... of kiln_session_param_basis, for a JSON object. */
void kiln_cli__json_basis(FILE *o, const kiln_session *s);

/* A model's inputs bound for a run: from files, the rest random. */
typedef struct kiln_cli__inputs {
  int n;
  kiln_value_info *info;
  kiln_tensor **t;
  bool *random;
} kiln_cli__inputs;
/* Binds args ("NAME=FILE" or "FILE", in order) and fills the other inputs
 * with seeded random values (uniform [-1,1) floats, integers 0..9) as
 * `kiln run --random` does. Returns 0 or an exit status (error printed);
 * free b with kiln_cli__inputs_free either way. */
int kiln_cli__bind_inputs(kiln_model *m, const char *const *args, int nargs, uint64_t seed, kiln_cli__inputs *b);
void kiln_cli__inputs_free(kiln_cli__inputs *b);
/* Gives every bound tensor to the session; 0 or an exit status. */
int kiln_cli__set_inputs(kiln_session *s, const kiln_cli__inputs *b);
/* Opens the tuning database at explicit_path, else the default path; without
 * an explicit path and without KILN_DB_CREATE a missing default file leaves
 * *db NULL. Returns 0 or an exit status (error printed). */
int kiln_cli__open_db(const char *explicit_path, int flags, kiln_db **db);

#endif /* KILN_CLI_H */
