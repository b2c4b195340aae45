#!/bin/bash
# quash info, ls, stat and cat against their oracles: unsquashfs -s, -l and
# -lln for info and ls, the kernel's squashfs mount for stat (inode numbers,
# link counts, st_blocks), the extracted files for cat; then the command
# line itself: --help, --version, usage errors (exit 2) and bad images
# (exit 1, one line naming the image).
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"
source "$top/tests/lib/fixtures.sh"
source "$top/tests/lib/asan.sh"
fixtures_build || { not_ok "fixtures build"; exit 1; }

out=$WORK/offline-tools
mnt=$out/mnt
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$out"
}
trap cleanup EXIT
rm -rf "$out" && mkdir -p "$out" "$mnt"
export TZ=UTC

# ---- info vs unsquashfs -s ------------------------------------------------
echo "# $SECONDS s: info vs unsquashfs -s"

info_matches() {   # info_matches IMAGE
	qa "$out/info.json" "$QUASH_ASAN" info --json "$1" || return 1
	unsquashfs -s "$1" >"$out/unsquashfs-s.txt" 2>&1 || return 1
	python3 - "$out/info.json" "$out/unsquashfs-s.txt" <<'EOF'
import json, re, sys
q = json.load(open(sys.argv[1]))
u = open(sys.argv[2]).read()
def num(pattern):
    return int(re.search(pattern, u, re.M).group(1))
want = {
    "compressor": re.search(r"^Compression (\w+)", u, re.M).group(1),
    "block_size": num(r"^Block size (\d+)"),
    "bytes_used": num(r"^Filesystem size (\d+) bytes"),
    "inode_count": num(r"^Number of inodes (\d+)"),
    "fragment_count": num(r"^Number of fragments (\d+)"),
    "id_count": num(r"^Number of ids (\d+)"),
    "xattr_id_count": num(r"^Number of xattr ids (\d+)") if "Number of xattr ids" in u else 0,
    "exportable": "is exportable via NFS" in u,
    "uncompressed-inodes": "Inodes are uncompressed" in u,
    "uncompressed-data": "Data is uncompressed" in u,
    "uncompressed-fragments": "Fragments are uncompressed" in u,
    "no-fragments": "Fragments are not stored" in u,
    "always-fragments": "Always-use-fragments option is specified" in u,
    "duplicates": "Duplicates are removed" in u,
    "no-xattrs": "Xattrs are not stored" in u,
}
got = {k: q[k] for k in ("compressor", "block_size", "bytes_used", "inode_count", "fragment_count",
                         "id_count", "xattr_id_count")}
for flag in ("exportable", "uncompressed-inodes", "uncompressed-data", "uncompressed-fragments",
             "no-fragments", "always-fragments", "duplicates", "no-xattrs"):
    got[flag] = flag in q["flag_names"]
opts = q["compressor_options"] or {}
m = re.search(r"^\tcompression-level (\d+)|^\tcompression level (\d+)", u, re.M)
if m:
    want["level"], got["level"] = int(m.group(1) or m.group(2)), opts.get("level")
m = re.search(r"^\twindow-size (\d+)", u, re.M)
if m:
    want["window"], got["window"] = int(m.group(1)), opts.get("window_size")
m = re.search(r"^\tDictionary size (\d+)", u, re.M)
if m:
    want["dict"], got["dict"] = int(m.group(1)), opts.get("dictionary_size")
m = re.search(r"^\tFilters selected: (.*)$", u, re.M)
if m:
    want["filters"], got["filters"] = m.group(1).split(", "), opts.get("filters")
m = re.search(r"^\talgorithm (\w+)", u, re.M)
if m:
    want["algorithm"], got["algorithm"] = m.group(1), opts.get("algorithm")
m = re.search(r"^\tStrategies selected: (.*)$", u, re.M)
if m:
    want["strategies"], got["strategies"] = m.group(1).split(", "), opts.get("strategies")
want["hc"], got["hc"] = "High Compression option specified" in u, opts.get("high_compression", False)
bad = {k: (want[k], got.get(k)) for k in want if want[k] != got.get(k)}
if bad:
    print("unsquashfs vs quash:", bad)
    sys.exit(1)
EOF
}

for img in "${FIX_IMAGES[@]}" "${FIX_HEAVY_IMAGES[@]}" "${FIX_SMALL_IMAGES[@]}"; do
	n=$(basename "$img" .sqfs)
	if info_matches "$img" >"$out/why" 2>&1; then ok "info $n matches unsquashfs -s"
	else not_ok "info $n matches unsquashfs -s" "$(head -c 500 "$out/why" "$out/info.json.err")"; fi
