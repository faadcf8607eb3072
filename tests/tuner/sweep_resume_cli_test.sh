#!/usr/bin/env bash
# kill -9 an `artune sweep` mid-way, then `artune sweep --resume`: every trial the
# killed run committed is kept as it was (same id, same objective), none is measured
# again, and the resumed run measures exactly the missing points.
# Usage: sweep_resume_cli_test.sh ARTUNE_BINARY
set -euo pipefail
artune=$1
# shellcheck source=tests/tuner/sweep_test_lib.sh
source "$(dirname "$0")/sweep_test_lib.sh"
sweep_test_begin sweep-resume
db=$dir/artune.db

# 7 x 2 grid points plus the default (16KiB, 512KiB; 512KiB is off the chunk axis).
# shellcheck disable=SC2054  # the commas separate a knob's values, not array elements
args=(--db "$db" sweep --fabric tcp --knob eager_threshold=1KiB..64KiB:x2
  --knob chunk_size=64KiB,1MiB --repeats 2 --warmup 0.05 --duration 0.15 --json)
expected_total=15

trial_count() {
  "$artune" --db "$db" results --sweep 1 --json 2>/dev/null |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["trials"]))' 2>/dev/null || echo 0
}

"$artune" "${args[@]}" >"$dir/first.json" 2>"$dir/first.err" &
sweep_pid=$!
# Wait (bounded) until a few trials are committed, then kill without warning.
for _ in $(seq 1 600); do
  count=$(trial_count)
  if ((count >= 3)); then break; fi
  kill -0 "$sweep_pid" 2>/dev/null || fail "the sweep ended before it was killed: $(cat "$dir/first.err")"
  sleep 0.1
done
kill -9 "$sweep_pid"
wait "$sweep_pid" 2>/dev/null || true
sweep_pid=

"$artune" --db "$db" results --sweep 1 --json >"$dir/killed.json"
killed=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["trials"]))' "$dir/killed.json")
((killed >= 3 && killed < expected_total)) || fail "killed sweep has $killed trials"
finished=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sweep"]["finished_at"])' "$dir/killed.json")
[[ -z $finished ]] || fail "a killed sweep is marked finished ($finished)"

"$artune" --db "$db" sweep --resume 1 --json >"$dir/resumed.json"

python3 - "$dir/killed.json" "$dir/resumed.json" "$expected_total" <<'PY'
import json, sys
killed = json.load(open(sys.argv[1]))
resumed = json.load(open(sys.argv[2]))
total = int(sys.argv[3])
before = {t["id"]: t for t in killed["trials"]}
after = resumed["trials"]
keys = [json.dumps(t["knobs"], sort_keys=True) for t in after]
errors = []
if len(after) != total:
    errors.append(f"{len(after)} trials after resume, expected {total}")
if len(set(keys)) != len(keys):
    errors.append("a knob point appears twice")
if resumed["resumed"] != len(before):
    errors.append(f"resumed {resumed['resumed']} points, the killed run had {len(before)}")
if resumed["measured"] != total - len(before):
    errors.append(f"measured {resumed['measured']}, expected {total - len(before)}")
for trial in after:
    old = before.get(trial["id"])
    if old is not None and (old["objective"] != trial["objective"] or old["knobs"] != trial["knobs"]):
        errors.append(f"trial {trial['id']} changed on resume")
missing = set(before) - {t["id"] for t in after}
if missing:
    errors.append(f"trials lost: {sorted(missing)}")
if resumed["best"] is None or resumed["default"] is None:
    errors.append("no best or default in the resumed output")
if resumed["sweep_id"] != 1 or resumed["strategy"] != "grid" or resumed["fabric"] != "tcp":
    errors.append("resumed sweep header differs: " + json.dumps(resumed)[:200])
if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"resume: {len(before)} kept, {resumed['measured']} measured, {total} in all")
PY

# The sweep stored how its workload time is measured; one stored before that
# (no such parameter) still resumes, one from an unknown artune is refused by name.
set_parameter() {  # value, or "" to delete it
  python3 - "$db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DELETE FROM sweep_parameters WHERE sweep_id = 1 AND name = 'workload_time'")
if sys.argv[2]:
    db.execute("INSERT INTO sweep_parameters (sweep_id, name, value) VALUES (1, 'workload_time', ?)",
               (sys.argv[2],))
db.commit()
PY
}
stored=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT value FROM sweep_parameters WHERE sweep_id = 1 AND name = '"'"'workload_time'"'"'").fetchone()[0])' "$db")
[[ $stored == seconds_per_pass ]] || fail "stored workload_time is '$stored'"
set_parameter ""
"$artune" --db "$db" sweep --resume 1 --json >/dev/null 2>"$dir/legacy.err" ||
  fail "a sweep stored before workload_time does not resume: $(cat "$dir/legacy.err")"
set_parameter "minutes_per_epoch"
if "$artune" --db "$db" sweep --resume 1 --json >/dev/null 2>"$dir/unknown.err"; then
  fail "a sweep with an unknown workload_time resumed"
fi
grep -q "workload_time 'minutes_per_epoch'" "$dir/unknown.err" ||
  fail "the refusal does not name the stored workload_time: $(cat "$dir/unknown.err")"
set_parameter seconds_per_pass

out=$("$artune" --db "$db" results --sweep 1)
[[ $out == *"Chosen "* && $out == *"eager \\ chunk"* && $out == *"64KiB"* && $out == *"*"* ]] ||
  fail "results --sweep: $out"
out=$("$artune" --db "$db" results --sweeps)
[[ $out == *"latency-p50"* && $out == *"finished"* ]] || fail "results --sweeps: $out"
echo "sweep resume after kill -9: all checks passed"
