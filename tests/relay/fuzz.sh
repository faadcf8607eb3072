#!/usr/bin/env bash
# Builds the relay's libFuzzer target (relay_fuzz: the gRPC framing reader and the
# Data requests) with clang in its own build directory and runs it for a bounded
# time. Usage: fuzz.sh BUILD_DIR [SECONDS]
# Exit status: 0 when it ran clean (or was skipped, with the reason); 1 on a
# finding (the reproducer is left in BUILD_DIR).
set -euo pipefail
build_dir=${1:?usage: fuzz.sh BUILD_DIR [SECONDS]}
seconds=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

source "$root/tests/fuzz_lib.sh"
fuzz_begin "$build_dir" "$root/base/include" "$root/transport/include" "$root/transport/src" \
  "$root/transport/relay"
fuzz_objects "$root/transport/relay $root/base $root/transport/include $root/transport/src" -- \
  "$root/transport/relay/grpc_splitter.cc" "$root/transport/relay/relay_wire.cc" \
  "$root/transport/src/allocator.cc" "$root/transport/src/message_recycler.cc" \
  "$root/base/src/status.cc" \
  "$here/fuzz/relay_fuzz.cc"
nice "$cxx" "${flags[@]}" "${objects[@]}" -o relay_fuzz -lpthread

# A seed that reaches past the preface: preface, SETTINGS, one DATA frame with a
# 3-byte gRPC message.
mkdir -p corpus_relay_fuzz
python3 -c 'import struct, sys
frame = lambda t, f, s, p: struct.pack(">I", len(p))[1:] + bytes([t, f]) + struct.pack(">I", s) + p
msg = b"\0" + struct.pack(">I", 3) + b"abc"
sys.stdout.buffer.write(b"\x08" + b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + frame(0, 1, 1, msg))' \
  >corpus_relay_fuzz/seed_grpc
fuzz_run relay_fuzz "$seconds"
