#!/bin/sh
# install-record.sh BUILD - after meson install: list the files and links
# installed (meson's log also names the directories it made; those are
# left out), and add them to BUILD/installed.txt, the record of every make
# install from this build directory (each PREFIX and DESTDIR), which make
# uninstall reads.
set -eu
build=$1
log=$build/meson-logs/install-log.txt
record=$build/installed.txt
[ -f "$log" ] || { echo "install: $log is missing" >&2; exit 1; }
grep -v '^#' "$log" | while IFS= read -r f; do
	if [ -L "$f" ] || [ ! -d "$f" ]; then echo "$f"; fi
done >"$record.this"
sed 's/^/installed /' "$record.this"
{ [ -f "$record" ] && cat "$record"; cat "$record.this"; } | sort -u >"$record.new"
rm -f "$record.this"
mv "$record.new" "$record"
