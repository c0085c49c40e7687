#!/bin/sh
# Unmodified perftest (Debian perftest 4.5: ib_send_bw, ib_write_lat, ...) on the fake
# libibverbs.so.1, server and client on loopback.
#
#   perftest.sh --tool PATH --lib DIR --tables FILE --device DEV --port N --log FILE --cli GIDPOLICY
#               --server-gid auto|none|N --client-gid auto|none|N
#               --expect ok|rtr-fails|fails|one-side-fails|pick [--args "ARGS"] [--log-has REGEX]...
#               [--pick agree|"PERFTEST_INDEX GIDPOLICY_INDEX|none"|profile=SPEC]
#
#   --*-gid   the -x each side gets: `auto` is the sgid_index `gidpolicy select --profile auto`
#             gives for the device's port 1 (computed now, from the same table), `none` passes
#             no -x so perftest picks a GID itself.
#   --expect  ok         both complete, and the client prints its results
#             rtr-fails  both stop with an error, at least one at "Failed to modify QP ... to RTR"
#             fails      both stop with an error (not a hang)
#             one-side-fails  a side stops with retry exceeded (status 12); the other, left
#                        waiting for its peer as on hardware, is stopped once that has happened
#                        (after 2 s more, for the log: the verdict does not wait for them)
#             pick       only the "GID index" perftest prints matters (with --pick)
#   --pick    agree: perftest's own pick equals gidpolicy's auto; "P G": the stated disagreement,
#             perftest picks P where gidpolicy's auto gives G (none: auto finds no entry). Either
#             way a change fails the test: a new disagreement, or a stated one that disappeared.
#             profile=SPEC: perftest's own pick equals what `gidpolicy select --profile SPEC` gives
#             (the oracle of the `perftest` profile: no expectation written per table).
#
# Pitfalls this script exists for (as pingpong.sh):
#  * Both processes run under `timeout`: if the client dies early the server waits forever.
#  * The server accepts exactly one TCP connection, so its port is never probed with connect():
#    the script waits until `ss -Hltn` shows it listening. Each test passes its own --port.
#  * Every bound is a hang guard (60 s for the server to listen, then 60 s per process), far above
#    what an idle machine needs: no verdict waits for one to expire.
set -u
tool='' lib='' tables='' device='' port='' log='' cli='' server_gid='' client_gid='' expect='' args='' pick='' checks=''
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2 ;;
    --lib) lib=$2 ;;
    --tables) tables=$2 ;;
    --device) device=$2 ;;
    --port) port=$2 ;;
    --log) log=$2 ;;
    --cli) cli=$2 ;;
    --server-gid) server_gid=$2 ;;
    --client-gid) client_gid=$2 ;;
    --expect) expect=$2 ;;
    --args) args=$2 ;;
    --pick) pick=$2 ;;
    --log-has) checks="$checks
$2" ;;
    *) echo "perftest.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
rm -f "$log"

# gidpolicy's auto pick for the device's port 1: an index, or "none" when no entry qualifies.
"$cli" select --profile auto --json --input "$tables" --device "$device" --port 1 >"$work/auto.json" 2>&1
auto=$(sed -n 's/^ *"sgid_index": *\([0-9a-z]*\),*$/\1/p' "$work/auto.json" | head -n 1)
[ "$auto" = "null" ] && auto=none
if [ -z "$auto" ]; then
  echo "FAIL: cannot read gidpolicy's auto pick:"; cat "$work/auto.json"; exit 1
fi
echo "gidpolicy select --profile auto: $device port 1 -> $auto"

gid_args() {  # gid_args auto|none|N: the -x option
  case "$1" in
    none) ;;
    auto)
      if [ "$auto" = none ]; then
        echo "FAIL: --*-gid auto, but gidpolicy's auto finds no entry on $device" >&2; exit 1
      fi
      echo "-x $auto" ;;
    *) echo "-x $1" ;;
  esac
}
sx=$(gid_args "$server_gid") || exit 1
cx=$(gid_args "$client_gid") || exit 1

start() {  # start <role> <seconds> <args...>: the tool on the fake in the background, bounded
  # in time; <role>.pid holds timeout's pid (a TERM to it reaches the tool), <role>.rc its status.
  role=$1 seconds=$2
  shift 2
  (
    timeout "$seconds" env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$tables" GIDPOLICY_FAKE_LOG="$log" \
      "$tool" -d "$device" -i 1 -p "$port" "$@" >"$work/$role.out" 2>&1 &
    echo $! >"$work/$role.pid"
    wait $!
    echo $? >"$work/$role.rc"
  ) &
}
done_() { [ -s "$work/$1.rc" ]; }
wait_for() {  # wait_for <tenths> <condition...>
  n=$1
  shift
  while [ "$n" -gt 0 ] && ! "$@"; do
    sleep 0.1
    n=$((n - 1))
  done
}
# shellcheck disable=SC2317 # called through wait_for
either_done() { done_ server || done_ client; }
# shellcheck disable=SC2317
both_done() { done_ server && done_ client; }
# shellcheck disable=SC2317
listening() { ss -Hltn "sport = :$port" | grep -q . || done_ server; }
# shellcheck disable=SC2317
failed_12() { done_ "$1" && grep -q 'Failed status 12' "$work/$1.out"; }
# A side has stopped with retry exceeded, or both have stopped (the verdict then says which).
# shellcheck disable=SC2317
one_failed() { failed_12 server || failed_12 client || both_done; }

# The server's guard also covers the wait for it to listen (below).
# shellcheck disable=SC2086 # the argument strings are meant to split
start server 120 $sx $args
wait_for 600 listening
if ! listening; then
  echo "FAIL: the server neither listened on port $port nor exited within 60 s"
  kill "$(cat "$work/server.pid")" 2>/dev/null
  wait
  cat "$work/server.out"
  exit 1
