/* cmd_plan.c: `kiln plan MODEL.onnx`: the kernels kiln will launch for a
 * model: nodes covered, parameters and where they come from (tuned,
 * predicted, defaults), predicted and measured times, and the fusion
 * groupings considered with the reason for each verdict. */
#include "kiln_cli.h"
#include "kiln_db.h"
#include <stddef.h>
#include <stdlib.h>

typedef struct plan_args {
  kiln_cli_list pos;
  kiln_cli_shapes shapes;
  bool json, nofusion, no_measure;
  const char *dbpath, *devsel, *precision;
} plan_args;

static const kiln_cli_opt OPTS[] = {
  KILN_OPT_DB(plan_args, dbpath, "tuning database (default as for run)"),
  KILN_OPT_NOFUSION(plan_args, nofusion, "the plan without fusion"),
  KILN_OPT_PRECISION(plan_args, precision),
  {.name = "--no-measure", .kind = KILN_OPT_FLAG, .off = offsetof(plan_args, no_measure), .help = "do not time each kernel"},
  KILN_OPT_SHAPES(plan_args, shapes, "bind an input's shape or a symbolic dimension"),
  KILN_OPT_DEVICE(plan_args, devsel, KILN_CLI_DEVICE_HELP),
  KILN_OPT_JSON(plan_args, json, "print one JSON object"),
};

