#!/bin/bash
# t-mount-holder.sh - a mount outlives its server (mount/holder.h):
#
#   - a plain mount is two processes: the holder (the daemon whose pid the
#     caller sees) and its server child; -o noholder is one;
#   - kill loop under load: readers (random 4 KiB reads with the page cache
#     dropped before each, against the kernel's mount of the same image;
#     `ls -lR` with the dentry cache dropped, against the kernel's listing;
#     Python imports from the image) run while the server is killed with
#     SIGKILL, SIGSEGV and SIGABRT: every byte and listing right, zero
#     reader errors, no reader hung, each death followed by a takeover;
#   - a remote image over nginx behind a proxy that holds each fetch 300 ms:
#     three servers killed while they hold reads, the file still reads right
#     (only FUSE_NOTIFY_RESEND answers those reads);
#   - a file opened (with a handle: timeout= keeps OPEN) before a restart
#     reads right after it;
#   - --upgrade to another build (the ASan one, renamed over the binary the
#     mount came from, as a package upgrade does) under the same load: zero
#     reader errors, the new binary serves, the old server exits;
#   - a crash loop (the server killed as soon as it starts): the mount is
#     detached with one log line, a reader holding a file gets an error at
#     once (not a hang), and the mount point takes a new mount at once;
#   - the holder killed: the server detaches the mount, a user inside it
#     reads on, and the server exits once that user leaves;
#   - both killed: a dead mount, which `quash umount` cleans up in one line.
# The timing of takeovers is bench/holder.sh's, not a check here.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/holder.sh"

H=$WORK/t-mount-holder
trap 'kill $(jobs -p) 2>/dev/null; unmount_all; for m in "$H"/m*; do umount -l "$m" 2>/dev/null; done; remote_cleanup' EXIT
rm -rf "$H" && mkdir -p "$H/src/py" "$H/k" "$H/m" "$H/bin"
for f in /usr/bin/bash /usr/bin/python3.11 /usr/lib/x86_64-linux-gnu/libcrypto.so.3; do
	cp "$(readlink -f "$f")" "$H/src/"
done
cp -r /usr/lib/python3.11/json /usr/lib/python3.11/email /usr/lib/python3.11/xml "$H/src/py/"
head -c 8000000 /dev/urandom >"$H/src/random"
head -c 24000000 /dev/urandom >"$H/src/big"     # read only by the OOM part: the server must allocate
mksquashfs "$H/src" "$H/img.sqfs" -noappend -quiet -no-progress >/dev/null
kmount "$H/img.sqfs" "$H/k"

holder_of() {   # holder_of LOG: the pid of the holder whose mount logs to $H/LOG
	pgrep -f -- "mount -o .*log=$H/$1[ ,]" | head -1
}

# Readers for $1 seconds against mount $2; each writes its error count to $H/err.NAME.
readers() {
	local secs=$1 mnt=$2
	READER_PIDS=()
	random_reader "$secs" "$mnt" "$H/k" random bash libcrypto.so.3 python3.11
	(
		errors=0 runs=0
		(cd "$H/k" && ls -lR) >"$H/ls.k"
		end=$((SECONDS + secs))
		while [ $SECONDS -lt $end ]; do
			echo 2 >/proc/sys/vm/drop_caches
			if ! (cd "$mnt" && ls -lR) >"$H/ls.q" 2>"$H/ls.err" || ! cmp -s "$H/ls.k" "$H/ls.q"; then
				errors=$((errors + 1)); cat "$H/ls.err" >&2
			fi
			runs=$((runs + 1))
		done
		echo $errors $runs
	) >"$H/err.ls" 2>>"$H/err.ls.log" &
	READER_PIDS+=($!)
	py_reader "$secs" "$mnt/py"
}

# ---- two processes; -o noholder one ----------------------------------------
qmount "$H/m" "$QUASH" mount -o log="$H/log.1" "$H/img.sqfs" "$H/m"
holder=$(holder_of log.1)
server=$(server_of "$holder")
check "a plain mount: the holder ($holder) and its server child ($server)" [ -n "$holder" -a -n "$server" ]
check "the server reads like the kernel's mount" compare_trees "$H/k" "$H/m"

