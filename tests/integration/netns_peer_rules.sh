#!/bin/sh
# Route-aware choice decided as rdma_cm decides it, one CASE per run, each in a private network
# namespace this script creates (unshare --net; veth pairs, as this kernel may lack the dummy
# driver). The table (tests/data/netns/peer-rules.json) names the namespace's netdevs:
#   gpa0  10.1.0.1/24, fd00:1::1/64, fe80::a0/64   GIDs: fe80::a0 [0], 10.1.0.1 [2], fd00:1::1 [4]
#   gpb0  10.2.0.1/24, fd00:2::1/64 (default)      GIDs: 10.2.0.1 [3], fd00:2::5 [6] (not the source)
#   gpc0  10.3.0.1/24                              no GID at all
#   gpd0  10.4.0.1/24                              GIDs: 10.4.0.5 [5] (not the source)
#   gpghost0 (not in the namespace)                GIDs: 10.9.0.1 [1]
#   blackhole 198.51.100.0/24 and 2001:db8:dead::/48, unreachable 198.51.101.0/24,
#   prohibit 198.51.102.0/24; no IPv6 default route.
#
#   netns_peer_rules.sh GIDPOLICY_CLI TABLE CASE
# Exit 77 (ctest SKIP_RETURN_CODE) when this machine does not allow a private network namespace
# (no CAP_SYS_ADMIN and no user namespaces), after saying why.
set -u
cli=$1 table=$2 case=$3
if [ "${4:-}" != "--inside" ]; then
  if ! command -v unshare >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: needs unshare (util-linux) and ip (iproute2)"; exit 77
  fi
  if unshare --net true 2>/dev/null; then
    exec unshare --net "$0" "$cli" "$table" "$case" --inside
  elif unshare --user --map-root-user --net true 2>/dev/null; then
    exec unshare --user --map-root-user --net "$0" "$cli" "$table" "$case" --inside
  else
    echo "SKIP: this machine does not allow a private network namespace:" \
      "$(unshare --net true 2>&1 | head -n 1)"
    exit 77
  fi
fi

set -e
ip link set lo up
for n in a b c d; do ip link add gp${n}0 type veth peer name gp${n}1; done
# gpa0's only link-local address is fe80::a0 (no EUI-64 one): the route source of fe80::9%gpa0.
ip link set gpa0 addrgenmode none
ip addr add 10.1.0.1/24 dev gpa0
ip addr add fd00:1::1/64 dev gpa0 nodad
ip addr add fe80::a0/64 dev gpa0 nodad
ip addr add 10.2.0.1/24 dev gpb0
ip addr add fd00:2::1/64 dev gpb0 nodad
ip addr add 10.3.0.1/24 dev gpc0
ip addr add 10.4.0.1/24 dev gpd0
for n in a b c d; do ip link set gp${n}0 up; ip link set gp${n}1 up; done
ip route add default via 10.2.0.254 dev gpb0
ip route add blackhole 198.51.100.0/24
ip route add unreachable 198.51.101.0/24
ip route add prohibit 198.51.102.0/24
ip -6 route add blackhole 2001:db8:dead::/48
set +e

fail=0
out= rc=
run() {
  out=$("$cli" select --input "$table" "$@" 2>&1)
  rc=$?
}
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; printf '%s\n' "$out"; fail=1; }
# chooses PEER INDEX WHAT: exit 0, that index.
chooses() {
  run --peer "$1" --json
  idx=$(printf '%s\n' "$out" | sed -n 's/^      "index": \([0-9]*\),$/\1/p' | head -n 1)
  if [ $rc -eq 0 ] && [ "$idx" = "$2" ]; then ok "--peer $1 -> index $2 ($3)"; else bad "--peer $1: expected index $2 ($3), got '$idx' (exit $rc)"; fi
}
# explains PEER TEXT WHAT: the --explain output holds TEXT.
explains() {
  run --peer "$1" --explain
  if printf '%s\n' "$out" | grep -qF -- "$2"; then ok "--peer $1: $3"; else bad "--peer $1: expected '$2' ($3)"; fi
}
# refuses PEER EXIT TEXT WHAT: that exit, TEXT in the output, and no choice made.
refuses() {
  run --peer "$1"
  if [ $rc -ne "$2" ]; then bad "--peer $1: expected exit $2 ($4), got $rc"; return; fi
  if printf '%s\n' "$out" | grep -q -- '-> sgid_index'; then bad "--peer $1: a GID was chosen ($4)"; return; fi
  if printf '%s\n' "$out" | grep -qi -- 'Invalid argument (errno\|Permission denied\|No route to host (errno'; then
    bad "--peer $1: the kernel's bare errno text ($4)"; return
  fi
  if printf '%s\n' "$out" | grep -qF -- "$3"; then ok "--peer $1: exit $2, $4"; else bad "--peer $1: expected '$3' ($4)"; fi
}
# refuses_in_one_line PEER TEXT WHAT: exit 2 and exactly one line, on stderr, starting "gidpolicy:".
refuses_in_one_line() {
  err=$("$cli" select --input "$table" --peer "$1" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | wc -l)
  out=$err
  if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && printf '%s\n' "$err" | grep -q "^gidpolicy: .*$2"; then
    ok "--peer $1: exit 2, one line: $3"
  else
    bad "--peer $1: expected exit 2 and one 'gidpolicy:' line holding '$2' ($3), got exit $rc, $lines line(s)"
  fi
}

