#!/bin/sh
# weight_stream.sh KILN PYTHON: `kiln run --max-memory` below what a plan
# needs streams weights instead of refusing (issue 24):
#   full      no budget: nothing streamed; the reference output, its peak
#   stream    3/5 of the unconstrained peak: weights streamed
#             (streamed_bytes > 0, fewer resident device_bytes), outputs
#             byte-identical to the unconstrained run's, --check passes
#   loose     a budget above the peak: nothing streamed
#   tiny      a budget even streaming cannot meet: exit 2, says why
#             (when one kernel alone needs more than the budget leaves, the
#             peak exceeds it: a warning on stderr says so)
#   first     one run only under 3/4 of the unconstrained peak: its peak (tracked at every
#             upload and node block) within the budget: what a kernel
#             allocates at its first run is not known when the plan is made,
#             so other kernels are made to stream during the run when needed
# The model: convolutions and a MatMul whose weights are 147 KiB to 590 KiB
# (streaming candidates are weights of at least 64 KiB read by one kernel).
# Exit 77 without an OpenCL device or python3-onnx.
set -eu
kiln=$1
py=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -c "import onnx, numpy" 2>/dev/null || { echo "weight_stream: python3-onnx / numpy missing, skipped"; exit 77; }
"$kiln" devices >/dev/null 2>&1 || { echo "weight_stream: no OpenCL device, skipped"; exit 77; }
export HOME="$tmp/home"
mkdir -p "$HOME"
# the descriptors' defaults, not the cost model's choices: what streaming can
# save depends on the plan's largest weights (winop4's transformed ones are 4x
# the model's: one kernel alone then needs more than 3/5 of the peak)
export KILN_NO_PREDICT=1
# and in NCHW: the blocked plan of this model (runtime/layout.c) keeps its
# peak at 3.7 MB (8.6 in NCHW), 2.8 MB of it one kernel's block that
# streaming cannot split, so 3/5 of its peak is out of reach (noted in
# issue 22 for a look: which block that is)
export KILN_BLOCKED=off
"$py" - "$tmp/m.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
r = np.random.default_rng(3)
def w(name, *shape): return nh.from_array((r.standard_normal(shape) * 0.1).astype(np.float32), name)
inits = [w("w1", 32, 16, 3, 3), w("b1", 32), w("w2", 128, 32, 3, 3), w("b2", 128), w("w3", 128, 128, 3, 3), w("b3", 128),
         w("w4", 128, 1000), w("b4", 1000)]
nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
         h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c2"], ["r2"]),
         h.make_node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c3"], ["r3"]),
         h.make_node("GlobalAveragePool", ["r3"], ["p"]), h.make_node("Flatten", ["p"], ["f"]),
         h.make_node("MatMul", ["f", "w4"], ["mm"]), h.make_node("Add", ["mm", "b4"], ["y"])]
g = h.make_graph(nodes, "stream", [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 24, 24])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 1000])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
PY
fail() { echo "FAIL: $*"; exit 1; }
field() { grep -o "\"$1\":[0-9.e+-]*" "$2" | head -n 1 | sed "s/^\"$1\"://"; }
run() { # run NAME [args...]
  n=$1; shift
  "$kiln" run "$tmp/m.onnx" --random --repeat 3 --check --json --output-dir "$tmp/$n" "$@" >"$tmp/$n.json" 2>"$tmp/$n.err" || { cat "$tmp/$n.err"; fail "$n: kiln run failed"; }
  grep -q '"ok":true' "$tmp/$n.json" || { cat "$tmp/$n.json"; fail "$n: output differs from the CPU reference"; }
  echo "$n: device_bytes $(field device_bytes "$tmp/$n.json"), peak $(field peak_device_bytes "$tmp/$n.json"), streamed $(field streamed_bytes "$tmp/$n.json") per run"
}
run full
[ "$(field streamed_bytes "$tmp/full.json")" = 0 ] || fail "full: streamed without a budget"
dev=$(field device_bytes "$tmp/full.json")
peak=$(field peak_device_bytes "$tmp/full.json")
[ "$peak" -ge "$dev" ] || fail "full: peak $peak below device_bytes $dev"
budget=$((peak * 3 / 5))
run stream --max-memory "$budget"
s=$(field streamed_bytes "$tmp/stream.json")
[ "$s" -gt 0 ] || fail "stream: a budget of $budget (unconstrained peak $peak) streamed nothing"
[ "$(field device_bytes "$tmp/stream.json")" -lt "$dev" ] || fail "stream: resident bytes did not shrink"
cmp "$tmp/full/y.npy" "$tmp/stream/y.npy" || fail "stream: output differs from the unconstrained run's"
b1=$((peak * 3 / 4))
"$kiln" run "$tmp/m.onnx" --random --json --max-memory "$b1" >"$tmp/first.json" 2>"$tmp/first.err" || { cat "$tmp/first.err"; fail "first: kiln run failed"; }
p1=$(field peak_device_bytes "$tmp/first.json")
echo "first: one run, peak $p1 for a budget of $b1"
[ "$p1" -le "$b1" ] || fail "first: the first run's peak $p1 exceeds the budget $b1"
! grep -q "exceeded --max-memory" "$tmp/first.err" || fail "first: warned within the budget"
s3=$(field peak_device_bytes "$tmp/stream.json")
if [ "$s3" -gt "$budget" ]; then
  grep -q "exceeded --max-memory" "$tmp/stream.err" || fail "stream: peak $s3 over the budget $budget without a warning"
fi
run loose --max-memory $((peak * 2))
[ "$(field streamed_bytes "$tmp/loose.json")" = 0 ] || fail "loose: streamed under a budget above the peak"
cmp "$tmp/full/y.npy" "$tmp/loose/y.npy" || fail "loose: output differs"
if "$kiln" run "$tmp/m.onnx" --random --max-memory 100000 >"$tmp/tiny.out" 2>"$tmp/tiny.err"; then fail "tiny: a 100 kB budget ran"; else rc=$?; fi
[ "$rc" = 2 ] || { cat "$tmp/tiny.err"; fail "tiny: exit $rc, want 2"; }
grep -q "even with its weights streamed" "$tmp/tiny.err" || { cat "$tmp/tiny.err"; fail "tiny: no reason given"; }
echo "ok: weights streamed under --max-memory $budget ($s bytes per run), same output; loose budget streams nothing; tiny budget refused"
