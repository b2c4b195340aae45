#!/bin/bash
# t-mount-catalog.sh - quash mount --catalog over a local directory of
# images: the names listed without opening anything (the status file's read
# counters), each image's tree against the kernel's own mount of it, idle
# close and reopen with the same inode numbers, images added, removed and
# replaced while mounted (a reader holding a file open finishes on the old
# bytes), 50 readers across 20 images at once, a corrupt image failing only
# its own directory with one log line, the command-line errors, and the
# memory of 10,000 entries before any is opened; an empty directory is a
# catalog of no images.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

trap unmount_all EXIT
mount_fixtures || { not_ok "fixtures"; exit 1; }
C=$WORK/t-mount-catalog
rm -rf "$C" && mkdir -p "$C/cat/tools/gcc" "$C/src" "$C/mp"

# 20 small images with known content, in a two-level layout like a site's.
for i in $(seq 1 20); do
	mkdir -p "$C/src/t$i/bin" "$C/src/t$i/share/doc"
	echo "tool $i" >"$C/src/t$i/bin/tool"
	seq 1 $((i * 3000)) >"$C/src/t$i/share/doc/numbers"
	# img20's 16 full blocks: the let-go checks below need more than the
	# one block the passed list of a 1 MiB cache holds (two were not enough
	# on a loaded host: a block covered in part by its reads is not passed).
	[ "$i" = 20 ] && seq 1 330000 >"$C/src/t$i/share/doc/more"
	"$QUASH" pack -q --no-progress "$C/src/t$i" "$C/cat/img$i.sqfs" || not_ok "pack img$i"
done
for v in 12.1 13.2; do cp "$C/cat/img1.sqfs" "$C/cat/tools/gcc/$v.squashfs"; done
cp "${MF_IMAGES[0]}" "$C/cat/full.img"
cp "$C/cat/img2.sqfs" "$C/cat/no-extension"        # found by its magic
python3 "$QUASH_TOP/tests/lib/make-sif.py" "$C/cat/img11.sqfs" "$C/cat/container.sif" 65536
echo "not an image" >"$C/cat/README.txt"
mkdir -p "$C/cat/.hidden" && cp "$C/cat/img3.sqfs" "$C/cat/.hidden/x.sqfs"

status() { cat "$C/mp/.quash-catalog"; }
# eventually CMD...: CMD succeeds within 5 s (the watcher lists after inotify, then tells the kernel)
eventually() { local i; for i in $(seq 50); do "$@" && return 0; sleep 0.1; done; return 1; }
state_of() { status | awk -v n="$1" -F'\t' '$1 == n { print $2 }'; }
reads_of() { status | awk -v n="$1" -F'\t' '$1 == n { print $6 }'; }
open_images() { status | awk -F'\t' '!/^#/ && $2 == "open"' | wc -l; }

# A 1 MiB block cache: blocks are evicted all the time, and one passed on
# whole to the page cache is freed at once (its short list's share, an
# eighth, is smaller than a block in each of the 32 shards).
"$QUASH_ASAN" mount --catalog -f -o idle=2,cache_size=1M "$C/cat" "$C/mp" 2>"$C/daemon.log" &
DAEMON=$!
QM_MOUNTS+=("f:$C/mp")
check "quash mount --catalog mounts a directory of images" wait_mounted "$C/mp"

want=$(printf '%s\n' container full $(seq -f 'img%g' 1 20) no-extension tools | sort | tr '\n' ' ')
got=$(ls "$C/mp" | tr '\n' ' ')
check "the top directory lists each image by its name, extensions dropped ($got)" [ "$got" = "$want" ]
check "keys with '/' are nested directories" [ "$(ls "$C/mp/tools/gcc" | tr '\n' ' ')" = "12.1 13.2 " ]
ls -l "$C/mp" "$C/mp/tools/gcc" >/dev/null
stat "$C/mp/img5" "$C/mp/tools/gcc/12.1" >/dev/null
check "listing and stat of the names open no image (status: $(open_images) open)" [ "$(open_images)" = 0 ]
check "... and read nothing of any image" [ "$(status | awk -F'\t' '!/^#/ { n += $6 } END { print n + 0 }')" = 0 ]

