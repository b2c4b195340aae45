#!/bin/bash
# t-pack-errors.sh - bad input and interruptions: exactly the one-line
# error naming the path (or option) and the problem, the exact exit status,
# and nothing at the target (an image already
# there stays as it was).  Run by the sanitizer build where it matters.
. "$(dirname "$0")/lib/tap.sh"

T=$WORK/pack-errors
rm -rf "$T" && mkdir -p "$T"
trap 'rm -rf "$T"' EXIT

mkdir -p "$T/src/d" && echo hello >"$T/src/d/f" && head -c 300000 /dev/urandom >"$T/src/r"
$QUASH pack -q "$T/src" "$T/keep.sqfs" && cp "$T/keep.sqfs" "$T/keep.orig"
no_leftovers() { ! ls -a "$T" | grep -q '^\.[^.].*\.[A-Za-z0-9]\{6\}$'; }

# fails_cleanly NAME STATUS MESSAGE CMD...: exit STATUS, stderr exactly
# MESSAGE (one line, naming the thing and the problem; \n joins the pointer
# to --help of a usage error), no sanitizer report, target untouched.
fails_cleanly() {
	local name=$1 want_st=$2 want=$3 st; shift 3
	"$@" >/dev/null 2>"$T/err"
	st=$?
	if [ "$st" != "$want_st" ] || grep -qE 'Sanitizer|runtime error:' "$T/err"; then
		not_ok "$name" "exit $st, not $want_st: $(head -c 300 "$T/err")"
	elif [ "$(cat "$T/err")" != "$(printf '%b' "$want")" ]; then
		not_ok "$name" "said '$(head -c 300 "$T/err")', not '$want'"
	elif ! cmp -s "$T/keep.sqfs" "$T/keep.orig" || ! no_leftovers; then
		not_ok "$name" "the target or a temporary file was changed or left"
	else
		ok "$name"
	fi
}

fails_cleanly "a missing source is named" 1 "quash: pack: $T/missing: No such file or directory" $QUASH_ASAN pack -q "$T/missing" "$T/keep.sqfs"
fails_cleanly "a missing source among good ones" 1 "quash: pack: $T/missing: No such file or directory" \
	$QUASH pack -q "$T/src" "$T/missing" "$T/keep.sqfs"
head -c 100000 /dev/urandom >"$T/garbage.tar"
fails_cleanly "an archive of random bytes is named" 1 \
	"quash: pack: $T/garbage.tar: cannot read archive: Unrecognized archive format" \
	$QUASH_ASAN pack -q "$T/garbage.tar" "$T/keep.sqfs"
tar -C "$T/src" -czf "$T/t.tar.gz" . && head -c 150000 "$T/t.tar.gz" >"$T/cut.tar.gz"
fails_cleanly "a truncated tar.gz is named, and the entry it cuts" 1 \
	"quash: pack: $T/cut.tar.gz: ./r: truncated or corrupt archive: truncated gzip input" $QUASH_ASAN pack -q "$T/cut.tar.gz" "$T/keep.sqfs"
tar -C "$T/src" -cf "$T/t.tar" . && head -c 200000 "$T/t.tar" >"$T/cut.tar"
fails_cleanly "a tar cut inside a file is named, and the file" 1 \
	"quash: pack: $T/cut.tar: ./r: truncated or corrupt archive: Truncated tar archive" $QUASH_ASAN pack -q "$T/cut.tar" "$T/keep.sqfs"
fails_cleanly "a truncated archive on stdin" 1 "quash: pack: (stdin): ./r: truncated or corrupt archive: truncated gzip input" \
	sh -c "$QUASH_ASAN pack -q - '$T/keep.sqfs' <'$T/cut.tar.gz'"
# An image's id table holds 65536 uids and gids; the tree keeps owners as 16-bit indices into it.
python3 - "$T/owners.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for i in range(33000):
        ti = tarfile.TarInfo(f"f{i}"); ti.size = 1; ti.uid = 100000 + i; ti.gid = 200000 + i
        t.addfile(ti, io.BytesIO(b"x"))
PY
fails_cleanly "more owners than an image holds" 1 \
	"quash: pack: id 232767: more than 65536 distinct owners and groups (a squashfs image holds 65536)" \
	$QUASH pack -q "$T/owners.tar" "$T/keep.sqfs"
check "the same tar packs with --all-root, every owner 0" \
	bash -c "$QUASH pack -q --all-root '$T/owners.tar' '$T/owners.sqfs' && unsquashfs -lln '$T/owners.sqfs' | awk 'NR > 3 && \$2 != \"0/0\" { exit 1 }' && [ \$(unsquashfs -lln '$T/owners.sqfs' | wc -l) -ge 33001 ]"
# A symlink with an empty target is none: unsquashfs refuses an image holding one (found by fuzzing).
python3 - "$T/nolink.tar" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("d/link"); ti.type = tarfile.SYMTYPE; ti.linkname = ""
    t.addfile(ti)
