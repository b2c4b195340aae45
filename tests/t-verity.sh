#!/bin/bash
# t-verity.sh - quash verity format and verify against veritysetup, the
# oracle for the dm-verity format: on a quash-packed and a mksquashfs-packed
# image, with the same salt and UUID, quash's header block, root hash and
# tree bytes are veritysetup's (a separate hash file and appended at a hash
# offset, with and without a superblock), and veritysetup verify accepts
# them; quash verify accepts veritysetup's trees for data and hash block
# sizes of 512, 1024 and 4096, several salts (none among them) and each
# hash quash supports, and refuses whirlpool in one line.  The default salt
# is the SHA-256 of the first block, the default UUID is drawn from the
# root hash, and format is byte-for-byte reproducible.  Tampering (one flipped byte in the squashfs superblock, a
# data block, the last partial block of an unpadded image, the tree, the
# appended tree; a truncated image; a wrong root hash) fails verify with
# exit 1 and the one line naming the block, where veritysetup fails too;
# bad root hashes and options are exit 2.  pack --verity gives pack's image
# with verity format's tree, and its root hash in the summary and --json.
# Over HTTP (nginx), format reads
# a remote image, and verify checks a separate and an appended tree and
# catches a tampered copy.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/asan.sh"
. "$QUASH_TOP/tests/lib/remote.sh"

V=$WORK/t-verity
rm -rf "$V" && mkdir -p "$V/tree/d" "$V/www"
trap 'remote_cleanup; rm -rf "$V"' EXIT

SALT=5d2e4f0a1b3c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678abcd
UUID=0b6a2b1e-7c3d-4e5f-8a9b-0c1d2e3f4a5b
head -c 3000000 /dev/urandom >"$V/tree/random"
seq 1 200000 >"$V/tree/d/text"
printf 'small\n' >"$V/tree/d/small"
$QUASH pack -q --no-progress "$V/tree" "$V/q.sqfs" >/dev/null || not_ok "quash pack"
mksquashfs "$V/tree" "$V/m.sqfs" -quiet -no-progress >/dev/null || not_ok "mksquashfs"

root_of() { awk '/^Root hash:/ { print $3 }' "$1"; }

# ---- the same tree as veritysetup, with the same salt and UUID --------------------
for img in q m; do
	I=$V/$img.sqfs
	size=$(stat -c %s "$I")
	for sb in "" --no-superblock; do
		what="$img.sqfs${sb:+ $sb}"
		rm -f "$V/vs.h" "$V/q.h"     # veritysetup writes into an existing file without cutting it
		veritysetup format $sb --salt=$SALT --uuid=$UUID "$I" "$V/vs.h" >"$V/vs.out"
		qa "$V/q.out" $QUASH_ASAN verity format $sb --salt=$SALT --uuid=$UUID "$I" "$V/q.h" ||
			not_ok "$what: quash verity format runs"
		sed -i "1s|$V/q.h|$V/vs.h|" "$V/q.out"
		check "$what, separate file: the header block is veritysetup's, root hash included" \
			cmp -s "$V/q.out" "$V/vs.out"
		check "$what, separate file: the tree bytes are veritysetup's" cmp -s "$V/q.h" "$V/vs.h"
		check "$what, separate file: veritysetup verify accepts quash's tree" \
			veritysetup verify $sb --salt=$SALT "$I" "$V/q.h" "$(root_of "$V/q.out")"

		# Appended: quash's default offset is the image rounded up to 4 KiB (mksquashfs pads to it).
		cp "$I" "$V/vs-app.sqfs" && cp "$I" "$V/q-app.sqfs"
		veritysetup format $sb --salt=$SALT --uuid=$UUID --hash-offset=$size \
			"$V/vs-app.sqfs" "$V/vs-app.sqfs" >"$V/vs.out"
		qa "$V/q.out" $QUASH_ASAN verity format $sb --salt=$SALT --uuid=$UUID "$V/q-app.sqfs" ||
			not_ok "$what: quash verity format (appended) runs"
		check "$what, appended: the image with its tree is byte for byte veritysetup's" \
			cmp -s "$V/q-app.sqfs" "$V/vs-app.sqfs"
		check "$what, appended: the same root hash" test "$(root_of "$V/q.out")" = "$(root_of "$V/vs.out")"
		check "$what, appended: veritysetup verify accepts it" veritysetup verify $sb --salt=$SALT \
			--hash-offset=$size ${sb:+--data-blocks=$((size / 4096))} "$V/q-app.sqfs" "$V/q-app.sqfs" \
			"$(root_of "$V/q.out")"
		if [ -z "$sb" ]; then
			check "$what, appended: quash verify finds the tree after the image and accepts it" \
				qa "$V/v.out" $QUASH_ASAN verity verify "$V/q-app.sqfs" "$(root_of "$V/q.out")"
		else
			check "$what, appended: quash verify accepts it given the options" \
				qa "$V/v.out" $QUASH_ASAN verity verify $sb --salt=$SALT "$V/q-app.sqfs" \
				"$(root_of "$V/q.out")"
		fi
	done
