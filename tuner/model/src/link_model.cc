#include "artune/model/link_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace artune::model {
namespace {

using transport::PollingMode;
using transport::Protocol;

using Curve = std::vector<std::pair<double, double>>;

// A unit of a protocol never costs more than a larger one of the same protocol:
// each point is lowered to the cheapest point at its size or above. On a loaded
// host a point's samples are slow in bursts, rarely fast, so a point above a
// larger one is a burst the sampling did not leave out (a 2KiB coalesced packet
// at 375 us between 25 us and 27 us ones, shm, load 10).
void LowerMonotoneEnvelope(Curve& curve) {
  for (size_t i = curve.size(); i-- > 1;) {
    curve[i - 1].second = std::min(curve[i - 1].second, curve[i].second);
  }
}

// The value at `inflight` of points that differ only in size and inflight: each
// inflight's curve over size first, then the curve over inflight. `anchor`, when
// set, adds a point of the size curve of every inflight (the chunked curves' join
// to the rendezvous read of one chunk).
template <typename Anchor>
double SizeInflightLookup(const std::vector<const ModelPoint*>& points, uint64_t size,
                          double inflight, Anchor anchor) {
  std::map<uint32_t, Curve> by_inflight;
  for (const ModelPoint* point : points) {
    by_inflight[point->inflight].emplace_back(static_cast<double>(point->size), point->median_s);
  }
  Curve over_inflight;
  for (auto& [calls, curve] : by_inflight) {
    if (auto extra = anchor(calls)) curve.push_back(*extra);
    std::sort(curve.begin(), curve.end());
    LowerMonotoneEnvelope(curve);
    over_inflight.emplace_back(calls, InterpolateLogLog(curve, static_cast<double>(size)));
  }
  return InterpolateLogLog(over_inflight, inflight);
}

std::string ModesText(const std::vector<ModelPoint>& points) {
  std::set<std::string> modes;
  for (const ModelPoint& point : points) {
    modes.insert(std::string(transport::ProtocolName(point.protocol)) + "/" +
                 PollingName(point.polling));
  }
  std::string text;
  for (const std::string& mode : modes) text += (text.empty() ? "" : ", ") + mode;
  return text.empty() ? "none" : text;
}

// The two measured values bracketing `value` (equal at or past an end).
std::pair<uint64_t, uint64_t> Bracket(const std::set<uint64_t>& measured, uint64_t value) {
  auto above = measured.lower_bound(value);
  if (above == measured.end()) return {*measured.rbegin(), *measured.rbegin()};
  if (*above == value || above == measured.begin()) return {*above, *above};
  return {*std::prev(above), *above};
}

// Log-log interpolation between two (x, y) points at x.
double Between(uint64_t x_low, double y_low, uint64_t x_high, double y_high, uint64_t x) {
  if (x_low == x_high) return y_low;
  return InterpolateLogLog(
      {{static_cast<double>(x_low), y_low}, {static_cast<double>(x_high), y_high}},
      static_cast<double>(x));
}

}  // namespace

double InterpolateLogLog(const Curve& curve, double x) {
  if (x <= curve.front().first) return curve.front().second;
  if (x >= curve.back().first) return curve.back().second;
  auto upper = std::upper_bound(curve.begin(), curve.end(), x,
                                [](double value, const auto& pair) { return value < pair.first; });
  const auto& [x1, y1] = *std::prev(upper);
  const auto& [x2, y2] = *upper;
  if (x1 <= 0 || y1 <= 0 || y2 <= 0 || x2 <= x1) return y1;
  const double t = std::log(x / x1) / std::log(x2 / x1);
  return std::exp(std::log(y1) + t * (std::log(y2) - std::log(y1)));
}

