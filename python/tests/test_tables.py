"""Tables: entries, ports, GidTable, every format read and written, hostile input, the live host."""

import os
import subprocess
import sys

import pytest

import gidpolicy
from conftest import TABLES, roce_table
from gidpolicy import Error, Gid, GidEntry, GidTable, PortInfo


def test_entry_fields():
    e = GidEntry(3, "::ffff:10.0.0.1", "roce_v2", "eth0", 7)
    assert (e.index, e.gid, e.type, e.netdev, e.ifindex, e.state) == (3, Gid("::ffff:10.0.0.1"), "roce_v2", "eth0", 7, "valid")
    assert e.usable and e.read_error is None
    assert GidEntry(3, "::ffff:10.0.0.1", "RoCE v2", "eth0", 7) == e
    empty = GidEntry(1, state="empty")
    assert not empty.usable and empty.gid.is_zero
    bad = GidEntry(2, state="unreadable", read_error=5)
    assert bad.read_error == 5 and bad.state == "unreadable"
    assert "index=3" in repr(e)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(index=0),  # valid without a GID
        dict(index=0, gid="::1", state="nonsense"),
        dict(index=0, gid="::1", type="roce_v3"),
        dict(index=0, gid="fe80::1", state="empty"),  # an empty slot holds no GID
    ],
)
def test_bad_entries_raise_invalid_argument(kwargs):
    with pytest.raises(Error) as e:
        GidEntry(**kwargs)
    assert e.value.errc == "invalid_argument"


def test_port_fields_and_bad_values():
    p = PortInfo("mlx5_0", 1, "active", "ethernet", 256, 4096, 0)
    assert (p.device, p.port, p.state, p.link_layer, p.gid_tbl_len, p.active_mtu, p.lid) == (
        "mlx5_0", 1, "active", "ethernet", 256, 4096, 0)
    assert p.name == "mlx5_0 port 1"
    assert PortInfo("x").gid_tbl_len is None
    assert PortInfo("x", link_layer="InfiniBand").link_layer == "infiniband"
    for kwargs in (dict(state="up"), dict(link_layer="token-ring"), dict(active_mtu=9000)):
        with pytest.raises(Error) as e:
            PortInfo("mlx5_0", **kwargs)
        assert e.value.errc == "invalid_argument"
    with pytest.raises(TypeError):
        PortInfo("mlx5_0", port=-1)
    assert p.link_rate is None and p.link_gbps is None


def test_port_link_rate_from_devinfo():
    # nccl-769's paste prints "active_width: 4X (2)" and "active_speed: 25.0 Gbps (32)".
    port = gidpolicy.read_tables_file(str(TABLES / "nccl-769.devinfo.txt"))[0].port
    assert port.link_rate == "4X EDR (100 Gb/s)" and port.link_gbps == 100.0
    # show_gids prints no rate.
    assert gidpolicy.read_tables_file(str(TABLES / "ibm-pr4-cx6.show_gids.txt"))[0].port.link_rate is None


def test_table_sorts_finds_and_iterates():
    t = roce_table(entries=[GidEntry(3, "::ffff:10.0.0.1", "roce_v2"), GidEntry(0, "fe80::1", "roce_v1")])
    assert [e.index for e in t] == [0, 3] == [e.index for e in t.entries]
    assert len(t) == 2 and t.length == 16 and t.holes == "empty"
    assert t.find(3).gid == Gid("::ffff:10.0.0.1")
    assert t.find(Gid("fe80::1")).index == 0 and t.find("fe80::1").index == 0
    assert t.find(1) is None and t.find(-1) is None and t.find(2**40) is None and t.find("::9") is None
    assert t.name == "mlx5_0 port 1" and t.port.device == "mlx5_0"
    assert t == roce_table(entries=[GidEntry(0, "fe80::1", "roce_v1"), GidEntry(3, "::ffff:10.0.0.1", "roce_v2")])
    assert "2 entries" in repr(t)


def test_table_refuses_duplicates_and_out_of_range():
    with pytest.raises(Error) as e:
        roce_table(entries=[GidEntry(1, "::1"), GidEntry(1, "::2")])
    assert e.value.errc == "duplicate_index"
    with pytest.raises(Error) as e:
        roce_table(entries=[GidEntry(16, "::1")], gid_tbl_len=16)
    assert e.value.errc == "index_too_large"
    with pytest.raises(Error) as e:
        GidTable(PortInfo("d"), [], holes="sometimes")
    assert e.value.errc == "invalid_argument"


@pytest.mark.parametrize("name", sorted(p.name for p in TABLES.iterdir() if p.suffix in (".json", ".txt") and p.name != "SOURCES.md"))
def test_every_example_table_reads_and_round_trips(name):
    path = TABLES / name
    tables = gidpolicy.read_tables_file(str(path))
    assert tables, name
    text = path.read_text()
    assert gidpolicy.read_tables(text, name) == tables
    assert gidpolicy.read_tables(text.encode(), name) == tables
    fmt = gidpolicy.detect_format(text, name)
    assert fmt in ("json", "devinfo", "show_gids")
    assert gidpolicy.read_tables(text, name, format=fmt) == tables
    # JSON keeps everything: written and read back, the tables are equal.
    assert gidpolicy.read_tables(gidpolicy.write_tables(tables, "json")) == tables
    for other in ("devinfo", "show_gids"):
        assert gidpolicy.read_tables(gidpolicy.write_tables(tables, other), format=other)