# ---- kill loop under load ---------------------------------------------------
readers 10 "$H/m"
kill_servers "$holder" KILL SEGV ABRT KILL KILL
readers_done "five servers killed under load (SIGKILL, SIGSEGV, SIGABRT)" read ls py
check_takeovers "$holder" "$H/log.1"
check "after the kills the mount reads like the kernel's" compare_trees "$H/k" "$H/m"

# ---- a remote image: requests the dead server held are resent ----------------
# Each fetch waits 300 ms in the proxy, so a kill finds reads in the server's
# hands: only FUSE_NOTIFY_RESEND gets them answered.
np=$(free_port) pp=$(free_port)
mkdir -p "$H/www" && ln -f "$H/img.sqfs" "$H/www/img.sqfs"
if start_nginx "$H/nginx" "$H/www" "$np" && start_faultproxy "$pp" "http://127.0.0.1:$np" pass --skip 0 --delay-ms 300; then
	qmount "$H/m5" "$QUASH" mount -o log="$H/log.remote",chunk_size=512K "http://127.0.0.1:$pp/img.sqfs" "$H/m5"
	rh=$(holder_of log.remote)
	(timeout 60 cmp "$H/k/random" "$H/m5/random"; echo $? >"$H/remote.cmp") &
	for i in 1 2 3; do
		sleep 0.7
		kill -KILL "$(server_of "$rh")"
	done
	wait $!
	check "remote: a file read while three servers are killed mid-fetch reads right, no hang (status $(cat "$H/remote.cmp"))" \
		[ "$(cat "$H/remote.cmp")" = 0 ]
	check "remote: each death followed by a takeover" [ "$(grep -c 'took over' "$H/log.remote")" = 3 ]
	"$QUASH" umount "$H/m5"
else
	not_ok "remote: nginx and the delaying proxy start"
	not_ok "remote: each death followed by a takeover"
fi

# ---- file handles across a restart (timeout= keeps OPEN: the kernel holds a handle) ----
qmount "$H/m4" "$QUASH" mount -o timeout=600,log="$H/log.fh" "$H/img.sqfs" "$H/m4"
exec 4<"$H/m4/random"
python3 -c 'import os; os.posix_fadvise(4, 0, 0, os.POSIX_FADV_DONTNEED); os.pread(4, 4096, 0)'
kill -KILL "$(server_of "$(holder_of log.fh)")"
sleep 0.3
check "a file opened before a restart reads right after it (handles name no server's memory)" \
	python3 -c 'import os, sys; os.posix_fadvise(4, 0, 0, os.POSIX_FADV_DONTNEED)
k = open(sys.argv[1], "rb").read(); os.lseek(4, 0, 0); q = b"".join(iter(lambda: os.read(4, 1 << 20), b""))
sys.exit(q != k)' "$H/k/random"
exec 4<&-
check "and the restarted server is still serving" cmp "$H/k/bash" "$H/m4/bash"
"$QUASH" umount "$H/m4"

# ---- upgrade to another build under load -------------------------------------
cp "$QUASH" "$H/bin/quash"
qmount "$H/m2" "$H/bin/quash" mount -o log="$H/log.2" "$H/img.sqfs" "$H/m2"
h2=$(pgrep -f -- "bin/quash mount -o log=$H/log.2" | head -1)
old=$(server_of "$h2")
cp "$QUASH_ASAN" "$H/bin/quash.new" && mv "$H/bin/quash.new" "$H/bin/quash"
readers 8 "$H/m2"
sleep 2
out=$("$QUASH" mount --upgrade "$H/m2" 2>&1); rc=$?
check "--upgrade says the new server serves ($out)" [ $rc = 0 -a -n "$(echo "$out" | grep 'upgraded: server [0-9]* serves')" ]
readers_done "--upgrade under load" read ls py
new=$(server_of "$h2")
check "the new server runs the new binary" cmp -s "/proc/$new/exe" "$QUASH_ASAN"
check "the old server ($old) is gone" bash -c "$(declare -f alive); ! alive $old"
"$QUASH" umount "$H/m2"

# ---- an OOM kill in a memory cgroup, where one enforces its limit -----------
cg=
if mkdir -p /sys/fs/cgroup/memory/quash-t-holder 2>/dev/null &&
	echo 3M >/sys/fs/cgroup/memory/quash-t-holder/memory.limit_in_bytes 2>/dev/null; then
	cg=/sys/fs/cgroup/memory/quash-t-holder
	# does it enforce? a process that allocates 50 MiB in it is killed
	(echo $BASHPID >"$cg/cgroup.procs"; exec python3 -c 'a = bytearray(50 << 20)') 2>/dev/null
	[ $? = 137 ] || { rmdir "$cg"; cg=; }
