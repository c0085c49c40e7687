#!/usr/bin/env python3
"""Man pages generated from the sources they document, so the two cannot drift.

  gen-man.py cli       docs/cli.md                   gidpolicy.1            VERSION [GIDPOLICY]
  gen-man.py fake-host docs/cli.md                   gidpolicy-fake-host.1  VERSION
  gen-man.py capi      include/gidpolicy/gidpolicy.h gidpolicy.3            VERSION

docs/cli.md is the CLI's one reference: gidpolicy(1) is all of it, gidpolicy-fake-host(1) its
fake-host section. gidpolicy.h's comments are the C API's reference: gidpolicy(3) is the header's
overview and every declaration with its comment. The Markdown read is the subset docs/cli.md
uses (headings, paragraphs, fenced code, pipe tables, "- " lists, `code`, **bold**, *italic*,
[links](...)); anything else is written as text, never dropped. Python's standard library only:
a build needs no converter (pandoc) beyond the interpreter CMake already requires.

gidpolicy(1)'s ENVIRONMENT section lists the variables of the stack table as the built binary
prints them (`GIDPOLICY --complete variables`), so it is never a copy to keep in step. A page
is installed: the repository paths docs/cli.md uses for the example tables and the other
documents (examples/tables/X, docs/X.md, schemas/X) are written as the file's own name, and a
paragraph after `<!-- source tree only -->` is left out.
"""
import subprocess
import re
import sys

MAX_INPUT = 4 << 20  # the sources are tens of KB; a larger one is not what this reads


def esc(text):
    """Text for roff: backslashes and non-ASCII as groff escapes."""
    out = []
    for ch in text.replace("\\", "\\e"):
        out.append(ch if ord(ch) < 128 else "\\[u%04X]" % ord(ch))
    return "".join(out)


def esc_code(text):
    return esc(text).replace("-", "\\-")


def line_safe(line):
    """A roff text line must not start with a control character."""
    return "\\&" + line if line[:1] in (".", "'") else line


