#!/bin/sh
# predicted_vs_tuned.sh: `kiln run` with an empty tuning database (parameters
# picked by the cost model: the built-in prior, costmodel/prior_cpu.inc, as
# nothing of this device is known) against the same model run with a tuned
# database, alternating in one run so both see the same machine load. Also
# with descriptor defaults (KILN_NO_PREDICT=1) for reference.
# usage: bench/predicted_vs_tuned.sh KILN TUNED_DB [MODEL] [ROUNDS] [REPEAT]
set -eu
KILN=$1
TUNED=$2
MODEL=${3:-$(dirname "$0")/models/out/resnet18.onnx}
ROUNDS=${4:-3}
REPEAT=${5:-15}
T=$(mktemp -d /tmp/kiln_pvt.XXXXXX)
trap 'rm -rf "$T"' EXIT
# an empty database: the device row, no probe, no records
"$KILN" tune --strategy exhaustive --families none --db "$T/empty.db" "$MODEL" >/dev/null
med() { python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["tuning"]; print(d["latency_ms"]["median"], t["tuned"], t["predicted"], t["default"])'; }
echo "load before: $(uptime)"
echo "round  tuned-ms (tuned/pred/dflt)  predicted-ms (tuned/pred/dflt)  defaults-ms  predicted/tuned  defaults/tuned"
i=0
while [ $i -lt "$ROUNDS" ]; do
  set -- $("$KILN" run --random --repeat "$REPEAT" --json --db "$TUNED" "$MODEL" | med)
  tt=$1 ta="$2/$3/$4"
  set -- $("$KILN" run --random --repeat "$REPEAT" --json --db "$T/empty.db" "$MODEL" | med)
  pt=$1 pa="$2/$3/$4"
  set -- $(KILN_NO_PREDICT=1 "$KILN" run --random --repeat "$REPEAT" --json --db "$T/empty.db" "$MODEL" | med)
  dt=$1
  python3 -c "print('%5d  %9.2f (%s)  %12.2f (%s)  %11.2f  %15.2fx  %14.2fx' % ($i + 1, $tt, '$ta', $pt, '$pa', $dt, $pt / $tt, $dt / $tt))"
  echo "$tt $pt $dt" >> "$T/rounds"
  i=$((i + 1))
done
python3 - "$T/rounds" <<'PY'
import sys, statistics as st
r = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
t, p, d = (st.median(x) for x in zip(*r))
print("median over %d rounds: tuned %.2f ms, predicted %.2f ms (%.2fx), defaults %.2f ms (%.2fx); median of per-round ratios: predicted %.2fx, defaults %.2fx"
      % (len(r), t, p, p / t, d, d / t, st.median(b / a for a, b, c in r), st.median(c / a for a, b, c in r)))
PY
echo "load after: $(uptime)"
