#!/usr/bin/env bash
# rdma_cm programs on the fake librdmacm + libibverbs, in a network namespace this script makes
# (the netdevs and addresses of the table, as on the host the table came from):
#   programs.sh LIBDIR TABLES EXPECT PROBE CASE
# Each case checks the program's own result and that the sgid_index in the control log (the
# fake's bind/resolve records and the fake libibverbs' INIT->RTR) is the one rdmacm_expect
# computes with the library's rule (gidpolicy::rdma_cm_source) and `gidpolicy select --profile
# rdma_cm:local=ADDR` prints for the same table (RDMACM_GIDPOLICY: the CLI). Exit 77 (skipped) where a
# network namespace cannot be made.
set -uo pipefail
lib=$1 tables=$2 expect=$3 probe=$4 case=$5
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${RDMACM_IN_NETNS:-}" ]; then
  if ! unshare -n true 2>/dev/null; then
    echo "SKIP: cannot create a network namespace (needs root or user namespaces)"
    exit 77
  fi
  RDMACM_IN_NETNS=1 exec unshare -n "$0" "$@"
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
ip link set lo up
veth() { ip link add "$1" type veth peer name "$1p" && ip link set "$1" up && ip link set "$1p" up; }
veth net1 && veth net2 || { echo "SKIP: cannot create veth links here"; exit 77; }
ip addr add 10.152.0.12/24 dev net1
ip addr add 10.152.4.12/24 dev net2
export LD_LIBRARY_PATH=$lib GIDPOLICY_FAKE_CM_DIR=$work/cm GIDPOLICY_FAKE_LOG=$work/log.jsonl
export GIDPOLICY_FAKE_TABLES=$tables/nccl-1573-pod.show_gids.txt
mkdir -p "$work/cm"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# want ADDR NETDEV [MODES]: "DEVICE PORT INDEX" by the library's rule
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
want() { "$expect" "$GIDPOLICY_FAKE_TABLES" "$@"; }
# logged CALL ADDR DEVICE PORT INDEX: the fake's record of CALL for source ADDR chose that slot
logged() {
  grep -Eq "\"call\":\"$1\",\"device\":\"$3\".*\"port_num\":$4,\"result\":0,\"sgid_index\":$5,\"src\":\"$2:" \
    "$GIDPOLICY_FAKE_LOG"
}
# rtr INDEX: some INIT->RTR of the fake libibverbs (for UD: an address handle) used that
# sgid_index and succeeded
rtr() {
  grep -Eq "(\"transition\":\"INIT->RTR\"|\"call\":\"create_ah\").*\"sgid_index\":$1,.*\"result\":0" "$GIDPOLICY_FAKE_LOG"
}
check_choice() { # CALL ADDR NETDEV [MODES]
  local call=$1 addr=$2; shift 2
  read -r dev port idx < <(want "$addr" "$@") || { bad "rdmacm_expect has no choice for $addr"; return; }
  if logged "$call" "$addr" "$dev" "$port" "$idx"; then
    echo "sgid_index: $call $addr -> $dev port $port index $idx (rdmacm_expect agrees)"
  else
    bad "no $call record for $addr choosing $dev port $port index $idx"; grep "\"call\":\"$call\"" "$GIDPOLICY_FAKE_LOG"
  fi
  rtr "$idx" || bad "no INIT->RTR from sgid_index $idx"
  # And what the CLI says for the same table and address: `gidpolicy select --profile
  # rdma_cm:local=ADDR` (mode=v1 where the case sets the device's default RoCE mode to v1).
  if [ -n "${RDMACM_GIDPOLICY:-}" ]; then
    local spec="rdma_cm:local=$addr"
    case "${2:-}" in *=v1) spec="$spec,mode=v1" ;; esac
    local said
    said=$("$RDMACM_GIDPOLICY" select --input "$GIDPOLICY_FAKE_TABLES" --profile "$spec" 2>&1)
    if grep -q "^$dev port $port index $idx: rdma_cm:local=" <<<"$said"; then
      echo "sgid_index: gidpolicy select --profile $spec agrees ($dev port $port index $idx)"
    else
      bad "gidpolicy select --profile $spec does not choose $dev port $port index $idx:"; echo "$said"
    fi
  fi
}
# listens: how many listen records the control log holds (0 before it exists)
listens() { local n; n=$(grep -c '"call":"listen"' "$GIDPOLICY_FAKE_LOG" 2>/dev/null); echo "${n:-0}"; }
# rping_teardown_race FILE: FILE (an rping's output) ends in rping 44's own teardown race and
# in nothing else: its event thread, back from the last event (DISCONNECT), asks for another
# after main destroyed the channel, and exits through perror (rdma-core f3ae6534a, fixed in
# rping 59; Debian 12 ships 44). The fake answers as librdmacm does, EBADF (the closed fd).
# (Anywhere in FILE, not last: a client's stdout is a file, so its `ping data:` lines are
# flushed at exit, after the unbuffered perror.)
rping_teardown_race() {
  grep -qx 'rdma_get_cm_event: Bad file descriptor' "$1" &&
    [ "$(grep -vc -e '^rdma_get_cm_event: Bad file descriptor$' -e 'DISCONNECT EVENT' -e '^ping data: ' \
      -e '^wait for RDMA_READ_ADV state 10$' "$1")" -eq 0 ] &&
    grep -q "DISCONNECT EVENT" "$1" && echo "note: ${1##*/}: rping 44's own teardown race (EBADF after DISCONNECT), accepted"
}
# exited_ok NAME SIDE STATUS: the status is 0, or the side is rping's and hit only its race.
exited_ok() {
  [ "$3" -eq 0 ] || { [ "${1%%_*}" = rping ] && rping_teardown_race "$work/$1.$2"; }
}
# pair NAME "SERVER" "CLIENT" [daemon|ctrl]: the client's exit status decides; the server must
# end 0 too unless it is a daemon (cmtime), then it is stopped; ctrl: the server listens only
# after the client's control connection (fi_pingpong).
# Every bound is a hang guard, far above the second or so a pair takes on an idle machine: 60 s
# for the server to listen (it fails the case, saying so), then 60 s per program.
pair() {
  local name=$1 server=$2 client=$3 daemon=${4:-}
  command -v "${server%% *}" > /dev/null || { echo "SKIP: no ${server%% *} (rdmacm-utils, perftest)"; exit 77; }
  local listens ready=''
  listens=$(listens)
  # shellcheck disable=SC2086 # the command strings are meant to split
  timeout 120 $server > "$work/$name.server" 2>&1 &
  local spid=$!
  for _ in $(seq 600); do
    if [ "$daemon" = ctrl ]; then
      # fi_pingpong listens on rdma_cm only once the client's control socket is up, and its client
      # connects that socket once, without retrying: wait for the server's TCP listener (47592,
      # fabtests' control port; this namespace is the test's own).
      [ -n "$(ss -Hltn 'sport = :47592')" ] && { ready=1; break; }
    else
      # The server is ready when it listens (a client that comes first is rejected, as on Linux).
      [ "$(listens)" -gt "$listens" ] && { ready=1; break; }
    fi
    kill -0 "$spid" 2>/dev/null || break  # it ended before listening: its status says how
    sleep 0.1
  done
  if [ -z "$ready" ] && kill -0 "$spid" 2>/dev/null; then
    bad "$name server did not listen within 60 s"
    kill "$spid" 2>/dev/null
    wait "$spid"
    cat "$work/$name.server"
    return
  fi
  # shellcheck disable=SC2086
  timeout 60 $client > "$work/$name.client" 2>&1
  local crc=$?
  tail -3 "$work/$name.client"
  if [ "$daemon" = daemon ]; then kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; src=0; else wait "$spid"; src=$?; fi
  exited_ok "$name" client $crc || { bad "$name client exited $crc"; cat "$work/$name.client"; }
  exited_ok "$name" server $src || { bad "$name server exited $src"; cat "$work/$name.server"; }
}

