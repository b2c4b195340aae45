#!/bin/bash
# Images from another writer, squashfs-tools-ng: gensquashfs (from a
# directory with xattrs, sparse files, devices, a socket, odd modes, owners
# and times, long and UTF-8 names; and from a pack file, for hard links) and
# tar2sqfs (from a POSIX tar with xattrs and sparse files, and a GNU tar
# with names and paths past tar's 100 and 255 bytes), in five compressors,
# block sizes 4K to 1M, with and without fragments, tail packing and an
# export table.  Each image, against the kernel's loop mount of it:
#   ls -lR     the mount rendered in unsquashfs -lln's format (mode,
#              owner, size or device, mtime, symlink target), line for line;
#   stat       every path: inode, mode, links, owner, size, blocks, mtime,
#              device, target and xattr count;
#   cat        every regular file, in one call, byte for byte;
#   extract    the tree (tests/lib/treecmp.py: modes, owners, mtimes,
#              xattrs, contents, devices, hard links);
#   mount      a quash FUSE mount, every lstat field, content and xattr
#              (compare_trees in tests/lib/mount.sh).
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"
source "$top/tests/lib/mount.sh"

out=$WORK/ngfixtures
cleanup() {
	unmount_all
	rm -rf "$out"
}
trap cleanup EXIT
rm -rf "$out" && mkdir -p "$out/img"
export TZ=UTC

# ---- the source tree -----------------------------------------------------
python3 - "$out/src" <<'EOF' || { not_ok "source tree"; exit 1; }
import os, random, socket, stat, sys
top = sys.argv[1]
rnd = random.Random(37)
def path(p):
    return os.path.join(top, p)
def write(p, data):
    os.makedirs(os.path.dirname(path(p)), exist_ok=True)
    with open(path(p), "wb") as f:
        f.write(data)
for n in (0, 1, 4095, 4096, 4097, 65535, 131072, 131073, 1048577):
    write("files/size-%d" % n, rnd.randbytes(n))
write("files/random-3m", rnd.randbytes(3 << 20))
write("files/text-2m", b"squashfs-tools-ng wrote this line.\n" * 60000)
# sparse files: a hole in the middle, a hole at each end, nothing but hole
for name, size, runs in [("hole-middle", 4 << 20, [(0, 5000), (3 << 20, 70000)]),
                         ("hole-ends", 2 << 20, [(1 << 20, 4096)]),
                         ("all-hole", 3 << 20, [])]:
    write("sparse/" + name, b"")
    with open(path("sparse/" + name), "r+b") as f:
        for off, n in runs:
            f.seek(off)
            f.write(rnd.randbytes(n))
        f.truncate(size)
