#!/usr/bin/env bash
# artune dashboard under tmux, transport view: the per-protocol counters of a
# running `artune serve` (read through its control plane's GetStats) while an
# `artune bench --peer` drives it. Checks the counters grow, NO_COLOR, and that
# Ctrl-C and SIGTERM restore the terminal (exit 130 and 143).
# Usage: dashboard_transport_test.sh ARTUNE_BINARY
set -euo pipefail
artune=$1
source "$(dirname "$0")/dashboard_tmux_lib.sh"
dashboard_test_begin transport

# A transport server on a free port; its address comes from the JSON line.
"$artune" --db "$WORK/store.db" serve --listen 127.0.0.1:0 --transport artune --servers 1 \
  --json >"$WORK/serve.json" 2>"$WORK/serve.err" &
pids+=($!)
wait_file "$WORK/serve.json" 30
server=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["servers"][0]["address"])' \
  "$WORK/serve.json")
base=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base"])' "$WORK/serve.json")
echo "transport server at $server"

# Monochrome first: NO_COLOR set, so the pane holds no colour escapes.
DASH_ENV="NO_COLOR=1" start_dashboard 100 30 "$artune" dashboard --log "$WORK/log" \
  --server "$server" --poll 0.2 --view transport
wait_for " 3 transport"
wait_for "server $server"
wait_for "PROTOCOL"
wait_for "chunked-rendezvous"
if tmux_ capture-pane -p -e -t dash | grep -qE $'\e\\[(3|4)[0-7]m|\e\\[38;5'; then
  fail "colour escapes on screen although NO_COLOR is set"
fi

# Traffic through the server (Small buffers: packed by coalesced eager): the
# calls and the coalesced-eager counters grow.
"$artune" --db "$WORK/store.db" bench --peer "$base" --transport artune \
  --benchmark latency --scheme uniform --classes S --warmup 0 --duration 60 \
  >"$WORK/bench.out" 2>&1 &
pids+=($!)
deadline=$((SECONDS + 40))
while :; do
  calls=$(screen | awk '$1 == "server" && $3 == "calls" { print $4 }')
  slices=$(screen | awk '$1 == "coalesced-eager" { print $2 }')
  if [[ -n $calls && $calls != 0 && -n $slices && $slices != 0 ]]; then break; fi
  ((SECONDS < deadline)) || fail "calls '$calls' or coalesced-eager slices '$slices' stayed 0"
  sleep 0.2
done
echo "calls on screen: $calls, coalesced-eager slices: $slices"

# Ctrl-C: exit 130, terminal restored.
tmux_ send-keys -t dash C-c
expect_exit 130
tmux_ kill-session -t dash

# With colour (the terminal has it, NO_COLOR unset): colour escapes appear.
DASH_ENV="" start_dashboard 80 24 "$artune" dashboard --log "$WORK/log" --server "$server" \
  --poll 0.2 --view transport
wait_for "chunked-rendezvous"
tmux_ capture-pane -p -e -t dash | grep -qE $'\e\\[' || fail "no colour although the terminal has it"
# SIGTERM: exit 143, terminal restored.
pid=$(dashboard_pid)
[[ -n $pid ]] || fail "dashboard process not found"
kill -TERM "$pid"
expect_exit 143
echo "PASS dashboard transport view"
