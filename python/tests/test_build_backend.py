"""pip's build backend (python/build_backend/gidpolicy_build.py): what it says when the build
cannot start, the metadata it gives pip, and the wheel's tag. The build itself is tested by
python.pip_install and python.pip_install_source (pip_install_test.sh)."""

import importlib.util
import os
import re
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parent.parent
ROOT = PYTHON_DIR.parent


@pytest.fixture
def backend():
    spec = importlib.util.spec_from_file_location("gidpolicy_build_under_test",
                                                  PYTHON_DIR / "build_backend" / "gidpolicy_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_requires_nothing(backend):
    assert backend.get_requires_for_build_wheel() == []
    assert backend.get_requires_for_build_wheel({"build-dir": "/x"}) == []


def test_missing_tools_are_named_with_their_debian_packages_at_once(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no cmake, no compiler
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(SystemExit) as e:
        backend.build_wheel(str(tmp_path), {"build-dir": str(tmp_path / "b")})
    message = str(e.value.code)
    assert message.startswith("gidpolicy: cannot build the Python module; missing:")
    assert "cmake 3.25 or newer (Debian: cmake)" in message
    assert "a C++20 compiler" in message and "Debian: g++" in message
    assert "Traceback" not in message
    assert not list(tmp_path.glob("*.whl"))


def test_a_compiler_named_by_cxx_is_the_one_looked_for(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CXX", "clang++-99")
    with pytest.raises(SystemExit) as e:
        backend._preflight()
    assert "a C++20 compiler (clang++-99 on PATH; Debian: g++, GCC 12)" in str(e.value.code)


def test_missing_python_headers_name_python3_dev(backend, tmp_path, monkeypatch):
    real = sysconfig.get_paths

    def no_headers(*args, **kwargs):
        return dict(real(*args, **kwargs), include=str(tmp_path / "include"))

    monkeypatch.setattr(backend.sysconfig, "get_paths", no_headers)
    with pytest.raises(SystemExit) as e:
        backend._preflight()
    message = str(e.value.code)
    assert f"the headers of {sys.executable}" in message and "python3-dev" in message
    assert "cmake" not in message.split("missing:")[1].split("Debian 12 has")[0]  # cmake is installed


def test_cmake_messages_map_to_debian_packages(backend):
    # CMake's own wording, wrapped as it wraps it.
    log = ['CMake Error at CMakeLists.txt:47 (find_package):',
           '  By not providing "Findnlohmann_json.cmake" in CMAKE_MODULE_PATH this',
           '  project has asked CMake to find a package configuration file provided by',
           '  "nlohmann_json", but CMake did not find one.']
    assert backend.missing_from_cmake(log) == ["nlohmann/json 3.10 or newer (Debian: nlohmann-json3-dev)"]
    log = ["CMake Error at python/CMakeLists.txt:48 (message):",
           "  GIDPOLICY_PYTHON is ON but pybind11 was not found (Debian: pybind11-dev)"]
    assert backend.missing_from_cmake(log) == ["pybind11 2.6 or newer, its CMake package (Debian: pybind11-dev)"]
    assert backend.missing_from_cmake(["-- Configuring incomplete, errors occurred!"]) == []


def test_a_missing_package_stops_configure_with_its_name(backend, tmp_path, monkeypatch):
    """The real configure, with nlohmann/json's CMake package out of CMake's sight."""
    hide = "-DCMAKE_IGNORE_PATH=/usr/share/cmake/nlohmann_json;/usr/lib/cmake/nlohmann_json"
    if not Path("/usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake").is_file():
        pytest.skip("nlohmann/json's CMake package is not where Debian puts it")
    with pytest.raises(SystemExit) as e:
        backend.build_wheel(str(tmp_path), {"build-dir": str(tmp_path / "b"), "cmake-args": hide})
    message = str(e.value.code)
    assert "missing:" in message and "nlohmann-json3-dev" in message, message
    assert not list(tmp_path.glob("*.whl"))


def test_metadata_is_pyprojects(backend, tmp_path):
    name = backend.prepare_metadata_for_build_wheel(str(tmp_path))
    text = (tmp_path / name / "METADATA").read_text()
    version = re.search(r'^version = "([^"]+)"', (PYTHON_DIR / "pyproject.toml").read_text(), re.M).group(1)
    assert name == f"gidpolicy-{version}.dist-info"
    assert f"\nVersion: {version}\n" in text and text.startswith("Metadata-Version: 2.1\nName: gidpolicy\n")
    assert "Requires-Python: >=3.9" in text
    assert "# gidpolicy for Python" in text  # the README is the long description


def test_metadata_without_tomllib(backend, monkeypatch):
    """Python 3.9 and 3.10 have no tomllib: the fallback reads the same [project] table."""
    with_tomllib = backend._project()
    monkeypatch.setitem(sys.modules, "tomllib", None)
    assert backend._project() == with_tomllib


def test_wheel_tag_is_this_interpreters(backend):
    python_tag, abi_tag, platform_tag = backend._wheel_tag()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if sys.implementation.name == "cpython":
        assert python_tag == f"cp{sys.version_info[0]}{sys.version_info[1]}"
        assert f"-{sys.version_info[0]}{sys.version_info[1]}" in suffix
    assert platform_tag == sysconfig.get_platform().replace("-", "_").replace(".", "_")


def test_wheel_holds_the_package_and_a_record_of_it(backend, tmp_path):
    fake = tmp_path / ("_gidpolicy" + sysconfig.get_config_var("EXT_SUFFIX"))
    fake.write_bytes(b"\x7fELF not really")
    wheel = tmp_path / backend._write_wheel(str(tmp_path), fake)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for f in ("__init__.py", "_gidpolicy.pyi", "fleet.py", "fleet.pyi", "probe.py", "py.typed", fake.name):
            assert f"gidpolicy/{f}" in names
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL"))
        record = zf.read(f"{dist_info}/RECORD").decode().splitlines()
        assert {line.split(",")[0] for line in record} == names
        assert "Root-Is-Purelib: false" in zf.read(f"{dist_info}/WHEEL").decode()


def test_sdist_is_refused_saying_why(backend, tmp_path):
    with pytest.raises(SystemExit) as e:
        backend.build_sdist(str(tmp_path))
    assert "whole gidpolicy tree" in str(e.value.code)


def test_nothing_written_next_to_the_sources(backend, tmp_path):
    before = sorted(p.relative_to(PYTHON_DIR) for p in PYTHON_DIR.rglob("*") if "__pycache__" not in p.parts)
    backend.prepare_metadata_for_build_wheel(str(tmp_path))
    after = sorted(p.relative_to(PYTHON_DIR) for p in PYTHON_DIR.rglob("*") if "__pycache__" not in p.parts)
    assert before == after
