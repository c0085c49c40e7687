"""Values built in Python follow the readers' rules: a device or netdev name the readers refuse, a
port outside 1-255, an index, errno or table length the JSON reader refuses, is refused at
construction, naming the field. So whatever can be built writes text the module reads back equal."""

import random

import pytest

import gidpolicy
from gidpolicy import DeviceFailure, Finding, GidEntry, GidTable, PortInfo, fleet

BAD_DEVICES = ["", "mlx5 0", "mlx5/0", ".", "..", "m" * 64, "mlx5\n0", "mlx5\x000", "mlx5_\xe9", "mlx5\x1b[0m"]
BAD_NETDEVS = ["eth0:1", "e" * 16, "eth 0", "eth/0", "..", "eth0\t", "\u202eeth0"]


@pytest.mark.parametrize("device", BAD_DEVICES)
def test_port_info_refuses_a_device_name_the_readers_refuse(device):
    with pytest.raises(gidpolicy.Error) as raised:
        PortInfo(device)
    assert raised.value.errc == "invalid_argument"
    assert "PortInfo device" in str(raised.value)


@pytest.mark.parametrize("netdev", BAD_NETDEVS)
def test_gid_entry_refuses_a_netdev_name_the_readers_refuse(netdev):
    with pytest.raises(gidpolicy.Error, match="GidEntry netdev") as raised:
        GidEntry(0, "fe80::1", "roce_v2", netdev)
    assert raised.value.errc == "invalid_argument"


@pytest.mark.parametrize("port", [0, 256, 1000])
def test_port_info_refuses_a_port_outside_1_to_255(port):
    with pytest.raises(gidpolicy.Error, match=f"PortInfo port: expected a port number 1-255, found {port}"):
        PortInfo("mlx5_0", port)


def test_edges_that_are_accepted():
    assert PortInfo("m" * 63, 255).port == 255
    assert PortInfo("mlx5_0", 1).port == 1
    assert GidEntry(0x7FFFFFFF, "fe80::1", netdev="e" * 15).netdev == "e" * 15
    assert GidEntry(3, state="unreadable", read_error=4095).read_error == 4095
    assert PortInfo("mlx5_0", gid_tbl_len=0x80000000).gid_tbl_len == 0x80000000
    assert GidEntry(1, "fe80::1").netdev == ""  # no netdev is allowed, as in the readers


def test_numbers_the_json_reader_refuses_are_refused():
    with pytest.raises(gidpolicy.Error, match="GidEntry index"):
        GidEntry(0x80000000, "fe80::1")
    with pytest.raises(gidpolicy.Error, match="GidEntry read_error"):
        GidEntry(1, state="unreadable", read_error=4096)
    with pytest.raises(gidpolicy.Error, match="GidEntry read_error"):
        GidEntry(1, state="unreadable", read_error=-5)
    with pytest.raises(gidpolicy.Error, match="GidEntry read_error: only an unreadable entry"):
        GidEntry(1, "fe80::1", read_error=5)
    with pytest.raises(gidpolicy.Error, match="PortInfo gid_tbl_len"):
        PortInfo("mlx5_0", gid_tbl_len=0x80000001)


