#!/bin/bash
# bench/mount.sh - the kernel's squashfs (loop), Debian's squashfuse_ll and
# quash mount, side by side in one run, on the same images:
#
#   fio randread 4k and read (sequential) 64k, 4 jobs, libaio, RUNTIME seconds,
#       on a 1 GiB file of random data and one of compressible data
#       (binaries and text from /usr, zstd, 128 KiB blocks); and the cold
#       pass alone: randread 4k, each job COLD_IO bytes from a cold cache
#   ls -lR and md5sum of every file of a large real tree (TREE: a Python
#       installation with its site-packages), cold (caches dropped, fresh
#       mount) and warm (again, same mount), on the image mksquashfs makes
#       with its defaults (gzip, 128 KiB blocks), as most images are made
#   mount, run /bin/true from the image, unmount: CYCLES times
#   compiler: g++ -fsyntax-only of a file including common C++ headers,
#       every header read from an image of /usr/include (Compiler Explorer's
#       case), cold (one run) and warm (median of 5), and the FUSE requests
#       a warm run still sends to quash (its counters, SIGUSR1)
#   xattr: ls -lR cold and warm of XTREE (about 5,800 entries) packed three
#       ways: one user.* xattr on one file, a security.selinux label on
#       every entry (a root file system from an SELinux host), -no-xattrs
#   latency (LAT_MOUNTERS, default with quash over io_uring as well): ls -lR
#       cold and warm; Python started from the tree image with a heavy
#       import set, cold (one run; for quash also its daemon's CPU from the
#       mount to the end of that run) and warm (median of 5); and one FUSE
#       round trip: the mean time of a stat() of a name not in the image,
#       20,000 different names (each one LOOKUP; the kernel answers in VFS)
#
# Every measurement starts from a fresh mount after `echo 3 > drop_caches`.
# For fio the image file itself is then read once, so that the disk is out
# of the picture and the filesystems are compared (the kernel's loop device
# reads through the same page cache); the tree tests stay cold throughout.
# It prints a table of ratios against the kernel, and writes it with the raw
# numbers to $OUT/results.tsv and $OUT/table.md, and the ratios to $CSV
# (bench/results/mount.csv, which bench/plot.sh turns into a bar chart).
# Root only; not part of `make check`.
#
#   bench/mount.sh                      everything, about 25 minutes
#   MOUNTERS="kernel quash quash,threads=3" bench/mount.sh fio
#                                       quash,OPTS is quash with -o OPTS;
#                                       /PATH/TO/quash another build of it
#   bench/mount.sh fio cycle            only the fio rows and the cycle
#   bench/mount.sh latency              only the latency rows (about 3 minutes)
#   REPEAT=7 bench/mount.sh startup     only the latency rows' Python start-up
#   REPEAT=7 bench/mount.sh xattr       only the xattr rows (about 2 minutes)
#   bench/mount.sh compiler             only the compiler rows (about 1 minute)
#   MOUNTERS="kernel quash quash,verity" LAT_MOUNTERS="kernel quash quash,verity" \
#   RUNTIME=10 FIO_REPEAT=2 RWS="randread:4k read:64k" bench/mount.sh fio latency
#                                       quash with verity: quash,verity is quash
#                                       on a copy of each image with its dm-verity
#                                       tree appended (quash verity format), mounted
#                                       with -o verity=ROOT; the table adds each
#                                       verity mounter's ratio to the same mounter
#                                       without it
# Why 30 s: each fio job reads every 4 KiB of the file once per pass and
# drops the file's cached pages when a pass ends (fio's invalidate=1), so a
# time-based run alternates cold warm-ups, bound by decompression, with warm
# passes at page-cache speed.  A run of a few seconds holds about one pass
# of the kernel's, and its result depends on where in the next warm-up it
# stops.  The cold row measures the warm-up alone.
# FIO_REPEAT (1) runs the fio rows that many rounds, the mounters taking turns.
# The tree and cycle rows are short and swing with the disk and the host,
# so they run REPEAT times, the mounters taking turns, and the table shows
# medians.
# Repeated rows show the median, and below the table each one's range.
#   env: RUNTIME (30) FIO_REPEAT (1) COLD_IO (64M) CYCLES (20) REPEAT (3) TREE XTREE BENCH_DIR (/var/tmp/quash-bench) QUASH
#        DATA ("random compressible") RWS ("randread:4k read:64k coldread:4k") CSV
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
B=${BENCH_DIR:-/var/tmp/quash-bench}
OUT=${OUT:-$B/out}
RUNTIME=${RUNTIME:-30}
COLD_IO=${COLD_IO:-64M}
CYCLES=${CYCLES:-20}
REPEAT=${REPEAT:-3}
FIO_REPEAT=${FIO_REPEAT:-1}
MOUNTERS=${MOUNTERS:-kernel squashfuse_ll quash}
LAT_MOUNTERS=${LAT_MOUNTERS:-kernel squashfuse_ll quash quash,uring}
DATA=${DATA:-random compressible}
RWS=${RWS:-randread:4k read:64k coldread:4k}
TREE=${TREE:-/root/.pyenv/versions/3.11.7}
[ -d "$TREE" ] || TREE=/usr/lib/python3
XTREE=${XTREE:-/usr/share/doc}
CSV=${CSV:-$top/bench/results/mount.csv}
WHAT=${*:-all}
MNT=$B/mnt
SIZE=$((1 << 30))

