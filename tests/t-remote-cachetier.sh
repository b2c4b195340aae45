#!/bin/bash
# t-remote-cachetier.sh - quash through a shared HTTP caching tier: nginx
# with docs/nginx-cache-tier.conf (slice, proxy_cache, proxy_cache_lock) in
# front of an nginx origin.  Four readers at once, each of the whole image,
# cost the origin the image once; every byte read equals the local image's;
# -o proxy= / --proxy and http_proxy/no_proxy route requests as libcurl
# users expect; with the origin stopped, the tier still serves.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-remote-cachetier
rm -rf "$W" && mkdir -p "$W/www" "$W/tier/tmp" "$W/tier/cache"
trap remote_cleanup EXIT
make_test_image "$W"
cp "$W/image.sqfs" "$W/www/"
SIZE=$(stat -c %s "$W/image.sqfs")
ORIGIN=$(free_port) TIER=$(free_port)
NGINX_EXTRA="access_log $W/origin.log combined;" start_nginx "$W/origin" "$W/www" "$ORIGIN"

start_cache_tier "$W/tier" "$ORIGIN" "$TIER" "$W/tier/access.log" ||
	{ not_ok "the caching tier starts" "$(tail -3 "$W/tier/error.log")"; exit 1; }
ok "the caching tier starts with docs/nginx-cache-tier.conf"

origin_bytes() { awk '{ n += $10 } END { print n + 0 }' "$W/origin.log" 2>/dev/null || echo 0; }
origin_requests() { cat "$W/origin.log" 2>/dev/null | wc -l; }
unsquashfs -q -n -d "$W/want" "$W/image.sqfs" >/dev/null 2>&1

# Four nodes at once, each reading the whole image through the tier.
pids=()
for n in 1 2 3 4; do
	"$QUASH_BIN" extract "http://127.0.0.1:$TIER/image.sqfs" -C "$W/node$n" 2>"$W/node$n.err" &
	pids+=($!)
done
st=0
for p in "${pids[@]}"; do wait "$p" || st=1; done
check "four nodes extract the image through the tier" test $st = 0
same=0
for n in 1 2 3 4; do
	python3 "$top/tests/lib/treecmp.py" "$W/want" "$W/node$n" >/dev/null 2>&1 && same=$((same + 1))
done
check "every node's bytes equal the local image's ($same of 4)" test $same = 4
bytes=$(origin_bytes)
check "the origin served the image about once for four nodes ($bytes bytes for a $SIZE-byte image; 0.9x to 1.1x + one slice)" \
	test "$bytes" -ge $((SIZE * 9 / 10)) -a "$bytes" -le $((SIZE * 11 / 10 + 1048576))
check "the tier answered from its cache" grep -q 'HIT' <(curl -s -D - -o /dev/null -r 0-4095 "http://127.0.0.1:$TIER/image.sqfs")

# The proxy option and the environment: the tier as a proxy for the origin's URL.
before=$(origin_bytes)
"$QUASH_BIN" extract --proxy "http://127.0.0.1:$TIER" "http://127.0.0.1:$ORIGIN/image.sqfs" -C "$W/viaopt" 2>"$W/err"
check "--proxy: the origin's URL read through the tier, the origin not asked again" \
	bash -c "python3 '$top/tests/lib/treecmp.py' '$W/want' '$W/viaopt' >/dev/null && [ \$(awk '{ n += \$10 } END { print n + 0 }' '$W/origin.log') = $before ]"
tier_before=$(wc -l <"$W/tier/access.log")
http_proxy=http://127.0.0.1:$TIER "$QUASH_BIN" cat "http://127.0.0.1:$ORIGIN/image.sqfs" /file3 >"$W/f3" 2>"$W/err"
check "http_proxy is honoured" bash -c "cmp -s '$W/f3' '$W/want/file3' && [ \$(wc -l <'$W/tier/access.log') -gt $tier_before ]"
tier_before=$(wc -l <"$W/tier/access.log") origin_before=$(origin_requests)
http_proxy=http://127.0.0.1:$TIER no_proxy=127.0.0.1 "$QUASH_BIN" cat "http://127.0.0.1:$ORIGIN/image.sqfs" /file3 >"$W/f3" 2>"$W/err"
check "no_proxy is honoured: the origin asked, the tier not" bash -c "cmp -s '$W/f3' '$W/want/file3' &&
	[ \$(wc -l <'$W/tier/access.log') = $tier_before ] && [ $(origin_requests) -gt $origin_before ]"
"$QUASH_BIN" info --proxy "http://user:secret@127.0.0.1:$TIER" "http://127.0.0.1:$ORIGIN/image.sqfs" >/dev/null 2>"$W/err"; st=$?
check "credentials in --proxy are refused (they would show in ps), in one line without them" bash -c \
	"[ $st = 1 ] && [ \$(wc -l <'$W/err') = 1 ] && grep -q 'no credentials in the option' '$W/err' && ! grep -q secret '$W/err'"

# A mount through the tier, with the origin stopped: the tier still serves.
mkdir -p "$W/mnt"
"$QUASH_BIN" mount -o proxy=http://127.0.0.1:$TIER "http://127.0.0.1:$ORIGIN/image.sqfs" "$W/mnt" 2>"$W/err"
check "mount -o proxy=" bash -c "cmp -s '$W/mnt/file5' '$W/want/file5'"
fusermount3 -u "$W/mnt" 2>/dev/null
stop_pid "$NGINX_PID"
"$QUASH_BIN" extract "http://127.0.0.1:$TIER/image.sqfs" -C "$W/afterstop" 2>"$W/err"
check "origin down, tier warm: a new node still reads the whole image" \
	python3 "$top/tests/lib/treecmp.py" "$W/want" "$W/afterstop"
