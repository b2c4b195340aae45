#!/bin/bash
# t-remote-http.sh - images over HTTP and HTTPS from a real nginx on 127.0.0.1:
# byte-for-byte reads, a test CA, faults injected by a proxy, an object
# replaced mid-read, and the persistent cache standing in for a stopped server.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"

W=$WORK/remote-http
rm -rf "$W" && mkdir -p "$W/www"
trap remote_cleanup EXIT

make_test_image "$W"
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
check_fails "comparison sees other bytes" $RR -c 262144 "$URL" "$W/other"
check_fails "missing object is an error" $RR "http://127.0.0.1:$HTTP/nothing.sqfs" "$IMG"

CURL_CA_BUNDLE=$W/certs/ca.pem check "https: test CA from CURL_CA_BUNDLE" \
	$RR -t 2 "https://127.0.0.1:$HTTPS/image.sqfs" "$IMG"
check "https: test CA from SSL_CERT_FILE" env -u CURL_CA_BUNDLE SSL_CERT_FILE="$W/certs/ca.pem" \
	$RR "https://127.0.0.1:$HTTPS/image.sqfs" "$IMG"
check_fails "https: unknown CA is refused" env -u CURL_CA_BUNDLE -u SSL_CERT_FILE \
	$RR -r 1 "https://127.0.0.1:$HTTPS/image.sqfs" "$IMG"

# The offline tools over HTTP print what they print for the local image.
check "quash ls -lR over http equals the local image's" \
	cmp <($QUASH_ASAN ls -lR "$IMG" 2>&1) <($QUASH_ASAN ls -lR "$URL" 2>&1)
check "quash cat over http equals the local file" \
	cmp <($QUASH_ASAN cat "$URL" sub/deeper/big) "$W/tree/sub/deeper/big"
rm -rf "$W/x-local" "$W/x-http"
$QUASH_ASAN extract "$IMG" -C "$W/x-local" && $QUASH_ASAN extract "$URL" -C "$W/x-http"
check "quash extract over http recreates the same tree" diff -r "$W/x-local" "$W/x-http"

# Opening costs one request and the metadata one more: ls -lR needs no third.
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" pass --log "$W/requests.log"
$QUASH_ASAN ls -lR "http://127.0.0.1:$PROXY/image.sqfs" >/dev/null
n=$(wc -l <"$W/requests.log")
if [ "$n" -le 3 ]; then ok "ls -lR of a remote image takes $n requests"
else not_ok "ls -lR of a remote image takes at most 3 requests" "$n: $(cat "$W/requests.log")"; fi
stop_pid "$PROXY_PID"

# Credentials in a URL never reach a message.
$RR -r 1 "http://user:sekr1tpass@127.0.0.1:$HTTP/nothing.sqfs?X-Amz-Signature=sekr1tsig" "$IMG" 2>"$W/err"
if [ -s "$W/err" ] && ! grep -q sekr1t "$W/err"; then ok "no credentials in messages"
else not_ok "no credentials in messages" "$(cat "$W/err")"; fi

# Faults between quash and the server: each is retried, the bytes still match.
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" reset,500,503,429,truncate,short,stall,reset --stall 20
check "faults: reset, 500, 503, 429, truncated, short, stalled answers are retried" \
	$RR -c 1048576 -s 1048576 -r 16 -t 3 "http://127.0.0.1:$PROXY/image.sqfs" "$IMG"
stop_pid "$PROXY_PID"
for f in 503 429 short reset; do
	start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" "always:$f"
	start=$SECONDS
	check_fails "faults: $f forever ends in an error" $RR -c 1048576 -r 3 "http://127.0.0.1:$PROXY/image.sqfs" "$IMG"
	[ $((SECONDS - start)) -lt 20 ] || not_ok "faults: $f forever gives up within the retry budget"
	stop_pid "$PROXY_PID"
done
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" always:badrange
check_fails "faults: a wrong Content-Range is an error, not data" \
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
check_fails "no cache dir, no server: an error" $RR -r 1 "$URL" "$IMG"