check "a file inside an image reads right" [ "$(cat "$C/mp/img7/bin/tool")" = "tool 7" ]
only_img7_open() { [ "$(state_of img7)" = open ] && [ "$(open_images)" = 1 ] && [ "$(reads_of img7)" -gt 0 ]; }
check "the first lookup inside opened that image, and only it" only_img7_open
check "quash catalog ls --json: the image opened, by name, with its reads" python3 -c '
import json, subprocess, sys
imgs = {i["name"]: i for i in json.loads(subprocess.check_output([sys.argv[1], "catalog", "ls", "--json", sys.argv[2]]))}
sys.exit(not (imgs["img7"]["state"] == "open" and imgs["img7"]["reads"] > 0 and imgs["img8"]["state"] == "closed"
              and imgs["tools/gcc/12.1"]["idle_s"] is None and len(imgs) == 25))' "$QUASH" "$C/mp"
check "a nested image reads right" cmp -s "$C/mp/tools/gcc/13.2/share/doc/numbers" "$C/src/t1/share/doc/numbers"
check "a SIF container's squashfs partition reads right" [ "$(cat "$C/mp/container/bin/tool")" = "tool 11" ]
check "an image found by its magic reads right" cmp -s "$C/mp/no-extension/share/doc/numbers" \
	"$C/src/t2/share/doc/numbers"

# A data block a read passed on whole to the page cache is let go (the
# status counts it); dropped from the page cache too, it is loaded again.
let_go() { status | grep '^# block cache' | sed -n 's/.* \([0-9]*\) let go once in the page cache.*/\1/p'; }
g0=$(let_go)
check "a file read whole reads right (img20: $(stat -c %s "$C/src/t20/share/doc/more") bytes)" \
	cmp -s "$C/mp/img20/share/doc/more" "$C/src/t20/share/doc/more"
# A block a filler thread stored whole is let go when the store is done, after
# the read returned: on a loaded host, up to a few seconds later.
for _ in $(seq 50); do g1=$(let_go); [ "${g1:-0}" -gt "${g0:-0}" ] && break; sleep 0.1; done
check "... and its full blocks, in the page cache, are let go by the block cache ($g0 -> $g1)" \
	test "$((${g1:-0} - ${g0:-1}))" -ge 1
misses() { status | grep '^# block cache' | sed -n 's/.* \([0-9]*\) misses,.*/\1/p'; }
python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' \
	"$C/mp/img20/share/doc/more"
m0=$(misses)
check "... and read again once the page cache let them go too, right" \
	cmp -s "$C/mp/img20/share/doc/more" "$C/src/t20/share/doc/more"
m1=$(misses)
check "... loaded again: the block cache missed them ($m0 -> $m1)" test "$((${m1:-0} - ${m0:-1}))" -ge 1

# A whole image, every field, against the kernel's own mount.
if kmount "$C/cat/full.img" "$C/k-full"; then
	check "an image's tree equals the kernel's mount of it (xattrs, links, devices, sparse)" \
		env QM_COMPARE=catalog bash -c "$(declare -f compare_trees); compare_trees '$C/k-full' '$C/mp/full'"
	umount "$C/k-full"
else
	not_ok "kernel mount of the full fixture"
fi

# Inode numbers: distinct across images, stable across an idle close.
i5=$(stat -c %i "$C/mp/img5/bin/tool") i6=$(stat -c %i "$C/mp/img6/bin/tool")
check "two images' files have distinct inode numbers" [ "$i5" != "$i6" ]
sleep 4
check "an image nobody used for idle=2 s is closed ($(state_of img5))" [ "$(state_of img5)" = closed ]
echo 2 >/proc/sys/vm/drop_caches
check "after the close, the same inode number ($i5)" [ "$(stat -c %i "$C/mp/img5/bin/tool")" = "$i5" ]
check "and the same bytes (reopened: $(state_of img5))" cmp -s "$C/mp/img5/share/doc/numbers" \
	"$C/src/t5/share/doc/numbers"

