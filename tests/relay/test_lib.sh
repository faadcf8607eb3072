# Shared by the relay's shell tests (tests/relay/*_test.sh, tests/cli/relay_live_test.sh):
# sourced, not run.
#
# relay_test_begin NAME: a scratch directory in $dir, and the arrays the test fills:
# pids (background processes: continued if stopped, killed and reaped at exit) and
# namespaces (deleted at exit). Also check() and its count in $failures.
relay_test_begin() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/artune-$1-XXXXXX")
  pids=()
  namespaces=()
  failures=0
  trap relay_test_cleanup EXIT
}

relay_test_cleanup() {
  for pid in "${pids[@]}"; do kill -CONT "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  rm -rf "$dir"
}

# check DESCRIPTION COMMAND...: passes when COMMAND exits 0 (its output is dropped).
check() {
  local what=$1
  shift
  if "$@" >/dev/null; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}
