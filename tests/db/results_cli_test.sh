#!/usr/bin/env bash
# `artune results`, `artune results show`, `artune results --models / --model ID`
# and `artune db info` over a store written by db_fixture, and their errors for
# missing or foreign files.
# Usage: results_cli_test.sh ARTUNE_BINARY DB_FIXTURE_BINARY
set -u
artune=$1
fixture=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/sub/artune.db

# expect_output NAME WANT_RC WANT_TEXT -- COMMAND...: runs COMMAND, checks its exit
# code and that stdout+stderr contain WANT_TEXT.
expect_output() {
  local name=$1 want_rc=$2 want_text=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  [[ $rc -eq $want_rc ]] || fail "$name: exit code $rc, expected $want_rc; output: $out"
  [[ $out == *"$want_text"* ]] || fail "$name: output lacks \"$want_text\": $out"
}

# A missing store lists nothing yet and names the command that records a run (a
# first listing is no error); it is not created by reading commands.
expect_output "results on missing db" 0 "No bench runs stored in $db yet" -- "$artune" --db "$db" results
expect_output "db info on missing db" 1 "pass --db" -- "$artune" db info --db "$db"
expect_output "models on missing db" 0 \
  "No link models stored in $db yet: \`artune model measure\` records one." -- "$artune" --db "$db" results --models
[[ ! -e $dir/sub ]] || fail "a reading command created $dir/sub"
ARTUNE_DB=$dir/env.db expect_output "ARTUNE_DB is the default" 0 "stored in $dir/env.db yet" -- "$artune" results

# A file that is not SQLite.
head -c 4096 /dev/urandom >"$dir/random.bin"
expect_output "not a database" 3 "not a SQLite database" -- "$artune" --db "$dir/random.bin" results

"$fixture" "$db" 3 || fail "db_fixture could not write $db"

