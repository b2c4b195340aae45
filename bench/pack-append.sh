#!/bin/bash
# pack-append.sh - appending a tree a tenth the size of an image's, against
# repacking everything and against mksquashfs's own append, with the same
# command line (the mksquashfs form: gzip, 128K blocks).  Target: quash's
# append >= 5x faster than repacking, and as fast as mksquashfs's append.
#
#   bench/pack-append.sh [TREE]     default: as bench/pack.sh picks
# The tree appended is every tenth file of TREE with a line added to each
# (so that nothing in it deduplicates against the image), in BENCH_WORK.
# Environment: BENCH_WORK (scratch, default /tmp/quash-bench), QUASH
# (binary), REPEAT (rounds; the fastest run of each counts; default 1).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
W=${BENCH_WORK:-/tmp/quash-bench}/append
REPEAT=${REPEAT:-1}

pick_tree() {
	local t
	for t in /root/.pyenv/versions/3.11.7 /root/.pyenv/versions/3.12.1 /usr/lib/python3; do
		[ -d "$t" ] && { echo "$t"; return; }
	done
	echo /usr/share
}
SRC=${1:-$(pick_tree)}
[ -x "$QUASH" ] || { echo "pack-append.sh: $QUASH not built (make build)" >&2; exit 1; }
command -v mksquashfs >/dev/null || { echo "pack-append.sh: mksquashfs missing (make test-deps)" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W/bin" "$W/new"
trap 'rm -rf "$W"' EXIT
ln -s "$QUASH" "$W/bin/mksquashfs"
QM=$W/bin/mksquashfs

# The tenth: every tenth regular file, one line longer.
(cd "$SRC" && find . -type f | sort | awk 'NR % 10 == 0') | while IFS= read -r f; do
	mkdir -p "$W/new/$(dirname "$f")"
	{ cat "$SRC/$f"; echo appended; } >"$W/new/$f" 2>/dev/null
done
echo "tree: $SRC: $(du -sh --apparent-size "$SRC" | cut -f1); appended: $(du -sh --apparent-size "$W/new" | cut -f1)," \
	"$(nproc) cores, $(mksquashfs -version | head -1)"
tar -C "$SRC" -cf - . | cat >/dev/null
tar -C "$W/new" -cf - . | cat >/dev/null
mksquashfs "$SRC" "$W/base.sqfs" -noappend -quiet -no-progress >/dev/null 2>&1

declare -A TIME
# measure NAME IMAGE CMD...: IMAGE starts as a copy of the base image (or absent: "-").
measure() {
	local name=$1 image=$2 t; shift 2
	rm -f "$W/$name.sqfs"
	[ "$image" = - ] || cp "$W/base.sqfs" "$W/$name.sqfs"
	sync
	/usr/bin/time -f '%e' -o "$W/time" "$@" >/dev/null 2>"$W/$name.log" || { echo "$name failed" >&2; return; }
	t=$(tail -1 "$W/time")
	if [ -z "${TIME[$name]:-}" ] || awk "BEGIN{exit !($t < ${TIME[$name]})}"; then TIME[$name]=$t; fi
	printf '  %-28s %8.2f s %12d bytes\n' "$name" "$t" "$(stat -c %s "$W/$name.sqfs")"
}
for ((round = 1; round <= REPEAT; round++)); do
	measure quash-repack - "$QM" "$SRC" "$W/new" "$W/quash-repack.sqfs" -noappend -quiet -no-progress
	measure quash-append base "$QM" "$W/new" "$W/quash-append.sqfs" -quiet -no-progress
	measure mksquashfs-append base mksquashfs "$W/new" "$W/mksquashfs-append.sqfs" -quiet -no-progress
done
awk -v r="${TIME[quash-repack]}" -v a="${TIME[quash-append]}" -v m="${TIME[mksquashfs-append]}" 'BEGIN {
	printf "append vs repack: %.1fx faster (target >= 5x); vs mksquashfs append: %.2fx (target >= 1)\n", r / a, m / a }'
