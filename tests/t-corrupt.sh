#!/bin/bash
# Hostile images through every offline tool under ASan/UBSan.
#
# 1. A corpus of about 300 corrupted copies of three small fixtures
#    (tests/lib/corrupt.py: truncations, and overwritten bytes in every
#    superblock field and every table; seeded, so the same on every run).
#    Each goes through info, ls -lR, stat, cat and extract: exit 0 or 1 only,
#    every stderr line "quash: IMAGE: ...", nothing written outside DIR.
#    A truncation below bytes_used and a damaged magic, version or block_log
#    have one answer: every tool exits 1 with the exact message.  Each
#    variant is also extracted by Debian's unsquashfs: where both accept it
#    the trees must be the same; where one alone accepts, it is counted in
#    a '#' line, not failed (corrupt.py's header says why).
# 2. Hand-made cases with a known answer: wrong magic, truncated file,
#    offset past the end, bytes_used past the end, not a file at all; and
#    images patched to attack extract: a directory that contains its own
#    ancestor, a name "..", a name with a '/', and a symlink and a
#    directory (or file) of the same name, the symlink pointing out of DIR.
#    The patches are made on images built with -noI, whose inode and
#    directory tables are stored uncompressed, by overwriting the bytes of
#    a directory entry (its name, or the inode offset it points at).
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"
source "$top/tests/lib/fixtures.sh"
fixtures_build || { not_ok "fixtures build"; exit 1; }

out=$WORK/corrupt
rm -rf "$out" && mkdir -p "$out"
# Scratch space in memory: tens of thousands of small files and 5 GiB of
# holes are written and removed here, which a disk makes slow.
mount -t tmpfs -o size=16g,mode=0755 quash-test "$out" 2>/dev/null
trap 'mountpoint -q "$out" && umount "$out"; rm -rf "$out"' EXIT

# ---- 1. the corpus -------------------------------------------------------
python3 "$top/tests/lib/corrupt.py" --quash "$QUASH_ASAN" --work "$out/corpus" --per-region 4 \
	--stat / --stat /dir --stat /dir/tiny --stat /symlink --stat /random --stat /chardev \
	--stat /list/name-number-399 \
	--cat /dir/tiny --cat /dir/blocks --cat /random --cat /sparse --cat /tiny-link \
	--unsquashfs /usr/bin/unsquashfs \
	"$FIX_DIR/img/small-gzip-4k.sqfs" "$FIX_DIR/img/small-zstd-nofrag.sqfs" \
	"$FIX_DIR/img/small-lz4-noI.sqfs"

# ---- 2. hand-made cases --------------------------------------------------

# fails_cleanly NAME IMAGE CMD...: exit 1 and exactly one line, naming IMAGE.
fails_cleanly() {
	local name=$1 image=$2 st lines; shift 2
	timeout -s KILL 20 "$@" >/dev/null 2>"$out/err"
	st=$?
	lines=$(wc -l <"$out/err")
	if [ $st -eq 1 ] && [ "$lines" -eq 1 ] && grep -q "^quash: $image: " "$out/err"; then ok "$name"
	else not_ok "$name" "exit $st, $lines lines: $(head -c 300 "$out/err" | tr '\n' ';')"; fi
}

small=$FIX_DIR/img/small-gzip-4k.sqfs

cp "$small" "$out/magic.sqfs" && printf 'XXXX' | dd of="$out/magic.sqfs" conv=notrunc status=none
head -c 200 "$small" >"$out/truncated.sqfs"
: >"$out/empty.sqfs"
# superblock_field FILE OFFSET FORMAT EXPR: the field at OFFSET (a struct
# format, "<Q", "<H") set to EXPR of its value v.
superblock_field() {
	python3 - "$@" <<'EOF'
import struct, sys
path, off, fmt, expr = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(path, "r+b") as f:
    f.seek(off)
    v = struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    f.seek(off)
    f.write(struct.pack(fmt, eval(expr, {"v": v})))
EOF
}
cp "$small" "$out/bytes-used.sqfs"
superblock_field "$out/bytes-used.sqfs" 40 "<Q" "v + (1 << 20)"
for tool in info "ls -lR" "stat" "cat" "extract"; do
	case $tool in
	stat|cat) args=(/dir/tiny) ;;
	extract)  args=(-C "$out/x") ;;
	*)        args=() ;;
	esac
	for c in magic truncated empty bytes-used; do
		rm -rf "$out/x"
		# shellcheck disable=SC2086  # "ls -lR" is two words
		fails_cleanly "$tool on an image with $c fails cleanly" "$out/$c.sqfs" \
			"$QUASH_ASAN" $tool "$out/$c.sqfs" "${args[@]}"
	done
	# shellcheck disable=SC2086
	fails_cleanly "$tool with an offset past the end fails cleanly" "$small" \
		"$QUASH_ASAN" $tool --offset 1G "$small" "${args[@]}"
	# shellcheck disable=SC2086
	fails_cleanly "$tool with an offset inside the image fails cleanly" "$small" \
		"$QUASH_ASAN" $tool --offset 4K "$small" "${args[@]}"
	# shellcheck disable=SC2086
	fails_cleanly "$tool of a directory fails cleanly" "$out" "$QUASH_ASAN" $tool "$out" "${args[@]}"