# Added and removed while mounted.
cp "$C/cat/img9.sqfs" "$C/cat/added.sqfs"
check "an image added is there at once" [ "$(cat "$C/mp/added/bin/tool" 2>&1)" = "tool 9" ]
check "and listed" eventually bash -c "ls '$C/mp' | grep -qx added"
rm "$C/cat/added.sqfs"
check "an image removed is no longer listed" eventually bash -c "! ls '$C/mp' | grep -qx added"
check "nor found" eventually test ! -e "$C/mp/added"

# Replaced while a reader holds a file open: it finishes on the old bytes.
mkdir -p "$C/src/new10/share/doc" "$C/src/new10/bin"
seq 500000 600000 >"$C/src/new10/share/doc/numbers"
echo "tool 10 new" >"$C/src/new10/bin/tool"
"$QUASH" pack -q --no-progress "$C/src/new10" "$C/new10.sqfs"
python3 - "$C" >"$C/replace.out" 2>&1 <<'PY'
import os, sys, time
c = sys.argv[1]
f = open(f"{c}/mp/img10/share/doc/numbers", "rb")
first = f.read(1000)
os.rename(f"{c}/new10.sqfs", f"{c}/cat/img10.sqfs")
for _ in range(50):        # until the watcher has listed and told the kernel (5 s at most)
    if open(f"{c}/mp/img10/bin/tool").read() == "tool 10 new\n":
        break
    time.sleep(0.1)
new = open(f"{c}/mp/img10/share/doc/numbers", "rb").read()
time.sleep(2.5)            # past idle=2: the old version must stay open for f
rest = f.read()
old = open(f"{c}/src/t10/share/doc/numbers", "rb").read()
want_new = open(f"{c}/src/new10/share/doc/numbers", "rb").read()
print("old-reader", "same" if first + rest == old else "DIFFERENT")
print("new-open", "same" if new == want_new else "DIFFERENT")
f.close()
PY
check "a reader holding a file open when its image is replaced reads the old bytes to the end" \
	grep -q "old-reader same" "$C/replace.out"
check "a new open after the replacement reads the new image" grep -q "new-open same" "$C/replace.out"
check "a new lookup sees the new image" [ "$(cat "$C/mp/img10/bin/tool")" = "tool 10 new" ]
sleep 3
check "the old version is closed once its last file is" \
	[ "$(status | head -1 | sed -n 's/.*(\([0-9]*\) old versions).*/\1/p')" = 0 ]

# 50 readers at once across 20 images.
pids=()
for r in $(seq 1 50); do
	(
		for k in 0 1 2; do
			i=$(( (r + k * 7) % 20 + 1 ))
			[ "$i" = 10 ] && continue
			cmp -s "$C/mp/img$i/share/doc/numbers" "$C/src/t$i/share/doc/numbers" || exit 1
			[ "$(cat "$C/mp/img$i/bin/tool")" = "tool $i" ] || exit 1
		done
	) &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
check "50 concurrent readers across 20 images read the right bytes ($bad failed)" [ $bad = 0 ]

# A corrupt image fails only its own directory.
{ printf 'hsqs'; head -c 200000 /dev/urandom; } >"$C/cat/corrupt.sqfs"
err=$(ls "$C/mp/corrupt" 2>&1)
check "a corrupt image's directory gives EIO ($err)" grep -q "Input/output error" <<<"$err"
ls "$C/mp/corrupt/x" >/dev/null 2>&1
check "... with one line in the log" [ "$(grep -c 'corrupt.sqfs' "$C/daemon.log")" = 1 ]
why=$(status | awk -F'\t' '$1 == "corrupt" { print $2 ": " $10 }')
says_why() { [ "${why%%: *}" = failed ] && [ -n "${why#*: }" ] && [ "${why#*: }" != - ]; }
check "... and catalog ls says why ($why)" says_why
check "... and the other images keep working" [ "$(cat "$C/mp/img3/bin/tool")" = "tool 3" ]

