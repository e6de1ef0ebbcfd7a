#!/bin/sh
# db_faults_merge.sh: the merge acceptance run. Two databases tuned on this
# device for different models (the demo cnn and transformer) merge into one
# that covers both: `kiln run` with the merged file finds every tunable kernel
# tuned and compiles no program (the binary cache travels with the records).
# usage: db_faults_merge.sh KILN_BINARY
set -u
. "$(dirname "$0")/testlib.sh"
kiln_test_start db_merge "$1"
"$KILN" db --help >/dev/null 2>&1 || fail "this kiln has no 'db' command"
"$KILN" demo --dir "$T/m" >/dev/null 2>&1 || { echo "SKIP: kiln demo failed (no OpenCL device?)"; exit 77; }
TUNE="--strategy random --max-trials 3 --seed 1"
"$KILN" tune "$T/m/cnn.onnx" --db "$T/a.db" $TUNE >/dev/null 2>&1 || fail "tuning cnn failed"
"$KILN" tune "$T/m/transformer.onnx" --db "$T/b.db" $TUNE >/dev/null 2>&1 || fail "tuning transformer failed"
"$KILN" db merge "$T/a.db" "$T/b.db" -o "$T/c.db" || fail "merge failed"
for model in cnn transformer; do
  "$KILN" run "$T/m/$model.onnx" --random --db "$T/c.db" --json > "$T/$model.json" 2> "$T/$model.err" || { cat "$T/$model.err"; fail "$model: run with the merged db failed"; }
  $PY - "$T/$model.json" "$model" <<'PYEOF' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
t, c = r["tuning"], r["compile"]["programs"]
print("%s: %d tunable kernels, %d tuned, %d programs compiled" % (sys.argv[2], t["tunable"], t["tuned"], c))
if t["tunable"] < 1 or t["tuned"] != t["tunable"] or c != 0:
    print("FAIL: %s: the merged database should cover every kernel and every program" % sys.argv[2]); sys.exit(1)
PYEOF
done
echo "db_faults_merge: 1 passed, 0 failed"
