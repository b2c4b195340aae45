#!/bin/bash
# quash mount against the kernel's own squashfs mount of the same image: the
# whole tree (every lstat field, content, symlink targets, xattrs, listings
# in order), statfs, and a clean exit under ASan/UBSan after SIGTERM.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

trap unmount_all EXIT
mount_fixtures || { not_ok "fixtures"; exit 1; }
M=$WORK/t-mount-tree
rm -rf "$M" && mkdir -p "$M"

statfs_fields() {
	python3 -c '
import os, sys
s = os.statvfs(sys.argv[1])
print(s.f_bsize, s.f_frsize, s.f_blocks, s.f_bfree, s.f_bavail, s.f_files, s.f_ffree, s.f_namemax)' "$1"
}

# The kernel has no legacy lzma: those images are checked against unsquashfs's extraction.
compare_extracted() {   # compare_extracted IMAGE MOUNT
	rm -rf "$M/extract"
	unsquashfs -q -n -d "$M/extract" "$1" >/dev/null 2>&1 &&
		QM_COMPARE=extracted compare_trees "$M/extract" "$2"
}

# t-mount-uring runs this file again over io_uring, and there every other
# image: the transport carries the same requests whatever the compressor
# or layout, and the whole matrix has run over /dev/fuse (CI time).
step=1
[ "${QM_TRANSPORT:-}" = uring ] && step=2
for ((mi = 0; mi < ${#MF_IMAGES[@]}; mi += step)); do
	img=${MF_IMAGES[mi]}
	name=$(basename "$img" .sqfs)
	k=$M/k-$name q=$M/q-$name
	if ! qmount "$q" "$QUASH" mount "$img" "$q"; then
		not_ok "$name: quash mount"
		continue
	fi
	if [ "$(unsquashfs -s "$img" | sed -n 's/^Compression //p')" = lzma ]; then
		check "$name: tree equals unsquashfs's extraction" compare_extracted "$img" "$q"
	elif kmount "$img" "$k"; then
		check "$name: tree equals the kernel's" compare_trees "$k" "$q"
		check "$name: statfs equals the kernel's" [ "$(statfs_fields "$k")" = "$(statfs_fields "$q")" ]
		umount "$k"
	else
		not_ok "$name: kernel mount"
	fi
	fusermount3 -u "$q"
done

# The ASan build in the foreground: one image, then SIGTERM must unmount and exit 0 with no report.
img=${MF_IMAGES[0]}
k=$M/asan-k q=$M/asan-q
kmount "$img" "$k"
mkdir -p "$q"
"$QUASH_ASAN" mount -f "$img" "$q" 2>"$M/asan.log" &
pid=$!
QM_MOUNTS+=("f:$q")
if wait_mounted "$q"; then
	check "asan: tree equals the kernel's" compare_trees "$k" "$q"
else
	not_ok "asan: mounted"
fi
kill -TERM $pid
wait $pid
st=$?
check "asan: SIGTERM unmounts" wait_unmounted "$q"
if [ $st -eq 0 ] && ! grep -q Sanitizer "$M/asan.log"; then
	ok "asan: clean exit after SIGTERM"
else
	not_ok "asan: clean exit after SIGTERM" "exit $st: $(head -c 600 "$M/asan.log")"
fi

# trusted.* names are listed only to callers with CAP_SYS_ADMIN, as on the
# kernel's mount: an ordinary user, and root without CAP_SYS_ADMIN, see the
# user.* names only; root sees both.  (getxattr of a trusted.* name is
# refused by the VFS itself before it reaches either file system.)
X=$M/xattr
mkdir -p "$X/tree/dir" && echo data >"$X/tree/file" && ln -s file "$X/tree/link"
for p in file dir link; do
	setfattr -h -n trusted.secret -v "t-$p" "$X/tree/$p" && setfattr -h -n user.plain -v "u-$p" "$X/tree/$p"
done
chmod 755 "$X" "$X/tree"
mksquashfs "$X/tree" "$X/img.sqfs" -noappend -quiet -no-progress >/dev/null
kmount "$X/img.sqfs" "$X/k"
qmount "$X/q" "$QUASH" mount -o allow_other "$X/img.sqfs" "$X/q"
list_names() {   # list_names DIR: the xattr names of file, dir and link, as the caller sees them
	python3 -c '
import os, sys
print(" ".join(p + "=" + ",".join(sorted(os.listxattr(os.path.join(sys.argv[1], p), follow_symlinks=False)))
               for p in ("file", "dir", "link")))' "$1"
}
for who in root nobody root-without-sys-admin; do
	case $who in
	root)   run=() ;;
	nobody) run=(setpriv --reuid=65534 --regid=65534 --clear-groups) ;;
	*)      run=(setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin) ;;
	esac
	kl=$("${run[@]}" bash -c "$(declare -f list_names); list_names $X/k" 2>&1)
	ql=$("${run[@]}" bash -c "$(declare -f list_names); list_names $X/q" 2>&1)
	case $who in
	root) want=trusted.secret ;;
	*)    want=user.plain ;;
	esac
	if [ "$kl" = "$ql" ] && [[ $kl == *"file="*"$want"* ]] && { [ $who = root ] || [[ $kl != *trusted* ]]; }; then
		ok "listxattr as $who equals the kernel's"
	else
		not_ok "listxattr as $who equals the kernel's" "kernel: $kl; quash: $ql"
	fi
done
