#!/usr/bin/env bash
# UCX, Open MPI and libfabric, unmodified, on a table under `gidpolicy fake-host`.
#
#   middleware.sh CHECK TABLE [ARGS...]
#
# CHECK is one of
#   ucx_info          every Ethernet port of TABLE is listed with rc_verbs and ud_verbs; prints
#                     the GID index UCX chose on each (ucx_gid_choice.sh)
#   ucx_perftest      tag_lat, tag_bw, ucp_put_bw, ucp_get, ucp_add, ucp_fadd between two
#                     processes, each in its own fake host, on the first Ethernet port UCX accepts
#   mpi BINARY        mpirun -np 2 --mca pml ucx BINARY (tests/middleware/mpi_pingpong.c)
#   fi_info           fi_info -p verbs lists each device of TABLE
#   fi_pingpong       fi_pingpong -p verbs -e rdm with data checks (-v), two fake hosts
#   fi_pingpong_refused
#                     the same on a table whose GID slot 0 is empty ends in fi_av_insert's error
#   ucx_rejects       UCX refuses every port ("invalid gid[N]") and opens no verbs transport
#   ucx_times_out DEV:PORT INDEX
#                     the server pins UCX_IB_GID_INDEX=INDEX (a user's setting), the client
#                     chooses: UCX ends in its timeout error (RC: "transport retry counter
#                     exceeded"; UD: "unhandled timeout error", after UCX's 30 s UD timeout)
#                     and the fake's control log says why the packets were dropped
#   ucx_peer_killed   the server's ucx_perftest is killed (SIGKILL) in the middle of ucp_put_bw:
#                     the client, whose RDMA writes are always in flight, ends in UCX's "transport
#                     retry counter exceeded" within 60 s, as on hardware (the fake keeps the RC
#                     retry budget of a peer that is gone), and not in UCX's assertion that the
#                     QP it posts to is RTS (the struct ibv_qp's state is libibverbs', which the
#                     HCA's error state does not change). (tag_bw is not used: a client whose
#                     requests were all acknowledged waits for a dead peer forever, as on
#                     hardware, since ucx_perftest runs without UCX's peer error handling.)
#   status            the command's exit status comes back (7; 143 for SIGTERM; 127 when missing)
#   host_untouched    the caller's mounts, /dev and /sys/class do not change
#   rewrite           a rewrite of the table rewrites the sysfs view and (--netns) the netdevs
#   argv_verbatim     the command after -- reaches exec as written ([0-9], [a,b], []); one
#                     without -- is refused
#   signals           USR1, USR2, ALRM, TERM and HUP sent to fake-host reach the command
#   killed            SIGKILL of fake-host ends the command; nothing is left on the caller's
#                     file systems
#   messages          the fixed sysfs bound, a full private tmpfs, a --fabric link, a # netdev
#   non_root          as nobody: it works, or the refusal says what is missing and what works
#   netns             `fake-host --netns`: the table's netdevs hold the GIDs' addresses, and two
#                     UCX processes in two fake hosts with their own network namespaces talk
#                     through the fake (their out-of-band TCP carried over a Unix socket)
#
# Environment: GIDPOLICY (the CLI), PORT (a base TCP port, 8 ports are used), LOG_DIR.
# Every check fails when the environment holds a workaround: LD_PRELOAD / LD_AUDIT, or a UCX_,
# OMPI_MCA_ or FI_ variable other than the user settings UCX_TLS and UCX_NET_DEVICES (the checks
# set UCX_LOG_LEVEL to read UCX's choice, and ucx_times_out sets UCX_IB_GID_INDEX on one side).
# Where the fake host's namespaces are refused, the check skips (exit 77) saying why.
# Every time bound below is a hang guard, far above what an idle machine needs (the suite runs
# with ctest -j4 beside CPU-bound work, and under ASan): no verdict waits for one to expire,
# except UCX's own UD timeout (30 s), which is UCX's behaviour under test.
set -uo pipefail
check=${1:?usage: middleware.sh CHECK TABLE [ARGS...]}
table=${2:?usage: middleware.sh CHECK TABLE [ARGS...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
gidpolicy=${GIDPOLICY:?GIDPOLICY names the gidpolicy binary}
port=${PORT:-31000}
log_dir=${LOG_DIR:-${TMPDIR:-/tmp}}
name=$(basename "$table")
mkdir -p "$log_dir"
work=$(mktemp -d "$log_dir/middleware.XXXXXX")
# The fake fabric of this check alone (QP socket files, the fake librdmacm's listeners): its fake
# hosts meet each other and no other test's, whatever runs beside it (ctest -j).
fabric=$work/fabric
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL ($check, $name): $*" >&2
  exit 1
}
skip() {
  echo "SKIP ($check, $name): $*"
  exit 77
}

# ---- no workaround variables, no shims ----------------------------------------------------------
for v in LD_PRELOAD LD_AUDIT; do
  [ -z "${!v:-}" ] || fail "$v is set (${!v}): the middleware must run on the fake unmodified, without shims"
done
while IFS='=' read -r k _; do
  case $k in
    UCX_TLS | UCX_NET_DEVICES) ;;
    UCX_* | OMPI_MCA_* | FI_*) fail "$k is set: only UCX_TLS and UCX_NET_DEVICES may be (no workaround variables)" ;;
  esac
done < <(env)

