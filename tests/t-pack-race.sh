#!/bin/bash
# t-pack-race.sh - root packs a tree that another user owns and changes
# while it is packed.  The data phase must read only what the scan saw:
# a directory swapped for a symlink to a directory root can read, a file
# swapped for a symlink or another file, a file that grew: each makes the
# pack fail with one line naming the path, and the outside file's bytes
# never reach an image.  QUASH_TEST_PACK_PAUSE holds the pack between
# the scan and the data phase (pack/util.c), so the swap happens at a
# known point, not against a sleep.
. "$(dirname "$0")/lib/tap.sh"

R=$WORK/pack-race
rm -rf "$R" && mkdir -p "$R/secret"
trap 'rm -rf "$R"' EXIT
echo "TOPSECRET shadow line" >"$R/secret/f" && cp "$R/secret/f" "$R/secret/h"
chmod 700 "$R/secret" && chmod 600 "$R/secret/f" "$R/secret/h"
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# make_src: a tree owned by nobody, in a directory nobody can write.
make_src() {
	rm -rf "$R/src" "$R/img.sqfs" && mkdir -p "$R/src/d"
	echo "public line, d/f" >"$R/src/d/f"
	echo "public line, h .." >"$R/src/h"
	echo "grows" >"$R/src/grow"
	chown -R 65534:65534 "$R/src" && chmod 755 "$R" "$R/src"
}

# race NAME PATTERN SWAP...: pack as root, run SWAP as nobody at the pause;
# the pack must fail with PATTERN and the secret must be in no image.
race() {
	local name=$1 pattern=$2 line st; shift 2
	make_src
	rm -f "$R/fifo" && mkfifo "$R/fifo"
	QUASH_TEST_PACK_PAUSE=$R/fifo "$QUASH_ASAN" pack -q -j 1 --no-progress "$R/src" "$R/img.sqfs" \
		2>"$R/err" &
	local pid=$!
	if ! line=$(timeout 20 head -n 1 "$R/fifo") || [ "$line" != paused ]; then
		not_ok "$name" "the pack did not pause between scan and data (got '$line')"
		kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
		return
	fi
	as_user "$@"
	echo go >"$R/fifo"
	wait $pid
	st=$?
	if [ -e "$R/img.sqfs" ] && unsquashfs -cat "$R/img.sqfs" d/f h 2>/dev/null | grep -q TOPSECRET; then
		not_ok "$name" "the secret is in the image"
	elif [ $st -lt 1 ] || [ $st -gt 97 ] || [ "$(wc -l <"$R/err")" -ne 1 ] ||
	     ! grep -q -- "$pattern" "$R/err"; then
		not_ok "$name" "exit $st: $(head -c 300 "$R/err")"
	else
		ok "$name"
	fi
}

race "a directory swapped for a symlink to /etc-like is not followed" \
	"src/d/f: replaced or changed since the scan" \
	sh -c "mv '$R/src/d' '$R/src/d.old' && ln -s '$R/secret' '$R/src/d'"
race "a file swapped for a symlink is not followed" \
	"src/h: replaced or changed since the scan" \
	sh -c "mv '$R/src/h' '$R/src/h.old' && ln -s '$R/secret/h' '$R/src/h'"
race "a file swapped for another file is not read" \
	"src/h: replaced or changed since the scan" \
	sh -c "echo 'another file, same size' >'$R/src/h.new' && mv '$R/src/h.new' '$R/src/h'"
race "a file that grew since the scan is refused" \
	"src/grow: replaced or changed since the scan" \
	sh -c "echo more >>'$R/src/grow'"

# The same pause with no change: the image holds the tree, read back by unsquashfs.
make_src
rm -f "$R/fifo" && mkfifo "$R/fifo"
QUASH_TEST_PACK_PAUSE=$R/fifo "$QUASH_ASAN" pack -q --no-progress "$R/src" "$R/img.sqfs" 2>"$R/err" &
pid=$!
timeout 20 head -n 1 "$R/fifo" >/dev/null && echo go >"$R/fifo"
wait $pid
check "with nothing changed the pack succeeds" [ $? -eq 0 ]
check "and the image holds the owner's files" \
	[ "$(unsquashfs -cat "$R/img.sqfs" d/f 2>/dev/null)" = "public line, d/f" ]
