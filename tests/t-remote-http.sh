#!/bin/bash
# t-remote-http.sh - images over HTTP and HTTPS from a real nginx on 127.0.0.1:
# byte-for-byte reads, a test CA, faults injected by a proxy (each failure
# with its exit status and message, within the retry budget; a server that
# speaks no TLS fails at once; a terminal is told of the first retry), an object
# replaced mid-read, and the persistent cache standing in for a stopped
# server.  Compressible files whose compressed blocks cross 64 KiB, 256 KiB
# and 1 MiB chunk boundaries read through mounts of those chunk sizes equal
# to the kernel's own mount of the image.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/mount.sh"

W=$WORK/remote-http
rm -rf "$W" && mkdir -p "$W/www"
trap 'unmount_all; remote_cleanup' EXIT

make_test_image "$W" text
cp "$W/image.sqfs" "$W/www/image.sqfs"
make_test_ca "$W/certs"
HTTP=$(free_port) HTTPS=$(free_port) PROXY=$(free_port)
start_nginx "$W/nginx" "$W/www" "$HTTP" "$HTTPS" "$W/certs" || not_ok "nginx starts" "$(tail -3 "$W/nginx/error.log")"
URL=http://127.0.0.1:$HTTP/image.sqfs
IMG=$W/image.sqfs
RR=$REMOTE_READ

check "http: every byte, 4 racing readers" $RR -c 262144 -t 4 -n 40 "$URL" "$IMG"
check "http: pinned range, chunk 64 KiB, small memory cache" $RR -c 65536 -m 1048576 -p -t 2 "$URL" "$IMG"
head -c "$(stat -c %s "$IMG")" /dev/urandom >"$W/other"
check_fails "comparison sees other bytes" 2 "^remote_read: MISMATCH: " $RR -c 262144 "$URL" "$W/other"
check_fails "missing object is an error naming the 404" 1 "^remote_read: .*not found: HTTP 404" \
	$RR "http://127.0.0.1:$HTTP/nothing.sqfs" "$IMG"

CURL_CA_BUNDLE=$W/certs/ca.pem check "https: test CA from CURL_CA_BUNDLE" \
	$RR -t 2 "https://127.0.0.1:$HTTPS/image.sqfs" "$IMG"
check "https: test CA from SSL_CERT_FILE" env -u CURL_CA_BUNDLE SSL_CERT_FILE="$W/certs/ca.pem" \
	$RR "https://127.0.0.1:$HTTPS/image.sqfs" "$IMG"
check_fails "https: unknown CA is refused" 1 "^remote_read: .*(certificate|CA)" env -u CURL_CA_BUNDLE -u SSL_CERT_FILE \
	$RR -r 1 "https://127.0.0.1:$HTTPS/image.sqfs" "$IMG"

# What will not get better fails at once, whatever the budget: https:// to a
# server that speaks no TLS.  What may (a refused connection) keeps the
# budget, and a person at a terminal is told of the first retry, once.
t0=$(date +%s%N)
check_fails "https:// to a plain-HTTP port fails at once, saying why" 1 \
	"^quash: https://127.0.0.1:$HTTP/image.sqfs: .*wrong version number \(the server speaks no TLS there" \
	"$QUASH_ASAN" ls --retry-seconds 30 "https://127.0.0.1:$HTTP/image.sqfs"
ms=$((($(date +%s%N) - t0) / 1000000))
check "... in $ms ms, not the 30 s budget" test $ms -lt 5000
DOWN=$(free_port)
script -qec "'$QUASH' ls --retry-seconds 2 http://127.0.0.1:$DOWN/image.sqfs" /dev/null >"$W/tty.out" 2>&1
check "on a terminal, the first retry is told once ($(grep -c retrying "$W/tty.out") lines), then the give-up line" \
	bash -c "[ \$(grep -c '; retrying for up to [12] s' '$W/tty.out') = 1 ] && grep -q 'gave up after' '$W/tty.out'"
"$QUASH" ls --retry-seconds 2 "http://127.0.0.1:$DOWN/image.sqfs" >/dev/null 2>"$W/notty.err"
check "not on a terminal: the give-up line alone" \
	bash -c "[ \$(wc -l <'$W/notty.err') = 1 ] && grep -q 'gave up after' '$W/notty.err'"

# Compressible files over remote chunks: their compressed blocks cross chunk
# boundaries, so a read decompresses a block pieced together from two chunks.
# The oracle is the kernel's own mount of the same image.
n64=$(text_straddles "$IMG" 65536) n256=$(text_straddles "$IMG" 262144) n1m=$(text_straddles "$IMG" 1048576)
check "fixture: compressed blocks of the text files cross 64 KiB, 256 KiB, 1 MiB boundaries ($n64, $n256, $n1m)" \
	test "$n64" -ge 1 -a "$n256" -ge 1 -a "$n1m" -ge 1
kmount "$IMG" "$W/kernel"
check "the kernel's mount reads the text files as written" diff -r "$W/tree/text" "$W/kernel/text"
text_same() { compare_trees "$W/kernel/text" "$1/text" && [ ! -s "$2" ]; }   # text_same MOUNT ERRFILE
for cs in 64K 256K 1M; do
	qmount "$W/m$cs" "$QUASH_ASAN" mount -o "chunk_size=$cs,noprefetch" "$URL" "$W/m$cs" 2>"$W/m$cs.err"
	check "mount over http, chunk_size=$cs: the text files equal the kernel's, nothing said" \
		text_same "$W/m$cs" "$W/m$cs.err"
	fusermount3 -u "$W/m$cs"
