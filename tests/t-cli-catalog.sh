#!/bin/bash
# t-cli-catalog.sh - quash catalog ls, refresh and list print what a daemon
# or a server hands them escaped.  A hostile .quash-catalog (names with ESC,
# CR, DEL, cursor movements, backslashes, malformed numbers, short and long
# rows), a hostile .quash-refresh and a ListObjectsV2 answer with control
# characters in its ETags reach the terminal as \xHH, \t, \n and \\: no
# control byte but the newlines that end lines, the table one line a row
# with its columns aligned, --json valid and giving each name back exactly.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"

W=$WORK/cli-catalog
rm -rf "$W" && mkdir -p "$W/mp" "$W/home"
trap remote_cleanup EXIT

# The status file as the daemon's qc_status() lays it out, made hostile.
python3 - "$W/mp/.quash-catalog" <<'PY'
import sys
open(sys.argv[1], "wb").write(
    b"# catalog /srv/\x1b[2Jcat: 7 images, 1 open (0 old versions), listed 3 s ago; last listing failed: \x07\x7f\n"
    b"# block cache 0 of 1048576 bytes, 0 hits, 0 misses\n"
    b"# name\tstate\tversion\tsize\topen_files\treads\tbytes_read\tidle_s\tetag\terror\n"
    b"evil\x1b]0;owned\x07\tclosed\t1\t100\t0\t0\t0\t-1\t-\n"
    b"car\rriage\topen\t2\t200\t1\t5\t4096\t3\tab\x1bcd\n"
    b"back\\slash\\x1b\tclosed\t3\t300\t0\t0\t0\t-1\t-\n"
    b"del\x7f\"quote\"\tfailed\t007\t-\t1-2\t99999999999999999999\t-0\t--1\tx\x0b\tbad \x1b[31mmagic\n"
    b"caf\xc3\xa9 \xff\tclosed\t4\t1\t0\t0\t0\t-1\t-\n"
    b"short\tclosed\n"
    b"\x1b[1A\x1b[2Kforged\tclosed\t5\t1\t0\t0\t0\t-1\t-\t-\textra\tfields\n")
PY
"$QUASH_ASAN" catalog ls "$W/mp" >"$W/table" 2>"$W/err"; st=$?
"$QUASH_ASAN" catalog ls --json "$W/mp" >"$W/json" 2>>"$W/err"; jst=$?
check "catalog ls, a hostile status file: table and --json, a clean exit" \
	bash -c "[ $st = 0 ] && [ $jst = 0 ] && ! [ -s '$W/err' ]"

# no_controls FILE [ALLOWED]: no byte below 0x20 but '\n' (and ALLOWED), no DEL
no_controls() {
	python3 -c '
import sys
data, allowed = open(sys.argv[1], "rb").read(), b"\n" + sys.argv[2].encode()
bad = sorted({b for b in data if (b < 0x20 and b not in allowed) or b == 0x7f})
if bad:
    sys.exit("raw control bytes: %s" % [hex(b) for b in bad])' "$1" "${2:-}"
}
check "catalog ls: no control byte reaches the terminal" no_controls "$W/table"
check "catalog ls --json: no control byte either" no_controls "$W/json"

# The oracle: the table and the JSON as the rules say, from the same bytes.
check "catalog ls: each field escaped (\\xHH; the daemon's own escapes as they are), one line a row, the columns aligned" python3 - \
	"$W/mp/.quash-catalog" "$W/table" <<'PY'
import sys
status, got = (open(f, "rb").read() for f in sys.argv[1:3])
def esc(b):
    named = {0x09: b"\\t", 0x0a: b"\\n"}
    return b"".join(named.get(c) or (b"\\x%02x" % c if c < 0x20 or c == 0x7f else bytes([c])) for c in b)
rows = []           # a '#' line without a tab as it is, else its first nine fields
for line in status.split(b"\n"):
    if not line:
        continue
    if line.startswith(b"#") and b"\t" not in line:
        rows.append(esc(line))
        continue
    fields = (line[2:] if line.startswith(b"#") else line).split(b"\t")
    rows.append([(esc(f), i < len(fields) - 1) for i, f in enumerate(fields[:10])])
width = [0] * 10
for r in rows:
    for i, (f, _) in enumerate(r if isinstance(r, list) else []):
        width[i] = max(width[i], len(f))
want = b"".join((r if isinstance(r, bytes) else
                 b"".join(f + (b" " * (width[i] - len(f) + 2) if tab else b"") for i, (f, tab) in enumerate(r)))
                + b"\n" for r in rows)
