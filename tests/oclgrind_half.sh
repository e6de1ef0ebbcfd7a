#!/bin/sh
# oclgrind_half.sh FAMILY_PARAMS: the fp16-storage kernel variants (an fp16
# plan, runtime/precision.c) under Oclgrind at small shapes: one case of
# each family and storage path of `family_params --half` (every parameter
# vector of the tunable ones), with Oclgrind's memory, uninitialized-value,
# data-race and API checks. Fails on any Oclgrind report or a case that
# fails; 77 (skipped) without oclgrind. Labelled `oclgrind` (not in the
# default suite).
FP=$1
command -v oclgrind >/dev/null 2>&1 || { echo "skipped: oclgrind not installed"; exit 77; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
ERRPAT='Invalid (read|write)|[Uu]ninitiali[sz]ed|data race|[Dd]ivergence|OpenCL runtime error|OCLGRIND FATAL|Unsupported instruction'
fails=0
# Two conv cases run many parameter vectors in one process whose nodes'
# scratch buffers grow (Winograd tiles, packed weights): Oclgrind 21.10's
# uninitialized-value plugin loses track of writes to a buffer that reuses a
# released one's slot with a larger size (tests/oclgrind.sh, whose `kiln
# tune` runs get the same treatment) and reported the Winograd case's reads
# of its packed operands as uninitialized (gemm_panel PACKED_STEP; fp32 does
# the same, e.g. a Gemm at M=7, TM=12), and with -cl-opt-disable it crashed
# (SIGSEGV) in the depthwise case's conv_dwv. Those two get the memory,
# data-race and API checks on the optimized kernels, without --uninitialized.
MULTI="Conv 1x8x10x9 k3 const w+b (Winograd)|Conv depthwise 1x6x11x13 k3 s2 const"
# Oclgrind 21.10's uninitialized-value plugin itself crashes (SIGSEGV, with
# or without -cl-opt-disable) on the 8- and 16-wide fp16 vector loads of
# half_io.cl (kiln_vldh8/16: ushorts moved, then vload_halfN from private
# memory), which these cases' default kernels now read through (norm rows
# and gpool planes default to 8-wide). Their memory, data-race and API
# checks run (clean), on the unoptimized kernels, without that plugin.
VHALF="LayerNorm 3x37 (L % 8 != 0)|GroupNorm 2x6x5x3 G=3 (per group)|GlobalAveragePool 2x5x7x9|GlobalMaxPool 1x3x33x33"
for c in "LayerNorm 3x37 (L % 8 != 0)" "GroupNorm 2x6x5x3 G=3 (per group)" "MVN 2x3x4x5 (strided rows)" "ReduceMean 6x301 axis -1" \
         "Softmax scale+mask[1,1,37] 2x3x37" "Add 3x37 + 37" "Where 5x1 ? 5x7 : 7" "Transpose 3x5x7 perm 2,0,1" "Transpose 2x24x19 perm 0,2,1 (tiles)" "Concat 2x3 ++ 2x5 axis 1" \
         "Cast float to int32 37" "KilnCast 1001 to fp16" "KilnCast 3x77 to fp32" "MatMul 5x33 @ 33x17" "Gemm 5x19 @ (13x19)^T + bias const B" \
         "Conv 1x3x9x7 k3 (computed weights)" "Conv 1x16x7x9 1x1 const w" "Conv 1x8x9x11 1x1 s2 const w+b" "Conv 1x8x10x9 k3 const w+b (Winograd)" \
         "Conv depthwise 1x6x11x13 k3 s2 const" "ConvTranspose 1x4x5x5 k3 s2" "MaxPool 2x3x11x13 k3 s2 p1" "GlobalAveragePool 2x5x7x9" "GlobalMaxPool 1x3x33x33" \
         "Resize 1x3x5x7 linear x2" "Resize 1x3x5x11 nearest x2"; do
  opts="--build-options -cl-opt-disable --check-api --data-races --uninitialized"
  case "|$MULTI|" in *"|$c|"*) opts="--check-api --data-races" ;; esac
  case "|$VHALF|" in *"|$c|"*) opts="--build-options -cl-opt-disable --check-api --data-races" ;; esac
  # shellcheck disable=SC2086
  KILN_CACHE_DIR="$T/cache" nice -n 10 oclgrind $opts "$FP" --half --device oclgrind --case "$c" >"$T/log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || grep -Eq "$ERRPAT" "$T/log" || ! grep -q '^ok ' "$T/log"; then
    echo "FAIL $c (exit $rc):"; grep -E "$ERRPAT|FAIL" "$T/log" | head -20; fails=$((fails + 1))
  else grep '^ok ' "$T/log"; fi
done
[ $fails -eq 0 ] && echo "all fp16 cases clean under oclgrind" && exit 0
exit 1
