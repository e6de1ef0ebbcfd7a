#!/bin/sh
# input_sets.sh KILN PYTHON SRC: one `kiln run --inputs-from` process runs an
# OCR-style model ([1,3,48,W], tests/python/make_models.py) over widths 160,
# 320, 480, 160, 320: every set's outputs match a separate single run of that
# shape (within 1e-4) and of the CPU reference (--check), and plans are built
# 3 times, not 5 (the count is printed and in --json). Exit 77 without an
# OpenCL device or python3-onnx.
set -eu
kiln=$1
py=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -c "import onnx, numpy" 2>/dev/null || { echo "input_sets: python3-onnx / numpy missing, skipped"; exit 77; }
"$kiln" devices >/dev/null 2>&1 || { echo "input_sets: no OpenCL device, skipped"; exit 77; }
"$py" "$src/tests/python/make_models.py" "$tmp"
"$py" - "$tmp" <<'PY'
import os, sys
import numpy as np
for k, w in enumerate((160, 320, 480, 160, 320)):
    d = os.path.join(sys.argv[1], "sets", str(k))
    os.makedirs(d)
    np.save(os.path.join(d, "x.npy"), np.random.default_rng(k).uniform(-1, 1, (1, 3, 48, w)).astype(np.float32))
PY
"$kiln" run "$tmp/ocr.onnx" --inputs-from "$tmp/sets" --check --output-dir "$tmp/out" >"$tmp/run.txt"
cat "$tmp/run.txt"
grep -q "^plans built: 3 " "$tmp/run.txt" || { echo "input_sets: expected 'plans built: 3'"; exit 1; }
"$kiln" run "$tmp/ocr.onnx" --inputs-from "$tmp/sets" --json >"$tmp/run.json"
for k in 0 1 2 3 4; do
  "$kiln" run "$tmp/ocr.onnx" --input "x=$tmp/sets/$k/x.npy" --output-dir "$tmp/single/$k" --json >/dev/null
done
"$py" - "$tmp" <<'PY'
import json, os, sys
import numpy as np
t = sys.argv[1]
j = json.load(open(os.path.join(t, "run.json")))
assert j["plans_built"] == 3, j["plans_built"]
assert [s["plans_built"] for s in j["sets"]] == [1, 2, 3, 3, 3], j["sets"]
assert [s["inputs"][0]["shape"][3] for s in j["sets"]] == [160, 320, 480, 160, 320]
for k, w in enumerate((160, 320, 480, 160, 320)):
    a = np.load(os.path.join(t, "out", str(k), "y.npy"))
    b = np.load(os.path.join(t, "single", str(k), "y.npy"))
    assert a.shape == (1, w // 4, 10) and a.shape == b.shape, (a.shape, b.shape)
    err = float(np.abs(a - b).max())
    assert err <= 1e-4, (k, err)
    print("set %d (W=%d): max abs diff vs a single run %.3g" % (k, w, err))
PY
# errors: a missing directory, a set without input files, a set whose shape contradicts the model
if "$kiln" run "$tmp/ocr.onnx" --inputs-from "$tmp/nope" 2>"$tmp/e1"; then echo "input_sets: missing dir accepted"; exit 1; fi
grep -q "cannot open directory" "$tmp/e1" || { cat "$tmp/e1"; exit 1; }
mkdir -p "$tmp/bad/0"
if "$kiln" run "$tmp/ocr.onnx" --inputs-from "$tmp/bad" 2>"$tmp/e2"; then echo "input_sets: empty set accepted"; exit 1; fi
grep -q "has no input file" "$tmp/e2" || { cat "$tmp/e2"; exit 1; }
"$py" -c "import numpy as np; np.save('$tmp/bad/0/x.npy', np.zeros((1,4,48,160), np.float32))"
if "$kiln" run "$tmp/ocr.onnx" --inputs-from "$tmp/bad" 2>"$tmp/e3"; then echo "input_sets: wrong channels accepted"; exit 1; fi
grep -q "input set '0': input 'x': expected shape \[1,3,48,W\], got \[1,4,48,160\]" "$tmp/e3" || { cat "$tmp/e3"; exit 1; }
echo "input_sets: ok"
