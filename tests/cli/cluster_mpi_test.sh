#!/usr/bin/env bash
# artune sweep --mpi on one machine as on a cluster: 4 ranks under mpirun, each in
# its own network namespace and hostname (cluster_netns_lib.sh), so every rank
# has its own address and name, and the servers require the run's token:
#   1. --pairs all: 3 rounds, 6 links, each with its sweep, in one store;
#   1b. --ab CONFIG on the ring: every link an ab sweep with a final round;
#   1c. --workload ID: rank 0's capture replayed on every link;
#   2. a rank that cannot serve: its links are stored failed, the run goes on;
#   3. a rank killed midway: the job aborts, the finished links stay, and
#      --resume ID measures only the missing (or failed) ones.
# Usage: cluster_mpi_test.sh ARTUNE. Exit 77 (skip) without root, mpirun, an
# artune built with MPI, or network namespaces.
set -uo pipefail
artune=$(realpath "$1")

# shellcheck source=tests/cli/cluster_netns_lib.sh
source "$(dirname "$0")/cluster_netns_lib.sh"
tag="acl$$"
cluster_test_begin "$artune" "$tag"

# A sweep small enough to run a round in about a second: two points, short
# measurements, one repeat, a final round of one.
sweep=(sweep --mpi --knob "eager_threshold=1KiB,4KiB" --duration 0.05 --warmup 0 --repeats 1
  --finalists 1 --final-rounds 1)
run_on() {  # run_on DB SECONDS ARGS...: artune on 4 ranks, bounded in time
  local db=$1 seconds=$2
  shift 2
  run_ranks "$seconds" "$artune" --db "$db" "$@"
}
q() { sqlite3 "$1" "$2"; }

# 1. The whole `all` schedule.
db="$dir/all.db"
run_on "$db" 90 "${sweep[@]}" --pairs all --json >"$dir/all.json" 2>"$dir/all.err"
rc=$?
[[ $rc == 0 ]] || fail "--pairs all exited $rc: $(tail -5 "$dir/all.err")"
[[ $(q "$db" "SELECT count(*) FROM cluster_links") == 6 ]] || fail "not 6 links: $(q "$db" "SELECT * FROM cluster_links")"
[[ $(q "$db" "SELECT count(DISTINCT round) FROM cluster_links") == 3 ]] || fail "not 3 rounds"
[[ $(q "$db" "SELECT count(*) FROM cluster_links WHERE status = 'ok' AND sweep_id IS NOT NULL") == 6 ]] ||
  fail "a link is not ok with a sweep: $(q "$db" "SELECT status, error FROM cluster_links")"
[[ $(q "$db" "SELECT count(DISTINCT client_rank || '-' || server_rank) FROM cluster_links") == 6 ]] ||
  fail "a pair of ranks is measured twice"
