#!/bin/bash
# t-pack-store.sh - what the writer leaves uncompressed, and tables
# compressed on many threads.
#
# Oracles: Debian's unsquashfs and the kernel's mount (entry for entry,
# tests/lib/treecmp.py), and the image's own bytes: a block stored
# uncompressed appears in it verbatim.
#  - random bytes are stored as they are (and read back);
#  - random bytes that repeat within a block are still compressed (the
#    sample looks random, the trial compression says otherwise);
#  - a tree whose inode and directory tables span hundreds of metadata
#    blocks, with large directories (directory index) and xattrs, reads
#    back exactly and packs to the same bytes with 1, 2 and 5 threads.
# The sanitizer build's runs count only if they exit 0 with no report.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/mount.sh"
. "$QUASH_TOP/tests/lib/asan.sh"

T=$WORK/pack-store
rm -rf "$T" && mkdir -p "$T"
trap 'unmount_all; rm -rf "$T"' EXIT

# in_image IMAGE FILE OFFSET LEN: are those bytes of FILE in IMAGE verbatim?
in_image() {
	python3 -c 'import sys
img = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "rb") as f:
    f.seek(int(sys.argv[3])); part = f.read(int(sys.argv[4]))
sys.exit(0 if part in img else 1)' "$@"
}

mkdir -p "$T/data"
head -c $((1024 * 1024)) /dev/urandom >"$T/data/random"
head -c 32768 /dev/urandom >"$T/piece"
for i in $(seq 32); do cat "$T/piece"; done >"$T/data/repeated"
head -c 600000 /dev/urandom | base64 >"$T/data/text"
# The sanitizer build counts only if it exits 0 with no report (asan.sh).
if why=$(qa "$T/data.log" $QUASH_ASAN pack -q -c zstd -l 15 -b 128K "$T/data" "$T/data.sqfs")
then ok "the sanitizer build packs random and repeated data cleanly"
else not_ok "the sanitizer build packs random and repeated data cleanly" "$why"; fi
check "random bytes are stored uncompressed (verbatim in the image)" \
	in_image "$T/data.sqfs" "$T/data/random" 0 $((1024 * 1024))
not_in_image() { ! in_image "$@"; }
check "repeated random bytes are compressed (no block of them verbatim)" \
	not_in_image "$T/data.sqfs" "$T/data/repeated" 0 131072
check "the image is smaller than random + text + a tenth of repeated" \
	test "$(stat -c %s "$T/data.sqfs")" -lt $((1024 * 1024 + 810000 + 104858 + 8192))
read_back data "$T/data.sqfs" "$T/data"

# Many directories, some large; xattrs on every tenth file.
python3 - "$T/tree" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(600):
    p = os.path.join(root, "d%03d" % (d // 20), "sub-%s-%d" % ("y" * (d % 17), d))
    os.makedirs(p)
    n = 400 if d % 150 == 0 else 16
    for f in range(n):
        fp = os.path.join(p, "f%04d-%s" % (f, "z" * (f % 23)))
        with open(fp, "w") as out:
            out.write("%d %d\n" % (d, f) * (f % 5))
        if f % 10 == 0:
            os.setxattr(fp, "user.q", b"v%d" % (f % 3))
    os.symlink("sub-%d" % d, os.path.join(p, "link"))
PY
for j in 1 2 5; do
	$QUASH pack -q -j $j -c zstd -l 15 "$T/tree" "$T/tree$j.sqfs" || not_ok "pack the table tree with -j $j"
done
check "the table tree: -j 1 and -j 2 give identical images" cmp -s "$T/tree1.sqfs" "$T/tree2.sqfs"
check "the table tree: -j 1 and -j 5 give identical images" cmp -s "$T/tree1.sqfs" "$T/tree5.sqfs"
if why=$(qa "$T/tree-asan.log" $QUASH_ASAN pack -q -j 3 -c zstd -l 15 "$T/tree" "$T/tree-asan.sqfs") &&
   cmp -s "$T/tree1.sqfs" "$T/tree-asan.sqfs"
then ok "the table tree: the sanitizer build with -j 3 gives the same image, cleanly"
else not_ok "the table tree: the sanitizer build with -j 3 gives the same image, cleanly" "$why"; fi
check "the table tree: over 10,000 inodes (their table spans dozens of metadata blocks)" \
	test "$(unsquashfs -s "$T/tree1.sqfs" | awk '/^Number of inodes/ {print $4}')" -gt 10000
read_back tree "$T/tree2.sqfs" "$T/tree"
