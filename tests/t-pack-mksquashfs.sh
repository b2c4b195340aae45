#!/bin/bash
# t-pack-mksquashfs.sh - quash linked as mksquashfs, against mksquashfs
# itself: the same command line on the same source must give an image that
# unsquashfs lists the same (-lln: modes, owners, times, names, nesting;
# only directory sizes may differ, they depend on the layout) and whose
# files extract to the same tree.  Options quash cannot honour are refused in
# one line, exit 1.  No run of the sanitizer build, under either name or as
# quash, draws a sanitizer report.  Appending is t-pack-append's.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/asan.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-pack-mksquashfs
cleanup() { umount -l "$W/src/mnt" 2>/dev/null; umount -l "$W/other" 2>/dev/null; umount -l "$W/xmnt" 2>/dev/null; }
trap cleanup EXIT
cleanup
rm -rf "$W" && mkdir -p "$W/bin" "$W/src/a/b" "$W/src/c" "$W/src2/x" "$W/src/mnt" "$W/other/deep"
asan_as "$W/bin/mksquashfs"     # the sanitizer build, its runs noted (asan.sh)
REAL=$(command -v mksquashfs)
QM=$W/bin/mksquashfs
head -c 300000 /dev/urandom >"$W/src/a/big"
seq 1 50000 >"$W/src/a/b/nums"
echo hi >"$W/src/c/small"
cp "$W/src/c/small" "$W/src/c/same"
ln -s ../a/big "$W/src/c/link"
ln "$W/src/c/small" "$W/src/c/hard"
mkfifo "$W/src/p"
mknod "$W/src/c/null" c 1 3
setfattr -n user.k -v v "$W/src/c/small"
chown -R 1234:5678 "$W/src/a"
touch -d @1600000000 "$W/src/a/big"
echo y >"$W/src2/x/y"
echo elsewhere >"$W/other/deep/file"

# same NAME "SOURCES" OPTIONS...: both tools, then unsquashfs -lln and the extracted trees.
same() {
	local name=$1 srcs=$2; shift 2
	rm -rf "$W/m.sqfs" "$W/q.sqfs" "$W/mx" "$W/qx"
	# shellcheck disable=SC2086
	(cd "$W" && "$REAL" $srcs m.sqfs -noappend -quiet -no-progress "$@" >/dev/null 2>m.err)
	# shellcheck disable=SC2086
	if ! (cd "$W" && "$QM" $srcs q.sqfs -noappend -quiet -no-progress "$@" >/dev/null 2>q.err); then
		not_ok "$name" "quash failed: $(head -c 300 "$W/q.err")"
		return
	fi
	unsquashfs -lln "$W/m.sqfs" | awk '{ if ($1 ~ /^d/) $3 = ""; print }' >"$W/m.ls"
	unsquashfs -lln "$W/q.sqfs" | awk '{ if ($1 ~ /^d/) $3 = ""; print }' >"$W/q.ls"
	unsquashfs -q -n -d "$W/mx" "$W/m.sqfs" >/dev/null 2>&1
	unsquashfs -q -n -d "$W/qx" "$W/q.sqfs" >/dev/null 2>&1
	if diff "$W/m.ls" "$W/q.ls" >"$W/diff" && python3 "$top/tests/lib/treecmp.py" "$W/mx" "$W/qx" >>"$W/diff" 2>&1
	then ok "$name"
	else not_ok "$name" "$(head -c 400 "$W/diff")"; fi
}

same "one directory: its contents at the root" src
same "two directories: each nested by its name in a 0777 root" "src src2" -all-time 5
same "-keep-as-directory" src -keep-as-directory -all-time 5
same "-all-root" src -all-root
same "-root-owned -force-uid/-force-gid by number and name -root-mode" src -root-owned -force-uid 7 -force-gid daemon -root-mode 700
same "-comp xz -b 1M -no-fragments" src -comp xz -b 1M -no-fragments
same "-comp zstd -Xcompression-level 3 -always-use-fragments -no-duplicates -no-exports -no-xattrs -processors 1" \
	src -comp zstd -Xcompression-level 3 -always-use-fragments -no-duplicates -no-exports -no-xattrs -processors 1
