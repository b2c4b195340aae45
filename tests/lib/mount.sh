# mount.sh - sourced by tests/t-mount-*.sh: kernel and quash mounts of one
# image, and the comparison of two mounted trees.
#
#   kmount IMAGE DIR [OPTS]     the kernel's own squashfs mount (loop)
#   qmount DIR BINARY ARGS...   a quash mount (QM_TRANSPORT=uring: over io_uring)
#   unmount_all                 every mount these helpers made (for trap EXIT)
#   compare_trees A B           python3: every path's lstat fields, content,
#                               symlink target, xattrs and listings; prints
#                               the first differences, fails if any.  A is the
#                               oracle.  QM_COMPARE=extracted: A is an unsquashfs
#                               extraction, so only what extraction keeps counts
#                               (no st_ino, st_blocks, dir sizes, listing order).
#                               QM_COMPARE=catalog: B is an image inside a catalog
#                               mount: no st_ino, and the root's own fields (the
#                               catalog's NAME directory) are not compared
#   wait_mounted DIR            until DIR is a mount point (bounded)
#   mount_fixtures              MF_IMAGES: images to mount, from tests/lib/fixtures.sh
#                               when it is there, else a small set made here

QM_MOUNTS=()

kmount() {
	mkdir -p "$2"
	mount -t squashfs -o "loop,ro${3:+,$3}" "$1" "$2" && QM_MOUNTS+=("k:$2")
}

# QM_TRANSPORT=uring: every "BINARY mount ..." is served over FUSE io_uring.
qmount() {   # qmount DIR BINARY ARGS... : a quash mount to unmount at exit
	local dir=$1; shift
	mkdir -p "$dir"
	if [ "${QM_TRANSPORT:-}" = uring ] && [ "${2:-}" = mount ]; then
		set -- "$1" mount -o uring "${@:3}"
	fi
	"$@" && QM_MOUNTS+=("f:$dir")
}

unmount_all() {
	local m
	for m in "${QM_MOUNTS[@]}"; do
		case $m in
		k:*) umount -l "${m#k:}" 2>/dev/null ;;
		f:*) fusermount3 -u -z "${m#f:}" 2>/dev/null ;;
		esac
	done
	QM_MOUNTS=()
}

is_mounted() {
	mountpoint -q "$1"
}

clean_exit() {   # clean_exit STATUS LOG: exit 0 and no sanitizer report in LOG
	[ "$1" -eq 0 ] && ! grep -q Sanitizer "$2"
}

not_mounted() {
	! is_mounted "$1"
}

wait_mounted() {
	local i
	for i in $(seq 100); do
		is_mounted "$1" && return 0
		sleep 0.05
	done
	return 1
}

wait_unmounted() {
	local i
	for i in $(seq 100); do
		is_mounted "$1" || return 0
		sleep 0.05
	done
	return 1
}

compare_trees() {
	python3 - "$1" "$2" <<'PY'
import hashlib, os, stat, sys

a_root, b_root = sys.argv[1], sys.argv[2]
FIELDS = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_mtime", "st_atime",
          "st_ctime", "st_rdev", "st_blocks", "st_blksize")
extracted = os.environ.get("QM_COMPARE") == "extracted"
catalog = os.environ.get("QM_COMPARE") == "catalog"
if catalog:
    FIELDS = tuple(f for f in FIELDS if f != "st_ino")
if extracted:
    FIELDS = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_mtime", "st_rdev")
diffs = []

def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return h.hexdigest()
            h.update(chunk)

def xattrs(path):
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError as e:
        return ("error", e.errno)
    return [(n, os.getxattr(path, n, follow_symlinks=False)) for n in names]

def walk(rel):
    a, b = os.path.join(a_root, rel), os.path.join(b_root, rel)
    sa, sb = os.lstat(a), os.lstat(b)
    fields = FIELDS
    if extracted and not stat.S_ISDIR(sa.st_mode):
        fields = fields + ("st_size",)
    for f in (() if catalog and not rel else fields):
        if getattr(sa, f) != getattr(sb, f):
            diffs.append(f"{rel or '.'}: {f} {getattr(sa, f)} != {getattr(sb, f)}")
    if (rel or not catalog) and xattrs(a) != xattrs(b):
        diffs.append(f"{rel or '.'}: xattrs {xattrs(a)!r:.200} != {xattrs(b)!r:.200}")
    if stat.S_ISLNK(sa.st_mode):
        if os.readlink(a) != os.readlink(b):
            diffs.append(f"{rel}: readlink differs")
    elif stat.S_ISREG(sa.st_mode):
        if digest(a) != digest(b):
            diffs.append(f"{rel}: content differs")
    elif stat.S_ISDIR(sa.st_mode):
        la, lb = os.listdir(a), os.listdir(b)
        if extracted:
            la, lb = sorted(la), sorted(lb)
        if la != lb:
            diffs.append(f"{rel or '.'}: listing differs (sorted equal: {sorted(la) == sorted(lb)})")
        for name in sorted(set(la) & set(lb)):
            walk(os.path.join(rel, name))

