#!/bin/bash
# t-remote-list.sh - listing remote catalogs (qs_source_list(), through the
# developer command `quash catalog list`): a Ceph RGW bucket with more keys
# than three pages hold, nested keys, keys that need encoding and unsafe ones,
# against the aws CLI's own listing; nginx's JSON autoindex over a nested tree,
# against find; a text index; and servers that answer garbage, a cut page, an
# endless continuation token, a page without end or nothing at all: each ends
# in one line naming the URL, exit status 1, within its time budget.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"

W=$WORK/remote-list
rm -rf "$W" && mkdir -p "$W"
# Five free ports from one Python start (free_port costs one each).
read -r S3 HTTP PROXY BAD MON_PORT < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(5)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
export MON_PORT
trap 'remote_cleanup; "$QUASH_TOP/tests/lib/stop-rgw.sh" "$W/rgw"' EXIT
"$QUASH_TOP/tests/lib/start-rgw.sh" "$W/rgw" "$S3" >"$W/ep" 2>"$W/rgw.err" &
RGW_START=$!

export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1
export HOME=$W/home LC_ALL=C
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_ENDPOINT_URL
mkdir -p "$HOME"
Q="$QUASH_ASAN catalog list"

# one_line_error FILE STATUS PATTERN: a clean failure, said in one line that matches.
one_line_error() {
	[ "$2" = 1 ] && [ "$(wc -l <"$1")" = 1 ] && grep -q -- "$3" "$1"
}

# ---- nginx: autoindex_format json over a nested tree ----------------------------
www=$W/www
mkdir -p "$www/cat/sub/deeper/deepest" "$www/cat/empty" "$www/cat/sp ace" "$www/loop" "$www/html"
for i in $(seq 1 12); do head -c $((i * 100)) /dev/zero >"$www/cat/img$i.sqfs"; done
for i in 1 2 3; do head -c $((i * 7)) /dev/zero >"$www/cat/sub/s$i.sqfs"; done
echo deep >"$www/cat/sub/deeper/deepest/d.sqfs"
echo x >"$www/cat/sp ace/a&b+c=d.sqfs"
echo x >"$www/cat/sub/quote\"back\\slash é.sqfs"
echo x >"$www/cat/new
line.sqfs"                      # a control character: never handed out
touch -d '2001-02-03 04:05:06 UTC' "$www/cat/img1.sqfs"
ln -s . "$www/loop/again"       # nginx follows it: a tree without end
echo x >"$www/html/a.sqfs"
printf '# the catalog\n\nimg1.sqfs 100\r\nsub/s1.sqfs\n  sub/s2.sqfs   5\n../evil.sqfs 1\n/abs.sqfs\nsub//x\nlast.sqfs\t 42' \
	>"$www/index.txt"
printf 'img1.sqfs 100\nimg2.sqfs two-hundred\n' >"$www/bad-index.txt"
NGINX_AUTOINDEX=1 NGINX_EXTRA='autoindex_format json; location /html/ { autoindex_format html; }' \
	start_nginx "$W/nginx" "$www" "$HTTP"
H=http://127.0.0.1:$HTTP

# catalog list escapes a key's backslashes (\\), as every control character.
(cd "$www/cat" && find . -type f ! -name '*[[:cntrl:]]*' -printf '%P\t%s\t%T@\t\n') |
	sed 's/\.[0-9]*\t$/\t/; s/\\/\\\\/g' | sort >"$W/http.want"
$Q "$H/cat/" >"$W/http.got" 2>"$W/http.err"; st=$?
sort -o "$W/http.got" "$W/http.got"
check "http: nested JSON listing, every file find sees, sizes and mtimes ($(wc -l <"$W/http.want") files)" \
	bash -c "[ $st = 0 ] && [ ! -s '$W/http.err' ] && cmp -s '$W/http.want' '$W/http.got'"
