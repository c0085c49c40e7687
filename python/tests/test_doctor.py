"""The doctor from Python: DoctorInput built from Python values, examine()'s ranked findings,
interfaces from getifaddrs() records (Darwin's numbers on any host), this host's interfaces and
the bounds on everything a caller hands in."""
from pathlib import Path

import pytest

import gidpolicy
from gidpolicy import (DeviceFailure, DoctorInput, DoctorPeer, DoctorPin, DoctorReport, Finding, HostInterface,
                       IfAddress, IfAddrRecord, IfaddrsNumbers)

from conftest import TABLES

DOCTOR = Path(__file__).resolve().parents[2] / "tests" / "data" / "doctor"


def tables(name):
    return gidpolicy.read_tables_file(str(DOCTOR / name))


def iface(name, *addresses, mtu=1500, **kw):
    return HostInterface(name, mtu=mtu, addresses=[IfAddress(a, p) for a, p in addresses], **kw)


def consistent_interfaces():
    # What tests/integration/netns_doctor.sh sets up for consistent.json, as values.
    return [iface("gpd0", ("10.9.1.1", 24), ("fe80::a0", 64)), iface("gpt0", ("192.168.201.1", 30))]


def codes(report, severity=None):
    return [f.code for f in report.findings if severity is None or f.severity == severity]


def test_consistent_host_has_no_blockers():
    r = gidpolicy.examine(DoctorInput(tables("consistent.json"), consistent_interfaces(), from_file=True))
    assert isinstance(r, DoctorReport)
    assert r.ready() and r.blockers() == 0, [f.text for f in r.findings]
    assert codes(r, "blocker") == []
    assert [(p.device, p.port, p.link_layer) for p in r.ports] == [("mlx5_0", 1, "ethernet"),
                                                                   ("rdma_gpt0", 1, "thunderbolt")]
    mlx = r.ports[0]
    assert mlx.state == "active" and mlx.netdevs == ["gpd0"] and mlx.gids == 4 and mlx.routable == 2
    nccl = [s for s in r.stacks if s.stack == "nccl" and s.device == "mlx5_0"]
    assert len(nccl) == 1 and nccl[0].chose and nccl[0].index == 3 and nccl[0].works and nccl[0].port == 1
    assert nccl[0].outcome
    assert r.peers == []


def test_the_same_tables_without_their_interfaces_are_not_ready():
    r = gidpolicy.examine(DoctorInput(tables("consistent.json"), [], from_file=True))
    assert not r.ready() and r.blockers() >= 1
    assert r.findings[0].severity == "blocker"
    assert "netdev_elsewhere" in codes(r, "blocker") or "netdev_missing" in codes(r, "blocker")


def test_a_gid_whose_address_is_gone_is_stale_with_its_fix():
    # gpa0 holds 10.9.2.1 only: the GIDs [4], [5] of 10.9.2.7 outlived their address.
    ifs = [iface("gpa0", ("10.9.2.1", 24)), iface("gpmv0", ("10.9.3.1", 24)), iface("gptb0", ("192.168.201.5", 30))]
    r = gidpolicy.examine(DoctorInput(tables("not-ready.json"), ifs, from_file=True))
    stale = [f for f in r.findings if f.code == "stale_gid"]
    assert len(stale) == 1, [f.code for f in r.findings]
    f = stale[0]
    assert (f.device, f.port, f.netdev) == ("mlx5_0", 1, "gpa0")
    assert "10.9.2.7" in f.text and "[4]" in f.text and "[5]" in f.text
    assert f.why and f.fix and isinstance(f.fix, list)
    assert any("ip link set gpa0 down" in line for line in f.fix)
    assert repr(f) == f"Finding({f.severity} stale_gid)"


