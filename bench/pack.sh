#!/bin/bash
# pack.sh - quash pack against mksquashfs (squashfs-tools) and tar2sqfs
# (squashfs-tools-ng), side by side in one run, from a directory and from a
# tar of it.  Prints times, CPU seconds (user + system: at zstd 15 every tool
# is bound by the compressor on every core), image sizes and the ratios the
# targets are stated in:
#   identical settings (zstd 15, 128K blocks): quash >= 1.2x faster than
#     mksquashfs, image <= 1% larger;
#   defaults: quash's image no larger than mksquashfs's default image, and
#     >= 5x faster.
# and the command lines real builders give mksquashfs, each run as it is by
# Debian's mksquashfs and by `quash mksquashfs` (the drop-in) in the same
# round, the two images compared for equal content with Debian's unsquashfs
# (identical bytes, or the same -lln listing and the same extracted files):
#   live-build (an ISO's live root, as the issue's report had it):
#     -comp xz -Xbcj x86 -b 1M
#   snapcraft (an application snap): -noappend -comp xz -no-xattrs
#     -no-fragments -all-root
#   SingularityCE/Apptainer (a data container from a tar): -noappend
#     -all-root, gzip by default
#   Compiler Explorer (one compiler's image): -all-root -root-mode 755
#     -comp zstd
#
#   bench/pack.sh [TREE]     default: a Python installation with site-packages
# Environment: BENCH_WORK (scratch, default /tmp/quash-bench), QUASH (binary),
# REPEAT (rounds: every measurement once per round, the tools taking turns;
# the fastest run of each counts; default 1), ROWS (default "base builders":
# base, the zstd 15 and defaults rows; builders, the builders' lines).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
W=${BENCH_WORK:-/tmp/quash-bench}
REPEAT=${REPEAT:-1}
ROWS=${ROWS:-base builders}
JOBS=$(nproc)

pick_tree() {
	local t
	for t in /root/.pyenv/versions/3.11.7 /root/.pyenv/versions/3.12.1 /usr/lib/python3; do
		[ -d "$t" ] && { echo "$t"; return; }
	done
	echo /usr/share
}
SRC=${1:-$(pick_tree)}
[ -x "$QUASH" ] || { echo "pack.sh: $QUASH not built (make build)" >&2; exit 1; }
for tool in mksquashfs tar2sqfs; do
	command -v $tool >/dev/null || { echo "pack.sh: $tool missing (make test-deps)" >&2; exit 1; }
done
mkdir -p "$W"
trap 'rm -f "$W"/*.sqfs' EXIT

echo "tree: $SRC: $(find "$SRC" | wc -l) entries, $(du -sh --apparent-size "$SRC" | cut -f1)," \
	"$JOBS cores, $(mksquashfs -version | head -1), $(tar2sqfs --version | head -1)"
[ -f "$W/tree.tar" ] && [ "$W/tree.tar" -nt "$SRC" ] || tar -C "$SRC" -cf "$W/tree.tar" .
tar -C "$SRC" -cf - . | cat >/dev/null      # the tree in the page cache, for every tool alike
cat "$W/tree.tar" >/dev/null

declare -A TIME SIZE CPU
# measure NAME CMD...: one run, the fastest so far counts; the image is $W/NAME.sqfs
measure() {
	local name=$1 t c; shift
	rm -f "$W/$name.sqfs"
	/usr/bin/time -f '%e %U %S' -o "$W/time" "$@" >/dev/null 2>"$W/$name.log"
	read -r t c < <(tail -1 "$W/time" | awk '{print $1, $2 + $3}')
	[ -s "$W/$name.sqfs" ] || { echo "pack.sh: $name failed" >&2; t=NaN; }
	if [ -z "${TIME[$name]:-}" ] || awk "BEGIN{exit !($t < ${TIME[$name]})}"; then
		TIME[$name]=$t CPU[$name]=$c
	fi
	SIZE[$name]=$(stat -c %s "$W/$name.sqfs" 2>/dev/null || echo 0)
	printf '  %-22s %8.2f s %8.2f s CPU %12d bytes\n' "$name" "$t" "$c" "${SIZE[$name]}"
}
export TAR=$W/tree.tar      # tar2sqfs reads its tar from standard input only

# name|options, as each builder passes them; every run adds -noappend -quiet -no-progress
BUILDERS=(
	"live-build|-comp xz -Xbcj x86 -b 1M"
	"snapcraft|-comp xz -no-xattrs -no-fragments -all-root"
	"apptainer|-all-root"
	"compiler-explorer|-all-root -root-mode 755 -comp zstd"
)