os.makedirs(path("sym"))
os.symlink("../files/size-1", path("sym/short"))
os.symlink("/" + "long-target/" * 300, path("sym/long"))
os.symlink("no/such/file", path("sym/dangling"))
os.makedirs(path("dev"))
os.mkfifo(path("dev/fifo"))
os.mknod(path("dev/null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
os.mknod(path("dev/loop"), 0o660 | stat.S_IFBLK, os.makedev(7, 0))
os.mknod(path("dev/wide"), 0o600 | stat.S_IFCHR, os.makedev(259, 70000))
socket.socket(socket.AF_UNIX).bind(path("dev/socket"))
write("modes/setuid", b"u")
write("modes/setgid", b"g")
write("modes/closed", b"c")
os.makedirs(path("modes/sticky-dir"))
for p, m in [("modes/setuid", 0o4755), ("modes/setgid", 0o2711), ("modes/closed", 0),
             ("modes/sticky-dir", 0o1777)]:
    os.chmod(path(p), m)
for p, u, g in [("files/size-1", 1000, 100), ("files/size-4097", 65534, 65534),
                ("files/random-3m", 4000000000, 3000000000), ("sym/short", 12345, 54321)]:
    os.chown(path(p), u, g, follow_symlinks=False)
write("xattrs/small", b"x")
write("xattrs/big", b"y")
write("xattrs/shared", b"z")
os.setxattr(path("xattrs/small"), "user.one", b"1")
os.setxattr(path("xattrs/big"), "user.big", rnd.randbytes(3000))
os.setxattr(path("xattrs/big"), "trusted.t", b"trusted value")
os.setxattr(path("xattrs/shared"), "user.one", b"1")
os.setxattr(path("xattrs"), "user.on-a-dir", b"dir value")
os.setxattr(path("sym/short"), "trusted.link", b"on a symlink", follow_symlinks=False)
names = ["with space", "tab\there", "utf8-\u00e9\u4e2d", "-dash", "x" * 255]
for n in names:
    write("names/" + n, n.encode())
for i in range(300):
    write("big-dir/entry-number-%04d" % i, b"%d\n" % i)
write("deep/" + "/".join(["d" * 120] * 4) + "/bottom", b"bottom of a 490-byte path\n")
for i, (dirpath, dirs, files) in enumerate(sorted(os.walk(top, topdown=False))):
    for n in files + dirs + [""]:
        os.utime(os.path.join(dirpath, n), (1000000000 + i * 86400 + len(n),) * 2, follow_symlinks=False)
os.utime(path("files/size-0"), (0, 0))
os.utime(path("files/size-4096"), (2**31 - 1, 2**31 - 1))
EOF

# ---- the images ----------------------------------------------------------
# gensquashfs from a directory makes no hard links: a pack file adds them,
# with devices and owners given in the file itself.
cat >"$out/links.pack" <<EOF
dir /top 0750 7 8
file /top/data 0640 7 8 $out/src/files/size-131073
link /top/data-2 0 0 0 /top/data
link /top/data-3 0 0 0 /top/data
file /top/small 0644 0 0 $out/src/files/size-4095
link /top/small-link 0 0 0 /top/small
slink /top/sym 0777 1 2 data
link /top/sym-link 0 0 0 /top/sym
nod /top/console 0600 0 5 c 5 1
nod /top/sda 0660 0 6 b 8 0
pipe /top/pipe 0644 3 4
sock /top/sock 0755 3 4
EOF
printf '0 [glob_no_path,dont_fragment] *\n' >"$out/nofrag.sort"
EOF

# The tars: POSIX with xattrs and sparse files, and GNU (long names as
# ././@LongLink records); both hold hard links (tar records them).
mkdir -p "$out/tarsrc" && cp -a "$out/src/." "$out/tarsrc/" && rm "$out/tarsrc/dev/socket"
ln "$out/tarsrc/files/size-65535" "$out/tarsrc/files/hard-1" &&
	ln "$out/tarsrc/files/size-65535" "$out/tarsrc/files/hard-2"
touch -h -d @1000000000 "$out/tarsrc/files" "$out/tarsrc/files/size-65535"
tar --format=posix --xattrs --xattrs-include='*' --sparse --numeric-owner -cf "$out/posix.tar" \
	-C "$out/tarsrc" . 2>"$out/tar.err" || { not_ok "posix tar" "$(cat "$out/tar.err")"; exit 1; }
tar --format=gnu --numeric-owner -cf "$out/gnu.tar" -C "$out/tarsrc" . 2>"$out/tar.err" ||
	{ not_ok "gnu tar" "$(cat "$out/tar.err")"; exit 1; }

# name               how
IMAGES='
gen-gzip-128k        gensquashfs -c gzip -D src -k -x
gen-xz-1m-export     gensquashfs -c xz -b 1M -e -D src -k -x
gen-zstd-4k          gensquashfs -c zstd -b 4K -D src -k -x
gen-lz4-nofrag       gensquashfs -c lz4 -b 64K -S nofrag.sort -D src -k -x
gen-lzo-notail       gensquashfs -c lzo -b 8K -T -D src -k -x
gen-packfile-zstd    gensquashfs -c zstd -b 4K -F links.pack
tar-posix-gzip       tar2sqfs -c gzip -b 4K <posix.tar
tar-gnu-zstd-notail  tar2sqfs -c zstd -b 16K -T -e <gnu.tar
'
imgs=()
while read -r name how; do
	[ -n "$name" ] || continue
	if (cd "$out" && eval "$how -q -f img/$name.sqfs" >"$out/img/$name.log" 2>&1); then
		imgs+=("$out/img/$name.sqfs")
	else
		not_ok "$name: $how" "$(tail -c 300 "$out/img/$name.log")"
	fi
done <<<"$IMAGES"

# ---- oracles from the kernel's mount -------------------------------------
# render_ls MNT: the mount as quash ls -lR prints an image (unsquashfs -lln's
# format): pre-order, names in byte order, times in UTC.
render_ls() {
	python3 - "$1" <<'EOF'
import os, stat, sys, time
root = os.fsencode(sys.argv[1])
out = sys.stdout.buffer
def walk(rel):
    for name in sorted(os.listdir(root + rel)):
        p = rel + b"/" + name
        st = os.lstat(root + p)
        owner = "%d/%d" % (st.st_uid, st.st_gid)
        # Owner and size take 27 columns, a space at least between them; a
        # device's numbers take 3 columns each, and may overflow them.
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            size = " " * max(20 - len(owner), 1) + "%3d,%3d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        else:
            size = " " * max(27 - len(owner) - len(str(st.st_size)), 1) + str(st.st_size)
        line = "%s %s%s %s " % (stat.filemode(st.st_mode), owner, size,
                                time.strftime("%Y-%m-%d %H:%M", time.gmtime(st.st_mtime)))
        out.write(line.encode() + p)
        if stat.S_ISLNK(st.st_mode):
            out.write(b" -> " + os.readlink(root + p))
        out.write(b"\n")
        if stat.S_ISDIR(st.st_mode):
            walk(p)
walk(b"")
EOF
}

# stat_matches IMAGE MNT: quash stat of every path against lstat on the mount.
stat_matches() {
	local paths
	mapfile -t paths < <(cd "$2" && find . -mindepth 1 | sed 's|^\.||' | sort)
	"$QUASH_ASAN" stat "$1" / "${paths[@]}" >"$out/stat.txt" 2>"$out/stat.err" || {
		head -c 300 "$out/stat.err"; return 1; }
	python3 - "$2" "$out/stat.txt" <<'EOF'
import os, stat, sys
mnt, bad = sys.argv[1], []
def xattr_count(path):
    try:
        return len(os.listxattr(path, follow_symlinks=False))
    except OSError:     # EOPNOTSUPP: the image has no xattr table
        return 0
blocks = open(sys.argv[2], "rb").read().decode("utf-8", "surrogateescape").split("\n\n")
seen = 0
for block in blocks:
    if not block.strip():
        continue
    f = {}
    for line in block.split("\n"):
        if ":" in line and not line.startswith("  "):
            k, v = line.split(":", 1)
            f[k] = v.strip()
    p = f["path"]
    seen += 1
    st = os.lstat(os.path.join(mnt, p.lstrip("/")))
    want = {"inode": str(st.st_ino), "mode": "%04o" % stat.S_IMODE(st.st_mode), "links": str(st.st_nlink),
            "uid": str(st.st_uid), "gid": str(st.st_gid), "blocks": str(st.st_blocks),
            "modified": "(%d)" % st.st_mtime,
            "xattrs": str(xattr_count(os.path.join(mnt, p.lstrip("/"))))}
    got = {"inode": f.get("inode"), "mode": f.get("mode", "").split(" ")[0], "links": f.get("links"),
           "uid": f.get("uid"), "gid": f.get("gid"), "blocks": f.get("blocks"),
           "modified": f.get("modified", "").split(" ")[-1], "xattrs": f.get("xattrs")}
    want["size"], got["size"] = str(st.st_size), f.get("size")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        want["device"] = "%d,%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        got["device"] = f.get("device")
    if stat.S_ISLNK(st.st_mode):
        want["target"] = os.readlink(os.path.join(mnt, p.lstrip("/")))
        got["target"] = f.get("target")
    for k in want:
        if want[k] != got[k]:
            bad.append("%s: %s %s, mount says %s" % (p, k, got[k], want[k]))
if bad:
    print("; ".join(bad[:4]), "(%d differences)" % len(bad))
    sys.exit(1)
print("%d paths" % seen)
EOF
}

# cat_matches IMAGE MNT: every regular file in one call, byte for byte.
cat_matches() {
	local files
	mapfile -t files < <(cd "$2" && find . -type f | sed 's|^\.||' | sort)
	cmp <("$QUASH_ASAN" cat "$1" "${files[@]}") <(cd "$2" && cat "${files[@]/#/.}")
}

echo "# $SECONDS s: ${#imgs[@]} images made"
for img in "${imgs[@]}"; do
	n=$(basename "$img" .sqfs)
	k=$out/k-$n q=$out/q-$n
	if ! kmount "$img" "$k" 2>"$out/kmount.err"; then
		not_ok "$n: the kernel mounts it" "$(cat "$out/kmount.err")"
		continue
	fi
	render_ls "$k" >"$out/want.ls"
	if "$QUASH_ASAN" ls -lR "$img" >"$out/got.ls" 2>"$out/ls.err" && cmp -s "$out/want.ls" "$out/got.ls"
	then ok "$n: ls -lR matches the kernel's mount ($(wc -l <"$out/want.ls") entries)"
	else not_ok "$n: ls -lR matches the kernel's mount" \
		"$(diff "$out/want.ls" "$out/got.ls" | head -5 | tr '\n' ';') $(head -c 200 "$out/ls.err")"; fi
	if why=$(stat_matches "$img" "$k" 2>&1); then ok "$n: stat of every path matches the kernel's mount ($why)"
	else not_ok "$n: stat of every path matches the kernel's mount" "$why"; fi
	check "$n: cat of every regular file matches the kernel's mount" cat_matches "$img" "$k"
	rm -rf "$out/x"
	if "$QUASH_ASAN" extract "$img" -C "$out/x" 2>"$out/x.err" &&
		python3 "$top/tests/lib/treecmp.py" "$k" "$out/x" >"$out/x.diff" 2>&1
	then ok "$n: extract gives the kernel's tree"
	else not_ok "$n: extract gives the kernel's tree" \
		"$(head -c 300 "$out/x.err") $(head -5 "$out/x.diff" | tr '\n' ';')"; fi
	rm -rf "$out/x"
	if qmount "$q" "$QUASH" mount "$img" "$q"; then
		check "$n: quash mount shows the kernel's tree" compare_trees "$k" "$q"
		fusermount3 -u "$q"
	else
		not_ok "$n: quash mount"
	fi
	umount "$k"
done
