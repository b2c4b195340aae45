#!/bin/bash
# t-remote-fleet.sh - the short fleet simulation (bench/fleet.sh is the long
# one): four nodes, each in its own network namespace behind its own latency
# proxy (20 ms a request, 200 Mbit/s), cold-start at once on one image in
# Ceph RGW through the nginx slice tier (docs/nginx-cache-tier.conf).  Every
# file every node reads is checked against the image's sha256 manifest; the
# origin serves the image about once for the four; with the origin gone after
# the tier is warm, nodes (warm cache dirs and cold ones) still read; with the
# tier gone (half way through a read, or from the start) nodes given the
# origin as -o fallback= read right from it, and without one a mount through
# the dead tier fails in one line.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/fleet.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-remote-fleet
FLEET_W=$W FLEET_QUASH=$QUASH_BIN
N=4
rm -rf "$W" && mkdir -p "$W/tier/tmp" "$W/tier/cache"
cleanup() { fleet_down; remote_cleanup; "$top/tests/lib/stop-rgw.sh" "$W/rgw"; }
trap cleanup EXIT

fleet_up $N || { not_ok "$N network namespaces on a bridge" "ip netns / bridge unavailable"; exit 1; }
ok "$N network namespaces on a bridge"

make_test_image "$W"
unsquashfs -q -n -d "$W/want" "$W/image.sqfs" >/dev/null 2>&1
(cd "$W/want" && find . -type f | sort | xargs sha256sum) >"$W/manifest"

S3=$(free_port) METER=$(free_port) TIER=$(free_port)
export MON_PORT=$(free_port)
EP=$("$top/tests/lib/start-rgw.sh" "$W/rgw" "$S3" 2>"$W/rgw.err") || { not_ok "rgw starts" "$(tail -3 "$W/rgw.err")"; exit 1; }
export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1 HOME=$W
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE
aws --endpoint-url "$EP" s3 mb s3://fleet >/dev/null &&
	aws --endpoint-url "$EP" s3 cp --quiet --acl public-read "$W/image.sqfs" s3://fleet/image.sqfs
check "the image is in RGW, readable unsigned" curl -fsS -o /dev/null -r 0-3 "$EP/fleet/image.sqfs"

# The origin as the tier and the nodes see it: RGW behind a meter (a faultproxy
# without faults), which counts the bytes the origin serves.
python3 "$top/tests/lib/faultproxy.py" --port "$METER" --upstream "$EP" --faults pass --skip 0 \
	--log "$W/origin.log" 2>/dev/null &
METER_PID=$!
REMOTE_PIDS+=("$METER_PID")
wait_port "$METER"
start_tier() { start_cache_tier "$W/tier" "$METER" "$TIER"; }
start_tier || { not_ok "the tier starts" "$(tail -3 "$W/tier/error.log")"; exit 1; }

# Each node's link: to the tier (port base+I) and, for the fallback, to the origin (base+10+I).
BASE=$(fleet_ports 20) || { not_ok "20 free ports in a row"; exit 1; }
up=0
for i in $(seq $N); do
	fleet_proxy "tier$i" $((BASE + i)) "http://127.0.0.1:$TIER" --delay-ms 20 --rate-mbit 200 &&
		fleet_proxy "origin$i" $((BASE + 10 + i)) "http://127.0.0.1:$METER" --delay-ms 20 --rate-mbit 200 &&
		up=$((up + 1))
done
check "each node has its latency proxies (20 ms a request, 200 Mbit/s)" test $up = $N
# A replay opens a dozen connections at once; a link that dropped the SYNs
# beyond socketserver's backlog of 5 would add a second's retransmit to some.
backlog=$(ss -ltnH "sport = :$((BASE + 1))" | awk '{ print $3; exit }')
check "a node's link takes a replay's connections at once (listen backlog ${backlog:-none})" \
	test "${backlog:-0}" -ge 16
url() { echo "http://${FLEET_NET}1:$(($2 + $1))/fleet/image.sqfs"; }   # url I PORTBASE

