#!/usr/bin/env bash
# artune dashboard under tmux, traffic view: a --exec probe of a loopback
# `artune bench` over stock gRPC. Checks the view title, the method, a non-zero
# RPC/s, the histograms, help, view switching, resize below and back above
# 80x24, and that q restores the terminal and exits 0.
# Usage: dashboard_traffic_test.sh ARTUNE_BINARY
set -euo pipefail
artune=$1
source "$(dirname "$0")/dashboard_tmux_lib.sh"
dashboard_test_begin traffic

start_dashboard 100 30 "$artune" --db "$WORK/store.db" dashboard --log "$WORK/log" \
  --exec -- "$artune" --db "$WORK/store.db" bench --transport grpc --benchmark latency \
  --scheme random --classes S,M --buffers 2 --medium-bytes 2048 --warmup 0 --duration 60

wait_for "artune dashboard"
wait_for " 1 traffic "
wait_for "/artune.bench.Bench/Echo" 45
wait_for "running"
wait_for "message sizes: /artune.bench.Bench/Echo"
wait_for "iovec sizes (all send calls)"

# RPC/s of the Echo row becomes a positive number once a whole second has passed.
deadline=$((SECONDS + 30))
while :; do
  rate=$(screen | awk '$2 == "/artune.bench.Bench/Echo" { print $3 }')
  if [[ -n $rate ]] && awk -v r="$rate" 'BEGIN { exit !(r + 0 > 0) }'; then break; fi
  ((SECONDS < deadline)) || fail "RPC/s of Echo stayed '$rate'"
  sleep 0.2
done
echo "Echo RPC/s on screen: $rate"
# A random scheme over Small and Medium classes: both classes in the S/M/L column.
screen | awk '$2 == "/artune.bench.Bench/Echo"' | grep -qE ' [0-9]+/[0-9]+/0 ' ||
  fail "no S/M/L mix on the Echo row"

# Help and back.
tmux_ send-keys -t dash '?'
wait_for "quit (Ctrl-C too)"
tmux_ send-keys -t dash Escape
wait_gone "quit (Ctrl-C too)"

# The other views, then back.
tmux_ send-keys -t dash 3
wait_for "No server"
tmux_ send-keys -t dash 2
wait_for "No sweep"
tmux_ send-keys -t dash Tab
wait_for "No server"
tmux_ send-keys -t dash t
wait_for "/artune.bench.Bench/Echo"

# Too small, then large enough again.
tmux_ resize-window -t dash -x 70 -y 20
wait_for "terminal too small: 70x20"
tmux_ resize-window -t dash -x 120 -y 40
wait_for "/artune.bench.Bench/Echo"
wait_gone "terminal too small"

tmux_ send-keys -t dash q
# q stops the probe (the bench gets SIGTERM): the dashboard itself exits 0.
expect_exit 0 resized
echo "PASS dashboard traffic view"
