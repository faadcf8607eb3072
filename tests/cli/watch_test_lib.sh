# shellcheck shell=bash
# Shared by the `artune watch` shell tests (watch_cli_test.sh, watch_netns_test.sh):
# sourced after tests/relay/test_lib.sh (check, $dir), not run.

# wait_for_baseline: waits (at most 10 s) for the watcher's first decision in
# $dir/watch.jsonl and checks that it made the first window the reference.
wait_for_baseline() {
  for _ in $(seq 100); do
    [[ -s $dir/watch.jsonl ]] && break
    sleep 0.1
  done
  check "the first window became the reference (baseline)" \
    jq -e -s '.[0].action == "baseline" and .[0].window_messages >= 200' "$dir/watch.jsonl"
}

# stop_watcher PID: SIGINT to the watcher, which must exit 0; its decisions printed.
stop_watcher() {
  local status
  kill -INT "$1"
  wait "$1"
  status=$?
  check "watch stopped cleanly at SIGINT (exit $status: $(tail -c 300 "$dir/watch.err"))" \
    test "$status" = 0
  echo "decisions:"
  jq -c '{action, drift, in_force, candidate, predicted_margin, paired, reason}' "$dir/watch.jsonl"
}
