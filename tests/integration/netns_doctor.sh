#!/bin/sh
# `gidpolicy doctor` on Linux for real, in a private network namespace this script creates: veth
# pairs with and without addresses, an address added after the table was taken, a GID whose
# netdev was moved to another namespace, routes and a blackhole. One case per run:
#
#   netns_doctor.sh GIDPOLICY_CLI DATA_DIR CASE
#     consistent    every GID has its address and back: exit 0, "READY"
#     causes_linux  a GID without its address, an address without its GID, a Thunderbolt port
#                   without IPv4, a GID's netdev in another namespace: exit 1, each cause and
#                   its Linux commands
#     causes_darwin the same host with --platform darwin: the macOS commands
#     routes        peers: one through a port, one through a netdev no port uses, one blackholed
#     json          --json: the schema, the findings ranked, exit 1
#     four_ports    four ports each with a cause, a peer through a port and one without a route:
#                   the text reads in 40 lines, the unroutable peer said once
#     bridge        a port's netdev enslaved to a bridge: exit 1, `ip link set DEV nomaster`
#     bridge_unknown the host's sysfs, not this namespace's: membership cannot be read, which is
#                   one note naming the netdevs (the host stays ready)
# Every case but bridge_unknown runs with this namespace's own sysfs, mounted in a private mount
# namespace, as `ip netns exec` does (sysfs shows the namespace of whoever mounted it); where a
# mount namespace is refused, the cases run on the host's sysfs and allow the note.
# Exit 77 (ctest SKIP_RETURN_CODE) when this machine does not allow a private network namespace
# (no CAP_SYS_ADMIN and no user namespaces), after saying why.
set -u
cli=$1 data=$2 case=$3
if [ "${4:-}" != "--inside" ]; then
  if ! command -v unshare >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: needs unshare (util-linux) and ip (iproute2)"; exit 77
  fi
  if unshare --net true 2>/dev/null; then
    exec unshare --net "$0" "$cli" "$data" "$case" --inside
  elif unshare --user --map-root-user --net true 2>/dev/null; then
    exec unshare --user --map-root-user --net "$0" "$cli" "$data" "$case" --inside
  else
    echo "SKIP: this machine does not allow a private network namespace:" \
      "$(unshare --net true 2>&1 | head -n 1)"
    exit 77
  fi
fi

# This namespace's own sysfs, privately (bridge_unknown keeps the host's on purpose).
if [ "${5:-}" != "--sysfs" ] && [ "$case" != bridge_unknown ]; then
  if unshare --mount true 2>/dev/null; then
    exec unshare --mount sh -c \
      'mount -t sysfs sysfs /sys || { echo "SKIP: cannot mount this namespace'"'"'s sysfs"; exit 77; }; exec "$0" "$@"' \
      "$0" "$cli" "$data" "$case" --inside --sysfs
  fi
  echo "note: no private mount namespace here ($(unshare --mount true 2>&1 | head -n 1)): the host's sysfs"
fi

# No pin in the environment may change the verdict.
unset NCCL_IB_GID_INDEX NVSHMEM_IB_GID_INDEX UCX_IB_GID_INDEX MC_GID_INDEX FI_VERBS_GID_IDX GGML_RDMA_GID MLX_RANK
fail=0
expect() {  # expect WHAT TEXT: the output holds TEXT (a fixed string)
  if printf '%s\n' "$out" | grep -qF -- "$2"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: no line with: $2"; fail=1
  fi
}
veth() {  # veth NAME: a pair NAME / NAME-p, both up (a veth has carrier when its peer is up)
  ip link add "$1" type veth peer name "$1p" && ip link set "$1p" up && ip link set "$1" up
}
ip link set lo up

# Until process $1 is in a network namespace of its own: `unshare -n` enters it after the fork,
# and moving a link to the pid before then moves it nowhere, successfully. Bounded: 60 s (a hang
# guard: it takes milliseconds on an idle machine).
until_own_netns() {
  local n=0
  while [ "$(readlink "/proc/$1/ns/net")" = "$(readlink "/proc/$$/ns/net")" ]; do
    n=$((n + 1))
    [ "$n" -lt 1200 ] || return 1
    sleep 0.05
  done
}