done
img=$FIX_DIR/img/xz-bcj-1m.sqfs
# out_has NAME PATTERN CMD...: CMD runs clean (asan.sh) and prints a line
# matching the ERE PATTERN whole.
out_has() {
	local pat=$1; shift
	qa "$out/out_has" "$@" && grep -qxE -- "$pat" "$out/out_has"
}
# out_is TEXT CMD...: CMD runs clean and prints exactly TEXT.
out_is() {
	local want=$1; shift
	qa "$out/out_is" "$@" && [ "$(cat "$out/out_is")" = "$want" ]
}
check "info text output names compressor and filter" \
	out_has 'compressor options: *dictionary size 1048576, filters x86' "$QUASH_ASAN" info "$img"

# ---- ls vs unsquashfs -l / -lln --------------------------------------------
echo "# $SECONDS s: ls vs unsquashfs -l / -lln"

# unsquashfs prints "squashfs-root" and then "squashfs-root/PATH"; quash ls -R
# prints "/PATH".  A device whose numbers do not fit 8 bits is listed wrongly
# by unsquashfs 4.5.1 (it decodes the old 16-bit form), so that line is left out.
normalise_unsquashfs() {
	sed '1d; s|^\(.*\)squashfs-root/|\1/|' | grep -v '/special/big-numbers$'
}

for img in "${FIX_IMAGES[@]}" "${FIX_SMALL_IMAGES[@]}" "$FIX_DIR/img/heavy-zstd-1m.sqfs"; do
	n=$(basename "$img" .sqfs)
	unsquashfs -l "$img" | normalise_unsquashfs >"$out/u.ls"
	if qa "$out/q.raw" "$QUASH_ASAN" ls -R "$img" && grep -v '/special/big-numbers$' "$out/q.raw" >"$out/q.ls" &&
	   cmp -s "$out/u.ls" "$out/q.ls"
	then ok "ls -R $n matches unsquashfs -l"
	else not_ok "ls -R $n matches unsquashfs -l" "$(diff "$out/u.ls" "$out/q.ls" | head -5 | tr '\n' ';')"; fi
	unsquashfs -lln "$img" | normalise_unsquashfs >"$out/u.ls"
	if qa "$out/q.raw" "$QUASH_ASAN" ls -lR "$img" && grep -v '/special/big-numbers$' "$out/q.raw" >"$out/q.ls" &&
	   cmp -s "$out/u.ls" "$out/q.ls"
	then ok "ls -lR $n matches unsquashfs -lln"
	else not_ok "ls -lR $n matches unsquashfs -lln" "$(diff "$out/u.ls" "$out/q.ls" | head -5 | tr '\n' ';')"; fi
done

# ls of one directory and of a file, against the unsquashfs extraction.
img=$FIX_DIR/img/gzip-4k.sqfs
rm -rf "$out/u" && unsquashfs -q -n -d "$out/u" "$img" >/dev/null
for dir in / files names hardlinks deep/d0; do
	python3 -c 'import os,sys; [sys.stdout.buffer.write(n + b"\n") for n in sorted(os.listdir(os.fsencode(sys.argv[1])))]' \
		"$out/u/$dir" >"$out/want"
	if qa "$out/got" "$QUASH_ASAN" ls "$img" "$dir" && cmp -s "$out/want" "$out/got"
	then ok "ls $dir lists the directory's names"
	else not_ok "ls $dir lists the directory's names" "$(diff "$out/want" "$out/got" | head -5 | tr '\n' ';')"; fi
done
check "ls of a file prints its path" out_is /files/size-1 "$QUASH_ASAN" ls "$img" /files/size-1
check "ls -l of a symlink shows its target" \
	out_has '.* /symlinks/short -> \.\./files/size-1' "$QUASH_ASAN" ls -l "$img" /symlinks/short

# ---- cat vs the extracted files ------------------------------------------
echo "# $SECONDS s: cat vs the extracted files"

