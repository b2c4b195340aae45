#!/bin/bash
# bench/fleet.sh - the fleet simulation (issue 15): N client nodes (default
# 1, 8 and 32), each in its own network namespace with its own quash mount,
# cache dir and link (tests/lib/faultproxy.py: 20 ms a request, 200 Mbit/s
# per node), cold-start the same workload at the same moment: Python from
# bench/mount.sh's tree image (its own interpreter and libpython) importing a
# heavy set.  The image is in Ceph RGW (tests/lib/start-rgw.sh), read
# unsigned, directly or through the nginx slice tier
# (docs/nginx-cache-tier.conf), with and without a prefetch profile.
#
# Every node checks every file its interpreter loaded (the modules' sources
# and bytecode, the interpreter, libpython) against a sha256 manifest made
# from the kernel's mount of the same image.  Measured: each node's time from
# mount to finished workload (median, p99), the bytes the origin served
# (from RGW's own access log: nothing stands between the origin and its
# clients but their links), a round with the origin down after the tier is
# warm; the references: the workload on a warm local kernel mount (in every
# round, beside the one-node rounds: the median of three runs after one that
# warms it), and on one node an rclone
# HTTP mount + squashfuse_ll against quash, both through the same 20 ms link
# to an nginx origin.  The image laid out for the workload (quash profile
# paths + pack --order of TREE_SRC, its profile recorded there): N nodes
# through a cold tier with its profile, in each round just before the same
# on the first image; last, one node from the origin, with and without it.
#
#   bench/fleet.sh                 (root: namespaces, mounts)
#   env: FLEET_N ("1 8 32"), ROUNDS (1), DELAY_MS (20), RATE_MBIT (200),
#        TREE_IMG (/var/tmp/quash-bench/tree.sqfs), QUASH (build/cli/quash),
#        CSV (bench/results/fleet.csv), FLEET_OPTS (more -o options for the nodes),
#        TREE_SRC (/root/.pyenv/versions/3.11.7), ORDERED (1; 0 skips the layout round)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export QUASH_TOP=$top
QUASH=${QUASH:-$top/build/cli/quash}
W=${BENCH_WORK:-/tmp/quash-bench-fleet}
TREE_IMG=${TREE_IMG:-/var/tmp/quash-bench/tree.sqfs}
FLEET_N=${FLEET_N:-1 8 32}
ROUNDS=${ROUNDS:-1}
DELAY_MS=${DELAY_MS:-20}
RATE_MBIT=${RATE_MBIT:-200}
CSV=${CSV:-$top/bench/results/fleet.csv}
. "$top/tests/lib/remote.sh"
. "$top/bench/lib/workload.sh"
. "$top/tests/lib/fleet.sh"
FLEET_W=$W/logs FLEET_QUASH=$QUASH

die() { echo "bench/fleet.sh: $*" >&2; exit 1; }
[ -x "$QUASH" ] || die "build first ($QUASH)"
[ -f "$TREE_IMG" ] || die "$TREE_IMG is missing (bench/mount.sh builds it)"
for t in nginx radosgw aws squashfuse_ll nsenter; do
	command -v $t >/dev/null || die "$t is missing (make bench-deps)"
done
HAVE_RCLONE=$(command -v rclone >/dev/null && echo 1)
MAXN=0
for n in $FLEET_N; do [ "$n" -gt $MAXN ] && MAXN=$n; done

rm -rf "$W" && mkdir -p "$W"/{logs,kmnt,kref,www,tier/tmp,tier/cache,rclone}
cleanup() {
	mountpoint -q "$W/kmnt" && umount "$W/kmnt"
	mountpoint -q "$W/kref" && umount "$W/kref"
	mountpoint -q "$W/rclone/sq" && fusermount3 -u "$W/rclone/sq"
	mountpoint -q "$W/rclone/mnt" && fusermount3 -u "$W/rclone/mnt"
	[ -n "${RCLONE_PID:-}" ] && kill "$RCLONE_PID" 2>/dev/null
	fleet_down
	remote_cleanup
	"$top/tests/lib/stop-rgw.sh" "$W/rgw"
}
trap cleanup EXIT
now() { date +%s.%N; }