die() { echo "bench/mount.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (loop mounts, drop_caches)"
for t in fio mksquashfs squashfuse_ll fusermount3 python3 setfattr; do
	command -v $t >/dev/null || die "$t is missing (scripts/install-deps.sh)"
done
[ -x "$QUASH" ] || die "$QUASH is missing (make build)"
mkdir -p "$B" "$OUT" "$MNT" "$(dirname "$CSV")"

# ---- images, made once -------------------------------------------------

make_xattr_images() {
	# XTREE three ways; cp -r copies no xattrs, so XTREE's own count for nothing.
	if [ ! -f "$B/xattr-one.sqfs" ] || [ ! -f "$B/xattr-labels.sqfs" ] || [ ! -f "$B/xattr-none.sqfs" ]; then
		rm -rf "$B/src-xattr" && mkdir -p "$B/src-xattr"
		cp -r "$XTREE/." "$B/src-xattr/"
		setfattr -n user.bench -v one "$(find "$B/src-xattr" -type f | sort | sed -n 100p)"
		mksquashfs "$B/src-xattr" "$B/xattr-one.sqfs" -comp zstd -noappend -quiet -no-progress
		mksquashfs "$B/src-xattr" "$B/xattr-none.sqfs" -comp zstd -noappend -quiet -no-progress -no-xattrs
		find "$B/src-xattr" -print0 | xargs -0 setfattr -h -n security.selinux -v system_u:object_r:usr_t:s0
		mksquashfs "$B/src-xattr" "$B/xattr-labels.sqfs" -comp zstd -noappend -quiet -no-progress
		rm -rf "$B/src-xattr"
	fi
}

make_images() {
	case " $WHAT " in *" all "*|*" xattr "*) make_xattr_images ;; esac
	[ "$WHAT" = xattr ] && return
	[ -f "$B/include.sqfs" ] || mksquashfs /usr/include "$B/include.sqfs" -noappend -quiet -no-progress
	[ "$WHAT" = compiler ] && return
	# a name of its own: an older bench dir's tree.sqfs is the zstd one below
	if [ ! -f "$B/tree-defaults.sqfs" ]; then
		mksquashfs "$TREE" "$B/tree-defaults.sqfs" -noappend -quiet -no-progress
	fi
	[ "$WHAT" = tree ] && return
	if [ ! -f "$B/random.sqfs" ]; then
		mkdir -p "$B/src-random"
		head -c $SIZE /dev/urandom >"$B/src-random/file"
		mksquashfs "$B/src-random" "$B/random.sqfs" -comp zstd -b 128K -noappend -quiet -no-progress
		rm -rf "$B/src-random"
	fi
	if [ ! -f "$B/compressible.sqfs" ]; then
		mkdir -p "$B/src-comp"
		find /usr/lib /usr/share /usr/bin -type f -size +1k 2>/dev/null | sort |
			xargs cat 2>/dev/null | head -c $SIZE >"$B/src-comp/file"
		[ "$(stat -c %s "$B/src-comp/file")" -eq $SIZE ] || die "not 1 GiB of data under /usr"
		mksquashfs "$B/src-comp" "$B/compressible.sqfs" -comp zstd -b 128K -noappend -quiet -no-progress
		rm -rf "$B/src-comp"
	fi
	# the latency rows' image
	if [ ! -f "$B/tree.sqfs" ]; then
		mksquashfs "$TREE" "$B/tree.sqfs" -comp zstd -b 128K -noappend -quiet -no-progress
	fi
	if [ ! -f "$B/true.sqfs" ]; then
		rm -rf "$B/src-true" && mkdir -p "$B/src-true/bin"
		cp /bin/true "$B/src-true/bin/"
		for lib in $(ldd /bin/true | grep -o '/[^ ]*'); do
			mkdir -p "$B/src-true$(dirname "$lib")"
			cp -L "$lib" "$B/src-true$lib"
		done
		mksquashfs "$B/src-true" "$B/true.sqfs" -comp zstd -noappend -quiet -no-progress
		rm -rf "$B/src-true"
	fi
}

