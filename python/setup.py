"""Build the extension gidpolicy._gidpolicy with the tree's own CMake build (pyproject.toml).

setuptools drives CMake rather than compiling the library's sources itself so there is one build
description: the same flags, the same sources, the same checks for pybind11 and Python's headers
(python/CMakeLists.txt). Only the library and the module are built; tests, tools, fakes and
examples are off.

Environment:
  GIDPOLICY_PREFIX       an installed gidpolicy (its prefix, holding lib/cmake/gidpolicy): only the
                         bindings are compiled, against that install (python/CMakeLists.txt alone)
  GIDPOLICY_BUILD_TYPE   CMake build type (default Release)
  GIDPOLICY_CMAKE_ARGS   more arguments for the CMake configure step (shell words)
  CMAKE_BUILD_PARALLEL_LEVEL, CMAKE_CXX_COMPILER_LAUNCHER ... are read by CMake itself.

Everything the build writes goes under <tree>/build/pip (build/ is the tree's ignored build
directory), never next to the sources.
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = ROOT / "build" / "pip"
BUILD.mkdir(parents=True, exist_ok=True)  # egg_info's egg_base must exist


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if not (ROOT / "CMakeLists.txt").is_file() or not (ROOT / "include" / "gidpolicy").is_dir():
            raise RuntimeError(f"gidpolicy: {ROOT} is not the gidpolicy source tree (python/ must stay inside it)")
        cmake = shutil.which("cmake")
        if cmake is None:
            raise RuntimeError("gidpolicy: cmake was not found (Debian: apt install cmake)")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        common = [
            "-DCMAKE_BUILD_TYPE=" + os.environ.get("GIDPOLICY_BUILD_TYPE", "Release"),
            "-DPython3_EXECUTABLE=" + sys.executable,
            "-DGIDPOLICY_PYTHON=ON",
            "-DGIDPOLICY_UNITY_BUILD=ON",
        ]
        prefix = os.environ.get("GIDPOLICY_PREFIX", "")
        if prefix:
            # The bindings alone, against an installed library.
            build = BUILD / "cmake-bindings"
            source = HERE
            module_dir = build / "gidpolicy"
            common.append("-DCMAKE_PREFIX_PATH=" + str(Path(prefix).resolve()))
        else:
            build = BUILD / "cmake"
            source = ROOT
            module_dir = build / "python" / "gidpolicy"
            common += [
                "-DGIDPOLICY_BUILD_TESTS=OFF",
                "-DGIDPOLICY_TEST_EXAMPLES=OFF",
                "-DGIDPOLICY_BUILD_EXAMPLES=OFF",
                "-DGIDPOLICY_BUILD_TOOLS=OFF",
                "-DGIDPOLICY_BUILD_FAKES=OFF",
                "-DGIDPOLICY_INSTALL=OFF",
            ]
        configure = [cmake, "-S", str(source), "-B", str(build), *generator, *common,
                     *shlex.split(os.environ.get("GIDPOLICY_CMAKE_ARGS", ""))]
        subprocess.run(configure, check=True)
        subprocess.run([cmake, "--build", str(build), "--target", "gidpolicy_python"], check=True)
        built = glob.glob(str(module_dir / "_gidpolicy*"))
        built = [b for b in built if not b.endswith(".pyi")]
        if len(built) != 1:
            raise RuntimeError(f"gidpolicy: expected one built _gidpolicy module in {module_dir}, found {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)


setup(
    ext_modules=[CMakeExtension("gidpolicy._gidpolicy")],
    cmdclass={"build_ext": CMakeBuild},
    options={
        "build": {"build_base": str(BUILD / "setuptools")},
        "egg_info": {"egg_base": str(BUILD)},
    },
)
