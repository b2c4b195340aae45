#!/bin/bash
# bench/holder.sh - what readers see when the FUSE daemon dies, squashfuse_ll
# beside quash, and what the holder costs the ordinary read path.
#
#   kill: readers (random 4 KiB reads, each with the file's page cache
#       dropped first, compared with the kernel's mount of the same image;
#       READERS processes) run for SECONDS while the daemon is killed with
#       SIGKILL every KILL_EVERY seconds: squashfuse_ll's process, quash's
#       server, and a catalog's server (the image in a --catalog
#       directory).  Reported: reads, reader errors (wrong bytes or a failed
#       read), and for quash each takeover, from the holder's log (the
#       server's death seen to the new server serving) and from the readers
#       (the longest read in each second that had a kill, a death to its
#       first answered request, minus at most one read).
#   cost: fio randread 4k (4 jobs, buffered, invalidate=1) on one large
#       file: quash against quash -o noholder and the kernel, and a catalog
#       held against one with -o noholder, in interleaved rounds, the
#       ratios each round.
#
# The image is made by Debian's mksquashfs with its defaults.  Root only;
# not part of `make check`.
#
#   bench/holder.sh                     about 2 minutes
#   env: SECONDS_RUN (20) KILL_EVERY (2) READERS (2) REPEAT (3) BENCH_DIR QUASH
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
B=${BENCH_DIR:-/var/tmp/quash-bench}/holder
SECS=${SECONDS_RUN:-20}
KILL_EVERY=${KILL_EVERY:-2}
READERS=${READERS:-2}
REPEAT=${REPEAT:-3}

die() { echo "bench/holder.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (loop mounts, drop_caches)"
for t in fio mksquashfs squashfuse_ll fusermount3 python3; do
	command -v $t >/dev/null || die "$t is missing (scripts/install-deps.sh)"
done
[ -x "$QUASH" ] || die "$QUASH is missing (make build)"
mkdir -p "$B/k" "$B/m" "$B/cat"
trap 'for d in "$B/m" "$B/k"; do mountpoint -q "$d" && umount -l "$d"; done' EXIT

if [ ! -f "$B/img.sqfs" ]; then
	rm -rf "$B/src" && mkdir -p "$B/src"
	find /usr/lib /usr/bin -type f -size +100k 2>/dev/null | sort | head -200 |
		xargs cat 2>/dev/null | head -c 256M >"$B/src/file"
	mksquashfs "$B/src" "$B/img.sqfs" -noappend -quiet -no-progress || die "mksquashfs failed"
	rm -rf "$B/src"
fi
mountpoint -q "$B/k" || mount -t squashfs -o loop,ro "$B/img.sqfs" "$B/k" || die "kernel mount failed"
cat "$B/img.sqfs" >/dev/null
ln -f "$B/img.sqfs" "$B/cat/img.sqfs"

echo "image: $(du -h "$B/img.sqfs" | cut -f1) (mksquashfs defaults), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kill: $READERS readers for $SECS s, the daemon killed (SIGKILL) every $KILL_EVERY s"

# reader SECS PATH: random 4 KiB reads of PATH against the kernel's; prints "reads errors" and the longest read per second.
reader() {
	python3 - "$2" "$B/k/file" "$1" <<-'EOF'
	import os, random, sys, time
	q, k = os.open(sys.argv[1], os.O_RDONLY), os.open(sys.argv[2], os.O_RDONLY)
	size, secs = os.fstat(k).st_size, float(sys.argv[3])
	reads = errors = 0
	t0 = time.monotonic()
	worst = {}
	while time.monotonic() - t0 < secs:
	    off = random.randrange(0, size - 4096) & ~4095
	    a = time.monotonic()
	    try:
	        os.posix_fadvise(q, 0, 0, os.POSIX_FADV_DONTNEED)
	        ok = os.pread(q, 4096, off) == os.pread(k, 4096, off)
	    except OSError:
	        ok = False
	        time.sleep(0.001)
	    b = time.monotonic()
	    sec = int(a - t0)
	    worst[sec] = max(worst.get(sec, 0), b - a)
	    reads += 1
	    errors += not ok
	print(reads, errors, " ".join(f"{s}:{worst[s] * 1000:.1f}" for s in sorted(worst)))
	EOF
}

kill_run() {   # kill_run MOUNTER
	local who=$1 pids=() t0 target file=$B/m/file
	rm -f "$B/log" "$B/out."*
	case $who in
	squashfuse_ll) squashfuse_ll "$B/img.sqfs" "$B/m" ;;
	quash) "$QUASH" mount -o log="$B/log" "$B/img.sqfs" "$B/m" ;;
	quash-catalog) "$QUASH" mount --catalog -o log="$B/log" "$B/cat" "$B/m"; file=$B/m/img/file ;;
	esac
	for i in $(seq "$READERS"); do reader "$SECS" "$file" >"$B/out.$i" & pids+=($!); done
	t0=$SECONDS
	local kills=()
	while [ $((SECONDS - t0)) -lt $((SECS - 1)) ]; do
		sleep "$KILL_EVERY"
		case $who in
		squashfuse_ll) target=$(pgrep -f "squashfuse_ll $B/img.sqfs" | head -1) ;;
		quash*) target=$(pgrep -f "mount-server $B/m" | head -1) ;;
		esac
		[ -n "$target" ] && kill -KILL "$target" && kills+=($((SECONDS - t0)))
	done
	wait "${pids[@]}"
	python3 - "$who" "${#kills[@]}" "$B" "$READERS" <<-'EOF'
	import re, statistics, sys
	who, kills, b, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
	reads = errors = 0
	stalls = []
	for i in range(1, n + 1):
	    parts = open(f"{b}/out.{i}").read().split()
	    reads += int(parts[0]); errors += int(parts[1])
	    stalls += [float(p.split(":")[1]) for p in parts[2:]]
	line = f"{who:14} kills {kills:3}  reads {reads:7}  errors {errors:7}"
	if who.startswith("quash"):
	    try:
	        t = [float(x) for x in re.findall(r"took over ([0-9.]+) ms", open(f"{b}/log").read())]
	    except OSError:
	        t = []
	    if t:
	        q = statistics.quantiles(t, n=10) if len(t) > 1 else t
	        line += f"  takeover (holder) ms: min {min(t):.1f} median {statistics.median(t):.1f} p90 {q[-1]:.1f} max {max(t):.1f}"
	    worst = sorted(stalls, reverse=True)[:kills]
	    if worst:
	        line += f"; readers' worst read per kill ms: {min(worst):.1f}-{max(worst):.1f}"
	print(line)
	EOF
	fusermount3 -u -z "$B/m" 2>/dev/null || umount -l "$B/m"
	sleep 0.3
}

