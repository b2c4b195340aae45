#!/bin/bash
# t-pack-archive.sh - archives as sources: a tarball packs to the very same
# image as the directory it was made from, whatever its compression or
# format, from a file or from standard input; cpio and zip read back
# exactly; hostile paths stay under the image root.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/fixtures.sh"
. "$QUASH_TOP/tests/lib/mount.sh"

T=$WORK/pack-archive
rm -rf "$T" && mkdir -p "$T"
trap 'unmount_all; rm -rf "$T"' EXIT
fixtures_build || { not_ok "fixtures build"; exit 1; }
CMP="python3 $QUASH_TOP/tests/lib/treecmp.py"
SRC=$FIX_TREE

# tar leaves sockets out, so the directory image leaves them out too.
EXCL=()
while read -r s; do EXCL+=(--exclude "${s#"$SRC"/}"); done < <(find "$SRC" -type s)

$QUASH pack -q "${EXCL[@]}" "$SRC" "$T/dir.sqfs" || not_ok "pack the directory"
$QUASH pack -q "${EXCL[@]}" --no-xattrs "$SRC" "$T/dir-nox.sqfs" || not_ok "pack the directory without xattrs"

tar --xattrs --xattrs-include='*' --sparse -C "$SRC" -cf "$T/tree.tar" . 2>/dev/null
if $QUASH_ASAN pack -q "$T/tree.tar" "$T/tar.sqfs" 2>"$T/asan.log" && ! grep -q Sanitizer "$T/asan.log"
then ok "pack a pax tarball with xattrs and holes (ASan/UBSan build)"
else not_ok "pack a pax tarball with xattrs and holes (ASan/UBSan build)" "$(head -5 "$T/asan.log")"; fi
check "tarball and directory give identical images" cmp -s "$T/dir.sqfs" "$T/tar.sqfs"

for z in gzip bzip2 xz zstd lz4; do
	$z -c "$T/tree.tar" >"$T/tree.tar.$z" 2>/dev/null
	$QUASH pack -q "$T/tree.tar.$z" "$T/tar-$z.sqfs"
	check "$z-compressed tarball gives the same image" cmp -s "$T/dir.sqfs" "$T/tar-$z.sqfs"
	rm -f "$T/tar-$z.sqfs"
done
$QUASH pack -q - "$T/stdin.sqfs" <"$T/tree.tar.zstd"
check "a tarball on standard input gives the same image" cmp -s "$T/dir.sqfs" "$T/stdin.sqfs"

# The spool's read window (data.c): small files spooled in an order far from
# the tree's (entries shuffled across directories, large files between
# them, a file of exactly the window read limit) still give the directory's
# image byte for byte.
mkdir -p "$T/shuf"
python3 - "$T/shuf" "$T/shuffled.tar" <<'PY'
import io, os, random, sys, tarfile
root, out = sys.argv[1], sys.argv[2]
rnd = random.Random(5)
files = [(f"d{d}/f{f:03d}", bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40))))
         for d in range(30) for f in range(100)]
files += [(f"big{i}", os.urandom(rnd.randint(70000, 300000))) for i in range(20)]
files += [("edge4095", b"e" * 4095), ("edge4096", b"f" * 4096)]
rnd.shuffle(files)
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as t:
    for d in range(30):
        os.makedirs(f"{root}/d{d}")
        ti = tarfile.TarInfo(f"d{d}"); ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 1700000000
        t.addfile(ti); os.utime(f"{root}/d{d}", (1700000000, 1700000000))
    for name, data in files:
        ti = tarfile.TarInfo(name); ti.size, ti.mode, ti.mtime = len(data), 0o644, 1700000000
        t.addfile(ti, io.BytesIO(data))
        with open(f"{root}/{name}", "wb") as f:
            f.write(data)
        os.chmod(f"{root}/{name}", 0o644); os.utime(f"{root}/{name}", (1700000000, 1700000000))
    for d in range(30):
        os.utime(f"{root}/d{d}", (1700000000, 1700000000))
