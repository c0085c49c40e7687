"""Arguments of the wrong type raise gidpolicy.ArgumentTypeError: an Error and a TypeError at once,
naming the function, the parameter and the type it expects."""

import pytest

import gidpolicy
from gidpolicy import ArgumentTypeError, Error


def test_argument_type_error_is_both_an_error_and_a_type_error():
    assert issubclass(ArgumentTypeError, Error)
    assert issubclass(ArgumentTypeError, TypeError)


# (the call, what its message must hold: the function, the parameter, the type expected)
CALLS = [
    # an int where a str is expected
    (lambda: gidpolicy.Gid.parse(5), ["Gid.parse()", "text", "expected str", "found int"]),
    (lambda: gidpolicy.Profile(7), ["Profile()", "spec", "expected str", "found int"]),
    (lambda: gidpolicy.PortInfo(5), ["PortInfo()", "device", "expected str", "found int"]),
    (lambda: gidpolicy.GidEntry(0, "fe80::1", 3), ["GidEntry()", "type", "expected str", "found int"]),
    (lambda: gidpolicy.read_tables_file(42), ["read_tables_file()", "path", "expected str", "found int"]),
    (lambda: gidpolicy.errno_name(22, 1), ["errno_name()", "platform", "expected str", "found int"]),
    # a str where a table (or a list of them) is expected
    (lambda: gidpolicy.Profile("auto").plan("mlx5_0"), ["Profile.plan()", "table", "expected GidTable", "found str"]),
    (lambda: gidpolicy.write_tables("tables"), ["write_tables()", "tables", "expected List[GidTable]", "found str"]),
    (lambda: gidpolicy.write_tables(["t"]), ["write_tables()", "tables[0]", "expected GidTable", "found str"]),
    (lambda: gidpolicy.check("table"), ["check()", "table", "expected GidTable", "found str"]),
    (lambda: gidpolicy.fleet.analyze("hosts"), ["fleet.analyze()", "hosts", "found str"]),
    # None
    (lambda: gidpolicy.Gid(None), ["Gid()", "expected a Gid", "found NoneType"]),
    (lambda: gidpolicy.Gid.ipv4_mapped(None), ["Gid.ipv4_mapped()", "address", "found NoneType"]),
    (lambda: gidpolicy.read_tables(None), ["read_tables()", "text", "expected str or bytes", "found NoneType"]),
    (lambda: gidpolicy.Cidr(None), ["Cidr()", "text", "expected str", "found NoneType"]),
    (lambda: gidpolicy.DoctorInput(None), ["DoctorInput()", "tables", "found NoneType"]),
    # a property's setter, a list's element, a dict's value
    (lambda: setattr(gidpolicy.DriverModel.linux_kernel(), "uc_only", "yes"),
     ["DriverModel.uc_only", "expected bool", "found str"]),
    (lambda: gidpolicy.DoctorInput([], pins=[1]), ["DoctorInput()", "pins[0]", "expected DoctorPin", "found int"]),
    (lambda: gidpolicy.DoctorInput([], pins={"NCCL_IB_GID_INDEX": 3}), ["DoctorInput()", "pins", "expected str"]),
    # missing, unknown and out-of-range arguments are refused the same way
    (lambda: gidpolicy.PortInfo(), ["PortInfo()", "missing argument device"]),
    (lambda: gidpolicy.PortInfo("mlx5_0", colour=1), ["PortInfo()", '"colour"']),
    (lambda: gidpolicy.PortInfo("mlx5_0", -1), ["PortInfo()", "port", "-1"]),
]


@pytest.mark.parametrize("call,words", CALLS)
def test_wrong_types_raise_argument_type_error_naming_the_parameter(call, words):
    with pytest.raises(ArgumentTypeError) as raised:
        call()
    e = raised.value
    assert isinstance(e, Error) and isinstance(e, TypeError)
    assert e.errc == "invalid_argument" and e.errno is None and e.trace is None
    text = str(e)
    assert "\n" not in text, "one line, not pybind11's list of signatures"
    for word in words:
        assert word in text, (word, text)


def test_code_catching_type_error_keeps_working():
    try:
        gidpolicy.Gid.parse(5)
    except TypeError as e:
        assert isinstance(e, Error)
    else:
        pytest.fail("no error")


def test_errors_that_are_not_about_types_stay_plain_errors():
    with pytest.raises(Error) as raised:
        gidpolicy.Gid.parse("not a gid")
    assert not isinstance(raised.value, ArgumentTypeError)
    assert raised.value.errc == "invalid_gid_text"