check "http: a name with a quote, a backslash (printed \\\\) and UTF-8 comes back whole" \
	grep -qF "sub/quote\"back\\\\slash é.sqfs" "$W/http.got"
check "http: the name with a newline is left out" bash -c "! grep -q '^line.sqfs\|new$' '$W/http.got'"
check "http: credentials and query in the URL still list (and are never shown)" \
	bash -c "$Q 'http://u:pw@127.0.0.1:$HTTP/cat/?token=secret' | sort | cmp -s - '$W/http.want'"
$Q "$H/loop/" >/dev/null 2>"$W/loop.err"; st=$?
check "http: a symlink loop ends at the depth bound, in one line" \
	one_line_error "$W/loop.err" $st "^quash: catalog list: $H/loop/\(again/\)*: directories nested deeper than 16"
$Q "$H/html/" >/dev/null 2>"$W/html.err"; st=$?
check "http: an HTML listing is refused, saying what the server needs" \
	one_line_error "$W/html.err" $st "^quash: catalog list: $H/html/: .*an HTML page (nginx.s default autoindex_format html)"
$Q "$H/none/" >/dev/null 2>"$W/none.err"; st=$?
check "http: a missing directory is one line naming it" \
	one_line_error "$W/none.err" $st "^quash: catalog list: $H/none/: .*404"

# ---- text index ------------------------------------------------------------------
printf 'img1.sqfs\t100\t0\t\nsub/s1.sqfs\t0\t0\t\nsub/s2.sqfs\t5\t0\t\nlast.sqfs\t42\t0\t\n' >"$W/index.want"
check "index: keys and sizes; comments, blanks, CRLF and unsafe keys skipped" \
	bash -c "$Q '$H/index.txt' | cmp -s - '$W/index.want'"
$Q "http://u:pw@127.0.0.1:$HTTP/bad-index.txt?sig=secret" >/dev/null 2>"$W/badidx.err"; st=$?
check "index: a size that is not a number is one line naming the URL and the line" \
	one_line_error "$W/badidx.err" $st "^quash: catalog list: $H/bad-index.txt: line 2: "
check "index: no credentials or query in the message" bash -c "! grep -q 'pw\|secret' '$W/badidx.err'"
$Q "$H/cat/img3.sqfs" >/dev/null 2>"$W/binidx.err"; st=$?
check "index: an image given as an index is refused" one_line_error "$W/binidx.err" $st "not a text index"

# ---- hostile servers -------------------------------------------------------------
python3 "$QUASH_TOP/tests/lib/hostile_list.py" "$BAD" 2>/dev/null &
REMOTE_PIDS+=($!)
wait_port "$BAD"
# hostile NAME SPEC PATTERN: fails in one line matching PATTERN, within the
# 1 s budget and a 1 s margin for start-up on a loaded machine
hostile() {
	local t0=$EPOCHREALTIME st took
	timeout 20 $Q --retry-seconds 1 --endpoint "http://127.0.0.1:$BAD" "$2" >/dev/null 2>"$W/$1.err"; st=$?
	took=$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $t0 }")
	if one_line_error "$W/$1.err" $st "$3" && awk "BEGIN { exit !($took < 2) }"; then
		ok "hostile: $1: one line, exit 1, in $took s (budget 1 s + 1 s)"
	else not_ok "hostile: $1: one line, exit 1, within 2 s" "exit $st in $took s: $(head -c 300 "$W/$1.err")"; fi
}
hostile garbage s3://garbage/ "^quash: catalog list: s3://garbage/: malformed ListObjectsV2 answer: no ListBucketResult"
hostile cutpage s3://cutpage/p/ "^quash: catalog list: s3://cutpage/p/: malformed ListObjectsV2 answer: it ends before"
hostile endless s3://endless/ "^quash: catalog list: s3://endless/: the server sends the same continuation token again"
hostile notoken s3://notoken/ "truncated page without a NextContinuationToken"
hostile huge s3://huge/ "^quash: catalog list: s3://huge/: answer longer than 8 MiB"
hostile silent s3://silent/ "^quash: catalog list: s3://silent/: GET .*gave up after"
hostile badjson "http://127.0.0.1:$BAD/badjson/" "^quash: catalog list: http://127.0.0.1:$BAD/badjson/: not an nginx JSON directory listing (autoindex_format json): a string that does not end"

