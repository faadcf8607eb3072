// gRPC's process-wide state, held for the process's lifetime by every part of
// artune that runs stock gRPC (the bench's grpc transport, the built-in workload).
#pragma once

namespace artune::tuner {

// Keeps gRPC initialised until the process exits, so that the last channel or
// server to go never runs gRPC's final cleanup (grpc_shutdown).
//
// Why: Debian's gRPC 1.51 starts a TCP "backup poller" on an executor thread
// whenever a write finds its socket full (any large message can), and that
// thread polls in rounds of up to 10 s that nothing ends early. The final
// grpc_shutdown joins the executor's threads, so a program could sit up to 10 s
// in its last channel's destructor after its work was done (issue 22: 6 MiB
// bench runs ending 10 s late, direct and relayed alike). Without the final
// cleanup the process exits at once; what gRPC holds is the process's until then.
//
// Thread-safe, idempotent, cheap after the first call. Call it before creating
// the first gRPC object of the process's work.
void KeepGrpcUntilExit();

}  // namespace artune::tuner
