#!/usr/bin/env python3
"""doc_commands.py can fail: each fixture of tests/docs/fixtures/ is run through it, with the
build's gidpolicy, and its verdict and reason are the ones expected. good.md passes (every kind of
block: sh, a transcript with `...` elisions, exit=2, live, build, synopsis, output alone); each
other fixture breaks one rule and must fail naming it. writes.md's command overwrites an example
table: it runs in the copy, and the checkout's table is unchanged afterwards.

  doc_commands_test.py BIN_DIR SOURCE_DIR
"""
import hashlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# fixture: (expected exit status of doc_commands.py, text its output must hold)
CASES = {
    "good.md": (0, "5 commands run (3 compared with the output shown), 1 marked live, 1 marked build; 0 failures"),
    "exit2.md": (1, "exit 2 (usage or input error)"),
    "hidden-exit2.md": (1, "exit 2 (usage or input error): gidpolicy show --input examples/tables/no-such-table.txt"),
    "differs.md": (1, "output differs from the doc's first line ('mlx5_bond_0 port 2: ethernet"),
    "longer.md": (1, "output differs after the doc's line 1"),
    "unmarked.md": (1, "a command in a fence that is neither ```sh nor a `$ ` transcript"),
    "unknown-marker.md": (1, "unknown language or marker lvie"),
    "output-first.md": (1, "output before the first `$ ` command"),
    "not-found.md": (1, "exit 127: not found or not runnable"),
    "wrong-exit.md": (1, "exit 0, the doc says exit=2"),
    "writes.md": (0, "0 failures"),
}


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main(argv):
    bin_dir, root = argv[1], argv[2]
    table = os.path.join(root, "examples", "tables", "nccl-769.devinfo.txt")
    before = digest(table)
    failures = 0
    for name, (status, text) in sorted(CASES.items()):
        fixture = os.path.join(HERE, "fixtures", name)
        p = subprocess.run([sys.executable, os.path.join(HERE, "doc_commands.py"), "run", "--bin", bin_dir,
                            "--root", root, fixture], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if p.returncode != status or text not in p.stdout:
            failures += 1
            print("FAIL %s: expected exit %d and %r; got exit %d:\n%s" % (name, status, text, p.returncode, p.stdout))
        else:
            print("ok   %s: exit %d, %s" % (name, status, text))
    if digest(table) != before:
        failures += 1
        print("FAIL writes.md: the checkout's %s changed" % table)
    # The extractor on the docs themselves: every fence classified, none unmarked.
    print("doc_commands_test: %d of %d fixtures as expected" % (len(CASES) - failures, len(CASES)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
