#!/bin/bash
# bench/scaling.sh - how quash mount scales with readers and with the cores
# its daemon may use, and what each read costs in CPU, beside the kernel's
# squashfs and squashfuse_ll in one run.
#
#   scaling: fio randread 4k, buffered, at JOBS readers (1 2 4 8 16), each
#       reader its own slice of the file, every 4 KiB of it once, from a cold
#       page cache (so every block is decompressed once, by the kernel or by
#       the daemon); the FUSE daemons pinned with taskset to 1 core and then
#       to 2 (the kernel has no daemon: its readers do the work)
#   cost: for each run, the CPU it took per 4 KiB read: the daemon's user +
#       system time (from /proc/PID/stat) and the readers' own (getrusage of
#       fio), in microseconds, and their sum against the kernel's sum; and
#       the same for a cold `ls -lR` of TREE (a Python installation packed by
#       mksquashfs with its defaults), per entry listed
#
# The image is made by Debian's mksquashfs with its defaults (gzip, 128 KiB
# blocks) from DATA_SIZE bytes of binaries and text under /usr; the image
# file is read once before each run so the disk is out of the picture, and
# each run starts from a fresh mount with caches dropped.  Rounds take
# turns (REPEAT), and the table shows the median of each cell and its range.
# Root only; not part of `make check`.
#
#   bench/scaling.sh                     about 4 minutes per round
#   JOBS="1 4 16" CORES="1" REPEAT=1 bench/scaling.sh
#   bench/scaling.sh ls                 only the ls -lR cost
#   env: JOBS ("1 2 4 8 16") CORES ("1 2") REPEAT (3) DATA_SIZE (512M)
#        MOUNTERS ("kernel squashfuse_ll quash") BENCH_DIR (/var/tmp/quash-bench) QUASH
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
B=${BENCH_DIR:-/var/tmp/quash-bench}
JOBS=${JOBS:-1 2 4 8 16}
CORES=${CORES:-1 2}
REPEAT=${REPEAT:-3}
DATA_SIZE=${DATA_SIZE:-512M}
MOUNTERS=${MOUNTERS:-kernel squashfuse_ll quash}
TREE=${TREE:-/root/.pyenv/versions/3.11.7}
[ -d "$TREE" ] || TREE=/usr/lib/python3
WHAT=${1:-all}
MNT=$B/mnt-scaling
IMG=$B/scaling-$DATA_SIZE.sqfs
RAW=$B/scaling.tsv

die() { echo "bench/scaling.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (loop mounts, drop_caches)"
for t in fio mksquashfs squashfuse_ll fusermount3 taskset python3; do
	command -v $t >/dev/null || die "$t is missing (scripts/install-deps.sh)"
done
[ -x "$QUASH" ] || die "$QUASH is missing (make build)"
mkdir -p "$B" "$MNT"
trap 'mountpoint -q "$MNT" && { fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT"; }' EXIT

TREE_IMG=$B/scaling-tree.sqfs
[ -f "$TREE_IMG" ] || mksquashfs "$TREE" "$TREE_IMG" -noappend -quiet -no-progress || die "mksquashfs failed"
if [ ! -f "$IMG" ]; then
	rm -rf "$B/src-scaling" && mkdir -p "$B/src-scaling"
	find /usr/lib /usr/share /usr/bin -type f -size +1k 2>/dev/null | sort |
		xargs cat 2>/dev/null | head -c "$DATA_SIZE" >"$B/src-scaling/file"
	mksquashfs "$B/src-scaling" "$IMG" -noappend -quiet -no-progress || die "mksquashfs failed"
	rm -rf "$B/src-scaling"
fi

# mount_pinned MOUNTER CORES [IMAGE]: the daemon (and every thread it starts) on the first CORES CPUs.
mount_pinned() {
	local cpus
	cpus=$(python3 -c 'import os, sys; print(",".join(map(str, sorted(os.sched_getaffinity(0))[:int(sys.argv[1])])))' "$2")
	case $1 in
	kernel) mount -t squashfs -o loop,ro "${3:-$IMG}" "$MNT" ;;
	squashfuse_ll) taskset -c "$cpus" squashfuse_ll "${3:-$IMG}" "$MNT" ;;
	quash) taskset -c "$cpus" "$QUASH" mount "${3:-$IMG}" "$MNT" ;;
	*) die "unknown mounter $1" ;;
	esac
}

unmount() {
	if [ "$1" = kernel ]; then umount "$MNT"; else fusermount3 -u "$MNT"; fi
	for _ in $(seq 100); do mountpoint -q "$MNT" || break; sleep 0.05; done
}

# The daemon serving MNT: the newest process of that name.
daemon_pid() {
	case $1 in
	kernel) echo "" ;;
	squashfuse_ll) pgrep -n -x squashfuse_ll ;;
	quash) pgrep -P "$(pgrep -n -f "^$QUASH mount ")" -f mount-server ;;    # the server, not its holder
	esac
}

