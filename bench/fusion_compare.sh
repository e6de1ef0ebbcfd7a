#!/bin/sh
# fusion_compare.sh: kiln with its fusion plan against --no-fusion, same
# database, alternating rounds (issue 5's acceptance: launches per
# inference, latency ratio of the tuned plan to the tuned unfused plan).
# Tune both plans first: `kiln tune M --db F` and `kiln tune M --db F --no-fusion`.
#
# Usage: bench/fusion_compare.sh --db F [--rounds R] [--repeat N] [--kiln PATH] MODEL.onnx...
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kiln="$here/../build/kiln"
db=""
rounds=5
repeat=10
while [ $# -gt 0 ]; do
  case "$1" in
    --db) db=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --kiln) kiln=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ -n "$db" ] && [ $# -gt 0 ] || { sed -n '8p' "$0" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg); db $db; $rounds rounds x $repeat runs, alternating"
printf '%-22s %9s %9s %8s %12s %12s %8s  %s\n' model launches nofusion fewer "fused ms" "nofusion ms" ratio "per-round ratios"
for m in "$@"; do
  name=$(basename "$m" .onnx)
  r=0
  : > "$T/$name.txt"
  while [ "$r" -lt "$rounds" ]; do
    "$kiln" bench "$m" --db "$db" --repeat "$repeat" --json > "$T/f.json"
    "$kiln" bench "$m" --db "$db" --repeat "$repeat" --json --no-fusion > "$T/u.json"
    /usr/bin/python3 -c '
import json, sys
f = json.load(open(sys.argv[1])); u = json.load(open(sys.argv[2]))
print(f["kernels_launched"], u["kernels_launched"], f["latency_ms"]["median"], u["latency_ms"]["median"])' "$T/f.json" "$T/u.json" >> "$T/$name.txt"
    r=$((r + 1))
  done
  /usr/bin/python3 -c '
import sys, statistics as st
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
lf, lu = rows[0][0], rows[0][1]
ratios = [r[2] / r[3] for r in rows]
print("%-22s %9d %9d %7.1f%% %12.2f %12.2f %8.3f  %s" % (sys.argv[2], lf, lu, 100 * (1 - lf / lu), st.median(r[2] for r in rows),
      st.median(r[3] for r in rows), st.median(ratios), " ".join("%.3f" % x for x in ratios)))' "$T/$name.txt" "$name"
done
