// The known RecvTensor traffic of grpc_tensor_traffic.h as a program of its own, so
// the ebpf backend can trace it and the preload backend can run it: a real gRPC C++
// server and client in one process, talking over 127.0.0.1.
//   grpc_tensors [--wait]   --wait: read one byte from stdin after the server is
//                           up and before the client connects (a tracer attaches)
// Exit status: 0 when every call succeeded, 1 when one failed, 2 on a usage error.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "grpc_tensor_traffic.h"

int main(int argc, char** argv) {
  const bool wait = argc > 1 && std::string(argv[1]) == "--wait";
  if (argc > 2 || (argc == 2 && !wait)) {
    std::fprintf(stderr, "usage: grpc_tensors [--wait]\n");
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
  const bool ok = artune::probes::testing::RunKnownTraffic(port);
  server->Shutdown();
  server->Wait();
  return ok ? 0 : 1;
}
