"""Shared fixtures of the module's tests: the example tables and small tables built in Python.

The suite runs them as `python3 -m pytest` with PYTHONPATH at the build tree's python/ directory
(python/tests/CMakeLists.txt); GIDPOLICY_EXAMPLE_TABLES and GIDPOLICY_CLI come from there too.
"""

import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # nothing written next to the sources (the example is imported)

import pytest

import gidpolicy

HERE = Path(__file__).resolve().parent
TABLES = Path(os.environ.get("GIDPOLICY_EXAMPLE_TABLES", HERE.parent.parent / "examples" / "tables"))
FLEET = TABLES.parent / "fleet"


@pytest.fixture
def tables_dir() -> Path:
    return TABLES


@pytest.fixture
def macmini() -> gidpolicy.GidTable:
    """A Thunderbolt port whose IPv4-mapped GID sits at index 2 while index 1 is empty."""
    return gidpolicy.read_tables_file(str(TABLES / "macmini-mapped-at-2.json"))[0]


def roce_table(device: str = "mlx5_0", entries=None, gid_tbl_len: int = 16) -> gidpolicy.GidTable:
    """A RoCE port: link-local v1/v2 at 0-1, the IPv4-mapped v1/v2 at 2-3 unless given."""
    if entries is None:
        entries = [
            gidpolicy.GidEntry(0, "fe80::1", "roce_v1", "eth0"),
            gidpolicy.GidEntry(1, "fe80::1", "roce_v2", "eth0"),
            gidpolicy.GidEntry(2, "::ffff:10.0.0.1", "roce_v1", "eth0"),
            gidpolicy.GidEntry(3, "::ffff:10.0.0.1", "roce_v2", "eth0"),
        ]
    port = gidpolicy.PortInfo(device, 1, "active", "ethernet", gid_tbl_len, 1024)
    return gidpolicy.GidTable(port, entries)


@pytest.fixture
def roce() -> gidpolicy.GidTable:
    return roce_table()