same "-comp lz4 -Xhc, -comp lzo" src -comp lz4 -Xhc
same "-comp xz -Xbcj x86,arm -Xdict-size 50%" src -comp xz -Xbcj x86,arm -Xdict-size 50%
xz_opts() { unsquashfs -s "$1" | grep -E 'Dictionary size|Filters selected|No filters'; }
same_xz_opts() { [ "$(xz_opts "$W/m.sqfs")" = "$(xz_opts "$W/q.sqfs")" ] && [ -n "$(xz_opts "$W/q.sqfs")" ]; }
check "... the same dictionary and filters in the options block ($(xz_opts "$W/q.sqfs" | tr '\n\t' '  '))" same_xz_opts
same "-comp xz -Xdict-size 64K" src -comp xz -Xdict-size 64K
check "... its dictionary in the options block" [ "$(xz_opts "$W/m.sqfs")" = "$(xz_opts "$W/q.sqfs")" ]
same "-e exact paths" src -e a/b c/link
printf 'a/big\nc/small\n' >"$W/excl"
same "-ef FILE" src -ef "$W/excl"
same "-wildcards, a pattern at any depth" src -wildcards -e "... nums" "c/s*"
same "-regex, unanchored at the top, part by part below, at any depth" src -regex -e "^p$" "c/s.m" "... u.s"
same "-regex: a part matching a directory takes what is below it" src -regex -e "a/^b" "b.g"
same "-all-time and -mkfs-time" src -all-time 1000 -mkfs-time 2000
# mksquashfs 4.6's root options, which Debian's 4.5.1 lacks: checked on the listing.
"$QM" "$W/src" "$W/root.sqfs" -noappend -quiet -no-progress -root-uid 77 -root-gid daemon -root-time 1234567 \
	-root-mode 701 >/dev/null 2>&1
check "-root-uid, -root-gid (by name), -root-time, -root-mode set the root alone" bash -c \
	"TZ=UTC unsquashfs -lln '$W/root.sqfs' | awk 'NR == 1 { print \$1, \$2, \$4, \$5 } NR == 2 { print \$2 }' |
	 tr '\n' ' ' | grep -qx 'drwx-----x 77/1 1970-01-15 06:56 1234/5678 '"
SOURCE_DATE_EPOCH=1234567 same "SOURCE_DATE_EPOCH" src
check "SOURCE_DATE_EPOCH is the image's time too" bash -c "unsquashfs -s '$W/q.sqfs' | grep -q 'Creation or last append time .*Jan 15 .*1970'"

# Pseudo files: every kind mksquashfs 4.5 takes, on the command line and in a file.
P=(-p "dev d 755 0 0" -p "dev/console c 600 0 0 5 1" -p "dev/sda b 660 0 disk 8 0"
   -p "etc d 755 0 0" -p "etc/hostname f 644 0 0 echo quashbox" -p "etc/link s 777 0 0 hostname"
   -p "run d 755 0 0" -p "run/fifo i 600 0 0 f" -p "run/sock i 600 0 0 s" -p "a/big m 600 42 43"
   -p "etc/hn2 L etc/hostname" -p "etc/T F 1000 644 1 1 printf xyz" -p "c M 2000 700 3 4"
   -p '"etc/with space" f 600 0 0 printf spaced')
# (Entries a definition gives no time are made "now", so both tools get the
# same SOURCE_DATE_EPOCH, which bounds every time.)
SOURCE_DATE_EPOCH=1700000000 same "pseudo files: d, c, b, f, s, i (fifo, socket), m, L, F, M, a quoted name" src "${P[@]}"
printf '%s\n' "dev d 755 0 0" "dev/null c 666 0 0 1 3" "# a comment" "" "etc d 750 0 0" \
	"etc/motd f 644 0 0 seq 1 1000" >"$W/pseudo.list"
SOURCE_DATE_EPOCH=1700000000 same "-pf FILE" src -pf "$W/pseudo.list"
"$QM" "$W/src" "$W/pd.sqfs" -noappend -quiet -pd "D 5 750 1 2" -p "x/y/z f 644 0 0 printf deep" >/dev/null 2>"$W/err"
check "-pd: directories a definition implies are made with its metadata" bash -c \
	"unsquashfs -lln '$W/pd.sqfs' | grep -q '^drwxr-x--- 1/2 .* 1970-01-01 00:00 squashfs-root/x/y\$' &&
	 unsquashfs -cat '$W/pd.sqfs' x/y/z | grep -qx deep"