setup_not_ready() {
  # mlx5_0 on gpa0: 10.9.2.1 has its GIDs, 10.9.2.7's GIDs have no address (stale); an address
  # added now (after the table was written) has none.
  veth gpa0 && ip addr add 10.9.2.1/24 dev gpa0 && ip addr add 10.9.2.5/24 dev gpa0
  # mlx5_1's GIDs are on gpmv0, which is moved into another namespace (a process holds it).
  veth gpmv0
  # Killed below once the doctor has run; 300 s only bounds an orphan left by a failure (its
  # output is not the test's, so it cannot hold ctest's pipe open).
  unshare --net sleep 300 >/dev/null 2>&1 &
  holder=$!
  until_own_netns "$holder" || { echo "FAIL: unshare --net gave its process no namespace in 60 s"; exit 1; }
  ip link set gpmv0 netns "$holder" || { echo "FAIL: could not move gpmv0 to another namespace"; exit 1; }
  if ip link show gpmv0 > /dev/null 2>&1; then echo "FAIL: gpmv0 is still in this namespace"; exit 1; fi
  # rdma_gptb0 (Thunderbolt) on gptb0, which has no IPv4.
  veth gptb0
}

setup_consistent() {
  # consistent.json's two netdevs with the addresses its GIDs encode: mlx5_0 on gpd0 and the
  # Thunderbolt port on gpt0 (a /30, as the doctor proposes for a point-to-point link).
  veth gpd0 && ip addr add 10.9.1.1/24 dev gpd0
  veth gpt0 && ip addr add 192.168.201.1/30 dev gpt0
}

case $case in
consistent)
  setup_consistent
  out=$("$cli" doctor --this-host --input "$data/consistent.json" 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 0 ] && echo "ok: exit 0" || { echo "FAIL: exit $rc, expected 0"; fail=1; }
  expect "ready" "READY: 0 blockers, 0 warnings"
  expect "each stack's line (stacks that pick alike share it)" "nccl, nvshmem, ucx, mooncake, perftest mlx5_0:1 [3] ok"
  ;;
causes_linux | causes_darwin)
  setup_not_ready
  platform=linux; [ "$case" = causes_darwin ] && platform=darwin
  out=$("$cli" doctor --this-host --input "$data/not-ready.json" --platform $platform 2>&1); rc=$?
  printf '%s\n' "$out"
  kill "$holder" 2>/dev/null
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "not ready" "NOT READY"
  expect "the GID whose address is gone" "mlx5_0 port 1: GIDs [4], [5] (10.9.2.7) are on gpa0, which no longer holds that address (stale)"
  expect "the address without its GID, and why" "mlx5_0 port 1: gpa0 holds 10.9.2.5/24 but no GID does (not there yet: the table was read from a file"
  expect "the Thunderbolt port without IPv4" "rdma_gptb0 port 1: gptb0 has no IPv4 address, so the port has no ::ffff:a.b.c.d GID"
  expect "why it matters" "JACCL and ds4 route from the first IPv4-mapped GID: without one their RTR fails with EINVAL (22)"
  expect "the netdev in another namespace" "mlx5_1 port 1: its GIDs are bound to gpmv0, which is not in this network namespace"
  expect "ENODEV" "RTR from those GIDs fails with ENODEV (19)"
  if [ $platform = linux ]; then
    expect "ip addr add" "fix: sudo ip addr add 192.168.200.1/30 dev gptb0   # now; lost at reboot"
    expect "netplan / NetworkManager" "# persistent: netplan (/etc/netplan/*.yaml, ethernets: gptb0: addresses: [192.168.200.1/30]"
    expect "stale: take the table again, then rebuild" "sudo ip link set gpa0 down && sudo ip link set gpa0 up"
  else
    expect "ifconfig alias" "fix: sudo ifconfig gptb0 inet 192.168.200.1 netmask 255.255.255.252 alias   # now; lost at reboot"
    expect "networksetup" "sudo networksetup -setmanual 'RDMA gptb0' 192.168.200.1 255.255.255.252"
    expect "the peer's end" "the Mac at the other end of this cable takes 192.168.200.2 the same way"
    if printf '%s\n' "$out" | grep -q "ip addr add"; then echo "FAIL: Linux commands under --platform darwin"; fail=1; fi
  fi
  # Blockers first, in the order a program meets them: the netdev elsewhere before the addresses.
  n_elsewhere=$(printf '%s\n' "$out" | grep -n "not in this network namespace" | head -n 1 | cut -d: -f1)
  n_stale=$(printf '%s\n' "$out" | grep -n "(stale)" | head -n 1 | cut -d: -f1)
  if [ -n "$n_elsewhere" ] && [ -n "$n_stale" ] && [ "$n_elsewhere" -lt "$n_stale" ]; then
    echo "ok: causes ranked"
  else
    echo "FAIL: causes not ranked (netdev elsewhere at line $n_elsewhere, stale at $n_stale)"; fail=1
  fi
  lines=$(printf '%s\n' "$out" | wc -l)
  [ "$lines" -le 60 ] && echo "ok: $lines lines" || { echo "FAIL: $lines lines for 3 ports"; fail=1; }
  ;;
