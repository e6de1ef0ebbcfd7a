#!/bin/sh
# db_faults.sh: shared tuning databases. Runs the API tests (db_faults, which
# leaves its fixtures in a directory), then `kiln db ...` through the CLI:
# a truncated file, a zero-byte file, random bytes, a newer schema and another
# application's SQLite file each give one clear error line and exit code 2 and
# keep their bytes (stats, import, merge, verify, export); older schemas read
# in memory (stats) and migrate in place after a backup (prune); merge by
# evidence with flagged disagreements; export/import round trip; verify finds
# inconsistent records (exit 1); coverage of the forged verify.db when an
# OpenCL device is present.
# usage: db_faults.sh KILN_BINARY DB_FAULTS_BINARY
set -u
KILN=$1
API=$2
PY=/usr/bin/python3
T=$(mktemp -d /tmp/kiln_db_faults.XXXXXX)
trap 'rm -rf "$T"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

"$API" "$T/fx" || fail "API tests (db_faults) failed"
FX=$T/fx

if ! "$KILN" db list "$FX/c.db" >/dev/null 2>&1; then
  echo "FAIL: this kiln has no working 'db' command (cli/cmd_db.c not wired into cli/kiln.c?)"
  exit 1
fi

sql() { # db statement...
  $PY - "$@" <<'PYEOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for s in sys.argv[2:]:
    r = c.execute(s).fetchall()
    if r: print(r[0][0])
c.commit()
PYEOF
}

