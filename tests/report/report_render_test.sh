#!/usr/bin/env bash
# Renders `artune report --capture`, `--sweep` and `--cluster` with headless chromium
# (render_check.py): each screenshot has the window's size, is not blank and shows
# the chart colours (the Small, Medium and Large histogram bars; the heatmap's best
# and worst cells and the best-cell mark); the DOM holds the method names and the
# winner. Skips (77) without chromium.
# Usage: report_render_test.sh ARTUNE REPORT_FIXTURE RENDER_CHECK
set -u
artune=$1
fixture=$2
render_check=$3
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || { echo "chromium missing (scripts/setup installs it): render check skipped"; exit 77; }
command -v python3 >/dev/null || { echo "python3 missing: render check skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/artune.db
"$fixture" "$db" capture >/dev/null && "$fixture" "$db" sweep >/dev/null ||
  { echo "FAIL: fixture"; exit 1; }
"$artune" --db "$db" report --capture 1 --output "$dir/capture.html" >/dev/null ||
  { echo "FAIL: artune report --capture 1"; exit 1; }
"$artune" --db "$db" report --sweep 1 --output "$dir/sweep.html" >/dev/null ||
  { echo "FAIL: artune report --sweep 1"; exit 1; }
cluster=$("$fixture" "$db" cluster) || { echo "FAIL: fixture cluster"; exit 1; }
"$artune" --db "$db" report --cluster "$cluster" --output "$dir/cluster.html" >/dev/null ||
  { echo "FAIL: artune report --cluster $cluster"; exit 1; }
failures=0
# Small #4e79a7, Medium #f28e2b, Large #e15759 (cli/report/include/artune/report/svg.h).
python3 "$render_check" "$chromium" "$dir/capture.html" 1200x1800 \
  --text '/tensorflow.WorkerService/RecvTensor (response)' \
  --text '/evil.Service/&lt;script&gt;alert' \
  --text 'grpc_frame_truncated' \
  --colour '#4e79a7' --colour '#f28e2b' --colour '#e15759' || failures=$((failures + 1))
# The heatmap: the chosen (and best) cell in the ramp's darkest colour #0c2c84 with the red
# outline #d62728, the worst in its lightest #fff7bc.
python3 "$render_check" "$chromium" "$dir/sweep.html" 1200x1000 \
  --text 'Chosen: chunk_size=128KiB, eager_threshold=4KiB' \
  --text 'peer closed the connection &lt;reset&gt;' \
  --colour '#0c2c84' --colour '#d62728' --colour '#fff7bc' || failures=$((failures + 1))
# The cluster's host heatmap: a -> b (5) in the darkest colour, b -> d (16) in the
# lightest; the outlier named in words.
python3 "$render_check" "$chromium" "$dir/cluster.html" 1200x1400 \
  --text 'Winner: eager_threshold=4KiB' \
  --text 'Look at the link b ↔ d: 10.8 MAD slower than the median under the winner' \
  --colour '#0c2c84' --colour '#fff7bc' || failures=$((failures + 1))
((failures == 0)) || { echo "$failures render check(s) failed"; exit 1; }
echo "report render: all checks passed"
