#!/bin/bash
# start-rgw.sh [STATE_DIR] [PORT]: throwaway 1-mon/1-osd Ceph cluster + radosgw, all on 127.0.0.1.
# (Copied from the project's shared object-store kit so that CI on a fresh clone has it.)
# env: MON_PORT (default PORT+1), OSD_STORE=memstore|bluestore (default memstore)
set -euo pipefail
S=$(realpath -m "${1:-/tmp/ceph-s3}"); PORT=${2:-7480}
MON_PORT=${MON_PORT:-$((PORT+1))}; STORE=${OSD_STORE:-memstore}
HERE=$(dirname "$(realpath "$0")")
[ -e "$S" ] && "$HERE/stop-rgw.sh" "$S"          # leftovers of an earlier run
mkdir -p "$S"/{log,run,mon.a,osd.0,rgw}
export CEPH_CONF=$S/ceph.conf
trap 'rc=$?; if [ $rc != 0 ]; then tail -n5 "$S"/log/* >&2; "$HERE/stop-rgw.sh" "$S"; fi' EXIT
FSID=$(uuidgen); T0=$(date +%s%N)
cat > "$CEPH_CONF" <<CONF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_PORT]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
keyring = $S/keyring
run dir = $S/run
admin socket = $S/run/\$name.asok
log file = $S/log/\$name.log
mon cluster log file = $S/log/cluster.log
crash dir = $S/crash
mon data = $S/\$name
osd data = $S/\$name
osd objectstore = $STORE
memstore device bytes = 10737418240
bluestore block path = $S/osd.0/block.img
bluestore block size = 10737418240
bluestore cache autotune = false
bluestore cache size = 67108864
osd memory target = 939524096
osd op num shards = 1
osd op num threads per shard = 2
ms async op threads = 1
osd crush chooseleaf type = 0
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon max pg per osd = 1000
paxos propose interval = 0.1
mon data avail warn = 2
mon data avail crit = 1
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
[client.rgw.s3]
rgw data = $S/rgw
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw thread pool size = 16
CONF
: > "$S/keyring"
start() { # NAME CMD...: run daemon in foreground mode in the background, record its pid
  local n=$1; shift; "$@" -c "$CEPH_CONF" -f >>"$S/log/$n.stdout" 2>&1 & echo $! > "$S/run/$n.pid"; }
wait_for() { # NAME SECS CMD...: poll CMD until it succeeds; fail if daemon NAME dies or time is up
  local n=$1 p; p=$(cat "$S/run/$1.pid"); local end=$((SECONDS+$2)); shift 2
  until "$@" >/dev/null 2>&1; do
    [[ $(ps -o stat= -p "$p") == [^Z]* ]] || { echo "$n exited early" >&2; return 1; }
    [ $SECONDS -lt $end ] || { echo "timeout waiting for $n" >&2; return 1; }
    sleep 0.1
  done; }
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$S/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$S/monmap" >"$S/log/mkfs.log" 2>&1
start mon.a ceph-mon -i a
wait_for mon.a 30 ceph -s --connect-timeout 2
OSD_UUID=$(uuidgen); ID=$(ceph osd new "$OSD_UUID")    # -> 0
ceph-osd -i "$ID" --mkfs --osd-uuid "$OSD_UUID" >>"$S/log/mkfs.log" 2>&1
start osd.$ID ceph-osd -i "$ID"
wait_for osd.$ID 60 bash -c "ceph osd dump | grep -q '^osd.$ID up'"
start rgw radosgw -n client.rgw.s3
wait_for rgw 120 bash -c "curl -fs http://127.0.0.1:$PORT/ | grep -q ListAllMyBucketsResult"
radosgw-admin user create --uid=quashtest --display-name=quashtest \
  --access-key=quashtest --secret-key=quashtestsecret >"$S/log/user.json" 2>>"$S/log/mkfs.log"
echo "S3 ready in $(( ($(date +%s%N) - T0) / 1000000 )) ms" >&2
echo "http://127.0.0.1:$PORT"
