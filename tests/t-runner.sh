#!/bin/bash
# t-runner.sh - tests/run.sh itself, on throwaway tests directories (run.sh
# --dir) with planted cases: a script missing from the directory, one that
# exits 0 early, one that loses a check, one that gains one, one that exits
# non-zero with every check ok, one not in the plan (full and fast tier),
# skips for a listed and an unlisted reason (a check's and a whole
# script's), a unit program with a failed sub-test and one that fails after
# all passed (a leak report), a malformed plan line.  Each must end in its
# exact closing line "N passed, N failed, N skipped" and say its cause in a
# "not ok - NAME: ..." line (or, for a clean run, exit 0 with no "not ok"
# at all).  It also checks that meson's registration of the scripts
# (tests/meson.build) lists every line of tests/plan.txt in a suite for its
# area and one for its tier.
. "$(dirname "$0")/lib/tap.sh"

base=$WORK/runner
rm -rf "$base" && mkdir -p "$base"

# script DIR NAME LINES...: a tests script printing LINES (one "exit N" ends it).
script() {
	local dir=$1 name=$2 l
	shift 2
	{
		for l in "$@"; do
			case $l in exit\ *) echo "$l" ;; *) printf 'echo %q\n' "$l" ;; esac
		done
	} >"$dir/$name.sh"
}

# newcase NAME PLAN-LINES...: an empty tests directory with this plan.
newcase() {
	dir=$base/$1
	mkdir -p "$dir"
	shift
	printf '%s\n' "$@" >"$dir/plan.txt"
}

# expect NAME CLOSING CAUSE [RUN.SH ARGS]: run tests/run.sh --dir on the
# case's directory (its own scratch space: the run's logs are not ours);
# its last line must be CLOSING and a "not ok - " line (the runner's own,
# or a test's that it repeats) must match the ERE CAUSE, with a non-zero exit; an empty CAUSE wants exit 0 and no "not ok".
expect() {
	local name=$1 closing=$2 cause=$3 out st last
	shift 3
	out=$(QUASH_WORK=$base/work-$name "$QUASH_TOP/tests/run.sh" --dir "$base/$name" "$@" 2>&1)
	st=$?
	last=$(tail -n1 <<<"$out")
	if [ "$last" = "$closing" ]; then
		ok "$name: closing line"
	else
		not_ok "$name: closing line" "\"$last\", not \"$closing\""
	fi
	if [ -z "$cause" ]; then
		if [ "$st" -eq 0 ] && ! grep -q '^not ok ' <<<"$out"; then ok "$name: clean"
		else not_ok "$name: clean" "exit $st: $(grep -m1 '^not ok ' <<<"$out")"; fi
	elif [ "$st" -ne 0 ] && grep -qE "^( +[^ ]+: )?not ok - ($cause)" <<<"$out"; then
		ok "$name: not ok names the cause"
	else
		not_ok "$name: not ok names the cause" "exit $st, no /^not ok - $cause/ in: $(grep '^not ok' <<<"$out" | head -3 | tr '\n' '|')"
	fi
}

# A clean run, so that the failures below are the planted cases' own.
newcase clean "t-a fast 2" "t-b full 1"
script "$base/clean" t-a "ok - one" "ok - two"
script "$base/clean" t-b "ok - three"
expect clean "3 passed, 0 failed, 0 skipped" ""
# The fast tier leaves t-b out.
expect clean "2 passed, 0 failed, 0 skipped" "" --tier fast

newcase missing "t-a fast 1" "t-gone fast 3"
script "$base/missing" t-a "ok - one"
expect missing "1 passed, 1 failed, 0 skipped" "t-gone: in .*/plan.txt, but .*/t-gone.sh is missing"

newcase early "t-a fast 3"
script "$base/early" t-a "ok - one" "exit 0" "ok - two" "ok - three"
expect early "1 passed, 1 failed, 0 skipped" "t-a: planned 3 checks, ran 1"

newcase lost "t-a fast 3"
script "$base/lost" t-a "ok - one" "ok - two"
expect lost "2 passed, 1 failed, 0 skipped" "t-a: planned 3 checks, ran 2"

