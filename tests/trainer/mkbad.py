"""Writes broken variants of a good safetensors file into DIR and a list
DIR/cases of "FILE|words the error must contain" for tests/trainer/bad-input.sh."""
import json
import struct
import sys

good, out = sys.argv[1], sys.argv[2]
data = open(good, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = data[8 + n:]
cases = []


def write(name, hdr, payload=None, raw=None, want=""):
    path = "%s/%s" % (out, name)
    with open(path, "wb") as f:
        if raw is not None:
            f.write(raw)
        else:
            h = json.dumps(hdr).encode()
            h += b" " * (-len(h) % 8)
            f.write(struct.pack("<Q", len(h)) + h + (body if payload is None else payload))
    cases.append("%s|%s" % (name, want))


w = "bert.encoder.layer.0.attention.self.query.weight"
h = dict(header)
h["bert.encoder.layer.0.attention.self.quary.weight"] = h.pop(w)
write("wrong-name.safetensors", h,
      want="tensor 'bert.encoder.layer.0.attention.self.quary.weight' is not a parameter")
h = dict(header)
del h[w]
write("missing.safetensors", h, want="tensor '%s' missing" % w)
h = json.loads(json.dumps(header))
h[w]["shape"] = [4, 16]
write("wrong-shape.safetensors", h, want="tensor '%s': shape [4, 16], expected [8, 8]" % w)
h = json.loads(json.dumps(header))
h[w]["dtype"] = "I32"
write("wrong-dtype.safetensors", h, want="tensor '%s': dtype I32, expected F32" % w)
h = json.loads(json.dumps(header))
h[w]["dtype"] = "F16"
write("wrong-dtype-size.safetensors", h, want="tensor '%s': field 'data_offsets' spans 256 bytes, shape and dtype need 128" % w)
write("truncated-header.safetensors", None, raw=data[:8 + n // 2],
      want="header: length %d runs past the end of the file" % n)
write("oversized-header.safetensors", None, raw=struct.pack("<Q", 1 << 40) + data[8:],
      want="header: length 1099511627776 exceeds the limit")
write("tiny.safetensors", None, raw=b"\x01\x00", want="header: file too short")
write("truncated-data.safetensors", header, payload=body[:len(body) // 2],
      want="outside the %d data bytes" % (len(body) // 2))
write("not-json.safetensors", None,
      raw=struct.pack("<Q", 8) + b"{\"a\": [}" + body, want="header: offset 7: expected a value")
write("empty-header.safetensors", None,
      raw=struct.pack("<Q", 0), want="header: offset 0: expected a value")
with open(out + "/cases", "w") as f:
    f.write("\n".join(cases) + "\n")
