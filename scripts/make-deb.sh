#!/bin/sh
# make-deb.sh - `make deb`: dist/quash_VERSION_ARCH.deb from a release build
# installed under /usr into a staging tree, with dpkg-deb (no debhelper).
#
# Depends: the packages of the libraries the binary links (found through
# dpkg -S), plus libcurl and libarchive, which it opens on first use, and
# fuse3 for fusermount3.  squashfuse_ll, squashfuse and mksquashfs are offered
# as alternatives at a low priority, so they never replace the real tools'
# files; `update-alternatives --set` chooses quash.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=build-deb
stage=$build/stage
version=$(sed -n "s/^  version : '\(.*\)',/\1/p" meson.build)
arch=$(dpkg --print-architecture)
out=dist/quash_${version}_${arch}.deb

[ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release -Db_ndebug=true --prefix=/usr >/dev/null
ninja -C "$build" >/dev/null
rm -rf "$stage" && meson install -C "$build" --destdir "$top/$stage" --no-rebuild --quiet

deps=""
# A library's package, by any of the names usrmerge gives its path.
owner() {
	for p in "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; do
		pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1)
		[ -n "$pkg" ] && { echo "$pkg"; return; }
	done
	echo "make deb: no package owns $1" >&2
	exit 1
}
for lib in $(ldd "$stage/usr/bin/quash" | awk '$3 ~ /^\// { print $3 }'); do
	deps="$deps $(owner "$lib")"
done
deps="libc6 $deps fuse3 libcurl4 libarchive13"
depends=$(for p in $deps; do echo "$p"; done | sort -u | paste -sd, - | sed 's/,/, /g')

mkdir -p "$stage/DEBIAN" dist
cat >"$stage/DEBIAN/control" <<CONTROL
Package: quash
Version: $version
Architecture: $arch
Maintainer: quash developers <quash@localhost>
Depends: $depends
Section: admin
Priority: optional
Description: build, mount and read squashfs images
 quash packs directories and archives into squashfs images, mounts them
 unprivileged through FUSE (a drop-in for squashfuse_ll), reads them from
 disk, HTTP(S) or S3 by byte range, and inspects them with no mount.
CONTROL
cat >"$stage/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
	for name in squashfuse_ll squashfuse mksquashfs; do
		update-alternatives --quiet --install /usr/bin/$name $name /usr/bin/quash 10
	done
fi
POSTINST
cat >"$stage/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ "$1" = remove ] || [ "$1" = deconfigure ]; then
	for name in squashfuse_ll squashfuse mksquashfs; do
		update-alternatives --quiet --remove $name /usr/bin/quash
	done
fi
PRERM
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm"
gzip -9n "$stage/usr/share/man/man1/"*.1
dpkg-deb --root-owner-group --build "$stage" "$out" >/dev/null
echo "make deb: $out ($depends)"