"$QM" "$W/src" "$W/r.sqfs" -noappend -quiet -p "x/y f 644 0 0 true" >/dev/null 2>"$W/err"; st=$?
check "a definition below a missing directory: one line, exit 1 (4.5 drops it silently)" bash -c \
	"[ $st = 1 ] && [ \"\$(cat '$W/err')\" = 'quash: mksquashfs: pseudo file -p: x/y: directory x is not in the image (define it first, or give -pd)' ]"
# A command that fails: as mksquashfs, a warning and an empty file, exit 0
# (its output dropped); with -exit-on-error no image.
rm -f "$W/r.sqfs" "$W/m.sqfs"
"$QM" "$W/src" "$W/r.sqfs" -noappend -quiet -p "z f 644 0 0 echo out; exit 3" >/dev/null 2>"$W/err"; st=$?
"$REAL" "$W/src" "$W/m.sqfs" -noappend -quiet -no-progress -p "z f 644 0 0 echo out; exit 3" >/dev/null 2>&1; mst=$?
check "a command that fails: a warning, z an empty file, exit 0, as mksquashfs ($mst)" bash -c \
	"[ $st = 0 ] && [ $mst = 0 ] && [ \"\$(cat '$W/err')\" = \"quash: mksquashfs: warning: pseudo file -p: 'echo out; exit 3' failed (exit status 3); z is an empty file, as mksquashfs makes it\" ] &&
	 [ -z \"\$(unsquashfs -cat '$W/r.sqfs' z)\" ] && [ -z \"\$(unsquashfs -cat '$W/m.sqfs' z)\" ] &&
	 unsquashfs -lls '$W/r.sqfs' | grep -q '^-rw-r--r-- root/root  *0 .*squashfs-root/z\$'"
rm -f "$W/r.sqfs"
"$QM" "$W/src" "$W/r.sqfs" -noappend -quiet -exit-on-error -p "z f 644 0 0 exit 3" >/dev/null 2>"$W/err"; st=$?
check "... with -exit-on-error: exit 1, no image" bash -c "[ $st = 1 ] && [ ! -e '$W/r.sqfs' ] && grep -q 'exit-on-error' '$W/err'"

# -sort: the files' data in the same order as mksquashfs lays it out
# (blocks_start from quash stat --json, on both images).
printf 'c/small 100\na/b 50\na/big -5\n# a comment\n' >"$W/sort.txt"
data_order() {   # data_order IMAGE: the regular files with blocks, in the order of their data
	qa "$W/order.json" "$QUASH_ASAN" ls --json -R "$1" >&2 && python3 -c '
import json, subprocess, sys
files = [e["path"] for e in json.load(open(sys.argv[3])) if e["type"] == "file"]
st = json.loads(subprocess.check_output([sys.argv[1], "stat", "--json", sys.argv[2]] + files))
print(" ".join(e["path"] for e in sorted(st, key=lambda e: (e["blocks_start"], e["path"])) if e["block_count"]))' \
		"$QUASH_ASAN" "$1" "$W/order.json"
}
rm -f "$W/m.sqfs" "$W/q.sqfs"
"$REAL" "$W/src" "$W/m.sqfs" -noappend -quiet -no-progress -no-fragments -sort "$W/sort.txt" >/dev/null 2>&1
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -no-fragments -sort "$W/sort.txt" >/dev/null 2>"$W/err"
check "-sort: the data in mksquashfs's order ($(data_order "$W/q.sqfs"))" \
	test "$(data_order "$W/m.sqfs")" = "$(data_order "$W/q.sqfs")" -a "$(data_order "$W/q.sqfs" | cut -d' ' -f4)" = /a/b/nums
printf 'a/big 40000\n' >"$W/badsort.txt"
"$QM" "$W/src" "$W/r.sqfs" -noappend -quiet -sort "$W/badsort.txt" >/dev/null 2>"$W/err"; st=$?
check "-sort: a priority out of range is one line, exit 1" bash -c \
	"[ $st = 1 ] && [ \"\$(cat '$W/err')\" = \"quash: mksquashfs: -sort $W/badsort.txt:1: priority '40000' is not in -32768..32767\" ]"

# The end-of-run report: mksquashfs's lines, its counts the same (sizes differ with the layout).
(cd "$W" && "$REAL" src m.sqfs -noappend -no-progress 2>&1 | grep '^Number of\|^	' | sort >m.report)
(cd "$W" && "$QM" src q.sqfs -noappend -no-progress 2>&1 | grep '^Number of\|^	' | sort >q.report)
check "the report: the counts by type, duplicates, hard links and owners mksquashfs gives" \
	bash -c "diff <(grep -v '% of\|compressed' '$W/m.report') <(grep -v '% of\|compressed' '$W/q.report')"
check "the report: sizes of the image and its tables" bash -c \
	"(cd '$W' && '$QM' src q.sqfs -noappend -no-progress) | grep -q '^Filesystem size .* Kbytes' &&
	 (cd '$W' && '$QM' src q.sqfs -noappend -no-progress) | grep -q '^Inode table size '"
# Empty files: mksquashfs counts each among the duplicates (it never looks
# for a duplicate of one), once however many names it has.  With
# -no-duplicates and -no-fragments it says "No duplicate files removed" and
# gives no fragment count; the first lines name what is stored how.
mkdir -p "$W/e" && : >"$W/e/empty1" && : >"$W/e/empty2" && ln "$W/e/empty1" "$W/e/empty3" && cp -a "$W/src/c" "$W/e/c"
for opts in "" "-no-duplicates -no-fragments -no-xattrs"; do
	# shellcheck disable=SC2086  # the options are words
	(cd "$W" && "$REAL" e m.sqfs -noappend -no-progress $opts 2>&1 | grep -v '^Parallel\|^Creating' |
		grep -v '% of\|size\|^$' >m.report)
	# shellcheck disable=SC2086
	(cd "$W" && "$QM" e q.sqfs -noappend -no-progress $opts 2>&1 | grep -v '^Parallel\|^Creating' |
		grep -v '% of\|size\|^$' >q.report)
	check "the report ${opts:-(defaults)}, empty files and a hard link to one: mksquashfs's lines and counts" \
		diff "$W/m.report" "$W/q.report"
done
(cd "$W" && "$QM" e q.sqfs -noappend -no-progress >q.report 2>&1)
check "the report: xattrs, their table's size, as mksquashfs reports it" bash -c \
	"grep -q '^Xattr table size [0-9]* bytes' '$W/q.report' && grep -q '% of uncompressed xattr table size' '$W/q.report'"
check "-quiet: no report" bash -c "[ -z \"\$(cd '$W' && '$QM' src q.sqfs -noappend -quiet)\" ]"

# -xattrs-include / -xattrs-exclude (4.6; Debian's 4.5.1 has neither): the
# kernel's mount of the image shows only the names kept.
mkdir -p "$W/xs" "$W/xmnt" && echo 1 >"$W/xs/f"
setfattr -n user.keep -v 1 "$W/xs/f" && setfattr -n user.drop -v 2 "$W/xs/f" && setfattr -n trusted.t -v 3 "$W/xs/f"
"$QM" "$W/xs" "$W/x.sqfs" -noappend -quiet -xattrs-include '^user\.' -xattrs-exclude 'drop$' >/dev/null 2>"$W/err"
mount -t squashfs -o loop,ro "$W/x.sqfs" "$W/xmnt"
check "-xattrs-include and -xattrs-exclude: only the names kept, as the kernel's mount shows them" \
	test "$(getfattr -d -m - --absolute-names "$W/xmnt/f" 2>/dev/null | grep -v '^#' | grep . | tr '\n' ' ')" = 'user.keep="1" '
umount "$W/xmnt"
"$QM" "$W/xs" "$W/x.sqfs" -noappend -quiet -xattrs-exclude '([' >/dev/null 2>"$W/err"; st=$?
check "a bad regular expression: one line, exit 1" bash -c "[ $st = 1 ] && [ \$(wc -l <'$W/err') = 1 ] && grep -q '^quash: mksquashfs: -xattrs-exclude: ' '$W/err'"

# -offset: the image N bytes into DEST, after zeros, as mksquashfs writes it
# (appimagetool then writes its runtime there).
rm -f "$W/m.app" "$W/q.app"
"$REAL" "$W/src" "$W/m.app" -noappend -offset 65536 -quiet -no-progress -comp zstd >/dev/null 2>&1
"$QM" "$W/src" "$W/q.app" -noappend -offset 64K -quiet -comp zstd >/dev/null 2>"$W/err"
qa "$W/app.ls" "$QUASH_ASAN" ls --offset 64K "$W/q.app" /c; app_st=$?
check "-offset 64K: the same listing 64 KiB in, the same zeros before it" bash -c \
	"cmp -s -n 65536 '$W/m.app' '$W/q.app' && diff <(unsquashfs -o 65536 -lln '$W/m.app') <(unsquashfs -o 65536 -lln '$W/q.app') &&
	 [ $app_st = 0 ] && grep -qx small '$W/app.ls'"

# A tar on standard input: mksquashfs - DEST -tar, and sqfstar [OPTIONS] IMAGE [EXCLUDES].
asan_as "$W/bin/sqfstar"
tar -C "$W/src" --exclude=./mnt -cf "$W/src.tar" .
tar_same() {   # tar_same NAME REAL-COMMAND... -- QUASH-COMMAND...: both read src.tar on stdin
	local name=$1 real=() quash=(); shift
	while [ "$1" != -- ]; do real+=("$1"); shift; done; shift
	quash=("$@")
	rm -f "$W/m.sqfs" "$W/q.sqfs"
	# Debian's sqfstar 4.5.1 crashes now and then (SIGSEGV, about one run in
	# six here, with nothing on stderr): the peer gets three tries.
	for try in 1 2 3; do
		rm -f "$W/m.sqfs"
		(cd "$W" && "${real[@]}" <"${TAR:-src.tar}" >/dev/null 2>"$W/m.err") && [ -s "$W/m.sqfs" ] && break
	done
	if [ ! -s "$W/m.sqfs" ]; then
		not_ok "$name" "the peer failed three times: $(grep -v 'Empty tar filename' "$W/m.err" | head -c 300)"; return
	fi
	if ! (cd "$W" && "${quash[@]}" <"${TAR:-src.tar}" >/dev/null 2>"$W/q.err"); then
		not_ok "$name" "quash failed: $(head -c 300 "$W/q.err")"; return
	fi
	# The root is made "now" by both: its time may differ by the minute.
	if diff <(unsquashfs -lln "$W/m.sqfs" | awk '{ if ($1 ~ /^d/) { $3 = $4 = $5 = "" }; print }') \
		<(unsquashfs -lln "$W/q.sqfs" | awk '{ if ($1 ~ /^d/) { $3 = $4 = $5 = "" }; print }') >"$W/diff"
	then ok "$name"; else not_ok "$name" "$(head -c 400 "$W/diff")"; fi
}
tar_same "mksquashfs - DEST -tar" "$REAL" - m.sqfs -tar -noappend -quiet -no-progress -- \
	"$QM" - q.sqfs -tar -noappend -quiet -no-progress
# Debian's sqfstar 4.5.1 segfaults often (three times running, some runs),
# so the peer here is mksquashfs -tar on the same tar, whose listing less the
# excluded entries is what sqfstar gives when it does not crash.
rm -f "$W/m.sqfs" "$W/q.sqfs"
(cd "$W" && "$REAL" - m.sqfs -tar -noappend -quiet -no-progress -comp xz <src.tar >/dev/null 2>&1)
(cd "$W" && "$W/bin/sqfstar" -quiet -no-progress -comp xz q.sqfs a c/link <src.tar >/dev/null 2>"$W/q.err")
check "sqfstar [OPTIONS] IMAGE EXCLUDES: mksquashfs -tar's tree less a directory and a file" bash -c \
	"diff <(unsquashfs -lln '$W/m.sqfs' | grep -v ' squashfs-root/a\$\| squashfs-root/a/\| squashfs-root/c/link ' |
		awk '{ if (\$1 ~ /^d/) { \$3 = \$4 = \$5 = \"\" }; print }') \
	      <(unsquashfs -lln '$W/q.sqfs' | awk '{ if (\$1 ~ /^d/) { \$3 = \$4 = \$5 = \"\" }; print }')"
