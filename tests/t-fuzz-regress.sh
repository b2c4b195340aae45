#!/bin/bash
# The fuzzer's walk (tests/fuzz/walk.c: open, every directory, inode, name,
# file block, symlink and xattr, inodes by number) under ASan and UBSan
# over: the seed images, which must open and walk whole; every reproducer
# in tests/fuzz/regress/ (the fuzzer's finds and hand-made hostile images,
# at least one, each patch on the very seed it was made against); and a
# few hundred deterministic corruptions of the seeds.  A sanitizer report, a signal or a timeout is a
# failure; errors from the library are expected.
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tests/lib/tap.sh"

driver=$top/build-asan/tests/fuzz_driver
out=$WORK/fuzz-regress
trap 'rm -rf "$out"' EXIT
rm -rf "$out" && mkdir -p "$out"
[ -x "$driver" ] || { not_ok "fuzz_driver is built (make asan)"; exit 1; }

MUTATIONS=600
WALK_TIMEOUT=120       # seconds for a whole batch; one walk takes milliseconds

# Run the driver over FILES; on failure, find and name each file that fails alone.
walk_all() {   # walk_all NAME FILE...
	local name=$1 st f why bad=""; shift
	timeout "$WALK_TIMEOUT" "$driver" "$@" >/dev/null 2>"$out/walk.err"
	st=$?
	if [ $st -eq 0 ]; then ok "$name"; return; fi
	for f in "$@"; do
		timeout 20 "$driver" "$f" >/dev/null 2>"$out/one.err"
		st=$?
		[ $st -eq 0 ] || bad+=" $(basename "$f")($st)"
	done
	why=$(grep -m1 -E 'ERROR|runtime error' "$out/walk.err")
	not_ok "$name" "exit $st; failing:${bad:- none alone} $why"
}

if ! tests/fuzz/make-seeds.sh "$out" >/dev/null 2>"$out/seeds.err"; then
	not_ok "seed images" "$(cat "$out/seeds.err")"
	exit 1
fi
seeds=("$out"/seeds/*.sqfs)

# The seeds are valid: each must open and be walked to the end.
for s in "${seeds[@]}"; do
	ops=$(timeout 60 "$driver" -v "$s" 2>"$out/seed.err" | awk '{print $2}')
	if [ "${ops:-0}" -gt 100 ]; then ok "seed $(basename "$s") walks ($ops operations)"
	else not_ok "seed $(basename "$s") walks" "${ops:-no} operations; $(head -c 300 "$out/seed.err")"; fi
done

# An image with exactly 512 xattr ids stored uncompressed: its last id block is
# a full 8 KiB block that ends at the xattr table's header, not at its index.
mkdir -p "$out/xattr512"
for i in $(seq 1 512); do : >"$out/xattr512/f$i"; setfattr -n user.k -v "v$i" "$out/xattr512/f$i"; done
mksquashfs "$out/xattr512" "$out/xattr512.sqfs" -noappend -quiet -no-progress -noX >/dev/null
ops=$("$driver" -v "$out/xattr512.sqfs" | awk '{print $2}')
check "512 uncompressed xattr ids open" [ "${ops:-0}" -gt 512 ]

# Reproducers: small raw images, and patches against a seed in *.patch
# (tests/fuzz/make-patch.py says their form; regress/README.md how they were
# found).  None at all is a failure, as is a patch whose seed is not the
# bytes it was made against: it would walk some other image.
regress=("$top"/tests/fuzz/regress/*)
repro=()
for r in "${regress[@]}"; do
	[ -e "$r" ] || continue
	case $r in
	*.patch)
		seed=$out/seeds/$(sed -n '1s/^seed //p' "$r").sqfs
		if ! why=$(python3 - "$seed" "$r" "$out/$(basename "$r" .patch)" 2>&1 <<'PYEOF'
import hashlib, sys
img = bytearray(open(sys.argv[1], 'rb').read())
for line in open(sys.argv[2]):
    f = line.split()
    if not f or f[0] in ('seed', '#'):
        continue
    if f[0] == 'sha256':
        if hashlib.sha256(img).hexdigest() != f[1]:
            sys.exit('the seed is not the one the patch was made against')
        continue
    if f[0] == 'truncate':
        del img[int(f[1]):]
        continue
    off, data = int(f[0]), bytes.fromhex(f[1])
    img[off:off + len(data)] = data
open(sys.argv[3], 'wb').write(img)
PYEOF
		); then
			not_ok "patch $(basename "$r")" "$(tail -1 <<<"$why")"
			continue
		fi
		repro+=("$out/$(basename "$r" .patch)") ;;
	*.md) ;;
	*) repro+=("$r") ;;
	esac
done
if [ ${#repro[@]} -gt 0 ]; then
	walk_all "fuzzer reproducers (${#repro[@]})" "${repro[@]}"
else
	not_ok "fuzzer reproducers" "none in tests/fuzz/regress/"
fi

python3 tests/fuzz/mutate.py "$out/mut" "$MUTATIONS" "${seeds[@]}"
walk_all "$MUTATIONS corrupted seeds" "$out"/mut/*
