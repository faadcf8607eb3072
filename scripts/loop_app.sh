# shellcheck shell=bash disable=SC2154  # the variables are scripts/loop's
# scripts/loop --app: the loop for a real application carried by the relays
# (issue 22). Sourced by scripts/loop after its options and work directory are set
# (artune, workdir, fabric, short, rounds, scale, workload_args, sweep_args,
# final_rounds, base_settings, step, json_field, relay_pid); not run on its own.

started=$SECONDS
if [[ $short -eq 1 ]]; then
  program_args=(--steps 2 --duration 0 --scale "${scale:-0.05}" --workers 2)
  rounds=${rounds:-2}
else
  program_args=(--steps 6 --duration 0 --scale "${scale:-0.25}" --workers 2)
  rounds=${rounds:-8}
fi
# Every program run is bounded; a hung one fails the loop instead of stalling it.
run_limit=$([[ $short -eq 1 ]] && echo 120 || echo 300)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

step "1/5 relay: artune relay --listen 127.0.0.1:0 (default knobs)"
"$artune" relay --json --listen 127.0.0.1:0 >"$workdir/relay.json" 2>"$workdir/relay.err" &
relay_pid=$!
for _ in $(seq 200); do
  [[ -s $workdir/relay.json ]] && break
  kill -0 "$relay_pid" 2>/dev/null || break
  sleep 0.1
done
relay=$(jq -r '.address // empty' "$workdir/relay.json" 2>/dev/null || true)
if [[ -z $relay ]]; then
  echo "scripts/loop: the relay did not start: $(cat "$workdir/relay.err")" >&2
  exit 1
