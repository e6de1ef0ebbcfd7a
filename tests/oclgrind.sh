#!/bin/sh
# oclgrind.sh: every kernel family run under Oclgrind's simulated OpenCL device
# with its memory (out-of-bounds), uninitialized-value, data-race and API
# checks. Fails on any Oclgrind report, on a wrong result, and on a family
# whose kernels did not run at all.
#
# Per family it runs, on the device named "oclgrind":
#   - a curated list of the ONNX backend tests (libonnx-testdata), through
#     kiln_conformance (device output and CPU reference vs expected outputs);
#   - small single-node models written here (python3-onnx) with sizes that
#     leave partial tiles and reach the 64-wide work-group kernels, through
#     `kiln run --random --check` (device vs CPU reference);
#   - tunable kernels (gemm, conv): `kiln tune` on such models, which runs
#     every candidate parameter vector on the device and checks it against the
#     CPU reference: at least three vectors per instance (the default and
#     others drawn at random or spread over the space), none rejected;
#   - every generated model of any family whose plan (`kiln plan` on the
#     default device) has a tunable kernel is tuned the same way with three
#     random vectors, so kernels that gain tunable parameters are covered
#     with parameter sets taken from their descriptors, without a list here;
#   - gemm and conv: tests/gemm_params.c and tests/conv_params.c on a few
#     small cases with edge tiles (--case), which force every kernel variant
#     (gemm: tiled with and without local memory, panel; conv: direct, 1x1,
#     im2col, depthwise, Winograd, local-memory GEMM, panel im2col, Winograd
#     with gemm_panel, vector depthwise, Winograd F(4x4,3x3), dirv, dirc and
#     dw16 on NCHW16c values) with three or more
#     parameter vectors each, compared with the CPU reference.
# Oclgrind's instruction counts name the kernels each step executed; they are
# listed per family (and a few that must run are checked).
#
# usage: oclgrind.sh PATH/TO/kiln PATH/TO/kiln_conformance [FAMILY...]
#   families: those of the registry (kernels/family.c), as the `families`
#             program beside kiln_conformance prints them (default: all)
# environment: KILN_ONNX_TESTDATA (default /usr/share/libonnx-testdata/data),
#   OCLGRIND (default oclgrind), OG_KEEP=1 keeps the work directory.
# Exits 77 (skipped) without oclgrind, the test data or python3-onnx.
#
# Oclgrind 21.10's uninitialized-value plugin (--uninitialized) aborts with
# "Unsupported instruction: freeze" on LLVM's `freeze`, which the optimizer
# emits for integer division and remainder (index arithmetic: conv_im2col,
# conv_gemm, ew_add... every family has some), so with that plugin the
# kernels are built with -cl-opt-disable: the checks see the kernels as
# written. Only that plugin needs it: OG_OPT=1 runs the optimized kernels
# with the memory, data-race and API checks but without --uninitialized.
set -u

