#!/bin/sh
# precision.sh KILN: fp16 storage plans end to end (runtime/precision.c).
#  - the demo models (CNN, transformer) with --precision fp16 and auto run
#    and pass --check against the fp32 CPU reference (max err <= 1e-2 of
#    max |ref|), and --precision fp32 is the default plan (same device_bytes);
#  - kiln plan --precision fp16 --json gives every kernel a precision and a
#    reason, at least one kernel in fp16 (the transformer's LayerNorms), the
#    conversions as KilnCast kernels, the MatMuls (gemm family) and the
#    CNN's convolutions in fp16 (their half kernels), the CNN's fp16 plan at
#    most 0.6x the device bytes of its fp32 plan;
#  - a bad --precision value is a usage error (exit 2);
#  - with python3-onnx: a float16 model (LayerNorm, Transpose, Softmax,
#    ReduceMean, Sigmoid, Mul, Add) runs on the device, output float16,
#    and matches the CPU reference.
K=$1
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$K" demo --dir "$T" >"$T/demo.txt" 2>&1 || { cat "$T/demo.txt"; echo "skipped: no device"; exit 77; }
jget() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
for m in cnn transformer; do
  for p in fp16 auto; do
    "$K" run "$T/$m.onnx" --random --seed 3 --check --precision $p --json >"$T/$m.$p.json" 2>"$T/err" || { cat "$T/err"; fail "$m --precision $p --check"; }
    [ "$(jget "$T/$m.$p.json" "j['precision'], j['check']['ok'], j['check']['tolerance_of']")" = "('$p', True, 'max_scaled_err')" ] || fail "$m $p: $(cat "$T/$m.$p.json")"
  done
  "$K" run "$T/$m.onnx" --random --seed 3 --json >"$T/$m.none.json" 2>/dev/null || fail "$m default run"
  "$K" run "$T/$m.onnx" --random --seed 3 --json --precision fp32 >"$T/$m.fp32.json" 2>/dev/null || fail "$m fp32 run"
  [ "$(jget "$T/$m.none.json" "j['device_bytes'], j['precision']")" = "$(jget "$T/$m.fp32.json" "j['device_bytes'], 'fp32'")" ] || fail "$m: --precision fp32 differs from the default plan"
done
"$K" plan "$T/transformer.onnx" --precision fp16 --no-measure --json >"$T/plan.json" 2>"$T/err" || { cat "$T/err"; fail "plan --precision fp16"; }
jget "$T/plan.json" "all(k['precision'] in ('fp16','fp32','-') and k['precision_why'] for k in j['launches'])" | grep -qx True || fail "a kernel without precision or reason"
jget "$T/plan.json" "any(k['precision'] == 'fp16' and k['ops'] == 'LayerNormalization' for k in j['launches'])" | grep -qx True || fail "no LayerNormalization in fp16"
jget "$T/plan.json" "any(k['ops'] == 'KilnCast' for k in j['launches'])" | grep -qx True || fail "no conversion kernel"
jget "$T/plan.json" "[k['precision'] for k in j['launches'] if k['ops'].startswith('MatMul')]" | grep -q "^\['fp16'\(, 'fp16'\)*\]$" || fail "a MatMul not in fp16"
"$K" plan "$T/cnn.onnx" --precision fp16 --no-measure --json >"$T/cplan.json" 2>"$T/err" || { cat "$T/err"; fail "plan cnn --precision fp16"; }
jget "$T/cplan.json" "[k['precision'] for k in j['launches'] if k['ops'].startswith('Conv')]" | grep -q "^\['fp16'\(, 'fp16'\)*\]$" || fail "a Conv not in fp16"
jget "$T/cplan.json" "j['device_bytes'] <= 0.6 * $(jget "$T/cnn.fp32.json" "j['device_bytes']")" | grep -qx True || fail "cnn fp16 plan over 0.6x the fp32 device bytes"
"$K" run "$T/cnn.onnx" --random --precision fp8 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--precision fp8 not a usage error"
if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
  /usr/bin/python3 - "$T/f16.onnx" <<'PY' || fail "writing the float16 model"
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
rng = np.random.default_rng(1)
H = 48
nodes = [h.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1, epsilon=1e-5), h.make_node("Transpose", ["ln"], ["t"], perm=[0, 2, 1]),
         h.make_node("Softmax", ["t"], ["sm"], axis=-1), h.make_node("ReduceMean", ["sm"], ["rm"], axes=[2], keepdims=1),
         h.make_node("Sigmoid", ["t"], ["sg"]), h.make_node("Mul", ["sg", "rm"], ["mu"]), h.make_node("Add", ["mu", "t"], ["y"])]
inits = [nh.from_array(rng.standard_normal(H).astype(np.float16), "g"), nh.from_array(rng.standard_normal(H).astype(np.float16), "b")]
g = h.make_graph(nodes, "f16", [h.make_tensor_value_info("x", T.FLOAT16, [2, 20, H])], [h.make_tensor_value_info("y", T.FLOAT16, [2, H, 20])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PY
  "$K" run "$T/f16.onnx" --random --check --json >"$T/f16.json" 2>"$T/err" || { cat "$T/err"; fail "float16 model"; }
  [ "$(jget "$T/f16.json" "j['outputs'][0]['dtype'], j['check']['ok'], j['kernels_launched'] >= 5")" = "('float16', True, True)" ] || fail "float16 model: $(cat "$T/f16.json")"
else echo "note: python3-onnx missing, float16 model case not run"; fi
echo "precision: ok"
