#!/usr/bin/env python3
"""readall.py SRC MOUNT - every file under SRC read through MOUNT and compared
with SRC's bytes: one line per file on stdout, "ok PATH", "eio PATH",
"wrong PATH" (read, but not SRC's bytes) or "err PATH ERRNO"."""
import errno, os, sys
src, mnt = sys.argv[1], sys.argv[2]
for d, _, files in os.walk(src):
    for f in sorted(files):
        rel = os.path.relpath(os.path.join(d, f), src)
        want = open(os.path.join(src, rel), 'rb').read()
        try:
            with open(os.path.join(mnt, rel), 'rb') as fh:
                got = fh.read()
            print(('ok ' if got == want else 'wrong ') + rel)
        except OSError as e:
            print(('eio ' if e.errno == errno.EIO else 'err ') + rel + ('' if e.errno == errno.EIO else ' %d' % e.errno))
