#!/bin/sh
# setup-deps.sh: installs kiln's build, test and runtime dependencies on
# Debian 12 (bookworm) with apt-get. Idempotent: when every package is already
# installed it does nothing (and needs no root); otherwise it runs
# `apt-get update` once and installs only the missing packages (as root, or
# through sudo when available).
set -eu

PACKAGES="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
libclblast-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libsqlite3-dev libopenblas-dev
clinfo oclgrind libonnx-testdata python3-onnx python3-numpy python3-pytest"

missing=
for p in $PACKAGES; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing="$missing $p"
done

if [ -z "$missing" ]; then
  echo "setup-deps: all $(echo $PACKAGES | wc -w) packages are installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-deps: apt-get not found; install these packages by hand:$missing" >&2
  exit 1
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo
  else
    echo "setup-deps: missing packages:$missing; run this script as root" >&2
    exit 1
  fi
fi

echo "setup-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# shellcheck disable=SC2086 # word splitting of the package list is intended
$SUDO apt-get install -y $missing
