#!/bin/sh
# install_example.sh BUILD_DIR SOURCE_DIR: `cmake --install` of kiln into a
# temporary prefix, then examples/hello.c built with nothing but
# `pkg-config --cflags --libs kiln` (PKG_CONFIG_PATH pointing into the prefix)
# (-std=c11 -Wall -Werror) and run without LD_LIBRARY_PATH (kiln.pc carries an
# rpath); also examples/Makefile, and the Python package installed into the
# prefix (it must find the prefix's library). Exit 77 (skipped) when there is no
# OpenCL device.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
pc=$(find "$tmp/prefix" -name kiln.pc | head -n 1)
[ -n "$pc" ] || { echo "install_example: no kiln.pc installed"; exit 1; }
for f in include/kiln.h bin/kiln; do
  [ -e "$tmp/prefix/$f" ] || { echo "install_example: $f not installed"; exit 1; }
done
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs kiln)
libdir=$(pkg-config --variable=libdir kiln)
echo "pkg-config --cflags --libs kiln: $flags"
ls "$libdir"
cc -std=c11 -Wall -Werror "$src/examples/hello.c" $flags -o "$tmp/hello"
# the installed CLI runs too
"$tmp/prefix/bin/kiln" --version
rc=0
# no LD_LIBRARY_PATH: kiln.pc's rpath finds the library
env -u LD_LIBRARY_PATH "$tmp/hello" || rc=$?
[ "$rc" = 77 ] && { echo "install_example: no OpenCL device, skipped"; exit 77; }
[ "$rc" = 0 ] || { echo "install_example: hello exited with $rc"; exit 1; }
# examples/Makefile, outside the source tree
cp "$src/examples/hello.c" "$src/examples/Makefile" "$tmp/"
make -s -C "$tmp" hello CFLAGS="-std=c11 -Wall -Werror"
env -u LD_LIBRARY_PATH "$tmp/hello" >/dev/null
# the Python package installed beside the library finds it there
pydir="$tmp/prefix/lib/python3/dist-packages"
[ -f "$pydir/kiln/__init__.py" ] || { echo "install_example: Python package not installed in $pydir"; exit 1; }
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  (cd "$tmp" && env -u KILN_LIBRARY -u LD_LIBRARY_PATH PYTHONPATH="$pydir" /usr/bin/python3 -c "
import os, numpy as np, kiln as ort
assert ort.LIBRARY_PATH.startswith('$tmp/prefix/'), ort.LIBRARY_PATH
ort.write_demo_model('cnn', 'cnn.onnx')
s = ort.InferenceSession('cnn.onnx')
x = np.ones(s.get_inputs()[0].shape, np.float32)
y, = s.run(None, {s.get_inputs()[0].name: x})
r, = s.run_reference(None, {s.get_inputs()[0].name: x})
assert np.abs(y - r).max() <= 1e-4 * max(1, np.abs(r).max()), np.abs(y - r).max()
print('python from the prefix:', ort.LIBRARY_PATH, y.shape)
")
fi
echo "install_example: ok"