PY
$QUASH_ASAN pack -q --uid 0 --gid 0 --mtime 1700000000 "$T/shuffled.tar" "$T/shuf-tar.sqfs" 2>"$T/asan.log"
$QUASH pack -q --uid 0 --gid 0 --mtime 1700000000 "$T/shuf" "$T/shuf-dir.sqfs"
check "a tar in shuffled order, small files among large ones: the directory's image (ASan build)" \
	bash -c "cmp -s '$T/shuf-dir.sqfs' '$T/shuf-tar.sqfs' && ! grep -q Sanitizer '$T/asan.log'"

tar --format=gnu -C "$SRC" -cf "$T/gnu.tar" . 2>/dev/null
$QUASH pack -q "$T/gnu.tar" "$T/gnu.sqfs"
check "GNU-format tarball gives the same image as the directory without xattrs" \
	cmp -s "$T/dir-nox.sqfs" "$T/gnu.sqfs"

# cpio (newc): hard links carry their data on the last name.
(cd "$SRC" && find . ! -type s -print0 | cpio -o -0 -H newc --quiet) >"$T/tree.cpio"
if $QUASH pack -q --no-xattrs "$T/tree.cpio" "$T/cpio.sqfs" 2>"$T/cpio.log" &&
   kmount "$T/cpio.sqfs" "$T/mnt-cpio"; then
	# Without xattrs and sockets the source is what cpio could carry; compare with that.
	$QUASH pack -q --no-xattrs "${EXCL[@]}" "$SRC" "$T/cmp.sqfs"
	kmount "$T/cmp.sqfs" "$T/mnt-cmp"
	if $CMP "$T/mnt-cmp" "$T/mnt-cpio" >"$T/cpio.diff"; then ok "cpio archive reads back exactly"
	else not_ok "cpio archive reads back exactly" "$(head -5 "$T/cpio.diff")"; fi
else
	not_ok "pack a cpio archive" "$(head -3 "$T/cpio.log")"
fi

# zip keeps contents, modes and times of regular files and directories.
mkdir -p "$T/z/d/e" && head -c 100000 /dev/urandom >"$T/z/d/r" && seq 1 50000 >"$T/z/d/e/s" && : >"$T/z/empty"
(cd "$T/z" && zip -q -r -X "$T/tree.zip" .)
if $QUASH pack -q "$T/tree.zip" "$T/zip.sqfs" &&
   unsquashfs -q -no-progress -d "$T/zip-out" "$T/zip.sqfs" >/dev/null
then check "zip archive contents read back exactly" diff -r "$T/z" "$T/zip-out"
else not_ok "pack a zip archive"; fi

# Hostile paths: absolute, "..", and ".." inside; all land under the root, with a warning each.
python3 - "$T/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name in ("../evil", "/abs/file", "a/../../b", "./ok"):
        data = name.encode()
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
PY
if $QUASH pack -q "$T/evil.tar" "$T/evil.sqfs" 2>"$T/evil.log"; then
	list=$(unsquashfs -l "$T/evil.sqfs" | sed -n 's|^squashfs-root||p' | sort | tr '\n' ' ')
	check "hostile paths are stored under the image root" \
		test "$list" = " /a /a/b /abs /abs/file /evil /ok "
	check "each repaired path gets a warning" test "$(grep -c 'under the image root' "$T/evil.log")" = 3
	check "nothing was written outside" test ! -e "$WORK/evil" -a ! -e /abs/file
else
	not_ok "pack an archive with hostile paths" "$(head -3 "$T/evil.log")"
fi

# One entry nested deeper than the writer takes (2048 levels): that entry is
# left out with one warning naming it, the rest packs.  It used to abort the
# pack as "out of memory".
python3 - "$T/deep.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name in ("deep/" + "d/" * 3000 + "leaf", "ok"):
        info = tarfile.TarInfo(name)
        info.size = 3
        t.addfile(info, io.BytesIO(b"ok\n"))
