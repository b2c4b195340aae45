#!/bin/bash
# t-pack-archive.sh - archives as sources: a tarball packs to the very same
# image as the directory it was made from, whatever its compression or
# format, from a file or from standard input; cpio and zip read back
# exactly (zip: contents, types, modes, times); hostile entries in tar, cpio
# and zip alike stay under the image root, one warning line each, and
# nothing lands where their names point, on packing or on extracting the
# image; an entry whose data the archive lacks is refused in one line.
# Every run of the ASan/UBSan build must exit as expected with no report.
. "$(dirname "$0")/lib/tap.sh"
. "$QUASH_TOP/tests/lib/fixtures.sh"
. "$QUASH_TOP/tests/lib/mount.sh"
. "$QUASH_TOP/tests/lib/asan.sh"

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
if why=$(qa "$T/asan.out" $QUASH_ASAN pack -q "$T/tree.tar" "$T/tar.sqfs")
then ok "pack a pax tarball with xattrs and holes (ASan/UBSan build)"
else not_ok "pack a pax tarball with xattrs and holes (ASan/UBSan build)" "$why"; fi
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
why=$(qa "$T/asan.out" $QUASH_ASAN pack -q --uid 0 --gid 0 --mtime 1700000000 "$T/shuffled.tar" "$T/shuf-tar.sqfs")
$QUASH pack -q --uid 0 --gid 0 --mtime 1700000000 "$T/shuf" "$T/shuf-dir.sqfs"
if [ -z "$why" ] && cmp -s "$T/shuf-dir.sqfs" "$T/shuf-tar.sqfs"
then ok "a tar in shuffled order, small files among large ones: the directory's image (ASan build)"
else not_ok "a tar in shuffled order, small files among large ones: the directory's image (ASan build)" "$why"; fi

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

# zip keeps contents, types, modes and times of regular files, directories
# and symbolic links: the kernel's mount of the image against the tree the
# zip was made from.  A zip holds no entry for its root, so the tree's root
# takes the image's default root (0755, time 0) before the comparison.
mkdir -p "$T/z/d/e" "$T/z/emptydir" && head -c 100000 /dev/urandom >"$T/z/d/r" && seq 1 50000 >"$T/z/d/e/s"
: >"$T/z/empty" && ln -s d/r "$T/z/link"
chmod 0600 "$T/z/d/r" && chmod 0751 "$T/z/d/e" && chmod 0700 "$T/z/emptydir" && chmod 0755 "$T/z/empty"
touch -d @1600000001 "$T/z/d/r" "$T/z/d/e/s" && touch -h -d @1600000003 "$T/z/link"
touch -d @1500000005 "$T/z/d/e" "$T/z/d" "$T/z/emptydir"
(cd "$T/z" && zip -q -r -y "$T/tree.zip" .)
chmod 0755 "$T/z" && touch -d @0 "$T/z"
if why=$(qa "$T/zip.out" $QUASH_ASAN pack -q "$T/tree.zip" "$T/zip.sqfs") && kmount "$T/zip.sqfs" "$T/mnt-zip"
then
	if $CMP "$T/z" "$T/mnt-zip" >"$T/zip.diff"; then ok "zip archive reads back exactly: contents, types, modes, times"
	else not_ok "zip archive reads back exactly: contents, types, modes, times" "$(head -5 "$T/zip.diff" | tr '\n' ';')"; fi
else
	not_ok "zip archive reads back exactly: contents, types, modes, times" "pack: $why"
fi

