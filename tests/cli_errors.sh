#!/bin/sh
# cli_errors.sh: the `kiln` command's handling of bad input and environment.
# Builds small bad inputs in a temporary directory and checks, for each case,
# the exit status (2), that stderr has one "kiln: error:" line with the key
# words (file, tensor or node names), and that --output-dir got no files.
# A few successful runs guard against the checks passing vacuously.
#
# usage: cli_errors.sh PATH/TO/kiln      (ctest: cli_errors)
# Needs python3 with the onnx and numpy modules (Debian: python3-onnx) to
# write the models; exits 77 (skipped) without them.
set -u

KILN=${1:?usage: cli_errors.sh PATH/TO/kiln}
HERE=$(cd "$(dirname "$0")" && pwd)
case $KILN in /*) ;; *) KILN=$(pwd)/$KILN ;; esac

PY=
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import onnx, numpy' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "SKIP: needs python3 with the onnx module (apt-get install python3-onnx, or scripts/setup-deps.sh)"
  exit 77
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-cli-errors.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
export KILN_CACHE_DIR="$T/cache"
unset KILN_DEVICE
mkdir "$T/empty-vendors"
cd "$T" || exit 1

# ---- inputs -----------------------------------------------------------------
"$PY" - <<'EOF' || { echo "FAIL: could not write the test models"; exit 1; }
import random
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

def save(model, path):
    model.ir_version = 7
    with open(path, "wb") as f:
        f.write(model.SerializeToString())

f32 = TensorProto.FLOAT
x = helper.make_tensor_value_info("x", f32, [3, 4, 5])
y = helper.make_tensor_value_info("y", f32, [3, 4, 5])
out = helper.make_tensor_value_info("sum", f32, [3, 4, 5])

# add.onnx: sum = x + y, the valid base model
g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["sum"], name="add_node")], "add", [x, y], [out])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "add.onnx")

# ext.onnx: sum = x + W, W in the external file ext_weights.bin (not written
# here; ext_ok/ has the same model with its weights)
w = numpy_helper.from_array(np.full((3, 4, 5), 0.5, np.float32), "W")
raw = w.raw_data
onnx.external_data_helper.set_external_data(w, location="ext_weights.bin", offset=0, length=len(raw))
w.ClearField("raw_data")
g = helper.make_graph([helper.make_node("Add", ["x", "W"], ["sum"], name="add_w")], "ext", [x], [out], initializer=[w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
save(m, "ext.onnx")
import os
os.mkdir("ext_ok")
save(m, "ext_ok/ext.onnx")
with open("ext_ok/ext_weights.bin", "wb") as f:
    f.write(raw)

# unsup.onnx: two op types kiln has no implementation of (a com.microsoft
# contrib op and an ai.onnx.ml op), three nodes, plus a supported Add
nodes = [
    helper.make_node("Gelu", ["x"], ["g1"], name="gelu_a", domain="com.microsoft"),
    helper.make_node("Scaler", ["g1"], ["s1"], name="scaler_a", domain="ai.onnx.ml", scale=[2.0], offset=[0.0]),
    helper.make_node("Gelu", ["s1"], ["g2"], name="gelu_b", domain="com.microsoft"),
    helper.make_node("Add", ["g2", "y"], ["sum"], name="add_end"),
]
g = helper.make_graph(nodes, "unsup", [x, y], [out])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1),
                                         helper.make_opsetid("ai.onnx.ml", 3)]), "unsup.onnx")

# dyn.onnx: like add.onnx with a symbolic batch dimension N
xd = helper.make_tensor_value_info("x", f32, ["N", 4])
yd = helper.make_tensor_value_info("y", f32, ["N", 4])
od = helper.make_tensor_value_info("sum", f32, ["N", 4])
g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["sum"], name="add_node")], "dyn", [xd, yd], [od])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "dyn.onnx")

# garbage.onnx: 4 KiB of (seeded) random bytes
with open("garbage.onnx", "wb") as f:
    f.write(random.Random(1234).randbytes(4096))

rng = np.random.default_rng(7)
np.save("x.npy", rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32))
np.save("y.npy", rng.uniform(-1, 1, (3, 4, 5)).astype(np.float32))
np.save("x_shape.npy", np.zeros((2, 2), np.float32))
np.save("x_f64.npy", np.zeros((3, 4, 5), np.float64))
with open("x_text.pb", "w") as f:
    f.write("these are not the tensors you are looking for\n" * 4)
EOF

# truncated.onnx: the first half of a valid model
size=$(wc -c <add.onnx)
head -c $((size / 2)) add.onnx >truncated.onnx

# ---- checks -----------------------------------------------------------------
failures=0
ncase=0
fail() { echo "FAIL [$case_name]: $*"; failures=$((failures + 1)); }

# expect NAME RC KEYWORD... -- COMMAND...
# Runs COMMAND with --output-dir appended and checks the exit status, that
# stderr has a "kiln: error:" line containing every KEYWORD, and that the
# output directory was not created or is empty.
expect() {
  case_name=$1; want=$2; shift 2
  kws_file="$T/$case_name.kws"
  : >"$kws_file"
  while [ "$1" != "--" ]; do printf '%s\n' "$1" >>"$kws_file"; shift; done
  shift
  ncase=$((ncase + 1))
  before=$failures
  outdir="$T/out-$case_name"
  "$@" --output-dir "$outdir" >"$T/$case_name.stdout" 2>"$T/$case_name.stderr"
  rc=$?
  errline=$(grep '^kiln: error: ' "$T/$case_name.stderr" | head -n 1)
  if [ "$rc" != "$want" ]; then fail "exit status $rc, expected $want"; fi
  if [ -z "$errline" ]; then fail "no 'kiln: error:' line on stderr"; fi
  while IFS= read -r kw; do
    case $errline in *"$kw"*) ;; *) fail "message lacks '$kw'" ;; esac
  done <"$kws_file"
  if [ -e "$outdir" ] && [ -n "$(ls -A "$outdir")" ]; then fail "output files were written: $(ls -A "$outdir")"; fi
  if [ "$failures" -gt "$before" ]; then
    echo "  command: $*"; echo "  stderr:"; sed 's/^/    /' "$T/$case_name.stderr"
  else
    echo "ok   [$case_name] $errline"
  fi
}

expect truncated_model 2 "truncated.onnx" "ONNX" -- "$KILN" run truncated.onnx --random
expect garbage_model 2 "garbage.onnx" "ONNX" -- "$KILN" run garbage.onnx --random
expect missing_model 2 "nonexistent.onnx" -- "$KILN" run nonexistent.onnx --random
expect missing_external_data 2 "ext_weights.bin" "external data" "'W'" -- "$KILN" run ext.onnx --random
expect unsupported_ops 2 "unsupported" "Gelu" "'gelu_a'" "'gelu_b'" "Scaler" "'scaler_a'" -- "$KILN" run unsup.onnx --random
# unsupported ops are found before any device work: same message with no OpenCL platform
expect unsupported_before_device 2 "Gelu" "Scaler" -- env OCL_ICD_VENDORS="$T/empty-vendors" "$KILN" run unsup.onnx --random
expect missing_input 2 "missing input 'y'" -- "$KILN" run add.onnx --input x=x.npy
expect unknown_input 2 "no input named 'z'" "'x'" "'y'" -- "$KILN" run add.onnx --input z=x.npy --input y=y.npy
expect wrong_shape 2 "input 'x'" "[3,4,5]" "[2,2]" -- "$KILN" run add.onnx --input x=x_shape.npy --input y=y.npy
expect wrong_dtype 2 "input 'x'" "float32" "float64" -- "$KILN" run add.onnx --input x=x_f64.npy --input y=y.npy
expect not_a_tensor 2 "x_text.pb" "not a tensor" -- "$KILN" run add.onnx --input x=x_text.pb --input y=y.npy
expect missing_input_file 2 "nothere.npy" -- "$KILN" run add.onnx --input x=nothere.npy --input y=y.npy
expect no_opencl_platform 2 "no OpenCL platform" "pocl-opencl-icd" -- env OCL_ICD_VENDORS="$T/empty-vendors" "$KILN" run add.onnx --random
expect shape_binding_mismatch 2 "--shape x" "rank 3" -- "$KILN" run add.onnx --random --shape x=3,4
expect random_symbolic_dim 2 "input 'x'" "'N'" "--shape" -- "$KILN" run dyn.onnx --random
expect bad_option 2 "unknown option '--frobnicate'" -- "$KILN" run add.onnx --random --frobnicate
expect bad_repeat 2 "--repeat" -- "$KILN" run add.onnx --random --repeat 0

# kiln tune refuses bad arguments with exit 2 before doing any work (no
# database made, no directory tree made for --db)
expect_tune() {
  case_name=$1; shift
  kw=$1; shift
  ncase=$((ncase + 1))
  "$KILN" tune add.onnx "$@" >"$T/$case_name.stdout" 2>"$T/$case_name.stderr"
  rc=$?
  [ $rc = 2 ] || fail "exit status $rc, expected 2 ($(cat "$T/$case_name.stderr"))"
  grep -q "^kiln: error: .*$kw" "$T/$case_name.stderr" || fail "message lacks '$kw': $(cat "$T/$case_name.stderr")"
  grep -q "^\[" "$T/$case_name.stdout" && fail "it started tuning"
  echo "ok   [$case_name] $(grep '^kiln: error:' "$T/$case_name.stderr" | head -n 1)"
}
expect_tune tune_unknown_family "unknown kernel family 'nosuch'.*its families:" --db "$T/tf.db" --families nosuch
[ -e "$T/tf.db" ] && { case_name=tune_unknown_family; fail "a database was made before the families were checked"; }
expect_tune tune_unknown_strategy "--strategy must be model, exhaustive or random" --db "$T/ts.db" --strategy bogus
expect_tune tune_unknown_device "no OpenCL device matches 'nosuchdevice'" --db "$T/td.db" --device nosuchdevice
[ -e "$T/td.db" ] && { case_name=tune_unknown_device; fail "a database was made before the device was checked"; }
expect_tune tune_missing_dir "directory $T/no/such does not exist" --db "$T/no/such/t.db"
[ -e "$T/no" ] && { case_name=tune_missing_dir; fail "kiln tune made a directory tree for --db"; }

# --check with a device result that differs from the CPU reference: exit 1 and
# no output files. The Add kernel is made wrong through KILN_KERNEL_DIR (the
# development override for kernels/*.cl).
src_kernels=$(cd "$HERE/../kernels" 2>/dev/null && pwd)
if [ -n "$src_kernels" ] && [ -f "$src_kernels/elementwise.cl" ]; then
  mkdir "$T/bad-kernels"
  cp "$src_kernels"/*.cl "$T/bad-kernels/"
  sed 's/^EW_SAMEV(ew_add, a + b, VEC, a + b)/EW_SAMEV(ew_add, a + b * 1.01f, VEC, a + b * 1.01f)/' "$src_kernels/elementwise.cl" >"$T/bad-kernels/elementwise.cl"
  if cmp -s "$src_kernels/elementwise.cl" "$T/bad-kernels/elementwise.cl"; then
    echo "note [check_mismatch] skipped: kernels/elementwise.cl has no 'EW_SAMEV(ew_add, a + b, VEC, a + b)' line to break"
  else
    expect check_mismatch 1 "output 'sum' differs from the CPU reference" -- \
      env KILN_KERNEL_DIR="$T/bad-kernels" "$KILN" run add.onnx --input x=x.npy --input y=y.npy --check
  fi
fi

# `kiln devices` without a platform, an unknown command, and --help everywhere
case_name=devices_no_platform
OCL_ICD_VENDORS="$T/empty-vendors" "$KILN" devices >/dev/null 2>"$T/dev.err"
rc=$?
[ $rc = 2 ] || fail "exit status $rc, expected 2"
grep -q '^kiln: error: .*pocl-opencl-icd' "$T/dev.err" || fail "message lacks pocl-opencl-icd: $(cat "$T/dev.err")"
case_name=unknown_command
"$KILN" frobnicate >/dev/null 2>&1
rc=$?
[ $rc = 2 ] || fail "exit status $rc, expected 2"
case_name=help
"$KILN" --help >/dev/null || fail "kiln --help"
"$KILN" --version | grep -q '^kiln [0-9]' || fail "kiln --version"
for c in run info devices demo help; do "$KILN" "$c" --help | grep -q "^usage: kiln $c" || fail "kiln $c --help"; done

# ---- successful runs (the checks above are not vacuous) ----------------------
case_name=run_ok
if "$KILN" run add.onnx --input x=x.npy --input y.npy --check --output-dir "$T/out-ok" >"$T/ok.out" 2>"$T/ok.err"; then
  "$PY" -c '
import sys, numpy as np
x, y, s = (np.load(f) for f in ("x.npy", "y.npy", sys.argv[1]))
sys.exit(0 if s.shape == (3, 4, 5) and np.allclose(s, x + y, rtol=1e-6, atol=1e-6) else 1)' "$T/out-ok/sum.npy" \
    || fail "out-ok/sum.npy is not x + y"
  echo "ok   [run_ok]"
else
  fail "kiln run add.onnx failed: $(cat "$T/ok.err")"
fi
case_name=run_json
if "$KILN" run add.onnx --random --seed 3 --repeat 3 --check --json >"$T/ok.json" 2>"$T/json.err"; then
  "$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["outputs"][0]["name"] == "sum" and j["outputs"][0]["shape"] == [3, 4, 5], j
assert len(j["latency_ms"]["runs"]) == 3 and j["check"]["ok"] is True, j
' "$T/ok.json" || fail "bad --json output: $(cat "$T/ok.json")"
  echo "ok   [run_json]"
else
  fail "kiln run --json failed: $(cat "$T/json.err")"
fi
case_name=symbolic_dim_bound
"$KILN" run dyn.onnx --random --shape N=2 >/dev/null 2>"$T/dyn.err" || fail "dyn.onnx --shape N=2: $(cat "$T/dyn.err")"
case_name=external_data_ok
"$KILN" run ext_ok/ext.onnx --random >/dev/null 2>"$T/ext.err" || fail "ext_ok/ext.onnx: $(cat "$T/ext.err")"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all $ncase error cases and the successful runs passed"
