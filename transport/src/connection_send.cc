// Connection, sending: packets and their headers, credits (and the one-way calls'
// slot reports that ride on them), control packets, and the eager and rendezvous
// forms of a message (connection.h says which is chosen when).
#include <algorithm>
#include <cstring>

#include "connection.h"

namespace artune::transport {

Result<Buffer> Connection::NewPacketLocked() {
  return allocator_.AllocateSmallPages(geometry_.buffer_bytes);
}

void Connection::StampHeaderLocked(std::byte* packet, bool credit_packet) {
  wire::PacketHeader header;
  std::memcpy(&header, packet, sizeof(header));
  header.credits_returned = credits_to_return_;
  credits_to_return_ = 0;
  if (spare_to_return_) header.flags |= wire::kFlagSpareCreditReturned;
  spare_to_return_ = false;
  header.oneway_done = oneway_to_return_;
  oneway_to_return_ = 0;
  header.config_epoch = config_epoch_;
  (void)credit_packet;
  std::memcpy(packet, &header, sizeof(header));
}

Status Connection::PostPacketLocked(Buffer buffer, uint64_t length, bool credit_packet) {
  if (credit_packet) {
    spare_available_ = false;
  } else if (!pending_.empty() || send_credits_ == 0) {
    pending_.push_back({std::move(buffer), length, false});
    return Status::Ok();
  } else {
    --send_credits_;
  }
  StampHeaderLocked(buffer.data(), credit_packet);
  const fabric::SgEntry entry{buffer.data(), length, 0};
  return endpoint_->PostSend(std::span<const fabric::SgEntry>(&entry, 1));
}

Status Connection::FlushPendingLocked() {
  while (!pending_.empty() && send_credits_ > 0) {
    PendingPacket packet = std::move(pending_.front());
    pending_.pop_front();
    --send_credits_;
    StampHeaderLocked(packet.buffer.data(), false);
    const fabric::SgEntry entry{packet.buffer.data(), packet.length, 0};
    ARTUNE_RETURN_IF_ERROR(endpoint_->PostSend(std::span<const fabric::SgEntry>(&entry, 1)));
  }
  return Status::Ok();
}

void Connection::MaybeReturnCreditsLocked(bool report_every_slot) {
  const uint32_t threshold = std::max<uint32_t>(1, geometry_.buffer_count / 2);
  const uint32_t slot_threshold =
      report_every_slot ? 1 : std::max<uint32_t>(1, geometry_.max_outstanding / 2);
  const bool slots_owed = oneway_to_return_ >= slot_threshold;
  if ((credits_to_return_ < threshold && !slots_owed) || closed_) return;
  Status sent = Status::Ok();
  if (spare_available_) {
    sent = SendControlLocked(wire::PacketKind::kCredit, wire::Direction::kRequest, 0, Status::Ok());
  } else if (slots_owed && pending_.empty() && send_credits_ > 0) {
    // The spare is out, and the client may hold it until it sends again, which a
    // client out of call slots never does: the report goes on a regular credit.
    sent = SendRegularCreditLocked();
  } else {
    return;  // the spare, or a credit, comes back with the peer's next packet
  }
  if (!sent.ok()) FailLocked(sent);
}

Status Connection::SendRegularCreditLocked() {
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  wire::PacketHeader header{};
  header.kind = static_cast<uint8_t>(wire::PacketKind::kCredit);
  header.flags = wire::kFlagCreditOnRegular;
  std::memcpy(packet.data(), &header, sizeof(header));
  return PostPacketLocked(std::move(packet), sizeof(header), false);
}

Status Connection::SendControlLocked(wire::PacketKind kind, wire::Direction direction,
                                     uint64_t call_id, const Status& status) {
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  wire::PacketHeader header{};
  header.kind = static_cast<uint8_t>(kind);
  header.direction = static_cast<uint8_t>(direction);
  header.call_id = call_id;
  uint64_t length = sizeof(header);
  if (kind == wire::PacketKind::kError) {
    const std::string& text = status.message();
    const size_t bytes = std::min<size_t>(text.size(), wire::kMaxErrorMessageBytes);
    header.status_code = static_cast<int32_t>(status.code());
    header.payload_bytes = static_cast<uint32_t>(bytes);
    std::memcpy(packet.data() + sizeof(header), text.data(), bytes);
    length += bytes;
  }
  std::memcpy(packet.data(), &header, sizeof(header));
  return PostPacketLocked(std::move(packet), length, kind == wire::PacketKind::kCredit);
}

Status Connection::SendMessageLocked(Call& call, wire::Direction direction, std::string_view method,
                                     std::span<const ConstSlice> slices) {
  ARTUNE_RETURN_IF_ERROR(MeasureMessageLocked(direction, method, slices));
  PlanMessage(send_sizes_, call.config, send_plan_);
  const MessagePlan& plan = send_plan_;
  MessageHeaders headers{call.id, direction, static_cast<uint32_t>(slices.size()),
                         static_cast<uint8_t>(method.size()),
                         call.one_way ? wire::kFlagOneWay : uint8_t{0}};
  for (const EagerPacket& eager : plan.eager_packets) {
    ARTUNE_RETURN_IF_ERROR(SendEagerPacketLocked(eager, slices, method, headers));
  }
  size_t next = 0;
  while (next < plan.rendezvous.size()) {
    ARTUNE_ASSIGN_OR_RETURN(const size_t announced, SendAnnounceLocked(call, plan.rendezvous, next,
                                                                       slices, method, headers));
    next += announced;
  }

  // A message without slices still needs one packet (it carries the method).
  if (plan.eager_packets.empty() && plan.rendezvous.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
    wire::PacketHeader header = headers.Next(wire::PacketKind::kEager, 0);
    header.payload_bytes = header.method_bytes;
    std::memcpy(packet.data(), &header, sizeof(header));
    std::memcpy(packet.data() + sizeof(header), method.data(), header.method_bytes);
    ARTUNE_RETURN_IF_ERROR(
        PostPacketLocked(std::move(packet), sizeof(header) + header.method_bytes, false));
  }
  return Status::Ok();
}

wire::PacketHeader Connection::MessageHeaders::Next(wire::PacketKind kind, uint32_t entries) {
  wire::PacketHeader header{};
  header.kind = static_cast<uint8_t>(kind);
  header.direction = static_cast<uint8_t>(direction);
  header.call_id = call_id;
  header.slice_count = slice_count;
  header.entry_count = entries;
  header.method_bytes = method_sent ? 0 : method_bytes;
  header.flags = flags;
  method_sent = true;
  return header;
}

Status Connection::MeasureMessageLocked(wire::Direction direction, std::string_view method,
                                        std::span<const ConstSlice> slices) {
  if (method.size() > wire::kMaxMethodBytes) {
    return Status::InvalidArgument("method name of " + std::to_string(method.size()) +
                                   " bytes (limit " + std::to_string(wire::kMaxMethodBytes) + ")");
  }
  if (direction == wire::Direction::kRequest && method.empty()) {
    return Status::InvalidArgument("empty method name");
  }
  if (slices.size() > wire::kMaxSlicesPerMessage) {
    return Status::InvalidArgument("message of " + std::to_string(slices.size()) +
                                   " slices (limit " + std::to_string(wire::kMaxSlicesPerMessage) +
                                   ")");
  }
  std::vector<uint64_t>& sizes = send_sizes_;
  sizes.clear();
  uint64_t total = 0;
  for (const ConstSlice& slice : slices) {
    if (slice.size() > wire::kMaxSliceBytes) {
      return Status::InvalidArgument("slice of " + std::to_string(slice.size()) + " bytes (limit " +
                                     std::to_string(wire::kMaxSliceBytes) + ")");
    }
    sizes.push_back(slice.size());
    total += slice.size();
  }
  if (total > wire::kMaxMessageBytes) {
    return Status::InvalidArgument("message of " + std::to_string(total) + " bytes (limit " +
                                   std::to_string(wire::kMaxMessageBytes) + ")");
  }
  return Status::Ok();
}

Status Connection::SendEagerPacketLocked(const EagerPacket& eager,
                                         std::span<const ConstSlice> slices,
                                         std::string_view method, MessageHeaders& headers) {
  // Entries, then the method (first packet), then the slices' bytes.
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  const auto kind =
      eager.slice_indices.size() > 1 ? wire::PacketKind::kCoalescedEager : wire::PacketKind::kEager;
  wire::PacketHeader header = headers.Next(kind, static_cast<uint32_t>(eager.slice_indices.size()));
  std::byte* out = packet.data() + sizeof(header);
  for (uint32_t index : eager.slice_indices) {
    const wire::SliceEntry entry{index, static_cast<uint32_t>(slices[index].size())};
    std::memcpy(out, &entry, sizeof(entry));
    out += sizeof(entry);
  }
  std::byte* payload = out;
  std::memcpy(out, method.data(), header.method_bytes);
  out += header.method_bytes;
  for (uint32_t index : eager.slice_indices) {
    if (!slices[index].empty()) std::memcpy(out, slices[index].data(), slices[index].size());
    out += slices[index].size();
    stats_.CountSlice(eager.protocol, slices[index].size());
  }
  header.payload_bytes = static_cast<uint32_t>(out - payload);
  std::memcpy(packet.data(), &header, sizeof(header));
  // The length before the move: argument evaluation order is unspecified, and
  // clang moves the buffer out first (found by tests/transport/fuzz).
  const uint64_t length = static_cast<uint64_t>(out - packet.data());
  return PostPacketLocked(std::move(packet), length, false);
}

Result<size_t> Connection::SendAnnounceLocked(Call& call,
                                              std::span<const RendezvousTransfer> transfers,
                                              size_t next, std::span<const ConstSlice> slices,
                                              std::string_view method, MessageHeaders& headers) {
  ARTUNE_ASSIGN_OR_RETURN(Buffer packet, NewPacketLocked());
  const uint64_t method_bytes = headers.method_sent ? 0 : method.size();
  const uint64_t room = (geometry_.buffer_bytes - sizeof(wire::PacketHeader) - method_bytes) /
                        sizeof(wire::RendezvousEntry);
  const size_t count = std::min<size_t>(room, transfers.size() - next);
  wire::PacketHeader header =
      headers.Next(wire::PacketKind::kAnnounce, static_cast<uint32_t>(count));
  std::byte* out = packet.data() + sizeof(header);
  for (size_t i = next; i < next + count; ++i) {
    ARTUNE_ASSIGN_OR_RETURN(const wire::RendezvousEntry entry,
                            OfferSliceLocked(call, transfers[i], slices[transfers[i].slice_index]));
    std::memcpy(out, &entry, sizeof(entry));
    out += sizeof(entry);
  }
  std::memcpy(out, method.data(), method_bytes);
  out += method_bytes;
  header.payload_bytes = static_cast<uint32_t>(method_bytes);
  std::memcpy(packet.data(), &header, sizeof(header));
  call.awaiting_fin = true;
  // The length before the move: argument evaluation order is unspecified, and
  // clang moves the buffer out first (found by tests/transport/fuzz).
  const uint64_t length = static_cast<uint64_t>(out - packet.data());
  ARTUNE_RETURN_IF_ERROR(PostPacketLocked(std::move(packet), length, false));
  return count;
}

Result<wire::RendezvousEntry> Connection::OfferSliceLocked(Call& call,
                                                           const RendezvousTransfer& transfer,
                                                           ConstSlice slice) {
  std::optional<Registration> registration = allocator_.Lookup(slice.data(), slice.size());
  const std::byte* source = slice.data();
  if (!registration) {
    ARTUNE_ASSIGN_OR_RETURN(Buffer staging, allocator_.Allocate(slice.size()));
    std::memcpy(staging.data(), slice.data(), slice.size());
    source = staging.data();
    registration = allocator_.Lookup(source, slice.size());
    call.sent_owned.push_back(std::move(staging));
  }
  ARTUNE_ASSIGN_OR_RETURN(uint32_t offer,
                          endpoint_->Expose(source, slice.size(), registration->keys.lkey));
  call.offers.push_back(offer);
  wire::RendezvousEntry entry{};
  entry.slice_index = transfer.slice_index;
  entry.rkey = offer;
  entry.remote_addr = reinterpret_cast<uint64_t>(source);
  entry.length = slice.size();
  entry.chunk_bytes = transfer.chunk_bytes;
  stats_.CountSlice(transfer.protocol, slice.size());
  return entry;
}

}  // namespace artune::transport
