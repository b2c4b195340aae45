#!/usr/bin/env python3
"""Draw quash's module graph from its own includes and symbol references.

A module is a source stem (dir/name for name.c and name.h).  A edges to B
when A's files include B's header or A's object refers to a symbol B's
object defines (nm).  Prints the circles (strongly connected components of
more than one module) and the arrows that climb a layer or cross between
siblings, then exits 1 if there are any.

    scripts/structure.py BUILDDIR [--dot]
    scripts/structure.py --long N     functions of more than N lines
"""
import json, os, re, subprocess, sys

# Lower layers never reach up; modules of one rank never reach sideways
# into another folder of the same rank.
RANK = {'lib': 0, 'common': 1, 'mount': 2, 'pack': 2, 'cli': 3}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer(mod):
    return mod.split('/')[0]


def module_of(path):
    return os.path.splitext(path)[0]


def include_edges(root, files):
    by_rel = set(files)
    edges = set()
    for f in files:
        with open(os.path.join(root, f), encoding='utf-8', errors='replace') as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            cands = [os.path.normpath(os.path.join(os.path.dirname(f), inc))]
            cands += [p for p in by_rel if p.endswith('/' + inc) or p == inc]
            hit = next((c for c in cands if c in by_rel), None)
            if hit and module_of(hit) != module_of(f):
                edges.add((module_of(f), module_of(hit), 'include ' + inc))
    return edges


def symbol_edges(root, build):
    cmds = json.load(open(os.path.join(build, 'compile_commands.json')))
    defs, uses = {}, []
    for c in cmds:
        src = os.path.relpath(os.path.normpath(os.path.join(c['directory'], c['file'])), root)
        if layer(src) not in RANK:
            continue
        obj = os.path.join(c['directory'], c['output'])
        if not os.path.exists(obj):
            continue
        out = subprocess.run(['nm', '-P', obj], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            name, kind = parts[0], parts[1]
            if kind == 'U':
                uses.append((module_of(src), name))
            elif kind in 'TDBRVW' and kind.isupper():
                defs.setdefault(name, module_of(src))
    return {(m, defs[s], 'calls ' + s) for m, s in uses if s in defs and defs[s] != m}


def sccs(nodes, adj):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1
        stack.append(v); on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def long_functions(root, files, limit):
    """Functions in kernel style: a '{' alone in column 0 opens one, a '}' closes it."""
    found = []
    for f in sorted(x for x in files if x.endswith('.c')):
        lines = open(os.path.join(root, f), encoding='utf-8', errors='replace').read().split('\n')
        start = None
        for i, line in enumerate(lines):
            if line == '{':
                start = i
            elif line.startswith('}') and start is not None:
                head = i - start + 1
                if head > limit:
                    name = next((l for l in reversed(lines[max(0, start - 4):start]) if '(' in l), '?')
                    found.append((head, f, start, name.strip()))
                start = None
    for n, f, at, name in sorted(found, reverse=True):
        print(f'{n:5} {f}:{at}  {name}')
    return 1 if found else 0


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = [a for a in sys.argv[1:] if not a.startswith('--') and not a.isdigit()]
    build = os.path.abspath(args[0] if args else os.path.join(root, 'build'))
    files = []
    for top in RANK:
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.relpath(os.path.join(d, x), root) for x in names if x.endswith(('.c', '.h'))]
    if '--long' in sys.argv:
        return long_functions(root, files, int(sys.argv[sys.argv.index('--long') + 1]))
    edges = include_edges(root, files) | symbol_edges(root, build)
    why, adj = {}, {}
    for a, b, w in sorted(edges):
        why.setdefault((a, b), w)
        adj.setdefault(a, set()).add(b)
    if '--dot' in sys.argv:
        print('digraph quash {')
        for a, b in sorted(why):
            print(f'  "{a}" -> "{b}";')
        print('}')
        return 0
    bad = 0
    for comp in sccs({m for e in why for m in e}, adj):
        bad += 1
        inside = [f'{a} -> {b} ({why[(a, b)]})' for (a, b) in sorted(why) if a in comp and b in comp]
        print('circle: ' + ', '.join(comp))
        for e in inside:
            print('    ' + e)
    for (a, b), w in sorted(why.items()):
        la, lb = layer(a), layer(b)
        if la != lb and RANK[lb] >= RANK[la]:
            bad += 1
            print(f'arrow {"up" if RANK[lb] > RANK[la] else "across"}: {a} -> {b} ({w})')
    print(f'{len(why)} arrows between {len({m for e in why for m in e})} modules; {bad} problems')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
