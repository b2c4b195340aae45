#!/bin/sh
# uninstall.sh BUILD DESTDIR - remove what `make install` put in place under
# DESTDIR (empty: every PREFIX installed to): the files and links in
# BUILD/installed.txt, the record of every make install from BUILD, each
# said as it goes.  Directories stay: others may share them.
set -eu
build=$1 destdir=$2
record=$build/installed.txt
[ -f "$record" ] || { echo "uninstall: nothing was installed from $build" >&2; exit 1; }
: >"$record.left"
while IFS= read -r f; do
	case $f in
	"$destdir"/*)
		if [ -L "$f" ] || [ -f "$f" ]; then rm -f "$f" && echo "removed $f"; fi ;;
	*)
		echo "$f" >>"$record.left" ;;
	esac
done <"$record"
mv "$record.left" "$record"
[ -s "$record" ] || rm -f "$record"
