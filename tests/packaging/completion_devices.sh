#!/usr/bin/env bash
# check_completion.sh under `gidpolicy fake-host` on a table with one device: `--device <TAB>`
# must offer that device, read from the host's /sys/class/infiniband. Exit 77 (skipped) where
# fake-host cannot create its mount namespace, saying why.
#
#   completion_devices.sh GIDPOLICY_BINARY SOURCE_DIR COMPLETION_SCRIPT
set -uo pipefail
bin=$1 src=$2 script=$3
table=$src/examples/tables/nccl-769.devinfo.txt
here=$(dirname "$0")
out=$("$bin" fake-host --tables "$table" -- bash "$here/check_completion.sh" "$src" "$bin" "$script" \
  --devices mlx5_bond_0 2>&1)
rc=$?
if ((rc == 125)) && grep -q "cannot create a private mount" <<<"$out"; then
  echo "SKIPPED: $out"
  exit 77
fi
echo "$out"
exit "$rc"
