#!/bin/bash
# t-remote-errors.sh - errors no retry can fix end at once, with one line
# naming the image: a host name that does not resolve (RFC 6761's
# .invalid, checked with getent first), a 404 from a real nginx; while a
# refused connection is still retried for the whole budget.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"

W=$WORK/remote-errors
rm -rf "$W" && mkdir -p "$W/www" "$W/mnt"
trap remote_cleanup EXIT
FAST=3          # seconds: far below the 30 s retry budget
BAD=nosuch-quash-host.invalid

# fails_fast NAME CMD...: exit 1 within FAST seconds, one line on stderr naming $WANT
fails_fast() {
	local name=$1 st t0 dt lines
	shift
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>"$W/err"; st=$?
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	lines=$(wc -l <"$W/err")
	if [ $st = 1 ] && [ "$(echo "$dt < $FAST" | bc)" = 1 ] && [ "$lines" = 1 ] &&
		grep -qF "$WANT" "$W/err" && ! grep -q sekr1t "$W/err"; then
		ok "$name (${dt%????} s)"
	else
		not_ok "$name" "exit $st after $dt s, $lines lines: $(head -c 300 "$W/err")"
	fi
}

if getent hosts "$BAD" >/dev/null; then
	not_ok "$BAD does not resolve here" "it does: the test cannot tell"
else
	WANT="http://$BAD/image.sqfs"
	fails_fast "unresolvable host: quash ls fails at once" $QUASH_ASAN ls "http://$BAD/image.sqfs"
	fails_fast "unresolvable host: quash mount fails at once" $QUASH_ASAN mount "http://$BAD/image.sqfs" "$W/mnt"
	check "unresolvable host: nothing is mounted" bash -c "! mountpoint -q '$W/mnt'"
	WANT="s3://bucket/image.sqfs"
	fails_fast "unresolvable S3 endpoint: quash info fails at once, no secret shown" \
		env AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=sekr1t $QUASH_ASAN info \
		--endpoint "http://$BAD:7480" s3://bucket/image.sqfs
	mkdir -p "$W/src" && echo hello >"$W/src/a"
	fails_fast "unresolvable S3 endpoint: quash pack fails at once, no secret shown" \
		env AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=sekr1t $QUASH_ASAN pack --no-progress -q \
		--endpoint "http://$BAD:7480" "$W/src" s3://bucket/image.sqfs
fi

HTTP=$(free_port)
start_nginx "$W/nginx" "$W/www" "$HTTP" || not_ok "nginx starts" "$(tail -3 "$W/nginx/error.log")"
WANT="http://127.0.0.1:$HTTP/none.sqfs"
fails_fast "404 at open fails at once" $QUASH_ASAN ls "http://127.0.0.1:$HTTP/none.sqfs"
check "404: the message says not found" grep -q "not found" "$W/err"

# A refused connection may be a server restarting: it is retried until the
# budget is spent.  With 50 ms doubling, jittered to [d/2, d], and no wait
# begun that would end past the budget, 3 s allow 6-8 attempts in 1.5-3 s
# (a check in whole seconds of $SECONDS read 1.5 s as "1" and failed).
CLOSED=$(free_port)
t0=$(date +%s%N)
$REMOTE_READ -r 3 "http://127.0.0.1:$CLOSED/image.sqfs" /dev/null >/dev/null 2>"$W/err"; st=$?
ms=$((($(date +%s%N) - t0) / 1000000))
attempts=$(sed -n 's/.*gave up after \([0-9]*\) attempts in 3 s.*/\1/p' "$W/err")
if [ $st = 1 ] && [ "${attempts:-0}" -ge 5 ] && [ $ms -ge 1000 ] && [ $ms -le 4000 ]; then
	ok "refused connection: retried within the budget ($attempts attempts in $ms ms)"
else
	not_ok "refused connection: retried within the budget" "exit $st after $ms ms: $(head -c 300 "$W/err")"
fi

# Secrets in a URL (user:password@, a presigned query) must not reach what
# other local users can read: the mount table, any process's command line,
# messages.  The secret is handed to the checker through the environment,
# so that no checking process carries it in its own argv.
mkdir -p "$W/tree" && echo "secret-free" >"$W/tree/hello"
mksquashfs "$W/tree" "$W/www/s.sqfs" -noappend -quiet -no-progress >/dev/null
export QUASH_T_SECRET=pw-$RANDOM$RANDOM
SURL="http://alice:$QUASH_T_SECRET@127.0.0.1:$HTTP/s.sqfs?X-Amz-Credential=c-$QUASH_T_SECRET&X-Amz-Signature=s-$QUASH_T_SECRET"
secret_seen() {   # secret_seen FILE...: does any FILE hold the secret?
	python3 -c '
import os, sys
s = os.environ["QUASH_T_SECRET"].encode()
for f in sys.argv[1:]:
    try:
        if s in open(f, "rb").read():
            print(f); sys.exit(0)
    except OSError:
        pass
sys.exit(1)' "$@"
}
mkdir -p "$W/smnt"
if "$QUASH" mount "$SURL" "$W/smnt" 2>"$W/err"; then
	check "secret URL: the mount serves the image" [ "$(cat "$W/smnt/hello" 2>/dev/null)" = secret-free ]
	if secret_seen /proc/mounts /proc/self/mountinfo; then not_ok "secret URL: not in the mount table"
	else ok "secret URL: not in the mount table"; fi
	check "secret URL: the mount table shows the image without it" \
		grep -q "^http://127.0.0.1:$HTTP/s.sqfs " /proc/mounts
	if where=$(secret_seen /proc/[0-9]*/cmdline); then not_ok "secret URL: in no process's command line" "$where"
	else ok "secret URL: in no process's command line"; fi
	fusermount3 -u "$W/smnt"
else
	not_ok "secret URL: mounted" "$(head -c 300 "$W/err")"
fi
"$QUASH_ASAN" cat "$SURL" /no-such-file >/dev/null 2>"$W/err"
check "secret URL: an error names the image" grep -q "^quash: http://127.0.0.1:$HTTP/s.sqfs: " "$W/err"
if secret_seen "$W/err"; then not_ok "secret URL: not in the error line" "$(head -c 300 "$W/err")"
else ok "secret URL: not in the error line"; fi
"$QUASH_ASAN" mount -f "${SURL/s.sqfs/none.sqfs}" "$W/smnt" >/dev/null 2>"$W/err"; st=$?
if secret_seen "$W/err" || [ $st != 1 ] || ! grep -q "^quash: .*http://127.0.0.1:$HTTP/none.sqfs.*not found: HTTP 404" "$W/err"; then not_ok "secret URL: not in the mount's error line" "$(head -c 300 "$W/err")"
else ok "secret URL: not in the mount's error line"; fi