Result<double> LinkModel::UnitCost(Protocol protocol, PollingMode polling, uint64_t size,
                                   double inflight, uint64_t chunk_size, uint32_t pipeline_depth,
                                   uint32_t slices) const {
  auto select = [&](Protocol wanted) {
    std::vector<const ModelPoint*> selected;
    for (const ModelPoint& point : points) {
      if (point.protocol == wanted && point.polling == polling && point.slices == slices &&
          point.median_s > 0) {
        selected.push_back(&point);
      }
    }
    return selected;
  };
  auto missing = [&](Protocol wanted) {
    const std::string calls =
        slices == 1 ? "" : " of calls of " + std::to_string(slices) + " slices";
    return Status::NotFound("link model " + std::to_string(id) + " has no " +
                            std::string(transport::ProtocolName(wanted)) + " points" + calls +
                            " under " + PollingName(polling) + " polling (it has: " +
                            ModesText(points) + "); measure one with `artune model measure`" +
                            (polling == PollingMode::kBusy
                                 ? " (busy polling only on a host with a core free beside its "
                                   "spinning threads: more cores, or --peer)"
                                 : ""));
  };
  auto no_anchor = [](uint32_t) { return std::optional<std::pair<double, double>>(); };
  const std::vector<const ModelPoint*> own = select(protocol);
  if (own.empty()) return missing(protocol);
  if (protocol != Protocol::kChunkedRendezvous) {
    return SizeInflightLookup(own, size, inflight, no_anchor);
  }
  const std::vector<const ModelPoint*> reads = select(Protocol::kRendezvousRead);
  if (reads.empty()) return missing(Protocol::kRendezvousRead);
  // One measured (chunk size, depth) curve, joined to the read of one chunk.
  // A depth not measured at this chunk size (the measurement skips depths past the
  // chunks of its largest slice: they read every chunk at once) takes the deepest
  // one measured below it.
  auto depth_measured = [&](uint64_t chunk, uint32_t depth) {
    uint32_t found = 0;
    for (const ModelPoint* point : own) {
      if (point->chunk_size == chunk && point->pipeline_depth <= depth) {
        found = std::max(found, point->pipeline_depth);
      }
    }
    return found;
  };
  auto chunked = [&](uint64_t chunk, uint32_t wanted_depth) -> double {
    const uint32_t depth = depth_measured(chunk, wanted_depth);
    std::vector<const ModelPoint*> curve;
    for (const ModelPoint* point : own) {
      if (point->chunk_size == chunk && point->pipeline_depth == depth) curve.push_back(point);
    }
    auto read_of = [&](uint64_t bytes, double calls) {
      return SizeInflightLookup(reads, bytes, calls, no_anchor);
    };
    if (size <= chunk || curve.empty()) return read_of(size, inflight);
    return SizeInflightLookup(curve, size, inflight, [&](uint32_t calls) {
      return std::optional<std::pair<double, double>>(
          std::pair<double, double>(static_cast<double>(chunk), read_of(chunk, calls)));
    });
  };
  std::set<uint64_t> chunks, depths;
  for (const ModelPoint* point : own) {
    chunks.insert(point->chunk_size);
    depths.insert(point->pipeline_depth);
  }
  const auto [chunk_low, chunk_high] = Bracket(chunks, chunk_size);
  const auto [depth_low, depth_high] = Bracket(depths, pipeline_depth);
  auto at_depth = [&](uint64_t depth) {
    const auto d = static_cast<uint32_t>(depth);
    return Between(chunk_low, chunked(chunk_low, d), chunk_high, chunked(chunk_high, d),
                   chunk_size);
  };
  return Between(depth_low, at_depth(depth_low), depth_high, at_depth(depth_high), pipeline_depth);
}

