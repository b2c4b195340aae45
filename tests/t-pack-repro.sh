#!/bin/bash
# t-pack-repro.sh - the image is a function of the tree alone: the same
# bytes whatever the thread count, and from a copy whose directories were
# filled in another order (so that the file system lists them otherwise).
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/fixtures.sh"

T=$WORK/pack-repro
rm -rf "$T" && mkdir -p "$T"
trap 'umount "$T/fs" 2>/dev/null; rm -rf "$T"' EXIT
fixtures_build || { not_ok "fixtures build"; exit 1; }

for j in 1 2 7; do
	$QUASH pack -q -j $j -b 16K "$FIX_TREE" "$T/j$j.sqfs" || not_ok "pack with -j $j"
done
check "-j 1 and -j 2 give identical images" cmp -s "$T/j1.sqfs" "$T/j2.sqfs"
check "-j 1 and -j 7 give identical images" cmp -s "$T/j1.sqfs" "$T/j7.sqfs"
$QUASH_ASAN pack -q -j 3 -b 16K "$FIX_TREE" "$T/asan.sqfs" 2>"$T/asan.log"
check "the sanitizer build with -j 3 gives the same image" cmp -s "$T/j1.sqfs" "$T/asan.sqfs"

# make_tree DIR ORDER: the same tree, its entries created in sorted or reverse order.
make_tree() {
	python3 - "$1" "$2" <<'PY'
import os, sys
root, order = sys.argv[1], sys.argv[2]
names = ["n%03d-%s" % (i, "x" * (i % 40)) for i in range(300)]
if order == "reverse":
    names.reverse()
os.makedirs(root)
for d in ("a", "b/c") if order == "sorted" else ("b/c", "a"):
    os.makedirs(os.path.join(root, d))
for n in names:
    for d in ("a", "b/c"):
        with open(os.path.join(root, d, n), "wb") as f:
            f.write((n * 50).encode()[: 37 * len(n)])
for n in [n for n in names if n < "n020"]:
    os.link(os.path.join(root, "a", n), os.path.join(root, "b", "hl-" + n))
    os.symlink("../a/" + n, os.path.join(root, "b", "sl-" + n))
# Times last, deepest first, so that creating entries does not change them again.
for dirpath, dirs, files in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
    for n in files:
        p = os.path.join(dirpath, n)
        t = 1600000000 + os.lstat(p).st_size     # the same through every hard link
        os.utime(p, (t, t), follow_symlinks=False)
    os.utime(dirpath, (1600000000, 1600000000))
PY
}
# On tmpfs a directory lists in creation order (ext4 lists by hash, whatever the order).
mkdir -p "$T/fs" && mount -t tmpfs -o size=64m tmpfs "$T/fs" || not_ok "mount a tmpfs"
make_tree "$T/fs/sorted" sorted
make_tree "$T/fs/reverse" reverse
check "precondition: the two copies list their directories in different orders" \
	test "$(ls -U "$T/fs/sorted/a" | head -3)" != "$(ls -U "$T/fs/reverse/a" | head -3)"
$QUASH pack -q "$T/fs/sorted" "$T/sorted.sqfs" && $QUASH pack -q -j 1 "$T/fs/reverse" "$T/reverse.sqfs"
check "copies made in another order give identical images" cmp -s "$T/sorted.sqfs" "$T/reverse.sqfs"
sleep 1
$QUASH pack -q "$T/fs/sorted" "$T/again.sqfs"
check "packing again later gives the identical image" cmp -s "$T/sorted.sqfs" "$T/again.sqfs"