KILN=${1:?usage: oclgrind.sh PATH/TO/kiln PATH/TO/kiln_conformance [FAMILY...]}
CONF=${2:?usage: oclgrind.sh PATH/TO/kiln PATH/TO/kiln_conformance [FAMILY...]}
shift 2
case $KILN in /*) ;; *) KILN=$(pwd)/$KILN ;; esac
case $CONF in /*) ;; *) CONF=$(pwd)/$CONF ;; esac
ALL=$("$(dirname "$CONF")/families" 2>/dev/null | tr "\n" " ") || ALL=
if [ $# -eq 0 ]; then
  [ -n "$ALL" ] || { echo "oclgrind.sh: no family given and no families program beside $CONF"; exit 2; }
  set -- $ALL
fi
FAMILIES=$*
DATA=${KILN_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
OCLGRIND=${OCLGRIND:-oclgrind}

if ! command -v "$OCLGRIND" >/dev/null 2>&1; then echo "SKIP: oclgrind not installed (apt-get install oclgrind)"; exit 77; fi
if [ ! -d "$DATA/node" ]; then echo "SKIP: no ONNX test data at $DATA (apt-get install libonnx-testdata)"; exit 77; fi
PY=
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import onnx, numpy' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then echo "SKIP: needs python3 with the onnx module (apt-get install python3-onnx)"; exit 77; fi

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-oclgrind.XXXXXX") || exit 1
if [ "${OG_KEEP:-0}" = 1 ]; then echo "work directory: $T"; else trap 'rm -rf "$T"' EXIT; trap 'exit 130' INT TERM; fi
export KILN_CACHE_DIR=off
export KILN_ATTENTION_FUSE=1 # the attention models run as one KilnAttention kernel whatever the prediction
unset KILN_DEVICE KILN_DB
if [ "${OG_OPT:-0}" = 1 ]; then
  OG="nice -n 10 $OCLGRIND --check-api --data-races --inst-counts"
else
  OG="nice -n 10 $OCLGRIND --build-options -cl-opt-disable --check-api --data-races --uninitialized --inst-counts"
fi
# Oclgrind 21.10 crashes (SIGSEGV in RaceDetector::syncWorkItems at the end
# of a work-group, or heap corruption: "free(): invalid size") in `kiln tune`
# of small Convs when its instruction counter (--inst-counts) runs beside the
# race detector; each plugin alone runs them clean (reproduced on a 1x1 conv,
# also with one worker thread). Families listed in NOINST run without
# --inst-counts: their kernel coverage is not read from Oclgrind there
# (conv_params reports the algorithms it ran instead). pool joined when its
# 2-D pools moved to pool_row (a 3-D launch): "corrupted size vs. prev_size"
# (signal 6) in test_averagepool_1d_default with both plugins, clean with
# either alone.
NOINST="conv pool"
# Generated models run without --uninitialized (the memory, race and API
# checks still run): pool_row's 3-wide stride-2 vectors take taps from the
# odd lanes of a 2*PL_WPI-wide load, and Oclgrind 21.10's uninitialized-value
# plugin reports every vector stored from those as uninitialized (a kernel
# variant using only the even lanes: no report; all lanes lie inside the
# input, the memory check agrees, and family_params compares every lane with
# the CPU reference).
NOUNINIT_RUN="pool_max_rows pool_avg_rows"
# `kiln tune` runs many candidates in one process, and the uninitialized-value
# plugin loses track of writes to a buffer that reuses a released buffer's
# slot with a larger size (noted at the backend tests below): when a
# candidate grows a node's scratch buffer (conv's im2col matrix, gemm's packed
# B), its reads past the old size are reported although the kernel before it
# wrote them (conv_gemm at conv.cl:196 for the second image of a batch of 2,
# only in multi-candidate processes; the same candidates one per process are
# clean). Tuning runs therefore get the memory, data-race and API checks on
# the optimized kernels, without --uninitialized; the uninitialized-value
# check covers every kernel variant through the single-case runs (backend
# tests, generated models, one gemm_params/conv_params case per process).
OG_TUNE=$(echo "$OG" | sed 's/ --build-options -cl-opt-disable//; s/ --uninitialized//')
# the parameter tests beside kiln_conformance (same build directory)
GEMM_PARAMS=${GEMM_PARAMS:-$(dirname "$CONF")/gemm_params}
CONV_PARAMS=${CONV_PARAMS:-$(dirname "$CONF")/conv_params}
# Oclgrind's diagnostics: memory errors, uninitialized values, races, barrier
# divergence, API errors, unsupported instructions; every diagnostic raised
# inside a kernel carries a "Kernel: NAME" line.
ERRPAT='Invalid (read|write)|[Uu]ninitiali[sz]ed|data race|[Dd]ivergence|OpenCL runtime error|OCLGRIND FATAL|Unsupported instruction|^[[:space:]]+Kernel: '

mkdir "$T/models"
"$PY" - "$T/models" <<'EOF' || { echo "FAIL: could not write the test models"; exit 1; }
# Small single-node models. Sizes leave partial tiles: nothing is a multiple of
# the GEMM/Conv register tiles (2..16) or of the 64-wide work-groups of
# reduce.cl/norm.cl, and the work-group paths of those kernels (reductions and
# softmax lines of >= 256 elements) are reached.
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
F32, I64, I32, U8, F16, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.UINT8, TensorProto.FLOAT16, TensorProto.BOOL
rng = np.random.default_rng(7)

def vi(name, dt, shape): return helper.make_tensor_value_info(name, dt, shape)
def const(name, arr): return numpy_helper.from_array(np.asarray(arr), name)
def w(*shape): return rng.standard_normal(shape).astype(np.float32)
def i64(*v): return np.array(v, np.int64)

def save(name, nodes, inputs, outputs, inits=(), opset=18):
    if not isinstance(nodes, list): nodes = [nodes]
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, name + ".onnx"))

N = helper.make_node
Y = [vi("y", F32, None)]

# elementwise: odd lengths and broadcasts (vector tails)
save("ew_add_bcast", N("Add", ["a", "b"], ["y"]), [vi("a", F32, [3, 1, 37]), vi("b", F32, [5, 1])], Y)
save("ew_mul_1001", N("Mul", ["a", "b"], ["y"]), [vi("a", F32, [1001]), vi("b", F32, [1001])], Y)
save("ew_relu_1003", N("Relu", ["a"], ["y"]), [vi("a", F32, [17, 59])], Y)
save("ew_where_odd", [N("Greater", ["a", "b"], ["c"]), N("Where", ["c", "a", "b"], ["y"])], [vi("a", F32, [7, 1, 13]), vi("b", F32, [1, 3, 13])], Y)
save("ew_clip_odd", N("Clip", ["a", "lo", "hi"], ["y"]), [vi("a", F32, [3, 41])], Y, [const("lo", np.float32(-0.25)), const("hi", np.float32(0.5))])
save("ew_pow_int", N("Pow", ["a", "b"], ["y"]), [vi("a", F32, [5, 19]), vi("b", I64, [19])], Y)
# rows of the broadcast kernels: rank 3 after merging (3-D grid), a row
# broadcast along the last axis, constant exponents (unary kernels)
save("ew_add_chan", N("Add", ["a", "b"], ["y"]), [vi("a", F32, [2, 3, 5, 7]), vi("b", F32, [1, 3, 1, 1])], Y)
save("ew_add_col", N("Add", ["a", "b"], ["y"]), [vi("a", F32, [3, 11, 21]), vi("b", F32, [3, 11, 1])], Y)
save("ew_pow2", N("Pow", ["a", "e"], ["y"]), [vi("a", F32, [3, 37])], Y, [const("e", np.float32(2))])
save("ew_pow_half", N("Pow", ["a", "e"], ["y"]), [vi("a", F32, [41])], Y, [const("e", np.float32(0.5))])
# a fused element-wise group (fusion.c): runs of a row with broadcast operands
save("ew_fused_bcast", [N("Add", ["a", "b"], ["t"]), N("Sigmoid", ["t"], ["u"]), N("Mul", ["u", "c"], ["v"]), N("Pow", ["v", "two"], ["w"]),
     N("Sub", ["w", "d"], ["y"])], [vi("a", F32, [2, 5, 7, 19]), vi("b", F32, [1, 5, 1, 1]), vi("c", F32, [19]), vi("d", F32, [2, 5, 7, 1])], Y,
     [const("two", np.float32(2))], opset=13)

# cast
for src, dst, tag in [(F32, I32, "f32_i32"), (I64, F32, "i64_f32"), (F32, BOOL, "f32_bool"), (U8, F32, "u8_f32"),
                      (F32, TensorProto.BFLOAT16, "f32_bf16"), (F32, F16, "f32_f16")]:
    save("cast_" + tag, N("Cast", ["a"], ["y"], to=dst), [vi("a", src, [3, 37])], [vi("y", dst, None)])

# movement
save("mv_transpose_odd", N("Transpose", ["a"], ["y"], perm=[2, 0, 1]), [vi("a", F32, [3, 7, 11])], Y)
# a batched plane transpose: 8x8 tiles (mv_transpose2), whole and at the edges
save("mv_transpose_tiles", N("Transpose", ["a"], ["y"], perm=[0, 2, 1]), [vi("a", F32, [2, 17, 12])], Y)
save("mv_slice_step", N("Slice", ["a", "st", "en", "ax", "sp"], ["y"]), [vi("a", F32, [9, 13])], Y,
     [const("st", i64(8, 1)), const("en", i64(-20, 12)), const("ax", i64(0, 1)), const("sp", i64(-3, 4))])
save("mv_gather_nd", N("GatherND", ["a", "i"], ["y"]), [vi("a", F32, [5, 7, 3])], Y, [const("i", np.array([[4, 6], [0, 0], [2, 5]], np.int64))])
save("mv_pad_reflect", N("Pad", ["a", "p"], ["y"], mode="reflect"), [vi("a", F32, [1, 2, 5, 7])], Y, [const("p", i64(0, 0, 2, 3, 0, 0, 4, 1))])
save("mv_concat_odd", N("Concat", ["a", "b"], ["y"], axis=1), [vi("a", F32, [3, 5, 7]), vi("b", F32, [3, 2, 7])], Y)

# scatter
save("sc_nd_max", N("ScatterND", ["a", "i", "u"], ["y"], reduction="max"), [vi("a", F32, [5, 7]), vi("u", F32, [3, 7])], Y,
     [const("i", np.array([[4], [0], [4]], np.int64))])
save("sc_el_add", N("ScatterElements", ["a", "i", "u"], ["y"], axis=1, reduction="add"), [vi("a", F32, [3, 11]), vi("u", F32, [3, 5])], Y,
     [const("i", np.array([[0, 10, 3, 3, -1], [1, 2, 2, 9, 0], [5, 5, 5, 5, 5]], np.int64))])

# reduce: reduce_wg (>= 256 elements per output), arg, cumsum, topk, nll
save("rd_sum_300", N("ReduceSum", ["a", "ax"], ["y"], keepdims=0), [vi("a", F32, [3, 300])], Y, [const("ax", i64(1))])
save("rd_max_all", N("ReduceMax", ["a"], ["y"], keepdims=1), [vi("a", F32, [5, 67])], Y)
# >= 64 lines: a work-item per line, 8-lane vectors and a tail
save("rd_mean_lines", N("ReduceMean", ["a", "ax"], ["y"], keepdims=1), [vi("a", F32, [70, 37])], Y, [const("ax", i64(-1))])
save("rd_mean_inner", N("ReduceMean", ["a", "ax"], ["y"], keepdims=1), [vi("a", F32, [2, 257, 3])], Y, [const("ax", i64(1))])
save("rd_argmax_300", N("ArgMax", ["a"], ["y"], axis=1, select_last_index=1), [vi("a", F32, [2, 300])], [vi("y", I64, None)])
save("rd_cumsum_131", N("CumSum", ["a", "ax"], ["y"], reverse=1), [vi("a", F32, [2, 131])], Y, [const("ax", np.array(1, np.int64))])
save("rd_topk_97", N("TopK", ["a", "k"], ["v", "i"], axis=1), [vi("a", F32, [3, 97])], [vi("v", F32, None), vi("i", I64, None)], [const("k", i64(5))])
save("rd_nll_mean", N("NegativeLogLikelihoodLoss", ["a", "t"], ["y"], reduction="mean", ignore_index=2), [vi("a", F32, [3, 5, 71])], Y,
     [const("t", rng.integers(0, 5, (3, 71)).astype(np.int64))])

# softmax: softmax_wg (lines >= 256), strided lines
save("sm_softmax_300", N("Softmax", ["a"], ["y"], axis=-1), [vi("a", F32, [3, 300])], Y)
save("sm_logsoftmax_257", N("LogSoftmax", ["a"], ["y"], axis=1), [vi("a", F32, [2, 257, 3])], Y)
save("sm_hardmax_odd", N("Hardmax", ["a"], ["y"], axis=1), [vi("a", F32, [3, 13, 5])], Y)
save("sm_softmax_lines", N("Softmax", ["a"], ["y"], axis=-1), [vi("a", F32, [70, 37])], Y)

# attention (KilnAttention, fused with KILN_ATTENTION_FUSE=1 below): query
# and key counts that leave partial blocks of both solvers, a full additive
# mask [1,1,S,Skv] (per-query gathers), K read through its Transpose, Dv != D
save("at_mha_mask", [N("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), N("MatMul", ["q", "kt"], ["s"]), N("Div", ["s", "sc"], ["ss"]),
     N("Add", ["ss", "m"], ["sm"]), N("Softmax", ["sm"], ["p"], axis=-1), N("MatMul", ["p", "v"], ["y"])],
     [vi("q", F32, [1, 2, 19, 8]), vi("k", F32, [1, 2, 21, 8]), vi("v", F32, [1, 2, 21, 6]), vi("m", F32, [1, 1, 19, 21])], Y,
     [const("sc", np.float32(2.8))])
save("at_single_odd", [N("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), N("MatMul", ["q", "kt"], ["s"]), N("Mul", ["s", "sc"], ["ss"]),
     N("Softmax", ["ss"], ["p"], axis=-1), N("MatMul", ["p", "v"], ["y"])],
     [vi("q", F32, [1, 37, 5]), vi("k", F32, [1, 37, 5]), vi("v", F32, [1, 37, 3])], Y, [const("sc", np.float32(0.45))])

# norm: 64-wide work-groups over rows that are not multiples of 64
save("nm_layernorm_130", N("LayerNormalization", ["a", "s", "b"], ["y"], axis=-1), [vi("a", F32, [3, 130])], Y, [const("s", w(130)), const("b", w(130))])
save("nm_groupnorm", N("GroupNormalization", ["a", "s", "b"], ["y"], num_groups=3), [vi("a", F32, [2, 6, 5, 7])], Y, [const("s", w(3)), const("b", w(3))])
# >= 64 rows: a work-item per row (vector loads, a tail); the decomposed RMSNorm (kiln_rms)
save("nm_layernorm_rows", N("LayerNormalization", ["a", "s", "b"], ["y"], axis=-1), [vi("a", F32, [70, 37])], Y, [const("s", w(37)), const("b", w(37))])
save("nm_rmsnorm_decomposed", [N("Pow", ["a", "two"], ["p"]), N("ReduceMean", ["p", "ax"], ["v"], keepdims=1), N("Add", ["v", "eps"], ["ve"]),
     N("Sqrt", ["ve"], ["s"]), N("Div", ["a", "s"], ["n"]), N("Mul", ["n", "g"], ["y"])], [vi("a", F32, [70, 37])], Y,
     [const("two", np.float32(2)), const("ax", i64(-1)), const("eps", np.float32(1e-6)), const("g", w(37))])
save("nm_instnorm_143", N("InstanceNormalization", ["a", "s", "b"], ["y"]), [vi("a", F32, [1, 3, 11, 13])], Y, [const("s", w(3)), const("b", w(3))])
save("nm_bn_train", N("BatchNormalization", ["a", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1), [vi("a", F32, [2, 3, 9, 11])],
     [vi("y", F32, None), vi("rm", F32, None), vi("rv", F32, None)], [const("s", w(3)), const("b", w(3)), const("m", w(3)), const("v", np.abs(w(3)) + 0.5)])
save("nm_lrn_odd", N("LRN", ["a"], ["y"], size=3), [vi("a", F32, [1, 7, 5, 3])], Y)

# gemm (tuned): 13x17x19 and friends
save("gemm_mm_13x17x19", N("MatMul", ["a", "b"], ["y"]), [vi("a", F32, [13, 17]), vi("b", F32, [17, 19])], Y)
save("gemm_mm_constb_batched", N("MatMul", ["a", "b"], ["y"]), [vi("a", F32, [2, 13, 17])], Y, [const("b", w(17, 19))])
save("gemm_gemm_tt_bias", N("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0), [vi("a", F32, [17, 13]), vi("b", F32, [19, 17])], Y,
     [const("c", w(19))])
save("gemm_mm_bcast", N("MatMul", ["a", "b"], ["y"]), [vi("a", F32, [3, 1, 5, 9]), vi("b", F32, [1, 2, 9, 11])], Y)

# conv (tuned): every algorithm on shapes with partial tiles
save("conv_s2_p1", N("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2]), [vi("x", F32, [1, 3, 7, 9])], Y, [const("w", w(5, 3, 3, 3))])
save("conv_s1_p1_bias", N("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]), [vi("x", F32, [2, 3, 7, 9])], Y, [const("w", w(5, 3, 3, 3)), const("b", w(5))])
save("conv_1x1", N("Conv", ["x", "w"], ["y"]), [vi("x", F32, [1, 6, 5, 7])], Y, [const("w", w(7, 6, 1, 1))])
save("conv_1x1_s2", N("Conv", ["x", "w"], ["y"], strides=[2, 2]), [vi("x", F32, [1, 6, 5, 7])], Y, [const("w", w(7, 6, 1, 1))])
save("conv_dw", N("Conv", ["x", "w"], ["y"], group=4, pads=[1, 1, 1, 1]), [vi("x", F32, [1, 4, 7, 9])], Y, [const("w", w(4, 1, 3, 3))])
save("conv_group_dil", N("Conv", ["x", "w", "b"], ["y"], group=2, dilations=[2, 2], pads=[2, 1, 0, 2]), [vi("x", F32, [1, 4, 9, 11])], Y,
     [const("w", w(6, 2, 3, 3)), const("b", w(6))])
save("conv_var_w", N("Conv", ["x", "w"], ["y"], pads=[1, 0, 1, 0], strides=[1, 2]), [vi("x", F32, [1, 3, 7, 9]), vi("w", F32, [5, 3, 3, 3])], Y)
save("conv_1d", N("Conv", ["x", "w"], ["y"], pads=[1, 2], strides=[2]), [vi("x", F32, [2, 3, 13])], Y, [const("w", w(5, 3, 4))])
# a residual Add fused as the Conv's epilogue (a full-size operand read at the
# output's flat index) with a partial last column block: lanes past the end
# of Y's last row must not read the operand
save("conv_1x1_res", [N("Conv", ["x", "w"], ["c"]), N("Add", ["c", "x"], ["y"])], [vi("x", F32, [1, 6, 5, 7])], Y, [const("w", w(6, 6, 1, 1))])
save("conv_3x3_res", [N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), N("Add", ["c", "x"], ["y"])], [vi("x", F32, [1, 6, 5, 7])], Y,
     [const("w", w(6, 6, 3, 3))])
# depthwise rows shorter than a vector with a SiLU and residual epilogue: dwr's
# partial row ends run the vector epilogue (reading the residual past the row)
save("conv_dw_silu_res", [N("Conv", ["x", "w"], ["c"], group=4, pads=[1, 1, 1, 1]), N("Sigmoid", ["c"], ["s"]), N("Mul", ["c", "s"], ["m"]),
                          N("Add", ["m", "x"], ["y"])], [vi("x", F32, [1, 4, 5, 7])], Y, [const("w", w(4, 1, 3, 3))])

# pool
save("pool_lp", N("LpPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], p=3), [vi("x", F32, [1, 3, 7, 9])], Y)
save("pool_globallp", N("GlobalLpPool", ["x"], ["y"], p=2), [vi("x", F32, [2, 3, 5, 7])], Y)
save("pool_max_ceil", N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 1], ceil_mode=1), [vi("x", F32, [1, 2, 8, 9])], Y)
# pool_row's 3-wide stride-2 vectors: a left pad of one, the row's partial last block moved left
save("pool_max_rows", N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), [vi("x", F32, [1, 2, 5, 40])], Y)
save("pool_avg_rows", N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2]), [vi("x", F32, [1, 2, 5, 35])], Y)

# resize
save("rs_linear_odd", N("Resize", ["x", "", "s"], ["y"], mode="linear"), [vi("x", F32, [1, 2, 5, 7])], Y, [const("s", np.array([1, 1, 1.6, 0.7], np.float32))])
save("rs_cubic_sizes", N("Resize", ["x", "", "", "sz"], ["y"], mode="cubic"), [vi("x", F32, [1, 2, 5, 7])], Y, [const("sz", i64(1, 2, 9, 4))])
# a leading axis resamples too: resize_taps (the others take resize_hw)
save("rs_channels", N("Resize", ["x", "", "s"], ["y"], mode="nearest"), [vi("x", F32, [1, 2, 3, 5])], Y, [const("s", np.array([1, 1.5, 1, 2], np.float32))])
# integer-factor nearest upsampling: resize_up (a vector row and a row end)
save("rs_up2", N("Resize", ["x", "", "s"], ["y"], mode="nearest"), [vi("x", F32, [1, 2, 3, 11])], Y, [const("s", np.array([1, 1, 2, 2], np.float32))])

# rnn
H, I, S, B = 5, 3, 4, 2
save("rnn_gru_lbr_bidi", N("GRU", ["x", "w", "r", "b"], ["y", "yh"], hidden_size=H, linear_before_reset=1, direction="bidirectional"),
     [vi("x", F32, [S, B, I])], [vi("y", F32, None), vi("yh", F32, None)], [const("w", w(2, 3 * H, I)), const("r", w(2, 3 * H, H)), const("b", w(2, 6 * H))])
save("rnn_lstm_rev", N("LSTM", ["x", "w", "r", "b"], ["y", "yh", "yc"], hidden_size=H, direction="reverse"),
     [vi("x", F32, [S, B, I])], [vi("y", F32, None), vi("yh", F32, None), vi("yc", F32, None)],
     [const("w", w(1, 4 * H, I)), const("r", w(1, 4 * H, H)), const("b", w(1, 8 * H))])

# misc: DFT/STFT on odd lengths
save("misc_dft_odd", N("DFT", ["x", "", "ax"], ["y"], onesided=1), [vi("x", F32, [2, 13, 1])], Y, [const("ax", np.array(1, np.int64))], opset=20)
save("misc_stft_odd", N("STFT", ["x", "st", "win"], ["y"]), [vi("x", F32, [1, 37, 1])], Y,
     [const("st", np.array(5, np.int64)), const("win", np.hanning(9).astype(np.float32))], opset=17)
EOF

# ---- the families ------------------------------------------------------------
# conf_FAMILY: ONNX backend tests (under $DATA); run_FAMILY: models above run
# with --check; tune_FAMILY: MODEL:STRATEGY:TRIALS:SEED tuned with kiln tune;
# need_FAMILY: kernels that must have run (kernel files not generated by
# macros; a dispatch change that stops running one is reported).
conf_elementwise="add_bcast sub_uint8 mul_bcast div_bcast mod_mixed_sign_int32 mod_mixed_sign_float32 pow_bcast_array pow_types_int64_float32
  prelu_broadcast bitshift_right_uint16 bitshift_left_uint64 and_bcast4v3d or_bcast3v1d xor_bcast4v4d not_3d equal_bcast less_equal_bcast
  greater where_long_example clip_splitbounds clip_default_int8_min max_example min_uint8 sum_example mean_example abs neg sign relu shrink_soft
  sigmoid tanh elu selu leakyrelu hardsigmoid hardswish softplus softsign thresholdedrelu celu erf exp log sqrt reciprocal floor ceil round
  sin cos tan asin acos atan sinh cosh asinh acosh atanh isinf_negative isnan"
run_elementwise="ew_add_bcast ew_mul_1001 ew_relu_1003 ew_where_odd ew_clip_odd ew_pow_int ew_add_chan ew_add_col ew_pow2 ew_pow_half ew_fused_bcast"
need_elementwise="ew_where ew_clip ew_square ew_sqrt_pow"
conf_cast="cast_FLOAT_to_FLOAT16 cast_FLOAT16_to_FLOAT cast_DOUBLE_to_FLOAT cast_FLOAT_to_DOUBLE cast_BFLOAT16_to_FLOAT castlike_FLOAT_to_DOUBLE
  castlike_FLOAT16_to_DOUBLE"
run_cast="cast_f32_i32 cast_i64_f32 cast_f32_bool cast_u8_f32 cast_f32_bf16 cast_f32_f16"
need_cast=""
conf_movement="transpose_all_permutations_3 transpose_default concat_3d_axis_1 split_variable_parts_2d split_zero_size_splits slice_neg_steps
  slice_default_steps gather_2d_indices gather_negative_indices gather_elements_negative_indices gathernd_example_int32_batch_dim1 reflect_pad
  edge_pad constant_pad tril_neg triu_one_row eyelike_populate_off_main_diagonal onehot_with_negative_axis reversesequence_batch
  reversesequence_time tile expand_dim_changed depthtospace_crd_mode spacetodepth compress_negative_axis nonzero_example unique_sorted_with_axis
  range_int32_type_negative_delta"
run_movement="mv_transpose_odd mv_transpose_tiles mv_slice_step mv_gather_nd mv_pad_reflect mv_concat_odd"
need_movement="mv_strided mv_transpose2 mv_gather mv_gather_elements mv_gather_nd mv_pad mv_trilu mv_eye mv_onehot mv_revseq"
conf_scatter="scatter_elements_with_axis scatter_elements_with_duplicate_indices scatter_elements_with_negative_indices scatter_elements_without_axis
  scatter_with_axis scatter_without_axis scatternd scatternd_add scatternd_multiply"
run_scatter="sc_nd_max sc_el_add"
need_scatter="mvs_scatter_elements mvs_scatter_nd"
conf_reduce="reduce_sum_keepdims_random reduce_sum_empty_axes_input_noop_random reduce_mean_negative_axes_keepdims_random
  reduce_max_do_not_keepdims_random reduce_min_default_axes_keepdims_random reduce_prod_keepdims_random reduce_l1_keep_dims_random
  reduce_l2_do_not_keepdims_random reduce_log_sum_asc_axes reduce_log_sum_exp_keepdims_random reduce_sum_square_negative_axes_keepdims_random
  argmax_keepdims_random_select_last_index argmin_no_keepdims_random cumsum_1d_reverse_exclusive cumsum_2d_axis_1 top_k top_k_smallest
  top_k_negative_axis nllloss_NCd1d2_with_weight_reduction_mean nllloss_NCd1d2d3_sum_weight_high_ii sce_mean_weight_ii_3d
  sce_NCd1d2d3d4d5_none_no_weight_log_prob"
run_reduce="rd_sum_300 rd_max_all rd_mean_inner rd_argmax_300 rd_cumsum_131 rd_topk_97 rd_nll_mean rd_mean_lines"
need_reduce="reduce_item reduce_wg arg_reduce cumsum_line topk_rank nll_elem nll_reduce"
conf_softmax="softmax_axis_0 softmax_axis_2 softmax_large_number logsoftmax_axis_1 logsoftmax_negative_axis hardmax_one_hot hardmax_axis_1"
run_softmax="sm_softmax_300 sm_logsoftmax_257 sm_hardmax_odd sm_softmax_lines"
need_softmax="softmax_item softmax_wg"
run_attention="at_mha_mask at_single_odd"
need_attention="attention"
conf_norm="batchnorm_epsilon batchnorm_example_training_mode instancenorm_example instancenorm_epsilon layer_normalization_3d_axis1_epsilon
  layer_normalization_4d_axis_negative_2 layer_normalization_2d_axis0 lrn lrn_default mvn quantizelinear_axis dequantizelinear_axis
  dynamicquantizelinear_max_adjusted"
run_norm="nm_layernorm_130 nm_groupnorm nm_instnorm_143 nm_bn_train nm_lrn_odd nm_layernorm_rows nm_rmsnorm_decomposed"
need_norm="norm_rows batchnorm bn_stats lrn quantize dequantize dq_params"
conf_gemm="matmul_2d matmul_3d matmul_4d gemm_all_attributes gemm_transposeA gemm_transposeB gemm_default_vector_bias gemm_alpha
  einsum_batch_matmul einsum_transpose einsum_inner_prod einsum_batch_diagonal einsum_sum det_2d det_nd matmulinteger qlinearmatmul_2D
  qlinearmatmul_3D"
tune_gemm="gemm_mm_13x17x19:random:4:1 gemm_mm_13x17x19:exhaustive:4:0 gemm_mm_constb_batched:random:4:2 gemm_gemm_tt_bias:random:4:3
  gemm_mm_bcast:random:3:4"
# params_FAMILY: PROGRAM:CASE[:CASE...] run under Oclgrind with --case
# filters (labels of tests/gemm_params.c / conv_params.c); every forced vector
# must match the reference. CLBlast (KERNEL=2) is left out: not kiln's code.
params_gemm="$GEMM_PARAMS:MatMul 33x17x65:MatMul 33x17x65 constB:MatMul bcast both:Gemm tA1 tB0 bias2"
need_gemm="gemm gemm_panel gemm_pack_b"
conf_conv="basic_conv_with_padding conv_with_strides_and_asymmetric_padding conv_with_autopad_same convtranspose convtranspose_1d
  convtranspose_3d convtranspose_dilations convtranspose_pads convinteger_with_padding qlinearconv basic_convinteger"
tune_conv="conv_s2_p1:exhaustive:6:0 conv_s2_p1:random:3:5 conv_s1_p1_bias:exhaustive:6:0 conv_1x1:exhaustive:4:0 conv_1x1_s2:random:3:6
  conv_dw:exhaustive:4:0 conv_group_dil:random:3:7 conv_var_w:random:3:8 conv_1d:random:3:9 conv_1x1_res:exhaustive:6:0 conv_3x3_res:exhaustive:6:0
  conv_dw_silu_res:exhaustive:9:0"
# (each label matches one case: one case per Oclgrind process)
params_conv="$CONV_PARAMS:3x3 s1 p1 edge tiles:1x1 s2x3 grouped:depthwise 3x3 s2 p1 N=2:3x3 dil 2 p2:3x3 s1 p1 C=1 M=1:depthwise 9x9 s1 p4:depthwise 3x3 s1 p1 wide rows:1x1 s1 input scaled no bias:5x5 s1 p2 C=3 M=6 (oclgrind):depthwise 5x5 s2 p2 NCHW16c:1x1 s1 NCHW16c in and out N=2:1x1 s1 NCHW16c in, input scaled:stem 3x3 s2 p1 NCHW16c out:3x3 s2 p1.0 NCHW16c in, NCHW out M=20"
need_conv="conv_direct conv_dw conv_dwv conv_dwr conv_pw conv_gemm conv_gemm_s conv_gemm_local conv_im2col conv_im2col_p wino_in wino_in_p wino_out wino4_in_p
  wino4_out conv_dirv conv_dirc conv_pad conv_dw16"
conf_pool="maxpool_2d_ceil maxpool_2d_dilations maxpool_2d_same_lower maxpool_3d_default maxpool_with_argmax_2d_precomputed_strides
  averagepool_2d_pads_count_include_pad averagepool_2d_ceil averagepool_1d_default globalaveragepool globalmaxpool
  maxunpool_export_with_output_shape maxunpool_export_without_output_shape"
run_pool="pool_lp pool_globallp pool_max_ceil pool_max_rows pool_avg_rows"
need_pool="pool_fwd unpool_scatter"
conf_resize="resize_upsample_scales_nearest resize_downsample_scales_linear resize_upsample_scales_cubic resize_tf_crop_and_resize
  resize_upsample_sizes_nearest_ceil_half_pixel resize_downsample_sizes_linear_pytorch_half_pixel upsample_nearest gridsample gridsample_bicubic
  gridsample_reflection_padding gridsample_border_padding gridsample_nearest gridsample_aligncorners_true"
run_resize="rs_linear_odd rs_cubic_sizes rs_channels rs_up2"
need_resize="resize_taps resize_hw resize_up grid_sample"
conf_rnn="rnn_seq_length simple_rnn_batchwise simple_rnn_with_initial_bias gru_defaults gru_seq_length gru_batchwise gru_with_initial_bias
  lstm_defaults lstm_with_peepholes lstm_batchwise"
run_rnn="rnn_gru_lbr_bidi rnn_lstm_rev"
need_rnn="rnn_xw rnn_step lstm_step gru_step_lbr gru_step_a gru_step_b"
conf_misc="dft dft_axis dft_inverse stft stft_with_window hannwindow hammingwindow_symmetric blackmanwindow melweightmatrix"
run_misc="misc_dft_odd misc_stft_odd"
need_misc="dft stft"
conf_strings="strnormalizer_export_monday_casesensintive_lower strnormalizer_export_monday_casesensintive_upper
  strnormalizer_export_monday_empty_output strnormalizer_export_monday_insensintive_upper_twodim strnormalizer_nostopwords_nochangecase
  ../simple/test_strnorm_model_monday_casesensintive_nochangecase"
need_strings="string_normalizer"
conf_sequence="../simple/test_sequence_model1 ../simple/test_sequence_model2 ../simple/test_sequence_model3 ../simple/test_sequence_model4
  ../simple/test_sequence_model5 ../simple/test_sequence_model6 ../simple/test_sequence_model7 ../simple/test_sequence_model8"
need_sequence=""
copy_only_sequence=1 # sequences move with clEnqueueCopyBufferRect: no kernels
# detection and the rest: NonMaxSuppression, RoiAlign, TfIdfVectorizer, the
# optimizers, and control flow (Loop, If, Scan bodies run as device sessions)
conf_detect="nonmaxsuppression_two_batches nonmaxsuppression_center_point_box_format nonmaxsuppression_limit_output_size
  roialign_aligned_false roialign_aligned_true tfidfvectorizer_tf_uniandbigrams_skip5 tfidfvectorizer_tf_batch_onlybigrams_skip5
  adagrad_multiple adam momentum nesterov_momentum loop11 if scan_sum scan9_sum"
need_detect="nms_iou nms_rank nms_select nms_compact roialign tfidf optim_step"

# ---- running under oclgrind ----------------------------------------------------
now() { date +%s; }
# og LOG CMD...: runs CMD under Oclgrind, output (both streams) in LOG.
# (their own variable for the log: one named `log` clobbered the caller's,
# and the per-vector loop below then appended each vector's reports to that
# vector's own log and judged only the last one)
og() { _oglog=$1; shift; ${OGF:-$OG} "$@" >"$_oglog" 2>&1; }
# ogt LOG CMD...: the same for tuning runs (see OG_TUNE)
ogt() { _oglog=$1; shift; ${OGT:-$OG_TUNE} "$@" >"$_oglog" 2>&1; }
# reports LOG: prints Oclgrind's diagnostics in LOG, each after the name of the
# conformance test it came before; returns 1 if there were any.
reports() {
  awk -v pat="$ERRPAT" '
    $0 ~ pat { buf = buf "    " $0 "\n"; next }
    /^(passed|FAILED|UNSUPPORTED) / { if (buf != "") { printf "  oclgrind report before: %s\n%s", $0, buf; buf = "" } }
    END { if (buf != "") printf "  oclgrind report:\n%s", buf }' "$1" | head -200
  ! grep -Eq "$ERRPAT" "$1"
}
# nreports LOG: how many diagnostics (message lines, or their Kernel: lines).
nreports() {
  a=$(grep -E "$ERRPAT" "$1" | grep -Evc '^[[:space:]]+Kernel: ')
  b=$(grep -Ec '^[[:space:]]+Kernel: ' "$1")
  echo $((a > b ? a : b))
}
kernels_in() { sed -n "s/^Instructions executed for kernel '\(.*\)':.*/\1/p" "$@" 2>/dev/null | sort -u; }

