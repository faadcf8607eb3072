#!/usr/bin/env bash
# The traced command of `artune probe --exec` and what it starts (issue 16,
# medium 8): after `kill -9` of the probe, and after a --duration stop, neither
# the command nor its child outlives the probe, and nothing is left in /dev/shm
# (the ring is an anonymous memfd). With --keep-command both run on after the
# probe stops. Bounded: every wait is at most 10 s.
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
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The traced command: a shell that starts a child of its own, then sleeps; both
# are named by the marker so we can find them.
traced_command=(bash -c "(exec -a $marker-child sleep 60) & exec -a $marker-command sleep 60")

# wait_started: sets command and child to their pids (empty when not found in 10 s).
wait_started() {
  command= child=
  for _ in $(seq 100); do
    command=$(pgrep -f "^$marker-command" | head -1)
    child=$(pgrep -f "^$marker-child" | head -1)
    [[ -n $command && -n $child ]] && return 0
    sleep 0.1
  done
  return 1
}

# gone PID...: true when every pid has exited within 10 s.
gone() {
  for _ in $(seq 100); do
    local alive=0 pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive == 0)) && return 0
    sleep 0.1
  done
  return 1
}

# 1. kill -9 of the probe.
"$artune" --db "$dir/store.db" probe --exec -- "${traced_command[@]}" >"$dir/out" 2>"$dir/err" &
probe=$!
if ! wait_started; then
  fail "the traced command never started: $(cat "$dir/err")"
else
  kill -9 "$probe"
  wait "$probe" 2>/dev/null
  if gone "$command" "$child"; then
    echo "ok: the command and its child ended with the killed probe"
  else
    fail "the command ($command) or its child ($child) outlived the killed probe"
  fi
fi
shm_after=$(ls /dev/shm 2>/dev/null | grep -c '^artune' || true)
if ((shm_after > shm_before)); then
  fail "/dev/shm holds $((shm_after - shm_before)) more artune objects after the kill"
else
  echo "ok: nothing left in /dev/shm"
fi

# 2. A --duration stop ends the command's whole group.
"$artune" --db "$dir/store.db" probe --duration 1 --exec -- "${traced_command[@]}" \
  >"$dir/out" 2>"$dir/err" &
probe=$!
if wait_started; then
  wait "$probe"
  if gone "$command" "$child"; then
    echo "ok: a --duration stop ended the command and its child"
  else
    fail "after a --duration stop the command ($command) or its child ($child) still runs"
  fi
else
  fail "the traced command never started: $(cat "$dir/err")"
fi

# 3. --keep-command: the probe stops, the command and its child run on.
"$artune" --db "$dir/store.db" probe --duration 1 --keep-command --exec -- \
  "${traced_command[@]}" >"$dir/out" 2>"$dir/err" &
probe=$!
if wait_started; then
  wait "$probe"
  rc=$?
  if ((rc != 0)); then
    fail "probe --keep-command exited $rc: $(cat "$dir/err")"
  elif kill -0 "$command" 2>/dev/null && kill -0 "$child" 2>/dev/null; then
    echo "ok: with --keep-command the command and its child run on after the probe"
  else
    fail "with --keep-command the command or its child ended with the probe"
  fi
  kill -9 "$command" "$child" 2>/dev/null
else
  fail "the traced command never started: $(cat "$dir/err")"
fi
((failures == 0))
