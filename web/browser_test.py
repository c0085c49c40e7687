#!/usr/bin/env python3
"""The page answers as the CLI does (docs/web.md): web/gidpolicy.html, opened from file:// in
Debian's headless chromium (chromium-driver + python3-selenium), against `gidpolicy` itself.

  browser_test.py CLI PAGE ROOT

For every table in ROOT/examples/tables and every bundle in ROOT/tests/data/bundle:
  - the file given to the page's file input (#file, as a user chooses it): #output's text equals
    what the CLI prints for the same file under the same name (`check --input NAME`, or
    `doctor --bundle NAME` for a bundle), byte for byte, and the page's exit code is the CLI's;
  - the same text pasted into #input and answered by #run: equals the CLI's on a file named
    paste.txt (the name the page gives a paste);
  - the --json documents the page offers for download (check, check --stacks --no-env; doctor for
    a bundle) equal the CLI's, parsed; check --stacks --no-env's text equals the CLI's;
  - `convert --to json|devinfo|show_gids` and `explain-errno EINVAL` with the file equal the CLI's.
Exit 77 (skipped, saying why) when the page was not built (`cmake --workflow --preset wasm`) or
chromium, chromedriver or selenium is missing.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


cli, page, root = (os.path.abspath(a) for a in sys.argv[1:4])
if not os.path.isfile(page):
    skip(f"{page} not built (emscripten: `cmake --workflow --preset wasm`, docs/web.md)")
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
driver = shutil.which("chromedriver")
if not chromium or not driver:
    skip("no chromium or chromedriver (Debian: apt-get install chromium chromium-driver)")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError:
    skip("no selenium for this python3 (Debian: apt-get install python3-selenium)")

tables_dir = os.path.join(root, "examples", "tables")
bundles_dir = os.path.join(root, "tests", "data", "bundle")
tables = sorted(f for f in os.listdir(tables_dir) if f.endswith((".txt", ".json")) and f != "SOURCES.md")
bundles = sorted(f for f in os.listdir(bundles_dir) if f.endswith(".bundle"))
if not tables or not bundles:
    sys.exit(f"no tables in {tables_dir} or no bundles in {bundles_dir}")

# The CLI in an environment without any stack's variables (check --stacks passes --no-env
# anyway), run in the file's directory so it is named as the page names it.
env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def run_cli(args, cwd):
    p = subprocess.run([cli] + args, cwd=cwd, env=env, capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


work = tempfile.mkdtemp(prefix="gidpolicy-browser-")
options = webdriver.ChromeOptions()
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--user-data-dir=" + os.path.join(work, "profile")):
    options.add_argument(a)
options.binary_location = chromium
browser = webdriver.Chrome(service=Service(driver), options=options)
failures = []
checked = 0


def fail(what):
    failures.append(what)
    print("FAIL", what)


def wait_for(script, what, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = browser.execute_script(script)
        if v:
            return v
        time.sleep(0.02)
    raise SystemExit(f"timed out waiting for {what}")


def page_answer():
    return browser.execute_script(
        "var o = document.getElementById('output');"
        "return [o.textContent, o.dataset.exit, document.getElementById('errors').textContent];")


def compare_text(label, page_out, page_code, page_err, cli_result):
    global checked
    checked += 1
    code, out, err = cli_result
    if page_out != out:
        fail(f"{label}: the page's text differs from the CLI's\n--- CLI\n{out}\n--- page\n{page_out}")
    if str(page_code) != str(code):
        fail(f"{label}: the page says exit {page_code}, the CLI {code}")
    if page_err != err:
        fail(f"{label}: the page's errors differ from the CLI's\n--- CLI\n{err}\n--- page\n{page_err}")


def compare_json(label, page, cli_result):
    global checked
    code, out, err = cli_result
    if not out.strip():  # no document (the input refused): the same refusal, word for word
        compare_text(label, page["stdout"], page["code"], page["stderr"], cli_result)
        return
    checked += 1
    page_out = page["stdout"]
    if str(page["code"]) != str(code):
        fail(f"{label}: the page says exit {page['code']}, the CLI {code}")
    try:
        a, b = json.loads(out), json.loads(page_out)
    except ValueError as e:
        fail(f"{label}: not JSON ({e}); CLI stderr: {err}")
        return
    if a != b:
        fail(f"{label}: the page's JSON differs from the CLI's\n--- CLI\n{out}\n--- page\n{page_out}")


try:
    browser.get("file://" + os.path.abspath(page))
    wait_for("return document.documentElement.dataset.ready", "the page to load its module")
    for d, name, bundle in [(tables_dir, t, False) for t in tables] + [(bundles_dir, b, True) for b in bundles]:
        path = os.path.join(d, name)
        src = ["--bundle" if bundle else "--input", name]
        main = ["doctor"] + src if bundle else ["check"] + src
        # A user's file: chosen in the file input; the page answers when it has read it.
        browser.execute_script("document.getElementById('output').removeAttribute('data-exit');"
                               "document.getElementById('mode').value = 'auto';")
        browser.find_element("id", "file").send_keys(path)
        wait_for("return document.getElementById('output').dataset.exit !== undefined", f"{name}'s answer")
        # ... and again with the button, as after changing nothing.
        browser.execute_script("document.getElementById('output').removeAttribute('data-exit')")
        browser.find_element("id", "run").click()
        wait_for("return document.getElementById('output').dataset.exit !== undefined", f"{name}'s answer")
        out, code, err = page_answer()
        compare_text(f"{name} (file): gidpolicy {' '.join(main)}", out, code, err, run_cli(main, d))
        browser.execute_script("document.getElementById('file').value = '';")
        # A paste: the text typed into #input (set as a paste sets it, then the input event).
        with open(path, "rb") as f:
            data = f.read()
        browser.execute_script(
            "var i = document.getElementById('input'); i.value = arguments[0];"
            "i.dispatchEvent(new Event('input', {bubbles: true}));"
            "document.getElementById('output').removeAttribute('data-exit');", data.decode("utf-8"))
        browser.find_element("id", "run").click()
        wait_for("return document.getElementById('output').dataset.exit !== undefined", f"{name}'s paste")
        out, code, err = page_answer()
        pasted = os.path.join(work, "paste")
        os.makedirs(pasted, exist_ok=True)
        with open(os.path.join(pasted, "paste.txt"), "wb") as f:
            f.write(data)
        paste_main = [main[0], src[0], "paste.txt"]
        compare_text(f"{name} (paste): gidpolicy {' '.join(paste_main)}", out, code, err, run_cli(paste_main, pasted))
        # The other answers the page gives, through the same calls the button makes.
        text = data.decode("utf-8")
        runs = [("check", False), ("check", True), ("stacks", False), ("stacks", True)]
        if bundle:
            runs += [("doctor", True)]
        for what, as_json in runs:
            r = browser.execute_script("return gidpolicyPage.run(arguments[0], arguments[1], arguments[2], arguments[3])",
                                       name, text, what, as_json)
            args = {"check": ["check"], "stacks": ["check", "--stacks", "--no-env"], "doctor": ["doctor"]}[what] + src
            if as_json:
                args.append("--json")
            if r["command"] != "gidpolicy " + " ".join(args):
                fail(f"{name}: the page names its command '{r['command']}', expected 'gidpolicy {' '.join(args)}'")
            if as_json:
                compare_json(f"{name}: gidpolicy {' '.join(args)}", r, run_cli(args, d))
            else:
                compare_text(f"{name}: gidpolicy {' '.join(args)}", r["stdout"], r["code"], r["stderr"], run_cli(args, d))
        # convert and explain-errno, the other subcommands the page's module holds.
        for to in ("json", "devinfo", "show_gids"):
            r = browser.execute_script("return gidpolicyPage.convert(arguments[0], arguments[1], arguments[2])",
                                       name, text, to)
            args = ["convert"] + src + ["--to", to]
            if r["command"] != "gidpolicy " + " ".join(args):
                fail(f"{name}: the page names its command '{r['command']}', expected 'gidpolicy {' '.join(args)}'")
            compare_text(f"{name}: gidpolicy {' '.join(args)}", r["stdout"], r["code"], r["stderr"], run_cli(args, d))
        r = browser.execute_script("return gidpolicyPage.explain(arguments[0], arguments[1], 'EINVAL')", name, text)
        args = ["explain-errno", "EINVAL"] + src
        compare_text(f"{name}: gidpolicy {' '.join(args)}", r["stdout"], r["code"], r["stderr"], run_cli(args, d))
    # Input the CLI refuses is refused the same way (exit 2, the same message).
    for label, data in [("empty", ""), ("not a table", "hello\n")]:
        r = browser.execute_script("return gidpolicyPage.run('paste.txt', arguments[0], 'auto', false)", data)
        pasted = os.path.join(work, "paste")
        with open(os.path.join(pasted, "paste.txt"), "w") as f:
            f.write(data)
        cli_result = run_cli(["check", "--input", "paste.txt"], pasted)
        if cli_result[0] != 2:
            fail(f"{label}: the CLI was expected to refuse it (exit 2), said {cli_result[0]}")
        compare_text(f"{label} (refused)", r["stdout"], r["code"], r["stderr"], cli_result)
finally:
    browser.quit()
    shutil.rmtree(work, ignore_errors=True)

print(f"{len(tables)} tables, {len(bundles)} bundles: {checked} answers compared with the CLI's")
if failures:
    built = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(page)))
    print(f"{len(failures)} of them differ (the page was built {built}; after changing the CLI or the "
          "library, rebuild it: cmake --build --preset wasm)")
    sys.exit(1)
print("every answer equals the CLI's")