# IMAGE.verity.sqfs: IMAGE with its dm-verity tree appended, and its root
# hash in IMAGE.verity.root; the squashfs part is IMAGE's, byte for byte.
verity_image() {   # verity_image IMAGE: the copy's path, made if missing
	local img=$1 v=${1%.sqfs}.verity.sqfs
	if [ ! -f "$v" ] || [ ! -s "${v%.sqfs}.root" ] || [ "$img" -nt "$v" ]; then
		cp "$img" "$v.tmp" || die "cannot copy $img"
		"$QUASH" verity format "$v.tmp" | awk '/^Root hash:/ { print $3 }' >"${v%.sqfs}.root"
		[ -s "${v%.sqfs}.root" ] || die "quash verity format $v.tmp failed"
		mv "$v.tmp" "$v"
	fi
	echo "$v"
}

# Verity copies of the images the run reads, made before any timing.
make_verity_images() {
	local img
	case " $MOUNTERS $LAT_MOUNTERS " in *verity*) ;; *) return ;; esac
	for img in "$B"/random.sqfs "$B"/compressible.sqfs "$B"/tree.sqfs "$B"/true.sqfs "$B"/include.sqfs \
		"$B"/xattr-*.sqfs; do
		case $img in *.verity.sqfs) continue ;; esac
		[ -f "$img" ] && verity_image "$img" >/dev/null
	done
}

# ---- mounting ----------------------------------------------------------

