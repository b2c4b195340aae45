#!/bin/bash
# quash as a drop-in squashfuse_ll: the exact command lines Apptainer and
# SingularityCE run, SIF files (found with no offset, or mounted with the
# partition's offset), an image passed as /proc/self/fd/3, notify_pipe=,
# timeout=, subdir=, uid=/gid= and --help.
#
#   Apptainer internal/pkg/image/driver/imagedriver.go (fuseapps driver):
#     squashfuse_ll -f -o "offset=N" /proc/self/fd/3 TARGET   (or -o "" with no offset)
#     squashfuse -f -o "uid=U,gid=G,offset=N" SOURCE TARGET   (when only squashfuse is found)
#     then polls /proc/self/mountinfo, stops with fusermount -u and SIGKILL
#   Apptainer internal/pkg/image/driver/squashfuse/driver.go:
#     squashfuse -f -o "offset=N" SOURCE TARGET
#   SingularityCE internal/pkg/util/fs/fuse/fuse_mount_linux.go:
#     squashfuse_ll -o uid=U,gid=G,ro[,dev][,suid][,allow_other],offset=N SOURCE TARGET
#     and expects the mount to be ready when the command exits 0
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

trap unmount_all EXIT
M=$WORK/t-mount-squashfuse
rm -rf "$M" && mkdir -p "$M/src/etc" "$M/bin"
echo container >"$M/src/etc/hostname"
head -c 500000 /dev/urandom >"$M/src/etc/data"
mkdir -p "$M/src/opt/app" && echo inner >"$M/src/opt/app/file"
chown -R 1000:1000 "$M/src/opt"
mksquashfs "$M/src" "$M/img.sqfs" -comp gzip -noappend -quiet -no-progress >/dev/null
ln -sf "$QUASH" "$M/bin/squashfuse_ll"
ln -sf "$QUASH" "$M/bin/squashfuse"
SQFUSE_LL=$M/bin/squashfuse_ll
SQFUSE=$M/bin/squashfuse

# A SIF (sylabs/sif pkg/sif layout): 128-byte header, 48 descriptors of 585 bytes,
# a definition file object, then the squashfs partition at SIF_OFFSET.
SIF_OFFSET=65536
python3 "$QUASH_TOP/tests/lib/make-sif.py" "$M/img.sqfs" "$M/img.sif" "$SIF_OFFSET"
kmount "$M/img.sqfs" "$M/k"

