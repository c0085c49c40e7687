#!/usr/bin/env python3
"""scripts/check-test-names on a small tree: a unit test named after no header, and one that does
not include the header it is named after, fail with the file; well-named ones pass.

  check_test_names_test.py PATH/TO/check-test-names
"""
import os
import shutil
import subprocess
import sys
import tempfile

checker = sys.argv[1]
failures = []


def run(files):
    root = tempfile.mkdtemp(prefix="check-test-names-")
    try:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, checker, "--root", root], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr
    finally:
        shutil.rmtree(root)


base = {
    "include/gidpolicy/gid.hpp": "",
    "include/gidpolicy/formats/sysfs.hpp": "",
    "include/gidpolicy/formats/json.hpp": "",
    "include/gidpolicy/policies/ds4_scan.hpp": "",
    "tests/unit/gid_test.cpp": "#include <gidpolicy/gid.hpp>\n",
    "tests/unit/formats_sysfs_bounds_test.cpp": "#include <gidpolicy/formats/sysfs.hpp>\n",
    "tests/unit/policies_ds4_test.cpp": "#include <gidpolicy/policies/ds4_scan.hpp>\n",
    "tests/unit/formats_everything_test.cpp": "#include <gidpolicy/formats/json.hpp>\n",
}
code, out = run(base)
if code != 0:
    failures.append(f"well-named files refused:\n{out}")
code, out = run({**base, "tests/unit/grab_bag_test.cpp": "#include <gidpolicy/gid.hpp>\n"})
if code == 0 or "tests/unit/grab_bag_test.cpp:1: names no header" not in out:
    failures.append(f"a file named after no header passed:\n{out}")
code, out = run({**base, "tests/unit/formats_sysfs_bounds_test.cpp": "#include <gidpolicy/formats/json.hpp>\n"})
if code == 0 or ("tests/unit/formats_sysfs_bounds_test.cpp:1: is named after gidpolicy/formats/sysfs.hpp but "
                 "includes none of them") not in out:
    failures.append(f"a file not including its header passed:\n{out}")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