# Hostile entries, the same in tar, cpio and zip: names that point out of
# the root (absolute, "..", ".." inside, a newline in one), a symlink to a
# place outside and then a file through it, a name given twice, a device
# (not in zip, which has no device numbers), a name over 256 bytes.  Packed
# from inside $T/jail/in, so that every name that points out has a place it
# would land; the image is then extracted there too.  Pack stores every
# name under the root with one warning line each (control characters
# escaped), the later of two alike wins, the symlink is replaced by the
# directory, the long name is left out; and nothing appears where any name
# points, neither on packing nor on extracting.
mk_hostile() {   # mk_hostile FORMAT FILE OUTSIDE
	python3 - "$@" <<'PY'
import io, sys, tarfile, time, zipfile
fmt, out, outside = sys.argv[1:]
T = 1700000000
ents = [("../evil", "f", b"evil\n"), ("/abs/file", "f", b"abs\n"), ("a/../../b", "f", b"b\n"), ("./ok", "f", b"ok\n"),
        ("../new\nline", "f", b"nl\n"), ("l", "l", outside), ("l/file", "f", b"through\n"),
        ("dup", "f", b"first\n"), ("dup", "f", b"second\n"), ("y" * 300, "f", b"long\n")]
if fmt != "zip":
    ents.append(("null", "c", (1, 3)))
if fmt == "tar":
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        for n, ty, d in ents:
            ti = tarfile.TarInfo(n); ti.mtime = T
            if ty == "f": ti.size = len(d); t.addfile(ti, io.BytesIO(d))
            elif ty == "l": ti.type, ti.linkname = tarfile.SYMTYPE, d; t.addfile(ti)
            else: ti.type, (ti.devmajor, ti.devminor) = tarfile.CHRTYPE, d; t.addfile(ti)
elif fmt == "cpio":
    buf = io.BytesIO()
    def ent(ino, name, mode, data, rdev=(0, 0)):
        nb = name.encode() + b"\0"
        buf.write(b"070701" + b"".join(b"%08X" % v for v in (ino, mode, 0, 0, 1, T, len(data), 0, 0, rdev[0], rdev[1], len(nb), 0)))
        buf.write(nb + b"\0" * (-(110 + len(nb)) % 4) + data + b"\0" * (-len(data) % 4))
    for ino, (n, ty, d) in enumerate(ents, 1):
        if ty == "f": ent(ino, n, 0o100644, d)
        elif ty == "l": ent(ino, n, 0o120777, d.encode())
        else: ent(ino, n, 0o020644, b"", d)
    ent(0, "TRAILER!!!", 0, b"")
    open(out, "wb").write(buf.getvalue())
else:
    import warnings; warnings.simplefilter("ignore")     # zipfile warns of the duplicate name
    with zipfile.ZipFile(out, "w") as z:
        for n, ty, d in ents:
            zi = zipfile.ZipInfo(n, time.gmtime(T)[:6]); zi.create_system = 3
            zi.external_attr = (0o100644 if ty == "f" else 0o120777) << 16
            z.writestr(zi, d)
PY
}
# What a mount of the image holds, one repr()'d line per entry.
list_tree() {
	python3 - "$1" <<'PY'
import os, stat, sys
root, out = sys.argv[1], []
for dp, dns, fns in os.walk(root):
    for n in dns + fns:
        p = os.path.join(dp, n); st = os.lstat(p); rel = os.path.relpath(p, root)
        if stat.S_ISLNK(st.st_mode): what = "-> " + os.readlink(p)
        elif stat.S_ISDIR(st.st_mode): what = "dir"
        elif stat.S_ISCHR(st.st_mode): what = "chr %d,%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        else: what = repr(open(p, "rb").read())
        out.append((rel, what))
for rel, what in sorted(out):
    print(repr(rel), what)
PY
}
J=$T/jail
for fmt in tar cpio zip; do
	rm -rf "$J" && mkdir -p "$J/in"
	mk_hostile $fmt "$J/in/evil.$fmt" "$J/outside"
	W="quash: pack: warning: evil.$fmt"
	want_err="$W: ../evil: stored as /evil, under the image root
$W: /abs/file: stored as /abs/file, under the image root
$W: a/../../b: stored as /a/b, under the image root
$W: ../new\\x0aline: stored as /new\\x0aline, under the image root
$W: $(printf 'y%.0s' {1..300}): name longer than 256 bytes (skipped)"
	(cd "$J/in" && "$QUASH_ASAN" pack -q "evil.$fmt" ../evil.sqfs >/dev/null 2>"$T/h.err"); st=$?
	if [ $st = 0 ] && asan_clean "$T/h.err" && [ "$(cat "$T/h.err")" = "$want_err" ]
	then ok "$fmt hostile entries: packed, one warning line each, naming the entry (escaped)"
	else not_ok "$fmt hostile entries: packed, one warning line each, naming the entry (escaped)" \
		"exit $st: $(head -c 600 "$T/h.err" | cat -A | tr '\n' ';')"; fi
	null="'null' chr 1,3
