// The servers of one serving host in `artune serve`'s port layout: what `artune
// serve` and each rank of a cluster run start, so that a bench or sweep finds them
// alike. Threading: start and destroy from one thread; the servers run their own.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "artune/status.h"
#include "artune/tuner/bench_transport.h"

namespace artune::tuner {

// The servers of one serving host, running until destroyed (or Shutdown).
struct StartedServers {
  std::string base;  // HOST:PORT of the first server
  nlohmann::ordered_json listening = nlohmann::ordered_json::array();  // one entry per server
  std::vector<std::unique_ptr<BenchServer>> servers;
};

// Starts `servers` servers of each of `transports` whose name is `only` (or every
// one with "both") in `artune serve`'s layout (ServerAddressFor: server i of
// the embedded transport on PORT+2i, stock gRPC on PORT+2i+1). Port 0 in `listen`
// picks a free base port; as the ports after it may be taken, a new base is picked
// (a few times) when one is. On a failure every server started is stopped and the
// error names the server that failed.
Result<StartedServers> StartBenchServers(std::initializer_list<BenchTransport*> transports,
                                         const std::string& only, uint32_t servers,
                                         const std::string& listen);

}  // namespace artune::tuner