if got != want:
    sys.exit("got:\n%s\nwant:\n%s" % (got.decode("ascii", "replace"), want.decode("ascii", "replace")))
for s in (rb"/srv/\x1b[2Jcat", rb"evil\x1b]0;owned\x07", rb"car\x0driage", rb"back\slash\x1b", rb"\x1b[1A\x1b[2Kforged"):
    if s not in got:
        sys.exit("no %r in the table" % s)
PY
check "catalog ls --json: valid JSON, the names exact, malformed numbers null" python3 - \
	"$W/mp/.quash-catalog" "$W/json" <<'PY'
import json, re, sys
status = open(sys.argv[1], "rb").read()
got = json.load(open(sys.argv[2]))
cols = ["name", "state", "version", "size", "open_files", "reads", "bytes_read", "idle_s", "etag", "error"]
want = []
for line in status.split(b"\n"):
    if not line or line.startswith(b"#"):
        continue
    row = {}
    for i, f in enumerate(line.split(b"\t")[:10]):
        s = f.decode("utf-8", "surrogateescape")
        if (i == 7 and s == "-1") or (i >= 8 and s == "-"):
            row[cols[i]] = None
        elif 2 <= i <= 7:
            row[cols[i]] = int(s) if re.fullmatch(r"-?(0|[1-9][0-9]*)", s) else None
        else:
            row[cols[i]] = s
    want.append(row)
if got != want:
    sys.exit("got %r\nwant %r" % (got, want))
if got[3]["reads"] != 99999999999999999999 or got[3]["version"] is not None or got[1]["name"] != "car\rriage":
    sys.exit("the oracle is off")
PY

# refresh: the daemon's one line, escaped, on stdout or (an error) on stderr.
printf 'done 12 images\033[2J\n' >"$W/mp/.quash-refresh"
"$QUASH_ASAN" catalog refresh "$W/mp" >"$W/refresh" 2>"$W/err"; st=$?
check "catalog refresh: the daemon's answer escaped" \
	bash -c "[ $st = 0 ] && [ \"\$(cat '$W/refresh')\" = '$W/mp: 12 images\\x1b[2J' ] && ! [ -s '$W/err' ]"
printf 'failed cat: \033]0;t\007 failed\r\n' >"$W/mp/.quash-refresh"
"$QUASH_ASAN" catalog refresh "$W/mp" >"$W/refresh" 2>"$W/err"; st=$?
check "catalog refresh: the daemon's error escaped, exit 1" \
	bash -c "[ $st = 1 ] && [ \"\$(cat '$W/err')\" = 'quash: catalog refresh: $W/mp: cat: \\x1b]0;t\\x07 failed\\x0d' ] && ! [ -s '$W/refresh' ]"

# list: a ListObjectsV2 answer whose ETags decode to control characters,
# and keys with a backslash (keys with control characters are never handed out).
S3=$(free_port)
python3 - "$S3" <<'PY' &
import http.server, sys
keys = [("plain.sqfs", "&quot;&#27;[31mred&quot;"), ("back\\slash.sqfs", "&quot;a\\b&#9;c&#13;&#10;d&quot;"),
        ("esc&#27;.sqfs", "&quot;00&quot;"), ("del.sqfs", "&#127;")]
page = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name>' +
        "".join("<Contents><Key>%s</Key><LastModified>2026-12-04T05:55:26.000Z</LastModified>"
                "<ETag>%s</ETag><Size>7</Size></Contents>" % kv for kv in keys) +
        "<IsTruncated>false</IsTruncated></ListBucketResult>").encode()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
PY
REMOTE_PIDS+=($!)
wait_port "$S3"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE HOME="$W/home" \
	"$QUASH_ASAN" catalog list --retry-seconds 2 --endpoint "http://127.0.0.1:$S3" s3://cat/ >"$W/list" 2>"$W/err"; st=$?
check "catalog list, hostile ETags: a clean exit" bash -c "[ $st = 0 ] && ! [ -s '$W/err' ]"
check "catalog list: no control byte but the tabs between fields" no_controls "$W/list" $'\t'
mtime=$(date -u -d 2026-12-04T05:55:26Z +%s)
printf 'plain.sqfs\t7\t%s\t\\x1b[31mred\nback\\\\slash.sqfs\t7\t%s\ta\\\\b\\tc\\x0d\\nd\ndel.sqfs\t7\t%s\t\\x7f\n' \
	"$mtime" "$mtime" "$mtime" >"$W/list.want"
check "catalog list: KEY and ETAG escaped (\\xHH, \\t, \\n, \\\\), the key with ESC left out" \
	cmp -s "$W/list.want" "$W/list"