def test_an_address_without_its_gid():
    ifs = [iface("gpd0", ("10.9.1.1", 24), ("10.9.1.5", 24)), iface("gpt0", ("192.168.201.1", 30))]
    from_file = gidpolicy.examine(DoctorInput(tables("consistent.json"), ifs, from_file=True))
    f = [x for x in from_file.findings if x.code == "address_without_gid"]
    assert len(f) == 1 and f[0].netdev == "gpd0" and "10.9.1.5/24" in f[0].text
    assert "table was read from a file" in f[0].text
    live = gidpolicy.examine(DoctorInput(tables("consistent.json"), ifs, from_file=False))
    g = [x for x in live.findings if x.code == "address_without_gid"]
    assert len(g) == 1 and g[0].text != f[0].text  # live: not explained by the file's age


DARWIN = IfaddrsNumbers.for_platform("darwin")
LINUX = IfaddrsNumbers.for_platform("linux")
UP_RUNNING = DARWIN.iff_up | DARWIN.iff_running


def test_ifaddrs_numbers_per_platform():
    assert (LINUX.af_inet, LINUX.af_inet6) == (2, 10)
    assert (DARWIN.af_inet, DARWIN.af_inet6) == (2, 30)
    assert (DARWIN.iff_up, DARWIN.iff_loopback, DARWIN.iff_running) == (0x1, 0x8, 0x40)
    with pytest.raises(gidpolicy.Error) as e:
        IfaddrsNumbers.for_platform("windows")
    assert e.value.errc == "invalid_argument"


def darwin_records():
    v6 = bytes.fromhex("fe8000000000000000000000000000b1")
    mask64 = bytes([0xFF] * 8 + [0] * 8)
    return [
        IfAddrRecord("en5", UP_RUNNING, 18, mtu=9000, ifindex=7),  # AF_LINK: flags and MTU only
        IfAddrRecord("en5", UP_RUNNING, 30, v6, mask64, mtu=9000, ifindex=7),  # AF_INET6 is 30 on Darwin
    ]


def test_thunderbolt_without_ipv4_under_darwin():
    ifs = gidpolicy.interfaces_from_ifaddrs(darwin_records(), "darwin")
    assert len(ifs) == 1
    en5 = ifs[0]
    assert (en5.name, en5.ifindex, en5.mtu, en5.up, en5.running, en5.loopback, en5.bridge) == (
        "en5", 7, 9000, True, True, False, "")
    assert en5.addresses == [IfAddress("fe80::b1", 64)]
    assert not en5.has_ipv4() and not en5.has_assigned_ipv4() and en5.holds("fe80::b1")
    # The same numbers read as Linux's: 30 is no address family there, so no address at all.
    assert gidpolicy.interfaces_from_ifaddrs(darwin_records(), "linux")[0].addresses == []

    tb = gidpolicy.GidTable(gidpolicy.PortInfo("rdma_en5", 1, "active", "thunderbolt", 16, 1024),
                            [gidpolicy.GidEntry(0, "fe80::b1", "ib", "en5")])
    r = gidpolicy.examine(DoctorInput([tb], ifs, platform="darwin"))
    assert not r.ready()
    f = [x for x in r.findings if x.code == "no_ipv4"]
    assert len(f) == 1 and f[0].severity == "blocker" and f[0].netdev == "en5"
    assert "en5 has no IPv4 address" in f[0].text
    fix = "\n".join(f[0].fix)
    assert "ifconfig en5 inet 192.168.200.1 netmask 255.255.255.252 alias" in fix and "ip addr add" not in fix
    linux = gidpolicy.examine(DoctorInput([tb], ifs, platform="linux"))
    assert "ip addr add 192.168.200.1/30 dev en5" in "\n".join(
        x for g in linux.findings if g.code == "no_ipv4" for x in g.fix)


