#!/usr/bin/env python3
"""Sends cadred one bad (or one good) frame and reports what came back,
for tests/daemon/cadred-proto.sh: `cadred-frame.py SOCKET CASE` prints
the reply's "error" (or "ok") and then "closed" when the daemon closed the
connection. CASE: garbage, oversize, version, noop, array, empty, ping."""
import json
import socket
import struct
import sys

path, case = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(path)


def frame(obj_bytes):
    return struct.pack(">I", len(obj_bytes)) + obj_bytes


if case == "garbage":
    data = frame(b"\x00\xffthis is not json{{{")
elif case == "oversize":
    data = struct.pack(">I", 64 << 20) + b"{" * 1024
elif case == "version":
    data = frame(json.dumps({"v": 99, "op": "ping"}).encode())
elif case == "noop":
    data = frame(json.dumps({"v": 1, "op": "launch-missiles"}).encode())
elif case == "array":
    data = frame(b"[1, 2, 3]")
elif case == "empty":
    data = struct.pack(">I", 0)
elif case == "ping":
    data = frame(json.dumps({"v": 1, "op": "ping"}).encode())
else:
    sys.exit("unknown case " + case)
try:
    s.sendall(data)
except OSError as e:
    print("send: " + str(e))
buf = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        if case == "ping" and len(buf) >= 4 and \
                len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
            break
except OSError as e:
    print("recv: " + str(e))
if len(buf) >= 4:
    n = struct.unpack(">I", buf[:4])[0]
    reply = json.loads(buf[4:4 + n])
    print(reply.get("error", "ok"))
if case != "ping":
    print("closed")