"
	[ $fmt = zip ] && null=""
	want_list="'a' dir
'a/b' b'b\\n'
'abs' dir
'abs/file' b'abs\\n'
'dup' b'second\\n'
'evil' b'evil\\n'
'l' dir
'l/file' b'through\\n'
'new\\nline' b'nl\\n'
${null}'ok' b'ok\\n'"
	if kmount "$J/evil.sqfs" "$T/mnt-evil-$fmt" && list_tree "$T/mnt-evil-$fmt" >"$T/h.list" &&
	   [ "$(cat "$T/h.list")" = "$want_list" ]
	then ok "$fmt hostile entries: the image holds them under its root, the later of two alike"
	else not_ok "$fmt hostile entries: the image holds them under its root, the later of two alike" \
		"$(head -c 600 "$T/h.list" | tr '\n' ';')"; fi
	why=$(cd "$J/in" && qa "$T/h.x.out" "$QUASH_ASAN" extract ../evil.sqfs -C x) &&
		$CMP "$T/mnt-evil-$fmt" "$J/in/x" >"$T/h.x.diff" || why="$why $(head -3 "$T/h.x.diff" | tr '\n' ';')"
	# Every place a name points to, from where pack and extract ran, must still be empty.
	landed=$( (cd "$J" && find . -mindepth 1 ! -path './in/x' ! -path './in/x/*'; ls -d /abs 2>/dev/null) | sort | tr '\n' ' ')
	check "$fmt hostile entries: extracted as mounted, and nothing lands outside (found: $landed)${why:+ ($why)}" \
		test -z "$why" -a "$landed" = "./evil.sqfs ./in ./in/evil.$fmt "
done
# The declared size of an entry whose data the archive does not hold:
# refused in one line naming the entry, never padded with zeros.
python3 - "$T/short" <<'PY'
import io, struct, sys, tarfile, time, zipfile
base = sys.argv[1]
ti = tarfile.TarInfo("short"); ti.size = 1 << 30
open(base + ".tar", "wb").write(ti.tobuf(tarfile.PAX_FORMAT) + b"x" * 600)
nb = b"short\0"
open(base + ".cpio", "wb").write(b"070701" + b"".join(b"%08X" % v for v in (1, 0o100644, 0, 0, 1, 0, 1 << 31, 0, 0, 0, 0, len(nb), 0)) + nb + b"x" * 600)
with zipfile.ZipFile(base + ".zip", "w") as z:
    zi = zipfile.ZipInfo("short", time.gmtime(1700000000)[:6]); zi.create_system = 3; zi.external_attr = 0o100644 << 16
    z.writestr(zi, b"short")
b = bytearray(open(base + ".zip", "rb").read())
for sig, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):     # the uncompressed size: 4 GiB - 16
    i = b.find(sig) + at; b[i:i + 4] = struct.pack("<I", 0xfffffff0)
open(base + ".zip", "wb").write(bytes(b))
PY
S=$(ere "$T/short")
check_fails "tar: an entry cut short: exit 1, one line naming it" 1 \
	"^quash: pack: $S\.tar: short: truncated or corrupt archive: Truncated tar archive\$" \
	one_line $QUASH_ASAN pack -q "$T/short.tar" "$T/short.sqfs"
check_fails "cpio: an entry cut short: exit 1, one line naming it" 1 \
	"^quash: pack: $S\.cpio: short: truncated or corrupt archive" \
	one_line $QUASH_ASAN pack -q "$T/short.cpio" "$T/short.sqfs"
check_fails "zip: a stored entry claiming 4 GiB and holding 5 bytes: exit 1, one line naming it" 1 \
	"^quash: pack: $S\.zip: short: the archive holds 5 of the entry's 4294967280 bytes\$" \
	one_line $QUASH_ASAN pack -q "$T/short.zip" "$T/short.sqfs"
check "... and none of them leaves an image" test ! -e "$T/short.sqfs"

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
