#!/bin/bash
# t-docs.sh - the man pages and the bash completion: every page renders
# without a groff warning and has the usual sections, meson installs every
# page, every page is a command, every option the --help of each command and
# catalog subcommand lists is in its page and offered by the completion (so
# neither can drift from the code; a --help that fails or is empty fails),
# and the completion completes commands, options, values, files and
# directories.
. "$(dirname "$0")/lib/tap.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-docs
rm -rf "$W" && mkdir -p "$W"
comp=$top/docs/quash.bash-completion

# ---- the pages ---------------------------------------------------------------
for page in "$top"/docs/*.1; do
	name=$(basename "$page")
	groff -man -ww -z "$page" 2>"$W/groff.err"
	check "$name renders without warnings (groff -ww)" test ! -s "$W/groff.err"
	if command -v man >/dev/null; then
		check "$name: man -l renders it" bash -c "MANWIDTH=80 man -l '$page' 2>&1 >/dev/null | (! grep -q .)"
	else
		skip_check "$name: man -l renders it" "man is not installed"
	fi
	missing=""
	for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
		grep -qx "\\.SH \"\\?$section\"\\?" "$page" || missing="$missing, $section"
	done
	check "$name has the usual sections${missing:+ (missing:${missing#,})}" test -z "$missing"
	check "$name is installed (cli/meson.build install_man)" grep -q "install_man(.*'../docs/$name'" "$top/cli/meson.build"
	missing=""
	for ref in $(grep -o 'quash\\-[a-z][a-z]*' "$page" | sed 's/\\//' | sort -u); do
		[ -f "$top/docs/$ref.1" ] || missing="$missing $ref"
	done
	check "$name: every quash-* page it names exists${missing:+ (missing:$missing)}" test -z "$missing"
done

# Every command 'quash --help' lists has a page, and every page is a command's.
commands=$("$QUASH" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
missing=""
for page in "$top"/docs/quash-*.1; do
	cmd=$(basename "$page" .1); cmd=${cmd#quash-}
	grep -qx -- "$cmd" <<<"$commands" || missing="$missing $cmd"
done
check "every quash-*.1 page is a command quash --help lists${missing:+ (not listed:$missing)}" test -z "$missing"
for cmd in $commands; do
	case $cmd in
	mksquashfs) page=quash-pack.1 ;;
	*) page=quash-$cmd.1 ;;
	esac
	check "quash $cmd has a page ($page)" test -f "$top/docs/$page"
done

# ---- the pages and the completion against --help -------------------------------
# The completion's offer after WORD...; the last word is the one completed.
complete_words() {
	(cd "$W" && bash -c '
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_quash "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@")
}
page_has() {   # page_has PAGE OPTION: the option as groff spells it (\- for -)
	local esc=${2//-/\\\\-}
	grep -q -- "$esc" "$1"
}

# Every command of 'quash --help' but mksquashfs (below, with its own
# -help) and catalog, whose subcommands are listed instead, each with its
# own --help (profile's options are those of paths).  The options are the
# names in the option column of --help; a --help that fails or lists no
# --help fails the check, as an empty help would otherwise miss nothing.
subcommands=$("$QUASH" catalog --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
offered=" $(complete_words quash catalog '' | tr '\n' ' ')"
missing=""
for sub in $subcommands; do [[ $offered == *" $sub "* ]] || missing="$missing $sub"; done
check "quash catalog: the completion offers every subcommand of --help ($(echo $subcommands))${missing:+ (missing:$missing)}" \
	test -n "$subcommands" -a -z "$missing"
for cmd in "" $(grep -vx 'mksquashfs\|catalog' <<<"$commands") $(sed 's/^/catalog:/' <<<"$subcommands"); do
	cmd=${cmd/:/ }
	page=$top/docs/quash${cmd:+-${cmd%% *}}.1
	"$QUASH" $cmd --help >"$W/help" 2>&1
	st=$?
	longs=$(sed -nE 's/^ +(-.*)/\1/p' "$W/help" | sed -E 's/ {2,}.*//' | grep -o -- '--[a-z][a-z-]*' | sort -u)
	shorts=$(grep -o -- '^ *-[A-Za-z]\b' "$W/help" | tr -d ' ' | sort -u)
	missing=""
	[ "$st" = 0 ] || missing=" (--help exits $st)"
	grep -qx -- --help <<<"$longs" || missing="$missing (--help lists no --help)"
	for opt in $longs $shorts; do
		page_has "$page" "$opt" || missing="$missing $opt"
	done
	check "quash${cmd:+ $cmd}: every option of --help is in $(basename "$page")${missing:+ (missing:$missing)}" \
		test -z "$missing"
	[ -z "$cmd" ] && continue
	[ "$cmd" = profile ] && cmd="profile paths"
	offered=" $(complete_words quash $cmd - | tr '\n' ' ')"
	missing=""
	for opt in $longs $shorts; do
		[[ $offered == *" $opt "* ]] || missing="$missing $opt"
	done
	check "quash $cmd: the completion offers every option of --help${missing:+ (missing:$missing)}" \
		test -z "$missing"
done

