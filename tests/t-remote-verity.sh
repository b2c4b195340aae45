#!/bin/bash
# t-remote-verity.sh - verified remote images (issue 40): each chunk is
# checked as it arrives, before the chunk cache keeps it in memory or in
# the cache directory.  Over nginx, with 256 KiB chunks and a cache
# directory, the sanitizer build's mount of a copy with one flipped byte
# in a data block, a fragment, the inode table, the directory table or the
# tree's level 0: every file that reads does so as the kernel's mount of
# the untampered image, the affected ones fail with EIO, the log names the
# URL, the offset and the hash, no chunk file in the cache directory holds
# a byte the good image does not, and once the server holds the good image
# again (the same ETag: the same mtime and size) the same mount reads
# everything right.  A flipped superblock and a truncated image refuse
# the mount in one line.  An image swapped on the server for another
# valid one of the same size under the same ETag, mid-mount: the changed
# file fails, the rest reads right.  A cache-directory chunk forged with
# a valid XXH3 is caught on the next mount, dropped and fetched again.
# On Ceph RGW: the root hash from the object's metadata
# (x-amz-meta-verity-roothash) verifies a single s3:// image and a
# catalog's images, a wrong one refuses the mount, one that is no hex
# names itself in one line, and -o verity= or a text index's third column
# wins over it.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/asan.sh"
. "$QUASH_TOP/tests/lib/mount.sh"
. "$QUASH_TOP/tests/lib/remote.sh"
. "$QUASH_TOP/tests/lib/verity-tree.sh"

V=$WORK/t-remote-verity
trap 'unmount_all; remote_cleanup; "$QUASH_TOP/tests/lib/stop-rgw.sh" "$V/rgw"; rm -rf "$V"' EXIT
unmount_all 2>/dev/null
rm -rf "$V" && mkdir -p "$V/tree/d" "$V/tree/many" "$V/tree/frag" "$V/www"

# The tree of t-mount-verity (tests/lib/verity-tree.sh).  other.sqfs: the same tree with 4 KiB
# of big changed in its middle.
verity_tree "$V/tree"
$QUASH pack --verity --no-progress "$V/tree" "$V/i.sqfs" >"$V/pack.out" || not_ok "pack --verity"
R=$(awk '/^Root hash:/ { print $3 }' "$V/pack.out")
cp -a "$V/tree" "$V/tree2"
python3 -c "
import os, sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(1500000); f.write(os.urandom(4096))" "$V/tree2/big"
touch -r "$V/tree/big" "$V/tree2/big"
$QUASH pack --verity --no-progress "$V/tree2" "$V/other.sqfs" >"$V/other.out" || not_ok "pack --verity (other)"
R2=$(awk '/^Root hash:/ { print $3 }' "$V/other.out")

$QUASH info --json "$V/i.sqfs" >"$V/info.json"
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tables'][sys.argv[2]])" "$V/info.json" "$1"; }
bytes_used=$(python3 -c "import json; print(json.load(open('$V/info.json'))['bytes_used'])")
hash_offset=$(( (bytes_used + 4095) / 4096 * 4096 ))
start=$($QUASH stat --json "$V/i.sqfs" big | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['blocks_start'])")
fragoff=$(python3 -c "print(open('$V/i.sqfs','rb').read().find(open('$V/tree/frag/r1','rb').read()[:64]))")
ino=$(field inode) dir=$(field directory) frg=$(field fragment)
rootlist=$($QUASH stat --json "$V/i.sqfs" / | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['listing_block'])")
dblk=$(( (dir + frg) / 2 / 4096 * 4096 ))
fixture_ok() {
	[ "$(stat -c %s "$V/i.sqfs")" = "$(stat -c %s "$V/other.sqfs")" ] && [ "$R" != "$R2" ] &&
	[ "$fragoff" -gt 0 ] && [ $(( dir - ino )) -ge 32768 ] && [ $(( frg - dir )) -ge 32768 ] &&
	[ $dblk -ge $(( dir + 8194 )) ] && [ $(( dblk + 4096 )) -le $(( dir + rootlist )) ] &&
	[ "$start" -lt 524288 ] && [ $((start + 3000000)) -gt 1048576 ] &&
	[ "$(head -c $((hash_offset + 6)) "$V/i.sqfs" | tail -c 6)" = verity ]
}
check "fixture: other.sqfs as large as i.sqfs, another root hash; the parts to flip where expected" fixture_ok

