#!/bin/bash
# t-remote-slices.sh - a prefetch profile replayed through the nginx slice
# tier (docs/nginx-cache-tier.conf: whole 1 MiB slices from the origin): on
# the image packed in the profile's order (quash profile record, profile
# paths, pack --order, record again: the publisher's step in
# quash-profile(1)) the origin serves at most 1.1x the bytes the node
# fetched; on the image the profile was first recorded on, where the
# workload's files lie scattered, the slices around the replay's ranges cost
# it more than 1.5x.  profile paths lists the workload's files before those
# that only share a fragment block with them; the ordered image extracts
# (unsquashfs) to the source tree, and the node reads the kernel mount's bytes.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/mount.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-remote-slices
rm -rf "$W" && mkdir -p "$W/tree" "$W/www" "$W/tier" "$W/k" "$W/m"
trap 'unmount_all; remote_cleanup' EXIT

# 60 files of incompressible data, 400-920 KiB, each with a tail in a
# fragment block; the workload reads every third, about 14 MiB spread over
# 39 MiB: the 1 MiB slices around them are mostly bytes it never asked for.
for i in $(seq 0 59); do
	head -c $((400000 + i * 9007)) /dev/urandom >"$W/tree/$(printf f%02d "$i")"
done
FILES=$(seq 0 3 59 | while read -r i; do printf 'f%02d ' "$i"; done)
workload() {   # workload DIR OUT: each file's sha256 in the workload's order
	(cd "$1" && for f in $FILES; do sha256sum "$f"; done) >"$2" 2>&1
}

"$QUASH" pack -q --no-progress "$W/tree" "$W/www/a.sqfs" 2>"$W/err"
"$QUASH" profile record "$W/www/a.sqfs" -o "record=$W/a.profile" -- \
	bash -c "$(declare -f workload); FILES='$FILES'; workload \"\$QUASH_MOUNT\" '$W/a.got'" 2>>"$W/err"
"$QUASH" profile paths "$W/a.profile" "$W/www/a.sqfs" >"$W/order" 2>>"$W/err"
"$QUASH" pack -q --no-progress --order "$W/order" "$W/tree" "$W/www/b.sqfs" 2>>"$W/err"
"$QUASH" profile record "$W/www/b.sqfs" -o "record=$W/b.profile" -- \
	bash -c "$(declare -f workload); FILES='$FILES'; workload \"\$QUASH_MOUNT\" '$W/b.got'" 2>>"$W/err"
check "the publisher's step: record, profile paths, pack --order, record again, each without a word" \
	bash -c "[ ! -s '$W/err' ] && [ -s '$W/b.profile' ]"
# The files whose tails share a fragment block with the workload's follow
# them: their full blocks, which the workload never read, must not split its run.
first=$(head -20 "$W/order" | tr '\n' ' ')
check "profile paths: the workload's 20 files first, in the order it read them, then their tails' neighbours ($(wc -l <"$W/order") in all)" \
	test "$first" = "$FILES" -a "$(wc -l <"$W/order")" -gt 20
unsquashfs -q -n -d "$W/b.tree" "$W/www/b.sqfs" >/dev/null 2>&1
check "the ordered image extracts (unsquashfs) to the source tree" python3 "$top/tests/lib/treecmp.py" "$W/tree" "$W/b.tree"
kmount "$W/www/b.sqfs" "$W/k"
workload "$W/k" "$W/want"
umount "$W/k"

ORIGIN=$(free_port) TIER=$(free_port) LINK=$(free_port)
NGINX_EXTRA="access_log $W/origin.log combined;" start_nginx "$W/origin" "$W/www" "$ORIGIN" ||
	{ not_ok "the origin starts" "$(tail -3 "$W/origin/error.log")"; exit 1; }
start_cache_tier "$W/tier" "$ORIGIN" "$TIER" || { not_ok "the tier starts" "$(tail -3 "$W/tier/error.log")"; exit 1; }
# The node's link: a proxy that logs each request's range and body bytes.
start_faultproxy "$LINK" "http://127.0.0.1:$TIER" pass --skip 0 --log "$W/link.log"

origin_bytes() { awk '{ n += $10 } END { print n + 0 }' "$W/origin.log" 2>/dev/null || echo 0; }
node_bytes() { awk '{ n += $4 } END { print n + 0 }' "$W/link.log" 2>/dev/null || echo 0; }
settled() {   # until the origin's log has not grown for 0.3 s (10 s at most)
	local last=-1 n i
	for i in $(seq 33); do
		n=$(origin_bytes)
		[ "$n" = "$last" ] && return 0
		last=$n
		sleep 0.3
	done
}

# node IMAGE PROFILE: one cold node through the tier reads the workload with
# the profile; NODE and ORIGIN_SERVED are the bytes of this run.
node() {
	local o0 n0 st
	o0=$(origin_bytes) n0=$(node_bytes)
	"$QUASH_ASAN" mount -f -o "prefetch=$2" "http://127.0.0.1:$LINK/$1" "$W/m" 2>"$W/$1.err" &
	FG_PID=$!
	wait_mounted "$W/m" && workload "$W/m" "$W/$1.got"
	fusermount3 -u "$W/m"
	wait "$FG_PID"
	st=$?
	settled
	NODE=$(($(node_bytes) - n0)) ORIGIN_SERVED=$(($(origin_bytes) - o0))
	[ $st = 0 ] && [ ! -s "$W/$1.err" ]
}
ratio() { echo "scale=2; $1 / $2" | bc; }

node a.sqfs "$W/a.profile"
check "the profile's own image through the tier: the kernel mount's bytes, a clean daemon exit, no notice" \
	bash -c "cmp -s '$W/want' '$W/a.sqfs.got' && [ ! -s '$W/a.sqfs.err' ]"
check "its files scattered: the origin serves $ORIGIN_SERVED bytes for the node's $NODE ($(ratio "$ORIGIN_SERVED" "$NODE")x, more than 1.5x)" \
	test $((ORIGIN_SERVED * 2)) -gt $((NODE * 3))

: >"$W/link.log"
node b.sqfs "$W/b.profile"
check "the image packed in the profile's order through the tier: the kernel mount's bytes, a clean daemon exit, no notice" \
	bash -c "cmp -s '$W/want' '$W/b.sqfs.got' && [ ! -s '$W/b.sqfs.err' ]"
check "packed in the profile's order: the origin serves $ORIGIN_SERVED bytes for the node's $NODE ($(ratio "$ORIGIN_SERVED" "$NODE")x, at most 1.1x)" \
	test $((ORIGIN_SERVED * 10)) -le $((NODE * 11))
# Without the replay the node would read whole 4 MiB chunks, whole slices
# too: the ratio above says something only if the replay's exact ranges went out.
exact=$(awk -v size="$(stat -c %s "$W/www/b.sqfs")" '$2 ~ /^bytes=/ {
	split(substr($2, 7), r, "-"); e = r[2] + 1
	if (r[1] > 0 && e % 4194304 && e != size) n++ } END { print n + 0 }' "$W/link.log")
check "the replay ran there: $exact of the node's requests are the plan's exact ranges, not chunks" test "$exact" -ge 1
