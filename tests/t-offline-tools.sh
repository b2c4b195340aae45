#!/bin/bash
# quash info, ls, stat and cat against their oracles: unsquashfs -s, -l and
# -lln for info and ls, the kernel's squashfs mount for stat (inode numbers,
# link counts, st_blocks), the extracted files for cat; then the command
# line itself: --help, --version, usage errors (exit 2) and bad images
# (exit 1, one line naming the image).
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"
source "$top/tests/lib/fixtures.sh"
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
	"$QUASH_ASAN" info --json "$1" >"$out/info.json" 2>"$out/info.err" || return 1
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
	else not_ok "info $n matches unsquashfs -s" "$(head -c 500 "$out/why" "$out/info.err")"; fi
done
img=$FIX_DIR/img/xz-bcj-1m.sqfs
check "info text output names compressor and filter" \
	bash -c "'$QUASH_ASAN' info '$img' | grep -q '^compressor options: *dictionary size 1048576, filters x86$'"

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
	if "$QUASH_ASAN" ls -R "$img" | grep -v '/special/big-numbers$' >"$out/q.ls" && cmp -s "$out/u.ls" "$out/q.ls"
	then ok "ls -R $n matches unsquashfs -l"
	else not_ok "ls -R $n matches unsquashfs -l" "$(diff "$out/u.ls" "$out/q.ls" | head -5 | tr '\n' ';')"; fi
	unsquashfs -lln "$img" | normalise_unsquashfs >"$out/u.ls"
	if "$QUASH_ASAN" ls -lR "$img" | grep -v '/special/big-numbers$' >"$out/q.ls" && cmp -s "$out/u.ls" "$out/q.ls"
	then ok "ls -lR $n matches unsquashfs -lln"
	else not_ok "ls -lR $n matches unsquashfs -lln" "$(diff "$out/u.ls" "$out/q.ls" | head -5 | tr '\n' ';')"; fi
done

# ls of one directory and of a file, against the unsquashfs extraction.
img=$FIX_DIR/img/gzip-4k.sqfs
rm -rf "$out/u" && unsquashfs -q -n -d "$out/u" "$img" >/dev/null
for dir in / files names hardlinks deep/d0; do
	python3 -c 'import os,sys; [sys.stdout.buffer.write(n + b"\n") for n in sorted(os.listdir(os.fsencode(sys.argv[1])))]' \
		"$out/u/$dir" >"$out/want"
	if "$QUASH_ASAN" ls "$img" "$dir" >"$out/got" && cmp -s "$out/want" "$out/got"
	then ok "ls $dir lists the directory's names"
	else not_ok "ls $dir lists the directory's names" "$(diff "$out/want" "$out/got" | head -5 | tr '\n' ';')"; fi
done
check "ls of a file prints its path" bash -c "[ \"\$('$QUASH_ASAN' ls '$img' /files/size-1)\" = /files/size-1 ]"
check "ls -l of a symlink shows its target" \
	bash -c "'$QUASH_ASAN' ls -l '$img' /symlinks/short | grep -q ' /symlinks/short -> ../files/size-1$'"

# ---- cat vs the extracted files ------------------------------------------
echo "# $SECONDS s: cat vs the extracted files"

