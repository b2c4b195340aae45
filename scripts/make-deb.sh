#!/bin/sh
# make-deb.sh - `make deb`: dist/quash_VERSION_ARCH.deb, and the library's
# libquash0 and libquash-dev beside it, built the Debian way (debian/:
# debhelper, dpkg-buildpackage, Depends from dpkg-shlibdeps).
#
# dpkg-buildpackage writes into the tree it builds and its packages into the
# tree's parent, so it runs on a copy under build-deb/ (the checkout's files
# as they are now, committed or not); only the package comes back, to dist/.
# The debug symbols package stays in build-deb/.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
version=$(sed -n "s/^  version : '\(.*\)',/\1/p" meson.build)
changelog=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "$changelog" != "$version" ]; then
	echo "make deb: debian/changelog: version $changelog, but meson.build says $version (add a changelog entry)" >&2
	exit 1
fi
arch=$(dpkg --print-architecture)
out=dist/quash_${version}_${arch}.deb
work=build-deb
src=$work/quash-$version

# A failed build must leave no package of an earlier one to be taken for its own.
rm -rf "$work" && mkdir -p "$src" dist && rm -f dist/*_"${version}_${arch}".deb
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | xargs -0 sh -c \
		'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf - | tar -xf - -C "$src"
else
	tar --exclude='./build*' --exclude=./dist -cf - . | tar -xf - -C "$src"
fi
if ! (cd "$src" && dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1; then
	echo "make deb: dpkg-buildpackage failed; the end of $work/build.log:" >&2
	tail -20 "$work/build.log" >&2
	exit 1
fi
cp "$work/quash_${version}_${arch}.deb" "$out"
echo "make deb: $out (Depends: $(dpkg-deb -f "$out" Depends))"
for pkg in libquash0 libquash-dev; do
	cp "$work/${pkg}_${version}_${arch}.deb" dist/
	echo "make deb: dist/${pkg}_${version}_${arch}.deb"
done
