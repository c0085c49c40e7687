#!/usr/bin/env bash
# The ucx profile against real UCX: on every Ethernet port of every example table, the GID index
# UCX 1.13 logs under `gidpolicy fake-host` (ucx_gid_choice.sh) must be the one
# `gidpolicy select --profile ucx` predicts, and a port UCX refuses ("invalid gid[N]") must be one
# the profile says UCX rejects. The ports come from the tables (`gidpolicy show`): no table has an
# expectation written by hand.
#
#   ucx_profile_oracle.sh TABLES_DIR      (GIDPOLICY names the gidpolicy binary)
# Exit 77 (skip) where ucx_info is missing or the fake host's namespaces are refused.
set -uo pipefail
dir=${1:?usage: ucx_profile_oracle.sh TABLES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
gidpolicy=${GIDPOLICY:?GIDPOLICY names the gidpolicy binary}
command -v ucx_info >/dev/null || { echo "SKIP: ucx_info not installed (Debian ucx-utils)"; exit 77; }
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
status=0 ports=0
for table in "$dir"/*; do
  case "$table" in *.md) continue ;; esac
  mapfile -t eth < <("$gidpolicy" show --input "$table" | sed -n 's/^\([^ ]*\) port \([0-9]*\): ethernet,.*/\1 \2/p')
  [ "${#eth[@]}" -gt 0 ] || continue
  if ! GIDPOLICY=$gidpolicy "$here/ucx_gid_choice.sh" "$table" >"$work/ucx" 2>"$work/err"; then
    if grep -q "cannot create a private" "$work/err"; then echo "SKIP: $(cat "$work/err")"; exit 77; fi
    echo "FAIL: $(basename "$table"): ucx_gid_choice.sh failed:"; cat "$work/err"; status=1; continue
  fi
  for dp in "${eth[@]}"; do
    read -r dev port <<<"$dp"
    ports=$((ports + 1))
    ucx=$(awk -v d="$dev" -v p="$port" '$1 == d && $2 == p { print $3 }' "$work/ucx" | head -n 1)
    [ -n "$ucx" ] || ucx="(nothing logged)"
    "$gidpolicy" select --profile ucx --json --input "$table" --device "$dev" --port "$port" >"$work/sel" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
      predicted=$(sed -n 's/^ *"sgid_index": *\([0-9]*\),*$/\1/p' "$work/sel" | head -n 1)
    elif grep -q "rejects the port" "$work/sel"; then
      predicted=invalid
    else
      predicted="(error: $(head -c 200 "$work/sel"))"
    fi
    if [ "$ucx" = "$predicted" ]; then
      echo "ok   $(basename "$table") $dev:$port: UCX $ucx, the ucx profile $predicted"
    else
      echo "FAIL $(basename "$table") $dev:$port: UCX $ucx, the ucx profile $predicted"
      status=1
    fi
  done
done
[ "$ports" -gt 0 ] || { echo "FAIL: no Ethernet port in $dir"; exit 1; }
echo "$ports Ethernet ports compared"
exit $status
