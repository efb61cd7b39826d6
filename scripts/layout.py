#!/usr/bin/env python3
"""The layout's numbers (issue 33): Rust files over 800 lines and functions
over 250 lines in the host, the suite crate, the plugins and the SDK.

    scripts/layout.py            # the lists and their counts

Functions are measured from their `fn` line to the line of their closing
brace (braces in strings and comments are skipped roughly: good enough to
find the long ones). Generated tables (`*_table*.rs`, `testdata/`) are left
out.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIRS = ["host", "plugins", "plugin-sdk"]
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")


def strip(line):
    """The line without string literals and a trailing comment."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    i = line.find("//")
    return line[:i] if i >= 0 else line


def functions(lines):
    out = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for j in range(i, len(lines)):
            s = strip(lines[j])
            if not opened and ";" in s and "{" not in s:
                break  # a declaration without a body
            depth += s.count("{") - s.count("}")
            opened = opened or "{" in s
            if opened and depth <= 0:
                out.append((m.group(6), i + 1, j - i + 1))
                break
    return out


def main():
    files = [p for d in DIRS for p in (ROOT / d).rglob("*.rs")
             if "target" not in p.parts and "testdata" not in p.parts and "table" not in p.name]
    big, long = [], []
    for p in sorted(files):
        lines = p.read_text(errors="replace").split("\n")
        rel = p.relative_to(ROOT)
        if len(lines) > 800:
            big.append((len(lines), rel))
        for name, line, n in functions(lines):
            if n > 250:
                long.append((n, f"{rel}:{line}", name))
    print(f"files over 800 lines: {len(big)}")
    for n, rel in sorted(big, reverse=True):
        print(f"  {n:5}  {rel}")
    print(f"functions over 250 lines: {len(long)}")
    for n, at, name in sorted(long, reverse=True):
        print(f"  {n:5}  {at}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
