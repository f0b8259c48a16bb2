#!/usr/bin/env python3
"""Lists C++/CUDA functions longer than --max lines (default 80) under the given folders.

The project's rule (docs/CONTRIBUTING.md): functions under ~80 lines. A function is
counted from the line that ends its signature with `{` to its closing brace, so a long signature
does not count against it. The scan is lexical (braces outside comments and string literals), which
is enough for our formatting (clang-format, one signature per line end). Exit 1 when any function
is longer, printing `lines path:line signature` for each.
"""
import argparse
import os
import re
import sys

SIGNATURE_END = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>,\s*&]+)?\s*\{\s*$")
CONTROL = re.compile(r"\s*(if|for|while|switch|else|do|catch)\b")


def code_of(line):
    """The line without its // comment and with string and character literals emptied."""
    line = re.sub(r'"([^"\\]|\\.)*"', '""', line)
    line = re.sub(r"'([^'\\]|\\.)*'", "''", line)
    return re.sub(r"//.*", "", line)


def long_functions(path, limit):
    depth, start, start_depth, found = 0, None, 0, []
    in_block_comment = False
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for number, raw in enumerate(lines, 1):
        line = raw
        if in_block_comment:
            if "*/" not in line:
                continue
            line, in_block_comment = line.split("*/", 1)[1], False
        line = re.sub(r"/\*.*?\*/", "", code_of(line))
        if "/*" in line:
            line, in_block_comment = line.split("/*", 1)[0], True
        opens, closes = line.count("{"), line.count("}")
        if start is None and opens > closes and SIGNATURE_END.search(line) and not CONTROL.match(line):
            start, start_depth, signature = number, depth, raw.strip()
        depth += opens - closes
        if start is not None and depth <= start_depth:
            if number - start + 1 > limit:
                found.append((number - start + 1, path, start, signature))
            start = None
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--max", type=int, default=80, help="longest allowed function, in lines")
    args = parser.parse_args()
    found = []
    for folder in args.folders:
        for root, _, files in os.walk(folder):
            for name in sorted(files):
                if name.endswith((".cpp", ".h", ".cu", ".cuh")):
                    found += long_functions(os.path.join(root, name), args.max)
    for lines, path, line, signature in sorted(found, reverse=True):
        print(f"{lines:5d} {path}:{line} {signature[:90]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
