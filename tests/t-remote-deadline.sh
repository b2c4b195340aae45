#!/bin/bash
# t-remote-deadline.sh - a remote read ends within its budget whatever the
# server does: drips bytes just above curl's own stall limit, sends a body
# that never ends (200 or 500), sends more than it announced, or ignores
# the Range.  Each case is one line and a non-zero exit within the budget
# (--retry-seconds), or at once where no retry can help.  On a mount, the
# read gets EIO within the budget, and a reader signalled while it waits
# (an O_DIRECT read, one synchronous request) is let go at once through
# FUSE INTERRUPT: gone if killed, EINTR if the signal is caught.  Servers: nginx
# behind tests/lib/faultproxy.py.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/mount.sh"

W=$WORK/remote-deadline
rm -rf "$W" && mkdir -p "$W/www"
trap 'unmount_all; remote_cleanup' EXIT
make_test_image "$W"
cp "$W/image.sqfs" "$W/www/image.sqfs"
HTTP=$(free_port)
start_nginx "$W/nginx" "$W/www" "$HTTP" || not_ok "nginx starts" "$(tail -3 "$W/nginx/error.log")"
BUDGET=3

# within NAME MAX PATTERN CMD...: exit 1, one line matching PATTERN, in under MAX seconds.
within() {
	local name=$1 max=$2 pattern=$3 st t0 dt; shift 3
	t0=$(date +%s.%N)
	timeout -s KILL 60 "$@" >/dev/null 2>"$W/err"; st=$?
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	if [ $st -eq 1 ] && [ "$(echo "$dt < $max" | bc)" = 1 ] && [ "$(wc -l <"$W/err")" -eq 1 ] &&
	   grep -q -- "$pattern" "$W/err"; then
		ok "$name (${dt%??????} s)"
	else
		not_ok "$name" "exit $st after $dt s: $(head -c 300 "$W/err")"
	fi
}

# proxy FAULT SKIP: a fault proxy in front of nginx; every request after the first SKIP gets FAULT.
proxy() {
	[ -n "${PROXY_PID:-}" ] && stop_pid "$PROXY_PID"
	PROXY=$(free_port)
	start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" "always:$1" --skip "$2"
	URL=http://127.0.0.1:$PROXY/image.sqfs
}

LIMIT=$((BUDGET + 1))   # the budget, plus a 1 s margin for start-up and the last transfer's end
proxy drip 0
within "a dripping server: ls ends within the budget" $LIMIT "gave up after" \
	"$QUASH_ASAN" ls --retry-seconds $BUDGET "$URL"
proxy drip 2     # opening takes two requests: the first chunk, then the metadata tables
within "a dripping server: cat of a file ends within the budget" $LIMIT "gave up after" \
	"$QUASH_ASAN" cat --retry-seconds $BUDGET "$URL" /sub/deeper/big
proxy endless200 0
within "an endless 200 body: one error at once" 2 "ignores range requests" \
	"$QUASH_ASAN" ls --retry-seconds $BUDGET "$URL"
proxy endless500 0
within "an endless 500 body: retried, then one error within the budget" $LIMIT "HTTP 500" \
	"$QUASH_ASAN" ls --retry-seconds $BUDGET "$URL"
proxy fullbody 2
within "a server that ignores Range: one error at once" 2 "ignores range requests" \
	"$QUASH_ASAN" cat --retry-seconds $BUDGET "$URL" /sub/deeper/big
proxy overlong 0
within "a body longer than announced: one error at once, not retried" 2 "more bytes than\|longer than announced" \
	"$QUASH_ASAN" ls --retry-seconds $BUDGET "$URL"
check "the default budget is 30 s" grep -q "default 30" <("$QUASH" ls --help)

