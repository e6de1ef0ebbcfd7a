/* cmd_demo.c: `kiln demo`: writes the built-in demo models (a small CNN
 * a transformer block and a mobilenet-style network of depthwise
 * separable blocks), runs each on the device with seeded random
 * inputs and checks it against the CPU reference. */
#include "kiln_cli.h"
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct demo_args { const char *dir, *devsel; } demo_args;

static const kiln_cli_opt OPTS[] = {
  {.name = "--dir", .kind = KILN_OPT_STRING, .off = offsetof(demo_args, dir), .value = "DIR", .err = "--dir needs a directory", .nonempty = true,
   .help = "where to write cnn.onnx, transformer.onnx and mobile.onnx (default: a new temporary dir)"},
  KILN_OPT_DEVICE(demo_args, devsel, "device (see `kiln devices`)"),
};

/* Like kiln_cli__fail(), with the model's path in front unless the message names it. */
static int fail_in(const char *path, const kiln_error *err, int status) {
  if (strstr(err->msg, path)) return kiln_cli__fail(err, status);
  kiln_cli__error("%s: %s", path, err->msg[0] ? err->msg : kiln_strerror(status));
  return kiln_cli__exit_code(status);
}

static int cmd_demo(int argc, char **argv) {
  demo_args a = {0};
  int prc = kiln_cli_parse(&kiln_cli_cmd_demo, argc, argv, &a);
  if (prc) return kiln_cli_parse_exit(prc);
  const char *dir = a.dir, *devsel = a.devsel;
  char tmpl[4096];
  if (!dir) {
    const char *t = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/kiln-demo-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpl)) { kiln_cli__error("%s: cannot create a temporary directory: %s", tmpl, strerror(errno)); return 2; }
    dir = tmpl;
  } else if (kiln_cli__mkdir_p(dir) != 0) {
    kiln_cli__error("--dir %s: cannot create directory: %s", dir, strerror(errno));
    return 2;
  }
  kiln_error err = {0};
  kiln_device *d = NULL;
  int rc = kiln_cli__device_open(devsel, &d, &err);
  if (rc) return kiln_cli__fail(&err, rc);
  const kiln_device_info *di = kiln_device_get_info(d);
  printf("kiln %s demo\ndevice: %s (%s)\nmodels: %s\n", KILN_VERSION, di->name, di->platform, dir);
  static const char *const which[] = {"cnn", "transformer", "mobile"};
  int worst = 0;
  for (size_t w = 0; w < sizeof which / sizeof which[0]; w++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, which[w]);
    printf("\n== %s: %s\n", which[w], path);
    fflush(stdout);
    kiln_model *m = NULL;
    kiln_session *s = NULL;
    kiln_cli__inputs b = {0};
    kiln_cli__check res = {0};
    rc = 0;
    if ((rc = kiln_demo_write(which[w], path, 42, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
    if ((rc = kiln_model_load(path, NULL, &m, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
    kiln_model_stats st;
    kiln_model_get_stats(m, &st);
    printf("%d nodes, %lld parameters\n", st.nodes, (long long)st.params);
    if ((rc = kiln_cli__bind_inputs(m, NULL, 0, true, 42, NULL, &b)) != 0) goto next;
    if ((rc = kiln_session_create(m, d, &s, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
    if ((rc = kiln_cli__set_inputs(s, &b)) != 0) goto next;
    char sh[256];
    for (int i = 0; i < b.n; i++)
      printf("input '%s': %s %s (random, seed 42)\n", b.info[i].name, kiln_dtype_name(b.t[i]->dtype), kiln_cli__fmt_shape(sh, sizeof sh, b.t[i]->rank, b.t[i]->dims, NULL));
    double first = 0, best = INFINITY;
    kiln_run_stats rs;
    for (int r = 0; r < 3; r++) {
      if ((rc = kiln_session_run(s, &err)) != 0) { rc = fail_in(path, &err, rc); goto next; }
      kiln_session_get_stats(s, &rs);
      if (r == 0) first = rs.last_ms;
      else if (rs.last_ms < best) best = rs.last_ms;
    }
    printf("first run %.1f ms (planning, %d programs compiled in %.1f ms), then %.3f ms; %d kernels per run, %d nodes folded\n", first,
           rs.programs_compiled, rs.compile_ms, best, rs.kernels_launched, rs.nodes_folded);
    int nout = kiln_model_num_outputs(m);
    for (int i = 0; i < nout; i++) kiln_cli__print_tensor("output", kiln_session_output(s, i));
    if ((rc = kiln_cli__check_reference(s, nout, &res)) != 0) goto next;
    if (res.ok) printf("matches CPU reference: max abs err %.3g, max rel err %.3g (tolerance %g)\n", res.max_abs, res.max_rel, KILN_CLI_CHECK_RTOL);
    else {
      printf("DOES NOT MATCH the CPU reference: max abs err %.3g, max rel err %.3g (tolerance %g)\n", res.max_abs, res.max_rel, KILN_CLI_CHECK_RTOL);
      for (int i = 0; i < nout; i++)
        if (!res.cmp[i].ok) { fflush(stdout); kiln_cli__error("%s: output '%s' differs from the CPU reference (%s)", which[w], kiln_session_output(s, i)->name, res.cmp[i].why); break; }
      rc = 1;
    }
  next:
    fflush(stdout);
    if (rc > worst) worst = rc;
    kiln_cli__check_free(&res);
    kiln_cli__inputs_free(&b);
    kiln_session_free(s);
    kiln_model_free(m);
  }
  kiln_device_close(d);
  printf("\n%s\n", worst ? "demo FAILED" : "demo passed: every model ran on the OpenCL device and matches the CPU reference");
  if (!worst) printf("try: kiln info %s/cnn.onnx; kiln run %s/transformer.onnx --random --check --repeat 10\n", dir, dir);
  return worst;
}

const kiln_cli_cmd kiln_cli_cmd_demo = {.name = "demo", .fn = cmd_demo, .flags = KILN_CLI_NEEDS_DEVICE, KILN_CLI_OPTS(OPTS),
  .summary = "write the built-in demo models, run them and check them against the CPU reference"};
