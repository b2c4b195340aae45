#!/bin/bash
# Many threads reading random ranges of many files at once for a bounded
# time, while another keeps evicting the mount's page cache; every byte is
# checked against the kernel's mount of the same image.
# Run with the defaults, with a block cache far smaller than the working set
# (evictions and single-flight waits), without the page-cache filler, and
# with file handles.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

trap unmount_all EXIT
M=$WORK/t-mount-concurrency
rm -rf "$M" && mkdir -p "$M/src/sub"
python3 - "$M/src" <<'PY'
import os, random, sys
r = random.Random(7)
root = sys.argv[1]
words = [bytes(r.choice(b"abcdefghij") for _ in range(r.randint(2, 9))) for _ in range(500)]
for i in range(60):
    size = r.choice([0, 1, 4095, 4096, 65537, 131072, 131073, 300000, 1 << 20, 3 << 20])
    if i % 3 == 0:
        data = os.urandom(size)
    else:
        data = b" ".join(r.choice(words) for _ in range(size // 5 + 1))[:size]
    with open(os.path.join(root, "sub" if i % 2 else "", f"f{i:03d}"), "wb") as f:
        f.write(data)
PY
mksquashfs "$M/src" "$M/img.sqfs" -comp zstd -noappend -quiet -no-progress >/dev/null
kmount "$M/img.sqfs" "$M/k"

# hammer SECONDS THREADS: random preads on both mounts, compared byte for byte.
hammer() {
	python3 - "$M/k" "$M/q" "$1" "$2" <<'PY'
import os, random, sys, threading, time
kroot, qroot, seconds, nthreads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
files = []
for d, _, names in os.walk(kroot):
    for n in names:
        rel = os.path.relpath(os.path.join(d, n), kroot)
        files.append((rel, os.path.getsize(os.path.join(kroot, rel))))
stop = time.monotonic() + seconds
errors, reads = [], [0] * nthreads

def run(t):
    r = random.Random(t)
    while time.monotonic() < stop and not errors:
        rel, size = r.choice(files)
        off = r.randrange(size + 1) if r.random() < 0.9 else r.randrange(size + 5000)
        n = r.choice([1, 100, 4096, 65536, 200000])
        try:
            with open(os.path.join(kroot, rel), "rb") as k, open(os.path.join(qroot, rel), "rb") as q:
                a, b = os.pread(k.fileno(), n, off), os.pread(q.fileno(), n, off)
        except OSError as e:
            errors.append(f"{rel}: {e}")
            return
        if a != b:
            errors.append(f"{rel} @{off}+{n}: {len(a)} vs {len(b)} bytes differ")
        reads[t] += 1

def evict():
    # push the quash mount's pages out now and then, so reads keep reaching the daemon
    while time.monotonic() < stop and not errors:
        for rel, _ in files:
            fd = os.open(os.path.join(qroot, rel), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        time.sleep(0.2)

threads = [threading.Thread(target=run, args=(t,)) for t in range(nthreads)]
threads.append(threading.Thread(target=evict))
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"# {sum(reads)} reads by {nthreads} threads")
for e in errors[:5]:
    print("#", e)
sys.exit(1 if errors or sum(reads) == 0 else 0)
PY
}

run_case() {   # run_case NAME SECONDS MOUNT-OPTIONS...
	local name=$1 seconds=$2 pid st tr=(); shift 2
	[ "${QM_TRANSPORT:-}" = uring ] && tr=(-o uring)
	sync && echo 3 >/proc/sys/vm/drop_caches
	mkdir -p "$M/q"
	"$QUASH_ASAN" mount -f "${tr[@]}" "$@" "$M/img.sqfs" "$M/q" 2>"$M/$name.log" &
	pid=$!
	QM_MOUNTS+=("f:$M/q")
	if ! wait_mounted "$M/q"; then
		not_ok "$name: mounted" "$(head -c 300 "$M/$name.log")"
		return
	fi
	check "$name: 32 threads read the same bytes as the kernel's mount" hammer "$seconds" 32
	fusermount3 -u "$M/q"
	wait $pid
	st=$?
	check "$name: clean exit, no sanitizer report" clean_exit $st "$M/$name.log"
}

# Seconds of each case; half over io_uring, where t-mount-uring runs this
# file again after it has run in full over /dev/fuse (CI time).
u=1
[ "${QM_TRANSPORT:-}" = uring ] && u=2
run_case default $((8 / u))
run_case tiny-cache $((4 / u)) -o cache_size=256K,threads=4
run_case no-fill $((4 / u)) -o nonotify_store -s
# timeout= keeps OPEN and OPENDIR (open files are counted): reads then come with a handle
run_case handles $((4 / u)) -o timeout=3600

# Pages the kernel drops (fio drops a file's pages at every pass, memory
# pressure does too) must be pushed again when they are read again: a block
# left out of the page cache costs one round trip per 4 KiB page.
# QUASH_FILL_STATS makes the daemon count its pushes at exit.
refill_case() {
	local pid st stored
	mkdir -p "$M/r"
	QUASH_FILL_STATS=1 "$QUASH_ASAN" mount -f "$M/img.sqfs" "$M/r" 2>"$M/refill.log" &
	pid=$!
	QM_MOUNTS+=("f:$M/r")
	if ! wait_mounted "$M/r"; then
		not_ok "refill: mounted" "$(head -c 300 "$M/refill.log")"
		return
	fi
	check "refill: a page of each block read twice, dropped in between, same bytes as the kernel's" \
		python3 - "$M/k" "$M/r" <<'PY'
import os, sys, time
kroot, qroot = sys.argv[1:]
big = max((os.path.getsize(os.path.join(kroot, n)), n) for n in os.listdir(kroot) if n.startswith("f"))[1]
def read_pages(root):
    fd = os.open(os.path.join(root, big), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)   # 4 KiB requests, no readahead
    pages = [os.pread(fd, 4096, off) for off in range(0, os.path.getsize(os.path.join(root, big)), 131072)]
    os.close(fd)
    return pages
want = read_pages(kroot)
for _ in range(2):
    if read_pages(qroot) != want:
        sys.exit(f"{big}: bytes differ")
    time.sleep(0.3)            # the filler stores the blocks
    fd = os.open(os.path.join(qroot, big), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    time.sleep(0.2)
# a block the 4 KiB read covers whole (a short tail) needs no push
size = os.path.getsize(os.path.join(kroot, big))
print(sum(1 for off in range(0, size, 131072) if min(size - off, 131072) > 4096),
      file=open(os.path.join(os.path.dirname(qroot), "refill.blocks"), "w"))
PY
	fusermount3 -u "$M/r"
	wait $pid
	st=$?
	check "refill: clean exit, no sanitizer report" clean_exit $st "$M/refill.log"
	stored=$(sed -n 's/.* \([0-9]*\) stored.*/\1/p' "$M/refill.log")
	check "refill: every block pushed again after its pages were dropped (${stored:-?} pushes, $(cat "$M/refill.blocks" 2>/dev/null) blocks)" \
		test "${stored:-0}" -ge $((2 * $(cat "$M/refill.blocks" 2>/dev/null || echo 1)))
}
refill_case
