#!/usr/bin/env python3
"""Renders an HTML report with headless chromium and checks what a reader would see.

  render_check.py CHROMIUM HTML WIDTHxHEIGHT [--text S]... [--colour #rrggbb]...

* a screenshot of WIDTHxHEIGHT is taken; it must exist, be a PNG of exactly that
  size and not be blank (enough distinct colours and non-white pixels), and every
  --colour must cover some pixels (the chart fills: a chart that did not render
  has none);
* the DOM chromium built (--dump-dom) must contain every --text.
Chromium runs offline (no network services, fresh profile). Exit 0 ok, 1 failed.
Standard library only: the PNG is decoded with zlib.
"""
import collections
import os
import struct
import subprocess
import sys
import tempfile
import zlib

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
]
TIMEOUT_S = 120  # a safety net under heavy load, not an expectation


def run_chromium(chromium, profile_dir, extra, url):
    command = [chromium, *CHROMIUM_FLAGS, "--user-data-dir=" + profile_dir, *extra, url]
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=TIMEOUT_S, check=False)


def decode_png(path):
    """(width, height, {b"rgb": pixel count}) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in (2, 6) or interlace != 0:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour_type}")
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    counts = collections.Counter()
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + predictor) & 0xFF
        elif kind != 0:
            raise ValueError(f"bad PNG filter {kind} on row {y}")
        row = bytes(line)
        counts.update(row[x:x + 3] for x in range(0, stride, channels))
        previous = line
    return width, height, counts


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        print(__doc__)
        return 1
    chromium, html, window = args[0], os.path.abspath(args[1]), args[2]
    texts, colours = [], []
    rest = args[3:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        (texts if flag == "--text" else colours).append(value)
    width, height = (int(v) for v in window.split("x"))
    url = "file://" + html
    failures = []
    with tempfile.TemporaryDirectory() as work:
        png = os.path.join(work, "shot.png")
        shot = run_chromium(chromium, os.path.join(work, "profile-shot"),
                            ["--screenshot=" + png, f"--window-size={width},{height}"], url)
        if not os.path.exists(png):
            print("FAIL: no screenshot; chromium said:\n" + shot.stderr.decode(errors="replace"))
            return 1
        if os.environ.get("ARTUNE_KEEP_SCREENSHOT"):
            import shutil
            shutil.copy(png, os.environ["ARTUNE_KEEP_SCREENSHOT"])
        got_width, got_height, counts = decode_png(png)
        if (got_width, got_height) != (width, height):
            failures.append(f"screenshot is {got_width}x{got_height}, wanted {width}x{height}")
        total = got_width * got_height
        non_white = total - counts.get(b"\xff\xff\xff", 0)
        print(f"screenshot {got_width}x{got_height}: {len(counts)} distinct colours, "
              f"{100.0 * non_white / total:.1f}% non-white pixels")
        if len(counts) < 16:
            failures.append(f"only {len(counts)} distinct colours: the page looks blank")
        if non_white < total * 0.02:
            failures.append(f"only {non_white} non-white pixels: the page looks blank")
        for colour in colours:
            want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
            covered = sum(n for pixel, n in counts.items()
                          if all(abs(p - w) <= 6 for p, w in zip(pixel, want)))
            print(f"colour {colour}: {covered} pixels")
            if covered < 30:
                failures.append(f"colour {colour} covers {covered} pixels: its chart did not render")

        dom = run_chromium(chromium, os.path.join(work, "profile-dom"), ["--dump-dom"], url)
        text = dom.stdout.decode(errors="replace")
        if "</html>" not in text:
            failures.append("--dump-dom gave no document: " + dom.stderr.decode(errors="replace"))
        for expected in texts:
            if expected not in text:
                failures.append(f"text not in the rendered DOM: {expected!r}")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
