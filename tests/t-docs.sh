#!/bin/bash
# t-docs.sh - the man pages and the bash completion: every page renders
# without a groff warning, every long option a command's --help lists is in
# its page (so the pages cannot drift from the code), and the completion
# completes commands, options and values.
. "$(dirname "$0")/lib/tap.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
W=$WORK/t-docs
rm -rf "$W" && mkdir -p "$W"

for page in "$top"/docs/*.1; do
	name=$(basename "$page")
	groff -man -ww -z "$page" 2>"$W/groff.err"
	check "$name renders without warnings (groff -ww)" test ! -s "$W/groff.err"
	if command -v man >/dev/null; then
		check "$name: man -l renders it" bash -c "MANWIDTH=80 man -l '$page' 2>&1 >/dev/null | (! grep -q .)"
	fi
done

# Every --long option of each command's help, in the page that documents it.
page_has() {   # page_has PAGE OPTION: the option as groff spells it (\- for -)
	local esc=${2//-/\\\\-}
	grep -q -- "$esc" "$1"
}
for cmd in info ls stat cat extract pack umount; do
	case $cmd in
	pack) page=$top/docs/quash-pack.1 ;;
	umount) page=$top/docs/quash-umount.1 ;;
	*) page=$top/docs/quash.1 ;;
	esac
	missing=""
	for opt in $("$QUASH_BIN" $cmd --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		page_has "$page" "$opt" || missing="$missing $opt"
	done
	check "quash $cmd: every option of --help is in $(basename "$page")${missing:+ (missing:$missing)}" test -z "$missing"
done
missing=""
for opt in $("$QUASH_BIN" mount --help | grep -o -- '-o [a-z_]*\|\[no\][a-z_]*' | sed 's/^-o //; s/\[no\]//' | sort -u); do
	grep -q -- "$opt" "$top/docs/quash-mount.1" || missing="$missing $opt"
done
check "quash mount: every -o option of --help is in quash-mount.1${missing:+ (missing:$missing)}" test -z "$missing"
missing=""
for opt in $("$QUASH_BIN" mksquashfs -help | tr ' ,/' '\n\n\n' | grep -o -- '^-[A-Za-z][a-z-]*' | sort -u); do
	page_has "$top/docs/quash-pack.1" "$opt" || missing="$missing $opt"
done
check "mksquashfs form: every option it honours is in quash-pack.1${missing:+ (missing:$missing)}" test -z "$missing"

# The completion, driven as bash drives it.
complete_words() {   # complete_words WORD...: what <TAB> offers after them
	bash -c '
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_quash quash "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$top/docs/quash.bash-completion" "$@"
}
check "completion loads without error" bash -c ". '$top/docs/quash.bash-completion' && complete -p quash"
check "completion: quash pa -> pack" test "$(complete_words quash pa)" = pack
check "completion: quash pack --comp -> --compression" test "$(complete_words quash pack --comp)" = --compression
check "completion: quash pack -c -> the five compressors" \
	test "$(complete_words quash pack -c '' | sort | tr '\n' ' ')" = "gzip lz4 lzo xz zstd "
check "completion: quash mount -o allow_o -> allow_other" test "$(complete_words quash mount -o allow_o)" = allow_other
check "completion: quash mount -o ro,sub -> ro,subdir=" test "$(complete_words quash mount -o ro,sub)" = ro,subdir=
check "completion: quash extract --f -> --force" test "$(complete_words quash extract --f)" = --force
check "completion: quash ls --j -> --json" test "$(complete_words quash ls --j)" = --json
