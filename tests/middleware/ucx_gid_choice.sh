#!/usr/bin/env bash
# The GID index UCX chooses on each RoCE port of a table, from UCX's own debug log under
# `gidpolicy fake-host` (ucx_info -d opens every transport of every port):
#
#   ucx_gid_choice.sh TABLE      ->  one line per port, sorted:  DEVICE PORT INDEX
#
# INDEX is the sgid index UCX logged ("<dev>:<port> using gid_index N"), or "invalid" where UCX
# refused the port for an empty GID ("invalid gid[N] on <dev>:<port>"; it then opens no
# transport there). GIDPOLICY names the gidpolicy binary (default: build/dev's). Only the
# user's UCX_NET_DEVICES narrows the ports; no other UCX setting is passed on.
set -euo pipefail
table=${1:?usage: ucx_gid_choice.sh TABLE}
here=$(cd "$(dirname "$0")" && pwd)
gidpolicy=${GIDPOLICY:-$here/../../build/dev/tools/gidpolicy/gidpolicy}
command -v ucx_info >/dev/null || { echo "ucx_gid_choice.sh: ucx_info not found (Debian ucx-utils)" >&2; exit 2; }
log=$(env -u UCX_TLS UCX_LOG_LEVEL=debug "$gidpolicy" fake-host --tables "$table" -- ucx_info -d 2>&1) || {
  printf '%s\n' "$log" | tail -3 >&2
  exit 2
}
printf '%s\n' "$log" | sed -n \
  -e 's/.* \([^ :]*\):\([0-9]*\) using gid_index \([0-9]*\).*/\1 \2 \3/p' \
  -e 's/.* invalid gid\[[0-9]*\] on \([^ :]*\):\([0-9]*\).*/\1 \2 invalid/p' | sort -u
