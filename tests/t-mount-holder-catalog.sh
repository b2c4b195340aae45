#!/bin/bash
# t-mount-holder-catalog.sh - a catalog mount outlives its server
# (mount/holder.h, mount/catalog/journal.c):
#
#   - a catalog is a holder and a server child, like a plain mount;
#   - kill loop under load: random 4 KiB reads from three images (page cache
#     dropped before each) against the kernel's mounts of the same images, a
#     sweep of the catalog (`find` of every name with its inode number and
#     mode, against the sweep before any kill; `ls -lR` of each image
#     against the kernel's), and Python imports from an image, while the
#     server is killed with SIGKILL and SIGSEGV: zero reader errors, no
#     reader hung, the node ids the kernel holds keep their meaning (every
#     inode number the same, also of names added after the mount, which a
#     fresh listing would number otherwise), one takeover for each death;
#   - what a server before this one opened is carried on: a catalog
#     directory read part way before a kill reads every entry once after it
#     (its listing is made again), a status file opened before a kill reads
#     after it, a file opened before it reads right;
#   - an image replaced while a reader holds its old version, then a kill:
#     the reader gets ESTALE, never the new version's bytes (the limit
#     SECURITY.md states); new lookups get the new version;
#   - --upgrade to another build under the same load: zero reader errors,
#     the new binary serves, node ids keep their meaning;
#   - -o noholder: one process.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"
. "$(dirname "$0")/lib/holder.sh"

H=$WORK/t-mount-holder-catalog
trap 'kill $(jobs -p) 2>/dev/null; exec 3<&- 4<&- 5<&- 6<&-; unmount_all; umount -l "$H/m" 2>/dev/null; umount -l "$H/m2" 2>/dev/null' EXIT
rm -rf "$H" && mkdir -p "$H/src/a/py" "$H/src/b" "$H/src/c/d/e" "$H/cat/sub/deep" "$H/many" "$H/k" "$H/bin"
for f in /usr/bin/bash /usr/bin/python3.11 /usr/lib/x86_64-linux-gnu/libcrypto.so.3; do
	cp "$(readlink -f "$f")" "$H/src/a/"
done
cp -r /usr/lib/python3.11/json /usr/lib/python3.11/email /usr/lib/python3.11/xml "$H/src/a/py/"
head -c 4000000 /dev/urandom >"$H/src/a/random"
head -c 6000000 /dev/urandom >"$H/src/b/random"
cp -r /usr/share/doc/bash /usr/share/doc/python3.11 "$H/src/b/" 2>/dev/null
for i in $(seq 1 300); do head -c $((i * 97)) /dev/urandom >"$H/src/c/d/e/f$i"; done
mksquashfs "$H/src/a" "$H/cat/a.sqfs" -noappend -quiet -no-progress >/dev/null
mksquashfs "$H/src/b" "$H/cat/sub/b.sqfs" -noappend -quiet -no-progress -comp zstd >/dev/null
mksquashfs "$H/src/c" "$H/cat/sub/deep/c.img" -noappend -quiet -no-progress -comp xz >/dev/null
ln -s a.sqfs "$H/cat/latest.sqfs"
# a catalog directory of many names (one image, hard-linked): its listing takes many READDIRs
mksquashfs "$H/src/c/d/e/f1" "$H/many0.sqfs" -noappend -quiet -no-progress >/dev/null
mkdir -p "$H/cat/many"
for i in $(seq 1 1500); do ln "$H/many0.sqfs" "$H/cat/many/image-with-a-long-name-$i.sqfs"; done
kmount "$H/cat/a.sqfs" "$H/k/a"
kmount "$H/cat/sub/b.sqfs" "$H/k/sub/b"
kmount "$H/cat/sub/deep/c.img" "$H/k/sub/deep/c"

holder_of() {   # holder_of LOG: the pid of the holder whose mount logs to $H/LOG
	pgrep -f -- "mount .*log=$H/$1( |,|$)" | head -1
}
# Every name of the catalog below $1 with its inode number and type, images included.
sweep() {
	(cd "$1" && find . -path ./many -prune -o -printf '%p %i %y %m\n' | sort)
}