static int cmd_plan(int argc, char **argv) {
  plan_args a = {0};
  int rc = kiln_cli_parse(&kiln_cli_cmd_plan, argc, argv, &a);
  if (rc) return kiln_cli_parse_exit(rc);
  const char *path = a.pos.v[0], *devsel = a.devsel, *dbpath = a.dbpath;
  bool json = a.json, nofusion = a.nofusion, measure = !a.no_measure;
  kiln_error err = {0};
  kiln_cli__ctx x = {0};
  kiln_plan_kernel *k = NULL;
  kiln_fusion_info *f = NULL;
  int nk = 0, nf = 0;
  kiln_cli__load lo = {.path = path, .shapes = &a.shapes, .random = true};
  if ((rc = kiln_cli__ctx_load(&x, &lo)) != 0) goto done;
  if ((rc = kiln_cli__open_db(dbpath, 0, true, &x.db)) != 0) goto done;
  x.precision = a.precision;
  if ((rc = kiln_cli__ctx_session(&x, devsel, nofusion ? KILN_CLI_NO_FUSION : 0)) != 0) goto done;
  kiln_session *s = x.s;
  const kiln_device *d = x.d;
  if ((rc = kiln_session_plan_info(s, measure, &k, &nk, &err)) != 0) { rc = kiln_cli__fail(&err, rc); goto done; }
  if ((rc = kiln_session_fusion(s, &f, &nf)) != 0) { kiln_cli__error("out of memory"); rc = 1; goto done; }
  kiln_run_stats rs;
  kiln_session_get_stats(s, &rs);
  kiln_param_stats ps;
  kiln_session_param_stats(s, &ps);
  char dbdesc[4096];
  kiln_db_describe(x.db, dbdesc, sizeof dbdesc);
  if (json) {
    printf("{\"model\":"); kiln_cli__json_str(stdout, path);
    printf(",\"device\":"); kiln_cli__json_str(stdout, kiln_device_get_info(d)->name);
    printf(",\"tuning\":{\"db\":"); kiln_cli__json_str_or_null(stdout, x.db ? dbdesc : NULL);
    printf(",\"tunable\":%d,\"tuned\":%d,\"predicted\":%d,\"default\":%d", ps.tunable, ps.tuned, ps.predicted, ps.defaulted);
    kiln_cli__json_basis(stdout, s);
    printf("}");
    printf(",\"fusion\":%s,\"kernels\":%d,\"kernel_launches\":%d,\"device_bytes\":%llu,\"intermediate_bytes\":%llu,\"intermediate_peak_bytes\":%llu,\"blocked_values\":%d,\"launches\":[",
           nofusion ? "false" : "true", nk, rs.kernels_launched, (unsigned long long)rs.device_bytes, (unsigned long long)rs.intermediate_bytes,
           (unsigned long long)rs.pool_bytes, rs.blocked_values);
    for (int i = 0; i < nk; i++) {
      printf("%s{\"node\":", i ? "," : ""); kiln_cli__json_str(stdout, k[i].node);
      printf(",\"ops\":"); kiln_cli__json_str(stdout, k[i].ops);
      printf(",\"nodes\":%d,\"family\":", k[i].nodes_covered); kiln_cli__json_str(stdout, k[i].family);
      printf(",\"params\":"); kiln_cli__json_str(stdout, k[i].params);
      printf(",\"origin\":"); kiln_cli__json_str(stdout, k[i].origin);
      printf(",\"predicted_us\":"); if (k[i].predicted_ns >= 0) kiln_cli__json_num(stdout, k[i].predicted_ns / 1e3); else printf("null");
      printf(",\"measured_us\":"); if (k[i].measured_ns >= 0) kiln_cli__json_num(stdout, k[i].measured_ns / 1e3); else printf("null");
      printf(",\"precision\":"); kiln_cli__json_str(stdout, k[i].precision);
      printf(",\"precision_why\":"); kiln_cli__json_str(stdout, k[i].precision_why);
      printf("}");
    }
    printf("],\"groupings\":[");
    for (int i = 0; i < nf; i++) {
      printf("%s{\"root\":", i ? "," : ""); kiln_cli__json_str(stdout, f[i].root);
      printf(",\"nodes\":"); kiln_cli__json_str(stdout, f[i].nodes);
      printf(",\"kind\":"); kiln_cli__json_str(stdout, f[i].kind);
      printf(",\"fused\":%s,\"from_probe\":%s,\"predicted_fused_us\":", f[i].fused ? "true" : "false", f[i].probed ? "true" : "false");
      kiln_cli__json_num(stdout, f[i].pred_fused_ns / 1e3);
      printf(",\"predicted_unfused_us\":"); kiln_cli__json_num(stdout, f[i].pred_unfused_ns / 1e3);
      printf(",\"measured_fused_us\":"); if (f[i].meas_fused_ns > 0) kiln_cli__json_num(stdout, f[i].meas_fused_ns / 1e3); else printf("null");
      printf(",\"measured_unfused_us\":"); if (f[i].meas_unfused_ns > 0) kiln_cli__json_num(stdout, f[i].meas_unfused_ns / 1e3); else printf("null");
      printf(",\"reason\":"); kiln_cli__json_str(stdout, f[i].reason);
      printf("}");
    }
    printf("]}\n");
  } else {
    printf("%s on %s: %d kernels, %d launches per inference%s, %.2f MiB of device memory\n", path, kiln_device_get_info(d)->name, nk,
           rs.kernels_launched, nofusion ? " (fusion off)" : "", rs.device_bytes / 1048576.0);
    printf("intermediates total %.2f MiB, peak %.2f MiB (%.1f%%); weights, inputs and outputs %.2f MiB\n", rs.intermediate_bytes / 1048576.0,
           rs.pool_bytes / 1048576.0, rs.intermediate_bytes ? 100.0 * (double)rs.pool_bytes / (double)rs.intermediate_bytes : 0.0,
           (rs.device_bytes - rs.pool_bytes) / 1048576.0);
    if (rs.blocked_values) printf("layout: %d intermediate tensors in channel blocks of the device's vector width (NCHW16c, NCHW8c) between the convolutions, pools and concats that work in it (KILN_BLOCKED=off: all NCHW)\n", rs.blocked_values);
    kiln_cli__print_tuning(stdout, "tuning: ", x.db ? dbdesc : NULL, s, &ps);
    printf("%-26s %-24s %-9s %-10s %11s %11s %-5s %s\n", "kernel (last node)", "ops", "family", "params", "predict us", "measured us", "prec", "parameters");
    for (int i = 0; i < nk; i++) {
      char pu[32] = "-", mu[32] = "-";
      if (k[i].predicted_ns >= 0) snprintf(pu, sizeof pu, "%.1f", k[i].predicted_ns / 1e3);
      if (k[i].measured_ns >= 0) snprintf(mu, sizeof mu, "%.1f", k[i].measured_ns / 1e3);
      printf("%-26.26s %-24.24s %-9.9s %-10s %11s %11s %-5s %s\n", k[i].node, k[i].ops, k[i].family, k[i].origin, pu, mu, k[i].precision, k[i].params);
    }
    if (kiln_session_precision(s) != KILN_PRECISION_FP32) { /* each kernel's precision, and why */
      printf("\nprecision (%s):\n", kiln_precision_name(kiln_session_precision(s)));
      for (int i = 0; i < nk; i++) printf("  %-5s %-26.26s %-24.24s %s\n", k[i].precision, k[i].node, k[i].ops, k[i].precision_why);
    }
    if (nf) {
      printf("\ngroupings considered (%d):\n", nf);
      for (int i = 0; i < nf; i++)
        printf("  %-8s %-30.30s at %-24.24s %s%s\n", f[i].fused ? "FUSED" : "REJECTED", f[i].nodes, f[i].root, f[i].reason, f[i].probed ? "" : " [no probe: counted traffic]");
    } else if (!nofusion) printf("\nno fusable groupings in this model\n");
  }
done:
  free(k);
  free(f);
  kiln_cli__ctx_free(&x);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_plan = {.name = "plan", .fn = cmd_plan, .flags = KILN_CLI_NEEDS_DEVICE, KILN_CLI_MODEL_ARG(plan_args), KILN_CLI_OPTS(OPTS),
  .summary = "show the kernels kiln will launch: nodes covered, parameters and their origin, times, fusion groupings"};