case $case in
  rping)
    pair rping "rping -s -a 10.152.0.12 -p 7471 -C 5 -V" "rping -c -I 10.152.4.12 -a 10.152.0.12 -p 7471 -C 5 -V -v"
    grep -q "ping data: rdma-ping-4" "$work/rping.client" || bad "rping moved no data"
    # The kernel's answer for this table, known independently: each address's RoCE v2 GID.
    [ "$(want 10.152.0.12 net1)" = "mlx5_0 1 7" ] || bad "10.152.0.12: not mlx5_0's index 7"
    [ "$(want 10.152.4.12 net2)" = "mlx5_1 1 7" ] || bad "10.152.4.12: not mlx5_1's index 7"
    check_choice bind_addr 10.152.0.12 net1
    check_choice resolve_addr 10.152.4.12 net2 ;;
  ucmatose)
    pair ucmatose "ucmatose -b 10.152.0.12 -C 4 -c 2" "ucmatose -s 10.152.0.12 -b 10.152.4.12 -C 4 -c 2"
    grep -q "return status 0" "$work/ucmatose.client" || bad "ucmatose did not complete"
    check_choice bind_addr 10.152.0.12 net1
    check_choice resolve_addr 10.152.4.12 net2 ;;
  udaddy)
    pair udaddy "udaddy -b 10.152.0.12 -C 4" "udaddy -s 10.152.0.12 -b 10.152.4.12 -C 4"
    grep -q "return status 0" "$work/udaddy.client" || bad "udaddy did not complete"
    check_choice bind_addr 10.152.0.12 net1
    check_choice resolve_addr 10.152.4.12 net2 ;;
  udaddy_any)
    # The server as its manual starts it, without an address: rdma_listen on an unbound id, which
    # the kernel binds to 0.0.0.0; each request gets the device of the address it was sent to.
    # (udaddy's -p names the port space, not a port: `-p 7476` is refused by rdma_create_id, EINVAL,
    # on the kernel too.) Its port is 7174; this namespace and CM directory are the test's own.
    pair udaddy_any "udaddy -C 4" "udaddy -s 10.152.0.12 -b 10.152.4.12 -C 4"
    grep -q "return status 0" "$work/udaddy_any.client" || bad "udaddy did not complete"
    grep -q '"call":"listen",.*"src":"0.0.0.0:7174"' "$GIDPOLICY_FAKE_LOG" || bad "no listener on 0.0.0.0:7174"
    check_choice resolve_addr 10.152.4.12 net2 ;;
  cmtime)
    pair cmtime "cmtime -b 10.152.0.12 -c 50" "cmtime -s 10.152.0.12 -c 50" daemon
    grep -q "^connect" "$work/cmtime.client" || bad "cmtime printed no connect times"
    # The client names no source: the route to a local address is that address, on net1.
    check_choice resolve_addr 10.152.0.12 net1 ;;
  rdma_server_client)
    pair rdma_sc "rdma_server -s 10.152.0.12 -p 7472" "rdma_client -s 10.152.0.12 -p 7472"
    grep -q "rdma_client: end 0" "$work/rdma_sc.client" || bad "rdma_client did not end 0"
    check_choice bind_addr 10.152.0.12 net1 ;;
  ib_send_bw|ib_write_bw)
    command -v "$case" > /dev/null || { echo "SKIP: no $case (perftest)"; exit 77; }
    pair "$case" "$case -R -d mlx5_0 -n 200" "$case -R -d mlx5_0 -n 200 10.152.0.12"
    grep -Eq "^ 65536 +200 " "$work/$case.client" || bad "$case printed no result line"
    check_choice resolve_addr 10.152.0.12 net1 ;;
  fi_pingpong_msg)
    # libfabric's verbs msg endpoint (rdma_cm underneath). Its server binds 127.0.0.1, which
    # rdma_cm gives the first active port's GID 0: a table that has one (ibm-pr4-cx6).
    command -v fi_pingpong > /dev/null || { echo "SKIP: no fi_pingpong (libfabric-bin)"; exit 77; }
    export GIDPOLICY_FAKE_TABLES=$tables/ibm-pr4-cx6.show_gids.txt
    veth ens1f0 && ip addr add 172.19.0.60/24 dev ens1f0
    pair fi_msg "fi_pingpong -p verbs -e msg -d mlx5_0 -S 64 -I 10" \
      "fi_pingpong -p verbs -e msg -d mlx5_0 -S 64 -I 10 172.19.0.60" ctrl
    grep -Eq "^64 +10 +=10 " "$work/fi_msg.client" || bad "fi_pingpong: no 10 acknowledged transfers"
    grep -q '"call":"listen".*"sgid_index":0,"src":"127.0.0.1:' "$GIDPOLICY_FAKE_LOG" || bad "no loopback listener on GID 0"
    rtr 0 || bad "no INIT->RTR from sgid_index 0" ;;
  fi_pingpong_msg_any)
    # The verbs msg server without an address (as fi_pingpong's manual starts it): libfabric's
    # passive endpoint listens on an unbound id, or binds 0.0.0.0, where the kernel succeeds.
    command -v fi_pingpong > /dev/null || { echo "SKIP: no fi_pingpong (libfabric-bin)"; exit 77; }
    export GIDPOLICY_FAKE_TABLES=$tables/ibm-pr4-cx6.show_gids.txt
    veth ens1f0 && ip addr add 172.19.0.60/24 dev ens1f0
    pair fi_msg_any "fi_pingpong -p verbs -e msg -S 64 -I 10" "fi_pingpong -p verbs -e msg -S 64 -I 10 172.19.0.60" ctrl
    grep -Eq "^64 +10 +=10 " "$work/fi_msg_any.client" || bad "fi_pingpong: no 10 acknowledged transfers" ;;
  fi_pingpong_dgram)
    # libfabric's verbs dgram endpoint (domain <device>-dgram): a UD QP whose address is the
    # port's GID at FI_VERBS_GID_IDX (default 0), read with ibv_query_gid, not rdma_cm's choice;
    # every send goes through an address handle from that index. -v checks the data.
    command -v fi_pingpong > /dev/null || { echo "SKIP: no fi_pingpong (libfabric-bin)"; exit 77; }
    export GIDPOLICY_FAKE_TABLES=$tables/ibm-pr4-cx6.show_gids.txt
    veth ens1f0 && ip addr add 172.19.0.60/24 dev ens1f0
    # The table's GIDs at those indices, as the log prints them.
    for pick in "0 fe80::e42:a1ff:fe5d:4db8" "5 ::ffff:172.19.0.60"; do
      read -r idx gid <<< "$pick"
      : > "$GIDPOLICY_FAKE_LOG"
      [ "$idx" = 0 ] && unset FI_VERBS_GID_IDX || export FI_VERBS_GID_IDX=$idx
      pair "fi_dgram$idx" "fi_pingpong -p verbs -e dgram -d mlx5_0-dgram -S 64 -I 10 -v" \
        "fi_pingpong -p verbs -e dgram -d mlx5_0-dgram -S 64 -I 10 -v 172.19.0.60" ctrl
      grep -Eq "^64 +10 +=10 " "$work/fi_dgram$idx.client" || bad "fi_pingpong dgram (gid_idx $idx): no 10 verified transfers"
      # Both sides' address handles: from index idx, to the peer's GID at that index.
      n=$(grep -c "\"call\":\"create_ah\".*\"sgid_index\":$idx,\"dgid\":\"$gid\",\"result\":0" "$GIDPOLICY_FAKE_LOG")
      [ "$n" -ge 2 ] && echo "sgid_index: dgram address handles from index $idx to $gid ($n)" ||
        bad "fi_pingpong dgram: $n address handles from index $idx to $gid"
    done ;;
  roce_mode_v1)
    # The port's default mode set to v1: rdma_cm takes the v1 GID of the same address.
    export GIDPOLICY_FAKE_ROCE_MODE=mlx5_0=v1
    pair rping "rping -s -a 10.152.0.12 -p 7473 -C 3 -V" "rping -c -a 10.152.0.12 -p 7473 -C 3 -V"
    check_choice bind_addr 10.152.0.12 net1 mlx5_0=v1
    [ "$(want 10.152.0.12 net1 mlx5_0=v1)" = "mlx5_0 1 6" ] || bad "v1 mode: not index 6" ;;
  enodev_no_gid)
    command -v rping > /dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
    # An address of net1 that no GID holds: rdma_bind_addr fails with ENODEV. rping 44's CM thread
    # may then add "rdma_get_cm_event: Bad file descriptor" (its teardown race, see rping_teardown_race),
    # so the output is grepped as a here-string: a pipe into grep -q can SIGPIPE under pipefail.
    ip addr add 10.152.9.9/24 dev net1
    out=$(timeout 60 rping -s -a 10.152.9.9 -p 7474 -C 1 2>&1); echo "$out" | tail -2
    grep -q "No such device" <<< "$out" || bad "rping did not fail with ENODEV"
    grep -q '"call":"bind_addr","error":"ENODEV"' "$GIDPOLICY_FAKE_LOG" || bad "no ENODEV bind record"
    want 10.152.9.9 net1 > /dev/null && bad "rdmacm_expect chose a GID for 10.152.9.9"
    out=$("$probe" bind 10.152.9.9); [ "$out" = "errno 19 No such device" ] || bad "probe: $out" ;;
  enodev_v1_only)
    # The only GID of the address is RoCE v1 and the port's mode is the default v2: ENODEV.
    export GIDPOLICY_FAKE_TABLES=$here/tables/v1-only.show_gids.txt
    out=$("$probe" bind 10.152.0.12); echo "$out"
    [ "$out" = "errno 19 No such device" ] || bad "v1-only with v2 mode: $out"
    want 10.152.0.12 net1 > /dev/null && bad "rdmacm_expect chose a GID"
    out=$(GIDPOLICY_FAKE_ROCE_MODE=mlx5_0=v1 "$probe" bind 10.152.0.12); echo "mode v1: $out"
    [ "$out" = "mlx5_0 1 1" ] || bad "v1-only with v1 mode: $out" ;;
  other_namespace)
    # net2 (10.152.4.12 in the table) is moved into another namespace: not found here.
    unshare -n sleep 300 >/dev/null 2>&1 &  # killed below (and by the EXIT trap): a lifetime bound only
    other=$!
    until_own_netns "$other" || bad "unshare -n gave its process no namespace of its own in 60 s"
    ip link set net2 netns "$other" || { echo "SKIP: cannot move a link"; exit 77; }
    ! ip link show net2 > /dev/null 2>&1 || bad "net2 is still in this namespace"
    out=$("$probe" bind 10.152.4.12); echo "$out"
    [ "$out" = "errno 99 Cannot assign requested address" ] || bad "address in another namespace: $out"
    grep -q '"call":"bind_addr","error":"EADDRNOTAVAIL"' "$GIDPOLICY_FAKE_LOG" || bad "no EADDRNOTAVAIL record"
    kill "$other" ;;
  unreachable)
    command -v rping > /dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
    out=$(timeout 60 rping -c -a 10.99.0.1 -p 7475 -C 1 2>&1); echo "$out" | tail -2
    grep -q "RDMA_CM_EVENT_ADDR_ERROR, error -101" <<< "$out" || bad "no ADDR_ERROR ENETUNREACH" ;;
  tables)
    # Every address of every example table with an Ethernet link layer: the fake's choice (read
    # back through ibv_query_gid) equals the library's. The table's netdevs are made here.
    n=0
    for t in nccl-1573-pod.show_gids.txt ibm-pr4-cx6.show_gids.txt mooncake-1617-ipv6only.show_gids.txt; do
      for l in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -v '^lo$'); do ip link del "$l" 2>/dev/null; done
      awk 'NR > 2 && $1 !~ /^n_gids/ {print $NF}' "$tables/$t" | sort -u | while read -r d; do veth "$d"; done
      awk 'NR > 2 && $1 !~ /^n_gids/ {print $NF, (NF == 7 ? $5 : $4)}' "$tables/$t" | sort -u | while read -r d a; do
        case $a in fe80:*) continue ;; esac
        case $a in *:*) ip addr add "$a/64" dev "$d" nodad ;; *) ip addr add "$a/24" dev "$d" ;; esac
        echo "$d $a"
      done > "$work/addrs"
      while read -r d a; do
        : > "$GIDPOLICY_FAKE_LOG"
        GIDPOLICY_FAKE_TABLES=$tables/$t "$probe" bind "$a" > /dev/null
        got=$(grep '"call":"bind_addr"' "$GIDPOLICY_FAKE_LOG" |
          sed -E 's/.*"device":"([^"]*)".*"port_num":([0-9]+),.*"sgid_index":([0-9]+),.*/\1 \2 \3/')
        exp=$("$expect" "$tables/$t" "$a" "$d")
        [ "$got" = "$exp" ] || bad "$t $a on $d: fake '$got', library '$exp'"
        if [ -n "${RDMACM_GIDPOLICY:-}" ] && [ -n "$got" ]; then
          read -r gd gp gi <<<"$got"
          said=$("$RDMACM_GIDPOLICY" select --input "$tables/$t" --profile "rdma_cm:local=$a" 2>&1)
          grep -q "^$gd port $gp index $gi: rdma_cm:local=" <<<"$said" ||
            bad "$t $a: gidpolicy select --profile rdma_cm:local=$a does not choose $got"
        fi
        echo "$t $a ($d): $got${RDMACM_GIDPOLICY:+ (gidpolicy select agrees)}"
        n=$((n + 1))
      done < "$work/addrs"
    done
    [ $n -ge 4 ] || bad "only $n addresses compared"
    # Known answers (the RoCE v2 entry of each address), independent of the shared rule.
    [ "$("$expect" "$tables/ibm-pr4-cx6.show_gids.txt" 172.19.0.60 ens1f0)" = "mlx5_0 1 5" ] || bad "ibm: not index 5" ;;
  fake_host)
    # Two fake hosts (gidpolicy fake-host --netns: each its own network namespace with its
    # table's netdevs), one fabric directory: the client resolves through its namespace's route
    # (10.152.0.13 on net1 towards 10.152.0.12) and rping runs between the namespaces.
    [ -x "${RDMACM_GIDPOLICY:-}" ] || { echo "SKIP: no gidpolicy CLI"; exit 77; }
    command -v rping > /dev/null || { echo "SKIP: no rping (rdmacm-utils)"; exit 77; }
    unset GIDPOLICY_FAKE_CM_DIR
    fh=("$RDMACM_GIDPOLICY" fake-host --fabric "$work/fabric" --netns --tables)
    timeout 120 "${fh[@]}" "$tables/nccl-1573-pod.show_gids.txt" -- rping -s -a 10.152.0.12 -p 7481 -C 3 -V \
      > "$work/rping_fh.server" 2>&1 &
    spid=$!
    for _ in $(seq 600); do grep -q '"call":"listen"' "$GIDPOLICY_FAKE_LOG" 2>/dev/null && break; sleep 0.1; done
    grep -q '"call":"listen"' "$GIDPOLICY_FAKE_LOG" 2>/dev/null ||
      bad "the fake-host rping server did not listen within 60 s: $(tail -3 "$work/rping_fh.server")"
    timeout 60 "${fh[@]}" "$here/tables/peer-13.show_gids.txt" -- rping -c -a 10.152.0.12 -p 7481 -C 3 -V -v \
      > "$work/rping_fh.client" 2>&1 || rping_teardown_race "$work/rping_fh.client" ||
      { bad "rping between fake hosts"; cat "$work/rping_fh.client"; }
    wait "$spid" || rping_teardown_race "$work/rping_fh.server" || { bad "the fake-host rping server"; cat "$work/rping_fh.server"; }
    grep -q "ping data: rdma-ping-2" "$work/rping_fh.client" || bad "no data between the fake hosts"
    grep -q '"call":"resolve_addr","device":"mlx5_0".*"sgid_index":3,"src":"10.152.0.13:' "$GIDPOLICY_FAKE_LOG" ||
      bad "the client did not resolve from 10.152.0.13 (index 3)"
    [ "$("$expect" "$here/tables/peer-13.show_gids.txt" 10.152.0.13 net1)" = "mlx5_0 1 3" ] || bad "library: not index 3"
    rtr 7 && rtr 3 || bad "no RTR from index 7 and 3" ;;
  ucx_rdmacm)
    # UCX's client/server connection establishment (a sockaddr endpoint) over its rdmacm CM:
    # ucx_info -A listens on the address and connects an endpoint to it, both in one process,
    # on a fake host (UCX needs its sysfs) whose table has a GID 0, which UCX asks of a port.
    # rdma_cm chooses the GID of 172.19.0.60 (index 5) and UCX's RC QPs use it.
    [ -x "${RDMACM_GIDPOLICY:-}" ] || { echo "SKIP: no gidpolicy CLI"; exit 77; }
    command -v ucx_info > /dev/null || { echo "SKIP: no ucx_info (ucx-utils)"; exit 77; }
    unset GIDPOLICY_FAKE_CM_DIR
    t=$tables/ibm-pr4-cx6.show_gids.txt
    timeout 60 "$RDMACM_GIDPOLICY" fake-host --fabric "$work/fabric" --netns --tables "$t" -- \
      ucx_info -u t -e -A 172.19.0.60 > "$work/ucx" 2>&1 || { bad "ucx_info -A exited $?"; cat "$work/ucx"; }
    grep -E "lane\[[0-9]+\]: +cm rdmacm" "$work/ucx" || bad "the endpoint has no rdmacm CM lane"
    grep -E "rc_verbs/mlx5_0:1" "$work/ucx" || bad "the endpoint has no rc_verbs lane on mlx5_0:1"
    read -r dev port idx < <("$expect" "$t" 172.19.0.60 ens1f0)
    [ "$dev $port $idx" = "mlx5_0 1 5" ] || bad "library: 172.19.0.60 is not mlx5_0's index 5"
    grep -Eq "\"call\":\"resolve_addr\",\"device\":\"$dev\".*\"port_num\":$port,\"result\":0,\"sgid_index\":$idx,\"src\":\"172.19.0.60:" \
      "$GIDPOLICY_FAKE_LOG" && echo "sgid_index: UCX's resolve_addr 172.19.0.60 -> $dev port $port index $idx" ||
      bad "no resolve_addr from 172.19.0.60 choosing index $idx"
    grep -q '"call":"connect",.*"result":0' "$GIDPOLICY_FAKE_LOG" || bad "UCX's rdma_connect did not succeed"
    grep -q '"call":"accept",.*"result":0' "$GIDPOLICY_FAKE_LOG" || bad "UCX's rdma_accept did not succeed"
    grep -Eq "\"qp_type\":\"rc\",\"transition\":\"INIT->RTR\".*\"sgid_index\":$idx,.*\"result\":0" "$GIDPOLICY_FAKE_LOG" ||
      bad "no RC INIT->RTR from sgid_index $idx" ;;
  abuse)
    "$probe" abuse 10.152.0.12 || bad "abuse cases" ;;
  fd_reuse)
    # The channel's fd closed by the program and its number reused by a file: never written to.
    TMPDIR=$work "$probe" fd_reuse 10.152.0.12 || bad "the fake wrote into a file that reused the channel's fd" ;;
  fork)
    # A fork()ed child (no exec) of a process whose progress thread runs: its connections with
    # the parent get their events on both sides (the child's run is hang-guarded by alarm()).
    timeout 180 "$probe" fork 10.152.0.12 || bad "a fork()ed child's connections" ;;
  kernel_answers)
    # A table with a GID 0 (the wildcard address resolves through the loopback binding, the
    # first active port's GID 0: nccl-1573-pod has none, and there the kernel says ENODEV too),
    # and a route for the multicast group, as a host that sends to groups has one.
    export GIDPOLICY_FAKE_TABLES=$tables/ibm-pr4-cx6.show_gids.txt
    veth ens1f0 && ip addr add 172.19.0.60/24 dev ens1f0
    ip route add 224.0.0.0/4 dev ens1f0
    "$probe" kernel_answers 172.19.0.60 239.1.2.3 || bad "the fake refused what the kernel accepts" ;;
  stale_names)
    # A listener killed by SIGKILL leaves its socket file; the next process sweeps it, and never
    # a live listener's. Each listener says when it listens (a hang guard of 60 s each).
    listener() { # PORT: starts one, waits until it listens
      "$probe" listen 10.152.0.12 "$1" > "$work/listen.$1" 2>&1 &
      for _ in $(seq 600); do grep -q '^listening' "$work/listen.$1" && return 0; sleep 0.1; done
      bad "the listener on port $1 did not listen within 60 s: $(cat "$work/listen.$1")"
    }
    listener 7491; live=$!
    listener 7492; killed=$!
    kill -9 "$killed"; wait "$killed" 2>/dev/null
    [ -S "$work/cm/tcp-10.152.0.12:7492" ] || bad "no socket file left by the killed listener (the case needs one)"
    listener 7493; later=$!
    names=$(cd "$work/cm" && ls)
    echo "socket directory: $names"
    grep -qx 'tcp-10.152.0.12:7492' <<<"$names" && bad "the killed listener's socket file is still there"
    grep -qx 'tcp-10.152.0.12:7491' <<<"$names" || bad "the live listener's socket file was removed"
    grep -qx 'tcp-10.152.0.12:7493' <<<"$names" || bad "the later listener has no socket file"
    # The live one still answers: a fresh bind of its port is refused (EADDRINUSE).
    out=$(timeout 60 "$probe" listen 10.152.0.12 7491); [ "$out" = "errno 98 Address already in use" ] || bad "port 7491: $out"
    kill "$live" "$later" ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
exit $fail
