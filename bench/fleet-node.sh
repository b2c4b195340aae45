#!/bin/bash
# bench/fleet-node.sh - one cold node of bench/fleet.sh, its time taken
# apart.  The same workload (bench/lib/workload.sh) on a fresh quash mount
# with the profile, its cache directory empty, the image served by nginx
# (a warm tier: no RGW, so that the origin's own cost stays out) through
# tests/lib/faultproxy.py with each part of the simulated link alone:
#
#   local    the image file itself, no HTTP (the page cache has it)
#   instant  HTTP with no delay and no rate: quash's own remote path
#   latency  DELAY_MS a request only
#   rate     RATE_MBIT only
#   link     both: the fleet bench's link
#
# Each row: the mount (until `quash mount` returns), the import, the hash of
# the files, and the whole against the warm kernel mount of the same round
# (median of three after a warming run).  The rounds interleave the rows.
# Also printed: the link's floor, the profile's bytes at RATE_MBIT.
#
#   bench/fleet-node.sh            (root: mounts)
#   env: ROUNDS (3), DELAY_MS (20), RATE_MBIT (200), TREE_IMG
#        (/var/tmp/quash-bench/tree.sqfs), QUASH (build/cli/quash)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export QUASH_TOP=$top
QUASH=${QUASH:-$top/build/cli/quash}
W=${BENCH_WORK:-/tmp/quash-bench-node}
TREE_IMG=${TREE_IMG:-/var/tmp/quash-bench/tree.sqfs}
ROUNDS=${ROUNDS:-3}
DELAY_MS=${DELAY_MS:-20}
RATE_MBIT=${RATE_MBIT:-200}
ROWS="local instant latency rate link"
. "$top/tests/lib/remote.sh"
. "$top/bench/lib/workload.sh"

die() { echo "bench/fleet-node.sh: $*" >&2; exit 1; }
[ -x "$QUASH" ] || die "build first ($QUASH)"
[ -f "$TREE_IMG" ] || die "$TREE_IMG is missing (bench/mount.sh builds it)"
command -v nginx >/dev/null || die "nginx is missing (make bench-deps)"

rm -rf "$W" && mkdir -p "$W"/{kref,node/mnt,www,nginx}
cleanup() {
	mountpoint -q "$W/node/mnt" && fusermount3 -u "$W/node/mnt"
	mountpoint -q "$W/kref" && umount "$W/kref"
	remote_cleanup
}
trap cleanup EXIT

workload_setup
mount -t squashfs -o loop,ro "$TREE_IMG" "$W/kref" || die "cannot loop-mount $TREE_IMG"
workload "$W/kref" "$W/manifest" || die "the workload fails on the kernel mount: $(tail -2 "$W/manifest.err")"

# The profile, recorded on a mount of the local file (its ranges are the
# same over HTTP: the image's bytes are).
"$QUASH" mount "$TREE_IMG" "$W/node/mnt" -o "record=$W/tree.profile,noprefetch" || die "recording mount failed"
workload "$W/node/mnt" "$W/node/got"
fusermount3 -u "$W/node/mnt"
for _ in $(seq 50); do [ "$(wc -l <"$W/tree.profile" 2>/dev/null || echo 0)" -gt 2 ] && break; sleep 0.2; done
PBYTES=$(awk 'NR > 2 { n += $2 } END { print n + 0 }' "$W/tree.profile")
[ "$PBYTES" -gt 0 ] || die "no profile recorded"

ln -s "$TREE_IMG" "$W/www/tree.sqfs"
HTTP=$(free_port)
start_nginx "$W/nginx" "$W/www" "$HTTP"
declare -A URL=([local]=$TREE_IMG)
for row in instant latency rate link; do
	d=0 r=0
	case $row in latency) d=$DELAY_MS ;; rate) r=$RATE_MBIT ;; link) d=$DELAY_MS r=$RATE_MBIT ;; esac
	port=$(free_port)
	start_faultproxy "$port" "http://127.0.0.1:$HTTP" pass --skip 0 --delay-ms "$d" --rate-mbit "$r"
	URL[$row]=http://127.0.0.1:$port/tree.sqfs
done

# node ROW: "mount import hash total" of one cold node, or "failed"/"wrong"
node() {
	local t0 t1 t3 n=$W/node
	rm -rf "$n/cache" && mkdir -p "$n/cache"
	t0=$(date +%s.%N)
	"$QUASH" mount "${URL[$1]}" "$n/mnt" -o "cache_dir=$n/cache,prefetch=$W/tree.profile" 2>"$n/mount.err" ||
		{ echo failed; return; }
	t1=$(date +%s.%N)
	workload "$n/mnt" "$n/got"
	t3=$(date +%s.%N)
	fusermount3 -u "$n/mnt"
	cmp -s "$W/manifest" "$n/got" || { echo wrong; return; }
	echo "$t0 $t1 $(cat "$n/got.t") $t3" | awk '{ printf "%.3f %.3f %.3f %.3f\n", $2 - $1, $3 - $2, $4 - $3, $4 - $1 }'
}

echo "workload: $(wc -l <"$W/manifest") files; profile: $(($(wc -l <"$W/tree.profile") - 2)) ranges," \
	"$(awk -v b="$PBYTES" 'BEGIN { printf "%.1f MiB", b / 1048576 }')"
echo "round row mount import hash total kernel" >"$W/results"
for r in $(seq "$ROUNDS"); do
	kw=$(kernel_warm "$W/kref" "$W/manifest") || die "the kernel mount's files differ from the manifest"
	for row in $ROWS; do
		res=$(node "$row")
		echo "round $r: $row $res (warm kernel ${kw}s)"
		echo "$r $row $res $kw" >>"$W/results"
	done
done

python3 - "$W/results" "$PBYTES" "$RATE_MBIT" "$DELAY_MS" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
pbytes, rate, delay = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def rng(v, f="%.3f"):
    return "-" if not v else (f % min(v) if min(v) == max(v) else (f + "-" + f) % (min(v), max(v)))
ok = [x for x in rows if len(x) == 7]
bad = [x for x in rows if len(x) != 7]
kern = [float(x[6]) for x in ok]
print("\n%-8s %13s %13s %13s %13s %13s" % ("row", "mount s", "import s", "hash s", "total s", "total/kernel"))
for row in ("local", "instant", "latency", "rate", "link"):
    s = [x for x in ok if x[1] == row]
    col = lambda i: [float(x[i]) for x in s]
    print("%-8s %13s %13s %13s %13s %13s" % (row, rng(col(2)), rng(col(3)), rng(col(4)), rng(col(5)),
          rng([float(x[5]) / float(x[6]) for x in s], "%.2f")))
print("%-8s %13s %13s %13s %13s" % ("kernel", "-", "-", "-", rng(kern)))
print("\nthe link's floor: the profile's %.1f MiB at %g Mbit/s take %.2f s, %s the warm kernel mount" %
      (pbytes / 2**20, rate, pbytes * 8 / rate / 1e6, rng([pbytes * 8 / rate / 1e6 / k for k in kern], "%.2fx")))
if bad:
    print("rounds that failed or read a wrong byte: %s" % ", ".join("%s %s" % (x[0], x[1]) for x in bad))
    sys.exit(1)
PY
