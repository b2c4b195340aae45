#!/bin/bash
# Decompression ahead of sequential readers (mount/ahead.c), every byte
# checked against the kernel's mount of the same image: one reader
# streaming a file; a reader that streams, jumps to random places, and
# streams again; two readers streaming two files at once.  The daemon's
# counters (QUASH_FILL_STATS) show that blocks were loaded ahead for each
# stream and that a jump dropped the blocks queued.  Then the pool off;
# and the same under the ASan build with file handles (timeout=), where a
# file closed while its blocks are being loaded waits for them (and says so
# in its counters).  A remote image (nginx) has none: its chunk cache
# reads a stream ahead itself.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"
. "$(dirname "$0")/lib/remote.sh"

trap 'unmount_all; remote_cleanup' EXIT
M=$WORK/t-mount-stream
rm -rf "$M" && mkdir -p "$M/src"
# Two files of 24 MiB (192 blocks of 128 KiB: three times a stream's
# window) that compress about 3:1, and one whose tail is in a fragment.
python3 - "$M/src" <<'PY'
import os, random, sys
root = sys.argv[1]
for name, seed, size in (("a", 1, 24 << 20), ("b", 2, 24 << 20), ("c", 3, (5 << 20) + 1234)):
    r = random.Random(seed)
    words = [bytes(r.choice(b"abcdefghijklmnop") for _ in range(r.randint(2, 12))) for _ in range(4000)]
    with open(os.path.join(root, name), "wb") as f:
        left = size
        while left:
            chunk = (b" ".join(r.choice(words) for _ in range(20000)) + os.urandom(20000))[:min(left, 1 << 20)]
            f.write(chunk)
            left -= len(chunk)
PY
mksquashfs "$M/src" "$M/img.sqfs" -comp zstd -b 128K -noappend -quiet -no-progress >/dev/null
kmount "$M/img.sqfs" "$M/k"

