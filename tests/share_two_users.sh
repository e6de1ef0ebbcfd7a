#!/bin/sh
# share_two_users.sh: tune once, share the file. User A (this account, its
# own HOME) tunes the demo models briefly and exports the database; the file
# is made read-only (mode 0444, owned by A). User B, with a HOME of its own,
# uses it three ways: `--db share.db`, `KILN_DB_PATH=share.db`, and
# `kiln db import share.db` into B's own database. For each way:
#   - for every kernel `kiln plan --json` launches, B's parameters and their
#     origin equal A's (and A's plan has tuned kernels, so "tuned" is checked);
#   - B's second `kiln run` compiles 0 programs;
#   - writing commands on the shared file (`kiln tune --db`, `kiln db import
#     --db`) exit 2 saying why, before doing any work;
# and the shared file's sha256 never changes, nothing is made beside it, and
# the KILN_DB_PATH route creates no database in B's HOME.
#
# B is an unprivileged account (uid/gid 65534 through setpriv) when this runs
# as root, since root ignores file modes. Run as another user, B is this same
# account with another HOME (a 0444 file is read-only to its owner too): all
# checks run, then the test exits 77 (ctest: skipped) saying that the
# two-account part was not exercised.
#
# usage: share_two_users.sh PATH/TO/kiln     (ctest: share_two_users)
set -u
KILN=${1:?usage: share_two_users.sh PATH/TO/kiln}
case $KILN in /*) ;; *) KILN=$(pwd)/$KILN ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-share.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
unset KILN_DB KILN_DB_PATH KILN_CACHE_DIR KILN_NO_PREDICT
chmod 755 "$T"

fail() { echo "FAIL: $*"; exit 1; }

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
  two_accounts=1
  BUID=65534
else
  two_accounts=0
  BUID=$(id -u)
fi
mkdir -p "$T/homeA" "$T/homeB" "$T/share" "$T/m"
chmod 755 "$T/share" "$T/m"
[ "$two_accounts" = 1 ] && chown "$BUID:$BUID" "$T/homeB"

# runs a command as user A / user B, each with its own HOME (and so its own
# ~/.cache/kiln/tuning.db, program cache and POCL cache)
asA() { HOME="$T/homeA" "$@"; }
asB() {
  if [ "$two_accounts" = 1 ]; then setpriv --reuid="$BUID" --regid="$BUID" --clear-groups env HOME="$T/homeB" "$@"
  else HOME="$T/homeB" "$@"; fi
}

# ---- user A: tune the demo models, export --------------------------------
if ! asA "$KILN" demo --dir "$T/m" >"$T/demo.log" 2>&1; then
  if grep -qi "no opencl\|no device" "$T/demo.log"; then echo "SKIP: no OpenCL device"; exit 77; fi
  cat "$T/demo.log"; fail "kiln demo"
fi
chmod 644 "$T"/m/*.onnx
MODELS="cnn transformer"
for m in $MODELS; do
  asA "$KILN" tune "$T/m/$m.onnx" --db "$T/a.db" --max-trials 2 >"$T/tuneA-$m.log" 2>&1 || { cat "$T/tuneA-$m.log"; fail "user A: kiln tune $m"; }
  asA "$KILN" plan --json --no-measure "$T/m/$m.onnx" --db "$T/a.db" >"$T/planA-$m.json" 2>"$T/planA-$m.err" ||
    { cat "$T/planA-$m.err"; fail "user A: kiln plan $m"; }
done
S="$T/share/share.db"
asA "$KILN" db export "$T/a.db" -o "$S" >"$T/export.log" 2>&1 || { cat "$T/export.log"; fail "user A: kiln db export"; }
chmod 0444 "$S"
SUM=$(sha256sum "$S" | cut -d' ' -f1)
echo "user A: tuned $MODELS; a.db $(wc -c <"$T/a.db") bytes, exported share.db $(wc -c <"$S") bytes (mode 0444)"

# compares B's plan (file $2) with A's for model $1: every launch's node,
# parameters and origin; A's plan must have tuned kernels
same_plan() {
  python3 - "$T/planA-$1.json" "$2" "$3" <<'EOF'
import json, sys
a, b = (json.load(open(f))["launches"] for f in sys.argv[1:3])
key = lambda k: (k["node"], k["family"], k["params"], k["origin"])
tuned = [k for k in a if k["origin"] == "tuned"]
if not tuned:
    print("user A's plan has no tuned kernel: nothing to compare"); sys.exit(1)
bad = [(x, y) for x, y in zip(map(key, a), map(key, b)) if x != y]
if len(a) != len(b) or bad:
    for x, y in bad: print("  A:", x, "\n  B:", y)
    print("%s: B's plan differs from A's (%d of %d launches; %d vs %d launches)" % (sys.argv[3], len(bad), len(a), len(a), len(b)))
    sys.exit(1)
print("%s: B's plan = A's plan: %d launches, %d tuned" % (sys.argv[3], len(a), len(tuned)))
EOF
}

compiled() { sed -n 's/^compile: \([0-9]*\) program.*/\1/p' "$1"; }