# check_tune LOG DB WANT: the JSON of `kiln tune` in LOG and the records in
# DB: every instance measured >= WANT vectors (or all it has), none rejected.
# Prints VEC lines (one per record), FAIL lines and "COUNT records failures".
check_tune() {
  "$PY" - "$1" "$2" "$3" <<'EOF'
import json, sqlite3, sys
log, db, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
js = None
for line in open(log, errors="replace"):
    if line.startswith('{"model"'):
        js = json.loads(line)
if js is None:
    print("FAIL no JSON result from kiln tune"); sys.exit(0)
bad = 0
for inst in js["instances"]:
    if inst["trials"] < min(want, inst.get("candidates", want)) or inst["rejected"]:
        bad += 1
        print("FAIL %s %s: %d trials, %d rejected" % (inst["family"], inst["shape_key"], inst["trials"], inst["rejected"]))
if not js["instances"]:
    bad += 1; print("FAIL no tunable instance")
c = sqlite3.connect(db)
n = 0
for fam, key, params, status, err in c.execute("select family, shape_key, params, status, max_err from records order by id"):
    n += 1
    print("VEC %s %s [%s] %s err=%s" % (fam, key, params, status, "-" if err is None else "%.1e" % err))
print("COUNT %d %d" % (n, bad))
EOF
}