done
fails_cleanly "info of a missing file fails cleanly" "$out/missing.sqfs" "$QUASH_ASAN" info "$out/missing.sqfs"

# An lz4 image whose superblock says it has no options block: the kernel
# ("LZ4 compressed filesystems always have compression options") and
# unsquashfs refuse it, and so must every tool here, and append (found by
# fuzzing append: quash read it and wrote another like it).
cp "$FIX_DIR/img/small-lz4-noI.sqfs" "$out/lz4-noopts.sqfs"
superblock_field "$out/lz4-noopts.sqfs" 24 "<H" "v & ~0x0400"     # the flags, less COMPRESSOR_OPTIONS
for tool in info "ls -lR" extract; do
	args=(); [ "$tool" = extract ] && args=(-C "$out/x")
	rm -rf "$out/x"
	# shellcheck disable=SC2086
	fails_cleanly "$tool of an lz4 image without its options fails cleanly" "$out/lz4-noopts.sqfs" \
		"$QUASH_ASAN" $tool "$out/lz4-noopts.sqfs" "${args[@]}"
done
check "... naming what is wrong" grep -q "an lz4 image without its compressor options" "$out/err"
cp "$out/lz4-noopts.sqfs" "$out/lz4-noopts-append.sqfs"
mkdir -p "$out/add" && echo new >"$out/add/f"
"$QUASH_ASAN" pack --append "$out/add" "$out/lz4-noopts-append.sqfs" >/dev/null 2>"$out/err"
st=$?
check "... and appending to it fails in one line, the image as it was" bash -c \
	"[ $st != 0 ] && cmp -s '$out/lz4-noopts.sqfs' '$out/lz4-noopts-append.sqfs' && [ \$(wc -l <'$out/err') = 1 ]"

# A FIFO or a character device named as the image: refused at once, not
# waited on (the open used to block until a writer came).
mkfifo "$out/fifo.sqfs"
for tool in info "ls -lR" stat cat extract; do
	case $tool in
	stat|cat) args=(/x) ;;
	extract)  args=(-C "$out/x") ;;
	*)        args=() ;;
	esac
	# shellcheck disable=SC2086
	fails_cleanly "$tool of a FIFO fails at once" "$out/fifo.sqfs" "$QUASH_ASAN" $tool "$out/fifo.sqfs" "${args[@]}"
done
fails_cleanly "info of a character device fails cleanly" /dev/zero "$QUASH_ASAN" info /dev/zero

# A file size of 2^64-1 in an extended inode (a hard link makes mksquashfs
# write one).  (size + block - 1) / block wrapped to 0 blocks: stat showed
# 16 EiB and cat printed nothing, exit 0.  The kernel refuses the inode.
mkdir -p "$out/tree-huge" && head -c 12345 /dev/urandom >"$out/tree-huge/big" &&
	ln "$out/tree-huge/big" "$out/tree-huge/link" && echo ok >"$out/tree-huge/small"
mksquashfs "$out/tree-huge" "$out/huge.sqfs" -noI -no-fragments -quiet -no-progress -noappend >/dev/null
python3 - "$out/huge.sqfs" <<'EOF'
import struct, sys
img = bytearray(open(sys.argv[1], "rb").read())
sb = struct.unpack_from("<IIIIIHHHHHHQQQQQQQQ", img)
inodes, dirs = sb[15], sb[16]
size = struct.pack("<Q", 12345)
pos = img.find(size, inodes, dirs)
assert pos > 0 and img.find(size, pos + 1, dirs) < 0, "the size must be unique in the inode table"
struct.pack_into("<Q", img, pos, (1 << 64) - 1)
open(sys.argv[1], "wb").write(img)
EOF
for tool in stat cat; do
	fails_cleanly "$tool of a file of size 2^64-1 fails cleanly" "$out/huge.sqfs" \
		"$QUASH_ASAN" $tool "$out/huge.sqfs" /big
done
check "the other files of that image still read" \
	[ "$("$QUASH_ASAN" cat "$out/huge.sqfs" /small 2>/dev/null)" = ok ]

