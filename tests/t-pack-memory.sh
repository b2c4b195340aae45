#!/bin/bash
# t-pack-memory.sh - quash pack --memory SIZE (mksquashfs -mem SIZE): the
# buffers of the data being compressed and the metadata tables being built
# stay within SIZE, the tables spilling to a temporary file beside the
# image; the image is byte for byte the one packed without a bound, and the
# kernel reads it back as the source.  Peak RSS by /usr/bin/time.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/mount.sh"
. "$QUASH_TOP/tests/lib/asan.sh"

T=$WORK/pack-memory
rm -rf "$T" && mkdir -p "$T"
trap 'umount "$T/small" "$T/ro" 2>/dev/null; unmount_all; rm -rf "$T"' EXIT

# 20,000 small files in 20 directories (inode and directory tables of
# 0.9 MB) and 72 MiB of base64 text: read faster than it compresses, so
# that unbounded it fills every slot of the compression ring.  (A slot's
# buffers are touched only when used: text that compresses as fast as it
# is read keeps a few in use, and the unbounded peak is then as low.)
python3 - "$T/src" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(20):
    os.makedirs(f"{root}/d{d:02d}")
    for f in range(1000):
        with open(f"{root}/d{d:02d}/f{f:03d}", "w") as fh:
            fh.write(f"{d * 7 + f % 13}\n")
PY
head -c $((54 << 20)) /dev/urandom | base64 -w 100 >"$T/src/big"

# peak NAME CMD...: run, leave the peak RSS (KiB) in $T/NAME.rss
peak() {
	local name=$1; shift
	/usr/bin/time -f %M -o "$T/$name.rss" "$@" >/dev/null 2>"$T/$name.err"
}
peak free $QUASH pack -q --no-progress -c gzip "$T/src" "$T/free.sqfs"
check "pack without a bound" test -s "$T/free.sqfs"
peak bound strace -f --seccomp-bpf -e trace=pwrite64 -o "$T/bound.strace" \
	$QUASH pack -q --no-progress -c gzip --memory 1M "$T/src" "$T/bound.sqfs"
check "pack with --memory 1M" test -s "$T/bound.sqfs"
check "the same image, byte for byte" cmp "$T/free.sqfs" "$T/bound.sqfs"
# The tables went out in 8 KiB blocks: pwrite()s of 8192 bytes (the image is appended with write()).
check "the tables spilled to a file" test "$(grep -c 'pwrite64(.*, 8192, [0-9]*) = 8192' "$T/bound.strace")" -ge 40
peak bound2 $QUASH pack -q --no-progress -c gzip --memory 1M "$T/src" "$T/bound2.sqfs"
free_kib=$(tail -1 "$T/free.rss") bound_kib=$(tail -1 "$T/bound2.rss")
# Unbounded, up to 64 MiB of blocks in flight and as much for their
# compressed copies (gzip is slower than the reads: 75-93 MiB measured);
# bounded, a few blocks: the difference is the ring, the rest is the tree
# and the program.
check "the bound is honoured (peak RSS $bound_kib KiB, unbounded $free_kib KiB)" \
	test "$bound_kib" -lt $((free_kib - (48 << 10))) -a "$bound_kib" -lt $((32 << 10))
if kmount "$T/bound.sqfs" "$T/mnt" && python3 "$QUASH_TOP/tests/lib/treecmp.py" "$T/src" "$T/mnt" >"$T/kdiff"
then ok "the kernel's mount of the bounded image equals the source"
else not_ok "the kernel's mount of the bounded image equals the source" "$(head -5 "$T/kdiff")"; fi

# The mksquashfs form: -mem takes a size, and changes nothing in the image.
check "mksquashfs -mem 1M: the image mksquashfs's form makes without it" sh -c "
	$QUASH mksquashfs '$T/src/d00' '$T/m1.sqfs' -noappend -quiet -no-progress -mkfs-time 0 >/dev/null &&
	$QUASH mksquashfs '$T/src/d00' '$T/m2.sqfs' -noappend -quiet -no-progress -mkfs-time 0 -mem 1M >/dev/null &&
	cmp '$T/m1.sqfs' '$T/m2.sqfs'"
# Nothing is said: the tree is inside the bound too (below).
$QUASH pack --no-progress -c gzip --memory 1M "$T/src" "$T/n1.sqfs" >/dev/null 2>"$T/n1.err"
check "--memory 1M: nothing said" test ! -s "$T/n1.err"
$QUASH mksquashfs "$T/src" "$T/n2.sqfs" -noappend -no-progress -comp gzip -mem 1M >/dev/null 2>"$T/n2.err"
check "mksquashfs -mem 1M: nothing said" test ! -s "$T/n2.err"
check_fails "--memory below 1M is refused" 2 \
	"^quash: pack: bad value for --memory \(a size, K, M or G, at least 1M\): '100K'\$" \
	one_line $QUASH pack -q --memory 100K "$T/src" "$T/x.sqfs"
