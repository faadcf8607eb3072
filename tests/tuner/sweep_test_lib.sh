# shellcheck shell=bash
# Shared by the shell tests that run `artune sweep` in the background
# (sweep_resume_cli_test.sh, cli/background_load_test.sh,
# cli/unwritable_store_test.sh): sourced, not run.

# sweep_test_begin NAME: makes the test's directory $dir (named after NAME) and
# arranges, at exit, that a sweep still running ($sweep_pid) is killed,
# sweep_test_extra_cleanup runs where the test defines one (mounts to undo), and
# $dir is removed.
sweep_test_begin() {
  dir=$(mktemp -d "${TMPDIR:-/tmp}/artune-$1-XXXXXX")
  sweep_pid=
  trap sweep_test_cleanup EXIT
}

sweep_test_cleanup() {
  if [[ -n $sweep_pid ]]; then kill -9 "$sweep_pid" 2>/dev/null || true; fi
  if declare -F sweep_test_extra_cleanup >/dev/null; then sweep_test_extra_cleanup; fi
  rm -rf "$dir"
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