# kiln as user B by route $1: db (--db share.db), db_path (KILN_DB_PATH), import (B's own database)
kB() {
  route=$1 sub=$2; shift 2
  case $route in
    db) asB "$KILN" "$sub" --db "$S" "$@" ;;
    db_path) asB env KILN_DB_PATH="$S" "$KILN" "$sub" "$@" ;;
    *) asB "$KILN" "$sub" "$@" ;;
  esac
}

# one route ($1)
check_route() {
  name=$1
  for m in $MODELS; do
    kB "$name" plan --json --no-measure "$T/m/$m.onnx" >"$T/planB-$name-$m.json" 2>"$T/planB-$name-$m.err" ||
      { cat "$T/planB-$name-$m.err"; fail "user B ($name): kiln plan $m"; }
    same_plan "$m" "$T/planB-$name-$m.json" "user B ($name), $m" || fail "user B ($name): plan of $m"
    for i in 1 2; do
      kB "$name" run --random "$T/m/$m.onnx" >"$T/runB-$name-$m-$i.log" 2>&1 || { cat "$T/runB-$name-$m-$i.log"; fail "user B ($name): kiln run $m ($i)"; }
    done
    l1=$(sed -n 's/.* \([0-9]*\) kernels launched per run.*/\1/p' "$T/runB-$name-$m-1.log")
    l2=$(sed -n 's/.* \([0-9]*\) kernels launched per run.*/\1/p' "$T/runB-$name-$m-2.log")
    kB "$name" run --random --repeat 3 "$T/m/$m.onnx" >"$T/runB-$name-$m-3.log" 2>&1 || { cat "$T/runB-$name-$m-3.log"; fail "user B ($name): kiln run --repeat 3 $m"; }
    l3=$(sed -n 's/.* \([0-9]*\) kernels launched per run.*/\1/p' "$T/runB-$name-$m-3.log")
    [ -n "$l1" ] && [ "$l1" = "$l2" ] && [ "$l1" = "$l3" ] || fail "user B ($name), $m: kernels launched per run differ between runs: $l1, $l2, $l3 (--repeat 3)"
    # the same count of tuned kernels in run, plan and coverage
    t_run=$(sed -n 's/^tuning: .*: [0-9]* tunable kernels*: \([0-9]*\) tuned.*/\1/p' "$T/runB-$name-$m-1.log")
    t_plan=$(python3 -c 'import json,sys; print(sum(k["origin"] == "tuned" for k in json.load(open(sys.argv[1]))["launches"]))' "$T/planB-$name-$m.json")
    [ -n "$t_run" ] && [ "$t_run" -ge "$t_plan" ] || fail "user B ($name), $m: run says $t_run tuned kernels, plan $t_plan tuned launches"
    n2=$(compiled "$T/runB-$name-$m-2.log")
    [ -n "$n2" ] || { cat "$T/runB-$name-$m-2.log"; fail "no compile line in kiln run's output"; }
    [ "$n2" -eq 0 ] || fail "user B ($name): the second run of $m compiled $n2 programs (want 0)"
    echo "user B ($name), $m: runs compiled $(compiled "$T/runB-$name-$m-1.log") then $n2 programs"
  done
  [ "$(sha256sum "$S" | cut -d' ' -f1)" = "$SUM" ] || fail "user B ($name) changed the shared file's bytes"
}

check_route db
check_route db_path
[ -e "$T/homeB/.cache/kiln/tuning.db" ] && fail "user B (KILN_DB_PATH): a database was created in B's HOME"
asB "$KILN" db import "$S" >"$T/importB.log" 2>&1 || { cat "$T/importB.log"; fail "user B: kiln db import"; }
check_route import

# reading commands work on the read-only file
for c in "db show $S" "db show --all --json $S" "db stats $S" "db list $S" "db verify $S" "db coverage --db $S $T/m/cnn.onnx" \
         "db export $S -o $T/homeB/copy.db" "info $T/m/cnn.onnx" "predict --db $S $T/m/cnn.onnx" "bench --db $S --repeat 2 $T/m/cnn.onnx"; do
  # shellcheck disable=SC2086
  asB "$KILN" $c >"$T/read.log" 2>&1 || { cat "$T/read.log"; fail "user B: kiln $c on the read-only file"; }