cat_matches() {   # cat_matches IMAGE PATH...
	local img=$1; shift
	local p want=()
	for p in "$@"; do want+=("$out/u/$p"); done
	qa "$out/cat.got" "$QUASH_ASAN" cat "$img" "$@" && cat "${want[@]}" >"$out/cat.want" &&
		cmp -s "$out/cat.want" "$out/cat.got"
}
for img in "$FIX_DIR/img/gzip-4k.sqfs" "$FIX_DIR/img/lz4-hc-1m.sqfs" "$FIX_DIR/img/zstd-noD.sqfs"; do
	n=$(basename "$img" .sqfs)
	rm -rf "$out/u" && unsquashfs -q -n -d "$out/u" "$img" >/dev/null
	for p in "$out"/u/files/* "$out"/u/sparse/* "$out"/u/hardlinks/triple-2 "$out"/u/deep/d0/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/d20/d21/d22/d23/d24/d25/d26/d27/d28/d29/d30/d31/d32/d33/d34/d35/d36/d37/d38/d39/d40/d41/d42/d43/d44/d45/d46/d47/d48/d49/d50/d51/d52/d53/d54/d55/d56/d57/d58/d59/d60/d61/d62/d63/d64/d65/d66/d67/d68/d69/d70/d71/d72/d73/d74/d75/d76/d77/d78/d79/d80/d81/d82/d83/d84/d85/d86/d87/d88/d89/d90/d91/d92/d93/d94/d95/d96/d97/d98/d99/bottom; do
		rel=${p#"$out/u/"}
		check "cat $n $rel" cat_matches "$img" "$rel"
	done
	check "cat $n of several files concatenates them" cat_matches "$img" files/size-1 names/-rf files/size-4097
done
img=$FIX_DIR/img/gzip-4k.sqfs
I=$(ere "$img")
check_fails "cat of a directory fails" 1 "^quash: $I: /files: not a regular file \(directory\)\$" \
	one_line "$QUASH_ASAN" cat "$img" /files
check_fails "cat of a symlink fails" 1 "^quash: $I: /symlinks/short: not a regular file \(symbolic link\)\$" \
	one_line "$QUASH_ASAN" cat "$img" /symlinks/short
check_fails "cat of a missing file fails" 1 "^quash: $I: /no/such: no such file or directory\$" \
	one_line "$QUASH_ASAN" cat "$img" /no/such
cat_missing_and_present() {
	"$QUASH_ASAN" cat "$img" /nope /files/size-1 >"$out/cat.got" 2>"$out/cat.err"
	[ $? = 1 ] && asan_clean "$out/cat.err" && cmp -s "$out/u/files/size-1" "$out/cat.got" &&
		[ "$(cat "$out/cat.err")" = "quash: $img: /nope: no such file or directory" ]
}
check "cat of a missing and a present file still writes the present one" cat_missing_and_present

# ---- stat vs the kernel's mount ------------------------------------------
echo "# $SECONDS s: stat vs the kernel's mount"

# st_blocks includes the kernel's xattr term ((xattr_size - 1) / 512 + 1).
stat_matches() {   # stat_matches IMAGE PATH: quash stat fields vs stat(1) on the mount
	local want got st=$out/stat.txt fields='inode: %i|mode: %04a|links: %h|uid: %u|gid: %g|modified: %Y|blocks: %b'
	qa "$st" "$QUASH_ASAN" stat "$1" "$2" || return 1
	want=$(stat -c "$fields" "$mnt/$2")
	got=$(sed -n 's/^\(inode\|links\|uid\|gid\|blocks\): *\([0-9]*\)$/\1: \2/p;
		s/^mode: *\([0-7]*\) .*/mode: \1/p; s/^modified: .*(\([0-9]*\))$/modified: \1/p' "$st" | paste -sd'|')
	# paste joins in quash's order; put both in one order.
	want=$(tr '|' '\n' <<<"$want" | sort | paste -sd'|')
	got=$(tr '|' '\n' <<<"$got" | sort | paste -sd'|')
	[ "$want" = "$got" ] || { echo "mount: $want"; echo "quash: $got"; return 1; }
	case $(stat -c %F "$mnt/$2") in
	"regular file"|"symbolic link")
		grep -qx "size: *$(stat -c %s "$mnt/$2")" "$st" || return 1 ;;
	"character special file"|"block special file")
		grep -qx "device: *$(stat -c '%Hr,%Lr' "$mnt/$2")" "$st" || return 1 ;;
	esac
	if [ -L "$mnt/$2" ]; then
		grep -qxF "target:        $(readlink "$mnt/$2")" "$st" || return 1
	fi
}

for img in "$FIX_DIR/img/gzip-128k.sqfs" "$FIX_DIR/img/zstd-4k-always.sqfs"; do
	n=$(basename "$img" .sqfs)
	if ! mount -t squashfs -o loop,ro "$img" "$mnt" 2>"$out/mount.err"; then
		not_ok "mount $n for stat" "$(cat "$out/mount.err")"
		continue
	fi
	for p in / files files/size-0 files/size-131073 files/random-2m sparse/hole-middle sparse/all-hole \
		 hardlinks/triple-1 hardlinks/pair-2 symlinks/long symlinks/dangling special/fifo special/null \
		 special/big-numbers special/disk special/socket modes/setuid modes/closed-dir owners/u4000000000-g3000000000 \
		 times/late empty-dir biggish-dir xattrs/many xattrs xattrs/symlink deep/d0; do
		if stat_matches "$img" "$p" >"$out/why" 2>&1; then ok "stat $n $p matches the kernel's mount"
		else not_ok "stat $n $p matches the kernel's mount" "$(tr '\n' ';' <"$out/why")"; fi
	done
	# xattrs: the count and the values getfattr shows on the mount.
	for p in xattrs/shared-0 xattrs/binary xattrs/many xattrs files/size-1; do
		want=$(getfattr -h -d -m - -e hex --absolute-names "$mnt/$p" 2>/dev/null | grep -c '=')
		got=$(qa "$out/stat" "$QUASH_ASAN" stat "$img" "$p" && sed -n 's/^xattrs: *//p' "$out/stat")
		check "stat $n $p xattr count ($want)" [ "$want" = "$got" ]
	done
	umount "$mnt"
