#!/bin/bash
# t-remote-catalog.sh - quash mount --catalog over remote sources: nginx's
# JSON directory listing, a text index file, and an S3 prefix on Ceph RGW.
# Each image reads back equal to its local file; names are listed without
# opening any image; a new object appears after `quash catalog refresh`; with
# the server stopped, an image already open keeps serving what was read; a
# killed mount server is replaced and every file keeps its inode number.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/mount.sh"

W=$WORK/t-remote-catalog
rm -rf "$W" && mkdir -p "$W/www/images/team" "$W/src"
S3=$(free_port) HTTP=$(free_port)
export MON_PORT=$(free_port)
trap 'unmount_all; remote_cleanup; "$QUASH_TOP/tests/lib/stop-rgw.sh" "$W/rgw"' EXIT

for i in 1 2 3 4 5; do
	mkdir -p "$W/src/t$i/bin"
	echo "tool $i" >"$W/src/t$i/bin/tool"
	head -c $((i * 200000)) /dev/urandom >"$W/src/t$i/data"
	"$QUASH" pack -q --no-progress "$W/src/t$i" "$W/img$i.sqfs"
done
cp "$W/img1.sqfs" "$W/img2.sqfs" "$W/img3.sqfs" "$W/www/images/"
cp "$W/img4.sqfs" "$W/www/images/team/"
echo "readme" >"$W/www/images/README"
printf '# images\nimg1.sqfs\nteam/img4.sqfs 12345\n\nimg3.sqfs\n' >"$W/www/images/index.txt"
# Aliases: one, a chain, one in a subdirectory, a loop, a dangling one.
printf '%s\n' img1.sqfs team/img4.sqfs 'latest.sqfs -> team/img4.sqfs' 'stable.sqfs  ->  latest.sqfs' \
	'team/cur -> img1.sqfs' 'loop1.sqfs -> loop2.sqfs' 'loop2.sqfs -> loop1.sqfs' 'gone.sqfs -> nothing.sqfs' \
	>"$W/www/images/aliases.txt"
printf 'img1.sqfs\nhalf.sqfs ->\n' >"$W/www/images/half.txt"

NGINX_EXTRA="location /images/ { autoindex on; autoindex_format json; }" \
	start_nginx "$W/nginx" "$W/www" "$HTTP" || { not_ok "nginx starts"; exit 1; }

status() { cat "$1/.quash-catalog"; }
open_images() { status "$1" | awk -F'\t' '!/^#/ && $2 == "open"' | wc -l; }
# opens_nothing MOUNT N: the status file lists N images, every one closed
opens_nothing() {
	[ "$(open_images "$1")" = 0 ] && [ "$(status "$1" | awk -F'\t' '!/^#/ && $2 == "closed"' | wc -l)" = "$2" ]
}

# nginx's JSON listing, recursively.
M=$W/mp-http
qmount "$M" "$QUASH_ASAN" mount --catalog -o cache_dir="$W/cache-http",log="$W/http.log" "http://127.0.0.1:$HTTP/images/" "$M" \
	2>"$W/http.err"
check "http: the catalog mounts from nginx's JSON listing" is_mounted "$M"
listed_nested() { [ "$(ls "$M" | tr '\n' ' ')" = "img1 img2 img3 team " ] && [ "$(ls "$M/team")" = img4 ]; }
check "http: every image is listed, subdirectories nested ($(ls "$M" | tr '\n' ' '))" listed_nested
stat "$M/img2" "$M/team/img4" >/dev/null
check "http: listing opens nothing (4 images, all closed)" opens_nothing "$M" 4
check "http: an image's file reads right" cmp -s "$M/img2/data" "$W/src/t2/data"
check "http: a nested image reads right" [ "$(cat "$M/team/img4/bin/tool")" = "tool 4" ]
cp "$W/img5.sqfs" "$W/www/images/"
check "http: quash catalog refresh finds a new image" bash -c \
	"'$QUASH' catalog refresh '$M' >/dev/null && cmp -s '$M/img5/data' '$W/src/t5/data'"
check "http: quash catalog ls lists the images, which are open" bash -c \
	"'$QUASH' catalog ls '$M' | grep -E '^img2[[:space:]]+open'"
# A killed server is replaced (mount/holder.h): img5 came after the mount, so its node ids are the state file's.
ino4=$(stat -c %i "$M/team/img4/bin/tool") ino5=$(stat -c %i "$M/img5/data")
pkill -KILL -f "mount-server $M\$"
echo 3 >/proc/sys/vm/drop_caches        # the new server, not the kernel's caches, answers what follows
check "http: a killed server is replaced; files read on and keep their inode numbers" bash -c \
	"cmp -s '$M/img2/data' '$W/src/t2/data' && cmp -s '$M/img5/data' '$W/src/t5/data' &&
	 [ \$(stat -c %i '$M/team/img4/bin/tool') = $ino4 ] && [ \$(stat -c %i '$M/img5/data') = $ino5 ] &&
	 grep -q 'took over' '$W/http.log'"
cat "$M/img1/bin/tool" >/dev/null
stop_pid "$NGINX_PID"
# The kernel forgets the file's pages and dentries: the daemon itself must answer, from what it fetched.
echo 3 >/proc/sys/vm/drop_caches
check "http: with the server stopped, an open image keeps serving what it read" \
	[ "$(cat "$M/img1/bin/tool")" = "tool 1" ]
check "http: and the listing stays" [ "$(ls "$M" | wc -l)" = 5 ]
fusermount3 -u "$M"
NGINX_EXTRA="location /images/ { autoindex on; autoindex_format json; }" \
	start_nginx "$W/nginx" "$W/www" "$HTTP"