kmount "$V/i.sqfs" "$V/k" || not_ok "kernel mount"

flip() {   # flip FILE OFFSET: invert one byte
	python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))" "$1" "$2"
}

# readall MOUNT OUT: every file of the kernel's mount of the good image read through MOUNT; OUT
# gets "ok PATH", "eio PATH", "wrong PATH" (read, but not the good bytes) or "err PATH ERRNO".
readall() {
	python3 "$QUASH_TOP/tests/lib/readall.py" "$V/k" "$1" >"$2"
}
verdict() {   # verdict OUT TARGET: a file matching the ERE TARGET failed with EIO, every other one read right
	grep -qE "^eio ($2)\$" "$1" && ! grep -vE "^(ok .*|eio ($2))\$" "$1" | head -5 | grep .
}
all_ok() { [ -s "$1" ] && ! grep -qv '^ok ' "$1"; }

# cache_clean DIR: every chunk or range file in the cache directory holds the good image's bytes
# at its offset, and there is at least one (disk_cache.c: header, key, data).
cache_clean() {
	python3 - "$1" "$V/i.sqfs" <<'PY'
import os, struct, sys
good = open(sys.argv[2], 'rb').read()
n = bad = 0
for name in os.listdir(sys.argv[1]):
    if not name.startswith('c-'):
        continue
    b = open(os.path.join(sys.argv[1], name), 'rb').read()
    klen, dlen = struct.unpack_from('<I', b, 8)[0], struct.unpack_from('<Q', b, 16)[0]
    key = b[32:32 + klen].decode().split('\n')
    off = int(key[2]) if key[1] == 'range' else int(key[1]) * int(key[2])
    n += 1
    if b[32 + klen:] != good[off:off + dlen]:
        bad += 1
        print('%s: bytes at %d differ from the good image' % (name, off))
print('%d files, %d wrong' % (n, bad))
sys.exit(0 if n and not bad else 1)
PY
}

# mount_bg DIR ERR ARGS...: the sanitizer build's mount in the foreground, in the background (its
# stderr to ERR, for reports), until DIR is mounted.
mount_bg() {
	local dir=$1 err=$2; shift 2
	mkdir -p "$dir"
	"$QUASH_ASAN" mount -f "$@" "$dir" 2>"$err" &
	MOUNT_PID=$!
	QM_MOUNTS+=("f:$dir")
	wait_mounted "$dir"
}
# unmount_bg: unmount and wait for mount_bg's daemon to exit, so that its stderr is complete.
unmount_bg() {
	fusermount3 -u -z "$V/m"
	wait "$MOUNT_PID"
}
# qumount DIR: unmount one quash mount (the kernel's mount of the good image stays, the oracle).
qumount() {
	fusermount3 -u "$1"
}
# fg_mount CMD...: a mount expected to be refused, bounded (a mount that comes up fails the check).
fg_mount() {
	QM_MOUNTS+=("f:$V/m")
	timeout -k 5 60 "$@"
}
# serve FILE NAME: FILE as www/NAME with the fixed mtime, so that nginx's ETag (mtime and size) is
# the same for every copy of the same size: a server that changes the bytes under an ETag.
serve() {
	cp "$1" "$V/www/.$2" && touch -d @1700000000 "$V/www/.$2" && mv "$V/www/.$2" "$V/www/$2"
}

port=$(free_port)
start_nginx "$V/nginx" "$V/www" "$port" || not_ok "nginx starts" "$(tail -3 "$V/nginx/error.log" 2>/dev/null)"
url=http://127.0.0.1:$port
OPTS="chunk_size=256K"

