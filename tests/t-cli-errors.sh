#!/bin/bash
# t-cli-errors.sh - what a newcomer meets first: every message of the
# "first hour" issue, checked line for line with its exit status, and the
# flags every command shares (-V, --json, -o offset=, extract -f); --json
# with names that are not UTF-8 gives their bytes back through json.loads.
# Every run of the sanitizer build is checked for its status and report.
#
# Oracles: the kernel's loop mount for what --json reports, the superblock's
# own bytes for info, /proc/mounts for the mount table.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"
. "$(dirname "$0")/lib/asan.sh"

W=$WORK/t-cli-errors
FUSE_MODE=$(stat -c %a /dev/fuse)
FUSE_CONF_SAVED=$W/fuse.conf.saved
cleanup() {
	unmount_all
	fusermount3 -u -z "$W/um" 2>/dev/null
	umount -l "$W/km" 2>/dev/null
	chmod "$FUSE_MODE" /dev/fuse
	if [ -e "$FUSE_CONF_SAVED" ]; then cp "$FUSE_CONF_SAVED" /etc/fuse.conf; else rm -f /etc/fuse.conf; fi
}
trap cleanup EXIT
rm -rf "$W" && mkdir -p "$W/src/dir" "$W/mnt" "$W/km" "$W/um" "$W/busy"
chmod 755 "$W" "$W/um" && chown nobody "$W/um"
[ -e /etc/fuse.conf ] && cp /etc/fuse.conf "$FUSE_CONF_SAVED"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# says NAME STATUS EXPECTED CMD...: exit STATUS and stderr exactly EXPECTED
# (lines separated by \n).
says() {
	local name=$1 want_st=$2 want=$3 st; shift 3
	"$@" >"$W/out" 2>"$W/err"
	st=$?
	if [ "$st" = "$want_st" ] && [ "$(cat "$W/err")" = "$(printf '%b' "$want")" ]; then ok "$name"
	else not_ok "$name" "exit $st (want $want_st): $(head -c 400 "$W/err")"; fi
}

echo hello >"$W/src/dir/file"
printf 'x%.0s' $(seq 5000) >"$W/src/big"
ln -s dir/file "$W/src/link"
setfattr -n user.note -v "plain words" "$W/src/dir/file"
setfattr -n user.bin -v 0x00ff10 "$W/src/big"
mkfifo "$W/src/fifo"
mksquashfs "$W/src" "$W/img.sqfs" -noappend -quiet -no-progress >/dev/null
mksquashfs "$W/src" "$W/nofrag.sqfs" -noappend -quiet -no-progress -no-fragments >/dev/null
IMG=$W/img.sqfs
T="Try 'quash pack --help' for more information."

# ---- -V everywhere -----------------------------------------------------
for c in pack mount umount info ls stat cat extract; do
	v=$("$QUASH_ASAN" $c -V 2>&1); st=$?
	check "quash $c -V prints the version" test "$st:$v" = "0:$("$QUASH_ASAN" --version)"
done

# ---- pack ----------------------------------------------------------------
says "pack: a usage error is one line and a pointer to --help" 2 "quash: pack: missing IMAGE (the last operand)\n$T" \
	"$QUASH_ASAN" pack "$W/src"
says "pack: an unknown option likewise" 2 "quash: pack: unrecognized option '--bogus'\n$T" \
	"$QUASH_ASAN" pack --bogus "$W/src" "$W/o.sqfs"
says "pack: -l out of range names the range" 2 "quash: pack: zstd: compression level 99 not in 1..22" \
	"$QUASH_ASAN" pack -l 99 "$W/src" "$W/o.sqfs"
says "pack: -l out of gzip's range names gzip's" 2 "quash: pack: gzip: compression level 12 not in 1..9" \
	"$QUASH_ASAN" pack -c gzip -l 12 "$W/src" "$W/o.sqfs"
mkdir -p "$W/unreadable" && echo s >"$W/unreadable/secret" && chmod 000 "$W/unreadable/secret"
chown -R nobody "$W/unreadable" && mkdir -p "$W/outdir" && chown nobody "$W/outdir"
says "pack: an unreadable file points at --skip-unreadable" 1 \
	"quash: pack: $W/unreadable/secret: Permission denied; --skip-unreadable leaves such files out" \
	as_nobody "$QUASH_ASAN" pack --no-progress "$W/unreadable" "$W/outdir/o.sqfs"
