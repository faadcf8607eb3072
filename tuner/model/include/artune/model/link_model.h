// The link model: what one slice costs on one link, per wire protocol, polling
// mode, slice size and calls in flight, measured by MeasureLinkModel (measure.h)
// and costed by Predict (predict.h).
//
// A point is the median wall time per call of calls that carry one unit of the
// protocol (one eager packet, one rendezvous transfer), the ack method answering
// with a checksum (what a capture replay sends), `inflight` calls kept in flight:
// so the sum of the points of a pass's calls is the pass's wall time.
//
//   eager              one slice of `size` bytes in its own eager packet
//   coalesced-eager    kCoalescedSlices slices packed into one packet of `size` bytes
//   rendezvous-read    one slice read in one read
//   chunked-rendezvous one slice of `size` bytes cut into `chunk_size` chunks,
//                      `pipeline_depth` reads in flight
//
// A rendezvous point of `slices` > 1 is a call carrying that many such units of
// `size` bytes each (a message of several large slices): the slices of one call
// cost more together than the sum of their single-slice costs (on loopback tcp at
// load 10, six 1 MiB slices 1.2-2.6x the sum, bench/predict.md). SlicesFactor
// turns those points into the factor on what each unit adds to its call.
//
// Lookups interpolate log-log (a power law between neighbours: exact where the
// time is constant or proportional to the size), in size and in calls in flight,
// and hold the end values outside the measured range. Over size, a point costlier
// than a larger one of its curve is taken at the larger one's cost (a unit never
// costs more than a larger one: such a point is a burst of load). A chunked transfer whose
// chunk size or depth was not measured is interpolated (log-log) between the
// measured ones; a chunked curve below its first point joins the rendezvous read
// of one chunk (a transfer of one chunk is a rendezvous read).
// A depth past the deepest measured at a chunk size takes that deepest one (the
// measurement stops at the depth that reads every chunk of its largest slice).
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "artune/db/store.h"
#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/transport/protocol.h"

namespace artune::model {

// Slices of a measured coalesced-eager packet.
inline constexpr uint32_t kCoalescedSlices = 8;

struct ModelPoint {
  transport::Protocol protocol = transport::Protocol::kEager;
  transport::PollingMode polling = transport::PollingMode::kAdaptive;
  uint64_t chunk_size = 0;       // chunked-rendezvous only; 0 otherwise
  uint32_t pipeline_depth = 0;   // chunked-rendezvous only; 0 otherwise
  uint64_t size = 0;             // bytes of the unit (a coalesced packet: all its slices)
  uint32_t inflight = 1;         // calls in flight while measured
  double median_s = 0;           // per call, median over the rounds
  double low_s = 0, high_s = 0;  // smallest and largest round
  uint32_t rounds = 0;           // measurements behind the median
  uint32_t slices = 1;           // units per call; past 1 rendezvous only

  // (high - low) / median: how much the rounds disagreed.
  double Spread() const { return median_s > 0 ? (high_s - low_s) / median_s : 0; }
};

struct LinkModel {
  int64_t id = 0;      // the store's, 0 before it is stored
  std::string fabric;  // "tcp" | "shm" | "verbs"
  std::string peer;    // "loopback" or host:port
  std::string host;    // the measuring (client) side
  std::vector<ModelPoint> points;

  // The cost of one call carrying one unit (`slices` units past 1: the points of
  // calls of that many, looked up alike). `chunk_size` and `pipeline_depth` are
  // read for kChunkedRendezvous only. kNotFound when the model has no point for
  // the protocol, polling mode and slice count (the message names them and the
  // modes it has).
  Result<double> UnitCost(transport::Protocol protocol, transport::PollingMode polling,
                          uint64_t size, double inflight, uint64_t chunk_size = 0,
                          uint32_t pipeline_depth = 0, uint32_t slices = 1) const;

  // How much more a rendezvous unit adds to its call when the call carries
  // `slices` rendezvous units than when it travels alone: at each measured slice
  // count k (at its fewest calls in flight), (call of k - base) / (k * (call of 1
  // - base)), base the smallest eager call, at `size` clamped to the sizes
  // measured at k (the factor, not the cost, is held outside them); interpolated
  // log-log over the slice count from 1 at one slice, the largest count's held
  // past it. 1 for one slice,
  // an eager protocol, or a model without points of several slices for the
  // protocol and polling mode (measured before they were).
  double SlicesFactor(transport::Protocol protocol, transport::PollingMode polling, uint64_t size,
                      uint32_t slices, uint64_t chunk_size = 0, uint32_t pipeline_depth = 0) const;
};

// Log-log interpolation over (x, y) pairs sorted by x, x and y > 0; the end values
// outside. Exposed for tests. Requires at least one pair.
double InterpolateLogLog(const std::vector<std::pair<double, double>>& curve, double x);

// The store's rows of a model and back. FromRecord: kCorruption for a protocol or
// polling word this build does not know.
db::LinkModelRecord ToRecord(const LinkModel& model, uint32_t rounds, double duration_s);
Result<LinkModel> FromRecord(const db::LinkModelRecord& record);

// The stored model `id`, or the newest when `id` is 0 (what `predict` and `watch`
// take without --link-model). kNotFound for an unknown id, or a store without any
// model (the message says how to measure one); the store's errors.
Result<db::LinkModelRecord> ChooseStoredModel(db::Store& store, int64_t id);

std::string PollingName(transport::PollingMode polling);  // "busy" | "event" | "adaptive"
Result<transport::PollingMode> ParsePolling(std::string_view text);
Result<transport::Protocol> ParseProtocol(std::string_view text);

}  // namespace artune::model
