/* cli_model.c: the setup the model commands (run, tune, plan, predict,
 * bench) share: load and check a model, bind its inputs, then open the
 * device and make a session with the tuning database and the inputs. */
#include "kiln_cli.h"
#include <string.h>

int kiln_cli__ctx_load(kiln_cli__ctx *x, const kiln_cli__load *o) {
  kiln_error err = {0};
  kiln_load_options lo = {.shapes = o->shapes ? o->shapes->b : NULL, .nshapes = o->shapes ? o->shapes->n : 0,
                          .max_model_bytes = kiln_cli__max_model_bytes(o->max_model_bytes)};
  int rc;
  if ((rc = kiln_model_load(o->path, &lo, &x->m, &err)) != 0) return kiln_cli__fail(&err, rc);
  if ((rc = kiln_model_check_supported(x->m, &err)) != 0) return kiln_cli__fail(&err, rc);
  return kiln_cli__bind_inputs(x->m, o->inputs ? o->inputs->v : NULL, o->inputs ? o->inputs->n : 0, o->random, o->seed, o->random_why, &x->b);
}

int kiln_cli__ctx_session(kiln_cli__ctx *x, const char *devsel, unsigned flags) {
  kiln_error err = {0};
  int rc;
  if ((rc = kiln_cli__device_open(devsel, &x->d, &err)) != 0) return kiln_cli__fail(&err, rc);
  if (flags & KILN_CLI_NOTE_CPU) kiln_cli__note_cpu_fallback(x->d, devsel);
  if ((rc = kiln_session_create(x->m, x->d, &x->s, &err)) != 0) return kiln_cli__fail(&err, rc);
  if (x->db && !(flags & KILN_CLI_SESSION_NO_DB) && (rc = kiln_session_set_db(x->s, x->db, &err)) != 0) return kiln_cli__fail(&err, rc);
  if (flags & KILN_CLI_NO_FUSION) kiln_session_set_fusion(x->s, 0);
  if (x->precision && (rc = kiln_session_set_precision(x->s, kiln_precision_parse(x->precision), &err)) != 0) return kiln_cli__fail(&err, rc);
  return kiln_cli__set_inputs(x->s, &x->b);
}

void kiln_cli__ctx_free(kiln_cli__ctx *x) {
  kiln_cli__inputs_free(&x->b);
  kiln_session_free(x->s);
  kiln_db_close(x->db);
  kiln_device_close(x->d);
  kiln_model_free(x->m);
  memset(x, 0, sizeof *x);
}
