#!/usr/bin/env bash
# Where the namespaces fake-host needs are refused: one line saying so and what runs without
# them, exit 125, and the middleware checks skip (77) saying why. Refused here by running it
# without capabilities inside a user namespace that may create no further user namespace.
#
#   refused.sh GIDPOLICY TABLE
set -uo pipefail
gidpolicy=$1 table=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v unshare >/dev/null && command -v setpriv >/dev/null || { echo "SKIP: needs unshare and setpriv (util-linux)"; exit 77; }
unshare -U -r true 2>/dev/null || { echo "SKIP: this machine refuses user namespaces already (unshare -U -r)"; exit 77; }
out=$(unshare -U -r sh -c 'echo 0 >/proc/sys/user/max_user_namespaces || exit 99
  drop="setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all"
  $drop "$1" fake-host --tables "$2" -- touch /nonexistent-dir/ran 2>&1; echo "rc=$?"
  GIDPOLICY=$1 $drop "$3/middleware.sh" ucx_info "$2" 2>&1; echo "rc=$?"' sh "$gidpolicy" "$table" "$here")
case $out in *"rc=99"*) echo "SKIP: cannot limit user namespaces inside one: $out"; exit 77 ;; esac
line=$(printf '%s\n' "$out" | sed -n 1p)
printf '%s\n' "$out"
[ "$(printf '%s\n' "$out" | sed -n 2p)" = "rc=125" ] || { echo "FAIL: fake-host did not exit 125"; exit 1; }
case $line in
  "gidpolicy fake-host: cannot create a private mount namespace (unshare: "*"): it needs root"*"LD_LIBRARY_PATH="*"GIDPOLICY_FAKE_TABLES=$table") ;;
  *) echo "FAIL: not the one line saying what is refused and what works without: $line"; exit 1 ;;
esac
grep -q "^SKIP (ucx_info, .*cannot create a private mount namespace" <<< "$out" || { echo "FAIL: middleware.sh did not skip saying why"; exit 1; }
grep -q "^rc=77$" <<< "$out" || { echo "FAIL: middleware.sh did not exit 77"; exit 1; }
echo "PASS: refused namespaces give one line and exit 125; the middleware checks skip"
