# remote.sh - sourced by tests/t-remote-*.sh: servers on 127.0.0.1 for the
# remote sources, all stopped by remote_cleanup (the scripts' EXIT trap).
#
#   free_port                      print a TCP port nobody listens on
#   make_test_ca DIR               DIR/ca.pem and a server cert DIR/server.{pem,key} for 127.0.0.1
#   start_nginx DIR ROOT HTTP_PORT [HTTPS_PORT CERTDIR]   (NGINX_AUTOINDEX=1: directory listings, for rclone;
#                                  NGINX_EXTRA: more directives for the HTTP server)
#   start_faultproxy PORT UPSTREAM FAULTS [ARGS...]
#   stop_pid PID                   stop one process started here
#   make_test_image DIR [text]     DIR/tree and DIR/image.sqfs (several MiB, incompressible files;
#                                  with "text" also DIR/tree/text/, compressible files, see below)
#   text_straddles IMAGE CHUNK     how many compressed data blocks of IMAGE's text/ files
#                                  cross a multiple of CHUNK bytes

REMOTE_READ=${REMOTE_READ:-$QUASH_TOP/build-asan/tests/remote_read}
REMOTE_PIDS=()

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {   # wait_port PORT: until something accepts connections there (5 s at most)
	local i
	for i in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

make_test_ca() {
	local d=$1
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=quash-test-ca \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 \
		-keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\n' >"$d/ext.cnf"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/ext.cnf" -out "$d/server.pem" 2>/dev/null
}

start_nginx() {
	local d=$1 root=$2 port=$3 tls_port=${4:-} certs=${5:-} tls=""
	mkdir -p "$d/tmp"
	[ -n "$tls_port" ] && tls="server { listen 127.0.0.1:$tls_port ssl; root $root;
		ssl_certificate $certs/server.pem; ssl_certificate_key $certs/server.key; }"
	cat >"$d/nginx.conf" <<CONF
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $d/tmp;
	proxy_temp_path $d/tmp;
	fastcgi_temp_path $d/tmp;
	uwsgi_temp_path $d/tmp;
	scgi_temp_path $d/tmp;
	server { listen 127.0.0.1:$port; root $root; ${NGINX_AUTOINDEX:+autoindex on;} ${NGINX_EXTRA:-} }
	$tls
}
CONF
	nginx -c "$d/nginx.conf" -p "$d" 2>>"$d/error.log" &
	REMOTE_PIDS+=($!)
	NGINX_PID=$!
	wait_port "$port"
}

# start_cache_tier DIR ORIGIN LISTEN [ACCESS_LOG]: nginx with docs/nginx-cache-tier.conf
# (slice, proxy_cache, proxy_cache_lock) on 127.0.0.1:LISTEN in front of the
# origin at 127.0.0.1:ORIGIN, its cache in DIR/cache, emptied first; sets TIER_PID.
# TIER_WORKERS (1) nginx workers; ACCESS_LOG, if given, in combined format.
start_cache_tier() {
	local d=$1 origin=$2 listen=$3 alog=off
	[ -n "${4:-}" ] && alog="$4 combined"
	rm -rf "$d/cache" && mkdir -p "$d/tmp" "$d/cache"
	sed -e "s|@ORIGIN@|127.0.0.1:$origin|; s|@LISTEN@|127.0.0.1:$listen|; s|@CACHE@|$d/cache|" \
		"$QUASH_TOP/docs/nginx-cache-tier.conf" >"$d/site.conf"
	cat >"$d/nginx.conf" <<CONF
daemon off;
worker_processes ${TIER_WORKERS:-1};
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 1024; }
http {
	access_log $alog;
	client_body_temp_path $d/tmp;
	proxy_temp_path $d/tmp;
	fastcgi_temp_path $d/tmp;
	uwsgi_temp_path $d/tmp;
	scgi_temp_path $d/tmp;
	include $d/site.conf;
}
CONF
	nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" &
	TIER_PID=$!
	REMOTE_PIDS+=("$TIER_PID")
	wait_port "$listen"
}

