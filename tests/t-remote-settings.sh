#!/bin/bash
# t-remote-settings.sh - the remote settings the docs promise, each against a
# real server on 127.0.0.1 (nginx over HTTP and HTTPS with a test CA; a moto
# S3 server that checks every signature and session token, plain and behind
# nginx TLS), with tests/lib/capture_proxy.py recording what went out:
# AWS_SESSION_TOKEN sent and signed, AWS_SHARED_CREDENTIALS_FILE,
# AWS_CONFIG_FILE with a profile's region and endpoint_url, --region, the
# order of the endpoint and region variables, the region in the AWS host
# name, AWS_CA_BUNDLE (S3 only) and SSL_CERT_DIR, http_proxy, https_proxy
# and ALL_PROXY, redirects (followed for plain HTTP, at most 5, credentials
# kept from another origin; never for signed S3 requests),
# If-Unmodified-Since without an ETag, the 1 KiB cap on an error body,
# --fallback (http:// and s3://), and --cache-dir-limit (and the mount's
# -o cache_dir_limit= and -o region=).
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/mount.sh"

W=$WORK/remote-settings
rm -rf "$W" && mkdir -p "$W/www/noetag" "$W/home/.aws"
trap 'unmount_all; remote_cleanup' EXIT
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_REGION AWS_DEFAULT_REGION \
	AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_CA_BUNDLE \
	CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR http_proxy https_proxy HTTPS_PROXY ALL_PROXY all_proxy \
	no_proxy NO_PROXY
export HOME=$W/home
HTTP=$(free_port) TLS=$(free_port) S3TLS=$(free_port) REDIR=$(free_port) MOTO=$(free_port)
CAP=$(free_port) CAPS3=$(free_port) FP=$(free_port) DEAD=$(free_port)

# Servers.  moto checks nothing for its first four requests (tests/lib/moto_sts.py
# sets up an IAM user and role with them), then every signature and token.
INITIAL_NO_AUTH_ACTION_COUNT=4 python3 -m moto.server -H 127.0.0.1 -p "$MOTO" >"$W/moto.log" 2>&1 &
REMOTE_PIDS+=($!)
mkdir -p "$W/tree/sub"
# f3 lies past the first 4 MiB chunk, so reading it takes requests after the open.
head -c 700017 /dev/urandom >"$W/tree/f1"
head -c 1400017 /dev/urandom >"$W/tree/f2"
head -c 10000017 /dev/urandom >"$W/tree/f3"
for i in $(seq 1 50); do echo "small $i" >"$W/tree/sub/s$i"; done
mksquashfs "$W/tree" "$W/image.sqfs" -noappend -quiet -no-progress >/dev/null
IMG=$W/image.sqfs
cp "$IMG" "$W/www/image.sqfs"
# Another version: same size, another mtime, so that nginx gives it another ETag.
head -c "$(stat -c %s "$IMG")" /dev/urandom >"$W/www/other.sqfs"
touch -d @1600000000 "$W/www/other.sqfs"
truncate -s 256M "$W/www/huge404.bin"
make_test_ca "$W/ca"
# A server certificate also for a name only the capture proxy resolves.
printf 'subjectAltName=IP:127.0.0.1,DNS:origin.quash.invalid\n' >"$W/ca/ext2.cnf"
openssl x509 -req -in "$W/ca/server.csr" -CA "$W/ca/ca.pem" -CAkey "$W/ca/ca.key" -CAcreateserial \
	-days 2 -extfile "$W/ca/ext2.cnf" -out "$W/ca/server2.pem" 2>/dev/null
hops=""
for i in 1 2 3 4 5 6; do
	hops+="location = /hop$i/image.sqfs { return 302 /hop$((i - 1))/image.sqfs; } "
