#!/bin/bash
# t-remote-s3.sh - images in a real S3 object store (Ceph RGW) on 127.0.0.1:
# SigV4 with keys from the environment, a profile, the config file; a wrong
# secret refused; anonymous reads of a public object; each refusal with its
# exit status and message; faults; an object replaced mid-read; compressible
# files across 64 KiB, 256 KiB and 1 MiB chunk boundaries read through
# mounts, against the kernel's mount; the persistent cache with the store
# stopped, the CLI and a mount compared with the source tree.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/mount.sh"

W=$WORK/remote-s3
rm -rf "$W" && mkdir -p "$W"
S3=$(free_port) PROXY=$(free_port)
export MON_PORT=$(free_port)
trap 'unmount_all; remote_cleanup; "$QUASH_TOP/tests/lib/stop-rgw.sh" "$W/rgw"' EXIT
EP=$("$QUASH_TOP/tests/lib/start-rgw.sh" "$W/rgw" "$S3" 2>"$W/rgw.err") || { not_ok "rgw starts" "$(tail -3 "$W/rgw.err")"; exit 1; }

export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL=$EP HOME=$W/home
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE
mkdir -p "$HOME"
aws_() { aws --endpoint-url "$EP" "$@"; }

make_test_image "$W" text
IMG=$W/image.sqfs
head -c "$(stat -c %s "$IMG")" /dev/urandom >"$W/other"
aws_ s3 mb s3://quash-test >/dev/null
aws_ s3 cp --only-show-errors "$IMG" s3://quash-test/images/one.sqfs
aws_ s3 cp --only-show-errors "$IMG" "s3://quash-test/images/with space+plus=.sqfs"
aws_ s3api put-object --bucket quash-test --key public.sqfs --body "$IMG" --acl public-read >/dev/null
RR=$REMOTE_READ
U=s3://quash-test/images/one.sqfs

check "s3: every byte, keys from the environment, 4 racing readers" $RR -c 262144 -t 4 -n 40 -p "$U" "$IMG"
check "s3: a key that needs encoding" $RR "s3://quash-test/images/with space+plus=.sqfs" "$IMG"
check "s3: --endpoint option instead of AWS_ENDPOINT_URL" env -u AWS_ENDPOINT_URL $RR -e "$EP" "$U" "$IMG"
check_fails "s3: missing key is an error" 1 "^remote_read: .*no such object in the bucket \(S3 NoSuchKey\)" \
	$RR s3://quash-test/images/none.sqfs "$IMG"
AWS_SECRET_ACCESS_KEY=wrongsecret-x9 $RR -r 1 "$U" "$IMG" 2>"$W/wrong.err"; st=$?
check "s3: a wrong secret is refused" test $st = 1
check "s3: the refusal says access denied" grep -q "access denied" "$W/wrong.err"
check "s3: the secret is in no message" bash -c "! grep -q wrongsecret '$W/wrong.err'"

# Compressible files whose compressed blocks cross chunk boundaries (see
# t-remote-http.sh), through mounts of three chunk sizes, against the
# kernel's own mount of the image.
n64=$(text_straddles "$IMG" 65536) n256=$(text_straddles "$IMG" 262144) n1m=$(text_straddles "$IMG" 1048576)
check "fixture: compressed blocks of the text files cross 64 KiB, 256 KiB, 1 MiB boundaries ($n64, $n256, $n1m)" \
	test "$n64" -ge 1 -a "$n256" -ge 1 -a "$n1m" -ge 1
kmount "$IMG" "$W/kernel"
text_same() { compare_trees "$W/kernel/text" "$1/text" && [ ! -s "$2" ]; }   # text_same MOUNT ERRFILE
for cs in 64K 256K 1M; do
	qmount "$W/m$cs" "$QUASH_ASAN" mount -o "chunk_size=$cs,noprefetch" "$U" "$W/m$cs" 2>"$W/m$cs.err"
	check "s3 mount, chunk_size=$cs: the text files equal the kernel's, nothing said" \
		text_same "$W/m$cs" "$W/m$cs.err"
	fusermount3 -u "$W/m$cs"
done

# Credentials from files, the way the AWS tools find them.
mkdir -p "$HOME/.aws"
printf '[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n[ci]\naws_access_key_id = quashtest\naws_secret_access_key = quashtestsecret\n' \
	>"$HOME/.aws/credentials"
printf '[profile cfg]\nregion = us-east-1\naws_access_key_id = quashtest\naws_secret_access_key = quashtestsecret\n' \
	>"$HOME/.aws/config"
NOENV="env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY"
check "s3: AWS_PROFILE from ~/.aws/credentials" $NOENV AWS_PROFILE=ci $RR "$U" "$IMG"
check "s3: AWS_PROFILE from ~/.aws/config" $NOENV AWS_PROFILE=cfg $RR "$U" "$IMG"
check_fails "s3: the default profile's wrong keys are refused" 1 "^remote_read: .*access denied: HTTP 403" \
	$NOENV $RR -r 1 "$U" "$IMG"
