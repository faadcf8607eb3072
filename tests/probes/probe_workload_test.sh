#!/bin/sh
# `artune probe --exec -- artune workload` end to end (preload on the built-in
# TensorFlow-like workload, which issues a step's RecvTensor calls at once): the
# stored capture's RecvTensor request row has a call concurrency, one sample per
# request, p50 <= p90 <= max, at least 1, and `captures show` prints it in its
# INFLIGHT p50/max column. The counts themselves depend on timing: only their
# bounds are checked; the test prints them.
# Usage: probe_workload_test.sh ARTUNE
set -eu
artune=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=$work/store.db

# The workload's own summary goes to a file: stdout is the probe's JSON.
WORKLOAD_OUT=$work/workload.out
export WORKLOAD_OUT
"$artune" --quiet --db "$db" probe --json --exec -- \
  sh -c 'exec "$0" "$@" >"$WORKLOAD_OUT"' "$artune" workload --steps 2 --duration 0 \
  --scale 0.02 --workers 2 --ps 1 \
  >"$work/probe.json" 2>"$work/probe.err" </dev/null || {
  echo "FAIL: artune probe --exec -- artune workload failed:" >&2
  cat "$work/probe.err" >&2
  exit 1
}

id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["capture_id"])' \
  "$work/probe.json")
"$artune" --db "$db" captures show "$id" --json >"$work/show.json"
"$artune" --db "$db" captures show "$id" >"$work/show.txt"

python3 - "$work/show.json" "$work/show.txt" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
rows = {(m["method"], m["direction"]): m for m in profile["methods"]}
method = "/tensorflow.WorkerService/RecvTensor"
request = rows.get((method, "request"))
response = rows.get((method, "response"))
if request is None or response is None:
    sys.exit("FAIL: no RecvTensor rows: " + json.dumps(profile)[:2000])
inflight = request.get("inflight")
if inflight is None:
    sys.exit("FAIL: no inflight on the RecvTensor request row: " + json.dumps(request)[:2000])
if inflight["samples"] != request["messages"]:
    sys.exit(f"FAIL: {inflight['samples']} concurrency samples for {request['messages']} requests")
if not (1 <= inflight["p50"] <= inflight["p90"] <= inflight["max"]):
    sys.exit("FAIL: inflight out of order: " + json.dumps(inflight))
if sum(inflight["histogram"].values()) != inflight["samples"]:
    sys.exit("FAIL: inflight histogram does not add up: " + json.dumps(inflight))
if "inflight" in response:
    sys.exit("FAIL: the response row has an inflight of its own: " + json.dumps(response)[:2000])
if "INFLIGHT p50/max" not in table:
    sys.exit("FAIL: no INFLIGHT p50/max column in `captures show`:\n" + table)
cell = f"{inflight['p50']}/{inflight['max']}"
if not any(method in line and "request" in line and f" {cell} " in line
           for line in table.splitlines()):
    sys.exit(f"FAIL: the RecvTensor request row does not show {cell}:\n" + table)
print(f"RecvTensor concurrency: {inflight['samples']} calls, p50 {inflight['p50']}, "
      f"p90 {inflight['p90']}, max {inflight['max']}")
PY
