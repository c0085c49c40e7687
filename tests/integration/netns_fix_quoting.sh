#!/bin/sh
# The doctor's fix commands, run for real: in a private network namespace this script creates,
# a port's netdev has a hostile name that Linux accepts (a shell command in it), and is down.
# The doctor's "fix:" line for it is run as a shell would run it when pasted; it must bring
# exactly that interface up and do nothing else: no file created by the name's command, the
# other interface still down.
#
#   netns_fix_quoting.sh GIDPOLICY_CLI NAME
#
# Exit 77 (ctest SKIP_RETURN_CODE) when this machine does not allow a private network namespace,
# after saying why.
set -u
cli=$1 name=$2
if [ "${3:-}" != "--inside" ]; then
  if ! command -v unshare >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: needs unshare (util-linux) and ip (iproute2)"; exit 77
  fi
  if unshare --net true 2>/dev/null; then
    exec unshare --net "$0" "$cli" "$name" --inside
  elif unshare --user --map-root-user --net true 2>/dev/null; then
    exec unshare --user --map-root-user --net "$0" "$cli" "$name" --inside
  else
    echo "SKIP: this machine does not allow a private network namespace:" \
      "$(unshare --net true 2>&1 | head -n 1)"
    exit 77
  fi
fi
unset NCCL_IB_GID_INDEX NVSHMEM_IB_GID_INDEX UCX_IB_GID_INDEX MC_GID_INDEX FI_VERBS_GID_IDX GGML_RDMA_GID MLX_RANK
work=$(mktemp -d "${TMPDIR:-/tmp}/gidpolicy-fixq.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
ip link set lo up
# The hostile interface and an innocent one, both down (a veth is created down; veth, not dummy:
# the dummy driver is not on every machine).
ip link add "$name" type veth peer name gpqh || { echo "FAIL: the kernel refused the interface name $name"; exit 1; }
ip link add gpq0 type veth peer name gpq0p || exit 1
# A table whose one GID is on the hostile interface (JSON-escaped: the name holds no '"' or '\').
cat > table.json <<EOF
{"device": "mlx5_0", "port": 1, "state": "active", "link_layer": "ethernet", "gid_tbl_len": 4,
 "entries": [{"index": 0, "state": "valid", "gid": "fe80::1", "type": "roce_v2", "netdev": "$name"},
             {"index": 1, "state": "valid", "gid": "::ffff:10.9.7.1", "type": "roce_v2", "netdev": "$name"}]}
EOF
out=$("$cli" doctor --this-host --input table.json --platform linux 2>&1)
echo "$out"
# The fix for the netdev that is down: "fix: sudo ip link set NAME up" (the first such line).
line=$(printf '%s\n' "$out" | sed -n 's/^ *fix: sudo \(ip link set .* up\)$/\1/p' | head -n 1)
if [ -z "$line" ]; then echo "FAIL: no 'fix: sudo ip link set ... up' line"; exit 1; fi
echo "running (as pasted, without sudo: this namespace's root): $line"
mkdir run && cd run || exit 1
sh -c "$line"
rc=$?
cd .. || exit 1
fail=0
[ "$rc" -eq 0 ] || { echo "FAIL: the fix exited $rc"; fail=1; }
if ip -o link show dev "$name" | grep -q '<[^>]*\bUP\b'; then
  echo "ok: $name is up"
else
  echo "FAIL: $name is not up: $(ip -o link show dev "$name")"; fail=1
fi
if ip -o link show dev gpq0 | grep -q '<[^>]*\bUP\b'; then
  echo "FAIL: gpq0 was brought up too"; fail=1
else
  echo "ok: gpq0 is still down"
fi
if [ -n "$(ls -A run)" ]; then
  echo "FAIL: the fix created files: $(ls -A run)"; fail=1
else
  echo "ok: the fix created no file"
fi
exit $fail
