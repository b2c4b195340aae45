#!/usr/bin/env python3
"""corrupt.py: make corrupted copies of squashfs images and run quash on them.

    corrupt.py --quash BIN --work DIR [--seed N] [--per-region N]
               [--stat PATH]... [--cat PATH]... IMAGE...
    corrupt.py write DIR SEED PER-REGION [--only LABEL,...] IMAGE...
    corrupt.py patch IMAGE rename OLD NEW | patch IMAGE point NAME

For every IMAGE it writes variants into DIR: truncations (at fixed points,
at and around every table start, and at random points), and overwrites of
one to eight bytes in every field of the superblock and at random places in
every region (compressor options, data, inode table, directory table, and
the fragment, export, id and xattr tables), and last a block_log one more
and one less than block_size's.  The PRNG is seeded, so the
corpus is the same on every run.

Each variant goes through info, ls -lR, stat, cat and extract, each under
`timeout`.  A run passes if it exits 0 (the damage was harmless) or 1, and
every line it wrote to stderr starts with "quash: IMAGE: "; extract must also
leave nothing outside its target directory, which it is given inside an
otherwise empty sandbox.  Exit 98/99 (UBSan/ASan), signals, timeouts and
other statuses fail.

Some damage has one right answer, which every tool must give: exit 1 and
one line with the exact message.  These are a truncation below bytes_used
("too small to be a squashfs image", "image is truncated: superblock says
N bytes, file holds M"), and a changed magic ("bad magic"), version
("squashfs M.N: not supported") or block_log ("bad superblock: block size
B (log L)").

With --unsquashfs BIN, each variant is also extracted by BIN (Debian's
unsquashfs) and, where both it and quash extract exit 0, the two trees
must be the same (tests/lib/treecmp.py: names, types, modes, owners,
mtimes, xattrs, sizes, contents, symlink targets, devices, hard links).
One exception: where damage in the inode or directory table gives two
entries one inode number, unsquashfs links them, and quash links only an
inode that counts more than one link, so separate copies pass there.
Where only one of the two accepts a variant, that is counted, not failed:
on damaged data the readers check different fields (unsquashfs ignores
the unused high bits of the root inode reference, which quash refuses;
quash takes an export table start of all ones as no export table, as
mksquashfs writes it).  --verbose names those variants; the counts are
printed per image in a '#' line.

LeakSanitizer's check at exit costs more than the run it checks (over
half of an ASan `quash info`), so one variant in LEAK_EVERY runs its
tools with it and the rest without; every tool's error paths are still
leak-checked on about a hundred variants per run.

Prints TAP lines for each image: one per tool, one for the variants with
one right answer, and with --unsquashfs one for the trees, each with the
first failures.

`write` only writes the same variants (DIR/BASE/vNNN.sqfs, seeded as the
run above seeds them) and DIR/BASE/labels.txt ("vNNN.sqfs<TAB>label"), for
a test that serves them some other way (t-mount-catalog-hostile.sh);
--only keeps those whose label starts with one of the LABELs ("inode
table", "truncate", ...), numbered as in the whole set.
`patch` overwrites one directory entry of an image made with -noI (its
tables stored uncompressed): its name (same length), or the inode it points
at, made the root directory's (a directory loop).
"""
import argparse
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import treecmp  # noqa: E402  (beside this file)

SUPER = struct.Struct("<IIIIIHHHHHHQQQQQQQQ")
# (name, offset, size) of each superblock field
FIELDS = [("magic", 0, 4), ("inode_count", 4, 4), ("mkfs_time", 8, 4), ("block_size", 12, 4),
          ("fragment_count", 16, 4), ("compressor", 20, 2), ("block_log", 22, 2), ("flags", 24, 2),
          ("id_count", 26, 2), ("version_major", 28, 2), ("version_minor", 30, 2),
          ("root_inode", 32, 8), ("bytes_used", 40, 8), ("id_table", 48, 8), ("xattr_table", 56, 8),
          ("inode_table", 64, 8), ("directory_table", 72, 8), ("fragment_table", 80, 8),
          ("export_table", 88, 8)]
TIMEOUT = 20
LEAK_EVERY = 3     # one variant in this many runs with LeakSanitizer's check at exit
SLOW = []          # (seconds, tool, variant) of every run, for the report
NO_TABLE = 0xffffffffffffffff