check_fails "s3: an unknown AWS_PROFILE is an error" 1 "^remote_read: AWS profile nosuch not found in ~/.aws/credentials" \
	$NOENV AWS_PROFILE=nosuch $RR -r 1 "$U" "$IMG"
rm -rf "$HOME/.aws"
check "s3: anonymous read of a public object" $NOENV $RR s3://quash-test/public.sqfs "$IMG"
check_fails "s3: anonymous read of a private object is refused" 1 \
	"^remote_read: .*access denied: HTTP 403 \(AccessDenied\); no AWS credentials were found" $NOENV $RR -r 1 "$U" "$IMG"

# Refusals say what to fix, in one line (the first-hour issue).
$NOENV "$QUASH_ASAN" info --retry-seconds 1 "$U" >/dev/null 2>"$W/anon.err"; st=$?
check "s3: an unsigned read that is refused says no credentials were found" \
	bash -c "[ $st = 1 ] && [ \$(wc -l <'$W/anon.err') = 1 ] && grep -q '^quash: $U: access denied: HTTP 403 (AccessDenied); no AWS credentials were found' '$W/anon.err'"
mkdir -p "$W/small" && echo hi >"$W/small/f"
$NOENV "$QUASH_ASAN" pack --no-progress "$W/small" s3://quash-test/anon.sqfs >/dev/null 2>"$W/anonput.err"; st=$?
check "s3: an unsigned upload that is refused says no credentials were found" \
	bash -c "[ $st = 1 ] && [ \$(wc -l <'$W/anonput.err') = 1 ] && grep -q 'access denied: HTTP 403 (AccessDenied); no AWS credentials were found' '$W/anonput.err'"
"$QUASH_ASAN" info s3://quash-no-such-bucket/x.sqfs >/dev/null 2>"$W/nobucket.err"; st=$?
check "s3: a missing bucket is said in words" \
	bash -c "[ $st = 1 ] && grep -qx 'quash: s3://quash-no-such-bucket/x.sqfs: no such bucket (S3 NoSuchBucket)' '$W/nobucket.err'"
"$QUASH_ASAN" info s3://quash-test/images/none.sqfs >/dev/null 2>"$W/nokey.err"; st=$?
check "s3: a missing object is said in words" \
	bash -c "[ $st = 1 ] && grep -qx 'quash: s3://quash-test/images/none.sqfs: no such object in the bucket (S3 NoSuchKey)' '$W/nokey.err'"

# Faults between quash and the store; signatures survive the proxy.
start_faultproxy "$PROXY" "$EP" reset,503,500,429,truncate,short,stall --stall 20
check "s3 faults: retried, the bytes still match" \
	$RR -c 1048576 -s 1048576 -r 16 -t 2 -e "http://127.0.0.1:$PROXY" "$U" "$IMG"
stop_pid "$PROXY_PID"

# The object replaced while being read.
aws_ s3 cp --only-show-errors "$IMG" s3://quash-test/changing.sqfs
check "s3: replaced object: later reads fail with ESTALE" $RR -c 65536 -E 116 \
	-x "aws --endpoint-url $EP s3 cp --only-show-errors '$W/other' s3://quash-test/changing.sqfs" \
	s3://quash-test/changing.sqfs "$IMG"

# interrupt_pack LOG SOURCE URL: pack SOURCE to URL through the proxy, send
# SIGINT once the proxy logged the first PUT; returns the pack's exit status.
interrupt_pack() {
	local log=$1 pid
	set -m      # else bash starts background jobs with SIGINT ignored
	env -u AWS_ENDPOINT_URL $QUASH_ASAN pack --no-progress -q --endpoint "http://127.0.0.1:$PROXY" "$2" "$3" &
	pid=$!
	set +m
	for _ in $(seq 300); do grep -q "^PUT" "$log" 2>/dev/null && break; sleep 0.1; done
	kill -INT $pid
	wait $pid
}

# Publishing: quash pack straight to S3 gives the bytes a local pack gives.
$QUASH_ASAN pack --no-progress -q "$W/tree" "$W/local.sqfs"
check "pack to s3: multipart upload of several parts" $QUASH_ASAN pack --no-progress -q "$W/tree" s3://quash-test/packed.sqfs
check "pack to s3: the object is the local image, byte for byte" $RR s3://quash-test/packed.sqfs "$W/local.sqfs"
mkdir -p "$W/small" && echo hello >"$W/small/a"
$QUASH_ASAN pack --no-progress -q "$W/small" "$W/small.sqfs"
check "pack to s3: a one-part image, --endpoint" env -u AWS_ENDPOINT_URL \
	$QUASH_ASAN pack --no-progress -q --endpoint "$EP" "$W/small" s3://quash-test/small.sqfs
check "pack to s3: the one-part object matches" $RR s3://quash-test/small.sqfs "$W/small.sqfs"
# An image under two parts is one PUT: no multipart round trips.  A 503 and
# a reset before it are retried; a PUT cut short by SIGINT stores nothing.
start_faultproxy "$PROXY" "$EP" 503,reset,pass --skip 0 --log "$W/put.log"
check "pack to s3: a small image through 503 and a reset" env -u AWS_ENDPOINT_URL \
	$QUASH_ASAN pack --no-progress -q --endpoint "http://127.0.0.1:$PROXY" "$W/small" s3://quash-test/put.sqfs
