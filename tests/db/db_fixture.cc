// Writes known bench runs into a store, for the CLI test (results_cli_test.sh).
// Usage: db_fixture PATH COUNT [MODELS]
// Run i (1-based) starts at 2024-01-01T00:00:0i.000Z, uses transport "artune" for
// odd i and "grpc" for even i, a payload of i * 10 MiB, p50 of 10*i us, and config
// {eager_threshold: 16KiB, chunk_size: <i>MiB}.
// MODELS (default 0) link models follow: model m (1-based) of fabric tcp to
// "loopback" from fixture-host, created 2024-01-02T00:00:0m.000Z, 1 round in 2.5 s,
// with eager points (adaptive polling) at 1 KiB and 64 KiB, 1 and 4 in flight, of
// 10*m, 20*m, 30*m, 40*m us, and chunked-rendezvous points (512KiB chunks, depth
// 4) at 1 MiB of 500*m and 900*m us.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>

#include "artune/db/store.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: db_fixture PATH COUNT [MODELS]\n");
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
  const int models = argc == 4 ? std::atoi(argv[3]) : 0;
  for (int m = 1; m <= models; ++m) {
    artune::db::LinkModelRecord model;
    model.created_at = "2024-01-02T00:00:0" + std::to_string(m % 10) + ".000Z";
    model.host = "fixture-host";
    model.peer = "loopback";
    model.fabric = "tcp";
    model.rounds = 1;
    model.duration_s = 2.5;
    const double us = 1e-6 * m;
    for (const auto& [size, inflight, cost] : {std::tuple{1024ull, 1u, 10.0},
                                               {1024ull, 4u, 20.0},
                                               {65536ull, 1u, 30.0},
                                               {65536ull, 4u, 40.0}}) {
      model.points.push_back(
          {"eager", "adaptive", 0, 0, size, inflight, cost * us, cost * us, 1.1 * cost * us, 2});
    }
    for (const auto& [inflight, cost] : {std::pair{1u, 500.0}, {4u, 900.0}}) {
      model.points.push_back({"chunked-rendezvous", "adaptive", 512 * 1024, 4, 1024 * 1024,
                              inflight, cost * us, cost * us, 1.5 * cost * us, 2});
    }
    auto id = (*store)->InsertLinkModel(model);
    if (!id.ok()) {
      std::fprintf(stderr, "db_fixture: %s\n", id.status().ToString().c_str());
      return 1;
    }
  }
  return 0;
}
