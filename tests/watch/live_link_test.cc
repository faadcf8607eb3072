// LiveLink against real transport servers on loopback: what a push does to the
// watched servers when one of them cannot be reached.
#include <gtest/gtest.h>

#include <memory>

#include "artune/transport/config.h"
#include "artune/transport/credentials.h"
#include "artune/transport/transport.h"
#include "artune/watch/watcher.h"

namespace artune::watch {
namespace {

transport::Config TcpConfig() {
  transport::Config config;
  config.fabric = transport::FabricKind::kTcp;
  return config;
}

// The relays of a job are on several hosts: a push that reaches one and then fails
// at another left them running different configs (each link's protocols are its
// server's) while the watcher, reading the first, believed the push had happened.
TEST(LiveLinkTest, PushChangesNoServerWhenOneCannotBeReached) {
  auto reachable = transport::Server::Start(TcpConfig(), "127.0.0.1:0", transport::Credentials{});
  ASSERT_TRUE(reachable.ok()) << reachable.status().ToString();
  // A port where nothing listens any more: the address of a server that has stopped.
  std::string unreachable;
  {
    auto stopped = transport::Server::Start(TcpConfig(), "127.0.0.1:0", transport::Credentials{});
    ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
    unreachable = (*stopped)->address();
  }
  LiveLinkOptions options;
  options.servers = {(*reachable)->address(), unreachable};
  options.ab_peer = "127.0.0.1:1";
  auto link = OpenLiveLink(options);
  ASSERT_TRUE(link.ok()) << link.status().ToString();

  transport::Config candidate = (*reachable)->config();
  const uint64_t in_force_chunk = candidate.chunk_size;
  candidate.chunk_size = in_force_chunk * 2;
  const Status pushed = (*link)->Push(candidate);
  EXPECT_FALSE(pushed.ok());
  EXPECT_NE(pushed.message().find(unreachable), std::string::npos) << pushed.ToString();
  EXPECT_EQ((*reachable)->config().chunk_size, in_force_chunk)
      << "the reachable server took a push that failed";

  // With every server reachable the push reaches it.
  options.servers = {(*reachable)->address()};
  auto reachable_only = OpenLiveLink(options);
  ASSERT_TRUE(reachable_only.ok()) << reachable_only.status().ToString();
  ASSERT_TRUE((*reachable_only)->Push(candidate).ok());
  EXPECT_EQ((*reachable)->config().chunk_size, in_force_chunk * 2);
}

}  // namespace
}  // namespace artune::watch