check "pack: ... and leaves no image" test ! -e "$W/outdir/o.sqfs"
# Runs of the sanitizer build below need exit 0 and no report (asan.sh) as well.
qa "$W/out" "$QUASH_ASAN" pack -q "$W/src" "$W/q.sqfs"; st=$?
check "pack -q: no summary" test $st = 0 -a ! -s "$W/out" -a ! -s "$W/out.err"
qa "$W/out" "$QUASH_ASAN" pack --no-progress "$W/src" "$W/q.sqfs" >/dev/null; st=$?
check "pack --no-progress: still the summary (the two are separate)" test $st = 0 -a "$(grep -c '^quash: 2 files, ' "$W/out")" = 1
"$QUASH_ASAN" pack --no-progress "$W/src" "$W/q.sqfs" >/dev/null 2>"$W/err"; st=$?
check "pack over an existing image says it replaced it (mksquashfs would append)" \
	test "$st:$(cat "$W/err")" = "0:quash: pack: $W/q.sqfs: the image that was there is replaced (--append adds to it instead)"
qa "$W/pack.json" "$QUASH_ASAN" pack --json "$W/src" "$W/j.sqfs" >"$W/why" ||
	not_ok "pack --json runs clean" "$(cat "$W/why")"
check "pack --json: one JSON object whose counts and size are the image's" python3 - "$W/pack.json" "$W/j.sqfs" <<'EOF'
import json, os, sys
j = json.load(open(sys.argv[1]))
want = {"files": 2, "directories": 2, "symlinks": 1, "fifos": 1, "devices": 0, "sockets": 0,
        "compressor": "zstd", "block_size": 131072, "image_bytes": os.path.getsize(sys.argv[2]),
        "data_bytes": 6 + 5000, "inodes": 6}
bad = {k: (j.get(k), v) for k, v in want.items() if j.get(k) != v}
sys.exit(f"differs: {bad}" if bad else 0)
EOF

# ---- offline tools --------------------------------------------------------
says "info: a usage error is one line and a pointer to --help" 2 \
	"quash: info: missing IMAGE\nTry 'quash info --help' for more information." "$QUASH_ASAN" info
python3 - "$W/be.img" "$W/le3.img" <<'EOF'
import struct, sys
for path, magic, fmt, ver in ((sys.argv[1], b"sqsh", ">H", (3, 1)), (sys.argv[2], b"hsqs", "<H", (3, 0))):
    b = bytearray(4096)
    b[0:4] = magic
    b[28:30] = struct.pack(fmt, ver[0])
    b[30:32] = struct.pack(fmt, ver[1])
    open(path, "wb").write(b)
EOF
says "info: a big-endian squashfs 3.x is named, not 'bad magic'" 1 \
	"quash: $W/be.img: squashfs 3.1, big-endian: not supported (only 4.0)" "$QUASH_ASAN" info "$W/be.img"
says "info: a little-endian squashfs 3.0 likewise" 1 \
	"quash: $W/le3.img: squashfs 3.0: not supported (only 4.0)" "$QUASH_ASAN" info "$W/le3.img"
frag_start=$(od -An -t u8 -j 80 -N 8 "$W/nofrag.sqfs" | tr -d ' ')
qa "$W/info" "$QUASH_ASAN" info "$W/nofrag.sqfs"; st=$?
check "info: a -no-fragments image shows the fragment table start its superblock records ($frag_start)" \
	test $st = 0 -a "$(grep -cx "fragment table: *$frag_start (0 fragments)" "$W/info")" = 1
qa "$W/info.json" "$QUASH_ASAN" info --json "$W/nofrag.sqfs"; st=$?
check "info --json: the same start" python3 -c "import json,sys; sys.exit($st or json.load(open('$W/info.json'))['tables']['fragment'] != $frag_start)"
head -c 65536 /dev/zero >"$W/embedded.bin" && cat "$IMG" >>"$W/embedded.bin"
for form in "-o 64K" "-o offset=64K" "--offset 0x10000" "--offset=65536"; do
	# shellcheck disable=SC2086  # the option and its value are words
	qa "$W/out" "$QUASH_ASAN" ls $form "$W/embedded.bin" /dir; st=$?
	check "ls $form: the image 64 KiB into a file" test "$st:$(cat "$W/out")" = 0:file
done

# ls --json and stat --json against the kernel's mount of the same image.
mount -t squashfs -o loop,ro "$IMG" "$W/km"
qa "$W/ls.json" "$QUASH_ASAN" ls --json -R "$IMG" >"$W/why" &&
	qa "$W/stat.json" "$QUASH_ASAN" stat --json "$IMG" / /dir /dir/file /big /link /fifo >"$W/why" ||
	not_ok "ls --json -R and stat --json run clean" "$(cat "$W/why")"
check "ls --json -R and stat --json: valid JSON, fields as the kernel's mount shows them" \
	python3 - "$W/ls.json" "$W/stat.json" "$W/km" <<'EOF'