# Name clashes: a directory wins over an image of its name, and the first
# key listed over another of the same name; each loser is named.
cp "$C/cat/img4.sqfs" "$C/cat/tools.sqfs"
cp "$C/cat/img5.sqfs" "$C/cat/img6.img"
shadowed() { status | grep -c '^# no name of its own: '; }
check "an image named like a directory is listed as having no name of its own" \
	eventually bash -c "$(declare -f status shadowed); C='$C'; [ \$(shadowed) = 2 ]"
check "... the directory stays ($(ls "$C/mp/tools" | tr '\n' ' '))" [ "$(ls "$C/mp/tools")" = gcc ]
check "... the first of two keys of one name keeps it" [ "$(cat "$C/mp/img6/bin/tool")" = "tool 6" ]
check "... and the log says so once" [ "$(grep -c 'have no name of their own' "$C/daemon.log")" = 1 ]
rm "$C/cat/tools.sqfs" "$C/cat/img6.img"
check "the control file is not listed" bash -c "! ls -a '$C/mp' | grep -q quash"

# The control file's reader closes the moment its read returns, so the
# kernel sends RELEASE while the worker that replied is still in writev():
# the reply's bytes must outlive the handle (the ASan daemon would report it).
pids=()
for r in 1 2 3 4; do
	( for k in $(seq 1 150); do status >/dev/null || exit 1; done ) &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
check "600 reads of the control file by 4 readers at once ($bad failed)" [ $bad = 0 ]

fusermount3 -u "$C/mp"
wait "$DAEMON"
check "the daemon exits cleanly after unmount (no sanitizer report)" clean_exit $? "$C/daemon.log"

# Errors: one line each.
out=$("$QUASH" mount --catalog "$C/cat/img1.sqfs" "$C/mp" 2>&1)
one_line_not_dir() { [ "$(wc -l <<<"$out")" = 1 ] && grep -q "not a directory" <<<"$out"; }
check "a file given as a catalog is refused in one line ($out)" one_line_not_dir
out=$("$QUASH" mount -o idle=5 "$C/cat/img1.sqfs" "$C/mp" 2>&1)
check "idle= without --catalog is refused ($out)" grep -q "is for a catalog" <<<"$out"
out=$("$QUASH" mount --catalog -o subdir=x "$C/cat" "$C/mp" 2>&1)
check "subdir= with --catalog is refused ($out)" grep -q "not a catalog" <<<"$out"
check "nothing left mounted" not_mounted "$C/mp"

# -o log=FILE: a daemon's messages where a host without syslog still has them.
mkdir -p "$C/logcat"
{ printf 'hsqs'; head -c 50000 /dev/urandom; } >"$C/logcat/junk.sqfs"
"$QUASH" mount --catalog -o log="$C/quash.log" "$C/logcat" "$C/mp"
ls "$C/mp/junk" >/dev/null 2>&1
fusermount3 -u "$C/mp"
check "-o log=FILE: a daemon's failure is a time-stamped line there" \
	grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8} quash\[[0-9]+\] error: .*junk\.sqfs' "$C/quash.log"
ln -sf "$C/quash.log" "$C/log-link"
out=$("$QUASH" mount --catalog -o log="$C/log-link" "$C/logcat" "$C/mp" 2>&1)
check "-o log= a symlink is refused in one line ($out)" \
	bash -c '[ "$(wc -l <<<"$1")" = 1 ] && grep -q "a symlink" <<<"$1" && ! mountpoint -q "$2"' _ "$out" "$C/mp"
out=$("$QUASH" mount --catalog -o log="$C" "$C/logcat" "$C/mp" 2>&1)
check "-o log= a directory is refused in one line ($out)" \
	bash -c '[ "$(wc -l <<<"$1")" = 1 ] && grep -q "log=" <<<"$1" && ! mountpoint -q "$2"' _ "$out" "$C/mp"

