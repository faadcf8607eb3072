#!/usr/bin/env bash
# Nothing measured is lost (issue 26, item 9): with a store that cannot be written
# (a read-only mount, a full file system, one that fills up mid-sweep), `artune
# bench` and `artune sweep` say so on stderr before measuring, measure and print
# their results all the same (text and --json, "stored": false), say at the end
# why they were not stored, and exit 1. A sweep stored in part can be resumed.
# Runs in a private mount namespace (a read-only bind mount, tiny tmpfs mounts).
# Usage: unwritable_store_test.sh ARTUNE_BINARY
set -euo pipefail
artune=$1
if [[ ${2:-} != --in-namespace ]]; then
  if [[ $(id -u) != 0 ]] || ! unshare -m --propagation private true 2>/dev/null; then
    echo "SKIP: needs root and a mount namespace (unshare -m) for read-only and full mounts"
    exit 77
  fi
  exec unshare -m --propagation private "$0" "$artune" --in-namespace
fi

# shellcheck source=tests/tuner/sweep_test_lib.sh
source "$(dirname "$0")/../sweep_test_lib.sh"
sweep_test_extra_cleanup() {
  for mount in "$dir/ro" "$dir/full" "$dir/fills"; do umount "$mount" 2>/dev/null || true; done
}
sweep_test_begin unwritable
export XDG_CONFIG_HOME=$dir/config
unset ARTUNE_DB ARTUNE_CONFIG
bench=(bench --transport artune --warmup 0.05 --duration 0.2 --set fabric=tcp)
sweep=(sweep --fabric tcp --knob chunk_size=64KiB,1MiB --repeats 1 --warmup 0.05 --duration 0.1
  --finalists 1 --final-rounds 1)

# Runs artune; stdout to $dir/out, stderr to $dir/err; the exit code in $rc.
run() {
  set +e
  "$artune" "$@" >"$dir/out" 2>"$dir/err"
  rc=$?
  set -e
}

# The common shape: exit 1, a warning first on stderr (said before measuring),
# and at the end why nothing was stored.
expect_not_stored() {
  local label=$1
  ((rc == 1)) || fail "$label: exit $rc, want 1; stderr: $(cat "$dir/err")"
  head -n 1 "$dir/err" | grep -q '^artune: warning: ' ||
    fail "$label: stderr does not start with a warning: $(cat "$dir/err")"
  tail -n 1 "$dir/err" | grep -q 'not stored' || fail "$label: no final 'not stored': $(cat "$dir/err")"
}

expect_bench_json() {
  python3 - "$dir/out" "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
label = sys.argv[2]
assert j["stored"] is False, (label, j)
assert j["not_stored"], (label, j)
assert j["run_id"] is None, (label, j)
assert j["rpcs"] > 0 and j["validated"] is True, (label, j)
PY
}

expect_sweep_json() {  # label, sweep_id expected (null or a number)
  python3 - "$dir/out" "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
label, want_id = sys.argv[2], json.loads(sys.argv[3])
assert j["stored"] is False, (label, j["stored"])
assert j["not_stored"], label
assert j["sweep_id"] == want_id, (label, j["sweep_id"], want_id)
assert len(j["trials"]) >= 2, (label, j["trials"])
assert j["best"] is not None and j["default"] is not None, label
assert j["verdict"], label
PY
}

# 1. A read-only store (a read-only bind mount: root ignores file modes).
mkdir "$dir/ro"
"$artune" --db "$dir/ro/artune.db" "${bench[@]}" >/dev/null 2>&1 || fail "cannot make the store"
mount --bind "$dir/ro" "$dir/ro"
mount -o remount,bind,ro "$dir/ro"
run --db "$dir/ro/artune.db" "${bench[@]}" --json
expect_not_stored "bench, read-only"
expect_bench_json "bench, read-only"
grep -q 'read-only' "$dir/err" || fail "bench, read-only: the reason is not said: $(cat "$dir/err")"
run --db "$dir/ro/artune.db" "${bench[@]}"
expect_not_stored "bench text, read-only"
grep -Eq '^artune +tcp .* yes +-$' "$dir/out" || fail "bench text, read-only: no row: $(cat "$dir/out")"
run --db "$dir/ro/artune.db" "${sweep[@]}" --json
expect_not_stored "sweep, read-only"
expect_sweep_json "sweep, read-only" null
run --db "$dir/ro/artune.db" "${sweep[@]}"
expect_not_stored "sweep text, read-only"
grep -q '^Sweep (not stored): ' "$dir/out" || fail "sweep text, read-only: $(cat "$dir/out")"
grep -q '^best ' "$dir/out" || fail "sweep text, read-only: no best: $(cat "$dir/out")"
grep -q 'artune results --sweep' "$dir/out" && fail "sweep text, read-only: points at a sweep not stored"

# 2. A full file system.
mkdir "$dir/full"
mount -t tmpfs -o size=2m tmpfs "$dir/full"
"$artune" --db "$dir/full/artune.db" "${bench[@]}" >/dev/null 2>&1 || fail "cannot make the store"
dd if=/dev/zero of="$dir/full/fill" bs=4k 2>/dev/null || true  # until ENOSPC
run --db "$dir/full/artune.db" "${bench[@]}" --json
expect_not_stored "bench, disk full"
expect_bench_json "bench, disk full"
run --db "$dir/full/artune.db" "${sweep[@]}" --json
expect_not_stored "sweep, disk full"
expect_sweep_json "sweep, disk full" null

# 3. A file system that fills up mid-sweep: the sweep is stored in part, printed
# whole, and `--resume` finishes it once there is room.
mkdir "$dir/fills"
mount -t tmpfs -o size=4m tmpfs "$dir/fills"
db=$dir/fills/artune.db
# 8 grid points, the default (eager_threshold 16KiB) among them.
"$artune" --db "$db" sweep --fabric tcp --knob eager_threshold=1KiB..128KiB:x2 --repeats 1 \
  --warmup 0.05 --duration 0.3 --finalists 1 --final-rounds 1 --json >"$dir/out" 2>"$dir/err" &
sweep_pid=$!
stored=0
for _ in $(seq 1 600); do
  stored=$("$artune" --db "$db" results --sweep 1 --json 2>/dev/null |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["trials"]))' 2>/dev/null || echo 0)
  if ((stored >= 1)); then break; fi
  kill -0 "$sweep_pid" 2>/dev/null || fail "the sweep ended before the disk filled: $(cat "$dir/err")"
  sleep 0.05
done
((stored >= 1)) || fail "no trial stored in 30 s"
dd if=/dev/zero of="$dir/fills/fill" bs=4k 2>/dev/null || true
set +e
wait "$sweep_pid"
rc=$?
set -e
sweep_pid=
((rc == 1)) || fail "sweep filling up: exit $rc, want 1: $(cat "$dir/err")"
grep -q 'warning: cannot store' "$dir/err" || fail "sweep filling up: no warning: $(cat "$dir/err")"
grep -q 'sweep --resume 1' "$dir/err" || fail "sweep filling up: no resume hint: $(cat "$dir/err")"
expect_sweep_json "sweep filling up" 1
python3 -c 'import json,sys; n=len(json.load(open(sys.argv[1]))["trials"]); assert n == 8, n' \
  "$dir/out" || fail "sweep filling up: not every trial printed"
rm -f "$dir/fills/fill"
run --db "$db" sweep --resume 1 --json
((rc == 0)) || fail "resume after freeing space: exit $rc: $(cat "$dir/err")"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["stored"] is True and len(j["trials"]) == 8, j["trials"]' \
  "$dir/out" || fail "the resumed sweep is not whole"
echo PASS
