#!/bin/sh
# cli_options.sh: every option the `kiln` command documents is accepted by
# the command that documents it. The list comes from `kiln --list-options`,
# which prints the same option tables the parser reads and --help is made
# from (cli/opts.h), so a new option cannot be missed here. For each command:
# `kiln <cmd> --help` starts with its usage line and names every option, in
# the usage line and in the option list. For each option: `kiln <cmd> ARGS
# <option> [value]` must not be refused by the parser (no usage line on
# stderr, no "unknown option"); the command then fails quickly on purpose
# (a missing model or database, no OpenCL platform), so nothing runs for long.
# Two refusals (an unknown option, a bad value) show the checks can fail.
#
# usage: cli_options.sh PATH/TO/kiln      (ctest: cli_options)
set -u

KILN=${1:?usage: cli_options.sh PATH/TO/kiln}
case $KILN in /*) ;; *) KILN=$(pwd)/$KILN ;; esac

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-cli-options.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
mkdir "$T/no-vendors" "$T/cwd"
cd "$T/cwd" || exit 1
# no OpenCL platform, no database: every command stops soon after parsing
export OCL_ICD_VENDORS="$T/no-vendors" KILN_DB="$T/missing.db" KILN_CACHE_DIR="$T/cache"
unset KILN_DEVICE KILN_DB_PATH

failures=0
fail() { echo "FAIL [$1] $2"; failures=$((failures + 1)); }

"$KILN" --list-options >"$T/options.tsv" || { echo "FAIL: kiln --list-options exited $?"; exit 1; }

# positional arguments that get each command past its own argument checks
base_args() {
  case $1 in
    run|info|tune|predict|plan|bench|"db coverage") echo "$T/missing.onnx" ;;
    model) echo "eval" ;;
    "db import"|"db verify") echo "$T/missing.db" ;;
    "db export") echo "-o $T/out.db" ;;
    "db merge") echo "-o $T/out.db $T/a.db $T/b.db" ;;
    *) echo "" ;;
  esac
}

# ---- help: generated from the same table ------------------------------------
ncmd=0
for cmd in $(cut -f1 "$T/options.tsv" | sort -u | tr ' ' '+'); do
  cmd=$(echo "$cmd" | tr '+' ' ')
  ncmd=$((ncmd + 1))
  # shellcheck disable=SC2086
  if ! "$KILN" $cmd --help >"$T/help.out" 2>"$T/help.err"; then fail "$cmd" "--help exited non-zero: $(cat "$T/help.err")"; continue; fi
  head -n 1 "$T/help.out" | grep -q "^usage: kiln $cmd" || fail "$cmd" "--help does not start with 'usage: kiln $cmd': $(head -n 1 "$T/help.out")"
  # the usage line(s): up to the first empty line
  sed '/^$/q' "$T/help.out" >"$T/usage.out"
  awk -F'\t' -v c="$cmd" '$1 == c && $2 != "" { print $2, ($5 == "" ? $2 : $5) }' "$T/options.tsv" | while read -r opt other; do
    # the usage line shows an option by one of its names
    grep -q -- "$opt" "$T/usage.out" || grep -q -- "$other" "$T/usage.out" || echo "FAIL [$cmd] the usage line lacks $opt" >>"$T/help-fail"
    grep -q -- "^  .*$opt" "$T/help.out" || echo "FAIL [$cmd] the option list lacks $opt" >>"$T/help-fail"
  done
done
if [ -s "$T/help-fail" ]; then cat "$T/help-fail"; failures=$((failures + $(wc -l <"$T/help-fail"))); fi
[ "$ncmd" -ge 20 ] || fail list "only $ncmd commands and db subcommands listed"
"$KILN" db show --help | head -n 1 | grep -q '^usage: kiln db show' || fail "db show" "kiln db show --help is not db show's help"

# ---- every option accepted ----------------------------------------------------
nopt=0
# tab-separated: command, option, kind, a value it accepts, its other name
while IFS="$(printf '\t')" read -r cmd opt kind value other; do
  [ -n "$opt" ] || continue
  nopt=$((nopt + 1))
  set -- $(base_args "$cmd") "$opt"
  [ "$kind" = flag ] || set -- "$@" "$value"
  # shellcheck disable=SC2086
  timeout 120 "$KILN" $cmd "$@" >"$T/run.out" 2>"$T/run.err" </dev/null
  rc=$?
  if grep -q "unknown option" "$T/run.err" || grep -q "^usage:" "$T/run.err"; then
    fail "$cmd $opt" "refused by the parser (exit $rc): $(head -n 1 "$T/run.err")"
  elif [ $rc -ge 124 ]; then
    fail "$cmd $opt" "did not stop (exit $rc)"
  fi
done <"$T/options.tsv"
[ "$nopt" -ge 80 ] || fail list "only $nopt options listed"

# ---- the checks can fail --------------------------------------------------------
"$KILN" run "$T/missing.onnx" --no-such-option 2>"$T/bad.err"
rc=$?
{ [ $rc = 2 ] && grep -q "^kiln: error: unknown option '--no-such-option'" "$T/bad.err" && grep -q "^usage: kiln run" "$T/bad.err"; } ||
  fail refusal "an unknown option was not refused with exit 2 and a usage line (exit $rc)"
"$KILN" bench "$T/missing.onnx" --repeat 0 2>"$T/bad.err"
rc=$?
{ [ $rc = 2 ] && grep -q "^usage: kiln bench" "$T/bad.err"; } || fail refusal "--repeat 0 was not refused (exit $rc)"

echo "$ncmd commands and db subcommands, $nopt options"
if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "cli_options: all checks passed"