double LinkModel::SlicesFactor(Protocol protocol, PollingMode polling, uint64_t size,
                               uint32_t slices, uint64_t chunk_size,
                               uint32_t pipeline_depth) const {
  if (slices <= 1 ||
      (protocol != Protocol::kRendezvousRead && protocol != Protocol::kChunkedRendezvous)) {
    return 1;
  }
  // The slice counts measured for this protocol: each one's fewest calls in flight
  // and its smallest and largest size.
  struct Measured {
    uint32_t inflight;
    uint64_t low, high;
  };
  std::map<uint32_t, Measured> measured;
  for (const ModelPoint& point : points) {
    if (point.protocol != protocol || point.polling != polling || point.slices <= 1) continue;
    auto [entry, added] =
        measured.emplace(point.slices, Measured{point.inflight, point.size, point.size});
    entry->second.inflight = std::min(entry->second.inflight, point.inflight);
    entry->second.low = std::min(entry->second.low, point.size);
    entry->second.high = std::max(entry->second.high, point.size);
  }
  Curve factors = {{1.0, 1.0}};
  for (const auto& [count, range] : measured) {
    // Outside the sizes measured at this count the factor, not the call's cost,
    // is held (calls of 8 slices stop at 2MiB per slice under the 16MiB cap: a
    // 4MiB slice's call costs more, in proportion).
    const uint64_t at = std::clamp(size, range.low, range.high);
    const Result<double> base = UnitCost(Protocol::kEager, polling, 1, range.inflight);
    const Result<double> one =
        UnitCost(protocol, polling, at, range.inflight, chunk_size, pipeline_depth);
    const Result<double> several =
        UnitCost(protocol, polling, at, range.inflight, chunk_size, pipeline_depth, count);
    if (!base.ok() || !one.ok() || !several.ok() || *one <= *base || *several <= *base) continue;
    factors.emplace_back(count, (*several - *base) / (count * (*one - *base)));
  }
  return InterpolateLogLog(factors, slices);
}

db::LinkModelRecord ToRecord(const LinkModel& model, uint32_t rounds, double duration_s) {
  db::LinkModelRecord record;
  record.id = model.id;
  record.peer = model.peer;
  record.host = model.host;
  record.fabric = model.fabric;
  record.rounds = rounds;
  record.duration_s = duration_s;
  for (const ModelPoint& point : model.points) {
    record.points.push_back({std::string(transport::ProtocolName(point.protocol)),
                             PollingName(point.polling), point.chunk_size, point.pipeline_depth,
                             point.size, point.inflight, point.median_s, point.low_s, point.high_s,
                             point.rounds, point.slices});
  }
  return record;
}

Result<db::LinkModelRecord> ChooseStoredModel(db::Store& store, int64_t id) {
  if (id != 0) return store.GetLinkModel(id);
  ARTUNE_ASSIGN_OR_RETURN(std::vector<db::LinkModelRecord> models, store.ListLinkModels(1));
  if (models.empty()) {
    return Status::NotFound(
        "the store has no link model: measure the link's with `artune model measure [--peer "
        "HOST:PORT]` (about 30 s), or pass --link-model ID");
  }
  return std::move(models.front());
}

Result<LinkModel> FromRecord(const db::LinkModelRecord& record) {
  LinkModel model;
  model.id = record.id;
  model.fabric = record.fabric;
  model.peer = record.peer;
  model.host = record.host;
  for (const db::LinkModelPointRow& row : record.points) {
    auto protocol = ParseProtocol(row.protocol);
    auto polling = ParsePolling(row.polling);
    if (!protocol.ok() || !polling.ok()) {
      return Status::Corruption("link model " + std::to_string(record.id) + " has a point of " +
                                row.protocol + "/" + row.polling +
                                ", which this build of artune does not know");
    }
    model.points.push_back({*protocol, *polling, row.chunk_size, row.pipeline_depth, row.size,
                            row.inflight, row.median_s, row.low_s, row.high_s, row.rounds,
                            row.slices});
  }
  return model;
}

std::string PollingName(PollingMode polling) {
  switch (polling) {
    case PollingMode::kBusy:
      return "busy";
    case PollingMode::kEvent:
      return "event";
    case PollingMode::kAdaptive:
      return "adaptive";
  }
  return "unknown";
}

Result<PollingMode> ParsePolling(std::string_view text) {
  for (PollingMode mode : {PollingMode::kBusy, PollingMode::kEvent, PollingMode::kAdaptive}) {
    if (PollingName(mode) == text) return mode;
  }
  return Status::InvalidArgument("unknown polling mode '" + std::string(text) +
                                 "': use busy, event or adaptive");
}

Result<Protocol> ParseProtocol(std::string_view text) {
  for (int i = 0; i < transport::kProtocolCount; ++i) {
    const auto protocol = static_cast<Protocol>(i);
    if (transport::ProtocolName(protocol) == text) return protocol;
  }
  return Status::InvalidArgument("unknown protocol '" + std::string(text) +
                                 "': use eager, coalesced-eager, rendezvous-read or "
                                 "chunked-rendezvous");
}

}  // namespace artune::model
