#!/bin/bash
# quash extract against unsquashfs: every fixture image is extracted by both
# and the trees compared entry by entry (tests/lib/treecmp.py: type, mode,
# owner, mtime, size, contents, symlink targets, rdev, xattrs, hard links).
# Also: extracting a sub-path, an image at an offset inside a larger file,
# sparse output for sparse input, and the depth limit quash-extract(1)
# documents (an image deeper than that is cut there, in one line and exit
# 1).  Every run of the ASan/UBSan binary must exit as
# expected with no sanitizer report (tests/lib/asan.sh).
#
# The ASan/UBSan binary extracts the main and small images; the release one
# the heavy ones (20,000 entries, a 5 GiB sparse file).
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"
source "$top/tests/lib/fixtures.sh"
source "$top/tests/lib/asan.sh"
fixtures_build || { not_ok "fixtures build"; exit 1; }

out=$WORK/offline-extract
rm -rf "$out" && mkdir -p "$out"
# Scratch space in memory: tens of thousands of small files and 5 GiB of
# holes are written and removed here, which a disk makes slow.
mount -t tmpfs -o size=16g,mode=0755 quash-test "$out" 2>/dev/null
trap 'mountpoint -q "$out" && umount "$out"; rm -rf "$out"' EXIT

# extract_and_compare NAME BINARY IMAGE [SUBPATH]
extract_and_compare() {
	local name=$1 bin=$2 img=$3 sub=("${@:4}")
	rm -rf "$out/u" "$out/q"
	if ! unsquashfs -q -n -d "$out/u" "$img" "${sub[@]}" >"$out/unsquashfs.log" 2>&1; then
		not_ok "$name" "unsquashfs failed: $(tail -c 300 "$out/unsquashfs.log")"
		return
	fi
	if ! qa "$out/quash.log" "$bin" extract "$img" "${sub[@]}" -C "$out/q" >"$out/why"; then
		not_ok "$name" "quash extract failed: $(head -c 400 "$out/why")"
		return
	fi
	if python3 "$top/tests/lib/treecmp.py" "$out/u" "$out/q" >"$out/diff.log" 2>&1; then
		ok "$name"
	else
		not_ok "$name" "$(head -c 600 "$out/diff.log" | tr '\n' ';')"
	fi
}

for img in "${FIX_IMAGES[@]}" "${FIX_SMALL_IMAGES[@]}"; do
	n=$(basename "$img" .sqfs)
	extract_and_compare "extract $n matches unsquashfs" "$QUASH_ASAN" "$img"
done

for img in "${FIX_HEAVY_IMAGES[@]}"; do
	n=$(basename "$img" .sqfs)
	extract_and_compare "extract $n matches unsquashfs" "$QUASH" "$img"
	# Kept from the last comparison: quash wrote the 5 GiB file with holes.
	blocks=$(stat -c %b "$out/q/sparse-5g" 2>/dev/null || echo missing)
	if [ "$blocks" != missing ] && [ "$blocks" -lt 20480 ]; then
		ok "extract $n writes sparse-5g sparse"
	else
		not_ok "extract $n writes sparse-5g sparse" "512-byte blocks: $blocks"
	fi
done

# Sub-paths: a directory, a deep directory, a file with hard links, a symlink.
for img in "$FIX_DIR/img/gzip-4k.sqfs" "$FIX_DIR/img/zstd-128k.sqfs" "$FIX_DIR/img/xz-bcj-1m.sqfs"; do
	n=$(basename "$img" .sqfs)
	for sub in files deep/d0/d1/d2 hardlinks hardlinks/triple-1 symlinks/long special/fifo names; do
		extract_and_compare "extract $n $sub matches unsquashfs" "$QUASH_ASAN" "$img" "$sub"
	done
done

# An image 1 MiB into a larger file, with junk after it.
img=$FIX_DIR/img/lz4-128k.sqfs
{ head -c 1048576 /dev/urandom; cat "$img"; head -c 12345 /dev/urandom; } >"$out/embedded.bin"
for off in 1M 1048576 0x100000 1024K; do
	rm -rf "$out/u" "$out/q"
	unsquashfs -q -n -d "$out/u" "$img" >/dev/null 2>&1
	if qa "$out/quash.log" "$QUASH_ASAN" extract --offset "$off" "$out/embedded.bin" -C "$out/q" >"$out/why" &&
	   python3 "$top/tests/lib/treecmp.py" "$out/u" "$out/q" >"$out/diff.log" 2>&1; then
		ok "extract --offset $off of an embedded image"
	else
		not_ok "extract --offset $off of an embedded image" "$(head -c 400 "$out/why" "$out/diff.log")"
	fi
