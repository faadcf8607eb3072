#!/usr/bin/env bash
# `artune apply config --live` on an `artune relay` (issue 22, "Tuned live"): the
# knobs pushed to the relay beside the server govern both directions of what it
# carries, for new messages. The workload's tensors travel server -> program, sent
# by that relay: with the default eager_threshold (16 KiB) most go by rendezvous;
# after `--set eager_threshold=256KiB --live RELAY` the next run sends those of
# 16..256 KiB eager.
# Also: the relay's token rules are `artune serve`'s (a relay with a token refuses
# an apply without it, exit 4), and --help says which relay to apply to.
#   relay_live_test.sh ARTUNE
set -uo pipefail
artune=${1:?usage: relay_live_test.sh ARTUNE}
[[ -x $artune ]] || { echo "FAIL: $artune is not an executable"; exit 1; }

# shellcheck source=../relay/test_lib.sh
source "$(dirname "$(readlink -f "$0")")/../relay/test_lib.sh"
relay_test_begin relay-live

# start_relay NAME: a relay on a free loopback port, its JSON line in $dir/NAME.json.
start_relay() {
  "$artune" relay --json --listen 127.0.0.1:0 >"$dir/$1.json" 2>"$dir/$1.err" &
  pids+=($!)
  for _ in $(seq 200); do
    [[ -s $dir/$1.json ]] && return 0
    sleep 0.1
  done
  echo "FAIL: the relay did not start: $(cat "$dir/$1.err")"
  exit 1
}
# carried_run OUTPUT: the workload through the relay at $address, what was carried
# in OUTPUT.
carried_run() {
  timeout 300 "$artune" run --relay-port "${address##*:}" --output "$1" -- \
    "$artune" workload --steps 2 --scale 0.25 --json >"$dir/workload.json" 2>>"$dir/run.err"
}
bytes() { jq ".carried.by_protocol.$2.bytes" "$1"; }

export XDG_CONFIG_HOME=$dir/config
unset ARTUNE_TOKEN_FILE ARTUNE_TLS_CERT ARTUNE_TLS_KEY ARTUNE_TLS_CA LD_PRELOAD ARTUNE_CONFIG
for variable in $(env | grep -o '^ARTUNE_[A-Z_]*' | grep -v '^ARTUNE_RELAY_REDIRECT'); do
  unset "$variable"
done

check "apply --help says a relay takes --live, and which one" \
  bash -c "'$artune' apply config --help | tr -s ' \n' ' ' | grep -q 'relay beside the program'"

start_relay relay
address=$(jq -r .address "$dir/relay.json")
carried_run "$dir/before.json"
check "the workload ran through the relay (exit $?)" jq -e '.validated == true' "$dir/workload.json"
before_eager=$(bytes "$dir/before.json" eager)
before_rendezvous=$(bytes "$dir/before.json" rendezvous)
echo "before: eager $before_eager B, rendezvous $before_rendezvous B"
check "with the default knobs the tensors went by rendezvous ($before_rendezvous B)" \
  test "$before_rendezvous" -gt $((4 << 20))

"$artune" apply config --set eager_threshold=256KiB --live "$address" --json >"$dir/apply.json" \
  2>"$dir/apply.err"
check "apply --live to the relay exits 0 ($(head -c 300 "$dir/apply.err"))" test $? = 0
check "it reports eager_threshold changed" \
  jq -e '.applied and (.changes[] | select(.name == "eager_threshold") | .changed)' \
  "$dir/apply.json"
check "the relay's config says 256KiB" jq -e '.config.eager_threshold == "256KiB"' \
  "$dir/apply.json"
# The relay notices at its next ping pass (250 ms) and logs it.
for _ in $(seq 50); do grep -q "new knobs" "$dir/relay.err" && break; sleep 0.1; done
check "the relay logs the new knobs" grep -q "new knobs from the control plane (eager_threshold=256KiB" \
  "$dir/relay.err"

carried_run "$dir/after.json"
check "the workload ran again (exit $?)" jq -e '.validated == true' "$dir/workload.json"
after_eager=$(bytes "$dir/after.json" eager)
after_rendezvous=$(bytes "$dir/after.json" rendezvous)
echo "after:  eager $after_eager B, rendezvous $after_rendezvous B"
# Old code: eager stayed ~0.4 MB (the knob reached only the program's requests).
check "tensors of 16..256 KiB now go eager ($before_eager -> $after_eager B)" \
  test "$after_eager" -gt $((before_eager + (4 << 20)))
check "and not by rendezvous ($before_rendezvous -> $after_rendezvous B)" \
  test "$after_rendezvous" -lt $((before_rendezvous - (4 << 20)))

# Token: a relay whose token file exists requires it of every control call.
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null
pids=()
(umask 077 && mkdir -p "$dir/relay-config/artune" && head -c 32 /dev/urandom | od -An -tx1 |
  tr -d ' \n' >"$dir/relay-config/artune/token")
XDG_CONFIG_HOME=$dir/relay-config start_relay tokened
address=$(jq -r .address "$dir/tokened.json")
check "the relay reports its token" jq -e '.auth.token == true' "$dir/tokened.json"
"$artune" apply config --set eager_threshold=64KiB --live "$address" >"$dir/refused.out" \
  2>"$dir/refused.err"
rc=$?
check "without the token the apply is refused (exit $rc, want 4)" test "$rc" = 4
check "... and says the token is required" grep -qi "token" "$dir/refused.err"
ARTUNE_TOKEN_FILE=$dir/relay-config/artune/token \
  "$artune" apply config --set eager_threshold=64KiB --live "$address" >"$dir/accepted.out" \
  2>"$dir/accepted.err"
check "with the token it is applied (exit $?)" grep -q "pushed live to $address" "$dir/accepted.out"

((failures == 0)) || { echo "--- logs:"; tail -n 20 "$dir"/*.err; }
exit $((failures > 0))
