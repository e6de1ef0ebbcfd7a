#!/bin/sh
# run_control.sh: exports the control-flow models (export_control.py: Loop,
# If, NonMaxSuppression) and compares kiln with ONNX Runtime on each
# (compare.mjs, tolerance 1e-4, integer outputs exactly). if_gate runs with
# two input seeds, one taking each branch. Usage: run_control.sh --kiln PATH [--out DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kiln=./build/kiln
out=${TMPDIR:-/tmp}/kiln-control-models
while [ $# -gt 0 ]; do
  case $1 in
    --kiln) kiln=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: run_control.sh [--kiln PATH] [--out DIR]" >&2; exit 2 ;;
  esac
done
sh "$here/setup.sh" >/dev/null
/usr/bin/python3 "$here/export_control.py" --out "$out" >/dev/null 2>&1 || /usr/bin/python3 "$here/export_control.py" --out "$out"
fail=0
for spec in gru_greedy:1 if_gate:1 if_gate:2 detect_nms:1 detect_nms:2; do
  m=${spec%%:*}
  seed=${spec##*:}
  echo "== $m (input seed $seed)"
  node "$here/compare.mjs" "$out/$m.onnx" --kiln "$kiln" --tol 1e-4 --seed "$seed" --repeat 3 --rounds 1 || fail=1
done
exit $fail
