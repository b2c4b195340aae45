#!/bin/bash
# t-pack-conformance.sh - images made by `quash pack` read back exactly.
#
# Oracles: the kernel (mount -t squashfs -o loop) and Debian's unsquashfs.
# The fixture tree has every feature (sizes around block boundaries, holes,
# duplicates, hard links, long and dangling symlinks, devices, fifo,
# socket, xattrs, odd modes, owners and times, deep nesting); both readers
# must reproduce it entry for entry (tests/lib/treecmp.py: type, mode,
# owner, mtime, xattrs, contents, targets, devices, hard-link groups).
# Every compressor, block sizes 4K to 1M, fragments on, off and for tails.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/fixtures.sh"
. "$QUASH_TOP/tests/lib/mount.sh"

T=$WORK/pack-conformance
rm -rf "$T" && mkdir -p "$T"
trap 'unmount_all; rm -rf "$T"' EXIT
fixtures_build || { not_ok "fixtures build"; exit 1; }

# conform NAME IMAGE TREE: read_back, and unsquashfs's own listings accept the image.
conform() {
	local name=$1 img=$2
	read_back "$@"
	check "$name: unsquashfs -s and -lls accept the image" \
		sh -c "unsquashfs -s '$img' >/dev/null && unsquashfs -lls '$img' >/dev/null"
}

# The default settings, packed by the sanitizer build.
if $QUASH_ASAN pack -q "$FIX_TREE" "$T/default.sqfs" 2>"$T/asan.log" && ! grep -q Sanitizer "$T/asan.log"
then ok "pack the fixture tree (ASan/UBSan build)"
else not_ok "pack the fixture tree (ASan/UBSan build)" "$(head -5 "$T/asan.log")"; fi
conform default "$T/default.sqfs" "$FIX_TREE"
check "default: zstd, 128K blocks, exportable, duplicates removed" \
	sh -c "unsquashfs -s '$T/default.sqfs' | grep -q '^Compression zstd' &&
	       unsquashfs -s '$T/default.sqfs' | grep -q '^Block size 131072' &&
	       unsquashfs -s '$T/default.sqfs' | grep -q 'exportable via NFS' &&
	       unsquashfs -s '$T/default.sqfs' | grep -q 'Duplicates are removed'"

MATRIX='
gzip-4k          -c gzip -b 4K
xz-1m            -c xz -b 1M
lz4-nofrag       -c lz4 --no-fragments
lzo-notail       -c lzo --no-tail-packing
zstd15-128k      -c zstd -l 15 -b 128K --no-dedup --no-exports
gzip-16k-nofrag  -c gzip -l 1 -b 16K --no-fragments -j 1
'
while read -r name opts; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086  # the options are words
	if $QUASH pack -q $opts "$FIX_TREE" "$T/$name.sqfs" 2>"$T/$name.log"; then
		conform "$name" "$T/$name.sqfs" "$FIX_TREE"
	else
		not_ok "$name: pack" "$(head -3 "$T/$name.log")"
	fi
	rm -f "$T/$name.sqfs"
done <<<"$MATRIX"

# A directory of 20,000 entries (directory index, lookups) and a 5 GiB sparse file.
if $QUASH pack -q -b 1M "$FIX_TREE_HEAVY" "$T/heavy.sqfs" 2>"$T/heavy.log"; then
	ok "pack the heavy tree"
	conform heavy "$T/heavy.sqfs" "$FIX_TREE_HEAVY"
	check "heavy: the 5 GiB sparse file takes little space" \
		test "$(stat -c %s "$T/heavy.sqfs")" -lt 50000000
else
	not_ok "pack the heavy tree" "$(head -3 "$T/heavy.log")"
fi
rm -f "$T/heavy.sqfs"

# Sparse files of every shape at the block edges (all holes, data only at
# the start, the end, the middle, the tail; written zeros), under the
# options that store a tail as a block or split blocks finer.  A file
# ending in a hole, its short last block stored as a block, once hung the
# data phase: the skip over holes named that block again forever (found
# by fuzzing tars).
mkdir -p "$T/holes"
python3 - "$T/holes" <<'PY'
import os, random, sys
r, bs = random.Random(5), 131072
shapes = {'hole-exact': (2 * bs, []), 'hole-short': (2 * bs + 5, []), 'hole-1': (bs - 1, []),
          'hole+1': (bs + 1, []), 'data-start': (3 * bs + 7, [(0, 100)]), 'data-end': (3 * bs + 7, [(3 * bs, 7)]),
          'data-mid': (5 * bs, [(2 * bs + 10, 50)]), 'data-tail': (4 * bs + 3000, [(4 * bs, 3000)]),
          'data-last-full': (4 * bs, [(3 * bs, bs)]), 'data-4k-edges': (8192 * 3 + 1, [(4096, 1), (8192 * 3, 1)]),
          'hole-64m': (1 << 26, [(1 << 25, 10)])}
for name, (size, data) in shapes.items():
    with open(os.path.join(sys.argv[1], name), 'wb') as f:
        f.truncate(size)
        for off, n in data:
            f.seek(off)
            f.write(r.randbytes(n))
with open(os.path.join(sys.argv[1], 'zeros-written'), 'wb') as f:
    f.write(bytes(3 * bs + 11))
PY
for opts in "--no-fragments" "--no-tail-packing -b 4K" "--no-sparse -b 1M"; do
	if timeout 120 $QUASH pack -q $opts "$T/holes" "$T/holes.sqfs" 2>"$T/holes.log" && kmount "$T/holes.sqfs" "$T/mnt-holes"; then
		bad=$(cd "$T/holes" && for f in *; do cmp -s "$f" "$T/mnt-holes/$f" || echo "$f"; done)
		check "sparse files at the block edges ($opts): the kernel reads each back${bad:+ (not: $bad)}" test -z "$bad"
		umount "$T/mnt-holes"
	else
		not_ok "sparse files at the block edges pack ($opts)" "exit $?: $(head -3 "$T/holes.log")"
	fi
	rm -f "$T/holes.sqfs"
