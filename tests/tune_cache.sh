#!/bin/sh
# tune_cache.sh: `kiln tune` stores in the program cache the programs of the
# candidates it keeps, not of every candidate it measures, and a run on the
# tuned database afterwards compiles nothing.
#
# The demo transformer (`kiln demo --dir`, fresh KILN_CACHE_DIR and
# POCL_CACHE_DIR) is tuned with `--strategy exhaustive --max-trials 4
# --json`; the programs the tune added to the cache (files in
# KILN_CACHE_DIR) must be fewer than the candidates it measured (the
# instances' "trials" summed: each candidate is a program of its own), and
# `kiln run --random --db` with the same caches must print "compile: 0
# programs" (each instance's kept candidate was stored).
#
# usage: tune_cache.sh PATH/TO/kiln      (ctest: tune_cache; exit 77 = no device)
set -u
KILN=${1:?usage: tune_cache.sh PATH/TO/kiln}
case $KILN in /*) ;; *) KILN=$(pwd)/$KILN ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-tcache.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
unset KILN_DB KILN_DB_PATH
export KILN_CACHE_DIR="$T/cache" POCL_CACHE_DIR="$T/pocl"
mkdir -p "$POCL_CACHE_DIR"

fail() { echo "FAIL: $*"; exit 1; }
count() { ls "$KILN_CACHE_DIR" 2>/dev/null | grep -c '\.bin$'; }

if ! "$KILN" demo --dir "$T/m" >"$T/demo.log" 2>&1; then
  if grep -qi "no opencl\|no device" "$T/demo.log"; then echo "SKIP: no OpenCL device"; exit 77; fi
  cat "$T/demo.log"; fail "kiln demo"
fi
M="$T/m/transformer.onnx"
[ -f "$M" ] || fail "kiln demo wrote no $M"
b0=$(count)
"$KILN" tune "$M" --db "$T/db" --strategy exhaustive --max-trials 4 --json >"$T/tune.json" 2>"$T/tune.err" ||
  { cat "$T/tune.err"; fail "kiln tune"; }
b1=$(count)
trials=$(grep -o '"trials":[0-9]*' "$T/tune.json" | awk -F: '{ s += $2 } END { print s + 0 }')
added=$((b1 - b0))
echo "tune: $trials candidates measured, $added programs added to the cache ($b0 before)"
[ "$trials" -ge 8 ] || fail "the tune measured only $trials candidates: nothing to compare"
[ "$added" -lt "$trials" ] || fail "the tune stored $added programs for $trials candidates: every candidate's binary was kept"
"$KILN" run --random --db "$T/db" "$M" >"$T/run.log" 2>&1 || { cat "$T/run.log"; fail "kiln run"; }
grep -E '^(compile|tuning):' "$T/run.log"
n=$(sed -n 's/^compile: \([0-9]*\) program.*/\1/p' "$T/run.log")
[ -n "$n" ] || fail "no compile line in kiln run's output"
[ "$n" -eq 0 ] || fail "the run after the tune compiled $n programs (want 0: the kept candidates' programs are in the cache)"
echo "ok: $added programs stored for $trials candidates; the run after compiled 0"
