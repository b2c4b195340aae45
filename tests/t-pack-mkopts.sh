#!/bin/bash
# t-pack-mkopts.sh - the mksquashfs options quash's mksquashfs form honours
# beyond t-pack-mksquashfs's: -root-becomes, -info, -percentage,
# -no-hardlinks, -nopad, -default-mode/-uid/-gid, -uid-gid-offset,
# -noI/-noId/-noD/-noF/-noX and -no-compression, the reproducibility options,
# -info-file, -max-depth, -exit-on-error, -mem-percent, -force-file-mode,
# -force-dir-mode,
# -xattrs-add, lzo's -Xalgorithm and gzip's -Xwindow-size and -Xstrategy.
# What Debian's mksquashfs 4.5.1 knows is run by both tools on the same
# source and compared (unsquashfs -lln and -s, extracted trees, -info's
# lines); what only 4.6/4.7 know is checked against their documented
# meaning (squashfs-tools Documentation/4.6/USAGE-MKSQUASHFS,
# 4.7/USAGE-MKSQUASHFS), read back through the kernel's mount.  Bad values
# are exactly one line naming the option, the value and the problem, exit
# 1, no image; no run of the sanitizer build draws a sanitizer report.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/asan.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-pack-mkopts
cleanup() { umount -l "$W/mnt" 2>/dev/null; }
trap cleanup EXIT
cleanup
rm -rf "$W" && mkdir -p "$W/bin" "$W/src/a/b" "$W/src/c" "$W/new/z" "$W/mnt"
asan_as "$W/bin/mksquashfs"     # the sanitizer build, its runs noted (asan.sh)
REAL=$(command -v mksquashfs)
QM=$W/bin/mksquashfs
head -c 300000 /dev/urandom >"$W/src/a/big"
seq 1 50000 >"$W/src/a/b/nums"
echo hi >"$W/src/c/small"
cp "$W/src/c/small" "$W/src/c/same"
ln -s ../a/big "$W/src/c/link"
ln "$W/src/c/small" "$W/src/c/hard"
mkfifo "$W/src/p"
mknod "$W/src/c/null" c 1 3
setfattr -n user.k -v v "$W/src/c/small"
chown -R 1234:5678 "$W/src/a"
echo z >"$W/new/z/f"
echo new >"$W/new/old"     # a name -root-becomes takes: renamed old_1, as mksquashfs does