done
img=$FIX_DIR/img/gzip-128k.sqfs
check "stat shows a text xattr value" \
	out_has '  user\.small="v"' "$QUASH_ASAN" stat "$img" /xattrs/shared-0
check "stat shows a binary xattr value in hex" \
	out_has '  user\.bin=0x000102.*fdfeff' "$QUASH_ASAN" stat "$img" /xattrs/binary
check_fails "stat of a missing path fails" 1 "^quash: $(ere "$img"): /files/nope: no such file or directory\$" \
	one_line "$QUASH_ASAN" stat "$img" /files/nope

# ---- the command line ------------------------------------------------------
echo "# $SECONDS s: the command line"

# help_has CMD PATTERN: quash CMD --help exits 0, runs clean and prints a
# line matching PATTERN.
help_has() {
	qa "$out/help" "$QUASH_ASAN" $1 --help && grep -qE -- "$2" "$out/help"
}
for cmd in info ls stat cat extract; do
	check "$cmd --help exits 0 and shows usage" help_has "$cmd" "^Usage: quash $cmd "
	check "$cmd --help documents the exit status" help_has "$cmd" '^Exit status:'
done
check "--help exits 0" help_has "" '^Usage: quash COMMAND '
check "--version prints the version" out_has 'quash [0-9][0-9.]*' "$QUASH_ASAN" --version
# usage_fails NAME PROBLEM CMD ARGS...: exit 2, the problem in one line naming
# the command, then the pointer to its --help.
usage_fails() {
	local name=$1 problem=$2 cmd=$3; shift 3
	check_fails "$name" 2 "^quash: $cmd: $problem\$" two_lines "$QUASH_ASAN" "$cmd" "$@"
	check_fails "$name: points to --help" 2 "^Try 'quash $cmd --help' for more information\.\$" \
		two_lines "$QUASH_ASAN" "$cmd" "$@"
}
check_fails "no command is a usage error" 2 '^Usage: quash COMMAND ' "$QUASH_ASAN"
check_fails "an unknown command is a usage error" 2 "^quash: unknown command 'frobnicate'\$" \
	two_lines "$QUASH_ASAN" frobnicate
usage_fails "info without IMAGE is a usage error" 'missing IMAGE' info
usage_fails "info with two images is a usage error" 'too many arguments' info "$img" "$img"
usage_fails "an unknown option is a usage error" "unrecognized option '--bogus'" ls --bogus "$img"
usage_fails "a bad --offset is a usage error" "invalid offset '12Q'" info --offset 12Q "$img"
usage_fails "an overflowing --offset is a usage error" "invalid offset '99999999999999999999'" \
	info --offset 99999999999999999999 "$img"
usage_fails "stat without PATH is a usage error" 'missing PATH' stat "$img"
usage_fails "cat without PATH is a usage error" 'missing PATH' cat "$img"
usage_fails "extract without -C is a usage error" 'missing -C DIR' extract "$img"
check_fails "a missing image: exit 1, one line naming it" 1 \
	"^quash: $(ere "$out/no-such.sqfs"): No such file or directory\$" one_line "$QUASH_ASAN" info "$out/no-such.sqfs"
check_fails "ls of a missing path: exit 1, one line naming it" 1 \
	"^quash: $(ere "$img"): /no/such: no such file or directory\$" one_line "$QUASH_ASAN" ls "$img" /no/such
check "options may follow the arguments" out_has '-.* size-1' "$QUASH_ASAN" ls "$img" /files -l
json_parses() { qa "$out/info.json" "$QUASH_ASAN" info --json "$img" && python3 -m json.tool "$out/info.json" >/dev/null; }
check "info --json parses" json_parses
# to_full CMD...: CMD with its standard output on /dev/full.
to_full() { "$@" >/dev/full; }
check_fails "a full stdout is an error" 1 '^quash: standard output: No space left on device$' \
	one_line to_full "$QUASH_ASAN" cat "$img" /files/random-2m
check_fails "a full stdout is an error for ls too" 1 '^quash: standard output: No space left on device$' \
	one_line to_full "$QUASH_ASAN" ls -lR "$img"
