#!/bin/bash
# t-install.sh - make install (PREFIX, DESTDIR, DROPIN), make uninstall, and
# make deb: the package is built from debian/ leaving the tree as it was,
# lintian finds no error or warning in it or in libquash0 and libquash-dev
# (which install with dpkg, build docs/examples/qcat.c with pkg-config and
# read an image, and go again with dpkg -r), its Depends are dpkg-shlibdeps'
# (each library quash links or opens, with a version), it installs with
# dpkg, its quash passes the README's quick start and packs, mounts, reads
# and unmounts as nobody, its systemd unit and an fstab line start a catalog
# (and start it again over a dead mount), mount -t fuse.quash finds its
# helper, squashfuse_ll, squashfuse and mksquashfs are offered as
# alternatives, and dpkg -r and dpkg -P take every file of it away again.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/quickstart.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-install
FUSE_MODE=$(stat -c %a /dev/fuse)
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W"
cleanup() {
	umount -l "$W/kmnt" 2>/dev/null
	umount -l "$W/nobody/mnt" 2>/dev/null
	chmod "$FUSE_MODE" /dev/fuse
	[ -n "${INSTALLED:-}" ] && dpkg -r quash >/dev/null 2>&1
	dpkg -s libquash0 >/dev/null 2>&1 && dpkg -r libquash-dev libquash0 >/dev/null 2>&1
	remote_cleanup
	"$top/tests/lib/stop-rgw.sh" "$W/rgw" 2>/dev/null
}
trap cleanup EXIT

# ---- make install into a staging tree --------------------------------------
make -C "$top" -s install PREFIX=/usr DESTDIR="$W/stage" >"$W/install.log" 2>&1
check "make install PREFIX=/usr DESTDIR=...: exit 0" test $? = 0
for f in usr/bin/quash usr/share/man/man1/quash.1 usr/share/man/man1/quash-pack.1 \
	 usr/share/man/man1/quash-mount.1 usr/share/man/man1/quash-umount.1 \
	 usr/share/bash-completion/completions/quash; do
	check "make install: $f" test -f "$W/stage/$f"
done
check "make install: sbin/mount.fuse.quash -> /usr/bin/quash" test "$(readlink "$W/stage/usr/sbin/mount.fuse.quash")" = /usr/bin/quash
check "make install: no squashfuse_ll link unless DROPIN=1" test ! -e "$W/stage/usr/bin/squashfuse_ll"
make -C "$top" -s install PREFIX=/usr DESTDIR="$W/stage2" DROPIN=1 >>"$W/install.log" 2>&1
for l in squashfuse_ll squashfuse mksquashfs; do
	check "make install DROPIN=1: bin/$l -> quash" test "$(readlink "$W/stage2/usr/bin/$l")" = quash
done
check "the installed binary runs" bash -c "'$W/stage/usr/bin/quash' --version | grep -q '^quash '"
make -C "$top" -s uninstall DESTDIR="$W/stage2" >>"$W/install.log" 2>&1
check "make uninstall: the files and links are gone" test -z "$(find "$W/stage2" ! -type d)"
# Two installs to two places: each listed as it is made; uninstalling one
# place says what it removes there and leaves the other whole.
make -C "$top" -s install PREFIX=/usr/local DESTDIR="$W/s3" >"$W/s3.log" 2>&1
make -C "$top" -s install PREFIX=/opt/quash DESTDIR="$W/s4" >"$W/s4.log" 2>&1
check "make install lists what it installed" \
	bash -c "grep -qx 'installed $W/s3/usr/local/bin/quash' '$W/s3.log' && grep -qx 'installed $W/s4/opt/quash/bin/quash' '$W/s4.log' &&
		[ \$(grep -c '^installed ' '$W/s3.log') = \$(find '$W/s3' ! -type d | wc -l) ]"
make -C "$top" -s uninstall DESTDIR="$W/s3" >"$W/un3.log" 2>&1
check "make uninstall DESTDIR=one: that place emptied, each file said, the other kept" \
	bash -c "[ -z \"\$(find '$W/s3' ! -type d)\" ] && grep -qx 'removed $W/s3/usr/local/bin/quash' '$W/un3.log' &&
		[ -x '$W/s4/opt/quash/bin/quash' ] && ! grep -q '$W/s4' '$W/un3.log'"
make -C "$top" -s uninstall DESTDIR="$W/s4" >/dev/null 2>&1
check "... and then the other" test -z "$(find "$W/s4" ! -type d)"
# Leave build/ configured as make check expects it.
meson configure "$top/build" -Dprefix=/usr/local -Ddropin_links=false >/dev/null

