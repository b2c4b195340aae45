#!/bin/bash
# t-remote-cache.sh - the persistent cache directory (--cache-dir) takes
# nothing on trust: created 0700, refused (one line naming it and the fix)
# when another user owns it or others may write it, or when a file in it
# is not its user's own regular file (a planted symlink, FIFO or chunk);
# every chunk carries a checksum, and bytes that fail it are fetched again,
# never served.  A sticky shared directory is divided per user.  The cache
# key covers the query string but not a presigned URL's credentials.
# Served by a real nginx; the oracle is unsquashfs on the local image.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"

W=$WORK/remote-cache
rm -rf "$W" && mkdir -p "$W/www" "$W/tree"
trap remote_cleanup EXIT
head -c 9000000 /dev/urandom >"$W/tree/data"   # three 4 MiB chunks: chunk 0 comes with the open
mksquashfs "$W/tree" "$W/www/a.sqfs" -noappend -quiet -no-progress >/dev/null
echo "the second object" >"$W/tree/data"
mksquashfs "$W/tree" "$W/www/q2.sqfs" -noappend -quiet -no-progress >/dev/null
cp "$W/www/a.sqfs" "$W/www/q.sqfs"
unsquashfs -cat "$W/www/a.sqfs" data >"$W/want"
HTTP=$(free_port)
# ?v=2 names another object than ?v=1 on this server.
NGINX_EXTRA='if ($arg_v = "2") { rewrite ^/q.sqfs$ /q2.sqfs last; }' \
	start_nginx "$W/nginx" "$W/www" "$HTTP" || not_ok "nginx starts" "$(tail -3 "$W/nginx/error.log")"
URL=http://127.0.0.1:$HTTP/a.sqfs
C=$W/cache
qcat() {   # qcat CACHE URL: the image's "data" to $W/got, stderr to $W/err; quash's exit status
	timeout -s KILL 20 "$QUASH_ASAN" cat --cache-dir "$1" "$2" /data >"$W/got" 2>"$W/err"
}
# refused NAME PATTERN CACHE: one line on stderr matching PATTERN, exit 1
refused() {
	local name=$1 pattern=$2 st
	qcat "$3" "$URL"; st=$?
	if [ $st -eq 1 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -q -- "$pattern" "$W/err"; then ok "$name"
	else not_ok "$name" "exit $st: $(head -c 300 "$W/err")"; fi
}

qcat "$C" "$URL"
check "a new cache directory reads the image" cmp -s "$W/got" "$W/want"
check "a new cache directory is made 0700" [ "$(stat -c %a "$C")" = 700 ]

# Bytes planted in every chunk file (sizes kept): checked, dropped, fetched again.
plant() {
	local f
	for f in "$C"/c-*; do
		printf 'PLANTED-BYTES' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 13)) conv=notrunc status=none
	done
}
plant
qcat "$C" "$URL"
check "planted chunk bytes are not served: fetched again" cmp -s "$W/got" "$W/want"
plant
stop_pid "$NGINX_PID"
# The refetch finds the server down: retried for the whole budget (2 s here), then exit 1.
timeout -s KILL 20 "$QUASH_ASAN" cat --retry-seconds 2 --cache-dir "$C" "$URL" /data >"$W/got" 2>"$W/err"; st=$?
if [ $st = 1 ] && grep -q "^quash: $URL: .*gave up after [0-9]* attempts in 2 s" "$W/err" && ! grep -q PLANTED-BYTES "$W/got"; then
	ok "planted chunk bytes with the server down: an error, not them"
else not_ok "planted chunk bytes with the server down: an error, not them" "exit $st: $(tail -c 300 "$W/err")"; fi
NGINX_EXTRA='if ($arg_v = "2") { rewrite ^/q.sqfs$ /q2.sqfs last; }' \
	start_nginx "$W/nginx" "$W/www" "$HTTP" || not_ok "nginx restarts"

# Whose directory, and who may write it.
chmod 770 "$C"
refused "a group-writable cache directory is refused" "cache directory $C: writable by group or others (chmod go-w $C)" "$C"
chmod 700 "$C"
mkdir -p "$W/theirs" && chown 65534:65534 "$W/theirs" && chmod 700 "$W/theirs"
refused "a cache directory of another user's is refused" "cache directory $W/theirs: owned by uid 65534" "$W/theirs"
qcat "$C" "$URL"
f=$(ls "$C"/c-* | head -1)
chown 65534 "$f"
refused "a chunk file of another user's is refused" "$(basename "$f") is not a file of yours" "$C"
chown 0 "$f" && chmod 666 "$f"
refused "a chunk file others may write is refused" "$(basename "$f") is not a file of yours" "$C"
rm -f "$f" && mkfifo "$f"
refused "a FIFO planted as a chunk is refused at once, not read" "$(basename "$f") is not a file of yours" "$C"
rm -f "$f"
ln -s "$W/victim" "$C/lock"
refused "a symlink planted as the lock is refused" "lock is not a file of yours" "$C"
check "and nothing was created through it" [ ! -e "$W/victim" ]
rm -f "$C/lock"
qcat "$C" "$URL"
check "the cleaned directory reads again" cmp -s "$W/got" "$W/want"

# A sticky directory everyone may write (as /tmp) is divided per user.
S=$W/shared
mkdir -p "$S" && chmod 1777 "$S" && chmod 755 "$W"
qcat "$S" "$URL"
check "shared sticky directory: root reads through its own part" cmp -s "$W/got" "$W/want"
setpriv --reuid=65534 --regid=65534 --clear-groups "$QUASH_ASAN" cat --cache-dir "$S" "$URL" /data \
	>"$W/got-nobody" 2>"$W/err"
if cmp -s "$W/got-nobody" "$W/want"; then ok "shared sticky directory: another user reads through theirs"
else not_ok "shared sticky directory: another user reads through theirs" "$(head -c 300 "$W/err")"; fi
check "shared sticky directory: one 0700 part per user" \
	[ "$(stat -c '%a %u' "$S/u-0" "$S/u-65534" | tr '\n' ' ')" = "700 0 700 65534 " ]

# The query string names the object: ?v=1 and ?v=2 are two records, and
# each still reads its own bytes once the server is gone.
Q=$W/qcache
unsquashfs -cat "$W/www/q2.sqfs" data >"$W/want2"
qcat "$Q" "http://127.0.0.1:$HTTP/q.sqfs?v=1" && qcat "$Q" "http://127.0.0.1:$HTTP/q.sqfs?v=2"
check "query: the server serves two objects" cmp -s "$W/got" "$W/want2"
# A presigned URL signs each request anew: its signature is not part of the key.
qcat "$Q" "http://127.0.0.1:$HTTP/q.sqfs?v=1&X-Amz-Credential=a&X-Amz-Signature=1111"
stop_pid "$NGINX_PID"
qcat "$Q" "http://127.0.0.1:$HTTP/q.sqfs?v=1"
check "query: ?v=1 reads its own bytes from the cache" cmp -s "$W/got" "$W/want"
qcat "$Q" "http://127.0.0.1:$HTTP/q.sqfs?v=2"
check "query: ?v=2 reads its own bytes from the cache" cmp -s "$W/got" "$W/want2"
qcat "$Q" "http://127.0.0.1:$HTTP/q.sqfs?v=1&X-Amz-Credential=b&X-Amz-Signature=2222"
check "query: another signature of ?v=1 shares its record" cmp -s "$W/got" "$W/want"
