#!/bin/sh
# limits.sh: inputs past kiln's limits are refused with a clear error and
# exit status 2, never a crash, a wrong answer or a runaway allocation:
#   - a tensor larger than the device's max allocation (a 16 GiB Expand)
#   - a model larger than --max-model-bytes / $KILN_MAX_MODEL_BYTES, its
#     external data counted
#   - shapes whose element count overflows 64 bits (inferred and declared)
#   - a graph with a cycle
#   - messages nested past the parser's depth limit (If inside If 200000
#     deep; a 100000-deep sequence type), which crashed protobuf-c's
#     recursive unpacker with a stack overflow before
# Positive controls (the same models within the limits) keep the checks from
# passing vacuously. The models are written by limits_gen (tests/limits_gen.c).
#
# usage: limits.sh PATH/TO/kiln PATH/TO/limits_gen      (ctest: limits)
set -u
KILN=${1:?usage: limits.sh PATH/TO/kiln PATH/TO/limits_gen}
GEN=${2:?usage: limits.sh PATH/TO/kiln PATH/TO/limits_gen}
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-limits.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
export KILN_CACHE_DIR="$T/cache"
unset KILN_DEVICE KILN_DB KILN_DB_PATH KILN_MAX_MODEL_BYTES
"$GEN" "$T" || { echo "FAIL: limits_gen could not write the models"; exit 1; }
cd "$T" || exit 1

fails=0 n=0
# expect_error NAME PATTERN [ENV=VALUE...] -- kiln ARGS...: exit status 2 and
# exactly one "kiln: error:" line matching PATTERN (extended regex).
expect_error() {
  name=$1 pat=$2
  shift 2
  n=$((n + 1))
  env "$@" >"$T/out" 2>"$T/err"
  rc=$?
  nerr=$(grep -c '^kiln: error: ' "$T/err")
  if [ $rc -ne 2 ] || [ "$nerr" -ne 1 ] || ! grep -Eq "^kiln: error: .*($pat)" "$T/err"; then
    echo "FAIL $name: exit $rc (want 2), $nerr error lines, want one matching /$pat/:"
    sed 's/^/    /' "$T/err" | head -5
    fails=$((fails + 1))
  else
    echo "ok   $name: $(grep '^kiln: error: ' "$T/err" | cut -c1-200)"
  fi
}
# expect_ok NAME [ENV=VALUE...] -- kiln ARGS...: exit status 0
expect_ok() {
  name=$1
  shift
  n=$((n + 1))
  env "$@" >"$T/out" 2>"$T/err"
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL $name: exit $rc (want 0):"; sed 's/^/    /' "$T/err" | head -5; fails=$((fails + 1))
  else echo "ok   $name"; fi
}

# ---- a tensor larger than the device's max allocation ------------------------
if "$KILN" devices >/dev/null 2>&1; then
  expect_error "tensor over max allocation" "'y'.*exceeds the device's max allocation|exceeds the device's max allocation" \
    "$KILN" run big_tensor.onnx --random
else
  echo "skip tensor over max allocation: no OpenCL device"
fi

# ---- model size limit ----------------------------------------------------------
# weights.onnx: 131168 bytes; ext.onnx: 139 bytes + 131072 in ext.bin
expect_error "--max-model-bytes" "weights.onnx: model is 131168 bytes, more than the limit of 100000 bytes" \
  "$KILN" run weights.onnx --random --max-model-bytes 100000
expect_error "KILN_MAX_MODEL_BYTES" "weights.onnx: model is 131168 bytes, more than the limit of 100000 bytes" \
  KILN_MAX_MODEL_BYTES=100000 "$KILN" info weights.onnx
expect_error "external data counted" "ext.onnx: model is more than the limit of 100000 bytes with its external data.*'W' adds 131072" \
  KILN_MAX_MODEL_BYTES=100000 "$KILN" run ext.onnx --random
expect_error "KILN_MAX_MODEL_BYTES not a number" "KILN_MAX_MODEL_BYTES=12x: not a positive number of bytes" \
  KILN_MAX_MODEL_BYTES=12x "$KILN" info weights.onnx
expect_error "--max-model-bytes not a number" "--max-model-bytes needs a positive number of bytes" \
  "$KILN" run weights.onnx --random --max-model-bytes -5
expect_ok "within the model size limit" KILN_MAX_MODEL_BYTES=140000 "$KILN" run ext.onnx --random
expect_ok "within --max-model-bytes" "$KILN" run weights.onnx --random --max-model-bytes 140000

# ---- shape products that overflow 64 bits ----------------------------------------
expect_error "inferred shape overflows" "node 'expand' \(Expand\): output 'y' would have shape \[4294967296,4294967296,4\]: too many elements \(its size overflows 64 bits\)" \
  "$KILN" run shape_overflow.onnx --random
expect_error "declared input shape overflows" "input 'x'.*too large|input 'x'.*overflows 64 bits" \
  "$KILN" run input_overflow.onnx --random

# ---- a cycle ---------------------------------------------------------------------
expect_error "cycle" "cycle.onnx: the graph has a cycle through node 'add_in_cycle' \(Add\)" \
  "$KILN" run cycle.onnx --random
expect_error "cycle (info)" "cycle.onnx: the graph has a cycle" "$KILN" info cycle.onnx

# ---- nesting depth -----------------------------------------------------------------
expect_error "nested subgraphs" "nested_deep.onnx: messages nested more than 100 levels deep" \
  "$KILN" info nested_deep.onnx
expect_error "nested subgraphs (run)" "nested_deep.onnx: messages nested more than 100 levels deep" \
  "$KILN" run nested_deep.onnx --random
expect_error "nested sequence type" "type_deep.onnx: messages nested more than 100 levels deep" \
  "$KILN" info type_deep.onnx
# 20 levels of If: parsed; the generated Ifs have a then_branch only, which
# the If op refuses when planning (not the nesting)
expect_ok "20 nested subgraphs parse" "$KILN" info nested_ok.onnx
expect_error "20 nested subgraphs: the If without else_branch is refused, not the nesting" "If needs then_branch and else_branch" "$KILN" run nested_ok.onnx --random

if [ $fails -gt 0 ]; then echo "limits: $fails of $n checks failed"; exit 1; fi
echo "limits: all $n checks passed"
exit 0