fi
if [ -n "$cg" ]; then
	qmount "$H/m3" "$QUASH" mount -o log="$H/log.oom" "$H/img.sqfs" "$H/m3"
	s=$(server_of "$(holder_of log.oom)")
	echo "$s" >"$cg/cgroup.procs"
	readers 4 "$H/m3"
	check "OOM: a file nobody had read reads right while its server is OOM-killed" cmp "$H/k/big" "$H/m3/big"
	readers_done "the server OOM-killed in a 3 MiB cgroup" read ls py
	check "the OOM kill was a death the holder saw ($s)" grep -qE "server $s (died|killed by signal 9)" "$H/log.oom"
	"$QUASH" umount "$H/m3"
	rmdir "$cg" 2>/dev/null
else
	for what in "a file nobody had read reads right" "no reader hung" "read readers: 0 errors" \
		"ls readers: 0 errors" "py readers: 0 errors" "death seen"; do
		skip_check "OOM kill: $what" "no memory cgroup can be made here"
	done
fi

# ---- crash loop (a fresh mount: the deaths above count towards one) ----------
"$QUASH" umount "$H/m"
qmount "$H/m" "$QUASH" mount -o log="$H/log.1b" "$H/img.sqfs" "$H/m"
holder=$(holder_of log.1b)
exec 3<"$H/m/random"
for i in $(seq 1 12); do
	s=$(server_of "$holder")
	[ -n "$s" ] && kill -KILL "$s"
	alive "$holder" || break
	sleep 0.05
done
sleep 0.5
check "a crash loop: the holder gave up" bash -c "$(declare -f alive); ! alive $holder"
check "a crash loop: one log line says so" grep -q 'servers keep dying.*detaching the mount' "$H/log.1b"
check "a crash loop: the mount is detached" bash -c "! grep -q ' $H/m ' /proc/self/mountinfo"
check_fails "a crash loop: a reader holding a file gets an error, not a hang" 1 'Transport endpoint|Software caused|No such device' \
	timeout 10 dd if=/dev/fd/3 of=/dev/null bs=64k status=none
exec 3<&-
qmount "$H/m" "$QUASH" mount -o log="$H/log.3" "$H/img.sqfs" "$H/m"
check "a crash loop: the mount point takes a new mount at once" cmp "$H/k/bash" "$H/m/bash"

# ---- the holder killed --------------------------------------------------------
holder=$(holder_of log.3)
server=$(server_of "$holder")
exec 3<"$H/m/random"
kill -KILL "$holder"
sleep 0.5
check "holder killed: the server detaches the mount" bash -c "! grep -q ' $H/m ' /proc/self/mountinfo"
check "holder killed: the log says so" grep -q "holder is gone; detaching the mount" "$H/log.3"
check "holder killed: a file held open reads on, right" cmp /dev/fd/3 "$H/k/random"
exec 3<&-
for t in $(seq 1 20); do alive "$server" || break; sleep 0.25; done
check "holder killed: the server exits once the last user leaves" bash -c "$(declare -f alive); ! alive $server"

# ---- both killed: a dead mount -----------------------------------------------
qmount "$H/m" "$QUASH" mount -o log="$H/log.4" "$H/img.sqfs" "$H/m"
holder=$(holder_of log.4)
server=$(server_of "$holder")
# the server stopped first: it cannot detach the mount when it hears its holder die
kill -STOP "$server"
kill -KILL "$holder" "$server"
sleep 0.3
check_fails "both killed: the mount point says ENOTCONN" 2 'Transport endpoint is not connected' ls "$H/m"
check "both killed: quash umount cleans up in one line" bash -c \
	"[ \"\$('$QUASH' umount '$H/m' 2>&1)\" = 'quash: umount: $H/m: its daemon was gone (Transport endpoint is not connected); unmounted' ]"

# ---- -o noholder ------------------------------------------------------------
qmount "$H/m" "$QUASH" mount -o noholder,log="$H/log.5" "$H/img.sqfs" "$H/m"
p=$(pgrep -f -- "mount -o noholder,log=$H/log.5" | head -1)
check "-o noholder: one process, no server child" [ -n "$p" -a -z "$(server_of "$p")" ]
"$QUASH" umount "$H/m"

