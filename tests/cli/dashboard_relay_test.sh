#!/usr/bin/env bash
# artune dashboard under tmux, transport view of an `artune relay` (issue 22,
# "watched live"): while the built-in workload runs under `artune run` through the
# relay, the dashboard shows the per-protocol counters of its traffic, both ways:
# the program's small requests (which the relay's server receives) and the
# server's tensors, which the relay sends back by its clients and which reach the
# screen only because the relay adds its clients' counters to its server's GetStats.
# Ctrl-C restores the terminal (exit 130).
# Usage: dashboard_relay_test.sh ARTUNE_BINARY
set -euo pipefail
artune=$1
source "$(dirname "$0")/dashboard_tmux_lib.sh"
dashboard_test_begin relay
export XDG_CONFIG_HOME=$WORK/config
unset ARTUNE_TOKEN_FILE ARTUNE_CONFIG LD_PRELOAD

"$artune" relay --json --listen 127.0.0.1:0 >"$WORK/relay.json" 2>"$WORK/relay.err" &
pids+=($!)
wait_file "$WORK/relay.json" 30
relay=$(jq -r .address "$WORK/relay.json")
echo "relay at $relay"

DASH_ENV="NO_COLOR=1" start_dashboard 100 30 "$artune" dashboard --log "$WORK/log" \
  --server "$relay" --poll 0.2 --view transport
wait_for "server $relay"
wait_for "chunked-rendezvous"

# The workload, unmodified, through the relay for up to 60 s; the counters must
# move while it runs.
"$artune" run --relay-port "${relay##*:}" -- "$artune" workload --duration 60 --scale 0.25 \
  >"$WORK/workload.out" 2>"$WORK/run.err" &
run_pid=$!
pids+=("$run_pid")
row() { screen | awk -v name="$1" '$1 == name { print $2 }'; }
deadline=$((SECONDS + 50))
while :; do
  calls=$(screen | awk '$1 == "server" && $3 == "calls" { print $4 }')
  requests="$(row eager)/$(row coalesced-eager)"
  tensors=$(row chunked-rendezvous)
  if [[ -n $calls && $calls != 0 && $requests != 0/0 && $requests != / && -n $tensors &&
    $tensors != 0 ]]; then
    break
  fi
  kill -0 "$run_pid" 2>/dev/null || fail "the workload ended before the counters moved: \
$(tail -3 "$WORK/run.err")"
  ((SECONDS < deadline)) ||
    fail "calls '$calls', eager/coalesced-eager '$requests' or chunked-rendezvous '$tensors' stayed 0"
  sleep 0.2
done
kill -0 "$run_pid" 2>/dev/null || fail "the counters moved only after the workload ended"
echo "on screen while the workload runs: calls $calls, eager/coalesced-eager slices $requests," \
  "chunked-rendezvous slices $tensors"

tmux_ send-keys -t dash C-c
expect_exit 130
echo "PASS dashboard relay view"
