#!/usr/bin/env python3
"""A webhook receiver for tests/daemon/notify.sh: records every POST.

webhook-server.py DIR [--unix PATH] [--status CODE] [--fail-first N] [--stall]

Listens on 127.0.0.1 (a free port, written to DIR/port) or on the unix
socket PATH; appends each POST body as one line to DIR/bodies and its
Content-Type to DIR/types; answers CODE (default 204), or 500 to the
first N POSTs; with --stall it reads the request and never answers.
DIR/ready appears once it listens.
"""
import argparse
import http.server
import os
import socketserver
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--unix")
    ap.add_argument("--status", type=int, default=204)
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--stall", action="store_true")
    a = ap.parse_args()
    lock = threading.Lock()
    count = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n) if n > 0 else b""
            with lock:
                count[0] += 1
                seen = count[0]
                with open(os.path.join(a.dir, "bodies"), "ab") as f:
                    f.write(body.replace(b"\n", b" ") + b"\n")
                with open(os.path.join(a.dir, "types"), "a") as f:
                    f.write(str(self.headers.get("Content-Type")) + "\n")
            if a.stall:
                time.sleep(3600)
            code = 500 if seen <= a.fail_first else a.status
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

    if a.unix:
        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

            def get_request(self):
                s, _ = super().get_request()
                return s, ("unix", 0)

        srv = Server(a.unix, Handler)
    else:
        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

        srv = Server(("127.0.0.1", 0), Handler)
        with open(os.path.join(a.dir, "port"), "w") as f:
            f.write("%d\n" % srv.server_address[1])
    open(os.path.join(a.dir, "ready"), "w").close()
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