# ---- make deb, dpkg -i -------------------------------------------------------
# make deb is debian/ through dpkg-buildpackage; lintian is Debian's own
# judge of the result (its copyright, changelog, stripped binary, maintainer
# address, man pages, links), and dpkg-shlibdeps' versions are the oracle for
# Depends: each library quash links, or opens by soname, by its package.
# Other dpkg runs on the machine hold its lock for a while: wait for them.
dpkg_do() {   # dpkg ARGS, again while another dpkg holds the lock (up to 2 min)
	local i st
	for i in $(seq 60); do
		dpkg "$@" 2>"$W/dpkg.err"; st=$?
		grep -q 'locked by another process\|database is locked' "$W/dpkg.err" || break
		sleep 2
	done
	cat "$W/dpkg.err" >&2
	return $st
}
dpkg -s quash >/dev/null 2>&1 && dpkg_do -r quash >/dev/null 2>&1
git -C "$top" status --porcelain >"$W/git-before"
make -C "$top" -s deb >"$W/deb.log" 2>&1
deb=$(ls "$top"/dist/quash_*.deb 2>/dev/null | head -1)
check "make deb builds a package" test -n "$deb"
git -C "$top" status --porcelain >"$W/git-after"
check "make deb leaves the source tree as it was (git status)" cmp -s "$W/git-before" "$W/git-after"
libdebs=$(ls "$top"/dist/libquash0_*.deb "$top"/dist/libquash-dev_*.deb 2>/dev/null)
lintian --fail-on error,warning "$deb" $libdebs >"$W/lintian.log" 2>&1
st=$?
check "lintian finds no error or warning in it, nor in libquash0 and libquash-dev (exit $st$(grep -m3 '^[EW]: ' "$W/lintian.log" | tr '\n' ' ' | sed 's/^/: /'))" \
	bash -c "[ $st = 0 ] && ! grep -q '^[EW]: ' '$W/lintian.log' && [ \$(echo '$libdebs' | wc -w) = 2 ]"
# The library's packages as an embedding program uses them: the system's
# pkg-config finds quash.pc, docs/examples/qcat.c builds and reads an image
# through /usr/lib's libquash.so.0; dpkg -r takes them away again.
L=$W/libdeb
rm -rf "$L" && mkdir -p "$L/src" && seq 50000 >"$L/src/f" && /usr/bin/mksquashfs "$L/src" "$L/img.sqfs" -quiet -no-progress >/dev/null
dpkg -s libquash-dev >/dev/null 2>&1 && dpkg_do -r libquash-dev libquash0 >/dev/null 2>&1
dpkg_do -i $libdebs >"$W/dpkg-lib.log" 2>&1
st=$?
cc "$top/docs/examples/qcat.c" $(pkg-config --cflags --libs quash 2>/dev/null) -o "$L/qcat" >"$L/cc.log" 2>&1 &&
	"$L/qcat" "$L/img.sqfs" f >"$L/out" 2>>"$L/cc.log" && ldd "$L/qcat" | grep -qE 'libquash.so.0 => (/usr)?/lib/'
ran=$?
dpkg_do -r libquash-dev libquash0 >>"$W/dpkg-lib.log" 2>&1
check "dpkg -i libquash0 libquash-dev (exit $st): qcat builds with pkg-config quash, reads the image through /usr/lib's libquash.so.0; dpkg -r removes them$(head -c 200 "$L/cc.log" | tr '\n' ' ' | sed 's/^./: &/')" \
	bash -c "[ $st = 0 ] && [ $ran = 0 ] && cmp -s '$L/out' '$L/src/f' && ! dpkg -s libquash0 >/dev/null 2>&1 &&
		 [ -z \"\$(ls /usr/include/quash /usr/lib/*/libquash* /usr/lib/*/pkgconfig/quash.pc 2>/dev/null)\" ]"
rm -rf "$W/debx" && dpkg-deb -x "$deb" "$W/debx"
owner() {   # the package of a library, by any of the names usrmerge gives its path
	local p pkg
	for p in "$1" "$(readlink -f "$1")"; do
		for p in "$p" "${p#/usr}" "/usr$p"; do
			pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1)
			[ -n "$pkg" ] && { echo "$pkg"; return; }
		done
	done
}
missing=""
# NEEDED sonames, and those quash opens with dlopen() (its strings that are sonames).
for so in $( (readelf -d "$W/debx/usr/bin/quash" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'
	      strings "$W/debx/usr/bin/quash" | grep -xE 'lib[a-z0-9_+-]+\.so\.[0-9]+') | sort -u); do
	path=$(ldconfig -p | awk -v so="$so" '$1 == so { print $NF; exit }')
	pkg=$(owner "$path")
	dpkg-deb -f "$deb" Depends | tr ',' '\n' | grep -qE "^ *$pkg \(>= [^)]+\)$" || missing="$missing $so($pkg)"
