#!/usr/bin/env bash
# An installed gidpolicy finds the installed fakes: `cmake --install` of the runtime and fake
# components into a private prefix, then that prefix's `gidpolicy fake-host -- env` must put
# PREFIX/FAKEDIR first on LD_LIBRARY_PATH, and with the fake removed it must refuse (exit 125,
# naming the missing file) rather than fall back to the build tree's fakes. Exit 77 (skipped)
# where fake-host cannot create its mount namespace.
#
#   installed_fake_host.sh BUILD_DIR FAKEDIR TABLE
set -uo pipefail
build=$1 fakedir=$2 table=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() {
  echo "installed_fake_host: $*" >&2
  exit 1
}
for c in gidpolicy_runtime gidpolicy_fake; do
  cmake --install "$build" --prefix "$prefix" --component "$c" >/dev/null || fail "cmake --install --component $c failed"
done
[[ -f $prefix/$fakedir/libibverbs.so.1 && -f $prefix/$fakedir/librdmacm.so.1 ]] || fail "no fakes in $prefix/$fakedir"
[[ ! -e $prefix/$fakedir/libibverbs.so ]] || fail "a development symlink was installed beside the fakes"
out=$("$prefix/bin/gidpolicy" fake-host --tables "$table" -- env 2>&1)
rc=$?
if ((rc == 125)) && grep -q "cannot create a private mount" <<<"$out"; then
  echo "SKIPPED: $out"
  exit 77
fi
((rc == 0)) || fail "fake-host -- env failed ($rc): $out"
grep -q "^LD_LIBRARY_PATH=$prefix/$fakedir\(:\|$\)" <<<"$out" ||
  fail "LD_LIBRARY_PATH does not start with $prefix/$fakedir: $(grep LD_LIBRARY_PATH <<<"$out")"
rm "$prefix/$fakedir/libibverbs.so.1"
out=$("$prefix/bin/gidpolicy" fake-host --tables "$table" -- env 2>&1)
rc=$?
((rc == 125)) || fail "with the fake removed, fake-host exited $rc: $out"
grep -q "$prefix/$fakedir/libibverbs.so.1 is missing" <<<"$out" || fail "with the fake removed, fake-host said: $out"
echo "installed_fake_host: $prefix/bin/gidpolicy uses $prefix/$fakedir, and only it"
