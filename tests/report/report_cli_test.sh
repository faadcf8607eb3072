#!/usr/bin/env bash
# `artune report --capture ID` writes one self-contained HTML file: the tables, the
# histograms, the escaped method names, no scripts or remote references; the
# default file name; the errors for a missing id, a missing store and no id at all.
# `artune report --sweep ID`, `results --sweep(s)` and `apply config --sweep` show
# the sweep's stored verdict and re-measured default. `artune report --model ID`
# draws a stored link model.
# Usage: report_cli_test.sh ARTUNE REPORT_FIXTURE
set -u
artune=$1
fixture=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/artune.db
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$fixture" "$db" capture >/dev/null || { echo "FAIL: fixture capture"; exit 1; }
"$fixture" "$db" sweep >/dev/null || { echo "FAIL: fixture sweep"; exit 1; }

out=$("$artune" --db "$db" report --capture 1 --output "$dir/capture.html" --json 2>&1) ||
  fail "report --capture --json: $out"
[[ $out == *'"kind": "capture"'* && $out == *'"id": 1'* && $out == *"\"output\": \"$dir/capture.html\""* ]] ||
  fail "report --json output: $out"
html=$(cat "$dir/capture.html" 2>/dev/null)
[[ $html == '<!DOCTYPE html>'* ]] || fail "not an HTML document"
[[ $html == *'/tensorflow.WorkerService/RecvTensor (response)'* ]] || fail "method section missing"
[[ $html == *'/evil.Service/&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;'* ]] ||
  fail "the untrusted method name is not escaped"
[[ $html != *'<script'* ]] || fail "the report contains a script element"
[[ $html == *'aria-label="iovec sizes"'* && $html == *'aria-label="message sizes"'* ]] ||
  fail "histograms missing"
[[ $html == *'<td>grpc_frame_truncated</td>'* ]] || fail "errors table missing"
[[ $html == *'<td>skew</td>'* ]] || fail "scheme missing"
# Self-contained: the only URL is the SVG namespace name, which is never fetched.
refs=$(grep -oE '(src|href)=|url\(["'"'"']?[a-z]+:|@import|https?://[^"]*' "$dir/capture.html" |
  grep -v '^http://www.w3.org/2000/svg$' | sort -u)
[[ -z $refs ]] || fail "external references: $refs"

out=$("$artune" --db "$db" report --sweep 1 --output "$dir/sweep.html" --json 2>&1) ||
  fail "report --sweep --json: $out"
[[ $out == *'"kind": "sweep"'* ]] || fail "report --sweep --json output: $out"
html=$(cat "$dir/sweep.html" 2>/dev/null)
[[ $html == *'Chosen: chunk_size=128KiB, eager_threshold=4KiB, latency-p50 41.5 against 55 with the defaults (-24.5%).'* ]] ||
  fail "chosen config vs default missing"
[[ $html == *'eager_threshold 4KiB, chunk_size 128KiB: latency-p50 41.5 (95% CI'*'chosen</title>'* ]] ||
  fail "chosen heatmap cell missing"
[[ $html == *'eager_threshold 64KiB, chunk_size 2MiB: invalid: payload checksum mismatch on reply 12</title>'* ]] ||
  fail "invalid cell tooltip missing"
[[ $html == *'peer closed the connection &lt;reset&gt;'* && $html != *'<reset>'* ]] ||
  fail "trial error not escaped"
[[ $html == *'Verdict: Within noise: the chosen config does not beat the defaults'* ]] ||
  fail "stored verdict missing from the report"
[[ $html == *'the defaults gave latency-p50 42 (95% CI 41 .. 43).'* && $html == *'<td>default, again</td>'* ]] ||
  fail "re-measured default missing from the report"

# The other readers of the stored sweep: results (text, JSON, list) and apply.
out=$("$artune" --db "$db" results --sweep 1 2>&1) || fail "results --sweep 1: $out"
[[ $out == *'Again    chunk_size=512KiB;eager_threshold=16KiB  42.00 [41.00, 43.00]'* ]] ||
  fail "results --sweep lacks the re-measured default: $out"
[[ $out == *'Verdict  within noise: the chosen config does not beat the default'* ]] ||
  fail "results --sweep lacks the verdict: $out"
out=$("$artune" --db "$db" results --sweep 1 --json 2>&1) || fail "results --sweep 1 --json: $out"
flat=$(tr -d ' \n' <<<"$out")
[[ $flat == *'"best_beats_default":false,"verdict":"within_noise"'* ]] ||
  fail "results --sweep --json verdict: ${flat: -600}"
[[ $flat == *'"default_remeasured":{"knobs":{"chunk_size":"512KiB","eager_threshold":"16KiB"},"objective":42.0,"ci_low":41.0,"ci_high":43.0,"validated":true,"status":"ok","samples":5,"id":null,"measured_at":"2024-05-01T10:04:58.000Z"}'* ]] ||
  fail "results --sweep --json default_remeasured: ${flat: -600}"
out=$("$artune" --db "$db" results --sweeps 2>&1) || fail "results --sweeps: $out"
[[ $out == *VERDICT* && $out == *within_noise* ]] || fail "results --sweeps lacks the verdict: $out"
# A third axis: the heatmap shows eager x chunk at the chosen config's polling, and says so.
"$fixture" "$db" polling-sweep >/dev/null || fail "fixture polling-sweep"
out=$("$artune" --db "$db" results --sweep 2 2>&1) || fail "results --sweep 2: $out"
[[ $out == *"by eager_threshold (rows) x chunk_size (columns) at the chosen config's polling=busy;"* ]] ||
  fail "results --sweep 2: the heatmap does not say which polling it shows: $out"
