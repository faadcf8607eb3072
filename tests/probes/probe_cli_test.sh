#!/bin/sh
# `artune probe --exec` end to end on the known gRPC traffic (the grpc_tensors
# helper) with a store of its own:
#  * the stored capture's started_at is when the capture began, not when it was
#    stored (the command sleeps 2 s before the traffic);
#  * the stored profile has per-method iovec size histograms (preload sees iovecs);
#  * the progress line appears only on a terminal, and not with --quiet.
# Usage: probe_cli_test.sh ARTUNE GRPC_TENSORS
set -eu
artune=$1
helper=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=$work/store.db

before=$(date +%s.%N)
"$artune" --db "$db" probe --json --exec -- sh -c "sleep 2; exec $helper" \
  >"$work/probe.json" 2>"$work/probe.err"
after=$(date +%s.%N)
if grep -q "$(printf '\r')" "$work/probe.err"; then
  echo "FAIL: a progress line was written to a non-terminal stderr" >&2
  exit 1
fi

"$artune" --db "$db" captures --json >"$work/captures.json"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["captures"][0]["id"])' \
  "$work/captures.json")
"$artune" --db "$db" captures show "$id" --json >"$work/show.json"

python3 - "$work/captures.json" "$work/show.json" "$before" "$after" <<'PY'
import datetime, json, sys
captures = json.load(open(sys.argv[1]))["captures"]
profile = json.load(open(sys.argv[2]))
before, after = float(sys.argv[3]), float(sys.argv[4])
started = datetime.datetime.strptime(captures[0]["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
started = started.replace(tzinfo=datetime.timezone.utc).timestamp()
# The capture began before the 2 s sleep, so at least 2 s before the command ended
# (a store-time stamp would be within a fraction of a second of the end).
if not (before - 1 <= started <= after - 2):
    sys.exit(f"FAIL: started_at {captures[0]['started_at']} ({started}) is not when the "
             f"capture began: command ran from {before} to {after}")
methods = {(m["method"], m["direction"]): m for m in profile["methods"]}
response = methods.get(("/tensorflow.WorkerService/RecvTensor", "response"))
if response is None or not response.get("iovec_size_histogram"):
    sys.exit("FAIL: no iovec_size_histogram for RecvTensor responses: " + json.dumps(profile)[:2000])
if sum(response["iovec_size_histogram"].values()) == 0:
    sys.exit("FAIL: empty iovec_size_histogram")
print("started_at and iovec histograms OK")
PY

# On a terminal (script gives the command one) the progress line is drawn ...
script -qec "$artune --db $db probe --no-store --exec -- sleep 1.5" /dev/null \
  >"$work/tty.out" 2>&1 || true
if ! grep -q "events [0-9]*  lost" "$work/tty.out"; then
  echo "FAIL: no progress line on a terminal:" >&2
  cat "$work/tty.out" >&2
  exit 1
fi
# ... and --quiet silences it.
script -qec "$artune --quiet --db $db probe --no-store --exec -- sleep 1.5" /dev/null \
  >"$work/quiet.out" 2>&1 || true
if grep -q "events [0-9]*  lost" "$work/quiet.out"; then
  echo "FAIL: a progress line with --quiet:" >&2
  cat "$work/quiet.out" >&2
  exit 1
fi
echo "progress line OK"

# --json: stdout is the JSON object alone, whatever the traced command prints
# (issue 16: the command's stdout was mixed into it); the command's output goes to
# stderr.
"$artune" --db "$db" probe --json --no-store --exec -- sh -c 'echo traced-command-output' \
  >"$work/mixed.json" 2>"$work/mixed.err"
if ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/mixed.json"; then
  echo "FAIL: probe --exec --json stdout is not one JSON object:" >&2
  head -5 "$work/mixed.json" >&2
  exit 1
fi
if ! grep -q traced-command-output "$work/mixed.err"; then
  echo "FAIL: the traced command's stdout was lost (expected on stderr)" >&2
  exit 1
fi
echo "json stdout OK"