mount_as() {   # mount_as MOUNTER IMAGE DIR
	local who=$1 img=$2 dir=$3 opts
	case ,$who, in
	,quash,*verity*)
		# the verity token of the options becomes verity=ROOT, on the image's verity copy
		img=$(verity_image "$img")
		opts=$(echo ",${who#quash,}," | sed "s/,verity,/,verity=$(cat "${img%.sqfs}.root"),/; s/^,//; s/,\$//")
		"$QUASH" mount -o "$opts" "$img" "$dir"
		return ;;
	esac
	case $who in
	kernel) mount -t squashfs -o loop,ro "$img" "$dir" ;;
	squashfuse_ll) squashfuse_ll "$img" "$dir" ;;
	quash) "$QUASH" mount "$img" "$dir" ;;
	quash,*) "$QUASH" mount -o "${who#quash,}" "$img" "$dir" ;;
	/*) "$who" mount "$img" "$dir" ;;      # another build of quash, to compare two commits
	*) die "unknown mounter $who" ;;
	esac
}

unmount_as() {   # unmount_as MOUNTER DIR
	case $1 in
	kernel) umount "$2" ;;
	*) fusermount3 -u "$2" ;;
	esac
	# the FUSE daemon may still be exiting: wait until nothing holds the image
	for _ in $(seq 100); do mountpoint -q "$2" || break; sleep 0.05; done
}

# quash,uring needs the kernel's switch on for the run (root); it is put back after.
URING_SWITCH=/sys/module/fuse/parameters/enable_uring
URING_WAS=$(cat "$URING_SWITCH" 2>/dev/null)
[ -n "$URING_WAS" ] && echo 1 >"$URING_SWITCH"

cleanup() {
	mountpoint -q "$MNT" && { fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT"; }
	[ -n "$URING_WAS" ] && echo "$URING_WAS" >"$URING_SWITCH"
}
trap cleanup EXIT

turns() {   # turns [MOUNTERS]: the mounters REPEAT times over, taking turns
	local _
	for _ in $(seq "$REPEAT"); do echo ${1:-$MOUNTERS}; done
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

now() { date +%s.%N; }

# ---- measurements ------------------------------------------------------

RESULTS=$OUT/results.tsv

record() {   # record TEST MOUNTER VALUE UNIT BETTER(higher|lower)
	printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
	printf '  %-28s %-22s %12s %s\n' "$1" "$2" "$3" "$4"
}

fio_value() {   # fio_value FILE RW BS: IOPS (random) or MiB/s (sequential)
	local span=(--runtime="$RUNTIME" --time_based) rw=$2
	# coldread: the first COLD_IO bytes of each job, from the cold cache
	[ "$rw" = coldread ] && span=(--io_size="$COLD_IO") rw=randread
	fio --name=bench --filename="$1" --rw="$rw" --bs="$3" --ioengine=libaio --numjobs=4 \
		"${span[@]}" --group_reporting --readonly \
		--output-format=json 2>/dev/null |
		python3 -c '
import json, sys
r = json.load(sys.stdin)["jobs"][0]["read"]
print(round(r["iops"]) if sys.argv[1] != "read" else round(r["bw_bytes"] / 2**20))' "$2"
}

bench_fio() {
	local data who rw bs v img
	for data in $DATA; do
		for rw in $RWS; do
			bs=${rw#*:} rw=${rw%:*}
			for who in $(REPEAT=$FIO_REPEAT turns); do
				mount_as "$who" "$B/$data.sqfs" "$MNT" || die "$who: mount failed"
				drop_caches
				img=$B/$data.sqfs
				case $who in quash,*verity*) img=$(verity_image "$img") ;; esac
				cat "$img" >/dev/null
				v=$(fio_value "$MNT/file" "$rw" "$bs")
				unmount_as "$who" "$MNT"
				# a fio that failed gives no figure: said, and left out of the table
				[ -n "$v" ] || { echo "  fio $rw $bs, $data, $who: no result" >&2; continue; }
				if [ "$rw" = randread ]; then
					record "fio randread 4k, $data" "$who" "$v" IOPS higher
				elif [ "$rw" = coldread ]; then
					record "fio randread 4k cold pass, $data" "$who" "$v" IOPS higher
				else
					record "fio read 64k, $data" "$who" "$v" MiB/s higher
				fi
			done
		done
	done
}

timed() {   # timed CMD...: seconds, to 3 decimals
	local t0 t1
	t0=$(now)
	"$@" >/dev/null 2>&1
	t1=$(now)
	python3 -c "print(f'{$t1 - $t0:.3f}')"
}

md5_all() {
	find "$1" -type f -print0 | xargs -0 -P1 md5sum
}

ls_rows() {   # ls_rows MOUNTER PREFIX IMAGE: ls -lR of the tree, cold (fresh mount, caches dropped), then warm
	mount_as "$1" "$3" "$MNT" || die "$1: mount failed"
	drop_caches
	record "${2}ls -lR cold" "$1" "$(timed ls -lR "$MNT")" s lower
	record "${2}ls -lR warm" "$1" "$(timed ls -lR "$MNT")" s lower
	unmount_as "$1" "$MNT"
}

# The mounters take turns within each round, and each round runs the three images.
bench_xattr() {
	local who kind
	for who in $(turns); do
		for kind in one labels none; do
			mount_as "$who" "$B/xattr-$kind.sqfs" "$MNT" || die "$who: mount failed"
			drop_caches
			record "xattr ($kind): ls -lR cold" "$who" "$(timed ls -lR "$MNT")" s lower
			record "xattr ($kind): ls -lR warm" "$who" "$(timed ls -lR "$MNT")" s lower
			unmount_as "$who" "$MNT"
		done
	done
}

bench_tree() {
	local who
	for who in $(turns); do
		ls_rows "$who" "" "$B/tree-defaults.sqfs"
		mount_as "$who" "$B/tree-defaults.sqfs" "$MNT" || die "$who: mount failed"
		drop_caches
		record "md5sum all files cold" "$who" "$(timed md5_all "$MNT")" s lower
		record "md5sum all files warm" "$who" "$(timed md5_all "$MNT")" s lower
		unmount_as "$who" "$MNT"
	done
}

mount_run_unmount() {   # CYCLES x (mount, chroot /bin/true, unmount)
	local who=$1
	for _ in $(seq "$CYCLES"); do
		mount_as "$who" "$B/true.sqfs" "$MNT" || return 1
		chroot "$MNT" /bin/true || return 1
		unmount_as "$who" "$MNT"
	done
}

bench_cycle() {
	local who t
	for who in $(turns); do
		drop_caches
		t=$(timed mount_run_unmount "$who")
		record "mount, run true, unmount" "$who" "$(python3 -c "print(f'{$t / $CYCLES * 1000:.1f}')")" ms lower
	done
}

# Python from the tree image: its own interpreter when TREE is an
# installation (bin/python3, its libpython from the image too), else the
# system's with the image's modules first on sys.path.
PY_IMPORTS=${PY_IMPORTS:-json, email.mime.multipart, http.client, asyncio, decimal, argparse, logging, csv, zipfile}
python_startup() {
	local imports=$PY_IMPORTS
	if [ -x "$MNT/bin/python3" ]; then
		compgen -G "$MNT/lib/python3*/site-packages/boto3" >/dev/null && imports="boto3, $imports"
		LD_LIBRARY_PATH=$MNT/lib "$MNT/bin/python3" -c "import $imports"
	else
		python3 -I -S -c "import sys; sys.path[:0] = ['$MNT']; import $imports"
	fi
}

