/* cli_opts_test.c: the `kiln` option parser (cli/opts.c) on a table of every
 * kind: "--name V" and "--name=V", an alias, flags, ranges, choices, NaN and
 * infinity, repeatable options and their cap, --shape, positionals and their
 * count, environment defaults, --help anywhere, and the exit status 2 of
 * every refusal. Also that --help and the usage line show every row. */
#include "kiln_cli.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct targs {
  kiln_cli_list pos, inputs;
  kiln_cli_shapes shapes;
  bool json;
  uint64_t repeat;
  double budget, gflop;
  const char *format, *out, *devsel;
} targs;

#define A targs
static const kiln_cli_opt OPTS[] = {
  KILN_OPT_INPUTS(A, inputs, "inputs"),
  KILN_OPT_SHAPES(A, shapes, "shapes"),
  KILN_OPT_JSON(A, json, "json"),
  {.name = "--repeat", .kind = KILN_OPT_INT, .off = offsetof(A, repeat), .value = "N", .min = 1, .max = 10, .err = "--repeat: 1..10",
   .help = "repeat"},
  {.name = "--budget", .kind = KILN_OPT_DOUBLE, .off = offsetof(A, budget), .value = "S", .help = "budget"},
  {.name = "--gflop", .kind = KILN_OPT_DOUBLE, .off = offsetof(A, gflop), .value = "X", .open = true, .finite = true, .help = "gflop"},
  {.name = "--format", .kind = KILN_OPT_STRING, .off = offsetof(A, format), .value = "F", .choices = "npy|pb", .help = "format"},
  {.name = "--output", .alias = "-o", .kind = KILN_OPT_STRING, .off = offsetof(A, out), .value = "FILE", .nonempty = true, .help = "output"},
  KILN_OPT_DEVICE(A, devsel, "device"),
};
#undef A

static int dummy(int argc, char **argv) { (void)argc; (void)argv; return 0; }
static const kiln_cli_cmd CMD = {.name = "test", .fn = dummy, .summary = "a test", KILN_CLI_MODEL_ARG(targs), KILN_CLI_OPTS(OPTS)};

static int failures;
#define CHECK(cond)                                                                              \
  do {                                                                                           \
    if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } \
  } while (0)

/* The words of the last parse: string options point into them. */
static char words[4096];

/* Parses the words of line (space-separated) into *a; returns the result. */
static int parse(const char *line, targs *a) {
  char *buf = words;
  char *argv[128];
  int argc = 0;
  snprintf(buf, sizeof words, "%s", line);
  for (char *t = strtok(buf, " "); t && argc < 128; t = strtok(NULL, " ")) argv[argc++] = t;
  memset(a, 0, sizeof *a);
  a->repeat = 1;
  return kiln_cli_parse(&CMD, argc, argv, a);
}