# ---- the workload and its manifest -----------------------------------------------
workload_setup
# The reference: the kernel's mount of the local image, kept mounted and warm
# for the whole run, timed in every round with the servers up, as the nodes are.
mount -t squashfs -o loop,ro "$TREE_IMG" "$W/kref" || die "cannot loop-mount $TREE_IMG"
workload "$W/kref" "$W/manifest" || die "the workload fails on the kernel mount: $(tail -2 "$W/manifest.err")"
KW=$(kernel_warm "$W/kref" "$W/manifest") || die "the workload on the kernel mount no longer gives the manifest"
echo "workload: Python from $TREE_IMG importing $PY_IMPORTS; $(wc -l <"$W/manifest") files loaded and hashed;" \
	"warm kernel mount ${KW}s"

# ---- servers ---------------------------------------------------------------------------
fleet_up "$MAXN" || die "cannot make $MAXN network namespaces"
S3=$(free_port) TIER=$(free_port) HTTP=$(free_port)
export MON_PORT=$(free_port)
EP=$("$top/tests/lib/start-rgw.sh" "$W/rgw" "$S3" 2>"$W/rgw.err") || die "rgw: $(tail -3 "$W/rgw.err")"
export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1
aws --endpoint-url "$EP" s3 mb s3://fleet >/dev/null
aws --endpoint-url "$EP" s3 cp --quiet --acl public-read "$TREE_IMG" s3://fleet/tree.sqfs || die "upload failed"
# The origin's bytes: the GETs in RGW's access log (beast's lines at the
# default debug_rgw 1), from where a round began: a metering proxy in front
# of RGW would cost the origin's clients a hop and the 2 cores its CPU.
RGWLOG=$W/rgw/log/client.rgw.s3.log
rgw_log_at() { stat -c %s "$RGWLOG" 2>/dev/null || echo 0; }
rgw_bytes() {   # rgw_bytes OFFSET: bytes of the GETs logged after OFFSET
	tail -c +$(($1 + 1)) "$RGWLOG" 2>/dev/null | grep -oE '"GET [^"]*" [0-9]{3} [0-9]+' |
		awk '{ n += $NF } END { printf "%.0f\n", n }'
}
# The origin down and up again: its gateway stopped, then restarted (the
# cluster behind it stays up).
rgw_stop() {
	local p
	p=$(cat "$W/rgw/run/rgw.pid")
	kill "$p" 2>/dev/null
	for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.05; done
	kill -9 "$p" 2>/dev/null
}
# Started from a subshell, as start-rgw.sh starts it, so that it is not this
# shell's child: stop-rgw.sh stops it at the end, and remote_cleanup's wait
# does not wait for it (it did, for ever).
rgw_start() {
	(CEPH_CONF=$W/rgw/ceph.conf radosgw -n client.rgw.s3 -c "$W/rgw/ceph.conf" -f >>"$W/rgw/log/rgw.stdout" 2>&1 &
	 echo $! >"$W/rgw/run/rgw.pid")
	for _ in $(seq 300); do
		curl -fs -r 0-3 -o /dev/null "$EP/fleet/tree.sqfs" && return 0
		sleep 0.1
	done
	die "the gateway did not come back"
}
start_tier() {   # a cold tier: its cache emptied
	TIER_WORKERS=2 start_cache_tier "$W/tier" "$S3" "$TIER"
}
# The peer's origin: nginx with listings (rclone's HTTP backend needs them).
ln -s "$TREE_IMG" "$W/www/tree.sqfs"
NGINX_AUTOINDEX=1 start_nginx "$W/nginx" "$W/www" "$HTTP"

