#!/usr/bin/env python3
"""Every command the README and docs/*.md show runs as written (docs/testing.md, "Docs that run").

  doc_commands.py run --bin DIR --root SRC DOC...   run every runnable command of DOC... from a
                                                    copy of SRC's examples and test data, with
                                                    DIR (the build's gidpolicy) first on PATH
  doc_commands.py list DOC...                       print what would run, and what is marked

The blocks of a Markdown file, by their fence's info string (its first word is the language,
the words after it are markers):

  ```sh                   every line is a command (a trailing `\\` continues it; `#` starts a
                          comment), run from the copy of the repository root; its output is not
                          compared
  ``` or ```console       a transcript when a line starts with `$ `: each `$ COMMAND` is run and
                          what follows it, up to the next `$ ` or the fence, is its output
                          (stdout and stderr as a terminal shows them, merged)
  ```synopsis             a usage line, never run (`gidpolicy show [SOURCE] [--json]`)
  ```sh live              needs a live RDMA device, another host or a cluster: never run here
  ```sh build             builds, tests or installs this tree (scripts/test runs those): not run
  ```... exit=N           every command of the block must exit N (a documented refusal, exit 2)

In a shown output, a line that is `...` stands for any number of lines left out, and `...`
inside a line for any text left out of it; everything else is compared as written, after trailing
blanks. A command fails when it exits 2 (usage or input error) unless the block says `exit=2`,
when any `gidpolicy` it starts exits 2 (a wrapper first on PATH records that, so `cmd; echo $?`
cannot hide one), when it is not found (127), or when its output differs from what the doc shows.
A block that holds a command (a line starting `gidpolicy`, `$ ` ...) in a fence that is none of
the above is an error: every command is either runnable or marked.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Fences whose content is not shell: never scanned for commands.
OTHER_LANGUAGES = {"c", "cpp", "json", "cmake", "yaml", "python", "text", "roff", "diff", "ini"}
# Markers after the language (and the language-less markers `synopsis`, `live`, `build`).
MARKERS = {"live", "build", "synopsis"}
# A line of an unmarked, language-less block that is a command someone would type.
COMMAND_LINE = re.compile(r"^\s*(\$ |gidpolicy(\s|$)|sh gidpolicy-collect|ibv_devinfo|scripts/|cmake |ctest )")
# Environment variables cleared before running: the stacks' settings and the fakes' switches,
# so what the docs show does not depend on the shell that runs the suite.
CLEARED_PREFIXES = ("NCCL_", "UCX_", "MC_", "FI_", "NVSHMEM_", "JACCL_", "MLX_", "GGML_", "DS4_",
                    "GIDPOLICY_", "OMPI_", "PMIX_")
TIMEOUT = 120


class Command:
    def __init__(self, path, line, text, expected, mode, exit_code):
        self.path, self.line, self.text = path, line, text
        self.expected = expected  # list of lines, or None (output not compared)
        self.mode = mode  # "run", "live", "build"
        self.exit_code = exit_code  # None: any but 2

    def where(self):
        return "%s:%d" % (self.path, self.line)


def fences(lines):
    """(info, first content line number (1-based), content lines) for each fenced block."""
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, info = len(m.group(1)), m.group(2).strip()
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        # A fence indented under a list item: its lines lose that indentation, and no more.
        yield info, i + 2, [l[indent:] if not l[:indent].strip() else l.lstrip() for l in lines[i + 1:j]]
        i = j + 1


def logical_lines(content, first):
    """(line number, command) per logical line: `\\` continues a line."""
    out, buf, start = [], "", None
    for k, l in enumerate(content):
        if start is None:
            start = first + k
        if l.rstrip().endswith("\\"):
            buf += l.rstrip() + "\n"  # the shell joins the lines
            continue
        buf += l
        if buf.strip() and not buf.strip().startswith("#"):
            out.append((start, buf))
        buf, start = "", None
    if buf.strip():
        out.append((start, buf))
    return out


def extract(path, text):
    """(commands, errors) of one Markdown file."""
    commands, errors = [], []
    for info, first, content in fences(text.split("\n")):
        words = info.split()
        lang = words[0] if words and words[0] not in MARKERS and not words[0].startswith("exit=") else ""
        marks = set(words[1:] if lang else words)
        if lang in OTHER_LANGUAGES:
            continue
        exit_code = None
        for w in marks:
            if w.startswith("exit="):
                try:
                    exit_code = int(w[5:])
                except ValueError:
                    errors.append("%s:%d: fence marker %r: expected exit=N" % (path, first - 1, w))
        unknown = [w for w in marks if w not in MARKERS and not w.startswith("exit=")]
        if unknown or lang not in ("", "sh", "console"):
            errors.append("%s:%d: fence ```%s: unknown language or marker %s (docs/testing.md, Docs that run)"
                          % (path, first - 1, info, " ".join(unknown) or lang))
            continue
        if "synopsis" in marks:
            continue
        mode = "live" if "live" in marks else "build" if "build" in marks else "run"
        transcript = any(l.startswith("$ ") for l in content)
        if transcript:
            k = 0
            while k < len(content):
                if not content[k].startswith("$ "):
                    # Only the lines before the block's first command get here: each command
                    # takes the lines after it as its output.
                    if content[k].strip():
                        errors.append("%s:%d: output before the first `$ ` command" % (path, first + k))
                        break
                    k += 1
                    continue
                line_no, cmd = first + k, content[k][2:]
                while cmd.rstrip().endswith("\\") and k + 1 < len(content):
                    k += 1
                    cmd = cmd.rstrip() + "\n" + content[k]
                k += 1
                out = []
                while k < len(content) and not content[k].startswith("$ "):
                    out.append(content[k])
                    k += 1
                while out and not out[-1].strip():
                    out.pop()
                commands.append(Command(path, line_no, cmd, out, mode, exit_code))
        elif lang == "sh":
            for line_no, cmd in logical_lines(content, first):
                commands.append(Command(path, line_no, cmd, None, mode, exit_code))
        else:
            bad = [first + k for k, l in enumerate(content) if COMMAND_LINE.match(l)]
            if bad:
                errors.append("%s:%d: a command in a fence that is neither ```sh nor a `$ ` transcript: "
                              "make it runnable, or mark the fence (```sh live, ```sh build, ```synopsis)"
                              % (path, bad[0]))
    return commands, errors


def output_pattern(expected):
    """The regular expression a shown output stands for: `...` lines and `...` in a line elide."""
    parts = []
    for l in expected:
        l = l.rstrip()
        if l.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in l.split("...")) + r"\n")
    return "".join(parts)


def compare(expected, actual):
    """None when `actual` is what `expected` shows, else the first line that differs."""
    got = "".join(l.rstrip() + "\n" for l in actual.rstrip("\n").split("\n")) if actual.strip() else ""
    if re.fullmatch(output_pattern(expected), got):
        return None
    # Where it stops matching: the longest prefix of the expected lines that matches a prefix.
    for n in range(len(expected), 0, -1):
        if re.match(output_pattern(expected[:n]), got):
            return "output differs after the doc's line %d (%r)" % (n, expected[n - 1]) + \
                   (": the doc shows %r next" % expected[n] if n < len(expected) else ": the output goes on")
    return "output differs from the doc's first line (%r)" % (expected[0] if expected else "")


def prepare(root, tmp, bin_dir):
    """A copy of what the docs' commands read, and a PATH whose gidpolicy records an exit 2."""
    work = os.path.join(tmp, "root")
    os.mkdir(work)
    for d in ("examples", os.path.join("tests", "data"), os.path.join("tools", "collect")):
        if os.path.isdir(os.path.join(root, d)):
            shutil.copytree(os.path.join(root, d), os.path.join(work, d), symlinks=True)
    shim_dir = os.path.join(tmp, "bin")
    os.mkdir(shim_dir)
    log = os.path.join(tmp, "exit2.log")
    real = os.path.join(os.path.abspath(bin_dir), "gidpolicy")
    with open(os.path.join(shim_dir, "gidpolicy"), "w") as f:
        f.write('#!/bin/sh\n"%s" "$@"\nrc=$?\n[ "$rc" -ne 2 ] || printf "%%s\\n" "gidpolicy $*" >> "%s"\nexit "$rc"\n'
                % (real, log))
    os.chmod(os.path.join(shim_dir, "gidpolicy"), 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED_PREFIXES)}
    env.update(PATH=shim_dir + os.pathsep + os.path.abspath(bin_dir) + os.pathsep + env.get("PATH", ""),
               LC_ALL="C.UTF-8", TZ="UTC")
    env.pop("COLUMNS", None)
    return work, env, log


