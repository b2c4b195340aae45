#!/usr/bin/env python3
"""catalog_load.py - one user's load on a catalog mount, for t-mount-catalog-shared.sh.

    catalog_load.py MODE --mp MP --seconds S [--uid UID] [--images N] [--dir DIR] [--image FILE]

Runs as UID (root may drop to any) for S seconds, then exits 0.  Modes:

  victim    lookups of names not there inside MP/img1 and reads of
            MP/img1/data with its page cache dropped first, so that every
            operation reaches the daemon; prints "median_ms p99_ms count"
  ordinary  the same kind of work in the other images: a user like the victim
  ctl       opens of .quash-refresh and .quash-catalog, read and closed, and
            as many .quash-catalog opens held as the daemon gives
  miss      lookups of names that are not images: the image files' own names
            (imgK.sqfs), random names, names below a directory
  hold      every image's root directory opened and held
  writer    a directory writer: new images copied into DIR, images there
            touched, renamed over and removed (IMAGE is what is copied)
  slow      reads of a file in MP/slow/IMAGE, an image whose file hangs
"""
import argparse
import errno
import os
import shutil
import sys
import time


def drop_to(uid):
    if uid is not None and os.getuid() != uid:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def timed(fn, lat):
    t = time.monotonic()
    fn()
    lat.append(time.monotonic() - t)


def expect_missing(path):
    try:
        os.stat(path)
    except FileNotFoundError:
        return
    raise SystemExit(f"{path}: found")


def read_cold(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 17):
            pass
    finally:
        os.close(fd)


def work_in(mp, img, i, lat):
    timed(lambda: expect_missing(f"{mp}/{img}/nx-{os.getpid()}-{i}"), lat)
    if i % 4 == 0:
        timed(lambda: read_cold(f"{mp}/{img}/data"), lat)


def quiet(fn):
    try:
        fn()
    except OSError:
        pass


def read_ctl(path):
    with open(path, "rb") as f:
        f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--mp", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--uid", type=int)
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--dir")
    ap.add_argument("--image")
    a = ap.parse_args()
    drop_to(a.uid)
    end = time.monotonic() + a.seconds
    mp, i, lat, held = a.mp, 0, [], []
    while time.monotonic() < end:
        i += 1
        if a.mode == "victim":
            work_in(mp, "img1", i, lat)
        elif a.mode == "ordinary":
            work_in(mp, f"img{2 + i % (a.images - 1)}", i, [])
        elif a.mode == "ctl":
            quiet(lambda: read_ctl(f"{mp}/.quash-refresh"))
            quiet(lambda: read_ctl(f"{mp}/.quash-catalog"))
            try:
                held.append(open(f"{mp}/.quash-catalog", "rb"))
            except OSError:
                pass
        elif a.mode == "miss":
            quiet(lambda: os.stat(f"{mp}/img{1 + i % a.images}.sqfs"))
            quiet(lambda: os.stat(f"{mp}/none-{os.getpid()}-{i}"))
            quiet(lambda: os.stat(f"{mp}/w/none-{os.getpid()}-{i}"))
        elif a.mode == "hold":
            for k in range(1, a.images + 1):
                try:
                    held.append(os.open(f"{mp}/img{k}", os.O_RDONLY | os.O_DIRECTORY))
                except OSError:
                    pass
            time.sleep(max(0.0, end - time.monotonic()))
        elif a.mode == "writer":
            new = f"{a.dir}/new-{i % 50}.sqfs"
            shutil.copyfile(a.image, f"{new}.tmp")
            os.rename(f"{new}.tmp", new)
            for name in os.listdir(a.dir):
                quiet(lambda: os.utime(f"{a.dir}/{name}"))
            if i % 7 == 0:
                quiet(lambda: os.unlink(f"{a.dir}/new-{(i * 3) % 50}.sqfs"))
        elif a.mode == "slow":
            quiet(lambda: read_ctl(f"{mp}/slow/{a.image}/data"))
        else:
            raise SystemExit(f"unknown mode {a.mode}")
    if a.mode == "victim":
        lat.sort()
        print(f"{lat[len(lat) // 2] * 1000:.3f} {lat[min(len(lat) - 1, len(lat) * 99 // 100)] * 1000:.3f} {len(lat)}")


if __name__ == "__main__":
    sys.exit(main())
