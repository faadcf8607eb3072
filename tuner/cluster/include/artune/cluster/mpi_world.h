// The few MPI calls `artune sweep --mpi` makes, behind one small class: Open MPI
// (or any MPI) bootstraps the ranks and carries their messages; artune's own
// traffic (the measurements) goes over its transport, never over MPI.
//
// Errors: MPI's default handler (MPI_ERRORS_ARE_FATAL) stays in force, so a rank
// that dies or a broken communicator aborts the whole job, as mpirun users expect;
// the calls below return an error only for what MPI reports and survives.
//
// Threading: MPI is initialised with MPI_THREAD_FUNNELED; call everything from the
// thread that created the world (the transport's own threads never touch MPI).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artune/status.h"

namespace artune::cluster {

class MpiWorld {
 public:
  // MPI_Init_thread; kUnavailable when MPI cannot start (the message says how to
  // launch: mpirun or srun).
  static Result<std::unique_ptr<MpiWorld>> Init();
  ~MpiWorld();  // MPI_Finalize
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  Status Barrier();
  // `text` of rank `root` on every rank.
  Result<std::string> Broadcast(std::string text, int root);
  // Every rank's `text`, by rank.
  Result<std::vector<std::string>> AllGather(const std::string& text);
  // Point to point, blocking; `tag` keeps kinds of messages apart.
  Status Send(const std::string& text, int to, int tag);
  struct Received {
    int from = 0;
    std::string text;
  };
  // The next message with `tag` from any rank.
  Result<Received> ReceiveAny(int tag);
  // The next message with `tag` when one has arrived (MPI_Iprobe), else nullopt at
  // once: for a rank that has other work while it waits.
  Result<std::optional<Received>> TryReceiveAny(int tag);

  // Ends every rank of the job with `code` (MPI_Abort): for a rank that cannot go
  // on while the others wait for it. Does not return.
  [[noreturn]] void Abort(int code);

 private:
  MpiWorld(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace artune::cluster
