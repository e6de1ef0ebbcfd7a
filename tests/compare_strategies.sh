#!/bin/sh
# compare_strategies.sh: `kiln tune --compare-strategies` on the demo
# transformer's GEMMs over subsets of 6 candidates: every compared candidate
# has its second and third looks recorded (flags SECOND = 4, THIRD = 16) with
# its fastest repeat no slower than its median, every instance's contenders
# for best were re-timed together (flag RETIMED = 8), the model's picks are never faster than the
# exhaustive best of the same records (ratios >= 1), instances of different
# shapes share their subsets' settings (the smallest hashes), and a rerun
# reuses the records as they are instead of measuring again.
# usage: compare_strategies.sh KILN_BINARY
set -u
KILN=$1
PY=/usr/bin/python3
T=$(mktemp -d /tmp/kiln_compare.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$KILN" demo --dir "$T/models" >/dev/null 2>&1 || fail "kiln demo could not write the models"
MODEL=$T/models/transformer.onnx
CMP="--compare-strategies --families gemm --max-trials 6"
"$KILN" tune "$MODEL" --db "$T/c.db" $CMP --json > "$T/c1.json" 2> "$T/c1.err" || { cat "$T/c1.err"; fail "compare run failed"; }

$PY - "$T/c1.json" "$T/c.db" <<'EOF' || fail "first run: see above"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
inst = [r for r in d["instances"] if r["covered"]]
assert len(inst) >= 2, "expected at least 2 covered GEMM instances, got %d" % len(inst)
for r in inst:
    assert r["compared"] <= 6, r
    assert r["cold_ratio"] >= 1 - 1e-9 and r["warm_ratio"] >= 1 - 1e-9, "a pick faster than the exhaustive best of the same records: %s" % r
c = sqlite3.connect(sys.argv[2])
rows = c.execute("SELECT shape_key, params, median_ns, min_ns, flags FROM records WHERE status='ok' AND origin='measured'").fetchall()
assert rows, "no records"
for sk, p, med, mn, fl in rows:
    assert mn is not None and mn > 0, "no fastest repeat recorded: %s %s" % (sk, p)
    assert mn <= med * (1 + 1e-9), "fastest repeat %g above the median %g: %s %s" % (mn, med, sk, p)
    assert fl & 4 and fl & 16, "no second or third look (flags %d): %s %s" % (fl, sk, p)
for sk in set(r[0] for r in rows):
    assert any(r[4] & 8 for r in rows if r[0] == sk), "no contender re-timed: %s" % sk
# the same settings across instances: compare the subsets of two different shapes
by = {}
for sk, p, *_ in rows:
    by.setdefault(sk, set()).add(p)
keys = sorted(by)
shared = max(len(by[a] & by[b]) for i, a in enumerate(keys) for b in keys[i + 1:]) if len(keys) > 1 else 0
print("instances %d, records %d, most settings shared by two subsets: %d of 6" % (len(keys), len(rows), shared))
assert len(keys) < 2 or shared >= 2, "subsets of different instances share no settings beyond the default"
print("mean cold %.3f warm %.3f" % (d["mean_cold_ratio"], d["mean_warm_ratio"]))
EOF

# a rerun reuses every record: no candidate is measured again
Q='SELECT params, shape_key, median_ns, min_ns, flags, samples FROM records ORDER BY 1, 2'
N1=$($PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall())" "$T/c.db" "$Q")
"$KILN" tune "$MODEL" --db "$T/c.db" $CMP --json > "$T/c2.json" 2> "$T/c2.err" || { cat "$T/c2.err"; fail "rerun failed"; }
N2=$($PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall())" "$T/c.db" "$Q")
[ "$N1" = "$N2" ] || fail "the rerun changed records"
$PY -c "
import json,sys
a = {r['shape_key']: r for r in json.load(open(sys.argv[1]))['instances']}
b = {r['shape_key']: r for r in json.load(open(sys.argv[2]))['instances']}
assert a.keys() == b.keys()
for k in a:
    assert a[k]['compared'] == b[k]['compared'], k
" "$T/c1.json" "$T/c2.json" || fail "rerun compared other subsets"
echo "compare_strategies: 1 passed, 0 failed"
