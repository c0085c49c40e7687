#!/usr/bin/env python3
"""scripts/check-umbrellas on a small tree: a header no umbrella reaches, a reason with no words,
a stale reason and a front door that lost an umbrella each fail naming the file; the tree where
every header is reached or says why not passes.

  check_umbrellas_test.py PATH/TO/check-umbrellas
"""
import os
import shutil
import subprocess
import sys
import tempfile

checker = sys.argv[1]
failures = []


def run(files):
    root = tempfile.mkdtemp(prefix="check-umbrellas-")
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
    "include/gidpolicy/gidpolicy.hpp": "#include <gidpolicy/core.hpp>\n#include <gidpolicy/live.hpp>\n"
                                       "#include <gidpolicy/fleet.hpp>\n",
    "include/gidpolicy/core.hpp": "#include <gidpolicy/gid.hpp>\n",
    "include/gidpolicy/live.hpp": "#include <gidpolicy/core.hpp>\n#include <gidpolicy/verbs/snapshot.hpp>\n",
    "include/gidpolicy/gid.hpp": "",
    "include/gidpolicy/fleet.hpp": "#include <gidpolicy/formats/json.hpp>\n",  # reached through fleet.hpp
    "include/gidpolicy/formats/json.hpp": "",
    "include/gidpolicy/verbs/snapshot.hpp": "",
    "include/gidpolicy/gidpolicy.h": "/* C.\n * Not in <gidpolicy/gidpolicy.hpp>: the C API, linked as gidpolicy::c. */\n",
}
code, out = run(base)
if code != 0:
    failures.append(f"a tree where every header is reached or says why was refused:\n{out}")

code, out = run({**base, "include/gidpolicy/stray.hpp": "// nobody includes me\n"})
if code == 0 or "include/gidpolicy/stray.hpp: in no umbrella" not in out:
    failures.append(f"a header no umbrella reaches passed:\n{out}")

code, out = run({**base, "include/gidpolicy/stray.hpp": "// one\n// Not in <gidpolicy/gidpolicy.hpp>:\n"})
if code == 0 or "include/gidpolicy/stray.hpp:2: 'Not in <gidpolicy/gidpolicy.hpp>:' gives no reason" not in out:
    failures.append(f"a reason with no words passed:\n{out}")

code, out = run({**base, "include/gidpolicy/gid.hpp": "// Not in <gidpolicy/gidpolicy.hpp>: it is, though, by now\n"})
if code == 0 or "include/gidpolicy/gid.hpp:1: says it is not in <gidpolicy/gidpolicy.hpp>, but" not in out:
    failures.append(f"a stale reason passed:\n{out}")

code, out = run({**base, "include/gidpolicy/gidpolicy.hpp": "#include <gidpolicy/core.hpp>\n#include <gidpolicy/fleet.hpp>\n"})
if code == 0 or "include/gidpolicy/gidpolicy.hpp: does not reach gidpolicy/live.hpp" not in out:
    failures.append(f"a front door without live.hpp passed:\n{out}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