PY
fails_cleanly "an archive's symlink without a target is named" 1 "quash: pack: $T/nolink.tar: d/link: no symlink target" \
	$QUASH_ASAN pack -q "$T/nolink.tar" "$T/keep.sqfs"
fails_cleanly "a pseudo symlink without a target is named" 1 "quash: mksquashfs: pseudo file -p: x: s needs a target" \
	$QUASH mksquashfs "$T/src" "$T/keep.sqfs" -noappend -quiet -p 'x s 0777 0 0 ""'
fails_cleanly "a target that is a directory" 1 "quash: pack: $T/src: is a directory" $QUASH pack -q "$T/src" "$T/src"
fails_cleanly "a target in a missing directory" 1 \
	"quash: pack: $T/nodir/x.sqfs: cannot create a file beside it: No such file or directory" $QUASH pack -q "$T/src" "$T/nodir/x.sqfs"
check "no image where the failed packs were aimed" test ! -e "$T/nodir/x.sqfs"

while IFS='|' read -r args msg; do
	# shellcheck disable=SC2086  # the options are words
	fails_cleanly "bad option $args" 2 "quash: pack: $msg" $QUASH_ASAN pack $args "$T/src" "$T/keep.sqfs"
done <<'EOF'
-b 3000|bad value for --block-size (4K..1M, a power of two): '3000'
-b 2M|bad value for --block-size (4K..1M, a power of two): '2M'
-c nope|unknown compressor 'nope' (zstd, gzip, xz, lz4 or lzo)
-l 99|zstd: compression level 99 not in 1..22
-c gzip -l 12|gzip: compression level 12 not in 1..9
-j 0|bad value for --jobs: '0'
--mode 999|bad value for --mode: '999'
EOF
fails_cleanly "no image argument" 2 "quash: pack: missing IMAGE (the last operand)\nTry 'quash pack --help' for more information." $QUASH pack "$T/src"

# Unreadable files, as an unprivileged user (root reads everything).
mkdir -p "$T/u/src/sub" && echo secret >"$T/u/src/sub/locked" && echo fine >"$T/u/src/open"
chmod 000 "$T/u/src/sub/locked" && mkdir -p "$T/u/src/closed" && chmod 000 "$T/u/src/closed"
chmod 777 "$T/u" && cp "$T/keep.orig" "$T/u/keep.sqfs" && chmod 666 "$T/u/keep.sqfs"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody $QUASH pack -q "$T/u/src" "$T/u/keep.sqfs" >/dev/null 2>"$T/u/err"
st=$?
# The walk is sorted, so the first unreadable entry met is closed/, whatever the thread count.
if [ $st = 1 ] && cmp -s "$T/u/keep.sqfs" "$T/keep.orig" && [ "$(cat "$T/u/err")" = \
	"quash: pack: $T/u/src/closed: Permission denied; --skip-unreadable leaves such files out" ]
then ok "an unreadable file is an error naming it"
else not_ok "an unreadable file is an error naming it" "exit $st: $(head -c 200 "$T/u/err")"; fi
if as_nobody $QUASH pack -q --skip-unreadable "$T/u/src" "$T/u/skip.sqfs" 2>"$T/u/err"; then
	list=$(unsquashfs -l "$T/u/skip.sqfs" | sed -n 's|^squashfs-root||p' | sort | tr '\n' ' ')
	check "--skip-unreadable leaves them out" test "$list" = " /open /sub "
	check "--skip-unreadable warns about each" test "$(grep -c 'warning:.*skipped' "$T/u/err")" = 2
else
	not_ok "--skip-unreadable packs the rest" "$(head -c 200 "$T/u/err")"
fi

# Symlink loops are stored as symlinks, never followed.
mkdir -p "$T/loop/d" && ln -s loop "$T/loop/loop" && ln -s . "$T/loop/d/self" && ln -s .. "$T/loop/d/up"
if $QUASH_ASAN pack -q "$T/loop" "$T/loop.sqfs" 2>"$T/loop.err"; then
	check "symlink loops are stored as symlinks" \
		test "$(unsquashfs -lls "$T/loop.sqfs" | grep -c '^l.* -> ')" = 3
else
	not_ok "a tree with symlink loops packs" "$(head -c 200 "$T/loop.err")"
fi

# Interrupted: no image, no temporary file, the old image untouched.  The data
# is compressible (random bytes are stored without compressing, in no time).
head -c 30000000 /dev/urandom | base64 >"$T/src/big"
for sig in INT TERM; do
	$QUASH pack -q -c xz -j 1 "$T/src" "$T/keep.sqfs" 2>/dev/null &
	pid=$!
	sleep 1
	kill -s $sig $pid
	wait $pid
	st=$?
	if [ $st -ne 0 ] && cmp -s "$T/keep.sqfs" "$T/keep.orig" && no_leftovers
	then ok "SIG$sig leaves the old image and no temporary file"
	else not_ok "SIG$sig leaves the old image and no temporary file" "exit $st"; fi
done
rm -f "$T/src/big"
