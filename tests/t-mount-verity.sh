#!/bin/bash
# t-mount-verity.sh - every reader verifies (issue 40): an image packed
# with --verity mounts with -o verity=ROOTHASH and reads as the kernel's
# own mount of it does, and quash cat/extract --verity read it right; a
# separate tree written by veritysetup format works (-o verity_file=,
# --verity-file), and one appended at a hash offset of its own
# (-o verity_offset=); another image's root hash refuses the mount in one
# line, and -o verity= is refused with --catalog, whose images are
# verified against a NAME.roothash file beside each (an empty one fails
# the image; one without is served unverified), or, for a remote
# catalog, against the root hash its text index gives in a third column.
# One flipped byte in a data block, a fragment, the inode table, the
# directory table or the tree: the mount comes up, reading an affected
# file fails with EIO and the daemon logs one line naming the image, the
# offset and the hash that failed, and every file that reads does so
# byte for byte (the source tree is the oracle); in the superblock: the
# mount is refused in one line.  Over HTTP (nginx): the mount and cat
# verify the appended tree, a tampered copy gives EIO for the affected
# file only, and an image swapped for another valid one is refused.  A SIF
# container verifies with a tree over the whole file.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/asan.sh"
. "$QUASH_TOP/tests/lib/mount.sh"
. "$QUASH_TOP/tests/lib/remote.sh"
. "$QUASH_TOP/tests/lib/verity-tree.sh"

V=$WORK/t-mount-verity
trap 'unmount_all; remote_cleanup; rm -rf "$V"' EXIT
unmount_all 2>/dev/null
rm -rf "$V" && mkdir -p "$V/tree/d" "$V/tree/many" "$V/tree/frag" "$V/www"

# The tree: tests/lib/verity-tree.sh says what is in it and why.
verity_tree "$V/tree"
$QUASH pack --verity --no-progress "$V/tree" "$V/i.sqfs" >"$V/pack.out" || not_ok "pack --verity"
R=$(awk '/^Root hash:/ { print $3 }' "$V/pack.out")
$QUASH pack --verity --no-progress "$V/tree/d" "$V/other.sqfs" >"$V/other.out" || not_ok "pack --verity (other)"
R2=$(awk '/^Root hash:/ { print $3 }' "$V/other.out")

# field NAME: a superblock table's start, from quash info --json
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tables'][sys.argv[2]])" "$V/info.json" "$1"; }
$QUASH info --json "$V/i.sqfs" >"$V/info.json"
bytes_used=$(python3 -c "import json; print(json.load(open('$V/info.json'))['bytes_used'])")
hash_offset=$(( (bytes_used + 4095) / 4096 * 4096 ))

flip() {   # flip FILE OFFSET: invert one byte
	python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))" "$1" "$2"
}

# fg_mount CMD...: a mount expected to be refused; bounded, so that a foreground one that comes up
# after all fails the check (timeout's 124) instead of hanging the script, and unmounted at exit.
fg_mount() {
	QM_MOUNTS+=("f:$V/m")
	timeout -k 5 30 "$@"
}

# readall MOUNT OUT: read every file of the source tree through MOUNT; OUT gets one line per
# file, "ok PATH", "eio PATH", "wrong PATH" (read, but not the source's bytes) or "err PATH ERRNO".
readall() {
	python3 "$QUASH_TOP/tests/lib/readall.py" "$V/tree" "$1" >"$2"
}

# verdict OUT TARGET: a file matching the ERE TARGET failed with EIO, at least one file read
# right, none read wrong or failed otherwise.
verdict() {
	grep -qE "^eio $2\$" "$1" && grep -q '^ok ' "$1" && ! grep -qE '^(wrong|err) ' "$1"
}

# ---- untampered: the kernel's mount and the sources agree -------------------------------
kmount "$V/i.sqfs" "$V/k" || not_ok "kernel mount"
qmount "$V/m" $QUASH mount -o verity=$R,log="$V/m.log" "$V/i.sqfs" "$V/m" || not_ok "quash mount -o verity"
check "-o verity=ROOT: the mount reads as the kernel's mount of the same image" compare_trees "$V/k" "$V/m"
unmount_all
check "quash cat --verity ROOT reads a file right" \
	bash -c "$QUASH_ASAN cat --verity $R '$V/i.sqfs' d/text 2>'$V/cat.err' | cmp -s - '$V/tree/d/text' && ! grep -q . '$V/cat.err'"
$QUASH_ASAN extract --verity $R "$V/i.sqfs" -C "$V/x" >/dev/null 2>"$V/x.err"
check "quash extract --verity ROOT: the tree, file for file" \
	bash -c "diff -r '$V/tree' '$V/x' >/dev/null && ! grep -q Sanitizer '$V/x.err'"
