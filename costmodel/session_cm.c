/* session_cm.c: the public kiln_session_create. A session is assembled
 * here, above the runtime, because it is handed the cost model as its
 * predictor (kiln_cm_predictor): parameters for what the tuning database has
 * not measured, predicted times for fusion, the device's figures. The
 * runtime's sessions (runtime/session.c) call the predictor only through
 * that table, so runtime/ and db/ link without costmodel/ (tests/layering.sh). */
#include "kiln_internal.h"

int kiln_session_create(kiln_model *m, kiln_device *d, kiln_session **out, kiln_error *err) {
  return kiln__session_create(m, d, &kiln_cm_predictor, out, err);
}