done
# db show: min and median columns and the full instance key with its epilogue, the best as in the JSON
asB "$KILN" db show "$S" >"$T/show.txt" 2>&1 && asB "$KILN" db show --json "$S" >"$T/show.json" 2>&1 || fail "kiln db show"
python3 - "$T/show.txt" "$T/show.json" <<'EOF' || fail "kiln db show's text and JSON disagree"
import json, sys
lines = open(sys.argv[1]).read().splitlines()[5:]  # title, a two-line legend, two header lines
recs = json.load(open(sys.argv[2]))["records"]
if not recs or not all(r["best"] for r in recs) or len(lines) != 2 * len(recs):
    print("want one best record per instance, two lines each:", len(recs), len(lines)); sys.exit(1)
for r, (head, row) in zip(recs, zip(lines[0::2], lines[1::2])):
    key = r["shape_key"] + (" + " + r["epilogue"] if r["epilogue"] else "")
    f = row.split()
    if not head.endswith(key) or float(f[0]) != round(r["min_ns"] / 1e3, 1) or float(f[1]) != round(r["median_ns"] / 1e3, 1) or r["params"] not in row:
        print("mismatch:\n ", head, "\n ", row, "\n ", r); sys.exit(1)
print("db show: %d instances, min and median columns and full keys as in the JSON" % len(recs))
EOF

# B re-times A's choices on the read-only file (`db verify --retime` writes nothing): every
# tuned instance is timed against its runner-up, and the JSON says whether the rounds were
# noise-dominated (then the record is not judged on time) beside the verdict
asB "$KILN" db verify "$S" --retime "$T/m/cnn.onnx" --json >"$T/retime.json" 2>"$T/retime.err"
rc=$?
python3 - "$T/retime.json" "$rc" <<'EOF' || { cat "$T/retime.err"; fail "user B: kiln db verify --retime on the read-only file"; }
import json, sys
rt = json.load(open(sys.argv[1]))["retimed"]
assert rt, "nothing re-timed"
for r in rt:
    assert isinstance(r["noisy"], bool) and isinstance(r["passed"], bool), r
    assert r["measured_ns"] > 0 and 0 < r["measured_min_ns"] <= r["measured_ns"], r
    assert not (r["noisy"] and not r["passed"] and r["rival"]), "demoted on noise-dominated rounds: %s" % r
want = 0 if all(r["passed"] for r in rt) else 1
assert int(sys.argv[2]) == want, "exit %s with %d of %d holding" % (sys.argv[2], sum(r["passed"] for r in rt), len(rt))
print("db verify --retime: %d records, %d noisy, %d hold" % (len(rt), sum(r["noisy"] for r in rt), sum(r["passed"] for r in rt)))
EOF

# writing commands on the shared file: exit 2, saying why, before any work
asB "$KILN" tune "$T/m/cnn.onnx" --db "$S" --max-trials 1 >"$T/tuneB.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "not writable" "$T/tuneB.log" || { cat "$T/tuneB.log"; fail "kiln tune --db on the shared file: exit $rc (want 2 and a reason)"; }
grep -q "^\[" "$T/tuneB.log" && fail "kiln tune --db on the shared file started tuning before refusing"
asB "$KILN" db import "$T/a.db" --db "$S" >"$T/importS.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "not writable" "$T/importS.log" || { cat "$T/importS.log"; fail "kiln db import --db on the shared file: exit $rc (want 2)"; }
# tune makes no directory tree for --db
asB "$KILN" tune "$T/m/cnn.onnx" --db "$T/homeB/no/such/dir/t.db" --max-trials 1 >"$T/tuneD.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "no/such/dir" "$T/tuneD.log" || { cat "$T/tuneD.log"; fail "kiln tune --db in a missing directory: exit $rc (want 2 naming it)"; }
[ -e "$T/homeB/no" ] && fail "kiln tune created a directory tree for --db"

[ "$(sha256sum "$S" | cut -d' ' -f1)" = "$SUM" ] || fail "the shared file's bytes changed"
extra=$(ls -A "$T/share" | grep -v '^share.db$')
[ -z "$extra" ] || fail "files appeared beside the shared database: $extra"
echo "ok: shared file unchanged (sha256 $SUM), nothing written beside it"
if [ "$two_accounts" = 0 ]; then
  echo "SKIP: not root (or no setpriv): user B was this same account with another HOME; the read-only (0444) checks passed, the two-account part was not run"
  exit 77
fi
echo "ok: user B (uid $BUID) got user A's plans three ways"
