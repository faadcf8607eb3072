#!/usr/bin/env bash
# `--background-load N` (issue 26): during a sweep N CPU hogs (child processes
# named artune-hog) really run, and none is left after the sweep, nor after
# SIGTERM of artune; the load is stored with the sweep and `artune results`
# shows it; `apply compare` takes it too; `artune apply config` warns when it
# writes polling = busy chosen by a sweep measured without load, and only then.
# Usage: background_load_test.sh ARTUNE_BINARY
set -euo pipefail
artune=$1
# shellcheck source=tests/tuner/sweep_test_lib.sh
source "$(dirname "$0")/../sweep_test_lib.sh"
sweep_test_begin background-load
export XDG_CONFIG_HOME=$dir/config
unset ARTUNE_DB ARTUNE_CONFIG ARTUNE_POLLING
db=$dir/artune.db

hogs_of() { pgrep -P "$1" -x artune-hog || true; }
# utime + stime of a process in clock ticks (fields 14, 15 of /proc/PID/stat).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo -1; }
# Waits (bounded: 30 s) until process $1 has $2 hogs; prints their pids.
wait_for_hogs() {
  local hogs=
  for _ in $(seq 1 600); do
    hogs=$(hogs_of "$1")
    if (($(wc -w <<<"$hogs") >= $2)); then
      echo "$hogs"
      return 0
    fi
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
# Fails unless every pid in $1 is gone (waited for: at most 10 s).
expect_gone() {
  local pid
  for pid in $1; do
    for _ in $(seq 1 200); do
      [[ -e /proc/$pid ]] || break
      sleep 0.05
    done
    [[ ! -e /proc/$pid ]] || fail "$2: hog $pid is left behind ($(cat "/proc/$pid/comm" 2>/dev/null))"
  done
}

# 1. The hogs run during the sweep and are gone after it; the load is stored.
"$artune" --db "$db" sweep --fabric tcp --knob chunk_size=64KiB,256KiB,1MiB --repeats 2 \
  --warmup 0.05 --duration 0.3 --finalists 1 --final-rounds 1 --background-load 2 --json \
  >"$dir/sweep.json" 2>"$dir/sweep.err" &
sweep_pid=$!
hogs=$(wait_for_hogs "$sweep_pid" 2) || fail "no 2 hogs under the sweep: $(cat "$dir/sweep.err")"
for hog in $hogs; do
  before=$(cpu_ticks "$hog")
  after=$before
  for _ in $(seq 1 200); do  # waited for, not timed: at most 10 s
    after=$(cpu_ticks "$hog")
    ((after > before)) && break
    sleep 0.05
  done
  ((after > before)) || fail "hog $hog did not run ($before -> $after ticks)"
done
wait "$sweep_pid" || fail "the sweep failed: $(cat "$dir/sweep.err")"
sweep_pid=
expect_gone "$hogs" "after the sweep"
id=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["background_load"] == 2, j["background_load"]; print(j["sweep_id"])' "$dir/sweep.json")
"$artune" --db "$db" results --sweep "$id" --json |
  python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["sweep"]["background_load"] == 2, j["sweep"]' ||
  fail "results --json does not read back the load"
"$artune" --db "$db" results --sweep "$id" | grep -q '^Load  *2 CPU hogs' ||
  fail "results does not show the load"

# 2. SIGTERM of artune mid-sweep leaves no hog behind.
"$artune" --db "$db" sweep --fabric tcp --knob chunk_size=64KiB,256KiB,1MiB --repeats 3 \
  --warmup 0.05 --duration 0.5 --background-load 2 --json >/dev/null 2>"$dir/term.err" &
sweep_pid=$!
hogs=$(wait_for_hogs "$sweep_pid" 2) || fail "no 2 hogs under the second sweep: $(cat "$dir/term.err")"
kill -TERM "$sweep_pid"
wait "$sweep_pid" 2>/dev/null || true
sweep_pid=
expect_gone "$hogs" "after SIGTERM"

# 3. apply compare takes the load, reports it, and stops its hogs.
"$artune" --db "$db" apply compare --sweep "$id" --scheme uniform --repeats 1 --rounds 1 --duration 0.1 \
  --fabric tcp --background-load 1 --json >"$dir/compare.json" 2>"$dir/compare.err" &
compare_pid=$!
hogs=$(wait_for_hogs "$compare_pid" 1) || fail "no hog under apply compare: $(cat "$dir/compare.err")"
wait "$compare_pid" || fail "apply compare failed: $(cat "$dir/compare.err")"
expect_gone "$hogs" "after apply compare"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["background_load"] == 1' \
  "$dir/compare.json" || fail "apply compare does not report its load"

# 4. apply config: busy polling chosen by a sweep without load is warned about.
one_point_sweep() {  # polling value, extra flags...
  local polling=$1
  shift
  "$artune" --db "$db" sweep --fabric tcp --set "polling=$polling" --knob "polling=$polling" \
    --repeats 1 --warmup 0.05 --duration 0.1 --json "$@" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["sweep_id"])'
}
apply() {  # sweep id; stdout: the JSON report, stderr kept in $dir/apply.err
  "$artune" --db "$db" apply config --sweep "$1" --output "$dir/applied.toml" --json \
    2>"$dir/apply.err"
}
busy_idle=$(one_point_sweep busy)
apply "$busy_idle" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["busy_polling_measured_idle"] is True and j["config"]["polling"] == "busy", j' ||
  fail "no JSON warning for busy polling from an idle sweep"
grep -q 'warning: polling = busy was chosen by sweep .*--background-load' "$dir/apply.err" ||
  fail "no stderr warning for busy polling from an idle sweep: $(cat "$dir/apply.err")"

busy_loaded=$(one_point_sweep busy --background-load 1)
apply "$busy_loaded" | python3 -c 'import json,sys; assert json.load(sys.stdin)["busy_polling_measured_idle"] is False' ||
  fail "busy polling measured under load is warned about"
grep -q 'polling = busy' "$dir/apply.err" && fail "stderr warns for a loaded sweep: $(cat "$dir/apply.err")"

adaptive_idle=$(one_point_sweep adaptive)
apply "$adaptive_idle" | python3 -c 'import json,sys; assert json.load(sys.stdin)["busy_polling_measured_idle"] is False' ||
  fail "adaptive polling is warned about"
grep -q 'polling = busy' "$dir/apply.err" && fail "stderr warns for adaptive: $(cat "$dir/apply.err")"
echo PASS