daemon_cpu() {   # seconds of CPU (user and system) the quash server serving $MNT has used (not its holder)
	local holder
	holder=$(pgrep -n -f "^$QUASH mount .*$MNT")
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($14 + $15) / hz }' \
		"/proc/$(pgrep -P "$holder" -f mount-server || echo "$holder")/stat"
}

stat_round_trip() {   # microseconds per stat() of a name that is not there
	python3 - "$MNT" <<'PY'
import os, sys, time
n = 20000
t = time.perf_counter()
for i in range(n):
    try:
        os.stat(f"{sys.argv[1]}/no-such-name-{i}")
    except FileNotFoundError:
        pass
print(f"{(time.perf_counter() - t) / n * 1e6:.1f}")
PY
}

startup_rows() {   # startup_rows MOUNTER: Python from a fresh mount of the tree, cold then warm; stays mounted
	local v
	mount_as "$1" "$B/tree.sqfs" "$MNT" || die "$1: mount failed"
	drop_caches
	record "Python start-up cold" "$1" "$(timed python_startup)" s lower
	# the daemon's CPU: steadier than the time on a loaded machine
	case $1 in quash|quash,*) record "Python start-up cold: daemon CPU" "$1" "$(daemon_cpu)" s lower ;; esac
	v=$(for _ in 1 2 3 4 5; do timed python_startup; done | sort -n | sed -n 3p)
	record "Python start-up warm (median of 5)" "$1" "$v" s lower
}