out=$("$artune" --db "$db" results) || fail "results failed: $out"
mapfile -t lines <<<"$out"
[[ ${#lines[@]} -eq 4 ]] || fail "results: expected a header and 3 rows, got: $out"
[[ ${lines[0]:-} == "ID "*"P50 µs"*"MB/s"*"VALIDATED" ]] || fail "results header: ${lines[0]:-}"
[[ ${lines[1]:-} == " 3  2024-01-01 00:00:03  artune"*"30.0 MiB"*"30.0"*"3000.0"*yes ]] ||
  fail "results newest row: ${lines[1]:-}"
[[ ${lines[3]:-} == " 1  2024-01-01 00:00:01  artune"* ]] || fail "results oldest row: ${lines[3]:-}"

out=$("$artune" results --limit 2 --db "$db")
[[ $(grep -c '^ [0-9]' <<<"$out") -eq 2 ]] || fail "--limit 2 shows other than 2 rows: $out"
[[ $out == *"(2 newest of 3 runs"* ]] || fail "--limit 2 lacks the count footer: $out"
expect_output "negative limit" 2 "is negative" -- "$artune" --db "$db" results --limit -1

out=$("$artune" --db "$db" results --json)
[[ $out == *'"total_runs": 3'* ]] || fail "results --json lacks total_runs: $out"
[[ $(grep -c '"chunk_size"' <<<"$out") -eq 3 ]] || fail "results --json lacks the configs: $out"

out=$("$artune" --db "$db" results show 2)
[[ $out == *"Bench run 2"* && $out == *"transport   grpc"* && $out == *"20.0 MiB (20971520 bytes)"* ]] ||
  fail "results show 2: $out"
[[ $out == *"chunk_size       2MiB"* && $out == *"seed     2"* ]] || fail "results show 2 config: $out"
for order in "results --json show 1" "results show 1 --json"; do
  # shellcheck disable=SC2086  # word splitting of $order is the point
  out=$("$artune" --db "$db" $order)
  [[ $out == *'"id": 1,'* && $out == *'"p50": 10.0'* && $out == *'"eager_threshold": "16KiB"'* ]] ||
    fail "$order: $out"
done
expect_output "unknown id" 1 "no bench run with id 42" -- "$artune" --db "$db" results show 42

# Link models: none in this store, two in another.
expect_output "no models" 0 "No link models stored in $db yet: \`artune model measure\` records one." \
  -- "$artune" --db "$db" results --models
out=$("$artune" --db "$db" results --models --json)
[[ $out == *'"total_link_models": 0'* && $out == *'"link_models": []'* ]] || fail "results --models --json, none: $out"
models_db=$dir/models.db
"$fixture" "$models_db" 0 2 || fail "db_fixture could not write $models_db"
out=$("$artune" --db "$models_db" results --models)
mapfile -t lines <<<"$out"
[[ ${#lines[@]} -eq 3 ]] || fail "results --models: expected a header and 2 rows, got: $out"
[[ ${lines[0]:-} == "ID  CREATED"*"FABRIC  PEER"*"POINTS  ROUNDS  SECONDS" ]] || fail "results --models header: ${lines[0]:-}"
[[ ${lines[1]:-} =~ ^\ 2\ +2024-01-02\ 00:00:02\ +tcp\ +loopback\ +6\ +1\ +2\.5$ ]] ||
  fail "results --models newest row: ${lines[1]:-}"
out=$("$artune" --db "$models_db" results --models --limit 1)
[[ $out == *"(1 newest of 2 link_models; --limit 0 shows all, \`artune results --model ID\` one in full)"* ]] ||
  fail "results --models --limit 1 footer: $out"
out=$("$artune" --db "$models_db" results --models --json)
[[ $out == *'"total_link_models": 2'* && $out == *'"points": 6'* ]] || fail "results --models --json: $out"
out=$("$artune" --db "$models_db" results --model 2)
[[ $out == *"Link model 2: tcp to loopback from fixture-host, 1 interleaved rounds in 2.5 s"* ]] ||
  fail "results --model 2 heading: $out"
# The fixture's model has adaptive points only: the display says busy was not measured.
[[ $out == *"Polling modes measured: adaptive (not busy: predict cannot cost busy-polling configs"* ]] ||
  fail "results --model 2 polling modes: $out"
[[ $out == *"eager, adaptive (us per call"* && $out =~ 1KiB\ +20\.0\ \[10\ %\]\ +40\.0\ \[10\ %\] ]] ||
  fail "results --model 2 eager table: $out"
[[ $out == *"chunked-rendezvous 512KiB depth 4, adaptive"* && $out =~ 1MiB\ +1000\ \[50\ %\]\ +1800\ \[50\ %\] ]] ||
  fail "results --model 2 chunked table: $out"
[[ $out == *"artune predict --workload ID --link-model 2"* && $out == *"artune report --model 2"* ]] ||
  fail "results --model 2 lacks the predict and report hints: $out"
out=$("$artune" --db "$models_db" results --model 1 --json)
[[ $out == *'"id": 1,'* && $out == *'"protocol": "chunked-rendezvous"'* && $out == *'"median_s": 0.0005,'* ]] ||
  fail "results --model 1 --json: $out"
expect_output "unknown model" 1 "no link model with id 7" -- "$artune" --db "$models_db" results --model 7

out=$("$artune" --db "$db" db info)
# Row counts are padded to the longest table name: match any run of spaces.
[[ $out == *"schema version  12"* && $out =~ bench_runs\ +3 ]] || fail "db info: $out"
[[ $out =~ bench_run_config\ +6 && $out =~ bench_run_parameters\ +6 ]] || fail "db info: $out"
[[ $out =~ sweep_verdicts\ +0 && $out =~ sweep_finalists\ +0 ]] || fail "db info lacks the v4/v6 tables: $out"
[[ $out =~ clusters\ +0 && $out =~ cluster_links\ +0 ]] || fail "db info lacks the v7 tables: $out"
[[ $out =~ link_models\ +0 && $out =~ predictions\ +0 ]] || fail "db info lacks the v9 tables: $out"
out=$("$artune" --db "$db" db info --json)
[[ $out == *'"schema_version": 12'* && $out == *'"bench_runs": 3'* && $out == *"\"path\": \"$db\""* ]] ||
  fail "db info --json: $out"

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "results and db info: all checks passed"