import json, os, stat, sys
ls, st, root = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
kinds = {stat.S_IFDIR: "directory", stat.S_IFREG: "file", stat.S_IFLNK: "symlink", stat.S_IFIFO: "fifo"}
def same(e):
    s = os.lstat(root + e["path"])
    want = {"type": kinds[stat.S_IFMT(s.st_mode)], "inode": s.st_ino, "mode": stat.S_IMODE(s.st_mode),
            "nlink": s.st_nlink, "uid": s.st_uid, "gid": s.st_gid, "mtime": int(s.st_mtime)}
    if not stat.S_ISDIR(s.st_mode):
        want["size"] = s.st_size
    if stat.S_ISLNK(s.st_mode):
        want["target"] = os.readlink(root + e["path"])
    bad = {k: (e.get(k), v) for k, v in want.items() if e.get(k) != v}
    if bad:
        sys.exit(f"{e['path']}: {bad}")
paths = sorted(e["path"] for e in ls)
want_paths = sorted("/" + os.path.relpath(os.path.join(d, n), root)
                    for d, ds, fs in os.walk(root) for n in ds + fs)
if paths != want_paths:
    sys.exit(f"ls paths {paths} != {want_paths}")
for e in ls + st:
    same(e)
x = {e["path"]: e["xattrs"] for e in st}
if x["/dir/file"] != {"user.note": "plain words"} or x["/big"] != {"user.bin": "0x00ff10"}:
    sys.exit(f"xattrs {x}")
