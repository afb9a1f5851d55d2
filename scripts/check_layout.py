#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The house rules of docs/design.md, checked from the code.

Reads every hand-written C source and header (not build output, not
tests) and prints one PASS or FAIL line per rule:
  - no_include_circle: no loop of #include "..." between modules, a
    module being a .c file with the header of the same name beside it;
  - core_knows_no_part: src/record/core/ includes nothing of a backend,
    a trigger kind, kernel events or the recorder's top;
  - backends_use_core_h: a backend folder reaches the core only through
    src/record/core/core.h;
  - file_sizes: no file, and no .c with its own .h, over 800 lines.
Usage: scripts/check_layout.py [--graph]   (--graph prints the edges)
"""
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["include", "decoder", "perfdata", "src", "qemu", "tools"]
BACKENDS = ["src/record/step/", "src/record/qemu/", "src/record/intel-pt/",
            "src/record/sample/"]
PARTS = BACKENDS + ["src/record/triggers/", "src/record/kevents/",
                    "src/record/backend.h", "src/record/recorder.h"]
LIMIT = 800
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for d in DIRS:
        for root, _, files in os.walk(os.path.join(TOP, d)):
            for f in files:
                if f.endswith((".c", ".h", ".cc")) and ".skel." not in f:
                    yield os.path.relpath(os.path.join(root, f), TOP)


def module(path):
    return path[:-2] if path.endswith((".c", ".h")) else path


def main():
    files = sorted(sources())
    known = set(files)
    edges = {}
    fails = []
    for f in files:
        text = open(os.path.join(TOP, f), errors="replace").read()
        for inc in INC.findall(text):
            if inc in known:
                edges.setdefault(f, set()).add(inc)
            elif "include/" + inc in known:
                edges.setdefault(f, set()).add("include/" + inc)
    # Modules and their edges.
    medges = {}
    for a, bs in edges.items():
        for b in bs:
            if module(a) != module(b):
                medges.setdefault(module(a), set()).add(module(b))
    if "--graph" in sys.argv:
        for a in sorted(medges):
            for b in sorted(medges[a]):
                print(f"{a} -> {b}")
    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in medges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(set(medges) | {m for bs in medges.values() for m in bs}):
        if v not in index:
            visit(v)
    report("no_include_circle",
           ["circle: " + " <-> ".join(c) for c in sccs])
    bad = [f"{a} includes {b}" for a, bs in edges.items() for b in bs
           if a.startswith("src/record/core/")
           and any(b.startswith(p) for p in PARTS)]
    report("core_knows_no_part", bad)
    bad = [f"{a} includes {b}" for a, bs in edges.items() for b in bs
           if any(a.startswith(p) for p in BACKENDS)
           and b.startswith("src/record/core/")
           and b != "src/record/core/core.h"]
    report("backends_use_core_h", bad)
    lines = {f: sum(1 for _ in open(os.path.join(TOP, f), errors="replace"))
             for f in files}
    bad = [f"{f}: {n} lines" for f, n in lines.items() if n > LIMIT]
    for f in files:
        if f.endswith(".c") and f[:-2] + ".h" in lines:
            n = lines[f] + lines[f[:-2] + ".h"]
            if n > LIMIT:
                bad.append(f"{f} with its header: {n} lines")
    report("file_sizes", bad)
    return 1 if FAILED else 0


FAILED = []


def report(name, problems):
    if problems:
        FAILED.append(name)
        print(f"FAIL {name}: " + "; ".join(problems[:8]) +
              (f" (and {len(problems) - 8} more)" if len(problems) > 8 else ""))
    else:
        print(f"PASS {name}")


if __name__ == "__main__":
    sys.exit(main())