kill_run squashfuse_ll
kill_run quash
kill_run quash-catalog

echo
echo "cost: fio randread 4k, 4 jobs, 10 s; IOPS, $REPEAT interleaved rounds"
fio_iops() {   # fio_iops FILE
	fio --name=h --filename="$1" --rw=randread --bs=4k --ioengine=psync --numjobs=4 --runtime=10 \
		--time_based --group_reporting --readonly --invalidate=1 --output-format=json 2>/dev/null |
		python3 -c 'import json, sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}
for r in $(seq "$REPEAT"); do
	line="round $r:"
	declare -A v=()
	for who in kernel quash noholder catalog catalog-noholder; do
		file=$B/m/file
		case $who in
		kernel) mount -t squashfs -o loop,ro "$B/img.sqfs" "$B/m" ;;
		quash) "$QUASH" mount "$B/img.sqfs" "$B/m" ;;
		noholder) "$QUASH" mount -o noholder "$B/img.sqfs" "$B/m" ;;
		catalog) "$QUASH" mount --catalog "$B/cat" "$B/m"; file=$B/m/img/file ;;
		catalog-noholder) "$QUASH" mount --catalog -o noholder "$B/cat" "$B/m"; file=$B/m/img/file ;;
		esac
		echo 3 >/proc/sys/vm/drop_caches
		cat "$B/img.sqfs" >/dev/null
		v[$who]=$(fio_iops "$file")
		umount "$B/m" 2>/dev/null || fusermount3 -u "$B/m"
		sleep 0.3
		line="$line $who ${v[$who]}"
	done
	echo "$line  quash/noholder $(python3 -c "print(f'{${v[quash]} / ${v[noholder]}:.2f}')")  quash/kernel $(python3 -c "print(f'{${v[quash]} / ${v[kernel]}:.2f}')")  catalog/noholder $(python3 -c "print(f'{${v[catalog]} / ${v[catalog-noholder]}:.2f}')")"
done
