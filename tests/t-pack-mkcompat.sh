#!/bin/bash
# t-pack-mkcompat.sh - what build scripts see of the mksquashfs form, side by
# side with Debian's mksquashfs (4.5.1) run the same way: the first lines
# of its output, the appending notice and the renamed-entry line on
# stderr, a source that is a file or a symlink rather than a directory,
# -throttle and -limit (accepted over the same ranges, the image unchanged),
# and -Xcompression-level's range per compressor.  quash runs
# as "mksquashfs" (a link to the ASan build); each run's exit status is
# checked and its stderr searched for a sanitizer report.
. "$(dirname "$0")/lib/tap.sh"

W=$WORK/t-pack-mkcompat
rm -rf "$W" && mkdir -p "$W/bin" "$W/src/d" "$W/sub" "$W/q" "$W/m"
ln -s "$QUASH_ASAN" "$W/bin/mksquashfs"
QM=$W/bin/mksquashfs
REAL=$(command -v mksquashfs)
echo hi >"$W/src/d/f"
seq 1 20000 >"$W/src/nums"
echo single >"$W/one.txt"
echo nested >"$W/sub/two.txt"
ln -s one.txt "$W/alink"
ln -s src "$W/dlink"

# run_both DIR ARGS...: in $W/q (quash) and $W/m (mksquashfs) run each with
# ARGS, DEST named the same; stdout in DIR/out, stderr in DIR/err, status in
# Q_ST and M_ST.  Paths in ARGS are relative to $W.
run_both() {
	(cd "$W/q" && "$QM" "$@" >out 2>err); Q_ST=$?
	(cd "$W/m" && "$REAL" "$@" >out 2>err); M_ST=$?
	if grep -q 'Sanitizer\|runtime error:' "$W/q/err"; then
		not_ok "no sanitizer report (mksquashfs $*)" "$(grep -m1 'Sanitizer\|runtime error:' "$W/q/err")"
	fi
}
for d in q m; do cp -a "$W/src" "$W/one.txt" "$W/sub" "$W/alink" "$W/dlink" "$W/$d/"; done

# ---- the first lines -------------------------------------------------------------
for p in 1 2; do
	run_both src img.sqfs -noappend -no-progress -processors $p
	check "-processors $p: the first two lines are mksquashfs's ($(head -1 "$W/q/out"))" \
		bash -c "[ $Q_ST = 0 ] && [ $M_ST = 0 ] && diff <(head -2 '$W/m/out') <(head -2 '$W/q/out')"
done
run_both src img.sqfs -noappend -no-progress -quiet
check "-quiet: nothing on stdout or stderr, as mksquashfs" \
	bash -c "[ $Q_ST = 0 ] && [ ! -s '$W/q/out' ] && [ ! -s '$W/q/err' ] && [ ! -s '$W/m/out' ]"

# Appending the same source again: both images have d, so d arrives as d_1.
run_both src img.sqfs -no-progress -processors 2
check "appending: the notice, from 'Appending to existing' to 'If appending is not wanted', is mksquashfs's" \
	bash -c "[ $Q_ST = 0 ] && [ $M_ST = 0 ] &&
		diff <(sed -n '/^Appending to existing/,/^If appending/p' '$W/m/out') <(sed -n '/^Appending to existing/,/^If appending/p' '$W/q/out') &&
		grep -q '^Appending to existing 4.0 filesystem on img.sqfs, block size 131072$' '$W/q/out'"
check "appending: the renamed entry's line on stderr is mksquashfs's ($(head -1 "$W/q/err"))" \
	bash -c "grep -qx 'Source directory entry d already used! - trying d_1' '$W/m/err' &&
		diff <(grep '^Source directory entry' '$W/m/err' | sort) <(grep '^Source directory entry' '$W/q/err' | sort)"
check "appending: the image has d and d_1, as mksquashfs's" \
	bash -c "diff <(unsquashfs -ls '$W/m/img.sqfs' | grep squashfs-root) <(unsquashfs -ls '$W/q/img.sqfs' | grep squashfs-root)"