# A text index file.
M=$W/mp-index
qmount "$M" "$QUASH" mount --catalog -o chunk_size=64K,remote_cache=256K \
	"http://127.0.0.1:$HTTP/images/index.txt" "$M"
check "index: the names of the index file ($(ls -R "$M" | tr '\n' ' '))" \
	[ "$(ls "$M" | tr '\n' ' ')" = "img1 img3 team " ]
check "index: an image reads right" cmp -s "$M/team/img4/data" "$W/src/t4/data"
others_right() { cmp -s "$M/img3/data" "$W/src/t3/data" && cmp -s "$M/img1/data" "$W/src/t1/data"; }
check "index: and the others" others_right
read -r used limit < <(status "$M" | sed -n 's/.*remote chunks \([0-9]*\) of \([0-9]*\) bytes.*/\1 \2/p')
one_bound() { [ -n "$used" ] && [ "$limit" = 262144 ] && [ "$used" -le "$limit" ] && [ "$used" -gt 0 ]; }
check "index: the images' chunks in memory share one bound ($used of $limit bytes after 1.6 MB read)" one_bound
fusermount3 -u "$M"

# A text index with aliases: symlinks the kernel follows to the one image.
M=$W/mp-alias
qmount "$M" "$QUASH_ASAN" mount --catalog "http://127.0.0.1:$HTTP/images/aliases.txt" "$M" 2>"$W/alias.err"
check "alias: NAME -> TARGET is a symlink to the target's name" [ "$(readlink "$M/latest")" = team/img4 ]
check "alias: a chain of aliases ends at its image" [ "$(readlink "$M/stable")" = team/img4 ]
check "alias: in a subdirectory, the target's name is relative" [ "$(readlink "$M/team/cur")" = ../img1 ]
check "alias: the kernel follows it to the image's bytes" cmp -s "$M/stable/data" "$W/src/t4/data"
not_served() { "$QUASH" catalog ls "$M" | grep -E "^# not served: $1" | grep -qE "$2"; }
check "alias: a loop is not served, and catalog ls says why" not_served loop1.sqfs "more than 8 aliases"
check "alias: a dangling alias is not served" not_served gone.sqfs "no image"
check "alias: only the images and the served aliases are listed ($(ls "$M" | tr '\n' ' '))" \
	[ "$(ls "$M" | tr '\n' ' ')" = "img1 latest stable team " ]
check "alias: quash catalog list prints NAME -> TARGET" bash -c \
	"'$QUASH' catalog list 'http://127.0.0.1:$HTTP/images/aliases.txt' | grep -qx 'stable.sqfs -> latest.sqfs'"
check_fails "alias: a line with an arrow and no target is refused, naming the line" 1 \
	"^quash: catalog list: http://127.0.0.1:$HTTP/images/half.txt: line 2: expected NAME -> TARGET" \
	"$QUASH_ASAN" catalog list "http://127.0.0.1:$HTTP/images/half.txt"
fusermount3 -u "$M"

# An S3 prefix, listed with ListObjectsV2.
EP=$("$QUASH_TOP/tests/lib/start-rgw.sh" "$W/rgw" "$S3" 2>"$W/rgw.err") || { not_ok "rgw starts" "$(tail -3 "$W/rgw.err")"; exit 1; }
export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL=$EP HOME=$W/home
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE
mkdir -p "$HOME"
aws_() { aws --endpoint-url "$EP" "$@"; }
aws_ s3 mb s3://quash-catalog >/dev/null
for i in 1 2 3; do aws_ s3 cp --only-show-errors "$W/img$i.sqfs" "s3://quash-catalog/sw/v$i.sqfs"; done
aws_ s3 cp --only-show-errors "$W/img4.sqfs" "s3://quash-catalog/sw/lib/x.squashfs"
aws_ s3 cp --only-show-errors "$W/img5.sqfs" "s3://quash-catalog/other/no.sqfs"
M=$W/mp-s3
qmount "$M" "$QUASH_ASAN" mount --catalog s3://quash-catalog/sw/ "$M" 2>"$W/s3.err"
check "s3: the catalog mounts from a prefix ($(ls "$M" | tr '\n' ' '))" \
	[ "$(ls "$M" | tr '\n' ' ')" = "lib v1 v2 v3 " ]
check "s3: listing opens nothing (4 images, all closed)" opens_nothing "$M" 4
check "s3: an image reads right" cmp -s "$M/v3/data" "$W/src/t3/data"
check "s3: a nested one too" [ "$(cat "$M/lib/x/bin/tool")" = "tool 4" ]
aws_ s3 cp --only-show-errors "$W/img5.sqfs" "s3://quash-catalog/sw/v5.sqfs"
# A lookup that misses never lists in the request's thread: it asks the
# watcher, and the name is there once that listing is merged (the kernel
# keeps the miss for 1 s).
found_after_miss() {
	local i
	sleep 2.1
	stat "$M/v5" >/dev/null 2>&1 && return 1       # found before any listing: nothing asked
	for i in $(seq 50); do
		cmp -s "$M/v5/data" "$W/src/t5/data" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
check "s3: a new object is found soon after its name is looked up (the miss asks for a listing)" found_after_miss
aws_ s3 cp --only-show-errors "$W/img1.sqfs" "s3://quash-catalog/sw/v3.sqfs"
"$QUASH" catalog refresh "$M" >/dev/null
check "s3: a replaced object is a new version for new lookups" [ "$(cat "$M/v3/bin/tool")" = "tool 1" ]
fusermount3 -u "$M"
check "s3: no secret in the mount table or messages" \
	bash -c "! grep -q quashtestsecret /proc/mounts '$W/s3.err'"