# The fake host must add only its own variables to what the program inherits.
probe=$("$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- env 2>"$work/probe.err")
rc=$?
if [ $rc -ne 0 ]; then
  grep -q "cannot create a private" "$work/probe.err" && skip "$(cat "$work/probe.err")"
  fail "fake-host failed: $(cat "$work/probe.err")"
fi
extra=$(diff <(env | grep -v '^_=' | sort) <(printf '%s\n' "$probe" | grep -v '^_=' | sort) | sed -n 's/^> //p' |
  grep -v -E '^(LD_LIBRARY_PATH|GIDPOLICY_FAKE_TABLES|GIDPOLICY_FAKE_SYSFS|GIDPOLICY_FAKE_FABRIC)=')
[ -z "$extra" ] || fail "fake-host adds variables beyond its own: $extra"
grep -q "^LD_LIBRARY_PATH=[^:]*fakes/libibverbs/lib" <<< "$probe" ||
  fail "the fake libibverbs is not first on LD_LIBRARY_PATH inside the fake host"

host() { "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" "$@"; }

# Ethernet ports of the table, as "dev:port", in table order.
ethernet_ports() {
  "$gidpolicy" show --json --input "$table" | awk -F'"' '
    /"device":/ {dev = $4}
    /"port":/ {gsub(/[^0-9]/, "", $3); p = $3}
    /"link_layer": "ethernet"/ {print dev ":" p}'
}

# Wait until a TCP port listens on this host (the servers' out-of-band sockets): 60 s at most.
wait_listen() {
  for _ in $(seq 1 600); do
    [ -n "$(ss -ltnH "sport = :$1" 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  return 1
}

# The first Ethernet port UCX accepts (a GID index chosen).
ucx_port() {
  local choice
  choice=$(GIDPOLICY=$gidpolicy "$here/ucx_gid_choice.sh" "$table") || return 1
  awk '$3 != "invalid" {print $1 ":" $2; exit}' <<< "$choice"
}

# The sgid_index values the programs routed from, from the fake's control log: RC QPs' RTR
# (UCX's and MPI's data) or, with "ah", the address handles (UD; UCX's GID probe AHs included).
used_indices() {  # used_indices LOG [ah]
  if [ "${2:-}" = ah ]; then
    grep -h '"call":"create_ah"' "$1" | grep '"result":0' | grep -o '"sgid_index":[0-9]*' | cut -d: -f2 | sort -un | tr '\n' ' '
  else
    grep -h '"transition":"INIT->RTR"' "$1" | grep '"qp_type":"rc"' | grep '"result":0' |
      grep -o '"sgid_index":[0-9]*' | cut -d: -f2 | sort -un | tr '\n' ' '
  fi
}

# UCX's own choice on DEV:PORT (ucx_gid_choice.sh).
ucx_choice() {
  GIDPOLICY=$gidpolicy "$here/ucx_gid_choice.sh" "$table" | awk -v d="${1%:*}" -v p="${1#*:}" '$1 == d && $2 == p {print $3}'
}

run_pair() {  # run_pair TCPPORT SERVER_ENV CLIENT_ENV -- COMMAND... (client gets 127.0.0.1 appended)
  local p=$1 senv=$2 cenv=$3
  shift 4
  env $senv timeout 120 "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- "$@" >"$work/server.out" 2>&1 &
  local spid=$!
  pids+=("$spid")
  wait_listen "$p" || {
    kill "$spid" 2>/dev/null
    echo "server did not listen on $p: $(tail -3 "$work/server.out")"
    return 1
  }
  env $cenv timeout 60 "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- "$@" 127.0.0.1 >"$work/client.out" 2>&1
  local crc=$?
  wait "$spid"
  local src=$?
  [ $crc -eq 0 ] && [ $src -eq 0 ] && return 0
  echo "client exit $crc, server exit $src"
  return 1
}

# start_pair TIMEOUT SERVER_ENV -- ARGS...: ucx_perftest ARGS as server and as client
# (127.0.0.1), each in its own fake host, both in the background; sets spid and cpid (their
# `timeout` processes) once the server listens. SERVER_ENV: NAME=VALUE words for the server only.
start_pair() {
  local limit=$1 senv=$2
  shift 3
  env $senv timeout "$limit" "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- ucx_perftest -p "$port" "$@" \
    >"$work/server.out" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listen "$port" || fail "server did not listen: $(tail -3 "$work/server.out")"
  timeout "$limit" "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- ucx_perftest -p "$port" "$@" 127.0.0.1 \
    >"$work/client.out" 2>&1 &
  cpid=$!
  pids+=("$cpid")
}

case $check in
  ucx_info)
    command -v ucx_info >/dev/null || skip "ucx_info not installed (Debian ucx-utils)"
    out=$(host -- ucx_info -d 2>&1) || fail "ucx_info -d failed: $(printf '%s\n' "$out" | tail -3)"
    listed=$(printf '%s\n' "$out" | awk '/# *Transport:/ {t = $3} /# *Device:/ {print t, $3}' | sort -u)
    choice=$(GIDPOLICY=$gidpolicy "$here/ucx_gid_choice.sh" "$table") || fail "no GID choice in UCX's log"
    for dp in $(ethernet_ports); do
      dev=${dp%:*} p=${dp#*:}
      for tl in rc_verbs ud_verbs; do
        grep -qx "$tl $dp" <<< "$listed" || fail "ucx_info -d does not list $tl on $dp"
      done
      idx=$(printf '%s\n' "$choice" | awk -v d="$dev" -v p="$p" '$1 == d && $2 == p {print $3}')
      [ -n "$idx" ] && [ "$idx" != invalid ] || fail "UCX logged no GID index for $dp"
      echo "$name: UCX lists $dp with rc_verbs and ud_verbs, GID index $idx"
    done
    ;;

  ucx_perftest)
    command -v ucx_perftest >/dev/null || skip "ucx_perftest not installed (Debian ucx-utils)"
    dp=$(ucx_port) && [ -n "$dp" ] || fail "UCX accepts no port of the table"
    export UCX_TLS=${UCX_TLS:-rc_verbs,ud_verbs} UCX_NET_DEVICES=${UCX_NET_DEVICES:-$dp}
    export GIDPOLICY_FAKE_LOG=$work/control.jsonl
    choice=$(ucx_choice "$dp")
    i=0
    for t in "tag_lat -n 1000" "tag_bw -s 65536 -n 200" "ucp_put_bw -s 65536 -n 200" "ucp_get -s 65536 -n 200" \
      "ucp_add -s 8 -n 1000" "ucp_fadd -s 8 -n 1000"; do
      p=$((port + i))
      i=$((i + 1))
      # shellcheck disable=SC2086
      run_pair "$p" "" "" -- ucx_perftest -p "$p" -t $t || fail "ucx_perftest -t $t: $(tail -4 "$work/client.out")"
      final=$(grep '^Final:' "$work/client.out") || fail "ucx_perftest -t $t printed no result"
      echo "$name $dp ucx_perftest -t $t: $final"
    done
    used=$(used_indices "$work/control.jsonl")
    [ "$used" = "$choice " ] || fail "the RC QPs routed from sgid_index $used, UCX chose $choice"
    echo "$name $dp: UCX chose GID index $choice; every RC QP's RTR used sgid_index $used"
    ;;

  mpi)
    binary=${1:?mpi needs the ping-pong binary}
    command -v mpirun >/dev/null || skip "mpirun not installed (Debian openmpi-bin)"
    dp=$(ucx_port) && [ -n "$dp" ] || fail "UCX accepts no port of the table"
    export UCX_TLS=${UCX_TLS:-rc_verbs,ud_verbs} UCX_NET_DEVICES=${UCX_NET_DEVICES:-$dp}
    export GIDPOLICY_FAKE_LOG=$work/control.jsonl
    choice=$(ucx_choice "$dp")
    root=()
    [ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
    out=$(timeout 120 "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- mpirun "${root[@]}" -np 2 --mca pml ucx \
      "$binary" 2>&1) || fail "mpirun failed: $(printf '%s\n' "$out" | tail -5)"
    for s in "8 B" "65536 B" "1048576 B"; do
      grep -q "mpi_pingpong: $s: .* checked" <<< "$out" || fail "no checked $s ping-pong: $out"
    done
    printf '%s\n' "$out" | sed "s|^|$name $dp |"
    used=$(used_indices "$work/control.jsonl")
    [ "$used" = "$choice " ] || fail "the ranks' RC QPs routed from sgid_index $used, UCX chose $choice"
    echo "$name $dp: UCX chose GID index $choice; the ranks' RC QPs used sgid_index $used"
    ;;

  fi_info)
    command -v fi_info >/dev/null || skip "fi_info not installed (Debian libfabric-bin)"
    out=$(host -- fi_info -p verbs 2>&1) || fail "fi_info -p verbs failed: $(printf '%s\n' "$out" | tail -3)"
    for dp in $(ethernet_ports); do
      # The RDM endpoint fi_pingpong uses runs over the UD ("-dgram") domain; the MSG one needs rdma_cm.
      grep -E -q "domain: ${dp%:*}(-dgram)?\$" <<< "$out" || fail "fi_info -p verbs does not list ${dp%:*}: $out"
      echo "$name: fi_info -p verbs lists ${dp%:*}"
    done
    ;;

  fi_pingpong)
    command -v fi_pingpong >/dev/null || skip "fi_pingpong not installed (Debian libfabric-bin)"
    # Server: -B its out-of-band port; client: -P the server's. -v checks every message's data.
    export GIDPOLICY_FAKE_LOG=$work/control.jsonl
    env timeout 120 "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- fi_pingpong -p verbs -e rdm -v -S 4096 -I 50 \
      -B "$port" >"$work/server.out" 2>&1 &
    spid=$!
    pids+=("$spid")
    wait_listen "$port" || fail "fi_pingpong server did not listen: $(tail -3 "$work/server.out")"
    timeout 60 "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- fi_pingpong -p verbs -e rdm -v -S 4096 -I 50 \
      -P "$port" 127.0.0.1 >"$work/client.out" 2>&1
    crc=$?
    wait "$spid"
    src=$?
    # On failure, enough to tell which step failed: both sides' ends and the fake's refusals.
    [ $crc -eq 0 ] && [ $src -eq 0 ] || fail "fi_pingpong: client exit $crc, server exit $src: $(tail -25 "$work/client.out"
      echo "-- server:"; tail -10 "$work/server.out"
      echo "-- the fakes' refusals:"; grep '"error"' "$work/control.jsonl" | grep -v -e '"bind_addr"' -e '__verbs_log' | tail -15)"
    line=$(grep -E '^4k +50 +=50' "$work/client.out") || fail "fi_pingpong printed no 4k result: $(cat "$work/client.out")"
    echo "$name fi_pingpong -p verbs -e rdm -v: $line"
    # With librdmacm present (the fake's, beside the fake libibverbs) libfabric runs RDM as ofi_rxm
    # over verbs MSG endpoints: RC QPs that rdma_cm connected. Without it, over the UD domain:
    # address handles. Either way the data went through QPs routed from a logged sgid_index.
    used=$(used_indices "$work/control.jsonl" ah)
    if [ -n "$used" ]; then
      echo "$name: libfabric's address handles (UD) used sgid_index $used"
    else
      used=$(used_indices "$work/control.jsonl")
      [ -n "$used" ] || fail "libfabric created no address handle and connected no RC QP"
      echo "$name: libfabric's RC QPs (ofi_rxm over verbs MSG, connected by rdma_cm) used sgid_index $used"
    fi
    ;;

  fi_pingpong_refused)
    # libfabric's verbs datagram endpoint names itself by GID index 0: an empty slot 0 gives an
    # address the peer's address vector refuses.
    command -v fi_pingpong >/dev/null || skip "fi_pingpong not installed (Debian libfabric-bin)"
    env timeout 120 "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- fi_pingpong -p verbs -e rdm -v -S 4096 -I 50 \
      -B "$port" >"$work/server.out" 2>&1 &
    spid=$!
    pids+=("$spid")
    wait_listen "$port" || fail "fi_pingpong server did not listen: $(tail -3 "$work/server.out")"
    timeout 60 "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- fi_pingpong -p verbs -e rdm -v -S 4096 -I 50 \
      -P "$port" 127.0.0.1 >"$work/client.out" 2>&1 && fail "fi_pingpong succeeded on a port whose GID 0 is empty"
    wait "$spid"
    err=$(grep -h '^\[error\].*fi_av_insert' "$work/client.out" "$work/server.out" | head -1)
    [ -n "$err" ] || fail "fi_pingpong failed, but not at fi_av_insert: $(grep -h '^\[error\]' "$work/client.out" | head -2)"
    echo "$name fi_pingpong -p verbs -e rdm refused: $err"
    ;;

  ucx_rejects)
    command -v ucx_info >/dev/null || skip "ucx_info not installed (Debian ucx-utils)"
    out=$(UCX_LOG_LEVEL=diag "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- ucx_info -d 2>&1)
    for dp in $(ethernet_ports); do
      grep -q "invalid gid\[[0-9]*\] on $dp\$" <<< "$out" || fail "UCX did not refuse $dp as invalid"
      grep -q "Device: $dp\$" <<< "$out" && fail "UCX opened a transport on $dp"
      echo "$name: UCX refuses $dp: $(printf '%s\n' "$out" | grep -o "invalid gid\[[0-9]*\] on $dp" | head -1)"
    done
    ;;

  ucx_times_out)
    dp=${1:?ucx_times_out needs DEV:PORT} index=${2:?ucx_times_out needs the server GID index}
    command -v ucx_perftest >/dev/null || skip "ucx_perftest not installed (Debian ucx-utils)"
    export UCX_TLS=${UCX_TLS:-rc_verbs,ud_verbs} UCX_NET_DEVICES=${UCX_NET_DEVICES:-$dp}
    export GIDPOLICY_FAKE_LOG=$work/control.jsonl
    start_pair 150 "UCX_IB_GID_INDEX=$index" -- -t tag_lat -n 100
    # UCX's own error on either side ends the check; the other side may wait for its peer forever.
    # 120 s: above UCX's 30 s UD timeout plus what a loaded machine adds to the start.
    timeout_error="transport retry counter exceeded|unhandled timeout error"
    for _ in $(seq 1 1200); do
      grep -E -q "$timeout_error" "$work/server.out" "$work/client.out" 2>/dev/null && break
      kill -0 "$spid" 2>/dev/null || kill -0 "$cpid" 2>/dev/null || break
      sleep 0.1
    done
    err=$(grep -E -h "$timeout_error" "$work/server.out" "$work/client.out" | head -2)
    [ -n "$err" ] || fail "UCX did not end in its timeout error: $(tail -n 3 "$work/server.out" "$work/client.out")"
    why=$(grep -h '"call":"deliver"' "$work/control.jsonl" | grep -o '"reason":"[^"]*"' | sort -u | head -2)
    [ -n "$why" ] || fail "the control log says nothing about the drops"
    echo "$name $dp (server index $index, client UCX's choice): UCX: $(printf '%s\n' "$err" | sed 's/.*] //' | head -2 | tr '\n' ' ')"
    echo "$name control log: $why"
    ;;

  ucx_peer_killed)
    command -v ucx_perftest >/dev/null || skip "ucx_perftest not installed (Debian ucx-utils)"
    dp=$(ucx_port) && [ -n "$dp" ] || fail "UCX accepts no port of the table"
    export UCX_TLS=${UCX_TLS:-rc_verbs,ud_verbs} UCX_NET_DEVICES=${UCX_NET_DEVICES:-$dp}
    # More messages than run in the test's time: the transfer is under way when the server dies.
    start_pair 180 "" -- -t ucp_put_bw -s 65536 -n 100000000
    # The transfer runs once the client reports progress (a line a second): 60 s at most.
    for _ in $(seq 1 600); do
      grep -q '^\[thread 0\]' "$work/client.out" 2>/dev/null && break
      kill -0 "$cpid" 2>/dev/null || fail "the client ended before the transfer: $(tail -5 "$work/client.out")"
      sleep 0.1
    done
    grep -q '^\[thread 0\]' "$work/client.out" || fail "the transfer did not start: $(tail -5 "$work/client.out")"
    # The server's own process (fake-host's child), not fake-host: a crash, not a shutdown.
    victim=$(pgrep -P "$(pgrep -P "$spid" -f 'fake-host' | head -n 1)" -x ucx_perftest)
    [ -n "$victim" ] || fail "no server ucx_perftest process found"
    kill -9 "$victim"
    t0=$(date +%s)
    for _ in $(seq 1 600); do
      kill -0 "$cpid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$cpid" 2>/dev/null && fail "the client still runs 60 s after its peer died: $(tail -3 "$work/client.out")"
    waited=$(($(date +%s) - t0))
    out=$(cat "$work/client.out")
    grep -q "Assertion" <<< "$out" && fail "UCX's assertion, not its transport error: $(grep -m1 Assertion <<< "$out")"
    err=$(grep -o "send completion with error: transport retry counter exceeded" <<< "$out" | head -n 1)
    [ -n "$err" ] || fail "the client did not end in UCX's transport error: $(tail -8 <<< "$out")"
    echo "$name $dp: the server was killed mid-transfer; after ${waited} s the client's UCX says: $err"
    ;;

  netns)
    command -v ucx_perftest >/dev/null || skip "ucx_perftest not installed (Debian ucx-utils)"
    out=$("$gidpolicy" fake-host --fabric "$fabric" --netns --tables "$table" -- ip -o addr show 2>"$work/probe.err")
    if [ $? -ne 0 ]; then
      grep -q "cannot create a private" "$work/probe.err" && skip "$(cat "$work/probe.err")"
      fail "fake-host --netns failed: $(cat "$work/probe.err")"
    fi
    want=$("$gidpolicy" show --json --input "$table" | awk -F'"' '
      /"gid":/ {g = $4} /"ipv4":/ {v = ($4 == "" ? "" : $4)} /"netdev":/ {if ($4 != "") print $4, (v != "" ? v : g)}' | sort -u)
    [ -n "$want" ] || fail "the table names no netdev"
    while read -r dev addr; do
      printf '%s\n' "$out" | grep -E "^[0-9]+: $dev +inet6? $addr/" >/dev/null || fail "$dev does not hold $addr: $out"
    done <<<"$want"
    echo "$name --netns: $(printf '%s\n' "$want" | wc -l) addresses on $(printf '%s\n' "$want" | awk '{print $1}' | sort -u | tr '\n' ' ')"
    # Two fake hosts, two network namespaces: UCX's out-of-band TCP goes through a Unix socket
    # file (relay.py), the verbs traffic through the fake's fabric directory.
    dp=$(ucx_port) && [ -n "$dp" ] || fail "UCX accepts no port of the table"
    export UCX_TLS=${UCX_TLS:-rc_verbs,ud_verbs} UCX_NET_DEVICES=${UCX_NET_DEVICES:-$dp}
    sock=$work/oob.sock
    timeout 120 "$gidpolicy" fake-host --fabric "$fabric" --netns --tables "$table" -- sh -c \
      "python3 '$here/relay.py' unix-to-tcp '$sock' $port & ucx_perftest -p $port -t tag_lat -n 1000" \
      >"$work/server.out" 2>&1 &
    spid=$!
    pids+=("$spid")
    for _ in $(seq 1 600); do [ -S "$sock" ] && break; sleep 0.1; done
    [ -S "$sock" ] || fail "the server's relay made no socket $sock within 60 s: $(tail -n 3 "$work/server.out")"
    timeout 120 "$gidpolicy" fake-host --fabric "$fabric" --netns --tables "$table" -- sh -c \
      "python3 '$here/relay.py' tcp-to-unix $port '$sock' &
       for i in \$(seq 1 600); do [ -n \"\$(ss -ltnH 'sport = :$port')\" ] && break; sleep 0.1; done
       ucx_perftest -p $port -t tag_lat -n 1000 127.0.0.1" \
      >"$work/client.out" 2>&1
    crc=$?
    wait "$spid"
    src=$?
    [ $crc -eq 0 ] && [ $src -eq 0 ] || fail "across network namespaces: client exit $crc, server exit $src: $(tail -n 3 "$work/client.out" "$work/server.out")"
    echo "$name across two --netns fake hosts, $dp tag_lat: $(grep '^Final:' "$work/client.out")"
    ;;

  status)
    # The command's exit status is fake-host's; a signal's is 128 + N; a missing command 127.
    host -- sh -c 'exit 7'
    [ $? -eq 7 ] || fail "exit 7 did not come back as 7"
    host -- sh -c 'kill -TERM $$'
    [ $? -eq 143 ] || fail "a command killed by SIGTERM did not give 143"
    host -- /nonexistent/command 2>"$work/err"
    [ $? -eq 127 ] || fail "a missing command did not give 127"
    grep -q "cannot run /nonexistent/command" "$work/err" || fail "no line says the command cannot be run"
    host -- true --tables-is-the-command >/dev/null || fail "arguments after -- are the command's"
    # Its own failures: 125 and one line naming what to fix, before anything is mounted or run.
    "$gidpolicy" fake-host --fabric "$fabric" --tables "$work/missing.json" -- touch "$work/ran" 2>"$work/err"
    [ $? -eq 125 ] || fail "a missing table did not give 125"
    [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "missing.json" "$work/err" || fail "no one line names the missing table: $(cat "$work/err")"
    printf '{"schema": "gidpolicy.tables", "version": 1, "ports": [{"device": "d0", "port": "x"}]}\n' >"$work/bad.json"
    "$gidpolicy" fake-host --fabric "$fabric" --tables "$work/bad.json" -- touch "$work/ran" 2>"$work/err"
    [ $? -eq 125 ] || fail "a bad table did not give 125"
    grep -q "bad.json" "$work/err" || fail "the error does not name the bad table: $(cat "$work/err")"
    "$gidpolicy" fake-host --tables "$table" --fabric "/tmp/$(printf 'x%.0s' $(seq 1 120))" -- touch "$work/ran" 2>"$work/err"
    [ $? -eq 125 ] && grep -q "too long for a Unix socket address" "$work/err" || fail "a too long --fabric was not refused: $(cat "$work/err")"
    [ ! -e "$work/ran" ] || fail "the command ran although the fake host could not be made"
    echo "$name: exit statuses 7, 143 (SIGTERM) and 127 (missing command) come back; a missing or bad table and a too long --fabric give 125 and one line"
    ;;

  host_untouched)
    # While a fake host runs, the caller's mounts, /dev and /sys/class are what they were.
    before=$(cat /proc/self/mountinfo; ls -a /dev /sys/class)
    # The fake host's private tmpfs lives only in its own mount namespace: nothing of it may
    # appear in the caller's /tmp (a directory there would be residue after a SIGKILL).
    # The command stays up until the caller has looked ("done"), so "during" is during whatever
    # the load (a fixed 2 s could end before the caller looked). Bounded: 60 s each way.
    tmp_before=$(ls -a /tmp | grep '^gidpolicy-fake-host' || true)
    host -- sh -c "ls /dev/infiniband /sys/class/infiniband >/dev/null &&
      touch '$work/ready' &&
      for i in \$(seq 1 600); do [ -e '$work/done' ] && break; sleep 0.1; done" &
    hpid=$!
    pids+=("$hpid")
    for _ in $(seq 1 600); do [ -e "$work/ready" ] && break; sleep 0.1; done
    [ -e "$work/ready" ] || fail "the fake host did not show /dev/infiniband and /sys/class/infiniband within 60 s"
    during=$(cat /proc/self/mountinfo; ls -a /dev /sys/class)
    tmp_during=$(ls -a /tmp | grep '^gidpolicy-fake-host' || true)
    kill -0 "$hpid" 2>/dev/null || fail "the fake host ended before the caller looked at its mounts"
    touch "$work/done"
    wait "$hpid" || fail "the fake host failed"
    after=$(cat /proc/self/mountinfo; ls -a /dev /sys/class)
    [ "$before" = "$during" ] || fail "the caller's mounts, /dev or /sys/class changed while the fake host ran: $(diff <(echo "$before") <(echo "$during") | head -5)"
    [ "$before" = "$after" ] || fail "the caller's mounts, /dev or /sys/class changed after the fake host ran"
    [ "$tmp_before" = "$tmp_during" ] || fail "the fake host made an entry in the caller's /tmp: $tmp_during"
    echo "$name: the caller's mounts, /dev and /sys/class are unchanged during and after"
    ;;

  rewrite)
    # A rewrite of the table rewrites the sysfs view (and, with --netns, the netdevs): the GID at
    # index 2 changes, the port goes DOWN. The table is a copy whose netdev is a veth (fh0).
    copy=$work/table.json
    sed 's/"netdev": "lo"/"netdev": "fh0"/' "$table" >"$copy"
    netns=(--netns)
    "$gidpolicy" fake-host --fabric "$fabric" --netns --tables "$copy" -- true 2>/dev/null || netns=()
    sysfs=/sys/class/infiniband/ds4_test0/ports/1
    # shellcheck disable=SC2016
    out=$("$gidpolicy" fake-host --fabric "$fabric" "${netns[@]}" --tables "$copy" -- sh -c '
      s=$1 copy=$2 netns=$3 err=$4
      cat $s/gids/2 $s/state $s/phys_state
      [ -z "$netns" ] || ip -o addr show dev fh0 | grep -o "inet [0-9./]*"
      sed -e "s/127.0.0.2/10.9.9.9/" -e "s/\"active\"/\"down\"/" "$copy" >"$copy.new" &&
        mv "$copy.new" "$copy"
      # Until every file the rewrite changes has changed (the view is rewritten file by file),
      # and the netdev too. Bounded: 60 s (a hang guard; the output is compared below).
      for i in $(seq 1 600); do
        grep -q DOWN $s/state && grep -q Disabled $s/phys_state && grep -q 0a09:0909 $s/gids/2 &&
          { [ -z "$netns" ] || case $(ip -o addr show dev fh0) in *"inet 10.9.9.9/"*) true ;; *) false ;; esac; } &&
          break
        sleep 0.1
      done
      cat $s/gids/2 $s/state $s/phys_state
      # A table that is not whole changes nothing (one line says why): the good copy goes back
      # once that line is out. Bounded: 60 s.
      cp "$copy" "$copy.good"
      printf "{\"schema\": \"gidpolicy.tables\", \"ver" >"$copy.new" && mv "$copy.new" "$copy"
      for i in $(seq 1 600); do grep -q "the sysfs view is unchanged" "$err" && break; sleep 0.1; done
      mv "$copy.good" "$copy"
      cat $s/gids/2 $s/state
      [ -z "$netns" ] || { ip -o addr show dev fh0 | grep -o "inet [0-9./]*"; ip -o link show dev fh0 | grep -o "state [A-Z]*"; }
    ' sh "$sysfs" "$copy" "${netns[*]}" "$work/err" 2>"$work/err") || fail "the fake host failed: $out $(cat "$work/err")"
    grep -q "changed; the sysfs view is unchanged: " "$work/err" || fail "no line said the cut-off table was not applied: $(cat "$work/err")"
    want="0000:0000:0000:0000:0000:ffff:7f00:0002