# 10,000 entries before any is opened: the daemon's memory (release build).
mkdir -p "$C/big"
python3 - "$C/cat/img1.sqfs" "$C/big" <<'PY'
import os, sys
for i in range(10000):
    os.link(sys.argv[1], f"{sys.argv[2]}/image-{i:05}.sqfs")
PY
mkdir -p "$C/empty"
# rss PID: the KiB of the daemon's server (mount/holder.h), or nothing
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$(pgrep -P "$1" -f mount-server | head -1)/status" 2>/dev/null; }
"$QUASH" mount --catalog -f "$C/empty" "$C/mp" 2>/dev/null &
pid=$!
wait_mounted "$C/mp"; ls "$C/mp" >/dev/null
base=$(rss $pid)
fusermount3 -u "$C/mp"; wait
"$QUASH" mount --catalog -f "$C/big" "$C/mp" 2>/dev/null &
pid=$!
wait_mounted "$C/mp"
n=$(ls "$C/mp" | wc -l)
stat "$C/mp/image-04242" >/dev/null
big=$(rss $pid)
fusermount3 -u "$C/mp"; wait
check "10,000 entries listed ($n)" [ "$n" = 10000 ]
# Both daemons must have been measured: a missing figure is a failure, not 0.
check "10,000 entries cost $(( (${big:-0} - ${base:-0}) / 1024 )) MiB before any is opened (at most 10; ${base:-no} KiB empty, ${big:-no} KiB full)" \
	bash -c "[ '${base:-0}' -gt 1024 ] && [ '${big:-0}' -ge '${base:-0}' ] && [ $((${big:-0} - ${base:-0})) -le 10240 ]"
rm -rf "$C/big"

# ---- aliases ------------------------------------------------------------------
# A symlink named as an image whose target, resolved from the catalog's root
# one name at a time, is an image of the catalog is a symlink entry NAME ->
# the target's name: the kernel follows it to the one image.  Leaving the
# root (by .. or an absolute path), a loop, a dangling target or one that is
# no image is not served: a "# not served:" status line and one log line say
# why.  Every listing resolves them again.  The kernel's own mount of each
# target is the oracle for what reads through an alias; inotify (IN_OPEN,
# IN_ACCESS) on the directory outside the root shows the daemon never opens
# anything there.
A=$C/alias
rm -rf "$A" && mkdir -p "$A/cat/sub" "$A/cat/v" "$A/outside" "$A/mp"
cp "$C/cat/img3.sqfs" "$A/cat/v/gcc-13.2.sqfs"
cp "$C/cat/img4.sqfs" "$A/cat/gcc-14.sqfs"
cp "$C/cat/img5.sqfs" "$A/outside/secret.sqfs"
cp "$C/cat/img6.sqfs" "$A/gcc-14-new.sqfs"
echo "not an image" >"$A/cat/notes.txt"
ln -s v/gcc-13.2.sqfs "$A/cat/gcc-latest.sqfs"         # relative, into a subdirectory
ln -s ../v/gcc-13.2.sqfs "$A/cat/sub/rel.sqfs"         # in a subdirectory: up, then down again
ln -s "$A/cat/gcc-14.sqfs" "$A/cat/abs.sqfs"           # absolute, inside the root
ln -s gcc-latest.sqfs "$A/cat/chain.sqfs"              # a chain of two
ln -s loop2.sqfs "$A/cat/loop1.sqfs"
ln -s loop1.sqfs "$A/cat/loop2.sqfs"
ln -s ../outside/secret.sqfs "$A/cat/up.sqfs"          # leaves the root by ..
ln -s "$A/outside/secret.sqfs" "$A/cat/out.sqfs"       # leaves it by an absolute path
ln -s notes.txt "$A/cat/text.sqfs"                     # a regular file, no image
ln -s v "$A/cat/dir.sqfs"
ln -s missing.sqfs "$A/cat/dangling.sqfs"
kmount "$A/cat/v/gcc-13.2.sqfs" "$A/k13" || not_ok "kernel mount of gcc-13.2"
kmount "$A/cat/gcc-14.sqfs" "$A/k14" || not_ok "kernel mount of gcc-14"
kmount "$A/gcc-14-new.sqfs" "$A/k14new" || not_ok "kernel mount of the new gcc-14"

