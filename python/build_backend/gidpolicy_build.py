"""The build backend of `pip install ./python` (PEP 517, pyproject.toml's `backend-path`).

It builds the extension gidpolicy._gidpolicy with the tree's own CMake build (the same flags,
sources and checks as every other build, python/CMakeLists.txt) and packs the wheel itself, with
the standard library only: pip needs no setuptools, no `wheel` and no index, so a plain
`pip install ./python` works offline with any Python 3.9+ that has pip, in or out of a virtual
environment, with or without build isolation.

What it builds: the two libraries the module links (gidpolicy::core and gidpolicy::host) and the
bindings, as a unity build in Release at -O2 (what Debian builds its packages with); no tests,
tools, fakes, examples, benchmarks, fuzzers, C API or install rules.

Where: a temporary directory outside the source tree, removed afterwards; nothing is written
into the checkout. To keep the build tree (a second install then recompiles only what changed):
  pip install -v --config-settings build-dir=DIR ./python     (or GIDPOLICY_BUILD_DIR=DIR)

Progress: the configure and build steps print what they do and ninja's [n/N] lines; pip shows
them with -v (without it pip shows a spinner that turns with each line, and the whole log when
the build fails).

Before compiling it checks what the build needs and names every missing piece with the Debian
package that provides it.

Environment (config settings of the same name without the prefix, lower case, win):
  GIDPOLICY_BUILD_DIR    keep the CMake build tree in this directory
  GIDPOLICY_PREFIX       an installed gidpolicy (its prefix, holding lib/cmake/gidpolicy): only the
                         bindings are compiled, against that install (python/CMakeLists.txt alone)
  GIDPOLICY_BUILD_TYPE   CMake build type (default Release)
  GIDPOLICY_CMAKE_ARGS   more arguments for the CMake configure step (shell words)
  CMAKE_BUILD_PARALLEL_LEVEL (default: the number of CPUs), CMAKE_CXX_COMPILER_LAUNCHER, CXX ...
                         are read by CMake itself.
"""

import base64
import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # python/
ROOT = HERE.parent
PACKAGE_FILES = ("__init__.py", "_gidpolicy.pyi", "fleet.py", "fleet.pyi", "probe.py", "py.typed")
CMAKE_MINIMUM = (3, 25)


class Missing(SystemExit):
    """What the build needs and does not have: printed as it is, without a traceback."""

    def __init__(self, items):
        lines = ["gidpolicy: cannot build the Python module; missing:"]
        lines += [f"  - {item}" for item in items]
        lines.append("Debian 12 has everything: apt install cmake ninja-build g++ libboost-dev nlohmann-json3-dev "
                     "pybind11-dev python3-dev")
        super().__init__("\n".join(lines))


def _say(message):
    print(f"gidpolicy: {message}", flush=True)


# ------------------------------------------------------------------------------------------------
# Metadata, from pyproject.toml's [project] table.