def regions(img):
    """Named [start, end) byte ranges of the image's parts, in order."""
    sb = SUPER.unpack_from(img)
    bytes_used = sb[12]
    starts = {"inode table": sb[15], "directory table": sb[16], "fragment table": sb[17],
              "export table": sb[18], "id table": sb[13], "xattr table": sb[14]}
    marks = sorted((v, k) for k, v in starts.items() if v != NO_TABLE and v < bytes_used)
    out = [("superblock", 0, 96)]
    data_end = marks[0][0] if marks else bytes_used
    out.append(("data and options", 96, data_end))
    for i, (start, name) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else bytes_used
        out.append((name, start, max(end, start + 1)))
    return out, [m[0] for m in marks]


def variants(img, rnd, per_region):
    """(label, bytes) pairs."""
    size = len(img)
    regs, starts = regions(img)
    cuts = {0, 1, 4, 50, 95, 96, 97, size - 1, size - 8}
    for s in starts:
        cuts.update({s - 1, s, s + 1})
    cuts.update(rnd.randrange(1, size) for _ in range(5))
    for c in sorted(x for x in cuts if 0 <= x < size):
        yield "truncate at %d" % c, img[:c]
    for name, off, n in FIELDS:
        for _ in range(2 if n > 2 else 1):
            b = bytearray(img)
            i = off + rnd.randrange(n)
            b[i] ^= rnd.randrange(1, 256)
            yield "superblock %s byte %d" % (name, i), bytes(b)
        b = bytearray(img)
        b[off:off + n] = b"\xff" * n
        yield "superblock %s all ones" % name, bytes(b)
    for name, start, end in regs[1:]:
        end = min(end, size)
        if start >= end:
            continue
        for k in range(per_region):
            b = bytearray(img)
            i = rnd.randrange(start, end)
            if k % 3 == 2:          # a run of garbage
                run = min(8, end - i)
                b[i:i + run] = rnd.randbytes(run)
            else:
                b[i] ^= 1 << rnd.randrange(8) if k % 3 == 0 else rnd.randrange(1, 256)
            yield "%s byte %d" % (name, i), bytes(b)
    # A block_log one off, still in range, disagrees with block_size: random
    # bytes rarely land there.
    for step in (1, -1):
        b = bytearray(img)
        struct.pack_into("<H", b, 22, struct.unpack_from("<H", b, 22)[0] + step)
        yield "superblock block_log %+d" % step, bytes(b)


def write_variants(src, out, seed, per_region, only=None):
    """Write src's variants, as main() makes them, to out/BASE/; returns how many were written."""
    base = os.path.basename(src).rsplit(".", 1)[0]
    rnd = random.Random("%d:%s" % (seed, base))
    d = os.path.join(out, base)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(src, "rb") as f:
        img = f.read()
    written = 0
    with open(os.path.join(d, "labels.txt"), "w") as labels:
        for n, (label, data) in enumerate(variants(img, rnd, per_region)):
            if only and not label.startswith(tuple(only)):
                continue
            with open(os.path.join(d, "v%03d.sqfs" % n), "wb") as f:
                f.write(data)
            labels.write("v%03d.sqfs\t%s\n" % (n, label))
            written += 1
    return written


def patch_entry(path, how, name, new=None):
    """One directory entry of a -noI image: renamed to new (same length), or ("point") made the root."""
    with open(path, "rb") as f:
        img = bytearray(f.read())
    sb = SUPER.unpack_from(img)
    root_ref, dir_start = sb[11], sb[16]
    a = name.encode()
    pos = img.find(a, dir_start)
    if pos < 0 or img.find(a, pos + 1) >= 0:
        raise SystemExit("corrupt.py patch: %r must be in the directory table once" % name)
    if how == "rename":
        b = new.encode()
        if len(b) != len(a):
            raise SystemExit("corrupt.py patch: the new name must be as long as the old")
        img[pos:pos + len(a)] = b
    elif how == "point":
        # The entry before the name: offset u16, inode_offset s16, type u16, size u16.
        # Small images keep every inode in metadata block 0: the offset alone
        # makes the entry point at the root directory's inode.
        if root_ref >> 16 != 0:
            raise SystemExit("corrupt.py patch: the root inode is not in the first metadata block")
        struct.pack_into("<H", img, pos - 8, root_ref & 0xffff)
    else:
        raise SystemExit("corrupt.py patch: rename or point, not %r" % how)
    with open(path, "wb") as f:
        f.write(img)