int main(void) {
  targs a;
  unsetenv("KILN_DEVICE");
  CHECK(kiln_cli__load_env() == 0);
  CHECK(parse("m.onnx", &a) == 0 && a.pos.n == 1 && !strcmp(a.pos.v[0], "m.onnx") && a.repeat == 1 && !a.json && !a.devsel);
  CHECK(parse("m.onnx --repeat 3 --json --format pb", &a) == 0 && a.repeat == 3 && a.json && !strcmp(a.format, "pb"));
  CHECK(parse("--repeat=10 m.onnx", &a) == 0 && a.repeat == 10);
  CHECK(parse("m.onnx --repeat 0", &a) == 2);
  CHECK(parse("m.onnx --repeat 11", &a) == 2);
  CHECK(parse("m.onnx --repeat -1", &a) == 2);
  CHECK(parse("m.onnx --repeat x", &a) == 2);
  CHECK(parse("m.onnx --repeat", &a) == 2);         /* missing value */
  CHECK(parse("m.onnx --json=1", &a) == 2);         /* a flag takes no value */
  CHECK(parse("m.onnx --jso", &a) == 2);            /* no prefix matching */
  CHECK(parse("m.onnx --frobnicate", &a) == 2);
  CHECK(parse("m.onnx n.onnx", &a) == 2);           /* one positional */
  CHECK(parse("--json", &a) == 2);                  /* missing positional */
  CHECK(parse("m.onnx --budget inf", &a) == 0 && isinf(a.budget));
  CHECK(parse("m.onnx --budget nan", &a) == 2);
  CHECK(parse("m.onnx --budget -1", &a) == 2);
  CHECK(parse("m.onnx --budget 0", &a) == 0 && a.budget == 0);
  CHECK(parse("m.onnx --gflop 0", &a) == 2);        /* open lower bound */
  CHECK(parse("m.onnx --gflop inf", &a) == 2);      /* finite */
  CHECK(parse("m.onnx --gflop 2.5", &a) == 0 && a.gflop == 2.5);
  CHECK(parse("m.onnx --format npz", &a) == 2);
  CHECK(parse("m.onnx -o out.html", &a) == 0 && !strcmp(a.out, "out.html"));
  CHECK(parse("m.onnx --output=x.html", &a) == 0 && !strcmp(a.out, "x.html"));
  CHECK(parse("m.onnx -o=", &a) == 2);              /* nonempty */
  CHECK(parse("m.onnx --input a.npy --input x=b.npy", &a) == 0 && a.inputs.n == 2 && !strcmp(a.inputs.v[1], "x=b.npy"));
  CHECK(parse("m.onnx --shape x=1,2,3 --shape N=4", &a) == 0 && a.shapes.n == 2 && a.shapes.b[0].rank == 3 && a.shapes.b[0].dims[2] == 3 &&
        !strcmp(a.shapes.b[1].name, "N") && a.shapes.b[1].dims[0] == 4);
  CHECK(parse("m.onnx --shape x", &a) == 2);
  CHECK(parse("m.onnx --shape x=1,-2", &a) == 2);
  char many[2048] = "m.onnx";
  for (int i = 0; i <= KILN_CLI_MAX_LIST; i++) strcat(many, " --input f");
  CHECK(parse(many, &a) == 2);                      /* past the cap */
  CHECK(parse("m.onnx --frobnicate --help", &a) == KILN_CLI_HELP); /* --help wins anywhere */
  CHECK(kiln_cli_parse_exit(KILN_CLI_HELP) == 0);
  setenv("KILN_DEVICE", "env-dev", 1);
  CHECK(kiln_cli__load_env() == 0); /* the environment is read once, as kiln's main does */
  CHECK(parse("m.onnx", &a) == 0 && a.devsel && !strcmp(a.devsel, "env-dev"));
  CHECK(parse("m.onnx --device 1:0", &a) == 0 && !strcmp(a.devsel, "1:0"));
  unsetenv("KILN_DEVICE");
  CHECK(kiln_cli__load_env() == 0);
  setenv("KILN_GEMM_KERNELS", "0,3", 1); /* a malformed variable: exit status 2 */
  CHECK(kiln_cli__load_env() == 2);
  unsetenv("KILN_GEMM_KERNELS");
  CHECK(kiln_cli__load_env() == 0);

  /* --help and the usage line name every row */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  kiln_cli_print_help(&CMD, f);
  fclose(f);
  char *usage_end = strstr(text, "\n\n");
  CHECK(!strncmp(text, "usage: kiln test MODEL.onnx", 27) && usage_end);
  for (size_t i = 0; usage_end && i < sizeof OPTS / sizeof OPTS[0]; i++) {
    const char *shown = OPTS[i].alias ? OPTS[i].alias : OPTS[i].name;
    char *hit = strstr(text, shown);
    CHECK(hit && hit < usage_end);                  /* in the usage line */
    CHECK(strstr(usage_end, OPTS[i].name) != NULL); /* in the option list */
  }
  free(text);
  if (failures) { fprintf(stderr, "%d check(s) failed\n", failures); return 1; }
  printf("cli_opts_test: all checks passed\n");
  return 0;
}
