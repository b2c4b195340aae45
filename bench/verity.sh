#!/bin/bash
# verity.sh - quash verity verify against veritysetup verify on the same
# 1 GiB image and tree (sha256, 4 KiB blocks, the file in the page cache),
# in interleaved rounds so that the load of a shared machine falls on both
# alike.  Prints each round's seconds, the range of each, and the ratio of
# the medians as speed (veritysetup's time / quash's).  Target: >= 0.9x.
# Not part of any test run.
#
#   bench/verity.sh [SIZE_MIB]      default 1024
# Environment: BENCH_WORK (scratch, default /tmp/quash-bench), QUASH
# (binary), ROUNDS (default 5).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
QUASH=${QUASH:-$top/build/cli/quash}
W=${BENCH_WORK:-/tmp/quash-bench}/verity
ROUNDS=${ROUNDS:-5}
MIB=${1:-1024}

[ -x "$QUASH" ] || { echo "verity.sh: $QUASH not built (make build)" >&2; exit 1; }
command -v veritysetup >/dev/null || { echo "verity.sh: veritysetup missing (make test-deps)" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W"
trap 'rm -rf "$W"' EXIT

# Random data: what a compressed image's blocks look like to a hash.
head -c $((MIB << 20)) /dev/urandom >"$W/img"
root=$("$QUASH" verity format "$W/img" "$W/tree" | awk '/^Root hash:/ { print $3 }')
veritysetup verify "$W/img" "$W/tree" "$root" || { echo "verity.sh: veritysetup refuses quash's tree" >&2; exit 1; }
cat "$W/img" "$W/tree" >/dev/null
echo "image: $MIB MiB, $(nproc) cores, $(veritysetup --version), load $(cut -d' ' -f1-3 /proc/loadavg)"

secs() {   # secs CMD...: wall seconds of one run, which must succeed
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null || { echo "verity.sh: '$*' failed" >&2; exit 1; }
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}

q=() v=()
for r in $(seq "$ROUNDS"); do
	# Alternate which goes first, so neither always follows the other's cache warmth.
	if [ $((r % 2)) = 1 ]; then
		q+=("$(secs "$QUASH" verity verify "$W/img" "$W/tree" "$root")")
		v+=("$(secs veritysetup verify "$W/img" "$W/tree" "$root")")
	else
		v+=("$(secs veritysetup verify "$W/img" "$W/tree" "$root")")
		q+=("$(secs "$QUASH" verity verify "$W/img" "$W/tree" "$root")")
	fi
	printf 'round %d: quash %.3f s, veritysetup %.3f s\n' "$r" "${q[-1]}" "${v[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
range() { printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.3f-%.3f", lo, hi }'; }
qm=$(median "${q[@]}") vm=$(median "${v[@]}")
printf 'quash verity verify:  median %.3f s (range %s)\n' "$qm" "$(range "${q[@]}")"
printf 'veritysetup verify:   median %.3f s (range %s)\n' "$vm" "$(range "${v[@]}")"
printf 'speed ratio (veritysetup time / quash time): %.2fx (target >= 0.9x)\n' "$(echo "$vm / $qm" | bc -l)"
