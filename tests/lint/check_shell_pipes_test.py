#!/usr/bin/env python3
"""scripts/check-shell-pipes on small scripts: `... | grep -q`, `| grep -m1` (the option anywhere
among grep's options) and `| awk '... exit'` under pipefail fail with file:line; the same without
pipefail, a here-string, `||`, and a comment pass; a FIFO or a device named on the command line is
refused, not read.

  check_shell_pipes_test.py PATH/TO/check-shell-pipes
"""
import os
import shutil
import subprocess
import sys
import tempfile

checker = sys.argv[1]
failures = []


def run(text, name="t.sh", listed=True):
    root = tempfile.mkdtemp(prefix="check-shell-pipes-")
    try:
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(text)
        # listed=False: the checker finds the scripts itself (not a git tree: every file, by shebang).
        p = subprocess.run([sys.executable, checker, "--root", root] + ([name] if listed else []),
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr
    finally:
        shutil.rmtree(root)


head = "#!/usr/bin/env bash\nset -uo pipefail\n"
for bad in ('echo "$out" | grep -q x || exit 1\n', "man -P cat ls | grep -Eq 'NAME' && echo y\n",
            'printf "%s\\n" "$a" | grep -qx b\n', "ldconfig -p |grep -m1 libc\n", "x | grep --quiet y\n",
            # the option after another one, or after an option's argument (the middleware fi_info case)
            'printf "%s\\n" "$out" | grep -E -q "domain: x$" || fail\n', "x | grep -e a -e b --max-count=1\n",
            "x | LC_ALL=C grep -i -c -m 2 y\n", "x | grep -A 2 -s -q y\n",
            # the early grep behind another one on the same line
            "a | grep x | grep -q y\n", "a | awk '{print}' | grep -E -q y\n",
            # an awk program that exits at its first match stops reading as early
            "x | awk '$3 != \"invalid\" {print $1; exit}'\n", "x | awk -F: -v n=1 'NR == n {print; exit}'\n"):
    code, out = run(head + "\n" + bad)
    if code == 0 or "t.sh:4: a pipeline into an early-exiting grep or awk under pipefail" not in out:
        failures.append(f"not refused: {bad.strip()}\n{out}")
for good in ('grep -q x <<< "$out" || exit 1\n', "a || grep -q x f\n", "# echo | grep -q x\n",
             'echo "$out" | grep x > /dev/null\n', 'true # echo | grep -q x\n',
             # options whose argument holds a q or m, and a pattern that looks like one
             "x | grep -e -q y\n", "x | grep -A2 -e m z\n", "x | grep -- -q\n", "x | grep -E 'a|b' -\n",
             # awk that reads everything; `exit` outside its program
             "x | awk '{print $1}' || exit 1\n", "x | awk -v exit=1 '{print}'\n"):
    code, out = run(head + good)
    if code != 0:
        failures.append(f"refused: {good.strip()}\n{out}")
code, out = run('#!/bin/sh\necho "$out" | grep -q x\n')
if code != 0:
    failures.append(f"refused without pipefail:\n{out}")
code, out = run("set -uo pipefail\necho | grep -q x\n", name="notes.txt", listed=False)
if code != 0:
    failures.append(f"a file that is not a shell script was checked:\n{out}")
code, out = run("#!/usr/bin/env bash\nset -euo pipefail\nfoo | grep -q x\n", name="tool", listed=False)
if code == 0 or "tool:3:" not in out:
    failures.append(f"a bash script without .sh not checked:\n{out}")
# Findings that cannot be written (stdout on /dev/full): one line on stderr and exit 2, not a trace.
full_root = tempfile.mkdtemp(prefix="check-shell-pipes-")
try:
    with open(os.path.join(full_root, "t.sh"), "w", encoding="utf-8") as f:
        f.write(head + "x | grep -q y\n")
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, checker, "--root", full_root, "t.sh"], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != 2 or p.stderr.count("\n") != 1 or "cannot write the findings" not in p.stderr:
        failures.append(f"stdout on /dev/full: exit {p.returncode}, stderr {p.stderr!r}")
finally:
    shutil.rmtree(full_root)
fifo_root = tempfile.mkdtemp(prefix="check-shell-pipes-")
try:
    os.mkfifo(os.path.join(fifo_root, "pipe.sh"))
    p = subprocess.run([sys.executable, checker, "--root", fifo_root, "pipe.sh", "/dev/zero"],
                       capture_output=True, text=True, timeout=60)
    said = p.stdout
    if p.returncode == 0 or "pipe.sh: not a regular file" not in said or "/dev/zero: not a regular file" not in said:
        failures.append(f"a FIFO or a device was read:\n{p.stdout}{p.stderr}")
except subprocess.TimeoutExpired:
    failures.append("the checker blocked on a FIFO")
finally:
    shutil.rmtree(fifo_root)
for f in failures:
    print("FAIL:", f)
print("PASS" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
