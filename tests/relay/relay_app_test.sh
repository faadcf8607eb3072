#!/usr/bin/env bash
# A Python grpcio program (grpc_app.py, Debian's python3-grpcio) unmodified under
# `artune run`, between two network namespaces joined by a veth pair (relays over
# tcp, token), and the relay's faults (issue 22). One part per MODE:
#   python     unary 1 B..16 MiB, bidi, server streaming, contents checked;
#              keepalive pings every 200 ms across an idle spell (gRPC's keepalive
#              trace shows them acknowledged); GOAWAY then a reconnect; --output
#              shows the big messages by rendezvous/chunked.
#   many       16 connections at once, each its own contents: no byte crosses over.
#   refused    no server behind the relay: the call fails UNAVAILABLE, promptly.
#   returnpath the target relay cannot dial the origin relay back (its SYNs are
#              rejected in the origin's namespace): the same, no hang.
#   crash      the server dies mid-call: the client's call fails promptly.
#   stall      the target relay stops (SIGSTOP) during a call: the origin relay's
#              pings go unanswered and the call fails promptly (from the stop).
#   pause      the target relay stops for 1 s during a call, twice: the relays keep
#              each other (a peer is given up after 1.5 s without a word, not
#              after one ping unanswered for 750 ms) and the call completes.
#   stallorigin the origin relay (artune run) stops for 2.5 s during a call: the
#              target relay gives it up and resets the server's side; once the origin
#              runs again the program's call fails promptly, it does not hang.
#   slow       a plain TCP reader stops reading while its peer writes 512 MiB: both
#              relays' RSS stays under 160 MiB (backpressure), then every byte arrives.
# "Promptly": FAULT_WITHIN seconds (default 2: "within a second" on a quiet host,
# with room for a loaded CI host; the measured time is printed).
# Needs root (ip netns) and python3-grpcio; skips (77) without.
#   relay_app_test.sh ARTUNE MODE
set -uo pipefail
artune=${1:?usage: relay_app_test.sh ARTUNE MODE}
mode=${2:?usage: relay_app_test.sh ARTUNE MODE}
[[ -x $artune ]] || { echo "FAIL: $artune is not an executable"; exit 1; }
app=$(dirname "$(readlink -f "$0")")/grpc_app.py
python=/usr/bin/python3
within=${FAULT_WITHIN:-2}
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
  echo "skip: needs root and iproute2 for network namespaces"
  exit 77
fi
if ! $python -c 'import grpc' 2>/dev/null; then
  echo "skip: needs python3-grpcio (scripts/setup installs it)"
  exit 77
fi

