// Classification rules (histogram buckets, size classes, payload scheme), rates,
// I/O-call aggregation, and the JSON / table output.
#include "artune/probes/profile.h"

#include <gtest/gtest.h>

#include "artune/probes/profile_output.h"

namespace artune::probes {
namespace {

GrpcMessage Message(std::string_view method, uint32_t length, uint64_t ts_ns = 0,
                    MessageDirection direction = MessageDirection::kResponse) {
  GrpcMessage m;
  m.connection_id = 1;
  m.method = method;
  m.method_known = true;
  m.length = length;
  m.timestamp_ns = ts_ns;
  m.direction = direction;
  return m;
}

TEST(Classify, Log2BucketsAndClasses) {
  EXPECT_EQ(Log2Histogram::BucketOf(0), 0u);
  EXPECT_EQ(Log2Histogram::BucketOf(1), 1u);
  EXPECT_EQ(Log2Histogram::BucketOf(1023), 512u);
  EXPECT_EQ(Log2Histogram::BucketOf(1024), 1024u);
  EXPECT_EQ(Log2Histogram::BucketOf((1u << 20) + 5), 1u << 20);
  EXPECT_EQ(ClassifySize(0), SizeClass::kEmpty);
  EXPECT_EQ(ClassifySize(1), SizeClass::kSmall);
  EXPECT_EQ(ClassifySize(1023), SizeClass::kSmall);
  EXPECT_EQ(ClassifySize(1024), SizeClass::kMedium);
  EXPECT_EQ(ClassifySize((1 << 20) - 1), SizeClass::kMedium);
  EXPECT_EQ(ClassifySize(1 << 20), SizeClass::kLarge);
}

TEST(Classify, SchemeRule) {
  EXPECT_EQ(ClassifyScheme(0, 0, 0, 0, 0), PayloadScheme::kNone);
  EXPECT_EQ(ClassifyScheme(1, 7, 7, 7, 7), PayloadScheme::kUniform);
  EXPECT_EQ(ClassifyScheme(10, 1000, 1250, 1100, 1100), PayloadScheme::kUniform);  // 1.25x
  EXPECT_EQ(ClassifyScheme(10, 1000, 1251, 1100, 1100), PayloadScheme::kRandom);
  EXPECT_EQ(ClassifyScheme(10, 10, 1000000, 100010, 10), PayloadScheme::kSkew);
  EXPECT_EQ(ClassifyScheme(10, 0, 0, 0, 0), PayloadScheme::kUniform);  // all empty
}

TEST(Classify, ProfileOfUniformRandomAndSkewedMethods) {
  ProfileBuilder builder;
  for (int i = 0; i < 100; ++i) builder.AddMessage(Message("/u", 4096));
  for (int i = 0; i < 100; ++i) builder.AddMessage(Message("/r", 1000 + 97 * i));
  for (int i = 0; i < 100; ++i) builder.AddMessage(Message("/s", i % 10 == 0 ? 4 << 20 : 512));
  const Profile p = builder.Build("test", 1.5, DecodeErrorCounts{}, 0);
  ASSERT_EQ(p.methods.size(), 3u);
  std::map<std::string, const MethodProfile*> by;
  for (const auto& m : p.methods) by[m.method] = &m;
  EXPECT_EQ(by["/u"]->scheme, PayloadScheme::kUniform);
  EXPECT_EQ(by["/u"]->message_sizes.buckets.at(4096), 100u);
  EXPECT_EQ(by["/u"]->classes.medium.count, 100u);
  EXPECT_EQ(by["/u"]->classes.medium.bytes, 409600u);
  EXPECT_EQ(by["/r"]->scheme, PayloadScheme::kRandom);
  EXPECT_EQ(by["/r"]->min_size, 1000u);
  EXPECT_EQ(by["/r"]->max_size, 1000u + 97 * 99);
  EXPECT_EQ(by["/s"]->scheme, PayloadScheme::kSkew);
  EXPECT_EQ(by["/s"]->classes.large.count, 10u);
  EXPECT_EQ(by["/s"]->classes.small.count, 90u);
  EXPECT_DOUBLE_EQ(by["/s"]->median_size, 512);
}

TEST(Classify, RatesPerSecond) {
  ProfileBuilder builder;
  const uint64_t t0 = 5'000'000'000ull;
  builder.AddMessage(Message("/m", 10, t0));
  builder.AddMessage(Message("/m", 20, t0 + 500'000'000ull));
  builder.AddMessage(Message("/m", 30, t0 + 2'100'000'000ull));
  builder.AddMessage(Message("/m", 40, t0 + 1'000'000'000ull));  // late, out of order
  const Profile p = builder.Build("test", 3, DecodeErrorCounts{}, 0);
  ASSERT_EQ(p.methods.size(), 1u);
  const auto& rates = p.methods[0].rates;
  ASSERT_EQ(rates.size(), 3u);
  EXPECT_EQ(rates[0].second, 0u);
  EXPECT_EQ(rates[0].messages, 2u);
  EXPECT_EQ(rates[0].bytes, 30u);
  EXPECT_EQ(rates[1].second, 1u);
  EXPECT_EQ(rates[1].bytes, 40u);
  EXPECT_EQ(rates[2].second, 2u);
  EXPECT_EQ(rates[2].bytes, 30u);
}

TEST(Classify, IoCallsKeepEveryIovecLength) {
  ProfileBuilder builder;
  IoCallEvent call;
  call.syscall = IoSyscall::kSendmsg;
  for (int i = 0; i < 260; ++i) call.iovec_lengths.push_back(i < 258 ? 100 : 1 << 20);
  call.result = 258 * 100 + 2 * (1 << 20);
  builder.AddIoCall(call);
  call.result = -11;  // EAGAIN
  builder.AddIoCall(call);
  const Profile p = builder.Build("test", 1, DecodeErrorCounts{}, 0);
  ASSERT_EQ(p.io_flows.size(), 1u);
  EXPECT_EQ(p.io_flows[0].calls, 2u);
  EXPECT_EQ(p.io_flows[0].failed_calls, 1u);
  EXPECT_EQ(p.io_flows[0].iovec_sizes.buckets.at(64), 2u * 258);
  EXPECT_EQ(p.io_flows[0].iovec_sizes.buckets.at(1 << 20), 4u);
  EXPECT_EQ(p.io_flows[0].iovecs_per_call.buckets.at(256), 2u);
}

TEST(Output, JsonHasTheDocumentedFieldsAndRoundTrips) {
  ProfileBuilder builder;
  builder.AddMessage(Message("/tensorflow.WorkerService/RecvTensor", 3 << 20));
  builder.AddMessage(
      Message("/tensorflow.WorkerService/RecvTensor", 60, 0, MessageDirection::kRequest));
  DecodeErrorCounts errors;
  errors.Add(DecodeError::kHpackError, 2);
  Profile p = builder.Build("pcap", 2.5, errors, 7);
  const std::string json = ProfileToJson(p);
  for (const char* key :
       {"\"backend\"", "\"duration_s\"", "\"capture_id\": null", "\"errors\"", "\"hpack_error\": 2",
        "\"lost_events\": 7", "\"methods\"", "\"message_size_histogram\"", "\"2097152\": 1",
        "\"classes\"", "\"scheme\": \"uniform\"", "\"direction\": \"request\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  EXPECT_EQ(json.find("iovec_size_histogram"), std::string::npos);  // pcap sees none
  p.capture_id = 12;
  auto back = ProfileFromJson(ProfileToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ProfileToJson(*back), ProfileToJson(p));
  EXPECT_EQ(ProfileFromJson("{\"backend\": 1}").status().code(), ErrorCode::kCorruption);
}

TEST(Output, TableIsAlignedWithUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(4096), "4.0 KiB");
  EXPECT_EQ(FormatBytes(3 << 20), "3.0 MiB");
  ProfileBuilder builder;
  builder.AddMessage(Message("/a.Very.Long.Service/Method", 3 << 20));
  builder.AddMessage(Message("/b", 100));
  Profile p = builder.Build("pcap", 1, DecodeErrorCounts{}, 0);
  p.connections_joined_midway = 1;
  const std::string table = FormatProfileTable(p);
  EXPECT_NE(table.find("3.0 MiB"), std::string::npos) << table;
  EXPECT_NE(table.find("joined midway"), std::string::npos) << table;
  // Columns line up: "DIR" starts at the same offset on the header and each row.
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = table.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(table.substr(start, end - start));
  }
  ASSERT_GE(lines.size(), 4u);
  const size_t column = lines[1].find("DIR");
  EXPECT_EQ(lines[2].find("response"), column);
  EXPECT_EQ(lines[3].find("response"), column);
}

}  // namespace
}  // namespace artune::probes
