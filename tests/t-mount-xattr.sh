#!/bin/bash
# xattr queries on quash mount against the kernel's own squashfs mount of
# the same image, on images Debian's mksquashfs makes with every kind of
# xattr (user.*, trusted.*, security.capability, security.selinux, and POSIX
# ACLs set with setfacl, which mksquashfs drops), without a security.selinux
# label, and without an xattr table (-no-xattrs), with hard links for
# extended file inodes:
#   - every getxattr (length, value, one byte short) and listxattr of every
#     path, name by name over every namespace, as root and as nobody, equals
#     the kernel's answer, but for the one deviation quash-mount(1) documents:
#     security.selinux on an image where no inode carries it is EOPNOTSUPP
#   - `ls -lR` and `getfattr -R -d -m -` print what they print on the kernel's
#   - the queries `ls -lR` makes (strace): one ACL query for the whole mount,
#     as on the kernel's, and one security.selinux query where the image
#     carries no label, one a file where it does
#   - the same image in a catalog gets the kernel's answer, label included
#   - past the bytes of xattrs quash reads to learn whether an image carries
#     a label, security.selinux gets the kernel's answer
#   - the ASan build answers the same with no sanitizer report
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

trap unmount_all EXIT
M=$WORK/t-mount-xattr
rm -rf "$M" && mkdir -p "$M"
PROBE=$(dirname "$0")/lib/xattr-probe.py

# A v2 file capability (cap_net_raw in the permitted and effective sets), as setcap writes it.
CAP=0x0100000200200000000000000000000000000000

make_tree() {   # make_tree DIR LABEL: a small tree with every kind of xattr; LABEL=no: no security.selinux
	local t=$1
	mkdir -p "$t/d/sub" "$t/acl"
	echo data >"$t/f" && echo more >"$t/d/g" && echo x >"$t/acl/file"
	ln "$t/f" "$t/hard"
	ln -s f "$t/l" && mkfifo "$t/p"
	setfattr -n user.a -v 1 "$t/f" &&
		setfattr -n user.big -v "$(head -c 3000 /dev/zero | tr '\0' v)" "$t/d/g" &&
		setfattr -n user.a -v dir "$t/d" &&
		setfattr -n trusted.t -v tv "$t/d" &&
		setfattr -h -n trusted.t -v link "$t/l" &&
		setfattr -n security.capability -v "$CAP" "$t/f" &&
		setfacl -m u:nobody:r "$t/acl/file" &&
		setfacl -d -m u:nobody:rx "$t/acl" || return 1
	if [ "$2" != no ]; then
		setfattr -n security.selinux -v system_u:object_r:etc_t:s0 "$t/d/g" || return 1
	fi
	chmod 755 "$t"
}

if ! command -v setfacl >/dev/null; then
	not_ok "setfacl is installed" "scripts/install-deps.sh installs acl"
	exit 1
fi
umask 022
make_tree "$M/src-all" yes && make_tree "$M/src-nolabel" no || { not_ok "source trees"; exit 1; }
# mksquashfs drops the ACLs (it knows no system.* prefix) and says so.
mksquashfs "$M/src-all" "$M/all.sqfs" -noappend -quiet -no-progress >/dev/null 2>"$M/mksquashfs.err"
mksquashfs "$M/src-nolabel" "$M/nolabel.sqfs" -noappend -quiet -no-progress >/dev/null 2>&1
mksquashfs "$M/src-all" "$M/none.sqfs" -noappend -quiet -no-progress -no-xattrs >/dev/null 2>&1
check "mksquashfs drops the ACLs" grep -q "Unrecognised xattr prefix system.posix_acl_access" "$M/mksquashfs.err"

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# The documented deviation: an image with no label answers EOPNOTSUPP where the kernel says ENODATA.
deviate() {   # deviate FILE: FILE with security.selinux's ENODATA turned into EOPNOTSUPP
	sed -E "s/^(.* 'security\.selinux' (len|get)) ENODATA$/\1 ENOTSUP/" "$1"
}

same() {   # same NAME ORACLE OUTPUT: ok if they are equal, else the first differences
	if cmp -s "$2" "$3"; then
		ok "$1"
	else
		not_ok "$1" "$(diff "$2" "$3" | head -6 | tr '\n' '|')"
	fi
}

# The queries ls -lR makes of the mount: "LGETXATTR GETXATTR" counts.
ls_queries() {   # ls_queries DIR
	(cd "$1" && strace -qq -e trace=lgetxattr,getxattr -o "$M/strace" ls -lR >/dev/null) || return 1
	echo "$(grep -c '^[0-9]* *lgetxattr(' "$M/strace") $(grep -c '^[0-9]* *getxattr(' "$M/strace")"
}