# workload I: every file of node I's mount, its sha256 against the manifest
workload() {
	local m=$W/node$1/mnt
	(cd "$m" && find . -type f | sort | xargs sha256sum) >"$W/node$1/got" 2>&1 && cmp -s "$W/manifest" "$W/node$1/got"
}
# fleet_round PORTBASE OPTS (@I@: the node's number): every node mounts cold at once and runs the workload; RIGHT counts the good ones
fleet_round() {
	local i o pids=()
	for i in $(seq $N); do
		o=${2//@I@/$i}
		o=${o//@FALLBACK@/$(url "$i" $((BASE + 10)))}
		(fleet_mount "$i" "$W/node$i/mnt" "$(url "$i" "$1")" "$o" 2>"$W/node$i/mount.err" &&
			workload "$i") &
		pids+=($!)
	done
	RIGHT=0
	for i in $(seq $N); do wait "${pids[$((i - 1))]}" && RIGHT=$((RIGHT + 1)); done
	for i in $(seq $N); do fleet_umount "$W/node$i/mnt"; FLEET_MOUNTS+=("$W/node$i/mnt"); done
}
for i in $(seq $N); do mkdir -p "$W/node$i/cache"; done

# ---- cold, all at once, through the tier --------------------------------------
OPTS="cache_dir=$W/node@I@/cache,noprefetch,retry_seconds=5"
fleet_round "$BASE" "$OPTS"
check "$N nodes at once through the tier: every file every node read matches the manifest ($RIGHT of $N)" test $RIGHT = $N
one=$(fleet_bytes "$W/tier1.log")
origin=$(fleet_bytes "$W/origin.log")
check "the origin served $origin bytes for $N nodes, 0.9x to 1.1x the $one bytes one node read" \
	test "$one" -gt 0 -a "$origin" -ge $((one * 9 / 10)) -a "$origin" -le $((one * 11 / 10))
check "every node's requests went through its own proxy" \
	bash -c "for i in \$(seq $N); do [ -s '$W/tier'\$i.log ] || exit 1; done"

# ---- the origin down, the tier warm ------------------------------------------------
stop_pid "$METER_PID"
: >"$W/tier1.log"
fleet_round "$BASE" "$OPTS"
check "origin down: nodes with warm cache dirs read every file right through the tier ($RIGHT of $N)" test $RIGHT = $N
for i in $(seq $N); do rm -rf "$W/node$i/cache" && mkdir -p "$W/node$i/cache"; done
fleet_round "$BASE" "$OPTS"
check "origin down: cold nodes read every file right from the tier's cache ($RIGHT of $N)" test $RIGHT = $N
check "... and fetched it through the tier" test "$(fleet_bytes "$W/tier1.log")" -gt 0

# ---- the tier down -------------------------------------------------------------------
python3 "$top/tests/lib/faultproxy.py" --port "$METER" --upstream "$EP" --faults pass --skip 0 \
	--log "$W/origin.log" 2>/dev/null &
REMOTE_PIDS+=($!)
wait_port "$METER"
# A node reading through the tier with the origin as its fallback (-o
# fallback=): the tier stops after the first file; the rest comes from the
# origin (64 KiB chunks: that read and its readahead do not bring it all).
rm -rf "$W/node1/cache" && mkdir -p "$W/node1/cache"
fleet_mount 1 "$W/node1/mnt" "$(url 1 "$BASE")" \
	"cache_dir=$W/node1/cache,chunk_size=64K,noprefetch,retry_seconds=5,fallback=$(url 1 $((BASE + 10)))" \
	2>"$W/fb.err"
half=1
(cd "$W/node1/mnt" && head -n $half "$W/manifest" | awk '{ print $2 }' | xargs sha256sum) >"$W/fb.got" 2>&1
stop_pid "$TIER_PID"
: >"$W/origin.log"
(cd "$W/node1/mnt" && tail -n +$((half + 1)) "$W/manifest" | awk '{ print $2 }' | xargs sha256sum) >>"$W/fb.got" 2>&1
fleet_umount "$W/node1/mnt"
check "tier stops after a file: with -o fallback= the node reads every file right" cmp -s "$W/manifest" "$W/fb.got"
check "... the rest from the origin" test "$(fleet_bytes "$W/origin.log")" -gt 0

# With the tier down from the start: without a fallback a mount through it
# fails in one line; with one, a cold fleet reads everything from the origin.
for i in $(seq $N); do rm -rf "$W/node$i/cache" && mkdir -p "$W/node$i/cache"; done
fleet_mount 1 "$W/node1/mnt" "$(url 1 "$BASE")" "cache_dir=$W/node1/cache,retry_seconds=2" 2>"$W/down.err"; st=$?
fleet_umount "$W/node1/mnt"
check "tier down, no fallback: the mount through it fails in one line ($(head -c 120 "$W/down.err"))" \
	bash -c "[ $st = 1 ] && [ \$(wc -l <'$W/down.err') = 1 ] &&
		grep -qE '^quash: .*$(url 1 "$BASE").*gave up after [0-9]+ attempts in 2 s' '$W/down.err'"
: >"$W/origin.log"
fleet_round "$BASE" "$OPTS,fallback=@FALLBACK@"
check "tier down, -o fallback= the origin: every file right ($RIGHT of $N)" test $RIGHT = $N
check "... served by the origin, about once per node" \
	test "$(fleet_bytes "$W/origin.log")" -ge "$((one * N * 9 / 10))"
