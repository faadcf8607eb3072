// The known RecvTensor traffic of grpc_tensor_traffic.h as a program of its own, so
// the ebpf backend can trace it and the preload backend can run it: a real gRPC C++
// server and client in one process, talking over 127.0.0.1.
//   grpc_tensors [--wait]                the known calls (the tests' distribution)
//   grpc_tensors bench SECONDS [--wait]  RecvTensor calls of KnownShapes() in turn
//                                        for SECONDS; prints response bytes/s
// --wait: read one byte from stdin after the server is up and before the client
// connects (a tracer attaches). Exit status: 0 when every call succeeded, 1 when
// one failed, 2 on a usage error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "grpc_tensor_traffic.h"

namespace {

using artune::probes::testing::KnownShapes;

// Calls RecvTensor with the known shapes in turn until `seconds` have passed.
bool RunBench(int port, double seconds) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(16 << 20);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                           grpc::InsecureChannelCredentials(), arguments);
  auto stub = tensorflow::WorkerService::NewStub(channel);
  const auto shapes = KnownShapes();
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  uint64_t bytes = 0, calls = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    tensorflow::RecvTensorResponse response;
    grpc::ClientContext context;
    const auto request = artune::probes::testing::MakeRequest(0, shapes[calls % shapes.size()]);
    const grpc::Status status = stub->RecvTensor(&context, request, &response);
    if (!status.ok()) {
      std::fprintf(stderr, "RecvTensor failed: %s\n", status.error_message().c_str());
      return false;
    }
    bytes += response.ByteSizeLong();
    ++calls;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("bytes_per_second %.0f calls %llu\n", static_cast<double>(bytes) / elapsed,
              static_cast<unsigned long long>(calls));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool wait = argc > 1 && std::string(argv[argc - 1]) == "--wait";
  const int words = argc - 1 - (wait ? 1 : 0);
  const bool bench = words == 2 && std::string(argv[1]) == "bench";
  if (words != 0 && !bench) {
    std::fprintf(stderr, "usage: grpc_tensors [bench SECONDS] [--wait]\n");
    return 2;
  }
  artune::probes::testing::KnownWorker worker;
  int port = 0;
  std::unique_ptr<grpc::Server> server = artune::probes::testing::StartKnownServer(worker, port);
  if (server == nullptr || port <= 0) {
    std::fprintf(stderr, "grpc_tensors: the server did not start on 127.0.0.1\n");
    return 1;
  }
  if (wait) {
    char go = 0;
    if (read(STDIN_FILENO, &go, 1) != 1) {
      std::fprintf(stderr, "grpc_tensors: no go byte on stdin\n");
      return 2;
    }
  }
  const bool ok =
      bench ? RunBench(port, std::atof(argv[2])) : artune::probes::testing::RunKnownTraffic(port);
  server->Shutdown();
  server->Wait();
  return ok ? 0 : 1;
}
