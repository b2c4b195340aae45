#!/bin/bash
# demo.sh - what `make demo` shows: a small sample tree packed into an image
# with `quash pack` (mksquashfs if pack fails), then the offline tools on it:
# info, ls -l, cat, stat, extract, and a check that the extracted copy is the
# tree that went in.  Needs only a build (make build); writes under a
# temporary directory that it removes at the end.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
quash=${QUASH_BIN:-$top/build/cli/quash}
[ -x "$quash" ] || { echo "demo: $quash is missing; run 'make build' first" >&2; exit 1; }

tmp=$(mktemp -d /tmp/quash-demo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/sample
image=$tmp/sample.sqfs

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# A sample tree: text, a file of several blocks, a symlink, a hard link,
# an empty directory, an executable, a sparse file and, when possible, xattrs.
mkdir -p "$tree/docs" "$tree/bin" "$tree/empty"
cat >"$tree/docs/hello.txt" <<'EOF'
Hello from inside a squashfs image.
This file was packed by quash and read back without mounting anything.
EOF
seq 1 100000 >"$tree/docs/numbers.txt"
printf '#!/bin/sh\necho hi\n' >"$tree/bin/hi" && chmod 0755 "$tree/bin/hi"
ln -s ../docs/hello.txt "$tree/bin/readme"
ln "$tree/docs/hello.txt" "$tree/docs/hello-again.txt"
truncate -s 10M "$tree/sparse.img" && echo end >>"$tree/sparse.img"
setfattr -n user.comment -v "a demo xattr" "$tree/docs/hello.txt" 2>/dev/null || true
touch -d '2024-01-02 03:04:05 UTC' "$tree/docs/hello.txt"

echo "Sample tree in $tree; packing it:"
if ! step "$quash" pack "$tree" "$image"; then
	echo "(quash pack failed; using mksquashfs instead)"
	step mksquashfs "$tree" "$image" -quiet -no-progress
fi

step "$quash" info "$image"
step "$quash" ls -l "$image"
step "$quash" ls -lR "$image" /docs
step "$quash" cat "$image" /docs/hello.txt
step "$quash" stat "$image" /docs/hello.txt
step "$quash" info --json "$image"
step "$quash" extract "$image" -C "$tmp/copy"
echo
if diff -r --no-dereference "$tree" "$tmp/copy" >/dev/null; then
	echo "The extracted copy has the same contents as the sample tree."
else
	echo "demo: the extracted copy differs from the sample tree" >&2
	exit 1
fi
echo "Try: $quash --help, $quash extract --help"
