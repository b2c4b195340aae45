# tap.sh - sourced by tests/t-*.sh: TAP output and small checks.
#
#   ok NAME / not_ok NAME [DETAIL]    report one case
#   check NAME CMD...                 ok if CMD succeeds
#   check_fails NAME STATUS PATTERN CMD...
#                                     ok if CMD fails as expected: exit STATUS,
#                                     stderr matching the ERE PATTERN, no
#                                     sanitizer report
#   skip_check NAME REASON            a check this machine cannot run, and why:
#                                     "ok - NAME # SKIP REASON" (the runner
#                                     counts it skipped if it allows REASON)
set -u
QUASH=${QUASH_BIN:?run through tests/run.sh}
QUASH_ASAN=${QUASH_ASAN_BIN:?}
WORK=${QUASH_WORK:?}

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1${2:+: $2}"; }
skip_check() { echo "ok - $1 # SKIP $2"; }

check() {
	local name=$1; shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# Run CMD; succeed if it exited with exactly STATUS, said something matching
# the extended regex PATTERN on stderr, and neither crashed nor drew a
# sanitizer report (ASan exits 99, UBSan 98, LeakSanitizer 23 if asked,
# signals 128+).  A failure check that accepts any error passes for the
# wrong error too: a mismatch, a crash in a helper, a typo in an option.
check_fails() {   # check_fails NAME STATUS PATTERN CMD...
	local name=$1 want=$2 pat=$3 st err=$WORK/stderr.$$; shift 3
	"$@" >/dev/null 2>"$err"
	st=$?
	if [ "$st" != "$want" ]; then
		not_ok "$name" "exit $st, not $want: $(head -c 300 "$err")"
	elif grep -qE 'Sanitizer|runtime error:' "$err"; then
		not_ok "$name" "sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error:' "$err")"
	elif ! grep -qE -- "$pat" "$err"; then
		not_ok "$name" "stderr lacks /$pat/: $(head -c 300 "$err")"
	else
		ok "$name"
	fi
	rm -f "$err"
}