out=$("$artune" --db "$db" results --sweep 2 --json 2>&1) || fail "results --sweep 2 --json: $out"
flat=$(tr -d ' \n' <<<"$out")
[[ $flat == *'"held":{"polling":"busy"}'* ]] || fail "results --sweep 2 --json heatmap.held: ${flat: -400}"
out=$("$artune" --db "$db" results --sweep 1 --json 2>&1)
flat=$(tr -d ' \n' <<<"$out")
[[ $flat == *'"held":{}'* ]] || fail "results --sweep 1 --json: a two-axis heatmap holds nothing: ${flat: -400}"
# apply still applies a within-noise winner, but says so first (and in --json).
apply_env=(env -u ARTUNE_CONFIG -u ARTUNE_EAGER_THRESHOLD -u ARTUNE_CHUNK_SIZE
  "XDG_CONFIG_HOME=$dir/xdg")
out=$("${apply_env[@]}" "$artune" --db "$db" apply config --sweep 1 --dry-run 2>&1) ||
  fail "apply config --sweep 1 --dry-run: $out"
[[ $out == *"warning: sweep 1's winner (chunk_size=128KiB eager_threshold=4KiB) does not beat the default config beyond noise"* ]] ||
  fail "apply does not warn about a within-noise winner: $out"
out=$("${apply_env[@]}" "$artune" --db "$db" apply config --sweep 1 --output "$dir/tuned.toml" --json 2>/dev/null) ||
  fail "apply config --sweep 1 --json: $out"
[[ $out == *'"verdict": "within_noise"'* && $out == *'does not beat the default config beyond noise'* ]] ||
  fail "apply --json lacks the verdict: $out"
grep -qx 'eager_threshold = "4KiB"' "$dir/tuned.toml" || fail "apply did not write the winner"

# A link model: a chart per polling mode and calls in flight, the host escaped.
model_id=$("$fixture" "$db" model) || fail "fixture model"
out=$("$artune" --db "$db" report --model "$model_id" --output "$dir/model.html" --json 2>&1) ||
  fail "report --model --json: $out"
[[ $out == *'"kind": "model"'* && $out == *"\"id\": $model_id"* ]] || fail "report --model --json output: $out"
html=$(cat "$dir/model.html" 2>/dev/null)
[[ $html == *'aria-label="adaptive polling, 1 call in flight"'* && $html == *'aria-label="adaptive polling, 4 calls in flight"'* ]] ||
  fail "report --model lacks a chart per calls in flight"
[[ $(grep -o '<polyline ' "$dir/model.html" | wc -l) -eq 4 ]] || fail "report --model: expected 4 lines (2 groups x 2 charts)"
[[ $html == *'<title>chunked-rendezvous 512KiB depth 4, 1MiB: 500 µs per call (samples 450 µs .. 600 µs, 2 kept)</title>'* ]] ||
  fail "report --model lacks a point's tooltip"
[[ $html == *'&lt;lab&gt;'* && $html != *'<lab>'* && $html != *'<script'* ]] || fail "report --model: host not escaped"
(cd "$dir" && "$artune" --db "$db" report --model "$model_id" >/dev/null 2>&1) || fail "report --model default output"
[[ -s $dir/report-model-$model_id.html ]] || fail "report-model-$model_id.html not written"
out=$("$artune" --db "$db" report --model 99 2>&1)
code=$?
[[ $code -eq 1 && $out == *'no link model with id 99'* ]] || fail "unknown model: exit $code: $out"
out=$("$artune" --db "$db" report --model 1 --sweep 1 2>&1)
code=$?
[[ $code -eq 2 ]] || fail "--model with --sweep: exit $code: $out"

out=$("$artune" --db "$db" report --capture 1 --sweep 1 2>&1)
code=$?
[[ $code -eq 2 ]] || fail "--capture with --sweep: exit $code: $out"
out=$("$artune" --db "$db" report --sweep 5 2>&1)
code=$?
[[ $code -eq 1 && $out == *'artune:'* ]] || fail "unknown sweep: exit $code: $out"

(cd "$dir" && "$artune" --db "$db" report --capture 1 >"$dir/out.txt" 2>&1) || fail "default output: $(cat "$dir/out.txt")"
[[ -s $dir/report-capture-1.html ]] || fail "report-capture-1.html not written"
grep -q 'Wrote report-capture-1.html' "$dir/out.txt" || fail "human output: $(cat "$dir/out.txt")"

out=$("$artune" --db "$db" report --capture 9 --output "$dir/nine.html" 2>&1)
code=$?
[[ $code -eq 1 && $out == *'artune:'* ]] || fail "unknown capture: exit $code: $out"
[[ ! -e $dir/nine.html ]] || fail "a report was written for an unknown capture"
out=$("$artune" --db "$db" report 2>&1)
code=$?
[[ $code -eq 2 && $out == *'--capture'* ]] || fail "no id: exit $code: $out"
out=$("$artune" --db "$dir/missing.db" report --capture 1 2>&1)
code=$?
[[ $code -ne 0 && ! -e $dir/missing.db ]] || fail "missing store: exit $code: $out"
out=$("$artune" --db "$db" report --capture 1 --output "$dir/no/such/dir/r.html" 2>&1)
code=$?
[[ $code -eq 1 && $out == *"$dir/no/such/dir/r.html"* ]] || fail "unwritable output: exit $code: $out"

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "report CLI: all checks passed"
