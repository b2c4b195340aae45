#!/bin/bash
# bench/catalog.sh - a directory of N small images (default 2,000) under one
# mount point: `quash mount --catalog` against the autofs way, a browse
# (ghost) map whose program map loop-mounts each image with the kernel's
# squashfs on first use.  One run, rounds interleaved (quash, the peer,
# quash, ...), each round from fresh mounts:
#
#   start-up: until `ls MP` works (quash mount --catalog returning; the
#       peer's mount point made and its ghost directories created)
#   ls MP, cold (caches dropped)
#   first stat (NAME/bin/tool) and first read (all of NAME/bin/tool) in
#       an image not opened yet: median and p99 over SAMPLE random images
#       each (different images for the stat and for the read), cold
#   a sweep reading NAME/bin/tool of every image, cold (fresh mounts,
#       caches dropped), then again warm; every read is checked against
#       the source tree's MD5, and SAMPLE_DIFF images are compared whole
#       with diff -r against their source trees
#   memory for N opened-then-idle images, after the sweeps, caches dropped
#       (page cache and reclaimable slab are not counted for either): the
#       quash daemon's VmRSS; for the peer the kernel's growth from before
#       the first mount: Slab + VmallocUsed + Percpu + KernelStack in
#       /proc/meminfo (superblocks, squashfs caches and decompressors, loop
#       devices' slab and workers); and, for both, the growth of all memory
#       in use outside the page cache (MemTotal - MemFree - Buffers - Cached
#       - SReclaimable), which also counts the loop devices' request pages
#       but also whatever else the shared machine did meanwhile
#   quash only: the daemon's VmRSS with a 10,000-entry catalog (hard links
#       to the N images) right after mount and `ls`, before any is opened
#
# The peer.  Where the kernel has autofs (CONFIG_AUTOFS_FS) this should be
# Debian's automount; this VM's kernel has no autofs (no /dev/autofs, not in
# /proc/filesystems, no modules to load), so the script replays, per image,
# the work automount does on a first lookup: run the program map
# ($C/auto.catalog KEY, printing `-fstype=squashfs,loop,ro :/path/KEY.sqfs`),
# parse it, and run mount(8) on the ghost directory, which sits on a tmpfs
# with a directory per key as a browse map gets.  What it leaves out (the
# autofs trigger in the kernel, the daemon's request thread, its ioctls,
# automount's own RSS and start-up) only costs the peer more, so the peer's
# times and memory are lower bounds.  The loop devices are made on demand
# through /dev/loop-control; the ones the run made are removed after each
# round (LOOP_CTL_REMOVE), the mounts undone.  Root only; not part of
# `make check`.
#
#   bench/catalog.sh
#   env: CATALOG_N (2000) CATALOG_ROUNDS (2) SAMPLE (200) SAMPLE_DIFF (20)
#        QUASH_VARIANTS ("quash": add e.g. "quash,open_max=1024" to run quash
#        with -o OPTS as well) BENCH_DIR
#        (/var/tmp/quash-bench) QUASH CSV (bench/results/catalog.csv)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
B=${BENCH_DIR:-/var/tmp/quash-bench}
N=${CATALOG_N:-2000}
ROUNDS=${CATALOG_ROUNDS:-2}
SAMPLE=${SAMPLE:-200}
SAMPLE_DIFF=${SAMPLE_DIFF:-20}
BIG=10000
QUASH_VARIANTS=${QUASH_VARIANTS:-quash}
CSV=${CSV:-$top/bench/results/catalog.csv}
C=$B/catalog
SRC=$C/src-$N           # the trees
IMG=$C/images-$N        # NAME.sqfs, one per tree
IMG10K=$C/images-$BIG   # BIG hard links to the N images
MP=$C/mnt
OUT=$C/out
RESULTS=$OUT/results.tsv

