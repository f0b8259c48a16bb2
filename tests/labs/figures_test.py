#!/usr/bin/env python3
"""The labs' figures stay true: tools/figures/make_figures.py draws every one into a temporary
directory (which also checks the ring figure's message numbers against real attacks), and the
committed drawings in docs/labs/figures/ must say what a fresh drawing says.

Usage: figures_test.py TEETRAIN_BINARY   (run with a python3 that has matplotlib)

The committed SVGs are compared by their text (matplotlib writes text as <text> elements), not
byte for byte, so another matplotlib version does not fail the test but a changed label, field
offset or message number does. trace.svg is drawn from two runs in virtual time, whose numbers are
the same on every machine: it is compared like the others, and its titles must state the numbers
those runs' summaries hold (the step, comm_exposed, seal and open), so a figure left from an older
binary fails.

Every figure must also be readable (Note [Figure palette] in make_figures.py): no text under 9 pt,
and no two colours that differ becoming alike under simulated deuteranopia.
"""
import html
import json
from collections import Counter
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "tools", "figures", "make_figures.py")
COMMITTED = os.path.join(REPO, "docs", "labs", "figures")
ALL = ("trust-boundary.svg", "ring.svg", "sealed-message.svg", "chain-of-trust.svg", "trace.svg")


def texts(path):
    with open(path, encoding="utf-8") as f:
        svg = f.read()
    return sorted(html.unescape(t).strip() for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))


sys.dont_write_bytecode = True  # importing the figures' modules leaves no cache in the repository
sys.path.insert(0, os.path.dirname(SCRIPT))
import palette  # noqa: E402  (tools/figures/palette.py: Note [Figure palette])


def readability(name, path):
    """Text under palette.MIN_FONT_PT, and colours of the figure a deuteranope confuses (problems)."""
    with open(path, encoding="utf-8") as f:
        svg = f.read()
    small = sorted({float(px) for px in re.findall(r"font:(?: \w+)? ([\d.]+)px", svg)
                    if float(px) < palette.MIN_FONT_PT})
    colours = re.findall(r"(?:fill|stroke)(?::\s*|=\")(#[0-9a-fA-F]{6})\b", svg)
    out = [f"{name}: text of {px:g} pt (under {palette.MIN_FONT_PT})" for px in small]
    out += [f"{name}: {a} and {b} look alike under deuteranopia (delta E {d:.1f})"
            for a, b, d in palette.confusable(colours)]
    return out


def styles_apart():
    """The series styles drawn as raster (the trace's bars) or by tools/reproduce.py (series_styles), whose
    colours the SVG text does not show: no two may be alike under deuteranopia."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_figures", SCRIPT)
    figures = importlib.util.module_from_spec(spec)
    sys.modules["make_figures"] = figures
    spec.loader.exec_module(figures)
    groups = {"trace.svg's series": [(c, h, label) for c, h, label, _ in figures.TRACE_STYLE.values()],
              "tools/reproduce.py's 11 series": [(c, h, i) for i, (c, h, _) in enumerate(palette.series_styles(11))]}
    out = []
    for what, styles in groups.items():
        for i, a in enumerate(styles):
            for b in styles[i + 1:]:
                if a[2] != b[2] and palette.alike(a[:2], b[:2]):
                    out.append(f"{what}: {a[2]} ({a[0]} {a[1]!r}) and {b[2]} ({b[0]} {b[1]!r}) look alike "
                               "under deuteranopia")
    return out


def trace_numbers(work):
    """What trace.svg's titles must say: each run's numbers, from the summary `teetrain train` wrote."""
    want = []
    for tee in ("cc", "fast"):
        with open(os.path.join(work, f"{tee}.summary.json"), encoding="utf-8") as f:
            s = json.load(f)
        ms = {k: v["mean"] * 1e3 for k, v in s["phases"].items()}
        want += [f"--tee {tee}: one step = {s['step_s_mean'] * 1e3:.1f} ms, of which comm_exposed "
                 f"{ms['comm_exposed']:.1f} ms", f"seal {ms['seal']:.1f} ms + open {ms['open']:.1f} ms"]
    return want


def main():
    binary = sys.argv[1]
    fails = []
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as work:
        p = subprocess.run([sys.executable, SCRIPT, "--teetrain", binary, "--out", out, "--work", work],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        print(p.stdout)
        if p.returncode != 0:
            fails.append(f"make_figures.py exited {p.returncode}")
        for name in ALL:
            fresh = os.path.join(out, name)
            if not os.path.isfile(fresh) or "<svg" not in open(fresh, encoding="utf-8").read():
                fails.append(f"{name}: not drawn")
            elif not os.path.isfile(os.path.join(COMMITTED, name)):
                fails.append(f"{name}: not committed in docs/labs/figures/")
            else:
                fails += readability(name, os.path.join(COMMITTED, name))
            if os.path.isfile(fresh) and os.path.isfile(os.path.join(COMMITTED, name)) and \
                    texts(fresh) != texts(os.path.join(COMMITTED, name)):
                new, old = Counter(texts(fresh)), Counter(texts(os.path.join(COMMITTED, name)))
                fails.append(f"{name}: the committed figure is out of date (re-run tools/figures/make_figures.py):"
                             f" new text {sorted((new - old).elements())[:5]}, gone {sorted((old - new).elements())[:5]}")
        if p.returncode == 0:
            committed = "\n".join(texts(os.path.join(COMMITTED, "trace.svg")))
            fails += [f"trace.svg does not state its runs' numbers: {w!r} (re-run tools/figures/make_figures.py)"
                      for w in trace_numbers(work) if w not in committed]
    fails += styles_apart()
    for f in fails:
        print(f"FAIL: {f}")
    print("figures: ok" if not fails else f"figures: {len(fails)} problem(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