# Owners by name (mksquashfs -tar, as GNU tar extracting as root): a tar's
# user and group names give the owner where this system knows them, the
# numbers stored beside them otherwise; -numeric-owner (4.7.5) and quash
# pack take the numbers.  The oracles: mksquashfs 4.5.1's own -tar, and GNU
# tar's extraction with and without --numeric-owner.
python3 - "$W/own.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name, uname, uid, gname, gid in [
        ("d", "daemon", 4200, "adm", 4300), ("d/known", "daemon", 4201, "adm", 4301),
        ("unknown", "nosuchuser-q", 4202, "nosuchgroup-q", 4302), ("empty", "", 4203, "", 4303),
        ("long", "u" * 40, 4204, "g" * 40, 4304), ("root", "root", 4205, "root", 4305)]:
        ti = tarfile.TarInfo(name)
        ti.uname, ti.uid, ti.gname, ti.gid, ti.mtime = uname, uid, gname, gid, 1700000000
        if name == "d":
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            t.addfile(ti)
        else:
            ti.size, ti.mode = 1, 0o644
            t.addfile(ti, io.BytesIO(b"x"))
PY
TAR=own.tar tar_same "-tar: owners by the tar's names where this system knows them, as mksquashfs" \
	"$REAL" - m.sqfs -tar -noappend -quiet -no-progress -- "$QM" - q.sqfs -tar -noappend -quiet -no-progress
