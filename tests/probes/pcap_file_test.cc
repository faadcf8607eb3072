// The pcap backend over capture files the tests write themselves: TCP reassembly
// (out of order, retransmitted, overlapping, wrapped, many connections, joined
// midway, holes) and the profile that comes out of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "artune/probes/backend.h"
#include "artune/probes/profile_output.h"
#include "artune/probes/session.h"
#include "h2_builder.h"

namespace artune::probes {
namespace {

using testing::Packet;

const MethodProfile* FindMethod(const Profile& profile, const std::string& method,
                                MessageDirection direction) {
  for (const MethodProfile& m : profile.methods) {
    if (m.method == method && m.direction == direction) return &m;
  }
  return nullptr;
}

Result<Profile> ProfileOfFile(const std::string& path, std::optional<uint16_t> port = 50051) {
  BackendOptions options;
  options.pcap.read_file = path;
  ARTUNE_ASSIGN_OR_RETURN(auto backend, CreateCaptureBackend(options));
  ARTUNE_RETURN_IF_ERROR(backend->Start());
  SessionOptions session_options;
  session_options.server_port = port;
  ProbeSession session(session_options);
  ARTUNE_RETURN_IF_ERROR(backend->Run(session, StopCondition{}));
  return session.Finish("pcap", backend->counters(), 0);
}

struct TwoFlows {
  std::vector<Packet> client;
  std::vector<Packet> server;
};

TwoFlows Connection(const std::vector<testing::CallSpec>& calls, uint16_t client_port,
                    uint32_t client_isn = 1000, uint32_t server_isn = 900000, size_t mss = 1448) {
  const auto conversation = testing::BuildConversation(calls);
  const Endpoint client = testing::Ipv4(127, 0, 0, 1, client_port);
  const Endpoint server = testing::Ipv4(127, 0, 0, 1, 50051);
  return {testing::Segment({client, server}, conversation.client, client_isn, mss, true, true),
          testing::Segment({server, client}, conversation.server, server_isn, mss, true, true)};
}

std::vector<Packet> Concat(const std::vector<Packet>& a, const std::vector<Packet>& b) {
  std::vector<Packet> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<testing::CallSpec> TensorCalls(int count) {
  std::vector<testing::CallSpec> calls;
  for (int i = 0; i < count; ++i) {
    calls.push_back({std::string(kRecvTensorMethod), 60, 0, {64, 1024}, 16384});
    calls.push_back({"/tensorflow.WorkerService/GetStatus", 0, 300, {}, 16384});
  }
  return calls;
}

const uint32_t kTensorMessage =
    static_cast<uint32_t>(testing::RecvTensorResponse(1, {64, 1024}, 64 * 1024 * 4).size());

void ExpectTensorProfile(const Profile& profile, int calls) {
  const MethodProfile* responses =
      FindMethod(profile, std::string(kRecvTensorMethod), MessageDirection::kResponse);
  ASSERT_NE(responses, nullptr);
  EXPECT_EQ(responses->messages, static_cast<uint64_t>(calls));
  EXPECT_EQ(responses->bytes, uint64_t{kTensorMessage} * calls);
  EXPECT_EQ(responses->classes.medium.count, static_cast<uint64_t>(calls));
  EXPECT_EQ(responses->scheme, PayloadScheme::kUniform);
  EXPECT_EQ(responses->tensors.at("DT_FLOAT[64,1024]"), static_cast<uint64_t>(calls));
  const MethodProfile* requests =
      FindMethod(profile, std::string(kRecvTensorMethod), MessageDirection::kRequest);
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->messages, static_cast<uint64_t>(calls));
  EXPECT_EQ(requests->bytes, 60u * calls);
  const MethodProfile* status =
      FindMethod(profile, "/tensorflow.WorkerService/GetStatus", MessageDirection::kRequest);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->messages, static_cast<uint64_t>(calls));
  EXPECT_EQ(status->classes.empty.count, static_cast<uint64_t>(calls));
}

TEST(PcapFile, InOrderConnectionGivesTheExactProfile) {
  const TwoFlows flows = Connection(TensorCalls(5), 40000);
  const std::string path = testing::TempPath("in_order.pcap");
  testing::WritePcap(path, Concat(flows.client, flows.server));
  auto profile = ProfileOfFile(path);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ExpectTensorProfile(*profile, 5);
  EXPECT_TRUE(profile->errors.empty());
  EXPECT_EQ(profile->connections_joined_midway, 0u);
  ASSERT_EQ(profile->connections.size(), 1u);
  EXPECT_EQ(profile->connections[0].client, "127.0.0.1:40000");
  EXPECT_EQ(profile->connections[0].server, "127.0.0.1:50051");
  EXPECT_TRUE(profile->connections[0].roles_known);
  std::filesystem::remove(path);
}

TEST(PcapFile, OutOfOrderRetransmittedAndOverlappingSegments) {
  TwoFlows flows = Connection(TensorCalls(4), 40001);
  for (std::vector<Packet>* packets : {&flows.client, &flows.server}) {
    std::vector<Packet>& p = *packets;
    // Swap neighbours (after the SYN), duplicate every 5th segment later on, and add
    // a segment overlapping two neighbours.
    for (size_t i = 1; i + 1 < p.size() - 1; i += 3) std::swap(p[i], p[i + 1]);
    std::vector<Packet> extra;
    for (size_t i = 2; i < p.size(); i += 5) extra.push_back(p[i]);
    for (size_t i = 3; i + 1 < p.size(); i += 7) {
      if (p[i].payload.size() < 200 || p[i + 1].payload.size() < 200 ||
          p[i + 1].sequence != p[i].sequence + p[i].payload.size()) {
        continue;
      }
      Packet overlap = p[i];
      overlap.payload.assign(p[i].payload.end() - 100, p[i].payload.end());
      overlap.payload.insert(overlap.payload.end(), p[i + 1].payload.begin(),
                             p[i + 1].payload.begin() + 100);
      overlap.sequence = p[i].sequence + static_cast<uint32_t>(p[i].payload.size()) - 100;
      extra.push_back(overlap);
    }
    // Duplicates land just before the FIN.
    p.insert(p.end() - 1, extra.begin(), extra.end());
  }
  const std::string path = testing::TempPath("reordered.pcap");
  testing::WritePcap(path, Concat(flows.client, flows.server));
  auto profile = ProfileOfFile(path);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ExpectTensorProfile(*profile, 4);
  EXPECT_TRUE(profile->errors.empty());
  EXPECT_GT(profile->backend_detail.at("out_of_order_segments"), 0u);
  EXPECT_GT(profile->backend_detail.at("retransmitted_bytes"), 0u);
  EXPECT_EQ(profile->backend_detail.at("stream_gaps"), 0u);
  std::filesystem::remove(path);
}

TEST(PcapFile, OverlapThatStartsMidSegmentIsTrimmed) {
  TwoFlows flows = Connection(TensorCalls(2), 40002);
  std::vector<Packet>& p = flows.server;
  // Replace segments 3 and 4 by one segment covering 4 and the tail of 3, sent
  // after 3: bytes of 3 are overlapped and must be trimmed, not delivered twice.
  ASSERT_GT(p.size(), 6u);
  Packet merged = p[4];
  merged.sequence = p[3].sequence + 10;
  merged.payload.assign(p[3].payload.begin() + 10, p[3].payload.end());
  merged.payload.insert(merged.payload.end(), p[4].payload.begin(), p[4].payload.end());
  p[4] = merged;
  const std::string path = testing::TempPath("overlap.pcap");
  testing::WritePcap(path, Concat(flows.client, flows.server));
  auto profile = ProfileOfFile(path);
  ASSERT_TRUE(profile.ok());
  ExpectTensorProfile(*profile, 2);
  EXPECT_EQ(profile->backend_detail.at("overlapping_bytes"), p[3].payload.size() - 10);
  std::filesystem::remove(path);
}

TEST(PcapFile, SequenceNumbersThatWrap) {
  const TwoFlows flows = Connection(TensorCalls(3), 40003, 0xffffff00u, 0xfffff000u);
  const std::string path = testing::TempPath("wrap.pcap");
  testing::WritePcap(path, Concat(flows.client, flows.server));
  auto profile = ProfileOfFile(path);
  ASSERT_TRUE(profile.ok());
  ExpectTensorProfile(*profile, 3);
  EXPECT_TRUE(profile->errors.empty());
}

TEST(PcapFile, ManyConnectionsInterleaved) {
  constexpr int kConnections = 40;
  std::vector<TwoFlows> all;
  for (int i = 0; i < kConnections; ++i) {
    all.push_back(Connection(TensorCalls(1), static_cast<uint16_t>(41000 + i), 7u * i, 99u * i));
  }
  // Round-robin: every connection's client packets, then every server's.
  std::vector<Packet> packets;
  for (bool server : {false, true}) {
    for (size_t step = 0;; ++step) {
      bool any = false;
      for (const TwoFlows& f : all) {
        const auto& list = server ? f.server : f.client;
        if (step < list.size()) {
          packets.push_back(list[step]);
          any = true;
        }
      }
      if (!any) break;
    }
  }
  const std::string path = testing::TempPath("many.pcap");
  testing::WritePcap(path, packets);
  auto profile = ProfileOfFile(path);
  ASSERT_TRUE(profile.ok());
  ExpectTensorProfile(*profile, kConnections);
  EXPECT_EQ(profile->connections.size(), static_cast<size_t>(kConnections));
  std::filesystem::remove(path);
}

TEST(PcapFile, CaptureThatStartsMidConnection) {
  const TwoFlows flows = Connection(TensorCalls(8), 40004, 5, 6, 1000);
  // Drop the handshake and the first third of each direction.
  const size_t client_cut = flows.client.size() / 3;
  const size_t server_cut = flows.server.size() / 3;
  std::vector<Packet> packets(flows.client.begin() + static_cast<long>(client_cut),
                              flows.client.end());
  packets.insert(packets.end(), flows.server.begin() + static_cast<long>(server_cut),
                 flows.server.end());
  const std::string path = testing::TempPath("midway.pcap");
  testing::WritePcap(path, packets);
  // --port tells which side is the server: the join lost the preface and HPACK.
  auto profile = ProfileOfFile(path, 50051);
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(profile->connections_joined_midway, 1u);
  const MethodProfile* responses = FindMethod(*profile, "unknown", MessageDirection::kResponse);
  ASSERT_NE(responses, nullptr) << ProfileToJson(*profile);
  // Every response counted is a whole, correctly sized message.
  EXPECT_GE(responses->messages, 4u);
  EXPECT_LE(responses->messages, 11u);
  for (const auto& [bucket, count] : responses->message_sizes.buckets) {
    EXPECT_TRUE(bucket == Log2Histogram::BucketOf(kTensorMessage) ||
                bucket == Log2Histogram::BucketOf(300))
        << bucket;
  }
  EXPECT_EQ(FindMethod(*profile, std::string(kRecvTensorMethod), MessageDirection::kResponse),
            nullptr);
  EXPECT_GT(profile->connections[0].data_frames, 0u);
  EXPECT_TRUE(profile->connections[0].joined_midway);
}

TEST(PcapFile, ReusedFourTupleIsANewConnection) {
  const TwoFlows first = Connection(TensorCalls(2), 40007, 100, 200);
  const TwoFlows second = Connection(TensorCalls(3), 40007, 7777777, 8888888);
  std::vector<Packet> packets = Concat(first.client, first.server);
  packets = Concat(packets, Concat(second.client, second.server));
  const std::string path = testing::TempPath("reuse.pcap");
  testing::WritePcap(path, packets);
  auto profile = ProfileOfFile(path);
  ASSERT_TRUE(profile.ok());
  ExpectTensorProfile(*profile, 5);
  EXPECT_TRUE(profile->errors.empty()) << ProfileToJson(*profile);
  EXPECT_EQ(profile->connections.size(), 2u);
  std::filesystem::remove(path);
}

TEST(PcapFile, HoleThatNeverFillsBecomesAGap) {
  TwoFlows flows = Connection(TensorCalls(4), 40005);
  // Lose one server segment for good, in the middle of the second call.
  flows.server.erase(flows.server.begin() + static_cast<long>(flows.server.size() / 3));
  const std::string path = testing::TempPath("hole.pcap");
  testing::WritePcap(path, Concat(flows.client, flows.server));
  auto profile = ProfileOfFile(path);
  ASSERT_TRUE(profile.ok());
  EXPECT_EQ(profile->backend_detail.at("stream_gaps"), 1u);
  EXPECT_EQ(profile->errors.at("stream_gap"), 1u);
  // Requests are all intact and attributed.
  const MethodProfile* requests =
      FindMethod(*profile, std::string(kRecvTensorMethod), MessageDirection::kRequest);
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->messages, 4u);
}

