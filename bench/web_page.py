#!/usr/bin/env python3
"""The page's size and its time to the first answer (docs/web.md): figures, not a test.

  bench/web_page.py [PAGE] [TABLE]     (default: build/wasm/web/gidpolicy.html, nccl-769)

Prints the page's size raw and gzipped (gzip -9), then, for RUNS fresh loads in Debian's headless
chromium from file://: the time from navigation start to the module being ready (the page's own
performance.now() when its Run button is enabled), the first answer's time (choosing TABLE in the
file input, until #output holds the answer; the page's own measure of the call), and their sum,
the time to the first answer. Goals: under 2 MB gzipped, first answer under 1 s on this machine.
"""
import gzip
import os
import shutil
import statistics
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
page = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build/wasm/web/gidpolicy.html"))
table = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "examples/tables/nccl-769.devinfo.txt"))
runs = int(os.environ.get("RUNS", "5"))
if not os.path.isfile(page):
    sys.exit(f"{page}: not built (cmake --workflow --preset wasm)")
from selenium import webdriver  # noqa: E402 (python3-selenium)
from selenium.webdriver.chrome.service import Service  # noqa: E402

raw = open(page, "rb").read()
print(f"page: {page}")
print(f"size: {len(raw)} bytes raw, {len(gzip.compress(raw, 9))} bytes gzipped (-9)")

work = tempfile.mkdtemp(prefix="gidpolicy-bench-")
ready, answer, wall = [], [], []
try:
    for i in range(runs):
        o = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  f"--user-data-dir={work}/profile{i}"):
            o.add_argument(a)
        o.binary_location = shutil.which("chromium")
        d = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=o)
        try:
            t0 = time.monotonic()
            d.get("file://" + page)
            while not d.execute_script("return document.documentElement.dataset.readyMs"):
                time.sleep(0.005)
            d.find_element("id", "file").send_keys(table)
            while d.execute_script("return document.getElementById('output').dataset.exit") is None:
                time.sleep(0.005)
            wall.append((time.monotonic() - t0) * 1000)
            ready.append(float(d.execute_script("return document.documentElement.dataset.readyMs")))
            answer.append(float(d.execute_script("return document.getElementById('output').dataset.ms")))
        finally:
            d.quit()
finally:
    shutil.rmtree(work, ignore_errors=True)


def row(name, v):
    print(f"{name:<44} median {statistics.median(v):7.1f} ms   min {min(v):7.1f}   max {max(v):7.1f}")


print(f"{runs} fresh loads of the page, first answer on {os.path.basename(table)}:")
row("navigation start -> module ready", ready)
row("first answer (the call, the page's measure)", answer)
row("time to first answer (ready + answer)", [a + b for a, b in zip(ready, answer)])
row("driver's wall time (load, choose file, answer)", wall)
