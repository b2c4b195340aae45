# fixtures.sh - sourced by tests: source trees with every squashfs feature,
# and images of them made by Debian's mksquashfs, built once and cached.
#
#   fixtures_build      build (or reuse) everything below; sets the variables
#
# After fixtures_build:
#   FIX_DIR             $WORK/fixtures/<key>: the cache, keyed by a hash of this
#                       file and the mksquashfs version (edit this file = rebuild)
#   FIX_TREE            the main source tree: files of sizes 0, 1, block sizes
#                       and +-1, random and compressible data, sparse files, hard
#                       links (groups of 2 and 3, and a hard-linked symlink),
#                       symlinks (short, 4000-byte, dangling, absolute), fifo,
#                       char and block devices, a socket, xattrs (user.* small,
#                       empty and 4000-byte values, trusted.*), 100-level nesting,
#                       UTF-8 names, names with spaces, a newline and a leading
#                       dash, setuid/setgid/sticky/000 modes, odd owners, old
#                       and varied mtimes
#   FIX_TREE_HEAVY      a directory of 20,000 entries and a 5 GiB sparse file
#                       with data in its middle and at its end
#   FIX_TREE_SMALL      a few of each kind of entry, for corruption tests
#   FIX_IMAGES          array: images of FIX_TREE, one per line of IMAGE_MATRIX
#                       (every compressor, block sizes 4K/128K/1M, with and
#                       without fragments, tail ends, xattrs, exports, and
#                       uncompressed tables)
#   FIX_HEAVY_IMAGES    array: images of FIX_TREE_HEAVY
#   FIX_SMALL_IMAGES    array: images of FIX_TREE_SMALL
#   $FIX_DIR/images.txt one line per image: PATH TREE MKSQUASHFS-OPTIONS
#
# Each image is $FIX_DIR/img/NAME.sqfs; the name says how it was made, e.g.
# xz-bcj-1m.sqfs.  Building everything takes about a minute on 2 cores.

# name             tree   mksquashfs options
IMAGE_MATRIX='
gzip-128k          full   -comp gzip
gzip-4k            full   -comp gzip -b 4K
gzip-1m-tailends   full   -comp gzip -b 1M -tailends
gzip-nofrag        full   -comp gzip -no-fragments
gzip-noxattr       full   -comp gzip -no-xattrs
gzip-noexport      full   -comp gzip -no-exports
gzip-opts          full   -comp gzip -Xcompression-level 1 -Xwindow-size 10 -Xstrategy filtered,huffman_only
gzip-nocomp        full   -comp gzip -noI -noD -noF -noX
gzip-nodup         full   -comp gzip -no-duplicates -always-use-fragments
lzma-128k          full   -comp lzma
lzo-128k           full   -comp lzo
lzo-999-1m         full   -comp lzo -b 1M -Xalgorithm lzo1x_999 -Xcompression-level 9
lzo-4k-nofrag      full   -comp lzo -b 4K -no-fragments -no-exports
xz-128k            full   -comp xz
xz-bcj-1m          full   -comp xz -b 1M -Xbcj x86
xz-4k-tailends     full   -comp xz -b 4K -tailends
xz-noI-dict        full   -comp xz -noI -Xdict-size 50%
lz4-128k           full   -comp lz4
lz4-hc-1m          full   -comp lz4 -b 1M -Xhc
lz4-4k-nofrag      full   -comp lz4 -b 4K -no-fragments -no-xattrs
zstd-128k          full   -comp zstd
zstd-19-1m         full   -comp zstd -b 1M -Xcompression-level 19
zstd-4k-always     full   -comp zstd -b 4K -always-use-fragments -tailends
zstd-noD           full   -comp zstd -noD -noF
zstd-noexport-nox  full   -comp zstd -no-exports -no-xattrs -noX
heavy-gzip-128k    heavy  -comp gzip
heavy-zstd-1m      heavy  -comp zstd -b 1M -no-exports
heavy-lz4-4k       heavy  -comp lz4 -b 4K -no-fragments
small-gzip-4k      small  -comp gzip -b 4K
small-xz           small  -comp xz -Xbcj x86
small-zstd-nofrag  small  -comp zstd -b 4K -no-fragments
small-lz4-noI      small  -comp lz4 -noI -no-exports
small-lzo          small  -comp lzo -b 4K
small-lzma         small  -comp lzma -b 4K
'

