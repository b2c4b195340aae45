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