done

# The offline tools over HTTP print what they print for the local image.
check "quash ls -lR over http equals the local image's" \
	cmp <($QUASH_ASAN ls -lR "$IMG" 2>&1) <($QUASH_ASAN ls -lR "$URL" 2>&1)
check "quash cat over http equals the source files (random and compressible)" \
	cmp <($QUASH_ASAN cat "$URL" sub/deeper/big text/t1 text/t2 text/t3 text/t4) \
	<(cd "$W/tree" && cat sub/deeper/big text/t1 text/t2 text/t3 text/t4)
rm -rf "$W/x-local" "$W/x-http"
$QUASH_ASAN extract "$URL" -C "$W/x-http"
check "quash extract over http recreates the source tree" diff -r --no-dereference "$W/tree" "$W/x-http"

# Opening costs one request and the metadata one more: ls -lR needs no third.
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" pass --log "$W/requests.log"
$QUASH_ASAN ls -lR "http://127.0.0.1:$PROXY/image.sqfs" >"$W/ls.proxy" 2>&1; st=$?
n=$(wc -l <"$W/requests.log")
if [ $st = 0 ] && cmp -s "$W/ls.proxy" <($QUASH_ASAN ls -lR "$IMG" 2>&1) && [ "$n" -ge 2 ] && [ "$n" -le 3 ]; then
	ok "ls -lR of a remote image: the local image's listing, in $n requests"
else not_ok "ls -lR of a remote image: the local image's listing, in 2 or 3 requests" "exit $st, $n: $(cat "$W/requests.log")"; fi
stop_pid "$PROXY_PID"

# Credentials in a URL never reach a message.
$RR -r 1 "http://user:sekr1tpass@127.0.0.1:$HTTP/nothing.sqfs?X-Amz-Signature=sekr1tsig" "$IMG" 2>"$W/err"; st=$?
if [ $st = 1 ] && grep -q "not found: HTTP 404" "$W/err" && ! grep -q sekr1t "$W/err"; then ok "no credentials in messages"
else not_ok "no credentials in messages" "exit $st: $(cat "$W/err")"; fi

# Faults between quash and the server: each is retried, the bytes still match.
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" reset,500,503,429,truncate,short,stall,reset --stall 20
check "faults: reset, 500, 503, 429, truncated, short, stalled answers are retried" \
	$RR -c 1048576 -s 1048576 -r 16 -t 3 "http://127.0.0.1:$PROXY/image.sqfs" "$IMG"
stop_pid "$PROXY_PID"
# Each read error names what the server did wrong and that the retries are spent.
declare -A SAID=([503]="HTTP 503" [429]="HTTP 429" [short]="short answer: [0-9]+ of [0-9]+ bytes"
	[reset]="(Recv failure|Empty reply|Connection reset|Failure when receiving)")
for f in 503 429 short reset; do
	start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" "always:$f"
	t0=$EPOCHREALTIME
	check_fails "faults: $f forever ends in an error" 1 "^remote_read: read [0-9]+ at [0-9]+: .*${SAID[$f]}.*; gave up after [0-9]+ attempts in 3 s" \
		$RR -c 1048576 -r 3 "http://127.0.0.1:$PROXY/image.sqfs" "$IMG"
	took=$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $t0 }")
	check "faults: $f forever gives up within the 3 s budget, 1 s margin (${took} s)" \
		awk "BEGIN { exit !($took < 4) }"
	stop_pid "$PROXY_PID"
done
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" always:badrange
check_fails "faults: a wrong Content-Range is an error, not data" 1 \
	"^remote_read: read [0-9]+ at [0-9]+: asked for bytes [0-9]+-[0-9]+, got Content-Range [0-9]+-[0-9]+/[0-9]+" \
	$RR -c 1048576 -r 3 "http://127.0.0.1:$PROXY/image.sqfs" "$IMG"
stop_pid "$PROXY_PID"

# The object replaced mid-read: reads fail with ESTALE, never mix versions.
cp "$IMG" "$W/www/changing.sqfs"
touch -d '1 hour ago' "$W/www/changing.sqfs"
check "replaced object: later reads fail with ESTALE" $RR -c 65536 -E 116 \
	-x "cp '$W/other' '$W/www/new' && mv '$W/www/new' '$W/www/changing.sqfs'" \
	"http://127.0.0.1:$HTTP/changing.sqfs" "$IMG"

# Persistent cache: two processes fill it at once, then the server goes away.
C=$W/cache
$RR -c 262144 -d "$C" -t 2 "$URL" "$IMG" & p1=$!
$RR -c 262144 -d "$C" -t 2 "$URL" "$IMG"; s2=$?
wait $p1; s1=$?
check "cache dir: two processes share it" test $s1 = 0 -a $s2 = 0
stop_pid "$NGINX_PID"
$RR -c 262144 -d "$C" -t 4 "$URL" "$IMG" 2>"$W/offline.err"; st=$?
check "cache dir: every byte reads with the server stopped" test $st = 0
check "cache dir: the notice says the server is unreachable" grep -q "server unreachable" "$W/offline.err"
check_fails "no cache dir, no server: an error" 1 "^remote_read: .*gave up after [0-9]+ attempts in 1 s" $RR -r 1 "$URL" "$IMG"
