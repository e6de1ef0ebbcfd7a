/* cmd_predict.c: `kiln predict MODEL.onnx`: the cost model's prediction of
 * each op's time, algorithm and parameters, on this device (with measured
 * times beside) or on a device profile that need not be present. */
#include "kiln_cli.h"
#include "kiln_db.h"
#include "kiln_costmodel.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

typedef struct predict_args {
  kiln_cli_list pos;
  kiln_cli_shapes shapes;
  bool json;
  const char *dbpath, *devsel, *profile;
} predict_args;

static const kiln_cli_opt OPTS[] = {
  {.name = "--profile", .kind = KILN_OPT_STRING, .off = offsetof(predict_args, profile), .value = "NAME", .err = "--profile needs a name",
   .help = "a device that need not be present: rtx3060, h100, rx7900xtx, arc-a770, m2\n"
           "(spec-sheet figures); without it, this device's probe is used and each\n"
           "op is also measured, so predicted and measured times print side by side"},
  KILN_OPT_SHAPES(predict_args, shapes, "bind input shapes (needed with --profile for symbolic dimensions)"),
  KILN_OPT_DB(predict_args, dbpath, "database with this device's probe and records (default as for tune)"),
  KILN_OPT_DEVICE(predict_args, devsel, KILN_CLI_DEVICE_HELP),
  KILN_OPT_JSON(predict_args, json, "print one JSON object"),
};

/* The prediction for this device (probing it first when the database has no
 * probe of it), with each op measured too. 0 or an exit status. */
static int predict_here(kiln_cli__ctx *x, const char *dbpath, const char *devsel, bool json, kiln_node_prediction **p, int *n) {
  kiln_error err = {0};
  char dbbuf[4096];
  int rc;
  if (!dbpath) dbpath = kiln_cli__default_db(dbbuf, sizeof dbbuf);
  if ((rc = kiln_cli__open_db(dbpath, KILN_DB_CREATE, false, &x->db)) != 0) return rc;
  if ((rc = kiln_cli__ctx_session(x, devsel, 0)) != 0) return rc;
  rc = kiln_predict(x->m, NULL, x->s, x->db, p, n, &err);
  if (rc == KILN_ENOTFOUND) {
    kiln_probe_figure *figs = NULL;
    int nf = 0;
    if (kiln_db_is_readonly(x->db)) {
      kiln_cli__error("%s: read-only for you and without a probe of this device; predictions need one: run `kiln probe` (it stores the "
                      "probe in your own database) and read this file through KILN_DB_PATH, or use --profile", kiln_db_path(x->db));
      return 2;
    }
    if (!json) { printf("probing the device first (kiln probe)...\n"); fflush(stdout); }
    if ((rc = kiln_probe(x->d, x->db, &figs, &nf, &err)) != 0) return kiln_cli__fail(&err, rc);
    free(figs);
    rc = kiln_predict(x->m, NULL, x->s, x->db, p, n, &err);
  }
  return rc ? kiln_cli__fail(&err, rc) : 0;
}

static int cmd_predict(int argc, char **argv) {
  predict_args a = {0};
  int rc = kiln_cli_parse(&kiln_cli_cmd_predict, argc, argv, &a);
  if (rc) return kiln_cli_parse_exit(rc);
  const char *path = a.pos.v[0], *devsel = a.devsel, *dbpath = a.dbpath, *profile = a.profile;
  bool json = a.json;
  kiln_error err = {0};
  kiln_cli__ctx x = {0};
  kiln_node_prediction *p = NULL;
  int n = 0;
  kiln_cli__load lo = {.path = path, .shapes = &a.shapes, .random = !profile};
  if ((rc = kiln_cli__ctx_load(&x, &lo)) != 0) goto done;
  if (!profile) rc = predict_here(&x, dbpath, devsel, json, &p, &n);
  else if ((rc = kiln_predict(x.m, profile, NULL, NULL, &p, &n, &err)) != 0) rc = kiln_cli__fail(&err, rc);
  if (rc) goto done;
  double tp = 0, tm = 0;
  int have_meas = 0;
  for (int i = 0; i < n; i++) { tp += p[i].predicted_ns; if (p[i].measured_ns >= 0) { tm += p[i].measured_ns; have_meas = 1; } }
  const char *target = profile ? profile : kiln_device_get_info(x.d)->name;
  if (json) {
    kiln_cli__jprintf(stdout, "{\"model\":%s,\"target\":%s,\"profile\":%b,\"total_predicted_ms\":%g,\"total_measured_ms\":%g,\"nodes\":[", path,
                      target, profile != NULL, tp / 1e6, have_meas ? tm / 1e6 : NAN);
    for (int i = 0; i < n; i++)
      kiln_cli__jprintf(stdout, "%r{\"node\":%s,\"op\":%s,\"family\":%s,\"params\":%s,\"predicted_us\":%g,\"measured_us\":%g}", i ? "," : "",
                        p[i].node, p[i].op, p[i].family, p[i].params, p[i].predicted_ns / 1e3, p[i].measured_ns >= 0 ? p[i].measured_ns / 1e3 : NAN);
    printf("]}\n");
  } else {
    kiln_devmodel dm;
    kiln_cm_basis b = {{0}};
    if (!profile) printf("%s on %s (this device's probe)\n", path, target);
    else if (kiln_cm_profile_model(profile, &dm, &b, NULL) == 0 && b.measured_probe)
      printf("%s on %s (device not present: the probe and records of %s, built into kiln as its GPU prior)\n", path, target, b.prior_device);
    else if (b.prior_device[0])
      printf("%s on %s (device not present: spec-sheet figures, with the corrections fitted on %s's records, kiln's GPU prior)\n", path, target, b.prior_device);
    else printf("%s on %s (spec-sheet profile, device not present)\n", path, target);
    printf("%-28s %-18s %-11s %12s %12s  %s\n", "node", "op", "family", "predicted us", have_meas ? "measured us" : "", "chosen parameters");
    for (int i = 0; i < n; i++) {
      char ms[32] = "";
      if (p[i].measured_ns >= 0) snprintf(ms, sizeof ms, "%.1f", p[i].measured_ns / 1e3);
      printf("%-28.28s %-18.18s %-11s %12.1f %12s  %s\n", p[i].node, p[i].op, p[i].family, p[i].predicted_ns / 1e3, ms, p[i].params);
    }
    printf("total: predicted %.3f ms", tp / 1e6);
    if (have_meas) printf(", measured %.3f ms (sum of kernel times; predicted/measured %.2f)", tm / 1e6, tm > 0 ? tp / tm : 0);
    printf("\n");
  }
done:
  free(p);
  kiln_cli__ctx_free(&x);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_predict = {.name = "predict", .fn = cmd_predict, .flags = KILN_CLI_USES_DEVICE, KILN_CLI_MODEL_ARG(predict_args), KILN_CLI_OPTS(OPTS),
  .summary = "predict each op's time, algorithm and parameters on this device or a device profile"};
