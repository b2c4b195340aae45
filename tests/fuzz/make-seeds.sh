#!/bin/bash
# make-seeds.sh - the fuzzer's seed corpus: small mksquashfs images of one
# tree with every feature the reader handles, across all six compressors
# and the flags that change the layout (fragments, tail ends, xattrs,
# exports, uncompressed tables: there a changed byte changes a structure
# rather than breaking a compressed stream, which is what fuzzing needs).
# Nothing binary is kept in git; run this.
#
#   tests/fuzz/make-seeds.sh OUTDIR        writes OUTDIR/tree and OUTDIR/seeds/*.sqfs
set -eu
out=${1:?usage: make-seeds.sh OUTDIR}
tree=$out/tree
rm -rf "$tree" && mkdir -p "$tree" "$out/seeds"

# The tree: kept small so that seeds stay a few KiB and the fuzzer fast.
python3 - "$tree" <<'PYEOF'
import os, random, sys
top = sys.argv[1]
rnd = random.Random(2026)
def put(path, data):
    with open(os.path.join(top, path), 'wb') as f:
        f.write(data)
os.makedirs(os.path.join(top, 'sub/deeper/deepest'))
put('empty', b'')
put('one', b'x')
put('text', b'hello squashfs\n' * 40)
put('random-5k', bytes(rnd.getrandbits(8) for _ in range(5000)))
put('exact-4k', bytes(rnd.getrandbits(8) for _ in range(4096)))
put('sub/deeper/deepest/tail', b'tail end ' * 700)
# sparse: holes at the start, in the middle and at the end
with open(os.path.join(top, 'sparse'), 'wb') as f:
    f.seek(40960); f.write(b'data in the middle'); f.truncate(122880)
os.link(os.path.join(top, 'text'), os.path.join(top, 'sub/hardlink'))
os.symlink('text', os.path.join(top, 'link'))
os.symlink('/no/such/' + 'long' * 60, os.path.join(top, 'sub/long-link'))
os.mkfifo(os.path.join(top, 'fifo'))
os.mknod(os.path.join(top, 'chr'), 0o20644, os.makedev(1, 3))
os.mknod(os.path.join(top, 'blk'), 0o60600, os.makedev(7, 0))
# a directory whose listing spans metadata blocks, so that it gets an index
big = os.path.join(top, 'big')
os.mkdir(big)
for i in range(400):
    open(os.path.join(big, 'entry-with-a-longish-name-%04d' % i), 'w').close()
for p, k, v in [('text', 'user.small', b'v'), ('sub', 'user.dir', b'on a dir'),
                ('one', 'user.big', b'X' * 300), ('one', 'trusted.t', b''),
                ('link', 'trusted.l', b'on a link')]:
    os.setxattr(os.path.join(top, p), k, v, follow_symlinks=False)
os.setxattr(os.path.join(top, 'random-5k'), 'user.small', b'v')   # a shared, out-of-line value
PYEOF

# name            mksquashfs options
while read -r name opts; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086
	mksquashfs "$tree" "$out/seeds/$name.sqfs" -noappend -nopad -quiet -no-progress -mkfs-time 0 \
		-all-time 0 $opts >/dev/null
done <<'EOF2'
gzip-4k           -comp gzip -b 4K
gzip-nofrag       -comp gzip -b 4K -no-fragments -no-exports
gzip-nocomp       -comp gzip -b 4K -noI -noD -noF -noX
lzma-4k           -comp lzma -b 4K
lzo-4k            -comp lzo -b 4K -always-use-fragments
lzo-999           -comp lzo -b 8K -Xalgorithm lzo1x_999 -no-xattrs
xz-4k             -comp xz -b 4K -tailends
xz-bcj            -comp xz -b 4K -Xbcj x86 -no-fragments
lz4-4k            -comp lz4 -b 4K
lz4-hc            -comp lz4 -b 4K -Xhc -no-fragments -no-xattrs
zstd-4k           -comp zstd -b 4K
zstd-tail         -comp zstd -b 4K -tailends -always-use-fragments -no-exports
lz4-plain-meta    -comp lz4 -b 4K -noI -noX -tailends
zstd-plain-meta   -comp zstd -b 8K -noI -noD -noX -no-fragments
EOF2
ls "$out/seeds"
