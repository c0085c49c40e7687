#!/usr/bin/env python3
"""scripts/check-stack-names on a copy of the tree's stack table, src/, tools/ and python/src/:
the copy passes; each planted duplicate of a name the table spells (MC_GID_INDEX in a policy's
error text, UCX_NET_DEVICES in a CLI help string, GGML_RDMA_GID in a comment, --rdma-gid-index in
a Python binding's docstring, a second "NCCL_IB_GID_INDEX" literal in the table) fails naming its
file and line; a longer name that only starts with a table's name, and perftest's one-letter
flags, pass; a table without its stack_vars block is refused (exit 2).

  check_stack_names_test.py PATH/TO/check-stack-names SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

checker, source = sys.argv[1], sys.argv[2]
TABLE = os.path.join("include", "gidpolicy", "stack_table.hpp")
failures = []


def copy_tree(root):
    os.makedirs(os.path.join(root, "include", "gidpolicy"))
    shutil.copy(os.path.join(source, TABLE), os.path.join(root, TABLE))
    for folder in ("src", "tools", os.path.join("python", "src")):
        shutil.copytree(os.path.join(source, folder), os.path.join(root, folder))


def run(root):
    p = subprocess.run([sys.executable, checker, "--root", root], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def append(root, rel, text):
    with open(os.path.join(root, rel), "a", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return sum(1 for _ in f)  # the planted line is the last


work = tempfile.mkdtemp(prefix="check-stack-names-")
try:
    clean = os.path.join(work, "clean")
    copy_tree(clean)
    code, out = run(clean)
    if code != 0:
        failures.append(f"the tree's copy is refused:\n{out}")
    plants = [
        (os.path.join("src", "policies", "mooncake.cpp"),
         'const char* kPlanted = "MC_GID_INDEX is unset";\n', "MC_GID_INDEX"),
        (os.path.join("tools", "gidpolicy", "main.cpp"),
         'static const char* kHelp = "set UCX_NET_DEVICES=dev:port";\n', "UCX_NET_DEVICES"),
        (os.path.join("src", "env.cpp"), "// llama.cpp reads GGML_RDMA_GID\n", "GGML_RDMA_GID"),
        (os.path.join("python", "src", "stacks.cpp"), '// "ds4 --rdma-gid-index N"\n', "--rdma-gid-index"),
    ]
    for rel, text, name in plants:
        root = os.path.join(work, name.strip("-"))
        copy_tree(root)
        line = append(root, rel, text)
        code, out = run(root)
        want = f"{rel}:{line}: {name} spelled outside the stack table"
        if code != 1 or want not in out:
            failures.append(f"planted {name} in {rel} not refused as '{want}' (exit {code}):\n{out}")
    # A second spelling inside the table itself.
    root = os.path.join(work, "twice")
    copy_tree(root)
    append(root, TABLE, 'inline constexpr std::string_view kPlanted = "NCCL_IB_GID_INDEX";\n')
    code, out = run(root)
    if code != 1 or "NCCL_IB_GID_INDEX is spelled 2 times as a string in the table" not in out:
        failures.append(f"a second NCCL_IB_GID_INDEX literal in the table not refused (exit {code}):\n{out}")
    # Not the same name: longer names that start with one, and perftest's one-letter flags.
    root = os.path.join(work, "others")
    copy_tree(root)
    append(root, os.path.join("src", "env.cpp"),
           '// NCCL_IB_GID_INDEX_X, --rdma-devices and "-x" are other names\n')
    code, out = run(root)
    if code != 0:
        failures.append(f"names that only start with a table's name are refused:\n{out}")
    # A table whose stack_vars block is gone: the names cannot be read, and the checker says so.
    root = os.path.join(work, "noblock")
    copy_tree(root)
    with open(os.path.join(root, TABLE), encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(root, TABLE), "w", encoding="utf-8") as f:
        f.write(text.replace("namespace stack_vars {", "namespace renamed {"))
    code, out = run(root)
    if code != 2 or "no `namespace stack_vars" not in out:
        failures.append(f"a table without stack_vars not refused with exit 2 (exit {code}):\n{out}")
finally:
    shutil.rmtree(work)

for f in failures:
    print(f)
if failures:
    sys.exit(1)
print("check_stack_names_test: the tree passes; 5 planted duplicates fail naming file:line")