python3 - "$A/events" "$A/outside" "$A/outside/secret.sqfs" <<'PY' &
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_CLOEXEC)
out = open(sys.argv[1], "w", buffering=1)
for p in sys.argv[2:]:
    if fd < 0 or libc.inotify_add_watch(fd, p.encode(), 0x20 | 0x01) < 0:     # IN_OPEN | IN_ACCESS
        print("cannot watch %s: %s" % (p, os.strerror(ctypes.get_errno())), file=out)
        sys.exit(1)
print("watching", file=out)
while True:
    data, off = os.read(fd, 65536), 0
    while off < len(data):
        wd, mask, _, n = struct.unpack_from("iIII", data, off)
        print("opened in %s (mask %#x)" % (sys.argv[1 + wd], mask), file=out)
        off += 16 + n
PY
AWATCH=$!
for _ in $(seq 50); do grep -q watching "$A/events" 2>/dev/null && break; sleep 0.1; done
python3 -c "import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY))" "$A/outside"
for _ in $(seq 50); do grep -q opened "$A/events" && break; sleep 0.1; done
check "aliases: inotify sees an open in the directory outside the root ($(tr '\n' ';' <"$A/events"))" \
	grep -q '^opened in' "$A/events"
: >"$A/events"

"$QUASH_ASAN" mount --catalog -f "$A/cat" "$A/mp" 2>"$A/daemon.log" &
ADAEMON=$!
QM_MOUNTS+=("f:$A/mp")
check "aliases: quash mount --catalog mounts a directory with symlinks" wait_mounted "$A/mp"
astatus() { cat "$A/mp/.quash-catalog"; }
link_is() { [ "$(stat -c %F "$A/mp/$1")" = "symbolic link" ] && [ "$(readlink "$A/mp/$1")" = "$2" ]; }
got=$(ls "$A/mp" | tr '\n' ' ')
check "aliases: served ones are listed, the others not ($got)" [ "$got" = "abs chain gcc-14 gcc-latest sub v " ]
check "aliases: a relative target in a subdirectory: gcc-latest -> v/gcc-13.2 ($(ls -l "$A/mp" | grep gcc-latest))" \
	link_is gcc-latest v/gcc-13.2
check "aliases: an alias in a subdirectory: sub/rel -> ../v/gcc-13.2 ($(ls -l "$A/mp/sub" | grep rel))" \
	link_is sub/rel ../v/gcc-13.2
check "aliases: an absolute target inside the root: abs -> gcc-14" link_is abs gcc-14
check "aliases: a chain of two ends at the image: chain -> v/gcc-13.2" link_is chain v/gcc-13.2
check "aliases: gcc-latest's tree equals the kernel's mount of its target" \
	env QM_COMPARE=catalog bash -c "$(declare -f compare_trees); compare_trees '$A/k13' '$A/mp/gcc-latest/'"
check "aliases: so does sub/rel's" \
	env QM_COMPARE=catalog bash -c "$(declare -f compare_trees); compare_trees '$A/k13' '$A/mp/sub/rel/'"
check "aliases: and abs's, of gcc-14" \
	env QM_COMPARE=catalog bash -c "$(declare -f compare_trees); compare_trees '$A/k14' '$A/mp/abs/'"
one_open() { [ "$(astatus | awk -F'\t' '!/^#/ && $2 == "open"' | wc -l)" = 2 ] &&
	[ "$(stat -c %i "$A/mp/chain/.")" = "$(stat -c %i "$A/mp/v/gcc-13.2/.")" ]; }