def _project():
    text = (HERE / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python 3.11+

        return tomllib.loads(text)["project"]
    except ImportError:
        pass
    # Python 3.9 and 3.10: the [project] table's `key = "string"` and `key = ["strings"]` lines.
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if table is None:
        raise SystemExit("gidpolicy: python/pyproject.toml has no [project] table")
    project = {}
    for key, value in re.findall(r"^([A-Za-z-]+)\s*=\s*(.+?)\s*$", table.group(1), re.M):
        if value.startswith("["):
            project[key] = re.findall(r'"([^"]*)"', value)
        else:
            project[key] = value.strip('"')
    return project


def _metadata():
    project = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    readme = project.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        body = (HERE / readme).read_text(encoding="utf-8")
    return project["name"], project["version"], "\n".join(lines) + "\n\n" + body


def _dist_info_name():
    name, version, _ = _metadata()
    return f"{name}-{version}.dist-info"


def _wheel_tag():
    """The interpreter's own tag (cp311-cp311-linux_x86_64): the extension is built for it."""
    version = f"{sys.version_info[0]}{sys.version_info[1]}"
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    if sys.implementation.name == "cpython":
        return f"cp{version}", f"cp{version}{sys.abiflags}", platform
    soabi = sysconfig.get_config_var("SOABI") or f"{sys.implementation.name}{version}"
    impl = {"pypy": "pp"}.get(sys.implementation.name, sys.implementation.name)
    return f"{impl}{version}", re.sub(r"[-.]", "_", soabi), platform


# ------------------------------------------------------------------------------------------------
# What the build needs.


def _setting(config_settings, name):
    value = (config_settings or {}).get(name.replace("_", "-"))
    if value is None:
        value = os.environ.get("GIDPOLICY_" + name.upper().replace("-", "_"), "")
    if isinstance(value, list):  # pip passes a repeated -C key=value as a list
        value = value[-1]
    return value


def _check_tree():
    if not (ROOT / "CMakeLists.txt").is_file() or not (ROOT / "include" / "gidpolicy").is_dir():
        raise SystemExit(f"gidpolicy: {ROOT} is not the gidpolicy source tree: python/ builds only inside it "
                         "(pip older than 21.3 copies python/ alone to a temporary directory; use pip 21.3 or newer)")


def _preflight():
    """Every missing tool or header at once, each with the Debian package that provides it."""
    missing = []
    cmake = shutil.which("cmake")
    if cmake is None:
        missing.append(f"cmake {CMAKE_MINIMUM[0]}.{CMAKE_MINIMUM[1]} or newer (Debian: cmake)")
    else:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True, check=False).stdout
        m = re.search(r"version (\d+)\.(\d+)", out)
        if m is None or (int(m.group(1)), int(m.group(2))) < CMAKE_MINIMUM:
            found = m.group(0) if m else "an unknown version"
            missing.append(f"cmake {CMAKE_MINIMUM[0]}.{CMAKE_MINIMUM[1]} or newer: {cmake} is {found} (Debian 12: cmake)")
    compilers = [os.environ["CXX"]] if os.environ.get("CXX") else ["c++", "g++", "clang++"]
    if not any(shutil.which(shlex.split(c)[0]) for c in compilers if c.strip()):
        missing.append(f"a C++20 compiler ({' or '.join(compilers)} on PATH; Debian: g++, GCC 12)")
    include = sysconfig.get_paths().get("include") or ""
    if not (Path(include) / "Python.h").is_file():
        missing.append(f"the headers of {sys.executable} (Python {sys.version.split()[0]}): no {include}/Python.h "
                       "(Debian's python3: python3-dev)")
    if missing:
        raise Missing(missing)
    return cmake


# CMake's words for a missing package, and the Debian package that provides it (matched on the
# configure output with its line breaks folded, as CMake wraps its messages).
_CMAKE_MISSING = [
    (re.compile(r'Could NOT find Boost|(provided by|for package) "Boost"'),
     "the Boost headers, 1.74 or newer (Debian: libboost-dev)"),
    (re.compile(r'(provided by|for package) "nlohmann_json"'), "nlohmann/json 3.10 or newer (Debian: nlohmann-json3-dev)"),
    (re.compile(r"pybind11 was not found"), "pybind11 2.6 or newer, its CMake package (Debian: pybind11-dev)"),
    (re.compile(r"Python 3 and its headers were not found"),
     f"the headers of {sys.executable} (Debian's python3: python3-dev)"),
    (re.compile(r"No CMAKE_CXX_COMPILER could be found|CMAKE_CXX_COMPILER: .* is not a full path"),
     "a C++20 compiler (Debian: g++)"),
    (re.compile(r'(provided by|for package) "gidpolicy"'), "the installed gidpolicy named by GIDPOLICY_PREFIX"),
]


def missing_from_cmake(log_lines):
    """The missing pieces CMake's configure output names, each with its Debian package."""
    text = re.sub(r"\s+", " ", " ".join(log_lines))
    return [item for pattern, item in _CMAKE_MISSING if pattern.search(text)]


def _run(command, what, log_lines=None):
    """Run command, its output streamed line by line (pip shows it with -v); keep it for errors."""
    started = time.monotonic()
    _say(f"{what}: {' '.join(shlex.quote(str(c)) for c in command)}")
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if log_lines is not None:
                log_lines.append(line.rstrip("\n"))
        rc = proc.wait()
    _say(f"{what}: {'done' if rc == 0 else f'failed (exit {rc})'} in {time.monotonic() - started:.0f} s")
    return rc


# ------------------------------------------------------------------------------------------------
# The build.


