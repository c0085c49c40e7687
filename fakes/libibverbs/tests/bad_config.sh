#!/bin/sh
# bad_config.sh <tool> <lib-dir> <expected-exit> <expected-text> [env options and VAR=value...]
# A bad configuration must look like a machine without RDMA (the tool's own "no devices" exit
# code) plus exactly one line from the fake on stderr that says what is wrong; never a crash.
set -u
tool=$1 lib=$2 want_rc=$3 want_text=$4
shift 4
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
# Start from no fake configuration at all (the caller's environment may have some), then apply
# the test's own: `env` takes its -u options before any assignment.
timeout 20 env -u GIDPOLICY_FAKE_TABLES -u GIDPOLICY_FAKE_DRIVER -u GIDPOLICY_FAKE_PROFILE -u GIDPOLICY_FAKE_LOG "$@" \
  LD_LIBRARY_PATH="$lib" "$tool" >"$out" 2>"$err"
rc=$?
echo "--- $tool exited $rc; stderr:"; cat "$err"
lines=$(grep -c '^gidpolicy fake libibverbs: ' "$err")
status=0
[ "$rc" -eq "$want_rc" ] || { echo "FAIL: exit $rc, expected $want_rc"; status=1; }
[ "$lines" -eq 1 ] || { echo "FAIL: $lines lines from the fake on stderr, expected exactly 1"; status=1; }
grep '^gidpolicy fake libibverbs: ' "$err" | grep -qF -- "$want_text" ||
  { echo "FAIL: the fake's line does not say: $want_text"; status=1; }
[ $status -eq 0 ] && echo PASS
exit $status
