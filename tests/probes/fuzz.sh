#!/usr/bin/env bash
# Builds the probes' libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# in their own build directory, from the probes sources only, and runs each for a
# bounded time. Usage: fuzz.sh BUILD_DIR [SECONDS_PER_TARGET]
# Exit status: 0 when every target ran clean; 1 on a crash/leak (the reproducer
# is left in BUILD_DIR). Skips (exit 0, with the reason) when clang cannot build them.
set -euo pipefail

build_dir=${1:?usage: fuzz.sh BUILD_DIR [SECONDS]}
seconds=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

source "$root/tests/fuzz_lib.sh"
fuzz_begin "$build_dir" "$root/probes/include" "$root/probes" "$root/base/include" \
  "$root/probes/ebpf/include" "$root/probes/preload/include"
sources=(
  "$root/probes/decode/frame_header.cc" "$root/probes/decode/http2_decoder.cc"
  "$root/probes/decode/http2_frames.cc" "$root/probes/decode/http2_resync.cc"
  "$root/probes/decode/hpack_headers.cc" "$root/probes/decode/grpc_framing.cc"
  "$root/probes/decode/tensor.cc" "$root/probes/decode/wire_reader.cc"
  "$root/probes/classify/profile.cc" "$root/probes/classify/profile_output.cc"
  "$root/probes/src/session.cc" "$root/probes/src/event.cc"
  "$root/probes/src/iovec_attribution.cc"
  "$root/probes/pcap/packet_parser.cc" "$root/probes/pcap/tcp_reassembler.cc"
  "$root/base/src/status.cc"
)

fuzz_objects "$root/probes $root/base" -- "${sources[@]}"

status=0
for target in decoder_fuzz pcap_fuzz; do
  nice "$cxx" "${flags[@]}" "$here/fuzz/$target.cc" "${objects[@]}" -lnghttp2 -o "$target"
  mkdir -p "corpus_$target"
  if [[ $target == decoder_fuzz ]]; then
    # Seeds: the malformed corpus, each behind a control byte and a split byte.
    for seed in "$here"/corpus/*.h2; do
      { printf '\x03\xff'; cat "$seed"; } > "corpus_$target/$(basename "$seed")"
    done
  fi
  fuzz_run "$target" "$seconds" || status=1
done
exit $status
