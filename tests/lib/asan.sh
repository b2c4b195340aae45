# asan.sh - sourced after tap.sh by scripts that run $QUASH_ASAN.  A run of
# the sanitizer build counts only if its exit status is the one wanted and
# its stderr holds no sanitizer report: LeakSanitizer exits non-zero after
# complete output, and UBSan can report and still exit 0, so neither the
# output nor the status alone shows a clean run.
#
#   asan_clean FILE        FILE (a stderr log) holds no sanitizer report
#   asan_ok STATUS FILE    STATUS is 0 and FILE holds no report; else says why
#   qa OUT CMD...          run CMD with stdout to OUT and stderr to OUT.err;
#                          succeed iff asan_ok (no pipe hides its status)
#   one_line CMD...        run CMD passing its stderr on; exit 125 instead
#                          of CMD's status (and say both on stderr) unless
#                          that stderr was one line
#                          (for check_fails: one line naming the problem)
#   two_lines CMD...       the same for two lines (a usage error and the
#                          line pointing to --help)
#   ere TEXT               print TEXT as an ERE matching it literally, for
#                          check_fails patterns holding paths
#   asan_as PATH           make PATH run the sanitizer build under PATH's
#                          name (mksquashfs, sqfstar), noting each run that
#                          ends in a sanitizer's exit status (UBSan 98,
#                          ASan and LeakSanitizer 99, as tests/run.sh sets
#                          them) for asan_as_clean
#   asan_as_clean PATH     no run of PATH so far drew a sanitizer report

asan_clean() {
	! grep -qE 'Sanitizer|runtime error:' "$1"
}

asan_ok() {   # asan_ok STATUS FILE
	if [ "$1" != 0 ]; then
		echo "exit $1: $(head -c 300 "$2")"
		return 1
	fi
	if ! asan_clean "$2"; then
		echo "sanitizer report: $(grep -m1 -E 'Sanitizer|runtime error:' "$2")"
		return 1
	fi
}

qa() {   # qa OUT CMD...
	local out=$1 st; shift
	"$@" >"$out" 2>"$out.err"
	st=$?
	asan_ok "$st" "$out.err"
}

stderr_lines() {   # stderr_lines N CMD...
	local n=$1 err=$WORK/stderr_lines.$$.$BASHPID st; shift
	"$@" 2>"$err"
	st=$?
	cat "$err" >&2
	if [ "$(wc -l <"$err")" != "$n" ]; then
		echo "(exit $st, $(wc -l <"$err") lines of stderr, not $n)" >&2
		st=125
	fi
	rm -f "$err"
	return "$st"
}
one_line() { stderr_lines 1 "$@"; }
two_lines() { stderr_lines 2 "$@"; }

ere() {
	sed 's/[][\\.^$*+?(){}|]/\\&/g' <<<"$1"
}

asan_as() {   # asan_as PATH
	rm -f "$1.sanitizer"
	cat >"$1" <<EOF
#!/bin/bash
# The sanitizer build as \$0 (its name chooses the calling form); a run
# that ends in a sanitizer's exit status is noted for asan_as_clean.
(exec -a "\$0" "$QUASH_ASAN" "\$@")
st=\$?
case \$st in 98|99) echo "exit \$st: \${0##*/} \$*" >>"$1.sanitizer" ;; esac
exit \$st
EOF
	chmod +x "$1"
}

asan_as_clean() {   # asan_as_clean PATH
	[ ! -s "$1.sanitizer" ] || { head -3 "$1.sanitizer"; return 1; }
}