# streams DIR CASE: the reading pattern CASE through mount DIR, compared with the kernel's
streams() {
	python3 - "$M/k" "$1" "$2" <<'PY'
import os, random, sys, threading
kroot, qroot, case = sys.argv[1:]

def drop(root, name):
    fd = os.open(os.path.join(root, name), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

def whole(root, name):
    with open(os.path.join(root, name), "rb") as f:
        return f.read()

errors = []
if case == "one":
    for n in ("a", "c"):
        if whole(qroot, n) != whole(kroot, n):
            errors.append(f"{n}: a sequential read differs")
elif case == "switch":
    r = random.Random(5)
    want = whole(kroot, "a")
    drop(qroot, "a")
    with open(os.path.join(qroot, "a"), "rb", buffering=0) as f:
        def at(off, n):
            f.seek(off)
            got = f.read(n)
            if got != want[off:off + n]:
                errors.append(f"a @{off}+{n}: differs")
        for off in range(0, 4 << 20, 128 << 10):          # a stream from the start
            at(off, 128 << 10)
        for _ in range(10):                                # short streams, each left at once
            start = r.randrange(len(want) >> 17) << 17
            for off in range(start, min(start + (1 << 20), len(want)), 128 << 10):
                at(off, 128 << 10)
        for _ in range(200):                               # then anywhere
            at(r.randrange(len(want)), r.choice([1, 4096, 65536, 200000]))
        for off in range(16 << 20, len(want), 128 << 10):  # a stream again, elsewhere
            at(off, 128 << 10)
elif case == "two":
    # a from its start, b from its middle: two streams far apart, each its own
    want = {n: whole(kroot, n) for n in ("a", "b")}
    def run(n, off):
        with open(os.path.join(qroot, n), "rb") as f:
            f.seek(off)
            if f.read() != want[n][off:]:
                errors.append(f"{n} from {off}: differs while another file streams")
    threads = [threading.Thread(target=run, args=a) for a in (("a", 0), ("b", 12 << 20))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
elif case == "close":
    # opened, streamed eight blocks (the pool queues the window), closed at once, again and again
    want = whole(kroot, "b")
    for i in range(40):
        drop(qroot, "b")
        off = (i * 7 % 150) << 17
        with open(os.path.join(qroot, "b"), "rb", buffering=0) as f:
            f.seek(off)
            got = b"".join(f.read(128 << 10) for _ in range(8))
            if got != want[off:off + (1 << 20)]:
                errors.append(f"b @{off}: differs")
for e in errors[:5]:
    print("#", e)
sys.exit(1 if errors else 0)
PY
}

# phase NAME CASE MOUNT-OPTIONS...: a fresh mount of $IMAGE, the case, its counters in $M/NAME.log
IMAGE=$M/img.sqfs
phase() {
	local name=$1 case=$2 pid st; shift 2
	sync && echo 3 >/proc/sys/vm/drop_caches
	mkdir -p "$M/q"
	QUASH_FILL_STATS=1 "$QUASH" mount -f "$@" "$IMAGE" "$M/q" 2>"$M/$name.log" &
	pid=$!
	QM_MOUNTS+=("f:$M/q")
	if ! wait_mounted "$M/q"; then
		not_ok "$name: mounted" "$(head -c 300 "$M/$name.log")"
		return 1
	fi
	check "$name: same bytes as the kernel's mount" streams "$M/q" "$case"
	fusermount3 -u "$M/q"
	wait $pid
}
# counter LOG WORD: the decompress-ahead counter before WORD ("loaded", "cancelled")
counter() {
	sed -n "s/.*decompress-ahead: .* \([0-9]*\) $2.*/\1/p" "$1"
}

phase one one
n=$(counter "$M/one.log" loaded)
# a stream starts at its third READ; a and c have 192 and 41 blocks
check "one reader: the blocks after its first reads were loaded ahead (${n:-none} of 233)" test "${n:-0}" -ge 200

phase switch switch
n=$(counter "$M/switch.log" cancelled)
check "a reader that jumps: the blocks queued for its stream were dropped (${n:-none})" test "${n:-0}" -ge 1
n=$(counter "$M/switch.log" loaded)
check "a reader that jumps and streams again: loaded ahead again (${n:-none} blocks, >= 40 after the jumps)" \
	test "${n:-0}" -ge 40

phase two two
n=$(counter "$M/two.log" loaded)
check "two readers of two files: both streams loaded ahead (${n:-none} of 288 blocks)" test "${n:-0}" -ge 250

phase off one -o nodecompress_ahead
check "nodecompress_ahead: no pool" test -z "$(counter "$M/off.log" loaded)"

port=$(free_port)
if start_nginx "$M/nginx" "$M" "$port"; then
	IMAGE=http://127.0.0.1:$port/img.sqfs phase remote one
	n=$(counter "$M/remote.log" loaded)
	check "a remote image: no block loaded ahead (${n:-no counters})" test "${n:-x}" = 0
else
	not_ok "nginx started for the remote image" "$(tail -c 300 "$M/nginx/error.log" 2>/dev/null)"
fi

# The ASan build, reads with file handles (timeout=, in one process: a held
# server's handles are tags, its reads find files by node id): a release waits
# for its blocks being loaded.
sync && echo 3 >/proc/sys/vm/drop_caches
mkdir -p "$M/h"
QUASH_FILL_STATS=1 "$QUASH_ASAN" mount -f -o noholder,timeout=3600 "$M/img.sqfs" "$M/h" 2>"$M/handles.log" &
pid=$!
QM_MOUNTS+=("f:$M/h")
if wait_mounted "$M/h"; then
	for c in one switch two close; do
		check "ASan, file handles: $c: same bytes as the kernel's mount" streams "$M/h" $c
	done
	fusermount3 -u "$M/h"
	wait $pid
	check "ASan, file handles: clean exit, no sanitizer report" clean_exit $? "$M/handles.log"
	n=$(sed -n 's/.*decompress-ahead: .* \([0-9]*\) waits at close.*/\1/p' "$M/handles.log")
	check "ASan, file handles: files closed while their blocks were loaded waited for them (${n:-none} waits)" \
		test "${n:-0}" -ge 1
else
	not_ok "ASan, file handles: mounted" "$(head -c 300 "$M/handles.log")"
fi