owners_of() {   # owners_of IMAGE: "path uid gid" lines, from unsquashfs
	unsquashfs -lln "$1" | awk '$NF != "squashfs-root" { split($2, o, "/"); sub("squashfs-root/", "", $NF); print $NF, o[1], o[2] }' | sort
}
tar_owners() {  # tar_owners TAR-OPTION...: "path uid gid" lines of GNU tar's extraction as root
	rm -rf "$W/gx" && mkdir "$W/gx" && tar -xpf "$W/own.tar" -C "$W/gx" --same-owner "$@" &&
		(cd "$W/gx" && find . -mindepth 1 -printf '%P %U %G\n' | sort)
}
tar_owners >"$W/gnu.own"; tar_owners --numeric-owner >"$W/gnu-numeric.own"
rm -f "$W/q.own"
(cd "$W" && "$W/bin/sqfstar" -force -quiet own.sqfs <own.tar >/dev/null 2>&1) && owners_of "$W/own.sqfs" >"$W/q.own"
check "sqfstar: the owners GNU tar gives extracting as root (daemon and adm by name, unknown names by number)" \
	bash -c "diff '$W/gnu.own' '$W/q.own' && grep -qx 'd/known 1 4' '$W/q.own'"
rm -f "$W/q.own"
(cd "$W" && "$W/bin/sqfstar" -force -quiet -numeric-owner own.sqfs <own.tar >/dev/null 2>&1) &&
	owners_of "$W/own.sqfs" >"$W/q.own"