def test_another_hosts_table_is_judged_by_itself():
    # A Mac's Thunderbolt port with only its link-local GID, judged away from the Mac: no
    # interface of this machine is compared (the same input as the Mac's own would be
    # netdev_missing), the port's GIDs say en3 has no IPv4, and what was not checked is listed.
    tb = gidpolicy.GidTable(gidpolicy.PortInfo("rdma_en3", 1, "active", "thunderbolt", 16, 1024),
                            [gidpolicy.GidEntry(0, "fe80::347c:94ff:fecd:45c4", "ib")])
    here = gidpolicy.examine(DoctorInput([tb], [iface("eth0", ("10.0.0.2", 24))], platform="darwin"))
    assert "netdev_missing" in codes(here) and here.not_checked == []
    away = DoctorInput([tb], [iface("eth0", ("10.0.0.2", 24))], platform="darwin", from_file=True,
                       pins=[DoctorPin("NCCL_IB_GID_INDEX", "5")], host_checked=False)
    assert not away.host_checked
    r = gidpolicy.examine(away)
    assert codes(r) == ["no_ipv4"]
    assert r.findings[0].device == "rdma_en3" and r.findings[0].netdev == "en3"
    assert "its interface en3 has no IPv4 address" in r.findings[0].text
    assert r.not_checked == ["interfaces", "bridge_membership", "routes", "pins", "rdma_ctl"]


def test_rdma_switch_and_unknown_bridge_membership_on_a_mac():
    tb = gidpolicy.GidTable(gidpolicy.PortInfo("rdma_en5", 1, "active", "thunderbolt", 16, 1024),
                            [gidpolicy.GidEntry(0, "fe80::b1", "ib", "en5"),
                             gidpolicy.GidEntry(1, "::ffff:192.168.200.1", "ib", "en5")])
    en5 = HostInterface("en5", addresses=[IfAddress("192.168.200.1", 30), IfAddress("fe80::b1", 64)],
                        bridge_unknown="/sbin/ifconfig -a did not finish within 2 s")
    assert en5.bridge_unknown.startswith("/sbin/ifconfig")
    off = DoctorInput([tb], [en5], platform="darwin", rdma_enabled=False)
    assert off.rdma_enabled is False
    r = gidpolicy.examine(off)
    assert r.findings[0].code == "rdma_disabled" and "rdma_ctl enable" in r.findings[0].fix
    notes = [f for f in r.findings if f.code == "bridge_unknown"]
    assert len(notes) == 1 and notes[0].severity == "note" and notes[0].netdev == "en5"
    # Enabled, nothing listed, read live: Thunderbolt 4's final state.
    assert [f.code for f in gidpolicy.examine(DoctorInput([], platform="darwin", rdma_enabled=True)).findings] == [
        "no_rdma_device"]
    assert gidpolicy.examine(DoctorInput([tb], [HostInterface("en5", addresses=en5.addresses)], platform="darwin",
                                         rdma_enabled=True)).ready()
    with pytest.raises(gidpolicy.Error):
        DoctorInput([tb], platform="darwin", rdma_enabled=True, rdma_state_error="both")
    with pytest.raises(gidpolicy.Error):
        HostInterface("en5", bridge="bridge0", bridge_unknown="both")


def test_ifaddr_record_values_and_bad_records():
    r = IfAddrRecord("en0", 3, 2, b"\x0a\x00\x00\x01", bytearray(b"\xff\xff\xff\x00"), 1500, 4, "bridge0")
    assert (r.name, r.flags, r.family, r.address, r.netmask, r.mtu, r.ifindex, r.bridge) == (
        "en0", 3, 2, b"\x0a\x00\x00\x01", b"\xff\xff\xff\x00", 1500, 4, "bridge0")
    ifs = gidpolicy.interfaces_from_ifaddrs([r], "darwin")
    assert ifs[0].addresses == [IfAddress("10.0.0.1", 24)] and ifs[0].bridge == "bridge0" and ifs[0].has_ipv4()
    bad = [
        IfAddrRecord("en0", 1, 2, b"\x0a\x00\x00", b"\xff\xff\xff"),  # 3 bytes for AF_INET
        IfAddrRecord("en0", 1, 2, b"\x0a\x00\x00\x01", b"\xff\x00\xff\x00"),  # not a prefix
        IfAddrRecord("bad\nname", 1, 2, b"\x0a\x00\x00\x01", b"\xff\xff\xff\x00"),
    ]
    for rec in bad:
        with pytest.raises(gidpolicy.Error) as e:
            gidpolicy.interfaces_from_ifaddrs([rec], "linux")
        assert e.value.errc == "invalid_argument" and e.value.detail
    with pytest.raises(gidpolicy.Error, match="at most 16"):
        IfAddrRecord("en0", 1, 2, b"\x00" * 17)
    with pytest.raises(gidpolicy.Error, match="expected bytes"):
        IfAddrRecord("en0", 1, 2, "10.0.0.1")