same_as_kernel() {   # same_as_kernel DIR [uid gid]: content and listing, owners as given
	cmp -s "$M/k/etc/data" "$1/etc/data" && cmp -s "$M/k/etc/hostname" "$1/etc/hostname" &&
		[ "$(ls "$M/k/opt/app")" = "$(ls "$1/opt/app")" ] &&
		{ [ $# -lt 3 ] || [ "$(stat -c %u:%g "$1/etc/hostname" "$1/opt/app/file" | sort -u)" = "$2:$3" ]; }
}

# Foreground drop-ins the way Apptainer runs them: started in the background, polled for.
fg_case() {   # fg_case NAME TARGET [uid gid] -- COMMAND...
	local name=$1 target=$2 uid= gid= pid st log
	shift 2
	log=$M/$(basename "$target").log
	if [ "$1" != -- ]; then uid=$1 gid=$2; shift 2; fi
	shift
	mkdir -p "$target"
	"$@" 2>"$log" &
	pid=$!
	QM_MOUNTS+=("f:$target")
	if wait_mounted "$target"; then
		check "$name" same_as_kernel "$target" $uid $gid
	else
		not_ok "$name" "not mounted: $(head -c 300 "$log")"
	fi
	fusermount3 -u "$target"
	wait $pid
	st=$?
	check "$name: exits 0 after fusermount3 -u" [ $st -eq 0 ]
}

exec 3<"$M/img.sif"
fg_case "apptainer fuseapps: SIF on /proc/self/fd/3 with offset" "$M/a1" -- \
	"$SQFUSE_LL" -f -o "offset=$SIF_OFFSET" /proc/self/fd/3 "$M/a1"
exec 3<&-
fg_case "apptainer fuseapps: plain image, empty -o" "$M/a2" -- \
	"$SQFUSE_LL" -f -o "" "$M/img.sqfs" "$M/a2"
fg_case "apptainer fuseapps as squashfuse: uid, gid, offset" "$M/a3" 4321 8765 -- \
	"$SQFUSE" -f -o "uid=4321,gid=8765,offset=$SIF_OFFSET" "$M/img.sif" "$M/a3"
fg_case "apptainer squashfuse driver: offset" "$M/a4" -- \
	"$SQFUSE" -f -o "offset=$SIF_OFFSET" "$M/img.sif" "$M/a4"

# SingularityCE: the command returns once mounted (it daemonizes), ready at once.
sing_case() {   # sing_case NAME OPTIONS
	local target=$M/s-$RANDOM
	mkdir -p "$target"
	if "$SQFUSE_LL" -o "$2" "$M/img.sif" "$target" 2>"$M/sing.log"; then
		QM_MOUNTS+=("f:$target")
		check "$1" same_as_kernel "$target" "$(id -u)" "$(id -g)"
		fusermount3 -u "$target"
	else
		not_ok "$1" "$(head -c 300 "$M/sing.log")"
	fi
}
sing_case "singularityce: uid,gid,ro,offset" "uid=$(id -u),gid=$(id -g),ro,offset=$SIF_OFFSET"
sing_case "singularityce: uid,gid,ro,dev,suid,allow_other,offset" \
	"uid=$(id -u),gid=$(id -g),ro,dev,suid,allow_other,offset=$SIF_OFFSET"

# A SIF with no offset given: its squashfs partition is found.
mkdir -p "$M/sif"
if qmount "$M/sif" "$QUASH" mount "$M/img.sif" "$M/sif"; then
	check "SIF mounted with no offset" same_as_kernel "$M/sif"
	check "SIF: tree equals the kernel's" compare_trees "$M/k" "$M/sif"
	fusermount3 -u "$M/sif"
else
	not_ok "SIF mounted with no offset"
fi

# notify_pipe=: 's' once mounted, 'f' on failure.
mkfifo "$M/pipe"
mkdir -p "$M/n"
"$SQFUSE_LL" -o "notify_pipe=$M/pipe" "$M/img.sqfs" "$M/n" &
got=$(timeout 10 cat "$M/pipe")
QM_MOUNTS+=("f:$M/n")
check "notify_pipe: 's' when mounted" [ "$got" = s ]
check "notify_pipe: mounted when 's' came" is_mounted "$M/n"
fusermount3 -u "$M/n"
wait
"$SQFUSE_LL" -o "notify_pipe=$M/pipe" "$M/nonexistent.sqfs" "$M/n" 2>/dev/null &
got=$(timeout 10 cat "$M/pipe")
check "notify_pipe: 'f' when the mount fails" [ "$got" = f ]
wait

# timeout=: unmounts itself once idle.
mkdir -p "$M/t"
if "$SQFUSE_LL" -o timeout=1 "$M/img.sqfs" "$M/t"; then
	QM_MOUNTS+=("f:$M/t")
	cat "$M/t/etc/hostname" >/dev/null
	for i in $(seq 60); do is_mounted "$M/t" || break; sleep 0.1; done
	check "timeout=1: unmounted when idle" not_mounted "$M/t"
else
	not_ok "timeout=1: mounted"
fi

# timeout= does not unmount while a file is open.
if "$SQFUSE_LL" -o timeout=1 "$M/img.sqfs" "$M/t"; then
	exec 4<"$M/t/etc/hostname"
	sleep 2.5
	check "timeout=1: stays while a file is open" is_mounted "$M/t"
	exec 4<&-
	for i in $(seq 60); do is_mounted "$M/t" || break; sleep 0.1; done
	check "timeout=1: unmounted once the file is closed" not_mounted "$M/t"
fi

# subdir=
mkdir -p "$M/sd"
if qmount "$M/sd" "$SQFUSE_LL" -o subdir=opt/app "$M/img.sqfs" "$M/sd"; then
	check "subdir=opt/app" [ "$(cat "$M/sd/file")" = inner ]
	fusermount3 -u "$M/sd"
else
	not_ok "subdir=opt/app"
fi

check "--help lists uid=" bash -c "'$SQFUSE_LL' --help 2>&1 | grep -q 'uid='"
check "--help lists notify_pipe=" bash -c "'$SQFUSE_LL' --help 2>&1 | grep -q 'notify_pipe='"

# Start-up cost: libcurl and libarchive (with some forty libraries behind
# them) are opened only when a URL or an archive is used (lib/io/lazy_lib.h),
# so a local mount maps neither.  The release binary, as runtimes run it.
check "quash is not linked against libcurl or libarchive" \
	bash -c "! readelf -d '$QUASH_BIN' | grep -E 'NEEDED.*(libcurl|libarchive)'"
mkdir -p "$M/maps"
if qmount "$M/maps" "$QUASH_BIN" mount "$M/img.sqfs" "$M/maps"; then
	cat "$M/maps/etc/hostname" >/dev/null
	pid=$(pgrep -f -n "mount $M/img.sqfs $M/maps")
	check "a local mount loads no libcurl or libarchive" \
		bash -c "[ -n '$pid' ] && ! grep -E 'libcurl|libarchive' /proc/$pid/maps"
	fusermount3 -u "$M/maps"
else
	not_ok "mounted for the library check"
fi

# With both libraries unreadable (an empty file bound over each, in a
# private mount namespace), local images still mount and read, and a URL or
# an archive gets one line naming the missing library and a non-zero exit.
curl_so=$(readlink -f /usr/lib/x86_64-linux-gnu/libcurl.so.4)
archive_so=$(readlink -f /usr/lib/x86_64-linux-gnu/libarchive.so.13)
tar -C "$M/src" -cf "$M/src.tar" .
unshare -m bash -c "mount --bind /dev/null '$curl_so' && mount --bind /dev/null '$archive_so' || exit 9
	'$QUASH_BIN' mount '$M/img.sqfs' '$M/maps' || exit 10
	cat '$M/maps/etc/hostname' >'$M/nolib.hostname'; fusermount3 -u '$M/maps'
	'$QUASH_BIN' info http://127.0.0.1:1/img.sqfs 2>'$M/nolib.url'; echo \$? >'$M/nolib.url.st'
	'$QUASH_BIN' pack -q '$M/src.tar' '$M/nolib.sqfs' 2>'$M/nolib.tar'; echo \$? >'$M/nolib.tar.st'"
check "without libcurl and libarchive: a local image mounts and reads" \
	[ "$(cat "$M/nolib.hostname" 2>/dev/null)" = container ]
check "without libcurl: a URL fails with one line naming libcurl" bash -c \
	"[ \"\$(cat '$M/nolib.url.st')\" = 1 ] && [ \$(wc -l <'$M/nolib.url') = 1 ] && grep -q 'libcurl.so.4' '$M/nolib.url'"
check "without libarchive: an archive fails with one line naming libarchive" bash -c \
	"[ \"\$(cat '$M/nolib.tar.st')\" = 1 ] && [ \$(wc -l <'$M/nolib.tar') = 1 ] && grep -q 'libarchive.so.13' '$M/nolib.tar' && [ ! -e '$M/nolib.sqfs' ]"