check "sqfstar -numeric-owner: the numbers, as GNU tar --numeric-owner" \
	bash -c "diff '$W/gnu-numeric.own' '$W/q.own' && grep -qx 'd/known 4201 4301' '$W/q.own'"
rm -f "$W/q.own"
qa "$W/own.out" "$QUASH_ASAN" pack -q "$W/own.tar" "$W/own.sqfs" >/dev/null && owners_of "$W/own.sqfs" >"$W/q.own"
check "quash pack of the same tar keeps the numbers (an image independent of this system's users)" \
	diff "$W/gnu-numeric.own" "$W/q.own"

qa "$W/x.out" "$QUASH_ASAN" pack -q --exclude /a --exclude 'li*' "$W/src.tar" "$W/x.sqfs" >"$W/why" ||
	not_ok "quash pack --exclude of a tar runs clean" "$(cat "$W/why")"
check "quash pack --exclude of a directory leaves out what an archive lists below it" bash -c \
	"! unsquashfs -lln '$W/x.sqfs' | grep -q 'squashfs-root/a' && ! unsquashfs -lln '$W/x.sqfs' | grep -q 'c/link' &&
	 unsquashfs -lln '$W/x.sqfs' | grep -q 'c/small'"

# The scripts' own command lines, from the issue, with mksquashfs found on PATH.
same "the compiler site's line: -all-root -progress -comp zstd" src -all-root -progress -comp zstd
same "SingularityCE's line: -noappend -all-root -comp gzip -processors 2" src -all-root -comp gzip -processors 2
same "a snap-style line: -noappend -comp xz -no-fragments -all-root" src -comp xz -no-fragments -all-root
# The builders' full option sets: snapcraft, appimagetool (a Type 2 AppImage's
# payload), live-build's filesystem.squashfs and Compiler Explorer's images.
same "snapcraft: -noappend -comp xz -no-xattrs -no-fragments -all-root" src -comp xz -no-xattrs -no-fragments -all-root
same "appimagetool: -root-owned -noappend -comp zstd -Xcompression-level 22 -b 1M -mkfs-time 0" \
	src -root-owned -comp zstd -Xcompression-level 22 -b 1M -mkfs-time 0
