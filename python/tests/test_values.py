"""Gid and Cidr as values, parse_address, and the Error every failure raises."""

import pickle

import pytest

import gidpolicy
from gidpolicy import Cidr, Error, Gid


def test_parse_and_format_every_text_form():
    g = Gid.parse("::ffff:10.0.0.1")
    assert str(g) == "::ffff:10.0.0.1"
    assert g.to_string() == "::ffff:10.0.0.1"
    assert g.to_full_string() == "0000:0000:0000:0000:0000:ffff:0a00:0001"
    assert Gid("0000:0000:0000:0000:0000:FFFF:0A00:0001") == g
    assert Gid(g) == g
    assert repr(g) == "Gid('::ffff:10.0.0.1')"
    assert Gid("fe80::a4ed:ccff:fe8b:1994").to_string() == "fe80::a4ed:ccff:fe8b:1994"


def test_bytes_round_trip_in_wire_order():
    raw = bytes([0] * 10 + [0xFF, 0xFF, 10, 0, 0, 1])
    g = Gid.from_bytes(raw)
    assert g.raw == raw
    assert bytes(g) == raw
    assert Gid(bytearray(raw)) == g
    assert Gid(memoryview(raw)) == g
    assert Gid.from_bytes(bytes(16)).is_zero


def test_properties():
    mapped = Gid.ipv4_mapped("10.0.0.1")
    assert mapped == Gid.ipv4_mapped(0x0A000001)
    assert mapped.is_ipv4_mapped and not mapped.is_link_local and not mapped.is_zero
    assert mapped.ipv4 == "10.0.0.1"
    assert mapped.interface_id == 0x0000FFFF0A000001
    assert mapped.subnet_prefix == 0
    ll = Gid("fe80::1")
    assert ll.is_link_local and not ll.is_ipv4_mapped and ll.ipv4 is None
    assert ll.subnet_prefix == 0xFE80000000000000
    assert Gid("::ffff:169.254.3.4").is_ipv4_link_local
    assert not Gid("::ffff:10.0.0.1").is_ipv4_link_local
    assert Gid("fd00::5").is_unique_local and not Gid("fe80::5").is_unique_local
    assert mapped.in_prefix("10.0.0.0/8") and not mapped.in_prefix("11.0.0.0/8")


def test_equality_ordering_hash_pickle():
    a, b = Gid("::1"), Gid("::2")
    assert a != b and a < b and a <= b and b > a and b >= a
    assert a == Gid("0:0:0:0:0:0:0:1")
    assert len({Gid("fe80::1"), Gid("FE80::1"), Gid("fe80::2")}) == 2
    assert hash(Gid("fe80::1")) == hash(Gid("fe80:0::1"))
    assert pickle.loads(pickle.dumps(a)) == a


@pytest.mark.parametrize(
    "text", ["", " fe80::1", "fe80::1 ", "zz", "1:2:3:4:5:6:7:8:9", "::ffff:10.0.0.256", "fe80::1\n", "x" * 100000]
)
def test_bad_gid_text_raises_invalid_gid_text(text):
    with pytest.raises(Error) as e:
        Gid.parse(text)
    assert e.value.errc == "invalid_gid_text"
    assert e.value.errno is None
    assert "position" in e.value.detail
    assert e.value.trace is None
    # The message is bounded: a 100 kB input is not echoed back whole.
    assert len(str(e.value)) < 400


@pytest.mark.parametrize("raw", [b"", bytes(15), bytes(17), bytearray(32)])
def test_wrong_byte_count_raises_invalid_argument(raw):
    with pytest.raises(Error) as e:
        Gid.from_bytes(raw)
    assert e.value.errc == "invalid_argument"
    assert f"found {len(raw)}" in e.value.detail


@pytest.mark.parametrize("value", [16, 1.5, None, ["::1"]])
def test_wrong_type_raises_invalid_argument(value):
    with pytest.raises(Error) as e:
        Gid(value)
    assert e.value.errc == "invalid_argument"


def test_ipv4_mapped_refuses_what_is_not_ipv4():
    for bad in ("fe80::1", "10.0.0", -1, 2**32):
        with pytest.raises(Error) as e:
            Gid.ipv4_mapped(bad)
        assert e.value.errc in ("invalid_argument", "invalid_gid_text", "invalid_field")


def test_cidr():
    c = Cidr.parse("10.0.0.0/8")
    assert str(c) == "10.0.0.0/8" and repr(c) == "Cidr('10.0.0.0/8')"
    assert c.prefix_len == 104 and c.network == Gid("::ffff:10.0.0.0")
    assert c.contains("::ffff:10.1.2.3") and "::ffff:10.1.2.3" in c
    assert Gid("::ffff:11.0.0.1") not in c
    assert Cidr("fd00::/8") == Cidr.parse("fd00::/8")
    assert hash(Cidr("fd00::/8")) == hash(Cidr("fd00::/8"))
    for bad in ("10.0.0.0/33", "fd00::/129", "nope", "10.0.0.0/"):
        with pytest.raises(Error) as e:
            Cidr.parse(bad)
        assert e.value.errc == "invalid_field"


def test_parse_address():
    assert gidpolicy.parse_address("10.0.0.2") == Gid("::ffff:10.0.0.2")
    assert gidpolicy.parse_address("fd00::2") == Gid("fd00::2")
    with pytest.raises(Error):
        gidpolicy.parse_address("10.0.0.2.3")


def test_errc_names_are_the_librarys():
    names = gidpolicy.errc_names()
    assert names[0] == "invalid_gid_text"
    for n in ("parse_error", "no_candidate", "disagreement", "library_unavailable", "mtu_too_large"):
        assert n in names
    assert len(names) == len(set(names)) == 35


def test_error_is_an_exception_with_its_fields():
    assert issubclass(Error, Exception)
    assert Error.__module__ == "gidpolicy"
    try:
        Gid.parse("::g")
    except Error as e:
        assert str(e).startswith("invalid GID text: ")
        assert e.detail in str(e)
    else:
        pytest.fail("no Error raised")
