# Shared by the shell tests that start an `artune serve` (serve_auth_test.sh,
# fabric_auto_test.sh): sourced, not run.
#
# serve_test_begin NAME: a scratch directory in $dir, removed at exit after the
# server whose pid the test keeps in $server_pid is stopped; check() and its
# count in $failures.
serve_test_begin() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/artune-$1-XXXXXX")
  server_pid=
  failures=0
  trap serve_test_cleanup EXIT
}

serve_test_cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$dir"
}

# check DESCRIPTION COMMAND...: passes when COMMAND exits 0 (its output is shown).
check() {
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}
