# common.sh: the start that run.sh and bench_all.sh share, sourced (". ")
# after they set here, root, models (the default list) and help (the sed
# range of their usage comment): parses --models, --kiln, --out and
# --skip-setup off "$@" (the rest stay there, for the .mjs script), runs
# setup.sh, and finds kiln (build/kiln, built first when missing).
me=$(basename "$0")
kiln=""
out="$here/out"
setup=1
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --kiln) kiln=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --skip-setup) setup=0; shift ;;
    -h|--help) sed -n "$help" "$0"; exit 0 ;;
    *) break ;;
  esac
done

[ "$setup" = 1 ] && sh "$here/setup.sh"
if [ -z "$kiln" ]; then
  kiln="$root/build/kiln"
  if ! [ -x "$kiln" ]; then
    echo "$me: building $kiln"
    cmake -S "$root" -B "$root/build" >/dev/null
    cmake --build "$root/build" --target kiln_cli -j2
  fi
fi
[ -x "$kiln" ] || { echo "$me: $kiln: no kiln binary" >&2; exit 2; }