def run_one(cmd, work, env, log):
    """None, or why the command fails."""
    if os.path.exists(log):
        os.remove(log)
    try:
        p = subprocess.run(["bash", "-c", cmd.text], cwd=work, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "did not finish within %d s" % TIMEOUT
    out = p.stdout.decode("utf-8", "replace")
    inner = open(log).read().strip().split("\n") if os.path.exists(log) else []
    if cmd.exit_code is not None:
        if p.returncode != cmd.exit_code:
            return "exit %d, the doc says exit=%d\n%s" % (p.returncode, cmd.exit_code, out)
    elif p.returncode == 2 or inner:
        return "exit 2 (usage or input error)%s\n%s" % (": " + inner[0] if inner else "", out)
    elif p.returncode in (126, 127):
        return "exit %d: not found or not runnable\n%s" % (p.returncode, out)
    if cmd.expected is not None:
        why = compare(cmd.expected, out)
        if why:
            return why + "\n--- the output:\n" + out
    return None


def main(argv):
    if len(argv) >= 2 and argv[1] == "list":
        for path in argv[2:]:
            cmds, errors = extract(path, open(path, encoding="utf-8").read())
            for c in cmds:
                print("%s %-5s %s" % (c.where(), c.mode, c.text.split("\n")[0]))
            for e in errors:
                print("error: " + e)
        return 0
    if len(argv) < 6 or argv[1] != "run" or argv[2] != "--bin" or argv[4] != "--root":
        sys.exit(__doc__)
    bin_dir, root, docs = argv[3], argv[5], argv[6:]
    commands, errors = [], []
    for path in docs:
        rel = os.path.relpath(path, root)
        c, e = extract(rel, open(path, encoding="utf-8").read())
        commands += c
        errors += e
    failures = list(errors)
    counts = {"run": 0, "live": 0, "build": 0}
    with tempfile.TemporaryDirectory(prefix="gidpolicy-doc-commands-") as tmp:
        work, env, log = prepare(root, tmp, bin_dir)
        for c in commands:
            counts[c.mode] += 1
            if c.mode != "run":
                continue
            why = run_one(c, work, env, log)
            if why:
                failures.append("%s: $ %s: %s" % (c.where(), c.text.strip(), why.rstrip()))
    for f in failures:
        print("FAIL " + f)
    print("doc_commands: %d commands run (%d compared with the output shown), %d marked live, %d marked build; "
          "%d failures, from %d files"
          % (counts["run"], sum(1 for c in commands if c.mode == "run" and c.expected is not None),
             counts["live"], counts["build"], len(failures), len(docs)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
