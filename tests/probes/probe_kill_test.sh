#!/usr/bin/env bash
# `kill -9` of `artune probe --exec` (issue 16, medium 8): the traced command must
# not outlive the probe, and nothing may be left in /dev/shm (the ring is an
# anonymous memfd now). Bounded: every wait is at most 10 s.
#   probe_kill_test.sh ARTUNE
set -uo pipefail
artune=${1:?usage: probe_kill_test.sh ARTUNE}
dir=$(mktemp -d "${TMPDIR:-/tmp}/artune-probe-kill-XXXXXX")
marker="artune-probe-kill-$$"
cleanup() {
  pkill -9 -f "$marker" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
shm_before=$(ls /dev/shm 2>/dev/null | grep -c '^artune' || true)

# The traced command: a shell that sleeps, named by a marker we can find.
"$artune" --db "$dir/store.db" probe --exec -- bash -c "exec -a $marker sleep 60" \
  >"$dir/out" 2>"$dir/err" &
probe=$!
traced=
for _ in $(seq 100); do
  traced=$(pgrep -f "^$marker" | head -1)
  [[ -n $traced ]] && break
  sleep 0.1
done
if [[ -z $traced ]]; then
  echo "FAIL: the traced command never started: $(cat "$dir/err")"
  exit 1
fi
kill -9 "$probe"
wait "$probe" 2>/dev/null
gone=0
for _ in $(seq 100); do
  if ! kill -0 "$traced" 2>/dev/null; then gone=1; break; fi
  sleep 0.1
done
failures=0
if ((gone)); then
  echo "ok: the traced command ended with the probe"
else
  echo "FAIL: the traced command (pid $traced) outlived the killed probe"
  failures=$((failures + 1))
fi
shm_after=$(ls /dev/shm 2>/dev/null | grep -c '^artune' || true)
if ((shm_after > shm_before)); then
  echo "FAIL: /dev/shm holds $((shm_after - shm_before)) more artune objects after the kill"
  failures=$((failures + 1))
else
  echo "ok: nothing left in /dev/shm"
fi
((failures == 0))
