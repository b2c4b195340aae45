#!/bin/bash
# t-fuzz-tar.sh - hostile tars through the sanitizer build's pack, in both
# calling forms (quash pack -, and mksquashfs - IMG -tar).  The cases are
# tests/fuzz/mutate_tar.py's: seeded, so the same on every run.  Each must
# end within a deadline with exit 0 or 1 and no sanitizer report; when it
# packs, unsquashfs (the independent reader) must take the image whole.
# A fuzzing campaign of 15,000 such cases found three bugs this keeps out:
# an empty symlink target packed into an image unsquashfs refuses, and
# two hangs on sparse entries (holes read to hash them; a skip over holes
# that never ended).  Case 399 is the first.
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"

out=$WORK/fuzz-tar
trap 'rm -rf "$out"' EXIT
rm -rf "$out" && mkdir -p "$out/bin"
ln -s "$QUASH_ASAN" "$out/bin/mksquashfs"

CASES="399 $(seq 1 80)"     # 81 cases, two forms each: about 20 s under ASan on 2 cores
DEADLINE=30                 # seconds for one pack; one takes well under one

python3 "$top/tests/fuzz/mutate_tar.py" "$out" $CASES || { not_ok "make the cases"; exit 1; }

one() {    # one INDEX: pack it both ways; print a line for each failure
	local i=$1 form st dir=$out/w$1
	mkdir -p "$dir"
	for form in pack mksquashfs; do
		rm -f "$dir/o.sqfs"
		if [ $form = pack ]; then
			timeout $DEADLINE "$QUASH_ASAN" pack -q - "$dir/o.sqfs" <"$out/case-$i.tar" >/dev/null 2>"$dir/err"
		else
			timeout $DEADLINE "$out/bin/mksquashfs" - "$dir/o.sqfs" -tar -quiet -noappend \
				<"$out/case-$i.tar" >/dev/null 2>"$dir/err"
		fi
		st=$?
		if [ $st = 124 ]; then
			echo "case $i ($form): no end in ${DEADLINE} s"
		elif [ $st -gt 1 ] || grep -q -E 'Sanitizer|runtime error' "$dir/err"; then
			echo "case $i ($form): exit $st: $(grep -m1 -E 'ERROR|runtime error' "$dir/err" || head -c 200 "$dir/err")"
		elif [ $st = 0 ] && ! unsquashfs -lls "$dir/o.sqfs" >/dev/null 2>"$dir/uerr"; then
			echo "case $i ($form): packed an image unsquashfs refuses: $(tail -c 200 "$dir/uerr")"
		elif [ $st = 1 ] && [ "$(grep -vc ': warning: ' "$dir/err")" != 1 ]; then
			echo "case $i ($form): a failure in other than one line: $(head -c 300 "$dir/err")"
		fi
	done
	rm -rf "$dir"
}
export -f one
export out DEADLINE QUASH_ASAN

fails=$(printf '%s\n' $CASES | xargs -P 2 -I{} bash -c 'one {}')
n=$(echo $CASES | wc -w)
if [ -z "$fails" ]; then
	ok "$n hostile tars, two forms each: exit 0 or 1, no sanitizer report, every image read by unsquashfs"
else
	not_ok "$n hostile tars" "$(echo "$fails" | head -5)"
fi
st=0; "$QUASH_ASAN" pack -q - "$out/x.sqfs" <"$out/case-399.tar" 2>"$out/399.err" || st=$?
check "case 399 (a symlink with an empty target) is refused in one line naming it" \
	test $st = 1 -a "$(cat "$out/399.err")" = "quash: pack: (stdin): d/link: no symlink target"