done

# Duplicates are stored once; a file of the same size but other bytes is not taken for one.
mkdir -p "$T/dup/sub"
{ head -c 299999 /dev/urandom; printf Y; } >"$T/dup/a" && cp "$T/dup/a" "$T/dup/sub/b"
{ head -c 299999 "$T/dup/a"; printf X; } >"$T/dup/c"
image_bytes() { unsquashfs -s "$1" | sed -n 's/^Filesystem size \([0-9]*\) bytes.*/\1/p'; }
# Against the same tree without the duplicate, whatever the block size (a
# fragment block holding three such tails compresses the repeats itself).
cp -a "$T/dup" "$T/nodup" && rm "$T/nodup/sub/b"
$QUASH pack -q "$T/dup" "$T/dedup.sqfs" && $QUASH pack -q "$T/nodup" "$T/nodup.sqfs" &&
	$QUASH pack -q --no-dedup -b 64K "$T/dup" "$T/nodedup64.sqfs" && $QUASH pack -q -b 64K "$T/dup" "$T/dedup64.sqfs"
extra=$(( $(image_bytes "$T/dedup.sqfs") - $(image_bytes "$T/nodup.sqfs") ))
check "a duplicate costs no data: $extra bytes more than without it (an inode and a name)" \
	test "$extra" -ge 0 -a "$extra" -le 200
saved=$(( $(image_bytes "$T/nodedup64.sqfs") - $(image_bytes "$T/dedup64.sqfs") ))
check "without deduplication it costs its 300,000 bytes (64K blocks: one tail a fragment block; saved $saved)" \
	test "$saved" -ge 299000 -a "$saved" -le 301000
conform dedup "$T/dedup.sqfs" "$T/dup"
rm -f "$T/nodedup64.sqfs" "$T/dedup64.sqfs" "$T/nodup.sqfs" "$T/dedup.sqfs"

# Overrides: owner, group, mode and time for everything; no xattrs.
SRC=$FIX_TREE_SMALL
if $QUASH pack -q --uid 7 --gid 8 --mode 0640 --mtime 1234567890 --no-xattrs "$SRC" "$T/over.sqfs" &&
   kmount "$T/over.sqfs" "$T/mnt-over"; then
	bad=$(find "$T/mnt-over" \( ! -uid 7 -o ! -gid 8 \) -print | head -3)
	check "--uid/--gid apply to every entry" test -z "$bad"
	bad=$(find "$T/mnt-over" ! -type l -printf '%m\n' | grep -v '^640$' | head -3)
	check "--mode applies to every entry" test -z "$bad"
	bad=$(find "$T/mnt-over" -printf '%T@\n' | grep -v '^1234567890' | head -3)
	check "--mtime applies to every entry" test -z "$bad"
	check "--no-xattrs drops every xattr" test -z "$(getfattr -R -h -d -m - "$T/mnt-over" 2>/dev/null)"
	umount "$T/mnt-over"
else
	not_ok "pack with overrides"
fi
if SOURCE_DATE_EPOCH=1000000000 $QUASH pack -q --all-root "$SRC" "$T/sde.sqfs" &&
   kmount "$T/sde.sqfs" "$T/mnt-sde"
then
	check "--all-root: owner and group 0 everywhere" \
		test -z "$(find "$T/mnt-sde" \( ! -uid 0 -o ! -gid 0 \))"
	check "SOURCE_DATE_EPOCH sets every time" \
		test -z "$(find "$T/mnt-sde" -printf '%T@\n' | grep -v '^1000000000')"
	check "SOURCE_DATE_EPOCH sets the image's time" \
		sh -c "unsquashfs -mkfs-time '$T/sde.sqfs' 2>/dev/null | grep -qx 1000000000 ||
		       unsquashfs -s '$T/sde.sqfs' | grep -q 'Sep  9 01:46:40 2001'"
	umount "$T/mnt-sde"
else
	not_ok "pack with SOURCE_DATE_EPOCH"
fi

# --exclude: a name pattern anywhere, and a path pattern from the source root.
mkdir -p "$T/ex/a/b" && echo 1 >"$T/ex/a/keep.txt" && echo 2 >"$T/ex/a/drop.pyc" && echo 3 >"$T/ex/a/b/x"
echo 4 >"$T/ex/drop.pyc"
if $QUASH pack -q --exclude '*.pyc' --exclude 'a/b' "$T/ex" "$T/ex.sqfs"; then
	list=$(unsquashfs -l "$T/ex.sqfs" | sed -n 's|^squashfs-root||p' | sort | tr '\n' ' ')
	check "--exclude leaves out matching names and paths" test "$list" = " /a /a/keep.txt "
else
	not_ok "pack with --exclude"
fi

# Several sources merge; a later source wins where paths collide.
mkdir -p "$T/m1/d" "$T/m2/d" && echo one >"$T/m1/d/f" && echo only1 >"$T/m1/g" && echo two >"$T/m2/d/f"
if $QUASH pack -q "$T/m1" "$T/m2" "$T/merge.sqfs" && kmount "$T/merge.sqfs" "$T/mnt-merge"; then
	check "merged sources: the later source wins" test "$(cat "$T/mnt-merge/d/f")" = two
	check "merged sources: entries of both are there" test "$(cat "$T/mnt-merge/g")" = only1
	umount "$T/mnt-merge"
else
	not_ok "pack two sources"
fi
