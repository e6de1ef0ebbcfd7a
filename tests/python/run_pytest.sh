#!/bin/sh
# run_pytest.sh KILN_CLI LIBKILN SRC [PYTEST ARGS...]: runs the Python
# package's tests (tests/python/test_ort_api.py) against the built library and
# CLI with Debian's python3-pytest, python3-numpy and python3-onnx. Exit 77
# (skipped) when one of them or an OpenCL device is missing.
set -eu
cli=$1
lib=$2
src=$3
shift 3
py=/usr/bin/python3
$py -c "import pytest, numpy, onnx" 2>/dev/null || { echo "run_pytest: needs python3-pytest, python3-numpy, python3-onnx (scripts/setup-deps.sh), skipped"; exit 77; }
"$cli" devices >/dev/null 2>&1 || { echo "run_pytest: no OpenCL device, skipped"; exit 77; }
export KILN_CLI="$cli" KILN_LIBRARY="$lib" PYTHONPATH="$src/python" PYTHONDONTWRITEBYTECODE=1
exec $py -m pytest -q -p no:cacheprovider -rs "$src/tests/python/test_ort_api.py" "$@"
