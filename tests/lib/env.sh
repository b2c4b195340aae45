# env.sh - sourced by tests/run.sh and tests/lib/meson-tap.sh: the
# environment every tests/t-*.sh runs in, so that a script gives the same
# result run either way.  Needs $top (the checkout); returns non-zero, with
# a line on stderr, when the machine cannot run the tests as they are.
#
#   QUASH_TOP        the checkout
#   QUASH_BIN        the release binary (build/cli/quash)
#   QUASH_ASAN_BIN   the ASan+UBSan binary (build-asan/cli/quash)
#   QUASH_WORK       scratch space, one per checkout
#   PATH             Debian's peers first, then the interpreter pyenv's shims name
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
# the interpreter anew each time, a start costs several times the
# interpreter's own: put what the shims resolve to first on PATH.
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ] &&
	[ "$(command -v python3)" != "$py" ]; then
	mkdir -p "$QUASH_WORK/bin"
	for c in python3 aws; do
		[ -x "${py%/*}/$c" ] && ln -sfn "${py%/*}/$c" "$QUASH_WORK/bin/$c"
	done
	case :$PATH: in *:"$QUASH_WORK/bin":*) ;; *) export PATH=$QUASH_WORK/bin:$PATH ;; esac
fi
# The peers the tests compare against are Debian's own tools, never quash
# posing as one (make install DROPIN=1 puts mksquashfs, squashfuse and
# squashfuse_ll links before them on PATH): each goes first on PATH from
# /usr/bin, and one that is quash stops the run.
quash_peers=$QUASH_WORK/peers
rm -rf "$quash_peers" && mkdir -p "$quash_peers"
for t in mksquashfs unsquashfs sqfstar squashfuse squashfuse_ll gensquashfs tar2sqfs sqfs2tar rdsquashfs; do
	[ -x "/usr/bin/$t" ] || continue
	case $(basename "$(readlink -f "/usr/bin/$t")") in
	quash*) echo "tests: /usr/bin/$t is quash, not the peer the tests compare with" >&2; return 1 ;;
	esac
	ln -s "/usr/bin/$t" "$quash_peers/$t"
done
case :$PATH: in *:"$quash_peers":*) ;; *) export PATH=$quash_peers:$PATH ;; esac
