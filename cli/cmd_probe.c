/* cmd_probe.c: `kiln probe`: measures the device (bandwidth, arithmetic
 * peak, layout-change rate, launch overhead) for the cost model and stores
 * the figures with the device in the tuning database. */
#include "kiln_cli.h"
#include "kiln_db.h"
#include <stddef.h>
#include <stdlib.h>

typedef struct probe_args { bool json, nodb; const char *dbpath, *devsel; } probe_args;

static const kiln_cli_opt OPTS[] = {
  KILN_OPT_DB(probe_args, dbpath, "store the figures with the device in this database (default as for tune)"),
  {.name = "--no-db", .kind = KILN_OPT_FLAG, .off = offsetof(probe_args, nodb), .help = "only print"},
  KILN_OPT_DEVICE(probe_args, devsel, KILN_CLI_DEVICE_HELP),
  KILN_OPT_JSON(probe_args, json, "print one JSON object"),
};

static int cmd_probe(int argc, char **argv) {
  probe_args a = {0};
  int prc = kiln_cli_parse(&kiln_cli_cmd_probe, argc, argv, &a);
  if (prc) return kiln_cli_parse_exit(prc);
  bool json = a.json;
  kiln_error err = {0};
  kiln_db *db = NULL;
  kiln_device *d = NULL;
  kiln_probe_figure *f = NULL;
  int n = 0, rc;
  if (!a.nodb && (rc = kiln_cli__open_db(a.dbpath, KILN_DB_CREATE | KILN_DB_WRITE, false, &db)) != 0) return rc;
  if ((rc = kiln_cli__device_open(a.devsel, &d, &err)) != 0) { kiln_db_close(db); return kiln_cli__fail(&err, rc); }
  const kiln_device_info *di = kiln_device_get_info(d);
  if (!json) { printf("probing %s (%s)...\n", di->name, di->platform); fflush(stdout); }
  rc = kiln_probe(d, db, &f, &n, &err);
  if (rc) rc = kiln_cli__fail(&err, rc);
  else if (json) {
    kiln_cli__jprintf(stdout, "{\"device\":%s,\"db\":%z,\"figures\":{", di->name, db ? kiln_db_path(db) : NULL);
    for (int i = 0; i < n; i++)
      kiln_cli__jprintf(stdout, "%r%s:{\"value\":%g,\"best\":%g,\"spread\":%g,\"unit\":%s}", i ? "," : "", f[i].name, f[i].value, f[i].best,
                        f[i].spread, f[i].unit);
    printf("}}\n");
  } else {
    printf("%-18s %12s  %-8s %8s %12s\n", "figure", "median", "unit", "spread", "best");
    for (int i = 0; i < n; i++) printf("%-18s %12.3f  %-8s %7.1f%% %12.3f\n", f[i].name, f[i].value, f[i].unit, f[i].spread * 100, f[i].best);
    if (db) printf("stored in %s\n", kiln_db_path(db));
  }
  free(f);
  kiln_device_close(d);
  kiln_db_close(db);
  return rc;
}

const kiln_cli_cmd kiln_cli_cmd_probe = {.name = "probe", .fn = cmd_probe, .flags = KILN_CLI_NEEDS_DEVICE, KILN_CLI_OPTS(OPTS),
  .summary = "measure the device (bandwidth, arithmetic peak, layout-change rate, launch overhead) for the cost model"};