stop_pid "$PROXY_PID"
check "pack to s3: a small image is one PUT, retried twice" \
	test "$(cut -d' ' -f1,3 "$W/put.log" | paste -sd,)" = "PUT 503,PUT reset,PUT pass"
check "pack to s3: the PUT object matches" $RR s3://quash-test/put.sqfs "$W/small.sqfs"
echo changed >"$W/small/a"
start_faultproxy "$PROXY" "$EP" stall --stall 60 --skip 0 --log "$W/put2.log"
interrupt_pack "$W/put2.log" "$W/small" s3://quash-test/put.sqfs; st=$?
stop_pid "$PROXY_PID"
check "pack to s3: SIGINT mid-PUT ends the pack" test $st = 130
check "pack to s3: after a PUT cut short the earlier object stays" $RR s3://quash-test/put.sqfs "$W/small.sqfs"
check_fails "pack to s3: a wrong secret fails" 1 "^quash: .*s3://quash-test/wrong.sqfs.*access denied: HTTP 403" env AWS_SECRET_ACCESS_KEY=wrong \
	$QUASH_ASAN pack --no-progress -q "$W/small" s3://quash-test/wrong.sqfs
aws_ s3api head-object --bucket quash-test --key wrong.sqfs >/dev/null 2>"$W/head.err"
check "pack to s3: and leaves no object (HEAD is a 404)" grep -q "(404).*Not Found" "$W/head.err"
# Ctrl-C mid-upload (the proxy holds the first part's answer back): the
# upload is aborted and the object already there stays.
mkdir -p "$W/bigsrc" && head -c 30000000 /dev/urandom >"$W/bigsrc/big"
start_faultproxy "$PROXY" "$EP" stall --stall 60 --log "$W/upload.log"
interrupt_pack "$W/upload.log" "$W/bigsrc" s3://quash-test/packed.sqfs; st=$?
check "pack to s3: SIGINT mid-upload ends the pack" test $st = 130
check "pack to s3: the abort went out" grep -q "^DELETE" "$W/upload.log"
stop_pid "$PROXY_PID"
check "pack to s3: the earlier object stays" $RR s3://quash-test/packed.sqfs "$W/local.sqfs"
aws_ s3api list-multipart-uploads --bucket quash-test >"$W/uploads.json"; st=$?
check "pack to s3: no multipart upload is left" bash -c "[ $st = 0 ] && ! grep -q packed.sqfs '$W/uploads.json'"
rm -rf "$W/bigsrc"

# Persistent cache: read everything, stop the store, read again.
check "s3 cache dir: first read fills it" $RR -c 262144 -d "$W/cache" -t 2 "$U" "$IMG"
# The same through the command line: --endpoint and --cache-dir, no environment endpoint.
"$QUASH" ls -lR "$IMG" >"$W/ls.local"
cli_remote() {   # cli_remote OUT: ls -lR and extract of $U through the CLI's own options
	env -u AWS_ENDPOINT_URL "$QUASH_ASAN" ls -lR --endpoint "$EP" --cache-dir "$W/clicache" "$U" >"$1.ls" &&
	rm -rf "$1.x" && env -u AWS_ENDPOINT_URL "$QUASH_ASAN" extract --endpoint "$EP" --cache-dir "$W/clicache" \
		"$U" -C "$1.x" &&
	cmp -s "$1.ls" "$W/ls.local" && diff -r --no-dereference "$1.x" "$W/tree" >/dev/null
}
check "cli: --endpoint and --cache-dir: ls -lR matches the local image's, extract the source tree" cli_remote "$W/online"
# And through a mount: -o endpoint=,cache_dir=; every file read, compared with the source tree.
mount_remote() {   # mount_remote LOG: mount $U, compare the tree with the local extraction, unmount
	mkdir -p "$W/mnt" &&
	env -u AWS_ENDPOINT_URL "$QUASH" mount -o endpoint="$EP",cache_dir="$W/mntcache" "$U" "$W/mnt" 2>"$1" &&
	diff -r --no-dereference "$W/mnt" "$W/tree" >/dev/null; local st=$?
	"$QUASH" umount "$W/mnt" 2>/dev/null
	return $st
}
check "mount: -o endpoint=,cache_dir=: every file matches the source tree" mount_remote "$W/mount-online.err"
"$QUASH_TOP/tests/lib/stop-rgw.sh" "$W/rgw"
check "cli: --cache-dir: the same with the store stopped" cli_remote "$W/offline"
check "mount: cache_dir: every file still reads with the store stopped" mount_remote "$W/mount-offline.err"
check "mount: cache_dir: the mount says it serves from the cache" grep -q "unreachable" "$W/mount-offline.err"
$RR -c 262144 -d "$W/cache" -t 4 "$U" "$IMG" 2>"$W/offline.err"; st=$?
check "s3 cache dir: every byte reads with the store stopped" test $st = 0
check "s3 cache dir: the notice says so" grep -q "server unreachable" "$W/offline.err"
