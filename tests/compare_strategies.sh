#!/bin/sh
# compare_strategies.sh: `kiln tune --compare-strategies` on the demo
# transformer's GEMMs over subsets of 6 candidates: every compared candidate
# has its second and third looks recorded (flags SECOND = 4, THIRD = 16) with
# its fastest repeat no slower than its median, every instance's contenders
# for best were re-timed together (flag RETIMED = 8), the model's picks are never faster than the
# exhaustive best of the same records (ratios >= 1), instances of different
# shapes share their subsets' settings (the smallest hashes), and a rerun
# reuses the records as they are instead of measuring again. A plain
# `kiln tune` re-times each instance's contenders (flag 8) too, and
# recomputes stored features that an older kiln's definitions wrote. The
# probe taken first has the span figures the cost model's launch part uses.
# usage: compare_strategies.sh KILN_BINARY
set -u
. "$(dirname "$0")/testlib.sh"
kiln_test_start compare "$1"

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
# the probe run first holds the fixed parts of a measured span: an empty
# kernel's duration and what a kernel queued behind it adds (microseconds)
pr = json.loads(c.execute("SELECT probe FROM devices").fetchone()[0])
span, nxt = pr["launch_span"]["value"], pr["launch_next"]["value"]
print("launch_span %.2f us, launch_next %.2f us" % (span, nxt))
assert 0 < span < 1e4 and 0 < nxt < 1e4, "span figures out of range: %g %g" % (span, nxt)
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
# a plain tune re-times each instance's contenders too: every instance with two or
# more candidates has re-timed records (flag 8), the fastest one among them
"$KILN" tune "$MODEL" --db "$T/n.db" --families gemm --strategy exhaustive --max-trials 6 > "$T/n.out" 2>&1 || { cat "$T/n.out"; fail "plain tune failed"; }
$PY - "$T/n.db" <<'EOF2' || fail "plain tune: see above"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("SELECT shape_key, epilogue, params, median_ns, min_ns, flags FROM records WHERE family='gemm' AND status='ok'").fetchall()
by = {}
for r in rows:
    by.setdefault((r[0], r[1]), []).append(r)
n = 0
for k, rs in by.items():
    if len(rs) < 2:
        continue
    re = [r for r in rs if r[5] & 8]
    assert len(re) >= 2, "no contenders re-timed: %s" % (k,)
    for r in re:
        assert 0 < r[4] <= r[3] * (1 + 1e-9), "re-timed record with min %g, median %g" % (r[4], r[3])
    n += 1
assert n >= 2, "expected at least 2 instances with several candidates, got %d" % n
print("plain tune: %d instances with their contenders re-timed" % n)
EOF2

# kiln db show says so: three looks for every compared record, re-timed ones flagged
"$KILN" db show "$T/c.db" --all --json > "$T/show.json" 2> "$T/show.err" || { cat "$T/show.err"; fail "kiln db show"; }
$PY - "$T/show.json" <<'EOF2' || fail "kiln db show: see above"
import json, sys
recs = [r for r in json.load(open(sys.argv[1]))["records"] if r["status"] == "ok" and r["origin"] == "measured"]
assert recs and all(r["looks"] == 3 for r in recs), "a compared record without three looks"
assert any(r["retimed"] for r in recs), "no record shown as re-timed"
EOF2

# features an older kiln stored (fewer figures, other values) are recomputed
# by the next `kiln tune` of the model, though nothing is measured again
$PY - "$T/n.db" <<'EOF2' || fail "could not age the stored features"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
ids = [r[0] for r in c.execute("SELECT id FROM records WHERE family='gemm' AND features IS NOT NULL ORDER BY id LIMIT 3")]
assert len(ids) == 3, "expected stored features"
c.execute("UPDATE records SET features='1,2,3,4,5,6,7' WHERE id IN (%s)" % ",".join(map(str, ids)))
c.commit()
EOF2
"$KILN" tune "$MODEL" --db "$T/n.db" --families gemm --strategy exhaustive --max-trials 6 > "$T/r.out" 2>&1 || { cat "$T/r.out"; fail "tune over aged features failed"; }
grep -q "recomputed the cost-model features of 3 stored records" "$T/r.out" || { cat "$T/r.out"; fail "the aged features were not reported recomputed"; }
$PY - "$T/n.db" <<'EOF2' || fail "aged features: see above"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
lens = {len(r[0].split(",")) for r in c.execute("SELECT features FROM records WHERE family='gemm' AND features IS NOT NULL")}
assert len(lens) == 1 and 7 not in lens, "stored features of mixed layouts after the refresh: %s" % lens
assert not c.execute("SELECT count(*) FROM records WHERE features='1,2,3,4,5,6,7'").fetchone()[0], "an aged record kept its features"
EOF2

# the cost model on a database's records without the device: --db-device
# (a row id) gives what the present device's own evaluation gives
"$KILN" model eval --db "$T/c.db" --json > "$T/e1.json" 2> "$T/e1.err" || { cat "$T/e1.err"; fail "kiln model eval"; }
"$KILN" model eval --db "$T/c.db" --db-device 1 --json > "$T/e2.json" 2> "$T/e2.err" || { cat "$T/e2.err"; fail "kiln model eval --db-device"; }
$PY - "$T/e1.json" "$T/e2.json" <<'EOF2' || fail "model eval --db-device: see above"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["families"] and a["families"] == b["families"] and a["device"] == b["device"], "--db-device evaluated differently: %s vs %s" % (a, b)
EOF2
"$KILN" model export-prior --db "$T/c.db" --db-device 1 > "$T/p.inc" 2> "$T/p.err" || { cat "$T/p.err"; fail "kiln model export-prior --db-device"; }
grep -q "static const prior_family prior_cpu_families" "$T/p.inc" || fail "export-prior --db-device wrote no CPU prior"
"$KILN" model eval --db "$T/c.db" --db-device no-such-device > /dev/null 2> "$T/e3.err"
[ $? -eq 2 ] && grep -q "no device matches 'no-such-device'" "$T/e3.err" || { cat "$T/e3.err"; fail "--db-device of an unknown device: expected exit 2 and a clear message"; }

echo "compare_strategies: 4 passed, 0 failed"