check "aliases: an alias opens no image of its own: 2 open for 4 aliases and 2 images, one inode" one_open
for n in loop1:"lies beyond more than 8 symlinks" up:"leaves the catalog's root" out:"is outside the catalog's root" \
	text:"is no image this catalog serves" dir:"is a directory, not an image" dangling:"does not exist"; do
	check "aliases: ${n%%:*}.sqfs is not served: stat fails, the status says its target ${n#*:}" \
		bash -c '! stat "$1" 2>/dev/null && grep -q "^# not served: $2: its target $3" <<<"$4"' _ \
		"$A/mp/${n%%:*}" "${n%%:*}.sqfs" "${n#*:}" "$(astatus)"
done
check "aliases: quash catalog ls shows each alias" \
	bash -c '[ "$("$1" catalog ls "$2" | grep -c "^# alias ")" = 4 ] && "$1" catalog ls "$2" | grep -qxF "# alias sub/rel -> ../v/gcc-13.2"' \
	_ "$QUASH" "$A/mp"

# Live: the symlink changed, its target replaced, then removed.
ln -s gcc-14.sqfs "$A/cat/.new" && mv -T "$A/cat/.new" "$A/cat/gcc-latest.sqfs"
check "aliases: a symlink changed live is the new alias (gcc-latest -> gcc-14), the chain too" \
	eventually bash -c "$(declare -f link_is); A='$A'; link_is gcc-latest gcc-14 && link_is chain gcc-14"
check "aliases: ... and reads as the kernel's mount of the new target" \
	env QM_COMPARE=catalog bash -c "$(declare -f compare_trees); compare_trees '$A/k14' '$A/mp/gcc-latest/'"
cp "$A/gcc-14-new.sqfs" "$A/cat/.gcc-14" && mv "$A/cat/.gcc-14" "$A/cat/gcc-14.sqfs"
check "aliases: its target replaced live, an alias reads the new image as the kernel mounts it" \
	eventually env QM_COMPARE=catalog bash -c "$(declare -f compare_trees); compare_trees '$A/k14new' '$A/mp/abs/'"
rm "$A/cat/gcc-14.sqfs"
gone() { [ "$(ls "$A/mp" | tr '\n' ' ')" = "sub v " ] && astatus | grep -q '^# not served: abs.sqfs: its target does not exist'; }
check "aliases: its target removed, every alias to it goes, and the status says why" \
	eventually bash -c "$(declare -f gone astatus); A='$A'; gone"
check "aliases: each symlink not served is logged once, however many listings ($(grep -c 'not served' "$A/daemon.log") lines)" \
	bash -c '[ "$(grep -c "symlink not served: up.sqfs:" "$1")" = 1 ] && [ "$(grep -c "symlink not served: abs.sqfs:" "$1")" = 1 ]' \
	_ "$A/daemon.log"
sleep 0.5
kill "$AWATCH" 2>/dev/null
wait "$AWATCH" 2>/dev/null
check "aliases: the daemon opened nothing outside the root ($(head -3 "$A/events" | tr '\n' ';'))" \
	[ ! -s "$A/events" ]
fusermount3 -u "$A/mp"
wait "$ADAEMON"
check "aliases: the daemon exits cleanly after unmount (no sanitizer report)" clean_exit $? "$A/daemon.log"
umount "$A/k13" "$A/k14" "$A/k14new" 2>/dev/null

# An empty directory is a catalog of no images (an empty listing sorts nothing).
mkdir -p "$C/empty" "$C/mpe"
"$QUASH_ASAN" mount --catalog -f "$C/empty" "$C/mpe" 2>"$C/empty.log" &
EDAEMON=$!
QM_MOUNTS+=("f:$C/mpe")
empty_catalog() { wait_mounted "$C/mpe" && [ -z "$(ls "$C/mpe")" ]; }
check "an empty directory mounts as a catalog of no images" empty_catalog
fusermount3 -u "$C/mpe"
wait "$EDAEMON"
check "... and its daemon exits cleanly after unmount (no sanitizer report)" clean_exit $? "$C/empty.log"
