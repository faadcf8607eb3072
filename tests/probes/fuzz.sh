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
cxx=${CXX_FUZZ:-clang++}

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz.sh: skipped: $cxx not found (install clang to run the libFuzzer targets)"
  exit 0
fi
mkdir -p "$build_dir"
cd "$build_dir"

sources=(
  "$root/probes/decode/frame_header.cc" "$root/probes/decode/http2_decoder.cc"
  "$root/probes/decode/http2_frames.cc" "$root/probes/decode/http2_resync.cc"
  "$root/probes/decode/hpack_headers.cc" "$root/probes/decode/grpc_framing.cc"
  "$root/probes/decode/tensor.cc" "$root/probes/decode/wire_reader.cc"
  "$root/probes/classify/profile.cc" "$root/probes/classify/profile_output.cc"
  "$root/probes/src/session.cc" "$root/probes/src/event.cc"
  "$root/probes/src/iovec_attribution.cc"
  "$root/probes/pcap/packet_parser.cc" "$root/probes/pcap/tcp_reassembler.cc"
  "$root/transport/src/status.cc"
)
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I"$root/probes/include" -I"$root/probes" -I"$root/transport/include"
       -I"$root/probes/ebpf/include" -I"$root/probes/preload/include")

# Probe that this clang can link a fuzzer at all (libclang-rt present).
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  > probe_fuzzer.cc
if ! "$cxx" -fsanitize=fuzzer probe_fuzzer.cc -o probe_fuzzer 2>probe_fuzzer.log; then
  echo "fuzz.sh: skipped: $cxx cannot link -fsanitize=fuzzer programs (install libclang-rt-dev):"
  cat probe_fuzzer.log
  exit 0
fi

# Objects once (2 cores shared): the library sources, then each target.
objects=()
for src in "${sources[@]}"; do
  obj=$(basename "$src" .cc).o
  # Rebuilt when its source or any header it may include changed (a stale object
  # with an old struct layout corrupts memory, and the fuzzer reports nonsense).
  if [[ ! -f $obj || $src -nt $obj ||
        -n $(find "$root/probes" "$root/transport/include" -name '*.h' -newer "$obj" -print -quit) ]]; then
    nice "$cxx" "${flags[@]}" -c "$src" -o "$obj"
  fi
  objects+=("$obj")
done

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
  echo "fuzz.sh: running $target for ${seconds}s"
  if ! ./"$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 "corpus_$target" > "$target.log" 2>&1; then
    echo "fuzz.sh: $target FAILED; log: $build_dir/$target.log"
    tail -40 "$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$target.log" | tail -2 || true
  fi
done
exit $status