# Each node's links: to the tier (TB+I), to the origin (OB+I); node 1 to nginx (PB).
TB=$(fleet_ports 701) || die "no 701 free ports in a row"; OB=$((TB + 300)); PB=$((TB + 700))
LINK="--delay-ms $DELAY_MS --rate-mbit $RATE_MBIT"
for i in $(seq "$MAXN"); do
	fleet_proxy "tier$i" $((TB + i)) "http://127.0.0.1:$TIER" $LINK &&
		fleet_proxy "origin$i" $((OB + i)) "$EP" $LINK || die "proxy $i"
done
fleet_proxy "nginx1" "$PB" "http://127.0.0.1:$HTTP" $LINK || die "proxy to nginx"

# ---- a fleet round ------------------------------------------------------------------------
# round N VIA(tier|origin) PROFILE(yes|no) [KEEP]: N nodes mount cold at once
# and run the workload (KEEP=keep: each with the cache dir of its last round,
# a node starting the same job again); prints "median p99 origin_bytes
# node1_bytes wrong failed"
round() {
	local n=$1 via=$2 prof=$3 keep=${4:-} i base opts link=$2 pids=() wrong=0 failed=0 at
	[ "$via" = origin ] && base=$OB || base=$TB
	[ "$via" = tier-down ] && link=origin   # the tier's link refuses; the fallback's carries it all
	at=$(rgw_log_at)
	for i in $(seq "$n"); do
		: >"$W/logs/$link$i.log"
		[ "$keep" = keep ] || rm -rf "$W/n$i"
		mkdir -p "$W/n$i/cache" "$W/n$i/mnt"
	done
	for i in $(seq "$n"); do
		opts="cache_dir=$W/n$i/cache${FLEET_OPTS:+,$FLEET_OPTS}"
		[ "$via" = tier-down ] && opts="$opts,fallback=http://${FLEET_NET}1:$((OB + i))/fleet/$IMG.sqfs"
		[ "$prof" = yes ] && opts="$opts,prefetch=$W/$IMG.profile" || opts="$opts,noprefetch"
		(
			t0=$(now)
			fleet_mount "$i" "$W/n$i/mnt" "http://${FLEET_NET}1:$((base + i))/fleet/$IMG.sqfs" "$opts" \
				2>"$W/n$i/mount.err" && workload "$W/n$i/mnt" "$W/n$i/got"
			t1=$(now)
			echo "$t1 - $t0" | bc >"$W/n$i/time"
		) &
		pids+=($!)
	done
	wait "${pids[@]}"
	# wrong: a node read a file whose sha256 is not the manifest's; failed:
	# a node did not finish (its errors kept in logs/failed-*)
	for i in $(seq "$n"); do
		[ -s "$W/n$i/got" ] && [ -n "$(grep -vxF -f "$W/manifest" "$W/n$i/got")" ] && wrong=$((wrong + 1))
		if ! cmp -s "$W/manifest" "$W/n$i/got"; then
			failed=$((failed + 1))
			cat "$W/n$i/mount.err" "$W/n$i/got.err" >"$W/logs/failed-$n-$via-$prof-$i" 2>/dev/null
		fi
		fleet_umount "$W/n$i/mnt"
	done
	sleep 0.5
	python3 - "$W" "$n" <<'PY'
import statistics, sys
w, n = sys.argv[1], int(sys.argv[2])
t = sorted(float(open(f"{w}/n{i}/time").read()) for i in range(1, n + 1))
p99 = t[min(n - 1, int(round(0.99 * (n - 1))))]
print(f"{statistics.median(t):.2f} {p99:.2f}", end=" ")
PY
	echo "$(rgw_bytes "$at") $(fleet_bytes "$W/logs/${link}1.log") $wrong $failed"
}

# ---- the profile: node 1 records the workload once --------------------------------------
record() {   # record IMG: $W/IMG.profile, from node 1's run of the workload through the origin
	mkdir -p "$W/rec/mnt"
	fleet_mount 1 "$W/rec/mnt" "http://${FLEET_NET}1:$((OB + 1))/fleet/$1.sqfs" "record=$W/$1.profile,noprefetch" ||
		die "recording mount failed"
	workload "$W/rec/mnt" "$W/rec/got"
	fleet_umount "$W/rec/mnt"
	for _ in $(seq 50); do [ "$(wc -l <"$W/$1.profile")" -gt 2 ] && break; sleep 0.2; done
	echo "profile of $1: $(($(wc -l <"$W/$1.profile") - 2)) ranges," \
		"$(awk 'NR > 2 { n += $2 } END { printf "%.1f MiB", n / 1048576 }' "$W/$1.profile")"
}
IMG=tree
record tree