fi
relay_port=${relay##*:}
echo "relay at $relay ($(jq -r .fabric "$workdir/relay.json")); the program runs under" \
  "artune run --relay-port $relay_port"

step "2/5 probe: artune probe --exec -- artune workload ${workload_args[*]}"
# shellcheck disable=SC2016  # expanded by that sh, not here
"$artune" probe --exec --json -- sh -c 'exec "$0" "$@" >"$LOOP_WORKLOAD_OUT"' "$artune" workload \
  "${workload_args[@]}" >"$workdir/probe.json"
cat "$workdir/workload.txt"
capture=$(json_field "$workdir/probe.json" '.capture_id')
if [[ -z $capture || $capture == null ]]; then
  echo "scripts/loop: the probe stored no capture (see $workdir/probe.json)" >&2
  exit 1
fi
echo "capture $capture stored"

step "3/5 sweep the relay link: artune sweep --workload $capture --fabric $fabric"
"$artune" sweep --workload "$capture" --strategy adaptive --objective workload-time \
  --fabric "$fabric" "${sweep_args[@]}" "${final_rounds[@]}" --json >"$workdir/sweep.json"
sweep=$(json_field "$workdir/sweep.json" '.sweep_id')
json_field "$workdir/sweep.json" '"sweep \(.sweep_id): \(.trials | length) trials, best \(.best.knobs | to_entries | map("\(.key)=\(.value)") | join(";"))"
  + " = \(.best.objective), default \(.default.objective), best beats default: \(.best_beats_default)"'

# --set values go on top of the winner (the tuned side only): a knob to try by hand.
step "4/5 apply live: artune apply config --sweep $sweep ${base_settings[*]} --live $relay"
"$artune" apply config --sweep "$sweep" "${base_settings[@]}" --live "$relay" --json \
  >"$workdir/apply.json"
mapfile -t tuned_sets < <(jq -r '.changes[] | select(.changed) | "\(.name)=\(.new)"' "$workdir/apply.json")
mapfile -t default_sets < <(jq -r '.changes[] | select(.changed) | "\(.name)=\(.current)"' \
  "$workdir/apply.json")
if ((${#tuned_sets[@]} == 0)); then
  echo "the sweep's winner is the relay's default config: nothing to compare"
  printf '\nloop done in %d s\n' $((SECONDS - started))
  exit 0
fi
echo "tuned: ${tuned_sets[*]}   default: ${default_sets[*]}"

# push_live SETTINGS...: the relay's knobs for the next run.
push_live() {
  local args=()
  for setting in "$@"; do args+=(--set "$setting"); done
  "$artune" apply config "${args[@]}" --live "$relay" >/dev/null
}
# measure SIDE ROUND: the program through the relays; one JSON line in rounds.jsonl.
measure() {
  local side=$1 round=$2 out=$workdir/run-$2-$1
  if [[ $side == tuned ]]; then push_live "${tuned_sets[@]}"; else push_live "${default_sets[@]}"; fi
  if ! timeout "$run_limit" "$artune" run --relay-port "$relay_port" --output "$out.carried.json" -- \
    "$artune" workload "${program_args[@]}" --json >"$out.json" 2>"$out.err"; then
    echo "scripts/loop: the program failed under artune run ($side, round $round):" >&2
    tail -5 "$out.err" >&2
    exit 1
  fi
  jq -e '.validated' "$out.json" >/dev/null ||
    { echo "scripts/loop: a tensor failed validation ($out.json)" >&2; exit 1; }
  jq -c --arg side "$side" --argjson round "$round" --slurpfile carried "$out.carried.json" \
    '{round: $round, side: $side, step_ms: .step_ms.p50, steps: .step_ms.samples,
      eager_bytes: ($carried[0].carried.by_protocol.eager.bytes
                    + $carried[0].carried.by_protocol.coalesced.bytes),
      read_bytes: ($carried[0].carried.by_protocol.rendezvous.bytes
                   + $carried[0].carried.by_protocol.chunked.bytes)}' \
    "$out.json" >>"$workdir/rounds.jsonl"
}

step "5/5 compare: the program through the relays, default vs tuned, $rounds interleaved rounds"
echo "program: artune run --relay-port $relay_port -- artune workload ${program_args[*]}"
: >"$workdir/rounds.jsonl"
for ((round = 1; round <= rounds; round++)); do
  # ABBA: the side that runs first alternates, so a drift in the machine's load
  # falls on both sides alike.
  if ((round % 2)); then order=(default tuned); else order=(tuned default); fi
  for side in "${order[@]}"; do measure "$side" "$round"; done
  jq -r --argjson round "$round" 'select(.round == $round)
    | "round \(.round) \(.side): median step \(.step_ms * 100 | round / 100) ms over \(.steps) steps, eager \(.eager_bytes) B, read \(.read_bytes) B"' \
    "$workdir/rounds.jsonl"
done
push_live "${tuned_sets[@]}"  # the relay keeps the winner
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$workdir/rounds.jsonl" "$load_before" "$load_after" >"$workdir/app-compare.txt" <<'PY'
import json, math, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
rounds = sorted({r["round"] for r in rows})
side = {(r["round"], r["side"]): r["step_ms"] for r in rows}
default = [side[(n, "default")] for n in rounds]
tuned = [side[(n, "tuned")] for n in rounds]
diffs = [(t - d) / d * 100 for d, t in zip(default, tuned)]
faster = sum(1 for x in diffs if x < 0)
slower = sum(1 for x in diffs if x > 0)
n = faster + slower
# Two-sided sign test on the paired differences (ties dropped).
k = min(faster, slower)
p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0
median_diff = statistics.median(diffs)
print(f"rounds {len(rounds)}, load average {sys.argv[2]} before, {sys.argv[3]} after")
print(f"median step time: default {statistics.median(default):.2f} ms, "
      f"tuned {statistics.median(tuned):.2f} ms")
def eager_share(name):
    shares = [r["eager_bytes"] / max(1, r["eager_bytes"] + r["read_bytes"])
              for r in rows if r["side"] == name]
    return statistics.median(shares) * 100
print(f"carried eager (the rest by rendezvous reads): default {eager_share('default'):.0f} %, "
      f"tuned {eager_share('tuned'):.0f} % of the bytes")
print(f"paired differences (tuned - default): median {median_diff:+.1f} %, "
      f"range {min(diffs):+.1f} .. {max(diffs):+.1f} %; tuned faster in {faster} of {len(rounds)}")
if n < 6:
    print(f"verdict: too few rounds for a verdict ({len(rounds)}; a sign test needs 6 or more)")
elif p < 0.05:
    print(f"verdict: beyond noise (sign test p = {p:.3f}): the tuned config is "
          f"{'faster' if faster > slower else 'slower'}")
else:
    print(f"verdict: within noise (sign test p = {p:.3f})")
PY
cat "$workdir/app-compare.txt"
printf '\nloop done in %d s; the relay at %s ran the winner last (it stops with the loop)\n' \
  $((SECONDS - started)) "$relay"
