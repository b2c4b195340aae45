# fleet.sh - sourced by tests/t-remote-fleet.sh and bench/fleet.sh: client
# "nodes", each in its own network namespace on one bridge, each with its own
# latency proxy (tests/lib/faultproxy.py: a delay per request and a rate per
# node) in front of the caching tier or the origin.  Servers listen in the
# root namespace; the nodes' quash mounts run in their network namespace
# only (nsenter --net), so the mounts show in the root mount namespace.
#
#   fleet_up N                     the bridge $FLEET_BR at ${FLEET_NET}1 and N namespaces
#   fleet_down                     every mount, proxy, namespace and link made here
#   fleet_exec I CMD...            CMD in node I's network namespace
#   fleet_proxy NAME PORT UPSTREAM [ARGS...]  a faultproxy on ${FLEET_NET}1:PORT,
#                                  logging to $FLEET_W/NAME.log (method, range, fault, bytes)
#   fleet_bytes LOG...             body bytes those proxies sent
#   fleet_ports SPAN               a base port with the SPAN ports from it free
#   fleet_mount I MP URL [OPTS]    quash mount in node I's namespace ($FLEET_QUASH)
#   fleet_umount MP
#
# Names carry the shell's pid, so that two runs at once do not collide.

FLEET_BR=qfb$$
FLEET_NET=${FLEET_NET:-10.$((200 + $$ % 50)).$(($$ / 50 % 250)).}
FLEET_NS=()
FLEET_MOUNTS=()
FLEET_PIDS=()

fleet_up() {
	local n=$1 i ns
	ip link add "$FLEET_BR" type bridge || return 1
	ip addr add "${FLEET_NET}1/24" dev "$FLEET_BR" && ip link set "$FLEET_BR" up || return 1
	for i in $(seq 1 "$n"); do
		ns=qf$$-$i
		ip netns add "$ns" || return 1
		FLEET_NS+=("$ns")
		ip link add "qv$$h$i" type veth peer name "qv$$n$i" || return 1
		ip link set "qv$$n$i" netns "$ns"
		ip link set "qv$$h$i" master "$FLEET_BR" up
		ip -n "$ns" addr add "${FLEET_NET}$((10 + i))/24" dev "qv$$n$i"
		ip -n "$ns" link set "qv$$n$i" up
		ip -n "$ns" link set lo up
	done
}

fleet_exec() {
	local i=$1
	shift
	nsenter --net="/var/run/netns/qf$$-$i" "$@"
}

fleet_proxy() {
	local name=$1 port=$2 up=$3 i pid
	shift 3
	python3 "$QUASH_TOP/tests/lib/faultproxy.py" --listen "${FLEET_NET}1" --port "$port" --upstream "$up" \
		--faults pass --skip 0 --log "$FLEET_W/$name.log" "$@" 2>>"$FLEET_W/proxies.err" &
	pid=$!
	FLEET_PIDS+=($pid)
	for i in $(seq 50); do
		# Its own, not another process's on that port: a proxy that could not bind has exited.
		(exec 3<>"/dev/tcp/${FLEET_NET}1/$port") 2>/dev/null && kill -0 "$pid" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# fleet_ports SPAN: a base port B such that B .. B+SPAN-1 are all free now,
# below the ephemeral range: a client socket there (wait_port's own probes,
# in TIME_WAIT) would take a port of the block before its proxy binds it.
fleet_ports() {
	python3 - "$1" <<'PY'
import random, socket, sys
span = int(sys.argv[1])
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
top = max(low, 10000 + 2 * span)
for _ in range(200):
    base = random.randrange(10000, top - span)
    socks = []
    try:
        for p in range(base, base + span):
            s = socket.socket()
            s.bind(("0.0.0.0", p))
            socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit(1)
PY
}

fleet_bytes() {
	cat "$@" 2>/dev/null | awk '{ n += $4 } END { printf "%.0f\n", n }'
}

fleet_mount() {
	local i=$1 mp=$2 url=$3 opts=${4:-}
	mkdir -p "$mp"
	fleet_exec "$i" "$FLEET_QUASH" mount ${opts:+-o "$opts"} "$url" "$mp" && FLEET_MOUNTS+=("$mp")
}

fleet_umount() {
	fusermount3 -u "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
	return 0
}

fleet_down() {
	local m ns p
	for m in "${FLEET_MOUNTS[@]}"; do
		mountpoint -q "$m" && fleet_umount "$m"
	done
	for p in "${FLEET_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for ns in "${FLEET_NS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	ip link del "$FLEET_BR" 2>/dev/null
	for p in "${FLEET_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	return 0
}