for img in all nolabel none; do
	k=$M/k-$img q=$M/q-$img
	if ! kmount "$M/$img.sqfs" "$k"; then
		not_ok "$img: kernel mount"
		continue
	fi
	if ! qmount "$q" "$QUASH" mount -o allow_other "$M/$img.sqfs" "$q"; then
		not_ok "$img: quash mount"
		continue
	fi
	python3 "$PROBE" "$k" >"$M/$img.k" && python3 "$PROBE" "$q" >"$M/$img.q"
	as_nobody python3 "$PROBE" "$k" >"$M/$img.nobody.k" && as_nobody python3 "$PROBE" "$q" >"$M/$img.nobody.q"
	if [ $img = all ]; then
		same "$img: every query as root equals the kernel's" "$M/$img.k" "$M/$img.q"
		same "$img: every query as nobody equals the kernel's" "$M/$img.nobody.k" "$M/$img.nobody.q"
	else
		deviate "$M/$img.k" >"$M/$img.k.dev" && deviate "$M/$img.nobody.k" >"$M/$img.nobody.k.dev"
		same "$img: every query as root equals the kernel's, security.selinux EOPNOTSUPP" \
			"$M/$img.k.dev" "$M/$img.q"
		same "$img: every query as nobody equals the kernel's, security.selinux EOPNOTSUPP" \
			"$M/$img.nobody.k.dev" "$M/$img.nobody.q"
	fi
	# Both print and exit alike, errors included (getfattr on an image without an xattr table).
	for m in k q; do
		(cd "${!m}" && ls -lR; echo "exit $?") >"$M/$img.ls.$m" 2>&1
		(cd "${!m}" && getfattr -R -d -m - .; echo "exit $?") >"$M/$img.gf.$m" 2>&1
	done
	same "$img: ls -lR prints the kernel's" "$M/$img.ls.k" "$M/$img.ls.q"
	same "$img: getfattr -R -d -m - prints the kernel's" "$M/$img.gf.k" "$M/$img.gf.q"
	kq=$(ls_queries "$k") qq=$(ls_queries "$q")
	# ls asks each entry's label, and ACLs until the first EOPNOTSUPP: once, on both.
	entries=$(cd "$k" && find . -mindepth 1 | wc -l)
	case $img in
	all) want="$entries 1" ;;
	*)   want="1 1" ;;
	esac
	if [ "$kq" = "$entries 1" ] && [ "$qq" = "$want" ]; then
		ok "$img: ls -lR asks quash $want (label, ACL) queries, the kernel $kq"
	else
		not_ok "$img: ls -lR asks quash $want (label, ACL) queries, the kernel $kq" "quash: $qq"
	fi
	fusermount3 -u "$q"
	umount "$k"
done

# A catalog's images share one device, so none of them takes the deviation.
mkdir -p "$M/cat" && cp "$M/nolabel.sqfs" "$M/cat/"
if qmount "$M/q-cat" "$QUASH" mount --catalog "$M/cat" "$M/q-cat" && [ -d "$M/q-cat/nolabel" ]; then
	python3 "$PROBE" "$M/q-cat/nolabel" >"$M/cat.q"
	same "catalog: every query equals the kernel's, security.selinux too" "$M/nolabel.k" "$M/cat.q"
	fusermount3 -u "$M/q-cat"
else
	not_ok "catalog: every query equals the kernel's, security.selinux too" "no catalog mount"
fi

# Past what quash reads to learn whether an image carries a label (4 MiB of
# xattrs), it answers as the kernel: 72 sets of 60,000 bytes, no label.  On
# a tmpfs, which takes values that large (ext4 keeps an inode's in one block).
mkdir -p "$M/src-many"
mount -t tmpfs -o size=32m tmpfs "$M/src-many" && QM_MOUNTS+=("k:$M/src-many")
python3 -c '
import os, sys
for i in range(72):
    p = os.path.join(sys.argv[1], f"f{i:04d}")
    open(p, "w").close()
    os.setxattr(p, "user.v", b"v" * 59990 + b"%010d" % i)' "$M/src-many"
mksquashfs "$M/src-many" "$M/many.sqfs" -noappend -quiet -no-progress >/dev/null 2>&1
umount "$M/src-many"
label_answer() {   # label_answer DIR: the errno name of security.selinux on DIR/f0000
	python3 -c '
import errno, os, sys
try:
    os.getxattr(sys.argv[1] + "/f0000", "security.selinux"); print("value")
except OSError as e:
    print(errno.errorcode[e.errno])' "$1"
}
if kmount "$M/many.sqfs" "$M/k-many" && qmount "$M/q-many" "$QUASH" mount "$M/many.sqfs" "$M/q-many"; then
	ka=$(label_answer "$M/k-many") qa=$(label_answer "$M/q-many")
	if [ "$ka" = ENODATA ] && [ "$qa" = "$ka" ]; then
		ok "past 4 MiB of xattrs security.selinux gets the kernel's $ka"
	else
		not_ok "past 4 MiB of xattrs security.selinux gets the kernel's ENODATA" "kernel $ka, quash $qa"
	fi
	fusermount3 -u "$M/q-many"
	umount "$M/k-many"
else
	not_ok "past 4 MiB of xattrs security.selinux gets the kernel's ENODATA" "mount failed"
fi

# The ASan build in the foreground on the image with everything, then a clean exit.
k=$M/asan-k q=$M/asan-q
kmount "$M/all.sqfs" "$k"
mkdir -p "$q"
"$QUASH_ASAN" mount -f "$M/all.sqfs" "$q" 2>"$M/asan.log" &
pid=$!
QM_MOUNTS+=("f:$q")
if wait_mounted "$q"; then
	python3 "$PROBE" "$q" >"$M/asan.q"
	same "asan: every query equals the kernel's" "$M/all.k" "$M/asan.q"
else
	not_ok "asan: every query equals the kernel's" "not mounted"
fi
kill -TERM $pid
wait $pid
st=$?
if [ $st -eq 0 ] && ! grep -q Sanitizer "$M/asan.log"; then
	ok "asan: clean exit"
else
	not_ok "asan: clean exit" "exit $st: $(head -c 600 "$M/asan.log")"
fi