# ---- the layout: the image repacked with the profiled files first ---------------------------
# (quash profile paths + quash pack --order, from the tree the image was made of,
# and its profile recorded there; skipped when that tree is gone or no longer
# gives the manifest's bytes)
TREE_SRC=${TREE_SRC:-/root/.pyenv/versions/3.11.7}
ORDERED_OK=
if [ "${ORDERED:-1}" = 1 ] && [ -d "$TREE_SRC" ]; then
	"$QUASH" profile paths "$W/tree.profile" "$TREE_IMG" >"$W/tree.order" &&
		"$QUASH" pack -q --no-progress -b 128K --order "$W/tree.order" "$TREE_SRC" "$W/ordered.sqfs" &&
		mount -t squashfs -o loop,ro "$W/ordered.sqfs" "$W/kmnt" && workload "$W/kmnt" "$W/ordered.check"
	mountpoint -q "$W/kmnt" && umount "$W/kmnt"
	if cmp -s "$W/manifest" "$W/ordered.check"; then
		aws --endpoint-url "$EP" s3 cp --quiet --acl public-read "$W/ordered.sqfs" s3://fleet/ordered.sqfs
		IMG=ordered
		record ordered
		IMG=tree
		ORDERED_OK=1
	else
		echo "layout: skipped ($TREE_SRC does not give the manifest's bytes, or the repack failed)"
	fi
fi

