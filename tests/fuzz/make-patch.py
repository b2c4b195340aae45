#!/usr/bin/env python3
"""make-patch.py - write a reproducer as a patch against a seed image, the
form tests/fuzz/regress/*.patch take and t-fuzz-regress.sh applies.

    make-patch.py SEEDS-DIR INPUT [COMMENT]    prints the patch, or exits 1

SEEDS-DIR is tests/fuzz/make-seeds.sh's OUTDIR/seeds.  The seed chosen is
the one INPUT differs least from (INPUT no longer than it, at most 64
changed bytes in at most 8 runs).  The patch's lines:

    seed NAME            the seed, OUTDIR/seeds/NAME.sqfs
    sha256 HEX           the seed's hash: a patch made against other bytes
                         (a newer mksquashfs or compressor) reproduces nothing
    # COMMENT
    OFFSET HEX           bytes to write at OFFSET
    truncate N           the image cut to N bytes
"""
import hashlib
import os
import sys

MAX_BYTES, MAX_RUNS = 64, 8


def runs_between(seed, data):
    """The changed [start, end] runs of data against seed (runs closer than 4 bytes merged), or None."""
    if len(data) > len(seed):
        return None
    runs = []
    for i in range(len(data)):
        if data[i] != seed[i]:
            if runs and i <= runs[-1][1] + 4:
                runs[-1][1] = i
            else:
                runs.append([i, i])
            if len(runs) > MAX_RUNS:
                return None
    if sum(b - a + 1 for a, b in runs) > MAX_BYTES:
        return None
    return runs


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    seeds_dir, path = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    best = None
    for f in sorted(os.listdir(seeds_dir)):
        if not f.endswith(".sqfs"):
            continue
        seed = open(os.path.join(seeds_dir, f), "rb").read()
        runs = runs_between(seed, data)
        if runs is None:
            continue
        cost = sum(b - a + 1 for a, b in runs) + (8 if len(data) < len(seed) else 0)
        if best is None or cost < best[0]:
            best = (cost, f[:-5], seed, runs)
    if best is None:
        sys.exit("make-patch.py: %s: no seed within %d bytes in %d runs" % (path, MAX_BYTES, MAX_RUNS))
    _, name, seed, runs = best
    print("seed %s" % name)
    print("sha256 %s" % hashlib.sha256(seed).hexdigest())
    if len(sys.argv) == 4:
        print("# %s" % sys.argv[3])
    for a, b in runs:
        print("%d %s" % (a, data[a:b + 1].hex()))
    if len(data) < len(seed):
        print("truncate %d" % len(data))


main()