# shellcheck source=test_lib.sh
source "$(dirname "$(readlink -f "$0")")/test_lib.sh"
relay_test_begin relay-app
finish() {
  if ((failures > 0)); then
    for log in "$dir"/*.out "$dir"/*.err; do
      [[ -s $log ]] && { echo "--- $(basename "$log"):"; tail -15 "$log"; }
    done
  fi
  exit $((failures > 0))
}
# Waits up to 20 s for a line matching PATTERN in FILE.
wait_for() {
  for _ in $(seq 200); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "FAIL: no '$2' in $1: $(tail -5 "$1" "${1%.*}.err" 2>/dev/null)"
  exit 1
}
lacks() { ! grep -q "$1" "$2"; }  # FILE has no line matching PATTERN
within_bound() { $python -c "import sys; sys.exit(not 0 <= $1 < $2)"; }  # 0 <= A < B
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# Host A (10.201.0.1) runs the program under artune run; host B (10.201.0.2) the
# server and `artune relay`.
veth_pair_up "ra$$" 10.201.0
export XDG_CONFIG_HOME=$dir/config
unset ARTUNE_TLS_CERT ARTUNE_TLS_KEY ARTUNE_TLS_CA LD_PRELOAD
export ARTUNE_TOKEN_FILE=$dir/token
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$ARTUNE_TOKEN_FILE")

server=10.201.0.2:50051
ip netns exec "$b" "$artune" relay --json --listen 10.201.0.2:0 >"$dir/relay.json" \
  2>"$dir/relay.err" &
relay_pid=$!
pids+=("$relay_pid")
wait_for "$dir/relay.json" address
relay_port=$(jq -r .address "$dir/relay.json" | sed 's/.*://')
start_server() {  # grpc_app.py MODE on host B, until it listens
  ip netns exec "$b" $python "$app" "$1" --listen "$server" >"$dir/server.out" 2>"$dir/server.err" &
  pids+=($!)
  wait_for "$dir/server.out" listening
}
# run_client NAME ARGS...: grpc_app.py under artune run on host A, in the background;
# its pid in $client_pid.
run_client() {
  local name=$1
  shift
  ip netns exec "$a" "$artune" run --relay-port "$relay_port" --output "$dir/$name.carried.json" \
    -- $python "$app" "$@" --server "$server" >"$dir/$name.out" 2>"$dir/$name.err" &
  client_pid=$!
  pids+=("$client_pid")
}
# Waits (at most 120 s) for the client; its exit code in $rc.
wait_client() {
  for _ in $(seq 1200); do kill -0 "$client_pid" 2>/dev/null || break; sleep 0.1; done
  kill "$client_pid" 2>/dev/null
  wait "$client_pid"
  rc=$?
}
all_checks_pass() { jq -se '[.[] | select(has("check"))] | length > 0 and all(.ok)' "$1"; }
elapsed_of() { jq -r 'select(.elapsed_s) | .elapsed_s' "$1"; }
expect_prompt_failure() {  # NAME: the client's call failed UNAVAILABLE within $within s
  check "the call failed UNAVAILABLE within ${within} s ($(elapsed_of "$dir/$1.out") s)" \
    all_checks_pass "$dir/$1.out"
  check "artune run exits with the program's code, 0 here (saw $rc)" test "$rc" = 0
}

case $mode in
python)
  start_server serve
  # gRPC's keepalive trace: "Finish keepalive ping" when a ping's ack came back.
  GRPC_TRACE=http_keepalive GRPC_VERBOSITY=DEBUG run_client suite suite --idle 5
  wait_client
  check "the Python client passes every check under artune run (exit $rc)" test "$rc" = 0
  check "every check ran and passed ($(jq -s length "$dir/suite.out") checks)" \
    jq -se 'length == 15 and all(.ok)' "$dir/suite.out"
  acked=$(grep -c "Finish keepalive ping" "$dir/suite.err")
  check "keepalive pings went through the relays and were acknowledged ($acked)" \
    test "$acked" -ge 3
  check "no keepalive ping went unanswered (the watchdog never fired)" \
    lacks "Keepalive watchdog fired" "$dir/suite.err"
  carried=$dir/suite.carried.json
  check "a new carried connection after GOAWAY ($(jq .carried.connections "$carried"))" \
    jq -e '.carried.connections >= 2' "$carried"
  big=$(jq '.carried.by_protocol.rendezvous.bytes + .carried.by_protocol.chunked.bytes' "$carried")
  check "the big messages went by rendezvous/chunked ($big B)" test "$big" -ge $((64 << 20))
  check "the server saw the GOAWAY restart" grep -q restarted "$dir/server.out"
  ;;
many)
  start_server serve
  run_client many many --channels 16 --calls 20
  wait_client
  check "16 concurrent connections, each got its own bytes back (exit $rc)" \
    all_checks_pass "$dir/many.out"
  check "they were carried as 16 connections" \
    jq -e '.carried.connections >= 16' "$dir/many.carried.json"
  ;;
refused)
  run_client refused unary --within "$within"
  wait_client
  expect_prompt_failure refused
  check "it was carried (the relay, not the client, met the refusal)" \
    jq -e '.carried.connections >= 1' "$dir/refused.carried.json"
  ;;
returnpath)
  command -v nft >/dev/null || { echo "skip: needs nft (nftables) to reject the dial back"; exit 77; }
  start_server serve
  # Host A rejects every connection opened toward it; its own connections out work.
  ip netns exec "$a" nft -f - <<'EOF' || exit 1
table inet reject_in {
  chain input {
    type filter hook input priority 0;
    iifname != "lo" tcp flags & (syn | ack) == syn reject with tcp reset
  }
}
EOF
  run_client returnpath unary --within "$within"
  wait_client
  expect_prompt_failure returnpath
  ;;
crash)
  start_server serve
  run_client crash crash --within 60
  wait_client
  # From the server's death to the client's error, by the wall clock both share.
  died=$(jq -r 'select(.dying_at) | .dying_at' "$dir/server.out")
  failed=$(jq -r 'select(.failed_at) | .failed_at' "$dir/crash.out")
  took=$($python -c "print(round($failed - $died, 3))" 2>/dev/null || echo 999)
  check "the call failed UNAVAILABLE after the server died (exit $rc)" \
    all_checks_pass "$dir/crash.out"
  check "within ${within} s of its death (${took} s)" within_bound "$took" "$within"
  ;;
stall)
  # A relay that stops answering (SIGSTOP, not killed) is given up after 3 s of
  # silence (relay.cc's kPeerSilence: a ping may wait behind megabytes of reads on
  # a slow link), then the call fails within the usual bound.
  start_server serve
  run_client stall stall --within 60
  wait_for "$dir/stall.out" waiting
  sleep 0.5  # the Sleep call is under way
  stopped=$(date +%s.%N)
  kill -STOP "$relay_pid"
  wait_client
  kill -CONT "$relay_pid"
  failed=$(jq -r 'select(.failed_at) | .failed_at' "$dir/stall.out")
  took=$($python -c "print(round(${failed:-1e12} - $stopped, 3))")
  check "the call failed UNAVAILABLE (exit $rc)" all_checks_pass "$dir/stall.out"
  bound=$(awk -v w="$within" 'BEGIN { print 3 + w }')
  check "within ${bound} s of the stop (${took} s)" within_bound "$took" "$bound"
  check "the origin relay said its peer stopped answering" grep -q "stopped answering" \
    "$dir/stall.err"
  ;;
pause)
  start_server serve
  run_client pause pause --idle 4
  wait_for "$dir/pause.out" waiting
  sleep 0.3  # the Sleep call is under way
  for _ in 1 2; do
    kill -STOP "$relay_pid"
    sleep 1
    kill -CONT "$relay_pid"
    sleep 0.5
  done
  wait_client
  check "the call across the pauses completed (exit $rc)" all_checks_pass "$dir/pause.out"
  check "the origin relay kept its peer" bash -c "! grep -q 'stopped answering' '$dir/pause.err'"
  check "the target relay kept its peer" bash -c "! grep -q 'stopped answering' '$dir/relay.err'"
  ;;
stallorigin)
  start_server serve
  run_client stallorigin stall --within 60
  wait_for "$dir/stallorigin.out" waiting
  sleep 0.5  # the Sleep call is under way
  # The origin relay (artune run) stops answering long enough for the target relay
  # to give it up and reset the server's side; then it runs again and must learn
  # of the reset: its program's call fails instead of waiting for a reply that
  # will never come.
  kill -STOP "$client_pid"
  sleep 4  # the target relay gives a silent peer up after 3 to 3.25 s
  resumed=$(date +%s.%N)
  kill -CONT "$client_pid"
  wait_client
  failed=$(jq -r 'select(.failed_at) | .failed_at' "$dir/stallorigin.out")
  took=$($python -c "print(round(${failed:-1e12} - $resumed, 3))")
  check "the target relay gave the stopped origin up" grep -q "stopped answering" "$dir/relay.err"
  check "the call failed UNAVAILABLE (exit $rc)" all_checks_pass "$dir/stallorigin.out"
  check "within ${within} s of the origin running again (${took} s)" \
    within_bound "$took" "$within"
  ;;
slow)
  start_server blast
  run_client slow slowread --mib 512 --idle 6
  origin_pid=$client_pid
  wait_for "$dir/slow.out" stalled
  peak_target=0 peak_origin=0
  for _ in $(seq 25); do  # 5 s of the reader's 6 s stall
    t=$(rss_kib "$relay_pid") o=$(rss_kib "$origin_pid")
    ((t > peak_target)) && peak_target=$t
    ((o > peak_origin)) && peak_origin=$o
    sleep 0.2
  done
  wait_client
  # An idle relay holds about 20 MiB; the window is 16 MiB per direction, and
  # 512 MiB is written while the reader stalls (without the window the origin
  # relay reached 570 MiB).
  # A sanitized build keeps freed memory in ASan's quarantine (256 MiB) and adds
  # shadow memory: its RSS says nothing of the window. There only the bytes count.
  if [[ $(ldd "$artune") == *libasan* ]]; then
    echo "note: sanitized build: RSS peaks $((peak_target / 1024)) / $((peak_origin / 1024)) MiB not judged"
  else
    check "the target relay's RSS peaked at $((peak_target / 1024)) MiB (< 160)" \
      test "$peak_target" -lt $((160 << 10))
    check "the origin relay's RSS peaked at $((peak_origin / 1024)) MiB (< 160)" \
      test "$peak_origin" -lt $((160 << 10))
  fi
  check "then every byte arrived, in order (exit $rc)" all_checks_pass "$dir/slow.out"
  check "the reader exited 0" test "$rc" = 0
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
finish
