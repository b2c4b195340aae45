# tests/lib/holder.sh - what the holder tests (t-mount-holder*.sh) share:
# the processes of a held mount (mount/holder.h), and readers that run while
# its server is killed.  Files go under the caller's $H.
#
#   alive PID               PID is running (a zombie nobody reaped is gone)
#   server_of HOLDER_PID    its server child, or nothing
#   random_reader SECS MNT REF NAME[:REFNAME]...
#                           in the background, random 4 KiB reads of each
#                           MNT/NAME (its page cache dropped first) against
#                           REF/REFNAME (default NAME) for SECS seconds:
#                           "errors reads" into $H/err.read, what went wrong
#                           into $H/err.read.log; its pid into READER_PIDS
#   py_reader SECS DIR      in the background, Python imports of json,
#                           email and xml from DIR (a copy of the stdlib's)
#                           in a loop, the dentry cache dropped before each:
#                           "errors runs" into $H/err.py; its pid into READER_PIDS
#   kill_servers HOLDER_PID SIG...
#                           kill its server with each SIG, 1.7 s apart;
#                           the kills made into $kills
#   check_takeovers HOLDER_PID LOG
#                           check the holder lives on and LOG has a takeover
#                           for each of the $kills deaths (their times as
#                           comments)
#   running                 the READER_PIDS still at work
#   readers_done WHAT KIND...
#                           wait (bounded) for the readers, then check that
#                           each $H/err.KIND says 0 errors in some runs

READER_PIDS=()

alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null)
	[ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

server_of() {
	[ -n "$1" ] || return 0
	pgrep -P "$1" -f 'mount-server' | head -1
}

random_reader() {
	python3 - "$@" >"$H/err.read" 2>"$H/err.read.log" <<-'EOF' &
	import os, random, sys, time
	secs, mnt, ref = float(sys.argv[1]), sys.argv[2], sys.argv[3]
	pairs = [(a.split(":") + [a])[:2] for a in sys.argv[4:]]
	fds = {n: (os.open(f"{mnt}/{n}", os.O_RDONLY), os.open(f"{ref}/{r}", os.O_RDONLY)) for n, r in pairs}
	sizes = {n: os.fstat(fds[n][1]).st_size for n in fds}
	names = list(fds)
	errors = reads = 0
	end = time.monotonic() + secs
	while time.monotonic() < end:
	    n = random.choice(names)
	    off = random.randrange(0, max(1, sizes[n] - 4096)) & ~4095
	    q, k = fds[n]
	    try:
	        os.posix_fadvise(q, 0, 0, os.POSIX_FADV_DONTNEED)
	        if os.pread(q, 4096, off) != os.pread(k, 4096, off):
	            errors += 1
	            print(f"wrong bytes: {n} at {off}", file=sys.stderr)
	    except OSError as e:
	        errors += 1
	        print(f"{n} at {off}: {e}", file=sys.stderr)
	    reads += 1
	print(errors, reads)
	EOF
	READER_PIDS+=($!)
}

py_reader() {
	local secs=$1 dir=$2
	(
		errors=0 runs=0
		end=$((SECONDS + secs))
		while [ $SECONDS -lt $end ]; do
			echo 2 >/proc/sys/vm/drop_caches
			out=$(PYTHONPATH="$dir" python3 -S -B -c 'import json, email.parser, xml.dom.minidom; print(json.__file__)' 2>&1)
			[ "$out" = "$dir/json/__init__.py" ] || { errors=$((errors + 1)); echo "$out" >&2; }
			runs=$((runs + 1))
		done
		echo $errors $runs
	) >"$H/err.py" 2>>"$H/err.py.log" &
	READER_PIDS+=($!)
}

kill_servers() {
	local holder=$1 sig s
	shift
	kills=0
	for sig in "$@"; do
		sleep 1.7
		s=$(server_of "$holder")
		[ -n "$s" ] && kill -s "$sig" "$s" && kills=$((kills + 1))
	done
}

check_takeovers() {
	local taken
	check "the holder lives on ($1)" alive "$1"
	taken=$(grep -c 'took over' "$2")
	check "a takeover logged for each death ($taken of $kills)" [ "$taken" = "$kills" ]
	grep -o 'took over [0-9.]* ms' "$2" | awk '{ printf "# takeover %s ms\n", $3 }'
}

running() {
	local p
	for p in "${READER_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && echo "$p"; done
}

readers_done() {
	local what=$1 t name e n
	shift
	for t in $(seq 1 60); do
		[ -z "$(running)" ] && break
		sleep 1
	done
	check "$what: no reader hung" [ -z "$(running)" ]
	for name in "$@"; do
		read -r e n <"$H/err.$name" 2>/dev/null
		check "$what: $name readers: 0 errors (${e:-?} in ${n:-?} runs)" [ "${e:-1}" = 0 -a "${n:-0}" -gt 0 ]
	done
}