die() { echo "bench/catalog.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (loop mounts, drop_caches)"
for t in python3 mount umount losetup diff; do
	command -v $t >/dev/null || die "$t is missing"
done
[ -x "$QUASH" ] || die "$QUASH is missing (make build)"
[ -e /dev/loop-control ] || die "no /dev/loop-control: loop devices cannot be made on demand"
[ "$N" -le "$BIG" ] || die "CATALOG_N is at most $BIG"
[ "$SAMPLE" -le $((N / 2)) ] || die "SAMPLE is at most CATALOG_N / 2"
mkdir -p "$C" "$MP" "$OUT" "$(dirname "$CSV")"

# ---- images, made once -------------------------------------------------

# Each tree: bin/tool (2-6 KiB of random bytes), a few directories and
# 10-20 small text files, all with contents distinct from image to image.
make_trees() {
	python3 - "$SRC" "$N" <<'PY'
import hashlib, os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root, exist_ok=True)
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
with open(f"{root}.md5", "w") as manifest:
    for i in range(n):
        rnd = random.Random(i)
        t = f"{root}/img-{i:05d}"
        for d in ("bin", "etc", "lib", "share/doc", "share/data"):
            os.makedirs(f"{t}/{d}", exist_ok=True)
        tool = rnd.randbytes(rnd.randint(2048, 6144))
        with open(f"{t}/bin/tool", "wb") as f:
            f.write(tool)
        os.chmod(f"{t}/bin/tool", 0o755)
        for k in range(rnd.randint(10, 20)):
            d = rnd.choice(("etc", "lib", "share/doc", "share/data", "."))
            text = f"image {i} file {k}\n" + " ".join(rnd.choice(words) for _ in range(rnd.randint(10, 300)))
            with open(f"{t}/{d}/f{k:02d}.txt", "w") as f:
                f.write(text + "\n")
        manifest.write(f"img-{i:05d} {hashlib.md5(tool).hexdigest()}\n")
PY
}

make_images() {
	if [ ! -f "$SRC.done" ]; then
		echo "making $N trees in $SRC (once)"
		rm -rf "$SRC" && make_trees && touch "$SRC.done" || die "making the trees failed"
	fi
	if [ ! -f "$IMG.done" ]; then
		echo "packing $N images into $IMG (once)"
		rm -rf "$IMG" && mkdir -p "$IMG"
		(cd "$SRC" && ls) | xargs -P "$(nproc)" -I{} "$QUASH" pack -q --no-progress "$SRC/{}" "$IMG/{}.sqfs" ||
			die "packing failed"
		[ "$(ls "$IMG" | wc -l)" -eq "$N" ] || die "not $N images in $IMG"
		touch "$IMG.done"
	fi
	if [ ! -f "$IMG10K.done" ]; then
		rm -rf "$IMG10K" && mkdir -p "$IMG10K"
		python3 - "$IMG" "$IMG10K" "$N" "$BIG" <<'PY' || die "linking $IMG10K failed"
import os, sys
src, dst, n, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for j in range(big):
    os.link(f"{src}/img-{j % n:05d}.sqfs", f"{dst}/img-{j:05d}.sqfs")
PY
		touch "$IMG10K.done"
	fi
	# the peer's program map: one line per key, as autofs runs it
	cat >"$C/auto.catalog" <<EOF
#!/bin/sh
# autofs program map: KEY -> a loop mount of $IMG/KEY.sqfs
f="$IMG/\$1.sqfs"
[ -f "\$f" ] && echo "-fstype=squashfs,loop,ro :\$f"
EOF
	chmod +x "$C/auto.catalog"
}

# ---- the driver: timed accesses, in one process ------------------------

DRV=$OUT/drv.py
cat >"$DRV" <<'PY'
"""Timed first accesses under a catalog mount point.

drv.py WHO MP MAP OP ARGS: WHO is 'peer' (a first lookup in KEY runs the
program map MAP and mount(8), as automount would) or anything else (quash:
the filesystem does it).  OP:
  sample KEYSFILE   stat KEY/bin/tool for the first half of the keys, read
                    it for the second: prints median and p99 (ms) of each
  sweep MANIFEST    read KEY/bin/tool of every key, check its MD5: prints
                    the total seconds, the number of wrong reads, and the
                    mean ms per image over the first and the last tenth
"""
import hashlib, os, statistics, subprocess, sys, time

who, mp, mapprog, op, arg = sys.argv[1:6]
mounted = set()
if who == "peer":
    for line in open("/proc/self/mountinfo"):
        point = line.split()[4]
        if point.startswith(mp + "/"):
            mounted.add(point[len(mp) + 1:])

def trigger(key):
    """automount's work for a first lookup under MP/KEY (peer only)."""
    if who != "peer" or key in mounted:
        return
    out = subprocess.run([mapprog, key], capture_output=True, text=True, check=True).stdout.split()
    opts, loc = out[0], out[1]
    fstype, rest = None, []
    for o in opts.lstrip("-").split(","):
        if o.startswith("fstype="):
            fstype = o[len("fstype="):]
        else:
            rest.append(o)
    subprocess.run(["mount", "-t", fstype, "-o", ",".join(rest), loc.lstrip(":"), f"{mp}/{key}"],
                   check=True, stdout=subprocess.DEVNULL)
    mounted.add(key)

def read(path):
    with open(path, "rb") as f:
        return f.read()

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]

