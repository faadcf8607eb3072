#include "artune/probes/session.h"

#include "iovec_attribution.h"

namespace artune::probes {

struct ProbeSession::Connection {
  uint64_t id = 0;
  FlowKey key;  // key.source < key.destination; side 0 sends from key.source
  std::unique_ptr<Http2ConnectionDecoder> decoder;
  bool closed[2] = {false, false};
  std::unique_ptr<IovecAttribution> iovecs[2];  // with attribute_iovecs only
};

ProbeSession::ProbeSession(SessionOptions options) : options_(std::move(options)) {}
ProbeSession::~ProbeSession() = default;

ProbeSession::Connection* ProbeSession::Lookup(const FlowKey& flow, int& side) {
  const bool forward = flow.source < flow.destination;
  const FlowKey key = forward ? flow : flow.Reversed();
  side = forward ? 0 : 1;
  auto it = connections_.find(key);
  if (it != connections_.end()) return it->second.get();
  if (connections_.size() >= options_.max_connections) {
    ++connections_dropped_;
    return nullptr;
  }
  auto connection = std::make_unique<Connection>();
  connection->id = next_connection_id_++;
  connection->key = key;
  connection->decoder = std::make_unique<Http2ConnectionDecoder>(
      connection->id, static_cast<GrpcMessageObserver&>(*this), errors_, options_.decoder_limits);
  // Clients connect from ephemeral ports (Linux: 32768-60999): when exactly one
  // side uses one, the other is the server; otherwise the lower port is.
  const auto ephemeral = [](uint16_t port) { return port >= 32768 && port <= 60999; };
  int server_side = key.source.port < key.destination.port ? 0 : 1;
  if (ephemeral(key.source.port) != ephemeral(key.destination.port)) {
    server_side = ephemeral(key.source.port) ? 1 : 0;
  }
  if (options_.server_port) {
    if (key.source.port == *options_.server_port) server_side = 0;
    if (key.destination.port == *options_.server_port) server_side = 1;
  }
  connection->decoder->SetServerSideHint(server_side);
  if (options_.attribute_iovecs) {
    for (auto& attribution : connection->iovecs) {
      attribution = std::make_unique<IovecAttribution>(
          [this](int method_index, uint32_t length) { DecideIovec(method_index, length); });
    }
  }
  Connection* raw = connection.get();
  connections_by_id_[raw->id] = raw;
  connections_.emplace(key, std::move(connection));
  return raw;
}

void ProbeSession::OnFlowOpen(const FlowKey& flow, FlowOrigin origin, uint64_t timestamp_ns) {
  int side = 0;
  Connection* c = Lookup(flow, side);
  if (c == nullptr) return;
  if (origin == FlowOrigin::kHandshake && c->closed[side]) {
    // A new SYN on a direction that already ended: the 4-tuple is reused by a new
    // connection, and the old one's state is final.
    const FlowKey key = c->key;
    RecordConnection(*c);
    connections_by_id_.erase(c->id);
    connections_.erase(key);
    c = Lookup(flow, side);
    if (c == nullptr) return;
  }
  (void)timestamp_ns;
  c->decoder->Begin(side, origin);
}

void ProbeSession::OnStreamBytes(const StreamSegment& segment) {
  int side = 0;
  if (Connection* c = Lookup(segment.flow, side)) {
    c->decoder->Feed(side, segment.bytes, segment.timestamp_ns);
  }
}

void ProbeSession::OnStreamGap(const FlowKey& flow, uint64_t missing_bytes, uint64_t) {
  int side = 0;
  if (Connection* c = Lookup(flow, side)) c->decoder->Gap(side, missing_bytes);
}

void ProbeSession::OnFlowClose(const FlowKey& flow, FlowEnd, uint64_t) {
  int side = 0;
  if (Connection* c = Lookup(flow, side)) {
    c->decoder->End(side);
    c->closed[side] = true;
  }
}

void ProbeSession::OnIoCall(const IoCallEvent& event) {
  builder_.AddIoCall(event);
  if (!IsSendSyscall(event.syscall) || event.result <= 0) return;
  if (!options_.attribute_iovecs) return;
  // The flow's connection, if its bytes are being decoded; never created here.
  const bool forward = event.flow.source < event.flow.destination;
  const auto it = connections_.find(forward ? event.flow : event.flow.Reversed());
  if (it == connections_.end()) {
    for (uint32_t length : event.iovec_lengths) builder_.AddUnattributedIovec(length);
    return;
  }
  it->second->iovecs[forward ? 0 : 1]->AddSend(event.iovec_lengths,
                                               static_cast<uint64_t>(event.result));
}

void ProbeSession::OnFrame(const FrameSpan& span) {
  if (!options_.attribute_iovecs) return;
  const auto it = connections_by_id_.find(span.connection_id);
  if (it == connections_by_id_.end()) return;
  const int method_index = span.method.empty() ? -1 : MethodIndex(span.method, span.direction);
  it->second->iovecs[span.side & 1]->AddFrame(span.begin, span.end, method_index);
}

int ProbeSession::MethodIndex(std::string_view method, MessageDirection direction) {
  auto& indexes = method_indexes_[static_cast<int>(direction)];
  const auto found = indexes.find(method);
  if (found != indexes.end()) return found->second;
  const int index = static_cast<int>(attributed_methods_.size());
  attributed_methods_.emplace_back(std::string(method), direction);
  indexes.emplace(std::string(method), index);
  return index;
}

void ProbeSession::DecideIovec(int method_index, uint32_t length) {
  if (method_index < 0) {
    builder_.AddUnattributedIovec(length);
    return;
  }
  const auto& [method, direction] = attributed_methods_[static_cast<size_t>(method_index)];
  builder_.AddMethodIovec(method, direction, length);
}

void ProbeSession::OnGrpcMessage(const GrpcMessage& message) {
  ++messages_;
  builder_.AddMessage(message);
  if (options_.on_message) options_.on_message(message);
}

void ProbeSession::OnCallEnd(const CallEnd& end) {
  builder_.EndCall(end.connection_id, end.stream_id);
}

void ProbeSession::RecordConnection(Connection& connection) {
  for (int side = 0; side < 2; ++side) {
    if (!connection.closed[side]) connection.decoder->End(side);
    connection.closed[side] = true;
    if (connection.iovecs[side]) connection.iovecs[side]->Flush();
  }
  const ConnectionDecodeStats& stats = connection.decoder->stats();
  const FlowKey& key = connection.key;
  ConnectionProfile profile;
  profile.id = connection.id;
  const bool side0_is_client = connection.decoder->client_side() == 0;
  profile.client = (side0_is_client ? key.source : key.destination).ToString();
  profile.server = (side0_is_client ? key.destination : key.source).ToString();
  profile.roles_known = stats.client_side >= 0;
  profile.joined_midway = stats.joined_midway;
  profile.data_frames = stats.data_frames;
  profile.data_bytes = stats.data_bytes;
  profile.unattributed_data_bytes = stats.unattributed_data_bytes;
  builder_.SetConnection(profile);
  ++connections_seen_;
}

Profile ProbeSession::Finish(const std::string& backend_name, const BackendCounters& counters,
                             double duration_s) {
  for (auto& [key, connection] : connections_) RecordConnection(*connection);
  connections_.clear();
  connections_by_id_.clear();
  Profile profile = builder_.Build(backend_name, duration_s, errors_, counters.events_lost);
  profile.backend_detail = counters.detail;
  profile.backend_detail["events_seen"] = counters.events_seen;
  profile.backend_detail["bytes_seen"] = counters.bytes_seen;
  profile.backend_detail["connections"] = connections_seen_;
  if (connections_dropped_ > 0)
    profile.backend_detail["connections_dropped"] = connections_dropped_;
  return profile;
}

}  // namespace artune::probes
