#!/usr/bin/env bash
# Builds the transport's libFuzzer targets with clang in their own build
# directory (the transport's sources and the control plane's generated code) and
# runs each for a bounded time: the engine's packet parser (packet_fuzz), the tcp
# fabric's frame parser over a loopback socket (tcp_frame_fuzz), the shm fabric's
# inbound ring written by a hostile peer (shm_ring_fuzz) and the control plane's
# decoders and knob text (control_fuzz).
# Usage: fuzz.sh BUILD_DIR PROTO_GEN_DIR [SECONDS_PER_TARGET]
# Exit status: 0 when every target ran clean; 1 on a finding (the reproducer is
# left in BUILD_DIR). Skips (exit 0, with the reason) when clang cannot build them.
set -euo pipefail

build_dir=${1:?usage: fuzz.sh BUILD_DIR PROTO_GEN_DIR [SECONDS]}
proto_dir=$(cd "${2:?usage: fuzz.sh BUILD_DIR PROTO_GEN_DIR [SECONDS]}" && pwd)
seconds=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

source "$root/tests/fuzz_lib.sh"
fuzz_begin "$build_dir" "$root/base/include" "$root/transport/include" "$root/transport/src" \
  "$proto_dir"

mapfile -t sources < <(find "$root/transport/src" "$root/base/src" -name '*.cc' | sort)
sources+=("$proto_dir/control.pb.cc" "$proto_dir/control.grpc.pb.cc")
fuzz_objects "$root/base $root/transport $proto_dir" -- "${sources[@]}"
# shellcheck disable=SC2207
libs=($(pkg-config --libs grpc++ protobuf tomlplusplus) -libverbs -lrdmacm -lpthread)

# Seeds that reach past the first checks.
seed() { mkdir -p "corpus_$1" && python3 -c "$2" >"corpus_$1/seed_$3"; }
# Server role: one whole eager request ("/fuzz/Echo", 6 bytes), then the FIN.
seed packet_fuzz 'import struct, sys
def packet(kind, entries, payload, call=1, slices=1, method=0):
    head = struct.pack("<BBBBIQIIIiII", kind, 0, 0, method, len(entries), call, slices,
                       len(payload), 0, 0, 0, 0)
    return head + b"".join(struct.pack("<II", *e) for e in entries) + payload
eager = packet(1, [(0, 6)], b"/fuzz/Echoabcdef", method=10)
fin = packet(4, [], b"")
out = b"\x01"
for p in (eager, fin):
    out += b"\x00" + struct.pack("<H", len(p)) + p
sys.stdout.buffer.write(out)' eager
seed control_fuzz 'import sys; sys.stdout.buffer.write(b"\x0a\x08\x08\x80\x80\x04\x10\x80\x80\x20")' knobs
seed control_fuzz 'import sys; sys.stdout.buffer.write(b"eager_threshold=64KiB")' text
# After the hello: one 16-byte send, then a read request for an unknown key.
seed tcp_frame_fuzz 'import struct, sys
def frame(kind, body, ident=0): return struct.pack("<HBBIQQ", 0xA7CE, 2, kind, 0, len(body), ident) + body
out = b"\x01" + frame(2, b"x" * 16) + frame(3, struct.pack("<QQII", 0x10000, 16, 7, 0), 5)
sys.stdout.buffer.write(out)' frames

# The claimed position (8 bytes, even: "what follows"), one 16-byte send, then a
# read request for an unknown key in the one-copy mode.
seed shm_ring_fuzz 'import struct, sys
def record(kind, body, ident=0): return struct.pack("<IIQQ", kind, 0, ident, len(body)) + body + b"\0" * (-len(body) % 8)
out = struct.pack("<Q", 0) + record(1, b"x" * 16) + record(2, struct.pack("<QQII", 0x10000, 16, 7, 0), 5)
sys.stdout.buffer.write(out)' records

status=0
for target in packet_fuzz tcp_frame_fuzz shm_ring_fuzz control_fuzz; do
  nice "$cxx" "${flags[@]}" "$here/fuzz/$target.cc" "${objects[@]}" "${libs[@]}" -o "$target"
  fuzz_run "$target" "$seconds" || status=1
done
exit $status
