#!/bin/sh
# uninstall.sh BUILD DESTDIR - remove what `make install` put in place: the
# files and links meson's install log lists (directories stay: others may
# share them).
set -eu
build=$1 destdir=$2
log=$build/meson-logs/install-log.txt
[ -f "$log" ] || { echo "uninstall: $log is missing; nothing was installed from $build" >&2; exit 1; }
grep -v '^#' "$log" | while IFS= read -r f; do
	case $f in "$destdir"*) ;; *) continue ;; esac
	if [ -L "$f" ] || [ -f "$f" ]; then rm -f "$f" && echo "removed $f"; fi
done
