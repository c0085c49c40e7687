#!/usr/bin/env python3
"""scripts/check-layers on small temporary trees: an upward include fails with file:line and the
rule broken, an unplaced file fails, and the same tree with the include pointing down passes.

  check_layers_test.py PATH/TO/check-layers PATH/TO/layers.txt
"""
import os
import shutil
import subprocess
import sys
import tempfile

checker, layer_map = sys.argv[1], sys.argv[2]
failures = []


def tree(files):
    root = tempfile.mkdtemp(prefix="check-layers-")
    os.makedirs(os.path.join(root, "scripts"))
    shutil.copy(layer_map, os.path.join(root, "scripts", "layers.txt"))
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def run(root):
    p = subprocess.run([sys.executable, checker, "--root", root], capture_output=True, text=True, timeout=60)
    shutil.rmtree(root)
    return p.returncode, p.stdout + p.stderr


def expect(name, ok, out):
    if not ok:
        failures.append(f"{name}:\n{out}")


# The real map's lowest layer (gid.hpp) including the RTR builder: an upward include.
code, out = run(tree({
    "include/gidpolicy/gid.hpp": "#pragma once\n#include <gidpolicy/rtr.hpp>\n",
    "include/gidpolicy/rtr.hpp": "#pragma once\n#include <gidpolicy/gid.hpp>\n",
}))
expect("upward include fails", code != 0, out)
expect("upward include names file:line and both layers",
       "include/gidpolicy/gid.hpp:2: layer 'vocabulary' includes include/gidpolicy/rtr.hpp of the higher layer 'rtr'"
       in out, out)

# A quoted include of a private header of a higher layer (src/rtr.cpp's old policies/common.hpp
# pattern, reversed): relative includes are resolved too.
code, out = run(tree({
    "src/describe.cpp": '#include "policies/common.hpp"\n',
    "src/policies/common.hpp": "#pragma once\n",
}))
expect("quoted upward include fails", code != 0 and "src/describe.cpp:1: layer 'vocabulary' includes "
       "src/policies/common.hpp of the higher layer 'selection'" in out, out)

# A file the map does not place.
code, out = run(tree({"src/stray.cpp": "#include <gidpolicy/gid.hpp>\n", "include/gidpolicy/gid.hpp": "#pragma once\n"}))
expect("unplaced file fails", code != 0 and "src/stray.cpp:1: not in the layer map" in out, out)

# The same shape pointing down passes: the failures above are for the include, not the tree.
code, out = run(tree({
    "include/gidpolicy/gid.hpp": "#pragma once\n#include <vector>\n",
    "include/gidpolicy/rtr.hpp": "#pragma once\n#include <gidpolicy/gid.hpp>\n#include <infiniband/verbs.h>\n",
    "tools/gidpolicy/main.cpp": '#include <gidpolicy/rtr.hpp>\n#include "main.hpp"\n',
    "tools/gidpolicy/main.hpp": "#pragma once\n",
}))
expect("downward includes pass", code == 0, out)

# An installed header reaching a private one (an `only` line: include/* reaches include/* only),
# through another installed header: reported where the chain leaves include/, with the rule.
code, out = run(tree({
    "include/gidpolicy/gid.hpp": '#pragma once\n#include "../../src/describe.hpp"\n',
    "include/gidpolicy/gid_table.hpp": "#pragma once\n#include <gidpolicy/gid.hpp>\n",
    "src/describe.hpp": "#pragma once\n",
}))
expect("installed header reaching src/ fails", code != 0 and "include/gidpolicy/gid.hpp:2: reaches src/describe.hpp, "
       "which is outside what it may reach (only, scripts/layers.txt:" in out
       and "include/gidpolicy/gid_table.hpp:" not in out, out)

# A bad ban/never/only line in the map is refused with the map's file:line, not ignored.
for bad, why in (("ban nosuch -> stdio.h : x", "'nosuch' is neither a layer declared above nor a file pattern"),
                 ("never src/* include/*", "'never WHO... -> WHAT... : REASON' expected"),
                 ("ban vocabulary -> @nosuch : x", "'@nosuch': no 'set nosuch' above"),
                 ("only include/* include/*", "'only WHO... -> WHAT... : REASON' expected")):
    root = tree({"src/x.cpp": "\n"})
    with open(os.path.join(root, "scripts", "layers.txt"), "a", encoding="utf-8") as f:
        f.write(bad + "\n")
    code, out = run(root)
    expect(f"bad map line {bad!r} refused", code != 0 and "layers.txt:" in out and why in out, out)

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
