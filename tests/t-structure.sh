#!/bin/bash
# t-structure.sh - the shape of the code as its own includes and symbols
# draw it (scripts/structure.py over the release build's objects): no
# circle between files, no arrow from a lower layer (lib < common <
# mount, pack < cli) to a higher one or across to a sibling, no function
# over 100 lines; and docs/ARCHITECTURE.md's map names every folder that
# holds sources, and no folder that does not exist.
. "$(dirname "$0")/lib/tap.sh"

top=$QUASH_TOP
W=$WORK/t-structure
rm -rf "$W" && mkdir -p "$W"

python3 "$top/scripts/structure.py" "$top/build" >"$W/graph" 2>&1
st=$?
check "the module graph has arrows (the build's objects were read: $(tail -1 "$W/graph"))" \
	grep -qE '^[1-9][0-9]* arrows between [0-9]+ modules' "$W/graph"
if [ $st = 0 ]; then ok "no circle, no arrow up or across"
else not_ok "no circle, no arrow up or across" "$(grep -vE '^    ' "$W/graph" | head -5)"; fi

python3 "$top/scripts/structure.py" --long 100 >"$W/long" 2>&1
st=$?
if [ $st = 0 ] && [ ! -s "$W/long" ]; then ok "no function over 100 lines"
else not_ok "no function over 100 lines" "$(head -3 "$W/long")"; fi

# Folders with C sources, as ARCHITECTURE.md names them ("lib/io/cache/" or "`cache/`" under its room).
(cd "$top" && find lib common mount pack cli -name '*.[ch]' -printf '%h\n' | sort -u) >"$W/folders"
missing=
while read -r d; do
	grep -qF "\`$d/\`" "$top/docs/ARCHITECTURE.md" || grep -qF "\`$(basename "$d")/\`" "$top/docs/ARCHITECTURE.md" ||
		missing="$missing $d"
done <"$W/folders"
check "docs/ARCHITECTURE.md names every folder of sources (missing:${missing:- none})" [ -z "$missing" ]
stale=
for d in $(grep -oE '`(lib|common|mount|pack|cli)(/[a-z_]+)*/`' "$top/docs/ARCHITECTURE.md" | tr -d '`' | sort -u); do
	[ -d "$top/$d" ] || stale="$stale $d"
done
check "and no folder that does not exist (stale:${stale:- none})" [ -z "$stale" ]