# tamper NAME OFFSET TARGET MESSAGE: flip the byte at OFFSET of the served copy, mount it with a
# fresh cache directory, read everything, check the cache directory, put the good image back
# under the same ETag and read everything again through the same mount.
tamper() {
	local name=$1 off=$2 target=$3 msg=$4 c=$V/cache-$RANDOM
	cp "$V/i.sqfs" "$V/t.sqfs" && flip "$V/t.sqfs" "$off" && serve "$V/t.sqfs" t.sqfs && rm -f "$V/t.log"
	if ! mount_bg "$V/m" "$V/m.err" -o verity=$R,$OPTS,cache_dir=$c,log="$V/t.log" "$url/t.sqfs"; then
		not_ok "$name: the mount comes up" "$(head -3 "$V/m.err")"
		return
	fi
	readall "$V/m" "$V/r.out"
	check "$name: $target fails with EIO, every other file reads as the kernel's mount" verdict "$V/r.out" "$target"
	check "$name: the log names the URL, the offset and the hash" \
		grep -qE ": $(ere "$url/t.sqfs"): .*verity: $msg$" "$V/t.log"
	check "$name: no cache file holds a wrong byte" cache_clean "$c"
	serve "$V/i.sqfs" t.sqfs
	readall "$V/m" "$V/r.out"
	check "$name: the server put right, the same mount reads everything right" all_ok "$V/r.out"
	unmount_bg
	check "$name: no sanitizer report" asan_clean "$V/m.err"
}
blk=$(( (start + 70000) / 4096 ))
tamper "a flipped byte in a data block" $((start + 70000)) big \
	"data block $blk \(offset $((blk * 4096))\) does not match its hash in tree level 0"
blk=$(( (fragoff + 100) / 4096 ))
# The fragment block holds big's tail and frag/r2 too: reading any of them reads the whole block.
tamper "a flipped byte in a fragment block" $((fragoff + 100)) 'big|frag/r1|frag/r2' \
	"data block $blk \(offset $((blk * 4096))\) does not match its hash in tree level 0"
blk=$(( ino / 4096 + 1 ))
# That block holds the inodes of many/'s first files and of d/text and frag/'s.
tamper "a flipped byte in the inode table" $(( blk * 4096 + 100 )) 'many/.*|d/text|frag/r1|frag/r2' \
	"data block $blk \(offset $((blk * 4096))\) does not match its hash in tree level 0"
blk=$(( dblk / 4096 ))
tamper "a flipped byte in the directory table" $(( dblk + 100 )) 'many/.*' \
	"data block $blk \(offset $dblk\) does not match its hash in tree level 0"
# Level 0's block 1 holds the hashes of data blocks 128 to 255 (inside big), after the superblock's
# hash block and the top block.
tamper "a flipped byte in the tree's level 0" $((hash_offset + 3 * 4096 + 100)) big \
	"tree level 0 block 1 \(offset $((hash_offset + 3 * 4096)) of $(ere "$url/t.sqfs")\) does not match its hash in level 1"

cp "$V/i.sqfs" "$V/t.sqfs" && flip "$V/t.sqfs" 20 && serve "$V/t.sqfs" t.sqfs
check_fails "a flipped byte in the superblock: the mount is refused in one line" 1 \
	"verity: data block 0 \(offset 0\) does not match its hash in tree level 0$" \
	fg_mount $QUASH mount -f -o verity=$R,$OPTS,cache_dir="$V/cache-sb" "$url/t.sqfs" "$V/m"
# Truncated inside the tree: its superblock and top block are there, level 0 is cut short.
head -c $((hash_offset + 8192)) "$V/i.sqfs" >"$V/t.sqfs" && serve "$V/t.sqfs" t.sqfs
check_fails "a truncated image: the mount is refused in one line" 1 \
	"$(ere "$url/t.sqfs") is $((hash_offset + 8192)) bytes, its verity tree ends at [0-9]+$" \
	fg_mount $QUASH mount -f -o verity=$R,$OPTS "$url/t.sqfs" "$V/m"

