#!/bin/bash
# Bad input to quash mount: before anything is mounted, one line and a
# non-zero exit; a corrupt data block fails that file's reads with EIO (as on
# the kernel's mount) while the daemon lives on and serves everything else.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

trap unmount_all EXIT
M=$WORK/t-mount-errors
rm -rf "$M" && mkdir -p "$M/src" "$M/mnt" "$M/busy"
for i in 1 2 3 4 5; do head -c 300000 /dev/urandom | base64 >"$M/src/file$i"; done
mksquashfs "$M/src" "$M/good.sqfs" -comp gzip -noappend -quiet -no-progress >/dev/null
head -c 100000 /dev/urandom >"$M/garbage"
head -c 4096 "$M/good.sqfs" >"$M/truncated.sqfs"
touch "$M/plainfile"
kmount "$M/good.sqfs" "$M/busy"

# fails_cleanly NAME ARGS...: exit 1..97, exactly one line on stderr (and for
# a usage error the "Try ... --help" pointer), nothing mounted at $M/mnt.
fails_cleanly() {
	local name=$1 st lines; shift
	timeout -s KILL 20 "$QUASH_ASAN" mount "$@" >/dev/null 2>"$M/err"
	st=$?
	lines=$(grep -vc "^Try 'quash mount --help'" "$M/err")
	if [ $st -ge 1 ] && [ $st -le 97 ] && [ "$lines" -eq 1 ] && ! is_mounted "$M/mnt"; then
		ok "$name"
	else
		not_ok "$name" "exit $st, $lines lines: $(head -c 300 "$M/err")"
		fusermount3 -u -z "$M/mnt" 2>/dev/null
	fi
}

fails_cleanly "missing image" "$M/nonexistent.sqfs" "$M/mnt"
fails_cleanly "missing mountpoint" "$M/good.sqfs" "$M/nonexistent"
fails_cleanly "mountpoint is a file" "$M/good.sqfs" "$M/plainfile"
fails_cleanly "busy mountpoint" "$M/good.sqfs" "$M/busy"
fails_cleanly "unknown option" -o bogus "$M/good.sqfs" "$M/mnt"
fails_cleanly "bad option value" -o cache_size=lots "$M/good.sqfs" "$M/mnt"
fails_cleanly "bad thread count" -o threads=0 "$M/good.sqfs" "$M/mnt"
fails_cleanly "not a squashfs image" "$M/garbage" "$M/mnt"
fails_cleanly "truncated image" "$M/truncated.sqfs" "$M/mnt"
fails_cleanly "no mountpoint given" "$M/good.sqfs"
fails_cleanly "subdir that is not there" -o subdir=nothere "$M/good.sqfs" "$M/mnt"
fails_cleanly "subdir that is a file" -o subdir=file1 "$M/good.sqfs" "$M/mnt"
fails_cleanly "foreground too" -f "$M/garbage" "$M/mnt"
mkfifo "$M/fifo"
fails_cleanly "a FIFO as the image" "$M/fifo" "$M/mnt"
fails_cleanly "a FIFO as the image, foreground" -f "$M/fifo" "$M/mnt"
if pgrep -f -- "mount .*$M/fifo" >/dev/null; then
	not_ok "no daemon left waiting on the FIFO"
	pkill -KILL -f -- "mount .*$M/fifo"
else ok "no daemon left waiting on the FIFO"; fi
fails_cleanly "a character device as the image" /dev/zero "$M/mnt"

# Corrupt the first data block (file1's: mksquashfs writes data in name order right after
# the superblock) and check the kernel agrees that file1 is damaged and the others are not.
cp "$M/good.sqfs" "$M/bad.sqfs"
printf '\x55\xaa\x55\xaa\x55\xaa\x55\xaa' | dd of="$M/bad.sqfs" bs=1 seek=2000 conv=notrunc 2>/dev/null
kmount "$M/bad.sqfs" "$M/kbad"
if cat "$M/kbad/file1" >/dev/null 2>&1 || ! cat "$M/kbad/file2" >/dev/null; then
	not_ok "corrupt image: the kernel sees file1 damaged"
fi

mkdir -p "$M/qbad"
"$QUASH_ASAN" mount -f "$M/bad.sqfs" "$M/qbad" 2>"$M/daemon.log" &
pid=$!
QM_MOUNTS+=("f:$M/qbad")
wait_mounted "$M/qbad" || not_ok "corrupt image: mounted"
err=$(python3 -c '
import errno, sys
try:
    open(sys.argv[1], "rb").read()
    print("read succeeded")
except OSError as e:
    print(errno.errorcode[e.errno])' "$M/qbad/file1")
check "corrupt image: reading the damaged file gives EIO" [ "$err" = EIO ]
for i in 2 3 4 5; do
	check "corrupt image: file$i still reads right" cmp -s "$M/src/file$i" "$M/qbad/file$i"
done
check "corrupt image: the daemon is alive" kill -0 $pid
check "corrupt image: the failure is logged with the image's name" grep -q "bad.sqfs: read" "$M/daemon.log"
fusermount3 -u "$M/qbad"
wait $pid
st=$?
check "corrupt image: clean exit, no sanitizer report" clean_exit $st "$M/daemon.log"
