#!/usr/bin/env python3
"""rdmacm.every_export_guarded: every exported function of the fake librdmacm is one guarded call.

Each function defined with default visibility (`__attribute__((visibility("default")))` or
unsupported.cpp's FAKECM_API) must begin with the guard of cm.hpp (locked_call,
locked_void_call, unlocked_call, unlocked_void_call) or unsupported(), which is one; and no
source takes the library's lock by hand (std::lock_guard, std::scoped_lock, a named
std::unique_lock): the lock, the exception boundary and errno live in the guard only, so an
exception inside any export becomes an errno (rdmacm.exceptions_become_errno shows it does).

  check_guarded.py FAKES_LIBRDMACM_DIR
Exit 0 when every export is guarded (the count printed), 1 with file:line for each that is not.
"""
import os
import re
import sys

folder = sys.argv[1]
EXPORT = re.compile(r'^(?:__attribute__\(\(visibility\("default"\)\)\)|FAKECM_API)\s.*?\b(\w+)\(')
GUARDS = ("return locked_call", "locked_void_call(", "return unlocked_call", "unlocked_void_call(",
          "return unsupported(", "return static_cast<size_t>(unsupported(")
HAND_LOCK = re.compile(r"std::lock_guard|std::scoped_lock|std::unique_lock\s*(<[^>]*>)?\s+\w+\s*[({]")
problems, exports = [], 0
for name in sorted(os.listdir(folder)):
    if not name.endswith(".cpp"):
        continue
    path = os.path.join(folder, name)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for n, line in enumerate(lines, 1):
        if HAND_LOCK.search(line.split("//", 1)[0]):
            problems.append(f"{path}:{n}: takes a lock by hand: use the guard (cm.hpp's locked_call)")
        m = EXPORT.match(line)
        if not m:
            continue
        exports += 1
        # The body: after the parameter list's closing parenthesis, the first '{'; its first
        # statement is what follows, up to the end of that line of text.
        at, depth = starts[n - 1] + line.index("("), 0
        while True:
            depth += {"(": 1, ")": -1}.get(text[at], 0)
            at += 1
            if depth == 0:
                break
        body = text[text.index("{", at) + 1:].lstrip()
        first = body.split("\n", 1)[0].strip()
        if not first.startswith(GUARDS):
            problems.append(f"{path}:{n}: {m.group(1)} does not begin with the guard: {first!r}")
for p in problems:
    print(p)
print(f"{exports} exported functions, {len(problems)} problem(s)")
sys.exit(1 if problems or exports == 0 else 0)
