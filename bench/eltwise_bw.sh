#!/bin/sh
# eltwise_bw.sh: writes the memory-bound bench models (the element-wise,
# reduction, softmax and normalization shapes of an SD-layout UNet at a 32x32
# latent) and runs bench/eltwise_bw.c on them: GB/s per model against the
# probed copy bandwidth and a memcpy of the same bytes.
#
# usage: eltwise_bw.sh PATH/TO/bench_eltwise_bw [PATH/TO/OTHER/bench_eltwise_bw] [ROUNDS]
# With two binaries (e.g. a build of main and one of a branch) the rounds
# alternate them, each model run by both in every round (same machine state),
# with the copy figure probed once and passed to every run.
# Needs python3 with the onnx module.
set -eu
NEW=${1:?usage: eltwise_bw.sh PATH/TO/bench_eltwise_bw [PATH/TO/OTHER/bench_eltwise_bw] [ROUNDS]}
OLD=${2:-}
ROUNDS=${3:-1}
PY=${PYTHON:-python3}
"$PY" -c "import onnx" 2>/dev/null || PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PY" - "$T" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh
OUT = sys.argv[1]
rng = np.random.default_rng(3)
F = TP.FLOAT
def c(name, v): return nh.from_array(np.asarray(v, np.float32), name)
def save(name, nodes, ins, inits=(), opset=13):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, F, s) for n, s in ins], [h.make_tensor_value_info("y", F, None)], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))
N = h.make_node
X4, X3, D = (2, 320, 32, 32), (2, 1024, 320), 320
gam, bet = c("gamma", rng.random(D) + 0.5), c("beta", rng.random(D))
save("add_same", [N("Add", ["a", "b"], ["y"])], [("a", X4), ("b", X4)])
save("add_chan", [N("Add", ["a", "b"], ["y"])], [("a", X4), ("b", (1, 320, 1, 1))])
save("add_row", [N("Add", ["a", "b"], ["y"])], [("a", X3), ("b", (D,))])
save("add_col", [N("Add", ["a", "b"], ["y"])], [("a", X3), ("b", (2, 1024, 1))])
save("div_col", [N("Div", ["a", "b"], ["y"])], [("a", X3), ("b", (2, 1024, 1))])
save("mul_same", [N("Mul", ["a", "b"], ["y"])], [("a", X4), ("b", X4)])
save("pow2_const", [N("Pow", ["a", "e"], ["y"])], [("a", X3)], [c("e", 2.0)])
save("sqrt", [N("Sqrt", ["a"], ["y"])], [("a", X4)])
save("sigmoid", [N("Sigmoid", ["a"], ["y"])], [("a", X4)])
save("reducemean_last", [N("ReduceMean", ["a"], ["y"], axes=[-1])], [("a", X3)])
save("softmax_last", [N("Softmax", ["a"], ["y"], axis=-1)], [("a", (2, 8, 256, 256))])
save("layernorm_op17", [N("LayerNormalization", ["a", "gamma", "beta"], ["y"], axis=-1)], [("a", X3)], [gam, bet], opset=17)
save("layernorm_decomposed", [N("ReduceMean", ["a"], ["m"], axes=[-1]), N("Sub", ["a", "m"], ["d"]), N("Pow", ["d", "two"], ["p"]),
     N("ReduceMean", ["p"], ["v"], axes=[-1]), N("Add", ["v", "eps"], ["ve"]), N("Sqrt", ["ve"], ["s"]), N("Div", ["d", "s"], ["n"]),
     N("Mul", ["n", "gamma"], ["g"]), N("Add", ["g", "beta"], ["y"])], [("a", X3)], [c("two", 2.0), c("eps", 1e-5), gam, bet])
save("rmsnorm_decomposed", [N("Pow", ["a", "two"], ["p"]), N("ReduceMean", ["p"], ["v"], axes=[-1]), N("Add", ["v", "eps"], ["ve"]),
     N("Sqrt", ["ve"], ["s"]), N("Reciprocal", ["s"], ["r"]), N("Mul", ["a", "r"], ["n"]), N("Mul", ["n", "gamma"], ["y"])], [("a", X3)],
     [c("two", 2.0), c("eps", 1e-6), gam])
save("groupnorm_op18", [N("GroupNormalization", ["a", "gs", "gb"], ["y"], num_groups=32)], [("a", X4)],
     [c("gs", rng.random(32) + 0.5), c("gb", rng.random(32))], opset=18)
PYEOF
COPY=$("$NEW" --repeat 1 "$T/add_same.onnx" | sed -n 's/.*probed copy bandwidth \([0-9.]*\) GB.*/\1/p')
echo "probed copy bandwidth (copy_128MiB): $COPY GB/s"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  echo "== round $r: $NEW"
  "$NEW" --copy "$COPY" "$T"/*.onnx | tail -n +2 || true
  if [ -n "$OLD" ]; then
    echo "== round $r: $OLD"
    "$OLD" --copy "$COPY" "$T"/*.onnx | tail -n +2 || true
  fi
  r=$((r + 1))
done
