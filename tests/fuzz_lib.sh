# Shared by the libFuzzer scripts (tests/probes, tests/transport, tests/relay
# fuzz.sh): sourced, not run. Each script builds its targets with clang
# (-fsanitize=fuzzer,address,undefined) in its own directory and runs each for a
# bounded time.

# fuzz_begin BUILD_DIR INCLUDE_DIR...: makes BUILD_DIR the working directory,
# sets `cxx` ($CXX_FUZZ, else clang++) and the array `flags` (the sanitizers and
# -I for each INCLUDE_DIR), and skips (exit 0, with the reason) when the compiler
# cannot build fuzzers.
fuzz_begin() {
  local build_dir=$1 dir
  shift
  cxx=${CXX_FUZZ:-clang++}
  flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
  for dir in "$@"; do flags+=("-I$dir"); done
  mkdir -p "$build_dir"
  cd "$build_dir"
  fuzz_probe_compiler
}

# fuzz_probe_compiler: exits 0 (a skip, with the reason) when $cxx cannot link a
# fuzzer at all; returns otherwise.
fuzz_probe_compiler() {
  if ! command -v "$cxx" >/dev/null; then
    echo "fuzz: skipped: $cxx not found (install clang to run the libFuzzer targets)"
    exit 0
  fi
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
    >probe_fuzzer.cc
  if ! "$cxx" -fsanitize=fuzzer probe_fuzzer.cc -o probe_fuzzer 2>probe_fuzzer.log; then
    echo "fuzz: skipped: $cxx cannot link -fsanitize=fuzzer programs (install libclang-rt-dev):"
    cat probe_fuzzer.log
    exit 0
  fi
}

# fuzz_objects HEADER_DIRS -- SOURCES...: compiles each source once into the
# current directory (2 cores shared) and sets the array `objects`. An object is
# rebuilt when its source, or any header under HEADER_DIRS (space-separated), is
# newer: a stale object with an old struct layout corrupts memory, and the
# fuzzer then reports nonsense.
fuzz_objects() {
  local header_dirs=$1
  shift 2
  objects=()
  local src obj
  for src in "$@"; do
    obj=$(basename "$src" .cc).o
    # shellcheck disable=SC2086
    if [[ ! -f $obj || $src -nt $obj ||
          -n $(find $header_dirs -name '*.h' -newer "$obj" -print -quit) ]]; then
      nice "$cxx" "${flags[@]}" -c "$src" -o "$obj"
    fi
    objects+=("$obj")
  done
}

# fuzz_run TARGET SECONDS: runs ./TARGET on corpus_TARGET; returns 1 on a finding
# (the reproducer stays in this directory) after printing the log's tail.
fuzz_run() {
  local target=$1 seconds=$2
  mkdir -p "corpus_$target"
  echo "fuzz: running $target for ${seconds}s"
  if ! ./"$target" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 "corpus_$target" >"$target.log" 2>&1; then
    echo "fuzz: $target FAILED; log: $PWD/$target.log"
    tail -40 "$target.log"
    return 1
  fi
  grep -E "stat::number_of_executed_units|cov:" "$target.log" | tail -2 || true
}
