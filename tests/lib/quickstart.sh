# quickstart.sh - sourced by t-quickstart.sh and t-install.sh: the README's
# quick start, as the README has it, run in a fresh directory.
#
#   quickstart_s3 DIR BUCKET         an S3 server and bucket for it (sets EP)
#   quickstart_script README         print the ```sh blocks of its "## Quick start" section
#   quickstart_run README DIR BINDIR [USER]   run them in DIR (created) with BINDIR first in
#                                    PATH, as root or (USER=nobody) as nobody; output in DIR.log;
#                                    status of the run; what it left mounted in DIR.mounts.  PORT and BUCKET and the AWS_* variables
#                                    come from the caller's environment.

# quickstart_s3 DIR BUCKET: Ceph RGW on 127.0.0.1 (stop it with stop-rgw.sh DIR/rgw), the
# AWS_* variables and BUCKET exported for the quick start's S3 block, the bucket made.
quickstart_s3() {
	local dir=$1 port
	port=$(free_port)
	export MON_PORT=$(free_port)
	EP=$("$QUASH_TOP/tests/lib/start-rgw.sh" "$dir/rgw" "$port" 2>"$dir/rgw.err") || return 1
	export AWS_ACCESS_KEY_ID=quashtest AWS_SECRET_ACCESS_KEY=quashtestsecret AWS_DEFAULT_REGION=us-east-1
	export AWS_ENDPOINT_URL=$EP BUCKET=$2
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE
	HOME=$dir aws --endpoint-url "$EP" s3 mb "s3://$BUCKET" >/dev/null
}

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
	# An ordinary user's PATH has no sbin directories: the blocks must not need them.
	local path=$bindir:$PATH
	[ "$who" = nobody ] && path=$bindir:/usr/local/bin:/usr/bin:/bin
	(cd "$dir" && "${as[@]}" env HOME="$dir" PATH="$path" bash -e -u "$dir.sh") >"$dir.log" 2>&1
	st=$?
	# What the quick start left mounted, before cleaning up after it.
	awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts >"$dir.mounts"
	fusermount3 -u -z "$dir/mnt" 2>/dev/null
	return $st
}
