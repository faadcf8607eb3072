#!/usr/bin/env bash
# artune dashboard under tmux, sweep view: a sweep written into the store while
# the dashboard watches it (the fixture commits trials one by one, as `artune
# sweep` does). Checks progress, the heatmap with the best cell marked, the best
# trial moving when a better one lands, the finish and the stored verdict, and q
# (exit 0, terminal restored).
# Usage: dashboard_sweep_test.sh ARTUNE_BINARY SWEEP_FIXTURE
set -euo pipefail
artune=$1
fixture=$2
source "$(dirname "$0")/dashboard_tmux_lib.sh"
dashboard_test_begin sweep

# The dashboard starts before any sweep exists and waits for one.
"$fixture" "$db" create >/dev/null  # makes the store; this first sweep is not followed
start_store_dashboard --sweep latest --view sweep
wait_for " 2 sweep "
wait_for "sweep 1  latency-p50 (min)"

id=$("$fixture" "$db" create)
wait_for "sweep $id  latency-p50 (min)"
"$fixture" "$db" trial "$id" 4KiB 64KiB 30.5
"$fixture" "$db" trial "$id" 256B 64KiB 12.25
"$fixture" "$db" trial "$id" 4KiB 1MiB 41
wait_for "3/6 trials"
wait_for "ETA 15 s"
wait_for "*12.25"
wait_for "running"
wait_for "trial 4 is being measured"
wait_for "chunk_size=64KiB eager_threshold=256B  12.25"

# A failed trial is marked x; a better one takes the mark.
"$fixture" "$db" trial "$id" 64KiB 64KiB 0 failed
"$fixture" "$db" trial "$id" 256B 1MiB 9.5
wait_for "*9.50"
wait_gone "*12.25"
screen | grep -qE '64KiB +x' || fail "the failed trial is not marked x"

# The verdict, stored before the finish mark as `artune sweep` does, shows once the
# sweep is finished (that it is hidden before is a unit test: views_test.cc).
"$fixture" "$db" verdict "$id" within_noise "chunk_size=1MiB;eager_threshold=256B" 9.75
"$fixture" "$db" finish "$id"
wait_for "finished"
wait_for "5/6 trials"
wait_for "verdict within noise: the chosen config does not beat the default"
wait_for "again  default chunk_size=512KiB eager_threshold=8KiB  9.75"
# The point never measured (64KiB x 1MiB) is a dot.
screen | grep -qE '64KiB +x +\.' || fail "the unmeasured cell is not a dot"

quit_dashboard "sweep view"
