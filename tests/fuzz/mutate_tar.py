#!/usr/bin/env python3
"""mutate_tar.py - hostile tars for t-fuzz-tar.sh, the same on every run.

    mutate_tar.py OUTDIR INDEX...

Writes OUTDIR/case-INDEX.tar for each INDEX: one of six seed tars (ustar,
GNU and pax, each plain and with entries that replace, nest under and link
across one another) with one to four mutations chosen by INDEX alone:
  - a header field set to an edge value (names with "..", "/", NUL;
    octal and base-256 numbers; any type flag), its checksum made right
    again so that the reader takes the header;
  - a pax header put in front of an entry, with records that declare huge
    or negative sizes, sparse maps, odd xattrs, ids beyond 32 bits;
  - an entry (header and data) copied elsewhere; a header zeroed;
  - bit flips anywhere; a truncation.
Seeds are built here, from a fixed random stream, so no binary is kept.
"""
import io
import os
import random
import sys
import tarfile

FIELDS = {'name': (0, 100), 'mode': (100, 8), 'uid': (108, 8), 'gid': (116, 8), 'size': (124, 12),
          'mtime': (136, 12), 'type': (156, 1), 'linkname': (157, 100), 'magic': (257, 8),
          'uname': (265, 32), 'devmajor': (329, 8), 'devminor': (337, 8), 'prefix': (345, 155)}
NUMS = [b'0', b'1', b'777', b'7777777', b'77777777777', b'777777777777', b'-1', b'99', b'',
        b'0000000\0', b'17777777777']
NAMES = [b'..', b'../x', b'/', b'//', b'.', b'./', b'a/../../b', b'/etc/passwd', b'd/a/b', b'd', b'd/',
         b'x' * 100, b'a\0b', b'\xff\xfe', b'e/f', b'e/f/g/deep', b'fifo/x', b'dev/null/y', b'd/link/z', b'']
TYPES = b'0123456789LKxgSVMDAEIN\0'
PAX = [b'path=../../../../etc/x', b'path=', b'size=99999999999999', b'size=-5', b'linkpath=..',
       b'mtime=-1e30', b'mtime=1e30', b'SCHILY.xattr.user.k=', b'SCHILY.xattr.trusted.' + b'k' * 300 + b'=v',
       b'SCHILY.xattr.=v', b'GNU.sparse.major=1', b'GNU.sparse.minor=0',
       b'GNU.sparse.map=0,10,99999999999,1', b'GNU.sparse.size=1099511627776',
       b'GNU.sparse.realsize=99999999999', b'uid=4294967296', b'gid=-1', b'LIBARCHIVE.xattr.user.a=AAAA',
       b'SCHILY.dev=1', b'SCHILY.nlink=9']


def seed_tars():
    rnd = random.Random(2026)
    seeds = []
    for fmt in (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        for variant in (0, 1):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode='w', format=fmt) as tf:
                def add(name, typ=tarfile.REGTYPE, data=b'', **kw):
                    ti = tarfile.TarInfo(name)
                    ti.type = typ
                    ti.size = len(data) if typ == tarfile.REGTYPE else 0
                    ti.mtime, ti.mode, ti.uid, ti.gid = 1700000000, kw.get('mode', 0o644), 1000, 1000
                    ti.linkname = kw.get('linkname', '')
                    ti.pax_headers = kw.get('pax', {})
                    if 'dev' in kw:
                        ti.devmajor, ti.devminor = kw['dev']
                    tf.addfile(ti, io.BytesIO(data) if typ == tarfile.REGTYPE else None)
                add('d/', tarfile.DIRTYPE, mode=0o755)
                add('d/a', data=b'hello world\n')
                add('d/big', data=rnd.randbytes(70000) + b'x' * 200000)
                add('d/zero', data=b'\0' * 300000)
                add('d/link', tarfile.SYMTYPE, linkname='a')
                add('d/hard', tarfile.LNKTYPE, linkname='d/a')
                add('e/f/g/deep', data=b'deep')
                add('dev/null', tarfile.CHRTYPE, dev=(1, 3))
                add('dev/sda', tarfile.BLKTYPE, dev=(8, 0))
                add('fifo', tarfile.FIFOTYPE)
                if fmt != tarfile.USTAR_FORMAT:
                    add('L' * 150 + '/' + 'n' * 120, data=b'long')
                if fmt == tarfile.PAX_FORMAT:
                    add('x', data=b'xattr', pax={'SCHILY.xattr.user.k': 'v'})
                    add('d/', tarfile.DIRTYPE, mode=0o700, pax={'mtime': '123.5'})
                add('d/a', data=b'replaced\n')
                add('./dot/./x', data=b'dot')
                if variant:
                    add('d', data=b'dir replaced by a file')
                    add('d/again', data=b'again')
                    add('h2', tarfile.LNKTYPE, linkname='e/f/g/deep')
                    add('e', tarfile.SYMTYPE, linkname='/etc')
                    add('e/through', data=b'via symlink?')
            seeds.append(buf.getvalue())
    return seeds


