#!/bin/bash
# t-pack-memory.sh - quash pack --memory SIZE (mksquashfs -mem SIZE): the
# buffers of the data being compressed and the metadata tables being built
# stay within SIZE, the tables spilling to a temporary file beside the
# image; the image is byte for byte the one packed without a bound, and the
# kernel reads it back as the source.  Peak RSS by /usr/bin/time.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/mount.sh"

T=$WORK/pack-memory
rm -rf "$T" && mkdir -p "$T"
trap 'unmount_all; rm -rf "$T"' EXIT

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
# The tree is not in the bound: said once, when it alone is bigger than the bound; not under -q.
$QUASH pack --no-progress -c gzip --memory 1M "$T/src" "$T/n1.sqfs" >/dev/null 2>"$T/n1.err"
check "--memory 1M: one line says the tree of names and inodes is outside the bound" \
	test "$(grep -cE '^quash: pack: note: --memory 1 MiB bounds the data in flight and the tables; the tree of 2002[0-9] entries takes another [1-9][0-9]* MiB$' "$T/n1.err")" = 1
check "... and nothing else is said" test "$(wc -l <"$T/n1.err")" = 1
$QUASH mksquashfs "$T/src" "$T/n2.sqfs" -noappend -no-progress -comp gzip -mem 1M >/dev/null 2>"$T/n2.err"
check "mksquashfs -mem 1M: the same line, naming -mem" grep -q '^quash: pack: note: -mem 1 MiB bounds' "$T/n2.err"
$QUASH pack --no-progress -c gzip --memory 1G "$T/src" "$T/n3.sqfs" >/dev/null 2>"$T/n3.err"
check "--memory 1G, more than the tree: no line" test ! -s "$T/n3.err"
check "-q: no line" test ! -s "$T/bound2.err"
check_fails "--memory below 1M is refused" $QUASH pack -q --memory 100K "$T/src" "$T/x.sqfs"
check_fails "-mem without a size is refused" $QUASH mksquashfs "$T/src" "$T/x.sqfs" -noappend -mem lots
