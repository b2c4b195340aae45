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
libs=$(pkg-config --libs libzstd liblz4 liblzma zlib libdeflate libxxhash libcrypto)
# quash.h's version header, as meson generates it from project().
version=$(sed -n "s/^ *version : '\([0-9.]*\)'.*/\1/p" "$top/meson.build" | head -1)
IFS=. read -r major minor patch <<<"$version"
sed -e "s/@VERSION@/$version/" -e "s/@MAJOR@/$major/" -e "s/@MINOR@/$minor/" -e "s/@PATCH@/$patch/" \
	"$top/lib/quash_version.h.in" >"$out/quash_version.h"
incs=$(cd "$top/lib" && find . -type d | sed "s|^\.|-I$top/lib|")

clang -g -O1 -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	$incs -I"$out" -I"$top/tests/fuzz" \
	$srcs "$top/tests/fuzz/walk.c" "$top/tests/fuzz/fuzz_image.c" \
	$libs -llzo2 -lpthread -o "$out/fuzz_image"
echo "$out/fuzz_image"
