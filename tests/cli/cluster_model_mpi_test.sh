#!/usr/bin/env bash
# artune sweep --mpi --strategy model on one machine as on a cluster: 4 ranks under
# mpirun, each in its own network namespace and hostname (cluster_netns_lib.sh),
# --pairs all (6 links in 3 rounds), every link measuring its link model in a short
# budget instead of a sweep. The path between ranks 2 and 3 is throttled (tc htb
# on their veths, for packets to each other only), so one link of six is slow.
# Checks: every link is ok with its stored model and no sweep; each link's predicted
# best is what `artune predict --link-model ID` says of its model; the cluster's
# best is the config with the least total of those predictions; the slow link, and
# only it, is the outlier; `artune results --cluster ID` and `apply config
# --cluster ID` read the run. Then a model run killed midway (rank 3 killed once
# round 1 is stored) and `--resume ID`: the links stored with a model keep it and
# are not measured again, the missing or failed ones are, and the run finishes.
# Usage: cluster_model_mpi_test.sh ARTUNE. Exit 77 (skip) without root, mpirun, an
# artune built with MPI, jq, or network namespaces.
set -uo pipefail
artune=$(realpath "$1")

# shellcheck source=tests/cli/cluster_netns_lib.sh
source "$(dirname "$0")/cluster_netns_lib.sh"
tag="acm$$"
cluster_test_begin "$artune" "$tag" jq
q() { sqlite3 "$db" "$1"; }

# The path between rank 2 and rank 3 throttled to 400 Mbit/s both ways: the bytes
# of that link are slow, its calls are not.
slow=1
if ! netns_throttle "$tag" 2 3 400mbit; then
  slow=0
  echo "no tc htb and u32 here: the outlier check is skipped"
fi

knobs=(--knob eager_threshold=1KiB,16KiB --knob chunk_size=64KiB,1MiB)
db="$dir/model.db"
start=$(date +%s.%N)
run_ranks 150 "$artune" --db "$db" sweep --mpi --strategy model --model-budget 3 "${knobs[@]}" \
  --pairs all --json >"$dir/run.json" 2>"$dir/run.err"
