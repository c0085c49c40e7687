#!/usr/bin/env python3
"""scripts/check-version on a small tree: when every carrier says the version it passes; a
carrier that says another version (pyproject, the Debian changelog's top entry, CHANGELOG.md's
newest release or its date, a docs find_package, `gidpolicy --version`, a .pc's Version or
Requires) or a Debian entry not in dch's format fails naming the file.

  check_version_test.py PATH/TO/check-version
"""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

checker = sys.argv[1]
failures = []

DEB = """gidpolicy (1.2.3) unstable; urgency=medium

  * Release 1.2.3, with a continued
    line.

 -- gidpolicy maintainers <maintainers@example.org>  Sun, 06 Dec 2026 12:00:00 +0000

gidpolicy (1.2.2) unstable; urgency=medium

  * Older.

 -- gidpolicy maintainers <maintainers@example.org>  Tue, 01 Dec 2026 23:45:00 +0000
"""
BASE = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.25)\nproject(gidpolicy VERSION 1.2.3 LANGUAGES CXX)\n",
    "debian/changelog": DEB,
    "python/pyproject.toml": '[project]\nname = "gidpolicy"\nversion = "1.2.3"\n',
    "CHANGELOG.md": "# Changelog\n\n## [Unreleased]\n\n## [1.2.3] - 2026-12-06\n\n### Removed\n",
    "README.md": "find_package(gidpolicy 1.2 REQUIRED)\napt install ../*gidpolicy*_1.2.3_*.deb\n",
    "build/gidpolicy": "#!/bin/sh\necho 'gidpolicy 1.2.3'\n",
    "build/pkgconfig/gidpolicy.pc": "Name: gidpolicy\nVersion: 1.2.3\nRequires: gidpolicy-host = 1.2.3\n",
    "build/pkgconfig/gidpolicy-host.pc": "Name: gidpolicy-host\nVersion: 1.2.3\nRequires: gidpolicy-core = 1.2.3, libibverbs\n",
}


def run(changes):
    root = tempfile.mkdtemp(prefix="check-version-")
    try:
        for rel, text in {**BASE, **changes}.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        cli = os.path.join(root, "build", "gidpolicy")
        os.chmod(cli, os.stat(cli).st_mode | stat.S_IXUSR)
        p = subprocess.run([sys.executable, checker, "--root", root, "--cli", cli,
                            "--pc-dir", os.path.join(root, "build", "pkgconfig")],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, (p.stdout + p.stderr).replace(root + "/", "")
    finally:
        shutil.rmtree(root)


code, out = run({})
if code != 0 or "gidpolicy 1.2.3: every carrier agrees" not in out:
    failures.append(f"a tree whose carriers agree was refused:\n{out}")

cases = [
    ("pyproject", {"python/pyproject.toml": '[project]\nversion = "1.2.2"\n'},
     "python/pyproject.toml:2: version 1.2.2, CMakeLists.txt 1.2.3"),
    ("debian top entry", {"debian/changelog": DEB.replace("(1.2.3)", "(1.2.4)", 1)},
     "debian/changelog:1: top entry 1.2.4, CMakeLists.txt 1.2.3"),
    ("debian trailer", {"debian/changelog": DEB.replace("  Sun, 06 Dec", " Sun, 06 Dec", 1)},
     "debian/changelog:6: not a dch trailer"),
    ("debian item", {"debian/changelog": DEB.replace("  * Release", "* Release", 1)},
     "debian/changelog:3: an entry's line is '  * ITEM'"),
    ("changelog release", {"CHANGELOG.md": "## [Unreleased]\n\n## [1.2.2] - 2026-12-06\n"},
     "CHANGELOG.md:3: newest release 1.2.2, CMakeLists.txt 1.2.3"),
    ("changelog date", {"CHANGELOG.md": "## [1.2.3] - 2026-12-05\n"},
     "CHANGELOG.md:1: 1.2.3 dated 2026-12-05, debian/changelog's entry 2026-12-06"),
    ("docs find_package", {"README.md": "x\nfind_package(gidpolicy 1.1 REQUIRED)\n"},
     "README.md:2: find_package(gidpolicy 1.1, the version is 1.2.3"),
    ("docs deb", {"README.md": "apt install ../*gidpolicy*_1.2.2_*.deb\n"},
     "README.md:1: a package of 1.2.2, the version is 1.2.3"),
    ("--version", {"build/gidpolicy": "#!/bin/sh\necho 'gidpolicy 1.2.2'\n"},
     "--version: 'gidpolicy 1.2.2' (exit 0), CMakeLists.txt 1.2.3"),
    (".pc Version", {"build/pkgconfig/gidpolicy.pc": "Version: 1.2.2\nRequires: gidpolicy-host = 1.2.3\n"},
     "gidpolicy.pc: Version 1.2.2, CMakeLists.txt 1.2.3"),
    (".pc Requires", {"build/pkgconfig/gidpolicy-host.pc": "Version: 1.2.3\nRequires: gidpolicy-core = 1.2.2, libibverbs\n"},
     "gidpolicy-host.pc:2: requires gidpolicy-core = 1.2.2, the version is 1.2.3"),
]
for what, change, expected in cases:
    code, out = run(change)
    if code == 0 or expected not in out:
        failures.append(f"{what}: expected a failure saying {expected!r}, got exit {code}:\n{out}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