cat_matches() {   # cat_matches IMAGE PATH...
	local img=$1; shift
	local p want=()
	for p in "$@"; do want+=("$out/u/$p"); done
	cmp -s <("$QUASH_ASAN" cat "$img" "$@") <(cat "${want[@]}")
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
check_fails "cat of a directory fails" "$QUASH_ASAN" cat "$img" /files
check_fails "cat of a symlink fails" "$QUASH_ASAN" cat "$img" /symlinks/short
check_fails "cat of a missing file fails" "$QUASH_ASAN" cat "$img" /no/such
check "cat of a missing and a present file still writes the present one" \
	bash -c "[ \"\$('$QUASH_ASAN' cat '$img' /nope /files/size-1 2>/dev/null; echo \" \$?\")\" = \"\$(cat '$out/u/files/size-1') 1\" ]"

# ---- stat vs the kernel's mount ------------------------------------------
echo "# $SECONDS s: stat vs the kernel's mount"

# st_blocks includes the kernel's xattr term ((xattr_size - 1) / 512 + 1).
stat_matches() {   # stat_matches IMAGE PATH: quash stat fields vs stat(1) on the mount
	local want got fields='inode: %i|mode: %04a|links: %h|uid: %u|gid: %g|modified: %Y|blocks: %b'
	want=$(stat -c "$fields" "$mnt/$2")
	got=$("$QUASH_ASAN" stat "$1" "$2" | sed -n 's/^\(inode\|links\|uid\|gid\): *\([0-9]*\)$/\1: \2/p;
		s/^mode: *\([0-7]*\) .*/mode: \1/p; s/^modified: .*(\([0-9]*\))$/modified: \1/p' | paste -sd'|')
	# paste joins in quash's order; put both in one order.
	want=$(tr '|' '\n' <<<"$want" | sort | paste -sd'|')
	got="$got|$("$QUASH_ASAN" stat "$1" "$2" | sed -n 's/^\(blocks\): *\([0-9]*\)$/\1: \2/p')"
	got=$(tr '|' '\n' <<<"$got" | sort | paste -sd'|')
	[ "$want" = "$got" ] || { echo "mount: $want"; echo "quash: $got"; return 1; }
	case $(stat -c %F "$mnt/$2") in
	"regular file"|"symbolic link")
		"$QUASH_ASAN" stat "$1" "$2" | grep -qx "size: *$(stat -c %s "$mnt/$2")" || return 1 ;;
	"character special file"|"block special file")
		"$QUASH_ASAN" stat "$1" "$2" | grep -qx "device: *$(stat -c '%Hr,%Lr' "$mnt/$2")" || return 1 ;;
	esac
	if [ -L "$mnt/$2" ]; then
		"$QUASH_ASAN" stat "$1" "$2" | grep -qxF "target:        $(readlink "$mnt/$2")" || return 1
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
		got=$("$QUASH_ASAN" stat "$img" "$p" | sed -n 's/^xattrs: *//p')
		check "stat $n $p xattr count ($want)" [ "$want" = "$got" ]
	done
	umount "$mnt"
done
img=$FIX_DIR/img/gzip-128k.sqfs
check "stat shows a text xattr value" \
	bash -c "'$QUASH_ASAN' stat '$img' /xattrs/shared-0 | grep -qx '  user.small=\"v\"'"
check "stat shows a binary xattr value in hex" \
	bash -c "'$QUASH_ASAN' stat '$img' /xattrs/binary | grep -qx '  user.bin=0x000102.*fdfeff'"
check_fails "stat of a missing path fails" "$QUASH_ASAN" stat "$img" /files/nope

# ---- the command line ------------------------------------------------------
echo "# $SECONDS s: the command line"

exit_is() {   # exit_is STATUS CMD...: CMD exits STATUS
	local want=$1 st; shift
	"$@" >"$out/stdout" 2>"$out/stderr"
	st=$?
	[ "$st" -eq "$want" ] || { echo "exit $st, wanted $want: $(head -c 300 "$out/stderr")"; return 1; }
}
for cmd in info ls stat cat extract; do
	check "$cmd --help exits 0 and shows usage" bash -c "'$QUASH_ASAN' $cmd --help | grep -q '^Usage: quash $cmd'"
	check "$cmd --help documents the exit status" bash -c "'$QUASH_ASAN' $cmd --help | grep -q '^Exit status:'"
done
check "--help exits 0" exit_is 0 "$QUASH_ASAN" --help
check "--version prints the version" bash -c "'$QUASH_ASAN' --version | grep -qx 'quash [0-9][0-9.]*'"
check "no command is a usage error" exit_is 2 "$QUASH_ASAN"
check "an unknown command is a usage error" exit_is 2 "$QUASH_ASAN" frobnicate
check "info without IMAGE is a usage error" exit_is 2 "$QUASH_ASAN" info
check "info with two images is a usage error" exit_is 2 "$QUASH_ASAN" info "$img" "$img"
check "an unknown option is a usage error" exit_is 2 "$QUASH_ASAN" ls --bogus "$img"
check "a bad --offset is a usage error" exit_is 2 "$QUASH_ASAN" info --offset 12Q "$img"
check "an overflowing --offset is a usage error" exit_is 2 "$QUASH_ASAN" info --offset 99999999999999999999 "$img"
check "stat without PATH is a usage error" exit_is 2 "$QUASH_ASAN" stat "$img"
check "cat without PATH is a usage error" exit_is 2 "$QUASH_ASAN" cat "$img"
check "extract without -C is a usage error" exit_is 2 "$QUASH_ASAN" extract "$img"
check "a missing image exits 1" exit_is 1 "$QUASH_ASAN" info "$out/no-such.sqfs"
check "a missing image's message is one line naming it" \
	bash -c "[ \"\$('$QUASH_ASAN' info '$out/no-such.sqfs' 2>&1 | grep -c '^quash: $out/no-such.sqfs: ')\" = 1 ] &&
		 [ \"\$('$QUASH_ASAN' info '$out/no-such.sqfs' 2>&1 | wc -l)\" = 1 ]"
check "ls of a missing path exits 1" exit_is 1 "$QUASH_ASAN" ls "$img" /no/such
check "options may follow the arguments" exit_is 0 "$QUASH_ASAN" ls "$img" /files -l
check "info --json parses" bash -c "'$QUASH_ASAN' info --json '$img' | python3 -m json.tool >/dev/null"
check "a full stdout is an error" \
	bash -c "'$QUASH_ASAN' cat '$img' /files/random-2m >/dev/full 2>/dev/null; [ \$? = 1 ]"
check "a full stdout is an error for ls too" \
	bash -c "'$QUASH_ASAN' ls -lR '$img' >/dev/full 2>/dev/null; [ \$? = 1 ]"