start_faultproxy() {
	local port=$1 upstream=$2 faults=$3
	shift 3
	python3 "$QUASH_TOP/tests/lib/faultproxy.py" --port "$port" --upstream "$upstream" --faults "$faults" "$@" \
		2>/dev/null &
	REMOTE_PIDS+=($!)
	PROXY_PID=$!
	wait_port "$port"
}

stop_pid() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

remote_cleanup() {
	local p
	for p in "${REMOTE_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
}

# The text files: text-like data that compresses about 2:1, so remote reads
# decompress blocks that do not start or end on a chunk boundary.  t1 and t3
# end in a tail and t4 is all tail, packed into fragment blocks (-tailends);
# t2 is whole blocks.  Their compressed blocks together span more than 1 MiB,
# so they cross 64 KiB, 256 KiB and 1 MiB chunk boundaries (text_straddles
# counts them); the content is seeded, so the layout is the same every run.
make_text_files() {
	mkdir -p "$1" && python3 - "$1" <<'TEXT'
import random, sys
rnd = random.Random(37)
words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 10))) for _ in range(3000)]
def text(n):
    out, size = [], 0
    while size < n:
        line = "%06d %s %s\n" % (rnd.randrange(10**6), rnd.choice(("INFO", "WARN", "DEBUG")),
                                 " ".join(rnd.choice(words) for _ in range(rnd.randint(3, 14))))
        out.append(line)
        size += len(line)
    return "".join(out)[:n].encode()
B = 131072
for name, size in (("t1", 3 * B + 5000), ("t2", 9 * B), ("t3", 26 * B + 70000), ("t4", 20000)):
    open(sys.argv[1] + "/" + name, "wb").write(text(size))
TEXT
}

text_straddles() {
	python3 - "$QUASH" "$1" "$2" <<'PY'
import json, struct, subprocess, sys, zlib
quash, image, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
img = open(image, "rb").read()
assert struct.unpack_from("<H", img, 20)[0] == 1, "gzip image expected"
itab = struct.unpack_from("<Q", img, 64)[0]
names = ["text/t1", "text/t2", "text/t3", "text/t4"]
n = 0
for st in json.loads(subprocess.check_output([quash, "stat", "--json", image] + names)):
    pos, meta = itab + (st["inode_ref"] >> 16), b""
    while len(meta) < (st["inode_ref"] & 0xffff) + 64 + 4 * st["block_count"]:
        head = struct.unpack_from("<H", img, pos)[0]
        raw = img[pos + 2:pos + 2 + (head & 0x7fff)]
        meta += raw if head & 0x8000 else zlib.decompress(raw)
        pos += 2 + (head & 0x7fff)
    ino = st["inode_ref"] & 0xffff
    kind = struct.unpack_from("<H", meta, ino)[0]
    sizes_at = ino + (32 if kind == 2 else 56)
    off = st["blocks_start"]
    for i in range(st["block_count"]):
        b = struct.unpack_from("<I", meta, sizes_at + 4 * i)[0]
        size = b & 0xffffff
        if not b & (1 << 24) and size and off // chunk != (off + size - 1) // chunk:
            n += 1
        off += size
print(n)
PY
}

make_test_image() {
	local d=$1 i
	rm -rf "$d/tree" && mkdir -p "$d/tree/sub/deeper"
	for i in $(seq 1 12); do
		head -c $((i * 300000 + i)) /dev/urandom >"$d/tree/file$i"
	done
	for i in $(seq 1 200); do
		echo "small file $i" >"$d/tree/sub/s$i.txt"
	done
	head -c 5000000 /dev/urandom >"$d/tree/sub/deeper/big"
	ln -s ../file1 "$d/tree/sub/link"
	if [ "${2:-}" = text ]; then
		make_text_files "$d/tree/text"
		mksquashfs "$d/tree" "$d/image.sqfs" -tailends -noappend -quiet -no-progress >/dev/null
	else
		mksquashfs "$d/tree" "$d/image.sqfs" -noappend -quiet -no-progress >/dev/null
	fi
}
