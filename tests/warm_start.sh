#!/bin/sh
# warm_start.sh: a second `kiln run --db` of a model compiles no program and
# starts at least 5x faster than the first, cold one.
#
# The demo transformer (`kiln demo --dir`) is tuned briefly into a fresh
# database (`--strategy exhaustive --max-trials 1`: the defaults measured and
# recorded, with the caches the demo filled), the database's compiled
# binaries are pruned (`kiln db prune --binaries`), then
# `kiln run --random --db` runs twice with the same fresh KILN_CACHE_DIR and
# POCL_CACHE_DIR (POCL keeps its own cache; both empty before the first run,
# so the first run compiles every program). Checked from `kiln run`'s lines
# "compile: N programs in X ms" and "latency: X ms (one run, including
# planning and kernel compilation)": run 1 compiles at least one program,
# run 2 compiles 0 and its first-run latency is at most 1/5 of run 1's.
#
# usage: warm_start.sh PATH/TO/kiln      (ctest: warm_start; exit 77 = no device)
set -u
KILN=${1:?usage: warm_start.sh PATH/TO/kiln}
case $KILN in /*) ;; *) KILN=$(pwd)/$KILN ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-warm.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
unset KILN_DB KILN_DB_PATH

fail() { echo "FAIL: $*"; exit 1; }

# models and the tuning records, with caches of their own
if ! KILN_CACHE_DIR="$T/c0" POCL_CACHE_DIR="$T/p0" "$KILN" demo --dir "$T/m" >"$T/demo.log" 2>&1; then
  if grep -qi "no opencl\|no device" "$T/demo.log"; then echo "SKIP: no OpenCL device"; exit 77; fi
  cat "$T/demo.log"; fail "kiln demo"
fi
M="$T/m/transformer.onnx"
[ -f "$M" ] || fail "kiln demo wrote no $M"
KILN_CACHE_DIR="$T/c0" POCL_CACHE_DIR="$T/p0" "$KILN" tune "$M" --db "$T/db" --strategy exhaustive --max-trials 1 >"$T/tune.log" 2>&1 ||
  { cat "$T/tune.log"; fail "kiln tune"; }
"$KILN" db prune "$T/db" --binaries >"$T/prune.log" 2>&1 || { cat "$T/prune.log"; fail "kiln db prune --binaries"; }

export KILN_CACHE_DIR="$T/cache" POCL_CACHE_DIR="$T/pocl"
mkdir -p "$POCL_CACHE_DIR"
for i in 1 2; do
  s=$(date +%s%N)
  "$KILN" run --random --db "$T/db" "$M" >"$T/run$i.log" 2>&1 || { cat "$T/run$i.log"; fail "kiln run $i"; }
  e=$(date +%s%N)
  echo "run $i: wall $(( (e - s) / 1000000 )) ms"
  grep -E '^(latency|compile|tuning):' "$T/run$i.log"
done

n1=$(sed -n 's/^compile: \([0-9]*\) program.*/\1/p' "$T/run1.log")
n2=$(sed -n 's/^compile: \([0-9]*\) program.*/\1/p' "$T/run2.log")
l1=$(sed -n 's/^latency: \([0-9.]*\) ms.*/\1/p' "$T/run1.log")
l2=$(sed -n 's/^latency: \([0-9.]*\) ms.*/\1/p' "$T/run2.log")
[ -n "$n1" ] && [ -n "$n2" ] && [ -n "$l1" ] && [ -n "$l2" ] || fail "no compile/latency lines in kiln run's output"
[ "$n1" -ge 1 ] || fail "the first run compiled $n1 programs: it was not cold"
[ "$n2" -eq 0 ] || fail "the second run compiled $n2 programs (want 0)"
awk -v a="$l1" -v b="$l2" 'BEGIN { r = b > 0 ? a / b : 1e9; printf "first-run latency: cold %.1f ms, warm %.1f ms: %.1fx\n", a, b, r; exit !(r >= 5) }' ||
  fail "the warm start is less than 5x faster than the cold one"
echo "ok: warm run compiled 0 programs (cold: $n1)"
