#!/bin/bash
# build.sh - build the libFuzzer target with clang, ASan and UBSan.
#
#   tests/fuzz/build.sh [OUTDIR]      default OUTDIR: build-fuzz
#
# The library is compiled straight from lib/ (its meson list), so that the
# fuzzer's coverage instrumentation reaches into it.
#
# Then, for example:
#   tests/fuzz/make-seeds.sh /tmp/fz
#   build-fuzz/fuzz_image -max_len=65536 -timeout=10 -rss_limit_mb=2048 /tmp/fz/corpus /tmp/fz/seeds
# A crash, leak, timeout or oversized allocation leaves its input in the
# current directory; keep it (small) under tests/fuzz/regress/ once fixed.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/build-fuzz}
mkdir -p "$out"

srcs=$(sed -n "s/^ *'\([a-z0-9_/]*\.c\)',*$/\1/p" "$top/lib/meson.build" | sed "s|^|$top/lib/|")
# libcurl is opened on first use (lib/io/lazy_lib.h), not linked.
libs=$(pkg-config --libs libzstd liblz4 liblzma zlib libdeflate libxxhash)

clang -g -O1 -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$top/lib" -I"$top/lib/format" -I"$top/lib/codec" -I"$top/lib/io" -I"$top/tests/fuzz" \
	$srcs "$top/tests/fuzz/walk.c" "$top/tests/fuzz/fuzz_image.c" \
	$libs -llzo2 -lpthread -o "$out/fuzz_image"
echo "$out/fuzz_image"
