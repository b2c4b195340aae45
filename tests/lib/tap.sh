# tap.sh - sourced by tests/t-*.sh: TAP output and small checks.
#
#   ok NAME / not_ok NAME [DETAIL]    report one case
#   check NAME CMD...                 ok if CMD succeeds
#   check_fails NAME CMD...           ok if CMD fails cleanly: non-zero exit,
#                                     no sanitizer report, no signal
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

# Run CMD; succeed if it exited 1..97 (a clean error), not a crash or a
# sanitizer report (ASan exits 99, UBSan 98, signals 128+).
check_fails() {
	local name=$1 st; shift
	"$@" >/dev/null 2>"$WORK/stderr.$$"
	st=$?
	if [ $st -ge 1 ] && [ $st -le 97 ]; then ok "$name"
	else not_ok "$name" "exit $st: $(head -c 300 "$WORK/stderr.$$")"; fi
	rm -f "$WORK/stderr.$$"
}