mkdir -p "$(dirname "$CSV")"
echo "round,n,via,profile,median_s,p99_s,origin_bytes,node1_bytes,wrong,failed" >"$CSV"
for r in $(seq "$ROUNDS"); do
	for n in $FLEET_N; do
		for via in tier origin; do
			for prof in no yes; do
				# The laid-out image through a cold tier, next to the same round
				# on the image the profile came from (after it: the tier stays
				# warm with that image for the origin-down round): whole slices
				# around the replay's ranges cost the origin little more than
				# the node's bytes when the ranges are a few contiguous runs.
				if [ "$via/$prof" = tier/yes ] && [ -n "$ORDERED_OK" ]; then
					[ -n "${TIER_PID:-}" ] && stop_pid "$TIER_PID"
					start_tier || die "tier"
					IMG=ordered
					res=$(round "$n" tier yes)
					IMG=tree
					echo "$r,$n,tier-ordered,yes,${res// /,}" | tee -a "$CSV"
				fi
				[ "$via" = tier ] && { [ -n "${TIER_PID:-}" ] && stop_pid "$TIER_PID"; start_tier || die "tier"; }
				res=$(round "$n" "$via" "$prof")
				echo "$r,$n,$via,$prof,${res// /,}" | tee -a "$CSV"
			done
		done
		# The same nodes start the job again, each with its cache dir: the
		# replay reads the profile's ranges there, the origin serves the opens.
		res=$(round "$n" origin yes keep)
		echo "$r,$n,origin-again,yes,${res// /,}" | tee -a "$CSV"
		# The reference beside the one-node rounds: later in the round the
		# 32 nodes' work has pushed its pages out, and it comes out slow.
		if [ "$n" = 1 ]; then
			KW=$(kernel_warm "$W/kref" "$W/manifest") || die "the workload on the kernel mount no longer gives the manifest"
			echo "$r,1,kernel-local-warm,no,$KW,,,,0,0" | tee -a "$CSV"
		fi
	done
	# Origin down after the tier is warm: the largest fleet, cold cache dirs,
	# tier only, the same reads as the round that warmed it (with the profile:
	# what the tier never saw it cannot serve, and the nodes get EIO for it).
	rgw_stop
	res=$(round "$MAXN" tier yes)
	echo "$r,$MAXN,tier-origin-down,yes,${res// /,}" | tee -a "$CSV"
	rgw_start
	# The tier down: the largest fleet, cold, pointed at the tier with the
	# origin as -o fallback=, with the profile.
	stop_pid "$TIER_PID"; TIER_PID=
	res=$(round "$MAXN" tier-down yes)
	echo "$r,$MAXN,tier-down-fallback,yes,${res// /,}" | tee -a "$CSV"
	# The peer on node 1: rclone HTTP mount + squashfuse_ll against quash, same link, nginx origin.
	if [ -n "$HAVE_RCLONE" ]; then
		mkdir -p "$W/rclone/mnt" "$W/rclone/sq"
		rm -rf "$W/rclone/cache"
		t0=$(now)
		fleet_exec 1 rclone mount :http: "$W/rclone/mnt" --http-url "http://${FLEET_NET}1:$PB/" --read-only \
			--cache-dir "$W/rclone/cache" 2>"$W/rclone/err" &
		RCLONE_PID=$!
		for _ in $(seq 100); do mountpoint -q "$W/rclone/mnt" && break; sleep 0.1; done
		squashfuse_ll "$W/rclone/mnt/tree.sqfs" "$W/rclone/sq" && workload "$W/rclone/sq" "$W/rclone/got"
		t1=$(now)
		ok=$(cmp -s "$W/manifest" "$W/rclone/got" && echo 0 || echo 1)
		fusermount3 -u "$W/rclone/sq"; fusermount3 -u "$W/rclone/mnt"; wait "$RCLONE_PID"; RCLONE_PID=
		echo "$r,1,rclone+squashfuse_ll,no,$(echo "$t1 - $t0" | bc),,,,0,$ok" | tee -a "$CSV"
	fi
	rm -rf "$W/q1" && mkdir -p "$W/q1/mnt" "$W/q1/cache"
	t0=$(now)
	fleet_mount 1 "$W/q1/mnt" "http://${FLEET_NET}1:$PB/tree.sqfs" "cache_dir=$W/q1/cache,noprefetch" &&
		workload "$W/q1/mnt" "$W/q1/got"
	t1=$(now)
	ok=$(cmp -s "$W/manifest" "$W/q1/got" && echo 0 || echo 1)
	fleet_umount "$W/q1/mnt"
	echo "$r,1,quash-nginx,no,$(echo "$t1 - $t0" | bc),,,,0,$ok" | tee -a "$CSV"
done

# ---- the layout, one node from the origin, with and without its profile ---------------------
if [ -n "$ORDERED_OK" ]; then
	IMG=ordered
	for r in $(seq "$ROUNDS"); do
		for prof in no yes; do
			res=$(round 1 origin "$prof")
			echo "$r,1,origin-ordered,$prof,${res// /,}" | tee -a "$CSV"
		done
		KW=$(kernel_warm "$W/kref" "$W/manifest") || die "the workload on the kernel mount no longer gives the manifest"
		echo "$r,1,kernel-local-warm-ordered,no,$KW,,,,0,0" | tee -a "$CSV"
	done
	IMG=tree
fi

# ---- the table of ratios ------------------------------------------------------------------------
python3 - "$CSV" "$FLEET_N" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ns = [int(x) for x in sys.argv[2].split()]
def vals(n, via, prof, key):
    return [float(r[key]) for r in rows if int(r["n"]) == n and r["via"] == via and r["profile"] == prof and r[key]]
def rng(v, fmt="%.2f"):
    if not v:
        return "-"
    return fmt % min(v) if min(v) == max(v) else (fmt + "-" + fmt) % (min(v), max(v))
print("\n%-4s %-20s %-7s %11s %11s %11s %11s %5s %6s" % ("N", "via", "profile", "median s", "p99 s", "origin MiB", "origin/node", "wrong", "failed"))
keys = []
for x in rows:
    k = (int(x["n"]), x["via"], x["profile"])
    if k not in keys and x["origin_bytes"]:
        keys.append(k)
