#!/usr/bin/env python3
"""make-sif.py SQFS OUT OFFSET - a SIF (sylabs/sif pkg/sif layout) around a
squashfs image: 128-byte header, 48 descriptors of 585 bytes, a definition
file object, then the squashfs partition at OFFSET."""
import struct, sys, time, uuid
sqfs = open(sys.argv[1], "rb").read()
out, part_off = sys.argv[2], int(sys.argv[3])
ndescr, dsize, doff, deffile_off = 48, 585, 4096, 32768
deffile = b"bootstrap: scratch\n"
now = int(time.time())

def descriptor(dtype, ident, off, size, name, extra):
    d = struct.pack("<i?III qqq qqqq", dtype, True, ident, 0x1000000 | 1, 0, off, size, size,
                    now, now, 0, 0)
    d += name.encode().ljust(128, b"\0") + extra.ljust(384, b"\0")
    assert len(d) == dsize
    return d

descrs = descriptor(0x4001, 1, deffile_off, len(deffile), "deffile", b"")
descrs += descriptor(0x4004, 2, part_off, len(sqfs), "rootfs", struct.pack("<ii3s", 1, 2, b"02\0"))
descrs = descrs.ljust(ndescr * dsize, b"\0")
header = b"#!/usr/bin/env run-singularity\n".ljust(32, b"\0") + b"SIF_MAGIC\0" + b"01\0" + b"02\0"
header += uuid.uuid4().bytes + struct.pack("<qqqqqqqq", now, now, ndescr - 2, ndescr, doff,
                                           ndescr * dsize, deffile_off, part_off + len(sqfs) - deffile_off)
assert len(header) == 128
with open(out, "wb") as f:
    f.write(header)
    f.seek(doff); f.write(descrs)
    f.seek(deffile_off); f.write(deffile)
    f.seek(part_off); f.write(sqfs)
