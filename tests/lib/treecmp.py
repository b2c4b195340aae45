#!/usr/bin/env python3
"""treecmp.py A B: compare two directory trees entry by entry, as extracted
from one squashfs image by two tools.

Compared for every entry (the tops included): the set of names, type, full
mode, uid, gid, mtime (of directories and symlinks too, never followed),
size and contents of regular files, symlink targets, rdev of devices, all
xattrs, and hard-link grouping (which paths share one inode).  Holes need
not match: contents are compared over the union of both files' data
regions, and a hole reads as zeros.

Prints one line per difference (at most --max, default 20) and exits 1 if
there is any, 0 if the trees are the same.
"""
import argparse
import os
import stat
import sys

CHUNK = 1 << 20


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    return {n: os.getxattr(path, n, follow_symlinks=False) for n in sorted(names)}


def data_regions(fd, size):
    """The [start, end) ranges of fd that hold data, by SEEK_DATA/SEEK_HOLE."""
    regions, off = [], 0
    while off < size:
        try:
            start = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        regions.append((start, end))
        off = end
    return regions


def same_contents(a, b, size):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        ranges = sorted(data_regions(fa.fileno(), size) + data_regions(fb.fileno(), size))
        done = 0
        for start, end in ranges:
            start = max(start, done)
            while start < end:
                n = min(CHUNK, end - start)
                if os.pread(fa.fileno(), n, start) != os.pread(fb.fileno(), n, start):
                    return False
                start += n
            done = max(done, end)
    return True


class Compare:
    def __init__(self, a, b, limit):
        self.a, self.b, self.limit = a, b, limit
        self.diffs = 0
        self.links_a, self.links_b = {}, {}    # inode -> set of relative paths

    def report(self, rel, what):
        self.diffs += 1
        if self.diffs <= self.limit:
            print("%r: %s" % (rel or ".", what))

    def entry(self, rel):
        pa, pb = os.path.join(self.a, rel), os.path.join(self.b, rel)
        sa, sb = os.lstat(pa), os.lstat(pb)
        if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
            self.report(rel, "type %o vs %o" % (stat.S_IFMT(sa.st_mode), stat.S_IFMT(sb.st_mode)))
            return
        for field in ("st_mode", "st_uid", "st_gid", "st_mtime"):
            # Whole seconds from the nanoseconds: the float st_mtime of a
            # time 1-120 ns short of a second rounds up to the next one.
            va, vb = ((sa.st_mtime_ns // 10**9, sb.st_mtime_ns // 10**9) if field == "st_mtime"
                      else (getattr(sa, field), getattr(sb, field)))
            if va != vb:
                self.report(rel, "%s %o vs %o" % (field, va, vb) if field == "st_mode"
                            else "%s %d vs %d" % (field, va, vb))
        xa, xb = xattrs(pa), xattrs(pb)
        if xa != xb:
            self.report(rel, "xattrs %r vs %r" % (xa, xb))
        if stat.S_ISDIR(sa.st_mode):
            self.directory(rel)
            return
        if sa.st_nlink > 1:
            self.links_a.setdefault(sa.st_ino, set()).add(rel)
        if sb.st_nlink > 1:
            self.links_b.setdefault(sb.st_ino, set()).add(rel)
        if stat.S_ISLNK(sa.st_mode):
            ta, tb = os.readlink(pa), os.readlink(pb)
            if ta != tb:
                self.report(rel, "target %r vs %r" % (ta, tb))
        elif stat.S_ISREG(sa.st_mode):
            if sa.st_size != sb.st_size:
                self.report(rel, "size %d vs %d" % (sa.st_size, sb.st_size))
            elif not same_contents(pa, pb, sa.st_size):
                self.report(rel, "contents differ")
        elif stat.S_ISCHR(sa.st_mode) or stat.S_ISBLK(sa.st_mode):
            if sa.st_rdev != sb.st_rdev:
                self.report(rel, "rdev %d,%d vs %d,%d" % (os.major(sa.st_rdev), os.minor(sa.st_rdev),
                                                          os.major(sb.st_rdev), os.minor(sb.st_rdev)))

    def directory(self, rel):
        na = set(os.listdir(os.path.join(self.a, rel) if rel else self.a))
        nb = set(os.listdir(os.path.join(self.b, rel) if rel else self.b))
        for n in sorted(na - nb):
            self.report(os.path.join(rel, n), "only in A")
        for n in sorted(nb - na):
            self.report(os.path.join(rel, n), "only in B")
        for n in sorted(na & nb):
            self.entry(os.path.join(rel, n))

    def hard_links(self):
        group_a = {p: g for g in self.links_a.values() for p in g}
        group_b = {p: g for g in self.links_b.values() for p in g}
        for p in sorted(set(group_a) | set(group_b)):
            ga, gb = group_a.get(p, {p}), group_b.get(p, {p})
            if ga != gb:
                self.report(p, "hard links %s vs %s" % (sorted(ga), sorted(gb)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--max", type=int, default=20)
    args = ap.parse_args()
    c = Compare(args.a, args.b, args.max)
    c.entry("")
    c.hard_links()
    if c.diffs:
        print("%d differences" % c.diffs)
    return 1 if c.diffs else 0


if __name__ == "__main__":
    sys.exit(main())