if op == "sample":
    keys = open(arg).read().split()
    half = len(keys) // 2
    st, rd = [], []
    for k in keys[:half]:
        t = time.perf_counter()
        trigger(k)
        os.stat(f"{mp}/{k}/bin/tool")
        st.append((time.perf_counter() - t) * 1e3)
    for k in keys[half:]:
        t = time.perf_counter()
        trigger(k)
        read(f"{mp}/{k}/bin/tool")
        rd.append((time.perf_counter() - t) * 1e3)
    print(f"{statistics.median(st):.3f} {pct(st, 99):.3f} {statistics.median(rd):.3f} {pct(rd, 99):.3f}")
elif op == "sweep":
    want = dict(line.split() for line in open(arg))
    bad, each = 0, []
    t = time.perf_counter()
    for k in sorted(want):
        t1 = time.perf_counter()
        trigger(k)
        if hashlib.md5(read(f"{mp}/{k}/bin/tool")).hexdigest() != want[k]:
            bad += 1
            print(f"drv.py: wrong bytes in {mp}/{k}/bin/tool", file=sys.stderr)
        each.append(time.perf_counter() - t1)
    tenth = max(1, len(each) // 10)
    print(f"{time.perf_counter() - t:.3f} {bad} {sum(each[:tenth]) / tenth * 1e3:.3f} {sum(each[-tenth:]) / tenth * 1e3:.3f}")
PY

# ---- mounting ----------------------------------------------------------

PEER_MP=$MP/peer
QUASH_MP=$MP/quash
LOOPS_BEFORE=$OUT/loops.before

loops_now() { ls /sys/block | sed -n 's/^loop\([0-9]*\)$/\1/p' | LC_ALL=C sort; }

# remove the loop devices this run made that nothing uses any more
remove_new_loops() {
	[ -f "$LOOPS_BEFORE" ] || return 0
	loops_now | comm -13 "$LOOPS_BEFORE" - | python3 -c '
import fcntl, os, sys, time
fd = os.open("/dev/loop-control", os.O_RDWR)
left = 0
for n in map(int, sys.stdin.read().split()):
    for _ in range(250):
        try:
            fcntl.ioctl(fd, 0x4C81, n)   # LOOP_CTL_REMOVE
            break
        except OSError as e:
            if e.errno == 16:            # EBUSY: autoclear still detaching
                time.sleep(0.02)   # up to 5 s
                continue
            if e.errno in (2, 19):       # gone already
                break
            raise
    else:
        left += 1
if left:
    print(f"bench/catalog.sh: {left} loop devices still busy", file=sys.stderr)'
}

peer_down() {
	if mountpoint -q "$PEER_MP"; then
		umount -R "$PEER_MP" || umount -R -l "$PEER_MP"
	fi
	remove_new_loops
}

quash_down() {
	if mountpoint -q "$QUASH_MP"; then
		"$QUASH" umount "$QUASH_MP" 2>/dev/null || umount "$QUASH_MP" || umount -l "$QUASH_MP"
	fi
	for _ in $(seq 100); do mountpoint -q "$QUASH_MP" || break; sleep 0.05; done
}

cleanup() {
	quash_down
	peer_down
	rm -f "$LOOPS_BEFORE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# peer_up: the autofs mount point with a ghost directory per key, as a
# browse map makes it (here a tmpfs: this kernel has no autofs)
peer_up() {
	mkdir -p "$PEER_MP"
	mount -t tmpfs -o mode=0755,size=16m catalog-peer "$PEER_MP" &&
		(cd "$IMG" && ls) | sed 's/\.sqfs$//' | (cd "$PEER_MP" && xargs mkdir) &&
		ls "$PEER_MP" >/dev/null
}

quash_up() {   # quash_up VARIANT IMAGES
	local opts=${1#quash}
	mkdir -p "$QUASH_MP"
	"$QUASH" mount --catalog ${opts:+-o "${opts#,}"} "$2" "$QUASH_MP"
}

# The process that serves $QUASH_MP: the holder's server child (mount/holder.h), else a daemon with no holder.
quash_pid() {
	local pid
	pid=$(pgrep -f -- "mount-server $QUASH_MP\$" | head -1)
	[ -n "$pid" ] && { echo "$pid"; return; }
	for pid in $(pgrep -x quash); do
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- " $QUASH_MP\( \|$\)" && { echo "$pid"; return; }
	done
	return 1
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# kernel memory outside the page cache, KiB: "slab" (Slab + VmallocUsed +
# Percpu + KernelStack) and "used" (MemTotal - MemFree - Buffers - Cached -
# SReclaimable), after dropping the caches
kmem() {
	drop_caches
	awk '{v[$1] = $2} END {
		printf "%d %d\n", v["Slab:"] + v["VmallocUsed:"] + v["Percpu:"] + v["KernelStack:"],
			v["MemTotal:"] - v["MemFree:"] - v["Buffers:"] - v["Cached:"] - v["SReclaimable:"] }' /proc/meminfo
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.3f}')"; }

record() {   # record ROUND METRIC WHO VALUE UNIT
	printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
	printf '  %-44s %-24s %10s %s\n' "$2" "$3" "$4" "$5"
}

# diff -r of SAMPLE_DIFF images (outside the timing); the sweep checks
# bin/tool of every image
check_trees() {   # check_trees WHO MP
	local k bad=0
	for k in $(sed -n "1~$((N / SAMPLE_DIFF))p" "$SRC.md5" | cut -d' ' -f1); do
		[ "$1" = peer ] && ! mountpoint -q "$2/$k" && "$C/auto.catalog" "$k" >/dev/null &&
			mount -t squashfs -o loop,ro "$IMG/$k.sqfs" "$2/$k"
		diff -r "$SRC/$k" "$2/$k" >/dev/null || { bad=$((bad + 1)); echo "  diff -r $SRC/$k $2/$k: differs" >&2; }
	done
	echo "$bad"
}

# ---- one round of one mounter ------------------------------------------

round() {   # round R WHO
	local r=$1 who=$2 mp t0 t1 v pid kb ka ub ua bad first last st_med st_p99 rd_med rd_p99
	local keys=$OUT/keys.$r
	[ -f "$keys" ] || python3 -c "
import random, sys
r = random.Random(int(sys.argv[1]))
print('\n'.join(f'img-{i:05d}' for i in r.sample(range(int(sys.argv[2])), 2 * int(sys.argv[3]))))" "$r" "$N" "$SAMPLE" >"$keys"
	echo "round $r: $who"
	if [ "$who" = peer ]; then mp=$PEER_MP; loops_now >"$LOOPS_BEFORE"; else mp=$QUASH_MP; fi
	up() { if [ "$who" = peer ]; then peer_up; else quash_up "$who" "$IMG"; fi; }
	down() { if [ "$who" = peer ]; then peer_down; else quash_down; fi; }

	# start-up and the cold listing
	drop_caches
	t0=$(now); up || die "$who: mount failed"; t1=$(now)
	record "$r" "start-up until ls MP works" "$who" "$(secs "$t0" "$t1")" s
	drop_caches
	t0=$(now); v=$(ls "$mp" | wc -l); t1=$(now)
	[ "$v" -eq "$N" ] || die "$who: ls $mp lists $v names, not $N"
	record "$r" "ls MP, cold ($N names)" "$who" "$(secs "$t0" "$t1")" s

	# first accesses in images not opened yet
	drop_caches
	read -r st_med st_p99 rd_med rd_p99 < <(python3 "$DRV" "$who" "$mp" "$C/auto.catalog" sample "$keys") ||
		die "$who: the first accesses failed"
	[ -n "$rd_p99" ] || die "$who: the first accesses failed"
	record "$r" "first stat in an unopened image, median" "$who" "$st_med" ms
	record "$r" "first stat in an unopened image, p99" "$who" "$st_p99" ms
	record "$r" "first read in an unopened image, median" "$who" "$rd_med" ms
	record "$r" "first read in an unopened image, p99" "$who" "$rd_p99" ms
	down

	# the sweeps, from fresh mounts; memory from before the first mount
	read -r kb ub < <(kmem)
	[ "$who" = peer ] && loops_now >"$LOOPS_BEFORE"
	up || die "$who: mount failed"
	drop_caches
	read -r v bad first last < <(python3 "$DRV" "$who" "$mp" "$C/auto.catalog" sweep "$SRC.md5")
	[ -n "$last" ] || die "$who: the sweep failed"
	[ "$bad" -eq 0 ] || echo "  $who: $bad of $N reads had wrong bytes" >&2
	record "$r" "sweep: read bin/tool in all $N, cold" "$who" "$v" s
	record "$r" "  per image, first tenth of the sweep" "$who" "$first" ms
	record "$r" "  per image, last tenth of the sweep" "$who" "$last" ms
	record "$r" "sweep cold: wrong reads" "$who" "$bad" reads
	read -r v bad _ _ < <(python3 "$DRV" "$who" "$mp" "$C/auto.catalog" sweep "$SRC.md5")
	record "$r" "sweep again, warm" "$who" "$v" s
	[ "$bad" -eq 0 ] || echo "  $who: $bad of $N warm reads had wrong bytes" >&2
	bad=$(check_trees "$who" "$mp")
	record "$r" "diff -r of $SAMPLE_DIFF whole images: differing" "$who" "$bad" images
	sleep 2
	read -r ka ua < <(kmem)
	# the daemon's RSS (automount's is not counted: it cannot run here) and
	# the kernel's growth; the peer's cost is nearly all in the kernel
	if [ "$who" = peer ]; then
		record "$r" "images open (mounted) after the sweeps" "$who" "$(awk -v p="$mp/" 'index($5, p) == 1' /proc/self/mountinfo | wc -l)" images
		record "$r" "memory, $N opened-then-idle (quash: RSS; peer: kernel)" "$who" $(((ka - kb) / 1024)) MiB
	else
		pid=$(quash_pid) || die "$who: no daemon for $QUASH_MP"
		record "$r" "images open (mounted) after the sweeps" "$who" "$(grep -c $'\topen\t' "$mp/.quash-catalog")" images
		record "$r" "memory, $N opened-then-idle (quash: RSS; peer: kernel)" "$who" $(($(rss_kib "$pid") / 1024)) MiB
	fi
	record "$r" "kernel growth: Slab+VmallocUsed+Percpu+KernelStack" "$who" $(((ka - kb) / 1024)) MiB
	record "$r" "memory in use outside page cache, growth (noisy)" "$who" $(((ua - ub) / 1024)) MiB
	down

	# quash only: a 10,000-entry catalog before any image is opened
	if [ "$who" != peer ]; then
		quash_up "$who" "$IMG10K" || die "$who: mount of $IMG10K failed"
		v=$(ls "$QUASH_MP" | wc -l)
		[ "$v" -eq "$BIG" ] || die "$who: ls lists $v of $BIG names"
		pid=$(quash_pid) || die "$who: no daemon for $QUASH_MP"
		record "$r" "$BIG entries, none opened: daemon VmRSS" "$who" "$(python3 -c "print(f'{$(rss_kib "$pid") / 1024:.1f}')")" MiB
		quash_down
	fi
}

# ---- the table ---------------------------------------------------------

table() {
	python3 - "$RESULTS" "$QUASH_VARIANTS" "$CSV" <<'PY'
import csv, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    r, test, who, value, unit = line.rstrip("\n").split("\t")
    if test not in rows:
        rows[test] = {"unit": unit}
        order.append(test)
    rows[test].setdefault(who, {})[r] = float(value)
variants = sys.argv[2].split()

def rng(vals):
    lo, hi = min(vals), max(vals)
    return f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}" if lo < 0 else f"{lo:g}-{hi:g}"

out = csv.writer(open(sys.argv[3], "w", newline=""))
out.writerow(["metric", "round", "mounter", "value", "unit", "ratio_to_peer"])
print("| metric | autofs+kernel (replayed) | " + " | ".join(f"{v} | ratio" for v in variants) + " |")
print("|---|---|" + "---|---|" * len(variants))
for test in order:
    r = rows[test]
    u = r["unit"]
    peer = r.get("peer", {})
    cells = [f"{rng(peer.values())} {u}" if peer else "-"]
    for v in variants:
        q = r.get(v, {})
        if not q:
            cells += ["-", "-"]
            continue
        cells.append(f"{rng(q.values())} {u}")
        # ratio per round: quash's round R over the peer's round R
        ratios = [q[k] / peer[k] for k in q if peer.get(k, 0) > 0 and q[k] >= 0]
        cells.append(f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else "-")
        for k in sorted(q):
            out.writerow([test, k, v, q[k], u, f"{q[k] / peer[k]:.3f}" if peer.get(k, 0) > 0 and q[k] >= 0 else ""])
    for k in sorted(peer):
        out.writerow([test, k, "peer", peer[k], u, ""])
    print(f"| {test} | " + " | ".join(cells) + " |")
PY
}

make_images
: >"$RESULTS"
echo "kernel $(uname -r), $(nproc) cores; quash $("$QUASH" --version); $N images in $IMG ($(du -sh "$IMG" | cut -f1))"
if grep -qw autofs /proc/filesystems; then
	echo "note: this kernel has autofs; the peer is still the replayed automount work (see the header)"
else
	echo "the kernel has no autofs: the peer replays automount's work per first lookup (see the header)"
fi
for r in $(seq "$ROUNDS"); do
	for who in $QUASH_VARIANTS peer; do
		round "$r" "$who"
	done
done
echo
table | tee "$OUT/table.md"
echo
echo "ratios: quash's value over the peer's, round by round (lower is better); the range over $ROUNDS rounds"
echo "memory: after the sweeps and drop_caches; the peer's kernel growth counts from before its first mount"
