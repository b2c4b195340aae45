#!/bin/bash
# Thread safety of the reader under ThreadSanitizer: tests/fuzz/thread_stress.c
# opens one image and has 8 threads read random ranges and blocks of shared
# open files, list directories, look names up, read xattrs and inodes by
# number, with a tiny block cache so that blocks are evicted and reloaded
# while others wait on them.  Every byte is compared with the fixture tree.
# Any data race report (or mismatch) fails.  build-tsan/ is a meson build of
# its own, made here.
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"
source "$top/tests/lib/fixtures.sh"
fixtures_build || { not_ok "fixtures build"; exit 1; }

build=$top/build-tsan
THREADS=8
OPS=600

if [ ! -e "$build/build.ninja" ]; then
	meson setup "$build" -Dwerror=true --buildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false \
		>"$WORK/tsan-setup.log" 2>&1 ||
		{ not_ok "ThreadSanitizer build setup" "$(tail -3 "$WORK/tsan-setup.log")"; exit 1; }
fi
ninja -C "$build" tests/thread_stress >"$WORK/tsan-build.log" 2>&1 ||
	{ not_ok "ThreadSanitizer build" "$(grep -m3 error "$WORK/tsan-build.log")"; exit 1; }

export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
for name in gzip-4k xz-4k-tailends zstd-128k lz4-4k-nofrag lzo-4k-nofrag lzma-128k; do
	img=$FIX_DIR/img/$name.sqfs
	timeout 300 "$build/tests/thread_stress" "$img" "$FIX_TREE" $THREADS $OPS >"$WORK/tsan.out" 2>&1
	st=$?
	if [ $st -eq 0 ]; then ok "$THREADS threads on $name: no race, every byte matches"
	else not_ok "$THREADS threads on $name" \
		"exit $st: $(grep -m2 -E 'WARNING|MISMATCH|thread_stress' "$WORK/tsan.out")"; fi
done
rm -f "$WORK/tsan.out"

# The writer's threads under ThreadSanitizer: the scan pool, the data
# phase's prefetcher, the compression pipeline and the tables' workers, on
# a tree of 2,000 small files and the fixture tree, with and without
# --memory (whose tree is paged out while those threads read it).  The
# images must be the release build's, byte for byte.
ninja -C "$build" cli/quash >>"$WORK/tsan-build.log" 2>&1 ||
	{ not_ok "ThreadSanitizer build of quash" "$(grep -m3 error "$WORK/tsan-build.log")"; exit 1; }
P=$WORK/tsan-pack
rm -rf "$P" && mkdir -p "$P/src"
python3 - "$P/src" <<'PY'
import os, sys
for d in range(20):
    os.makedirs(f"{sys.argv[1]}/d{d:02d}")
    for f in range(100):
        with open(f"{sys.argv[1]}/d{d:02d}/f{f:03d}", "w") as fh:
            fh.write(f"{d % 3}-{f % 7}\n" * (1 + f % 5))
PY
for src in "$P/src" "$FIX_TREE"; do
	for mem in "" "--memory 1M"; do
		name="pack $(basename "$src") ${mem:-unbounded}"
		$QUASH pack -q --no-progress -j 2 $mem "$src" "$P/want.sqfs" 2>/dev/null
		timeout 300 "$build/cli/quash" pack -q --no-progress -j 2 $mem "$src" "$P/got.sqfs" >"$WORK/tsan.out" 2>&1
		st=$?
		if [ $st -eq 0 ] && cmp -s "$P/want.sqfs" "$P/got.sqfs"; then ok "$name: no race, the release build's image"
		else not_ok "$name" "exit $st: $(grep -m2 -E 'WARNING|SUMMARY' "$WORK/tsan.out")"; fi
	done
done
rm -rf "$P" "$WORK/tsan.out"
