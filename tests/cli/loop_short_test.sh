#!/usr/bin/env bash
# scripts/loop --short as CI runs it, and what it says at the end: a path it names
# must still exist when it has exited (without --keep it removes its work directory,
# so it must not print the store and tuned config as if they were there to use).
# Usage: loop_short_test.sh LOOP_SCRIPT ARTUNE_BINARY
set -u
loop=$1
artune=$2
out=$(mktemp /tmp/artune-loop-test.XXXXXX)
trap 'rm -f "$out"' EXIT
"$loop" --short --artune "$artune" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then echo "FAIL: scripts/loop --short exited $status"; exit 1; fi
failures=0
# The closing lines (from "loop done"): the steps' own output may name the work
# directory while it exists.
for path in $(sed -n '/^loop done/,$p' "$out" | grep -o '/tmp/artune-loop\.[A-Za-z0-9]*[^ ,]*' | sort -u); do
  if [[ ! -e $path ]]; then
    echo "FAIL: the loop names $path, which it removed"
    failures=$((failures + 1))
  fi
done
sed -n '/^loop done/,$p' "$out" | grep -q -- '--keep'  || { echo "FAIL: the last lines do not say how to keep the store"; failures=$((failures + 1)); }
exit $((failures > 0))