def must_reject(label, img):
    """The message (a regex) every tool must fail with on this variant, or None."""
    sb = SUPER.unpack_from(img) if len(img) >= 96 else None
    m = re.match(r"truncate at (\d+)$", label)
    if m:
        cut = int(m.group(1))
        if cut < 96:
            return re.escape("too small to be a squashfs image (%d bytes)" % cut)
        if cut < sb[12]:
            return re.escape("image is truncated: superblock says %d bytes, file holds %d" % (sb[12], cut))
        return None
    m = re.match(r"superblock (magic|version_major|version_minor|block_log) ", label)
    if not m:
        return None
    if m.group(1) == "magic":
        return re.escape("not a squashfs image (bad magic)")
    if m.group(1).startswith("version"):
        return re.escape("squashfs %d.%d: not supported (only 4.0)" % (sb[9], sb[10]))
    return re.escape("bad superblock: block size %d (log %d)" % (sb[3], sb[6]))


def check_stderr(text, image):
    prefix = "quash: %s: " % image
    for line in text.splitlines():
        if not line.startswith(prefix):
            return "stray stderr line %r" % line[:200]
    return None


def unsquashfs(args, image, ref):
    """Extract image with args.unsquashfs into ref; its exit status (a timeout counts as a refusal)."""
    try:
        p = subprocess.run(["timeout", "-s", "KILL", str(TIMEOUT), args.unsquashfs, "-n", "-q", "-d", ref,
                            image], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return 127
    return p.returncode


def compare(ref, out, label):
    """None if the trees at ref and out are the same, else the first differences.

    Damage in the inode or directory table can give two entries one inode
    number; unsquashfs then links them, quash only an inode that counts
    more than one link, so there quash's separate unlinked copies pass."""
    lines = []
    c = treecmp.Compare(ref, out, 3)
    lenient = label.split(" (", 1)[-1].startswith(("inode table", "directory table"))

    def report(rel, what):
        if lenient and what.startswith("hard links") and os.lstat(os.path.join(out, rel)).st_nlink == 1:
            return
        c.diffs += 1
        if len(lines) < 3:
            lines.append("%r: %s" % (rel or ".", what))
    c.report = report
    c.entry("")
    c.hard_links()
    return "; ".join(lines) if c.diffs else None


def run_one(args, tool, image, label, sandbox, leaks, expect):
    if tool == "info":
        cmd = [args.quash, "info", image]
    elif tool == "ls":
        cmd = [args.quash, "ls", "-lR", image]
    elif tool == "stat":
        cmd = [args.quash, "stat", image] + args.stat
    elif tool == "cat":
        cmd = [args.quash, "cat", image] + args.cat
    else:
        os.mkdir(sandbox)
        cmd = [args.quash, "extract", image, "-C", os.path.join(sandbox, "out")]
    t0 = time.monotonic()
    try:
        env = dict(os.environ)
        if not leaks:
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "").replace("detect_leaks=1", "") + ":detect_leaks=0"
        p = subprocess.run(["timeout", "-s", "KILL", str(TIMEOUT)] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env)
    except OSError as e:
        return "cannot run: %s" % e
    SLOW.append((time.monotonic() - t0, tool, label))
    err = p.stderr.decode(errors="replace")
    why = None
    if p.returncode not in (0, 1):
        why = "exit %d: %s" % (p.returncode, err[-600:].replace("\n", " | "))
    elif p.returncode == 1 and not err:
        why = "exit 1 without a message"
    else:
        why = check_stderr(err, image)
    if expect and not why:
        lines = err.splitlines()
        if p.returncode != 1 or len(lines) != 1 or not re.fullmatch(re.escape("quash: %s: " % image) + expect,
                                                                     lines[0]):
            why = "exit %d, not 1 with /%s/: %s" % (p.returncode, expect, err[:300].replace("\n", " | "))
    verdict = None
    if tool == "extract":
        left = sorted(os.listdir(sandbox))
        if left not in (["out"], []):
            why = why or "extract wrote outside its directory: %s" % left
        if args.unsquashfs:
            ref = sandbox + "-ref"
            u = unsquashfs(args, image, ref)
            verdict = ("quash" if p.returncode == 0 else "") + ("+unsquashfs" if u == 0 else "")
            if p.returncode == 0 and u == 0 and not why:
                diff = compare(ref, os.path.join(sandbox, "out"), label)
                if diff:
                    why = "extract differs from unsquashfs: %s" % diff
                    verdict = "differ"
            shutil.rmtree(ref, ignore_errors=True)
        shutil.rmtree(sandbox, ignore_errors=True)
    return ("%s: %s" % (label, why) if why else None), verdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quash", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-region", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--stat", action="append", default=[])
    ap.add_argument("--cat", action="append", default=[])
    ap.add_argument("--unsquashfs", help="extract every variant with this too, and compare")
    ap.add_argument("--verbose", action="store_true", help="name each variant only one of them accepts")
    ap.add_argument("images", nargs="+")
    args = ap.parse_args()
    tools = ["info", "ls", "stat", "cat", "extract"]
    total = 0
    failed_any = False
    for src in args.images:
        base = os.path.basename(src).rsplit(".", 1)[0]
        rnd = random.Random("%d:%s" % (args.seed, base))
        d = os.path.join(args.work, base)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        jobs = []
        with open(src, "rb") as f:
            img = f.read()
        for n, (label, data) in enumerate(variants(img, rnd, args.per_region)):
            path = os.path.join(d, "v%03d.sqfs" % n)
            with open(path, "wb") as f:
                f.write(data)
            expect = must_reject(label, data)
            for tool in tools:
                jobs.append((tool, path, "%s (%s)" % (os.path.basename(path), label),
                             os.path.join(d, "sandbox-%03d" % n), n % LEAK_EVERY == 0, expect))
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda j: (j[0], j[5], run_one(args, *j)), jobs))
        count = len(jobs) // len(tools)
        total += count
        for tool in tools:
            fails = [r for t, e, (r, v) in results if t == tool and r and not e]
            name = "corrupt %s: %s on %d variants" % (base, tool, count)
            if fails:
                failed_any = True
                print("not ok - %s: %d failed, e.g. %s" % (name, len(fails), " || ".join(fails[:3])))
            else:
                print("ok - %s" % name)
        # The variants with one right answer, over every tool.
        fails = ["%s %s" % (t, r) for t, e, (r, v) in results if e and r]
        name = "corrupt %s: %d variants truncated below bytes_used or with a damaged magic, version or " \
            "block_log refused by every tool, in the exact words" % (base, len({j[1] for j in jobs if j[5]}))
        if fails:
            failed_any = True
            print("not ok - %s: %d failed, e.g. %s" % (name, len(fails), " || ".join(fails[:3])))
        else:
            print("ok - %s" % name)
        if args.unsquashfs:
            # verdict of each variant's extract: who accepted it ("differ": both, with different trees)
            verdicts = {j[2]: v for j, (t, e, (r, v)) in zip(jobs, results) if t == "extract"}
            n = {k: sum(1 for v in verdicts.values() if v == k)
                 for k in ("quash+unsquashfs", "differ", "quash", "+unsquashfs", "")}
            both = n["quash+unsquashfs"] + n["differ"]
            differ = [r for t, e, (r, v) in results if v == "differ"]
            name = "corrupt %s: extract gives unsquashfs's tree wherever both accept (%d of %d variants)" % (
                base, both, count)
            if differ:
                failed_any = True
                print("not ok - %s: %d differ, e.g. %s" % (name, len(differ), " || ".join(differ[:3])))
            else:
                print("ok - %s" % name)
            print("# %s: quash extract accepts %d, rejects %d; unsquashfs accepts %d, rejects %d; both accept %d, "
                  "only quash %d, only unsquashfs %d, neither %d" % (
                      base, both + n["quash"], count - both - n["quash"], both + n["+unsquashfs"],
                      count - both - n["+unsquashfs"], both, n["quash"], n["+unsquashfs"], n[""]))
            if args.verbose:
                for label, v in sorted(verdicts.items()):
                    if v in ("quash", "+unsquashfs"):
                        print("#   only %s accepts %s" % (v.lstrip("+"), label))
        shutil.rmtree(d, ignore_errors=True)
    print("# %d corrupted images in all; slowest runs: %s" % (total, ", ".join(
        "%s %s %.1fs" % (t, l, s) for s, t, l in sorted(SLOW, reverse=True)[:3])))
    return 1 if failed_any else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"] and len(sys.argv) >= 6:
        srcs, only = sys.argv[5:], None
        if srcs[0] == "--only" and len(srcs) >= 3:
            srcs, only = srcs[2:], srcs[1].split(",")
        for src in srcs:
            print(write_variants(src, sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), only))
        sys.exit(0)
    if sys.argv[1:2] == ["patch"] and len(sys.argv) in (5, 6):
        patch_entry(*sys.argv[2:])
        sys.exit(0)
    sys.exit(main())
