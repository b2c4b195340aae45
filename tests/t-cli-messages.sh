#!/bin/bash
# t-cli-messages.sh - small things a newcomer meets, each as it should read:
# a URL of a scheme quash does not speak (and a local path that only looks
# like one), an -o offset= past the image, pack's summary of a tiny tree,
# quash umount's article for the mount's type, the drop-in names'
# completion, every man page named where the docs list them, every link
# from the README into docs/benchmarks.md landing on a heading there, and
# every bench/ script with its section in docs/benchmarks.md.
. "$(dirname "$0")/lib/tap.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-cli-messages
rm -rf "$W" && mkdir -p "$W/tree" "$W/m"
echo a >"$W/tree/a"

# says NAME STATUS LINE CMD...: CMD exits STATUS and its stderr is LINE alone
says() {
	local name=$1 want=$2 line=$3 st; shift 3
	"$@" >/dev/null 2>"$W/err"; st=$?
	if [ $st = "$want" ] && [ "$(cat "$W/err")" = "$line" ]; then ok "$name"
	else not_ok "$name" "exit $st: $(head -c 300 "$W/err")"; fi
}

for cmd in ls info cat; do
	extra=(); [ $cmd = cat ] && extra=(/a)
	says "$cmd of an ftp:// URL: unsupported scheme, one line" 1 \
		"quash: ftp://example.org/x.sqfs: unsupported URL scheme 'ftp' (http, https and s3 are)" \
		"$QUASH_ASAN" $cmd ftp://example.org/x.sqfs "${extra[@]}"
done
says "mount of a mistyped scheme names it" 1 \
	"quash: mount: htp://example.org/x.sqfs: unsupported URL scheme 'htp' (http, https and s3 are)" \
	"$QUASH_ASAN" mount htp://example.org/x.sqfs "$W/m"
# "ftp://h/x.sqfs" is also the path ftp:/h/x.sqfs: a file there is opened as one.
"$QUASH" pack -q "$W/tree" "$W/t.sqfs"
mkdir -p "$W/ftp:/h" && cp "$W/t.sqfs" "$W/ftp:/h/x.sqfs"
check "a local file at a path that looks like a URL still opens" \
	bash -c "cd '$W' && [ \"\$('$QUASH_ASAN' ls ftp://h/x.sqfs 2>&1)\" = \"\$('$QUASH_ASAN' ls t.sqfs 2>&1)\" ]"
says "a missing local file is still 'No such file or directory'" 1 \
	"quash: $W/none.sqfs: No such file or directory" "$QUASH_ASAN" ls "$W/none.sqfs"

head -c 4096 "$W/t.sqfs" >"$W/short.img"
says "-o offset= at the end of the file says what is left after it" 1 \
	"quash: mount: $W/short.img: too small to be a squashfs image (0 bytes after offset 4096)" \
	"$QUASH_ASAN" mount -o offset=4096 "$W/short.img" "$W/m"

"$QUASH_ASAN" pack "$W/tree" "$W/tiny.sqfs" >"$W/out" 2>"$W/err"; st=$?
check "pack of a tiny tree: sizes a person reads, no ratio of thousands of percent ($(cat "$W/out"))" \
	bash -c "[ $st = 0 ] && [ ! -s '$W/err' ] && grep -Eqx 'quash: 1 file, 2 bytes in, 4\\.0 KiB image, [0-9.]+ s' '$W/out'"
head -c 300000 /dev/urandom >"$W/tree/big"
"$QUASH" pack "$W/tree" "$W/big.sqfs" >"$W/out" 2>/dev/null
check "pack of 300 KB: the ratio is there ($(cat "$W/out"))" \
	grep -Eqx 'quash: 2 files, 293\.0 KiB in, [0-9.]+ KiB image \(10[0-9]\.[0-9]%\), [0-9.]+ s' "$W/out"

type=$(findmnt -n -o FSTYPE /)
article=a; case $type in [aeiouAEIOU]*) article=an ;; esac
says "umount of / names its type with the right article ($article $type)" 1 \
	"quash: umount: /: $article $type mount, not a quash (FUSE) one; use umount(8)" "$QUASH_ASAN" umount /

# Completion: the drop-in names complete as quash where they are quash, and
# keep their own completion where they are the real tools.
mkdir -p "$W/dropin" "$W/real"
ln -s "$QUASH" "$W/dropin/quash"
for n in mksquashfs squashfuse_ll; do ln -s quash "$W/dropin/$n"; ln -s /usr/bin/mksquashfs "$W/real/$n"; done
ln -s "$QUASH" "$W/real/quash"
check "completion: mksquashfs and squashfuse_ll complete as quash where they are quash" \
	bash -c "PATH='$W/dropin':\$PATH; source '$top/docs/quash.bash-completion'
		complete -p mksquashfs squashfuse_ll | grep -c ' _quash ' | grep -qx 2"
check "completion: the real tools' names are left alone" \
	bash -c "PATH='$W/real':\$PATH; source '$top/docs/quash.bash-completion'; ! complete -p mksquashfs 2>/dev/null"

# Every page is named in quash(1)'s SEE ALSO and in the README's list.
missing_see=() missing_readme=()
for page in "$top"/docs/quash-*.1; do
	n=$(basename "$page" .1)
	grep -q "^\.BR ${n//-/\\\\-} (1)" "$top/docs/quash.1" || missing_see+=("$n")
	grep -Eq "\`(man )?$n\`" "$top/README.md" || missing_readme+=("$n")
done
check "every man page is in quash(1)'s SEE ALSO${missing_see:+ (missing: ${missing_see[*]})}" test ${#missing_see[@]} = 0
check "every man page is in the README's list${missing_readme:+ (missing: ${missing_readme[*]})}" test ${#missing_readme[@]} = 0

# The README's links into docs/benchmarks.md name headings there (GitHub's
# anchors: lower case, punctuation dropped, spaces as hyphens).
bm=$top/docs/benchmarks.md
anchors=$(sed -n 's/^#\{1,6\} //p' "$bm" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g')
links=$(grep -o 'docs/benchmarks\.md#[^)]*' "$top/README.md" | sed 's/.*#//' | sort -u)
missing=()
for a in $links; do grep -qx -- "$a" <<<"$anchors" || missing+=("$a"); done
check "the README's links into docs/benchmarks.md land on its headings ($(echo $links | wc -w))${missing:+ (no heading: ${missing[*]})}" \
	test -n "$links" -a ${#missing[@]} = 0
# Each benchmark script has its section (the two helpers, run-all.sh and
# plot.sh, are named), and each section's script exists.
sections=$(sed -n 's/^## \(bench\/[^ ]*\)$/\1/p' "$bm")
missing=()
for b in "$top"/bench/*.sh; do
	n=bench/$(basename "$b")
	case $n in
	bench/run-all.sh|bench/plot.sh) grep -q -- "$n" "$bm" || missing+=("$n") ;;
	*) grep -qx -- "$n" <<<"$sections" || missing+=("$n") ;;
	esac
done
for n in $sections; do [ -f "$top/$n" ] || missing+=("$n (no such script)"); done
check "docs/benchmarks.md: a section for every bench/ script ($(echo $sections | wc -w)), none for another${missing:+ (${missing[*]})}" \
	test -n "$sections" -a ${#missing[@]} = 0
