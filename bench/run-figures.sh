#!/usr/bin/env bash
# Reproduces the figures of bench/README.md: artune vs stock gRPC on loopback, the
# three targets of the Performance section.
#
#   bench/run-figures.sh [ARTUNE_BINARY] [DURATION_S] [REPEATS]
#
# Each comparison is `artune bench --transport both ... --json` (artune, then gRPC,
# back to back), repeated REPEATS times so that a noisy machine shows as spread
# rather than as one lucky or unlucky figure; the median ratio decides the target.
# Runs go to a throw-away database so a user's store is not filled with them.
set -euo pipefail

artune=${1:-build/cli/artune}
duration=${2:-10}
repeats=${3:-3}
warmup=2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel:  $(uname -r)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at start"
echo "grpc:    $(dpkg-query -W -f='${Version}' libgrpc++-dev 2>/dev/null || echo unknown)"
echo

declare -A args=(
  [latency]="--benchmark latency --scheme uniform --classes S"
  [bandwidth]="--benchmark bandwidth --scheme skew"
  [ps]="--benchmark ps --scheme uniform --classes S --servers 2 --clients 3"
)
for name in latency bandwidth ps; do
  echo "\$ artune bench --transport both --warmup $warmup --duration $duration ${args[$name]} --json"
  for ((r = 1; r <= repeats; r++)); do
    # shellcheck disable=SC2086
    "$artune" --db "$work/figures.db" bench --transport both --warmup "$warmup" \
      --duration "$duration" ${args[$name]} --json >"$work/$name.$r.json"
  done
done
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at end"
echo

python3 - "$work" "$repeats" <<'PY'
import json, statistics, sys
work, repeats = sys.argv[1], int(sys.argv[2])
metric = {"latency": ("latency_p50", 2.0, "gRPC p50 / artune p50"),
          "bandwidth": ("bandwidth", 1.5, "artune MB/s / gRPC MB/s"),
          "ps": ("rpcs_per_s", 2.0, "artune RPC/s / gRPC RPC/s")}
print(f"{'benchmark':10}{'rep':>4}{'transport':>10}{'calls':>9}{'p50 us':>10}{'p99 us':>10}"
      f"{'mean us':>10}{'stddev':>10}{'MB/s':>9}{'RPC/s':>10}  ok")
summary = []
for name in ("latency", "bandwidth", "ps"):
    ratios = []
    for r in range(1, repeats + 1):
        j = json.load(open(f"{work}/{name}.{r}.json"))
        for run in j["runs"]:
            l = run["latency_us"]
            print(f"{name:10}{r:4}{run['transport']:>10}{run['rpcs']:9}{l['p50']:10.1f}"
                  f"{l['p99']:10.1f}{l['mean']:10.1f}{l['stddev']:10.1f}"
                  f"{run['bandwidth_mbps']:9.1f}{run['rpcs_per_s']:10.1f}  {run['validated']}")
        ratios.append(j["artune_vs_grpc"][metric[name][0]])
    summary.append((name, ratios))
print()
print(f"{'target':11}{'ratios (each repeat)':>28}{'median':>8}{'needed':>8}  result")
for name, ratios in summary:
    key, need, how = metric[name]
    med = statistics.median(ratios)
    each = " ".join(f"{x:.2f}" for x in ratios)
    print(f"{name:11}{each:>28}{med:8.2f}{need:8.1f}  {'met' if med >= need else 'MISSED'} ({how})")
PY
