#!/usr/bin/env bash
# artune dashboard's watch view under tmux (issue 25: "a dashboard view of the
# history"): key 5 opens it; it follows the store while decisions land (as they
# do while `artune watch run` runs), newest first, with the change, the predicted
# and the measured saving and the reason; q exits 0.
# Usage: dashboard_watch_test.sh ARTUNE_BINARY SWEEP_FIXTURE
set -euo pipefail
artune=$1
fixture=$2
source "$(dirname "$0")/dashboard_tmux_lib.sh"
dashboard_test_begin watch

start_store_dashboard
wait_for "4 home   5 watch"
tmux_ send-keys -t dash 5
wait_for "no store yet: artune watch run records its decisions there"

in_force="chunk_size=512KiB;eager_threshold=4KiB"
baseline=$("$fixture" "$db" watch baseline "$in_force" - 0 0 "reference profile: 4096 messages")
wait_for "Watch decisions (1)"
wait_for "reference profile: 4096 messages"
push=$("$fixture" "$db" watch push "$in_force" "chunk_size=1MiB;eager_threshold=4KiB" 0.2 1.25 \
  "drift 41.0 %: predicted to save 20.0 %, measured 1.250x; pushed live")
wait_for "Watch decisions (2)"
wait_for "chunk_size 512KiB->1MiB"
screen | grep -qE "^ +$push +[0-9-]+ [0-9:]+ +push +20\.0% +20\.0% +127\.0\.0\.1:7001" ||
  fail "the push $push is not listed with its predicted and measured saving"
expect_newest_first "$push" "$baseline" decisions

tmux_ send-keys -t dash w
wait_for "Watch decisions (2)"
quit_dashboard "watch view"