case $case in
  source_gid)
    # rdma_cm's own choice: the GID holding the route's source address on the route's netdev;
    # the GIDs of other netdevs are not candidates at all (not merely ranked lower).
    chooses 10.1.0.9 2 "10.1.0.1, the source of the route through gpa0"
    explains 10.1.0.9 "[3] other_netdev: ::ffff:10.2.0.1 (roce_v2) on gpb0: not on gpa0" \
      "gpb0's GID is rejected, not ranked"
    explains 10.1.0.9 "route to 10.1.0.9: dev gpa0" "the kernel's route is printed"
    ;;
  default_route)
    chooses 192.0.2.7 3 "the default route through gpb0, source 10.2.0.1"
    explains 192.0.2.7 "[2] other_netdev" "gpa0's GID is not a candidate for a peer routed through gpb0"
    ;;
  other_gid_on_route_netdev)
    # No GID holds gpd0's source address 10.4.0.1: another GID of gpd0, said in the trace.
    chooses 10.4.0.9 5 "10.4.0.5 on gpd0"
    explains 10.4.0.9 "not its source address 10.4.0.1 (rdma_cm would refuse: ENODEV)" \
      "the trace says it is not the route's source"
    ;;
  netdev_without_gid)
    refuses 10.3.0.9 1 "the kernel routes it through gpc0 (source address 10.3.0.1), and no GID of this port is on gpc0" \
      "gpc0 holds no GID: refused, never another netdev's GID"
    ;;
  ipv6_peer)
    chooses fd00:1::9 4 "fd00:1::1, the IPv6 source on gpa0"
    # No GID holds gpb0's IPv6 source: the IPv6 GID of gpb0, not its IPv4-mapped one.
    chooses fd00:2::9 6 "fd00:2::5 on gpb0, not ::ffff:10.2.0.1"
    explains fd00:2::9 "[3] wrong_family" "the IPv4-mapped GID is rejected for an IPv6 peer"
    ;;
  link_local_scoped)
    chooses fe80::9%gpa0 0 "fe80::a0, the link-local source on gpa0"
    ;;
  link_local_unscoped)
    refuses_in_one_line fe80::9 "write it with the netdev of that link as its scope" "an unscoped link-local peer names no link"
    refuses_in_one_line fe80::9%gpzz0 "the scope gpzz0 names no netdev" "a scope naming no netdev here"
    ;;
  own_address)
    refuses_in_one_line 10.1.0.1 "peer 10.1.0.1 is an address of this host" "this host's own address"
    refuses_in_one_line fd00:1::1 "peer fd00:1::1 is an address of this host" "this host's own IPv6 address"
    ;;
  loopback)
    refuses_in_one_line 127.0.0.1 "is a loopback address" "IPv4 loopback"
    refuses_in_one_line ::1 "is a loopback address" "IPv6 loopback"
    ;;
  unspecified)
    refuses_in_one_line 0.0.0.0 "is the unspecified address" "0.0.0.0"
    refuses_in_one_line :: "is the unspecified address" "::"
    ;;
  broadcast)
    refuses_in_one_line 10.1.0.255 "is a broadcast address (the kernel's route to it is 'broadcast' on gpa0)" "subnet broadcast"
    refuses_in_one_line 255.255.255.255 "limited broadcast" "limited broadcast"
    ;;
  multicast)
    refuses_in_one_line 224.0.0.1 "is a multicast group" "IPv4 multicast"
    refuses_in_one_line ff02::1 "is a multicast group" "IPv6 multicast"
    ;;
  blackhole)
    refuses_in_one_line 198.51.100.7 "no route to 198.51.100.7: the kernel's route to it is a blackhole route" "IPv4 blackhole"
    refuses_in_one_line 2001:db8:dead::7 "no route to 2001:db8:dead::7: the kernel's route to it is a blackhole route" "IPv6 blackhole"
    ;;
  unreachable)
    refuses_in_one_line 198.51.101.7 "no route to 198.51.101.7: the kernel's route to it is an unreachable route" "unreachable"
    ;;
  prohibit)
    refuses_in_one_line 198.51.102.7 "no route to 198.51.102.7: the kernel's route to it is a prohibit route" "prohibit"
    ;;
  no_route)
    refuses_in_one_line 2001:db8:1::7 "no route to 2001:db8:1::7: the kernel's routing table has none" "no IPv6 route at all"
    ;;
  *)
    echo "FAIL: unknown case '$case'"; exit 1
    ;;
esac
exit $fail
