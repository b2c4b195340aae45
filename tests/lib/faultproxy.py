#!/usr/bin/env python3
"""faultproxy.py - an HTTP proxy that breaks requests on purpose, for the remote tests.

    faultproxy.py --port PORT --upstream http://127.0.0.1:N [--skip K] --faults F1,F2,... [--log FILE]
                  [--listen ADDR] [--delay-ms MS] [--rate-mbit MBIT]

Forwards GET, HEAD, PUT, POST and DELETE to the upstream server unchanged (Host included, so that
S3 signatures still match).  After the first K requests (default 1: the open
request passes), request number K+i gets fault Fi, then everything passes.
'--faults always:F' gives every request after the first K fault F.

Faults: reset (TCP reset, no answer), 500, 503, 429 (that status), truncate
(half the body, then the connection closes), short (half the body with a
matching Content-Length: a complete but short answer), badrange (the
range asked upstream moved on by one byte: an answer for another range
than asked, its Content-Range and body agreeing), stall (half the body,
then silence for --stall seconds), drip (the headers, then the body at --drip bytes a
second), endless200 and endless500 (that status and a body that never
ends), overlong (the body, then 4 KiB more than Content-Range announced,
with a Content-Length that covers them), fullbody (the request without its
Range: a server that ignores ranges, 200 and the whole object), pass.
--log appends one line per request: method, Range, the fault applied and
the body bytes sent.

A network, for bench/fleet.sh: --delay-ms holds every request that long
before it goes upstream (a data-centre round trip), --rate-mbit paces the
bodies of all connections together to that rate (one proxy per client: the
client's link).  An upstream that cannot be reached is a 502, as from a real
proxy.  --listen is the address to listen on (default 127.0.0.1).
Python 3 standard library only.
"""
import argparse
import http.client
import http.server
import socket
import struct
import sys
import threading
import time
import urllib.parse

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class State:
    def __init__(self, skip, faults, always):
        self.lock = threading.Lock()
        self.count = 0
        self.skip = skip
        self.faults = faults
        self.always = always

    def next_fault(self):
        with self.lock:
            n = self.count
            self.count += 1
        if n < self.skip:
            return "pass"
        if self.always:
            return self.always
        i = n - self.skip
        return self.faults[i] if i < len(self.faults) else "pass"


