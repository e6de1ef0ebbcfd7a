/* session_db.c: the public kiln_session_set_db. It hands the session the
 * database's records through kiln_db_records, the table the runtime reads
 * them by (runtime/session.c, runtime/tunable.c, runtime/cl.c), so that the
 * runtime never names a db/ function and links without db/. */
#include "kiln_internal.h"
#include "kiln_db.h"

const kiln_record_source kiln_db_records = {kiln_db_device, kiln_db_nshared, kiln_db_each, kiln_db_best_layered, kiln_db_binary_get};

int kiln_session_set_db(kiln_session *s, kiln_db *db, kiln_error *err) { return kiln__session_set_db(s, db, &kiln_db_records, err); }