# ---- Ceph RGW ---------------------------------------------------------------------
wait $RGW_START || { not_ok "rgw starts" "$(tail -3 "$W/rgw.err")"; exit 1; }
EP=$(cat "$W/ep")
aws_() { aws --endpoint-url "$EP" "$@"; }
# The objects go up through curl's own SigV4, all from one process (an aws
# CLI run costs seconds): the bucket as a tree, plus the keys no file can
# have (--path-as-is keeps "/../" and "/./" as they are).
b=$W/bucket
mkdir -p "$b/imgs/nested/deeper" "$b/imgs/sp ace" "$b/imgs-old" "$b/other"
for i in $(seq 1 450); do printf '%*s' $((i % 37)) "" >"$b/imgs/k$i.sqfs"; done
for i in 1 2 3; do echo "$i" >"$b/imgs/nested/n$i.sqfs"; done
echo deep >"$b/imgs/nested/deeper/d.sqfs"
echo x | tee "$b/imgs/sp ace/a&b<c>'q\"+=é.sqfs" "$b/imgs-old/x.sqfs" "$b/other/y.sqfs" "$b/top.sqfs" >/dev/null
python3 - "$b" "$EP" >"$W/curl.cfg" <<'PY'
import os, sys, urllib.parse
root, ep = sys.argv[1], sys.argv[2]
def q(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')
n = 0
def put(bucket, key, path):
    global n
    n += 1
    if n > 1:
        print("next")
    print("url = " + q("%s/%s/%s" % (ep, bucket, urllib.parse.quote(key, safe="/"))))
    print("path-as-is\nfail\nsilent\nshow-error\nuser = quashtest:quashtestsecret")
    print('aws-sigv4 = "aws:amz:us-east-1:s3"\nheader = "x-amz-content-sha256: UNSIGNED-PAYLOAD"')
    print('request = "PUT"\ndata-binary = ' + q("@" + path))
print("parallel\nparallel-max = 16\nno-progress-meter")
for d, _, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        put("catalog", os.path.relpath(p, root), p)
for k in ("imgs/folder/", "imgs/../evil.sqfs", "imgs/a/./b.sqfs"):
    put("catalog", k, os.path.join(root, "top.sqfs"))
put("public-cat", "pub/one.sqfs", os.path.join(root, "imgs/k5.sqfs"))
PY
s3put=(-sSf --aws-sigv4 aws:amz:us-east-1:s3 -u quashtest:quashtestsecret -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X PUT)
curl "${s3put[@]}" "$EP/catalog" --next "${s3put[@]}" -H "x-amz-acl: public-read" "$EP/public-cat" &&
	curl -K "$W/curl.cfg" >/dev/null
check "s3: the catalog's objects are uploaded" test $? = 0

# The aws CLI's listing, less the keys a catalog must not hand out, as catalog list prints it.
aws_listing() {     # aws_listing BUCKET PREFIX [aws options...]
	local bucket=$1 prefix=$2
	shift 2
	aws_ s3api list-objects-v2 --bucket "$bucket" ${prefix:+--prefix "$prefix"} --output json "$@" |
		python3 -c '
import datetime, json, sys
prefix = sys.argv[1]
for o in (json.load(sys.stdin) or {}).get("Contents", []):
    key = o["Key"][len(prefix):]
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") for p in parts) or any(ord(c) < 32 or ord(c) == 127 for c in key):
        continue
    t = int(datetime.datetime.fromisoformat(o["LastModified"].replace("Z", "+00:00")).timestamp())
    esc = lambda s: s.replace("\\", "\\\\")      # catalog list escapes a backslash
    print("%s\t%d\t%d\t%s" % (esc(key), o["Size"], t, esc(o["ETag"].strip("\""))))
' "$prefix" | sort
}
aws_listing catalog imgs/ >"$W/s3.want" & p1=$!
aws_listing catalog "" >"$W/bucket.want" & p2=$!
aws_listing public-cat pub/ >"$W/pub.want" & p3=$!
wait $p1 $p2 $p3
start_faultproxy "$PROXY" "$EP" pass --skip 0 --log "$W/pages.log"
$Q --endpoint "$EP" --proxy "http://127.0.0.1:$PROXY" s3://catalog/imgs/ >"$W/s3.got" 2>"$W/s3.err"; st=$?
stop_pid "$PROXY_PID"
sort -o "$W/s3.got" "$W/s3.got"
check "s3: every key under the prefix, as the aws CLI lists them ($(wc -l <"$W/s3.want") keys)" \
	bash -c "[ $st = 0 ] && [ ! -s '$W/s3.err' ] && [ \$(wc -l <'$W/s3.want') = 455 ] && cmp -s '$W/s3.want' '$W/s3.got'"
check "s3: three pages of 200 keys, each through --proxy" test "$(grep -c '^GET' "$W/pages.log")" = 3
check "s3: a key with entities and UTF-8 comes back whole" grep -qF "sp ace/a&b<c>'q\"+=é.sqfs" "$W/s3.got"
check "s3: the folder marker and the ./.. keys are left out" \
	bash -c "! grep -q 'folder/\|evil\|/\./' '$W/s3.got'"
check "s3: a prefix without its '/' lists the same (not imgs-old/)" \
	bash -c "$Q --endpoint '$EP' s3://catalog/imgs | sort | cmp -s - '$W/s3.want'"
check "s3: the whole bucket, s3://BUCKET" bash -c "$Q --endpoint '$EP' s3://catalog | sort | cmp -s - '$W/bucket.want'"
check "s3: AWS_ENDPOINT_URL instead of --endpoint, s3://BUCKET/" \
	bash -c "AWS_ENDPOINT_URL='$EP' $Q s3://catalog/ | sort | cmp -s - '$W/bucket.want'"
start_faultproxy "$PROXY" "$EP" reset,503,500,truncate --skip 1
check "s3: resets, 5xx and a cut page are retried, the listing still whole" \
	bash -c "$Q --endpoint 'http://127.0.0.1:$PROXY' s3://catalog/imgs/ | sort | cmp -s - '$W/s3.want'"
stop_pid "$PROXY_PID"

NOKEYS="env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY"
check "s3: a public bucket lists without credentials" \
	bash -c "$NOKEYS $Q --endpoint '$EP' s3://public-cat/pub/ | cmp -s - '$W/pub.want'"
$NOKEYS $Q --retry-seconds 2 --endpoint "$EP" s3://catalog/imgs/ >/dev/null 2>"$W/anon.err"; st=$?
check "s3: a private bucket without credentials: one line saying none were found" \
	one_line_error "$W/anon.err" $st "^quash: catalog list: s3://catalog/imgs/: GET: access denied: HTTP 403.*no AWS credentials were found"
AWS_SECRET_ACCESS_KEY=wrongsecret-x9 $Q --retry-seconds 2 --endpoint "$EP" s3://catalog/ >/dev/null 2>"$W/wrong.err"; st=$?
check "s3: a wrong secret is refused in one line" one_line_error "$W/wrong.err" $st "access denied"
check "s3: the secret is in no message" bash -c "! grep -q wrongsecret '$W/wrong.err'"
$Q --endpoint "$EP" s3://no-such-catalog/ >/dev/null 2>"$W/nobucket.err"; st=$?
check "s3: a missing bucket is said in words" \
	one_line_error "$W/nobucket.err" $st "^quash: catalog list: s3://no-such-catalog/: GET: no such bucket"
