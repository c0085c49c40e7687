#!/bin/sh
# Route-aware choice in a private network namespace: two veth pairs with addresses in
# different subnets, a GID table with a GID on each (and one on a netdev this namespace does not
# have), and `gidpolicy select --peer ADDR` must pick the GID of the netdev the kernel routes
# through: for a peer in each subnet and for one reached by the default route.
#
#   netns_route.sh GIDPOLICY_CLI TABLE
# Exit 77 (ctest SKIP_RETURN_CODE) when this machine does not allow a private network namespace
# (no CAP_SYS_ADMIN and no user namespaces), after saying why.
set -u
cli=$1 table=$2
if [ "${3:-}" != "--inside" ]; then
  if ! command -v unshare >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: needs unshare (util-linux) and ip (iproute2)"; exit 77
  fi
  if unshare --net true 2>/dev/null; then
    exec unshare --net "$0" "$cli" "$table" --inside
  elif unshare --user --map-root-user --net true 2>/dev/null; then
    exec unshare --user --map-root-user --net "$0" "$cli" "$table" --inside
  else
    echo "SKIP: this machine does not allow a private network namespace:" \
      "$(unshare --net true 2>&1 | head -n 1)"
    exit 77
  fi
fi

set -e
# Subnet A on gpa0 (10.1.0.0/24), subnet B on gpb0 (10.2.0.0/24), default route via B.
ip link set lo up
ip link add gpa0 type veth peer name gpa1
ip link add gpb0 type veth peer name gpb1
ip addr add 10.1.0.1/24 dev gpa0
ip addr add 10.2.0.1/24 dev gpb0
for d in gpa0 gpa1 gpb0 gpb1; do ip link set "$d" up; done
ip route add default via 10.2.0.254 dev gpb0
set +e

fail=0
# check PEER EXPECTED_INDEX WHAT
check() {
  out=$("$cli" select --input "$table" --peer "$1" --json 2>&1)
  idx=$(printf '%s\n' "$out" | sed -n 's/^  "index": \([0-9]*\),$/\1/p' | head -n 1)
  if [ "$idx" = "$2" ]; then
    echo "ok: --peer $1 -> index $2 ($3)"
  else
    echo "FAIL: --peer $1: expected index $2 ($3), got '$idx'"; printf '%s\n' "$out"; fail=1
  fi
}
# Without a peer the table's first IPv4 GID (index 1, on gpghost0) would be chosen: each case
# below differs from it.
check 10.1.0.9 2 "subnet A: gpa0, source 10.1.0.1"
check 10.2.0.9 3 "subnet B: gpb0, source 10.2.0.1"
check 192.0.2.7 3 "default route via gpb0"

# The GID on gpghost0 (not in this namespace, so not on the route's netdev) is no candidate at
# all, with the reason in the trace.
explain=$("$cli" select --input "$table" --peer 10.1.0.9 --explain 2>&1)
if printf '%s\n' "$explain" | grep -q "\[1\] other_netdev: .*gpghost0: not on gpa0, the netdev of the route to 10.1.0.9"; then
  echo "ok: the GID on gpghost0 is rejected, the trace says why"
else
  echo "FAIL: the trace does not reject gpghost0's GID as another netdev's"; printf '%s\n' "$explain"; fail=1
fi
# The route line names the netdev and source the kernel chose.
if printf '%s\n' "$explain" | grep -q "route to 10.1.0.9: dev gpa0 (ifindex [0-9]*), src 10.1.0.1"; then
  echo "ok: the kernel's route is printed"
else
  echo "FAIL: no route line"; printf '%s\n' "$explain"; fail=1
fi
# No route at all (no default route, an unreachable peer): a clear error, exit 2, no choice.
ip route del default
out=$("$cli" select --input "$table" --peer 192.0.2.7 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "no route to 192.0.2.7"; then
  echo "ok: an unroutable peer is an error naming it"
else
  echo "FAIL: unroutable peer: exit $rc"; printf '%s\n' "$out"; fail=1
fi
exit $fail
