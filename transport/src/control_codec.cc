// The knobs travel by name: each knob of the table (knobs.h) with a field of the
// same name in control::Knobs is copied through the message's reflection, so a
// knob added to the table and to the proto needs no line here. The proto's fields
// and numbers are unchanged, so the bytes a peer of an earlier version sends and
// reads are the same (control_codec_test.cc checks them against golden bytes).
#include "control_codec.h"

#include <string>

#include "artune/transport/knobs.h"

namespace artune::transport {

namespace {

// The field of control::Knobs that carries `knob`: the one of the same name, or
// nullptr for a knob each end keeps to itself.
const google::protobuf::FieldDescriptor* WireField(const Knob& knob) {
  return control::Knobs::descriptor()->FindFieldByName(std::string(knob.name));
}

bool IsWide(const google::protobuf::FieldDescriptor& field) {
  return field.cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64;
}

// The scalar counters of Stats, each carried by the StatsResponse field of the same
// name: one line here per counter, instead of a copy each way.
struct StatsCounter {
  const char* name;
  uint64_t Stats::*member;
};
constexpr StatsCounter kStatsCounters[] = {
    {"calls_started", &Stats::calls_started},
    {"calls_completed", &Stats::calls_completed},
    {"calls_failed", &Stats::calls_failed},
    {"connections_accepted", &Stats::connections_accepted},
    {"connections_dropped", &Stats::connections_dropped},
    {"shm_reads_one_copy", &Stats::shm_reads_one_copy},
    {"shm_reads_owner_copy", &Stats::shm_reads_owner_copy},
    {"shm_one_copy_refused", &Stats::shm_one_copy_refused},
    {"process_cpu_ns", &Stats::process_cpu_ns},
};

// Never null: control_codec_test.cc checks every counter has its field.
const google::protobuf::FieldDescriptor* StatsField(const StatsCounter& counter) {
  return control::StatsResponse::descriptor()->FindFieldByName(counter.name);
}

}  // namespace

control::Knobs ToKnobs(const Config& config) {
  control::Knobs knobs;
  const google::protobuf::Reflection& reflection = *knobs.GetReflection();
  for (const Knob& knob : Knobs()) {
    const google::protobuf::FieldDescriptor* field = WireField(knob);
    if (field == nullptr) continue;
    const uint64_t value = knob.get(config);
    if (IsWide(*field)) {
      reflection.SetUInt64(&knobs, field, value);
    } else {
      reflection.SetUInt32(&knobs, field, static_cast<uint32_t>(value));
    }
  }
  return knobs;
}

Config FromKnobs(const control::Knobs& knobs) {
  Config config;
  const google::protobuf::Reflection& reflection = *knobs.GetReflection();
  for (const Knob& knob : Knobs()) {
    const google::protobuf::FieldDescriptor* field = WireField(knob);
    if (field == nullptr) continue;
    const uint64_t value =
        IsWide(*field) ? reflection.GetUInt64(knobs, field) : reflection.GetUInt32(knobs, field);
    // An enum value past the knob's choices (a bad peer) would be undefined once
    // cast to the enum: the knob keeps its default instead.
    if (knob.type == KnobType::kEnum && value > knob.max_value) continue;
    knob.set(config, value);
  }
  return config;
}

Config WithLocalKnobs(Config negotiated, const Config& local) {
  for (const Knob& knob : Knobs()) {
    if (WireField(knob) == nullptr) knob.set(negotiated, knob.get(local));
  }
  return negotiated;
}

control::StatsResponse ToProto(const Stats& stats) {
  control::StatsResponse proto;
  for (const ProtocolStats& counters : stats.by_protocol) {
    control::ProtocolCounters* out = proto.add_by_protocol();
    out->set_slices(counters.slices);
    out->set_bytes(counters.bytes);
    for (uint64_t count : counters.slices_by_bucket) out->add_slices_by_bucket(count);
  }
  const google::protobuf::Reflection& reflection = *proto.GetReflection();
  for (const StatsCounter& counter : kStatsCounters) {
    reflection.SetUInt64(&proto, StatsField(counter), stats.*counter.member);
  }
  return proto;
}

Stats FromProto(const control::StatsResponse& proto) {
  Stats stats;
  for (int p = 0; p < kProtocolCount && p < proto.by_protocol_size(); ++p) {
    const control::ProtocolCounters& counters = proto.by_protocol(p);
    stats.by_protocol[p].slices = counters.slices();
    stats.by_protocol[p].bytes = counters.bytes();
    for (int b = 0; b < kLog2BucketCount && b < counters.slices_by_bucket_size(); ++b) {
      stats.by_protocol[p].slices_by_bucket[b] = counters.slices_by_bucket(b);
    }
  }
  const google::protobuf::Reflection& reflection = *proto.GetReflection();
  for (const StatsCounter& counter : kStatsCounters) {
    stats.*counter.member = reflection.GetUInt64(proto, StatsField(counter));
  }
  return stats;
}

}  // namespace artune::transport
