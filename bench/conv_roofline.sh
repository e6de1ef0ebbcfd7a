#!/bin/sh
# conv_roofline.sh: how close a model's convolutions come to the device's
# arithmetic peak. Effective GFLOP/s = direct-convolution FLOPs (2 x output
# elements x Cin/group x kernel size, whatever algorithm ran) over the summed
# median kernel time of the launches that compute them (`kiln bench
# --profile`; a convolution fused with its epilogue counts with it), against
# the probed peak (`kiln probe`: flops_peak) in the same run. Per launch too,
# slowest first, so the next kernel to work on is at the top.
#
# usage: conv_roofline.sh PATH/TO/kiln MODEL.onnx [--db FILE] [--repeat N]
# Needs python3 with the onnx module (Debian python3-onnx).
set -eu
KILN=${1:?usage: conv_roofline.sh PATH/TO/kiln MODEL.onnx [--db FILE] [--repeat N]}
MODEL=${2:?usage: conv_roofline.sh PATH/TO/kiln MODEL.onnx [--db FILE] [--repeat N]}
shift 2
DB=""
REPEAT=10
while [ $# -gt 0 ]; do
  case $1 in
    --db) DB="--db $2"; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    *) echo "conv_roofline.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
"$PY" -c "import onnx" 2>/dev/null || PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck disable=SC2086
"$KILN" probe --no-db --json >"$T/probe.json"
# shellcheck disable=SC2086
"$KILN" plan "$MODEL" $DB --json >"$T/plan.json"
# shellcheck disable=SC2086
"$KILN" bench "$MODEL" $DB --profile --repeat "$REPEAT" --json >"$T/bench.json"
"$PY" - "$MODEL" "$T" <<'PYEOF'
import json, os, sys
import onnx
from onnx import shape_inference
model_path, T = sys.argv[1], sys.argv[2]
probe = json.load(open(os.path.join(T, "probe.json")))
plan = json.load(open(os.path.join(T, "plan.json")))
bench = json.load(open(os.path.join(T, "bench.json")))
peak = probe["figures"]["flops_peak"]["value"]  # GFLOP/s
m = shape_inference.infer_shapes(onnx.load(model_path))
g = m.graph
shapes = {}
for vi in list(g.value_info) + list(g.output) + list(g.input):
    t = vi.type.tensor_type
    if t.HasField("shape"):
        shapes[vi.name] = [d.dim_value for d in t.shape.dim]
for init in g.initializer:
    shapes[init.name] = list(init.dims)
byname = {n.name: n for n in g.node}
producer = {o: n for n in g.node for o in n.output}

def conv_flops(n):
    w, y = shapes.get(n.input[1]), shapes.get(n.output[0])
    if not w or not y or 0 in w or 0 in y:
        return None
    k = 1
    for d in w[1:]:
        k *= d  # Cin/group x kernel size
    out = 1
    for d in y:
        out *= d
    return 2.0 * out * k

def find_conv(last, count):
    """The Conv among the `count` nodes of the group ending at `last`."""
    todo, seen = [last], 0
    while todo and seen < count:
        n = todo.pop(0)
        seen += 1
        if n.op_type == "Conv":
            return n
        todo += [producer[i] for i in n.input if i in producer]
    return None

times = {x["node"]: x["median_us"] for x in bench["profile"]["nodes"]}
rows, tot_f, tot_t = [], 0.0, 0.0
for l in plan["launches"]:
    if not l["ops"].startswith("Conv") or l["node"] not in byname:
        continue
    c = find_conv(byname[l["node"]], l["nodes"])
    f = conv_flops(c) if c is not None else None
    t = times.get(l["node"])
    if f is None or not t:
        continue
    rows.append((t, f, l, c))
    tot_f += f
    tot_t += t
if not rows:
    print("no convolutions found in the profile"); sys.exit(1)
eff = tot_f / (tot_t * 1e3)
print("%s: %d convolution launches, %.1f GFLOP in %.2f ms: %.1f GFLOP/s effective, %.0f%% of the probed peak %.1f GFLOP/s (%s)" %
      (os.path.basename(model_path), len(rows), tot_f / 1e9, tot_t / 1e3, eff, 100 * eff / peak, peak, bench.get("db") or "no database"))
print("%10s %8s %6s %6s  %-40s %s" % ("us", "GFLOP/s", "%peak", "%time", "conv (weights)", "params"))
for t, f, l, c in sorted(rows, key=lambda r: -r[0]):
    gf = f / (t * 1e3)
    print("%10.1f %8.1f %6.0f %6.1f  %-40s %s" % (t, gf, 100 * gf / peak, 100 * t / tot_t, "%s %s" % (c.name[-24:], "x".join(map(str, shapes.get(c.input[1], [])))), l["params"]))
PYEOF
