#!/usr/bin/env python3
"""What docs/concepts.md ("Layers") claims the layers buy, planted as violations in a copy of the
real tree: each must make scripts/check-layers (and so scripts/lint --quick) fail, naming the
file and the rule of scripts/layers.txt it breaks; the unplanted copy passes.

  check_layers_claims_test.py SOURCE_ROOT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

source = os.path.abspath(sys.argv[1])
checker = os.path.join(source, "scripts", "check-layers")
failures = []


def copy_tree():
    root = tempfile.mkdtemp(prefix="check-layers-claims-")
    for top in ("include", "src", "tools", "fakes", "python"):
        shutil.copytree(os.path.join(source, top), os.path.join(root, top),
                        ignore=shutil.ignore_patterns("*.md", "*.txt", "*.sh", "*.json", "tables"))
    os.makedirs(os.path.join(root, "scripts"))
    shutil.copy(os.path.join(source, "scripts", "layers.txt"), os.path.join(root, "scripts", "layers.txt"))
    return root


def plant(root, rel, line):
    """Adds `line` after the file's first #include (inside the header guard, as an edit would)."""
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    at = next(i for i, l in enumerate(lines) if l.lstrip().startswith("#include"))
    lines.insert(at + 1, line + "\n")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)
    return at + 2  # the planted line's number


def run(root):
    p = subprocess.run([sys.executable, checker, "--root", root], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def layers_line(pattern):
    """The line number of the layers.txt rule matching `pattern` (the rule a failure must cite)."""
    with open(os.path.join(source, "scripts", "layers.txt"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if re.match(pattern, line):
                return n
    sys.exit(f"no line of scripts/layers.txt matches {pattern!r}")


root = copy_tree()
try:
    code, out = run(root)
    if code != 0:
        failures.append(f"the unplanted copy fails:\n{out}")

    below = layers_line(r"ban\s+vocabulary selection plan model ->")
    private = layers_line(r"ban\s+include/gidpolicy/\* -> @json")
    builder = layers_line(r"never\s+include/gidpolicy/rtr.hpp")
    seam = layers_line(r"never\s+include/gidpolicy/verbs/verbs_api.hpp")
    fakes = layers_line(r"never\s+fakes/\* -> tools/\*")
    fakes_core = layers_line(r"never\s+fakes/include/\* fakes/src/\* -> fakes/libibverbs/\*")
    cm_verbs = layers_line(r"never\s+fakes/librdmacm/\* -> fakes/libibverbs/\*")
    python = layers_line(r"never\s+python/\* -> tools/\*")
    installed = layers_line(r"only\s+include/\* -> include/\*")
    cases = [
        # (what, file, planted line, [expected substrings])
        ("verbs.h in the driver models", "include/gidpolicy/driver_model.hpp", "#include <infiniband/verbs.h>",
         [f"layer 'model' reaches <infiniband/verbs.h>, which it may not (ban, scripts/layers.txt:{below}:"]),
        ("nlohmann in the driver models", "include/gidpolicy/driver_model.hpp", "#include <nlohmann/json.hpp>",
         [f"layer 'model' reaches <nlohmann/json.hpp>, which it may not (ban, scripts/layers.txt:{below}:",
          f"(ban, scripts/layers.txt:{private}: nlohmann_json is a private"]),
        ("<filesystem> in a policy", "include/gidpolicy/policies/ranked.hpp", "#include <filesystem>",
         [f"layer 'selection' reaches <filesystem>, which it may not (ban, scripts/layers.txt:{below}:"]),
        ("a socket in the plan layer", "src/profiles.cpp", "#include <sys/socket.h>",
         [f"layer 'plan' reaches <sys/socket.h>, which it may not (ban, scripts/layers.txt:{below}:"]),
        ("the builder reaching the profiles", "include/gidpolicy/rtr.hpp", '#include "gidpolicy/profiles.hpp"',
         [f"reaches include/gidpolicy/profiles.hpp, which it must never (never, scripts/layers.txt:{builder}:"]),
        ("the seam reaching the driver models", "include/gidpolicy/verbs/snapshot.hpp",
         "#include <gidpolicy/diagnose.hpp>",
         [f"reaches include/gidpolicy/diagnose.hpp, which it must never (never, scripts/layers.txt:{seam}:"]),
        ("a fake including the CLI's render.hpp", "fakes/src/fake_fabric.cpp",
         '#include "../../tools/gidpolicy/render.hpp"',
         ["layer 'fakes_inprocess' includes tools/gidpolicy/render.hpp of the higher layer 'tools'",
          f"reaches tools/gidpolicy/render.hpp, which it must never (never, scripts/layers.txt:{fakes}:"]),
        ("the in-process fake including the drop-in's internals", "fakes/src/fake_c_abi.cpp",
         '#include "../libibverbs/fakelib.hpp"',
         ["layer 'fakes_inprocess' includes fakes/libibverbs/fakelib.hpp of the higher layer 'fakes_libibverbs'",
          f"reaches fakes/libibverbs/fakelib.hpp, which it must never (never, scripts/layers.txt:{fakes_core}:"]),
        ("the fake librdmacm including the drop-in libibverbs' internals", "fakes/librdmacm/connect.cpp",
         '#include "../libibverbs/fakelib.hpp"',
         [f"reaches fakes/libibverbs/fakelib.hpp, which it must never (never, scripts/layers.txt:{cm_verbs}:"]),
        ("python/src including tools/", "python/src/stacks.cpp", '#include "../../tools/gidpolicy/render.hpp"',
         ["layer 'python' includes tools/gidpolicy/render.hpp of the higher layer 'tools'",
          f"reaches tools/gidpolicy/render.hpp, which it must never (never, scripts/layers.txt:{python}:"]),
        ("a public header including a src/ header", "include/gidpolicy/gid.hpp", '#include "../../src/describe.hpp"',
         [f"reaches src/describe.hpp, which is outside what it may reach (only, scripts/layers.txt:{installed}:"]),
    ]
    for what, rel, line, expected in cases:
        case_root = copy_tree()
        try:
            n = plant(case_root, rel, line)
            code, out = run(case_root)
            if code == 0:
                failures.append(f"{what}: check-layers passed with {line!r} planted in {rel}")
                continue
            for e in expected:
                if f"{rel}:{n}: {e}" not in out and not (e.startswith("(") and f"{rel}:{n}:" in out and e in out):
                    failures.append(f"{what}: expected '{rel}:{n}: {e}' in:\n{out}")
        finally:
            shutil.rmtree(case_root)

    # Transitively: a file of the plan layer reaching <infiniband/verbs.h> through the builder is
    # named with the chain (its upward include is reported too).
    case_root = copy_tree()
    try:
        n = plant(case_root, "include/gidpolicy/change.hpp", "#include <gidpolicy/diagnose.hpp>")
        code, out = run(case_root)
        e = (f"include/gidpolicy/change.hpp:{n}: layer 'plan' reaches <infiniband/verbs.h> through "
             "include/gidpolicy/diagnose.hpp -> include/gidpolicy/rtr.hpp, which it may not")
        if code == 0 or e not in out:
            failures.append(f"transitive ban: expected '{e}' in:\n{out}")
    finally:
        shutil.rmtree(case_root)
finally:
    shutil.rmtree(root)

for f in failures:
    print("FAIL", f)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
