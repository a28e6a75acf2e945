#!/usr/bin/env python3
"""Writes a shard set of about GB gibibytes for bench/loader, from one
shard made by `cadre-train prep` (SRC): its records repeated into shards
of SHARD_MIB each, headers renumbered.
  real:   every shard valid, checksums computed (the first start checks
          them all); no verified.rec, which the first open writes.
  sparse: sparse files of the right size with only the header written
          and verified.rec written here from their metadata, as prep
          writes it: only the metadata path (a later start) can open them.
  gen-shards.py SRC OUTDIR GB real|sparse SHARD_MIB"""
import hashlib
import os
import struct
import sys

src, out, gb, mode, shard_mib = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
data = open(src, "rb").read()
rsz = struct.unpack_from("<I", data, 92)[0]
nseq = struct.unpack_from("<Q", data, 96)[0]
roff = struct.unpack_from("<Q", data, 120)[0]
recs = data[roff:roff + nseq * rsz]
head = bytearray(data[:roff])
per = max(1, (shard_mib << 20) // rsz)
nshards = max(1, -(-int(gb * (1 << 30)) // (per * rsz)))
os.makedirs(out)
body = None
if mode == "real":
    body = recs * (per // nseq) + recs[:(per % nseq) * rsz]
lines = []
for i in range(nshards):
    struct.pack_into("<I", head, 84, i)
    struct.pack_into("<I", head, 88, nshards)
    struct.pack_into("<Q", head, 96, per)
    struct.pack_into("<Q", head, 128, per * rsz)
    name = "shard-%05d.bin" % i
    path = os.path.join(out, name)
    with open(path, "wb") as f:
        f.write(head)
        if body is not None:
            h = hashlib.sha256(head)
            h.update(body)
            f.write(body)
            f.write(h.digest())
        else:
            f.truncate(roff + per * rsz + 32)
    if body is None:
        st = os.stat(path)
        lines.append("%s %d %d %d %d %d %s\n" % ("00" * 32, st.st_size, st.st_mtime_ns,
                                                 st.st_ctime_ns, st.st_ino, st.st_dev, name))
if lines:
    with open(os.path.join(out, "verified.rec"), "w") as f:
        f.write("cadre-filerec 1\n" + "".join(lines))
print(nshards, per * rsz * nshards)
