/* kiln.c: the `kiln` command's entry point. Commands live one to a file
 * (cli/cmd_<name>.c), each with its option table (cli/opts.h); this file
 * dispatches from a table of them and prints the top-level help.
 *
 * Exit status: 0 success; 2 bad input or environment (malformed model, missing
 * file, unsupported op, missing or mismatched input, no OpenCL platform, bad
 * arguments); 1 any other failure (OpenCL errors, device-vs-reference
 * mismatch). Errors go to stderr as one line "kiln: error: <message>". */
#include "kiln.h"
#include "kiln_cli.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int cmd_help(int argc, char **argv);

typedef struct help_args { kiln_cli_list pos; } help_args;

static const kiln_cli_cmd help_cmd = {
  .name = "help", .fn = cmd_help, .summary = "show help for a command", .args = "[COMMAND]", .max_pos = 1,
  .pos_off = offsetof(help_args, pos),
};

static const kiln_cli_cmd *const COMMANDS[] = {
  &kiln_cli_cmd_run, &kiln_cli_cmd_info, &kiln_cli_cmd_devices, &kiln_cli_cmd_demo, &kiln_cli_cmd_tune, &kiln_cli_cmd_probe,
  &kiln_cli_cmd_predict, &kiln_cli_cmd_model, &kiln_cli_cmd_plan, &kiln_cli_cmd_bench, &kiln_cli_cmd_report, &kiln_cli_cmd_db,
  &help_cmd,
};
#define NCOMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static const kiln_cli_cmd *find_cmd(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(COMMANDS[i]->name, name)) return COMMANDS[i];
  return NULL;
}

/* A usage error at the top level (no command yet); returns 2. */
static int top_usage_error(const char *msg, const char *arg) {
  kiln_cli__error("%s%s%s", msg, arg ? arg : "", arg ? "'" : "");
  fprintf(stderr, "usage: kiln <command> [options]   (see 'kiln --help')\n");
  return 2;
}

/* The environment section of `kiln --help`: the library's table
 * (kiln_env_vars), one variable a line and what it changes; the key it
 * enters below. tests/env_table.sh compares it with the README's table. */
static void print_env_table(void) {
  int n;
  const kiln_env_var *v = kiln_env_vars(&n);
  printf("\nenvironment (read once at start; see README, \"Environment\"):\n");
  for (int i = 0; i < n; i++) printf("  %s=%s\n      %s\n      key: %s\n", v[i].name, v[i].value, v[i].changes, v[i].key);
}

static void print_main_help(void) {
  printf("kiln %s: run ONNX models on OpenCL devices\n\nusage: kiln <command> [options]\n       kiln <command> --help\n\ncommands:\n", KILN_VERSION);
  for (size_t i = 0; i < NCOMMANDS; i++) printf("  %-9s %s\n", COMMANDS[i]->name, COMMANDS[i]->summary);
  printf("\noptions:\n  -h, --help       show this help\n  --version        print the version\n\n"
         "exit status: 0 success, 2 bad input or environment (model, inputs, arguments, no OpenCL\n"
         "platform), 1 other failures (OpenCL errors, mismatch with the CPU reference).\n");
  print_env_table();
}

/* `kiln --list-options` (not in the help): every option of every command
 * and `kiln db` subcommand, one per line, from the tables the parser reads
 * (tests/cli_options.sh runs each one). */
static void list_options(void) {
  for (size_t i = 0; i < NCOMMANDS; i++) {
    printf("%s\t\t\t\t\n", COMMANDS[i]->name); /* a command with no options still has a line */
    kiln_cli_list_options(COMMANDS[i], stdout);
  }
  for (int i = 0; i < kiln_cli_db_nsubcommands; i++) {
    printf("%s\t\t\t\t\n", kiln_cli_db_subcommands[i]->name);
    kiln_cli_list_options(kiln_cli_db_subcommands[i], stdout);
  }
}

static int cmd_help(int argc, char **argv) {
  help_args a = {0};
  int rc = kiln_cli_parse(&help_cmd, argc, argv, &a);
  if (rc) return kiln_cli_parse_exit(rc);
  if (a.pos.n == 0) { print_main_help(); return 0; }
  const kiln_cli_cmd *t = find_cmd(a.pos.v[0]);
  if (!t) return top_usage_error("unknown command '", a.pos.v[0]);
  kiln_cli_print_help(t, stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return top_usage_error("no command given", NULL);
  const char *a = argv[1];
  if (!strcmp(a, "--help") || !strcmp(a, "-h")) { print_main_help(); return 0; }
  if (!strcmp(a, "--version") || !strcmp(a, "-V")) { printf("kiln %s\n", KILN_VERSION); return 0; }
  if (!strcmp(a, "--list-options")) { list_options(); return 0; }
  if (a[0] == '-') return top_usage_error("unknown option '", a);
  int rc = kiln_cli__load_env(); /* the KILN_* variables, once (runtime/options.c) */
  if (rc) return rc;
  const kiln_cli_cmd *c = find_cmd(a);
  if (!c) return top_usage_error("unknown command '", a);
  return c->fn(argc - 2, argv + 2);
}