# ---- refused files: exit 2, one "kiln: error:" line naming the file, bytes unchanged
mkdir -p "$T/bad"
: > "$T/bad/zero.db"
head -c 6000 "$FX/c.db" > "$T/bad/truncated.db"
$PY -c "import random; random.seed(3); open('$T/bad/random.db','wb').write(bytes(random.randrange(256) for _ in range(8192)))"
cp "$FX/c.db" "$T/bad/newer.db"; sql "$T/bad/newer.db" "PRAGMA user_version=99"
sql "$T/bad/other.db" "CREATE TABLE notes(x TEXT)" "INSERT INTO notes VALUES('hello')"
expect_refused() { # what file word cmd...
  ewhat=$1 f=$2 eword=$3
  shift 3
  cp "$f" "$T/before"
  "$@" > "$T/out" 2> "$T/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "$ewhat: '$*' exited $rc, expected 2"
  [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q "^kiln: error: .*$(basename "$f")" "$T/err" || fail "$ewhat: expected one error line naming the file, got: $(cat "$T/err")"
  grep -qi "$eword" "$T/err" || fail "$ewhat: the message does not say '$eword': $(cat "$T/err")"
  cmp -s "$f" "$T/before" || fail "$ewhat: '$*' changed the file"
}
for case in "zero-byte:zero.db:empty" "truncated:truncated.db:truncated" "random bytes:random.db:not an SQLite" "newer schema:newer.db:newer" \
            "another application's file:other.db:another application"; do
  what=${case%%:*}; rest=${case#*:}; file=$T/bad/${rest%%:*}; word=${rest#*:}
  expect_refused "$what" "$file" "$word" "$KILN" db stats "$file"
  expect_refused "$what (import)" "$file" "$word" "$KILN" db import "$file" --db "$T/user_import.db"
  expect_refused "$what (merge)" "$file" "$word" "$KILN" db merge "$FX/a.db" "$file" -o "$T/never.db"
  [ ! -e "$T/never.db" ] || fail "$what: merge left an output file"
  expect_refused "$what (verify)" "$file" "$word" "$KILN" db verify "$file"
  expect_refused "$what (prune)" "$file" "$word" "$KILN" db prune "$file"
  echo "refused: $what (exit 2, file unchanged)"
done
"$KILN" db stats "$T/missing.db" 2> "$T/err"; [ $? -eq 2 ] || fail "a missing file should exit 2"
"$KILN" db frobnicate 2> "$T/err"; [ $? -eq 2 ] || fail "an unknown subcommand should exit 2"
"$KILN" db merge "$FX/a.db" 2> "$T/err"; [ $? -eq 2 ] || fail "merge with one file should exit 2"

# ---- older schemas: read in memory without touching the file; migrated in place (with a backup) by a write
for v in 1 2; do
  f=$FX/cli_v$v.db
  cp "$f" "$T/before"
  "$KILN" db stats "$f" --json > "$T/out" || fail "v$v: stats failed"
  $PY -c "import json,sys; d=json.load(open('$T/out')); sys.exit(0 if d['schema_on_disk']==$v and d['records']==1 else 1)" || fail "v$v: stats: $(cat "$T/out")"
  cmp -s "$f" "$T/before" || fail "v$v: stats changed the file"
  "$KILN" db prune "$f" >/dev/null || fail "v$v: prune failed"
  [ "$(sql "$f" "PRAGMA user_version")" = 4 ] || fail "v$v: not migrated to v4"
  [ -f "$f.bak-v$v" ] || fail "v$v: no backup before migrating"
  [ "$(sql "$f" "SELECT count(*) FROM records")" = 1 ] || fail "v$v: records lost in migration"
  echo "schema v$v: read in memory untouched; migrated in place after a backup"
done

# ---- merge by evidence through the CLI
"$KILN" db merge "$FX/a.db" "$FX/b.db" "$FX/p.db" -o "$T/m.db" --json > "$T/out" || fail "merge failed"
$PY - "$T/out" <<'PYEOF' || fail "merge statistics: $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["replaced"] == 1 and d["disagree"] == 2 and d["priors"] == 2 and d["binaries"] == 1 else 1)
PYEOF
"$KILN" db show "$T/m.db" --all --json > "$T/out" || fail "show failed"
$PY - "$T/out" <<'PYEOF' || fail "show --all: disagreements not flagged"
import json, sys
r = json.load(open(sys.argv[1]))["records"]
flagged = sorted(x["params"] for x in r if x["disagree"])
sys.exit(0 if flagged == ["TM=2", "TM=2", "TM=3", "TM=3"] else 1)
PYEOF
"$KILN" db merge "$FX/a.db" "$FX/b.db" -o "$T/m.db" 2> "$T/err"; [ $? -eq 2 ] || fail "merge over an existing file should exit 2"
"$KILN" db verify "$T/m.db" > "$T/out" || fail "verify of a merged file failed: $(cat "$T/out")"
"$KILN" db list "$T/m.db" > /dev/null || fail "list failed"
"$KILN" db show "$T/m.db" > /dev/null || fail "show failed"
echo "merge: better evidence kept, disagreements flagged, priors kept; verify ok"

# ---- stale records: measured on other kernel sources than the ones lookups
# read now (a kernel directory, KILN_KERNEL_DIR, with its own gemm.cl here).
# db show marks them stale and never best or chosen, in text and JSON, and
# marks best the record a lookup picks among the current source's records
cp "$FX/c.db" "$T/stale.db"
mkdir -p "$T/kd"
printf '// a gemm.cl of its own: the current source of the gemm family here\n' > "$T/kd/gemm.cl"
H=$($PY -c 'import sys
h = 1469598103934665603
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 1099511628211) % (1 << 64)
print("%016x" % h)' "$T/kd/gemm.cl")
# the slow TM=1 (105 ns) is of the current source; the faster TM=3, flagged chosen, is not
sql "$T/stale.db" "UPDATE records SET source_hash='$H' WHERE params='TM=1' AND source_hash='h1'" \
  "UPDATE records SET flags=flags|32 WHERE params='TM=3' AND status='ok'"
for kd in "$T/kd" ""; do
  KILN_KERNEL_DIR=$kd "$KILN" db show "$T/stale.db" --all --json > "$T/out" || fail "show of stale records failed"
  KILN_KERNEL_DIR=$kd "$KILN" db show "$T/stale.db" --all > "$T/show.txt" || fail "show of stale records failed"
  $PY - "$T/out" "$T/show.txt" "$H" "$kd" <<'PYEOF' || fail "db show (KILN_KERNEL_DIR='$kd'): stale records: $(cat "$T/out"; cat "$T/show.txt")"
import json, sys
recs = json.load(open(sys.argv[1]))["records"]
rows = [l for l in open(sys.argv[2]).read().splitlines() if l.startswith("      ") and " n=" in l]
h, kd = sys.argv[3], sys.argv[4]
bad = []
for r in recs:
    stale = not kd or r["source_hash"] != h
    if r["stale"] != stale: bad.append("stale flag of " + r["params"] + " " + r["source_hash"])
    if stale and (r["best"] or r["chosen"]): bad.append("stale record marked best or chosen: " + r["params"])
best = [r["params"] + " " + r["source_hash"] for r in recs if r["best"]]
want = ["TM=1 " + h] if kd else []
if best != want: bad.append("best %s, want %s" % (best, want))
for l in rows:
    flags = l.split("[")[-1] if "[" in l else ""
    if "stale" in flags and ("best" in flags or "chosen" in flags): bad.append("text row: " + l)
if len(rows) != len(recs) or sum("best" in l for l in rows) != len(want): bad.append("text rows disagree with the JSON")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
done
echo "stale records: marked stale, never best or chosen; the best among the current source's records"

# ---- export / import round trip
"$KILN" db export "$FX/rt_user.db" --device "rtx 3060" -o "$T/e.db" --json > "$T/out" || fail "export failed"
"$KILN" db import "$T/e.db" --db "$T/u.db" --json > "$T/out" || fail "import failed"
grep -q '"records_added":5' "$T/out" || fail "import: $(cat "$T/out")"
"$KILN" db import "$T/e.db" --db "$T/u.db" --json > "$T/out" || fail "second import failed"
grep -q '"records_added":0,"replaced":0,"kept":0,"duplicate":5' "$T/out" || fail "second import should change nothing: $(cat "$T/out")"
[ "$(sql "$T/u.db" "SELECT count(*) FROM records WHERE origin='imported' AND source_db='e.db'")" = 5 ] || fail "imported records not marked"
"$KILN" db export "$T/u.db" -o "$T/e2.db" > /dev/null || fail "re-export failed"
[ "$(sql "$T/e2.db" "SELECT count(*) FROM records")" = 5 ] || fail "round trip lost records"
"$KILN" db export "$FX/rt_user.db" --device "no such gpu" -o "$T/e3.db" 2> "$T/err"; [ $? -eq 2 ] || fail "export of an unknown device should exit 2"
echo "export/import: round trip keeps every record; re-import changes nothing"

# ---- verify finds inconsistent records (exit 1) and leaves the file alone
cp "$T/m.db" "$T/inc.db"
sql "$T/inc.db" "UPDATE records SET median_ns=-5 WHERE params='TM=1'" "PRAGMA journal_mode=DELETE" > /dev/null
cp "$T/inc.db" "$T/before"
"$KILN" db verify "$T/inc.db" > "$T/out" 2> "$T/err"; rc=$?
[ $rc -eq 1 ] || fail "verify of an inconsistent file exited $rc, expected 1"
cmp -s "$T/inc.db" "$T/before" || fail "verify changed the file"
echo "verify: inconsistent records reported (exit 1), file unchanged"

# ---- prune drops demoted records
"$KILN" db prune "$FX/user.db" --json > "$T/out" || fail "prune failed"
grep -q '"records":1' "$T/out" || fail "prune should drop the demoted record: $(cat "$T/out")"

# ---- coverage with a device (the forged verify.db of the API test)
if [ -f "$FX/verify.db" ]; then
  "$KILN" db coverage "$FX/cnn.onnx" --db "$FX/verify.db" --json > "$T/out" || fail "coverage failed"
  $PY - "$T/out" <<'PYEOF' || fail "coverage: $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
k = d["kernels"]
# instances 0 and 1: verified imported records (instance 0's slower forged best
# was weighed against its runner-up; what holds is verified, nothing left to re-time)
sys.exit(0 if d["instances"] >= 2 and all(x["found"] and x["origin"] == "imported" and not x["needs_verify"] for x in k[:2]) else 1)
PYEOF
  echo "coverage: the verified instances are imported, nothing left to verify"
fi

if [ "$FAILS" -gt 0 ]; then echo "db_faults: $FAILS failures"; exit 1; fi
echo "db_faults: all passed"