# The trees, written by Python because it sets owners, modes, xattrs and the
# times of symlinks and directories (after their contents) in one pass.
_fixtures_make_trees() {   # _fixtures_make_trees DIR
	python3 - "$1" <<'PYEOF'
import os, random, socket, stat, sys

top = sys.argv[1]
rnd = random.Random(20261202)
T0 = 1000000000          # 2001-09-09, a fixed base for every mtime

def data(n, compressible):
    if compressible:
        line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
        return (line * (n // len(line) + 1))[:n]
    return rnd.randbytes(n)

def write(path, content, mode=0o644, uid=0, gid=0, mtime=T0):
    with open(path, "wb") as f:
        f.write(content)
    finish(path, mode, uid, gid, mtime)

def finish(path, mode, uid, gid, mtime):
    os.chown(path, uid, gid, follow_symlinks=False)
    if not os.path.islink(path):
        os.chmod(path, mode)
    os.utime(path, (mtime, mtime), follow_symlinks=False)

def sparse(path, size, pieces):
    with open(path, "wb") as f:
        for off, n in pieces:
            f.seek(off)
            f.write(data(n, False))
        f.truncate(size)
    os.utime(path, (T0, T0))

dirs = []   # (path, mode, uid, gid, mtime), times set last

def mkdir(path, mode=0o755, uid=0, gid=0, mtime=T0):
    os.makedirs(path, exist_ok=True)
    dirs.append((path, mode, uid, gid, mtime))

def finish_dirs():
    for path, mode, uid, gid, mtime in reversed(dirs):
        finish(path, mode, uid, gid, mtime)

def xattrs(path, values):
    for k, v in values.items():
        os.setxattr(path, k, v, follow_symlinks=False)

def full(root):
    mkdir(root, 0o755, 0, 0, T0 + 1)
    f = os.path.join(root, "files")
    mkdir(f, 0o755, 1234, 5678, T0 + 2)
    sizes = [0, 1, 4095, 4096, 4097, 131071, 131072, 131073, 1048575, 1048576, 1048577, 3 * 131072 + 17]
    for i, n in enumerate(sizes):
        write(os.path.join(f, "size-%d" % n), data(n, i % 2 == 0), mtime=T0 + 100 + i)
    write(os.path.join(f, "random-2m"), data(2 << 20, False))
    write(os.path.join(f, "text-3m"), data(3 << 20, True))
    write(os.path.join(f, "dup-a"), data(200000, True))
    write(os.path.join(f, "dup-b"), data(200000, True))      # same bytes: a duplicate
    s = os.path.join(root, "sparse")
    mkdir(s)
    sparse(os.path.join(s, "hole-middle"), 10 << 20, [(0, 5000), (3 << 20, 300000)])
    sparse(os.path.join(s, "hole-end"), 4 << 20, [(0, 1 << 20)])
    sparse(os.path.join(s, "hole-start"), 2 << 20, [((2 << 20) - 70000, 70000)])
    sparse(os.path.join(s, "all-hole"), 3 << 20, [])
    h = os.path.join(root, "hardlinks")
    mkdir(h)
    write(os.path.join(h, "pair-1"), data(10000, False), mode=0o640, uid=1234, gid=5678)
    os.link(os.path.join(h, "pair-1"), os.path.join(h, "pair-2"))
    write(os.path.join(h, "triple-1"), data(300000, True))
    os.link(os.path.join(h, "triple-1"), os.path.join(h, "triple-2"))
    os.link(os.path.join(h, "triple-1"), os.path.join(root, "triple-3-elsewhere"))
    write(os.path.join(h, "empty-1"), b"")
    os.link(os.path.join(h, "empty-1"), os.path.join(h, "empty-2"))
    os.symlink("pair-1", os.path.join(h, "link-1"))
    os.link(os.path.join(h, "link-1"), os.path.join(h, "link-2"), follow_symlinks=False)
    os.utime(os.path.join(h, "link-1"), (T0 + 7, T0 + 7), follow_symlinks=False)
    l = os.path.join(root, "symlinks")
    mkdir(l, 0o755, 0, 0, T0 + 3)
    for name, target, mt in [("short", "../files/size-1", T0 + 11), ("dangling", "no/such/file", T0 + 12),
                             ("absolute", "/etc/passwd", T0 + 13), ("escape", "../../../../../../tmp", T0 + 14),
                             ("long", "x" * 1000 + "/" + "y" * 1000 + "/" + "z" * 1998, T0 + 15),
                             ("dir-link", "../files", T0 + 16)]:
        p = os.path.join(l, name)
        os.symlink(target, p)
        finish(p, 0, 1234 if name == "short" else 0, 0, mt)
    sp = os.path.join(root, "special")
    mkdir(sp)
    os.mkfifo(os.path.join(sp, "fifo"))
    finish(os.path.join(sp, "fifo"), 0o620, 1234, 5678, T0 + 20)
    os.mknod(os.path.join(sp, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(os.path.join(sp, "big-numbers"), 0o600 | stat.S_IFCHR, os.makedev(300, 70000))
    os.mknod(os.path.join(sp, "disk"), 0o660 | stat.S_IFBLK, os.makedev(8, 1))
    finish(os.path.join(sp, "disk"), 0o660, 0, 6, T0 + 21)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(os.path.join(sp, "socket"))
    sock.close()
    finish(os.path.join(sp, "socket"), 0o755, 0, 0, T0 + 22)
    x = os.path.join(root, "xattrs")
    mkdir(x)
    xattrs(x, {"user.on-a-dir": b"yes", "trusted.dir": b"t"})
    for i in range(5):          # the same set on several files: shared in the image
        p = os.path.join(x, "shared-%d" % i)
        write(p, b"x")
        xattrs(p, {"user.small": b"v", "user.empty": b"", "user.big": data(4000, False),
                   "trusted.t": b"trusted value"})
    p = os.path.join(x, "binary")
    write(p, b"b")
    xattrs(p, {"user.bin": bytes(range(256)), "user.text": b"hello\0"})
    os.symlink("shared-0", os.path.join(x, "symlink"))
    xattrs(os.path.join(x, "symlink"), {"trusted.on-symlink": b"s"})
    p = os.path.join(x, "many")
    write(p, b"m")
    xattrs(p, {"user.k%03d" % i: b"value %d" % i for i in range(100)})
    n = os.path.join(root, "names")
    mkdir(n)
    for name in ["héllo wörld ✓", "日本語のファイル", "with space", "new\nline", "-rf", "tab\there",
                 "a" * 255, "#hash", "quote'\"", "ends-with-dot."]:
        write(os.path.join(n, name), name.encode())
    m = os.path.join(root, "modes")
    mkdir(m)
    for name, mode in [("setuid", 0o4755), ("setgid", 0o2711), ("none", 0o000), ("all", 0o777),
                       ("sticky-file", 0o1644), ("setuid-noexec", 0o4644)]:
        write(os.path.join(m, name), b"mode", mode=mode, uid=1000, gid=1000)
    mkdir(os.path.join(m, "sticky-dir"), 0o1777)
    mkdir(os.path.join(m, "closed-dir"), 0o000)
    write(os.path.join(m, "closed-dir", "inside"), b"in")
    mkdir(os.path.join(m, "readonly-dir"), 0o555)
    write(os.path.join(m, "readonly-dir", "inside"), b"ro")
    o = os.path.join(root, "owners")
    mkdir(o)
    for uid, gid in [(1234, 5678), (65534, 65534), (0, 1), (4000000000, 3000000000), (1, 0)]:
        write(os.path.join(o, "u%d-g%d" % (uid, gid)), b"o", uid=uid, gid=gid)
    t = os.path.join(root, "times")
    mkdir(t, mtime=0)
    for name, mt in [("epoch", 0), ("y2k", 946684800), ("y2038", 2147483647), ("late", 4000000000)]:
        write(os.path.join(t, name), b"t", mtime=mt)
    d = os.path.join(root, "deep")
    for i in range(100):
        d = os.path.join(d, "d%d" % i)
        mkdir(d, mtime=T0 + i)
    write(os.path.join(d, "bottom"), b"the bottom\n")
    e = os.path.join(root, "empty-dir")
    mkdir(e, 0o700, 1234, 5678, T0 + 5)
    b = os.path.join(root, "biggish-dir")      # listing larger than a metadata block: directory index
    mkdir(b)
    for i in range(600):
        write(os.path.join(b, "entry-with-a-longish-name-%04d" % i), b"")

def heavy(root):
    mkdir(root)
    big = os.path.join(root, "many")
    mkdir(big)
    for i in range(20000):
        open(os.path.join(big, "f%05d" % i), "wb").close()
    with open(os.path.join(big, "f10000"), "wb") as fh:
        fh.write(b"middle of the big directory\n")
    sparse(os.path.join(root, "sparse-5g"), 5 << 30,
           [((5 << 30) // 2, 200000), ((5 << 30) - 100000, 100000)])
    write(os.path.join(root, "plain"), data(100000, True))

def small(root):
    mkdir(root, 0o755, 0, 0, T0)
    mkdir(os.path.join(root, "dir"), 0o750, 1234, 5678, T0 + 1)
    write(os.path.join(root, "dir", "tiny"), b"tiny\n", mtime=T0 + 2)
    write(os.path.join(root, "dir", "blocks"), data(3 * 4096 + 100, True))
    write(os.path.join(root, "random"), data(9000, False))
    os.link(os.path.join(root, "dir", "tiny"), os.path.join(root, "tiny-link"))
    os.symlink("dir/tiny", os.path.join(root, "symlink"))
    os.mkfifo(os.path.join(root, "fifo"))
    os.mknod(os.path.join(root, "chardev"), 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    xattrs(os.path.join(root, "random"), {"user.a": b"1", "user.big": data(300, False)})
    sparse(os.path.join(root, "sparse"), 64 * 1024, [(20000, 100)])
    mkdir(os.path.join(root, "list"))
    for i in range(400):
        write(os.path.join(root, "list", "name-number-%03d" % i), b"")

for name, fn in [("full", full), ("heavy", heavy), ("small", small)]:
    dirs.clear()
    fn(os.path.join(top, name))
    finish_dirs()
PYEOF
}

_fixtures_make_images() {   # _fixtures_make_images DIR
	local dir=$1 name tree opts pids=() names=() i st=0
	mkdir -p "$dir/img"
	: >"$dir/images.txt"
	# Two at a time: most of an image's making is one core's (the small
	# trees, the 5 GiB sparse file's holes), so a pair takes 38 s to 2x s.
	while read -r name tree opts; do
		[ -n "$name" ] || continue
		# shellcheck disable=SC2086  # the options are words
		mksquashfs "$dir/tree/$tree" "$dir/img/$name.sqfs" $opts -quiet -no-progress \
			-mkfs-time 1500000000 >"$dir/img/$name.log" 2>&1 &
		pids+=($!) names+=("$name")
		echo "$dir/img/$name.sqfs $tree $opts" >>"$dir/images.txt"
		if [ ${#pids[@]} -ge 2 ]; then
			wait "${pids[0]}" || { echo "fixtures: mksquashfs ${names[0]} failed:"; cat "$dir/img/${names[0]}.log"; st=1; } >&2
			pids=("${pids[@]:1}") names=("${names[@]:1}")
		fi
	done <<<"$IMAGE_MATRIX"
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || { echo "fixtures: mksquashfs ${names[$i]} failed:"; cat "$dir/img/${names[$i]}.log"; st=1; } >&2
	done
	return $st
}

_fixtures_set_vars() {
	local path tree opts
	FIX_TREE=$FIX_DIR/tree/full
	FIX_TREE_HEAVY=$FIX_DIR/tree/heavy
	FIX_TREE_SMALL=$FIX_DIR/tree/small
	FIX_IMAGES=() FIX_HEAVY_IMAGES=() FIX_SMALL_IMAGES=()
	while read -r path tree opts; do
		case $tree in
		full)  FIX_IMAGES+=("$path") ;;
		heavy) FIX_HEAVY_IMAGES+=("$path") ;;
		small) FIX_SMALL_IMAGES+=("$path") ;;
		esac
	done <"$FIX_DIR/images.txt"
}

fixtures_build() {
	local self key tmp
	self=${BASH_SOURCE[0]}
	key=$( (cat "$self"; mksquashfs -version 2>&1 | head -1) | sha1sum | cut -c1-12)
	FIX_DIR=$WORK/fixtures/$key
	mkdir -p "$WORK/fixtures"
	(
		flock 9
		[ -e "$FIX_DIR/done" ] && exit 0
		# Stale caches of earlier versions of this file take gigabytes of holes.
		find "$WORK/fixtures" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
		tmp=$FIX_DIR.tmp
		rm -rf "$tmp" && mkdir -p "$tmp/tree"
		_fixtures_make_trees "$tmp/tree" && _fixtures_make_images "$tmp" || exit 1
		sed -i "s|$tmp|$FIX_DIR|" "$tmp/images.txt"
		touch "$tmp/done"
		mv "$tmp" "$FIX_DIR"
	) 9>"$WORK/fixtures/.lock" || return 1
	_fixtures_set_vars
}