def fix_checksum(h):
    h[148:156] = b' ' * 8
    h[148:156] = b'%06o\0 ' % sum(h[:512])


def headers(b):
    offs, i = [], 0
    while i + 512 <= len(b):
        h = b[i:i + 512]
        if h[257:262] == b'ustar':
            offs.append(i)
            try:
                size = int(h[124:136].strip(b'\0 ') or b'0', 8)
            except ValueError:
                size = 0
            i += 512 + (size + 511) // 512 * 512
        else:
            i += 512
    return offs


def mutate(rnd, b):
    b = bytearray(b)
    hs = headers(b)
    for _ in range(rnd.randint(1, 4)):
        kind = rnd.randrange(8) if hs else 6
        h0 = rnd.choice(hs) if hs else 0
        if kind <= 2:
            field = rnd.choice(list(FIELDS))
            off, width = FIELDS[field]
            if field in ('name', 'linkname', 'prefix'):
                v = rnd.choice(NAMES)
            elif field == 'type':
                v = bytes([rnd.choice(TYPES)])
            elif rnd.random() < 0.2:
                v = bytes([0x80]) + rnd.randbytes(width - 1) if rnd.random() < .5 else b'\xff' * width
            else:
                v = rnd.choice(NUMS)
            b[h0 + off:h0 + off + width] = v[:width].ljust(width, b'\0')
            if rnd.random() < 0.95:
                h = b[h0:h0 + 512]
                fix_checksum(h)
                b[h0:h0 + 512] = h
        elif kind == 3:
            recs = b''
            for _ in range(rnd.randint(1, 3)):
                r = rnd.choice(PAX)
                n = len(r) + 3
                n = len(str(n + len(str(n))).encode()) + len(r) + 2
                recs += str(n).encode() + b' ' + r + b'\n'
            h = bytearray(512)
            h[0:8], h[100:108], h[124:136] = b'PaxHeadr', b'0000644\0', b'%011o\0' % len(recs)
            h[156:157], h[257:263], h[263:265] = rnd.choice([b'x', b'g']), b'ustar\0', b'00'
            fix_checksum(h)
            b[h0:h0] = bytes(h) + recs + b'\0' * (-len(recs) % 512)
        elif kind == 4:
            h1 = rnd.choice(hs)
            later = [x for x in hs + [len(b)] if x > h1]
            blob = bytes(b[h1:later[0] if later else len(b)])
            dst = rnd.choice(hs)
            b[dst:dst] = blob
        elif kind == 5:
            del b[rnd.randrange(len(b)):]
        elif kind == 6:
            for _ in range(rnd.randint(1, 6)):
                p = rnd.randrange(len(b))
                b[p] ^= 1 << rnd.randrange(8)
        else:
            h1 = rnd.choice(hs)
            b[h1:h1 + 512] = bytes(512)
        hs = headers(b)
    return bytes(b)


def main():
    out, indices = sys.argv[1], [int(i) for i in sys.argv[2:]]
    os.makedirs(out, exist_ok=True)
    seeds = seed_tars()
    for i in indices:
        rnd = random.Random(i)
        data = mutate(rnd, rnd.choice(seeds))
        with open(os.path.join(out, 'case-%d.tar' % i), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