def test_host_interfaces_and_examine_host():
    ifs = gidpolicy.host_interfaces()
    assert all(isinstance(i, HostInterface) for i in ifs)
    # Every network namespace has its loopback (down and without 127.0.0.1 in a fresh one).
    assert any(i.loopback for i in ifs)
    t = gidpolicy.read_tables_file(str(TABLES / "macmini-mapped-at-2.json"))
    report, used = gidpolicy.examine_host(t, pins={"NCCL_IB_GID_INDEX": "3"}, platform="darwin")
    assert isinstance(report, DoctorReport) and isinstance(used, DoctorInput)
    assert used.interfaces_known and used.interfaces == gidpolicy.host_interfaces()
    assert used.platform == "darwin" and used.from_file and [p.variable for p in used.pins] == ["NCCL_IB_GID_INDEX"]
    assert [p.device for p in report.ports] == [x.port.device for x in t]
    # The same input examined again is the same verdict: examine_host adds only what it read.
    again = gidpolicy.examine(used)
    assert [f.text for f in again.findings] == [f.text for f in report.findings]
    with pytest.raises(gidpolicy.Error) as e:
        gidpolicy.examine_host(t, peers=["not an address"])
    assert e.value.errc == "invalid_field" and "not an address" in str(e.value)


def test_examine_host_routes_peers():
    report, used = gidpolicy.examine_host(tables("consistent.json"), peers=["127.0.0.1"])
    assert len(used.peers) == 1 and used.peers[0].address == "127.0.0.1" and used.peers[0].origin == "examine_host"
    assert len(report.peers) == 1 and report.peers[0].peer == "127.0.0.1"
    line = report.peers[0]
    assert not line.leaves_host  # a loopback peer never leaves the host, whatever route it has
    assert line.summary


