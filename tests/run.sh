#!/bin/bash
# Run the tests and end with one line: "N passed, N failed, N skipped".
#
#   tests/run.sh                      everything (make check-full, CI)
#   tests/run.sh --tier fast          the fast tier only (make check)
#   tests/run.sh [--tier T] PATTERN   only the tests whose name contains PATTERN
#   tests/run.sh --dir DIR ...        DIR's plan.txt and t-*.sh instead of tests/'s,
#                                     and DIR/unit.sh (if there) instead of meson's
#                                     unit suite: it writes a meson test log to the
#                                     file $1 and exits as meson test would.  For
#                                     tests/t-runner.sh's planted cases.
#
# Scripts run in tests/lib/env.sh's environment (QUASH_BIN, QUASH_ASAN_BIN,
# QUASH_WORK, Debian's peers first on PATH), as under meson, whose
# `meson test -C build --suite AREA` runs them one by one (tests/meson.build,
# tests/lib/meson-tap.sh): it checks each script's count against the plan,
# but not skip reasons, units or the plan as a whole, which are this
# runner's alone.
#
# Unit tests are the cmocka programs meson knows (suite unit, run under
# ASan/UBSan), counted one sub-test at a time from meson's log.  Integration
# tests are tests/t-*.sh; each prints TAP lines ("ok - ..." / "not ok - ...").
#
# The plan, tests/plan.txt, says what each test must report, one line each:
#
#   NAME TIER COUNT        e.g.  t-mount-tree fast 55
#
# NAME is "unit" (every cmocka sub-test) or a script tests/NAME.sh.  TIER is
# "fast" (make check) or "full" (only make check-full).  COUNT is the number
# of checks it reports, skipped ones included.  Each of these counts as one
# more failure, said in a line "not ok - NAME: ...":
#   - a test that reports more or fewer checks than planned ("planned N
#     checks, ran M": a script that stopped early, or lost or gained a check);
#   - a script that exits non-zero without reporting a failure (a unit
#     program likewise: a leak report comes after its sub-tests passed);
#   - a script that is not in the plan;
#   - with no PATTERN: a plan line whose script is missing from tests/.
# So when a script gains or loses checks on purpose, its line changes too.
#
# Skips: a check that cannot run on this machine prints
# "ok - NAME # SKIP REASON" (skip_check in tests/lib/tap.sh; a cmocka test
# prints "# SKIP REASON" before skip()), a script that cannot run at all
# prints "1..0 # SKIP REASON" alone, which skips its COUNT checks.  A skip
# counts as skipped, not passed, and only for a REASON listed here; any
# other reason counts as a failure.
SKIP_REASONS=(
	"not root"
	"mksquashfs is not installed"
	"man is not installed"
	"quash is not installed on mount's PATH"
	"no FUSE over io_uring in this kernel"
	"no memory cgroup can be made here"
)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

tier=full pattern= tests=tests
while [ $# -gt 0 ]; do
	case $1 in
	--tier) tier=${2:-}; shift 2 || shift ;;
	--tier=*) tier=${1#--tier=}; shift ;;
	--dir) tests=${2:-}; shift 2 || shift ;;
	-*) echo "usage: tests/run.sh [--tier fast|full] [--dir DIR] [PATTERN]" >&2; exit 2 ;;
	*) pattern=$1; shift ;;
	esac
done
case $tier in fast|full) ;; *) echo "tests/run.sh: --tier is fast or full" >&2; exit 2 ;; esac
[ -f "$tests/plan.txt" ] || { echo "tests/run.sh: $tests/plan.txt: no such file" >&2; exit 2; }

. tests/lib/env.sh || exit 1
log=$QUASH_WORK/logs
rm -rf "$log" && mkdir -p "$log"

pass=0 fail=0 skipped=0 ran_any=
failed_names=()

problem() {   # problem TEXT: a failure of the runner's own ("not ok - TEXT")
	echo "not ok - $1"
	fail=$((fail + 1))
}

skip_allowed() {
	local r
	for r in "${SKIP_REASONS[@]}"; do [ "$1" = "$r" ] && return 0; done
	return 1
}

