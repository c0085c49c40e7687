#!/bin/sh
# Route-aware choice in a private network namespace: two veth pairs with addresses in
# different subnets, a GID table with a GID on each (and one on a netdev this namespace does not
# have), and `gidpolicy select --peer ADDR` must pick the GID of the netdev the kernel routes
# through: for a peer in each subnet and for one reached by the default route.
#
#   netns_route.sh GIDPOLICY_CLI TABLE [auto|rdma_cm]
# auto (the default): `select --peer` with the default profile. rdma_cm: `select --profile
# rdma_cm --peer ADDR` resolves as rdma_cm:peer=ADDR (the route's netdev and source address).
# Exit 77 (ctest SKIP_RETURN_CODE) when this machine does not allow a private network namespace
# (no CAP_SYS_ADMIN and no user namespaces), after saying why.
set -u
cli=$1 table=$2 cases=${3:-auto}
if [ "${4:-}" != "--inside" ]; then
  if ! command -v unshare >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: needs unshare (util-linux) and ip (iproute2)"; exit 77
  fi
  if unshare --net true 2>/dev/null; then
    exec unshare --net "$0" "$cli" "$table" "$cases" --inside
  elif unshare --user --map-root-user --net true 2>/dev/null; then
    exec unshare --user --map-root-user --net "$0" "$cli" "$table" "$cases" --inside
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
if [ "$cases" = rdma_cm ]; then
  # pick PROFILE PEER EXPECTED_INDEX WHAT: the index select --json prints, and the spec it ran.
  pick() {
    if [ -n "$2" ]; then out=$("$cli" select --input "$table" --profile "$1" --peer "$2" --json 2>&1)
    else out=$("$cli" select --input "$table" --profile "$1" --json 2>&1); fi
    idx=$(printf '%s\n' "$out" | sed -n 's/^      "index": \([0-9]*\),$/\1/p' | head -n 1)
    spec=$(printf '%s\n' "$out" | sed -n 's/^      "profile": "\(.*\)",$/\1/p' | head -n 1)
    if [ "$idx" = "$3" ] && [ "$spec" = "$5" ]; then
      echo "ok: --profile $1 --peer $2 -> index $3 as $5 ($4)"
    else
      echo "FAIL: --profile $1 --peer $2: expected index $3 as '$5' ($4), got '$idx' as '$spec'"
      printf '%s\n' "$out"; fail=1
    fi
  }
  pick rdma_cm 10.1.0.9 2 "the route's netdev gpa0 and source 10.1.0.1" rdma_cm:peer=10.1.0.9
  pick rdma_cm 10.2.0.9 3 "gpb0, source 10.2.0.1" rdma_cm:peer=10.2.0.9
  pick rdma_cm 192.0.2.7 3 "the default route via gpb0" rdma_cm:peer=192.0.2.7
  pick libfabric:ep=msg 10.1.0.9 2 "MSG endpoints resolve through rdma_cm" libfabric:ep=msg,peer=10.1.0.9
  # The spec's own peer= is routed too (the kernel is asked for it), with or without --peer.
  pick rdma_cm:peer=10.1.0.9 "" 2 "the spec's own peer" rdma_cm:peer=10.1.0.9
  pick rdma_cm:peer=10.2.0.9 10.2.0.9 3 "the same peer twice" rdma_cm:peer=10.2.0.9
  # mode=v1: every GID here is RoCE v2, so rdma_cm finds no entry of the default mode: ENODEV.
  out=$("$cli" select --input "$table" --profile rdma_cm:mode=v1 --peer 10.1.0.9 2>&1); rc=$?
  if [ $rc -eq 1 ] && printf '%s\n' "$out" | grep -q "rdma_cm:peer=10.1.0.9,mode=v1: FAILED: .*ENODEV"; then
    echo "ok: mode=v1 keeps its option and fails with ENODEV"
  else
    echo "FAIL: rdma_cm:mode=v1 --peer: exit $rc"; printf '%s\n' "$out"; fail=1
  fi
  # Two different peers: refused, not one of them silently ignored.
  out=$("$cli" select --input "$table" --profile rdma_cm:peer=10.2.0.9 --peer 10.1.0.9 2>&1); rc=$?
  if [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "names its own peer (10.2.0.9)"; then
    echo "ok: a second, different peer is refused"
  else
    echo "FAIL: two peers: exit $rc"; printf '%s\n' "$out"; fail=1
  fi
  exit $fail
fi
# check PEER EXPECTED_INDEX WHAT
check() {
  out=$("$cli" select --input "$table" --peer "$1" --json 2>&1)
  idx=$(printf '%s\n' "$out" | sed -n 's/^      "index": \([0-9]*\),$/\1/p' | head -n 1)
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