# ---- swapped mid-mount for another valid image under the same ETag ----------------------------
serve "$V/i.sqfs" s.sqfs
rm -f "$V/s.log"
if mount_bg "$V/m" "$V/m.err" -o verity=$R,$OPTS,cache_dir="$V/cache-s",log="$V/s.log" "$url/s.sqfs"; then
	cat "$V/m/d/text" >/dev/null
	serve "$V/other.sqfs" s.sqfs
	readall "$V/m" "$V/r.out"
	check "swapped under the same ETag: big (changed) fails with EIO, the rest reads right" verdict "$V/r.out" big
	check "swapped: the log names the block that changed" grep -qE \
		"verity: (data block $(( (start + 1500000) / 4096 )) |tree level 0 block [0-9]+ )" "$V/s.log"
	check "swapped: no cache file holds a byte of the other image" cache_clean "$V/cache-s"
	serve "$V/i.sqfs" s.sqfs
	readall "$V/m" "$V/r.out"
	check "swapped back: the same mount reads everything right" all_ok "$V/r.out"
	unmount_bg
	check "swapped: no sanitizer report" asan_clean "$V/m.err"
else
	not_ok "mount s.sqfs" "$(head -3 "$V/m.err")"
fi

# ---- a forged cache-directory chunk: a flipped byte and its XXH3 made to match --------------------
# forge DIR OFFSET: flip the byte at image offset OFFSET in the chunk file holding it, fix its hash.
forge() {
	python3 - "$1" "$2" <<'PY'
import ctypes, os, struct, sys
xxh = ctypes.CDLL('libxxhash.so.0')
xxh.XXH3_64bits.restype = ctypes.c_uint64
xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
want = int(sys.argv[2])
for name in os.listdir(sys.argv[1]):
    p = os.path.join(sys.argv[1], name)
    if not name.startswith('c-'):
        continue
    b = bytearray(open(p, 'rb').read())
    klen, dlen = struct.unpack_from('<I', b, 8)[0], struct.unpack_from('<Q', b, 16)[0]
    key = b[32:32 + klen].decode().split('\n')
    if key[1] == 'range':
        continue
    off = int(key[1]) * int(key[2])
    if off <= want < off + dlen:
        b[32 + klen + want - off] ^= 0xff
        data = bytes(b[32 + klen:])
        struct.pack_into('<Q', b, 24, xxh.XXH3_64bits(data, len(data)))
        open(p, 'wb').write(b)
        print(name)
        sys.exit(0)
sys.exit(1)
PY
}
serve "$V/i.sqfs" f.sqfs
qmount "$V/m" $QUASH mount -o verity=$R,$OPTS,cache_dir="$V/cache-f" "$url/f.sqfs" "$V/m" || not_ok "mount f.sqfs"
readall "$V/m" "$V/r.out"
qumount "$V/m"
# Not chunk 0: the open request fetches that one from the server whatever the directory holds.
fo=$((start + 1000000))
forged=$(forge "$V/cache-f" $fo)
check "fixture: a chunk file of big forged with a valid XXH3 ($forged)" test -n "$forged"
rm -f "$V/f.log"
if mount_bg "$V/m" "$V/m.err" -o verity=$R,$OPTS,cache_dir="$V/cache-f",log="$V/f.log" "$url/f.sqfs"; then
	readall "$V/m" "$V/r.out"
	check "a forged cache chunk: every file reads right (fetched again)" all_ok "$V/r.out"
	check "a forged cache chunk: the cache directory holds the good bytes again" cache_clean "$V/cache-f"
	check "a forged cache chunk: the log names the cache chunk and the hash" grep -qE \
		"cache directory: chunk at $(( fo / 262144 * 262144 )) failed its check, fetched again: verity: data block $(( fo / 4096 )) " \
		"$V/f.log"
	unmount_bg
	check "a forged cache chunk: no sanitizer report" asan_clean "$V/m.err"
else
	not_ok "mount f.sqfs again" "$(head -3 "$V/m.err")"
fi

