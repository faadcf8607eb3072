#!/usr/bin/env bash
# artune dashboard with no flags, under tmux: the home view over the store (issue
# 16: it used to exit 2, "nothing to show"). Before the store exists it says how
# to make one; once records land it lists them, newest first, with totals; key 2
# shows the sweep view following the newest sweep; q exits 0.
# Usage: dashboard_home_test.sh ARTUNE_BINARY SWEEP_FIXTURE
set -euo pipefail
artune=$1
fixture=$2
source "$(dirname "$0")/dashboard_tmux_lib.sh"
dashboard_test_begin home

start_store_dashboard
wait_for "3 transport   4 home"
wait_for "no store yet: artune probe, sweep and bench record there"

first=$("$fixture" "$db" create)
second=$("$fixture" "$db" create)
wait_for "Sweeps (2)"
wait_for "none yet: artune probe"
wait_for "none yet: artune bench"
screen | grep -qE "^ +$second +[0-9-]+ [0-9:]+ +tcp +latency-p50 .*unfinished" ||
  fail "sweep $second is not listed as unfinished"
"$fixture" "$db" verdict "$second" beats_default "chunk_size=1MiB;eager_threshold=256B" 9.75
"$fixture" "$db" finish "$second"
wait_for "beats default"
expect_newest_first "$second" "$first" sweeps

tmux_ send-keys -t dash 2
wait_for "sweep $second  latency-p50 (min)"
tmux_ send-keys -t dash 4
wait_for "Sweeps (2)"
quit_dashboard "home view"
