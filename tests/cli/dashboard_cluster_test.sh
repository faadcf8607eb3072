#!/usr/bin/env bash
# artune dashboard under tmux, sweep view of a sweep that measured one link of a
# cluster run: the cluster's host x host heatmap shows beside the sweep's, with the
# outlier link named, and q exits cleanly.
# Usage: dashboard_cluster_test.sh ARTUNE_BINARY SWEEP_FIXTURE
set -euo pipefail
artune=$1
fixture=$2
source "$(dirname "$0")/dashboard_tmux_lib.sh"
dashboard_test_begin cluster

"$fixture" "$db" cluster >/dev/null  # cluster 1; its link b -> d is sweep 4
start_store_dashboard --sweep 4 --view sweep
wait_for "sweep 4  workload-time (min)"
wait_for "cluster 1, link b -> d; winner eager_threshold=4KiB"
wait_for "! b-d 10.8 MAD slower"
screen | grep -qE 'b +\. +\. +8\.00 +16\.00!' || fail "the b row of the cluster heatmap is missing"

quit_dashboard "cluster panel"
