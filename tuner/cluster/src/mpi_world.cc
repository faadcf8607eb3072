#include "artune/cluster/mpi_world.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>

namespace artune::cluster {
namespace {

Status Checked(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Status::Unavailable(std::string(call) + " failed: " + std::string(text, length));
}

Status CheckedLength(size_t size) {
  if (size > static_cast<size_t>(INT_MAX)) {
    return Status::InvalidArgument("an MPI message of " + std::to_string(size) +
                                   " bytes is past MPI's int count");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<MpiWorld>> MpiWorld::Init() {
  int provided = 0;
  ARTUNE_RETURN_IF_ERROR(
      Checked(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread")
          .WithContext("start the ranks with mpirun -np N artune sweep --mpi ..., or srun "
                       "--mpi=pmix"));
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiWorld>(new MpiWorld(rank, size));
}

MpiWorld::~MpiWorld() { MPI_Finalize(); }

Status MpiWorld::Barrier() { return Checked(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

Result<std::string> MpiWorld::Broadcast(std::string text, int root) {
  ARTUNE_RETURN_IF_ERROR(CheckedLength(text.size()));
  int length = static_cast<int>(text.size());
  ARTUNE_RETURN_IF_ERROR(
      Checked(MPI_Bcast(&length, 1, MPI_INT, root, MPI_COMM_WORLD), "MPI_Bcast"));
  text.resize(static_cast<size_t>(length));
  ARTUNE_RETURN_IF_ERROR(
      Checked(MPI_Bcast(text.data(), length, MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast"));
  return text;
}

Result<std::vector<std::string>> MpiWorld::AllGather(const std::string& text) {
  ARTUNE_RETURN_IF_ERROR(CheckedLength(text.size()));
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(size_));
  ARTUNE_RETURN_IF_ERROR(
      Checked(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD),
              "MPI_Allgather"));
  std::vector<int> offsets(static_cast<size_t>(size_));
  size_t total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[i]);
    ARTUNE_RETURN_IF_ERROR(CheckedLength(total));
  }
  std::string all(total, '\0');
  ARTUNE_RETURN_IF_ERROR(
      Checked(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
                             offsets.data(), MPI_CHAR, MPI_COMM_WORLD),
              "MPI_Allgatherv"));
  std::vector<std::string> texts;
  for (size_t i = 0; i < lengths.size(); ++i) {
    texts.push_back(all.substr(static_cast<size_t>(offsets[i]), static_cast<size_t>(lengths[i])));
  }
  return texts;
}

Status MpiWorld::Send(const std::string& text, int to, int tag) {
  ARTUNE_RETURN_IF_ERROR(CheckedLength(text.size()));
  return Checked(
      MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD),
      "MPI_Send");
}

Result<MpiWorld::Received> MpiWorld::ReceiveAny(int tag) {
  MPI_Status status;
  ARTUNE_RETURN_IF_ERROR(
      Checked(MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &status), "MPI_Probe"));
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  Received received;
  received.from = status.MPI_SOURCE;
  received.text.resize(static_cast<size_t>(length));
  ARTUNE_RETURN_IF_ERROR(Checked(MPI_Recv(received.text.data(), length, MPI_CHAR, received.from,
                                          tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                                 "MPI_Recv"));
  return received;
}

Result<std::optional<MpiWorld::Received>> MpiWorld::TryReceiveAny(int tag) {
  int arrived = 0;
  MPI_Status status;
  ARTUNE_RETURN_IF_ERROR(
      Checked(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &arrived, &status), "MPI_Iprobe"));
  if (!arrived) return std::optional<Received>();
  ARTUNE_ASSIGN_OR_RETURN(Received received, ReceiveAny(tag));
  return std::optional<Received>(std::move(received));
}

void MpiWorld::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this satisfies [[noreturn]]
}

}  // namespace artune::cluster
