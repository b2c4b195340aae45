#!/bin/bash
# t-pack-errors.sh - bad input and interruptions: a one-line error naming
# the path, a non-zero exit, and nothing at the target (an image already
# there stays as it was).  Run by the sanitizer build where it matters.
. "$(dirname "$0")/lib/tap.sh"

T=$WORK/pack-errors
rm -rf "$T" && mkdir -p "$T"
trap 'rm -rf "$T"' EXIT

mkdir -p "$T/src/d" && echo hello >"$T/src/d/f" && head -c 300000 /dev/urandom >"$T/src/r"
$QUASH pack -q "$T/src" "$T/keep.sqfs" && cp "$T/keep.sqfs" "$T/keep.orig"
no_leftovers() { ! ls -a "$T" | grep -q '^\.[^.].*\.[A-Za-z0-9]\{6\}$'; }

# fails_cleanly NAME PATTERN CMD...: exit 1..97, one stderr line matching PATTERN, target untouched.
fails_cleanly() {
	local name=$1 pattern=$2 st; shift 2
	"$@" >/dev/null 2>"$T/err"
	st=$?
	if [ $st -lt 1 ] || [ $st -gt 97 ] || grep -q Sanitizer "$T/err"; then
		not_ok "$name" "exit $st: $(head -c 300 "$T/err")"
	elif ! grep -q -- "$pattern" "$T/err"; then
		not_ok "$name" "message without '$pattern': $(head -c 300 "$T/err")"
	elif ! cmp -s "$T/keep.sqfs" "$T/keep.orig" || ! no_leftovers; then
		not_ok "$name" "the target or a temporary file was changed or left"
	else
		ok "$name"
	fi
}

fails_cleanly "a missing source is named" "$T/missing" $QUASH_ASAN pack -q "$T/missing" "$T/keep.sqfs"
fails_cleanly "a missing source among good ones" "$T/missing" \
	$QUASH pack -q "$T/src" "$T/missing" "$T/keep.sqfs"
head -c 100000 /dev/urandom >"$T/garbage.tar"
fails_cleanly "an archive of random bytes is named" "$T/garbage.tar" \
	$QUASH_ASAN pack -q "$T/garbage.tar" "$T/keep.sqfs"
tar -C "$T/src" -czf "$T/t.tar.gz" . && head -c 150000 "$T/t.tar.gz" >"$T/cut.tar.gz"
fails_cleanly "a truncated tar.gz is named" "$T/cut.tar.gz" $QUASH_ASAN pack -q "$T/cut.tar.gz" "$T/keep.sqfs"
tar -C "$T/src" -cf "$T/t.tar" . && head -c 200000 "$T/t.tar" >"$T/cut.tar"
fails_cleanly "a tar cut inside a file is named" "$T/cut.tar" $QUASH_ASAN pack -q "$T/cut.tar" "$T/keep.sqfs"
fails_cleanly "a truncated archive on stdin" "stdin" \
	sh -c "$QUASH_ASAN pack -q - '$T/keep.sqfs' <'$T/cut.tar.gz'"
# An image's id table holds 65536 uids and gids; the tree keeps owners as 16-bit indices into it.
python3 - "$T/owners.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for i in range(33000):
        ti = tarfile.TarInfo(f"f{i}"); ti.size = 1; ti.uid = 100000 + i; ti.gid = 200000 + i
        t.addfile(ti, io.BytesIO(b"x"))
PY
fails_cleanly "more owners than an image holds" "more than 65536 distinct owners" \
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
fails_cleanly "an archive's symlink without a target is named" "d/link: no symlink target" \
	$QUASH_ASAN pack -q "$T/nolink.tar" "$T/keep.sqfs"
fails_cleanly "a pseudo symlink without a target is named" "x: s needs a target" \
	$QUASH mksquashfs "$T/src" "$T/keep.sqfs" -noappend -quiet -p 'x s 0777 0 0 ""'
fails_cleanly "a target that is a directory" "$T/src" $QUASH pack -q "$T/src" "$T/src"
fails_cleanly "a target in a missing directory" "$T/nodir/x.sqfs" $QUASH pack -q "$T/src" "$T/nodir/x.sqfs"
check "no image where the failed packs were aimed" test ! -e "$T/nodir/x.sqfs"

for args in "-b 3000" "-b 2M" "-c nope" "-l 99" "-c gzip -l 12" "-j 0" "--mode 999"; do
	# shellcheck disable=SC2086  # the options are words
	fails_cleanly "bad option $args" "quash" $QUASH_ASAN pack $args "$T/src" "$T/keep.sqfs"
done
fails_cleanly "no image argument" "missing IMAGE" $QUASH pack "$T/src"

# Unreadable files, as an unprivileged user (root reads everything).
mkdir -p "$T/u/src/sub" && echo secret >"$T/u/src/sub/locked" && echo fine >"$T/u/src/open"
chmod 000 "$T/u/src/sub/locked" && mkdir -p "$T/u/src/closed" && chmod 000 "$T/u/src/closed"
chmod 777 "$T/u" && cp "$T/keep.orig" "$T/u/keep.sqfs" && chmod 666 "$T/u/keep.sqfs"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody $QUASH pack -q "$T/u/src" "$T/u/keep.sqfs" >/dev/null 2>"$T/u/err"
st=$?
if [ $st -ge 1 ] && [ $st -le 97 ] && grep -q "$T/u/src/" "$T/u/err" && cmp -s "$T/u/keep.sqfs" "$T/keep.orig"
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
