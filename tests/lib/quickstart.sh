# quickstart.sh - sourced by t-quickstart.sh and t-install.sh: the README's
# quick start, as the README has it, run in a fresh directory.
#
#   quickstart_script README         print the ```sh blocks of its "## Quick start" section
#   quickstart_run README DIR BINDIR [USER]   run them in DIR (created) with BINDIR first in
#                                    PATH, as root or (USER=nobody) as nobody; output in DIR.log;
#                                    status of the run.  PORT and BUCKET and the AWS_* variables
#                                    come from the caller's environment.

quickstart_script() {
	awk '/^## Quick start/ { on = 1; next }
	     on && /^## / { exit }
	     on && /^```sh$/ { code = 1; next }
	     on && /^```$/ { code = 0; next }
	     on && code { print }' "$1"
}

quickstart_run() {
	local readme=$1 dir=$2 bindir=$3 who=${4:-root} st
	local -a as=()
	rm -rf "$dir" && mkdir -p "$dir"
	quickstart_script "$readme" >"$dir.sh"
	if [ "$who" = nobody ]; then
		chown nobody "$dir"
		chmod 755 "$dir.sh"
		as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	fi
	(cd "$dir" && "${as[@]}" env HOME="$dir" PATH="$bindir:$PATH" bash -e -u "$dir.sh") >"$dir.log" 2>&1
	st=$?
	# Whatever happened, leave nothing mounted.
	fusermount3 -u -z "$dir/mnt" 2>/dev/null
	return $st
}