same "live-build: -comp xz -Xbcj x86 -b 1M -no-progress -noappend -e DIR (its boot)" src -comp xz -Xbcj x86 -b 1M -e a/b
same "Compiler Explorer: -all-root -noappend -comp zstd -Xcompression-level 19 -processors 2" \
	src -all-root -comp zstd -Xcompression-level 19 -processors 2
check "found as mksquashfs on PATH" env PATH="$W/bin:$PATH" bash -c \
	"cd '$W' && mksquashfs src path.sqfs -noappend -quiet && unsquashfs -lln path.sqfs | grep -q 'c/small'"

# -one-file-system on another filesystem mounted inside the source (a tmpfs
# with a file, bind-mounted there).
mount -t tmpfs -o size=1M quash-ofs "$W/other" && mkdir -p "$W/other/deep" && echo elsewhere >"$W/other/deep/file"
mount --bind "$W/other" "$W/src/mnt"
# mksquashfs 4.6 keeps a mount point as an empty directory under
# -one-file-system and leaves it out under -one-file-system-x; Debian's 4.5.1
# has only the first name, with the second meaning.
rm -rf "$W/m.sqfs" && "$REAL" "$W/src" "$W/m.sqfs" -noappend -quiet -no-progress -one-file-system >/dev/null 2>&1
"$QM" "$W/src" "$W/x.sqfs" -noappend -quiet -one-file-system-x >/dev/null 2>&1
check "-one-file-system-x: as mksquashfs 4.5.1's -one-file-system, the mount point left out" bash -c \
	"diff <(unsquashfs -lln '$W/m.sqfs' | awk '{ if (\$1 ~ /^d/) \$3 = \"\"; print }') <(unsquashfs -lln '$W/x.sqfs' | awk '{ if (\$1 ~ /^d/) \$3 = \"\"; print }')"
"$QM" "$W/src" "$W/x.sqfs" -noappend -quiet -one-file-system >/dev/null 2>&1
check "-one-file-system: as 4.6, the mount point an empty directory" bash -c \
	"unsquashfs -lln '$W/x.sqfs' | grep -q ' squashfs-root/mnt\$' && ! unsquashfs -lln '$W/x.sqfs' | grep -q 'mnt/deep' &&
	 unsquashfs -lln '$W/x.sqfs' | grep -q 'c/small'"
"$QM" "$W/src" "$W/x.sqfs" -noappend -quiet >/dev/null 2>&1
check "without it the mount's files are packed" bash -c "unsquashfs -lln '$W/x.sqfs' | grep -q 'mnt/deep/file'"
# A file bind-mounted over a file, as a running container's /etc/hosts: on
# another device than its directory (the pack tree keeps such devices
# apart), still checked when opened, and read.
echo under >"$W/src/c/over" && echo "bound over" >"$W/other/bound" && mount --bind "$W/other/bound" "$W/src/c/over"
"$QM" "$W/src" "$W/x.sqfs" -noappend -quiet >/dev/null 2>&1
check "a file bind-mounted over a file is packed with the mounted file's bytes" \
	test "$(unsquashfs -cat "$W/x.sqfs" c/over 2>/dev/null)" = "bound over"
umount "$W/src/c/over"; rm -f "$W/src/c/over" "$W/other/bound"
umount "$W/src/mnt" "$W/other"

# Refusals: one line naming the option, exit 1, no image.
refused() {
	local name=$1 want=$2 st; shift 2
	rm -f "$W/r.sqfs"
	"$QM" "$W/src" "$W/r.sqfs" -noappend "$@" >/dev/null 2>"$W/err"
	st=$?
	if [ $st = 1 ] && [ "$(wc -l <"$W/err")" = 1 ] && grep -q "^quash: mksquashfs: $want" "$W/err" && [ ! -e "$W/r.sqfs" ]
	then ok "$name"
	else not_ok "$name" "exit $st: $(head -c 300 "$W/err")"; fi
}
refused "-log is refused, not ignored" "-log: not supported" -log x
refused "-regex with a bad expression is refused" "-e a(: not a regular expression" -regex -e 'a('
refused "an unknown option is refused" "-bogus: unknown option" -bogus
refused "an unknown compressor" "-comp: unknown compressor" -comp nope
refused "-Xbcj without -comp xz" "-Xbcj: an xz option" -Xbcj x86
refused "-Xdict-size not 2^n or 2^n+2^(n-1)" "-Xdict-size 3K: must be" -comp xz -Xdict-size 3K
refused "an unknown BCJ filter" "-Xbcj: unknown filter 'foo'" -comp xz -Xbcj foo
refused "-stream (4.7.3) is refused, not ignored" "-stream: not supported" -stream
refused "an action by its short name (4.7's -a) is refused as actions are" "-a: not supported: actions" -a 'exclude@name(big)'