check_fails "another image's root hash: the mount is refused in one line" 1 \
	"verity: tree level [0-9]+ block 0 \(offset [0-9]+ of $(ere "$V/i.sqfs")\) does not match the root hash$" \
	fg_mount $QUASH mount -f -o verity=$R2 "$V/i.sqfs" "$V/m"
check_fails "quash ls with another image's root hash: exit 1, one line" 1 \
	"^quash: $(ere "$V/i.sqfs"): verity: tree level [0-9]+ block 0 .* does not match the root hash$" \
	one_line $QUASH_ASAN ls --verity $R2 "$V/i.sqfs"
check_fails "-o verity= with --catalog is refused" 2 "-o verity= is for one image, not a catalog$" \
	fg_mount $QUASH mount --catalog -o verity=$R "$V" "$V/m"
unmount_all

# ---- a separate tree, written by veritysetup ----------------------------------------------
$QUASH pack -q --no-progress "$V/tree" "$V/plain.sqfs" || not_ok "pack"
veritysetup format "$V/plain.sqfs" "$V/plain.h" >"$V/vs.out" || not_ok "veritysetup format"
RV=$(awk '/^Root hash:/ { print $3 }' "$V/vs.out")
qmount "$V/m" $QUASH mount -o verity=$RV,verity_file="$V/plain.h" "$V/plain.sqfs" "$V/m" ||
	not_ok "mount -o verity_file="
readall "$V/m" "$V/r.out"
check "-o verity_file= (veritysetup's tree): every file reads right" bash -c "! grep -qv '^ok ' '$V/r.out'"
unmount_all
check "quash cat --verity-file (veritysetup's tree) reads a file right" \
	bash -c "$QUASH_ASAN cat --verity $RV --verity-file '$V/plain.h' '$V/plain.sqfs' big | cmp -s - '$V/tree/big'"

# A SIF container (the tree over the whole file, as veritysetup format on it gives): its
# squashfs partition verifies with the bytes before it, and a byte flipped in its descriptors
# (read to find the partition) refuses the mount.
python3 "$QUASH_TOP/tests/lib/make-sif.py" "$V/plain.sqfs" "$V/c.sif" 65536
veritysetup format "$V/c.sif" "$V/c.sif.h" >"$V/vsif.out" || not_ok "veritysetup format (SIF)"
RS=$(awk '/^Root hash:/ { print $3 }' "$V/vsif.out")
qmount "$V/m" $QUASH mount -o verity=$RS,verity_file="$V/c.sif.h" "$V/c.sif" "$V/m" || not_ok "mount a SIF -o verity="
readall "$V/m" "$V/r.out"
check "a SIF with a tree over the whole file (veritysetup's): every file of its partition reads right" \
	bash -c "[ -s '$V/r.out' ] && ! grep -qv '^ok ' '$V/r.out'"
unmount_all
cp "$V/c.sif" "$V/t.sif"
printf '\x55' | dd of="$V/t.sif" bs=1 seek=4200 conv=notrunc status=none
check_fails "a SIF with a byte flipped in its descriptors: the mount is refused in one line" 1 \
	"^quash: mount: $(ere "$V/t.sif"): verity: .*does not match" \
	fg_mount $QUASH mount -f -o verity=$RS,verity_file="$V/c.sif.h" "$V/t.sif" "$V/m"

# veritysetup's tree appended 1 MiB past the image, where no default offset looks: verity_offset=.
psize=$(stat -c %s "$V/plain.sqfs")
cp "$V/plain.sqfs" "$V/off.sqfs"
veritysetup format --hash-offset=$((psize + 1048576)) --data-blocks=$((psize / 4096)) \
	"$V/off.sqfs" "$V/off.sqfs" >"$V/off.out" || not_ok "veritysetup format --hash-offset"
RO=$(awk '/^Root hash:/ { print $3 }' "$V/off.out")
qmount "$V/m" $QUASH mount -o verity=$RO,verity_offset=$((psize + 1048576)) "$V/off.sqfs" "$V/m" ||
	not_ok "mount -o verity_offset="
readall "$V/m" "$V/r.out"
check "-o verity_offset= (veritysetup's tree at --hash-offset): every file reads right" \
	bash -c "! grep -qv '^ok ' '$V/r.out'"
unmount_all
check_fails "without --verity-offset that tree is not found: exit 1, one line" 1 \
	"^quash: $(ere "$V/off.sqfs"): no verity superblock after the image's end \(offset [0-9]+\)$" \
	one_line $QUASH_ASAN ls --verity $RO "$V/off.sqfs"

