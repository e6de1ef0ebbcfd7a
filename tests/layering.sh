#!/bin/sh
# layering.sh OBJDIR: the modules depend only downward,
#   runtime (with kernels/) <- db <- costmodel <- tuner <- cli,
# checked on the built objects: no object of runtime/, kernels/ or db/
# references a symbol defined in costmodel/, tuner/ or cli/, and no object of
# costmodel/ references one defined in tuner/ or cli/. OBJDIR is the
# library's object directory (build/CMakeFiles/kiln.dir); cli/'s objects are
# found beside it (kiln_cli.dir). Exit 0 = layered, 1 = an upward reference
# (each one printed), 77 = no nm or no objects.
set -eu
obj=${1:?usage: layering.sh OBJDIR}
cli=$(dirname "$obj")/kiln_cli.dir
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found"; exit 77; }
[ -d "$obj/runtime" ] || { echo "SKIP: no objects under $obj"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# defs DIR...: global symbols defined by the objects under DIR...
defs() {
  for d in "$@"; do [ -d "$d" ] && find "$d" -name '*.o'; done | while read -r o; do
    nm --defined-only -g "$o" | awk '{print $3}'
  done | sort -u
}
# refs DIR...: "symbol object" for every undefined reference of the objects under DIR...
refs() {
  for d in "$@"; do [ -d "$d" ] && find "$d" -name '*.o'; done | while read -r o; do
    nm -u "$o" | awk -v o="${o#$obj/}" '{print $2, o}'
  done | sort
}

defs "$obj/costmodel" "$obj/tuner" "$cli" > "$tmp/upper_of_db"
defs "$obj/tuner" "$cli" > "$tmp/upper_of_cm"
refs "$obj/runtime" "$obj/kernels" "$obj/db" > "$tmp/low_refs"
refs "$obj/costmodel" > "$tmp/cm_refs"

bad=0
# join on the symbol: references whose symbol an upper layer defines
join "$tmp/low_refs" "$tmp/upper_of_db" > "$tmp/v1" || true
join "$tmp/cm_refs" "$tmp/upper_of_cm" > "$tmp/v2" || true
while read -r sym o; do echo "UPWARD: $o references $sym (defined in costmodel/, tuner/ or cli/)"; bad=1; done < "$tmp/v1"
while read -r sym o; do echo "UPWARD: $o references $sym (defined in tuner/ or cli/)"; bad=1; done < "$tmp/v2"
n=$(find "$obj" "$cli" -name '*.o' | wc -l)
if [ "$bad" = 0 ]; then echo "ok: $n objects, no upward references"; else echo "FAIL: upward references above"; fi
exit "$bad"
