#!/usr/bin/env python3
"""The labs' figures stay true: tools/figures/make_figures.py draws every one into a temporary
directory (which also checks the ring figure's message numbers against real attacks), and the
committed drawings in docs/labs/figures/ must say what a fresh drawing says.

Usage: figures_test.py TEETRAIN_BINARY   (run with a python3 that has matplotlib)

The committed SVGs are compared by their text (matplotlib writes text as <text> elements), not
byte for byte, so another matplotlib version does not fail the test but a changed label, field
offset or message number does. trace.svg is drawn from timed runs and is only checked to exist.
"""
import html
from collections import Counter
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "tools", "figures", "make_figures.py")
COMMITTED = os.path.join(REPO, "docs", "labs", "figures")
FROM_CODE = ("trust-boundary.svg", "ring.svg", "sealed-message.svg", "chain-of-trust.svg")
ALL = FROM_CODE + ("trace.svg",)


def texts(path):
    with open(path, encoding="utf-8") as f:
        svg = f.read()
    return sorted(html.unescape(t).strip() for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))


def main():
    binary = sys.argv[1]
    fails = []
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([sys.executable, SCRIPT, "--teetrain", binary, "--out", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=900)
        print(p.stdout)
        if p.returncode != 0:
            fails.append(f"make_figures.py exited {p.returncode}")
        for name in ALL:
            fresh = os.path.join(out, name)
            if not os.path.isfile(fresh) or "<svg" not in open(fresh, encoding="utf-8").read():
                fails.append(f"{name}: not drawn")
            elif not os.path.isfile(os.path.join(COMMITTED, name)):
                fails.append(f"{name}: not committed in docs/labs/figures/")
            elif name in FROM_CODE and texts(fresh) != texts(os.path.join(COMMITTED, name)):
                new, old = Counter(texts(fresh)), Counter(texts(os.path.join(COMMITTED, name)))
                fails.append(f"{name}: the committed figure is out of date (re-run tools/figures/make_figures.py):"
                             f" new text {sorted((new - old).elements())[:5]}, gone {sorted((old - new).elements())[:5]}")
    for f in fails:
        print(f"FAIL: {f}")
    print("figures: ok" if not fails else f"figures: {len(fails)} problem(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