done
check "its Depends name each library quash links or opens, with a version (dpkg-shlibdeps)${missing:+, not:$missing}" \
	bash -c "[ -z '$missing' ] && dpkg-deb -f '$deb' Depends | grep -q 'libcurl4 (>= ' && dpkg-deb -f '$deb' Depends | grep -q 'libarchive13 (>= '"
check "its mount.fuse.quash is a relative link to ../bin/quash" test "$(readlink "$W/debx/usr/sbin/mount.fuse.quash")" = ../bin/quash
dpkg_do -i "$deb" >"$W/dpkg.log" 2>&1
st=$?
[ $st = 0 ] && INSTALLED=1
check "dpkg -i installs it" test $st = 0
dpkg -L quash >"$W/dpkg-L" 2>/dev/null
check "/usr/bin/quash is the package's" bash -c "dpkg -S /usr/bin/quash | grep -q '^quash:'"
for l in squashfuse_ll squashfuse mksquashfs; do
	check "update-alternatives offers quash as $l" bash -c "update-alternatives --query $l | grep -q '^Alternative: /usr/bin/quash'"
done
if command -v man >/dev/null; then
	check "man finds quash-mount(1)" bash -c "man -w quash-mount | grep -q quash-mount.1"
	check "man finds mount.fuse.quash(8)" bash -c "man -w 8 mount.fuse.quash | grep -q mount.fuse.quash.8"
else
	skip_check "man finds quash-mount(1)" "man is not installed"
	skip_check "man finds mount.fuse.quash(8)" "man is not installed"
fi

# The README's quick start with the installed quash (S3 on Ceph RGW).
if quickstart_s3 "$W" installed; then
	chmod 0666 /dev/fuse
	mkdir -p "$W/usrbin" && ln -sf /usr/bin/quash "$W/usrbin/quash"
	# (t-quickstart runs it as nobody too; once as root is enough for the package.)
	for who in root; do
		PORT=$(free_port) quickstart_run "$top/README.md" "$W/qs-$who" "$W/usrbin" "$who"
		st=$?
		check "the installed quash passes the quick start as $who, leaving nothing mounted" \
			bash -c "[ $st = 0 ] && grep -q '^extracted copy: identical$' '$W/qs-$who.log' && [ -f '$W/qs-$who.mounts' ] && [ ! -s '$W/qs-$who.mounts' ]" ||
			tail -5 "$W/qs-$who.log" | sed 's/^/#   /'
	done
else
	not_ok "rgw starts" "$(tail -3 "$W/rgw.err")"
fi

# An ordinary user with the package's /usr/bin/quash: pack, mount, read, umount.
N=$W/nobody
rm -rf "$N" && mkdir -p "$N/src/d" "$N/mnt" && seq -f 'line %g' 20000 >"$N/src/d/f" && ln -s d/f "$N/src/link" && chown -R nobody "$N"
chmod 0666 /dev/fuse
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$N" PATH=/usr/bin:/bin "$@"; }
as_nobody /usr/bin/quash pack "$N/src" "$N/img.sqfs" >"$N/log" 2>&1 &&
	as_nobody /usr/bin/quash mount "$N/img.sqfs" "$N/mnt" >>"$N/log" 2>&1
check "as nobody, /usr/bin/quash packs a tree and mounts the image" bash -c "grep -q ' $N/mnt fuse' /proc/mounts"
check "... nobody reads back through the mount the tree it packed" as_nobody diff -r --no-dereference "$N/src" "$N/mnt"
as_nobody /usr/bin/quash umount "$N/mnt" >>"$N/log" 2>&1
st=$?
check "... and unmounts it (exit $st)" bash -c "[ $st = 0 ] && ! grep -q ' $N/mnt ' /proc/mounts"

# mount(8) finds /usr/sbin/mount.fuse.quash for -t fuse.quash.
mkdir -p "$W/kmnt"
mount -t fuse.quash -o cache_size=16M "$W/qs-root/tree.sqfs" "$W/kmnt" 2>"$W/kmount.err"
check "mount -t fuse.quash IMAGE DIR mounts through the helper" bash -c \
	"grep -q ' $W/kmnt fuse.quash ' /proc/mounts && cmp -s '$W/kmnt/etc/motd' '$W/qs-root/tree/etc/motd'"