# Readers for $1 seconds against catalog mount $2; each writes "errors runs" to $H/err.NAME.
readers() {
	local secs=$1 mnt=$2
	READER_PIDS=()
	random_reader "$secs" "$mnt" "$H/k" a/random a/bash latest/python3.11:a/python3.11 sub/b/random \
		sub/deep/c/d/e/f300 sub/deep/c/d/e/f77
	(
		errors=0 runs=0
		end=$((SECONDS + secs))
		while [ $SECONDS -lt $end ]; do
			echo 2 >/proc/sys/vm/drop_caches
			if ! sweep "$mnt" >"$H/sweep.q" 2>"$H/sweep.err" || ! cmp -s "$H/sweep.0" "$H/sweep.q"; then
				errors=$((errors + 1)); cat "$H/sweep.err" >&2; diff "$H/sweep.0" "$H/sweep.q" | head -5 >&2
			fi
			for i in a sub/b sub/deep/c; do
				if ! (cd "$mnt/$i" && ls -lR) >"$H/ls.q" 2>"$H/ls.err" || ! cmp -s "$H/ls.k.${i//\//_}" "$H/ls.q"; then
					errors=$((errors + 1)); echo "ls -lR $i differs" >&2; cat "$H/ls.err" >&2
				fi
			done
			runs=$((runs + 1))
		done
		echo $errors $runs
	) >"$H/err.sweep" 2>>"$H/err.sweep.log" &
	READER_PIDS+=($!)
	py_reader "$secs" "$mnt/a/py"
}
for i in a sub/b sub/deep/c; do (cd "$H/k/$i" && ls -lR) >"$H/ls.k.${i//\//_}"; done

# ---- two processes --------------------------------------------------------------
qmount "$H/m" "$QUASH" mount --catalog "$H/cat" "$H/m" -o log="$H/log.1"
holder=$(holder_of log.1)
server=$(server_of "$holder")
check "a catalog: the holder ($holder) and its server child ($server)" [ -n "$holder" -a -n "$server" ]
# Names that come after the mount get the next ids, which a fresh listing would hand out otherwise.
mkdir -p "$H/cat/0dir" && ln "$H/many0.sqfs" "$H/cat/0dir/x.sqfs" && ln "$H/many0.sqfs" "$H/cat/0first.sqfs"
for t in $(seq 1 50); do [ -e "$H/m/0first" -a -e "$H/m/0dir/x" ] && break; sleep 0.1; done
sweep "$H/m" >"$H/sweep.0"
check "the sweep sees every image, those added after the mount too ($(wc -l <"$H/sweep.0") names)" \
	bash -c "grep -q '^./sub/deep/c/d/e/f300 ' '$H/sweep.0' && grep -q '^./latest [0-9]* l ' '$H/sweep.0' &&
		 grep -q '^./0dir/x/f1 ' '$H/sweep.0' && grep -q '^./0first/f1 ' '$H/sweep.0'"

# ---- kill loop under load ---------------------------------------------------------
readers 10 "$H/m"
kill_servers "$holder" KILL SEGV KILL KILL SEGV
readers_done "five catalog servers killed under load (SIGKILL, SIGSEGV)" read sweep py
check_takeovers "$holder" "$H/log.1"
check "after the kills every name keeps its inode number" bash -c "$(declare -f sweep); sweep '$H/m' | cmp -s '$H/sweep.0' -"

# ---- what a dead server had open is carried on ------------------------------------
exec 3<"$H/m/.quash-catalog"
exec 4<"$H/m/sub/b/random"
python3 - "$H/m/many" "$H/dir.before" >"$H/dir.out" 2>"$H/dir.err" 3>&- 4>&- <<-'EOF' &
	import ctypes, os, sys, time
	# getdents64 in small calls: the listing is read over many READDIRs, a kill between them
	libc = ctypes.CDLL(None, use_errno=True)
	fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
	buf = ctypes.create_string_buffer(1024)
	names, calls = [], 0
	while True:
	    n = libc.syscall(217, fd, buf, len(buf))
	    if n < 0:
	        print("getdents64:", os.strerror(ctypes.get_errno()), file=sys.stderr); sys.exit(1)
	    if n == 0:
	        break
	    off = 0
	    while off < n:
	        reclen = int.from_bytes(buf.raw[off + 16:off + 18], "little")
	        names.append(buf.raw[off + 19:off + reclen].split(b"\0")[0].decode())
	        off += reclen
	    calls += 1
	    if calls == 3:
	        open(sys.argv[2], "w").close()
	        time.sleep(1.5)         # the server is killed now
	names = [x for x in names if x not in (".", "..")]
	print(len(names), len(set(names)))
	EOF
