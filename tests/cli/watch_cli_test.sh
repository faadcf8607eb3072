#!/usr/bin/env bash
# `artune watch` (issue 25's closed loop) beside a real application: the built-in
# TensorFlow-like workload runs under `artune run` through a relay, first with small
# tensors (--scale 0.01), then at full size. The watcher reads the relay's
# counters: the first window becomes the reference, the full-size tensors are a
# drift, and it decides with its evidence (a prediction from a link model measured
# against an `artune serve`, and an A/B there when the prediction is worth one). A
# push must have reached the relay; any other decision must leave it as it was.
# Every decision is stored and listed by `artune watch list`.
#   watch_cli_test.sh ARTUNE
set -uo pipefail
artune=${1:?usage: watch_cli_test.sh ARTUNE}
[[ -x $artune ]] || { echo "FAIL: $artune is not an executable"; exit 1; }

# shellcheck source=../relay/test_lib.sh
source "$(dirname "$(readlink -f "$0")")/../relay/test_lib.sh"
# shellcheck source=watch_test_lib.sh
source "$(dirname "$(readlink -f "$0")")/watch_test_lib.sh"
relay_test_begin watch

export XDG_CONFIG_HOME=$dir/config XDG_DATA_HOME=$dir/data
unset ARTUNE_TOKEN_FILE ARTUNE_TLS_CERT ARTUNE_TLS_KEY ARTUNE_TLS_CA LD_PRELOAD ARTUNE_CONFIG
for variable in $(env | grep -o '^ARTUNE_[A-Z_]*' | grep -v '^ARTUNE_RELAY_REDIRECT'); do
  unset "$variable"
done

# wait_for_line FILE WHAT: until FILE has a line (a server's JSON greeting).
wait_for_line() {
  for _ in $(seq 300); do
    [[ -s $1 ]] && return 0
    sleep 0.1
  done
  echo "FAIL: $2 did not start: $(cat "$1.err" 2>/dev/null)"
  exit 1
}
# The relay's eager threshold in force (a dry run pushes nothing and shows it).
in_force_eager() {
  "$artune" apply config --live "$relay" --set polling=adaptive --dry-run --json 2>/dev/null |
    jq -r .config.eager_threshold
}

"$artune" relay --json --listen 127.0.0.1:0 >"$dir/relay.json" 2>"$dir/relay.json.err" &
pids+=($!)
wait_for_line "$dir/relay.json" "the relay"
relay=$(jq -r .address "$dir/relay.json")
"$artune" serve --json --listen 127.0.0.1:0 --servers 1 --transport artune >"$dir/serve.json" \
  2>"$dir/serve.json.err" &
pids+=($!)
wait_for_line "$dir/serve.json" "artune serve"
serve=$(jq -r .base "$dir/serve.json")

timeout 120 "$artune" model measure --peer "$serve" --budget 5 --polling adaptive --inflight 1,4 \
  --json >"$dir/model.json" 2>"$dir/model.err"
check "a link model of the A/B peer's link was measured (exit $?)" \
  jq -e '.id > 0 and (.points | length) > 0' "$dir/model.json"
before=$(in_force_eager)
check "the relay runs the default eager threshold ($before)" test "$before" = 16KiB

"$artune" watch run --server "$relay" --ab-peer "$serve" --interval 0.5 --duration 60 \
  --window-messages 200 --ab-repeats 6 --ab-duration 0.2 --json >"$dir/watch.jsonl" \
  2>"$dir/watch.err" &
watcher=$!
pids+=($watcher)
workload() {
  timeout 120 "$artune" run --relay-port "${relay##*:}" -- \
    "$artune" workload --steps "$1" --scale "$2" --json >"$dir/workload-$2.json" 2>>"$dir/run.err"
}
workload 6 0.01
check "the small-tensor run went through the relay" jq -e '.validated == true' \
  "$dir/workload-0.01.json"
wait_for_baseline
workload 2 1
check "the full-size run went through the relay" jq -e '.validated == true' "$dir/workload-1.json"
# The watcher decides within a few windows of the drift (an A/B takes seconds).
for _ in $(seq 300); do
  [[ $(wc -l <"$dir/watch.jsonl") -ge 2 ]] && break
  sleep 0.1
done
stop_watcher "$watcher"
decision=$(sed -n 2p "$dir/watch.jsonl")
check "the watcher decided after the full-size run" test -n "$decision"
check "the full-size tensors were a drift the watcher decided on" \
  jq -e '.drift >= 0.25 and .candidate != "" and (.action | IN("push", "keep", "hold"))' \
  <<<"$decision"
check "a measured decision carries its A/B evidence" \
  jq -e '(.paired.pairs == 0) or (.paired.pairs == 6 and .paired.verdict != "")' <<<"$decision"
action=$(jq -r .action <<<"$decision")
after=$(in_force_eager)
if [[ $action == push ]]; then
  candidate=$(jq -r '.candidate | sub("eager_threshold="; "") | sub(";.*"; "")' <<<"$decision")
  check "the pushed config reached the relay (eager $after, candidate $candidate)" \
    test "$after" = "$candidate"
  check "a push was measured faster beyond noise" jq -e '.paired.verdict == "faster"' \
    <<<"$decision"
else
  check "a $action left the relay as it was ($after)" test "$after" = "$before"
fi
"$artune" watch list --json >"$dir/list.json"
check "watch list shows every decision, newest first" \
  jq -e --argjson n "$(wc -l <"$dir/watch.jsonl")" \
  '.total_watch_events == $n and .watch_events[-1].action == "baseline"' "$dir/list.json"

echo "$failures failed"
[[ $failures -eq 0 ]]
