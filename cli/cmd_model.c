/* cmd_model.c: `kiln model eval` (the cost model's accuracy on a device's
 * records, each instance held out in turn) and `kiln model export-prior`
 * (the per-family corrections fitted on them, as a built-in prior). */
#include "kiln_cli.h"
#include "kiln_db.h"
#include "kiln_costmodel.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct model_args {
  kiln_cli_list pos;
  bool json, trace;
  const char *dbpath, *devsel, *stored, *dump;
} model_args;

static const kiln_cli_opt OPTS[] = {
  KILN_OPT_DB(model_args, dbpath, "tuning database (default as for tune)"),
  KILN_OPT_DEVICE(model_args, devsel, KILN_CLI_DEVICE_HELP),
  {.name = "--db-device", .kind = KILN_OPT_STRING, .off = offsetof(model_args, stored), .value = "SEL", .nonempty = true,
   .err = "--db-device needs a device id or name (see `kiln db list`)",
   .help = "the records of a device stored in the database instead of an OpenCL\n"
           "device's (a row id or part of its fingerprint, see `kiln db list`); it\n"
           "need not be present, and no OpenCL device is opened"},
  KILN_OPT_JSON(model_args, json, "print one JSON object"),
  {.name = "--trace", .kind = KILN_OPT_FLAG, .off = offsetof(model_args, trace),
   .help = "eval: per held-out instance, its Kendall tau, regret, the predicted\n"
           "and the measured best, on stderr"},
  {.name = "--dump", .kind = KILN_OPT_STRING, .off = offsetof(model_args, dump), .value = "KEY", .nonempty = true,
   .err = "--dump needs part of an instance key",
   .help = "eval: every candidate of the instances whose key contains KEY, on stderr:\n"
           "measured and predicted time, the base estimate's work and launch parts,\n"
           "the correction terms that move it by more than 5%"},
};

#define MODEL_ACTIONS "expected `kiln model eval` or `kiln model export-prior`"

static int cmd_model(int argc, char **argv) {
  model_args a = {0};
  int prc = kiln_cli_parse(&kiln_cli_cmd_model, argc, argv, &a);
  if (prc) return kiln_cli_parse_exit(prc);
  if (strcmp(a.pos.v[0], "eval") && strcmp(a.pos.v[0], "export-prior")) return kiln_cli_usage_error(&kiln_cli_cmd_model, MODEL_ACTIONS);
  bool export_prior = !strcmp(a.pos.v[0], "export-prior"), json = a.json;
  const char *devsel = a.devsel, *dbpath = a.dbpath, *stored = a.stored;
  char dbbuf[4096];
  if (!dbpath) dbpath = kiln_cli__default_db(dbbuf, sizeof dbbuf);
  kiln_error err = {0};
  kiln_db *db = NULL;
  kiln_device *d = NULL;
  kiln_model_eval *e = NULL;
  kiln_device_info sinfo;
  const kiln_device_info *di = &sinfo;
  int64_t dev = -1;
  int n = 0, rc;
  if ((rc = kiln_db_open(dbpath, stored ? KILN_DB_READONLY : 0, &db, &err)) != 0) return kiln_cli__fail(&err, rc);
  if (stored) { /* records of a device in the database, which need not be present */
    if ((rc = kiln_db_find_device(db, stored, &dev, &err)) == 0) rc = kiln_db_device_info(db, dev, &sinfo, &err);
  } else if ((rc = kiln_cli__device_open(devsel, &d, &err)) == 0) {
    di = kiln_device_get_info(d);
    rc = kiln_db_device(db, di, &dev, &err);
  }
  if (rc) { kiln_device_close(d); kiln_db_close(db); return kiln_cli__fail(&err, rc); }
  if (export_prior) {
    rc = kiln_cm_export_prior(db, dev, di, stdout, &err);
    if (rc) rc = kiln_cli__fail(&err, rc);
    kiln_device_close(d);
    kiln_db_close(db);
    return rc;
  }
  kiln_cm_eval_debug dbg = {.trace = a.trace, .dump = a.dump};
  rc = kiln_cm_eval_device(db, dev, di, &dbg, &e, &n, &err);
  if (rc) rc = kiln_cli__fail(&err, rc);
  else if (json) {
    kiln_cli__jprintf(stdout, "{\"device\":%s,\"db\":%s,\"families\":[", di->name, dbpath);
    for (int i = 0; i < n; i++)
      kiln_cli__jprintf(stdout, "%r{\"family\":%s,\"instances\":%d,\"records\":%d,\"kendall_tau\":%g,\"top1\":%g,\"top5\":%g,\"regret\":%g}",
                        i ? "," : "", e[i].family, e[i].instances, e[i].records, e[i].kendall_tau, e[i].top1, e[i].top5, e[i].regret);
    printf("]}\n");
  } else {
    printf("cost model accuracy on %s (%s), each instance held out in turn:\n", di->name, dbpath);
    printf("%-12s %9s %8s %10s %8s %8s %8s\n", "family", "instances", "records", "kendall-t", "top-1", "top-5", "regret");
    for (int i = 0; i < n; i++)
      printf("%-12s %9d %8d %10.3f %7.0f%% %7.0f%% %8.3f\n", e[i].family, e[i].instances, e[i].records, e[i].kendall_tau, e[i].top1 * 100, e[i].top5 * 100, e[i].regret);
    if (!n) printf("no measured records with features (run `kiln tune` first)\n");
  }
  free(e);
  kiln_device_close(d);
  kiln_db_close(db);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_model = {.name = "model", .fn = cmd_model, .flags = KILN_CLI_NEEDS_DEVICE, 
  .args = "eval|export-prior", .min_pos = 1, .max_pos = 1, .missing = MODEL_ACTIONS, .pos_off = offsetof(model_args, pos), KILN_CLI_OPTS(OPTS),
  .summary = "cost-model accuracy on this device's records: kiln model eval; its built-in prior: export-prior",
  .notes = "actions:\n"
           "  eval                  per kernel family, each tuned instance held out in turn: Kendall tau between\n"
           "                        predicted and measured times, top-1/top-5 recall of the measured best, regret\n"
           "                        (measured time of the predicted best / measured best)\n"
           "  export-prior          print costmodel/prior_cpu.inc (a CPU device) or prior_gpu.inc (a GPU): the\n"
           "                        per-family corrections fitted on this device's records and its probe,\n"
           "                        used on devices of its kind without their own probe or records, and by\n"
           "                        `kiln predict --profile` for GPUs (rebuild to take effect)\n"};