total_fail=0
for fam in $FAMILIES; do
  [ -z "$ALL" ] || case " $ALL " in *" $fam "*) ;; *) echo "FAIL: unknown family '$fam' (families: $ALL)"; total_fail=$((total_fail + 1)); continue ;; esac
  eval "conf=\${conf_$fam:-}; run=\${run_$fam:-}; tune=\${tune_$fam:-}; need=\${need_$fam:-}"
  OGF=$OG OGT=$OG_TUNE
  case " $NOINST " in *" $fam "*) OGF=$(echo "$OG" | sed 's/ --inst-counts//'); OGT=$(echo "$OG_TUNE" | sed 's/ --inst-counts//'); need= ;; esac
  D="$T/$fam"
  mkdir -p "$D"
  t0=$(now)
  fails=0 errs=0 ntests=0 nmodels=0 nvec=0
  summary=""
  # 1. ONNX backend tests
  if [ -n "$conf" ]; then
    dirs=""
    for c in $conf; do
      case $c in ../*) p="$DATA/node/$c" ;; *) p="$DATA/node/test_$c" ;; esac
      [ -d "$p" ] || { echo "  FAIL: missing test data $p"; fails=$((fails + 1)); continue; }
      dirs="$dirs $p"; ntests=$((ntests + 1))
    done
    # one process per test: Oclgrind 21.10's uninitialized-value plugin loses
    # track of writes to a buffer that reuses a released buffer's slot with a
    # larger size (a GRU run after another one reads its own fresh writes as
    # uninitialized), so sessions are not chained in one process
    np=0
    for p in $dirs; do
      name=${p##*/}
      og "$D/conf_$name.log" "$CONF" --device oclgrind --timeout 900 "$p"
      rc=$?
      if ! reports "$D/conf_$name.log" >"$D/rep"; then
        echo "  oclgrind reports in $name:"; cat "$D/rep"; errs=$((errs + $(nreports "$D/conf_$name.log")))
      fi
      if [ $rc -eq 0 ] && grep -q '^1 passed, 0 failed$' "$D/conf_$name.log"; then np=$((np + 1)); else
        echo "  FAIL: $name (exit $rc):"; grep -E '^(FAILED|UNSUPPORTED|REGRESSION)|kiln_conformance:' "$D/conf_$name.log" | sed 's/^/    /' | head -5
        fails=$((fails + 1))
      fi
    done
  fi
  # 2. generated models, device vs CPU reference
  for m in $run; do
    nmodels=$((nmodels + 1))
    case " $NOUNINIT_RUN " in
      *" $m "*) OGF=$(echo "${OGF:-$OG}" | sed 's/ --uninitialized//') og "$D/run_$m.log" "$KILN" run "$T/models/$m.onnx" --random --seed 3 --check --device oclgrind ;;
      *) og "$D/run_$m.log" "$KILN" run "$T/models/$m.onnx" --random --seed 3 --check --device oclgrind ;;
    esac
    rc=$?
    if ! reports "$D/run_$m.log" >"$D/rep" ; then
      echo "  oclgrind reports in $m:"; cat "$D/rep"; errs=$((errs + $(nreports "$D/run_$m.log")))
    fi
    if [ $rc -ne 0 ]; then echo "  FAIL: kiln run $m.onnx --check (exit $rc):"; grep -v "^ *[0-9]" "$D/run_$m.log" | tail -5 | sed 's/^/    /'; fails=$((fails + 1)); fi
  done
  # 3. tunable kernels: candidates on the device, checked against the reference
  for spec in $tune; do
    IFS=: read -r m strat trials seed <<EOS
