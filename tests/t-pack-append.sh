#!/bin/bash
# t-pack-append.sh - appending to an existing image, against mksquashfs
# itself: image A from one tree, then tree B appended with the same command
# line by Debian's mksquashfs and by quash's mksquashfs form.  Both results
# must list the same under unsquashfs -lln (names, colliding top-level names
# renamed NAME_1..., modes, owners, times, sizes) and extract to the same
# tree, which the kernel's mount of quash's result must show too.  The old
# image's data area must be in the result byte for byte (copied, not
# recompressed), a file of B identical to one of A must not be stored again,
# the result must not depend on the run, and an image that cannot be
# appended to must be left as it was.  Every run of the sanitizer build
# must end without a sanitizer report.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/asan.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-pack-append
cleanup() { umount -l "$W/mnt" 2>/dev/null; }
trap cleanup EXIT
cleanup
rm -rf "$W" && mkdir -p "$W/bin" "$W/A/c/d" "$W/A/e" "$W/B/c" "$W/B/new/deep" "$W/mnt" "$W/S1/x" "$W/S2/y"
asan_as "$W/bin/mksquashfs"     # the sanitizer build, its runs noted (asan.sh)
REAL=$(command -v mksquashfs)
QM=$W/bin/mksquashfs

# A: every kind of entry the old image must keep as it was.
head -c 300000 /dev/urandom >"$W/A/big"
seq 1 40000 >"$W/A/c/nums"
echo hi >"$W/A/c/d/small"
ln "$W/A/c/d/small" "$W/A/c/hard"
ln -s ../big "$W/A/c/link"
mkfifo "$W/A/e/fifo"
mknod "$W/A/e/null" c 1 3
setfattr -n user.k -v v "$W/A/c/d/small"
chown -R 1234:5678 "$W/A/c/d"
chmod 751 "$W/A/e"
touch -d @1500000000 "$W/A/big" "$W/A/e"
# B: top-level names A has (c, big) and one it has not; a copy of A's big file.
cp "$W/A/big" "$W/B/new/deep/big-copy"
echo other >"$W/B/big"
echo mine >"$W/B/c/mine"
echo new >"$W/B/new/file"
setfattr -n user.b -v w "$W/B/new/file"
touch -d @1600000000 "$W/B" "$W/B/c"
echo x >"$W/S1/x/f"
echo y >"$W/S2/y/g"

listing() { unsquashfs -lln "$1" | awk '{ if ($1 ~ /^d/) $3 = ""; print }'; }
export -f listing

# appended NAME FIRST SECOND OPTIONS...: FIRST packed, then SECOND appended,
# by both tools, OPTIONS on both command lines, $LATER on the second only and
# $LATER_ENV in its environment (SOURCE_DATE_EPOCH, which excludes -mkfs-time).
LATER= LATER_ENV=
appended() {
	local name=$1 first=$2 second=$3 t2="-mkfs-time 200"; shift 3
	[ -n "$LATER_ENV" ] && t2=
	rm -rf "$W/m.sqfs" "$W/q.sqfs" "$W/mx" "$W/qx"
	# shellcheck disable=SC2086
	(cd "$W" && "$REAL" $first m.sqfs -noappend -quiet -no-progress -mkfs-time 100 "$@" >/dev/null 2>&1 &&
		env $LATER_ENV "$REAL" $second m.sqfs -quiet -no-progress $t2 $LATER "$@" >/dev/null 2>&1)
	# shellcheck disable=SC2086
	if ! (cd "$W" && "$QM" $first q.sqfs -noappend -quiet -no-progress -mkfs-time 100 "$@" >/dev/null 2>q.err &&
		cp q.sqfs q-before.sqfs &&
		env $LATER_ENV "$QM" $second q.sqfs -quiet -no-progress $t2 $LATER "$@" >/dev/null 2>q.err); then
		not_ok "$name" "quash failed: $(head -c 300 "$W/q.err")"
		return 1
	fi
	listing "$W/m.sqfs" >"$W/m.ls"
	listing "$W/q.sqfs" >"$W/q.ls"
	unsquashfs -q -n -d "$W/mx" "$W/m.sqfs" >/dev/null 2>&1
	unsquashfs -q -n -d "$W/qx" "$W/q.sqfs" >/dev/null 2>&1
	if diff "$W/m.ls" "$W/q.ls" >"$W/diff" && python3 "$top/tests/lib/treecmp.py" "$W/mx" "$W/qx" >>"$W/diff" 2>&1
	then ok "$name"
	else not_ok "$name" "$(head -c 400 "$W/diff")"; fi
}

appended "B appended to A: the same listing and tree as mksquashfs's append" A B
check "colliding top-level names renamed as mksquashfs renames them (c_1, big_1)" bash -c \
	"grep -q ' squashfs-root/c_1/mine\$' '$W/q.ls' && grep -q ' squashfs-root/big_1\$' '$W/q.ls' &&
	 grep -q ' squashfs-root/c/d/small\$' '$W/q.ls' && grep -q ' squashfs-root/new/deep/big-copy\$' '$W/q.ls'"

# The old data area (options, blocks, fragments: from the superblock to the
# inode table) is in the result unchanged.
check "the old image's data is copied byte for byte, not recompressed" python3 - "$W/q-before.sqfs" "$W/q.sqfs" <<'EOF'
import struct, sys
old, new = (open(p, 'rb').read() for p in sys.argv[1:3])
end = struct.unpack_from('<Q', old, 64)[0]          # inode_table_start
sys.exit(0 if end > 96 and new[96:end] == old[96:end] else 1)
EOF
before=$(stat -c %s "$W/q-before.sqfs")
after=$(stat -c %s "$W/q.sqfs")
check "a new file identical to an old one is stored once (grew $((after - before)) bytes, the file is 300000)" \
	test $((after - before)) -lt 100000