def test_sysfs_directory(tmp_path):
    dev = tmp_path / "mlx5_0" / "ports" / "1"
    (dev / "gids").mkdir(parents=True)
    (dev / "gid_attrs" / "types").mkdir(parents=True)
    (dev / "gid_attrs" / "ndevs").mkdir(parents=True)
    (dev / "state").write_text("4: ACTIVE\n")
    (dev / "link_layer").write_text("Ethernet\n")
    for i in range(4):
        (dev / "gids" / str(i)).write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")
    (dev / "gids" / "2").write_text("0000:0000:0000:0000:0000:ffff:0a00:0001\n")
    (dev / "gid_attrs" / "types" / "2").write_text("RoCE v2\n")
    (dev / "gid_attrs" / "ndevs" / "2").write_text("eth0\n")
    tables = gidpolicy.read_tables_file(str(tmp_path))
    assert len(tables) == 1
    e = tables[0].find(2)
    assert e.gid == Gid("::ffff:10.0.0.1") and e.type == "roce_v2" and e.netdev == "eth0"


@pytest.mark.parametrize(
    "text,errc",
    [
        ("", "unknown_format"),
        ("hello world\n", "unknown_format"),
        (b"\x00\x01\x02binary", "unknown_format"),
        ("{", "parse_error"),
        ('{"schema": "gidpolicy.tables", "version": 99, "ports": []}', "unsupported_version"),
        ("[" * 100000, "parse_error"),
    ],
)
def test_hostile_text_raises_named_errors(text, errc):
    with pytest.raises(Error) as e:
        gidpolicy.read_tables(text, "paste.txt")
    assert e.value.errc == errc, str(e.value)
    assert len(str(e.value)) < 2000


def test_bad_field_names_file_line_and_field():
    text = (TABLES / "macmini-mapped-at-2.json").read_text().replace("::ffff:10.99.0.3", "::ffff:10.99.0.300")
    with pytest.raises(Error) as e:
        gidpolicy.read_tables(text, "mac.json")
    assert e.value.errc == "invalid_field"
    assert "mac.json" in e.value.detail and "gid" in e.value.detail


def test_input_is_bounded():
    with pytest.raises(Error) as e:
        gidpolicy.read_tables("x" * 1001, max_bytes=1000)
    assert e.value.errc == "parse_error" and "1000" in e.value.detail
    with pytest.raises(Error) as e:
        gidpolicy.detect_format(b" " * 11, max_bytes=10)
    assert e.value.errc == "parse_error"
    assert gidpolicy.DEFAULT_MAX_INPUT_BYTES == 16 * 1024 * 1024


def test_bad_arguments():
    with pytest.raises(Error) as e:
        gidpolicy.read_tables(12)
    assert e.value.errc == "invalid_argument"
    with pytest.raises(Error) as e:
        gidpolicy.read_tables("{}", format="xml")
    assert e.value.errc == "invalid_argument"
    with pytest.raises(Error) as e:
        gidpolicy.write_tables([], "sysfs")
    assert e.value.errc == "invalid_argument"
    with pytest.raises(Error) as e:
        gidpolicy.read_tables_file("/nonexistent/table.json")
    assert e.value.errc == "io_error" and "/nonexistent/table.json" in e.value.detail


def test_live_tables_without_the_library_says_so():
    with pytest.raises(Error) as e:
        gidpolicy.live_tables(library="/nonexistent/libibverbs.so.1")
    assert e.value.errc == "library_unavailable"
    assert "/nonexistent/libibverbs.so.1" in str(e.value)


CLI = os.environ.get("GIDPOLICY_CLI")


@pytest.mark.skipif(not CLI, reason="GIDPOLICY_CLI (the gidpolicy program, for fake-host) is not set")
def test_live_tables_read_the_host_through_libibverbs():
    # The drop-in fake libibverbs under `gidpolicy fake-host` is a live host: DlopenApi loads it as
    # it would load rdma-core's, and the tables it serves must be the file's.
    table = TABLES / "nccl-769.devinfo.txt"
    code = (
        "import gidpolicy, sys\n"
        f"want = gidpolicy.read_tables_file({str(table)!r})\n"
        "got = gidpolicy.live_tables()\n"
        "assert [t.port.device for t in got] == [t.port.device for t in want], (got, want)\n"
        "for g, w in zip(got, want):\n"
        "    assert [(e.index, e.gid) for e in g if e.usable] == [(e.index, e.gid) for e in w if e.usable]\n"
        "one = gidpolicy.live_tables(device=want[0].port.device, port=1)\n"
        "assert len(one) == 1 and one[0].port.device == want[0].port.device\n"
        "try:\n"
        "    gidpolicy.live_tables(device='nosuchdev0')\n"
        "except gidpolicy.Error as e:\n"
        "    assert e.errc == 'device_not_found' or e.errno is not None, e\n"
        "    assert 'nosuchdev0' in str(e)\n"
        "else:\n"
        "    sys.exit('no error for a missing device')\n"
        "print('live ok')\n"
    )
    r = subprocess.run([CLI, "fake-host", "--tables", str(table), "--", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 and "namespace" in r.stderr and "live ok" not in r.stdout:
        pytest.skip("fake-host refused here: " + r.stderr.strip()[:200])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "live ok" in r.stdout
