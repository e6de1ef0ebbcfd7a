#!/bin/sh
# fusion_tune.sh KILN: `kiln tune` measures fusion groupings both ways and
# records them per device and subgraph signature; `kiln plan` and `kiln run`
# then follow the measurements (issue 5: "kiln tune measures the close calls
# and records the plan per (device, subgraph signature); kiln run applies
# recorded plans and uses predictions elsewhere").
# --fusion-close inf makes every grouping with a prediction a "close call",
# so the small demo CNN's four Conv epilogues are all measured.
set -u
KILN=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$KILN" demo --dir "$T" > "$T/demo.txt" 2>&1 || { cat "$T/demo.txt"; fail "kiln demo"; }
M=$T/cnn.onnx

"$KILN" tune "$M" --db "$T/t.db" --families fusion --fusion-close inf > "$T/tune1.txt" 2>&1 || { cat "$T/tune1.txt"; fail "kiln tune"; }
n1=$(grep -c '^fusion ' "$T/tune1.txt")
[ "$n1" -ge 4 ] || { cat "$T/tune1.txt"; fail "expected >= 4 fusion groupings measured, got $n1"; }
grep '^fusion ' "$T/tune1.txt" | grep -qv 'FUSE=[01]$' && { cat "$T/tune1.txt"; fail "a fusion row without its FUSE choice"; }

# the plan follows the measurements: fused exactly where fused measured faster
"$KILN" plan "$M" --db "$T/t.db" --no-measure > "$T/plan.txt" 2>&1 || { cat "$T/plan.txt"; fail "kiln plan"; }
nm=$(grep -c 'measured .* us fused vs .* us separate' "$T/plan.txt")
[ "$nm" -ge 4 ] || { cat "$T/plan.txt"; fail "expected >= 4 groupings decided by measurement, got $nm"; }
grep 'measured .* us fused vs .* us separate' "$T/plan.txt" | awk '{
  verdict = $1; f = -1; u = -1
  for (i = 1; i <= NF; i++) { if ($i == "measured") f = $(i + 1); if ($i == "vs" && u < 0 && f >= 0) u = $(i + 1) }
  # equal as printed (0.1 us): the times differ below the print precision, either verdict holds
  if (f + 0 != u + 0 && (verdict == "FUSED") != (f + 0 < u + 0)) { print "inconsistent: " $0; bad = 1 }
} END { exit bad }' || fail "a grouping's choice disagrees with its recorded times"

# the measured plan computes the same outputs
"$KILN" run "$M" --db "$T/t.db" --random --check > "$T/run.txt" 2>&1 || { cat "$T/run.txt"; fail "kiln run --check with the measured plan"; }

# recorded groupings are not measured again (a grouping that only exists
# because a measurement rejected another one, e.g. Add+Relu left over from a
# rejected Conv+Add+Relu epilogue, is new and may be measured now)
"$KILN" tune "$M" --db "$T/t.db" --families fusion --fusion-close inf > "$T/tune2.txt" 2>&1 || { cat "$T/tune2.txt"; fail "second kiln tune"; }
grep '^fusion ' "$T/tune1.txt" | awk '{print $2, $3, $4, $5}' | sort > "$T/g1.txt"
grep '^fusion ' "$T/tune2.txt" | awk '{print $2, $3, $4, $5}' | sort > "$T/g2.txt"
again=$(comm -12 "$T/g1.txt" "$T/g2.txt" | wc -l)
[ "$again" -eq 0 ] || { cat "$T/tune2.txt"; fail "second tune measured $again recorded groupings again"; }

# --no-fusion plans ignore the records; --fusion-close 0 measures nothing
"$KILN" run "$M" --db "$T/t.db" --random --check --no-fusion > "$T/run2.txt" 2>&1 || { cat "$T/run2.txt"; fail "kiln run --no-fusion"; }
"$KILN" tune "$M" --db "$T/t2.db" --families fusion --fusion-close 0 > "$T/tune3.txt" 2>&1 || { cat "$T/tune3.txt"; fail "kiln tune --fusion-close 0"; }
[ "$(grep -c '^fusion ' "$T/tune3.txt")" -eq 0 ] || fail "--fusion-close 0 measured groupings"
"$KILN" tune "$M" --fusion-close 0.5 > "$T/bad.txt" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "--fusion-close 0.5: exit $rc, expected 2"

# attention: a rewrite of the graph, measured both ways on new copies of it
# (each variant planned on the model read again), whatever the prediction
A=$T/transformer.onnx
"$KILN" tune "$A" --db "$T/a.db" --families fusion > "$T/atune1.txt" 2>&1 || { cat "$T/atune1.txt"; fail "kiln tune (attention)"; }
grep -q '^fusion *attention ' "$T/atune1.txt" || { cat "$T/atune1.txt"; fail "the attention grouping was not measured"; }
# (python3's sqlite3 module: kiln's own commands do not forge records)
sql() { python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); r = c.execute(sys.argv[2]).fetchall(); c.commit(); print(r[0][0] if r else "")' "$@"; }
[ "$(sql "$T/a.db" "select count(*) from records where family='fusion' and shape_key like 'attention:%' and median_ns > 0")" -eq 2 ] ||
  fail "expected the attention grouping's two times in the database"
"$KILN" plan "$A" --db "$T/a.db" --no-measure > "$T/aplan.txt" 2>&1 || { cat "$T/aplan.txt"; fail "kiln plan (attention)"; }
grep -E '^ *(FUSED|REJECTED) +Transpose\+.*Softmax|^ *(FUSED|REJECTED) +Transpose\+' "$T/aplan.txt" | grep -q 'measured .* us fused vs .* us separate' ||
  { cat "$T/aplan.txt"; fail "the attention grouping was not decided by its measurement"; }
"$KILN" run "$A" --db "$T/a.db" --random --check > "$T/arun.txt" 2>&1 || { cat "$T/arun.txt"; fail "kiln run --check with the measured attention"; }
"$KILN" tune "$A" --db "$T/a.db" --families fusion > "$T/atune2.txt" 2>&1 || { cat "$T/atune2.txt"; fail "second kiln tune (attention)"; }
grep -q '^fusion *attention ' "$T/atune2.txt" && { cat "$T/atune2.txt"; fail "second tune measured the recorded attention grouping again"; }
# the plan follows the records both ways: fused made slow on record, the
# separate kernels run (and compute the same outputs)
sql "$T/a.db" "update records set median_ns = 1e9 where family='fusion' and shape_key like 'attention:%' and params='FUSE=1'" > /dev/null || fail "forging a record"
"$KILN" plan "$A" --db "$T/a.db" --no-measure > "$T/aplan2.txt" 2>&1 || { cat "$T/aplan2.txt"; fail "kiln plan (attention rejected)"; }
grep -q '^ *REJECTED .*rejected: measured .* us fused vs' "$T/aplan2.txt" || { cat "$T/aplan2.txt"; fail "a recorded slow attention kernel was not rejected"; }
grep -q ' KilnAttention ' "$T/aplan2.txt" && { cat "$T/aplan2.txt"; fail "the attention kernel is still planned"; }
"$KILN" run "$A" --db "$T/a.db" --random --check > "$T/arun2.txt" 2>&1 || { cat "$T/arun2.txt"; fail "kiln run --check with the attention separate"; }
echo "fusion_tune: passed ($n1 groupings measured, $nm decided by measurement; attention measured both ways)"