fi
# shellcheck disable=SC2086
start client 60 $cx $args 127.0.0.1
waiting=''
if [ "$expect" = one-side-fails ]; then
  # The side left without a peer waits for it, as on hardware (the latency tests spin on their
  # buffer): once one side has stopped with retry exceeded (or both have stopped), the other gets
  # 2 s, then is stopped and noted. The first wait is bounded by the processes' own `timeout`s;
  # the 2 s only decide what is noted, not the verdict, which is the status 12 already printed.
  wait_for 1200 one_failed
  wait_for 20 both_done
  for role in server client; do
    if ! done_ $role; then
      waiting="$waiting $role"
      kill "$(cat "$work/$role.pid")" 2>/dev/null
    fi
  done
fi
wait
server_rc=$(cat "$work/server.rc")
client_rc=$(cat "$work/client.rc")

echo "--- server (exit $server_rc): $tool -d $device -i 1 -p $port $sx $args"; cat "$work/server.out"
echo "--- client (exit $client_rc): $tool -d $device -i 1 -p $port $cx $args 127.0.0.1"; cat "$work/client.out"
echo "--- control log $log (without GID reads)"
grep -v '"call":"query_gid' "$log" 2>/dev/null | grep -v '"call":"get_device_list'

# The GID index perftest reports using ("GID index : N"), the same on both sides or empty.
printed_index() { sed -n 's/^ *GID index *: *\([0-9][0-9]*\).*/\1/p' "$work/$1.out" | head -n 1; }
server_index=$(printed_index server)
client_index=$(printed_index client)

status=0
fail() { echo "FAIL: $*"; status=1; }
# 124 is timeout's: a hang is a failure of the fake, not an expected error.
both_stopped_with_error() {
  [ "$server_rc" -ne 0 ] && [ "$server_rc" -lt 124 ] && [ "$client_rc" -ne 0 ] && [ "$client_rc" -lt 124 ]
}
case "$expect" in
  ok)
    if [ "$server_rc" -ne 0 ] || [ "$client_rc" -ne 0 ]; then fail "expected both sides to complete"; fi
    # The client always reports; the server too, except where it is only the passive target
    # (ib_read_lat prints nothing on the side whose memory is read).
    grep -Eq '^ *#bytes' "$work/client.out" || fail "the client printed no results"
    [ -z "$sx" ] || [ "-x $server_index" = "$sx" ] || fail "the server did not report GID index ${sx#-x }"
    [ -z "$cx" ] || [ "-x $client_index" = "$cx" ] || fail "the client did not report GID index ${cx#-x }" ;;
  rtr-fails)
    both_stopped_with_error || fail "expected both sides to stop with an error (not a hang)"
    grep -Eq 'Failed to modify QP.* to RTR' "$work/server.out" "$work/client.out" ||
      fail "expected a side to fail at RTR" ;;
  fails)
    both_stopped_with_error || fail "expected both sides to stop with an error (not a hang)" ;;
  one-side-fails)
    # Retry exceeded (IBV_WC_RETRY_EXC_ERR, 12) on one side; the other was left waiting.
    failed=''
    for role in server client; do
      if grep -q 'Failed status 12' "$work/$role.out"; then failed="$failed $role"; fi
    done
    if [ -z "$failed" ]; then fail "expected a side to fail with status 12 (retry exceeded)"; fi
    echo "failed with retry exceeded:${failed:- none}; left waiting for its peer:${waiting:- none}" ;;
  pick)
    if [ -z "$server_index" ] || [ "$server_index" != "$client_index" ]; then
      fail "perftest printed no GID index, or two different ones ($server_index, $client_index)"
    fi
    case "$pick" in
      agree)
        [ "$server_index" = "$auto" ] ||
          fail "new disagreement: perftest picks $server_index, gidpolicy's auto $auto" ;;
      profile=*)
        spec=${pick#profile=}
        "$cli" select --profile "$spec" --json --input "$tables" --device "$device" --port 1 >"$work/profile.json" 2>&1
        predicted=$(sed -n 's/^ *"sgid_index": *\([0-9a-z]*\),*$/\1/p' "$work/profile.json" | head -n 1)
        if [ -z "$predicted" ] || [ "$predicted" = null ]; then
          fail "the $spec profile predicts nothing on $device:"; cat "$work/profile.json"
        elif [ "$server_index" != "$predicted" ]; then
          fail "perftest picks $server_index, the $spec profile predicts $predicted"
        else
          echo "perftest's own pick $server_index equals the $spec profile's"
        fi ;;
      *" "*)
        stated_perftest=${pick%% *}
        stated_auto=${pick#* }
        if [ "$server_index" = "$auto" ]; then
          fail "the stated disagreement ($pick) disappeared: both pick $auto"
        elif [ "$server_index" != "$stated_perftest" ] || [ "$auto" != "$stated_auto" ]; then
          fail "disagreement changed: perftest picks $server_index, gidpolicy's auto $auto (stated: $pick)"
        else
          echo "stated disagreement holds: perftest picks $server_index, gidpolicy's auto $auto"
        fi ;;
      *) echo "perftest.sh: --pick agree or \"P G\"" >&2; exit 2 ;;
    esac ;;
  *) echo "perftest.sh: unknown --expect $expect" >&2; exit 2 ;;
esac
old_ifs=$IFS
IFS='
'
for re in $checks; do
  grep -Eq -- "$re" "$log" || fail "no control log line matches: $re"
done
IFS=$old_ifs
[ $status -eq 0 ] && echo "PASS"
exit $status