// Issue 16 (low): a truncated file exited 1 and printed nothing although half of
// it decodes. Now the packets before the cut are decoded and the run says the
// file is truncated (kCorruption: exit 3, after the profile).
TEST(PcapFile, ATruncatedFileKeepsWhatCameBeforeTheCut) {
  const TwoFlows flows = Connection(TensorCalls(5), 40010);
  const std::string path = testing::TempPath("truncated.pcap");
  testing::WritePcap(path, Concat(flows.client, flows.server));
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 7);  // cut into the last record
  BackendOptions options;
  options.pcap.read_file = path;
  auto backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok());
  ASSERT_TRUE((*backend)->Start().ok());
  SessionOptions session_options;
  session_options.server_port = 50051;
  ProbeSession session(session_options);
  const Status ran = (*backend)->Run(session, StopCondition{});
  EXPECT_EQ(ran.code(), ErrorCode::kCorruption) << ran.ToString();
  EXPECT_NE(ran.message().find("truncated"), std::string::npos) << ran.ToString();
  const Profile profile = session.Finish("pcap", (*backend)->counters(), 0);
  EXPECT_FALSE(profile.methods.empty()) << "nothing before the cut was decoded";
  std::filesystem::remove(path);
}

TEST(PcapFile, MissingAndGarbageFilesAndBadFilters) {
  BackendOptions options;
  options.pcap.read_file = "/nonexistent/artune.pcap";
  auto backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok());
  Status status = (*backend)->Start();
  EXPECT_EQ(status.code(), ErrorCode::kNotFound) << status.ToString();

  const std::string garbage = testing::TempPath("garbage.pcap");
  std::ofstream(garbage) << "this is not a capture file at all";
  options.pcap.read_file = garbage;
  backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok());
  status = (*backend)->Start();
  // Corrupt input is exit 3 (README), not a usage error.
  EXPECT_EQ(status.code(), ErrorCode::kCorruption) << status.ToString();
  std::filesystem::remove(garbage);

  const TwoFlows flows = Connection(TensorCalls(1), 40006);
  const std::string path = testing::TempPath("filter.pcap");
  testing::WritePcap(path, flows.client);
  options.pcap.read_file = path;
  options.pcap.filter = "tcp and and port";
  backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok());
  status = (*backend)->Start();
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("pcap-filter"), std::string::npos);
  std::filesystem::remove(path);

  BackendOptions both;
  both.pcap.read_file = path;
  both.pcap.interface = "lo";
  EXPECT_EQ(CreateCaptureBackend(both).status().code(), ErrorCode::kInvalidArgument);
}

TEST(PcapFile, NoSuchInterface) {
  BackendOptions options;
  options.pcap.interface = "artune-nope0";
  auto backend = CreateCaptureBackend(options);
  ASSERT_TRUE(backend.ok());
  const Status status = (*backend)->Start();
  // Without capture rights libpcap may report the permission problem first.
  ASSERT_TRUE(status.code() == ErrorCode::kUnavailable ||
              status.code() == ErrorCode::kPermissionDenied)
      << status.ToString();
  if (status.code() == ErrorCode::kUnavailable) {
    EXPECT_NE(status.message().find("artune-nope0"), std::string::npos);
  } else {
    EXPECT_NE(status.message().find("CAP_NET_RAW"), std::string::npos);
  }
}

}  // namespace
}  // namespace artune::probes
