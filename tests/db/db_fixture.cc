// Writes known bench runs into a store, for the CLI test (results_cli_test.sh).
// Usage: db_fixture PATH COUNT
// Run i (1-based) starts at 2024-01-01T00:00:0i.000Z, uses transport "artune" for
// odd i and "grpc" for even i, a payload of i * 10 MiB, p50 of 10*i us, and config
// {eager_threshold: 16KiB, chunk_size: <i>MiB}.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "artune/db/store.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: db_fixture PATH COUNT\n");
    return 2;
  }
  auto store = artune::db::Store::Open(argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "db_fixture: %s\n", store.status().ToString().c_str());
    return 1;
  }
  const int count = std::atoi(argv[2]);
  for (int i = 1; i <= count; ++i) {
    artune::db::BenchRun run;
    run.started_at = "2024-01-01T00:00:0" + std::to_string(i % 10) + ".000Z";
    run.host = "fixture-host";
    run.peer = "loopback";
    run.transport = i % 2 == 1 ? "artune" : "grpc";
    run.benchmark = "bandwidth";
    run.scheme = "skew";
    run.fabric = i % 2 == 1 ? "tcp" : "";
    run.config = {{"eager_threshold", "16KiB"}, {"chunk_size", std::to_string(i) + "MiB"}};
    run.parameters = {{"buffers", "10"}, {"seed", std::to_string(i)}};
    run.payload_bytes = static_cast<uint64_t>(i) * 10 * 1024 * 1024;
    run.duration_s = 1;
    run.rpcs = 100;
    run.latency = {10.0 * i, 20.0 * i, 12.0 * i, 1.0};
    run.bandwidth_mbps = 1000.0 * i;
    run.rpcs_per_s = 100;
    run.validated = true;
    auto id = (*store)->InsertBenchRun(run);
    if (!id.ok()) {
      std::fprintf(stderr, "db_fixture: %s\n", id.status().ToString().c_str());
      return 1;
    }
  }
  return 0;
}