routes)
  setup_consistent
  veth gpo0 && ip addr add 10.77.0.1/24 dev gpo0
  ip route add blackhole 198.51.100.0/24
  out=$("$cli" doctor --this-host --input "$data/consistent.json" --peer 10.9.1.2 --peer 192.168.201.2 --peer 10.77.0.9 \
        --peer 198.51.100.7 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 1 ] && echo "ok: exit 1 (the blackholed peer)" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "routed through a port, its source GID" "peer 10.9.1.2 (--peer): through gpd0 (mlx5_0 port 1), source GID [2] 10.9.1.1"
  expect "a Thunderbolt port's peer" "peer 192.168.201.2 (--peer): through gpt0 (rdma_gpt0 port 1), source GID [1] 192.168.201.1"
  expect "off the RDMA ports" "peer 10.77.0.9: the kernel's route leaves through gpo0, which no RDMA port uses"
  expect "the blackhole" "peer 198.51.100.7 (--peer): no route to 198.51.100.7: the kernel's route to it is a blackhole route"
  ;;
hostfile)
  # m3-ultra-1 of tests/data/fleet/mlx-hostfile.json: its three cables, and the management
  # network holding the hostfile's address for it (so the doctor finds its row by address).
  veth en3 && ip addr add 10.99.3.1/30 dev en3
  veth en4 && ip addr add 10.99.2.1/30 dev en4
  veth en5 && ip addr add 10.99.1.1/30 dev en5
  veth gpm0 && ip addr add 192.168.1.11/24 dev gpm0
  out=$("$cli" doctor --this-host --input "$data/m3-ultra-1.json" \
        --hostfile "$data/../fleet/mlx-hostfile.json" 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 0 ] && echo "ok: exit 0" || { echo "FAIL: exit $rc, expected 0"; fail=1; }
  expect "the other hosts are routed" "peer 192.168.1.12 ($data/../fleet/mlx-hostfile.json hosts[1] m3-ultra-2): reachable through gpm0"
  expect "all three" "peer 192.168.1.14 ($data/../fleet/mlx-hostfile.json hosts[3] m3-ultra-4)"
  # Rank 1's row on this host: the same devices, so still ready; a rank past the file is refused.
  out=$("$cli" doctor --this-host --input "$data/m3-ultra-1.json" \
        --hostfile "$data/../fleet/mlx-hostfile.json" --rank 7 2>&1); rc=$?
  [ $rc -eq 2 ] && echo "ok: --rank 7 is bad usage" || { echo "FAIL: --rank 7: exit $rc"; fail=1; }
  # The path is shown bounded (64 bytes, then "..."): a long checkout path is cut, so only its start.
  expect "names the file's size" "--rank 7: expected a rank 0..3 of "
  # Without en3 the row's rdma_en3 still has a table but no interface: not ready.
  ip link del en3
  out=$("$cli" doctor --this-host --input "$data/m3-ultra-1.json" \
        --hostfile "$data/../fleet/mlx-hostfile.json" 2>&1); rc=$?
  [ $rc -eq 1 ] && echo "ok: exit 1 without en3" || { echo "FAIL: without en3: exit $rc"; fail=1; }
  expect "the missing interface" "rdma_en3 port 1: its interface en3 is not there"
  ;;
