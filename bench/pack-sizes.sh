#!/bin/bash
# pack-sizes.sh - quash pack's default image against mksquashfs's default
# image, on several kinds of tree: issue 14 asks that the defaults never
# make the larger one.  Prints both sizes and the ratio for each tree, and
# PASS or FAIL.  Sizes do not depend on the load, so one run says it.
#
#   bench/pack-sizes.sh [TREE...]
# Default trees: documentation (text, much of it gzipped), C headers,
# executables, a Python installation, and two generated ones: a mix of
# text, binaries and random bytes, and 100,000 files of 5-10 bytes.
# Environment: BENCH_WORK (scratch, default /var/tmp/quash-bench: the
# generated trees are kept there), QUASH.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
W=${BENCH_WORK:-/var/tmp/quash-bench}
[ -x "$QUASH" ] || { echo "pack-sizes.sh: $QUASH not built (make build)" >&2; exit 1; }
command -v mksquashfs >/dev/null || { echo "pack-sizes.sh: mksquashfs missing (make test-deps)" >&2; exit 1; }
mkdir -p "$W"
trap 'rm -f "$W"/sizes-*.sqfs' EXIT

# The mixed tree: text (this project's sources, each several times over with
# changes), executables, and random bytes, in files of every size class.
MIX=$W/sizes-mix
if [ ! -f "$MIX.done" ]; then
	rm -rf "$MIX"
	python3 - "$MIX" "$top" <<'PY'
import os, random, shutil, sys
root, top = sys.argv[1], sys.argv[2]
random.seed(14)
texts = []
for d, _, fs in os.walk(top):
    if "/.git" in d or "/build" in d:
        continue
    texts += [os.path.join(d, f) for f in fs if f.endswith((".c", ".h", ".md", ".sh", ".py"))]
bins = [os.path.join("/usr/bin", f) for f in sorted(os.listdir("/usr/bin"))[:400]]
for i in range(3000):
    d = os.path.join(root, f"d{i % 40:02d}")
    os.makedirs(d, exist_ok=True)
    kind = random.random()
    p = os.path.join(d, f"f{i:04d}")
    if kind < 0.5:
        src = random.choice(texts)
        with open(src, "rb") as f:
            b = f.read()
        b = b[random.randint(0, len(b) // 2):] * random.randint(1, 3)
        with open(p, "wb") as f:
            f.write(b)
    elif kind < 0.8:
        src = random.choice(bins)
        if os.path.isfile(src) and not os.path.islink(src):
            shutil.copyfile(src, p)
    else:
        with open(p, "wb") as f:
            f.write(os.urandom(random.choice([100, 5000, 70000, 300000])))
PY
	touch "$MIX.done"
fi
SMALL=$W/sizes-small
if [ ! -f "$SMALL.done" ]; then
	rm -rf "$SMALL"
	python3 - "$SMALL" <<'PY'
import os, random, sys
root = sys.argv[1]
random.seed(14)
for d in range(100):
    p = f"{root}/d{d:03d}"
    os.makedirs(p)
    for f in range(1000):
        with open(f"{p}/f{f:03d}", "w") as fh:
            fh.write("".join(random.choice("abcdefghij") for _ in range(random.randint(5, 10))))
PY
	touch "$SMALL.done"
fi

if [ $# -gt 0 ]; then
	TREES=("$@")
else
	TREES=(/usr/share/doc /usr/include /usr/bin)
	for t in /root/.pyenv/versions/3.11.7 /usr/lib/python3.11; do
		[ -d "$t" ] && { TREES+=("$t"); break; }
	done
	TREES+=("$MIX" "$SMALL")
fi

echo "$(mksquashfs -version | head -1); both at their defaults"
fail=0
for t in "${TREES[@]}"; do
	rm -f "$W/sizes-q.sqfs" "$W/sizes-m.sqfs"
	"$QUASH" pack -q --no-progress "$t" "$W/sizes-q.sqfs" 2>"$W/sizes.err" ||
		{ echo "  $t: quash pack failed: $(head -1 "$W/sizes.err")"; fail=1; continue; }
	mksquashfs "$t" "$W/sizes-m.sqfs" -noappend -quiet -no-progress >/dev/null 2>&1 ||
		{ echo "  $t: mksquashfs failed"; fail=1; continue; }
	q=$(stat -c %s "$W/sizes-q.sqfs") m=$(stat -c %s "$W/sizes-m.sqfs")
	verdict=PASS
	[ "$q" -le "$m" ] || { verdict=FAIL; fail=1; }
	awk -v t="$t" -v q="$q" -v m="$m" -v v="$verdict" \
		'BEGIN { printf "  %s %-40s quash %12d B  mksquashfs %12d B  %+.2f%%\n", v, t, q, m, (q / m - 1) * 100 }'
done
exit $fail