def _build_module(build, config_settings):
    """Configure and build in `build`; return the path of the built extension."""
    _check_tree()
    cmake = _preflight()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    common = [
        "-DCMAKE_BUILD_TYPE=" + (_setting(config_settings, "build_type") or "Release"),
        # -O2 as Debian builds its packages; CMake's Release default is -O3, a third more compile
        # time for a module whose calls are dominated by the interpreter's overhead.
        "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG",
        # pybind11_add_module turns on link-time optimisation in Release builds, which recompiles
        # the bindings at link time on one core; off, the module is built once.
        "-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF",
        "-DPython3_EXECUTABLE=" + sys.executable,
        "-DGIDPOLICY_PYTHON=ON",
        "-DGIDPOLICY_UNITY_BUILD=ON",
        "-DGIDPOLICY_BUILD_TESTS=OFF",
        "-DGIDPOLICY_INSTALL=OFF",
    ]
    prefix = _setting(config_settings, "prefix")
    if prefix:
        source = HERE  # the bindings alone, against an installed library
        module_dir = build / "gidpolicy"
        common.append("-DCMAKE_PREFIX_PATH=" + str(Path(prefix).resolve()))
    else:
        source = ROOT
        module_dir = build / "python" / "gidpolicy"
        common += [
            "-DGIDPOLICY_TEST_EXAMPLES=OFF",
            "-DGIDPOLICY_BUILD_EXAMPLES=OFF",
            "-DGIDPOLICY_BUILD_TOOLS=OFF",
            "-DGIDPOLICY_BUILD_FAKES=OFF",
            "-DGIDPOLICY_BUILD_BENCH=OFF",
            "-DGIDPOLICY_BUILD_FUZZ=OFF",
        ]
    extra = shlex.split(_setting(config_settings, "cmake_args"))
    log = []
    configure = [cmake, "-S", str(source), "-B", str(build), *generator, *common, *extra]
    if _run(configure, "configure", log) != 0:
        found = missing_from_cmake(log)
        if found:
            raise Missing(found)
        errors = [line for line in log if "Error" in line or "error:" in line][:10]
        raise SystemExit("gidpolicy: CMake's configure step failed (its output is above):\n  " + "\n  ".join(errors))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    if _run([cmake, "--build", str(build), "--target", "gidpolicy_python", "--parallel", jobs],
            f"build (library and bindings, {jobs} jobs)") != 0:
        raise SystemExit("gidpolicy: the build failed; the compiler's messages are above (pip install -v shows them)")
    built = [b for b in glob.glob(str(module_dir / "_gidpolicy*")) if not b.endswith(".pyi")]
    if len(built) != 1:
        raise SystemExit(f"gidpolicy: expected one built _gidpolicy module in {module_dir}, found {built}")
    return Path(built[0])


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{arcname},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, extension):
    name, version, metadata = _metadata()
    python_tag, abi_tag, platform_tag = _wheel_tag()
    tag = f"{python_tag}-{abi_tag}-{platform_tag}"
    wheel_name = f"{name}-{version}-{tag}.whl"
    dist_info = f"{name}-{version}.dist-info"
    files = [(f"gidpolicy/{f}", (HERE / "gidpolicy" / f).read_bytes()) for f in PACKAGE_FILES]
    files.append((f"gidpolicy/{extension.name}", extension.read_bytes()))
    files.append((f"{dist_info}/METADATA", metadata.encode("utf-8")))
    wheel = f"Wheel-Version: 1.0\nGenerator: gidpolicy_build\nRoot-Is-Purelib: false\nTag: {tag}\n"
    files.append((f"{dist_info}/WHEEL", wheel.encode("utf-8")))
    record = [_record_line(arcname, data) for arcname, data in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    path = Path(wheel_directory) / wheel_name
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return wheel_name


# ------------------------------------------------------------------------------------------------
# PEP 517 hooks.


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _, _, metadata = _metadata()
    dist_info = Path(metadata_directory) / _dist_info_name()
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(metadata, encoding="utf-8")
    return dist_info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    kept = _setting(config_settings, "build_dir")
    if kept:
        build = Path(kept).expanduser().resolve()
        build.mkdir(parents=True, exist_ok=True)
        _say(f"building in {build} (kept)")
        return _write_wheel(wheel_directory, _build_module(build, config_settings))
    with tempfile.TemporaryDirectory(prefix="gidpolicy-build-") as tmp:
        _say(f"building in {tmp} (removed afterwards; --config-settings build-dir=DIR keeps it)")
        return _write_wheel(wheel_directory, _build_module(Path(tmp), config_settings))


def build_sdist(sdist_directory, config_settings=None):
    raise SystemExit("gidpolicy: python/ has no source distribution of its own: the module is built from the whole "
                     "gidpolicy tree (pip install ./python builds a wheel from it)")
