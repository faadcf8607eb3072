#!/usr/bin/env bash
# fabric = auto between processes: an `artune serve` with the default config also
# listens on shm (and says where in --json), and a bench client on this host takes
# it (same boot, network namespace and user), while a client of another user
# (nobody, as root) cannot use the server's shm listener and stays on tcp; both
# calls are validated. The server has a token: without one, a loopback server
# serves only its own user (issue 26; serve_auth_test.sh checks that refusal), so
# the other user reaches it with a copy of the token, as a remote client would.
#   fabric_auto_test.sh ARTUNE
set -uo pipefail
artune=${1:?usage: fabric_auto_test.sh ARTUNE}
[[ -x $artune ]] || { echo "FAIL: $artune is not an executable"; exit 1; }

# shellcheck source=tests/cli/serve_test_lib.sh
source "$(dirname "$0")/serve_test_lib.sh"
serve_test_begin fabric-auto
chmod 0777 "$dir"

export XDG_CONFIG_HOME=$dir/config
unset ARTUNE_FABRIC
export ARTUNE_TOKEN_FILE=$dir/token
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$ARTUNE_TOKEN_FILE")
"$artune" --db "$dir/serve.db" serve --json --servers 1 --transport artune \
  --listen 127.0.0.1:0 >"$dir/serve.json" 2>"$dir/serve.err" &
server_pid=$!
for _ in $(seq 200); do
  [[ -s $dir/serve.json && $(tail -c1 "$dir/serve.json" | od -An -c) == *'\n'* ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
base=$(jq -r .base "$dir/serve.json" 2>/dev/null)
[[ $base == 127.0.0.1:* ]] || { echo "FAIL: serve did not start: $(cat "$dir/serve.err")"; exit 1; }

local_endpoint=$(jq -r '.servers[0].local_endpoint // empty' "$dir/serve.json")
check "serve --json names the same-host shm listener (saw '$local_endpoint')" \
  test -n "$local_endpoint"

bench() {  # fabric the bench client used, or the error
  "$@" "$artune" --db "$dir/$RANDOM.db" bench --peer "$base" --transport artune --warmup 0 \
    --duration 0.2 --json 2>"$dir/bench.err" | jq -r '.fabric // empty'
}
same_user=$(bench)
check "a client of the same user on this host uses shm (saw '$same_user')" \
  test "$same_user" = shm
if [[ $(id -u) -ne 0 ]] || ! command -v runuser >/dev/null; then
  echo "skip: the other-user part needs root (runuser -u nobody)"
  ((failures == 0)) && exit 77
  exit 1
fi
# The token file must be the reader's own and private (credentials.h).
cp "$ARTUNE_TOKEN_FILE" "$dir/nobody-token"
chown nobody "$dir/nobody-token"
chmod 0600 "$dir/nobody-token"
other_user=$(bench runuser -u nobody -- env ARTUNE_TOKEN_FILE="$dir/nobody-token")
check "a client of another user stays on tcp (saw '$other_user')" test "$other_user" = tcp
if ((failures > 0)); then
  echo "--- serve.err"
  cat "$dir/serve.err"
  echo "--- bench.err"
  cat "$dir/bench.err"
fi
((failures == 0))
