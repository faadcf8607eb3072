// libFuzzer target: the tcp fabric's frame parser, fed by a hostile peer over a
// real loopback socket. The fabric listens once; each input is one connection
// whose bytes (after an optional valid hello, so the fuzzer also reaches the
// frames behind it) come from the input. The accepted endpoint has receive
// buffers posted, one offer exposed and one read of its own outstanding, so
// sends, read requests and read responses all have something to hit. The
// server side must drop a bad peer and never crash or touch memory it does not
// own (ASan); each input ends when the fabric closes the connection.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "fabric/fabric.h"
#include "wire.h"

namespace {

using namespace artune;
using namespace artune::transport;

constexpr uint64_t kRegionBytes = 1 << 20;
constexpr uint64_t kRecvBytes = 8192;
constexpr int kRecvBuffers = 4;

struct Listener {
  std::unique_ptr<fabric::Fabric> fabric;
  std::vector<std::byte> region = std::vector<std::byte>(kRegionBytes);
  fabric::MemoryKeys keys;
  uint16_t port = 0;
  std::mutex mutex;
  std::set<std::shared_ptr<fabric::Endpoint>> live;
};

Status OnAccept(Listener& listener, std::shared_ptr<fabric::Endpoint> endpoint) {
  std::byte* base = listener.region.data();
  for (int i = 0; i < kRecvBuffers; ++i) {
    ARTUNE_RETURN_IF_ERROR(endpoint->PostRecv(base + i * kRecvBytes, kRecvBytes, listener.keys.lkey,
                                              static_cast<uint64_t>(i)));
  }
  ARTUNE_RETURN_IF_ERROR(endpoint->Expose(base + 64 * 1024, 4096, listener.keys.lkey).status());
  // A read of our own, so that the peer's read responses have one to match.
  ARTUNE_RETURN_IF_ERROR(
      endpoint->PostRead({0x10000, 1234, 64}, base + 128 * 1024, listener.keys.lkey, 99));
  {
    std::lock_guard lock(listener.mutex);
    listener.live.insert(endpoint);
  }
  endpoint->Start([&listener, base](fabric::Endpoint& self, const fabric::Completion& done) {
    if (done.kind == fabric::CompletionKind::kRecv && done.status.ok()) {
      (void)self.PostRecv(base + done.wr_id * kRecvBytes, kRecvBytes, listener.keys.lkey,
                          done.wr_id);
    } else if (done.kind == fabric::CompletionKind::kDisconnected) {
      std::lock_guard lock(listener.mutex);
      for (auto it = listener.live.begin(); it != listener.live.end(); ++it) {
        if (it->get() == &self) {
          listener.live.erase(it);
          break;
        }
      }
    }
  });
  return Status::Ok();
}

Listener& TheListener() {
  static Listener* listener = [] {
    auto* made = new Listener;
    Config config;
    auto fabric = fabric::MakeFabric(FabricKind::kTcp, config);
    if (!fabric.ok()) abort();
    made->fabric = std::move(*fabric);
    auto keys = made->fabric->Register(made->region.data(), kRegionBytes);
    if (!keys.ok()) abort();
    made->keys = *keys;
    auto address = made->fabric->Listen(
        "127.0.0.1", [made](std::shared_ptr<fabric::Endpoint> endpoint,
                            std::span<const std::byte>) { return OnAccept(*made, endpoint); });
    if (!address.ok()) abort();
    made->port = static_cast<uint16_t>(std::stoi(address->substr(address->rfind(':') + 1)));
    return made;
  }();
  return *listener;
}

// Writes everything, reading what the server sends meanwhile (so neither side
// blocks on a full socket buffer); then half-closes and reads until the server
// closes, bounded by a deadline.
void Exchange(int fd, const uint8_t* data, size_t size) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  char sink[65536];
  bool write_open = true;
  while (std::chrono::steady_clock::now() < deadline) {
    if (write_open && size == 0) {
      shutdown(fd, SHUT_WR);
      write_open = false;
    }
    pollfd entry{fd, static_cast<short>(POLLIN | (write_open ? POLLOUT : 0)), 0};
    if (poll(&entry, 1, 100) <= 0) continue;
    if (entry.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t got = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return;
    }
    if (write_open && (entry.revents & POLLOUT)) {
      const ssize_t sent = send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return;
      if (sent > 0) {
        data += sent;
        size -= static_cast<size_t>(sent);
      }
    }
  }
  abort();  // the fabric neither closed a finished peer nor dropped a bad one in 5 s
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Listener& listener = TheListener();
  std::vector<uint8_t> bytes;
  if ((data[0] & 1) != 0) {
    // A valid hello with no private data first.
    wire::FrameHeader hello{};
    hello.magic = wire::kTcpMagic;
    hello.version = static_cast<uint8_t>(wire::kWireVersion);
    hello.kind = static_cast<uint8_t>(wire::FrameKind::kHello);
    const auto* raw = reinterpret_cast<const uint8_t*>(&hello);
    bytes.assign(raw, raw + sizeof hello);
  }
  bytes.insert(bytes.end(), data + 1, data + size);

  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) abort();
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(listener.port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) abort();
  Exchange(fd, bytes.data(), bytes.size());
  close(fd);
  return 0;
}
