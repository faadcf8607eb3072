#include "artune/tuner/bench_servers.h"

#include <algorithm>
#include <cstdio>
#include <random>

namespace artune::tuner {

namespace {

std::string PortOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

// How often a base port is given up for another when one of its ports is taken.
constexpr int kPickPortAttempts = 16;

// A random base port for `--listen HOST:0` with room for `ports` ports after it,
// outside the kernel's ephemeral range (net.ipv4.ip_local_port_range). The kernel
// hands a bind to port 0 an odd port and outgoing connections even ones, so the
// port after a bound one is where other processes' connections and their
// TIME_WAIT sit: under a busy test suite every one of 8 such picks was taken.
// Below (or above) the ephemeral range only listening servers hold ports.
int RandomBasePort(int ports) {
  int low = 32768, high = 60999;
  if (FILE* file = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(file, "%d %d", &low, &high) != 2) low = 32768, high = 60999;
    std::fclose(file);
  }
  static std::mt19937 random(std::random_device{}());
  constexpr int kFirstUnprivileged = 10000;  // clear of the well-known services
  if (low - ports > kFirstUnprivileged + 1000) {
    return std::uniform_int_distribution<int>(kFirstUnprivileged, low - ports)(random);
  }
  return std::uniform_int_distribution<int>(std::min(high + 1, 65535 - ports),
                                            65535 - ports)(random);
}

// One attempt at StartBenchServers: every server at `base` (ServerAddressFor's
// layout). On a failure the servers already started are shut down and the error
// names the server.
Result<StartedServers> StartServersOnce(std::initializer_list<BenchTransport*> transports,
                                        const std::string& only, uint32_t servers,
                                        const std::string& base) {
  StartedServers started;
  for (uint32_t i = 0; i < servers; ++i) {
    for (BenchTransport* transport : transports) {
      std::string name(transport->name());
      if (only != "both" && only != name) continue;
      ARTUNE_ASSIGN_OR_RETURN(std::string address,
                              ServerAddressFor(name, base, static_cast<int>(i)));
      auto server = transport->StartServer(address);
      if (!server.ok()) {
        for (auto& running : started.servers) running->Shutdown();
        return server.status().WithContext(name + " server " + std::to_string(i));
      }
      nlohmann::ordered_json entry = {{"transport", name},
                                      {"server", i},
                                      {"address", (*server)->address()},
                                      {"fabric", transport->fabric()}};
      if (std::string data = (*server)->data_endpoint(); !data.empty()) {
        entry["data_endpoint"] = data;
      }
      if (std::string local = (*server)->local_endpoint(); !local.empty()) {
        entry["local_endpoint"] = local;
      }
      started.listening.push_back(std::move(entry));
      started.servers.push_back(std::move(*server));
    }
  }
  started.base = base;
  return started;
}

}  // namespace

Result<StartedServers> StartBenchServers(std::initializer_list<BenchTransport*> transports,
                                         const std::string& only, uint32_t servers,
                                         const std::string& listen) {
  const bool pick_port = PortOf(listen) == "0";
  if (!pick_port) {  // checks the address, and that the last server's port exists
    ARTUNE_RETURN_IF_ERROR(
        ServerAddressFor("grpc", listen, static_cast<int>(servers) - 1).status());
  }
  // A random base port may be held by another server (gRPC's SO_REUSEPORT is off:
  // a taken port is refused, not shared). Then everything started is stopped and
  // another base is picked, a few times.
  const std::string host_part = listen.substr(0, listen.rfind(':') + 1);
  Result<StartedServers> started = Status::Internal("no attempt");
  for (int attempt = 0; attempt < (pick_port ? kPickPortAttempts : 1); ++attempt) {
    const std::string base =
        pick_port ? host_part + std::to_string(RandomBasePort(2 * static_cast<int>(servers)))
                  : listen;
    started = StartServersOnce(transports, only, servers, base);
    if (started.ok()) break;
  }
  return started;
}

}  // namespace artune::tuner
