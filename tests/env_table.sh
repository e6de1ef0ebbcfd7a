#!/bin/sh
# env_table.sh: kiln's environment variables have one table
# (runtime/options.c), and everything that documents or reads them agrees:
#   1. README.md's table (between the env-table markers) is the table that
#      `kiln --help` prints, row for row (with --write, rewrites it so);
#   2. the library (runtime/, kernels/, db/, costmodel/, tuner/) calls getenv
#      only in runtime/options.c, besides HOME and OCL_ICD_VENDORS;
#   3. the command reads no KILN_* variable of its own (cli/ calls getenv for
#      nothing but TMPDIR);
#   4. every KILN_ variable the table names is read, and a malformed value
#      is refused naming it (exit status 2).
#
# usage: env_table.sh PATH/TO/kiln SOURCE_DIR [--write]     (ctest: env_table)
set -u
KILN=${1:?usage: env_table.sh PATH/TO/kiln SOURCE_DIR [--write]}
SRC=${2:?usage: env_table.sh PATH/TO/kiln SOURCE_DIR [--write]}
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-env.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. `kiln --help`'s rows ("  NAME=VALUE", "      changes", "      key: K") as markdown
"$KILN" --help >"$T/help" || fail "kiln --help exited $?"
awk '/^environment/ { on = 1; next }
     on && /^  [A-Z]/ { if (row) print row; sub(/^  /, ""); n = index($0, "="); row = "| `" substr($0, 1, n - 1) "` | `" substr($0, n + 1) "` |"; next }
     on && /^      key: / { sub(/^      key: /, ""); row = row " " $0 " |"; next }
     on && /^      / { sub(/^      /, ""); row = row " " $0 " |"; next }
     END { if (row) print row }' "$T/help" >"$T/want"
[ -s "$T/want" ] || fail "kiln --help prints no environment table"
R="$SRC/README.md"
sed -n '/<!-- env-table begin -->/,/<!-- env-table end -->/p' "$R" | grep '^| `' >"$T/have"
if [ "${3:-}" = --write ]; then
  awk -v rows="$T/want" '/<!-- env-table end -->/ { while ((getline l < rows) > 0) print l }
                         /^\| `KILN_/ { next } { print }' "$R" >"$T/readme" && cp "$T/readme" "$R" && echo "wrote the table into $R"
  exit 0
fi
if ! cmp -s "$T/want" "$T/have"; then
  fail "README.md's environment table differs from kiln --help's (run: sh tests/env_table.sh build/kiln . --write)"
  diff "$T/have" "$T/want" | head -40
fi

# 2. and 3. who calls getenv
lib=$(cd "$SRC" && grep -rn 'getenv(' runtime kernels db costmodel tuner --include='*.c' --include='*.h' |
  grep -v '^runtime/options\.c:' | grep -v 'getenv("HOME")\|getenv("OCL_ICD_VENDORS")')
[ -z "$lib" ] || fail "the library reads the environment outside runtime/options.c: $lib"
cli=$(cd "$SRC" && grep -rn 'getenv(' cli | grep -v 'getenv("TMPDIR")')
[ -z "$cli" ] || fail "cli/ reads the environment itself (use kiln_cli_env): $cli"

# 4. each variable is read: a value that cannot be one is refused, or (strings) accepted
names=$(sed -n 's/^| `\(KILN_[A-Z_]*\)`.*/\1/p' "$T/want")
[ -n "$names" ] || fail "no variables in the table"
for v in KILN_GEMM_KERNELS KILN_MAX_MODEL_BYTES; do
  echo "$names" | grep -qx "$v" || { fail "$v missing from the table"; continue; }
  out=$(env "$v=junk" "$KILN" info /nonexistent.onnx 2>&1); rc=$?
  [ $rc -eq 2 ] && echo "$out" | grep -q "error: $v=junk" || fail "$v=junk: exit $rc, '$out'"
done
for v in $names; do
  grep -q "\"$v\"" "$SRC/runtime/options.c" || fail "$v is not in runtime/options.c's table"
done
[ $fails -eq 0 ] && echo "ok: $(echo "$names" | wc -l) variables, README and kiln --help agree, one reader"
exit $((fails > 0))
