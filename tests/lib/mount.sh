# mount.sh - sourced by tests/t-mount-*.sh: kernel and quash mounts of one
# image, and the comparison of two mounted trees.
#
#   kmount IMAGE DIR [OPTS]     the kernel's own squashfs mount (loop)
#   unmount_all                 every mount these helpers made (for trap EXIT)
#   compare_trees A B           python3: every path's lstat fields, content,
#                               symlink target, xattrs and listings; prints
#                               the first differences, fails if any
#   wait_mounted DIR            until DIR is a mount point (bounded)

QM_MOUNTS=()

kmount() {
	mkdir -p "$2"
	mount -t squashfs -o "loop,ro${3:+,$3}" "$1" "$2" && QM_MOUNTS+=("k:$2")
}

qmount() {   # qmount DIR BINARY ARGS... : a quash mount to unmount at exit
	local dir=$1; shift
	mkdir -p "$dir"
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
    for f in FIELDS:
        if getattr(sa, f) != getattr(sb, f):
            diffs.append(f"{rel or '.'}: {f} {getattr(sa, f)} != {getattr(sb, f)}")
    if xattrs(a) != xattrs(b):
        diffs.append(f"{rel or '.'}: xattrs {xattrs(a)!r:.200} != {xattrs(b)!r:.200}")
    if stat.S_ISLNK(sa.st_mode):
        if os.readlink(a) != os.readlink(b):
            diffs.append(f"{rel}: readlink differs")
    elif stat.S_ISREG(sa.st_mode):
        if digest(a) != digest(b):
            diffs.append(f"{rel}: content differs")
    elif stat.S_ISDIR(sa.st_mode):
        la, lb = os.listdir(a), os.listdir(b)
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
