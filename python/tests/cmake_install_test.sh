#!/bin/sh
# `cmake --install --component gidpolicy_python` puts the package where Debian's python3 finds
# packages (GIDPOLICY_PYTHON_INSTALL_DIR below the prefix): install into a DESTDIR and import it
# from there, from outside the tree, with nothing else on the path.
set -eu
: "${PYTHON:?}" "${BUILD:?}" "${INSTALL_DIR:?}"
work=$(mktemp -d "${TMPDIR:-/tmp}/gidpolicy-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
DESTDIR="$work/root" cmake --install "$BUILD" --component gidpolicy_python --prefix /usr >/dev/null
case "$INSTALL_DIR" in /*) dir="$work/root$INSTALL_DIR" ;; *) dir="$work/root/usr/$INSTALL_DIR" ;; esac
test -f "$dir/gidpolicy/py.typed" && test -f "$dir/gidpolicy/_gidpolicy.pyi" && test -f "$dir/gidpolicy/fleet.pyi" && test -f "$dir/gidpolicy/probe.py"
# Only the package: the component installs nothing outside the package directory.
extra=$(cd "$work/root" && find . -type f | grep -v "^\./${dir#"$work/root/"}/gidpolicy/" || true)
test -z "$extra" || { echo "installed outside the package: $extra" >&2; exit 1; }
cd "$work"
PYTHONPATH="$dir" PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -c "
import gidpolicy, pathlib, sys
assert pathlib.Path(gidpolicy.__file__).resolve().parent == pathlib.Path(sys.argv[1]).resolve() / 'gidpolicy', gidpolicy.__file__
assert gidpolicy.Gid('::ffff:10.0.0.1').is_ipv4_mapped
print('installed at', gidpolicy.__file__)
" "$dir"