bench_latency() {
	local who
	for who in $(turns "$LAT_MOUNTERS"); do
		ls_rows "$who" "latency: " "$B/tree.sqfs"
		startup_rows "$who"
		record "one round trip: stat of a missing name" "$who" "$(stat_round_trip)" us lower
		unmount_as "$who" "$MNT"
	done
}

bench_startup() {
	local who
	for who in $(turns "$LAT_MOUNTERS"); do
		startup_rows "$who"
		unmount_as "$who" "$MNT"
	done
}

# A translation unit of common headers, every one of them found under $MNT.
compile_headers() {
	local gcc_inc cxx
	gcc_inc=$(g++ -print-file-name=include)
	cxx=$(basename "$(ls -d /usr/include/c++/* | sort -V | tail -1)")
	printf '#include <%s>\n' vector string map unordered_map iostream regex thread algorithm memory \
		functional chrono filesystem >"$B/headers.cc"
	g++ -fsyntax-only -nostdinc -nostdinc++ -isystem "$MNT/c++/$cxx" -isystem "$MNT/x86_64-linux-gnu/c++/$cxx" \
		-isystem "$gcc_inc" -isystem "$MNT/x86_64-linux-gnu" -isystem "$MNT" "$B/headers.cc"
}

# The FUSE requests quash has served so far: its SIGUSR1 counters line, from its log file.
quash_requests() {
	kill -USR1 "$(pgrep -n -f "^$QUASH mount .*$MNT")" && sleep 0.3
	grep -o 'requests: .*' "$B/quash-compiler.log" | tail -1 | sed 's/^requests: //'
}

bench_compiler() {
	local who v before
	command -v g++ >/dev/null || die "g++ is missing"
	for who in $(turns "$LAT_MOUNTERS"); do
		case $who in
		quash|quash,*) mount_as "$who,log=$B/quash-compiler.log" "$B/include.sqfs" "$MNT" ;;
		*) mount_as "$who" "$B/include.sqfs" "$MNT" ;;
		esac || die "$who: mount failed"
		drop_caches
		record "compiler: C++ headers cold" "$who" "$(timed compile_headers)" s lower
		compile_headers >/dev/null 2>&1
		case $who in quash|quash,*) before=$(quash_requests) ;; esac
		v=$(for _ in 1 2 3 4 5; do timed compile_headers; done | sort -n | sed -n 3p)
		record "compiler: C++ headers warm (median of 5)" "$who" "$v" s lower
		case $who in
		quash|quash,*) echo "    $who: requests before 5 warm runs: $before; after: $(quash_requests)" ;;
		esac
		unmount_as "$who" "$MNT"
	done
}

# ---- the table ---------------------------------------------------------

