#!/usr/bin/env python3
"""mutate.py - deterministic corruptions of seed images for t-fuzz-regress.sh.

    mutate.py OUTDIR COUNT SEED...

Writes COUNT files to OUTDIR, the same ones on every run: superblock fields
set to edge values, words in the metadata tables (everything from the inode
table to the end) set to edge values, bit flips anywhere, truncations.
Seeds with uncompressed metadata get half of the mutations, since there a
changed byte changes a structure instead of breaking a compressed stream.
"""
import os
import random
import struct
import sys

# Offsets and widths of the superblock fields (squashfs_fs.h).
SUPER_FIELDS = [(0, 4), (4, 4), (8, 4), (12, 4), (16, 4), (20, 2), (22, 2), (24, 2), (26, 2), (28, 2),
                (30, 2), (32, 8), (40, 8), (48, 8), (56, 8), (64, 8), (72, 8), (80, 8), (88, 8)]
EDGES = [0, 1, 2, 3, 0x7f, 0x80, 0xff, 0x100, 0x1fff, 0x2000, 0x2001, 0x7fff, 0x8000, 0xffff, 0x10000,
         0xffffff, 0x1000000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 0x100000000,
         0x7fffffffffffffff, 0xffffffffffffffff]


def put(img, off, width, value):
    if off + width <= len(img):
        img[off:off + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, 'little')


def mutate(rnd, seed):
    img = bytearray(seed)
    inode_start = struct.unpack_from('<Q', seed, 64)[0] if len(seed) >= 96 else 0
    lo = inode_start if 96 <= inode_start < len(seed) else 96
    kind = rnd.randrange(5)
    if kind == 0:
        off, width = rnd.choice(SUPER_FIELDS)
        value = rnd.choice(EDGES + [len(seed), lo, rnd.randrange(len(seed))])
        put(img, off, width, value)
    elif kind == 1:
        for _ in range(rnd.randint(1, 4)):
            width = rnd.choice([1, 2, 4, 8])
            put(img, rnd.randrange(lo, len(img)), width,
                rnd.choice(EDGES + [rnd.randrange(len(seed)), rnd.randrange(lo, len(seed)) - lo]))
    elif kind == 2:
        for _ in range(rnd.randint(1, 8)):
            pos = rnd.randrange(lo if rnd.random() < 0.8 else 0, len(img))
            img[pos] ^= 1 << rnd.randrange(8)
    elif kind == 3:
        del img[rnd.randrange(96, len(img)):]
    else:
        # a run of bytes copied from elsewhere in the tables: plausible structures in wrong places
        n = rnd.randint(2, 64)
        src, dst = rnd.randrange(lo, len(img)), rnd.randrange(lo, len(img))
        chunk = img[src:src + n]
        img[dst:dst + len(chunk)] = chunk
        del img[len(seed):]
    return bytes(img)


def main():
    out, count, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    seeds = [open(p, 'rb').read() for p in sorted(paths)]
    plain = [s for p, s in zip(sorted(paths), seeds) if 'nocomp' in p] or seeds
    rnd = random.Random(20261202)
    os.makedirs(out, exist_ok=True)
    for i in range(count):
        seed = rnd.choice(plain) if i % 2 == 0 else rnd.choice(seeds)
        with open(os.path.join(out, 'mut-%04d' % i), 'wb') as f:
            f.write(mutate(rnd, seed))


main()