mount_opts=$("$QUASH" mount --help | grep -o -- '-o [a-z_]*\|\[no\][a-z_]*' | sed 's/^-o //; s/\[no\]//' | sort -u)
check "quash mount --help lists -o options ($(echo $mount_opts | wc -w))" test -n "$mount_opts"
offered=" $(complete_words quash mount -o '' | tr '\n' ' ')"
missing="" missing_comp=""
for opt in $mount_opts allow_other allow_root nodev nosuid noexec auto_unmount; do
	grep -q -- "$opt" "$top/docs/quash-mount.1" || missing="$missing $opt"
	[[ $offered == *" $opt "* || $offered == *" $opt= "* ]] || missing_comp="$missing_comp $opt"
done
check "quash mount: every -o option of --help is in quash-mount.1${missing:+ (missing:$missing)}" test -z "$missing"
check "quash mount: the completion offers every -o option of --help${missing_comp:+ (missing:$missing_comp)}" \
	test -z "$missing_comp"

missing="" missing_comp=""
offered=" $(complete_words mksquashfs src img - | tr '\n' ' ')"
mk_opts=$("$QUASH" mksquashfs -help | tr ' ,/' '\n\n\n' | grep -o -- '^-[A-Za-z][A-Za-z-]*' | sort -u)
check "mksquashfs form: -help lists options ($(echo $mk_opts | wc -w))" test -n "$mk_opts"
for opt in $mk_opts; do
	page_has "$top/docs/quash-pack.1" "$opt" || missing="$missing $opt"
	[[ $offered == *" $opt "* ]] || missing_comp="$missing_comp $opt"
done
check "mksquashfs form: every option it honours is in quash-pack.1${missing:+ (missing:$missing)}" test -z "$missing"
check "mksquashfs form: the completion offers every option it honours${missing_comp:+ (missing:$missing_comp)}" \
	test -z "$missing_comp"

# ---- the completion, driven as bash drives it -----------------------------------
mkdir -p "$W/tree/etc" "$W/mnt" "$W/out"
echo hello >"$W/tree/etc/os-release"
"$QUASH" pack -q --no-progress "$W/tree" "$W/img.sqfs" >/dev/null 2>&1

check "completion loads without a word on stderr" \
	bash -c ". '$comp' 2>'$W/load.err' && complete -p quash >/dev/null && test ! -s '$W/load.err'"
complete_words quash pa >/dev/null 2>"$W/comp.err"
check "completion runs without a word on stderr" test ! -s "$W/comp.err"

expect() {   # expect NAME WANT WORD...: the offer, sorted and joined by spaces, is WANT
	local name=$1 want=$2 got
	shift 2
	got=$(complete_words "$@" | sort | tr '\n' ' ')
	got=${got% }
	if [ "$got" = "$want" ]; then ok "completion: $name"; else not_ok "completion: $name" "got '$got'"; fi
}
expect_has() {   # expect_has NAME WANT WORD...: WANT is among the offer
	local name=$1 want=$2
	shift 2
	if complete_words "$@" | grep -qx -- "$want"; then ok "completion: $name"
	else not_ok "completion: $name" "got '$(complete_words "$@" | tr '\n' ' ')'"; fi
}
expect "quash pa -> pack" pack quash pa
expect "quash e -> extract" extract quash e
expect "quash pack --comp -> --compression" --compression quash pack --comp
expect "quash pack -c -> the five compressors" "gzip lz4 lzo xz zstd" quash pack -c ''
expect "quash pack --compression=z -> zstd" zstd quash pack --compression = z
expect "quash pack --no-p -> --no-progress" --no-progress quash pack --no-p
expect_has "quash pack -<TAB> offers -q" -q quash pack -
expect "quash pack SOURCE i -> img.sqfs (files)" img.sqfs quash pack tree i
expect_has "quash mount -o <TAB> offers allow_other" allow_other quash mount -o ''
expect "quash mount -o allow_o -> allow_other" allow_other quash mount -o allow_o
expect "quash mount -o ro,sub -> ro,subdir=" ro,subdir= quash mount -o ro,sub
expect "quash mount -o offset=1M,cache_s (split at =) -> 1M,cache_size=" 1M,cache_size= \
	quash mount -o offset = 1M,cache_s
expect "quash mount -o cache_dir=m -> mnt (a directory)" mnt quash mount -o cache_dir = m
expect "quash mount i -> img.sqfs (the IMAGE is a file)" img.sqfs quash mount i
expect "quash mount IMAGE <TAB> -> directories only" "mnt out tree" quash mount img.sqfs ''
expect "quash mount -o ro IMAGE m -> mnt" mnt quash mount -o ro img.sqfs m
expect "squashfuse_ll IMAGE m -> mnt" mnt squashfuse_ll img.sqfs m
expect "quash umount --l -> --lazy" --lazy quash umount --l
expect "quash extract --fo -> --force" --force quash extract --fo
expect "quash extract --fa -> --fallback" --fallback quash extract --fa
expect "quash extract IMAGE -C <TAB> -> directories only" "mnt out tree" quash extract img.sqfs -C ''
expect "quash ls --j -> --json" --json quash ls --j
expect "quash info --cache-dir o -> out" out quash info --cache-dir o
expect "quash ls IMAGE /etc/o -> /etc/os-release (inside the image)" /etc/os-release "$QUASH" ls img.sqfs /etc/o
expect "quash cat IMAGE e -> etc/ (a directory inside the image)" etc/ "$QUASH" cat img.sqfs e
expect "mksquashfs SRC DEST -comp l -> lz4 lzo" "lz4 lzo" mksquashfs tree img.sqfs -comp l