four_ports)
  # not-ready.json's three ports (their causes as above) and mlx5_2 on gpd0, whose MTU is below
  # the port's; one peer routed through gpd0, one with no route at all.
  setup_not_ready
  veth gpd0 && ip link set gpd0 mtu 900 && ip addr add 10.9.1.1/24 dev gpd0
  out=$("$cli" doctor --this-host --input "$data/four-ports.json" --peer 10.9.1.2 --peer 10.77.0.1 2>&1); rc=$?
  kill "$holder" 2>/dev/null
  printf '%s\n' "$out"
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "all four ports" "mlx5_2 port 1: active, ethernet, gpd0, 4 GIDs"
  expect "the fourth port's cause" "gpd0's MTU 900 is below the port's active MTU 1024"
  expect "the routed peer" "peer 10.9.1.2 (--peer): through gpd0 (mlx5_2 port 1), source GID [2] 10.9.1.1"
  n=$(printf '%s\n' "$out" | grep -c "no route to 10.77.0.1")
  [ "$n" -eq 1 ] && echo "ok: the unroutable peer said once" || { echo "FAIL: the unroutable peer said $n times"; fail=1; }
  lines=$(printf '%s\n' "$out" | grep -vc -e '^[0-9]*\. note: whether .* bridge member' -e '^   why: a bridge member' -e '^   fix: bridge link show')
  [ "$lines" -le 40 ] && echo "ok: $lines lines for 4 ports" || { echo "FAIL: $lines lines for 4 ports (at most 40)"; fail=1; }
  ;;
bridge)
  # Membership is read from this namespace's sysfs: without one of its own, nothing to test.
  [ "${5:-}" = "--sysfs" ] || { echo "SKIP: no private mount namespace for this namespace's sysfs"; exit 77; }
  setup_consistent
  if ! ip link add gpbr0 type bridge 2>/dev/null; then
    echo "SKIP: this kernel refuses a bridge: $(ip link add gpbr0 type bridge 2>&1 | head -n 1)"; exit 77
  fi
  ip link set gpbr0 up && ip link set gpd0 master gpbr0 || { echo "FAIL: could not enslave gpd0"; exit 1; }
  out=$("$cli" doctor --this-host --input "$data/consistent.json" 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "the member and its bridge" "gpd0 is a member of gpbr0"
  expect "the Linux fix" "sudo ip link set gpd0 nomaster"
  # Released from the bridge, the same host is ready again.
  ip link set gpd0 nomaster
  out=$("$cli" doctor --this-host --input "$data/consistent.json" 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "ok: exit 0 once released" || { echo "FAIL: released: exit $rc"; printf '%s\n' "$out"; fail=1; }
  ;;
bridge_unknown)
  # The host's sysfs (this script's caller mounted it in the host's namespace): gpd0 and gpt0
  # are not there, so whether they are bridge members cannot be read. Said once, as a note.
  [ -d /sys/class/net/gpd0 ] && { echo "SKIP: the host has a gpd0 of its own"; exit 77; }
  setup_consistent
  out=$("$cli" doctor --this-host --input "$data/consistent.json" 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 0 ] && echo "ok: exit 0 (a note is no blocker)" || { echo "FAIL: exit $rc, expected 0"; fail=1; }
  expect "the count" "READY: 0 blockers, 0 warnings, 1 note"
  expect "the note" "note: whether gpd0, gpt0 are a bridge member could not be read: /sys/class/net/gpd0 is missing"
  expect "the way to check" "bridge link show"
  out=$("$cli" doctor --this-host --input "$data/consistent.json" --json 2>&1)
  expect "JSON counts notes" '"notes": 1'
  expect "JSON's note" '"code": "bridge_unknown"'
  ;;
json)
  setup_not_ready
  out=$("$cli" doctor --this-host --input "$data/not-ready.json" --json 2>&1); rc=$?
  kill "$holder" 2>/dev/null
  printf '%s\n' "$out" | head -n 40
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "schema" '"schema": "gidpolicy.doctor"'
  expect "version" '"version": 2'
  expect "not ready" '"ready": false'
  expect "ranked first" '"rank": 1'
  expect "a code" '"code": "no_ipv4"'
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
exit $fail