done
check_fails "extract of the embedded image without --offset fails" 1 \
	"^quash: $(ere "$out/embedded.bin"): not a squashfs image \(bad magic\)\$" \
	one_line "$QUASH_ASAN" extract "$out/embedded.bin" -C "$out/none"
check "... and makes no DIR" test ! -e "$out/none"

# Existing files in DIR are not overwritten without -f, and extraction says
# so in one line however many there are (unsquashfs prints one per file).
rm -rf "$out/q" && mkdir -p "$out/q"
echo keep >"$out/q/random"
"$QUASH_ASAN" extract "$FIX_DIR/img/small-gzip-4k.sqfs" -C "$out/q" >/dev/null 2>"$out/err"
st=$?
if [ $st -eq 1 ] && [ "$(cat "$out/q/random")" = keep ] && [ "$(wc -l <"$out/err")" -eq 1 ] &&
   grep -q "^quash: .*small-gzip-4k.sqfs: 1 entry already in $out/q left alone (the first: /random); use -f to overwrite\$" "$out/err"
then ok "extract does not overwrite an existing file, and says so once"
else not_ok "extract does not overwrite an existing file, and says so once" "exit $st: $(head -c 300 "$out/err")"; fi
"$QUASH_ASAN" extract "$FIX_DIR/img/small-gzip-4k.sqfs" -C "$out/q" >/dev/null 2>"$out/err"
st=$?
n=$(find "$out/q" ! -type d | wc -l)
if [ $st -eq 1 ] && [ "$(wc -l <"$out/err")" -eq 1 ] && grep -q ": $n entries already in " "$out/err"
then ok "a second extract into the same DIR: one line counting all $n entries"
else not_ok "a second extract into the same DIR: one line" "exit $st: $(head -c 300 "$out/err")"; fi

# -f replaces files, and symbolic links in the way without following them.
rm -rf "$out/q" "$out/u" && mkdir -p "$out/q"
unsquashfs -q -n -d "$out/u" "$FIX_DIR/img/small-gzip-4k.sqfs" >/dev/null 2>&1
echo keep >"$out/victim"
echo stale >"$out/q/random"
ln -s "$out/victim" "$out/q/$(cd "$out/u" && find . -maxdepth 1 -type f ! -name random | head -1 | cut -c3-)"
if "$QUASH_ASAN" extract -f "$FIX_DIR/img/small-gzip-4k.sqfs" -C "$out/q" >/dev/null 2>"$out/err" &&
   [ "$(cat "$out/victim")" = keep ] && [ ! -s "$out/err" ] &&
   chmod --reference="$out/u" "$out/q" && touch -r "$out/u" "$out/q" &&
   python3 "$top/tests/lib/treecmp.py" "$out/u" "$out/q" >"$out/diff.log" 2>&1
then ok "extract -f replaces existing files and links (never writing through a link)"
else not_ok "extract -f replaces existing files and links" "$(head -c 300 "$out/err" "$out/diff.log")"; fi

# A directory that was already there, DIR itself or one inside it, keeps
# its owner and mode: unsquashfs changes them only with -f.  One
# that extract creates takes the image's, as unsquashfs -d gives it.
rm -rf "$out/q" && mkdir -p "$out/q/files" && chown nobody:nogroup "$out/q" "$out/q/files"
chmod 0750 "$out/q" && chmod 0705 "$out/q/files"

before=$(stat -c '%U:%G %a' "$out/q" "$out/q/files")
qa "$out/x" "$QUASH_ASAN" extract "$FIX_DIR/img/gzip-4k.sqfs" -C "$out/q" >"$out/why"; st=$?
after=$(stat -c '%U:%G %a' "$out/q" "$out/q/files")
check "extract into an existing DIR keeps its owner and mode, and those of an existing directory in it" \
	test "$st:$before" = "0:$after" -a -s "$out/q/files/dup-a"