check_fails "-mem without a size is refused" 1 '^quash: mksquashfs: -mem: bad size \(K, M or G; at least 1M\)$' \
	one_line $QUASH mksquashfs "$T/src" "$T/x.sqfs" -noappend -mem lots
check "... and neither writes an image" test ! -e "$T/x.sqfs"

# The tree of names and inodes is in the bound too: a tar of 200,000
# small files with long names (about 30 MB of tree unbounded) packed with
# --memory 4M keeps a quarter of that bound of it resident and the rest in
# an unlinked file beside the image (spill.c); the image is the same.  (A
# tar: creating 200,000 files here took 8 to 46 s.)
python3 - "$T/many.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as tar:
    for d in range(200):
        ti = tarfile.TarInfo(f"d{d:03d}")
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 1700000000
        tar.addfile(ti)
        for f in range(1000):
            data = f"{d * 1000 + f}\n".encode()
            ti = tarfile.TarInfo(f"d{d:03d}/a-longer-name-as-packages-have-{f:04d}")
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 1700000000
            tar.addfile(ti, io.BytesIO(data))
PY
peak tree-free $QUASH pack -q --no-progress "$T/many.tar" "$T/tree-free.sqfs"
peak tree-bound $QUASH pack -q --no-progress --memory 4M "$T/many.tar" "$T/tree-bound.sqfs"
check "a tar of 200,000 files under --memory 4M: the same image, byte for byte" cmp "$T/tree-free.sqfs" "$T/tree-bound.sqfs"
free_kib=$(tail -1 "$T/tree-free.rss") bound_kib=$(tail -1 "$T/tree-bound.rss")
check "... the tree is bounded (peak RSS $bound_kib KiB, unbounded $free_kib KiB)" \
	test "$bound_kib" -lt $((free_kib / 2)) -a "$bound_kib" -lt $((16 << 10))
# unsquashfs, the oracle: every name (reading 200,000 files back takes
# this machine half a minute, so three of them), in its order.
unsquashfs -l "$T/tree-bound.sqfs" >"$T/tree.list" 2>"$T/tree-un.err"
python3 - >"$T/tree.want" <<'PY'
print("squashfs-root")
for d in range(200):
    print(f"squashfs-root/d{d:03d}")
    for f in range(1000):
        print(f"squashfs-root/d{d:03d}/a-longer-name-as-packages-have-{f:04d}")
PY
check "unsquashfs lists the bounded image's 200,201 names" cmp -s "$T/tree.list" "$T/tree.want"
check "unsquashfs reads three files of it back" \
	test "$(unsquashfs -cat "$T/tree-bound.sqfs" d000/a-longer-name-as-packages-have-0000 d123/a-longer-name-as-packages-have-0456 d199/a-longer-name-as-packages-have-0999 2>&1 | tr '\n' ' ')" = "0 123456 199999 "

# A disk too small for the tree's spill file beside the image (and the
# tables' spill and the archive's spool): the file leaves the room the
# image needs, the rest of the tree stays in memory, said in
# one warning, and the image is the same (not a SIGBUS at a write through
# the mapping of a full file).
mkdir -p "$T/small"
if mount -t tmpfs -o size=32m tmpfs "$T/small"; then
	$QUASH pack -q --no-progress --memory 4M "$T/many.tar" "$T/small/x.sqfs" 2>"$T/small.err"; st=$?
	check "a 32 MiB disk: the pack succeeds (exit $st)" test "$st" = 0
	check "... the same image" cmp "$T/tree-free.sqfs" "$T/small/x.sqfs"
	check "... one warning says the tree stays in memory" \
		test "$(grep -c "^quash: pack: warning: $T/small: [0-9]* MiB free, kept for the image: the rest of the tree stays in memory, past --memory" "$T/small.err")" = 1 \
		-a "$(wc -l <"$T/small.err")" = 1
	umount "$T/small"
else
	not_ok "a tmpfs for the small-disk case" "mount failed"
fi

# A directory the spill file cannot be made in fails the pack before the
# scan, in one line, as the image would (root writes anywhere: a
# read-only file system).
mkdir -p "$T/ro"
if mount -t tmpfs -o ro,size=1m tmpfs "$T/ro"; then
	$QUASH pack -q --no-progress --memory 4M "$T/src/d00" "$T/ro/x.sqfs" 2>"$T/ro.err"; st=$?
	check "a read-only directory under --memory: exit 1, one line naming it" \
		test "$st" = 1 -a "$(wc -l <"$T/ro.err")" = 1 -a \
		"$(grep -c "^quash: pack: $T/ro: cannot create a temporary file: Read-only file system$" "$T/ro.err")" = 1
	umount "$T/ro"
else
	not_ok "a read-only tmpfs" "mount failed"
fi
