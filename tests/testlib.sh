# testlib.sh: the start the tuning and database scripts share, sourced
# (". ") with the script's name as $1 of kiln_test_start: KILN (the
# script's first argument), PY, a temporary directory T removed at exit,
# and fail MESSAGE (prints "FAIL: MESSAGE", exits 1).
kiln_test_start() { # NAME KILN_BINARY
  KILN=$2
  PY=/usr/bin/python3
  T=$(mktemp -d "/tmp/kiln_$1.XXXXXX")
  trap 'rm -rf "$T"' EXIT
}
fail() { echo "FAIL: $*"; exit 1; }
