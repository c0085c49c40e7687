"""The value types and gidpolicy.Error survive pickle, copy and deepcopy, equal to what they were:
what a multiprocessing worker returns or raises reaches the parent as itself."""

import copy
import multiprocessing
import pickle

import pytest

import gidpolicy
from gidpolicy import fleet

from conftest import TABLES

MAC = str(TABLES / "macmini-mapped-at-2.json")
NCCL = str(TABLES / "nccl-769.devinfo.txt")


def values():
    mac = gidpolicy.read_tables_file(MAC)[0]
    nccl = gidpolicy.read_tables_file(NCCL)[0]
    trace = gidpolicy.Profile("first(validated:index=1|jaccl-fixed)").plan(mac, trace=True).trace
    model = gidpolicy.DriverModel.apple_thunderbolt()
    model.max_qps_per_device = 7
    model.uc_only = False
    interface = gidpolicy.HostInterface("en2", 7, mtu=9000, bridge="bridge0",
                                        addresses=[gidpolicy.IfAddress("10.99.0.3", 30),
                                                   gidpolicy.IfAddress("fd00::1", 64)])
    return [
        gidpolicy.Gid("::ffff:10.0.0.1"),
        gidpolicy.Cidr("fd00::/8"),
        gidpolicy.GidEntry(3, "::ffff:10.0.0.1", "roce_v2", "eth0", 4),
        gidpolicy.GidEntry(4, state="empty"),
        gidpolicy.GidEntry(5, state="unreadable", read_error=61),
        mac.port,
        nccl.port,
        mac,
        nccl,
        gidpolicy.GidTable(gidpolicy.PortInfo("mlx5_0", 2, "down", "7", None, 4096, 9), [], "not_shown"),
        gidpolicy.Profile("first(validated:index=7|auto)"),
        trace.attempts[0].steps[0],
        trace.attempts[0],
        trace,
        model,
        gidpolicy.DriverModel.linux_kernel(),
        gidpolicy.EnvSetting("NCCL_IB_GID_INDEX", "3"),
        gidpolicy.plan_env(["nccl", "ucx"], [nccl]),
        gidpolicy.IfAddress("10.99.0.3", 30),
        interface,
        gidpolicy.DoctorPin("NCCL_IB_GID_INDEX", "3"),
        gidpolicy.DeviceFailure("mlx5_0", 1, "ibv_query_port", True, 2000, "timed out"),
        gidpolicy.Finding("no_ipv4", "blocker", "no IPv4", "rdma_en5", 1, "en5", "JACCL fails", ["# a", "b"]),
        fleet.HostSnapshot("mac-a", [mac, nccl], "a.json"),
    ]


COPIES = {
    **{f"pickle{p}": (lambda v, p=p: pickle.loads(pickle.dumps(v, protocol=p)))
       for p in range(pickle.HIGHEST_PROTOCOL + 1)},
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
}


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("value", values(), ids=lambda v: type(v).__name__)
def test_values_round_trip_equal(value, how):
    again = COPIES[how](value)
    assert type(again) is type(value)
    assert again == value
    assert repr(again) == repr(value)


def test_unpickling_applies_the_constructors_rules():
    entry = gidpolicy.GidEntry.__new__(gidpolicy.GidEntry)
    with pytest.raises(gidpolicy.Error, match="GidEntry netdev"):
        entry.__setstate__((0, gidpolicy.Gid("fe80::1"), "roce_v2", "eth0:1", 0, "valid", 0))
    port = gidpolicy.PortInfo.__new__(gidpolicy.PortInfo)
    with pytest.raises(gidpolicy.Error, match="PortInfo port"):
        port.__setstate__(("mlx5_0", 0, "active", "ethernet", None, 1024, 0, None))
    with pytest.raises(gidpolicy.Error, match="pickled PortInfo"):
        port.__setstate__(("mlx5_0",))
    pin = gidpolicy.DoctorPin.__new__(gidpolicy.DoctorPin)
    with pytest.raises(gidpolicy.ArgumentTypeError):
        pin.__setstate__((1, 2))


def raised_errors():
    mac = gidpolicy.read_tables_file(MAC)[0]
    out = []
    try:
        gidpolicy.Profile("validated:index=1").plan(mac, trace=True)
    except gidpolicy.Error as e:
        out.append(e)
    try:
        gidpolicy.Gid.parse(5)
    except gidpolicy.Error as e:
        out.append(e)
    try:
        gidpolicy.read_tables("not a table")
    except gidpolicy.Error as e:
        out.append(e)
    refused = gidpolicy.predict_rtr(mac, gidpolicy.Profile("jaccl").plan(mac), "::ffff:10.99.0.4",
                                    peer_qpn=0).refused
    if refused is not None:
        out.append(refused)
    return out


ERROR_FIELDS = ("errc", "errno", "detail", "trace")


@pytest.mark.parametrize("how", COPIES)
def test_errors_round_trip_with_their_fields(how):
    errors = raised_errors()
    assert any(e.trace for e in errors) and any(isinstance(e, gidpolicy.ArgumentTypeError) for e in errors)
    for e in errors:
        again = COPIES[how](e)
        assert type(again) is type(e)
        assert str(again) == str(e) and again.args == e.args
        for field in ERROR_FIELDS:
            assert getattr(again, field) == getattr(e, field), field
    # Attributes a caller added, and a driver's errno, come along too.
    e = gidpolicy.Error("EINVAL (22): sgid_index 1 is empty")
    e.errc, e.errno, e.detail, e.trace, e.host = None, 22, "sgid_index 1 is empty", None, "mac-a"
    again = COPIES[how](e)
    assert (again.errc, again.errno, again.detail, again.host) == (None, 22, "sgid_index 1 is empty", "mac-a")


# --- across processes -------------------------------------------------------------------------

def plan_in_worker(path, spec):
    """Runs in a worker process: raises gidpolicy.Error (with its trace) when nothing is selected."""
    return gidpolicy.Profile(spec).plan(gidpolicy.read_tables_file(path)[0], trace=True)


def trace_in_worker(path, spec):
    plan = plan_in_worker(path, spec)
    return plan.sgid_index, plan.trace, plan.advertised


def parse_in_worker(value):
    return gidpolicy.Gid.parse(value)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_worker_raising_error_delivers_it_to_the_parent(method):
    expected = raised_errors()[0]
    context = multiprocessing.get_context(method)
    with context.Pool(1) as pool:
        with pytest.raises(gidpolicy.Error) as raised:
            pool.apply(plan_in_worker, (MAC, "validated:index=1"))
        e = raised.value
        assert type(e) is gidpolicy.Error
        assert e.errc == "entry_empty" == expected.errc
        assert e.detail == expected.detail and e.trace == expected.trace and e.trace
        with pytest.raises(gidpolicy.ArgumentTypeError) as raised:
            pool.apply(parse_in_worker, (5,))
        assert raised.value.errc == "invalid_argument" and "Gid.parse()" in str(raised.value)
        # And what a worker returns comes back equal.
        here = gidpolicy.Profile("jaccl-fixed").plan(gidpolicy.read_tables_file(MAC)[0], trace=True)
        assert pool.apply(trace_in_worker, (MAC, "jaccl-fixed")) == (2, here.trace, here.advertised)
