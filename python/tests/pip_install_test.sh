#!/bin/sh
# `pip install ./python` the way python/README.md says, from a clean copy of the source tree (its
# tracked and unignored files, committed to a fresh git repository), into a new virtual
# environment, with nothing but the standard library for the build backend: no index, and pip's
# default build isolation (the isolated build sees no setuptools or wheel). Then, from outside the
# tree, the module imports and answers. Fails when pip cannot build, when the build compiles
# anything but the two libraries and the bindings (tests, tools, fakes, examples, the C API), when
# it writes anything into the copy (a file, ignored or not, or any change `git status` sees), or
# when the install lacks a file (the stubs, py.typed).
#
# With GIDPOLICY_PREFIX (an installed gidpolicy) only the bindings are compiled, against it.
set -eu
: "${PYTHON:?}" "${SOURCE:?}"
work=$(mktemp -d "${TMPDIR:-/tmp}/gidpolicy-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "${GIDPOLICY_PREFIX:-}" ]; then
  echo "pip builds the bindings alone, against the gidpolicy installed at $GIDPOLICY_PREFIX"
  only='gidpolicy_python'
else
  echo "pip builds the library and the bindings from the sources"
  only='gidpolicy_core|gidpolicy_host|gidpolicy_python'
fi

# The clean copy: what a fresh clone of this tree holds (edits not yet committed included).
tree="$work/tree"
mkdir "$tree"
(cd "$SOURCE" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$SOURCE" && xargs -0 sh -c 'for f; do if [ -e "$f" ]; then printf "%s\n" "$f"; fi; done' sh) >"$work/files"
(cd "$SOURCE" && tar -cf - -T "$work/files") | (cd "$tree" && tar -xf -)
git -C "$tree" init -q
git -C "$tree" add -A
git -C "$tree" -c user.name=test -c user.email=test@invalid commit -q -m copy
snapshot() { (cd "$tree" && find . -path ./.git -prune -o -printf '%p %y %s %T@\n' | LC_ALL=C sort); }
snapshot >"$work/before"

"$PYTHON" -m venv "$work/venv"
# PIP_NO_INDEX: should anything want a download it fails at once (there is no network here)
# instead of retrying; the backend asks for nothing (pyproject.toml: requires = []).
fail() { echo "FAIL: $*" >&2; exit 1; }
started=$(date +%s)
if ! (cd "$work" && PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
  "$work/venv/bin/python" -m pip install -v --no-cache-dir "$tree/python") >"$work/pip.log" 2>&1; then
  cat "$work/pip.log"
  fail "pip install failed"
fi
cat "$work/pip.log"
echo "pip install took $(($(date +%s) - started)) s (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
# pip -v indents the backend's lines.
grep -Eq '^ *gidpolicy: building in /' "$work/pip.log" || fail "the backend did not say where it builds"
builddir=$(sed -n 's|^ *gidpolicy: building in \(/[^ ]*\) .*|\1|p' "$work/pip.log" | head -n 1)
case "$builddir/" in "$tree"/*) fail "pip built in the source tree ($builddir)" ;; esac
# Progress: ninja's [n/N] lines reach pip's output.
grep -Eq '^ *\[[0-9]+/[0-9]+\] Building CXX object' "$work/pip.log" || fail "no build progress in pip's output"
other=$(grep -E 'Building CXX object' "$work/pip.log" | grep -Ev "($only)\.dir/" || true)
[ -z "$other" ] || fail "pip compiled more than the module needs:
$other"

snapshot >"$work/after"
diff "$work/before" "$work/after" || fail "pip wrote into the source tree"
status=$(git -C "$tree" status --porcelain --ignored)
[ -z "$status" ] || fail "git status after pip install: $status"

cd "$work"
"$work/venv/bin/python" - "$work/venv" "$tree/examples/tables" <<'PY'
import pathlib, sys
import gidpolicy
from gidpolicy import fleet
venv = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(gidpolicy.__file__).resolve().parent
assert venv in where.parents, f"imported {where}, not from {venv}"
for name in ("__init__.py", "_gidpolicy.pyi", "fleet.py", "fleet.pyi", "probe.py", "py.typed"):
    assert (where / name).is_file(), name
assert len(list(where.glob("_gidpolicy*.so"))) == 1
plan = gidpolicy.Profile("jaccl-fixed").plan(gidpolicy.read_tables(
    '{"schema": "gidpolicy.tables", "version": 1, "ports": [{"device": "rdma_en2", "port": 1, "state": "active",'
    ' "link_layer": "thunderbolt", "gid_tbl_len": 16, "active_mtu": 1024, "lid": 0, "holes": "empty", "entries": ['
    '{"index": 1, "state": "empty"}, {"index": 2, "gid": "::ffff:10.99.0.3", "type": "unknown", "state": "valid"}]}]}')[0])
assert plan.sgid_index == 2 and plan.agrees
# An example table from a public report: the mapped IPv4 GID at index 2, and index 1 refused.
mac = gidpolicy.read_tables_file(sys.argv[2] + "/macmini-mapped-at-2.json")[0]
assert gidpolicy.Profile("jaccl-fixed").plan(mac).sgid_index == 2
try:
    gidpolicy.Profile("validated:index=1").plan(mac)
    raise AssertionError("validated:index=1 selected an entry on macmini-mapped-at-2")
except gidpolicy.Error as e:
    assert e.errc, e
print("installed", gidpolicy.__version__, "at", where)
PY
