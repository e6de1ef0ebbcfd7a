#!/bin/sh
# conv_roofline.sh: how close a model's convolutions come to the device's
# arithmetic peak. Effective GFLOP/s = direct-convolution FLOPs (2 x output
# elements x Cin/group x kernel size, whatever algorithm ran) over the summed
# median kernel time of the launches that compute them (`kiln bench
# --profile`; a convolution fused with its epilogue counts with it), against
# the probed peak (`kiln probe`: flops_peak) in the same run. Per launch too,
# slowest first, so the next kernel to work on is at the top, with the same
# layer as im2col + SGEMM through numpy on OpenBLAS (the system libblas;
# random data, median of the runs, in the same run after kiln's profile):
# its time and kiln's time over it ("x blas", above 1: kiln is slower).
# --no-blas leaves that out.
#
# usage: conv_roofline.sh PATH/TO/kiln MODEL.onnx [--db FILE] [--repeat N] [--no-blas]
# Needs python3 with the onnx and numpy modules (Debian python3-onnx).
set -eu
KILN=${1:?usage: conv_roofline.sh PATH/TO/kiln MODEL.onnx [--db FILE] [--repeat N] [--no-blas]}
MODEL=${2:?usage: conv_roofline.sh PATH/TO/kiln MODEL.onnx [--db FILE] [--repeat N] [--no-blas]}
shift 2
DB=""
REPEAT=10
BLAS=1
while [ $# -gt 0 ]; do
  case $1 in
    --db) DB="--db $2"; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --no-blas) BLAS=0; shift ;;
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
"$PY" - "$MODEL" "$T" "$BLAS" "$REPEAT" <<'PYEOF'
import json, os, sys, time
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

def attr(n, name, dflt):
    for a in n.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else a.i
    return dflt

def blas_us(c, reps):
    """im2col + SGEMM (numpy on the system BLAS) of 2-D Conv c: median us."""
    import numpy as np
    x, w, y = shapes.get(c.input[0]), shapes.get(c.input[1]), shapes.get(c.output[0])
    if not x or not w or not y or len(x) != 4 or len(y) != 4:
        return None
    N, C, H, W = x
    M, Cg, KH, KW = w
    G = attr(c, "group", 1)
    s = attr(c, "strides", [1, 1])
    d = attr(c, "dilations", [1, 1])
    p = attr(c, "pads", [0, 0, 0, 0])
    OH, OW = y[2], y[3]
    if attr(c, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"", ""):  # pads not given: as needed for the output
        ph, pw = max(0, (OH - 1) * s[0] + (KH - 1) * d[0] + 1 - H), max(0, (OW - 1) * s[1] + (KW - 1) * d[1] + 1 - W)
        p = [ph // 2, pw // 2, ph - ph // 2, pw - pw // 2]
    rng = np.random.default_rng(0)
    xp = np.pad(rng.standard_normal((N, C, H, W), dtype=np.float32), ((0, 0), (0, 0), (p[0], p[2] + s[0]), (p[1], p[3] + s[1])))
    wa = rng.standard_normal((G, M // G, Cg * KH * KW), dtype=np.float32)
    cols = np.empty((G, Cg, KH * KW, N * OH * OW), np.float32)
    out = np.empty((G, M // G, N * OH * OW), np.float32)
    ts = []
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        for kh in range(KH):
            for kw in range(KW):
                sl = xp[:, :, kh * d[0]:kh * d[0] + s[0] * (OH - 1) + 1:s[0], kw * d[1]:kw * d[1] + s[1] * (OW - 1) + 1:s[1]]
                cols[:, :, kh * KW + kw, :] = sl.reshape(N, G, Cg, OH * OW).transpose(1, 2, 0, 3).reshape(G, Cg, N * OH * OW)
        np.matmul(wa, cols.reshape(G, Cg * KH * KW, N * OH * OW), out=out)
        ts.append((time.perf_counter() - t0) * 1e6)
    ts = sorted(ts[1:])
    return ts[len(ts) // 2]

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
do_blas, reps = sys.argv[3] == "1", max(3, min(int(sys.argv[4]), 10))
blas = {}
if do_blas:
    try:
        import numpy  # noqa: F401
        for t, f, l, c in rows:
            blas[l["node"]] = blas_us(c, reps)
    except ImportError:
        print("(no numpy: no OpenBLAS comparison)")
eff = tot_f / (tot_t * 1e3)
print("%s: %d convolution launches, %.1f GFLOP in %.2f ms: %.1f GFLOP/s effective, %.0f%% of the probed peak %.1f GFLOP/s (%s)" %
      (os.path.basename(model_path), len(rows), tot_f / 1e9, tot_t / 1e3, eff, 100 * eff / peak, peak, bench.get("db") or "no database"))
bt = [blas[r[2]["node"]] for r in rows if blas.get(r[2]["node"])]
if bt and len(bt) == len(rows):
    print("OpenBLAS im2col + SGEMM of the same layers (numpy): %.2f ms, %.1f GFLOP/s; kiln/OpenBLAS %.2f" % (sum(bt) / 1e3, tot_f / (sum(bt) * 1e3), tot_t / sum(bt)))
print("%10s %8s %6s %6s %9s %7s  %-40s %s" % ("us", "GFLOP/s", "%peak", "%time", "blas us", "x blas", "conv (weights)", "params"))
for t, f, l, c in sorted(rows, key=lambda r: -r[0]):
    gf = f / (t * 1e3)
    b = blas.get(l["node"])
    bs = ("%9.1f %7.2f" % (b, t / b)) if b else "%9s %7s" % ("-", "-")
    print("%10.1f %8.1f %6.0f %6.1f %s  %-40s %s" % (t, gf, 100 * gf / peak, 100 * t / tot_t, bs, "%s %s" % (c.name[-24:], "x".join(map(str, shapes.get(c.input[1], [])))), l["params"]))
PYEOF