# count NAME LOG STATUS SECONDS [PROBLEM...]: add up the TAP lines in LOG,
# check them against the plan; each PROBLEM (and each found here) is one
# more failure.
count() {
	local name=$1 file=$2 status=$3 secs=$4 p f s ran line reason all want
	shift 4
	local problems=("$@") bad_skips=()
	f=$(grep -c '^not ok ' "$file")
	s=$(grep -c '^ok .*# SKIP' "$file")
	p=$(($(grep -c '^ok ' "$file") - s))
	ran=$((p + f + s))
	while IFS= read -r line; do
		reason=${line##*# SKIP}
		reason=${reason# }
		skip_allowed "$reason" || bad_skips+=("$line")
	done < <(grep '^ok .*# SKIP' "$file")
	s=$((s - ${#bad_skips[@]})) f=$((f + ${#bad_skips[@]}))
	want=${plan_count[$name]:-}
	all=$(sed -n 's/^1\.\.0 # SKIP *//p' "$file" | head -1)
	if [ -n "$all" ] && [ "$ran" -eq 0 ]; then
		if skip_allowed "$all"; then s=${want:-0} ran=${want:-0}
		else problems+=("skipped whole for a reason not allowed (tests/run.sh): $all") ran=${want:-0}; fi
	fi
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && [ ${#problems[@]} -eq 0 ]; then
		problems+=("exited with status $status")
	fi
	if [ -z "$want" ]; then
		problems+=("not in $tests/plan.txt (add \"$name TIER $ran\")")
	elif [ "$ran" -ne "$want" ]; then
		problems+=("planned $want checks, ran $ran")
	fi
	pass=$((pass + p)) skipped=$((skipped + s))
	if [ "$f" -gt 0 ] || [ ${#problems[@]} -gt 0 ]; then
		failed_names+=("$name")
		grep '^not ok ' "$file" | head -20 | sed "s|^|  $name: |"
		for line in "${bad_skips[@]:0:20}"; do
			echo "not ok - $name: ${line#ok - }  (a skip reason tests/run.sh does not allow)"
		done
	fi
	printf '%-28s %4d passed %4d failed %4d skipped  (%ss)\n' "$name" "$p" "$f" "$s" "$secs"
	fail=$((fail + f))
	for line in "${problems[@]}"; do
		problem "$name: $line"
		echo "not ok - $name: $line" >>"$file"
	done
}

# ---- the plan -------------------------------------------------------------------
declare -A plan_tier plan_count
planned=()
n=0
while read -r name t c extra; do
	n=$((n + 1))
	[ -z "$name" ] || [[ $name == \#* ]] && continue
	if [[ ! $t =~ ^(fast|full)$ || ! $c =~ ^[0-9]+$ || -n $extra || -n ${plan_count[$name]:-} ]]; then
		problem "$tests/plan.txt line $n: \"$name $t $c $extra\" is not NAME fast|full COUNT, once a name"
		continue
	fi
	plan_tier[$name]=$t plan_count[$name]=$c
	planned+=("$name")
done <"$tests/plan.txt"

scripts=()
for t in "$tests"/t-*.sh; do [ -f "$t" ] && scripts+=("$(basename "$t" .sh)"); done
if [ -z "$pattern" ]; then
	for name in "${planned[@]}"; do
		[ "$name" = unit ] || [ -f "$tests/$name.sh" ] ||
			problem "$name: in $tests/plan.txt, but $tests/$name.sh is missing"
	done
fi

matches() { [[ -z $pattern || $1 == *"$pattern"* ]]; }
selected() { matches "$1" && { [ "$tier" = full ] || [ "${plan_tier[$1]:-}" = fast ]; }; }

# ---- running them ----------------------------------------------------------------------
# run_units: meson's unit suite; one TAP line per cmocka sub-test in
# unit.log, from each program's stdout in meson's log.  A program that ended
# with another status than 0 and no failed sub-test gets a line in
# unit.problems (meson's skip, exit status 77, among them).
run_units() {
	local status testlog=build-asan/meson-logs/testlog.txt
	if [ "$tests" != tests ]; then
		testlog=$log/unit.testlog
		bash "$tests/unit.sh" "$testlog" >"$log/unit.meson" 2>&1
		status=$?
	else
		rm -f "$testlog"
		meson test -C build-asan --suite unit --print-errorlogs >"$log/unit.meson" 2>&1
		status=$?
	fi
	: >"$log/unit.problems"
	awk -v problems="$log/unit.problems" '
		function flush() {
			if (run != "") print "not ok - unit/" prog ": " run ": no result (the program died in it)"
			if (prog != "" && result != "exit status 0" && !failed && run == "")
				print prog ": " result ", no sub-test failed" >problems
			run = ""; prog = ""
		}
		/^test: /                   { flush(); prog = $2; failed = 0; out = 0; next }
		/^result: /                 { sub(/^result: +/, ""); result = $0; next }
		/^-+ stdout -+$/            { out = 1; next }
		/^-+ stderr -+$/ || /^=+$/  { out = 0; next }
		!out                        { next }
		/^\[ RUN      \] /          { run = substr($0, 14); why = ""; next }
		/^# SKIP /                  { why = substr($0, 8); next }
		/^\[       OK \] /          { print "ok - unit/" prog ": " substr($0, 14); run = ""; next }
		/^\[  FAILED  \] /          { print "not ok - unit/" prog ": " substr($0, 14); failed = 1; run = ""; next }
		/^\[  SKIPPED \] /          { print "ok - unit/" prog ": " substr($0, 14) " # SKIP " why; run = ""; next }
		END                         { flush() }' "$testlog" >"$log/unit.log" 2>/dev/null
	return $status
}

units=(unit)
[ "$tests" = tests ] || [ -f "$tests/unit.sh" ] || units=()
for name in "${units[@]}" "${scripts[@]}"; do
	# A script not in the plan has no tier: a full run runs it (its count
	# says what to plan), the fast tier only says so.
	if [ -z "${plan_tier[$name]:-}" ] && [ "$tier" = fast ]; then
		matches "$name" && problem "$name: not in $tests/plan.txt (add \"$name TIER COUNT\")"
		continue
	fi
	selected "$name" || continue
	start=$SECONDS problems=()
	if [ "$name" = unit ]; then
		run_units
		status=$?
		mapfile -t problems <"$log/unit.problems"
	else
		timeout 1200 bash "$tests/$name.sh" >"$log/$name.log" 2>&1
		status=$?
	fi
	count "$name" "$log/$name.log" "$status" $((SECONDS - start)) "${problems[@]}"
	ran_any=1
done
[ -n "$pattern" ] && [ -z "$ran_any" ] && problem "no test of the $tier tier matches \"$pattern\""

[ ${#failed_names[@]} -gt 0 ] && echo "logs: $log/"
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
