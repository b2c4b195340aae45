#!/bin/bash
# bench/remote.sh - remote images against what users stack today, on one
# machine in one run, servers on 127.0.0.1:
#
#  1. many small files: botocore's data folder as individual S3 objects read
#     through s3fs, against the same files as one image read by quash over S3;
#  2. publishing that folder: `aws s3 cp --recursive` against `quash pack`
#     straight to S3;
#  3. a large tree (the Python installation's lib/python3.X): `ls -lR` and md5
#     of every file from the kernel's mount of a local image, and quash
#     mounts of the local image, of the image over HTTP (nginx) and over S3,
#     and over HTTP and S3 again with verity (the same tree packed with
#     --verity, mounted with -o verity=ROOT), beside the ones without;
#  4. what a user can stack today for an image on an HTTP server: an rclone
#     HTTP mount with squashfuse_ll on the image file inside it, against
#     quash over HTTP, both against the kernel's loop mount of the local
#     image, on bench/mount.sh's tree.sqfs (built here if missing).
#
# Cold means a fresh mount (or process) with the page cache dropped.  Every
# run's output is compared with the local tree, so a fast wrong answer shows.
#   bench/remote.sh [LARGE_TREE]       (needs root: drop_caches, s3fs, mounts)
#   BENCH_ONLY="publish read large rclone" picks sections (default: all).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export QUASH_TOP=$top
QUASH=${QUASH:-$top/build/cli/quash}
W=${BENCH_WORK:-/tmp/quash-bench-remote}
BOTO=$(python3 -c 'import botocore, os; print(os.path.dirname(botocore.__file__))')/data
LARGE=${1:-$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')}
. "$top/tests/lib/remote.sh"

[ -x "$QUASH" ] || { echo "bench/remote.sh: build first ($QUASH)" >&2; exit 1; }
ONLY=${BENCH_ONLY:-publish read large rclone}
want() { case " $ONLY " in *" $1 "*) return 0;; esac; return 1; }
TREE_IMG=${TREE_IMG:-/var/tmp/quash-bench/tree.sqfs}
TREE_SRC=${TREE:-/root/.pyenv/versions/3.11.7}
RCLONE_TIMEOUT=${RCLONE_TIMEOUT:-900}  # seconds a cold md5 through rclone may take
# Each section's peers only: a run of some sections needs no others'.
tools="nginx aws"
want read && tools="$tools s3fs"
want rclone && tools="$tools rclone squashfuse_ll"
for tool in $tools; do
	command -v $tool >/dev/null || { echo "bench/remote.sh: $tool is missing (make test-deps)" >&2; exit 1; }
