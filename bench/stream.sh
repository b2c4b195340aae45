#!/bin/bash
# bench/stream.sh - one reader streaming a cold file, against the machine's
# limit: `cat` of a 600 MB file of binaries (executables and shared
# libraries from /usr/bin and /usr/lib/x86_64-linux-gnu), packed by
# mksquashfs with zstd and 128 KiB blocks, through the kernel's squashfs,
# squashfuse_ll and quash mount (with and without decompress_ahead), the
# FUSE daemons pinned with taskset to 1 core and then to 2 (the kernel has
# no daemon: the reader is pinned instead, since it decompresses).
#
# The limit is the cores times one core's decompression speed for this
# image: the file's bytes over the CPU time (user + system) of
# `quash cat IMAGE /file` on one core, the best of REPEAT runs (CPU time,
# not elapsed, so that other work on the host counts less).  Each row is
# the file's bytes over the elapsed time of the cat, from a fresh mount
# with the image file itself read into the page cache first (so the disk
# is out of the picture) and the file's own pages dropped; rounds take
# turns (REPEAT), and the table shows the median, the range and the
# median's fraction of the limit, and the CPU it took per GB: the daemon's
# user + system time (/proc/PID/stat) and the reader's.  Root only; not
# part of `make check`.
#
#   bench/stream.sh                       about 3 minutes, once the image is made
#   CORES=2 MOUNTERS="quash quash,nodecompress_ahead" REPEAT=5 bench/stream.sh
#   env: CORES ("1 2") REPEAT (3) MOUNTERS ("kernel squashfuse_ll quash quash,nodecompress_ahead")
#        SIZE (600M) BENCH_DIR (/var/tmp/quash-bench) QUASH
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
B=${BENCH_DIR:-/var/tmp/quash-bench}
CORES=${CORES:-1 2}
REPEAT=${REPEAT:-3}
MOUNTERS=${MOUNTERS:-kernel squashfuse_ll quash quash,nodecompress_ahead}
SIZE=${SIZE:-600M}
MNT=$B/mnt-stream
IMG=$B/stream-$SIZE.sqfs
RAW=$B/stream.tsv

die() { echo "bench/stream.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (loop mounts, drop_caches)"
for t in mksquashfs squashfuse_ll fusermount3 taskset python3; do
	command -v $t >/dev/null || die "$t is missing (scripts/install-deps.sh)"
done
[ -x "$QUASH" ] || die "$QUASH is missing (make build)"
[ "$(nproc)" -ge "$(echo $CORES | tr ' ' '\n' | sort -n | tail -1)" ] || die "CORES asks for more cores than $(nproc)"
mkdir -p "$B" "$MNT"
trap 'mountpoint -q "$MNT" && { fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT"; }' EXIT

if [ ! -f "$IMG" ]; then
	rm -rf "$B/src-stream" && mkdir -p "$B/src-stream"
	find /usr/bin /usr/lib/x86_64-linux-gnu -type f \( -perm -u+x -o -name '*.so*' \) -size +1k 2>/dev/null |
		sort | xargs cat 2>/dev/null | head -c "$SIZE" >"$B/src-stream/file"
	[ "$(stat -c %s "$B/src-stream/file")" -eq "$(numfmt --from=iec "$SIZE")" ] ||
		die "not $SIZE of binaries under /usr"
	mksquashfs "$B/src-stream" "$IMG" -comp zstd -b 128K -noappend -quiet -no-progress || die "mksquashfs failed"
	rm -rf "$B/src-stream"
fi
BYTES=$(numfmt --from=iec "$SIZE")

# One core's speed: bytes per CPU second of a one-threaded decompression of every block.
one_core() {
	local best=0 t
	cat "$IMG" >/dev/null
	for _ in $(seq "$REPEAT"); do
		t=$( { /usr/bin/time -f '%U %S' taskset -c 0 "$QUASH" cat "$IMG" /file >/dev/null; } 2>&1 | tail -1)
		best=$(python3 -c "u, s = map(float, '$t'.split()); print(max($best, $BYTES / 1e6 / (u + s)))")
	done
	echo "$best"
}

fresh() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cat "$IMG" >/dev/null
}