newcase gained "t-a fast 2"
script "$base/gained" t-a "ok - one" "ok - two" "ok - three"
expect gained "3 passed, 1 failed, 0 skipped" "t-a: planned 2 checks, ran 3"

newcase status "t-a fast 2"
script "$base/status" t-a "ok - one" "ok - two" "exit 3"
expect status "2 passed, 1 failed, 0 skipped" "t-a: exited with status 3"

newcase unplanned "t-a fast 1"
script "$base/unplanned" t-a "ok - one"
script "$base/unplanned" t-new "ok - new one"
expect unplanned "2 passed, 1 failed, 0 skipped" "t-new: not in .*/plan.txt \(add \"t-new TIER 1\"\)"
# The fast tier cannot run a script it has no tier for: it says so.
expect unplanned "1 passed, 1 failed, 0 skipped" "t-new: not in .*/plan.txt \(add \"t-new TIER COUNT\"\)" --tier fast

newcase skip-listed "t-a fast 3" "t-b fast 4"
script "$base/skip-listed" t-a "ok - one" "ok - two # SKIP not root" "ok - three"
script "$base/skip-listed" t-b "1..0 # SKIP not root"
expect skip-listed "2 passed, 0 failed, 5 skipped" ""

newcase skip-unlisted "t-a fast 2"
script "$base/skip-unlisted" t-a "ok - one" "ok - two # SKIP no coffee"
expect skip-unlisted "1 passed, 1 failed, 0 skipped" "t-a: two # SKIP no coffee  \(a skip reason tests/run.sh does not allow\)"

newcase skip-whole "t-a fast 1" "t-b fast 4"
script "$base/skip-whole" t-a "ok - one"
script "$base/skip-whole" t-b "1..0 # SKIP no coffee"
expect skip-whole "1 passed, 1 failed, 0 skipped" "t-b: skipped whole for a reason not allowed \(tests/run.sh\): no coffee"

# unit.sh stands in for meson's unit suite: it writes the log meson would.
newcase unit "unit fast 4"
cat >"$base/unit/unit.sh" <<'UNIT'
cat >"$1" <<'LOG'
==================================== 1/2 =====================================
test:         good
result:       exit status 1
----------------------------------- stdout -----------------------------------
[==========] Running 2 test(s).
[ RUN      ] test_one
[       OK ] test_one
[ RUN      ] test_two
[       OK ] test_two
----------------------------------- stderr -----------------------------------
==1==ERROR: LeakSanitizer: detected memory leaks
==============================================================================

==================================== 2/2 =====================================
test:         bad
result:       exit status 1
----------------------------------- stdout -----------------------------------
[==========] Running 2 test(s).
[ RUN      ] test_three
[  FAILED  ] test_three
[ RUN      ] test_four
[       OK ] test_four
==============================================================================
LOG
exit 1
UNIT
expect unit "3 passed, 2 failed, 0 skipped" "unit/bad: test_three"
expect unit "3 passed, 2 failed, 0 skipped" "unit: good: exit status 1, no sub-test failed"

newcase badplan "t-a fast 1" "t-b quick 1"
script "$base/badplan" t-a "ok - one"
script "$base/badplan" t-b "ok - two"
expect badplan "2 passed, 2 failed, 0 skipped" ".*/plan.txt line 2: \"t-b quick 1 \" is not NAME fast\|full COUNT"

# meson's registration: every plan line a test in its area's suite and its tier's.
# build.ninja first: meson reads the plan when it configures.
if ninja -C "$QUASH_TOP/build" build.ninja >/dev/null 2>&1 && listed=$(meson test -C "$QUASH_TOP/build" --no-rebuild --list 2>/dev/null); then
	bad=
	while read -r name tier count; do
		[ -z "$name" ] || [[ $name == \#* ]] || [ "$name" = unit ] && continue
		grep -qE "^quash:[a-z]+\+$tier / $name\$" <<<"$listed" || bad+=" $name"
	done <"$QUASH_TOP/tests/plan.txt"
	if [ -z "$bad" ]; then ok "meson test lists every script of the plan in its area and tier"
	else not_ok "meson test lists every script of the plan in its area and tier" "missing or misfiled:$bad"; fi
else
	not_ok "meson test lists every script of the plan in its area and tier" "meson test -C build --list failed"
fi