lls() { unsquashfs -lln "$1" | awk '{ if ($1 ~ /^d/) $3 = ""; print }'; }
# said STATUS MESSAGE [CMD...]: the run before exited STATUS ($st) with
# exactly MESSAGE, one line, on stderr ($W/err), and CMD, if any, succeeds.
said() {
	local want_st=$1 want=$2; shift 2
	[ "$st" = "$want_st" ] && [ "$(cat "$W/err")" = "$want" ] && { [ $# = 0 ] || "$@"; }
}
export -f lls      # for the checks run by bash -c
# The listings, the extracted trees (treecmp: modes, owners, times, xattrs, links) and -s's option lines.
compare() {
	local name=$1
	rm -rf "$W/mx" "$W/qx"
	unsquashfs -q -n -d "$W/mx" "$W/m.sqfs" >/dev/null 2>&1
	unsquashfs -q -n -d "$W/qx" "$W/q.sqfs" >/dev/null 2>&1
	if diff <(lls "$W/m.sqfs") <(lls "$W/q.sqfs") >"$W/diff" &&
	   diff <(comp_opts "$W/m.sqfs") <(comp_opts "$W/q.sqfs") >>"$W/diff" &&
	   python3 "$top/tests/lib/treecmp.py" "$W/mx" "$W/qx" >>"$W/diff" 2>&1
	then ok "$name"
	else not_ok "$name" "$(head -c 400 "$W/diff")"; fi
}
# The compressor and its options as unsquashfs -s prints them.
comp_opts() { unsquashfs -s "$1" | sed -n '/^Compression /,/^Block size/p'; }
# same NAME OPTIONS...: both tools on src with the same options.
same() {
	local name=$1; shift
	rm -f "$W/m.sqfs" "$W/q.sqfs"
	(cd "$W" && "$REAL" src m.sqfs -noappend -quiet -no-progress "$@" >/dev/null 2>&1)
	if ! (cd "$W" && "$QM" src q.sqfs -noappend -quiet -no-progress "$@" >/dev/null 2>"$W/q.err"); then
		not_ok "$name" "quash failed: $(head -c 300 "$W/q.err")"; return
	fi
	compare "$name"
}

# -root-becomes: appending, the old root is a directory of the new one.
rm -f "$W/m.sqfs" "$W/q.sqfs"
(cd "$W" && "$REAL" src m.sqfs -noappend -quiet -no-progress -all-time 7 && "$REAL" new m.sqfs -quiet -no-progress \
	-root-becomes old -all-time 7) >/dev/null 2>&1
(cd "$W" && "$QM" src q.sqfs -noappend -quiet -all-time 7 && "$QM" new q.sqfs -quiet -root-becomes old \
	-all-time 7) >/dev/null 2>"$W/q.err"
compare "-root-becomes old: the old root is old/, a new top-level old renamed old_1"
check "... the old tree whole under old/, the new sources at the root" bash -c \
	"unsquashfs -lln '$W/q.sqfs' | grep -q ' squashfs-root/old/c/small\$' && unsquashfs -lln '$W/q.sqfs' | grep -q ' squashfs-root/old_1\$' &&
	 unsquashfs -lln '$W/q.sqfs' | grep -q ' squashfs-root/z/f\$'"
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "... the kernel's mount reads the old files and their hard links under old/" bash -c \
	"cmp -s '$W/mnt/old/a/big' '$W/src/a/big' && [ \$(stat -c %h '$W/mnt/old/c/hard') = 2 ] &&
	 [ \$(stat -c %i '$W/mnt/old/c/hard') = \$(stat -c %i '$W/mnt/old/c/small') ] && [ \"\$(cat '$W/mnt/old_1')\" = new ]"
umount "$W/mnt"
"$QM" "$W/src" "$W/r.sqfs" -noappend -quiet >/dev/null 2>&1
"$QM" "$W/new" "$W/r.sqfs" -quiet -root-becomes a/b >/dev/null 2>"$W/err"; st=$?
check "-root-becomes with a '/': one line, exit 1, the image as it was" \
	said 1 "quash: mksquashfs: -root-becomes a/b: not a name (no '/', not . or .., at most 256 bytes)" \
	bash -c "! unsquashfs -lln '$W/r.sqfs' | grep -q 'squashfs-root/z'"

# -info: a line for each file written, in mksquashfs's words and order (the
# inode references depend on the layout, and are left out of the comparison).
info_lines() { grep -E '^(file|directory|symbolic link|character device|block device|fifo|unix domain socket) ' |
	sed 's/ inode 0x[0-9a-f]*/ inode X/'; }
rm -f "$W/m.sqfs" "$W/q.sqfs"
(cd "$W" && "$REAL" src m.sqfs -noappend -info -no-progress 2>&1 | info_lines >m.info)
(cd "$W" && "$QM" src q.sqfs -noappend -info 2>"$W/q.err" | info_lines >q.info)
check "-info: the same lines as mksquashfs ($(wc -l <"$W/q.info") lines: files, DUPLICATE, LINK, devices, directories after their contents)" \
	bash -c "diff '$W/m.info' '$W/q.info' && grep -qx 'file /c/same, uncompressed size 3 bytes DUPLICATE' '$W/q.info' &&
	 grep -q 'LINK\$' '$W/q.info' && [ \"\$(tail -n 1 '$W/q.info')\" = 'directory / inode X' ]"
"$QM" "$W/src" "$W/q.sqfs" -noappend -info -quiet >"$W/q.out" 2>&1
# The superblock's root inode reference: 8 bytes little-endian at offset 32.
root_ref=$(od -An -t u8 -j 32 -N 8 "$W/q.sqfs" | tr -d ' ')
check "-info: the root's inode is the superblock's root inode reference ($(printf 0x%x "$root_ref"))" \
	grep -qx "directory / inode $(printf 0x%x "$root_ref")" "$W/q.out"
# -info-file (4.6: "print files written to filesystem to file <file>.  This
# does not disable the progress bar"): -info's lines, in a new file only.
rm -f "$W/q.infofile"
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -info-file "$W/q.infofile" >"$W/q.stdout" 2>&1
check "-info-file: -info's lines in the file, nothing on stdout" bash -c \
	"diff '$W/q.out' '$W/q.infofile' && [ ! -s '$W/q.stdout' ]"
"$QM" "$W/src" "$W/q2.sqfs" -noappend -quiet -info-file "$W/q.infofile" >/dev/null 2>"$W/err"; st=$?
check "-info-file naming a file there already: one line, exit 1, the file and no image left" bash -c \
	"[ $st = 1 ] && [ \"\$(cat '$W/err')\" = 'quash: mksquashfs: -info-file $W/q.infofile: already exists' ] &&
	 diff -q '$W/q.out' '$W/q.infofile' && [ ! -e '$W/q2.sqfs' ]"
ln -sfn "$W/elsewhere" "$W/info-link"
"$QM" "$W/src" "$W/q2.sqfs" -noappend -quiet -info-file "$W/info-link" >/dev/null 2>"$W/err"; st=$?
check "-info-file naming a dangling symbolic link: refused, nothing made through it" bash -c \
	"[ $st = 1 ] && [ ! -e '$W/elsewhere' ] && [ \$(wc -l <'$W/err') = 1 ]"

# -percentage (4.6: "display a percentage rather than the full progress
# bar"): numbers alone, one a line, rising to 100.
head -c 3000000 /dev/urandom >"$W/big3"
mkdir -p "$W/pc" && cp "$W/big3" "$W/pc/"
"$QM" "$W/pc" "$W/q.sqfs" -noappend -quiet -percentage -processors 1 >"$W/pc.out" 2>"$W/err"
check "-percentage: only whole numbers on stdout, one a line, rising, the last 100 ($(tr '\n' ' ' <"$W/pc.out"))" \
	bash -c "[ -s '$W/pc.out' ] && ! grep -qv '^[0-9][0-9]*\$' '$W/pc.out' && sort -n -c '$W/pc.out' &&
	 [ \"\$(tail -n 1 '$W/pc.out')\" = 100 ]"

# -no-hardlinks and -nopad.
same "-no-hardlinks: each name of a hard link a file of its own" -no-hardlinks
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "... the kernel's mount: two inodes, one link each" bash -c \
	"[ \$(stat -c %h '$W/mnt/c/hard') = 1 ] && [ \$(stat -c %i '$W/mnt/c/hard') != \$(stat -c %i '$W/mnt/c/small') ]"
umount "$W/mnt"
tar -C "$W/src" -cf "$W/src.tar" ./a ./c
rm -f "$W/m.sqfs" "$W/q.sqfs"
(cd "$W" && "$REAL" - m.sqfs -tar -noappend -quiet -no-progress -no-hardlinks -all-time 9 <src.tar >/dev/null 2>&1)
(cd "$W" && "$QM" - q.sqfs -tar -noappend -quiet -no-hardlinks -all-time 9 <src.tar >/dev/null 2>"$W/q.err")
check "-no-hardlinks reading a tar: the same listing as mksquashfs -tar, and no hard link" bash -c \
	"diff <(lls '$W/m.sqfs' | cut -d' ' -f1,2,4-) <(lls '$W/q.sqfs' | cut -d' ' -f1,2,4-) &&
	 unsquashfs -s '$W/q.sqfs' | grep -q '^Number of inodes 11\$' && unsquashfs -cat '$W/q.sqfs' c/hard | grep -qx hi"
same "-nopad" -nopad
size=$(stat -c %s "$W/q.sqfs")
check "... the image ends at its bytes_used, not on 4 KiB, as mksquashfs's ($size bytes)" bash -c \
	"[ $((size % 4096)) != 0 ] && [ $(( $(stat -c %s "$W/m.sqfs") % 4096 )) != 0 ] &&
	 unsquashfs -s '$W/q.sqfs' | grep -q \"^Filesystem size $size bytes\""

# -no-sparse: "don't detect sparse files".  mksquashfs then stores blocks of
# zeros, and holes, as data blocks; unsquashfs extracts a block stored as a
# hole as a hole, and one stored as data as written zeros, so the extracted
# file's allocated size tells which way each tool stored it.
mkdir -p "$W/sp"
truncate -s 1M "$W/sp/holes" && echo tail >>"$W/sp/holes"
head -c 400000 /dev/zero >"$W/sp/zeros" && echo end >>"$W/sp/zeros"
# allocated NAME IMAGE: bytes on disk of NAME extracted from IMAGE.
allocated() {
	rm -rf "$W/spx" && unsquashfs -q -n -d "$W/spx" "$2" >/dev/null 2>&1 && du -B1 "$W/spx/$1" | cut -f1
}
for opt in "" -no-sparse; do
	rm -f "$W/m.sqfs" "$W/q.sqfs"
	(cd "$W" && "$REAL" sp m.sqfs -noappend -quiet -no-progress $opt >/dev/null 2>&1)
	(cd "$W" && "$QM" sp q.sqfs -noappend -quiet -no-progress $opt >/dev/null 2>"$W/q.err")
	m=$(allocated holes "$W/m.sqfs") q=$(allocated holes "$W/q.sqfs")
	if [ -z "$opt" ]; then
		check "without -no-sparse: a hole of 1 MiB extracted as a hole, as from mksquashfs's image ($q / $m bytes)" \
			test "$q" -lt 65536 -a "$m" -lt 65536
		sparse_used=$(unsquashfs -s "$W/q.sqfs" | awk '/^Filesystem size/ { print $3 }')
	else
		check "-no-sparse: the hole stored as data and extracted as written zeros, as from mksquashfs's image ($q / $m bytes)" \
			test "$q" -ge 1048576 -a "$m" -ge 1048576
		used=$(unsquashfs -s "$W/q.sqfs" | awk '/^Filesystem size/ { print $3 }')
		check "... the image holds the zeros' blocks: $used bytes used, $sparse_used without" \
			test "$used" -gt "$sparse_used"
		compare "-no-sparse: the same listing and contents as mksquashfs's"
		mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
		check "... the kernel's mount reads both files as the source" \
			bash -c "cmp '$W/mnt/holes' '$W/sp/holes' && cmp '$W/mnt/zeros' '$W/sp/zeros'"
		umount "$W/mnt"
	fi
done
rm -f "$W/q.sqfs"
(cd "$W" && "$QUASH_ASAN" pack -q --no-sparse sp q.sqfs 2>"$W/q.err")
check "quash pack --no-sparse: the hole stored as data too" test "$(allocated holes "$W/q.sqfs")" -ge 1048576

# -default-mode, -default-uid, -default-gid (4.6): "sets the default
# directory permissions [owner, group] ... This also sets the root inode".
mkdir -p "$W/two/x" "$W/two/y" && echo 1 >"$W/two/x/f" && echo 2 >"$W/two/y/g"
"$QM" "$W/two/x" "$W/two/y" "$W/q.sqfs" -noappend -quiet -default-mode 750 -default-uid 11 -default-gid 12 >/dev/null 2>"$W/err"
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "-default-mode/-uid/-gid: the root quash makes for two sources is 0750 11:12" \
	test "$(stat -c '%a %u:%g' "$W/mnt")" = "750 11:12"
umount "$W/mnt"
tar -C "$W/src" -cf "$W/deep.tar" a/b/nums     # lists no directory: a and a/b are implied
"$QM" - "$W/q.sqfs" -tar -noappend -quiet -default-mode 711 -default-uid 21 -default-gid 22 <"$W/deep.tar" >/dev/null 2>"$W/err"
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "... and the directories a tar implies, and the root, as the kernel's mount shows" \
	test "$(stat -c '%a %u:%g' "$W/mnt" "$W/mnt/a" "$W/mnt/a/b" | tr '\n' ' ')" = "711 21:22 711 21:22 711 21:22 "
umount "$W/mnt"
rm -f "$W/m.sqfs" "$W/q.sqfs"
(cd "$W" && "$REAL" - m.sqfs -tar -noappend -quiet -no-progress -all-time 9 <deep.tar >/dev/null 2>&1)
(cd "$W" && "$QM" - q.sqfs -tar -noappend -quiet -all-time 9 <deep.tar >/dev/null 2>"$W/q.err")
check "without them, implied directories are 0755 and the caller's, as mksquashfs 4.5.1 makes them" \
	diff <(lls "$W/m.sqfs") <(lls "$W/q.sqfs")

# -uid-gid-offset (4.7: "offset all uid and gids by specified <value>").
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -uid-gid-offset 100000 >/dev/null 2>"$W/err"
rm -f "$W/o.sqfs"
"$QM" "$W/src" "$W/o.sqfs" -noappend -quiet >/dev/null 2>&1
check "-uid-gid-offset 100000: each owner and group 100000 more than without it" \
	diff <(unsquashfs -lln "$W/o.sqfs" | awk '{ split($2, o, "/"); $2 = o[1] + 100000 "/" o[2] + 100000; $3 = ""; print }') \
	     <(unsquashfs -lln "$W/q.sqfs" | awk '{ $3 = ""; print }')
rm -f "$W/r.sqfs"
"$QM" "$W/src" "$W/r.sqfs" -noappend -quiet -uid-gid-offset 4294967295 >/dev/null 2>"$W/err"; st=$?
check "... an id pushed past 32 bits: one line, exit 1, no image" \
	said 1 "quash: mksquashfs: -uid-gid-offset 4294967295: id 1234 would be beyond 4294967295" test ! -e "$W/r.sqfs"

# -xattrs-add (4.6): "If an user xattr it will be added to regular files and
# directories ... Otherwise it will be added to all files"; values as bytes,
# 0s base64, 0x hex, 0t text with \ooo escapes.
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -xattrs-add 'user.t=0thello\000world' -xattrs-add user.b=0saGVsbG8= \
	-xattrs-add trusted.h=0x414243 -xattrs-add security.p=plain >/dev/null 2>"$W/err"
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
fattr() { getfattr -h -d -m - -e hex --absolute-names "$1" 2>/dev/null | grep -v '^#' | grep . | tr '\n' ' '; }
ALL='security.p=0x706c61696e trusted.h=0x414243'
USER='user.b=0x68656c6c6f user.t=0x68656c6c6f00776f726c64'
check "-xattrs-add: a file has all four, its own user.k kept (the kernel's mount)" \
	test "$(fattr "$W/mnt/c/small")" = "$ALL user.b=0x68656c6c6f user.k=0x76 user.t=0x68656c6c6f00776f726c64 "
check "... a directory and the root have all four" \
	test "$(fattr "$W/mnt/a")|$(fattr "$W/mnt")" = "$ALL $USER |$ALL $USER "
check "... a symlink, a fifo and a device only the trusted and security ones" \
	test "$(fattr "$W/mnt/c/link")|$(fattr "$W/mnt/p")|$(fattr "$W/mnt/c/null")" = "$ALL |$ALL |$ALL "
umount "$W/mnt"
rm -f "$W/r.sqfs"
"$QM" "$W/src" "$W/r.sqfs" -noappend -quiet -xattrs-add user.k=again >/dev/null 2>"$W/err"; st=$?
check "... a name a file has already: one line, exit 1, no image (mksquashfs: \"Duplicate xattr name\")" \
	said 1 "quash: mksquashfs: -xattrs-add user.k: a file has that xattr already (as mksquashfs, refused)" test ! -e "$W/r.sqfs"

# lzo -Xalgorithm, gzip -Xwindow-size and -Xstrategy: the same options block
# (unsquashfs -s) and the same tree as mksquashfs's.
same "-comp lzo -Xalgorithm lzo1x_1" -comp lzo -Xalgorithm lzo1x_1
same "-comp lzo -Xalgorithm lzo1x_1_11" -comp lzo -Xalgorithm lzo1x_1_11
same "-comp lzo -Xalgorithm lzo1x_1_12" -comp lzo -Xalgorithm lzo1x_1_12
same "-comp lzo -Xalgorithm lzo1x_1_15" -comp lzo -Xalgorithm lzo1x_1_15
same "-comp lzo -Xalgorithm lzo1x_999 -Xcompression-level 4" -comp lzo -Xalgorithm lzo1x_999 -Xcompression-level 4
check "... unsquashfs -s: 'algorithm lzo1x_999', 'compression level 4'" bash -c \
	"unsquashfs -s '$W/q.sqfs' | grep -q 'algorithm lzo1x_999' && unsquashfs -s '$W/q.sqfs' | grep -q 'compression level 4'"
same "gzip -Xwindow-size 10" -Xwindow-size 10
same "gzip -Xstrategy filtered,huffman_only" -Xstrategy filtered,huffman_only
check "... unsquashfs -s: 'Strategies selected: filtered, huffman_only'" bash -c \
	"unsquashfs -s '$W/q.sqfs' | grep -q 'Strategies selected: filtered, huffman_only'"
same "gzip -Xstrategy default alone: no options block, as mksquashfs" -Xstrategy default
same "gzip -Xcompression-level 6 -Xwindow-size 12 -Xstrategy run_length_encoded,fixed" \
	-Xcompression-level 6 -Xwindow-size 12 -Xstrategy run_length_encoded,fixed
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "... the kernel's mount reads its files" bash -c "cmp -s '$W/mnt/a/big' '$W/src/a/big' && cmp -s '$W/mnt/a/b/nums' '$W/src/a/b/nums'"
umount "$W/mnt"
# Appending keeps the image's algorithm and strategies, as mksquashfs does.
rm -f "$W/q.sqfs"
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -comp lzo -Xalgorithm lzo1x_1_15 >/dev/null 2>&1
"$QM" "$W/new" "$W/q.sqfs" -quiet >/dev/null 2>"$W/err"
check "appending to an lzo1x_1_15 image: still lzo1x_1_15, the new files readable" bash -c \
	"unsquashfs -s '$W/q.sqfs' | grep -q 'algorithm lzo1x_1_15' && unsquashfs -cat '$W/q.sqfs' z/f | grep -qx z"

# -no-strip / -tarstyle (4.5.1 has them): each source kept at its path, the
# directories on the way as the real ones; one shared start is the root.
nostrip() {   # nostrip NAME DIR OPTION SOURCES...: both tools, run in DIR
	local name=$1 dir=$2 opt=$3; shift 3
	rm -f "$W/m.sqfs" "$W/q.sqfs"
	(cd "$dir" && "$REAL" "$@" "$W/m.sqfs" -noappend -quiet -no-progress "$opt" -all-time 5 >/dev/null 2>&1)
	if ! (cd "$dir" && "$QM" "$@" "$W/q.sqfs" -noappend -quiet "$opt" -all-time 5 >/dev/null 2>"$W/q.err"); then
		not_ok "$name" "quash failed: $(head -c 300 "$W/q.err")"; return
	fi
	compare "$name"
}
nostrip "-no-strip: a file and a directory below ., the leading ./ dropped" "$W" -no-strip src/c/small ./src/a
nostrip "-tarstyle: an absolute path, every directory above it from /" "$W" -tarstyle "$W/src/a/b"
nostrip "-no-strip: a directory and one inside it" "$W" -no-strip src src/c
nostrip "-no-strip: paths from . and from .. (a made-up 0777 root, the caller's)" "$W/src" -no-strip c/small ../new/z
check "... its root is the one mksquashfs makes up, 0777" bash -c "unsquashfs -lln '$W/q.sqfs' | head -n 1 | grep -q '^drwxrwxrwx '"
mkdir -p "$W/other/src"
(cd "$W/other" && "$QM" src ../src/c "$W/q.sqfs" -noappend -quiet -no-strip >/dev/null 2>"$W/err"); st=$?
check "-no-strip: two directories at one path: one line, exit 1 (mksquashfs: \"Can't have two different sources with same pathname\")" \
	said 1 "quash: mksquashfs: ../src/c: another directory than the src already in the image (as mksquashfs: two sources cannot have one path)"

# -cpiostyle / -cpiostyle0: the names on standard input, none descended into.
# Debian's 4.5.1 hangs on -cpiostyle (it spins and never writes the image), so
# the peer is its -no-strip of the directory a find lists whole, and the 4.6
# documentation ("directories are not recursively scanned ... Every file to
# be added to the filesystem must be explicitly specified") for a partial list.
rm -f "$W/m.sqfs" "$W/q.sqfs"
(cd "$W" && "$REAL" src m.sqfs -noappend -quiet -no-progress -no-strip -all-time 5 >/dev/null 2>&1)
(cd "$W" && find src | "$QM" - q.sqfs -noappend -quiet -cpiostyle -all-time 5 >/dev/null 2>"$W/q.err")
compare "-cpiostyle: find's whole list is mksquashfs -no-strip of its top"
(cd "$W" && find src -name 's*' -print0 | "$QM" - q.sqfs -noappend -quiet -cpiostyle0 >/dev/null 2>"$W/q.err")
check "-cpiostyle0: only the names listed (NUL-ended), and the directories on their way" \
	test "$(unsquashfs -lln "$W/q.sqfs" | awk '{ print $NF }' | tr '\n' ' ')" = \
	"squashfs-root squashfs-root/src squashfs-root/src/c squashfs-root/src/c/same squashfs-root/src/c/small "
(cd "$W" && printf 'src/a\n' | "$QM" - q.sqfs -noappend -quiet -cpiostyle >/dev/null 2>"$W/q.err")
check "-cpiostyle: a directory listed alone is added empty, with its own metadata" bash -c \
	"[ \"\$(unsquashfs -lln '$W/q.sqfs' | tail -n 1 | awk '{ print \$1, \$2, \$NF }')\" = 'drwxr-xr-x 1234/5678 squashfs-root/src/a' ]"
(cd "$W" && "$QM" src q.sqfs -noappend -quiet -cpiostyle </dev/null >/dev/null 2>"$W/err"); st=$?
check "-cpiostyle with a source other than -: one line, exit 1" \
	said 1 "quash: mksquashfs: -cpiostyle: the source must be - (the names come on standard input)"

# -ignore-zeros (4.6: "allow tar files to be concatenated together"), on two tars one after the other.
tar -C "$W/src" -cf "$W/t1.tar" c/small && tar -C "$W/new" -cf "$W/t2.tar" z && cat "$W/t1.tar" "$W/t2.tar" >"$W/both.tar"
"$QM" - "$W/q.sqfs" -tar -noappend -quiet -ignore-zeros <"$W/both.tar" >/dev/null 2>"$W/err"
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "-ignore-zeros: both tars' files, as the kernel's mount shows" bash -c \
	"[ \"\$(cat '$W/mnt/c/small' '$W/mnt/z/f')\" = \"\$(printf 'hi\nz')\" ]"
umount "$W/mnt"
"$QM" - "$W/q.sqfs" -tar -noappend -quiet <"$W/both.tar" >/dev/null 2>"$W/err"
check "... without it, the first tar's end is the end" bash -c \
	"unsquashfs -lln '$W/q.sqfs' | grep -q 'c/small\$' && ! unsquashfs -lln '$W/q.sqfs' | grep -q 'z/f\$'"

# -noI, -noId, -noD, -noF, -noX and their long names (4.5.1 has them): the
# parts they name stored uncompressed and flagged so, as mksquashfs's own
# image of the same source (unsquashfs -s: "Inodes are uncompressed" and the
# like); -noI takes -noId with it and is then the only flag.  A name and a
# run of the data must then be in the image as they are, and the kernel's
# mount reads the whole tree back.
flags() { unsquashfs -s "$1" | grep -E 'uncompressed|compressed$|^Fragments|^Xattrs|^Always'; }
export -f flags
NAME=a-name-that-gzip-would-otherwise-shrink-$$
mkdir -p "$W/src/d" && echo x >"$W/src/d/$NAME"
for opts in "-noI" "-noId" "-noD" "-noF" "-noX" "-noI -noId" \
	    "-noInodeCompression -noIdTableCompression -noDataCompression -noFragmentCompression -noXattrCompression"; do
	# shellcheck disable=SC2086  # the options are words
	same "$opts: the same tree and flags as mksquashfs's" $opts
	check "... the same uncompressed flags" diff <(flags "$W/m.sqfs") <(flags "$W/q.sqfs")
done
rm -f "$W/q.sqfs" "$W/m.sqfs"
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -no-compression >/dev/null 2>"$W/err"
"$REAL" "$W/src" "$W/m.sqfs" -noappend -quiet -no-progress -noI -noD -noF -noX >/dev/null 2>&1
check "-no-compression (4.6: -noI -noD -noF -noX): mksquashfs's flags for those four" \
	diff <(flags "$W/m.sqfs") <(flags "$W/q.sqfs")
# holds IMAGE FILE: are FILE's bytes in IMAGE as they are?
holds() { python3 -c 'import sys; sys.exit(open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read()) < 0)' "$@"; }
printf %s "$NAME" >"$W/name"
head -c 4000 "$W/src/a/b/nums" | tail -c 2000 >"$W/run"
export -f holds
check "... a name and a run of the data stored as they are" bash -c "holds '$W/q.sqfs' '$W/name' && holds '$W/q.sqfs' '$W/run'"
"$QM" "$W/src" "$W/c.sqfs" -noappend -quiet >/dev/null 2>&1
check "... and not without it (gzip shrinks both)" bash -c "! holds '$W/c.sqfs' '$W/name' && ! holds '$W/c.sqfs' '$W/run'"
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "... the kernel's mount reads it all back" bash -c \
	"diff -r --no-dereference '$W/src' '$W/mnt' >/dev/null 2>&1 || diff -r --no-dereference '$W/src' '$W/mnt' 2>&1 | grep -v '^File .* is a \(fifo\|character special file\)' | grep -q . && exit 1; exit 0"
umount "$W/mnt"
# Appending keeps the image's uncompressed parts, as mksquashfs does.
rm -f "$W/q.sqfs" "$W/m.sqfs"
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -noI -noD >/dev/null 2>&1
"$QM" "$W/new" "$W/q.sqfs" -quiet >/dev/null 2>"$W/err"
"$REAL" "$W/src" "$W/m.sqfs" -noappend -quiet -no-progress -noI -noD >/dev/null 2>&1
"$REAL" "$W/new" "$W/m.sqfs" -quiet -no-progress >/dev/null 2>&1
check "appending to a -noI -noD image: still -noI -noD, the new files readable" bash -c \
	"diff <(flags '$W/m.sqfs') <(flags '$W/q.sqfs') && unsquashfs -s '$W/q.sqfs' | grep -q '^Inodes are uncompressed' &&
	 unsquashfs -cat '$W/q.sqfs' z/f | grep -qx z"
rm -rf "$W/src/d"
# The report says which parts are stored uncompressed, in mksquashfs's words.
"$QM" "$W/src" "$W/q.sqfs" -noappend -no-progress -noD -noX >"$W/report" 2>&1
"$REAL" "$W/src" "$W/m.sqfs" -noappend -no-progress -noD -noX >"$W/mreport" 2>&1
check "the report: 'uncompressed data, compressed metadata ... uncompressed xattrs', as mksquashfs's" \
	diff <(sed -n '/^\t.*data, /,/ ids$/p' "$W/mreport") <(sed -n '/^\t.*data, /,/ ids$/p' "$W/report")

# The reproducibility options.  4.5's -reproducible and -not-reproducible
# change nothing here (the image is reproducible anyway); 4.7's -repro is
# -mkfs-time inode (the newest inode's time), -inode-time is -all-time, and
# -repro-time T is both -mkfs-time T and -inode-time T.
mktime() { unsquashfs -s "$1" | sed -n 's/^Creation or last append time //p'; }
export -f mktime
"$QM" "$W/src" "$W/r1.sqfs" -noappend -quiet -mkfs-time 9 -all-time 5 >/dev/null 2>&1
for o in -reproducible -not-reproducible; do
	"$QM" "$W/src" "$W/r2.sqfs" -noappend -quiet -mkfs-time 9 -all-time 5 $o >/dev/null 2>&1
	check "$o: accepted, the same image" cmp -s "$W/r1.sqfs" "$W/r2.sqfs"
done
"$QM" "$W/src" "$W/r2.sqfs" -noappend -quiet -mkfs-time 9 -inode-time 5 >/dev/null 2>&1
check "-inode-time 5: the image -all-time 5 makes" cmp -s "$W/r1.sqfs" "$W/r2.sqfs"
"$QM" "$W/src" "$W/r2.sqfs" -noappend -quiet -repro-time 5 >/dev/null 2>&1
check "-repro-time 5: every time 5, the image's too" bash -c \
	"! unsquashfs -lln '$W/r2.sqfs' | grep -v ' 1970-01-01 00:00 ' &&
	 unsquashfs -s '$W/r2.sqfs' | grep -q '^Creation or last append time Thu Jan  1 00:00:05 1970'"
touch -d @1600000000 "$W/src/c/small"
for o in -repro "-mkfs-time inode"; do
	# shellcheck disable=SC2086
	"$QM" "$W/src" "$W/r2.sqfs" -noappend -quiet $o >/dev/null 2>&1
	"$QM" "$W/src" "$W/r3.sqfs" -noappend -quiet -mkfs-time 0 >/dev/null 2>&1
	newest=$(find "$W/src" -printf '%T@\n' | sort -n | tail -1 | cut -d. -f1)
	check "$o: the image's time is the newest inode's ($newest)" bash -c \
		"[ \"\$(mktime '$W/r2.sqfs')\" = \"\$(TZ=GMT date -d @$newest '+%a %b %e %H:%M:%S %Y')\" ] ||
		 [ \"\$(mktime '$W/r2.sqfs')\" = \"\$(date -d @$newest '+%a %b %e %H:%M:%S %Y')\" ]"
done

# -max-depth N (4.6: "descend at most <levels> of directories when scanning
# filesystem"): what find -mindepth 1 -maxdepth N lists, the directories at
# the last level kept empty; sources nested by name (several, or
# -keep-as-directory) are a level down themselves, as mksquashfs scans them.
names() { unsquashfs -l "$1" | grep -v '^squashfs-root$' | sed 's|^squashfs-root/||' | sort; }
export -f names
rm -rf "$W/md" && mkdir -p "$W/md/one/a/b/c" "$W/md/one/x" "$W/md/two/y" "$W/md/nest"
echo 1 >"$W/md/one/f" && echo 2 >"$W/md/one/a/f" && echo 3 >"$W/md/one/a/b/f" && echo 4 >"$W/md/one/a/b/c/f"
ln -s a "$W/md/one/l" && echo 5 >"$W/md/two/y/f"
cp -a "$W/md/one" "$W/md/two" "$W/md/nest/"
for n in 0 1 2 3 9; do
	rm -f "$W/q.sqfs"
	"$QM" "$W/md/one" "$W/q.sqfs" -noappend -quiet -max-depth $n >/dev/null 2>"$W/err"
	check "-max-depth $n: what find -maxdepth $n lists" bash -c \
		"diff <(cd '$W/md/one' && find . -mindepth 1 -maxdepth $n | sed 's|^\./||' | sort) <(names '$W/q.sqfs')"
	rm -f "$W/q.sqfs"
	"$QM" "$W/md/one" "$W/md/two" "$W/q.sqfs" -noappend -quiet -max-depth $n >/dev/null 2>"$W/err"
	check "-max-depth $n, two sources nested by name: a level down" bash -c \
		"diff <(cd '$W/md/nest' && find . -mindepth 1 -maxdepth $n | sed 's|^\./||' | sort) <(names '$W/q.sqfs')"
done
rm -f "$W/q.sqfs"
"$QM" "$W/md/one" "$W/q.sqfs" -noappend -quiet -keep-as-directory -max-depth 2 >/dev/null 2>&1
check "-max-depth 2 -keep-as-directory: the source a level down" bash -c \
	"diff <(cd '$W/md/nest' && find ./one -maxdepth 1 | sed 's|^\./||' | sort) <(names '$W/q.sqfs')"
rm -f "$W/q.sqfs"
"$QM" "$W/md/one" "$W/q.sqfs" -noappend -quiet -max-depth 2 >/dev/null 2>&1
mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
check "... the kernel's mount: a/b there and empty, a/f read, the link kept" bash -c \
	"[ -d '$W/mnt/a/b' ] && [ -z \"\$(ls -A '$W/mnt/a/b')\" ] && [ \"\$(cat '$W/mnt/a/f')\" = 2 ] && [ \"\$(readlink '$W/mnt/l')\" = a ]"
umount "$W/mnt"
tar -C "$W/md/one" -cf "$W/md.tar" .
"$QM" - "$W/q2.sqfs" -tar -noappend -quiet -max-depth 1 <"$W/md.tar" >/dev/null 2>"$W/err"; st=$?
check "-max-depth reading a tar: refused in one line, as mksquashfs refuses it" bash -c \
	"[ $st = 1 ] && [ \"\$(cat '$W/err')\" = 'quash: mksquashfs: -max-depth: not reading a tar (as in mksquashfs)' ] && [ ! -e '$W/q2.sqfs' ]"

# -exit-on-error (4.6: "treat normally ignored errors as fatal"): what is
# otherwise a warning and skipped (here a tar's hard link to a name it does
# not hold) fails the pack, and no image is left.
python3 - "$W/warn.tar" <<'EOF'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT)
ti = tarfile.TarInfo("f"); ti.size = 2; t.addfile(ti, io.BytesIO(b"hi"))
ti = tarfile.TarInfo("h"); ti.type = tarfile.LNKTYPE; ti.linkname = "missing"; t.addfile(ti)
t.close()
EOF
rm -f "$W/q.sqfs"
"$QM" - "$W/q.sqfs" -tar -noappend -quiet <"$W/warn.tar" >/dev/null 2>"$W/err"; st=$?
check "a tar's hard link to a missing name: a warning, skipped, the image made" bash -c \
	"[ $st = 0 ] && grep -q 'hard link to missing' '$W/err' && unsquashfs -cat '$W/q.sqfs' f | grep -qx hi"
rm -f "$W/q.sqfs"
"$QM" - "$W/q.sqfs" -tar -noappend -quiet -exit-on-error <"$W/warn.tar" >/dev/null 2>"$W/err"; st=$?
check "... with -exit-on-error: exit 1, said why, no image" bash -c \
	"[ $st = 1 ] && grep -q '^quash: mksquashfs: -exit-on-error: 1 warning above, so no image is written' '$W/err' &&
	 [ ! -e '$W/q.sqfs' ]"

# -mem-percent (4.6: "use <percent> physical memory"): -mem of that share of
# the machine's memory; as with -mem, the image is the same bytes.
rm -f "$W/r1.sqfs" "$W/r2.sqfs"
"$QM" "$W/src" "$W/r1.sqfs" -noappend -quiet -mkfs-time 9 >/dev/null 2>&1
"$QM" "$W/src" "$W/r2.sqfs" -noappend -quiet -mkfs-time 9 -mem-percent 1 >/dev/null 2>"$W/err"
check "-mem-percent 1: accepted, the same image" cmp -s "$W/r1.sqfs" "$W/r2.sqfs"

# -force-file-mode, -force-dir-mode (4.7: "set all file (non-directory)
# [directory] permissions to <mode>.  <Mode> can be symbolic or octal"):
# what chmod makes of the same modes, read back through the kernel's mount.
# (A clause without u, g, o or a changes rwx alone, as in mksquashfs: "+t"
# there sets nothing, where chmod would set the sticky bit.)
rm -rf "$W/fm" "$W/fmx" && mkdir -p "$W/fm/d/e" "$W/fmx"
echo x >"$W/fm/f" && chmod 640 "$W/fm/f" && echo y >"$W/fm/x" && chmod 4751 "$W/fm/x" && chmod 700 "$W/fm/d"
modes() { (cd "$1" && find . ! -type l -printf '%m %y %p\n' | sort); }
export -f modes
for spec in 0644 ugo+r,go-w,u+w a=rX u=g,o= +x go-rwx g+s,o+t a-s; do
	rm -rf "$W/fmx/fm" && cp -a "$W/fm" "$W/fmx/" && find "$W/fmx/fm" ! -type l -exec chmod "$spec" {} +
	rm -f "$W/q.sqfs"
	"$QM" "$W/fm" "$W/q.sqfs" -noappend -quiet -force-file-mode "$spec" -force-dir-mode "$spec" >/dev/null 2>"$W/err"
	mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt"
	check "-force-file-mode $spec -force-dir-mode $spec: chmod's modes" diff <(modes "$W/fmx/fm") <(modes "$W/mnt")
	umount "$W/mnt"
done
rm -f "$W/q.sqfs"
"$QM" "$W/fm" "$W/q.sqfs" -noappend -quiet -force-file-mode 600 -root-mode 700 >/dev/null 2>&1
check "-force-file-mode alone: directories as they were, -root-mode still the root's" bash -c \
	"unsquashfs -lln '$W/q.sqfs' | grep -q '^drwx------ .* squashfs-root\$' &&
	 unsquashfs -lln '$W/q.sqfs' | grep -q '^drwx------ .* squashfs-root/d\$' &&
	 unsquashfs -lln '$W/q.sqfs' | grep -q '^-rw------- .* squashfs-root/x\$'"
"$QM" "$W/fm" "$W/q.sqfs" -noappend -quiet -force-dir-mode 555 -root-mode 700 >/dev/null 2>&1
check "-force-dir-mode outranks -root-mode for the root, as in mksquashfs" bash -c \
	"unsquashfs -lln '$W/q.sqfs' | grep -q '^dr-xr-xr-x .* squashfs-root\$'"

# -pseudo-override (4.6: "allow pseudo file definitions to override
# -force-uid, -force-gid, -force-file-mode and -force-dir-mode"): the
# overrides apply to what the source gave, the pseudo entries (and an 'm'
# change of a source's file) keep their own.  Without it the overrides win
# over both.  The oracle: chmod of the same mode on a copy of the source and
# on files made with the definitions' modes, read back through the kernel's
# mount.  "o=u,u=g" done twice is not done once: a hard link must meet it
# once.
rm -rf "$W/po" "$W/pox" && mkdir -p "$W/po/d" "$W/pox"
echo x >"$W/po/f" && chmod 640 "$W/po/f" && ln "$W/po/f" "$W/po/h" && echo y >"$W/po/g" && chmod 604 "$W/po/g" &&
	chmod 750 "$W/po/d" && chmod 755 "$W/po"
owners_modes() { (cd "$1" && find . -printf '%m %U %G %y %p\n' | sort); }
pseudo_override_case() {   # NAME OVERRIDE(yes|no): build the oracle in pox, the image's listing in q.om
	local spec='o=u,u=g'
	rm -rf "$W/pox/po" && cp -a "$W/po" "$W/pox/" && chmod "$spec" "$W/pox/po" "$W/pox/po/d" "$W/pox/po/f" &&
		chown -R 1000:2000 "$W/pox/po"
	mkdir "$W/pox/po/pd" && chmod 751 "$W/pox/po/pd" && echo hi >"$W/pox/po/pf" && chmod 444 "$W/pox/po/pf"
	if [ "$2" = yes ]; then
		chown 9:9 "$W/pox/po/pd" && chown 7:8 "$W/pox/po/pf" && chmod 600 "$W/pox/po/g" && chown 5:5 "$W/pox/po/g"
	else
		chmod 600 "$W/pox/po/g" && chmod "$spec" "$W/pox/po/pd" "$W/pox/po/pf" "$W/pox/po/g" &&
			chown 1000:2000 "$W/pox/po/pd" "$W/pox/po/pf"
	fi
	touch -r "$W/po" "$W/pox/po"
	rm -f "$W/q.sqfs" "$W/q.om"
	"$QM" "$W/po" "$W/q.sqfs" -noappend -quiet -force-uid 1000 -force-gid 2000 -force-file-mode "$spec" \
		-force-dir-mode "$spec" -p "pf f 444 7 8 echo hi" -p "pd d 751 9 9" -p "g m 600 5 5" \
		$([ "$2" = yes ] && echo -pseudo-override) >/dev/null 2>"$W/err" &&
		mount -t squashfs -o loop,ro "$W/q.sqfs" "$W/mnt" && owners_modes "$W/mnt" >"$W/q.om"
	umount "$W/mnt" 2>/dev/null
	owners_modes "$W/pox/po" >"$W/x.om"
	check "$1" diff "$W/x.om" "$W/q.om"
}
pseudo_override_case "-pseudo-override: the overrides on the source's entries, the pseudo entries their own" yes
pseudo_override_case "without it: the overrides on the pseudo entries too" no

# Bad values: exactly one line naming the option, the value and the problem,
# exit 1, no image.
refused() {
	local name=$1 want=$2 st; shift 2
	rm -f "$W/r.sqfs"
	"$QM" "$W/src" "$W/r.sqfs" -noappend "$@" >/dev/null 2>"$W/err"
	st=$?
	if [ $st = 1 ] && [ "$(cat "$W/err")" = "quash: mksquashfs: $want" ] && [ ! -e "$W/r.sqfs" ]
	then ok "$name"
	else not_ok "$name" "exit $st: $(head -c 300 "$W/err")"; fi
}
refused "-Xalgorithm unknown" "-Xalgorithm: unknown algorithm 'lzo2x' (lzo1x_1, lzo1x_1_11, lzo1x_1_12, lzo1x_1_15, lzo1x_999)" -comp lzo -Xalgorithm lzo2x
refused "-Xalgorithm without -comp lzo" "-Xalgorithm: an lzo option: needs -comp lzo" -Xalgorithm lzo1x_1
refused "-Xcompression-level with lzo1x_1" "-Xcompression-level: for lzo1x_999 only, not the -Xalgorithm given" -comp lzo -Xalgorithm lzo1x_1 -Xcompression-level 3
refused "-Xwindow-size 16" "-Xwindow-size: bad value '16'" -Xwindow-size 16
refused "-Xwindow-size with -comp xz" "-Xwindow-size: a gzip option: needs -comp gzip (the default)" -comp xz -Xwindow-size 12
refused "-Xstrategy unknown" "-Xstrategy: unknown strategy 'best' (default, filtered, huffman_only, run_length_encoded, fixed)" -Xstrategy filtered,best
refused "-default-mode 8" "-default-mode: bad mode (octal, at most 7777)" -default-mode 8
refused "-default-uid -1" "-default-uid: bad value '-1'" -default-uid -1
refused "-uid-gid-offset x" "-uid-gid-offset: bad value 'x'" -uid-gid-offset x
refused "-xattrs-add without =" "-xattrs-add user.x: expected NAME=VALUE, neither empty" -xattrs-add user.x
refused "-xattrs-add in no namespace squashfs stores" "-xattrs-add other.x=1: the name is not in user., trusted. or security. (all squashfs stores)" -xattrs-add other.x=1
refused "-xattrs-add bad base64" "-xattrs-add user.x=0s@@@@: bad base64 value" -xattrs-add user.x=0s@@@@
refused "-xattrs-add bad hex" "-xattrs-add user.x=0x4: bad hexadecimal value" -xattrs-add user.x=0x4
refused "-xattrs-add bad 0t escape" "-xattrs-add user.x=0ta\\9: bad 0t text value" -xattrs-add 'user.x=0ta\9'
refused "-max-depth x" "-max-depth: bad value 'x'" -max-depth x
refused "-mem-percent 101" "-mem-percent: bad value '101'" -mem-percent 101
refused "-mem-percent 0" "-mem-percent: less than 1M of memory" -mem-percent 0
refused "-force-file-mode 8" "-force-file-mode 8: expected u, g, o, a or an operator (+, - or =)" -force-file-mode 8
refused "-force-file-mode 17777" "-force-file-mode 17777: an octal mode is at most 7777, and alone" -force-file-mode 17777
refused "-force-dir-mode u+q" "-force-dir-mode u+q: expected permissions (r, w, x, X, s, t) or a class to copy (u, g, o)" -force-dir-mode u+q
refused "-force-dir-mode ug" "-force-dir-mode ug: expected u, g, o, a or an operator (+, - or =)" -force-dir-mode ug
refused "-mem-default (4.6): named, not unknown" "-mem-default: not supported: without -mem quash's memory follows the blocks in flight, with no default figure to print" -mem-default
refused "-action (4.5.1): named, not unknown" "-action: not supported: actions are not implemented" -action 'prune@name(x)'
refused "-repro-time x" "-repro-time: bad value 'x'" -repro-time x
check "no run of the sanitizer build as mksquashfs drew a sanitizer report" asan_as_clean "$W/bin/mksquashfs"
