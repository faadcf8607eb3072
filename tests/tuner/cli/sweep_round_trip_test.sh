#!/usr/bin/env bash
# Issue 5's round trip against a running peer: `artune serve` (one process, never
# restarted), `artune sweep --peer` reconfiguring both ends per trial through the
# control plane, `artune apply config --sweep ID --output FILE`, then
# `artune bench --peer --config FILE` against the same server.
#   sweep_round_trip_test.sh ARTUNE [--fabric tcp|verbs] [--host ADDR] [--set K=V]...
#                            [--warmup S] [--duration S] [--repeats N]
# CI (tuner_sweep_round_trip): tcp on 127.0.0.1. The lab (tests/lab/sweep-verbs):
# verbs on the guest's rxe netdev address with the lab's QP timeout.
# Every check names what it saw; the server is killed on every exit path.
set -uo pipefail
usage="usage: sweep_round_trip_test.sh ARTUNE [--fabric F] [--host ADDR] [--set K=V]... [--warmup S] [--duration S] [--repeats N]"
artune=${1:?$usage}
shift
fabric=tcp
host=127.0.0.1
sets=()
warmup=0.05
duration=0.2
repeats=2
while (($#)); do
  case $1 in
    --fabric) fabric=$2 ;;
    --host) host=$2 ;;
    --set) sets+=(--set "$2") ;;
    --warmup) warmup=$2 ;;
    --duration) duration=$2 ;;
    --repeats) repeats=$2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -x $artune ]] || { echo "FAIL: $artune is not an executable (ninja artune)"; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/artune-sweep-round-trip-XXXXXX")
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null
    # A server that ignores SIGTERM for 5 s is killed outright.
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
  echo "FAIL: $*"
  for log in "$dir"/*.err; do
    [[ -s $log ]] && { echo "--- $(basename "$log")"; tail -n 20 "$log"; }
  done
  exit 1
}
started=$SECONDS
stage() { echo "[$((SECONDS - started))s] $*"; }

# A config in force that is neither the sweep's winner nor the defaults would hide
# where bench's values come from: none here, only the flags below.
# ARTUNE_<KNOB> variables would override both the sweep's points and the applied file
# (the lab's ARTUNE_LAB_* ones only draw warnings; their values came in as options).
for variable in $(compgen -e); do
  [[ $variable == ARTUNE_* ]] && unset "$variable"
done
export XDG_CONFIG_HOME=$dir/xdg
db=$dir/artune.db

# Port 0: the server picks a free one and prints it (--json, one line).
"$artune" --db "$dir/serve.db" serve --listen "$host:0" --servers 1 --transport artune \
  --set "fabric=$fabric" "${sets[@]}" --json >"$dir/serve.json" 2>"$dir/serve.err" &
server_pid=$!
for _ in $(seq 600); do
  [[ -s $dir/serve.json ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "artune serve exited before listening"
  sleep 0.1
done
# No python in the lab guest: the JSON is read with bash (serve prints one line).
serve_json=$(<"$dir/serve.json")
peer=$(sed -n 's/.*"base":"\([^"]*\)".*/\1/p' <<<"$serve_json")
[[ -n $peer ]] || fail "artune serve printed no address: $serve_json"
served_fabric=$(sed -n 's/.*"fabric":"\([^"]*\)".*/\1/p' <<<"$serve_json")
[[ $served_fabric == "$fabric" ]] || fail "artune serve runs fabric '$served_fabric', expected '$fabric'"
stage "artune serve (pid $server_pid) on $peer, fabric $served_fabric"

# 2x2 grid plus the default point (16KiB, 512KiB) = 5 trials, all on one server; then
# a final round of one finalist and the default, one round (2 more measurements: in
# the lab a trial takes ~15 s, and the final round has tests of its own).
timeout 150 "$artune" --db "$db" sweep --peer "$peer" --fabric "$fabric" "${sets[@]}" \
  --knob eager_threshold=1KiB,64KiB --knob chunk_size=256KiB,1MiB --scheme skew \
  --objective bandwidth --repeats "$repeats" --warmup "$warmup" --duration "$duration" \
  --finalists 1 --final-rounds 1 --json >"$dir/sweep.json" 2>"$dir/sweep.err" || fail "artune sweep --peer $peer exited $?"
kill -0 "$server_pid" 2>/dev/null || fail "artune serve died during the sweep"
stage "sweep done"

# The JSON without whitespace (nlohmann: keys in the order written, knobs sorted).
sweep=$(tr -d ' \n' <"$dir/sweep.json")
[[ $sweep == *"\"peer\":\"$peer\""* ]] || fail "sweep peer is not $peer: ${sweep:0:300}"
[[ $sweep == *"\"fabric\":\"$fabric\""* ]] || fail "sweep fabric is not $fabric: ${sweep:0:300}"
[[ $sweep == *'"objective":"bandwidth"'* && $sweep == *'"workload":"scheme:skew"'* ]] ||
  fail "sweep objective/workload: ${sweep:0:300}"
[[ $sweep == *'"measured":5,'* ]] || fail "expected 5 trials measured (2x2 + default): ${sweep:0:400}"
[[ $sweep == *'"final_rounds":1,'* ]] || fail "expected a final round of 1 round: ${sweep:0:400}"
trials=${sweep#*\"trials\":[}
trials=${trials%%],\"best\":*}
for point in '"chunk_size":"256KiB","eager_threshold":"1KiB"' '"chunk_size":"1MiB","eager_threshold":"1KiB"' \
  '"chunk_size":"256KiB","eager_threshold":"64KiB"' '"chunk_size":"1MiB","eager_threshold":"64KiB"'; do
  [[ $trials == *"\"knobs\":{$point}"* ]] || fail "grid point {$point} missing from the trials"
done
count() { grep -o "$1" <<<"$trials" | wc -l; }
(($(count '"knobs":{') == 5)) || fail "$(count '"knobs":{') trials, expected 5: $trials"
(($(count '"status":"ok"') == 5 && $(count '"validated":true') == 5)) ||
  fail "not every trial is ok and validated: $trials"
grep -o '"objective":[^,]*' <<<"$trials" | cut -d: -f2 | awk '!($1 > 0) { bad = 1 } END { exit bad }' ||
  fail "a trial has no positive objective: $trials"
best=${sweep#*\"best\":\{}
[[ $best != "$sweep" && $best == *'"validated":true'* ]] || fail "no validated best: ${sweep: -400}"
[[ $sweep == *'"default":{"knobs":'* ]] || fail "no default trial: ${sweep: -400}"
sweep_id=$(sed -n 's/^{"sweep_id":\([0-9]*\),.*/\1/p' <<<"$sweep")
best_eager=$(sed -n 's/^"knobs":{[^}]*"eager_threshold":"\([^"]*\)".*/\1/p' <<<"$best")
best_chunk=$(sed -n 's/^"knobs":{[^}]*"chunk_size":"\([^"]*\)".*/\1/p' <<<"$best")
best_objective=$(sed -n 's/^"knobs":{[^}]*},"objective":\([^,]*\),.*/\1/p' <<<"$best")
[[ -n $sweep_id && -n $best_eager && -n $best_chunk ]] || fail "cannot read sweep id / best: ${sweep: -400}"
stage "sweep $sweep_id: 5 trials validated; best eager_threshold=$best_eager chunk_size=$best_chunk ($best_objective MB/s)"

timeout 30 "$artune" --db "$db" apply config --sweep "$sweep_id" --output "$dir/tuned.toml" --json \
  >"$dir/apply.json" 2>"$dir/apply.err" || fail "artune apply config --sweep $sweep_id exited $?"
if ! grep -qx "eager_threshold = \"$best_eager\"" "$dir/tuned.toml" ||
  ! grep -qx "chunk_size = \"$best_chunk\"" "$dir/tuned.toml"; then
  fail "tuned.toml does not hold the winner ($best_eager, $best_chunk): $(grep -E '^(eager_threshold|chunk_size) ' "$dir/tuned.toml")"
fi
stage "apply config wrote the winner to tuned.toml"

# The verdict and the default measured again are stored: results --sweep shows the
# same ones the sweep printed, and apply warns exactly when the winner is not
# beyond noise.
verdict=$(sed -n 's/.*"best_beats_default":[a-z]*,"verdict":"\([a-z_]*\)".*/\1/p' <<<"$sweep")
[[ $verdict == beats_default || $verdict == within_noise || $verdict == default_is_best ]] ||
  fail "sweep --json verdict '$verdict': ${sweep: -600}"
again=$(sed -n 's/.*"default_remeasured":{\([^}]*}[^}]*\)}.*/\1/p' <<<"$sweep")
[[ -n $again && $again == *'"status":"ok"'* ]] || fail "no re-measured default: ${sweep: -600}"
results=$(timeout 30 "$artune" --db "$db" results --sweep "$sweep_id" --json 2>"$dir/results.err" | tr -d ' \n') ||
  fail "artune results --sweep $sweep_id --json exited $?"
[[ $results == *"\"verdict\":\"$verdict\""* ]] || fail "results --sweep verdict is not $verdict: ${results: -600}"
# Both read the one stored record (measured_at included).
[[ $results == *"\"default_remeasured\":{$again"* ]] ||
  fail "results --sweep default_remeasured differs from the sweep's {$again}: ${results: -600}"
apply_warned=no
grep -q 'does not beat the default config beyond noise' "$dir/apply.err" && apply_warned=yes
if [[ $verdict == beats_default ]]; then want_warning=no; else want_warning=yes; fi
[[ $apply_warned == "$want_warning" ]] ||
  fail "verdict $verdict, apply warned: $apply_warned: $(cat "$dir/apply.err")"
stage "verdict $verdict stored and shown by results; apply warned: $apply_warned"

# The same server, still up after every per-trial reconfiguration, now serves a
# bench whose client loads the applied file (its values renegotiated with the server).
timeout 60 "$artune" --db "$db" -q bench --peer "$peer" --transport artune --benchmark bandwidth \
  --scheme skew --config "$dir/tuned.toml" --set "fabric=$fabric" "${sets[@]}" \
  --warmup "$warmup" --duration "$duration" --json >"$dir/bench.json" 2>"$dir/bench.err" ||
  fail "artune bench --peer $peer --config tuned.toml exited $?"
bench=$(tr -d ' \n' <"$dir/bench.json")
[[ $bench == *"\"fabric\":\"$fabric\""* && $bench == *'"validated":true'* ]] ||
  fail "bench not validated on $fabric: ${bench:0:400}"
bench_rpcs=$(sed -n 's/.*"rpcs":\([0-9]*\),.*/\1/p' <<<"$bench")
bench_mbps=$(sed -n 's/.*"bandwidth_mbps":\([^,]*\),.*/\1/p' <<<"$bench")
((${bench_rpcs:-0} > 0)) || fail "bench made no RPC: ${bench:0:400}"
kill -0 "$server_pid" 2>/dev/null || fail "artune serve died during the bench"
stage "bench with the applied config: $bench_rpcs RPCs validated, $bench_mbps MB/s"
echo "sweep round trip ($fabric): all checks passed in $((SECONDS - started))s"