# ---- tampering ---------------------------------------------------------------------------
# tamper NAME OFFSET TARGET: flip the byte at OFFSET of a copy, mount it, read everything.
tamper() {
	local name=$1 off=$2 target=$3 blk=$(( $2 / 4096 ))
	cp "$V/i.sqfs" "$V/t.sqfs" && flip "$V/t.sqfs" "$off" && rm -f "$V/t.log"
	if ! qmount "$V/m" $QUASH mount -o verity=$R,log="$V/t.log" "$V/t.sqfs" "$V/m"; then
		not_ok "$name: the mount comes up"
		return
	fi
	readall "$V/m" "$V/r.out"
	check "$name: $target fails with EIO, every other file read is right" verdict "$V/r.out" "$target"
	check "$name: one log line names the image, the offset and the hash" grep -qE \
		": $(ere "$V/t.sqfs"): .*verity: (data block $blk \(offset $((blk * 4096))\) does not match its hash in tree level 0|tree level 0 block [0-9]+ \(offset [0-9]+ of $(ere "$V/t.sqfs")\) does not match its hash in level 1)$" \
		"$V/t.log"
	unmount_all
}
start=$($QUASH stat --json "$V/i.sqfs" big | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['blocks_start'])")
tamper "a flipped byte in a data block" $((start + 70000)) big
fragoff=$(python3 -c "print(open('$V/i.sqfs','rb').read().find(open('$V/tree/frag/r1','rb').read()[:64]))")
[ "$fragoff" -gt 0 ] || not_ok "frag/r1 stored raw in its fragment block"
tamper "a flipped byte in a fragment block" $((fragoff + 100)) frag/r1
# The inode table: its second 4 KiB block (the first may hold the end of the data before it; the
# root's inode comes last), in a table of many blocks.
ino=$(field inode) dir=$(field directory) frg=$(field fragment)
[ $(( dir - ino )) -ge 32768 ] && [ $(( frg - dir )) -ge 32768 ] ||
	not_ok "the inode and directory tables span 8 blocks or more ($ino, $dir, $frg)"
tamper "a flipped byte in the inode table" $(( (ino / 4096 + 1) * 4096 + 100 )) 'many/.*'
# The directory table: a block in its middle, past its first metadata block and before the
# root's listing (the mount reads both at once).
rootlist=$($QUASH stat --json "$V/i.sqfs" / | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['listing_block'])")
dblk=$(( (dir + frg) / 2 / 4096 * 4096 ))
[ $dblk -ge $(( dir + 8194 )) ] && [ $(( dblk + 4096 )) -le $(( dir + rootlist )) ] ||
	not_ok "a block of the directory table between its first and the root's listing" "$dir $rootlist $dblk $frg"
tamper "a flipped byte in the directory table" $(( dblk + 100 )) 'many/.*'
# The tree after the image: the superblock's hash block, the top block, then level 0, whose
# block 1 holds the hashes of data blocks 128 to 255 (bytes 512 KiB to 1 MiB: inside big).
[ "$(head -c $((hash_offset + 6)) "$V/i.sqfs" | tail -c 6)" = verity ] || not_ok "the tree's superblock at $hash_offset"
[ $start -lt 524288 ] && [ $((start + 3000000)) -gt 1048576 ] || not_ok "big spans bytes 512 KiB to 1 MiB"
tamper "a flipped byte in the tree's level 0" $((hash_offset + 3 * 4096 + 100)) big

cp "$V/i.sqfs" "$V/t.sqfs" && flip "$V/t.sqfs" 20
check_fails "a flipped byte in the superblock: the mount is refused in one line" 1 \
	"verity: data block 0 \(offset 0\) does not match its hash in tree level 0$" \
	fg_mount $QUASH mount -f -o verity=$R "$V/t.sqfs" "$V/m"

# ---- a catalog: NAME.roothash beside an image ---------------------------------------------
mkdir -p "$V/cat"
cp "$V/i.sqfs" "$V/cat/good.sqfs" && echo "$R" >"$V/cat/good.roothash"
cp "$V/i.sqfs" "$V/cat/bad.sqfs" && echo "$R" >"$V/cat/bad.roothash"
flip "$V/cat/bad.sqfs" $((start + 70000))
cp "$V/other.sqfs" "$V/cat/wrong.sqfs" && echo "$R" >"$V/cat/wrong.roothash"
cp "$V/i.sqfs" "$V/cat/empty.sqfs" && : >"$V/cat/empty.roothash"
cp "$V/i.sqfs" "$V/cat/plain.sqfs"
qmount "$V/c" $QUASH_ASAN mount --catalog -o log="$V/c.log" "$V/cat" "$V/c" || not_ok "mount --catalog"
check "catalog: the .roothash files are no images ($(ls "$V/c" | tr '\n' ' '))" \
	[ "$(ls "$V/c" | tr '\n' ' ')" = "bad empty good plain wrong " ]