# 4.7's other names and help options.
rm -f "$W/q.sqfs"
"$QM" "$W/src" "$W/q.sqfs" -noappend -quiet -fstime 12345 -pseudo-dir "d 700 4321 0" -p "made/deep d 755 0 0" >/dev/null 2>&1
check "-fstime is -mkfs-time, -pseudo-dir is -pd" bash -c \
	"unsquashfs -s '$W/q.sqfs' | grep -q 'Creation or last append time Thu Jan  1 03:25:45 1970' &&
	 unsquashfs -lln '$W/q.sqfs' | grep -q '^drwx------ 4321/0 .* squashfs-root/made\$'"
refused "a bad value is named by the option's name as given (-fstime)" "-fstime: bad value 'x'" -fstime x
refused "a missing value too (-fstime)" "-fstime: needs a value" -fstime
refused "a bad default directory too (-pseudo-dir)" "-pseudo-dir: expected" -pseudo-dir q
check "-help-comp list, -help-comp xz, and -comp zstd -Xhelp name the compressors and their options" bash -c \
	"'$QM' -help-comp list | grep -q 'gzip, lzo, lz4, xz, zstd' && '$QM' -help-comp xz | grep -q -- '-Xdict-size' &&
	 '$QM' '$W/src' '$W/q.sqfs' -comp zstd -Xhelp | grep -q 'Xcompression-level.*22'"
check "-help-option REGEX: the help's lines about it; none: one line, exit 1" bash -c \
	"'$QM' -help-option 'Xbcj' | grep -q -- '-Xbcj' && ! '$QM' -ho 'no-such-thing' 2>'$W/err' && [ \$(wc -l <'$W/err') = 1 ]"
check "-help-section S prints the help (quash's has no sections), -cols N and -no-pager are taken" bash -c \
	"'$QM' -help-section compression | grep -q 'Usage: mksquashfs' &&
	 '$QM' '$W/src' '$W/q.sqfs' -noappend -quiet -cols 80 -no-pager && unsquashfs -lln '$W/q.sqfs' | grep -q c/small"
rm -f "$W/mem.sqfs"
check "sqfstar -mem 64M IMAGE: -mem's value is not taken for IMAGE" bash -c \
	"cd '$W' && '$W/bin/sqfstar' -quiet -mem 64M mem.sqfs <src.tar >/dev/null && unsquashfs -lln mem.sqfs | grep -q c/small"
"$QM" "$W/src" "$W/ap.sqfs" -noappend -quiet >/dev/null 2>&1
check "without -noappend an existing image is appended to, a name it has renamed NAME_1" bash -c \
	"'$QM' '$W/src' '$W/ap.sqfs' -quiet >/dev/null 2>&1 && unsquashfs -lln '$W/ap.sqfs' | grep -q ' squashfs-root/a_1/big\$'"
: >"$W/empty.sqfs"
"$QM" "$W/src" "$W/empty.sqfs" -quiet >/dev/null 2>"$W/err"
st=$?
check "an empty DEST is no image to append to, as for mksquashfs: one line, exit 1" bash -c \
	"[ $st = 1 ] && [ \"\$(wc -l <'$W/err')\" = 1 ] && grep -q 'empty.sqfs: cannot append to it: ' '$W/err'"
check "-version" bash -c "'$QM' -version | grep -q '^mksquashfs version 4.6 (compatible; quash '"
check "-help on stdout, exit 0" bash -c "'$QM' -help | grep -q 'Usage: mksquashfs SOURCE... DEST'"
check "quash mksquashfs is the same form" bash -c \
	"cd '$W' && [ \"\$('$QUASH_ASAN' mksquashfs src sub.sqfs -noappend -quiet -comp xz 2>&1)\" = '' ] &&
	 unsquashfs -s sub.sqfs | grep -q 'Compression xz'"
check "no run of the sanitizer build as mksquashfs drew a sanitizer report" asan_as_clean "$W/bin/mksquashfs"
check "no run of the sanitizer build as sqfstar drew a sanitizer report" asan_as_clean "$W/bin/sqfstar"
