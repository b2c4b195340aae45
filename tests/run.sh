#!/bin/bash
# Run every test and end with one line: "N passed, N failed".
#
# Unit tests are the cmocka programs meson knows (run under ASan/UBSan).
# Integration tests are tests/t-*.sh; each prints TAP lines ("ok - ..." /
# "not ok - ...") and this script counts them.  A script that exits non-zero
# without reporting a failure counts as one failure itself.
#
#   tests/run.sh [PATTERN]     only scripts whose name contains PATTERN
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

export QUASH_TOP=$top
export QUASH_BIN=${QUASH_BIN:-$top/build/cli/quash}
export QUASH_ASAN_BIN=${QUASH_ASAN_BIN:-$top/build-asan/cli/quash}
# Per checkout, so that two trees on one machine never share scratch space.
export QUASH_WORK=${QUASH_WORK:-/tmp/quash-tests-$(printf %s "$top" | md5sum | cut -c1-8)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=98}
mkdir -p "$QUASH_WORK"
# The tests start python3 hundreds of times (oracles, proxies, servers),
# and the aws CLI.  Where these are pyenv's shims, bash scripts that find
# the interpreter anew each time, a start costs 0.3-0.4 s against 0.05 s
# for the interpreter itself: put what the shims resolve to first on PATH.
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ] &&
	[ "$(command -v python3)" != "$py" ]; then
	mkdir -p "$QUASH_WORK/bin"
	for c in python3 aws; do
		[ -x "${py%/*}/$c" ] && ln -sfn "${py%/*}/$c" "$QUASH_WORK/bin/$c"
	done
	export PATH=$QUASH_WORK/bin:$PATH
fi
log=$QUASH_WORK/logs
rm -rf "$log" && mkdir -p "$log"

pass=0 fail=0
failed_names=()

count() {   # count NAME LOGFILE STATUS
	local name=$1 file=$2 status=$3 p f
	p=$(grep -c '^ok ' "$file" || true)
	f=$(grep -c '^not ok ' "$file" || true)
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited with status $status" >>"$file"
	fi
	pass=$((pass + p)) fail=$((fail + f))
	if [ "$f" -gt 0 ]; then
		failed_names+=("$name")
		grep '^not ok ' "$file" | head -20 | sed "s|^|  $name: |"
	fi
	printf '%-28s %4d passed %4d failed  (%ss)\n' "$name" "$p" "$f" "$4"
}

filter=${1:-}

if [ -z "$filter" ] || [ "$filter" = unit ]; then
	start=$SECONDS
	meson test -C build-asan --suite unit --print-errorlogs >"$log/unit.log" 2>&1
	status=$?
	# One TAP line per meson test so that each unit program counts.
	sed -n 's/^ *[0-9]*\/[0-9]* \(.*\) \+OK .*/ok - \1/p; s/^ *[0-9]*\/[0-9]* \(.*\) \+FAIL .*/not ok - \1/p' \
		"$log/unit.log" | sed 's/  */ /g' >"$log/unit.tap"
	count unit "$log/unit.tap" "$status" $((SECONDS - start))
fi

for t in tests/t-*.sh; do
	name=$(basename "$t" .sh)
	[ -n "$filter" ] && [[ "$name" != *"$filter"* ]] && continue
	start=$SECONDS
	timeout 1200 bash "$t" >"$log/$name.log" 2>&1
	status=$?
	count "$name" "$log/$name.log" "$status" $((SECONDS - start))
done

[ ${#failed_names[@]} -gt 0 ] && echo "logs: $log/"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
