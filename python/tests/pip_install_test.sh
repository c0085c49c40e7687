#!/bin/sh
# Install the module from the source tree the way python/README.md says, offline, into a virtual
# environment that sees only the system's packages, and use it from outside the tree. Fails when
# pip cannot build (a build backend that is not a Debian package), when the install lacks a file
# (the stubs, py.typed), or when the installed module does not work.
set -eu
: "${PYTHON:?}" "${SOURCE:?}"
work=$(mktemp -d "${TMPDIR:-/tmp}/gidpolicy-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "${GIDPOLICY_PREFIX:-}" ]; then
  echo "pip builds the bindings alone, against the gidpolicy installed at $GIDPOLICY_PREFIX"
else
  echo "pip builds the library and the bindings from the sources"
fi
"$PYTHON" -m venv --system-site-packages "$work/venv"
# No index, no build isolation: only what is installed (Debian's setuptools and wheel) builds it.
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$work/venv/bin/python" -m pip install --no-index \
  --no-build-isolation --no-cache-dir "$SOURCE/python"
cd "$work"
"$work/venv/bin/python" - "$work/venv" <<'PY'
import pathlib, sys
import gidpolicy
from gidpolicy import fleet
venv = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(gidpolicy.__file__).resolve().parent
assert venv in where.parents, f"imported {where}, not from {venv}"
for name in ("__init__.py", "_gidpolicy.pyi", "fleet.py", "fleet.pyi", "py.typed"):
    assert (where / name).is_file(), name
assert len(list(where.glob("_gidpolicy*.so"))) == 1
plan = gidpolicy.Profile("jaccl-fixed").plan(gidpolicy.read_tables(
    '{"schema": "gidpolicy.tables", "version": 1, "ports": [{"device": "rdma_en2", "port": 1, "state": "active",'
    ' "link_layer": "thunderbolt", "gid_tbl_len": 16, "active_mtu": 1024, "lid": 0, "holes": "empty", "entries": ['
    '{"index": 1, "state": "empty"}, {"index": 2, "gid": "::ffff:10.99.0.3", "type": "unknown", "state": "valid"}]}]}')[0])
assert plan.sgid_index == 2 and plan.agrees
print("installed", gidpolicy.__version__, "at", where)
PY
test -z "$(cd "$SOURCE/python" && ls -d build *.egg-info 2>/dev/null)" || { echo "pip wrote into the source tree" >&2; exit 1; }
