#!/bin/bash
# t-mount-siblings.sh - the small files that share a fragment block reach
# the page cache with the one READ that decompressed it (mount/siblings.c),
# counted by the daemon itself (its SIGUSR1 requests line):
#
#   - 40 files of one directory in one fragment block (Debian mksquashfs's
#     defaults), listed, then read in order: one READ for all of them;
#   - the block's later files, in the next directory: one READ for those;
#   - with -o nonotify_store nothing is pushed: one READ a file;
#   - every file read so equals its source, and a file with blocks of its
#     own whose tail lies in a fragment block reads whole;
#   - the ASan build serving the same reads draws no sanitizer report.
# Other sessions on a shared host drop the page cache at any moment, which
# throws pushed pages away: a count is retried on a fresh mount, up to
# three times, before it counts as a failure.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

M=$WORK/t-mount-siblings
rm -rf "$M" && mkdir -p "$M/src/a" "$M/src/b" "$M/src/c"
trap unmount_all EXIT
for i in $(seq -w 1 40); do head -c 1100 /dev/urandom | base64 >"$M/src/a/f$i"; done
for i in $(seq -w 1 20); do head -c 1100 /dev/urandom | base64 >"$M/src/b/g$i"; done
head -c 200000 /dev/urandom >"$M/src/c/big"
echo after the big file >"$M/src/c/small"
mksquashfs "$M/src" "$M/img.sqfs" -noappend -quiet -no-progress >/dev/null

pid=
serve() {   # serve BINARY [OPTIONS...]: quash mount -f of the image at $M/m, its log in $M/log
	local bin=$1; shift
	mkdir -p "$M/m"
	: >"$M/log"
	"$bin" mount -f "$@" "$M/img.sqfs" "$M/m" 2>"$M/log" &
	pid=$!
	QM_MOUNTS+=("f:$M/m")
	wait_mounted "$M/m"
}

stop() {
	fusermount3 -u "$M/m" 2>/dev/null
	wait "$pid" 2>/dev/null
}

reads() {   # the READ requests the daemon has served so far
	local n
	n=$(grep -c 'requests: ' "$M/log")
	kill -USR1 "$pid"
	for _ in $(seq 50); do
		[ "$(grep -c 'requests: ' "$M/log")" -gt "$n" ] && break
		sleep 0.05
	done
	grep 'requests: ' "$M/log" | tail -1 | grep -oE ' READ [0-9]+' | grep -oE '[0-9]+' || echo 0
}

# read_dir DIR: list the image's a, b and c (READDIRPLUS), read DIR's first
# file, give the filler a moment, read the rest; prints the READs it took
read_dir() {
	local first before
	ls -l "$M/m/a" "$M/m/b" "$M/m/c" >/dev/null
	before=$(reads)
	first=$(ls "$M/m/$1" | head -1)
	cat "$M/m/$1/$first" >/dev/null
	sleep 0.5
	cat "$M/m/$1"/* >/dev/null
	echo $(($(reads) - before))
}

counted() {   # counted NAME DIR: one READ for DIR's files, on one of three fresh mounts
	local got
	for _ in 1 2 3; do
		serve "$QUASH"
		got=$(read_dir "$2")
		stop
		[ "$got" = 1 ] && break
	done
	if [ "$got" = 1 ]; then ok "$1"; else not_ok "$1" "$got READs"; fi
}

counted "siblings: 40 files of one fragment block, listed and read in order, take one READ" a
counted "siblings: the block's files in the next directory take one READ" b

serve "$QUASH" -o nonotify_store
got=$(read_dir a)
stop
check "siblings: with -o nonotify_store nothing is pushed: one READ a file ($got for 40)" test "$got" = 40

serve "$QUASH"
ls -l "$M/m/a" "$M/m/b" "$M/m/c" >/dev/null
same=0
for f in a/f01 $(cd "$M/src" && ls a/* b/* c/*); do cmp -s "$M/src/$f" "$M/m/$f" || same=1; done
check "siblings: every file read equals its source, the big file with its tail too" test "$same" = 0
stop

serve "$QUASH_ASAN"
ls -l "$M/m/a" "$M/m/b" "$M/m/c" >/dev/null
cat "$M/m/a/f01" "$M/m/b/g01" >/dev/null
sleep 0.5
cat "$M/m"/*/* >/dev/null
stop
check "siblings: the ASan build serves the same reads with no sanitizer report" \
	bash -c '! grep -qE "Sanitizer|runtime error:" "$1"' _ "$M/log"
