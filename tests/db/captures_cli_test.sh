#!/usr/bin/env bash
# `artune probe --read FILE` stores the capture; `artune captures` lists it and
# `artune captures show ID --json` gives the same methods back. The pcap is written
# here: one client stream (preface, SETTINGS, two unary calls on /tf.Worker/RecvTensor
# with 10- and 2000-byte messages) in Ethernet/IPv4/TCP frames to port 50051.
# Usage: captures_cli_test.sh ARTUNE
set -u
artune=$1
command -v python3 >/dev/null || { echo "python3 missing: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/artune.db
pcap=$dir/calls.pcap
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

python3 - "$pcap" <<'PY'
import struct, sys
def frame(ftype, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload
path = b"/tf.Worker/RecvTensor"
block = b"\x83\x86" + bytes([0x04, len(path)]) + path  # POST, http, literal :path
def call(stream, size):
    message = b"\x00" + struct.pack(">I", size) + b"a" * size
    return frame(1, 0x4, stream, block) + frame(0, 0x1, stream, message)
stream = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + call(1, 10) + call(3, 2000)
def packet(seq, flags, payload):
    tcp = struct.pack(">HHIIBBHHH", 40000, 50051, seq, 0, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0, 64, 6, 0,
                     bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
    return b"\x00" * 12 + b"\x08\x00" + ip + tcp + payload
packets = [packet(1000, 0x02, b"")]  # SYN
seq = 1001
for start in range(0, len(stream), 1000):
    chunk = stream[start:start + 1000]
    packets.append(packet(seq, 0x18, chunk))  # PSH|ACK
    seq += len(chunk)
with open(sys.argv[1], "wb") as out:
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i, data in enumerate(packets):
        out.write(struct.pack("<IIII", 1700000000, i * 1000, len(data), len(data)) + data)
PY

out=$("$artune" --db "$db" probe --pcap --read "$pcap" --port 50051 --json 2>&1) || fail "probe: $out"
[[ $out == *'"capture_id": 1'* && $out == *'/tf.Worker/RecvTensor'* ]] || fail "probe output: $out"
out=$("$artune" --db "$db" probe --pcap --read "$pcap" --port 50051 --no-store 2>&1) || fail "probe --no-store: $out"

out=$("$artune" --db "$db" captures --json 2>&1) || fail "captures --json: $out"
[[ $out == *'"total_captures": 1'* && $out == *'"backend": "pcap"'* ]] || fail "captures --json: $out"
[[ $out == *'"messages": 2,'* && $out == *'"bytes": 2010,'* ]] || fail "captures --json totals: $out"
out=$("$artune" --db "$db" captures 2>&1) || fail "captures: $out"
[[ $out == *"ID"*"BACKEND"*"METHODS"* && $out == *"pcap"* ]] || fail "captures table: $out"

out=$("$artune" --db "$db" captures show 1 --json 2>&1) || fail "captures show --json: $out"
[[ $out == *'"capture_id": 1'* && $out == *'"method": "/tf.Worker/RecvTensor"'* ]] ||
  fail "captures show --json: $out"
[[ $out == *'"messages": 2'* && $out == *'"bytes": 2010'* ]] || fail "captures show methods: $out"
out=$("$artune" --db "$db" captures show 1 2>&1) || fail "captures show: $out"
[[ $out == *"Capture 1"*"/tf.Worker/RecvTensor"* ]] || fail "captures show table: $out"
out=$("$artune" --db "$db" captures show 7 2>&1) && fail "unknown id succeeded: $out"
[[ $out == *"no capture with id 7"* ]] || fail "unknown id: $out"

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "probe store and captures: all checks passed"
