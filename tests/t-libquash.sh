#!/bin/bash
# t-libquash.sh - libquash as others get it: meson install (into a scratch
# DESTDIR) puts the shared library with its soname, the static library, the
# public headers and quash.pc in place; the headers compile alone and
# document every function; both libraries export exactly the functions the
# headers declare; docs/examples/qcat.c builds with pkg-config against the
# installed library, shared (NEEDED libquash.so.0, which ldd finds there)
# and static (pkg-config --static), and prints files of images Debian's
# mksquashfs made byte for byte as they are and as unsquashfs -cat prints
# them; a program of its own that defines every internal name of libquash
# links and reads as well; quash itself has no libquash NEEDED; the
# version is one.
. "$(dirname "$0")/lib/tap.sh"

top=$QUASH_TOP
W=$WORK/t-libquash
rm -rf "$W" && mkdir -p "$W"

# ---- the install ---------------------------------------------------------
meson install -C "$top/build" --no-rebuild --destdir "$W/dest" --quiet >"$W/install.log" 2>&1
st=$?
pc=$(find "$W/dest" -name quash.pc -path '*/pkgconfig/*' | head -1)
prefix=$(sed -n 's/^prefix=//p' "$pc" 2>/dev/null)
# pkg-config with the install's prefix moved under DESTDIR.
pc() { PKG_CONFIG_PATH=${pc%/*} pkg-config --define-variable=prefix="$W/dest$prefix" "$@" quash; }
libdir=$(pc --variable=libdir) incdir=$(pc --variable=includedir)/quash
missing=
for f in "$libdir/libquash.so.0.1.0" "$libdir/libquash.a" "$incdir/quash.h" "$incdir/source.h" "$incdir/quash_version.h"; do
	[ -f "$f" ] || missing="$missing ${f#$W/dest}"
done
for l in libquash.so.0:libquash.so.0.1.0 libquash.so:libquash.so.0; do
	[ "$(readlink "$libdir/${l%%:*}")" = "${l#*:}" ] || missing="$missing ${l%%:*}->${l#*:}"
done
check "meson install puts libquash.so.0.1.0 (links .so.0, .so), libquash.a, include/quash/ and quash.pc in place (exit $st${missing:+; missing:$missing})" \
	bash -c "[ $st = 0 ] && [ -n '$pc' ] && [ -z '$missing' ]"
check "libquash.so.0.1.0's soname is libquash.so.0" \
	bash -c "readelf -d '$libdir/libquash.so.0.1.0' | grep -q 'SONAME.*\[libquash.so.0\]'"

# ---- the headers -----------------------------------------------------------
# Each alone, with only the installed directory on the include path.
bad=
for h in quash.h source.h quash_version.h; do
	printf '#include <%s>\nint main(void) { return 0; }\n' "$h" >"$W/h.c"
	cc -std=c11 -Wall -Wextra -Werror -I"$incdir" -c "$W/h.c" -o "$W/h.o" 2>>"$W/headers.err" || bad="$bad $h"
done
check "each installed header compiles alone (cc -std=c11 -Werror, -I the installed dir only)${bad:+: not$bad}" test -z "$bad"
# The functions the headers declare (not the static inline ones).
sed -n '/^static/!s/^[a-z][^(]*[ *]\(qs_[a-z0-9_]*\)(.*/\1/p' "$incdir/quash.h" "$incdir/source.h" | sort -u >"$W/declared"
# A paragraph of a header (lines up to a blank one) that declares a function has a comment.
undoc=$(awk 'function flush() { if (fn != "" && !doc) print fn; fn = ""; doc = 0 }
	/^$/ { flush(); next }
	/\/\*|\*\// { doc = 1 }
	/^[a-z]/ && !/^static/ && match($0, /qs_[a-z0-9_]*\(/) { fn = fn " " substr($0, RSTART, RLENGTH - 1) }
	END { flush() }' "$incdir/quash.h" "$incdir/source.h" | tr -s ' \n' ' ')
check "every function the headers declare has a comment with it${undoc:+ (not:$undoc)}" \
	bash -c "[ -z '$undoc' ] && [ \$(wc -l <'$W/declared') -gt 40 ]"

# ---- what the libraries export ---------------------------------------------------
nm -D --defined-only "$libdir/libquash.so.0.1.0" | awk '{ print $3 }' | sort >"$W/so-syms"
nm --defined-only "$libdir/libquash.a" | awk '$2 ~ /^[A-Z]$/ { print $3 }' | sort >"$W/a-syms"
for lib in so a; do
	check "libquash.$lib exports exactly the functions the headers declare$(diff "$W/declared" "$W/$lib-syms" | sed -n 's/^[<>] //p' | head -5 | tr '\n' ' ' | sed 's/^./: not those or not only: &/')" \
		cmp -s "$W/declared" "$W/$lib-syms"
done

# ---- docs/examples/qcat.c against the installed library -----------------------
S=$W/src
mkdir -p "$S/d/e"
python3 -c "
import random
r = random.Random(38)
open('$S/d/big', 'wb').write(bytes(r.choice(b'abcdefgh\n') for _ in range(3 * 131072 + 4321)))
open('$S/d/e/small', 'w').write('a line of its own\n')
f = open('$S/holes', 'wb'); f.seek(2 * 131072); f.write(b'after the hole'); f.seek(5 * 131072); f.truncate()"
: >"$S/empty"
files="d/big d/e/small holes empty"
/usr/bin/mksquashfs "$S" "$W/gzip.sqfs" -quiet -no-progress >/dev/null
/usr/bin/mksquashfs "$S" "$W/zstd.sqfs" -comp zstd -b 64K -quiet -no-progress >/dev/null

cc -std=c11 -Wall -Wextra -Werror "$top/docs/examples/qcat.c" $(pc --cflags --libs) -o "$W/qcat" 2>"$W/cc.err"
check "qcat builds with \$(pkg-config --cflags --libs quash)$(head -c 300 "$W/cc.err" | tr '\n' ' ' | sed 's/^./: &/')" test -x "$W/qcat"
cc -std=c11 -Wall -Wextra -Werror "$top/docs/examples/qcat.c" $(pc --cflags) \
	$(pc --static --libs | sed 's/-lquash\b/-l:libquash.a/') -o "$W/qcat-static" 2>"$W/cc-static.err"
check "qcat builds with libquash.a and \$(pkg-config --static --libs quash)$(head -c 300 "$W/cc-static.err" | tr '\n' ' ' | sed 's/^./: &/')" \
	test -x "$W/qcat-static"
export LD_LIBRARY_PATH=$libdir
check "the shared qcat needs libquash.so.0, and ldd finds the installed one" \
	bash -c "readelf -d '$W/qcat' | grep -q 'NEEDED.*\[libquash.so.0\]' &&
		 ldd '$W/qcat' | grep -qF 'libquash.so.0 => $libdir/libquash.so.0 ('"
check "the static qcat has no libquash NEEDED" bash -c "[ -x '$W/qcat-static' ] && ! readelf -d '$W/qcat-static' | grep -q libquash"

# reads KIND: each file of both images through qcat-KIND equals its bytes and unsquashfs -cat's.
reads() {
	local img f bad=
	for img in gzip zstd; do
		for f in $files; do
			"$W/qcat$1" "$W/$img.sqfs" "$f" >"$W/out" 2>"$W/out.err" && cmp -s "$W/out" "$S/$f" &&
				/usr/bin/unsquashfs -cat "$W/$img.sqfs" "$f" 2>/dev/null | cmp -s - "$W/out" || bad="$bad $img:$f"
		done
	done
	echo "$bad"
}
bad=$(reads "")
check "the shared qcat prints each file (blocks, fragment, holes, empty; gzip and zstd images) as it is and as unsquashfs -cat does${bad:+: not$bad}" \
	test -z "$bad"
bad=$(reads -static)
check "the static qcat prints them the same${bad:+: not$bad}" test -z "$bad"
check_fails "qcat on a missing path: exit 1, the library's one-line reason through the shared library" 1 \
	"^qcat: $W/gzip.sqfs: d/nope: .*(no such|not found)" "$W/qcat" "$W/gzip.sqfs" d/nope

# A program with names of its own that libquash also uses inside (each
# global of the build's internal library): they must neither clash in the
# static link nor take over libquash's calls in the shared one (each
# aborts), or an embedding program's libcurl or helpers would.
nm --defined-only "$top/build/lib/libquash_internal.a" | awk '$2 ~ /^[A-Z]$/ { print $3 }' | sort -u |
	comm -23 - "$W/declared" >"$W/internal"
{ echo '#include <stdlib.h>'; sed 's/.*/void &(void); void &(void) { abort(); }/' "$W/internal"
  cat "$top/docs/examples/qcat.c"; } >"$W/clash.c"
cc -std=c11 "$W/clash.c" $(pc --cflags --libs) -Wl,--export-dynamic -o "$W/clash" 2>"$W/clash.err" &&
	cc -std=c11 "$W/clash.c" $(pc --cflags) $(pc --static --libs | sed 's/-lquash\b/-l:libquash.a/') -o "$W/clash-static" 2>>"$W/clash.err"
st=$?
bad=
for p in clash clash-static; do
	[ -x "$W/$p" ] && "$W/$p" "$W/gzip.sqfs" d/big 2>/dev/null | cmp -s - "$S/d/big" || bad="$bad $p"
done
check "a program defining all $(wc -l <"$W/internal") of libquash's internal names links (shared and static) and reads d/big (exit $st$(grep -m1 -o 'multiple definition of `[^'"'"']*' "$W/clash.err" | sed 's/^/: /')${bad:+; wrong:$bad})" \
	bash -c "[ $st = 0 ] && [ -z '$bad' ] && [ \$(wc -l <'$W/internal') -gt 20 ]"
unset LD_LIBRARY_PATH

# ---- quash itself, and the one version --------------------------------------------
check "quash itself needs no libquash.so (it stays one self-contained binary)" \
	bash -c "! readelf -d '$QUASH' | grep -q libquash"
v=$("$QUASH" --version | sed -n 's/^quash //p')
check "the installed header's QUASH_VERSION, quash.pc's and quash --version's are meson.build's ($v)" \
	bash -c "[ -n '$v' ] && [ '$v' = \"\$(sed -n \"s/^  version : '\\(.*\\)',/\\1/p\" '$top/meson.build')\" ] &&
		 grep -qx '#define QUASH_VERSION \"$v\"' '$incdir/quash_version.h' &&
		 [ \"\$(PKG_CONFIG_PATH='${pc%/*}' pkg-config --modversion quash)\" = '$v' ] &&
		 LD_LIBRARY_PATH='$libdir' '$W/qcat' 2>&1 | grep -q '(libquash $v)'"