class Pacer:
    """Bodies of all connections share one link of RATE bits a second: each
    piece reserves its slot on a common clock and is sent when it comes."""
    PIECE = 65536

    def __init__(self, mbit):
        self.lock = threading.Lock()
        self.bytes_per_s = mbit * 1e6 / 8
        self.free_at = 0.0

    def send(self, wfile, data):
        for i in range(0, len(data), self.PIECE):
            piece = data[i:i + self.PIECE]
            with self.lock:
                start = max(time.monotonic(), self.free_at)
                self.free_at = start + len(piece) / self.bytes_per_s
                done = self.free_at
            wait = done - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            wfile.write(piece)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as nginx sets it.  With Nagle's algorithm on, the last
    # bytes of a range answer wait for the client's delayed ACK: a stall of
    # tens of ms that no data-centre link adds.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def reset(self):
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def send_status(self, code, what=b"Injected"):
        body = b"<Error><Code>" + what + b"</Code></Error>"
        # The request's body is left unread, so the connection cannot carry another request.
        self.close_connection = True
        self.send_response(code)
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)

    def forward(self, method):
        fault = self.server.state.next_fault()
        if self.server.delay:
            time.sleep(self.server.delay)
        if fault in ("reset", "500", "503", "429", "endless200", "endless500"):
            self.note(method, fault, 0)
        if fault == "reset":
            return self.reset()
        if fault in ("500", "503", "429"):
            return self.send_status(int(fault))
        if fault in ("endless200", "endless500"):
            return self.endless(int(fault[len("endless"):]))
        length = int(self.headers.get("Content-Length") or 0)
        payload = self.rfile.read(length) if length else b""
        if fault == "stall" and method not in ("GET", "HEAD"):
            self.note(method, fault, 0)
            time.sleep(self.server.stall)     # an upload that never gets its answer
            return self.reset()
        up = self.server.upstream
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        if fault == "fullbody":
            headers = {k: v for k, v in headers.items() if k.lower() != "range"}
        if fault == "badrange":
            for k, v in headers.items():
                if k.lower() == "range" and v.startswith("bytes="):
                    first, _, last = v[6:].partition("-")
                    headers[k] = "bytes=%d-%d" % (int(first) + 1, int(last) + 1)
        conn.putrequest(method, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        try:
            conn.endheaders(payload if payload else None)
            resp = conn.getresponse()
            if fault == "pass" and method == "GET" and resp.getheader("Content-Length"):
                return self.stream(resp)
            body = resp.read()
        except OSError:
            self.note(method, fault, 0)
            return self.send_status(502, b"UpstreamUnreachable")
        finally:
            conn.close()
        half = body[: len(body) // 2]
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            kl = k.lower()
            if kl in HOP_HEADERS or kl == "content-length":
                continue
            self.send_header(k, v)
        extra = b"\xee" * 4096 if fault == "overlong" else b""
        length = len(half) if fault == "short" else len(body) + len(extra)
        if method == "HEAD":      # no body: the length is the upstream's
            length = int(resp.getheader("Content-Length") or 0)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.note(method, fault, 0 if method == "HEAD" else length)
        if method == "HEAD":
            return
        if fault == "drip":
            return self.drip(body)
        if fault in ("truncate", "stall", "short"):
            self.wfile.write(half)
            self.wfile.flush()
            if fault == "stall":
                time.sleep(self.server.stall)
            if fault != "short":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.server.pacer:
            self.server.pacer.send(self.wfile, body + extra)
        else:
            self.wfile.write(body + extra)

    def stream(self, resp):
        """A passing GET, relayed piece by piece as it arrives (a large
        object is not held whole before its first byte goes out)."""
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_HEADERS:
                self.send_header(k, v)
        self.end_headers()
        sent = 0
        try:
            while True:
                piece = resp.read(Pacer.PIECE)
                if not piece:
                    break
                if self.server.pacer:
                    self.server.pacer.send(self.wfile, piece)
                else:
                    self.wfile.write(piece)
                sent += len(piece)
        except OSError:
            self.close_connection = True
        self.note("GET", "pass", sent)

    def note(self, method, fault, nbytes):
        if self.server.log:
            with self.server.state.lock, open(self.server.log, "a") as f:
                f.write("%s %s %s %d\n" % (method, self.headers.get("Range", "-"), fault, nbytes))

    def drip(self, body):
        """The body a few bytes a second: just fast enough for curl's own stall limit."""
        try:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(1.0 / self.server.drip)
        except OSError:
            pass
        self.close_connection = True

    def endless(self, status):
        """That status and a body with no length that never ends."""
        self.close_connection = True
        self.send_response(status)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        chunk = b"\0" * 65536
        try:
            while True:
                self.wfile.write(chunk)
        except OSError:
            pass

    def do_GET(self):
        self.forward("GET")

    def do_HEAD(self):
        self.forward("HEAD")

    def do_PUT(self):
        self.forward("PUT")

    def do_POST(self):
        self.forward("POST")

    def do_DELETE(self):
        self.forward("DELETE")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--skip", type=int, default=1)
    ap.add_argument("--faults", default="")
    ap.add_argument("--stall", type=float, default=30)
    ap.add_argument("--drip", type=float, default=4, help="bytes a second for the drip fault")
    ap.add_argument("--log")
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--delay-ms", type=float, default=0, help="held before each request goes upstream")
    ap.add_argument("--rate-mbit", type=float, default=0, help="all bodies together at this rate")
    a = ap.parse_args()
    faults = [f for f in a.faults.split(",") if f]
    always = faults[0][len("always:"):] if faults and faults[0].startswith("always:") else None
    # socketserver's listen backlog is 5: a client opening more connections
    # at once than that has its SYNs dropped and resent a second later,
    # which no data-centre link does.
    http.server.ThreadingHTTPServer.request_queue_size = 128
    srv = http.server.ThreadingHTTPServer((a.listen, a.port), Handler)
    srv.daemon_threads = True
    srv.state = State(a.skip, faults, always)
    srv.upstream = urllib.parse.urlsplit(a.upstream)
    srv.stall = a.stall
    srv.drip = a.drip
    srv.log = a.log
    srv.delay = a.delay_ms / 1000
    srv.pacer = Pacer(a.rate_mbit) if a.rate_mbit > 0 else None
    print("faultproxy: listening on %s:%d" % (a.listen, a.port), file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