first = {"tier": 0, "tier-ordered": 1}
for n, via, prof in sorted(keys, key=lambda k: (k[1] == "tier-origin-down", k[0], first.get(k[1], 2), k[2])):
    ob = vals(n, via, prof, "origin_bytes")
    sel = [r for r in rows if (int(r["n"]), r["via"], r["profile"]) == (n, via, prof)]
    # the origin's bytes against node 1's in the same round
    ratio = [float(r["origin_bytes"]) / float(r["node1_bytes"]) for r in sel
             if r["origin_bytes"] and r["node1_bytes"] and float(r["node1_bytes"]) > 0]
    print("%-4d %-20s %-7s %11s %11s %11s %11s %5d %6d" % (n, via, prof, rng(vals(n, via, prof, "median_s")),
          rng(vals(n, via, prof, "p99_s")), rng([b / 2**20 for b in ob], "%.1f"), rng(ratio),
          sum(int(r["wrong"]) for r in sel), sum(int(r.get("failed") or 0) for r in sel)))
for via in ("rclone+squashfuse_ll", "quash-nginx", "kernel-local-warm", "kernel-local-warm-ordered"):
    v = vals(1, via, "no", "median_s")
    if v:
        bad = sum(int(r.get("failed") or 0) for r in rows if r["via"] == via)
        print("%-4d %-20s %-7s %11s %s" % (1, via, "no", rng(v), "(failed %d)" % bad if bad else ""))
def by_round(n, via, prof, key="median_s"):
    return {r["round"]: float(r[key]) for r in rows
            if int(r["n"]) == n and r["via"] == via and r["profile"] == prof and r[key]}
def r(a, b):
    """a / b within each round (b a number: the same for all)"""
    q = [x / (b if isinstance(b, float) else b[k]) for k, x in a.items() if isinstance(b, float) or k in b]
    return rng(q) if q else "-"
big = max(ns)
print("\ntargets (ratios within one round):")
def per_node(n, via, prof):
    return r(by_round(n, via, prof, "origin_bytes"), by_round(n, via, prof, "node1_bytes"))
print("  origin bytes, N=%d through the tier / one node's bytes: %s (target <= 1.1)" % (big, per_node(big, "tier", "no")))
print("  same, with the profile: %s; the image laid out by pack --order, with its profile: %s (target <= 1.1)" %
      (per_node(big, "tier", "yes"), per_node(big, "tier-ordered", "yes")))
to = by_round(big, "tier-ordered", "yes")
if to:
    print("  node time there, laid out / not: %s" % r(to, by_round(big, "tier", "yes")))
kw = by_round(1, "kernel-local-warm", "no")
p1 = by_round(1, "origin", "yes")
n1 = by_round(1, "origin", "no")
print("  cold node with the profile / warm local kernel mount (N=1, origin): %s (target <= 2)" % r(p1, kw))
print("  cold node with the profile / without it (N=1, origin): %s (target <= 0.3)" % r(p1, n1))
pa = by_round(1, "origin-again", "yes")
if pa:
    print("  the node starting again with its cache dir / warm local kernel mount (N=1): %s; its origin bytes %s MiB" %
          (r(pa, kw), rng([b / 2**20 for b in vals(1, "origin-again", "yes", "origin_bytes")], "%.2f")))
po = by_round(1, "origin-ordered", "yes")
if po:
    print("  same, image laid out by pack --order: profile / warm kernel %s, profile / no profile %s" %
          (r(po, by_round(1, "kernel-local-warm-ordered", "no")), r(po, by_round(1, "origin-ordered", "no"))))
print("  quash / rclone HTTP + squashfuse_ll (N=1, nginx, no profile): %s (target <= 0.5)" %
      r(by_round(1, "quash-nginx", "no"), by_round(1, "rclone+squashfuse_ll", "no")))
print("  nodes that read a wrong byte: %d; nodes that did not finish: %d" % (
      sum(int(x["wrong"] or 0) for x in rows), sum(int(x.get("failed") or 0) for x in rows)))
PY
