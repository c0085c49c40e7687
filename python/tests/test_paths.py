"""A path holding a NUL byte is refused, never cut there: the C call that opens a path stops at
its first NUL, so "x.json\\0ignored" would open x.json, a file the caller did not name."""

import pytest

import gidpolicy
from gidpolicy import fleet

from conftest import FLEET, TABLES


def test_read_tables_file_refuses_an_embedded_nul(tmp_path):
    real = TABLES / "macmini-mapped-at-2.json"
    assert gidpolicy.read_tables_file(str(real))  # the path before the NUL names a readable file
    with pytest.raises(gidpolicy.Error) as raised:
        gidpolicy.read_tables_file(str(real) + "\0ignored")
    e = raised.value
    assert e.errc == "invalid_argument"
    assert "NUL" in str(e) and "path" in str(e) and "\\x00ignored" in str(e)


def test_a_relative_path_with_a_nul_is_refused_too(monkeypatch):
    monkeypatch.chdir(TABLES.parent.parent)
    with pytest.raises(gidpolicy.Error, match="NUL"):
        gidpolicy.read_tables_file("examples/tables/x.json\0ignored")
    with pytest.raises(gidpolicy.Error, match="NUL"):
        gidpolicy.read_tables_file("examples/tables/macmini-mapped-at-2.json\0ignored")


def test_every_function_taking_a_path_refuses_a_nul():
    with pytest.raises(gidpolicy.Error, match="NUL"):
        fleet.read_snapshots([str(FLEET / "jaccl" / "hosts") + "\0x"])
    # live_tables' library is dlopen()'s path: cut at the NUL it would load another library.
    with pytest.raises(gidpolicy.Error, match="library.*NUL"):
        gidpolicy.live_tables(library="libibverbs.so.1\0ignored")
