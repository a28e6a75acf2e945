#!/bin/sh
# cadre report --plot on a fixture experiment (tests/daemon/report-lib.sh):
# every SVG is well-formed XML, SVG 1.1, with a title, axis labels and a
# legend; headless Chromium (Debian's chromium) renders the throughput
# plot, and the screenshot, kept as tests/daemon/report-screenshot.png
# under the build dir, is not blank (many colours, enough ink). Skipped
# (77) without python3 or chromium.
set -u
. "$top_srcdir/tests/daemon/report-lib.sh"
command -v python3 >/dev/null 2>&1 || skip "python3 missing"

sd=$work/state
make_experiment "$sd" dddd00000004 plots 1 || { fail "fixture"; exit 1; }
"$cadre" report --state-dir "$sd" plots --plot "$work/plots" > "$work/out" 2> "$work/err"
rc=$?
if [ $rc = 0 ] && grep -q "^$work/plots/loss.svg$" "$work/err" &&
    ! grep -q "\.svg$" "$work/out"; then
	pass "--plot writes the SVG files and prints their paths on stderr"
else
	fail "--plot: exit $rc: $(cat "$work/err")"
	exit 1
fi
for f in throughput-b8-fp32.svg efficiency.svg loss.svg; do
	if python3 - "$work/plots/$f" <<'PY'
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert t.tag == ns + "svg" and t.get("version") == "1.1", "not SVG 1.1"
texts = [e.text or "" for e in t.iter(ns + "text")]
assert t.find(ns + "title").text, "no title"
assert any("samples/s" in x or "loss" in x or "efficiency" in x for x in texts), "no axis label"
assert sum(1 for x in texts if x.strip().replace(".", "").isdigit()) >= 6, "too few tick numbers"
assert t.findall(".//" + ns + "polyline"), "no line"
if sys.argv[1].endswith("loss.svg"):
    # a line per configuration, named by its resources, batch and
    # precision (not run ids), the repeats' spread as a band
    assert any(x.startswith("1 node x 1 rank, batch 8, fp32") for x in texts), texts
    assert not any(len(x) == 12 and all(ch in "0123456789abcdef" for ch in x) for x in texts), "a run id in the legend"
    assert t.findall(".//" + ns + "polygon"), "no band"
PY
	then
		pass "$f: well-formed SVG 1.1 with title, axis labels, ticks, lines"
	else
		fail "$f: not a valid chart"
	fi
done

chromium=$(command -v chromium || command -v chromium-browser) || {
	echo "SKIP: no chromium (Debian: apt-get install chromium)"
	[ $failed = 0 ] && exit 77
	exit 1
}
png=$top_builddir/tests/daemon/report-screenshot.png
mkdir -p "$top_builddir/tests/daemon"
rm -f "$png"
to=; command -v timeout >/dev/null 2>&1 && to="timeout 120"
HOME=$work $to "$chromium" --headless --no-sandbox --disable-gpu \
    --hide-scrollbars --user-data-dir="$work/chromium" \
    --screenshot="$png" --window-size=900,500 \
    "file://$work/plots/throughput-b8-fp32.svg" > "$work/chromium.log" 2>&1
if [ -s "$png" ]; then
	pass "chromium rendered the plot: $png"
else
	fail "chromium wrote no screenshot: $(tail -n 3 "$work/chromium.log")"
	exit 1
fi
# Decode the PNG (8-bit RGB or RGBA, as Chromium writes) and look at it.
if python3 - "$png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), "unexpected PNG type"
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, ink, i = bytearray(stride), set(), 0, 0
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3])
        colours.add(px)
        if px != b"\xff\xff\xff":
            ink += 1
    prev = line
print("%dx%d, %d colours, %.1f%% ink" % (w, h, len(colours), 100.0 * ink / (w * h)))
assert len(colours) >= 8 and 0.005 < ink / (w * h) < 0.6
PY
then
	pass "the screenshot is a real picture (not one colour, not blank)"
else
	fail "the screenshot looks blank"
fi
exit $failed