# -progress with stdout a log, not a terminal: mksquashfs's own bar there,
# whose last state (after the last carriage return) is what a log keeps.
head -c 3000000 /dev/urandom >"$W/q/src/blocks"; cp "$W/q/src/blocks" "$W/m/src/blocks"
run_both src bar.sqfs -noappend -progress -comp lz4
last_bar() { tr '\r' '\n' <"$1" | grep '^\[' | tail -1; }
qbar=$(last_bar "$W/q/out") mbar=$(last_bar "$W/m/out")
check "-progress to a log: the bar ends as mksquashfs's does ($qbar)" \
	bash -c "[ $Q_ST = 0 ] && [ -n '$mbar' ] && [ '$mbar' = '$qbar' ]"
rm -f "$W/q/src/blocks" "$W/m/src/blocks"

# ---- a source that is no directory ---------------------------------------------------
# listing IMG: type, mode, owner, size and name (or a symlink's target) of each entry (times vary)
listing() { unsquashfs -lls "$1" | grep squashfs-root | awk '{ print $1, $2, $3, $NF }'; }
# A symlink is taken as it is, even to a directory, alone or not.
for srcs in "one.txt" "sub/two.txt" "one.txt src" "alink sub" "dlink" "dlink sub" "$W/one.txt"; do
	# shellcheck disable=SC2086  # the sources are words
	run_both $srcs file.sqfs -noappend -quiet -no-progress
	rm -rf "$W/q/x" "$W/m/x"
	unsquashfs -q -d "$W/q/x" "$W/q/file.sqfs" >/dev/null 2>&1
	unsquashfs -q -d "$W/m/x" "$W/m/file.sqfs" >/dev/null 2>&1
	check "a source list '$srcs': the image lists and extracts as mksquashfs's ($(listing "$W/q/file.sqfs" | head -2 | tr '\n' ';'))" \
		bash -c "[ $Q_ST = 0 ] && [ $M_ST = 0 ] && diff <(listing '$W/m/file.sqfs') <(listing '$W/q/file.sqfs') &&
			diff -r --no-dereference '$W/m/x' '$W/q/x'"
done

# ---- -throttle and -limit ------------------------------------------------------------
for a in "-throttle 0" "-throttle 99" "-throttle 100" "-limit 0" "-limit 1" "-limit 100" "-limit 101" "-throttle x"; do
	# shellcheck disable=SC2086
	run_both src t.sqfs -noappend -quiet -no-progress $a
	want="exit 0"; [ $M_ST != 0 ] && want="one line naming ${a% *} and the value"
	check "$a: $want, as mksquashfs ($M_ST; quash $Q_ST: $(head -c 80 "$W/q/err"))" \
		bash -c "[ $Q_ST = $M_ST ] && if [ $Q_ST = 0 ]; then [ ! -s '$W/q/err' ]; else
			[ \$(wc -l <'$W/q/err') = 1 ] && grep -q '^quash: mksquashfs: ${a% *}[: ]' '$W/q/err' && grep -qF -- '${a#* }' '$W/q/err'; fi"
done
check "-throttle 99 -limit 1: the image holds what the unthrottled one holds" \
	bash -c "cd '$W/q' && '$QM' src u.sqfs -noappend -quiet -no-progress && diff <(unsquashfs -lls u.sqfs | sed 1,3d) <(unsquashfs -lls t.sqfs | sed 1,3d)"

# ---- -Xcompression-level ---------------------------------------------------------------
for a in "-comp zstd -Xcompression-level 22" "-comp zstd -Xcompression-level 25" "-Xcompression-level 9" \
	 "-Xcompression-level 10" "-Xcompression-level 0" "-comp lzo -Xcompression-level 9" \
	 "-Xcompression-level 3 -comp zstd"; do
	# shellcheck disable=SC2086
	run_both src l.sqfs -noappend -quiet -no-progress $a
	comp=gzip; [[ $a == *zstd* ]] && comp=zstd; [[ $a == *lzo* ]] && comp=lzo
	max=9; [ $comp = zstd ] && max=22
	if [ $M_ST = 0 ]; then
		check "$a: accepted, as mksquashfs" bash -c "[ $Q_ST = 0 ] && [ ! -s '$W/q/err' ]"
	else
		level=$(grep -o 'level [0-9]*' <<<"$a" | cut -d' ' -f2)
		check "$a: refused with the range of $comp, as mksquashfs ($(head -c 100 "$W/q/err"))" \
			bash -c "[ $Q_ST = 1 ] && [ \"\$(cat '$W/q/err')\" = 'quash: mksquashfs: -Xcompression-level $level: out of range for $comp (1 to $max)' ]"
	fi
done