dirpid=$!
for t in $(seq 1 50); do [ -e "$H/dir.before" ] && break; sleep 0.1; done
kill -KILL "$(server_of "$holder")"
wait $dirpid
sleep 0.3
check "a catalog directory read part way before a kill has every name once after it ($(cat "$H/dir.out" "$H/dir.err"))" \
	[ -e "$H/dir.before" -a "$(cat "$H/dir.out")" = "1500 1500" ]
out=$(python3 - "$H/m/many" <<-'EOF'
	import os, sys
	n = os.listdir(sys.argv[1]); print(len(n), len(set(n)))
	EOF
)
check "and a listing made after the restart has every name once ($out)" [ "$out" = "1500 1500" ]
check "a status file opened before a kill reads after it" bash -c 'head -1 <&3 | grep -q "^# catalog "'
check "a file opened before a kill reads right after it" \
	python3 -c 'import os, sys; os.posix_fadvise(4, 0, 0, os.POSIX_FADV_DONTNEED)
k = open(sys.argv[1], "rb").read(); os.lseek(4, 0, 0); q = b"".join(iter(lambda: os.read(4, 1 << 20), b""))
sys.exit(q != k)' "$H/k/sub/b/random"
exec 3<&- 4<&-

# ---- an image replaced while a reader holds its old version, then a kill ----------
exec 5<"$H/m/sub/deep/c/d/e/f300"
old_ino=$(stat -c %i "$H/m/sub/deep/c")
mksquashfs "$H/src/a" "$H/new.img" -noappend -quiet -no-progress >/dev/null
mv "$H/new.img" "$H/cat/sub/deep/c.img"
for t in $(seq 1 50); do [ "$(stat -c %i "$H/m/sub/deep/c" 2>/dev/null)" != "$old_ino" ] && break; sleep 0.1; done
check "the replaced image is a new version to new lookups" [ "$(stat -c %i "$H/m/sub/deep/c")" != "$old_ino" ]
kill -KILL "$(server_of "$holder")"
sleep 0.3
check_fails "after the kill the old version's reader gets ESTALE, never the new bytes" 1 'Stale file handle' \
	python3 -c 'import os, sys
os.posix_fadvise(5, 0, 0, os.POSIX_FADV_DONTNEED)
try:
    os.pread(5, 4096, 0)
except OSError as e:
    print(e, file=sys.stderr); sys.exit(1)
sys.exit(2)'
exec 5<&-
check "new lookups read the new version" cmp "$H/src/a/bash" "$H/m/sub/deep/c/bash"
"$QUASH" umount "$H/m"
umount -l "$H/k/sub/deep/c"
mksquashfs "$H/src/c" "$H/cat/sub/deep/c.img" -noappend -quiet -no-progress -comp xz >/dev/null
kmount "$H/cat/sub/deep/c.img" "$H/k/sub/deep/c"

# ---- upgrade to another build under load ------------------------------------------
cp "$QUASH" "$H/bin/quash"
qmount "$H/m2" "$H/bin/quash" mount --catalog "$H/cat" "$H/m2" -o log="$H/log.2"
h2=$(holder_of log.2)
old=$(server_of "$h2")
sweep "$H/m2" >"$H/sweep.0"
cp "$QUASH_ASAN" "$H/bin/quash.new" && mv "$H/bin/quash.new" "$H/bin/quash"
readers 8 "$H/m2"
sleep 2
out=$("$QUASH" mount --upgrade "$H/m2" 2>&1); rc=$?
check "--upgrade says the new server serves ($out)" [ $rc = 0 -a -n "$(echo "$out" | grep 'upgraded: server [0-9]* serves')" ]
readers_done "--upgrade of a catalog under load" read sweep py
new=$(server_of "$h2")
check "the new server runs the new binary" cmp -s "/proc/$new/exe" "$QUASH_ASAN"
check "the old server ($old) is gone" bash -c "$(declare -f alive); ! alive $old"
check "after the upgrade every name keeps its inode number" bash -c "$(declare -f sweep); sweep '$H/m2' | cmp -s '$H/sweep.0' -"
"$QUASH" umount "$H/m2"
check "the ASan server reported nothing" bash -c "! grep -q Sanitizer '$H/log.2'"

# ---- -o noholder -----------------------------------------------------------------
qmount "$H/m" "$QUASH" mount --catalog "$H/cat" "$H/m" -o noholder,log="$H/log.3"
p=$(holder_of log.3)
check "-o noholder: one process, no server child" [ -n "$p" -a -z "$(server_of "$p")" ]
"$QUASH" umount "$H/m"