rm -rf "$out/u" "$out/q"
unsquashfs -q -n -d "$out/u" "$FIX_DIR/img/gzip-4k.sqfs" >/dev/null 2>&1
qa "$out/x" "$QUASH_ASAN" extract "$FIX_DIR/img/gzip-4k.sqfs" -C "$out/q" >"$out/why"; st=$?
check "a DIR extract creates takes the image root's owner, mode and time, as unsquashfs -d" \
	test "$st:$(stat -c '%U:%G %a %Y' "$out/u")" = "0:$(stat -c '%U:%G %a %Y' "$out/q")"

# As an ordinary user: no owners, devices or trusted.* xattrs, no setuid or
# setgid bits, the umask on files; unsquashfs run as that user is the oracle.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
mkdir -p "$out/nobody" && chown nobody "$out/nobody"
for img in "$FIX_DIR/img/gzip-4k.sqfs" "$FIX_DIR/img/xz-128k.sqfs"; do
	n=$(basename "$img" .sqfs)
	rm -rf "$out/nobody/u" "$out/nobody/q"
	# unsquashfs exits 2 for the devices it cannot make; quash reports them and goes on.
	(cd "$out/nobody" && umask 022 && as_nobody unsquashfs -q -n -d u "$img" >/dev/null 2>&1)
	if (cd "$out/nobody" && umask 022 && as_nobody "$QUASH_ASAN" extract "$img" -C q) 2>"$out/err" &&
	   ! grep -v 'skipped: only root can create device nodes$' "$out/err" | grep -q . &&
	   python3 "$top/tests/lib/treecmp.py" "$out/nobody/u" "$out/nobody/q" >"$out/diff.log" 2>&1
	then ok "extract $n as an ordinary user matches unsquashfs"
	else not_ok "extract $n as an ordinary user matches unsquashfs" \
		"$(head -c 600 "$out/err" "$out/diff.log" | tr '\n' ';')"; fi
done

# The depth limit quash-extract(1) documents: a chain of directories 300
# deep, a file in the deepest directory extract may enter and one in the
# next, and a file beside the chain at the top.  unsquashfs extracts it all
# (so the image really is that deep); quash stops at the limit in one line
# naming the first directory it refuses, writes nothing below it, and still
# extracts the rest.
max=$(sed -n 's/^Directories are entered to a depth of \([0-9][0-9]*\) levels.*/\1/p' "$top/docs/quash-extract.1")
check "quash-extract(1) documents the depth limit (${max:-none})" test -n "$max"
max=${max:-256}
chain() { printf '/d%.0s' $(seq "$1"); }   # chain N: /d repeated N times
deep=$out/deep-src
rm -rf "$deep" "$out/deep-u" "$out/deep-q"
python3 - "$deep" "$max" <<'PY'
import os, sys
p, limit = sys.argv[1], int(sys.argv[2])
os.makedirs(p)
open(os.path.join(p, "top"), "w").write("top\n")
for level in range(1, limit + 45):
    p = os.path.join(p, "d")
    os.mkdir(p)
    if level in (limit, limit + 1):
        open(os.path.join(p, "f%d" % level), "w").write("%d\n" % level)
PY
mksquashfs "$deep" "$out/deep.sqfs" -noappend -quiet -no-progress >/dev/null
unsquashfs -q -n -d "$out/deep-u" "$out/deep.sqfs" >/dev/null 2>&1
check "precondition: unsquashfs extracts all $((max + 44)) levels" test -f "$out/deep-u$(chain $((max + 1)))/f$((max + 1))"
check_fails "extract of an image deeper than $max levels: exit 1, one line naming level $((max + 1))" 1 \
	"^quash: $(ere "$out/deep.sqfs"): $(chain $((max + 1))): directories nested deeper than $max\$" \
	one_line "$QUASH_ASAN" extract "$out/deep.sqfs" -C "$out/deep-q"
levels=$(cd "$out/deep-q" 2>/dev/null && find . -type d | awk -F/ 'NF - 1 > m { m = NF - 1 } END { print m + 0 }')
check "... it writes levels 1 to $max and nothing below (deepest: $levels)" \
	test "$levels" = "$max" -a -f "$out/deep-q$(chain "$max")/f$max" -a ! -e "$out/deep-q$(chain $((max + 1)))"
check "... and still extracts what lies beside the chain" test "$(cat "$out/deep-q/top" 2>/dev/null)" = top
