#!/usr/bin/env python3
"""Report include cycles between the modules of src/server.

A module is a header X.h (any header but an X_int.h) with its
implementation files: X.c, X_int.h, and every X_*.c or X_*_int.h for
which X is the longest header name that prefixes it.  So pk_repl.h,
pk_repl.c, pk_repl_stream.c and pk_repl_int.h are module pk_repl,
pk_ft_agg_int.h belongs to pk_ft and pk_cmd_hotkeys.c to pk_cmd, while
pk_hotread.h is a module of its own, not part of pk_hot (a prefix counts
only up to a "_").  A file that no header name prefixes is a module of
its own (pk_conn.c).  Module A depends on module B when a file of A
includes a file of B, as #include "server/..." or #include "...".

The script prints the strongly connected components of that graph that
hold more than one module, largest first, one per line as
"SIZE: module module ...", or "no include cycles" when there are none;
with --edges it also prints every module's dependencies.  It exits 1
when a component holds more than --max modules (default 3), else 0.

Usage: tools/include-cycles.py [--max N] [--edges] [--dir src/server]
"""

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"(?:server/)?([\w.]+)"', re.M)


def module_of(filename, headers):
    """The module of a file: the longest header name its stem starts with."""
    stem = os.path.splitext(filename)[0]
    best = None
    for h in headers:
        if stem == h or stem.startswith(h + "_"):
            if best is None or len(h) > len(best):
                best = h
    return best or stem


def build_graph(directory):
    """Maps each module to the set of other modules it includes."""
    files = sorted(f for f in os.listdir(directory) if f.endswith((".c", ".h")))
    headers = {
        f[:-2] for f in files if f.endswith(".h") and not f.endswith("_int.h")
    }
    graph = {}
    for f in files:
        mod = module_of(f, headers)
        deps = graph.setdefault(mod, set())
        with open(os.path.join(directory, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            if inc not in files:
                continue  # not a file of this directory
            target = module_of(inc, headers)
            if target != mod:
                deps.add(target)
    return graph


def components(graph):
    """Strongly connected components (Tarjan's algorithm, iterative)."""
    index, low, on_stack = {}, {}, set()
    stack, result, counter = [], [], 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                result.append(sorted(comp))
    return result


def main():
    parser = argparse.ArgumentParser(
        description="Module-level include cycles of src/server.")
    parser.add_argument("--max", type=int, default=3,
                        help="largest component allowed (default 3)")
    parser.add_argument("--edges", action="store_true",
                        help="also print every module's dependencies")
    parser.add_argument("--dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src", "server"),
                        help="the directory to check (default src/server)")
    args = parser.parse_args()

    graph = build_graph(args.dir)
    cycles = [c for c in components(graph) if len(c) > 1]
    cycles.sort(key=lambda c: (-len(c), c))
    if not cycles:
        print("no include cycles")
    for comp in cycles:
        print("%d: %s" % (len(comp), " ".join(comp)))
    if args.edges:
        for mod in sorted(graph):
            print("%s -> %s" % (mod, " ".join(sorted(graph[mod]))))
    largest = len(cycles[0]) if cycles else 0
    if largest > args.max:
        print("include-cycles: a cycle of %d modules (--max %d)"
              % (largest, args.max), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
