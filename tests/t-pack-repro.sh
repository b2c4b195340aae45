#!/bin/bash
# t-pack-repro.sh - the image is a function of the tree alone: the same
# bytes whatever the thread count, and from a copy whose directories were
# filled in another order (so that the file system lists them otherwise);
# the sanitizer build's runs exit 0 with no report and give the same bytes.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/fixtures.sh"
. "$QUASH_TOP/tests/lib/asan.sh"

T=$WORK/pack-repro
rm -rf "$T" && mkdir -p "$T"
trap 'umount "$T/fs" "$T/scan/src/w/d20/e10/loop" 2>/dev/null; rm -rf "$T"' EXIT
fixtures_build || { not_ok "fixtures build"; exit 1; }

for j in 1 2 7; do
	$QUASH pack -q -j $j -b 16K "$FIX_TREE" "$T/j$j.sqfs" || not_ok "pack with -j $j"
done
check "-j 1 and -j 2 give identical images" cmp -s "$T/j1.sqfs" "$T/j2.sqfs"
check "-j 1 and -j 7 give identical images" cmp -s "$T/j1.sqfs" "$T/j7.sqfs"
# The sanitizer build counts only if it exits 0 with no report (asan.sh).
if why=$(qa "$T/asan.log" $QUASH_ASAN pack -q -j 3 -b 16K "$FIX_TREE" "$T/asan.sqfs") &&
   cmp -s "$T/j1.sqfs" "$T/asan.sqfs"
then ok "the sanitizer build with -j 3 gives the same image, cleanly"
else not_ok "the sanitizer build with -j 3 gives the same image, cleanly" "$why"; fi

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

# The scan lists directories ahead of the walk on -j threads (pack/scan/scan_pool.c):
# a tree of more directories than it lists ahead, one directory of many
# getdents64 buffers, hard links across directories, excludes, xattrs.
S=$T/scan/src
python3 - "$S" <<'PY'
import os, sys
root = sys.argv[1]
os.makedirs(root + "/big")
for i in range(3000):
    p = "%s/big/%04d-%s" % (root, i, "n" * 50)
    with open(p, "wb") as f:
        f.write(b"" if i % 97 == 0 else (b"%d " % i) * (i % 13))
for d in range(30):
    for e in range(20):
        p = "%s/w/d%02d/e%02d" % (root, d, e)
        os.makedirs(p)
        for k in range(5):
            with open("%s/f%d%s" % (p, k, ".skip" if k == 4 and e % 3 == 0 else ""), "wb") as f:
                f.write(b"%d/%d/%d" % (d, e, k))
        os.symlink("../e%02d/f0" % ((e + 1) % 20), p + "/sl")
for i in range(0, 3000, 300):
    os.link("%s/big/%04d-%s" % (root, i, "n" * 50), "%s/w/d%02d/e07/hl%d" % (root, i // 300, i))
os.mkfifo(root + "/w/d00/fifo")
for dirpath, dirs, files in os.walk(root):
    os.utime(dirpath, (1600000000, 1600000000))
    for n in files:
        os.utime(os.path.join(dirpath, n), (1600000001, 1600000001), follow_symlinks=False)
PY
setfattr -n user.scan -v dir "$S/w/d03" 2>/dev/null && setfattr -n user.scan -v empty "$S/big/0000-$(printf 'n%.0s' {1..50})" 2>/dev/null
touch -d @1600000000 "$S/w/d03" "$S/w" "$S/big"
for j in 1 2 7; do
	$QUASH pack -q -j $j -b 16K --exclude 'w/d05' --exclude '*.skip' "$S" "$T/scan-j$j.sqfs" ||
		not_ok "pack the scan tree with -j $j"
done
check "scan tree: -j 1 and -j 2 give identical images" cmp -s "$T/scan-j1.sqfs" "$T/scan-j2.sqfs"
check "scan tree: -j 1 and -j 7 give identical images" cmp -s "$T/scan-j1.sqfs" "$T/scan-j7.sqfs"
if why=$(qa "$T/scan-asan.log" $QUASH_ASAN pack -q -j 4 -b 16K --exclude 'w/d05' --exclude '*.skip' "$S" "$T/scan-asan.sqfs") &&
   cmp -s "$T/scan-j1.sqfs" "$T/scan-asan.sqfs"
then ok "scan tree: the sanitizer build with -j 4 gives the same image, cleanly"
else not_ok "scan tree: the sanitizer build with -j 4 gives the same image, cleanly" "$why"; fi
(cd "$S" && find . -mindepth 1 ! -path './w/d05' ! -path './w/d05/*' ! -name '*.skip' | sed 's|^\./||' | sort) >"$T/scan-want"
unsquashfs -l -d '' "$T/scan-j7.sqfs" 2>/dev/null | grep -v '^$' | sed -n 's|^/||p' | sort >"$T/scan-got"
check "scan tree: the image holds every entry not excluded ($(wc -l <"$T/scan-want"))" cmp -s "$T/scan-want" "$T/scan-got"
ln -sf "$QUASH" "$T/mksquashfs"
"$T/mksquashfs" "$S" "$T/scan-p1.sqfs" -noappend -quiet -no-progress -processors 1 -b 16K -mkfs-time 7 >/dev/null 2>&1 &&
"$T/mksquashfs" "$S" "$T/scan-p5.sqfs" -noappend -quiet -no-progress -processors 5 -b 16K -mkfs-time 7 >/dev/null 2>&1
check "scan tree: mksquashfs -processors 1 and 5 give identical images" cmp -s "$T/scan-p1.sqfs" "$T/scan-p5.sqfs"

# A directory that contains itself (a bind mount) deep below what is listed
# ahead: the same one line and exit status whatever the thread count.
mkdir -p "$S/w/d20/e10/loop" && mount --bind "$S/w/d20" "$S/w/d20/e10/loop" || not_ok "bind mount a loop"
for j in 1 7; do
	$QUASH_ASAN pack -q -j $j "$S" "$T/loop.sqfs" 2>"$T/loop-j$j.err"
	echo "exit $?" >>"$T/loop-j$j.err"
done
umount "$S/w/d20/e10/loop"
check "a directory loop: one line and exit 1 with -j 1" \
	test "$(cat "$T/loop-j1.err")" = "quash: pack: $S/w/d20/e10/loop: directory contains itself (not followed)
exit 1"
check "a directory loop: the same with -j 7" cmp -s "$T/loop-j1.err" "$T/loop-j7.err"
