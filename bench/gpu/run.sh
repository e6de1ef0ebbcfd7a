#!/bin/sh
# bench/gpu/run.sh: kiln against PyTorch CUDA on the same GPU, in one run.
#
# Per model (bench/models/export.py's, random weights, seeded input, batch 1):
# exports it with the PyTorch there, optionally tunes kiln (the fused plan,
# then --no-fusion), then times in alternating rounds PyTorch CUDA (fp32 with
# TF32 off; TF32 on for reference) and `kiln bench` with and without fusion,
# and checks kiln's output against PyTorch's CPU output. Prints one table.
#
# Usage: bench/gpu/run.sh [--kiln PATH] [--db FILE] [--models a,b] [--tune SECONDS]
#                         [--rounds R] [--out DIR]
# Needs: a GPU whose OpenCL driver kiln sees (`kiln devices`), python3 with
# torch (CUDA) and onnx. Defaults: build/kiln, DIR/gpu.db, resnet18,mobilenet_v2,
# no tuning, 3 rounds, DIR=/tmp/kiln-gpu-bench.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kiln="$here/../../build/kiln"
py=${PYTHON:-python3}
out=/tmp/kiln-gpu-bench
db=""
models=resnet18,mobilenet_v2
tune=0
rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --kiln) kiln=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --tune) tune=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) sed -n '10,11p' "$0" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
[ -n "$db" ] || db="$out/gpu.db"
"$kiln" devices | sed -n '1,3p'
med() { "$py" -c 'import json,sys; j=json.load(sys.stdin); print(j["kernels_launched"], round(j["latency_ms"]["median"], 3))'; }
printf '%-16s %9s %9s %9s %9s %8s %8s %8s %10s\n' model torch-fp32 torch-tf32 kiln kiln-nofus launches nofus kiln/fp32 max-rel-err
for m in $(echo "$models" | tr ',' ' '); do
  [ -f "$out/$m.onnx" ] || "$py" "$here/torch_side.py" export "$m" "$out" > "$out/$m.export.log" 2>&1 || { echo "$m: export failed (see $out/$m.export.log)" >&2; exit 1; }
  if [ "$tune" -gt 0 ]; then
    "$kiln" tune "$out/$m.onnx" --db "$db" --budget "$tune" > "$out/$m.tune.log" 2>&1
    "$kiln" tune "$out/$m.onnx" --db "$db" --budget "$tune" --no-fusion > "$out/$m.tune-nofusion.log" 2>&1
  fi
  [ -f "$db" ] || "$kiln" probe --db "$db" > "$out/probe.log" 2>&1
  inn=$("$py" -c "import sys; sys.path.insert(0, '$here/../models'); import export; print(export.spec('$m')[2]['input'])")
  outn=$("$py" -c "import sys; sys.path.insert(0, '$here/../models'); import export; print(export.spec('$m')[2]['output'])")
  rm -rf "$out/$m.kiln"
  "$kiln" run "$out/$m.onnx" --db "$db" --input "$inn=$out/$m.in.npy" --output-dir "$out/$m.kiln" > /dev/null
  err=$("$py" "$here/torch_side.py" cmp "$out/$m.kiln/$outn.npy" "$out/$m.ref.npy" | "$py" -c 'import json,sys; print("%.2e" % json.load(sys.stdin)["max_rel"])')
  : > "$out/$m.rounds"
  r=0
  while [ "$r" -lt "$rounds" ]; do
    t=$("$py" "$here/torch_side.py" time "$m" 50 | "$py" -c 'import json,sys; j=json.load(sys.stdin); print(j["cuda_fp32"]["median"], j["cuda_tf32_benchmark"]["median"])')
    f=$("$kiln" bench "$out/$m.onnx" --db "$db" --repeat 40 --json | med)
    u=$("$kiln" bench "$out/$m.onnx" --db "$db" --repeat 40 --json --no-fusion | med)
    echo "$t $f $u" >> "$out/$m.rounds"
    r=$((r + 1))
  done
  "$py" - "$m" "$err" "$out/$m.rounds" <<'PYEOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[3]) if l.strip()]
col = lambda i: statistics.median(r[i] for r in rows)
tf, tt, fl, fm, ul, um = (col(i) for i in range(6))
print("%-16s %9.3f %9.3f %9.3f %9.3f %8d %8d %8.2f %10s" % (sys.argv[1], tf, tt, fm, um, fl, ul, fm / tf, sys.argv[2]))
PYEOF
done
echo "(ms, medians over $rounds alternating rounds; kiln/fp32 = kiln fused / PyTorch fp32; error vs PyTorch CPU)"
