#!/usr/bin/env bash
# `artune relay` + `artune run` end to end (issue 22), one part per MODE:
#   local   one host (relays over shm): the built-in workload unmodified under
#           artune run, every tensor checked, --output shows the tensors going by
#           rendezvous/chunked; and with no relay on the port everything goes direct.
#   dead    the relay killed while the workload runs: the workload fails within a
#           few seconds (its calls fail), it does not hang.
#   pause   the relay paused (SIGSTOP) for 2 s while the workload runs: its pings
#           time out but it is alive, nothing is reset, the workload completes;
#           paused for good (hung): the workload fails within 20 s, not hung.
#   netns   two network namespaces joined by a veth pair (relays over tcp, token):
#           stock gRPC bench client and server, 6 MiB payloads checked.
#   token   the same, the client side without the token: the relay refuses, the
#           program's connect fails, nothing is carried.
# netns and token need root (ip netns) and skip (77) without.
#   relay_e2e_test.sh ARTUNE MODE
set -uo pipefail
artune=${1:?usage: relay_e2e_test.sh ARTUNE MODE}
mode=${2:?usage: relay_e2e_test.sh ARTUNE MODE}
[[ -x $artune ]] || { echo "FAIL: $artune is not an executable"; exit 1; }

# shellcheck source=test_lib.sh
source "$(dirname "$(readlink -f "$0")")/test_lib.sh"
relay_test_begin relay
finish() {
  ((failures == 0)) || { echo "--- relay log:"; cat "$dir"/*.err 2>/dev/null | head -40; }
  exit $((failures > 0))
}

# Waits up to 20 s for a whole JSON line in FILE.
wait_line() {
  for _ in $(seq 200); do
    [[ -s $1 && $(tail -c1 "$1" | od -An -c) == *'\n'* ]] && return 0
    sleep 0.1
  done
  echo "no line in $1: $(cat "${1%.json}.err" 2>/dev/null)"
  return 1
}

# start_relay NAME [ip netns exec NS] -- LISTEN: a relay in the background, its JSON
# in $dir/NAME.json.
start_relay() {
  local name=$1 listen=$2
  shift 2
  "$@" "$artune" relay --json --listen "$listen" >"$dir/$name.json" 2>"$dir/$name.err" &
  pids+=($!)
  wait_line "$dir/$name.json" || exit 1
}
port_of() { jq -r .address "$1" | sed 's/.*://'; }
tensor_bytes() {  # rendezvous + chunked bytes in a --output file
  jq '.carried.by_protocol.rendezvous.bytes + .carried.by_protocol.chunked.bytes' "$1"
}

export XDG_CONFIG_HOME=$dir/config
unset ARTUNE_TOKEN_FILE ARTUNE_TLS_CERT ARTUNE_TLS_KEY ARTUNE_TLS_CA LD_PRELOAD

case $mode in
local)
  start_relay relay 127.0.0.1:0
  port=$(port_of "$dir/relay.json")
  timeout 300 "$artune" run --relay-port "$port" --output "$dir/carried.json" -- \
    "$artune" workload --steps 2 --scale 0.25 --json >"$dir/workload.json" 2>"$dir/run.err"
  rc=$?
  check "the workload under artune run exits 0 (saw $rc)" test "$rc" = 0
  check "every tensor validated" jq -e '.validated == true' "$dir/workload.json"
  check "its connections were carried" jq -e '.carried.connections >= 1' "$dir/carried.json"
  tensors=$(jq .tensor_bytes "$dir/workload.json")
  check "the relays carried at least the tensor bytes ($tensors)" \
    jq -e ".carried.bytes >= $tensors" "$dir/carried.json"
  check "the tensors went by rendezvous or chunked ($(tensor_bytes "$dir/carried.json") B)" \
    test "$(tensor_bytes "$dir/carried.json")" -ge "$((tensors / 2))"
  # What the program did not read at once waited in the transport's memory: nothing
  # was copied to wait (the held-memory limit is far above this workload's window).
  check "the bytes that waited are reported, none copied ($(jq -c .carried.waited "$dir/carried.json"))" \
    jq -e '(.carried.waited.bytes | type) == "number" and .carried.waited.copied == 0' "$dir/carried.json"
  # No relay on the port: direct, untouched, nothing carried.
  timeout 300 "$artune" run --relay-port 1 --output "$dir/direct.json" -- \
    "$artune" workload --steps 1 --scale 0.1 --json >"$dir/direct-workload.json" 2>"$dir/direct.err"
  rc=$?
  check "without a relay the workload runs direct (exit $rc)" test "$rc" = 0
  check "... and nothing was carried" jq -e '.carried.connections == 0' "$dir/direct.json"
  check "the program's exit code is artune run's" \
    bash -c "'$artune' run -- sh -c 'exit 7'; test \$? = 7"
  ;;
dead)
  start_relay relay 127.0.0.1:0
  port=$(port_of "$dir/relay.json")
  "$artune" run --relay-port "$port" -- "$artune" workload --duration 120 --scale 0.1 \
    >"$dir/workload.out" 2>"$dir/run.err" &
  run_pid=$!
  pids+=("$run_pid")
  # Until the workload's connections are carried (the relay's log has no counter:
  # wait for a step's worth of traffic), then kill the relay.
  sleep 4
  check "the workload is running" kill -0 "$run_pid"
  kill -9 "${pids[0]}"
  killed=$(date +%s%N)
  # Bounded: 30 s. A hang shows as the timeout.
  for _ in $(seq 300); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
  ended=$(date +%s%N)
  wait "$run_pid"
  rc=$?
  elapsed_ms=$(((ended - killed) / 1000000))
  check "the workload failed after the relay died (exit $rc)" test "$rc" != 0
  # "Within a second" on a quiet machine; 5 s bounds a loaded CI host, far from a hang.
  check "it failed within 5 s, not hung (${elapsed_ms} ms)" test "$elapsed_ms" -lt 5000
  check "its error names the broken call" grep -qiE "unavailable|reset|closed|failed" \
    "$dir/run.err" "$dir/workload.out"
  ;;
pause)
  start_relay relay 127.0.0.1:0
  port=$(port_of "$dir/relay.json")
  relay_pid=${pids[0]}
  # paused_run SECONDS: the workload under artune run (15 s), the relay paused
  # after 3 s (its connections carried by then) for SECONDS, or for good (0).
  paused_run() {
    "$artune" run --relay-port "$port" --output "$dir/carried.json" -- "$artune" workload \
      --duration 15 --scale 0.1 --json >"$dir/workload.json" 2>"$dir/run.err" &
    run_pid=$!
    pids+=("$run_pid")
    sleep 3
    kill -STOP "$relay_pid"
    stopped=$(date +%s%N)
    if (($1 > 0)); then
      sleep "$1"
      kill -CONT "$relay_pid"
    fi
    for _ in $(seq 600); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
    ended=$(date +%s%N)
    wait "$run_pid"
    rc=$?
  }
  paused_run 2
  check "the workload outlived a relay paused for 2 s (exit $rc)" test "$rc" = 0
  check "every tensor validated" jq -e '.validated == true' "$dir/workload.json"
  check "its connections were carried" jq -e '.carried.connections >= 1' "$dir/carried.json"
  check "artune run reset nothing" \
    bash -c "! grep -q 'stopped answering' '$dir/run.err'"
  paused_run 0
  elapsed_ms=$(((ended - stopped) / 1000000))
  check "with the relay hung the workload failed (exit $rc)" test "$rc" != 0
  # 5 s without an answer, then the reset, and the program's reconnect (its connect
  # asks artune run, which gives up on the hung relay): 20 s bounds it on a loaded host,
  # below the workload's own 30 s call deadline.
  check "it failed within 20 s, not hung (${elapsed_ms} ms)" test "$elapsed_ms" -lt 20000
  check "artune run says the relay stopped answering" grep -q "stopped answering" "$dir/run.err"
  kill -CONT "$relay_pid"
  ;;
netns | token)
  if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
    echo "skip: needs root and iproute2 for network namespaces"
    exit 77
  fi
  veth_pair_up "rl$$" 10.201.0
  token=$dir/token
  "$artune" relay --help >/dev/null
  ( umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token" )
  export ARTUNE_TOKEN_FILE=$token
  # Host B: a stock gRPC bench server and the relay.
  ip netns exec "$b" "$artune" --db "$dir/serve.db" serve --json --servers 1 --transport grpc \
    --listen 10.201.0.2:0 >"$dir/serve.json" 2>"$dir/serve.err" &
  pids+=($!)
  wait_line "$dir/serve.json" || exit 1
  base=$(jq -r .base "$dir/serve.json")
  start_relay relay 10.201.0.2:0 ip netns exec "$b"
  port=$(port_of "$dir/relay.json")
  check "the relay beyond loopback wants the token" jq -e '.auth.token == true' "$dir/relay.json"
  bench=(--db "$dir/bench.db" bench --peer "$base" --transport grpc --benchmark bandwidth
    --classes L --buffers 1 --large-bytes 6291456 --warmup 0 --duration 1 --json)
  if [[ $mode == netns ]]; then
    timeout 120 ip netns exec "$a" "$artune" run --relay-port "$port" --output "$dir/carried.json" \
      -- "$artune" "${bench[@]}" >"$dir/bench.json" 2>"$dir/run.err"
    rc=$?
    check "the bench under artune run exits 0 (saw $rc)" test "$rc" = 0
    check "its connection was carried" jq -e '.carried.connections >= 1' "$dir/carried.json"
    check "6 MiB payloads went by rendezvous/chunked ($(tensor_bytes "$dir/carried.json") B)" \
      test "$(tensor_bytes "$dir/carried.json")" -ge 6291456
  else
    unset ARTUNE_TOKEN_FILE
    timeout 120 ip netns exec "$a" "$artune" run --relay-port "$port" --output "$dir/carried.json" \
      -- "$artune" "${bench[@]}" >"$dir/bench.json" 2>"$dir/run.err"
    rc=$?
    check "the bench without the token fails (exit $rc)" test "$rc" != 0
    check "artune run says the relay refused it" grep -q "refused this run" "$dir/run.err"
    check "nothing was carried" jq -e '.carried.connections == 0 and .carried.bytes == 0' \
      "$dir/carried.json"
  fi
  kill "${pids[-1]}"
  wait "${pids[-1]}" 2>/dev/null
  if [[ $mode == token ]]; then
    check "the relay carried nothing" jq -se '.[-1].connections == 0' "$dir/relay.json"
  else
    check "the relay carried the connection" jq -se '.[-1].connections >= 1' "$dir/relay.json"
  fi
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
finish