done
check "the appended image still reads: unsquashfs lists it" \
	bash -c "unsquashfs -l '$V/q-app.sqfs' | grep -q 'd/text'"

# ---- veritysetup's trees, read by quash --------------------------------------------
# DATA HASH ALGORITHM SALT (random: veritysetup draws one)
while read -r dbs hbs alg salt sb; do
	sb=${sb#none}
	what="veritysetup's tree (data $dbs, hash $hbs, $alg, salt ${salt}${sb:+, $sb})"
	sopt=() && [ "$salt" != random ] && sopt=(--salt="$salt")
	veritysetup format $sb --data-block-size=$dbs --hash-block-size=$hbs --hash=$alg "${sopt[@]}" \
		"$V/m.sqfs" "$V/vs.h" >"$V/vs.out"
	opts=() && [ -n "$sb" ] && opts=($sb --data-block-size $dbs --hash-block-size $hbs --hash $alg "${sopt[@]}")
	check "quash verify accepts $what" \
		qa "$V/v.out" $QUASH_ASAN verity verify "${opts[@]}" "$V/m.sqfs" "$V/vs.h" "$(root_of "$V/vs.out")"
done <<EOF
4096 4096 sha256 random none
512 512 sha1 - none
1024 4096 sha512 ab none
4096 1024 sha256 $SALT none
512 1024 sha224 random none
4096 512 sha384 - none
1024 1024 sha1 0011223344 --no-superblock
EOF
veritysetup format --hash=whirlpool "$V/m.sqfs" "$V/w.h" >"$V/vs.out"
check_fails "quash verify refuses veritysetup's whirlpool tree in one line" 1 \
	"^quash: $(ere "$V/w.h"): hash algorithm 'whirlpool' is not supported \(sha1, sha224, sha256, sha384 and sha512 are\)$" \
	one_line $QUASH_ASAN verity verify "$V/m.sqfs" "$V/w.h" "$(root_of "$V/vs.out")"
check_fails "quash verity format --hash whirlpool is a usage error" 2 \
	"^quash: verity: hash algorithm 'whirlpool' is not supported" \
	two_lines $QUASH_ASAN verity format --hash whirlpool "$V/m.sqfs" "$V/x.h"

# ---- reproducible by default ---------------------------------------------------------
$QUASH verity format "$V/q.sqfs" "$V/r1.h" >"$V/r1.out"
$QUASH verity format "$V/q.sqfs" "$V/r2.h" >"$V/r2.out"
sed -i 1d "$V/r1.out" "$V/r2.out"
check "format without --salt twice: byte-identical trees" cmp -s "$V/r1.h" "$V/r2.h"
check "format without --salt twice: the same header block" cmp -s "$V/r1.out" "$V/r2.out"
want=$(head -c 4096 "$V/q.sqfs" | sha256sum | cut -d' ' -f1)
check "the default salt is the SHA-256 of the first 4096 bytes" \
	grep -qx "Salt:            	$want" "$V/r1.out"
check "veritysetup dump reads quash's default superblock: that salt" \
	bash -c "veritysetup dump '$V/r1.h' | grep -q '$want'"
R=$(root_of "$V/r1.out")
want=$(python3 -c "
b = bytearray.fromhex('$R')[:16]; b[6] = b[6] & 15 | 64; b[8] = b[8] & 63 | 128; h = b.hex()
print('-'.join((h[:8], h[8:12], h[12:16], h[16:20], h[20:])))")
check "the default UUID is the root hash's first 16 bytes made a version 4 UUID" \
	grep -qx "UUID:            	$want" "$V/r1.out"
$QUASH_ASAN verity format --json "$V/q.sqfs" "$V/j.h" >"$V/j.json"
check "--json: the same root hash and hash_end as the tree's size" python3 -c "
import json, os, sys
j = json.load(open('$V/j.json'))
sys.exit(not (j['root_hash'] == '$R' and j['hash_end'] == os.path.getsize('$V/j.h') and j['superblock']))"
$QUASH verity format --root-hash-file "$V/root.txt" "$V/q.sqfs" "$V/rf.h" >/dev/null
check "--root-hash-file: veritysetup verify takes the file format wrote" \
	veritysetup verify --root-hash-file="$V/root.txt" "$V/q.sqfs" "$V/rf.h"
check "--root-hash-file: quash verify takes it instead of ROOTHASH" \
	qa "$V/v.out" $QUASH_ASAN verity verify --root-hash-file "$V/root.txt" "$V/q.sqfs" "$V/rf.h"

# ---- tampering ---------------------------------------------------------------------
flip() {   # flip FILE OFFSET: invert one byte
	python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))" "$1" "$2"
}
# tamper NAME FILE OFFSET PATTERN [HASHFILE]: flip the byte in a copy; quash and veritysetup both refuse it.
tamper() {
	local name=$1 file=$2 off=$3 pat=$4 hf=${5:-}
	cp "$V/q.sqfs" "$V/t.sqfs" && cp "$V/r1.h" "$V/t.h"
	flip "$V/$file" "$off"
	check_fails "$name: quash verify fails, exit 1, naming the block" 1 "$pat" \
		one_line $QUASH_ASAN verity verify "$V/t.sqfs" "$V/t.h" "$R"
	check "$name: veritysetup verify fails too" bash -c "! veritysetup verify '$V/t.sqfs' '$V/t.h' $R 2>/dev/null"
}
blocks=$(( $(stat -c %s "$V/q.sqfs") / 4096 ))
tamper "a flipped byte in the squashfs superblock" t.sqfs 10 \
	"^quash: $(ere "$V/t.sqfs"): verity: data block 0 \(offset 0\) does not match its hash in tree level 0$"