rc=$?
echo "model run: $(echo "$(date +%s.%N) - $start" | bc) s, exit $rc"
[[ $rc == 0 ]] || fail "the model run exited $rc: $(tail -5 "$dir/run.err")"
[[ $(q "SELECT measurement FROM clusters") == model ]] || fail "the cluster run is not a model run"
[[ $(q "SELECT count(*) FROM cluster_links WHERE status = 'ok' AND model_id IS NOT NULL
  AND sweep_id IS NULL") == 6 ]] ||
  fail "not 6 ok links each with a model: $(q "SELECT * FROM cluster_links")"
[[ $(q "SELECT count(DISTINCT model_id) FROM cluster_links") == 6 ]] || fail "links share a model"
[[ $(q "SELECT count(*) FROM sweeps") == 0 ]] || fail "a model run stored sweeps"
# Each model measured the link's peer from the link's client host.
bad=$(q "SELECT l.client_rank FROM cluster_links l JOIN link_models m ON m.id = l.model_id
  WHERE m.host <> l.client_host OR m.peer NOT LIKE '10.199.0.' || (l.server_rank + 1) || ':%'")
[[ -z $bad ]] || fail "models of the wrong hosts or peers: $(q "SELECT l.*, m.host, m.peer FROM cluster_links l JOIN link_models m ON m.id = l.model_id")"
[[ -n $(q "SELECT finished_at FROM clusters WHERE finished_at <> ''") ]] || fail "cluster not finished"
echo "links: $(q "SELECT group_concat(client_rank || '-' || server_rank || ':' || model_id, ' ') FROM cluster_links")"
echo "model seconds per link: $(jq -c '[.links[].seconds]' "$dir/run.json")"

# Every link's predicted best is its model's, re-predicted by `artune predict`; the
# cluster's best is the least sum of those predictions.
key='to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(";")'
: >"$dir/configs"
for i in $(seq 0 5); do
  model=$(jq -r ".links[$i].model_id" "$dir/run.json")
  best=$(jq -r ".links[$i].best" "$dir/run.json")
  "$artune" --db "$db" predict --link-model "$model" "${knobs[@]}" --json >"$dir/predict$i.json" \
    2>"$dir/predict$i.err" || fail "predict --link-model $model failed: $(cat "$dir/predict$i.err")"
  again=$(jq -r ".best.knobs | $key" "$dir/predict$i.json")
  [[ $again == "$best" && $best != null ]] ||
    fail "link $i (model $model): the run predicted $best, predict says $again"
  jq -r ".configs[] | \"\(.knobs | $key) \(.predicted_s)\"" "$dir/predict$i.json" >>"$dir/configs"
done
# (Configs the models cost alike tie: the best's sum must equal the least one.)
cluster_best=$(jq -r '.cluster_best.knobs' "$dir/run.json")
awk -v best="$cluster_best" '{t[$1] += $2} END {
    least = -1; for (k in t) if (least < 0 || t[k] < least) { least = t[k]; at = k }
    if (!(best in t) || t[best] > least * (1 + 1e-9)) {
      printf "the cluster best %s sums to %s, %s sums to %s\n", best, t[best], at, least; exit 1 } }' \
  "$dir/configs" >"$dir/sums" || fail "the cluster's best is not the least sum of the links' predictions: $(cat "$dir/sums")"
echo "cluster best: $cluster_best; per link: $(jq -c '[.links[].best]' "$dir/run.json")"

if ((slow)); then
  # The throttled link must be flagged, and be the most extreme per-byte outlier.
  # A healthy link may be flagged beside it: 4 ranks on 2 cores shared with other
  # tests scatter a healthy link's per-byte cost up to about 5x the median (4.9x
  # seen beside cli_cluster_mpi), past the rule's 4x; the throttled one measures
  # 37-48x. The rule's thresholds are pinned by the ModelOutliers unit tests.
  outliers=$(jq -r '[.outliers[] | "\(.client_host)-\(.server_host) \(.term) \(.ratio)x"] | join(", ")' "$dir/run.json")
  [[ $(jq -r '[.outliers[] | select(.term == "per-byte")] | max_by(.ratio) // {} |
      "\(.client_host)\(.server_host)"' "$dir/run.json") =~ ^(node2node3|node3node2)$ ]] ||
    fail "the throttled link node2-node3 is not the largest per-byte outlier: $outliers; $(jq -c '[.links[] | [.client_host, .server_host, .per_byte_s]]' "$dir/run.json")"
  echo "outliers: $outliers"
fi

# `artune results --cluster ID` shows the run; --json agrees with the run's.
id=$(q "SELECT id FROM clusters")
"$artune" --db "$db" results --cluster "$id" >"$dir/results.txt" 2>&1 ||
  fail "results --cluster failed: $(cat "$dir/results.txt")"
grep -q "PREDICTED BEST" "$dir/results.txt" && grep -q "^Cluster  " "$dir/results.txt" ||
  fail "results --cluster does not show the models' predictions: $(cat "$dir/results.txt")"
if ((slow)); then
  grep -q "look at the link node[23] ↔ node[23]: per-byte" "$dir/results.txt" ||
    fail "results --cluster does not name the outlier: $(cat "$dir/results.txt")"
fi
"$artune" --db "$db" results --cluster "$id" --json >"$dir/results.json" ||
  fail "results --cluster --json failed"
[[ $(jq -r '.cluster_best.knobs' "$dir/results.json") == "$cluster_best" ]] ||
  fail "results --cluster --json's best differs from the run's"

# `artune apply config --cluster ID` writes the cluster's predicted best.
"$artune" --db "$db" apply config --cluster "$id" --output "$dir/cluster.toml" \
  >"$dir/apply.out" 2>&1 || fail "apply config --cluster failed: $(cat "$dir/apply.out")"
for setting in ${cluster_best//;/ }; do
  name=${setting%%=*} value=${setting#*=}
  grep -q "^$name = \"$value\"" "$dir/cluster.toml" ||
    fail "apply config --cluster did not write $setting: $(cat "$dir/cluster.toml")"
done

# A model run killed midway, then resumed: the links stored with a model are kept
# (same rows, same models) and only the missing or failed ones are measured.
db="$dir/kill.db"
run_ranks 150 "$artune" --db "$db" sweep --mpi --strategy model --model-budget 3 "${knobs[@]}" \
  --pairs all >"$dir/kill.out" 2>"$dir/kill.err" &
job=$!
kill_rank_once_linked "$db" 3
wait "$job"
rc=$?
[[ $rc != 0 ]] || fail "the model run went on after a rank was killed"
before=$(q "SELECT count(*) FROM cluster_links WHERE status = 'ok' AND model_id IS NOT NULL")
[[ $before -ge 2 && $before -lt 6 ]] || fail "$before ok links with a model kept after the kill, expected 2..5"
[[ -z $(q "SELECT finished_at FROM clusters WHERE finished_at <> ''") ]] ||
  fail "a killed model run is marked finished"
kept=$(q "SELECT client_rank, server_rank, model_id FROM cluster_links WHERE status = 'ok' ORDER BY 1, 2")
id=$(q "SELECT id FROM clusters")
run_ranks 150 "$artune" --db "$db" sweep --mpi --resume "$id" --json >"$dir/resume.json" \
  2>"$dir/resume.err"
rc=$?
[[ $rc == 0 ]] || fail "--resume of the model run exited $rc: $(tail -5 "$dir/resume.err")"
[[ $(q "SELECT count(*) FROM cluster_links WHERE status = 'ok' AND model_id IS NOT NULL") == 6 ]] ||
  fail "resume did not give every link a model: $(q "SELECT * FROM cluster_links")"
[[ $(jq '.measured' "$dir/resume.json") == $((6 - before)) &&
  $(jq '.resumed' "$dir/resume.json") == "$before" ]] ||
  fail "resume measured $(jq '.measured' "$dir/resume.json") and kept $(jq '.resumed' "$dir/resume.json"), expected $((6 - before)) and $before"
while read -r row; do
  [[ $(q "SELECT client_rank, server_rank, model_id FROM cluster_links ORDER BY 1, 2") == *"$row"* ]] ||
    fail "stored link $row lost its model on resume"
done <<<"$kept"
# Each kept link's model was not measured again: one model per link in the store
# (a link that failed at the kill has none to keep).
[[ $(q "SELECT count(*) FROM link_models") == 6 ]] ||
  fail "models measured again on resume: $(q "SELECT count(*) FROM link_models") models for 6 links"
[[ $(jq -r '[.links[] | select(.seconds == null)] | length' "$dir/resume.json") == "$before" ]] ||
  fail "the resumed run's links say other than $before stored: $(jq -c '[.links[].seconds]' "$dir/resume.json")"
[[ $(jq -r '.cluster_best.knobs' "$dir/resume.json") != null ]] || fail "the resumed run predicts nothing"
[[ -n $(q "SELECT finished_at FROM clusters WHERE finished_at <> ''") ]] || fail "resumed model run not finished"
echo "kill + resume: $before links with a model kept, $((6 - before)) measured on resume"

if ((fails > 0)); then
  echo "$fails failure(s)"
  exit 1
fi
echo "model cluster run under mpirun: all checks passed"