def test_peers_pins_failures_and_extra_findings():
    t = tables("consistent.json")
    ifs = consistent_interfaces()
    peers = [
        DoctorPeer("10.9.1.2", "--peer", netdev="gpd0", source="10.9.1.1", ifindex=3),
        DoctorPeer("10.77.0.9", "hostfile hosts[1]", rdma=False, route_error="no route to 10.77.0.9"),
    ]
    assert peers[0].routed and peers[0].netdev == "gpd0" and peers[0].source == gidpolicy.Gid("::ffff:10.9.1.1")
    assert peers[0].route_error is None and peers[0].rdma
    assert not peers[1].routed and peers[1].netdev is None and peers[1].source is None and not peers[1].rdma
    assert isinstance(peers[1].route_error, gidpolicy.Error) and peers[1].route_error.errc == "no_route"
    extra = Finding("rank_unknown", "warning", "hostfile names none of this host's addresses", why="w",
                    fix=["gidpolicy doctor --rank N"])
    fail = DeviceFailure("mlx5_9", 1, "ibv_query_port", timed_out=True, deadline_ms=2000)
    assert (fail.device, fail.port, fail.call, fail.timed_out, fail.deadline_ms, fail.detail) == (
        "mlx5_9", 1, "ibv_query_port", True, 2000, "")
    pin = DoctorPin("NCCL_IB_GID_INDEX", "0")
    assert (pin.variable, pin.value) == ("NCCL_IB_GID_INDEX", "0")
    inp = DoctorInput(t, ifs, "linux", failures=[fail], peers=peers, peer_addresses=["10.9.1.2", gidpolicy.Gid("::ffff:10.9.1.3")],
                      required_devices=[("mlx5_0", "devices.json (rank 0)"), ("mlx5_7", "devices.json (rank 0)")],
                      pins=[pin], extra=[extra], from_file=True)
    assert inp.required_devices == [("mlx5_0", "devices.json (rank 0)"), ("mlx5_7", "devices.json (rank 0)")]
    assert inp.peer_addresses == [gidpolicy.Gid("::ffff:10.9.1.2"), gidpolicy.Gid("::ffff:10.9.1.3")]
    assert len(inp.tables) == 2 and len(inp.interfaces) == 2 and inp.failures[0].device == "mlx5_9"
    assert inp.extra[0].code == "rank_unknown" and inp.extra[0].severity == "warning"
    r = gidpolicy.examine(inp)
    got = codes(r)
    assert "no_answer" in got and "device_missing" in got and "rank_unknown" in got
    assert got.index("no_answer") < got.index("rank_unknown")  # blockers before warnings
    assert r.findings[0].severity == "blocker"
    sev = [f.severity for f in r.findings]
    assert sev == sorted(sev, key=["blocker", "warning", "note"].index)
    by_peer = {p.peer: p for p in r.peers}
    assert by_peer["10.9.1.2"].routed and by_peer["10.9.1.2"].netdev == "gpd0"
    assert by_peer["10.9.1.2"].port == "mlx5_0 port 1" and by_peer["10.9.1.2"].source == "10.9.1.1"
    assert by_peer["10.9.1.2"].origin == "--peer" and by_peer["10.9.1.2"].leaves_host
    assert not by_peer["10.77.0.9"].routed
    assert not r.ready() and r.blockers() == sev.count("blocker")


def test_propose_address():
    first = gidpolicy.propose_address([])
    assert first == IfAddress("192.168.200.1", 30)
    assert gidpolicy.propose_address([first]) == IfAddress("192.168.200.5", 30)
    assert gidpolicy.propose_address([], 1) == IfAddress("192.168.200.5", 30)
    assert gidpolicy.propose_address([IfAddress("192.168.0.0", 16)]) is None  # every /30 taken
    assert gidpolicy.propose_address([], 16384) is None


def test_interface_values():
    i = HostInterface("en5", 7, True, False, False, 9000, "bridge0", [IfAddress("169.254.3.4", 16)])
    assert (i.name, i.ifindex, i.up, i.running, i.loopback, i.mtu, i.bridge) == (
        "en5", 7, True, False, False, 9000, "bridge0")
    assert i.has_ipv4() and not i.has_assigned_ipv4() and i.holds("169.254.3.4") and not i.holds("10.0.0.1")
    assert i == HostInterface("en5", 7, True, False, False, 9000, "bridge0", [IfAddress("169.254.3.4", 16)])
    assert i != HostInterface("en5")
    a = IfAddress(bytes(10) + b"\xff\xff\x0a\x00\x00\x01", 24)
    assert a.address == gidpolicy.Gid("::ffff:10.0.0.1") and a.prefix == 24 and repr(a) == "IfAddress(::ffff:10.0.0.1/24)"


