#!/usr/bin/env bash
# `artune serve` only its users can reach (issue 16, high 2):
#   * by default it listens on loopback, and --json lists every port, data ports too;
#   * beyond loopback it creates a 0600 token file on first use, and clients without
#     that token are refused (exit 4) by the control plane (apply config --live, the
#     reported attack) and by both bench servers, while clients with it work.
# The non-loopback part runs in a private network namespace (unshare -n: only its
# own loopback exists there, so "every address" is still this test's alone); it
# needs root and skips (77) without.
#   serve_auth_test.sh ARTUNE
set -uo pipefail
artune=${1:?usage: serve_auth_test.sh ARTUNE}
[[ -x $artune ]] || { echo "FAIL: $artune is not an executable"; exit 1; }

# shellcheck source=tests/cli/serve_test_lib.sh
source "$(dirname "$0")/serve_test_lib.sh"
serve_test_begin serve-auth

# Starts `artune serve ARGS... --json` in the background (in `runner`, if set) and
# waits up to 20 s for its JSON line in $dir/serve.json.
start_serve() {
  : >"$dir/serve.json"
  "${runner[@]}" "$artune" --db "$dir/store.db" serve --json --servers 1 "$@" \
    >"$dir/serve.json" 2>"$dir/serve.err" &
  server_pid=$!
  for _ in $(seq 200); do
    [[ -s $dir/serve.json ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "artune serve did not start: $(grep -v '^E[0-9]' "$dir/serve.err")"
  # It has failed in CI with the port after its picked base taken on every pick:
  # show who held ports on loopback then, for whoever looks into it.
  echo "--- TCP sockets on 127.0.0.1 at the failure (ss -tanp):"
  ss -tanp 2>/dev/null | grep -F '127.0.0.1:' | head -60
  return 1
}
stop_serve() {
  kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  server_pid=
}

export XDG_CONFIG_HOME=$dir/server-config
unset ARTUNE_TOKEN_FILE ARTUNE_TLS_CERT ARTUNE_TLS_KEY ARTUNE_TLS_CA
runner=()

# 1. The default: loopback, no token, every port listed.
check "serve --help names the loopback default" \
  bash -c "'$artune' serve --help | grep -q 'TEXT=127.0.0.1:50051'"
start_serve --listen 127.0.0.1:0 --set fabric=tcp || exit 1
check "every server listens on 127.0.0.1" \
  jq -e '[.servers[].address | startswith("127.0.0.1:")] | all' "$dir/serve.json"
check "the artune server lists its data port" \
  jq -e '.servers[] | select(.transport == "artune") | .data_endpoint | test("^127\\.0\\.0\\.1:[0-9]+$")' \
  "$dir/serve.json"
check "no token on loopback by default" jq -e '.auth.token == false' "$dir/serve.json"
# A second server on a port the first holds is refused (gRPC would share it with
# SO_REUSEPORT, clients landing on either), exit 4 with the reason.
taken=$(jq -r '.servers[] | select(.transport == "artune") | .address' "$dir/serve.json")
timeout 30 "$artune" --db "$dir/second.db" serve --listen "$taken" >/dev/null 2>"$dir/second.err"
second_rc=$?
check "a second serve on a taken port exits 4 (saw $second_rc)" test "$second_rc" = 4
check "... and says the address is in use" grep -q "address in use" "$dir/second.err"
# An unset variable in a script must not turn into a loopback benchmark.
check "bench --peer '' is a usage error" \
  bash -c "'$artune' --db '$dir/x.db' bench --peer '' >/dev/null 2>&1; test \$? = 2"
# Loopback alone is no boundary between users (issue 26, 4): another user's
# `apply config --live` (timeout_ms=1, the reported attack) is refused, exit 4,
# and changes nothing; the owner's own works.
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
  other=$(mktemp -d "${TMPDIR:-/tmp}/artune-serve-other-XXXXXX")
  chmod 0777 "$other"
  HOME=$other XDG_CONFIG_HOME=$other timeout 60 \
    setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$artune" --db "$other/other.db" apply config --live "$taken" --set timeout_ms=1 \
    >"$dir/live-other.out" 2>&1
  other_rc=$?
  rm -rf "$other"
  check "apply config --live by another user exits 4 (saw $other_rc)" test "$other_rc" = 4
  check "... and says who this server serves" grep -q "serves only its own user" \
    "$dir/live-other.out"
  timeout 60 "$artune" --db "$dir/owner.db" apply config --live "$taken" \
    --set timeout_ms=7777 >"$dir/live-owner.out" 2>&1
  owner_rc=$?
  check "the owner's apply config --live works (saw $owner_rc)" test "$owner_rc" = 0
  check "... and found the other user's timeout_ms=1 not applied" \
    grep -Eq "^timeout_ms +10000 " "$dir/live-owner.out"
  check "the server logged the refusal" grep -q "belongs to uid 65534" "$dir/serve.err"
else
  echo "skip: the other-user checks need root and setpriv (util-linux)"
fi
stop_serve

# 2. Beyond loopback: a token, and nothing for whoever lacks it.
if [[ $(id -u) -ne 0 ]] || ! unshare -n true 2>/dev/null; then
  echo "skip: the off-loopback part needs root for a private network namespace (unshare -n)"
  ((failures == 0)) && exit 77
  exit 1
fi
cat >"$dir/inside.sh" <<EOF
set -u
ip link set lo up
artune=$artune
dir=$dir
EOF
cat >>"$dir/inside.sh" <<'EOF'
export XDG_CONFIG_HOME=$dir/server-config
# Part 1's serve.json must be gone before this server starts: the background job
# truncates it only once it runs, and reading the old (or the just-emptied) file
# once left base empty, which made the bench below measure servers of its own.
rm -f "$dir/serve.json"
"$artune" --db "$dir/store.db" serve --json --servers 1 --listen 0.0.0.0:0 --set fabric=tcp \
  >"$dir/serve.json" 2>"$dir/serve.err" &
server=$!
# Wait for the whole line (the JSON ends with a newline).
for _ in $(seq 200); do
  [[ -s $dir/serve.json && $(tail -c1 "$dir/serve.json" | od -An -c) == *'\n'* ]] && break
  sleep 0.1
done
base=$(jq -r .base "$dir/serve.json" | sed 's/^0\.0\.0\.0/127.0.0.1/')
artune_port=$(jq -r '.servers[] | select(.transport == "artune") | .address' "$dir/serve.json" |
  sed 's/.*://')
token="$XDG_CONFIG_HOME/artune/token"
results=$dir/results
: >"$results"
record() { echo "$1 $2" >>"$results"; }
record token_mode "$(stat -c %a "$token" 2>/dev/null)"
record auth_json "$(jq -c .auth "$dir/serve.json")"
# Without the token (another user's configuration directory).
export XDG_CONFIG_HOME=$dir/client-config
"$artune" --db "$dir/client.db" apply config --live "127.0.0.1:$artune_port" \
  --set timeout_ms=1 >"$dir/live-anon.out" 2>&1
record live_anon $?
"$artune" --db "$dir/client.db" bench --peer "$base" --transport artune --warmup 0 \
  --duration 0.1 >"$dir/bench-anon.out" 2>&1
record bench_anon $?
"$artune" --db "$dir/client.db" bench --peer "$base" --transport grpc --warmup 0 \
  --duration 0.1 >"$dir/grpc-anon.out" 2>&1
record grpc_anon $?
# With it.
export ARTUNE_TOKEN_FILE=$token
"$artune" --db "$dir/client.db" apply config --live "127.0.0.1:$artune_port" \
  --set eager_threshold=32KiB >"$dir/live-token.out" 2>&1
record live_token $?
"$artune" --db "$dir/client.db" bench --peer "$base" --transport both --warmup 0 \
  --duration 0.1 >"$dir/bench-token.out" 2>&1
record bench_token $?
kill $server
wait $server 2>/dev/null
EOF
runner=(timeout 120)
"${runner[@]}" unshare -n bash "$dir/inside.sh"
value() { awk -v k="$1" '$1 == k {sub($1 " ", ""); print}' "$dir/results"; }
check "the token file was created 0600" test "$(value token_mode)" = 600
check "serve --json says clients need the token" \
  bash -c "jq -e '.token == true' <<<'$(value auth_json)' >/dev/null"
check "apply config --live without the token exits 4 (saw $(value live_anon))" \
  test "$(value live_anon)" = 4
check "... and says a token is required" grep -q "requires a token" "$dir/live-anon.out"
check "bench against the embedded transport without the token exits 4 (saw $(value bench_anon))" \
  test "$(value bench_anon)" = 4
check "bench against the stock gRPC server without the token exits 4 (saw $(value grpc_anon))" \
  test "$(value grpc_anon)" = 4
check "apply config --live with the token works (saw $(value live_token))" \
  test "$(value live_token)" = 0
check "bench with the token works (saw $(value bench_token))" test "$(value bench_token)" = 0
if ((failures > 0)); then
  for f in serve.err live-anon.out bench-anon.out grpc-anon.out live-token.out bench-token.out; do
    echo "--- $f"
    cat "$dir/$f" 2>/dev/null
  done
fi
((failures == 0))
