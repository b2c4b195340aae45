#!/usr/bin/env python3
"""capture_proxy.py - an HTTP proxy that records what passes through it, for t-remote-settings.

    capture_proxy.py --port PORT --log FILE [--upstream http://127.0.0.1:N]

Appends one JSON line per request to FILE: {"method", "target", "headers"
(names in lower case), "status", "bytes" (body bytes sent back)}.  It
serves as both kinds of proxy at once:

- a reverse proxy (an endpoint in front of a server): a request for a path
  goes to --upstream unchanged, Host included, so S3 signatures still match;
- a forward proxy (http_proxy, https_proxy): a request for an absolute URL
  goes to --upstream whatever host it names (so a host that does not
  resolve reaches the test server only through the proxy), and CONNECT
  HOST:PORT opens a tunnel to 127.0.0.1:PORT when HOST is 127.0.0.1 or ends
  in .invalid (a name only the proxy knows), else it is answered 403
  (nothing here resolves names; the log keeps HOST).

Python 3 standard library only.
"""
import argparse
import http.client
import http.server
import json
import select
import socket
import threading
import urllib.parse

LOCK = threading.Lock()


def record(log, entry):
    with LOCK, open(log, "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def entry(self, status, nbytes):
        record(self.server.log, {"method": self.command, "target": self.path,
                                 "headers": {k.lower(): v for k, v in self.headers.items()},
                                 "status": status, "bytes": nbytes})

    def do_CONNECT(self):
        host, _, port = self.path.rpartition(":")
        if host != "127.0.0.1" and not host.endswith(".invalid"):
            self.entry(403, 0)
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            up = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
        except OSError:
            self.entry(502, 0)
            self.send_error(502)
            return
        self.entry(200, 0)
        self.send_response(200)
        self.end_headers()
        self.close_connection = True
        socks = [self.connection, up]
        try:
            while True:
                ready, _, _ = select.select(socks, [], [], 30)
                if not ready:
                    break
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (up if s is self.connection else self.connection).sendall(data)
        except OSError:
            pass
        finally:
            up.close()

    def forward(self):
        u = urllib.parse.urlsplit(self.path)
        path = self.path
        if u.scheme:
            path = urllib.parse.urlunsplit(("", "", u.path or "/", u.query, ""))
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        up = urllib.parse.urlsplit(self.server.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
        try:
            conn.request(self.command, path, body=body, headers=headers)
            resp = conn.getresponse()
        except OSError:
            self.entry(502, 0)
            self.send_error(502)
            return
        self.send_response_only(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in ("connection", "keep-alive", "transfer-encoding"):
                self.send_header(k, v)
        length = resp.getheader("Content-Length")
        if length is None:
            self.close_connection = True
        self.end_headers()
        sent = 0
        try:
            while True:
                data = resp.read(65536)
                if not data:
                    break
                self.wfile.write(data)
                sent += len(data)
        except OSError:
            self.close_connection = True
        finally:
            conn.close()
            self.entry(resp.status, sent)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--upstream", default="")
    a = ap.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.log, srv.upstream = a.log, a.upstream
    srv.serve_forever()


if __name__ == "__main__":
    main()