readall "$V/c/good" "$V/r.out"
check "catalog: an image with its NAME.roothash reads right" bash -c "! grep -qv '^ok ' '$V/r.out'"
readall "$V/c/bad" "$V/r.out"
check "catalog: a flipped byte in a data block: big fails with EIO, the rest reads right" verdict "$V/r.out" big
check "catalog: the log line names the image and the block" grep -qE \
	"bad\.sqfs.*verity: data block $(( (start + 70000) / 4096 )) \(offset [0-9]+\) does not match its hash in tree level 0" "$V/c.log"
failed_because() { ls "$V/c/$1" >/dev/null 2>&1; "$QUASH" catalog ls "$V/c" | grep -E "^$1[[:space:]]+failed" | grep -qE "$2"; }
check "catalog: another image under the root hash fails to open, and catalog ls says why" \
	failed_because wrong "does not match the root hash"
check "catalog: an empty NAME.roothash fails the image, never serves it unverified" \
	failed_because empty "empty\.roothash: no root hash in it"
readall "$V/c/plain" "$V/r.out"
check "catalog: an image without a .roothash is served as before" bash -c "! grep -qv '^ok ' '$V/r.out'"
unmount_all

# ---- over HTTP ---------------------------------------------------------------------------
port=$(free_port)
cp "$V/i.sqfs" "$V/www/i.sqfs" && cp "$V/i.sqfs" "$V/www/bad.sqfs" && cp "$V/other.sqfs" "$V/www/swapped.sqfs"
flip "$V/www/bad.sqfs" $((start + 70000))
if start_nginx "$V/nginx" "$V/www" "$port"; then
	url=http://127.0.0.1:$port
	qmount "$V/m" $QUASH mount -o verity=$R "$url/i.sqfs" "$V/m" || not_ok "mount over HTTP -o verity"
	readall "$V/m" "$V/r.out"
	check "over HTTP: every file reads right through the verifying mount" bash -c "! grep -qv '^ok ' '$V/r.out'"
	unmount_all
	check "over HTTP: quash cat --verity reads a file right" \
		bash -c "$QUASH_ASAN cat --verity $R '$url/i.sqfs' big | cmp -s - '$V/tree/big'"
	rm -f "$V/t.log"
	qmount "$V/m" $QUASH mount -o verity=$R,log="$V/t.log" "$url/bad.sqfs" "$V/m" || not_ok "mount bad.sqfs"
	readall "$V/m" "$V/r.out"
	check "over HTTP, a flipped byte in a data block: big fails with EIO, the rest reads right" \
		verdict "$V/r.out" big
	check "over HTTP: the log line names the URL and the block" grep -qE \
		": $(ere "$url/bad.sqfs"): .*verity: data block $(( (start + 70000) / 4096 )) \(offset [0-9]+\) does not match its hash in tree level 0$" "$V/t.log"
	unmount_all
	check_fails "over HTTP: quash cat of the affected file fails, exit 1, naming the block" 1 \
		"^quash: $(ere "$url/bad.sqfs"): big: .*verity: data block $(( (start + 70000) / 4096 )) " \
		one_line $QUASH_ASAN cat --verity $R "$url/bad.sqfs" big
	check_fails "over HTTP, an image swapped for another valid one: the mount is refused" 1 \
		"verity: .* does not match the root hash$" \
		fg_mount $QUASH mount -f -o verity=$R "$url/swapped.sqfs" "$V/m"
	# A text index vouching for each image with its root hash: the catalog verifies them.
	printf 'i.sqfs 0 %s\nbad.sqfs 0 %s\nswapped.sqfs 0 %s\nplain.sqfs\n' "$R" "$R" "$R" >"$V/www/index.txt"
	cp "$V/i.sqfs" "$V/www/plain.sqfs"
	qmount "$V/c" $QUASH_ASAN mount --catalog -o log="$V/ci.log" "$url/index.txt" "$V/c" || not_ok "mount --catalog index"
	readall "$V/c/i" "$V/r.out"
	check "index with root hashes: a verified image reads right" bash -c "! grep -qv '^ok ' '$V/r.out'"
	readall "$V/c/bad" "$V/r.out"
	check "index with root hashes: a flipped byte gives EIO for big, the rest reads right" verdict "$V/r.out" big
	check "index with root hashes: an image swapped on the server fails to open, catalog ls says why" bash -c \
		"ls '$V/c/swapped' >/dev/null 2>&1; '$QUASH' catalog ls '$V/c' | grep -E '^swapped[[:space:]]+failed' | grep -q 'does not match the root hash'"
	readall "$V/c/plain" "$V/r.out"
	check "index with root hashes: an image without one is served as before" bash -c "! grep -qv '^ok ' '$V/r.out'"
	check "quash catalog list prints the root hash as a fifth column" bash -c \
		"'$QUASH' catalog list '$url/index.txt' | grep -qxF \"\$(printf 'i.sqfs\t0\t0\t\t%s' $R)\""
	unmount_all
else
	not_ok "nginx starts" "$(tail -3 "$V/nginx/error.log" 2>/dev/null)"
fi