def test_hostile_input():
    t = tables("consistent.json")
    with pytest.raises(TypeError):
        DoctorInput("tables")
    with pytest.raises(TypeError):
        DoctorInput(t, ["eth0"])
    with pytest.raises(TypeError):
        gidpolicy.examine(t)
    with pytest.raises(TypeError):
        gidpolicy.propose_address([], -1)
    with pytest.raises(TypeError):
        HostInterface("eth0", addresses=["10.0.0.1/24"])
    cases = [
        (lambda: DoctorInput(t, platform="windows"), "platform"),
        (lambda: DoctorInput(t, interfaces_known=True, interfaces_error="x"), "interfaces_error"),
        (lambda: DoctorInput(t, peer_addresses=["nope"]), "peer_addresses"),
        (lambda: DoctorInput(t, peer_addresses=[object()]), "peer_addresses"),
        (lambda: DoctorInput(t, peers=[DoctorPeer("10.0.0.2")] * 16385), "at most 16384"),
        (lambda: DoctorInput(t * 513), "at most 1024"),
        (lambda: DoctorInput(t, [HostInterface("e" + str(k)) for k in range(4097)]), "at most 4096"),
        (lambda: DoctorInput(t, pins=[DoctorPin("NCCL_IB_GID_INDEX", "1")] * 4097), "pins"),
        (lambda: HostInterface("eth0", addresses=[IfAddress("10.0.0.1", 24)] * 257), "at most 256"),
        (lambda: HostInterface("x" * 16), "HostInterface name"),
        (lambda: HostInterface("eth\x000"), "HostInterface name"),
        (lambda: HostInterface("eth0", bridge="br/0"), "HostInterface bridge"),
        (lambda: IfAddress("10.0.0.1", 33), "prefix"),
        (lambda: IfAddress("fd00::1", 129), "prefix"),
        (lambda: IfAddress(b"short", 8), "16 bytes"),
        (lambda: DoctorPeer("10.0.0.2", netdev="gpd0", route_error="x"), "not both"),
        (lambda: DoctorPeer("10.0.0.2", source="10.0.0.1"), "needs its netdev"),
        (lambda: DoctorPeer("10.0.0.2", netdev="a b"), "netdev"),
        (lambda: DoctorPeer("999.0.0.1"), "peer"),
        (lambda: DeviceFailure(""), "DeviceFailure device"),
        (lambda: Finding("c", "fatal", "t"), "severity"),
        (lambda: Finding("no_gids", "blocker", "t", fix=["x"] * 257), "at most 256"),
        (lambda: Finding("no_such_code", "note", "t"), "code: expected one of no_answer, device_error"),
        (lambda: Finding("rank_unknown", "blocker", "t"), "rank_unknown is a warning, not a blocker"),
        (lambda: gidpolicy.propose_address([IfAddress("10.0.0.1", 24)] * 1025), "at most 1024"),
        (lambda: gidpolicy.interfaces_from_ifaddrs([IfAddrRecord("e0")] * 16385, "linux"), "16384"),
        (lambda: gidpolicy.interfaces_from_ifaddrs([], "plan9"), "platform"),
        (lambda: gidpolicy.examine_host(t, peers=["10.0.0.2"] * 16385), "at most 16384"),
        (lambda: gidpolicy.examine_host(t, platform="beos"), "platform"),
    ]
    for make, words in cases:
        with pytest.raises(gidpolicy.Error, match=words) as e:
            make()
        # The library's own code where it judged the text (a GID, a peer), else invalid_argument.
        assert e.value.errc in ("invalid_argument", "invalid_gid_text", "invalid_field"), words
    # Many records, within the bounds: a switch-like box's thousands of interfaces still convert.
    recs = [IfAddrRecord(f"e{k}", 1, 2, bytes([10, k // 256 % 256, k % 256, 1]), b"\xff\xff\xff\x00")
            for k in range(4096)]
    assert len(gidpolicy.interfaces_from_ifaddrs(recs, "linux")) == 4096
    with pytest.raises(gidpolicy.Error, match="4096"):
        gidpolicy.interfaces_from_ifaddrs(recs + [IfAddrRecord("e-extra", 1)], "linux")
    # A large input within the bounds is still judged (64 peers, 4096 interfaces).
    big = DoctorInput(t, [HostInterface(f"e{k}") for k in range(4096)] + consistent_interfaces()[:0],
                      peers=[DoctorPeer("10.9.1.2", netdev="gpd0")] * 64)
    assert len(gidpolicy.examine(big).peers) == 64