PY
if $QUASH_ASAN pack -q "$T/deep.tar" "$T/deep.sqfs" 2>"$T/deep.log"; then
	check "an over-deep entry: one warning naming it and the limit" \
		test "$(grep -c 'deep/d/d/.*more than 2048 directory levels (skipped)' "$T/deep.log")" = 1 -a \
		"$(wc -l <"$T/deep.log")" = 1
	check "an over-deep entry: the rest of the archive is packed" \
		test "$(unsquashfs -cat "$T/deep.sqfs" ok 2>/dev/null)" = ok
else
	not_ok "an over-deep entry does not abort the pack" "$(head -c 300 "$T/deep.log")"
fi

# A sparse entry (GNU sparse 1.0 in pax) declares its size; a few hundred
# bytes can declare any.  Beyond what a squashfs file can list (2^32 - 2
# blocks: 16 TiB at 4 KiB) it is refused up front with one line naming the
# entry.  A 1 TiB one packs at 4 KiB blocks, holes as holes, and reads
# back; its 2^28 holes cost no memory (pack used to hold 12 bytes for each:
# 3 GiB), only the fixed data pipeline (128 MiB in flight at most).
sparse_tar() {   # sparse_tar FILE SIZE [N]: entries "big" (and "big2" ...), SIZE bytes, "tail\n" at the end
	python3 - "$1" "$2" "${3:-1}" <<'PY'
import io, sys, tarfile
path, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = b"tail\n"
sparse_map = ("1\n%d\n%d\n" % (size - len(data), len(data))).encode()
sparse_map += b"\0" * (-len(sparse_map) % 512)
with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(count):
        name = "big" + (str(i + 1) if i else "")
        info = tarfile.TarInfo("GNUSparseFile.0/" + name)
        info.size = len(sparse_map) + len(data)
        info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                            "GNU.sparse.name": name, "GNU.sparse.realsize": str(size)}
        t.addfile(info, io.BytesIO(sparse_map + data))
PY
}
peak_kib() {     # peak_kib CMD...: run it; print its peak resident size in KiB, or "failed"
	python3 -c 'import resource, subprocess, sys
ok = subprocess.run(sys.argv[1:]).returncode == 0
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if ok else "failed")' "$@"
}
sparse_tar "$T/huge.tar" $((20 << 40))
st=0; $QUASH_ASAN pack -q -b 4K "$T/huge.tar" "$T/huge.sqfs" 2>"$T/huge.log" || st=$?
check "a 20 TiB sparse entry at 4 KiB blocks: refused with one line naming it" \
	test $st = 1 -a "$(wc -l <"$T/huge.log")" = 1 -a ! -e "$T/huge.sqfs" -a \
	"$(grep -c 'huge.tar: big: 21990232555520 bytes is more than a squashfs file of 4096-byte blocks can hold' "$T/huge.log")" = 1
sparse_tar "$T/sparse.tar" $((1 << 40))
peak=$(peak_kib $QUASH pack -q -b 4K "$T/sparse.tar" "$T/sparse.sqfs" 2>"$T/sparse.log")
if [ "$peak" != failed ]; then
	check "a 1 TiB sparse entry at 4 KiB blocks packs in less than 256 MiB (peak ${peak} KiB)" \
		test "$peak" -lt 262144
	check "into a small image" test "$(stat -c %s "$T/sparse.sqfs")" -lt $((8 << 20))
	kmount "$T/sparse.sqfs" "$T/sparse-k"
	check "and the kernel reads it back: size and tail" test "$(stat -c %s "$T/sparse-k/big")" = \
		"$((1 << 40))" -a "$(tail -c 5 "$T/sparse-k/big")" = tail
else
	not_ok "a 1 TiB sparse entry packs" "$(head -c 300 "$T/sparse.log")"
fi
# Two such entries alike: deduplication hashes and compares them without
# reading their holes (read, a fuzzed tar of 570 KiB took 127 s to pack).
sparse_tar "$T/twins.tar" $((1 << 40)) 2
check "two alike 1 TiB sparse entries pack in seconds, one stored as the other's duplicate" \
	bash -c "timeout 60 $QUASH pack -q --json '$T/twins.tar' '$T/twins.sqfs' | grep -q '\"duplicate_files\": 1,'"
