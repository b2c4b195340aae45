#!/bin/bash
# lib-read.sh - build bench/lib-read.c against the release library and run
# it on a 1 GiB file and a 20,000-entry directory; with --callgrind, count
# instructions with valgrind instead (fewer operations: it is slow).
#
#   bench/lib-read.sh [--callgrind]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
work=${QUASH_BENCH_WORK:-/tmp/quash-bench-lib-read}
mkdir -p "$work"
ninja -C "$top/build" lib/libquash.a >/dev/null
cc -O2 -g -std=c11 -D_GNU_SOURCE -I"$top/lib" -I"$top/build/lib" "$top/bench/lib-read.c" "$top/build/lib/libquash.a" \
	$(pkg-config --libs libzstd liblz4 liblzma zlib libdeflate libxxhash libcurl) -llzo2 -lpthread \
	-o "$work/lib-read"

img=$work/bench.sqfs
if [ ! -e "$img" ]; then
	rm -rf "$work/tree" && mkdir -p "$work/tree/big"
	# 1 GiB that compresses about 3:1, like binaries, so blocks really decompress.
	python3 -c "
import os, random
r = random.Random(1)
chunk = bytes(r.getrandbits(8) for _ in range(1 << 16)) + bytes(2 << 16)
with open('$work/tree/file', 'wb') as f:
    for i in range((1 << 30) // len(chunk) + 1):
        f.write(chunk)
    f.truncate(1 << 30)
for i in range(20000):
    open('$work/tree/big/name-%06d-%s' % (i, 'x' * (i % 40)), 'w').close()
"
	mksquashfs "$work/tree" "$img" -comp zstd -noappend -quiet -no-progress >/dev/null
	rm -rf "$work/tree"
fi
if [ "${1:-}" = --callgrind ]; then
	valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
		"$work/lib-read" "$img" /file /big \
		20000 20000
	callgrind_annotate "$work/callgrind.out" | head -40
else
	"$work/lib-read" "$img" /file /big
fi
