#!/usr/bin/env python3
"""hostile_list.py - a server whose listings are wrong on purpose, for t-remote-list.sh.

    hostile_list.py PORT

The first path component picks the answer, as an S3 endpoint (s3://NAME/ with
--endpoint) or a plain HTTP listing (http://127.0.0.1:PORT/NAME/):

  garbage    200 and an HTML page
  cutpage    200, a ListObjectsV2 page cut off mid-element (a complete HTTP answer)
  endless    IsTruncated=true with the same NextContinuationToken every time
  notoken    IsTruncated=true and no NextContinuationToken
  huge       200 and a page that never ends
  silent     accepts, reads the request, never answers
  badjson    200 and a JSON listing cut off in a string
  html       200 and nginx's HTML listing where JSON was expected
Python 3 standard library only.
"""
import http.server
import socketserver
import sys
import time

HEAD = ('<?xml version="1.0" encoding="UTF-8"?>'
        '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>')


def contents(key):
    return ('<Contents><Key>%s</Key><LastModified>2026-12-04T05:55:26.000Z</LastModified>'
            '<ETag>&quot;00&quot;</ETag><Size>1</Size></Contents>' % key)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, body, ctype="application/xml"):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        name = self.path.lstrip("/").split("/")[0].split("?")[0]
        if name == "garbage":
            self.answer("<html><body>Welcome to our portal</body></html>", "text/html")
        elif name == "cutpage":
            page = HEAD + contents("a.sqfs") + contents("b.sqfs") + "<IsTruncated>false</IsTruncated></ListBucketResult>"
            self.answer(page[:len(HEAD) + len(contents("a.sqfs")) + 20])
        elif name == "endless":
            self.answer(HEAD + contents("a.sqfs") + "<IsTruncated>true</IsTruncated>"
                        "<NextContinuationToken>same</NextContinuationToken></ListBucketResult>")
        elif name == "notoken":
            self.answer(HEAD + contents("a.sqfs") + "<IsTruncated>true</IsTruncated></ListBucketResult>")
        elif name == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.end_headers()
            block = (contents("k" * 200) * 64).encode()
            try:
                self.wfile.write(HEAD.encode())
                while True:
                    self.wfile.write(block)
            except OSError:
                pass
            self.close_connection = True
        elif name == "silent":
            time.sleep(3600)
        elif name == "badjson":
            self.answer('[\n{ "name":"a.sqfs", "type":"file", "size":1 },\n{ "name":"b.sq', "application/json")
        elif name == "html":
            self.answer("<html>\r\n<head><title>Index of /</title></head>\r\n<body></body></html>", "text/html")
        else:
            self.send_error(404)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