$spec
EOS
    nmodels=$((nmodels + 1))
    db="$D/tune_${m}_${strat}_$seed.db"
    log="$D/tune_${m}_${strat}_$seed.log"
    ogt "$log" "$KILN" tune "$T/models/$m.onnx" --db "$db" --strategy "$strat" --max-trials "$trials" --seed "$seed" --device oclgrind --json
    rc=$?
    if ! reports "$log" >"$D/rep"; then
      echo "  oclgrind reports in kiln tune $m ($strat):"; cat "$D/rep"; errs=$((errs + $(nreports "$log")))
    fi
    # every instance: >= min(trials, candidates) vectors measured, none rejected
    out=$(check_tune "$log" "$db" "$trials")
    echo "$out" | grep '^VEC' | sed "s/^VEC/    $m ($strat, seed $seed):/" >>"$D/vectors"
    cnt=$(echo "$out" | sed -n 's/^COUNT \([0-9]*\) .*/\1/p')
    nvec=$((nvec + ${cnt:-0}))
    if [ $rc -ne 0 ] || echo "$out" | grep -q '^FAIL'; then
      echo "  FAIL: kiln tune $m.onnx --strategy $strat (exit $rc):"
      echo "$out" | grep -E '^(FAIL|VEC)' | sed 's/^/    /'
      grep -v '^{' "$log" | grep -v "^ *[0-9]" | tail -5 | sed 's/^/    /'
      fails=$((fails + 1))
    fi
  done
  # 4. generated models with tunable kernels (any family): three random
  #    vectors per instance from the kernel's descriptor
  for m in $run; do
    "$KILN" plan "$T/models/$m.onnx" --no-measure --json >"$D/plan_$m.json" 2>/dev/null || continue
    grep -o '"family":"[a-z][a-z]*"' "$D/plan_$m.json" | grep -vq '"fused"' || continue # generated fused kernels have no parameters
    nmodels=$((nmodels + 1))
    db="$D/tune_${m}_auto.db"
    log="$D/tune_${m}_auto.log"
    ogt "$log" "$KILN" tune "$T/models/$m.onnx" --db "$db" --strategy random --max-trials 3 --seed 11 --device oclgrind --json
    rc=$?
    if ! reports "$log" >"$D/rep"; then
      echo "  oclgrind reports in kiln tune $m:"; cat "$D/rep"; errs=$((errs + $(nreports "$log")))
    fi
    out=$(check_tune "$log" "$db" 3)
    echo "$out" | grep '^VEC' | sed "s/^VEC/    $m (random, seed 11):/" >>"$D/vectors"
    cnt=$(echo "$out" | sed -n 's/^COUNT \([0-9]*\) .*/\1/p')
    nvec=$((nvec + ${cnt:-0}))
    if [ $rc -ne 0 ] || echo "$out" | grep -q '^FAIL'; then
      echo "  FAIL: kiln tune $m.onnx (exit $rc):"; echo "$out" | grep -E '^(FAIL|VEC)' | sed 's/^/    /'; fails=$((fails + 1))
    fi
  done
  # 5. forced parameter vectors of every kernel variant (gemm_params,
  #    conv_params), one process per case: like the conformance tests above,
  #    because Oclgrind's uninitialized-value plugin loses track of writes
  #    to a buffer that reuses a released buffer's slot (gemm_panel reading
  #    its freshly packed B was reported when the constant-B case ran after
  #    another one in the same process, and not when it ran alone)
  eval "params=\${params_$fam:-}"
  if [ -n "$params" ]; then
    prog=${params%%:*}
    cases=${params#*:}
    if [ ! -x "$prog" ]; then echo "  FAIL: $prog not built"; fails=$((fails + 1)); else
      ci=0
      while [ -n "$cases" ]; do
        c=${cases%%:*}
        case $cases in *:*) cases=${cases#*:} ;; *) cases= ;; esac
        ci=$((ci + 1))
        log="$D/params_$ci.log"
        # KILN_GEMM_KERNELS=0,1: kiln's own GEMM kernels (no CLBlast).
        # Within a case the vectors' scratch buffers reuse released slots
        # with larger sizes, and the uninitialized-value plugin then reports
        # reads of freshly written data (conv_params '3x3 s1 p1 edge tiles':
        # 1000 reports at conv_gemm's first work-items from vector 4 on; each
        # of its 25 vectors alone: none). So the whole case runs with the
        # other checks, and each vector (SC_ONLY, tests/solver_cover.h) in a
        # process of its own with the plugin too.
        KILN_GEMM_KERNELS=0,1 OGF=$(echo "${OGF:-$OG}" | sed 's/ --uninitialized//') og "$log" "$prog" --device oclgrind --case "$c"
        rc=$?
        summ=$(grep -E '^[0-9]+ (runs|parameter vectors run)' "$log" | tail -1)
        nv=$(echo "$summ" | sed -n 's/^\([0-9]*\) .*/\1/p')
        case "$OG" in *--uninitialized*)
          vi=0
          while [ $vi -lt "${nv:-0}" ]; do
            vlog="$D/params_${ci}_v$vi.log"
            KILN_GEMM_KERNELS=0,1 SC_ONLY=$vi og "$vlog" "$prog" --device oclgrind --case "$c" || rc=$?
            grep -E "$ERRPAT" "$vlog" >>"$log" # its reports (the vector lines stay out of the summary below)
            vi=$((vi + 1))
          done ;;
        esac
        if ! reports "$log" >"$D/rep"; then
          echo "  oclgrind reports in ${prog##*/} --case '$c':"; cat "$D/rep"; errs=$((errs + $(nreports "$log")))
        fi
        nvec=$((nvec + ${nv:-0}))
        echo "    ${prog##*/} --case '$c': $summ" >>"$D/vectors"
        grep -E '^(ok|FAIL) ' "$log" | sed 's/^/      /' >>"$D/vectors"
        if [ $rc -ne 0 ] || [ -z "$summ" ] || [ "${nv:-0}" -lt 3 ]; then
          echo "  FAIL: ${prog##*/} --case '$c' under oclgrind (exit $rc, ${nv:-0} vectors):"; grep -E 'FAIL|error' "$log" | head -10 | sed 's/^/    /'
          fails=$((fails + 1))
        fi
      done
    fi
  fi
  # coverage: the kernels that ran
  ran=$(kernels_in "$D"/*.log | tr '\n' ' ')
  eval "copy_only=\${copy_only_$fam:-0}"
  case " $NOINST " in *" $fam "*) copy_only=1; ran="(not counted: see NOINST)" ;; esac
  if [ -z "$ran" ] && [ "$copy_only" != 1 ]; then echo "  FAIL: no kernel of family $fam ran on the device"; fails=$((fails + 1)); fi
  for k in $need; do
    case " $ran " in *" $k "*) ;; *) echo "  FAIL: kernel $k did not run (dispatch changed? adjust the models or need_$fam)"; fails=$((fails + 1)) ;; esac
  done
  secs=$(($(now) - t0))
  [ $errs -gt 0 ] && fails=$((fails + 1))
  status=ok; [ $fails -gt 0 ] && status=FAIL
  echo "$status $fam: $ntests backend tests, $nmodels generated models/tune runs, $nvec tuned parameter vectors, $errs oclgrind reports, ${secs}s"
  echo "    kernels: $ran"
  [ -f "$D/vectors" ] && cat "$D/vectors"
  total_fail=$((total_fail + fails))
done
if [ $total_fail -gt 0 ]; then echo "oclgrind: $total_fail failure(s)"; exit 1; fi
echo "oclgrind: all families clean"
exit 0