base_round() {
	echo "identical settings: zstd level 15, 128K blocks"
	measure mksquashfs-z15   mksquashfs "$SRC" "$W/mksquashfs-z15.sqfs" -noappend -quiet -no-progress \
		-comp zstd -Xcompression-level 15 -b 128K -processors "$JOBS"
	measure quash-z15        "$QUASH" pack -q --no-progress -c zstd -l 15 -b 128K "$SRC" "$W/quash-z15.sqfs"
	measure tar2sqfs-z15-tar sh -c 'exec tar2sqfs "$@" <"$TAR"' sh -q -f -e -c zstd -X level=15 -b 131072 \
		-j "$JOBS" "$W/tar2sqfs-z15-tar.sqfs"
	measure quash-z15-tar    "$QUASH" pack -q --no-progress -c zstd -l 15 -b 128K "$W/tree.tar" \
		"$W/quash-z15-tar.sqfs"
	echo "each tool's defaults"
	measure mksquashfs-def   mksquashfs "$SRC" "$W/mksquashfs-def.sqfs" -noappend -quiet -no-progress
	measure quash-def        "$QUASH" pack -q --no-progress "$SRC" "$W/quash-def.sqfs"
	measure tar2sqfs-def-tar sh -c 'exec tar2sqfs "$@" <"$TAR"' sh -q -f -j "$JOBS" "$W/tar2sqfs-def-tar.sqfs"
	measure quash-def-tar    "$QUASH" pack -q --no-progress "$W/tree.tar" "$W/quash-def-tar.sqfs"
}

builders_round() {
	local b name opts
	echo "builders' command lines, mksquashfs then quash mksquashfs"
	for b in "${BUILDERS[@]}"; do
		name=${b%%|*} opts=${b#*|}
		# shellcheck disable=SC2086  # the options are words
		measure "mk-$name" mksquashfs "$SRC" "$W/mk-$name.sqfs" -noappend -quiet -no-progress $opts
		# shellcheck disable=SC2086
		measure "q-$name" "$QUASH" mksquashfs "$SRC" "$W/q-$name.sqfs" -noappend -quiet -no-progress $opts
	done
}

# every measurement once per round, REPEAT rounds: the tools take turns, so
# a host that slows down or speeds up during the run weighs on all of them
for round in $(seq "$REPEAT"); do
	echo "round $round of $REPEAT"
	case " $ROWS " in *" base "*) base_round ;; esac
	case " $ROWS " in *" builders "*) builders_round ;; esac
done

# ratio A B: A's time over B's (how many times faster B is), the same for CPU, B's size against A's.
ratio() {
	awk -v ta="${TIME[$1]}" -v tb="${TIME[$2]}" -v sa="${SIZE[$1]}" -v sb="${SIZE[$2]}" \
		-v ca="${CPU[$1]}" -v cb="${CPU[$2]}" -v a="$1" -v b="$2" \
		'BEGIN { printf "  %-17s vs %-17s %6.2fx faster, %5.2fx less CPU, image %+6.2f%%\n",
			 b, a, ta / tb, ca / cb, 100 * (sb - sa) / sa }'
}
target() {   # target TEXT AWK-CONDITION
	if awk "BEGIN{exit !($2)}"; then echo "  PASS $1"; else echo "  FAIL $1"; fi
}
# same_content A B: "identical bytes", "same content" (unsquashfs -lln and the extracted files), or what differs
# A directory's size is its listing's encoding (where headers fall), not its content: it is left out.
listing() {
	unsquashfs -lln -d r "$1" | awk '/^d/ { $3 = "-" } { print }'
}
same_content() {
	local a=$W/$1.sqfs b=$W/$2.sqfs
	if cmp -s "$a" "$b"; then echo "identical bytes"; return; fi
	if ! diff <(listing "$a") <(listing "$b") >"$W/lln.diff"; then
		echo "DIFFERENT listings: $(head -c 200 "$W/lln.diff")"; return
	fi
	rm -rf "$W/xa" "$W/xb"
	unsquashfs -q -n -d "$W/xa" "$a" >/dev/null && unsquashfs -q -n -d "$W/xb" "$b" >/dev/null &&
		diff -r --no-dereference "$W/xa" "$W/xb" >/dev/null && echo "same content" || echo "DIFFERENT files"
	rm -rf "$W/xa" "$W/xb"
}

case " $ROWS " in *" builders "*)
	echo "builders' lines: quash mksquashfs against mksquashfs"
	for b in "${BUILDERS[@]}"; do
		name=${b%%|*}
		ratio "mk-$name" "q-$name"
		echo "    $(same_content "mk-$name" "q-$name")"
	done ;;
esac
case " $ROWS " in *" base "*) ;; *) exit 0 ;; esac
echo "ratios"
ratio mksquashfs-z15 quash-z15
ratio tar2sqfs-z15-tar quash-z15-tar
ratio mksquashfs-def quash-def
ratio tar2sqfs-def-tar quash-def-tar
echo "targets"
target "zstd 15/128K: >= 1.2x faster than mksquashfs" "${TIME[mksquashfs-z15]} >= 1.2 * ${TIME[quash-z15]}"
target "zstd 15/128K: image <= 1% larger than mksquashfs's" \
	"${SIZE[quash-z15]} <= 1.01 * ${SIZE[mksquashfs-z15]}"
target "defaults: image no larger than mksquashfs's default" "${SIZE[quash-def]} <= ${SIZE[mksquashfs-def]}"
target "defaults: >= 5x faster than mksquashfs's default" "${TIME[mksquashfs-def]} >= 5 * ${TIME[quash-def]}"
same=$(cmp -s "$W/quash-def.sqfs" "$W/quash-def-tar.sqfs" && echo 1 || echo 0)
target "tarball and directory give the identical image" "$same"