# table: the markdown table on stdout; the ratios (test,mounter,ratio,value,
# unit) to the CSV file named by its first argument
table() {
	python3 - "$RESULTS" "$(echo $MOUNTERS $LAT_MOUNTERS | tr ' ' '\n' | awk '!seen[$0]++' | tr '\n' ' ')" "$1" <<'PY'
import csv, statistics, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    test, who, value, unit, better = line.rstrip("\n").split("\t")
    if test not in rows:
        rows[test] = {"unit": unit, "better": better}
        order.append(test)
    rows[test].setdefault(who, []).append(float(value))
spans = {t: {m: list(v) for m, v in r.items() if isinstance(v, list)} for t, r in rows.items()}
for r in rows.values():   # repeated rows: the median
    for who in list(r):
        if isinstance(r[who], list):
            r[who] = statistics.median(r[who])
mounters = sys.argv[2].split()
others = [m for m in mounters if m != "kernel"]
out = csv.writer(open(sys.argv[3], "w", newline=""))
out.writerow(["test", "mounter", "ratio", "value", "unit", "better"])
head = "| test | kernel | " + " | ".join(others) + " |"
print(head)
print("|" + "---|" * (2 + len(others)))
for test in order:
    r = rows[test]
    k = r.get("kernel")
    cells = [f"{k:g} {r['unit']}" if k is not None else "-"]
    for m in others:
        v = r.get(m)
        if v is None:
            cells.append("-")
        elif k:
            # ratio as "how many times the kernel": throughput over the kernel's, time over the kernel's
            cells.append(f"{v:g} ({v / k:.2f}x)")
            out.writerow([test, m, f"{v / k:.3f}", f"{v:g}", r["unit"], r["better"]])
        else:
            cells.append(f"{v:g}")
    print(f"| {test} | " + " | ".join(cells) + " |")
# Each verity mounter against the same mounter without verity, in the same run.
pairs = []
for m in others:
    opts = m.split(",")
    if "verity" in opts:
        base = ",".join(o for o in opts if o != "verity")
        if base in mounters:
            pairs.append((m, base))
def pair_cell(test, m, b):
    # the ratio of the medians, and the range of each round's ratio (the two ran one after the other)
    r, sp = rows[test], spans[test]
    if r.get(m) is None or not r.get(b):
        return "-"
    each = [x / y for x, y in zip(sp[m], sp[b]) if y]
    if len(each) < 2:
        return f"{r[m] / r[b]:.2f}x"
    return f"{r[m] / r[b]:.2f}x ({min(each):.2f}-{max(each):.2f})"
if pairs:
    print("\nwith verity against without (throughput: verity's over the other's; time: the same, lower is")
    print("better), the ratio of the medians and the range of the rounds' own ratios:\n")
    print("| test | " + " | ".join(f"{m} / {b}" for m, b in pairs) + " |")
    print("|" + "---|" * (1 + len(pairs)))
    for test in order:
        cells = [pair_cell(test, m, b) for m, b in pairs]
        if any(c != "-" for c in cells):
            print(f"| {test} | " + " | ".join(cells) + " |")
ranges = [f"{test}: " + ", ".join(f"{m} {min(v):g}-{max(v):g}" for m, v in spans[test].items())
          for test in order if any(len(v) > 1 for v in spans[test].values())]
if ranges:
    print("\nranges (min-max of the repeated rows):\n")
    print("\n".join("- " + r for r in ranges))
PY
}

make_images
make_verity_images
: >"$RESULTS"
echo "kernel $(uname -r), $(nproc) cores; quash $("$QUASH" --version); $(dpkg-query -W -f '${Package} ${Version}' squashfuse 2>/dev/null)"
for what in $WHAT; do
	case $what in
	all) bench_fio; bench_tree; bench_cycle; bench_latency; bench_compiler; bench_xattr ;;
	compiler) bench_compiler ;;
	xattr) bench_xattr ;;
	fio) bench_fio ;;
	tree) bench_tree ;;
	cycle) bench_cycle ;;
	latency) bench_latency ;;
	startup) bench_startup ;;
	*) die "what to run: all, or some of fio, tree, cycle, latency, startup, compiler and xattr" ;;
	esac
done
echo
table "$CSV" | tee "$OUT/table.md"
echo
echo "ratios: throughput (IOPS, MiB/s) and time (s, ms) as multiples of the kernel's;"
echo "higher is better for throughput, lower for time."