# The mount: open passes, reads drip (-o noprefetch: no URL.profile request at open).
proxy drip 2
mkdir -p "$W/m"
if qmount "$W/m" "$QUASH" mount -o noprefetch,retry_seconds=$BUDGET "$URL" "$W/m"; then
	t0=$(date +%s.%N)
	timeout -s KILL 60 cat "$W/m/sub/deeper/big" >/dev/null 2>"$W/err"; st=$?
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	if [ $st -eq 1 ] && grep -q "Input/output error" "$W/err" && [ "$(echo "$dt < $LIMIT" | bc)" = 1 ]; then
		ok "mount, dripping server: the read fails with EIO within the budget (${dt%??????} s)"
	else
		not_ok "mount, dripping server: the read fails with EIO within the budget" "exit $st after $dt s: $(cat "$W/err")"
	fi
	fusermount3 -u -z "$W/m"
else
	not_ok "mount through the proxy"
fi

# A reader signalled while it waits, though the budget is long: its O_DIRECT
# read is one synchronous request (no async DIO on a remote mount), so the
# kernel sends INTERRUPT and waits for the answer.  Killed, the reader is
# gone at once; caught (SIGUSR1 with a handler), its read fails with EINTR.
# A buffered read would prove nothing: its wait on the page is killable
# whatever the daemon does, and it never sees a non-fatal signal.
waiting_on_fuse() {   # waiting_on_fuse PID: until PID sleeps in a FUSE request (5 s at most)
	for _ in $(seq 100); do
		[ "$(cat /proc/$1/wchan 2>/dev/null)" = request_wait_answer ] && return 0
		sleep 0.05
	done
	return 1
}
gone_within() {   # gone_within PID SECONDS: until PID has ended
	local n=$(($2 * 10))
	while [ $n -gt 0 ] && kill -0 "$1" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	! kill -0 "$1" 2>/dev/null
}
proxy drip 2
if qmount "$W/m" "$QUASH" mount -o noprefetch,retry_seconds=120,log="$W/daemon.log" "$URL" "$W/m"; then
	dd if="$W/m/file12" of=/dev/null bs=64k skip=32 count=1 iflag=direct 2>/dev/null &
	reader=$!
	waiting=$(waiting_on_fuse $reader && echo yes)
	t0=$(date +%s.%N)
	kill -KILL $reader
	gone_within $reader 10; gone=$?
	dt=$(echo "$(date +%s.%N) - $t0" | bc)
	if [ "$waiting" = yes ] && [ $gone = 0 ] && [ "$(echo "$dt < 3" | bc)" = 1 ]; then
		ok "mount, dripping server: a reader killed in a FUSE read is gone at once (${dt%??????} s)"
	else
		not_ok "mount, dripping server: a reader killed in a FUSE read is gone at once" \
			"waiting: ${waiting:-no}; after $dt s it is $( ((gone)) && echo alive || echo gone)"
	fi

	perl -e 'use Fcntl; $SIG{USR1} = sub {};
		sysopen(F, $ARGV[0], O_RDONLY | O_DIRECT) or die "open: $!\n";
		my $n = sysread(F, my $b, 65536);
		print defined $n ? "read $n bytes\n" : "error: $!\n"' "$W/m/file12" >"$W/eintr.out" 2>&1 &
	reader=$!
	waiting=$(waiting_on_fuse $reader && echo yes)
	kill -USR1 $reader
	gone_within $reader 3 && wait $reader
	check "mount, dripping server: a read caught by a signal fails with EINTR at once ($(cat "$W/eintr.out"))" \
		bash -c "[ '$waiting' = yes ] && grep -qx 'error: Interrupted system call' '$W/eintr.out'"

	pkill -USR1 -f "mount -o noprefetch,retry_seconds=120,log=$W/daemon.log"
	for _ in $(seq 50); do grep -q 'INTERRUPT\|requests:' "$W/daemon.log" 2>/dev/null && break; sleep 0.1; done
	interrupts=$(grep -o 'INTERRUPT [0-9]*' "$W/daemon.log" | tail -1)
	check "mount, dripping server: the daemon answered both through FUSE INTERRUPT (${interrupts:-no INTERRUPT counted})" \
		test "${interrupts:-}" = "INTERRUPT 2"
	fusermount3 -u -z "$W/m"
else
	not_ok "mount through the proxy, long budget"
fi