# CPU seconds (user + system) a process has used; 0 for none.
cpu_of() {
	[ -n "$1" ] || { echo 0; return; }
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

# run_fio JOBS: "IOPS READS READER_CPU_S" of one cold pass, fio's rusage included.
run_fio() {
	python3 - "$MNT/file" "$1" <<'EOF'
import json, os, resource, subprocess, sys
path, jobs = sys.argv[1], int(sys.argv[2])
slice_ = os.stat(path).st_size // jobs // 4096 * 4096
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(["fio", "--name=scale", f"--filename={path}", "--rw=randread", "--bs=4k",
                      "--ioengine=psync", f"--numjobs={jobs}", f"--size={slice_}", f"--offset_increment={slice_}",
                      "--group_reporting", "--readonly", "--output-format=json"],
                     capture_output=True, text=True, check=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
r = json.loads(out)["jobs"][0]["read"]
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(round(r["iops"]), r["total_ios"], f"{cpu:.3f}")
EOF
}

# run_ls: "ENTRIES CPU_S" of ls -lR over MNT, ls's rusage included.
run_ls() {
	python3 - "$MNT" <<'EOF'
import resource, subprocess, sys
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(["ls", "-lR", sys.argv[1]], capture_output=True, text=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
entries = sum(1 for l in out.splitlines() if l[:1] in "-dlcbps" and not l.startswith("total"))
print(entries, f"{(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime):.3f}")
EOF
}

# bench_ls: the CPU a cold ls -lR takes per entry, daemon and ls together, REPEAT rounds.
bench_ls() {
	local round who pid d0 d1 entries lcpu
	echo
	echo "cold ls -lR of $TREE (mksquashfs defaults), CPU in microseconds per entry"
	for round in $(seq "$REPEAT"); do
		for who in $MOUNTERS; do
			mount_pinned "$who" 2 "$TREE_IMG" || die "$who: mount failed"
			sync; echo 3 >/proc/sys/vm/drop_caches
			cat "$TREE_IMG" >/dev/null
			pid=$(daemon_pid "$who")
			d0=$(cpu_of "$pid")
			read -r entries lcpu < <(run_ls)
			d1=$(cpu_of "$pid")
			unmount "$who"
			python3 -c "d = ($d1 - $d0) * 1e6 / $entries; l = $lcpu * 1e6 / $entries
print(f'  round $round  {\"$who\":<14} {$entries} entries  daemon {d:6.1f}  ls {l:6.1f}  total {d + l:6.1f}')"
		done
	done
}

[ "$WHAT" = ls ] && { bench_ls; exit 0; }
: >"$RAW"
for round in $(seq "$REPEAT"); do
	for jobs in $JOBS; do
		for who in $MOUNTERS; do
			for cores in $CORES; do
				[ "$who" = kernel ] && [ "$cores" != "${CORES%% *}" ] && continue
				mount_pinned "$who" "$cores" || die "$who: mount failed"
				sync; echo 3 >/proc/sys/vm/drop_caches
				cat "$IMG" >/dev/null
				pid=$(daemon_pid "$who")
				d0=$(cpu_of "$pid")
				read -r iops reads rcpu < <(run_fio "$jobs")
				d1=$(cpu_of "$pid")
				unmount "$who"
				label=$who
				[ "$who" = kernel ] || label="$who, $cores core$([ "$cores" = 1 ] || echo s)"
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$jobs" "$label" "$iops" \
					"$(python3 -c "print(f'{($d1 - $d0) * 1e6 / max($reads, 1):.2f}')")" \
					"$(python3 -c "print(f'{$rcpu * 1e6 / max($reads, 1):.2f}')")" >>"$RAW"
				printf '  round %s, %2s jobs, %-26s %8s IOPS\n' "$round" "$jobs" "$label" "$iops"
			done
		done
	done
done

python3 - "$RAW" "$DATA_SIZE" <<'EOF'
import collections, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
cell = collections.defaultdict(list)
for rnd, jobs, who, iops, dcpu, rcpu in rows:
    cell[(int(jobs), who)].append((float(iops), float(dcpu), float(rcpu)))
def med(v): return statistics.median(v)
def rng(v): return f"{min(v):.0f}-{max(v):.0f}" if len(v) > 1 else f"{v[0]:.0f}"
who_order = list(dict.fromkeys(w for _, w in sorted(cell, key=lambda k: k[0])))
print(f"\nfio randread 4k, buffered, one cold pass over a {sys.argv[2]} file; medians over {max(len(v) for v in cell.values())} "
      "rounds (range); CPU in microseconds per 4 KiB read")
print(f"| jobs | mounter | IOPS | x kernel | daemon CPU | reader CPU | total CPU | x kernel |")
print("|---:|---|---:|---:|---:|---:|---:|---:|")
for jobs in sorted({j for j, _ in cell}):
    k = cell.get((jobs, "kernel"))
    kiops = med([v[0] for v in k]) if k else None
    ktot = med([v[1] + v[2] for v in k]) if k else None
    for who in who_order:
        v = cell.get((jobs, who))
        if not v:
            continue
        iops, tot = [x[0] for x in v], [x[1] + x[2] for x in v]
        print(f"| {jobs} | {who} | {med(iops):.0f} ({rng(iops)}) | "
              f"{med(iops) / kiops:.2f} | {med([x[1] for x in v]):.1f} | {med([x[2] for x in v]):.1f} | "
              f"{med(tot):.1f} | {med(tot) / ktot:.2f} |" if kiops else f"| {jobs} | {who} | {med(iops):.0f} |")
EOF
bench_ls
