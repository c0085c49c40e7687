"""The type stubs declare exactly what the module defines: every name, every class member."""

import ast
import inspect
from pathlib import Path

import pytest

import gidpolicy
from gidpolicy import _gidpolicy, fleet

PACKAGE = Path(gidpolicy.__file__).resolve().parent
# Stub-only helpers (type aliases, TypedDicts for dict rows) that have no runtime object.
STUB_ONLY = {"GidLike", "ProfileLike", "GidTypeName", "PlatformName", "QpTypeName", "FormatName", "SpecOption",
             "BuiltinSpec", "StackInfo", "StackLaunch", "StackPath", "SeverityName"}
# Members pybind11 (or Exception) gives every class that the stubs need not repeat.
IMPLICIT = {"__init__", "__repr__", "__str__", "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__",
            "__module__", "__doc__", "__dict__", "__weakref__", "__ne__", "__hash__", "__eq__"}


def stub_names(path: Path):
    tree = ast.parse(path.read_text())
    top, classes = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
            classes[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        elif isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom) and node.module is None:
            top.update(a.asname or a.name for a in node.names)
    return top, classes


def runtime_members(cls):
    own = set()
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins", "pybind11_builtins"):
            break
        own.update(k for k in vars(klass) if not (k.startswith("_") and not k.startswith("__")))
    return {m for m in own if m not in IMPLICIT and not m.startswith("_pybind11")}


@pytest.mark.parametrize("module,stub", [(_gidpolicy, "_gidpolicy.pyi"), (fleet._fleet, "fleet.pyi")])
def test_stubs_match_the_module(module, stub):
    top, classes = stub_names(PACKAGE / stub)
    top = {n for n in top if not n.startswith("_")}
    runtime = {n for n in dir(module) if not n.startswith("_")}
    assert runtime - top == set(), "defined but not in " + stub
    assert top - runtime - STUB_ONLY == set(), "in " + stub + " but not defined"
    for name, members in classes.items():
        if name in STUB_ONLY:
            continue
        cls = getattr(module, name)
        assert inspect.isclass(cls), name
        if cls is gidpolicy.Error:
            continue  # its attributes are set per instance (checked in test_values.py)
        declared = {m for m in members if m not in IMPLICIT}
        assert runtime_members(cls) - declared == set(), f"{name}: members not in {stub}"
        assert declared - runtime_members(cls) == set(), f"{name}: {stub} declares members it does not have"


def test_package_exports_everything_once():
    runtime = {n for n in dir(_gidpolicy) if not n.startswith("_")}
    assert set(gidpolicy.__all__) == runtime
    assert len(gidpolicy.__all__) == len(set(gidpolicy.__all__))
    assert set(fleet.__all__) == {n for n in dir(fleet._fleet) if not n.startswith("_")}
    assert (PACKAGE / "py.typed").is_file()
    assert gidpolicy.__version__.count(".") == 2
