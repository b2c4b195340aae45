#!/bin/bash
# mount -t fuse.quash and fstab entries.  mount(8) runs mount.fuse3, which
# runs "quash IMAGE MOUNTPOINT -o rw,dev,suid[,OPTIONS]" through /bin/sh with
# PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin (seen with
# a stand-in quash); mount.fuse3 is run here the same way, with our quash
# first on PATH.  Then `quash umount`, and what the kernel holds of a mount's
# settings: its type, its readahead.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

trap unmount_all EXIT
M=$WORK/t-mount-fuse3
rm -rf "$M" && mkdir -p "$M/src" "$M/bin" "$M/q"
head -c 300000 /dev/urandom >"$M/src/data"
echo hi >"$M/src/hi"
mksquashfs "$M/src" "$M/img.sqfs" -comp zstd -noappend -quiet -no-progress >/dev/null
ln -sf "$QUASH" "$M/bin/quash"
kmount "$M/img.sqfs" "$M/k"

PATH=$M/bin:$PATH mount.fuse3 "$M/img.sqfs" "$M/q" -t quash -o rw,dev,suid,cache_size=8M 2>"$M/err"
st=$?
QM_MOUNTS+=("f:$M/q")
check "mount.fuse3 -t quash returns 0" [ $st -eq 0 ]
check "mount.fuse3: mounted and ready on return" compare_trees "$M/k" "$M/q"
check "mount.fuse3: the type is fuse.quash" [ "$(findmnt -n -o FSTYPE "$M/q")" = fuse.quash ]
check "quash umount" "$QUASH" umount "$M/q"
check "quash umount: gone" not_mounted "$M/q"

# An fstab line, through mount -T with our quash on mount's own PATH only if it is installed there.
if [ "$(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh -c 'command -v quash')" ]; then
	echo "$M/img.sqfs $M/q fuse.quash defaults,noauto,cache_size=4M 0 0" >"$M/fstab"
	check "fstab entry: mount -T" mount -T "$M/fstab" "$M/q"
	check "fstab entry: tree" compare_trees "$M/k" "$M/q"
	fusermount3 -u "$M/q"
else
	skip_check "fstab entry: mount -T" "quash is not installed on mount's PATH"
	skip_check "fstab entry: tree" "quash is not installed on mount's PATH"
fi

PATH=$M/bin:$PATH mount.fuse3 "$M/nonexistent.sqfs" "$M/q" -t quash -o rw 2>"$M/err"
st=$?
one_line_naming() {   # one_line_naming STATUS FILE WORD
	[ "$1" -ne 0 ] && [ "$(wc -l <"$2")" -eq 1 ] && grep -q "$3" "$2"
}
check "mount.fuse3 with a missing image fails, one line naming it" one_line_naming $st "$M/err" nonexistent.sqfs

# The mount's readahead: the kernel's 128 KiB unless -o readahead= says
# otherwise (a larger one makes each page fault of an mmap()ed library
# decompress that much more; see QM_DEFAULT_READAHEAD_KB).
bdi_readahead() {   # bdi_readahead DIR: the read_ahead_kb of the mount's bdi
	cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb"
}
qmount "$M/q" "$QUASH" mount "$M/img.sqfs" "$M/q"
check "readahead: the kernel's 128 KiB by default" [ "$(bdi_readahead "$M/q")" = 128 ]
fusermount3 -u "$M/q"
qmount "$M/q" "$QUASH" mount -o readahead=1024 "$M/img.sqfs" "$M/q"
check "readahead=1024: the bdi reads 1 MiB ahead" [ "$(bdi_readahead "$M/q")" = 1024 ]
check "readahead=1024: the tree is the kernel's" compare_trees "$M/k" "$M/q"
fusermount3 -u "$M/q"