# daemon_cpu PATTERN: user + system seconds of the newest process whose command line matches
daemon_cpu() {
	local pid
	pid=$(pgrep -n -f "$1") || { echo 0; return; }
	awk '{print ($14 + $15) / 100}' "/proc/$pid/stat"
}

# run MOUNTER CORES: one cat of the file; prints MB/s and the CPU seconds per GB
# (the daemon's and the reader's together)
run() {
	local who=$1 cores=$2 cpus=0-$(($2 - 1)) pin=() opts= s e t d=0
	case $who in
	quash,*) opts=${who#quash,} ;;
	esac
	fresh
	case $who in
	kernel) mount -o loop,ro "$IMG" "$MNT" || die "loop mount failed"; pin=(taskset -c "$cpus") ;;
	squashfuse_ll) taskset -c "$cpus" squashfuse_ll "$IMG" "$MNT" || die "squashfuse_ll failed" ;;
	quash*) taskset -c "$cpus" "$QUASH" mount ${opts:+-o "$opts"} "$IMG" "$MNT" || die "quash mount failed" ;;
	esac
	s=$(date +%s.%N)
	t=$( { /usr/bin/time -f '%U %S' "${pin[@]}" cat "$MNT/file" >/dev/null; } 2>&1 | tail -1) ||
		die "cat through $who failed"
	e=$(date +%s.%N)
	case $who in
	squashfuse_ll) d=$(daemon_cpu "squashfuse_ll $IMG $MNT") ;;
	quash*) d=$(daemon_cpu "mount-server $MNT\$") ;;      # the server, not its holder
	esac
	if [ "$who" = kernel ]; then umount "$MNT"; else fusermount3 -u "$MNT"; fi
	python3 -c "u, s = map(float, '$t'.split()); print(f'{$BYTES / 1e6 / ($e - $s):.0f}\t{(u + s + $d) / ($BYTES / 1e9):.2f}')"
}

ONE=$(one_core)
echo "one core decompresses this image at $(printf %.0f "$ONE") MB/s (CPU time, best of $REPEAT)"
: >"$RAW"
for round in $(seq "$REPEAT"); do
	for cores in $CORES; do
		for who in $MOUNTERS; do
			v=$(run "$who" "$cores") || exit 1
			printf '%s\t%s\t%s\n' "$cores" "$who" "$v" >>"$RAW"
			echo "round $round: $cores core(s) $who ${v%%$'\t'*} MB/s, ${v#*$'\t'} CPU s/GB" >&2
		done
	done
done

python3 - "$RAW" "$ONE" "$SIZE" <<'EOF'
import statistics, sys
raw, one, size = sys.argv[1], float(sys.argv[2]), sys.argv[3]
rows, cpu, order = {}, {}, []
for line in open(raw):
    cores, who, v, c = line.split("\t")
    if (cores, who) not in rows:
        order.append((cores, who))
    rows.setdefault((cores, who), []).append(float(v))
    cpu.setdefault((cores, who), []).append(float(c))
print(f"\ncat of a {size} file of binaries (zstd, 128 KiB blocks); limit = cores x {one:.0f} MB/s\n")
print("| cores | mounter | MB/s (median) | range | limit | fraction of the limit | CPU s per GB (range) |")
print("|---|---|---|---|---|---|---|")
for cores, who in order:
    v, c = rows[(cores, who)], cpu[(cores, who)]
    limit = int(cores) * one
    m = statistics.median(v)
    print(f"| {cores} | {who} | {m:.0f} | {min(v):.0f}-{max(v):.0f} | {limit:.0f} | {m / limit:.2f} "
          f"| {statistics.median(c):.2f} ({min(c):.2f}-{max(c):.2f}) |")
EOF
