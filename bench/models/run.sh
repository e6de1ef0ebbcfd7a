#!/bin/sh
# run.sh: one command for the model comparison: setup (setup.sh), export
# (export.py, skipped for models already in OUT) and, for each model,
# compare.mjs (kiln vs ONNX Runtime CPU; exits non-zero on a mismatch).
#
# Usage: bench/models/run.sh [--models a,b] [--kiln PATH] [--out DIR] [--skip-setup]
#                            [compare.mjs options: --repeat N --rounds R --device SEL ...]
# Without --kiln, uses build/kiln and builds it there first when it is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
models=resnet18,mobilenet_v2
help=2,9p
. "$here/common.sh"

/usr/bin/python3 "$here/export.py" --models "$models" --out "$out"
rc=0
for m in $(echo "$models" | tr ',' ' '); do
  node "$here/compare.mjs" "$out/$m.onnx" --kiln "$kiln" "$@" || rc=1
done
exit $rc
