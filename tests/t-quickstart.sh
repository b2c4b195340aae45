#!/bin/bash
# t-quickstart.sh - the README's quick start, extracted from the README
# itself and run as it stands, as root and as an ordinary user (nobody):
# pack, the offline tools, mount, run a program from the image, unmount, the
# same image over HTTP (nginx, run as the user, with an ordinary user's PATH)
# and over S3 (Ceph RGW on 127.0.0.1), and the README's local S3 server
# (scripts/local-s3.sh).  A README edit that breaks it fails here; the last check
# proves that with a broken copy.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/quickstart.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-quickstart
FUSE_MODE=$(stat -c %a /dev/fuse)
rm -rf "$W" && mkdir -p "$W/bin" && chmod 755 "$W" "$W/bin"
trap 'chmod "$FUSE_MODE" /dev/fuse; remote_cleanup; "$top/tests/lib/stop-rgw.sh" "$W/rgw"' EXIT
quickstart_s3 "$W" quickstart || { not_ok "rgw starts" "$(tail -3 "$W/rgw.err")"; exit 1; }
ln -s "$QUASH_BIN" "$W/bin/quash"

check "the README has a quick start with shell blocks" test "$(quickstart_script "$top/README.md" | grep -c '^quash ')" -ge 8

# Ordinary users need /dev/fuse, as Debian ships it (the README's set-up step).
chmod 0666 /dev/fuse
for who in root nobody; do
	PORT=$(free_port) quickstart_run "$top/README.md" "$W/$who" "$W/bin" "$who"
	st=$?
	log=$W/$who.log
	left=$(tr '\n' ' ' <"$W/$who.mounts" 2>/dev/null)
	if [ $st = 0 ]; then ok "quick start as $who: every block runs"
	else not_ok "quick start as $who: every block runs" "exit $st: $(tail -5 "$log")"; fi
	check "quick start as $who: the file read by quash cat and through the local and HTTP mounts" \
		test "$(grep -c '^hello from inside an image$' "$log")" = 3
	check "quick start as $who: the program ran from the local and S3 mounts" \
		test "$(grep -c '^hello from mnt/bin/hello$' "$log")" = 2
	check "quick start as $who: the offline tools (cat, extract)" grep -q '^extracted copy: identical$' "$log"
	check "quick start as $who: nothing left mounted${left:+ ($left)}" test -f "$W/$who.mounts" -a ! -s "$W/$who.mounts"
done
check "the S3 image is there" bash -c "HOME='$W' aws --endpoint-url '$EP' s3 ls 's3://$BUCKET/tree.sqfs' | grep -q tree.sqfs"

# The README's local S3 server: scripts/local-s3.sh start prints what to
# export; the quick start's S3 block then runs against it as written.
p=$(free_port)     # the server also takes p + 1, for its monitor
out=$("$top/scripts/local-s3.sh" start "$W/ls3" "$p" 2>"$W/ls3.err"); st=$?
check "scripts/local-s3.sh start: the variables to export ($out)" \
	bash -c "[ $st = 0 ] && grep -Eq '^export AWS_ENDPOINT_URL=http://127.0.0.1:[0-9]+ .*BUCKET=quash$' <<<'$out'"
( eval "$out"; export HOME=$W/ls3home; mkdir -p "$HOME" && cd "$W/root" &&
  "$QUASH" pack -q tree "s3://$BUCKET/tree.sqfs" && "$QUASH" cat "s3://$BUCKET/tree.sqfs" /etc/motd ) >"$W/ls3.out" 2>&1
check "... and quash packs to it and reads back" grep -qx 'hello from inside an image' "$W/ls3.out"
"$top/scripts/local-s3.sh" stop "$W/ls3"
check "scripts/local-s3.sh stop: the server is gone" bash -c "[ ! -e '$W/ls3' ] && ! pgrep -f '[-]c $W/ls3/ceph.conf' >/dev/null"

# A broken quick start must fail: unmount a directory that was never mounted.
sed 's/^quash umount mnt$/quash umount tree/' "$top/README.md" >"$W/README.broken"
PORT=$(free_port) quickstart_run "$W/README.broken" "$W/broken" "$W/bin" root
st=$?
check "a README whose quick start is broken fails this test" bash -c "[ $st != 0 ] && grep -q 'quash: umount: tree: not mounted' '$W/broken.log'"