check "the kernel mounts the result and shows mksquashfs's tree" bash -c \
	"mount -t squashfs -o loop,ro '$W/q.sqfs' '$W/mnt' && python3 '$top/tests/lib/treecmp.py' '$W/mx' '$W/mnt'; st=\$?; umount '$W/mnt'; exit \$st"

cp "$W/q-before.sqfs" "$W/q2.sqfs"
(cd "$W" && "$QM" B q2.sqfs -quiet -no-progress -mkfs-time 200 >/dev/null 2>&1)
check "appending twice gives byte-identical images" cmp -s "$W/q.sqfs" "$W/q2.sqfs"

LATER="-comp xz -b 4096 -no-duplicates" appended \
	"-comp xz, -b 4K, -no-duplicates are ignored when appending, as mksquashfs ignores them" A B
check "the old compressor and block size are kept" bash -c \
	"unsquashfs -s '$W/q.sqfs' | grep -q '^Compression gzip' && unsquashfs -s '$W/q.sqfs' | grep -q '^Block size 131072'"
LATER="-all-root" LATER_ENV=SOURCE_DATE_EPOCH=1550000000 appended \
	"-all-root and SOURCE_DATE_EPOCH apply to the new entries only" A B
# -all-time: the root made for several sources is stamped with the clock, which ticks between the tools' runs.
appended "two sources appended to themselves: nested by name, renamed S1_1, S2_1" "S1 S2" "S1 S2" -all-time 1000

# quash pack --append: the same tree as the mksquashfs form (no nesting there either).
rm -f "$W/p.sqfs"
qa "$W/p.out" "$QUASH_ASAN" pack -q --no-progress "$W/A" "$W/p.sqfs" >"$W/why" || not_ok "quash pack A runs clean" "$(cat "$W/why")"
"$QUASH_ASAN" pack -q --no-progress --append -c gzip -b 4K "$W/B" "$W/p.sqfs" >/dev/null 2>"$W/p.err"
echo "exit $?" >>"$W/p.err"
appended "(mksquashfs form once more, for quash pack --append to compare with)" A B
check "quash pack --append: the same tree, quash's zstd and 128K blocks kept" bash -c \
	"diff <(listing '$W/p.sqfs') '$W/q.ls' && unsquashfs -s '$W/p.sqfs' | grep -q '^Compression zstd' &&
	 unsquashfs -s '$W/p.sqfs' | grep -q '^Block size 131072' && [ \"\$(cat '$W/p.err')\" = 'exit 0' ]"
qa "$W/p.out" "$QUASH_ASAN" pack -q --no-progress "$W/B" "$W/p.sqfs" >"$W/why" || not_ok "quash pack B runs clean" "$(cat "$W/why")"
check "quash pack without --append still replaces" bash -c "! listing '$W/p.sqfs' | grep -q 'c/d/small'"

tar -C "$W/B" -cf "$W/b.tar" .
cp "$W/q-before.sqfs" "$W/t.sqfs"
"$QM" - "$W/t.sqfs" -tar -quiet -no-progress <"$W/b.tar" >/dev/null 2>"$W/err"
st=$?
check "appending from a tar is refused, as mksquashfs refuses it: one line, exit 1, DEST kept" bash -c \
	"[ $st = 1 ] && [ \"\$(wc -l <'$W/err')\" = 1 ] && grep -q 'appending is not supported reading a tar' '$W/err' &&
	 cmp -s '$W/t.sqfs' '$W/q-before.sqfs'"

# Images that cannot be appended to: one line naming DEST, exit 1, DEST as it was.
refused_dest() {
	local name=$1 st
	cp "$W/dest" "$W/dest.orig"
	"$QM" "$W/B" "$W/dest" -quiet -no-progress >/dev/null 2>"$W/err"
	st=$?
	if [ $st = 1 ] && [ "$(wc -l <"$W/err")" = 1 ] && grep -q "$W/dest: cannot append to it: " "$W/err" &&
		cmp -s "$W/dest" "$W/dest.orig" && [ -z "$(find "$W" -maxdepth 1 -name '.dest.*')" ]
	then ok "$name"
	else not_ok "$name" "exit $st: $(head -c 300 "$W/err")"; fi
}
head -c 10000 /dev/urandom >"$W/dest"
refused_dest "a DEST that is not squashfs is refused and left alone"
head -c 4096 "$W/q-before.sqfs" >"$W/dest"
refused_dest "a truncated image is refused and left alone"
cp "$W/q-before.sqfs" "$W/dest"
python3 - "$W/dest" <<'EOF'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
start = struct.unpack_from('<Q', b, 64)[0]           # the inode table: garbage in its first block
for i in range(start + 2, min(start + 200, len(b))):
    b[i] ^= 0x5a
open(p, 'wb').write(b)
EOF
refused_dest "an image with a corrupt inode table is refused and left alone"

# A file of the image as large and sparse as a new one: deduplication
# learns the old file's holes from its block list and reads none of them
# (read through the library, a 1 TiB hole took minutes).
mkdir -p "$W/sp-old" "$W/sp-new"
truncate -s 256G "$W/sp-old/hole" && truncate -s 256G "$W/sp-new/hole2"
$QUASH pack -q "$W/sp-old" "$W/sp.sqfs"
check "appending a 256 GiB sparse file beside an old one of that size: seconds, stored as its duplicate" \
	bash -c "timeout 60 $QUASH pack -q --append --json '$W/sp-new' '$W/sp.sqfs' | grep -q '\"duplicate_files\": 1,'"
check "no run of the sanitizer build as mksquashfs drew a sanitizer report" asan_as_clean "$W/bin/mksquashfs"