def test_the_doctors_values_and_the_fleet_apply_the_same_rules(roce):
    with pytest.raises(gidpolicy.Error, match="DeviceFailure port"):
        DeviceFailure("mlx5_0", 256)
    assert DeviceFailure("mlx5_0", 0).port == 0  # 0: the device as a whole
    with pytest.raises(gidpolicy.Error, match="Finding device"):
        Finding("no_ipv4", "blocker", "text", device="mlx5 0")
    with pytest.raises(gidpolicy.Error, match="Finding netdev"):
        Finding("no_ipv4", "blocker", "text", device="mlx5_0", netdev="eth0:1")
    with pytest.raises(gidpolicy.Error, match="Finding port"):
        Finding("no_ipv4", "blocker", "text", device="mlx5_0", port=256)
    with pytest.raises(gidpolicy.Error, match="required_devices"):
        gidpolicy.DoctorInput([roce], required_devices=[("mlx5\n0", "NCCL_IB_HCA")])
    hosts = [fleet.HostSnapshot("a", [roce]), fleet.HostSnapshot("b", [roce])]
    with pytest.raises(gidpolicy.Error, match="device"):
        fleet.analyze(hosts, device="mlx5 0")
    with pytest.raises(gidpolicy.Error, match="port"):
        fleet.analyze(hosts, device="mlx5_0", port=0)
    with pytest.raises(gidpolicy.Error, match="rails"):
        fleet.analyze(hosts, "rail", rails=["mlx5/0"])
    # Refused before any library is loaded: the same answer on a host without RDMA.
    with pytest.raises(gidpolicy.Error, match="port: expected a port number 1-255"):
        gidpolicy.live_tables(port=0)
    with pytest.raises(gidpolicy.Error, match="device"):
        gidpolicy.live_tables(device="mlx5\n0")


# --- the round trip: anything constructible writes text the reader reads back equal -----------

# Every kind of byte a name could hold: the ones the rule allows and the ones it refuses.
ALPHABET = (
    [chr(c) for c in range(0x21, 0x7F)]
    + [" ", "\t", "\n", "\x00", "\x7f", "\x1b", ":", "/", ".", "\xe9", "\u202e", "\u2028"]
    + ["_", "-", "0", "1", "a", "z"] * 8  # so that enough names are accepted
)


def random_name(rng, longest):
    n = rng.choice([0, 1, 2, rng.randint(1, longest), longest, longest + 1])
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def random_entry(rng, index, gid_tbl_len):
    state = rng.choice(["valid", "valid", "empty", "unreadable"])
    kwargs = dict(
        index=index,
        type=rng.choice(["ib", "roce_v1", "roce_v2", "unknown"]),
        netdev=rng.choice(["", random_name(rng, 15)]),
        ifindex=rng.choice([0, 1, rng.randint(0, 0xFFFFFFFF)]),
        state=state,
    )
    if state == "valid":
        kwargs["gid"] = gidpolicy.Gid(bytes(rng.randrange(256) for _ in range(16)))
    if state == "unreadable":
        kwargs["read_error"] = rng.choice([0, 5, 61, 4095, 4096, -1])
    return GidEntry(**kwargs)


def random_table(rng):
    gid_tbl_len = rng.choice([None, 1, 16, 256, 0x80000000])
    port = PortInfo(
        random_name(rng, 63),
        rng.choice([0, 1, 2, 254, 255, 256]),
        rng.choice(["nop", "down", "init", "armed", "active", "active_defer"]),
        rng.choice(["infiniband", "ethernet", "thunderbolt", "0", "7"]),
        gid_tbl_len,
        rng.choice([256, 512, 1024, 2048, 4096]),
        rng.randint(0, 0xFFFF),
    )
    top = min(gid_tbl_len or 0x80000000, 0x80000000)
    indexes = sorted({rng.choice([0, 1, top - 1, rng.randrange(top)]) for _ in range(rng.randint(0, 6))})
    entries = [random_entry(rng, i, gid_tbl_len) for i in indexes]
    return GidTable(port, entries, rng.choice(["empty", "not_shown"]))


def test_whatever_is_constructible_round_trips_through_json():
    rng = random.Random(20240611)
    built = refused = 0
    for _ in range(3000):
        try:
            table = random_table(rng)
        except gidpolicy.Error as e:
            assert e.errc in ("invalid_argument", "index_too_large"), e
            refused += 1
            continue
        built += 1
        text = gidpolicy.write_tables([table], "json")
        assert gidpolicy.read_tables(text) == [table], text
        # The other text formats carry less (devinfo_view, show_gids_view), but read what they wrote.
        for fmt in ("devinfo", "show_gids"):
            gidpolicy.read_tables(gidpolicy.write_tables([table], fmt), format=fmt)
    # Both sides of the rule were exercised.
    assert built > 300 and refused > 300, (built, refused)
