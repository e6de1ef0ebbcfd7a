#!/bin/sh
# tune_faults.sh: `kiln tune` under faults: a tune killed with SIGKILL at a
# random moment leaves a database that opens, passes PRAGMA integrity_check
# and resumes without redoing recorded instances; concurrent tunes on one
# database lose nothing and never fail with "database is locked".
# usage: tune_faults.sh KILN_BINARY [ROUNDS]
set -u
. "$(dirname "$0")/testlib.sh"
kiln_test_start tune_faults "$1"
ROUNDS=${2:-3}

"$KILN" demo --dir "$T/models" >/dev/null 2>&1 || fail "kiln demo could not write the models"
MODEL=$T/models/transformer.onnx
TUNE="--strategy random --max-trials 3 --seed 1"

integrity() { # db -> prints "ok" or the problem
  $PY - "$1" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("PRAGMA integrity_check").fetchone()[0])
EOF
}
count() { # db table -> rows
  $PY - "$1" "$2" <<EOF
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM " + sys.argv[2]).fetchone()[0])
EOF
}

# a full reference tune: how many instances the model has, and how long a tune takes
START=$($PY -c "import time; print(time.time())")
"$KILN" tune "$MODEL" --db "$T/ref.db" $TUNE --json > "$T/ref.json" 2>/dev/null || fail "reference tune failed"
DURATION=$($PY -c "import time; print(round(time.time() - $START, 2))")
# kill moments are drawn over the whole run (override: KILL_MAX seconds)
KILL_MAX=${KILL_MAX:-$DURATION}
echo "a full tune takes $DURATION s; SIGKILL moments drawn from 0.2 .. $KILL_MAX s"
NINST=$(count "$T/ref.db" tuned)
[ "$NINST" -ge 2 ] || fail "expected at least 2 tunable instances, got $NINST"
echo "model has $NINST tunable instances"

# SIGKILL at random moments, then resume
i=1
while [ "$i" -le "$ROUNDS" ]; do
  DB=$T/kill$i.db
  "$KILN" tune "$MODEL" --db "$DB" $TUNE >/dev/null 2>&1 &
  PID=$!
  # a random moment of the run (0.2 s .. KILL_MAX s; seeded by the round)
  sleep "$($PY -c "import random; random.seed($i); print(round(random.uniform(0.2, max(0.3, $KILL_MAX)), 2))")"
  kill -9 "$PID" 2>/dev/null
  wait "$PID" 2>/dev/null
  if [ -f "$DB" ]; then
    R=$(integrity "$DB")
    [ "$R" = ok ] || fail "round $i: integrity check after SIGKILL: $R"
    BEFORE=$(count "$DB" tuned)
  else
    BEFORE=0
  fi
  OUT=$("$KILN" tune "$MODEL" --db "$DB" $TUNE --json 2>/dev/null) || fail "round $i: resumed tune failed"
  SKIPPED=$(echo "$OUT" | $PY -c "import json,sys; print(sum(1 for r in json.load(sys.stdin)['instances'] if r['skipped']))")
  [ "$SKIPPED" -eq "$BEFORE" ] || fail "round $i: $BEFORE instances were recorded before the kill but $SKIPPED were skipped on resume"
  AFTER=$(count "$DB" tuned)
  [ "$AFTER" -eq "$NINST" ] || fail "round $i: resume ended with $AFTER of $NINST instances"
  R=$(integrity "$DB")
  [ "$R" = ok ] || fail "round $i: integrity after resume: $R"
  echo "round $i: killed with $BEFORE/$NINST instances recorded; resume skipped $SKIPPED and finished; integrity ok"
  i=$((i + 1))
done

# 4 concurrent tunes on one database
DB=$T/conc.db
for k in 1 2 3 4; do
  "$KILN" tune "$MODEL" --db "$DB" --strategy random --max-trials 3 --seed "$k" --json > "$T/conc$k.out" 2> "$T/conc$k.err" &
  eval "P$k=\$!"
done
for k in 1 2 3 4; do
  eval "wait \$P$k" || { cat "$T/conc$k.err"; fail "concurrent tune $k failed"; }
  if grep -qi "locked" "$T/conc$k.err"; then fail "concurrent tune $k: database is locked"; fi
done
R=$(integrity "$DB")
[ "$R" = ok ] || fail "concurrent: integrity check: $R"
N=$(count "$DB" tuned)
[ "$N" -eq "$NINST" ] || fail "concurrent: $N of $NINST instances recorded"
# no lost records: every instance a process tuned has its winner stored as an "ok" record
LOST=$($PY - "$DB" "$T"/conc1.out "$T"/conc2.out "$T"/conc3.out "$T"/conc4.out <<'EOF'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
lost = 0
for f in sys.argv[2:]:
    for r in json.load(open(f))["instances"]:
        if r["skipped"] or not r["params"]:
            continue
        if r["family"] == "fusion":  # a grouping's row names it ("attention ... at NODE"); its records, its kind's signature
            n = c.execute("SELECT count(*) FROM records WHERE family='fusion' AND shape_key LIKE ? AND params=? AND status='ok'",
                          (r["shape_key"].split(" ")[0] + ":%", r["params"])).fetchone()[0]
        else:
            n = c.execute("SELECT count(*) FROM records WHERE family=? AND shape_key=? AND params=? AND status='ok'",
                          (r["family"], r["shape_key"], r["params"])).fetchone()[0]
        if n == 0:
            lost += 1
            print("lost:", f, r["family"], r["shape_key"], r["params"], file=sys.stderr)
print(lost)
EOF
)
[ "$LOST" = 0 ] || fail "concurrent: $LOST measured winners missing from the database"
echo "4 concurrent tunes: all finished, $N/$NINST instances recorded, no record lost, integrity ok"
echo "tune_faults: 1 passed, 0 failed"