walk("")
for d in diffs[:20]:
    print("#", d)
sys.exit(1 if diffs else 0)
PY
}

# A tree with one of each thing a mount must show, until fixtures.sh lands.
_mf_tree() {
	local d=$1
	rm -rf "$d" && mkdir -p "$d/dir/sub" "$d/many" "$d/empty-dir" || return 1
	: >"$d/empty"
	echo hello >"$d/small"
	head -c 4096 /dev/urandom >"$d/page"
	head -c 131072 /dev/urandom >"$d/block"
	head -c 131073 /dev/urandom >"$d/block+1"
	head -c 1000000 /dev/urandom >"$d/random"
	(yes "compressible text line" | head -c 3000000) >"$d/text"
	truncate -s 5M "$d/sparse" && printf x | dd of="$d/sparse" bs=1 seek=3000000 conv=notrunc 2>/dev/null
	ln -s small "$d/link"
	ln -s "$(python3 -c "print('a/' * 2000 + 'b')")" "$d/longlink"
	ln -s /nonexistent "$d/dangling"
	ln "$d/random" "$d/dir/hardlink"
	ln "$d/random" "$d/dir/sub/hardlink2"
	mknod "$d/cdev" c 1 3 && mknod "$d/bdev" b 259 70000
	mkfifo "$d/fifo"
	python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$d/sock"
	setfattr -n user.small -v value "$d/small"
	setfattr -n user.empty "$d/small"
	setfattr -n user.big -v "$(head -c 4000 /dev/zero | tr '\0' y)" "$d/random"
	setfattr -n trusted.t -v tv "$d/dir"
	setfattr -n user.l -v lv -h "$d/link"
	for i in $(seq 1 1200); do echo "$i" >"$d/many/file_$i"; done
	echo deep >"$d/dir/sub/deep"
	touch "$d/dir/sub/name with spaces" "$d/dir/sub/ütf-8" "$d/dir/sub/-dash"
	chown 1234:5678 "$d/small"
	chown 4000000000:3 "$d/page"
	chmod 4755 "$d/block"; chmod 2711 "$d/dir"; chmod 1777 "$d/empty-dir"; chmod 000 "$d/empty"
	touch -h -d '1975-02-03 04:05:06' "$d/text" "$d/link"
	touch -d '2037-12-31 23:59:59' "$d/dir/sub"
}

MF_MATRIX='
zstd-128k      -comp zstd
gzip-4k        -comp gzip -b 4K
xz-1m-tail     -comp xz -b 1M -tailends
lz4-nofrag     -comp lz4 -no-fragments
lzo-noexport   -comp lzo -no-exports
lzma-128k      -comp lzma
gzip-nocomp    -comp gzip -noI -noD -noF -noX
zstd-noxattr   -comp zstd -no-xattrs -always-use-fragments
'

mount_fixtures() {
	MF_IMAGES=()
	if [ -f "$QUASH_TOP/tests/lib/fixtures.sh" ]; then
		. "$QUASH_TOP/tests/lib/fixtures.sh"
		fixtures_build || return 1
		MF_IMAGES=("${FIX_IMAGES[@]}")
		MF_TREE=$FIX_TREE
		return 0
	fi
	local dir=$WORK/mount-fixtures name opts
	MF_TREE=$dir/tree
	mkdir -p "$dir/img"
	if [ ! -f "$dir/done" ]; then
		_mf_tree "$MF_TREE" || return 1
		while read -r name opts; do
			[ -n "$name" ] || continue
			# shellcheck disable=SC2086
			mksquashfs "$MF_TREE" "$dir/img/$name.sqfs" $opts -noappend -quiet -no-progress \
				>/dev/null || return 1
		done <<<"$MF_MATRIX"
		touch "$dir/done"
	fi
	while read -r name opts; do
		[ -n "$name" ] && MF_IMAGES+=("$dir/img/$name.sqfs")
	done <<<"$MF_MATRIX"
	return 0
}

# read_back NAME IMAGE TREE: two ok/not ok lines: the kernel's mount and
# unsquashfs's extraction of IMAGE both equal TREE.  Scratch space: $T.
read_back() {
	local T=${T:?read_back needs T} name=$1 img=$2 tree=$3 mnt=$T/mnt-$1 out=$T/out-$1
	if kmount "$img" "$mnt" && python3 "$QUASH_TOP/tests/lib/treecmp.py" "$tree" "$mnt" >"$T/$name.kdiff"
	then ok "$name: kernel mount equals the source"
	else not_ok "$name: kernel mount equals the source" "$(head -5 "$T/$name.kdiff")"; fi
	umount "$mnt" 2>/dev/null
	if unsquashfs -no-progress -quiet -d "$out" "$img" >"$T/$name.ulog" 2>&1 &&
	   python3 "$QUASH_TOP/tests/lib/treecmp.py" "$tree" "$out" >"$T/$name.udiff"
	then ok "$name: unsquashfs extraction equals the source"
	else not_ok "$name: unsquashfs extraction equals the source" \
		"$(head -5 "$T/$name.udiff" "$T/$name.ulog")"; fi
	rm -rf "$out"
}