mid=$((blocks / 2))
tamper "a flipped byte in data block $mid" t.sqfs $((mid * 4096 + 1234)) \
	"^quash: $(ere "$V/t.sqfs"): verity: data block $mid \(offset $((mid * 4096))\) does not match its hash in tree level 0$"
tamper "a flipped byte in the last data block" t.sqfs $((blocks * 4096 - 1)) \
	"verity: data block $((blocks - 1)) \(offset $(((blocks - 1) * 4096))\) does not match its hash in tree level 0$"
# The tree: one level-0 block here (fewer than 128 data blocks would need none above it).
l0=$(python3 -c "import json; print(json.load(open('$V/j.json'))['tree_offset'] + 4096)")
tamper "a flipped byte in the tree's level 0" t.h $((l0 + 40)) \
	"^quash: $(ere "$V/t.sqfs"): verity: tree level 0 block 0 \(offset $l0 of $(ere "$V/t.h")\) does not match its hash in level 1$"
tamper "a flipped byte in the tree's top block" t.h $((l0 - 4096 + 3)) \
	"verity: tree level 1 block 0 \(offset $((l0 - 4096)) of $(ere "$V/t.h")\) does not match the root hash$"
check_fails "another image's root hash: exit 1, the top block does not match it" 1 \
	"verity: tree level 1 block 0 .* does not match the root hash$" \
	one_line $QUASH_ASAN verity verify "$V/q.sqfs" "$V/r1.h" "$(root_of "$V/vs.out" | cut -c1-64)"
head -c $(( (blocks - 3) * 4096 + 100 )) "$V/q.sqfs" >"$V/short.sqfs"
check_fails "a truncated image: exit 1, the data is shorter than the tree covers" 1 \
	"^quash: $(ere "$V/short.sqfs"): verity: the data is $(( (blocks - 3) * 4096 + 100 )) bytes, the tree covers $blocks blocks of 4096 bytes$" \
	one_line $QUASH_ASAN verity verify "$V/short.sqfs" "$V/r1.h" "$R"
cp "$V/q.sqfs" "$V/ta.sqfs" && $QUASH verity format "$V/ta.sqfs" >"$V/ta.out"
flip "$V/ta.sqfs" $(( $(stat -c %s "$V/q.sqfs") + 4096 * 2 + 7 ))
check_fails "a flipped byte in an appended tree: exit 1, naming the tree block" 1 \
	"verity: tree level 0 block 0 \(offset $(( $(stat -c %s "$V/q.sqfs") + 8192 )) of $(ere "$V/ta.sqfs")\) does not match its hash in level 1$" \
	one_line $QUASH_ASAN verity verify "$V/ta.sqfs" "$(root_of "$V/ta.out")"

# An unpadded image ends in a partial block: quash's tree covers it, zero-padded.
mksquashfs "$V/tree" "$V/np.sqfs" -quiet -no-progress -nopad >/dev/null
npsize=$(stat -c %s "$V/np.sqfs")
$QUASH verity format "$V/np.sqfs" "$V/np.h" >"$V/np.out"
check "an unpadded image: its tree covers the partial last block" \
	grep -qx "Data blocks:     	$(( (npsize + 4095) / 4096 ))" "$V/np.out"
check "an unpadded image: quash verify accepts it" \
	qa "$V/v.out" $QUASH_ASAN verity verify "$V/np.sqfs" "$V/np.h" "$(root_of "$V/np.out")"