def inline(text):
    """Markdown inline markup to roff fonts."""
    out, i = [], 0
    pattern = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])|\[([^\]]+)\]\(([^)]+)\)")
    for m in pattern.finditer(text):
        out.append(esc(text[i:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + esc_code(m.group(1)) + "\\fR")
        elif m.group(2) is not None:
            out.append("\\fB" + inline(m.group(2)) + "\\fR")
        elif m.group(3) is not None:
            out.append("\\fI" + inline(m.group(3)) + "\\fR")
        else:
            label, target = m.group(4), m.group(5)
            out.append(inline(label))
            if target != label and not target.startswith("#"):
                out.append(" (" + esc(target) + ")")
        i = m.end()
    out.append(esc(text[i:]))
    return "".join(out)


def para(lines):
    """A paragraph's text lines for roff: one output line per input line."""
    return [line_safe(inline(l.strip())) for l in lines if l.strip()]


def split_row(row):
    cells = re.split(r"(?<!\\)\|", row.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


# A path inside the source tree, as docs/cli.md writes them: its last component is what the page
# says (a table's file name, a document's name).
REPO_PATH = re.compile(r"(?<![\w/.<-])(?:examples|tests|docs|tools|fakes|schemas|include|src|scripts|python|debian|build)/"
                       r"(?:[\w.*-]+/)*([\w.*-]+)?")


def unpath(m):
    """A source-tree path as an installed page names it: a file by its name; a directory by what
    it holds."""
    if m.group(1):
        return m.group(1)
    return "gidpolicy's example tables" if m.group(0).startswith("examples/tables") else \
        m.group(0).rstrip("/").rsplit("/", 1)[-1] + " (in gidpolicy's sources)"


def installed(lines):
    """docs/cli.md's lines as an installed page says them: no repository path, and no paragraph
    marked `<!-- source tree only -->`."""
    out, skip = [], False
    for l in lines:
        if l.strip() == "<!-- source tree only -->":
            skip = True
            continue
        if skip:
            skip = bool(l.strip())
            continue
        out.append(REPO_PATH.sub(unpath, l))
    return out


def markdown(lines, subcommands, heading_level_base=2):
    """Markdown blocks to roff. `subcommands`: headings naming one (`show ...`) become .SS under
    one COMMANDS section; other top headings become .SH."""
    out, i, in_commands = [], 0, False
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out += [".PP", ".RS 2", ".EX"] + [line_safe(esc_code(l)) for l in lines[i + 1:j]] + [".EE", ".RE"]
            i = j + 1
            continue
        m = re.match(r"(#{2,4}) (.*)", line)
        if m:
            level, title = len(m.group(1)) - heading_level_base, m.group(2).strip()
            word = title.strip("`").split(" ")[0]
            if level == 0 and title.startswith("`") and word in subcommands:
                if not in_commands:
                    out.append(".SH COMMANDS")
                    in_commands = True
                out.append('.SS "%s"' % inline(title.replace("`", "")).replace('"', "\\(dq"))
            elif level == 0:
                in_commands = False
                out.append('.SH "%s"' % esc_code(title.replace("`", "").upper()).replace('"', "\\(dq"))
            else:
                out.append('.SS "%s"' % inline(title.replace("`", "")).replace('"', "\\(dq"))
            i += 1
            continue
        if line.lstrip().startswith("|"):
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            header, body = rows[0], [r for r in rows[1:] if not all(re.fullmatch(r":?-+:?", c) for c in r)]
            for r in body:
                out += [".TP", line_safe(inline(r[0]))]
                rest = r[1:]
                if len(rest) == 1:
                    out.append(line_safe(inline(rest[0])))
                else:
                    out.append(line_safe("; ".join(inline(h) + ": " + inline(c) for h, c in zip(header[1:], rest))))
            continue
        m = re.match(r"(\s*)([-*]|\d+\.) (.*)", line)
        if m:
            indent = len(m.group(1)) + len(m.group(2)) + 1
            item = [m.group(3)]
            i += 1
            while i < len(lines) and lines[i].strip() and not re.match(r"\s*([-*]|\d+\.) ", lines[i]) \
                    and (lines[i].startswith(" " * indent) or not lines[i].startswith((" ", "|", "```", "#"))):
                item.append(lines[i])
                i += 1
            bullet = "\\(bu" if m.group(2) in "-*" else m.group(2)
            out += [".IP %s 4" % bullet] + para(item)
            continue
        block = []
        while i < len(lines) and lines[i].strip() and not lines[i].startswith(("```", "#", "|")) \
                and not re.match(r"\s*([-*]|\d+\.) ", lines[i]):
            block.append(lines[i])
            i += 1
        out += [".PP"] + para(block)
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        text = f.read(MAX_INPUT + 1)
    if len(text) > MAX_INPUT:
        sys.exit("gen-man.py: %s: larger than %d bytes" % (path, MAX_INPUT))
    return text.splitlines()


def header(name, section, version, manual):
    return ['.\\" Generated by tools/man/gen-man.py: edit the source, not this file.',
            '.TH %s %s "" "gidpolicy %s" "%s"' % (name.upper(), section, version, manual)]


def cli_parts(lines):
    """docs/cli.md: (the synopsis lines, the first paragraph, the body after the synopsis)."""
    start = next(i for i, l in enumerate(lines) if l.startswith("```"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    intro = [l for l in lines[1:start] if l.strip()]
    return lines[start + 1:end], intro, lines[end + 1:]


def synopsis(syn):
    out = [".SH SYNOPSIS", ".nf"]
    for l in syn:
        words = l.split()
        if len(words) >= 2:
            out.append(line_safe("\\fB%s %s\\fR %s" % (words[0], esc_code(words[1]), esc_code(" ".join(words[2:])))))
    return out + [".fi"]


def subcommand_names(syn):
    return [l.split()[1] for l in syn if len(l.split()) >= 2 and l.split()[0] == "gidpolicy"]


SEE_ALSO_1 = [".SH \"SEE ALSO\"", "gidpolicy\\-fake\\-host(1), gidpolicy(3), ibv_devinfo(1), ibv_devices(1)"]


# gidpolicy(1)'s EXAMPLES: the user's own files (a paste, a Mac's JSON, a directory of snapshots).
EXAMPLES = [
    ("Every named profile side by side, on a table pasted from ibv_devinfo \\-v, show_gids or "
     "\\fBgidpolicy show \\-\\-json\\fR (the format is detected):",
     ["gidpolicy check --input paste.txt", "ibv_devinfo -v | gidpolicy check --input -"]),
    ("What each stack picks under the launch's own settings (the environment's, and a dotenv or "
     "compose file's), and the variables that make it use gidpolicy's pick:",
     ["gidpolicy check --stacks --env-file launch.env --input paste.txt", "gidpolicy env --for nccl,ucx --input paste.txt"]),
    ("The entry a profile advertises on a live port, and why each other entry was not taken:",
     ["gidpolicy select --profile 'auto:family=ipv4' --explain --device mlx5_0 --port 1"]),
    ("What errno 22 at RTR means for a Mac's table, given the sgid_index the program used:",
     ["gidpolicy explain-errno 22 --input mac.json --sgid-index 1"]),
    ("Is this host ready for RDMA, with a peer to route to; the fixes are printed, never run:",
     ["gidpolicy doctor --peer 10.0.0.2"]),
    ("Every link of a cluster, from one \\fBgidpolicy show \\-\\-json\\fR per host in a directory:",
     ["gidpolicy fleet --topology rail --profile auto --svg fabric.svg /shared/fleet/"]),
]


def examples_section():
    out = [".SH EXAMPLES"]
    for text, commands in EXAMPLES:
        out += [".PP", text, ".PP", ".RS 2", ".EX"] + [line_safe(esc_code(c)) for c in commands] + [".EE", ".RE"]
    return out


def environment_section(binary):
    """The variables gidpolicy reads: the stack table's (asked of the built binary), then the
    fake host's."""
    out = [".SH ENVIRONMENT", ".PP",
           "The stacks' launch settings, read by \\fBcheck \\-\\-stacks\\fR, \\fBcheck \\-\\-pins\\fR, "
           "\\fBdoctor\\fR, \\fBenv\\fR and \\fBfleet \\-\\-stack\\fR, each as the stack that reads it "
           "parses it (\\fB\\-\\-no\\-env\\fR reads none of them; \\fB\\-\\-env\\-file\\fR adds a "
           "launch's own, which win). Each names the stacks that read it:"]
    if binary:
        text = subprocess.run([binary, "--complete", "variables"], check=True, stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
        readers = {}
        for line in text.splitlines():
            name, _, what = line.partition("\t")
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", name) or not what:
                sys.exit("gen-man.py: %s --complete variables: unexpected line %r" % (binary, line))
            readers.setdefault(name, []).append(what)
        if not readers:
            sys.exit("gen-man.py: %s --complete variables printed nothing" % binary)
        for name in sorted(readers):
            out += [".TP", "\\fB%s\\fR" % esc_code(name), esc_code("; ".join(readers[name]))]
    else:
        out += [".PP", "(This page was built without running gidpolicy: \\fBgidpolicy \\-\\-complete variables\\fR "
                "lists them, with the stacks that read each.)"]
    out += [".TP", "\\fBLD_LIBRARY_PATH\\fR",
            "\\fBfake\\-host\\fR puts the fake libraries' directory first on it for COMMAND.",
            ".TP", "\\fBGIDPOLICY_FAKE_TABLES\\fR, \\fBGIDPOLICY_FAKE_SYSFS\\fR, \\fBGIDPOLICY_FAKE_FABRIC\\fR",
            "Set by \\fBfake\\-host\\fR for COMMAND and read by the fake libibverbs: the table it serves, its "
            "sysfs tree and where its QPs' sockets live."]
    return out


def cli_page(src, version, binary=None):
    syn, intro, body = cli_parts(installed(read(src)))
    out = header("gidpolicy", 1, version, "User Commands")
    out += [".SH NAME", "gidpolicy \\- choose the RDMA GID to advertise and route from, and say why"]
    out += synopsis(syn) + [".SH DESCRIPTION"] + para(intro)
    out += markdown(body, set(subcommand_names(syn)))
    out += environment_section(binary) + examples_section()
    out += [".SH FILES", ".TP", "\\fI/usr/share/bash\\-completion/completions/gidpolicy\\fR",
            "Bash completion: subcommands, options, profile specs and device names, asked of the binary "
            "itself (\\fBgidpolicy \\-\\-complete\\fR)."]
    return out + SEE_ALSO_1


def fake_host_page(src, version, binary=None):
    syn, _, body = cli_parts(installed(read(src)))
    start = next(i for i, l in enumerate(body) if re.match(r"## `fake-host", l))
    end = next((i for i in range(start + 1, len(body)) if re.match(r"## ", body[i])), len(body))
    section = body[start + 1:end]
    intro_end = next(i for i, l in enumerate(section) if l.strip() and i > 0 and not section[i - 1].strip())
    out = header("gidpolicy-fake-host", 1, version, "User Commands")
    out += [".SH NAME", "gidpolicy\\-fake\\-host \\- run a program on a host that looks like a GID table"]
    out += synopsis([l for l in syn if l.split()[1:2] == ["fake-host"]])
    out += [".SH DESCRIPTION"] + para(section[:intro_end])
    out += markdown(section[intro_end:], set())
    out += fake_environment() + [".SH EXAMPLES"]
    for text, commands in FAKE_HOST_EXAMPLES:
        out += [".PP", text, ".PP", ".RS 2", ".EX"] + [line_safe(esc_code(c)) for c in commands] + [".EE", ".RE"]
    return out + [".SH \"SEE ALSO\"", "gidpolicy(1), ibv_devinfo(1), ucx_info(1)"]


FAKE_HOST_EXAMPLES = [
    ("rdma\\-core's own tool, on a table pasted from a bug report:",
     ["gidpolicy fake-host --tables paste.txt -- ibv_devinfo -v"]),
    ("The GID index UCX picks there, from its own log:",
     ["UCX_LOG_LEVEL=debug gidpolicy fake-host --tables paste.txt -- ucx_info -d | grep gid_index"]),
    ("gidpolicy's own live path, following the table as it is rewritten:",
     ["gidpolicy fake-host --tables t.json -- gidpolicy watch"]),
]


def fake_environment():
    """What fake-host sets for COMMAND (and what the fake libibverbs reads)."""
    return [".SH ENVIRONMENT", ".PP",
            "The environment passes through to COMMAND, with these set:",
            ".TP", "\\fBLD_LIBRARY_PATH\\fR",
            "The fake libraries' directory first, so COMMAND loads the fake libibverbs and librdmacm.",
            ".TP", "\\fBGIDPOLICY_FAKE_TABLES\\fR", "The table given with \\fB\\-\\-tables\\fR.",
            ".TP", "\\fBGIDPOLICY_FAKE_SYSFS\\fR", "The sysfs tree made from it.",
            ".TP", "\\fBGIDPOLICY_FAKE_FABRIC\\fR",
            "Where the fake QPs' sockets live (\\fB\\-\\-fabric\\fR): fake hosts that share it reach each "
            "other's QPs."]


# ---- the C API ----------------------------------------------------------------------------

SKIP = re.compile(r'^(#ifndef GIDPOLICY_GIDPOLICY_H|#define GIDPOLICY_GIDPOLICY_H|#include .*|#ifdef __cplusplus'
                  r'|extern "C" \{|#endif|\} /\* extern "C" \*/|#endif /\* GIDPOLICY_GIDPOLICY_H \*/'
                  r'|/\* GIDPOLICY-[A-Z-]+ \*/)\s*$')
DIVIDER = re.compile(r"^/\* -{20,} \*/$")


def comment_text(block):
    """A C comment's lines without the comment markers, indentation kept."""
    text = []
    for l in block:
        l = re.sub(r"^\s*/\*\*?<?", "", l)
        l = re.sub(r"\s*\*/\s*$", "", l)
        l = re.sub(r"^\s*\* ?", "", l) if re.match(r"^\s*\*", l) else l
        text.append(l.rstrip())
    return text


def doc_roff(text):
    """A comment's text: paragraphs, "- " lists (continuation lines aligned with the item's text)
    and indented blocks as examples."""
    # The first line follows the comment's opening marker: prose, whatever its indentation.
    lines = [text[0].strip()] + list(text[1:]) if text else []
    nonempty = [l for l in lines[1:] if l.strip()]
    base = min((len(l) - len(l.lstrip()) for l in nonempty), default=0)
    out, prose, pre, bullet_indent = [], [], [], None

    def flush():
        nonlocal prose, pre
        if prose:
            out.extend(para(prose))
            prose = []
        if pre:
            out.extend([".RS 2", ".EX"] + [line_safe(esc_code(p)) for p in pre] + [".EE", ".RE"])
            pre = []

    out.append(".PP")
    for l in lines:
        indent = len(l) - len(l.lstrip())
        stripped = l.strip()
        if not stripped:
            flush()
            bullet_indent = None
            out.append(".PP")
            continue
        if stripped.startswith("- ") and indent <= base + 1:
            flush()
            bullet_indent = indent + 2
            out.append(".IP \\(bu 4")
            prose.append(stripped[2:])
        elif bullet_indent is not None and indent == bullet_indent:
            prose.append(stripped)
        elif indent > base and l is not lines[0]:
            if prose:
                out.extend(para(prose))
                prose = []
            pre.append(l[base:])
        else:
            if pre:
                flush()
                out.append(".PP")
            bullet_indent = None
            prose.append(stripped)
    flush()
    return [l for k, l in enumerate(out) if not (l == ".PP" and k + 1 < len(out) and out[k + 1] in (".PP", ".IP \\(bu 4"))]


def capi_page(src, version, binary=None):
    lines = [REPO_PATH.sub(unpath, l) for l in read(src)]
    end = next(i for i, l in enumerate(lines) if l.strip() == "*/")
    top = comment_text(lines[:end + 1])
    name_line, overview = top[0].strip(), top[1:]
    out = header("gidpolicy", 3, version, "Library Functions Manual")
    out += [".SH NAME", "gidpolicy \\- " + esc(name_line.split(": ", 1)[-1].rstrip("."))]
    out += [".SH SYNOPSIS", ".nf", "\\fB#include <gidpolicy/gidpolicy.h>\\fR", ".PP",
            "cc ... $(pkg\\-config \\-\\-cflags \\-\\-libs gidpolicy\\-c)",
            "cc ... $(pkg\\-config \\-\\-cflags \\-\\-libs gidpolicy\\-c\\-verbs)    # the [c_verbs] functions",
            ".fi", ".SH DESCRIPTION"]
    out += doc_roff(overview)
    out.append(".SH \"FUNCTIONS AND TYPES\"")
    i, depth, doc, code = end + 1, 0, [], []

    def emit():
        nonlocal doc, code
        while code and not code[-1].strip():
            code.pop()
        if code:
            out.extend([".PP", ".RS 2", ".EX"] + [line_safe(esc_code(c)) for c in code] + [".EE", ".RE"])
        if doc:
            out.extend(doc_roff(doc))
        doc, code = [], []

    while i < len(lines):
        l = lines[i]
        if depth == 0 and SKIP.match(l.strip()):
            i += 1
            continue
        if depth == 0 and DIVIDER.match(l.strip()):
            emit()
            j, titles = i + 1, []
            while j < len(lines) and re.match(r"^/\*.*\*/$", lines[j].strip()) and not DIVIDER.match(lines[j].strip()) \
                    and not SKIP.match(lines[j].strip()):
                titles.append(comment_text([lines[j]])[0].strip())
                j += 1
            if titles:
                out.append('.SS "%s"' % esc(titles[0]).replace('"', "\\(dq"))
                if titles[1:]:
                    out += [".PP"] + para([" ".join(titles[1:])])
            i = j
            continue
        if depth == 0 and l.lstrip().startswith("/*"):
            if code:
                emit()
            j = i
            while "*/" not in lines[j]:
                j += 1
            doc = comment_text(lines[i:j + 1])
            i = j + 1
            continue
        if l.strip() or code:
            code.append(l)
        depth += l.count("{") - l.count("}")
        i += 1
    emit()
    out += [".SH \"SEE ALSO\"", "gidpolicy(1), ibv_query_gid(3), ibv_modify_qp(3), pkg\\-config(1)"]
    return out


def main(argv):
    if len(argv) not in (5, 6) or argv[1] not in ("cli", "fake-host", "capi"):
        sys.exit(__doc__)
    kind, src, dst, version = argv[1:5]
    binary = argv[5] if len(argv) == 6 else None
    page = {"cli": cli_page, "fake-host": fake_host_page, "capi": capi_page}[kind](src, version, binary)
    text = "\n".join(page) + "\n"
    with open(dst + ".tmp", "w", encoding="ascii") as f:
        f.write(text)
    import os
    os.replace(dst + ".tmp", dst)


if __name__ == "__main__":
    main(sys.argv)