# dpkg -i over the installed package (an upgrade: postinst's $2 is the old
# version) moves the running mount to a server from the new /usr/bin/quash.
holder=$(pgrep -f "mount.fuse.quash .*$W/kmnt|quash .*$W/kmnt" | head -1)
before=$(pgrep -P "$holder" -f mount-server)
dpkg_do -i "$deb" >"$W/dpkg-up.log" 2>&1
after=$(pgrep -P "$holder" -f mount-server)
check "dpkg -i over it: postinst upgrades the running mount (server $before, now ${after:-none}), which reads on" \
	bash -c "[ -n '$before' ] && [ -n '$after' ] && [ '$before' != '$after' ] && cmp -s '$W/kmnt/etc/motd' '$W/qs-root/tree/etc/motd'"
umount "$W/kmnt" 2>/dev/null

# ---- a catalog at boot: the systemd unit and an fstab line ---------------------
# No systemd runs here: systemd-analyze checks the installed unit, and its
# ExecStart and ExecStop are run as systemd would run them (SOURCE and
# OPTIONS from the instance's file, $OPTIONS split into words, %f the path).
U=/usr/lib/systemd/system/quash-catalog@.service
mkdir -p "$W/boot/cat" "$W/boot/mp" /etc/quash
cp "$W/qs-root/tree.sqfs" "$W/boot/cat/tree.sqfs"
inst=$(systemd-escape --path "$W/boot/mp")
printf 'SOURCE=%s\nOPTIONS=-o allow_other,idle=60\n' "$W/boot/cat" >"/etc/quash/catalog-$inst.conf"
cp "$U" "$W/quash-catalog@$inst.service" 2>/dev/null
check "the package installs quash-catalog@.service, and systemd-analyze verify finds nothing wrong" \
	bash -c "[ -f '$U' ] && [ -z \"\$(systemd-analyze verify '$W/quash-catalog@$inst.service' 2>&1)\" ]"