done
mkdir -p "$W/nginx/tmp"
cat >"$W/nginx/nginx.conf" <<CONF
daemon off;
pid $W/nginx/nginx.pid;
error_log $W/nginx/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $W/nginx/tmp;
	proxy_temp_path $W/nginx/tmp;
	fastcgi_temp_path $W/nginx/tmp;
	uwsgi_temp_path $W/nginx/tmp;
	scgi_temp_path $W/nginx/tmp;
	server {
		listen 127.0.0.1:$HTTP; root $W/www;
		location = /r301/image.sqfs { return 301 /image.sqfs; }
		location = /r302/image.sqfs { return 302 /image.sqfs; }
		location = /hop0/image.sqfs { return 302 /image.sqfs; }
		$hops
		location /noetag/ { etag off; }
		location /errbody/ { error_page 404 /huge404.bin; }
		location = /huge404.bin { internal; access_log $W/nginx/errbody.log; }
	}
	server { listen 127.0.0.1:$REDIR; return 301 http://127.0.0.1:$CAP\$request_uri; }
	server { listen 127.0.0.1:$TLS ssl; root $W/www;
		ssl_certificate $W/ca/server2.pem; ssl_certificate_key $W/ca/server.key; }
	server { listen 127.0.0.1:$S3TLS ssl;
		ssl_certificate $W/ca/server.pem; ssl_certificate_key $W/ca/server.key;
		location / { proxy_pass http://127.0.0.1:$MOTO; proxy_set_header Host \$http_host; } }
}
CONF
nginx -c "$W/nginx/nginx.conf" -p "$W/nginx" 2>>"$W/nginx/error.log" &
REMOTE_PIDS+=($!)
wait_port "$HTTP" || not_ok "nginx starts" "$(tail -3 "$W/nginx/error.log")"
python3 "$QUASH_TOP/tests/lib/capture_proxy.py" --port "$CAP" --log "$W/cap.log" --upstream "http://127.0.0.1:$HTTP" &
REMOTE_PIDS+=($!)
python3 "$QUASH_TOP/tests/lib/capture_proxy.py" --port "$CAPS3" --log "$W/caps3.log" --upstream "http://127.0.0.1:$MOTO" &
REMOTE_PIDS+=($!)
wait_port "$CAP" && wait_port "$CAPS3"
for i in $(seq 6); do wait_port "$MOTO" && break; done
eval "$(python3 "$QUASH_TOP/tests/lib/moto_sts.py" "http://127.0.0.1:$MOTO" quash-sts image.sqfs "$IMG" 2>"$W/sts.err")" ||
	{ not_ok "moto issues temporary credentials" "$(tail -1 "$W/sts.err")"; exit 1; }

# capjson LOG PYEXPR: true if PYEXPR holds for the list R of the log's requests (dicts).
capjson() {
	python3 -c 'import json,sys; R=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$@"
}
# cat_eq URL [ENV...] [-- OPTION...]: quash cat of URL's f3, with the variables
# NAME=VALUE and the options given, exits 0 with no sanitizer report and
# prints the local file's bytes.  CAT_PATH and CAT_LOCAL name another file.
cat_eq() {
	local url=$1 envs=() opts=(); shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ $# -gt 0 ] && shift && opts=("$@")
	env "${envs[@]}" "$QUASH_ASAN" cat "${opts[@]}" "$url" "${CAT_PATH:-f3}" >"$W/cat.out" 2>"$W/cat.err" &&
		! grep -qE 'Sanitizer|runtime error:' "$W/cat.err" && cmp -s "$W/cat.out" "${CAT_LOCAL:-$W/tree/f3}"
}
S3=s3://quash-sts/image.sqfs
TMPENV="AWS_ACCESS_KEY_ID=$TMP_KEY AWS_SECRET_ACCESS_KEY=$TMP_SECRET"

# Session token: moto refuses a temporary key without its token, or with another.
: >"$W/caps3.log"
check "AWS_SESSION_TOKEN: temporary credentials read the object" \
	cat_eq "$S3" $TMPENV AWS_SESSION_TOKEN="$TMP_TOKEN" AWS_ENDPOINT_URL="http://127.0.0.1:$CAPS3"
check "AWS_SESSION_TOKEN: every request carries x-amz-security-token and signs it" \
	capjson "$W/caps3.log" "R and all(r['headers'].get('x-amz-security-token') == '$TMP_TOKEN' and
		'x-amz-security-token' in r['headers']['authorization'].split('SignedHeaders=')[1].split(',')[0].split(';')
		for r in R)"
check_fails "AWS_SESSION_TOKEN: another token is refused by the server" 1 \
	"^quash: $S3: HTTP 400 \(InvalidToken\)" \
	env $TMPENV AWS_SESSION_TOKEN="${TMP_TOKEN}x" AWS_ENDPOINT_URL="http://127.0.0.1:$MOTO" \
	"$QUASH_ASAN" info --retry-seconds 1 "$S3"

# Files named by AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE, not ~/.aws:
# there, every profile has keys the server refuses and a dead endpoint.
printf '[default]\naws_access_key_id = AKIANOBODY\naws_secret_access_key = nothing\n[cfg]\naws_access_key_id = AKIANOBODY\naws_secret_access_key = nothing\n' \
	>"$HOME/.aws/credentials"
printf '[default]\nendpoint_url = http://127.0.0.1:%s\n[profile cfg]\nregion = us-east-1\nendpoint_url = http://127.0.0.1:%s\n' \
	"$DEAD" "$DEAD" >"$HOME/.aws/config"
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n' \
	"$TMP_KEY" "$TMP_SECRET" "$TMP_TOKEN" >"$W/credentials"
printf '[profile cfg]\nregion = eu-test-1\nendpoint_url = http://127.0.0.1:%s\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
	"$CAPS3" "$USER_KEY" "$USER_SECRET" >"$W/config"
check "AWS_SHARED_CREDENTIALS_FILE: keys and session token from that file" \
	cat_eq "$S3" AWS_SHARED_CREDENTIALS_FILE="$W/credentials" AWS_ENDPOINT_URL="http://127.0.0.1:$MOTO"
: >"$W/caps3.log"
check "AWS_CONFIG_FILE: a profile's keys and endpoint_url from that file" \
	cat_eq "$S3" AWS_CONFIG_FILE="$W/config" AWS_SHARED_CREDENTIALS_FILE="$W/none" AWS_PROFILE=cfg
check "AWS_CONFIG_FILE: requests are signed for the profile's region" \
	capjson "$W/caps3.log" "R and all('/eu-test-1/s3/aws4_request' in r['headers']['authorization'] for r in R)"

# --region is what the request is signed for, over AWS_REGION.
: >"$W/caps3.log"
check "--region: read with the option's region, AWS_REGION set too" \
	cat_eq "$S3" AWS_ACCESS_KEY_ID="$USER_KEY" AWS_SECRET_ACCESS_KEY="$USER_SECRET" AWS_REGION=xx-env-1 \
	AWS_ENDPOINT_URL="http://127.0.0.1:$CAPS3" -- --region eu-opt-2
check "--region: requests are signed for the option's region" \
	capjson "$W/caps3.log" "R and all('/eu-opt-2/s3/aws4_request' in r['headers']['authorization'] for r in R)"

# The order the docs give: AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL;
# AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1.
USERENV="AWS_ACCESS_KEY_ID=$USER_KEY AWS_SECRET_ACCESS_KEY=$USER_SECRET"
: >"$W/caps3.log"
check "AWS_ENDPOINT_URL_S3: used before AWS_ENDPOINT_URL" \
	cat_eq "$S3" $USERENV AWS_ENDPOINT_URL_S3="http://127.0.0.1:$CAPS3" AWS_ENDPOINT_URL="http://127.0.0.1:$DEAD"
check "region: us-east-1 when nothing names one" \
	capjson "$W/caps3.log" "R and all('/us-east-1/s3/aws4_request' in r['headers']['authorization'] for r in R)"
EP="AWS_ENDPOINT_URL=http://127.0.0.1:$CAPS3"
regions_seen() { python3 -c 'import json,sys; print(" ".join(sorted({json.loads(l)["headers"]["authorization"].split("/")[2] for l in open(sys.argv[1])})))' "$W/caps3.log"; }
: >"$W/caps3.log"
cat_eq "$S3" $USERENV $EP AWS_REGION=xx-env-1 AWS_DEFAULT_REGION=xx-default-2 AWS_CONFIG_FILE="$W/config" AWS_PROFILE=cfg
check "region: AWS_REGION before AWS_DEFAULT_REGION and the profile's" test "$(regions_seen)" = xx-env-1
: >"$W/caps3.log"
cat_eq "$S3" $USERENV $EP AWS_DEFAULT_REGION=xx-default-2 AWS_CONFIG_FILE="$W/config" AWS_PROFILE=cfg
check "region: AWS_DEFAULT_REGION before the profile's" test "$(regions_seen)" = xx-default-2

# With no endpoint, the profile's region names the AWS host; the proxy sees
# which host is asked for and refuses the tunnel (nothing here leaves the machine).
printf '[default]\nregion = eu-test-3\n' >"$W/config2"
: >"$W/cap.log"
check_fails "region: the profile's region names the AWS host (through https_proxy)" 1 \
	"^quash: $S3: CONNECT tunnel failed, response 403" \
	env AWS_CONFIG_FILE="$W/config2" AWS_SHARED_CREDENTIALS_FILE="$W/credentials" https_proxy="http://127.0.0.1:$CAP" \
	"$QUASH_ASAN" info --retry-seconds 1 "$S3"
check "region: the tunnel asked for is quash-sts.s3.eu-test-3.amazonaws.com:443" \
	capjson "$W/cap.log" "R and all(r['method'] == 'CONNECT' and r['target'] == 'quash-sts.s3.eu-test-3.amazonaws.com:443' for r in R)"

# Certificates: AWS_CA_BUNDLE for S3 (moto behind nginx TLS) and for S3 only;
# SSL_CERT_DIR, a hashed directory, for any https:// image.
S3ENV="AWS_ACCESS_KEY_ID=$USER_KEY AWS_SECRET_ACCESS_KEY=$USER_SECRET AWS_ENDPOINT_URL=https://127.0.0.1:$S3TLS"
check "AWS_CA_BUNDLE: S3 over HTTPS with the test CA" cat_eq "$S3" $S3ENV AWS_CA_BUNDLE="$W/ca/ca.pem"
check_fails "AWS_CA_BUNDLE: without it the S3 endpoint's certificate is refused" 1 "^quash: $S3: .*certificate" \
	env $S3ENV "$QUASH_ASAN" info --retry-seconds 1 "$S3"
TLSURL=https://127.0.0.1:$TLS/image.sqfs
check_fails "AWS_CA_BUNDLE: not used for an https:// image" 1 "^quash: $TLSURL: .*certificate" \
	env AWS_CA_BUNDLE="$W/ca/ca.pem" "$QUASH_ASAN" info --retry-seconds 1 "$TLSURL"
mkdir -p "$W/certdir" && cp "$W/ca/ca.pem" "$W/certdir/" && openssl rehash "$W/certdir"
check "SSL_CERT_DIR: an https:// image with the test CA from a hashed directory" \
	cat_eq "$TLSURL" SSL_CERT_DIR="$W/certdir"

# Proxies from the environment.  The image's host does not resolve: only the
# proxy reaches it (https:// through a CONNECT tunnel).
: >"$W/cap.log"
check "http_proxy: an image on a host only the proxy reaches" \
	cat_eq http://origin.quash.invalid/image.sqfs http_proxy="http://127.0.0.1:$CAP"
check "http_proxy: the proxy saw the absolute URL" \
	capjson "$W/cap.log" "R and all(r['target'] == 'http://origin.quash.invalid/image.sqfs' for r in R)"
: >"$W/cap.log"
check "ALL_PROXY: the same, from ALL_PROXY" \
	cat_eq http://origin.quash.invalid/image.sqfs ALL_PROXY="http://127.0.0.1:$CAP"
check "ALL_PROXY: the proxy saw the absolute URL" \
	capjson "$W/cap.log" "R and all(r['target'] == 'http://origin.quash.invalid/image.sqfs' for r in R)"
: >"$W/cap.log"
check "https_proxy: an https:// image on a host only the proxy reaches, through a CONNECT tunnel" \
	cat_eq "https://origin.quash.invalid:$TLS/image.sqfs" https_proxy="http://127.0.0.1:$CAP" CURL_CA_BUNDLE="$W/ca/ca.pem"
check "https_proxy: the proxy saw CONNECT to the image's host and port" \
	capjson "$W/cap.log" "R and all(r['method'] == 'CONNECT' and r['target'] == 'origin.quash.invalid:$TLS' for r in R)"

# Redirects: plain HTTP follows 301 and 302, five in a row at most; the
# URL's credentials do not go to another origin; a signed S3 request is
# never sent on.
U=http://127.0.0.1:$HTTP
check "redirect: 301 is followed" cat_eq "$U/r301/image.sqfs"
check "redirect: 302 is followed" cat_eq "$U/r302/image.sqfs"
check "redirect: a chain of 5 is followed" cat_eq "$U/hop4/image.sqfs"
check_fails "redirect: a chain of 6 is an error" 1 "^quash: $U/hop5/image.sqfs: .*Maximum \(5\) redirects followed" \
	"$QUASH_ASAN" info --retry-seconds 1 "$U/hop5/image.sqfs"
: >"$W/cap.log"
check "redirect: to another origin, the bytes match" cat_eq "http://qu:sekrit@127.0.0.1:$REDIR/image.sqfs"
check "redirect: the URL's credentials are not sent to the other origin" \
	capjson "$W/cap.log" "R and not any('authorization' in r['headers'] for r in R)"
: >"$W/cap.log"
check_fails "redirect: an S3 endpoint that redirects is an error" 1 "^quash: $S3: HTTP 301" \
	env AWS_ACCESS_KEY_ID="$USER_KEY" AWS_SECRET_ACCESS_KEY="$USER_SECRET" \
	"$QUASH_ASAN" info --retry-seconds 1 --endpoint "http://127.0.0.1:$REDIR" "$S3"
check "redirect: the signed request is not sent to where it points" test ! -s "$W/cap.log"

# No ETag (nginx: etag off): reads carry If-Unmodified-Since with the
# Last-Modified seen at open, and the server's 412 says the object changed.
cp "$IMG" "$W/www/noetag/changing.sqfs"
touch -d @1700000000 "$W/www/noetag/changing.sqfs"
cp "$W/www/other.sqfs" "$W/newer" && touch -d @1700000100 "$W/newer"
: >"$W/cap.log"
check "If-Unmodified-Since: a replaced object fails later reads with ESTALE" \
	$REMOTE_READ -c 65536 -E 116 -x "mv '$W/newer' '$W/www/noetag/changing.sqfs'" \
	"http://127.0.0.1:$CAP/noetag/changing.sqfs" "$IMG"
check "If-Unmodified-Since: sent on reads, no If-Match, and the server answered 412" \
	capjson "$W/cap.log" "len(R) > 2 and all('if-match' not in r['headers'] for r in R) and
		all(r['headers'].get('if-unmodified-since') == 'Tue, 14 Nov 2023 22:13:20 GMT' for r in R[1:]) and
		any(r['status'] == 412 for r in R)"

# An error with a 256 MiB body: quash keeps 1 KiB and hangs up, so nginx
# gets to send no more than the socket buffers hold.
check_fails "error body: a 404 with a huge body is a 404 at once" 1 "^quash: $U/errbody/none.sqfs: not found: HTTP 404$" \
	"$QUASH_ASAN" info --retry-seconds 1 "$U/errbody/none.sqfs"
for i in $(seq 50); do [ -s "$W/nginx/errbody.log" ] && break; sleep 0.1; done
check "error body: nginx sent under 32 MiB of the 256 MiB" \
	awk '{ n++; if ($10 + 0 >= 33554432) bad = 1 } END { exit !(n == 1 && !bad) }' "$W/nginx/errbody.log"

# --fallback: used while the image's server refuses or answers 5xx, unused
# while it answers, and another version there is an error, never data.
: >"$W/cap.log"
check "--fallback: unused while the image's server answers" \
	cat_eq "$U/image.sqfs" -- --fallback "http://127.0.0.1:$CAP/image.sqfs"
check "--fallback: no request went to it" test ! -s "$W/cap.log"
check "--fallback: read from it while the server refuses connections" \
	cat_eq "http://127.0.0.1:$DEAD/image.sqfs" -- --retry-seconds 5 --fallback "$U/image.sqfs"
: >"$W/caps3.log"
check "--fallback: an s3:// fallback, signed with the environment's keys" \
	cat_eq "http://127.0.0.1:$DEAD/image.sqfs" $USERENV AWS_ENDPOINT_URL="http://127.0.0.1:$CAPS3" \
	-- --retry-seconds 5 --fallback "$S3"
check "--fallback: every request to the s3:// fallback was signed" \
	capjson "$W/caps3.log" "R and all('Credential=$USER_KEY/' in r['headers'].get('authorization', '') for r in R)"
start_faultproxy "$FP" "$U" always:503 --skip 0
check "--fallback: read from it while the server answers 503" \
	cat_eq "http://127.0.0.1:$FP/image.sqfs" -- --fallback "$U/image.sqfs"
stop_pid "$PROXY_PID"
start_faultproxy "$FP" "$U" always:503 --skip 2
check_fails "--fallback: another version there is an error" 1 \
	"^quash: http://127\.0\.0\.1:$FP/image\.sqfs: f3: .*the fallback $U/other\.sqfs has another version of the object" \
	"$QUASH_ASAN" cat --retry-seconds 2 --fallback "$U/other.sqfs" "http://127.0.0.1:$FP/image.sqfs" f3
stop_pid "$PROXY_PID"

# --cache-dir-limit: reading 96 MiB leaves no more than the 64 MiB limit in
# the directory; with a larger limit the same read leaves more.
mkdir -p "$W/big" && head -c $((96 << 20)) /dev/urandom >"$W/big/blob"
mksquashfs "$W/big" "$W/www/big.sqfs" -noappend -noD -quiet -no-progress >/dev/null
dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
CAT_PATH=blob CAT_LOCAL=$W/big/blob check "--cache-dir-limit 64M: the bytes match" \
	cat_eq "$U/big.sqfs" -- --cache-dir "$W/cd64" --cache-dir-limit 64M
check "--cache-dir-limit 64M: the directory holds 64 MiB at most" \
	test "$(dir_bytes "$W/cd64")" -le $((64 << 20)) -a "$(dir_bytes "$W/cd64")" -gt 0
"$QUASH_ASAN" cat --cache-dir "$W/cd1g" --cache-dir-limit 1G "$U/big.sqfs" blob >/dev/null
check "--cache-dir-limit 1G: the same read leaves more than 64 MiB" test "$(dir_bytes "$W/cd1g")" -gt $((64 << 20))

# The mount's spellings: -o cache_dir_limit= and -o region=.  A foreground
# daemon, so that its exit (every cache write done, no sanitizer report) is seen.
# fg_mount MP OPTS IMAGE [ENV...]: mounted in the background ($FG_PID)
fg_mount() {
	local mp=$1 opts=$2 image=$3; shift 3
	mkdir -p "$mp"
	env "$@" "$QUASH_ASAN" mount -f -o "$opts" "$image" "$mp" 2>"$W/fg.err" &
	FG_PID=$!
	wait_mounted "$mp" && QM_MOUNTS+=("f:$mp")
}
fg_umount() {   # fg_umount MP: unmounted, and the daemon exited 0 with no sanitizer report
	fusermount3 -u "$1" && wait "$FG_PID" && ! grep -qE 'Sanitizer|runtime error:' "$W/fg.err"
}
fg_mount "$W/mnt" "cache_dir=$W/cdm,cache_dir_limit=64M" "$U/big.sqfs"
check "-o cache_dir_limit=64M: the mount reads the bytes" cmp -s "$W/mnt/blob" "$W/big/blob"
check "-o cache_dir_limit=64M: the daemon exits cleanly" fg_umount "$W/mnt"
check "-o cache_dir_limit=64M: the directory holds 64 MiB at most" \
	test "$(dir_bytes "$W/cdm")" -le $((64 << 20)) -a "$(dir_bytes "$W/cdm")" -gt 0
: >"$W/caps3.log"
fg_mount "$W/mnt" "region=eu-mnt-1" "$S3" $USERENV AWS_REGION=xx-env-1 AWS_ENDPOINT_URL="http://127.0.0.1:$CAPS3"
check "-o region=: the mount reads the bytes" cmp -s "$W/mnt/f3" "$W/tree/f3"
check "-o region=: the daemon exits cleanly" fg_umount "$W/mnt"
check "-o region=: requests are signed for the option's region" test "$(regions_seen)" = eu-mnt-1
