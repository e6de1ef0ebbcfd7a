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
med() { python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["tuning"]; print(d["latency_ms"]["median"], t["tuned"], t["predicted"], t["untuned"] - t["predicted"])'; }
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
  i=$((i + 1))
done
echo "load after: $(uptime)"
