#!/bin/sh
# layering.sh BUILD: the modules depend only downward,
#   runtime (with kernels/) <- db <- costmodel <- tuner <- cli,
# checked on the built objects: no object of runtime/ or kernels/ references
# a symbol defined in db/, costmodel/, tuner/ or cli/; none of db/ one defined
# in costmodel/, tuner/ or cli/; none of costmodel/ one in tuner/ or cli/.
# BUILD is the CMake build directory (the layers' objects are under
# CMakeFiles/kiln_runtime.dir, kiln_db.dir, kiln_costmodel.dir,
# kiln_tuner.dir and kiln_cli.dir). Exit 0 = layered,
# 1 = an upward reference (each one printed), 77 = no nm or no objects.
set -eu
build=${1:?usage: layering.sh BUILD}
rt=$build/CMakeFiles/kiln_runtime.dir
dbo=$build/CMakeFiles/kiln_db.dir
cm=$build/CMakeFiles/kiln_costmodel.dir
tu=$build/CMakeFiles/kiln_tuner.dir
cli=$build/CMakeFiles/kiln_cli.dir
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found"; exit 77; }
[ -d "$rt/runtime" ] || { echo "SKIP: no objects under $rt"; exit 77; }
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
    nm -u "$o" | awk -v o="${o#$build/CMakeFiles/}" '{print $2, o}'
  done | sort
}

defs "$dbo" "$cm" "$tu" "$cli" > "$tmp/upper_of_rt"
defs "$cm" "$tu" "$cli" > "$tmp/upper_of_db"
defs "$tu" "$cli" > "$tmp/upper_of_cm"
refs "$rt" > "$tmp/rt_refs"
refs "$dbo" > "$tmp/db_refs"
refs "$cm" > "$tmp/cm_refs"

bad=0
# join on the symbol: references whose symbol an upper layer defines
join "$tmp/rt_refs" "$tmp/upper_of_rt" > "$tmp/v0" || true
join "$tmp/db_refs" "$tmp/upper_of_db" > "$tmp/v1" || true
join "$tmp/cm_refs" "$tmp/upper_of_cm" > "$tmp/v2" || true
while read -r sym o; do echo "UPWARD: $o references $sym (defined in db/, costmodel/, tuner/ or cli/)"; bad=1; done < "$tmp/v0"
while read -r sym o; do echo "UPWARD: $o references $sym (defined in costmodel/, tuner/ or cli/)"; bad=1; done < "$tmp/v1"
while read -r sym o; do echo "UPWARD: $o references $sym (defined in tuner/ or cli/)"; bad=1; done < "$tmp/v2"
n=$(find "$rt" "$dbo" "$cm" "$tu" "$cli" -name '*.o' | wc -l)
[ "$(find "$dbo" -name '*.o' | wc -l)" -gt 0 ] && [ "$(find "$cm" -name '*.o' | wc -l)" -gt 0 ] && [ "$(find "$tu" -name '*.o' | wc -l)" -gt 0 ] || { echo "FAIL: no costmodel/ or tuner/ objects"; exit 1; }
if [ "$bad" = 0 ]; then echo "ok: $n objects, no upward references"; else echo "FAIL: upward references above"; fi
exit "$bad"
