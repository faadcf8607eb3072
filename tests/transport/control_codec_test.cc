// The control plane's knob codec (control_codec.h), driven by the knob table: what
// it puts on the wire is what the hand-written field list of earlier versions put
// there, so a peer of an earlier version reads it and is read the same.
#include "control_codec.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "artune/transport/knobs.h"
#include "control.pb.h"

namespace artune::transport {
namespace {

// Every knob at a value of its own (within range, not its default).
Config DistinctConfig() {
  Config config;
  config.eager_threshold = 32 * 1024;
  config.chunk_size = 1024 * 1024;
  config.pipeline_depth = 7;
  config.coalesce_limit = 8 * 1024;
  config.max_outstanding = 33;
  config.eager_buffer_count = 17;
  config.fabric = FabricKind::kShm;
  config.polling = PollingMode::kBusy;
  config.poll_spin_us = 99;
  config.timeout_ms = 4321;
  config.handler_inline = HandlerInline::kOff;
  config.idle_timeout_ms = 1234;
  config.verbs_device = 2;
  config.verbs_port = 2;
  config.verbs_gid_index = 3;
  config.verbs_mtu = 4096;
  config.verbs_inline_size = 64;
  config.verbs_qp_timeout = 17;
  config.verbs_retry_count = 5;
  return config;
}

// What a peer of an earlier version sends for `config`: its field list, by hand.
control::Knobs EarlierVersionKnobs(const Config& config) {
  control::Knobs knobs;
  knobs.set_eager_threshold(config.eager_threshold);
  knobs.set_chunk_size(config.chunk_size);
  knobs.set_pipeline_depth(config.pipeline_depth);
  knobs.set_coalesce_limit(config.coalesce_limit);
  knobs.set_max_outstanding(config.max_outstanding);
  knobs.set_eager_buffer_count(config.eager_buffer_count);
  knobs.set_fabric(static_cast<uint32_t>(config.fabric));
  knobs.set_polling(static_cast<uint32_t>(config.polling));
  knobs.set_timeout_ms(config.timeout_ms);
  knobs.set_handler_inline(static_cast<uint32_t>(config.handler_inline));
  knobs.set_poll_spin_us(config.poll_spin_us);
  return knobs;
}

TEST(ControlCodec, SendsTheBytesAnEarlierVersionSends) {
  const Config config = DistinctConfig();
  EXPECT_EQ(ToKnobs(config).SerializeAsString(), EarlierVersionKnobs(config).SerializeAsString());
  // The field numbers an earlier peer parses by.
  const std::map<std::string, int> numbers = {
      {"eager_threshold", 1}, {"chunk_size", 2},      {"pipeline_depth", 3},
      {"coalesce_limit", 4},  {"max_outstanding", 5}, {"eager_buffer_count", 6},
      {"fabric", 7},          {"polling", 8},         {"timeout_ms", 9},
      {"handler_inline", 10}, {"poll_spin_us", 11}};
  const google::protobuf::Descriptor& descriptor = *control::Knobs::descriptor();
  ASSERT_EQ(descriptor.field_count(), static_cast<int>(numbers.size()));
  for (const auto& [name, number] : numbers) {
    ASSERT_NE(descriptor.FindFieldByName(name), nullptr) << name;
    EXPECT_EQ(descriptor.FindFieldByName(name)->number(), number) << name;
  }
}

TEST(ControlCodec, ReadsWhatAnEarlierVersionSends) {
  const Config config = DistinctConfig();
  const Config local;
  control::Knobs received;
  ASSERT_TRUE(received.ParseFromString(EarlierVersionKnobs(config).SerializeAsString()));
  const Config read = WithLocalKnobs(FromKnobs(received), local);
  for (const Knob& knob : Knobs()) {
    const bool travels = control::Knobs::descriptor()->FindFieldByName(std::string(knob.name));
    EXPECT_EQ(knob.get(read), knob.get(travels ? config : local)) << knob.name;
  }
}

// Each field of the message is a knob of the table (else it would be dropped
// silently), and the knobs that do not travel are exactly each end's own.
TEST(ControlCodec, EveryWireFieldIsAKnobAndOnlyLocalKnobsStayHome) {
  const google::protobuf::Descriptor& descriptor = *control::Knobs::descriptor();
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *descriptor.field(i);
    EXPECT_NE(FindKnob(field.name()), nullptr) << field.name() << " is no knob";
    EXPECT_TRUE(field.cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32 ||
                field.cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT64)
        << field.name();
  }
  std::set<std::string> home;
  for (const Knob& knob : Knobs()) {
    if (descriptor.FindFieldByName(std::string(knob.name)) == nullptr) home.emplace(knob.name);
  }
  EXPECT_EQ(home, (std::set<std::string>{"idle_timeout_ms", "verbs_device", "verbs_port",
                                         "verbs_gid_index", "verbs_mtu", "verbs_inline_size",
                                         "verbs_qp_timeout", "verbs_retry_count"}));
}

TEST(ControlCodec, LocalKnobsComeFromTheLocalConfigTheRestFromThePeer) {
  const Config peer = DistinctConfig();
  Config local;
  local.verbs_device = 1;
  local.verbs_mtu = 1024;
  local.idle_timeout_ms = 999;
  local.eager_threshold = 4096;  // travels: the peer's wins
  const Config merged = WithLocalKnobs(peer, local);
  EXPECT_EQ(merged.verbs_device, 1u);
  EXPECT_EQ(merged.verbs_mtu, 1024u);
  EXPECT_EQ(merged.idle_timeout_ms, 999u);
  EXPECT_EQ(merged.verbs_qp_timeout, local.verbs_qp_timeout);
  EXPECT_EQ(merged.eager_threshold, peer.eager_threshold);
  EXPECT_EQ(merged.fabric, peer.fabric);
}

TEST(ControlCodec, AnEnumPastItsChoicesKeepsTheDefault) {
  control::Knobs hostile = ToKnobs(DistinctConfig());
  hostile.set_fabric(4);
  hostile.set_polling(~0u);
  hostile.set_handler_inline(2);
  const Config read = FromKnobs(hostile);
  const Config defaults;
  EXPECT_EQ(read.fabric, defaults.fabric);
  EXPECT_EQ(read.polling, defaults.polling);
  EXPECT_EQ(read.handler_inline, defaults.handler_inline);
  EXPECT_EQ(read.eager_threshold, DistinctConfig().eager_threshold);  // the rest is read
}

// Every counter at a value of its own, as the hand-written copy of earlier versions
// put them on the wire.
TEST(ControlCodec, StatsTravelAsTheEarlierFieldListSentThem) {
  Stats stats;
  stats.by_protocol[1].slices = 5;
  stats.by_protocol[1].bytes = 6000;
  stats.by_protocol[1].slices_by_bucket[3] = 5;
  stats.calls_started = 11;
  stats.calls_completed = 12;
  stats.calls_failed = 13;
  stats.connections_accepted = 14;
  stats.connections_dropped = 15;
  stats.shm_reads_one_copy = 16;
  stats.shm_reads_owner_copy = 17;
  stats.shm_one_copy_refused = 18;
  stats.process_cpu_ns = 19;
  const control::StatsResponse proto = ToProto(stats);
  EXPECT_EQ(proto.calls_started(), 11u);
  EXPECT_EQ(proto.calls_completed(), 12u);
  EXPECT_EQ(proto.calls_failed(), 13u);
  EXPECT_EQ(proto.connections_accepted(), 14u);
  EXPECT_EQ(proto.connections_dropped(), 15u);
  EXPECT_EQ(proto.shm_reads_one_copy(), 16u);
  EXPECT_EQ(proto.shm_reads_owner_copy(), 17u);
  EXPECT_EQ(proto.shm_one_copy_refused(), 18u);
  EXPECT_EQ(proto.process_cpu_ns(), 19u);
  ASSERT_EQ(proto.by_protocol_size(), kProtocolCount);
  EXPECT_EQ(proto.by_protocol(1).bytes(), 6000u);
  EXPECT_EQ(proto.by_protocol(1).slices_by_bucket(3), 5u);
}

// A counter added to the proto but not to the codec's table would be dropped on
// the way through: every field of StatsResponse survives a round trip.
TEST(ControlCodec, EveryStatsFieldSurvivesARoundTrip) {
  control::StatsResponse sent;
  const google::protobuf::Descriptor& descriptor = *sent.GetDescriptor();
  const google::protobuf::Reflection& reflection = *sent.GetReflection();
  for (int p = 0; p < kProtocolCount; ++p) {
    control::ProtocolCounters* counters = sent.add_by_protocol();
    counters->set_slices(100 + p);
    counters->set_bytes(1000 + p);
    for (int b = 0; b < kLog2BucketCount; ++b) counters->add_slices_by_bucket(b + p);
  }
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor.field(i);
    if (field->is_repeated()) continue;
    ASSERT_EQ(field->cpp_type(), google::protobuf::FieldDescriptor::CPPTYPE_UINT64)
        << field->name();
    reflection.SetUInt64(&sent, field, 7000 + static_cast<uint64_t>(i));
  }
  const control::StatsResponse received = ToProto(FromProto(sent));
  EXPECT_EQ(received.SerializeAsString(), sent.SerializeAsString())
      << "sent " << sent.ShortDebugString() << "\nreceived " << received.ShortDebugString();
}

}  // namespace
}  // namespace artune::transport