# Each end is the rank's own host and device; each sweep measured its peer's address.
bad=$(q "$db" "SELECT l.client_rank FROM cluster_links l JOIN sweeps s ON s.id = l.sweep_id
  WHERE l.client_host <> 'node' || l.client_rank OR l.server_host <> 'node' || l.server_rank
     OR l.client_device <> 'tcp:${tag}v' || l.client_rank
     OR s.host <> l.client_host OR s.peer NOT LIKE '10.199.0.' || (l.server_rank + 1) || ':%'")
[[ -z $bad ]] || fail "links with the wrong hosts, devices or peers: $(q "$db" "SELECT l.*, s.host, s.peer FROM cluster_links l JOIN sweeps s ON s.id = l.sweep_id")"
[[ $(q "$db" "SELECT count(*) FROM trials") -ge 12 ]] || fail "fewer than 2 trials per link"
[[ $(q "$db" "SELECT count(*) FROM sweep_verdicts") == 6 ]] || fail "a link's sweep has no verdict"
[[ -n $(q "$db" "SELECT finished_at FROM clusters WHERE finished_at <> ''") ]] || fail "cluster not finished"
grep -q '"stored_links": 6' "$dir/all.json" || fail "--json summary: $(cat "$dir/all.json")"
grep -q 'round 3/3 done' "$dir/all.err" || fail "no round progress on stderr: $(cat "$dir/all.err")"
echo "all: $(q "$db" "SELECT count(*) FROM cluster_links") links in $(q "$db" "SELECT count(DISTINCT round) FROM cluster_links") rounds"

# 1b. --ab: the base config against a TOML config on every link of the ring, each
# link a sweep of strategy ab with exactly the two configs and a final round.
db="$dir/ab.db"
printf 'eager_threshold = "4KiB"\n' >"$dir/tuned.toml"
run_on "$db" 90 sweep --mpi --ab "$dir/tuned.toml" --pairs ring --duration 0.05 --warmup 0 \
  --repeats 1 --final-rounds 2 >"$dir/ab.out" 2>"$dir/ab.err"
rc=$?
[[ $rc == 0 ]] || fail "--ab exited $rc: $(tail -5 "$dir/ab.err")"
[[ $(q "$db" "SELECT measurement FROM clusters") == ab ]] || fail "the cluster run is not ab"
[[ $(q "$db" "SELECT count(*) FROM cluster_links WHERE status = 'ok'") == 4 ]] ||
  fail "not 4 ok ring links: $(q "$db" "SELECT * FROM cluster_links")"
[[ $(q "$db" "SELECT count(*) FROM sweeps WHERE strategy = 'ab'") == 4 ]] || fail "links are not ab sweeps"
[[ $(q "$db" "SELECT count(DISTINCT knobs) FROM trials") == 2 &&
  $(q "$db" "SELECT count(*) FROM trials WHERE knobs = 'eager_threshold=4KiB'") == 4 ]] ||
  fail "ab trials are not the base and the config: $(q "$db" "SELECT sweep_id, knobs FROM trials")"
[[ $(q "$db" "SELECT count(*) FROM trials") == 8 ]] || fail "not 2 trials per ab link"
[[ $(q "$db" "SELECT count(*) FROM sweep_verdicts WHERE final_rounds = 2") == 4 ]] ||
  fail "ab links lack their interleaved final round: $(q "$db" "SELECT * FROM sweep_verdicts")"
echo "ab: $(q "$db" "SELECT count(*) FROM cluster_links") links, verdicts $(q "$db" "SELECT verdict FROM sweep_verdicts" | sort | uniq -c | tr -s ' \n' ' ')"

# 1c. --workload: a capture in rank 0's store reaches every rank (the others never
# open it) and every link replays it; the links' sweeps name the stored capture.
db="$dir/capture.db"
"$artune" --db "$db" probe --exec --json -- "$artune" workload --steps 2 --duration 0 \
  --scale 0.05 --workers 2 >"$dir/probe.json" 2>"$dir/probe.err" ||
  fail "probe --exec failed: $(tail -3 "$dir/probe.err")"
capture=$(q "$db" "SELECT max(id) FROM captures")
run_on "$db" 90 sweep --mpi --workload "$capture" --objective workload-time --replay-messages 16 \
  --pairs ring --knob eager_threshold=1KiB,4KiB --duration 0.05 --warmup 0 --repeats 1 \
  --finalists 1 --final-rounds 1 >"$dir/capture.out" 2>"$dir/capture.err"
rc=$?
[[ $rc == 0 ]] || fail "--workload exited $rc: $(tail -5 "$dir/capture.err")"
[[ $(q "$db" "SELECT count(*) FROM cluster_links l JOIN sweeps s ON s.id = l.sweep_id
  WHERE l.status = 'ok' AND s.workload = 'capture:$capture'") == 4 ]] ||
  fail "not 4 ok links replaying capture $capture: $(q "$db" "SELECT l.status, l.error, s.workload FROM cluster_links l LEFT JOIN sweeps s ON s.id = l.sweep_id")"
echo "capture: $(q "$db" "SELECT count(*) FROM cluster_links") links replayed capture $capture"

# 2. Rank 2 cannot serve: its 3 links fail with the reason, the other 3 are ok.
db="$dir/fault.db"
FAULT_RANK=2 run_on "$db" 90 "${sweep[@]}" --pairs all >"$dir/fault.out" 2>"$dir/fault.err"
rc=$?
[[ $rc == 4 ]] || fail "a run with failed links exited $rc, not 4: $(tail -5 "$dir/fault.err")"
[[ $(q "$db" "SELECT count(*) FROM cluster_links WHERE status = 'ok'") == 3 ]] ||
  fail "not 3 ok links: $(q "$db" "SELECT client_rank, server_rank, status, error FROM cluster_links")"
[[ $(q "$db" "SELECT count(*) FROM cluster_links WHERE status = 'failed' AND (client_rank = 2 OR server_rank = 2) AND error LIKE '%could not start%'") == 3 ]] ||
  fail "rank 2's links are not failed with the reason: $(q "$db" "SELECT client_rank, server_rank, status, error FROM cluster_links")"
echo "fault: $(q "$db" "SELECT status, count(*) FROM cluster_links GROUP BY status" | tr '\n' ' ')"

# 3. Rank 3 killed once round 1 is stored: the job aborts, the links stay.
db="$dir/kill.db"
kill_sweep=(sweep --mpi --knob "eager_threshold=1KiB,4KiB" --duration 0.3 --warmup 0 --repeats 1
  --finalists 1 --final-rounds 1)
run_on "$db" 90 "${kill_sweep[@]}" --pairs all >"$dir/kill.out" 2>"$dir/kill.err" &
job=$!
kill_rank_once_linked "$db" 3
wait "$job"
rc=$?
[[ $rc != 0 ]] || fail "the job went on after a rank was killed"
# Links of round 1 are stored ok; a link whose peer was killed may be stored
# failed before the job ends (its peer failed): --resume measures it again.
stored=$(q "$db" "SELECT count(*) FROM cluster_links")
before=$(q "$db" "SELECT count(*) FROM cluster_links WHERE status = 'ok'")
[[ $before -ge 2 && $before -lt 6 ]] || fail "$before ok links kept after the kill, expected 2..5"
[[ -z $(q "$db" "SELECT finished_at FROM clusters WHERE finished_at <> ''") ]] ||
  fail "a killed cluster run is marked finished"
kept=$(q "$db" "SELECT client_rank, server_rank, sweep_id FROM cluster_links WHERE status = 'ok' ORDER BY 1, 2")
id=$(q "$db" "SELECT id FROM clusters")
run_on "$db" 90 sweep --mpi --resume "$id" --json >"$dir/resume.json" 2>"$dir/resume.err"
rc=$?
[[ $rc == 0 ]] || fail "--resume exited $rc: $(tail -5 "$dir/resume.err")"
[[ $(q "$db" "SELECT count(*) FROM cluster_links WHERE status = 'ok'") == 6 ]] ||
  fail "resume did not complete the schedule: $(q "$db" "SELECT * FROM cluster_links")"
grep -q "\"measured\": $((6 - before))," "$dir/resume.json" ||
  fail "resume measured other than the $((6 - before)) missing or failed links: $(cat "$dir/resume.json")"
grep -q "\"resumed\": $before," "$dir/resume.json" || fail "resume did not skip $before links"
# The links stored ok before the kill are the same rows, pointing at the same sweeps.
while read -r row; do
  [[ $(q "$db" "SELECT client_rank, server_rank, sweep_id FROM cluster_links ORDER BY 1, 2") == *"$row"* ]] ||
    fail "stored link $row changed on resume"
done <<<"$kept"
[[ -n $(q "$db" "SELECT finished_at FROM clusters WHERE finished_at <> ''") ]] || fail "resumed run not finished"
echo "kill + resume: $stored links stored ($before ok) at the kill, $((6 - before)) measured on resume"

if ((fails > 0)); then
  echo "$fails failure(s)"
  exit 1
fi
echo "cluster under mpirun: all checks passed"