4: ACTIVE
5: LinkUp"
    [ ${#netns[@]} -eq 0 ] || want="$want
inet 127.0.0.1/24
inet 127.0.0.2/24"
    want="$want
0000:0000:0000:0000:0000:ffff:0a09:0909
1: DOWN
3: Disabled
0000:0000:0000:0000:0000:ffff:0a09:0909
1: DOWN"
    [ ${#netns[@]} -eq 0 ] || want="$want
inet 127.0.0.1/24
inet 10.9.9.9/24
state DOWN"
    [ "$out" = "$want" ] || fail "expected
$want
got
$out"
    echo "$name: a rewrite of the table changed gids/2, state and phys_state${netns:+ and the addresses and state of fh0}"
    ;;

  argv_verbatim)
    # The command after -- reaches exec as written: no list parsing of brackets and commas.
    out=$(host -- printf '%s\n' '[0-9]' '[a,b]' '[]' 'x,y' 2>"$work/err") || fail "fake-host failed: $(cat "$work/err")"
    want=$(printf '%s\n' '[0-9]' '[a,b]' '[]' 'x,y')
    [ "$out" = "$want" ] || fail "the command's arguments changed: expected $(echo "$want" | tr '\n' ' ') got $(echo "$out" | tr '\n' ' ')"
    # A command without -- is refused (125, one line saying where the command goes), not run.
    "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" touch "$work/ran" 2>"$work/err"
    [ $? -eq 125 ] || fail "a command without -- was not refused with 125"
    grep -q "the command goes after --" "$work/err" || fail "no line says the command goes after --: $(cat "$work/err")"
    [ ! -e "$work/ran" ] || fail "a command given without -- ran"
    echo "$name: [0-9], [a,b], [] and x,y reach the command verbatim; a command without -- is refused"
    ;;

  signals)
    # Every signal fake-host can catch reaches the command (its trap writes a file), and fake-host
    # then exits with the command's status. (INT and QUIT are left out: a shell starts background
    # jobs with them ignored, so neither fake-host nor the command could receive them here.)
    for sig in USR1 USR2 ALRM TERM HUP; do
      rm -f "$work/ready"
      # fake-host itself in the background ($! is its pid; host() there would be a subshell).
      "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- sh -c "trap 'echo $sig > \"$work/got.$sig\"; exit 3' $sig; touch '$work/ready'
        i=0; while [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done" &
      hpid=$!
      pids+=("$hpid")
      for _ in $(seq 1 600); do [ -e "$work/ready" ] && break; sleep 0.1; done
      [ -e "$work/ready" ] || fail "the command under fake-host did not start within 60 s"
      kill -"$sig" "$hpid"
      wait "$hpid"
      rc=$?
      [ -s "$work/got.$sig" ] || fail "SIG$sig sent to fake-host did not reach the command (fake-host exited $rc)"
      [ $rc -eq 3 ] || fail "after SIG$sig the command exited 3, fake-host $rc"
    done
    # A command the forwarded signal kills: 128 + N.
    rm -f "$work/ready"
    "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- sh -c "touch '$work/ready'; exec sleep 600" &
    hpid=$!
    pids+=("$hpid")
    for _ in $(seq 1 600); do [ -e "$work/ready" ] && break; sleep 0.1; done
    [ -e "$work/ready" ] || fail "the command under fake-host did not start within 60 s"
    kill -USR1 "$hpid"
    wait "$hpid"
    rc=$?
    [ $rc -eq $((128 + $(kill -l USR1))) ] || fail "a command killed by the forwarded SIGUSR1 gave $rc, not 128 + $(kill -l USR1)"
    echo "$name: USR1, USR2, ALRM, TERM and HUP reach the command; a command they kill gives 128 + N"
    ;;

  killed)
    # fake-host killed by SIGKILL takes its command with it, and leaves nothing behind: its
    # private tmpfs never has a mount point on the caller's file systems (TMPDIR is the test's).
    mkdir -p "$work/tmp"
    rm -f "$work/pid"
    TMPDIR=$work/tmp "$gidpolicy" fake-host --fabric "$fabric" --tables "$table" -- sh -c "awk '{print \$5}' /proc/self/mountinfo > '$work/points'
      echo \$\$ > '$work/pid.new' && mv '$work/pid.new' '$work/pid'; exec sleep 600" &
    hpid=$!
    pids+=("$hpid")
    for _ in $(seq 1 600); do [ -s "$work/pid" ] && break; sleep 0.1; done
    [ -s "$work/pid" ] || fail "the command under fake-host did not start within 60 s"
    cmd=$(cat "$work/pid")
    kill -KILL "$hpid"
    wait "$hpid"
    # Gone, or a zombie nobody reaped yet (the container's init may not): either way not running.
    gone=
    for _ in $(seq 1 600); do
      state=$(awk '{print $3}' "/proc/$cmd/stat" 2>/dev/null)
      [ -z "$state" ] || [ "$state" = Z ] && { gone=1; break; }
      sleep 0.1
    done
    [ -n "$gone" ] || fail "the command (pid $cmd) outlived its fake-host killed by SIGKILL"
    [ -z "$(ls -A "$work/tmp")" ] || fail "residue in TMPDIR: $(ls -A "$work/tmp")"
    under_tmp=$(grep -E "^(/tmp|$work)/" "$work/points")
    [ -z "$under_tmp" ] || fail "the fake host mounted on the caller's file systems (left behind after SIGKILL): $under_tmp"
    echo "$name: SIGKILL of fake-host ends its command; no mount point, no directory left on the caller's file systems"
    ;;

  messages)
    # Each refusal says what is wrong in fake-host's terms.
    # A sysfs view above the bound: the bound is fixed (no --max-files to raise).
    sed 's/"gid_tbl_len": 5/"gid_tbl_len": 200000/' "$table" >"$work/huge.json"
    "$gidpolicy" fake-host --fabric "$fabric" --tables "$work/huge.json" -- touch "$work/ran" 2>"$work/err"
    [ $? -eq 125 ] || fail "a table above the sysfs bound was not refused with 125"
    grep -q "fixed bound of 65,536 files and 16 MiB" "$work/err" || fail "no fixed bound stated: $(cat "$work/err")"
    ! grep -q -- "--max-files" "$work/err" || fail "fake-host names an option it does not have: $(cat "$work/err")"
    # A view that fills the private tmpfs: the tmpfs and its size are named, not /tmp.
    sed 's/"gid_tbl_len": 5/"gid_tbl_len": 30000/' "$table" >"$work/big.json"
    "$gidpolicy" fake-host --fabric "$fabric" --tables "$work/big.json" -- touch "$work/ran" 2>"$work/err"
    rc=$?
    if [ $rc -ne 0 ]; then
      grep -q "cannot create a private" "$work/err" && skip "$(cat "$work/err")"
      [ $rc -eq 125 ] && grep -q "private tmpfs (64 MiB, a fixed size) is full" "$work/err" ||
        fail "a full private tmpfs is not named as such ($rc): $(cat "$work/err")"
    fi
    [ ! -e "$work/ran" ] || [ $rc -eq 0 ] || fail "the command ran although the fake host could not be made"
    # --fabric given as a symbolic link to a directory is followed.
    mkdir -p "$work/fabric2"
    ln -s "$work/fabric2" "$work/fabric-link"
    "$gidpolicy" fake-host --fabric "$work/fabric-link" --tables "$table" -- true 2>"$work/err" ||
      fail "--fabric naming a link to a directory was refused: $(cat "$work/err")"
    # A netdev name with # (valid on Linux) is created as written.
    sed 's/"netdev": "lo"/"netdev": "fh#0"/' "$table" >"$work/hash.json"
    out=$("$gidpolicy" fake-host --fabric "$fabric" --netns --tables "$work/hash.json" -- ip -o link show 2>"$work/err")
    rc=$?
    if [ $rc -eq 0 ]; then
      grep -q ': fh#0@' <<<"$out" || fail "no netdev fh#0 in the fake host: $out"
      hash_note="; a netdev named fh#0 is made"
    else
      grep -q "cannot create a private" "$work/err" || fail "a netdev named fh#0 was refused: $(cat "$work/err")"
      hash_note="; --netns refused here, the fh#0 netdev was not tried: $(cat "$work/err")"
    fi
    echo "$name: the fixed sysfs bound, the full private tmpfs, a --fabric link followed$hash_note"
    ;;

  non_root)
    # As a user without root: either the fake host works, or the refusal says what is missing
    # and what would work (root), never the bare mount error.
    [ "$(id -u)" -eq 0 ] || skip "not root: cannot switch to the user nobody to test the non-root message"
    command -v setpriv >/dev/null || skip "setpriv (util-linux) not installed: cannot run as nobody"
    chmod 0755 "$work"
    cp "$table" "$work/table.json" && chmod 0644 "$work/table.json"
    # nobody's own fabric directory (fake-host would make it, but $work is root's).
    mkdir -p "$work/nobody-fabric" && chown nobody "$work/nobody-fabric"
    # nobody must reach the binary and its fakes: every directory above them searchable.
    d=$(dirname "$gidpolicy")
    while [ "$d" != / ]; do
      [ -x "$d" ] && setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$d" || skip "nobody cannot reach $d"
      d=$(dirname "$d")
    done
    out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups env TMPDIR=/tmp \
      "$gidpolicy" fake-host --fabric "$work/nobody-fabric" --tables "$work/table.json" -- cat /sys/class/infiniband/ds4_test0/ports/1/gids/2 2>"$work/err")
    rc=$?
    if [ $rc -eq 0 ]; then
      [ "$out" = 0000:0000:0000:0000:0000:ffff:7f00:0002 ] || fail "as nobody the fake host showed $out"
      echo "$name: as nobody the fake host works on this kernel"
    else
      [ $rc -eq 125 ] || fail "as nobody fake-host exited $rc: $(cat "$work/err")"
      grep -q "run fake-host as root\|it needs root" "$work/err" || fail "the refusal as nobody does not say what would work: $(cat "$work/err")"
      echo "$name: as nobody the refusal says what is missing and what works: $(cat "$work/err")"
    fi
    ;;

  *)
    fail "unknown check $check"
    ;;
esac
exit 0
