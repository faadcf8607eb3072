// What the ranks of `artune sweep --mpi` send each other, as JSON text over MPI:
// a finished link (its sweep, trials and verdict, measured into the client rank's
// scratch store; or its link model, with --strategy model) for rank 0 to store,
// and a stored capture for every rank to replay. Plain records both ways; no MPI here, so it is
// tested without mpirun.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"

namespace artune::cluster {

// One finished link as the client rank measured it.
struct LinkReport {
  // Ranks, round and pair, both ends' hosts and devices, status and error; the
  // sweep_id is the scratch store's and means nothing to rank 0.
  db::ClusterLinkRecord link;
  // The link's sweep with its verdict (nullopt when none was started: the peer
  // never answered), and its trials.
  std::optional<db::SweepRecord> sweep;
  std::vector<db::TrialRecord> trials;
  // The link's model instead of a sweep (a "model" cluster run; nullopt otherwise,
  // or when the measurement failed).
  std::optional<db::LinkModelRecord> model;
  double seconds = 0;  // wall time of the link's measurement
};

std::string EncodeLinkReport(const LinkReport& report);
// kCorruption for text EncodeLinkReport did not write.
Result<LinkReport> DecodeLinkReport(std::string_view text);

// Stores the link on rank 0: its sweep (as a new sweep of `store`), the trials,
// the verdict, the sweep finished when it was, or its model (as a new link model),
// then the link row pointing at it, with `cluster_id`. Returns the link as stored. Errors: the
// store's (kAlreadyExists for a link the cluster already has).
Result<db::ClusterLinkRecord> StoreLinkReport(db::Store& store, int64_t cluster_id,
                                              const LinkReport& report);

std::string EncodeCapture(const db::CaptureRecord& capture);
Result<db::CaptureRecord> DecodeCapture(std::string_view text);

}  // namespace artune::cluster