unit_cmd() {   # unit_cmd KEY: the unit's command line for KEY, as systemd would run it
	local line
	line=$(sed -n "s/^$1=//p" "$U")
	line=${line//%f/$W/boot/mp}
	# EnvironmentFile: KEY=VALUE lines, the value the rest of the line
	( set -f; while IFS== read -r k v; do [ -n "$k" ] && declare "$k=$v"; done <"/etc/quash/catalog-$inst.conf"
	  eval "printf '%s\n' $line" )
}
start() { mapfile -t cmd < <(unit_cmd ExecStart); "${cmd[@]}"; }
stop() { mapfile -t cmd < <(unit_cmd ExecStop); "${cmd[@]}"; }
start 2>"$W/boot/start.err"; st=$?
check "ExecStart returns with the catalog mounted and ready (exit $st)" \
	bash -c "[ $st = 0 ] && cmp -s '$W/boot/mp/tree/etc/motd' '$W/qs-root/tree/etc/motd' && grep -q ' $W/boot/mp fuse.quash .*allow_other' /proc/mounts"
# holder and server both (mount/holder.h): a server stopped first cannot detach the mount when its holder dies
pkill -STOP -f "mount-server $W/boot/mp\$"
pkill -KILL -f "mount --catalog .* $W/boot/mp\$"
pkill -KILL -f "mount-server $W/boot/mp\$"
for _ in $(seq 50); do stat "$W/boot/mp/tree" 2>&1 | grep -q 'not connected' && break; sleep 0.1; done
start 2>"$W/boot/start.err"; st=$?
check "after the daemon is killed, ExecStart again mounts over the dead mount, one line ($(cat "$W/boot/start.err"))" \
	bash -c "[ $st = 0 ] && grep -q 'lost its daemon' '$W/boot/start.err' && [ \$(wc -l <'$W/boot/start.err') = 1 ] &&
		cmp -s '$W/boot/mp/tree/etc/motd' '$W/qs-root/tree/etc/motd' && [ \$(grep -c ' $W/boot/mp ' /proc/mounts) = 1 ]"
stop; st=$?
check "ExecStop unmounts it" bash -c "[ $st = 0 ] && ! grep -q ' $W/boot/mp ' /proc/mounts"
rm -f "/etc/quash/catalog-$inst.conf"; rmdir /etc/quash 2>/dev/null
printf '%s %s fuse.quash catalog,allow_other,nofail 0 0\n' "$W/boot/cat" "$W/boot/mp" >"$W/boot/fstab"
mount -a -T "$W/boot/fstab" 2>"$W/boot/fstab.err"; st=$?
check "an fstab line mounts the catalog with mount -a (exit $st $(head -c 200 "$W/boot/fstab.err"))" \
	bash -c "[ $st = 0 ] && cmp -s '$W/boot/mp/tree/etc/motd' '$W/qs-root/tree/etc/motd'"
quash umount "$W/boot/mp" 2>/dev/null

# ---- dpkg -r, dpkg -P ------------------------------------------------------------
# Every path dpkg -L listed is gone afterwards, but for directories another
# installed package also owns.
dpkg_do -r quash >"$W/dpkg-r.log" 2>&1
st=$?
INSTALLED=
check "dpkg -r removes it" bash -c "[ $st = 0 ] && [ ! -e /usr/bin/quash ] && [ ! -e /usr/sbin/mount.fuse.quash ]"
dpkg_do -P quash >>"$W/dpkg-r.log" 2>&1
st=$?
left=$(while read -r p; do
	if [ "$p" != /. ] && { [ -e "$p" ] || [ -L "$p" ]; }; then
		{ [ -d "$p" ] && [ ! -L "$p" ] && dpkg -S "$p" >/dev/null 2>&1; } || echo "$p"
	fi
done <"$W/dpkg-L")
check "dpkg -P purges it, and nothing of what dpkg -L listed is left${left:+: $(echo $left | head -c 200)}" \
	bash -c "[ $st = 0 ] && [ -s '$W/dpkg-L' ] && [ -z '$left' ] && ! dpkg -s quash >/dev/null 2>&1"
gone=""
for l in squashfuse_ll squashfuse mksquashfs; do
	update-alternatives --query $l 2>/dev/null | grep -q /usr/bin/quash && gone="$gone $l"
	[ "$(readlink -f /usr/bin/$l 2>/dev/null)" = /usr/bin/quash ] && gone="$gone /usr/bin/$l"
done
check "... and its alternatives${gone:+ (still:$gone)}" test -z "$gone"

# ---- make demo: the main job, with no fallback -----------------------------------
make -C "$top" -s demo >"$W/demo.log" 2>&1
st=$?
check "make demo packs, mounts beside the kernel, reads, unmounts" bash -c \
	"[ $st = 0 ] && grep -q 'Every file read through quash.s mount equals the sample tree' '$W/demo.log' &&
	 grep -q '^kernel mount ' '$W/demo.log' && ! grep -qi mksquashfs '$W/demo.log' && ! grep -q quash-demo /proc/mounts"

# install-deps.sh keeps a site's own /usr/sbin/policy-rc.d: apt-get and
# dpkg-query stand-ins report one package missing and record, during the
# install, what policy-rc.d says; afterwards the site's file is back, also
# when the install fails.
P=/usr/sbin/policy-rc.d
[ -e $P ] && cp -a $P "$W/policy-rc.d.orig"
mkdir -p "$W/fakebin"
printf '#!/bin/sh\n[ "$1" = -W ] && exit 1\nexit 0\n' >"$W/fakebin/dpkg-query"
printf '#!/bin/sh\n[ "$1" = install ] || exit 0\ncat /usr/sbin/policy-rc.d >"%s/during"\nexit ${FAKE_APT_STATUS:-0}\n' "$W" >"$W/fakebin/apt-get"
chmod +x "$W/fakebin/"*
for status in 0 100; do
	printf '#!/bin/sh\n# the site'"'"'s own\nexit 0\n' >$P
	rm -f "$W/during"
	FAKE_APT_STATUS=$status PATH="$W/fakebin:$PATH" sh "$top/scripts/install-deps.sh" >/dev/null 2>&1
	st=$?
	check "install-deps.sh (apt-get exit $status): policy-rc.d says 101 during the install, the site's file after, exit $st" \
		bash -c "grep -q 'exit 101' '$W/during' && grep -q \"the site's own\" $P && [ $st = $status ]"
done
rm -f $P
FAKE_APT_STATUS=0 PATH="$W/fakebin:$PATH" sh "$top/scripts/install-deps.sh" >/dev/null 2>&1
check "install-deps.sh with no policy-rc.d leaves none" test ! -e $P
if [ -e "$W/policy-rc.d.orig" ]; then cp -a "$W/policy-rc.d.orig" $P; fi