flip "$V/np.sqfs" $((npsize - 1))
check_fails "a flipped byte in the partial last block: exit 1, naming it" 1 \
	"verity: data block $(( npsize / 4096 )) \(offset $(( npsize / 4096 * 4096 ))\) does not match its hash in tree level 0$" \
	one_line $QUASH_ASAN verity verify "$V/np.sqfs" "$V/np.h" "$(root_of "$V/np.out")"

# ---- quash pack --verity ---------------------------------------------------------------
qa "$V/pv.out" $QUASH_ASAN pack --verity --no-progress "$V/tree" "$V/pv.sqfs" || not_ok "pack --verity runs"
$QUASH pack -q --no-progress "$V/tree" "$V/pp.sqfs" && ppsize=$(stat -c %s "$V/pp.sqfs")
$QUASH verity format "$V/pp.sqfs" >"$V/pp.out"
check "pack --verity: the image and tree are pack's then verity format's, byte for byte" \
	cmp -s "$V/pv.sqfs" "$V/pp.sqfs"
check "pack --verity: it prints the root hash" test "$(root_of "$V/pv.out")" = "$(root_of "$V/pp.out")"
check "pack --verity: veritysetup verify accepts the image with that root hash" \
	veritysetup verify --hash-offset=$ppsize "$V/pv.sqfs" "$V/pv.sqfs" "$(root_of "$V/pv.out")"
$QUASH pack --json --verity --no-progress "$V/tree" "$V/pj.sqfs" >"$V/pj.json"
check "pack --verity --json: verity_root_hash in the one JSON object" python3 -c "
import json, sys
sys.exit(json.load(open('$V/pj.json'))['verity_root_hash'] != '$(root_of "$V/pv.out")')"
check_fails "pack --verity to s3:// is a usage error" 2 "^quash: pack: --verity: not for an s3:// image" \
	two_lines $QUASH_ASAN pack --verity "$V/tree" s3://bucket/x.sqfs

# ---- the command line ----------------------------------------------------------------
check_fails "a root hash that is not hex: exit 2" 2 "^quash: verity: root hash 'xyz' is not hexadecimal$" \
	two_lines $QUASH_ASAN verity verify "$V/q.sqfs" "$V/r1.h" xyz
check_fails "a root hash one byte short: exit 2, saying the length" 2 \
	"^quash: verity: root hash '${R:0:62}' has 31 bytes, sha256's have 32$" \
	two_lines $QUASH_ASAN verity verify "$V/q.sqfs" "$V/r1.h" "${R:0:62}"
check_fails "a data block size that is not a power of two: exit 2" 2 \
	"^quash: verity: data block size 3000 is not a power of two from 512 to 524288$" \
	two_lines $QUASH_ASAN verity format --data-block-size 3000 "$V/q.sqfs" "$V/x.h"
check_fails "a missing tree: exit 1, no superblock there" 1 \
	"^quash: $(ere "$V/q.sqfs"): no verity superblock after the image's end \(offset [0-9]+\)$" \
	one_line $QUASH_ASAN verity verify "$V/q.sqfs" "$R"

# ---- over HTTP -------------------------------------------------------------------------
port=$(free_port)
cp "$V/q.sqfs" "$V/r1.h" "$V/www/" && cp "$V/q.sqfs" "$V/www/ta.sqfs" &&
	$QUASH verity format "$V/www/ta.sqfs" >"$V/ta.out"
cp "$V/q.sqfs" "$V/www/bad.sqfs" && flip "$V/www/bad.sqfs" 5000
if start_nginx "$V/nginx" "$V/www" "$port"; then
	url=http://127.0.0.1:$port
	check "over HTTP: quash verify accepts the image and its separate tree" \
		qa "$V/v.out" $QUASH_ASAN verity verify "$url/q.sqfs" "$url/r1.h" "$R"
	check "over HTTP: quash verify finds the appended tree and accepts it" \
		qa "$V/v.out" $QUASH_ASAN verity verify "$url/ta.sqfs" "$(root_of "$V/ta.out")"
	$QUASH_ASAN verity format "$url/q.sqfs" "$V/http.h" >"$V/http.out" 2>"$V/http.err"
	check "over HTTP: format reads the remote image and writes the local tree byte for byte" \
		bash -c "cmp -s '$V/http.h' '$V/r1.h' && ! grep -qE 'Sanitizer|runtime error:' '$V/http.err'"
	check_fails "over HTTP: a tampered copy fails, exit 1, naming block 1" 1 \
		"^quash: $(ere "$url/bad.sqfs"): verity: data block 1 \(offset 4096\) does not match its hash in tree level 0$" \
		one_line $QUASH_ASAN verity verify "$url/bad.sqfs" "$url/r1.h" "$R"
else
	not_ok "nginx starts" "$(tail -3 "$V/nginx/error.log" 2>/dev/null)"
fi
