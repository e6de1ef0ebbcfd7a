#!/bin/sh
# precision.sh: kiln's fp16-storage plans (--precision fp16) against its fp32
# plans per model, in one run on this device (issue 24): median latency of
# each, their ratio (median of the per-round ratios), and device_bytes of
# each plan with their ratio. The two plans alternate within every round and
# the order flips each round (fp32 first in even rounds), each a
# `kiln bench M --precision P --repeat N --json` call whose warm-up runs plan
# the model and compile its kernels (the program cache makes later rounds'
# planning cheap). The load average is printed before and after: timings
# taken while other work runs are noisy, the same-round ratio less so.
#
# Usage: bench/precision.sh [--rounds R] [--repeat N] [--warmup W] [--db F] [--kiln PATH] MODEL.onnx...
#        (default: /work/models/*.onnx when no model is given)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kiln="$here/../build/kiln"
rounds=3
repeat=5
warmup=1
db=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --kiln) kiln=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; sed -n '12,13p' "$0" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- /work/models/*.onnx
[ -x "$kiln" ] || { echo "no kiln at $kiln (build first)" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
dbarg=""
[ -n "$db" ] && dbarg="--db $db"
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds x $repeat runs (after $warmup warm-up), fp32 and fp16 alternating"
printf '%-20s %10s %10s %8s %12s %12s %7s  %s\n' model "fp32 ms" "fp16 ms" "16/32" "fp32 bytes" "fp16 bytes" "16/32" "per-round latency ratios"
status=0
for m in "$@"; do
  name=$(basename "$m" .onnx)
  : > "$T/$name.txt"
  r=0
  ok=1
  while [ "$r" -lt "$rounds" ] && [ $ok -eq 1 ]; do
    if [ $((r % 2)) -eq 0 ]; then order="fp32 fp16"; else order="fp16 fp32"; fi
    for p in $order; do
      # shellcheck disable=SC2086
      if ! "$kiln" bench "$m" $dbarg --precision "$p" --repeat "$repeat" --warmup "$warmup" --json > "$T/$p.json" 2> "$T/$p.err"; then
        echo "$name: kiln bench --precision $p failed: $(tail -n 3 "$T/$p.err")" >&2
        ok=0
        status=1
        break
      fi
    done
    [ $ok -eq 1 ] && /usr/bin/python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a["precision"] == "fp32" and b["precision"] == "fp16", (a["precision"], b["precision"])
print(a["latency_ms"]["median"], b["latency_ms"]["median"], a["device_bytes"], b["device_bytes"])' "$T/fp32.json" "$T/fp16.json" >> "$T/$name.txt"
    r=$((r + 1))
  done
  [ -s "$T/$name.txt" ] || continue
  /usr/bin/python3 -c '
import sys, statistics as st
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
ratios = [r[1] / r[0] for r in rows]
b32, b16 = rows[-1][2], rows[-1][3]
print("%-20s %10.2f %10.2f %8.3f %12d %12d %7.3f  %s" % (sys.argv[2], st.median(r[0] for r in rows), st.median(r[1] for r in rows), st.median(ratios),
      b32, b16, b16 / b32, " ".join("%.3f" % x for x in ratios)))' "$T/$name.txt" "$name"
done
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
