#!/bin/sh
# Unmodified perftest (Debian perftest 4.5: ib_send_bw, ib_write_lat, ...) on the fake
# libibverbs.so.1, server and client on loopback.
#
#   perftest.sh --tool PATH --lib DIR --tables FILE --device DEV --port N --log FILE --cli GIDPOLICY
#               --server-gid auto|none|N --client-gid auto|none|N
#               --expect ok|rtr-fails|fails|pick [--args "ARGS"] [--log-has REGEX]...
#               [--pick agree|"PERFTEST_INDEX GIDPOLICY_INDEX|none"]
#
#   --*-gid   the -x each side gets: `auto` is the sgid_index `gidpolicy select --policy auto`
#             gives for the device's port 1 (computed now, from the same table), `none` passes
#             no -x so perftest picks a GID itself.
#   --expect  ok         both complete and print their results
#             rtr-fails  both stop with an error, at least one at "Failed to modify QP ... to RTR"
#             fails      both stop with an error (not a hang)
#             pick       only the "GID index" perftest prints matters (with --pick)
#   --pick    agree: perftest's own pick equals gidpolicy's auto; "P G": the stated disagreement,
#             perftest picks P where gidpolicy's auto gives G (none: auto finds no entry). Either
#             way a change fails the test: a new disagreement, or a stated one that disappeared.
#
# Pitfalls this script exists for (as pingpong.sh):
#  * Both processes run under `timeout`: if the client dies early the server waits forever.
#  * The server accepts exactly one TCP connection, so its port is never probed with connect():
#    the script waits until `ss -Hltn` shows it listening. Each test passes its own --port.
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
"$cli" select --policy auto --json --input "$tables" --device "$device" --port 1 >"$work/auto.json" 2>&1
auto=$(sed -n 's/^ *"sgid_index": *\([0-9a-z]*\),*$/\1/p' "$work/auto.json" | head -n 1)
[ "$auto" = "null" ] && auto=none
if [ -z "$auto" ]; then
  echo "FAIL: cannot read gidpolicy's auto pick:"; cat "$work/auto.json"; exit 1
fi
echo "gidpolicy select --policy auto: $device port 1 -> $auto"

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

run() {  # run <role> <args...>: the tool on the fake, bounded in time
  role=$1
  shift
  timeout 20 env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$tables" GIDPOLICY_FAKE_LOG="$log" \
    "$tool" -d "$device" -i 1 -p "$port" "$@" >"$work/$role.out" 2>&1
}

# shellcheck disable=SC2086 # the argument strings are meant to split
run server $sx $args &
server_pid=$!
i=0
while [ $i -lt 100 ]; do
  ss -Hltn "sport = :$port" | grep -q . && break
  kill -0 "$server_pid" 2>/dev/null || break  # the server gave up before listening
  sleep 0.1
  i=$((i + 1))
done
# shellcheck disable=SC2086
run client $cx $args 127.0.0.1
client_rc=$?
wait "$server_pid"
server_rc=$?

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
  [ $server_rc -ne 0 ] && [ $server_rc -lt 124 ] && [ $client_rc -ne 0 ] && [ $client_rc -lt 124 ]
}
case "$expect" in
  ok)
    if [ $server_rc -ne 0 ] || [ $client_rc -ne 0 ]; then fail "expected both sides to complete"; fi
    for role in server client; do
      grep -Eq '^ *#bytes' "$work/$role.out" || fail "the $role printed no results"
    done
    [ -z "$sx" ] || [ "-x $server_index" = "$sx" ] || fail "the server did not report GID index ${sx#-x }"
    [ -z "$cx" ] || [ "-x $client_index" = "$cx" ] || fail "the client did not report GID index ${cx#-x }" ;;
  rtr-fails)
    both_stopped_with_error || fail "expected both sides to stop with an error (not a hang)"
    grep -Eq 'Failed to modify QP.* to RTR' "$work/server.out" "$work/client.out" ||
      fail "expected a side to fail at RTR" ;;
  fails)
    both_stopped_with_error || fail "expected both sides to stop with an error (not a hang)" ;;
  pick)
    if [ -z "$server_index" ] || [ "$server_index" != "$client_index" ]; then
      fail "perftest printed no GID index, or two different ones ($server_index, $client_index)"
    fi
    case "$pick" in
      agree)
        [ "$server_index" = "$auto" ] ||
          fail "new disagreement: perftest picks $server_index, gidpolicy's auto $auto" ;;
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