EOF
umount "$W/km"
"$QUASH_ASAN" stat --json "$IMG" /dir/file /nope >"$W/stat.json" 2>"$W/err"; st=$?
check "stat --json with a missing PATH: still valid JSON, one line for the missing one, exit 1" \
	bash -c "[ $st = 1 ] && python3 -c 'import json; assert len(json.load(open(\"$W/stat.json\"))) == 1' &&
		[ \"\$(cat '$W/err')\" = 'quash: $IMG: /nope: no such file or directory' ]"

# Names that are not UTF-8 (and quotes, backslashes, control characters, an
# encoded surrogate) in every --json that prints names: valid JSON, each
# name's bytes escaped as quash-ls(1) documents (a byte that is not UTF-8
# as U+DC80..U+DCFF, Python's surrogateescape), so that json.loads gives the
# exact bytes back.  pack --json names the image, ls and stat the entries.
python3 - "$W/raw" <<'EOF'
import os, sys
root = os.fsencode(sys.argv[1])
os.makedirs(root)
for n in (b"caf\xe9", b"\xff\xfe\x80", b"new\nline", b"q\"uo\\te", "\u00fc".encode(), b"\xed\xa0\x80sur", b"esc\x1b[0m"):
    open(os.path.join(root, n), "wb").write(n)
os.mkdir(os.path.join(root, b"d\xe9"))
EOF
raw_img=$W/$'im\xe9\n.sqfs'
raw_why=""
qa "$W/raw-pack.json" "$QUASH_ASAN" pack --json -q "$W/raw" "$raw_img" >"$W/why" || raw_why="pack: $(cat "$W/why")"
qa "$W/raw-ls.json" "$QUASH_ASAN" ls --json -R "$raw_img" >"$W/why" || raw_why="$raw_why ls: $(cat "$W/why")"
qa "$W/raw-stat.json" "$QUASH_ASAN" stat --json "$raw_img" $'/caf\xe9' $'/d\xe9' >"$W/why" ||
	raw_why="$raw_why stat: $(cat "$W/why")"
[ -z "$raw_why" ] || not_ok "--json with names that are not UTF-8: the commands run clean" "$raw_why"
check "--json with names that are not UTF-8: valid JSON, the exact bytes back" \
	python3 - "$W/raw" "$raw_img" "$W/raw-pack.json" "$W/raw-ls.json" "$W/raw-stat.json" <<'EOF'
import json, os, sys
src, img, pj, lj, sj = (os.fsencode(a) for a in sys.argv[1:])
load = lambda p: json.loads(open(p, "rb").read().decode("utf-8"))   # strict: JSON is UTF-8
raw = lambda s: s.encode("utf-8", "surrogateescape")
if raw(load(pj)["image"]) != img:
    sys.exit(f"pack --json image {load(pj)['image']!r}")
want = sorted(b"/" + n for n in os.listdir(src))
got = sorted(raw(e["path"]) for e in load(lj))
if got != want or sorted(raw(e["name"]) for e in load(lj)) != sorted(os.listdir(src)):
    sys.exit(f"ls --json {got} != {want}")
if [raw(e["path"]) for e in load(sj)] != [b"/caf\xe9", b"/d\xe9"]:
    sys.exit(f"stat --json {load(sj)}")
EOF

# ---- mount ----------------------------------------------------------------
kmount "$IMG" "$W/busy"
TM="Try 'quash mount --help' for more information."
says "mount: no MOUNTPOINT" 2 "quash: mount: need an IMAGE and a MOUNTPOINT\n$TM" "$QUASH_ASAN" mount "$IMG"
says "mount: a busy mount point" 1 \
	"quash: mount: mount point $W/busy: busy: something is mounted there already; unmount it first" \
	"$QUASH_ASAN" mount "$IMG" "$W/busy"
says "mount: a mount point that is a file" 1 "quash: mount: mount point $IMG: not a directory" \
	"$QUASH_ASAN" mount "$IMG" "$IMG"
says "mount: a subdir missing inside the image blames the subdir, not the image" 1 \
	"quash: mount: $IMG: -o subdir=/nope: no such directory in the image" \
	"$QUASH_ASAN" mount -o subdir=/nope "$IMG" "$W/mnt"
(cd "$W" && "$QUASH_ASAN" mount -o offset=64K embedded.bin mnt)
check "mount -o offset=64K (suffixes as in --offset)" cmp -s "$W/mnt/dir/file" "$W/src/dir/file"
check "the mount table names the image by its absolute path" \
	grep -q "^$W/embedded.bin $W/mnt fuse.quash " /proc/mounts
"$QUASH_ASAN" umount "$W/mnt"
"$QUASH_ASAN" mount -o fsname=myimage,default_permissions,max_read=64K "$IMG" "$W/mnt"
check "mount: squashfuse_ll's fsname=, default_permissions and max_read= are accepted" \
	bash -c "grep -q '^myimage $W/mnt fuse.quash .*max_read=65536' /proc/mounts && cmp -s '$W/mnt/dir/file' '$W/src/dir/file'"

# Ordinary users: /dev/fuse closed, then open; user_allow_other missing.
chmod 600 /dev/fuse
says "mount as a user without access to /dev/fuse: one line with the fix" 1 \
	"quash: mount: no access to /dev/fuse (Permission denied); it is usually crw-rw-rw-: ask an administrator to allow it" \
	as_nobody "$QUASH_ASAN" mount "$IMG" "$W/um"
chmod 666 /dev/fuse
printf '# no user_allow_other here\n' >/etc/fuse.conf
says "mount -o allow_other as a user without user_allow_other: one line with the fix" 1 \
	"quash: mount: -o allow_other needs 'user_allow_other' in /etc/fuse.conf; root can add it, or mount without it" \
	as_nobody "$QUASH_ASAN" mount -o allow_other "$IMG" "$W/um"
says "mount -o readahead= as a user: said, not silently ignored" 0 \
	"quash: mount: -o readahead=1024 needs root; the kernel's default (128 KiB) stays" \
	as_nobody "$QUASH_ASAN" mount -o readahead=1024 "$IMG" "$W/um"
check "... and the mount works" as_nobody cmp -s "$W/um/dir/file" "$W/src/dir/file"

# ---- umount ---------------------------------------------------------------
says "umount --help is help, not a path" 0 "" "$QUASH_ASAN" umount --help
check "... printed on stdout" grep -q '^Usage: quash umount \[-z\] MOUNTPOINT' "$W/out"
says "umount of a directory with nothing mounted: not mounted" 1 "quash: umount: $W/km: not mounted" \
	"$QUASH_ASAN" umount "$W/km"
says "umount of a kernel mount: says to use umount(8)" 1 \
	"quash: umount: $W/busy: a squashfs mount, not a quash (FUSE) one; use umount(8)" "$QUASH_ASAN" umount "$W/busy"
says "umount by a user of someone else's mount" 1 \
	"quash: umount: $W/mnt: not mounted by you (only its owner or root can unmount it)" \
	as_nobody "$QUASH_ASAN" umount "$W/mnt"
setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "exec sleep 60 <'$W/um/dir/file'" &
holder=$!
sleep 0.3
says "umount of a busy mount, as its user: says busy and what to do" 1 \
	"quash: umount: $W/um: busy (try -z, or see fuser -m $W/um)" as_nobody "$QUASH_ASAN" umount "$W/um"
kill $holder; wait $holder 2>/dev/null
exec 7<"$W/mnt/dir/file"
says "umount of a busy mount, as root: the same" 1 \
	"quash: umount: $W/mnt: busy (try -z, or see fuser -m $W/mnt)" "$QUASH_ASAN" umount "$W/mnt"
says "umount -z detaches a busy mount" 0 "" "$QUASH_ASAN" umount -z "$W/mnt"
exec 7<&-
says "umount by its user, idle: done" 0 "" as_nobody "$QUASH_ASAN" umount "$W/um"
check "both are gone from the mount table" bash -c "! grep -q ' $W/\\(mnt\\|um\\) ' /proc/mounts"
says "umount with no MOUNTPOINT" 2 "quash: umount: missing MOUNTPOINT\nTry 'quash umount --help' for more information." \
	"$QUASH_ASAN" umount