# Build a tree, make an image with -noI, patch a directory entry.
#   hostile NAME PATCH ARG   (PATCH: rename OLD NEW | point CHILD-NAME-AT-ROOT-INODE)
hostile_image() {
	local name=$1; shift
	mksquashfs "$out/tree-$name" "$out/$name.sqfs" -noI -no-fragments -quiet -no-progress \
		>/dev/null 2>&1 || return 1
	python3 - "$out/$name.sqfs" "$@" <<'EOF'
import struct, sys
path, how, a = sys.argv[1], sys.argv[2], sys.argv[3].encode()
img = bytearray(open(path, "rb").read())
sb = struct.unpack_from("<IIIIIHHHHHHQQQQQQQQ", img)
root_ref, dir_start = sb[11], sb[16]
pos = img.find(a, dir_start)
assert pos > 0 and img.find(a, pos + 1) < 0, "name must be unique in the directory table"
if how == "rename":
    new = sys.argv[4].encode()
    assert len(new) == len(a)
    img[pos:pos + len(a)] = new
else:
    # The entry before the name: offset u16, inode_offset s16, type u16, size u16.
    # Small images keep every inode in metadata block 0, so the offset alone
    # makes the entry point at the root directory's inode.
    assert root_ref >> 16 == 0
    struct.pack_into("<H", img, pos - 8, root_ref & 0xffff)
open(path, "wb").write(img)
EOF
}

# extract_is_contained NAME IMAGE: extract into a sandbox; fails cleanly, nothing outside.
extract_is_contained() {
	local name=$1 image=$2 st left
	rm -rf "$out/sandbox/out" && find "$out/sandbox/outside" -mindepth 1 -delete
	timeout -s KILL 20 "$QUASH_ASAN" extract "$image" -C "$out/sandbox/out" >/dev/null 2>"$out/err"
	st=$?
	left=$(cd "$out/sandbox" && find . -mindepth 1 -path ./out -prune -o -print | sort | tr '\n' ' ')
	if [ $st -eq 1 ] && [ "$left" = "./outside " ] && ! grep -qv "^quash: $image: " "$out/err"; then
		ok "$name"
	else
		not_ok "$name" "exit $st, outside DIR: $left; $(head -c 300 "$out/err" | tr '\n' ';')"
	fi
}

mkdir -p "$out/sandbox/outside"

# A directory whose child is the root again.
mkdir -p "$out/tree-loop/loopdir/loopchild" && echo x >"$out/tree-loop/loopdir/file"
if hostile_image loop point loopchild; then
	extract_is_contained "extract of a directory loop stops and stays inside DIR" "$out/loop.sqfs"
	fails_cleanly "ls -R of a directory loop reports it" "$out/loop.sqfs" "$QUASH_ASAN" ls -R "$out/loop.sqfs"
	check_fails "ls -lR of a directory loop fails, naming the loop" 1 \
		"^quash: $out/loop.sqfs: /loopdir/loopchild: directory appears twice in the tree \(a loop\?\)$" \
		"$QUASH_ASAN" ls -lR "$out/loop.sqfs"
else not_ok "make the directory-loop image"; fi

# A directory named "..", holding a file: it must not land in DIR's parent.
mkdir -p "$out/tree-dotdot/dd" && echo escaped >"$out/tree-dotdot/dd/payload-dotdot"
if hostile_image dotdot rename dd ..; then
	extract_is_contained "extract refuses a directory named .." "$out/dotdot.sqfs"
	check "no payload next to DIR" [ ! -e "$out/sandbox/payload-dotdot" ]
	check_fails "ls -R of a directory named .. fails, naming the directory" 1 \
		"^quash: $out/dotdot.sqfs: /: directory entry has an invalid name$" \
		"$QUASH_ASAN" ls -R "$out/dotdot.sqfs"
else not_ok "make the dot-dot image"; fi

# A name with a slash: "ab/c" would be a path, not a name.
mkdir -p "$out/tree-slash/abxc" && echo escaped >"$out/tree-slash/abxc/payload-slash"
if hostile_image slash rename abxc ab/c; then
	extract_is_contained "extract refuses a name with a slash" "$out/slash.sqfs"
else not_ok "make the slash image"; fi

# A symlink out of DIR, then a directory of the same name with a file in it.
mkdir -p "$out/tree-symdir/aaab" && echo escaped >"$out/tree-symdir/aaab/payload-symdir"
ln -s "$out/sandbox/outside" "$out/tree-symdir/aaaa"
if hostile_image symdir rename aaab aaaa; then
	extract_is_contained "extract does not write through a symlink named like a later directory" \
		"$out/symdir.sqfs"
else not_ok "make the symlink-then-directory image"; fi

# A symlink out of DIR, then a regular file of the same name.
mkdir -p "$out/tree-symfile" && echo escaped >"$out/tree-symfile/fffg"
ln -s "$out/sandbox/outside/victim" "$out/tree-symfile/ffff"
if hostile_image symfile rename fffg ffff; then
	extract_is_contained "extract does not write a file through a symlink of the same name" \
		"$out/symfile.sqfs"
else not_ok "make the symlink-then-file image"; fi
