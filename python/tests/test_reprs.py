"""Every public class has a repr that shows what the value is, not pybind11's default
'<gidpolicy._gidpolicy.X object at 0x...>'."""

import inspect

import pytest

import gidpolicy
from gidpolicy import fleet

from conftest import FLEET, TABLES


def public_classes():
    for module in (gidpolicy, fleet):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                yield obj


def instances():
    """One instance of every public class, built the way a caller gets one."""
    mac = gidpolicy.read_tables_file(str(TABLES / "macmini-mapped-at-2.json"))[0]
    nccl = gidpolicy.read_tables_file(str(TABLES / "nccl-769.devinfo.txt"))[0]
    plan = gidpolicy.Profile("jaccl-fixed").plan(mac, trace=True)
    env = gidpolicy.plan_env(["nccl"], [nccl])
    interfaces = [gidpolicy.HostInterface("en2", addresses=[gidpolicy.IfAddress("10.99.0.3", 30)])]
    peer = gidpolicy.DoctorPeer("10.99.0.4", netdev="en2", source="10.99.0.3")
    doctor_input = gidpolicy.DoctorInput([mac], interfaces, platform="darwin", peers=[peer],
                                         pins={"GGML_RDMA_GID": "3"})  # llama.cpp's: it runs on a Mac
    report = gidpolicy.examine(doctor_input)
    hosts = fleet.read_snapshots([str(FLEET / "jaccl" / "hosts")])
    devices = fleet.parse_jaccl_devices((FLEET / "jaccl" / "devices.json").read_text(), "devices.json")
    analysis = fleet.analyze(hosts, "jaccl", jaccl=devices, profile="jaccl")
    failing = next(link for link in analysis.links() if not link.connected)
    clones = fleet.analyze([fleet.HostSnapshot(f"n{i}", [nccl]) for i in range(2)])  # one address, two hosts
    numbers = gidpolicy.IfaddrsNumbers.for_platform("linux")
    reading = gidpolicy.read_pin("NCCL_IB_GID_INDEX", "3")[0]
    out = [
        gidpolicy.ArgumentTypeError("Gid.parse(): text: expected str, found int"),
        gidpolicy.Error("invalid argument: x"),
        gidpolicy.Gid("fe80::1"),
        gidpolicy.Cidr("10.0.0.0/8"),
        mac.entries[0],
        mac.port,
        mac,
        plan.trace.attempts[0].steps[0],
        plan.trace.attempts[0],
        plan.trace,
        plan.selection,
        plan.agreement,
        plan,
        gidpolicy.Profile("jaccl"),
        gidpolicy.DriverModel.linux_kernel(),
        gidpolicy.judge_rtr(mac, 1, "::ffff:10.99.0.4"),
        gidpolicy.predict_rtr(mac, plan, "::ffff:10.99.0.4"),
        gidpolicy.diagnose(22, "darwin", table=mac, sgid_index=1).causes[0],
        gidpolicy.diagnose(22, "darwin", table=mac, sgid_index=1),
        gidpolicy.check(mac)[0],
        gidpolicy.predict_stack("nccl", nccl),
        reading,
        gidpolicy.judge_pin(reading, nccl),
        env.settings[0],
        env,
        interfaces[0].addresses[0],
        interfaces[0],
        gidpolicy.IfAddrRecord("en5", numbers.iff_up, numbers.af_inet, bytes([10, 0, 0, 1]), bytes([255] * 4)),
        numbers,
        gidpolicy.DeviceFailure("mlx5_0", 1, "ibv_query_port", timed_out=True),
        peer,
        gidpolicy.DoctorPin("NCCL_IB_GID_INDEX", "3"),
        report.findings[0],
        doctor_input,
        report.ports[0],
        report.stacks[0],
        report.peers[0],
        report,
        hosts[0],
        devices,
        analysis.causes[0],
        analysis.sides[0],
        failing.a_to_b if not failing.a_to_b.ok else failing.b_to_a,
        failing,
        analysis.summary.groups[0],
        analysis.summary,
        clones.conflicts[0],
        analysis,
    ]
    return out


def test_every_public_class_has_an_instance_here():
    covered = {type(x) for x in instances()}
    assert set(public_classes()) - covered == set(), "add an instance of each new class above"


@pytest.mark.parametrize("value", instances(), ids=lambda v: type(v).__name__)
def test_no_public_class_has_the_default_repr(value):
    text = repr(value)
    assert " object at 0x" not in text, text
    assert text.startswith(type(value).__name__ + "("), text
    assert "\n" not in text, text


def test_reprs_show_the_key_fields(macmini):
    plan = gidpolicy.Profile("jaccl").plan(macmini)
    assert repr(plan.selection) == "Selection(index=2, gid=::ffff:10.99.0.3)"
    assert repr(plan.agreement) == "Agreement(sgid_index=1, advertised=::ffff:10.99.0.3, DISAGREES)"
    assert repr(gidpolicy.DoctorPin("NCCL_IB_GID_INDEX", "3\n")) == 'DoctorPin("NCCL_IB_GID_INDEX"="3\\x0a")'
    assert repr(fleet.HostSnapshot("mac-a", [macmini])) == 'HostSnapshot("mac-a", 1 ports)'
    assert repr(gidpolicy.DeviceFailure("mlx5_0")) == "DeviceFailure(mlx5_0)"
