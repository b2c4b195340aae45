#!/bin/bash
# local-s3.sh - a throwaway S3 server on 127.0.0.1 for trying quash (Ceph RGW,
# as the tests use; needs root and apt-get install radosgw ceph-mon ceph-osd
# ceph-common uuid-runtime).
#
#   scripts/local-s3.sh start [DIR] [PORT]   start it (state in DIR, default
#                                            /tmp/quash-s3), make the bucket
#                                            "quash", print the variables to export
#   scripts/local-s3.sh stop [DIR]           stop it and remove DIR
#
#   eval "$(sudo scripts/local-s3.sh start)"
#   quash pack tree s3://quash/tree.sqfs
set -euo pipefail
here=$(dirname "$(realpath "$0")")
cmd=${1:-}
dir=$(realpath -m "${2:-/tmp/quash-s3}")
port=${3:-7480}
key=quashtest secret=quashtestsecret region=us-east-1 bucket=quash

case $cmd in
start)
	if ! command -v radosgw >/dev/null; then
		echo "local-s3.sh: radosgw is not installed (apt-get install radosgw ceph-mon ceph-osd ceph-common uuid-runtime)" >&2
		exit 1
	fi
	ep=$(MON_PORT=$((port + 1)) "$here/../tests/lib/start-rgw.sh" "$dir" "$port" 2>"$dir.log") || {
		echo "local-s3.sh: the server did not start; see $dir.log" >&2
		exit 1
	}
	# The bucket, with the request signed by curl (no aws CLI needed); RGW
	# wants the payload's hash named, here the empty body's.
	empty=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
	curl -fsS --max-time 30 --aws-sigv4 "aws:amz:$region:s3" --user "$key:$secret" \
		-H "x-amz-content-sha256: $empty" -X PUT "$ep/$bucket" >/dev/null || {
		echo "local-s3.sh: cannot make the bucket $bucket at $ep" >&2
		"$here/../tests/lib/stop-rgw.sh" "$dir"
		exit 1
	}
	echo "export AWS_ENDPOINT_URL=$ep AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=$region BUCKET=$bucket"
	;;
stop)
	"$here/../tests/lib/stop-rgw.sh" "$dir"
	rm -f "$dir.log"
	;;
*)
	echo "usage: scripts/local-s3.sh start [DIR] [PORT] | stop [DIR]" >&2
	exit 2
	;;
esac