# ---- S3 object metadata on Ceph RGW ------------------------------------------------------------
S3=$(free_port)
export MON_PORT=$(free_port)
if EP=$("$QUASH_TOP/tests/lib/start-rgw.sh" "$V/rgw" "$S3" 2>"$V/rgw.err"); then
	export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1
	export AWS_ENDPOINT_URL=$EP HOME=$V/home
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE
	mkdir -p "$HOME"
	aws_() { aws --endpoint-url "$EP" "$@" >/dev/null; }
	put() {   # put FILE KEY [ROOTHASH]: a public object, with the metadata when given
		aws_ s3 cp --only-show-errors --acl public-read ${3:+--metadata verity-roothash=$3} "$1" "s3://qverity/$2"
	}
	cp "$V/i.sqfs" "$V/t.sqfs" && flip "$V/t.sqfs" $((start + 70000))
	aws_ s3 mb s3://qverity
	put "$V/i.sqfs" img/good.sqfs "$R"
	put "$V/t.sqfs" img/bad.sqfs "$R"
	put "$V/i.sqfs" img/wrong.sqfs "$R2"
	put "$V/i.sqfs" img/plain.sqfs
	put "$V/i.sqfs" nohex.sqfs "not-a-hash"
	rm -f "$V/b.log"
	qmount "$V/m" $QUASH mount -o log="$V/b.log" s3://qverity/img/bad.sqfs "$V/m" || not_ok "mount s3 bad.sqfs"
	readall "$V/m" "$V/r.out"
	check "s3 metadata root hash: a flipped byte in big gives EIO, the rest reads right" verdict "$V/r.out" big
	check "s3 metadata root hash: the log names the object and the block" grep -qE \
		": s3://qverity/img/bad\.sqfs: .*verity: data block $(( (start + 70000) / 4096 )) " "$V/b.log"
	qumount "$V/m"
	check_fails "s3 metadata naming another image's root hash: the mount is refused" 1 \
		"verity: tree level [0-9]+ block 0 .* does not match the root hash$" \
		fg_mount $QUASH mount -f s3://qverity/img/wrong.sqfs "$V/m"
	check_fails "s3 metadata that is no hash: one line naming it" 1 \
		"object metadata verity-roothash 'not-a-hash' is not a hash in hex$" \
		one_line $QUASH_ASAN ls s3://qverity/nohex.sqfs
	check "-o verity= wins over the metadata" bash -c \
		"$QUASH_ASAN cat --verity $R s3://qverity/img/wrong.sqfs big 2>'$V/w.err' | cmp -s - '$V/tree/big' && ! grep -q . '$V/w.err'"
	qmount "$V/c" $QUASH mount --catalog -o log="$V/c.log" s3://qverity/img/ "$V/c" || not_ok "mount --catalog s3"
	readall "$V/c/good" "$V/r.out"
	check "s3 catalog: an image with its metadata root hash reads right" all_ok "$V/r.out"
	readall "$V/c/bad" "$V/r.out"
	check "s3 catalog: metadata root hash, a flipped byte: big fails with EIO, the rest reads right" \
		verdict "$V/r.out" big
	check "s3 catalog: metadata naming another image's root hash fails the image, catalog ls says why" bash -c \
		"ls '$V/c/wrong' >/dev/null 2>&1; '$QUASH' catalog ls '$V/c' | grep -E '^wrong[[:space:]]+failed' | grep -q 'does not match the root hash'"
	readall "$V/c/plain" "$V/r.out"
	check "s3 catalog: an object without the metadata is served as before" all_ok "$V/r.out"
	qumount "$V/c"
	# A text index over RGW's own HTTP (public objects): its third column wins over the metadata.
	printf 'img/wrong.sqfs 0 %s\n' "$R" >"$V/index.txt" && put "$V/index.txt" index.txt
	qmount "$V/c" $QUASH mount --catalog "$EP/qverity/index.txt" "$V/c" || not_ok "mount --catalog index on rgw"
	readall "$V/c/img/wrong" "$V/r.out"
	check "a text index's root hash wins over the object's metadata" all_ok "$V/r.out"
	qumount "$V/c"
else
	not_ok "rgw starts" "$(tail -3 "$V/rgw.err")"
fi