done
rm -rf "$W" && mkdir -p "$W"/{mnt,www,out}
cleanup() {
	for m in "$W"/mnt/rclone-sq "$W"/mnt/*; do
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	[ -n "${RCLONE_PID:-}" ] && kill "$RCLONE_PID" 2>/dev/null
	remote_cleanup
	"$top/tests/lib/stop-rgw.sh" "$W/rgw"
}
trap cleanup EXIT

S3=$(free_port) HTTP=$(free_port)
export MON_PORT=$(free_port)
EP=$("$top/tests/lib/start-rgw.sh" "$W/rgw" "$S3" 2>"$W/rgw.err") || { cat "$W/rgw.err"; exit 1; }
export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL=$EP
aws --endpoint-url "$EP" s3 mb s3://bench >/dev/null
NGINX_AUTOINDEX=1 start_nginx "$W/nginx" "$W/www" "$HTTP"

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
# secs CMD...: run CMD, print its wall time in seconds
secs() { local t0 t1; t0=$(now); "$@" >/dev/null 2>"$W/last.err" || { echo "FAILED: $* ($(head -c 200 "$W/last.err"))" >&2; }
	t1=$(now); echo "$t1 - $t0" | bc; }
ratio() { echo "scale=1; $1 / $2" | bc; }
# Digest of a tree: md5 of every file, by relative path.
tree_md5() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$2"; }
same() { cmp -s "$1" "$2" && echo same || echo DIFFERENT; }
row() { printf '%-52s %9s s  %s\n' "$1" "$2" "${3:-}"; }
wait_mount() { local i; for i in $(seq 100); do mountpoint -q "$1" && return 0; sleep 0.1; done; return 1; }

tree_md5 "$BOTO" "$W/boto.ref"

if want publish; then
echo "-- publishing botocore/data ($(find "$BOTO" -type f | wc -l) files, $(du -sh "$BOTO" | cut -f1))"
t_cp=$(secs aws --endpoint-url "$EP" s3 cp --quiet --recursive "$BOTO" s3://bench/files/)
t_pack=$(secs "$QUASH" pack --no-progress -q "$BOTO" s3://bench/botocore.sqfs)
row "aws s3 cp --recursive" "$t_cp"
row "quash pack straight to s3://" "$t_pack" "$(ratio "$t_cp" "$t_pack")x faster"
fi

if want read; then
"$QUASH" pack --no-progress -q "$BOTO" s3://bench/botocore.sqfs
aws --endpoint-url "$EP" s3 ls s3://bench/files/ >/dev/null 2>&1 ||
	aws --endpoint-url "$EP" s3 cp --quiet --recursive "$BOTO" s3://bench/files/
echo "-- reading every file of botocore/data"
printf 'quashtest:quashtestsecret\n' >"$W/s3fs.passwd" && chmod 600 "$W/s3fs.passwd"
mkdir -p "$W/mnt/s3fs"
drop_caches
s3fs bench "$W/mnt/s3fs" -o url="$EP" -o use_path_request_style -o passwd_file="$W/s3fs.passwd" \
	-o endpoint=us-east-1
wait_mount "$W/mnt/s3fs"
t_s3fs_cold=$(secs tree_md5 "$W/mnt/s3fs/files" "$W/out/s3fs")
s3fs_ok=$(same "$W/boto.ref" "$W/out/s3fs")
t_s3fs_warm=$(secs tree_md5 "$W/mnt/s3fs/files" "$W/out/s3fs.warm")
fusermount3 -u "$W/mnt/s3fs"

drop_caches
t_qx=$(secs "$QUASH" extract s3://bench/botocore.sqfs -C "$W/out/extract")
tree_md5 "$W/out/extract" "$W/out/extract.md5"
qx_ok=$(same "$W/boto.ref" "$W/out/extract.md5")
mkdir -p "$W/mnt/qs3"
drop_caches
"$QUASH" mount s3://bench/botocore.sqfs "$W/mnt/qs3"
t_qm_cold=$(secs tree_md5 "$W/mnt/qs3" "$W/out/qs3")
qm_ok=$(same "$W/boto.ref" "$W/out/qs3")
t_qm_warm=$(secs tree_md5 "$W/mnt/qs3" "$W/out/qs3.warm")
fusermount3 -u "$W/mnt/qs3"
row "s3fs, objects one by one, cold" "$t_s3fs_cold" "$s3fs_ok"
row "s3fs, warm" "$t_s3fs_warm"
row "quash extract s3://IMAGE, cold" "$t_qx" "$qx_ok, $(ratio "$t_s3fs_cold" "$t_qx")x faster than s3fs cold"
row "quash mount s3://IMAGE, md5 of every file, cold" "$t_qm_cold" \
	"$qm_ok, $(ratio "$t_s3fs_cold" "$t_qm_cold")x faster than s3fs cold"
row "quash mount s3://IMAGE, warm" "$t_qm_warm" "$(ratio "$t_s3fs_warm" "$t_qm_warm")x faster than s3fs warm"
fi

# bench_mount NAME MOUNT-COMMAND...: cold ls -lR, then cold md5 of every file,
# each compared with $REF.ls / $REF.md5 (made from the kernel mount at $REF_MNT);
# unmount_NAME, if defined, unmounts instead of umount/fusermount3.
ls_entries() { sed "s|$1|M|" | awk '!/^total / {print $1, $NF}'; }
unmount() {
	if declare -F "unmount_$1" >/dev/null; then "unmount_$1"; else umount "$2" 2>/dev/null || fusermount3 -u "$2"; fi
}
bench_mount() {
	local name=$1 dir=$2 t_ls t_md5 ok
	shift 2
	drop_caches
	"$@" || { row "$name" "-" "mount failed"; eval "ls_$name=0 md5_$name=0"; return; }
	wait_mount "$dir"
	t_ls=$(secs bash -c "ls -lR '$dir' | sed 1d >'$W/out/$name.ls'")
	ok=$(cmp -s <(sed "s|$dir|M|" "$W/out/$name.ls") <(sed "s|$REF_MNT|M|" "$REF.ls") && echo same)
	# squashfuse_ll shows directories with size 0 and other totals: then compare modes and names.
	[ -n "$ok" ] || ok=$(cmp -s <(ls_entries "$dir" <"$W/out/$name.ls") <(ls_entries "$REF_MNT" <"$REF.ls") &&
		echo "same modes and names (sizes differ)" || echo DIFFERENT)
	unmount "$name" "$dir"
	drop_caches
	"$@"
	wait_mount "$dir"
	t_md5=$(secs timeout "${MD5_TIMEOUT:-3600}" \
		bash -c "$(declare -f tree_md5); tree_md5 '$dir' '$W/out/$name.md5'")
	unmount "$name" "$dir"
	eval "ls_$name=$t_ls md5_$name=$t_md5"
	row "$name: ls -lR, cold" "$t_ls" "$ok"
	row "$name: md5 of every file, cold" "$t_md5" "$(same "$REF.md5" "$W/out/$name.md5")"
}

if want large; then
echo "-- large tree: $LARGE ($(find "$LARGE" -type f | wc -l) files, $(du -sh "$LARGE" | cut -f1))"
"$QUASH" pack --no-progress -q "$LARGE" "$W/www/large.sqfs"
"$QUASH" pack --no-progress -q "$LARGE" s3://bench/large.sqfs
# The same image with its dm-verity tree appended; the squashfs part is byte-identical.
vroot=$("$QUASH" pack --no-progress -q --verity "$LARGE" "$W/www/large.verity.sqfs" | awk '/^Root hash:/ { print $3 }')
cmp -s -n "$(stat -c %s "$W/www/large.sqfs")" "$W/www/large.sqfs" "$W/www/large.verity.sqfs" ||
	echo "bench/remote.sh: the --verity image's squashfs part differs from the image without" >&2
aws --endpoint-url "$EP" s3 cp --quiet "$W/www/large.verity.sqfs" s3://bench/large.verity.sqfs
mkdir -p "$W/mnt/kernel" "$W/mnt/local" "$W/mnt/http" "$W/mnt/s3"
(cd "$W/www" && mount -t squashfs -o loop,ro large.sqfs "$W/mnt/kernel")
tree_md5 "$W/mnt/kernel" "$W/large.md5"
ls -lR "$W/mnt/kernel" | sed 1d >"$W/large.ls"
umount "$W/mnt/kernel"
REF=$W/large REF_MNT=$W/mnt/kernel
bench_mount kernel "$W/mnt/kernel" mount -t squashfs -o loop,ro "$W/www/large.sqfs" "$W/mnt/kernel"
bench_mount local "$W/mnt/local" "$QUASH" mount "$W/www/large.sqfs" "$W/mnt/local"
bench_mount http "$W/mnt/http" "$QUASH" mount "http://127.0.0.1:$HTTP/large.sqfs" "$W/mnt/http"
bench_mount http_verity "$W/mnt/http" "$QUASH" mount -o verity="$vroot" \
	"http://127.0.0.1:$HTTP/large.verity.sqfs" "$W/mnt/http"
bench_mount s3 "$W/mnt/s3" "$QUASH" mount s3://bench/large.sqfs "$W/mnt/s3"
bench_mount s3_verity "$W/mnt/s3" "$QUASH" mount -o verity="$vroot" s3://bench/large.verity.sqfs "$W/mnt/s3"
for n in local http http_verity s3 s3_verity; do
	eval "l=\$ls_$n m=\$md5_$n"
	row "$n / kernel-local: ls -lR, md5" "" "$(ratio "$l" "$ls_kernel")x, $(ratio "$m" "$md5_kernel")x"
done
for n in http s3; do
	eval "l=\$ls_$n m=\$md5_$n lv=\$ls_${n}_verity mv=\$md5_${n}_verity"
	row "${n}_verity / $n: ls -lR, md5" "" "$(echo "scale=2; $lv / $l" | bc)x, $(echo "scale=2; $mv / $m" | bc)x"
done
fi

if want rclone; then
# The image file as rclone shows it from the HTTP server, squashfuse_ll on top.
if [ ! -f "$TREE_IMG" ]; then
	mkdir -p "$(dirname "$TREE_IMG")"
	mksquashfs "$TREE_SRC" "$TREE_IMG" -comp zstd -b 128K -noappend -quiet -no-progress
fi
ln -sf "$TREE_IMG" "$W/www/tree.sqfs"
echo "-- rclone HTTP mount + squashfuse_ll: $TREE_IMG ($(du -h "$TREE_IMG" | cut -f1), from $TREE_SRC)"
mkdir -p "$W/mnt/kernel" "$W/mnt/rclone" "$W/mnt/rclone-sq" "$W/mnt/qhttp"
mount -t squashfs -o loop,ro "$TREE_IMG" "$W/mnt/kernel"
tree_md5 "$W/mnt/kernel" "$W/tree.md5"
ls -lR "$W/mnt/kernel" | sed 1d >"$W/tree.ls"
umount "$W/mnt/kernel"
REF=$W/tree REF_MNT=$W/mnt/kernel
mount_rclone_stack() {
	rclone mount :http: "$W/mnt/rclone" --http-url "http://127.0.0.1:$HTTP/" --read-only \
		--cache-dir "$W/rclone-cache" ${RCLONE_OPTS:-} 2>"$W/rclone.err" &
	RCLONE_PID=$!
	wait_mount "$W/mnt/rclone" && squashfuse_ll "$W/mnt/rclone/tree.sqfs" "$W/mnt/rclone-sq" && return 0
	unmount_rclone
	return 1
}
unmount_rclone() {
	mountpoint -q "$W/mnt/rclone-sq" && fusermount3 -u "$W/mnt/rclone-sq"
	fusermount3 -u "$W/mnt/rclone"
	wait "$RCLONE_PID" 2>/dev/null
	RCLONE_PID=
}
bench_mount kernel2 "$W/mnt/kernel" mount -t squashfs -o loop,ro "$TREE_IMG" "$W/mnt/kernel"
MD5_TIMEOUT=$RCLONE_TIMEOUT bench_mount rclone "$W/mnt/rclone-sq" mount_rclone_stack
bench_mount qhttp "$W/mnt/qhttp" "$QUASH" mount "http://127.0.0.1:$HTTP/tree.sqfs" "$W/mnt/qhttp"
for n in rclone qhttp; do
	eval "l=\$ls_$n m=\$md5_$n"
	row "$n / kernel-local: ls -lR, md5" "" "$(ratio "$l" "$ls_kernel2")x, $(ratio "$m" "$md5_kernel2")x"
done
fi
