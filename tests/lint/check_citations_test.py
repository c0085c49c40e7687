#!/usr/bin/env python3
"""scripts/check-citations on planted lines: each citation a reader cannot follow fails with
file:line and what it cites; public issue links, OWNER/REPO#N and colours pass.

  check_citations_test.py PATH/TO/check-citations
"""
import os
import shutil
import subprocess
import sys
import tempfile

checker = sys.argv[1]
failures = []
# Spelled in pieces: this file is checked too.
notes, issue, Issue, num, outside = "FA" + "CTS.md", "iss" + "ue 14", "Iss" + "ue 16", "#" + "15", "../" + "shared"
bad = {
    "tracker issue": (f"// Unit tests of {issue}: the watcher", f"cites '{issue}'"),
    "capitalised, with an item": (f"# {Issue} item 12: port 0", f"cites '{Issue}'"),
    "a bare number": (f"see {num} for why", f"cites '{num}'"),
    "a notes file": (f"// sources: {notes}, section 3", f"cites '{notes}'"),
    "a path outside": (f"copy them from {outside}/tables", f"cites '{outside}'"),
}
good = [
    "// PerDevice (NVIDIA/nccl#890)",
    "Source: ml-explore/mlx#3389 and #3468 (reported)",
    "| https://github.com/NVIDIA/nccl/issues/769 |",
    'stroke="#999" fill="#444444"',
    '// name, "#2" for a repeat',
    "// the issue the user hit: 14 ports",
]
root = tempfile.mkdtemp(prefix="check-citations-")
try:
    for name, (line, want) in bad.items():
        rel = name.replace(" ", "_") + ".cpp"
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write("// fine\n" + line + "\n")
        p = subprocess.run([sys.executable, checker, "--root", root, rel], capture_output=True, text=True, timeout=60)
        if p.returncode == 0 or f"{rel}:2: {want}" not in p.stdout:
            failures.append(f"{name}: expected '{rel}:2: {want}' and a failure, got {p.returncode}:\n{p.stdout}{p.stderr}")
    with open(os.path.join(root, "good.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(good) + "\n")
    p = subprocess.run([sys.executable, checker, "--root", root, "good.md"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        failures.append(f"public references refused:\n{p.stdout}{p.stderr}")
finally:
    shutil.rmtree(root)
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
