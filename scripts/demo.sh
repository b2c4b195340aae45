#!/bin/bash
# demo.sh - what `make demo` shows: the main job.  A sample tree (a few
# hand-made files and a copy of /usr/share/doc) is packed with quash pack,
# mounted with quash mount and, beside it, with the kernel's own squashfs
# (root only), every file read through both and timed, cold and warm, the
# bytes compared; then the offline tools, and everything unmounted and
# removed, also when a step fails.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
quash=${QUASH_BIN:-$top/build/cli/quash}
[ -x "$quash" ] || { echo "demo: $quash is missing; run 'make build' first" >&2; exit 1; }

tmp=$(mktemp -d /tmp/quash-demo.XXXXXX)
cleanup() {
	fusermount3 -u -z "$tmp/quash-mnt" 2>/dev/null || true
	umount -l "$tmp/kernel-mnt" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
tree=$tmp/sample image=$tmp/sample.sqfs
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
# Seconds to read every file below DIR, one line.
read_all() { local t0=$(date +%s.%N); find "$1" -type f -print0 | xargs -0 cat >/dev/null; echo "$(date +%s.%N) - $t0" | bc; }
drop_caches() { [ "$(id -u)" = 0 ] && sync && echo 3 >/proc/sys/vm/drop_caches || true; }

mkdir -p "$tree/docs" "$tree/bin"
echo "Hello from inside a squashfs image." >"$tree/docs/hello.txt"
seq 1 100000 >"$tree/docs/numbers.txt"
printf '#!/bin/sh\necho "hello from $0"\n' >"$tree/bin/hello" && chmod 0755 "$tree/bin/hello"
ln -s ../docs/hello.txt "$tree/bin/readme"
truncate -s 10M "$tree/sparse.img" && echo end >>"$tree/sparse.img"
[ -d /usr/share/doc ] && cp -a /usr/share/doc "$tree/doc" 2>/dev/null || true
echo "Sample tree: $(find "$tree" | wc -l) entries, $(du -sh --apparent-size "$tree" | cut -f1)"

step "$quash" pack "$tree" "$image"
step "$quash" info "$image"
step "$quash" ls -l "$image" /docs
step "$quash" cat "$image" /docs/hello.txt

mkdir -p "$tmp/quash-mnt" "$tmp/kernel-mnt"
step "$quash" mount "$image" "$tmp/quash-mnt"
step "$tmp/quash-mnt/bin/hello"
kernel=no
if [ "$(id -u)" = 0 ] && mount -t squashfs -o loop,ro "$image" "$tmp/kernel-mnt" 2>/dev/null; then
	kernel=yes
	echo "(and the kernel's squashfs on $tmp/kernel-mnt, to compare with)"
else
	echo "(the kernel's squashfs needs root and a loop device: only quash's mount is timed)"
fi

echo
echo "Reading every file, seconds (caches dropped before 'cold' when root):"
printf '%-22s %8s %8s\n' "" cold warm
for which in quash kernel; do
	[ $which = kernel ] && [ $kernel = no ] && continue
	drop_caches
	cold=$(read_all "$tmp/$which-mnt")
	warm=$(read_all "$tmp/$which-mnt")
	printf '%-22s %8.3f %8.3f\n' "$which mount" "$cold" "$warm"
done
if diff -r --no-dereference "$tree" "$tmp/quash-mnt" >/dev/null; then
	echo "Every file read through quash's mount equals the sample tree."
else
	echo "demo: the mount differs from the sample tree" >&2
	exit 1
fi

step "$quash" umount "$tmp/quash-mnt"
[ $kernel = yes ] && umount "$tmp/kernel-mnt"
step "$quash" extract "$image" /docs -C "$tmp/copy"
diff -r "$tree/docs" "$tmp/copy/docs" >/dev/null && echo "The extracted /docs equals the sample's."
echo
echo "Next: the quick start in README.md; man -l docs/quash.1; $quash --help"
