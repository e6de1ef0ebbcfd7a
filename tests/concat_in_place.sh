#!/bin/sh
# concat_in_place.sh KILN PYTHON: Concats whose inputs lie end to end in the
# output are planned in place (the producers write into sub-buffers of the
# Concat's output; the Concat launches nothing), and every case matches the
# CPU reference (--check):
#   flat      channel Concat of three convolution outputs (in place: the run
#             launches exactly the three convolutions' kernels less nothing
#             for the Concat, compared with the same model's copy variant)
#   nested    Concat of a Concat (a slice of a slice: sub-buffer of the
#             outermost buffer at the summed offset)
#   reread    an input read again after the Concat (stays a copy)
#   output    the Concat's output is a graph output, one input a graph input
#   axis2     Concat along H with C > 1 (inputs interleave: stays a copy)
#   odd       offsets off the device's sub-buffer alignment (stays a copy)
# Launch counts come from `kiln run --json` (kernels_launched): the in-place
# model launches as many kernels as its copy twin minus the Concat's copies.
# Exit 77 without an OpenCL device or python3-onnx.
set -eu
kiln=$1
py=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -c "import onnx, numpy" 2>/dev/null || { echo "concat_in_place: python3-onnx / numpy missing, skipped"; exit 77; }
"$kiln" devices >/dev/null 2>&1 || { echo "concat_in_place: no OpenCL device, skipped"; exit 77; }
export HOME="$tmp/home"
mkdir -p "$HOME"
"$py" - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh
out = sys.argv[1]
rng = np.random.default_rng(7)
F = TP.FLOAT
def w(name, *shape): return nh.from_array(rng.standard_normal(shape).astype(np.float32) * 0.2, name)
def conv(x, wname, y, cin, cout, k=3):
    return h.make_node("Conv", [x, wname], [y], pads=[k // 2] * 4), w(wname, cout, cin, k, k)
def save(name, nodes, inits, ins, outs):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, F, s) for n, s in ins],
                     [h.make_tensor_value_info(n, F, None) for n in outs], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), f"{out}/{name}.onnx")
x = [("x", [1, 4, 16, 16])]
# flat: three convs concatenated on C, then a conv reads the concat
n1, i1 = conv("x", "w1", "a", 4, 8); n2, i2 = conv("x", "w2", "b", 4, 8); n3, i3 = conv("x", "w3", "c", 4, 16)
n4, i4 = conv("cat", "w4", "y", 32, 4)
save("flat", [n1, n2, n3, h.make_node("Concat", ["a", "b", "c"], ["cat"], axis=1), n4], [i1, i2, i3, i4], x, ["y"])
# the same with the Concat's inputs read again by an Add afterwards: stays a copy
save("reread", [n1, n2, n3, h.make_node("Concat", ["a", "b", "c"], ["cat"], axis=1), n4,
                h.make_node("Add", ["a", "b"], ["z"])], [i1, i2, i3, i4], x, ["y", "z"])
# nested: cat2 = Concat(Concat(a, b), c)
save("nested", [n1, n2, n3, h.make_node("Concat", ["a", "b"], ["ab"], axis=1),
                h.make_node("Relu", ["c"], ["rc"]),
                h.make_node("Concat", ["ab", "rc"], ["cat"], axis=1), n4], [i1, i2, i3, i4], x, ["y"])
# output: the Concat is a graph output and one input is the graph input
save("output", [n1, h.make_node("Concat", ["a", "x"], ["cat"], axis=1)], [i1], x, ["cat"])
# axis2: Concat along H of [1,8,16,16] tensors: inputs interleave per channel
save("axis2", [n1, n2, h.make_node("Concat", ["a", "b"], ["cat"], axis=2), h.make_node("Relu", ["cat"], ["y"])], [i1, i2], x, ["y"])
# odd: [1,1,1,3] pieces (12-byte offsets)
n5 = h.make_node("Relu", ["p"], ["p1"]); n6 = h.make_node("Sigmoid", ["p"], ["p2"])
save("odd", [n5, n6, h.make_node("Concat", ["p1", "p2"], ["cat"], axis=3), h.make_node("Relu", ["cat"], ["y"])], [], [("p", [1, 1, 1, 3])], ["y"])
PY
launches() { "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['kernels_launched'])" "$1"; }
fail=0
for m in flat reread nested output axis2 odd; do
  if ! "$kiln" run "$tmp/$m.onnx" --random --check --json >"$tmp/$m.json" 2>"$tmp/$m.err"; then
    echo "FAIL $m: kiln run --check failed"; cat "$tmp/$m.err"; fail=1; continue
  fi
  ok=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['check']['ok'])" "$tmp/$m.json" 2>/dev/null || echo "?")
  [ "$ok" = "True" ] || { echo "FAIL $m: check vs CPU reference: $ok"; fail=1; }
  echo "$m: $(launches "$tmp/$m.json") kernels per run, check $ok"
done
# flat: 3 convs + the last conv (+ nothing for the Concat); reread: the same
# plus the Concat's 3 copies and the Add
lf=$(launches "$tmp/flat.json"); lr=$(launches "$tmp/reread.json")
[ "$lr" -ge $((lf + 4)) ] || { echo "FAIL flat launches $lf, reread $lr: expected the Concat in place in flat only (reread >= flat + 4)"; fail=1; }
ln=$(launches "$tmp/nested.json")
[ "$ln" -le $((lf + 1)) ] || { echo "FAIL nested launches $ln: expected both Concats in place (at most flat's $lf + the Relu)"; fail=1; }
[ "$fail" = 0 ] && echo "concat_in_place: ok"
exit "$fail"
