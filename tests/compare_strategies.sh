#!/bin/sh
# compare_strategies.sh: `kiln tune --compare-strategies` on the demo
# transformer's GEMMs over subsets of 6 candidates: every compared candidate
# has its second look recorded (flag SECOND = 4) with its fastest repeat no
# slower than its median (finalists re-timed together aside, flag 8), the model's picks are never faster than the
# exhaustive best of the same records (ratios >= 1), instances of different
# shapes share their subsets' settings (the smallest hashes), and a rerun
# reuses the records instead of measuring again.
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
    # a finalist's median comes from re-timing it with the other finalists
    # (flag RETIMED = 8), its fastest repeat from the sweep: no order between them
    assert (fl & 8) or mn <= med * (1 + 1e-9), "fastest repeat %g above the median %g: %s %s" % (mn, med, sk, p)
    assert fl & 4, "no second look: %s %s" % (sk, p)
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
N1=$($PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*), sum(samples) FROM records').fetchone()[0])" "$T/c.db")
"$KILN" tune "$MODEL" --db "$T/c.db" $CMP --json > "$T/c2.json" 2> "$T/c2.err" || { cat "$T/c2.err"; fail "rerun failed"; }
N2=$($PY -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*), sum(samples) FROM records').fetchone()[0])" "$T/c.db")
[ "$N1" = "$N2" ] || fail "rerun changed the number of records: $N1 -> $N2"
$PY -c "
import json,sys
a = {r['shape_key']: r for r in json.load(open(sys.argv[1]))['instances']}
b = {r['shape_key']: r for r in json.load(open(sys.argv[2]))['instances']}
assert a.keys() == b.keys()
for k in a:
    assert a[k]['compared'] == b[k]['compared'], k
" "$T/c1.json" "$T/c2.json" || fail "rerun compared other subsets"
echo "compare_strategies: 1 passed, 0 failed"
