// A socket program with known I/O, traced by the ebpf and preload backend tests and
// the overhead benchmark. One process, loopback only. Modes:
//   script [--wait]   the calls of IovecScript() from a client to a server thread
//                     (--wait: read one byte from stdin first, so a tracer can attach)
//   errno             checks that errors pass through unchanged; exit 0 when they do
//   threads N M       N threads, each on its own connection, M sendmsg of
//                     {64, 1000, 9 + thread index}
//   flood CALLS       CALLS sendmsg of 260 x 16 bytes as fast as possible
//   fork              the parent sends {33}, a forked child sends {11, 22}
//   exit CODE         exits with CODE
//   reconnect [--wait]  two connections one after the other, the second on the fds
//                     the first closed: {100, 200} then {7, 8}, each verified
//   stream SECONDS [--wait]    throughput: sendmsg of 256 x 4 KiB; prints bytes/s
//   pingpong SECONDS [--wait]  64-byte request/response; prints round trips/s
// Exit status: 0 on success, 2 on a usage error, 3 when the data did not verify.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "iovec_script.h"

using artune::probes::testing::IovecScript;
using artune::probes::testing::PatternByte;
using artune::probes::testing::ScriptBytes;
using artune::probes::testing::ScriptedKind;

namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "iovec_traffic: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

struct Pair {
  int client = -1;
  int server = -1;
};

Pair ConnectLoopback() {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) Die("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) Die("bind");
  if (listen(listener, 16) != 0) Die("listen");
  if (getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    Die("getsockname");
  Pair pair;
  pair.client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(pair.client, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0)
    Die("connect");
  pair.server = accept(listener, nullptr, nullptr);
  if (pair.server < 0) Die("accept");
  close(listener);
  const int one = 1;
  setsockopt(pair.client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(pair.server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return pair;
}

void WaitForGo(bool wait) {
  if (!wait) return;
  char go = 0;
  if (read(STDIN_FILENO, &go, 1) != 1) Die("waiting for the go byte on stdin");
}

// Reads `total` bytes from fd and checks them against the pattern.
bool ReceiveAndVerify(int fd, uint64_t total) {
  std::vector<uint8_t> buffer(64 * 1024);
  uint64_t received = 0;
  bool good = true;
  while (received < total) {
    const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
    if (n <= 0) return false;
    for (ssize_t i = 0; i < n; ++i) good = good && buffer[i] == PatternByte(received + i);
    received += static_cast<uint64_t>(n);
  }
  return good;
}

void SendAll(int fd, const std::vector<iovec>& iov) {
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(iov.data());
  message.msg_iovlen = iov.size();
  size_t total = 0;
  for (const auto& v : iov) total += v.iov_len;
  if (sendmsg(fd, &message, 0) != static_cast<ssize_t>(total)) Die("sendmsg (short)");
}

int RunScript(bool wait) {
  const Pair pair = ConnectLoopback();
  WaitForGo(wait);
  std::atomic<bool> verified{false};
  std::thread receiver([&] { verified = ReceiveAndVerify(pair.server, ScriptBytes()); });
  uint64_t offset = 0;
  for (const auto& call : IovecScript()) {
    uint64_t call_bytes = 0;
    for (uint32_t length : call.lengths) call_bytes += length;
    std::vector<uint8_t> bytes(call_bytes);
    for (uint64_t i = 0; i < call_bytes; ++i) bytes[i] = PatternByte(offset + i);
    std::vector<iovec> iov;
    uint64_t position = 0;
    for (uint32_t length : call.lengths) {
      iov.push_back({bytes.data() + position, length});
      position += length;
    }
    ssize_t sent = 0;
    switch (call.kind) {
      case ScriptedKind::kSendmsg:
        SendAll(pair.client, iov);
        sent = static_cast<ssize_t>(call_bytes);
        break;
      case ScriptedKind::kWritev:
        sent = writev(pair.client, iov.data(), static_cast<int>(iov.size()));
        break;
      case ScriptedKind::kSend:
        sent = send(pair.client, bytes.data(), call_bytes, 0);
        break;
      case ScriptedKind::kWrite:
        sent = write(pair.client, bytes.data(), call_bytes);
        break;
    }
    if (sent != static_cast<ssize_t>(call_bytes)) Die("short send");
    offset += call_bytes;
  }
  receiver.join();
  close(pair.client);
  close(pair.server);
  return verified ? 0 : 3;
}

int Check(bool ok, int code, const char* what) {
  if (ok) return 0;
  std::fprintf(stderr, "iovec_traffic errno: %s\n", what);
  return code;
}

int RunErrno() {
  int failures = 0;
  const int closed = dup(STDERR_FILENO);
  close(closed);
  errno = 0;
  failures +=
      Check(write(closed, "x", 1) == -1 && errno == EBADF, 1, "write to a closed fd: EBADF");
  errno = 0;
  char byte = 0;
  failures += Check(read(closed, &byte, 1) == -1 && errno == EBADF, 1, "read a closed fd: EBADF");
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) Die("pipe");
  errno = 0;
  failures +=
      Check(send(pipe_fds[1], "x", 1, 0) == -1 && errno == ENOTSOCK, 1, "send on a pipe: ENOTSOCK");
  failures += Check(write(pipe_fds[1], "ab", 2) == 2, 1, "write to a pipe: 2");
  failures += Check(read(pipe_fds[0], &byte, 1) == 1 && byte == 'a', 1, "read a pipe: 'a'");
  const Pair pair = ConnectLoopback();
  fcntl(pair.server, F_SETFL, O_NONBLOCK);
  errno = 0;
  failures += Check(recv(pair.server, &byte, 1, 0) == -1 && errno == EAGAIN, 1,
                    "recv on an empty non-blocking socket: EAGAIN");
  msghdr message{};
  iovec one{&byte, 1};
  message.msg_iov = &one;
  message.msg_iovlen = 1;
  errno = 0;
  failures += Check(recvmsg(pair.server, &message, 0) == -1 && errno == EAGAIN, 1,
                    "recvmsg on an empty non-blocking socket: EAGAIN");
  errno = 0;
  failures += Check(sendmsg(-5, &message, 0) == -1 && errno == EBADF, 1, "sendmsg on fd -5: EBADF");
  // A successful call leaves errno alone.
  errno = 1234;
  failures += Check(send(pair.client, "z", 1, 0) == 1 && errno == 1234, 1,
                    "successful send leaves errno unchanged");
  return failures == 0 ? 0 : 3;
}

int RunThreads(int threads, int calls) {
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, calls, &failures] {
      const Pair pair = ConnectLoopback();
      std::vector<uint8_t> bytes(64 + 1000 + 9 + static_cast<size_t>(t), 0x5a);
      const uint64_t per_call = bytes.size();
      std::thread drain([&] {
        std::vector<uint8_t> buffer(65536);
        uint64_t left = per_call * static_cast<uint64_t>(calls);
        while (left > 0) {
          const ssize_t n = recv(pair.server, buffer.data(), buffer.size(), 0);
          if (n <= 0) {
            ++failures;
            return;
          }
          left -= static_cast<uint64_t>(n);
        }
      });
      for (int i = 0; i < calls; ++i) {
        SendAll(pair.client, {{bytes.data(), 64},
                              {bytes.data() + 64, 1000},
                              {bytes.data() + 1064, 9 + static_cast<size_t>(t)}});
      }
      drain.join();
      close(pair.client);
      close(pair.server);
    });
  }
  for (auto& worker : workers) worker.join();
  return failures == 0 ? 0 : 3;
}

int RunFlood(long calls) {
  const Pair pair = ConnectLoopback();
  std::vector<uint8_t> bytes(260 * 16, 0x11);
  std::thread drain([&] {
    std::vector<uint8_t> buffer(1 << 20);
    uint64_t left = bytes.size() * static_cast<uint64_t>(calls);
    while (left > 0) {
      const ssize_t n = recv(pair.server, buffer.data(), buffer.size(), 0);
      if (n <= 0) return;
      left -= static_cast<uint64_t>(n);
    }
  });
  std::vector<iovec> iov;
  for (int i = 0; i < 260; ++i) iov.push_back({bytes.data() + i * 16, 16});
  for (long i = 0; i < calls; ++i) SendAll(pair.client, iov);
  drain.join();
  return 0;
}

int RunFork() {
  const Pair pair = ConnectLoopback();
  std::vector<uint8_t> bytes(64, 0x22);
  SendAll(pair.client, {{bytes.data(), 33}});
  const pid_t child = fork();
  if (child == 0) {
    SendAll(pair.client, {{bytes.data(), 11}, {bytes.data() + 11, 22}});
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::vector<uint8_t> buffer(66);
  size_t received = 0;
  while (received < 66) {
    const ssize_t n = recv(pair.server, buffer.data(), buffer.size(), 0);
    if (n <= 0) return 3;
    received += static_cast<size_t>(n);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int RunStream(double seconds, bool wait) {
  const Pair pair = ConnectLoopback();
  WaitForGo(wait);
  std::vector<uint8_t> bytes(256 * 4096, 0x33);
  std::vector<iovec> iov;
  for (int i = 0; i < 256; ++i) iov.push_back({bytes.data() + i * 4096, 4096});
  std::atomic<bool> done{false};
  std::thread drain([&] {
    std::vector<uint8_t> buffer(1 << 20);
    while (recv(pair.server, buffer.data(), buffer.size(), 0) > 0) {
    }
  });
  const auto start = std::chrono::steady_clock::now();
  uint64_t calls = 0;
  while (Seconds(start) < seconds) {
    SendAll(pair.client, iov);
    ++calls;
  }
  const double elapsed = Seconds(start);
  shutdown(pair.client, SHUT_WR);
  drain.join();
  std::printf("bytes_per_second %.0f calls %llu\n", calls * bytes.size() / elapsed,
              static_cast<unsigned long long>(calls));
  return 0;
}

int RunPingPong(double seconds, bool wait) {
  const Pair pair = ConnectLoopback();
  WaitForGo(wait);
  std::atomic<bool> stop{false};
  std::thread server([&] {
    char buffer[64];
    while (true) {
      size_t got = 0;
      while (got < sizeof(buffer)) {
        const ssize_t n = recv(pair.server, buffer + got, sizeof(buffer) - got, 0);
        if (n <= 0) return;
        got += static_cast<size_t>(n);
      }
      if (send(pair.server, buffer, sizeof(buffer), 0) != sizeof(buffer)) return;
    }
  });
  char request[64] = {1};
  const auto start = std::chrono::steady_clock::now();
  uint64_t round_trips = 0;
  while (Seconds(start) < seconds) {
    iovec iov[2] = {{request, 16}, {request + 16, 48}};
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = 2;
    if (sendmsg(pair.client, &message, 0) != 64) Die("sendmsg");
    size_t got = 0;
    char response[64];
    while (got < sizeof(response)) {
      const ssize_t n = recv(pair.client, response + got, sizeof(response) - got, 0);
      if (n <= 0) Die("recv");
      got += static_cast<size_t>(n);
    }
    ++round_trips;
  }
  const double elapsed = Seconds(start);
  shutdown(pair.client, SHUT_WR);
  server.join();
  std::printf("round_trips_per_second %.0f round_trips %llu\n", round_trips / elapsed,
              static_cast<unsigned long long>(round_trips));
  return 0;
}

// Two connections in turn; close() frees the fds, so the second connection gets
// the same fd numbers (the lowest free ones) on a new 4-tuple.
int RunReconnect(bool wait) {
  WaitForGo(wait);
  const std::vector<std::vector<uint32_t>> rounds = {{100, 200}, {7, 8}};
  for (const auto& lengths : rounds) {
    const Pair pair = ConnectLoopback();
    uint64_t total = 0;
    for (uint32_t length : lengths) total += length;
    std::vector<uint8_t> bytes(total);
    for (uint64_t i = 0; i < total; ++i) bytes[i] = PatternByte(i);
    std::vector<iovec> iov;
    uint64_t position = 0;
    for (uint32_t length : lengths) {
      iov.push_back({bytes.data() + position, length});
      position += length;
    }
    SendAll(pair.client, iov);
    if (!ReceiveAndVerify(pair.server, total)) return 3;
    close(pair.client);
    close(pair.server);
  }
  return 0;
}

// A hostile traced program (issue 16): runs the script, then overwrites the header
// of artune's capture ring (found through ARTUNE_PRELOAD_RING=fd:N) with a huge
// capacity and head, as a program scribbling over memory it should not touch
// would. Untraced (no ring), it only runs the script.
int RunScribble() {
  const int status = RunScript(false);
  const char* ring = std::getenv("ARTUNE_PRELOAD_RING");
  if (status != 0 || ring == nullptr || std::strncmp(ring, "fd:", 3) != 0) return status;
  const int fd = std::atoi(ring + 3);
  void* mapping = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) return 5;
  auto* words = static_cast<uint64_t*>(mapping);
  // magic, version|capture, capacity, max per call, then head at the next 64 bytes
  words[2] = uint64_t{1} << 40;    // capacity
  words[8] = ~uint64_t{0} - 4096;  // head
  return 0;
}

// A hostile traced program (issue 26, item 6): runs the script, then truncates
// artune's capture ring to nothing, which turned artune's next read of the ring
// into a SIGBUS. Exits 0 when the truncation is refused (the ring is sealed), 7
// when it succeeded. Untraced (no ring), it only runs the script.
int RunTruncate() {
  const int status = RunScript(false);
  const char* ring = std::getenv("ARTUNE_PRELOAD_RING");
  if (status != 0 || ring == nullptr || std::strncmp(ring, "fd:", 3) != 0) return status;
  const int fd = std::atoi(ring + 3);
  return ftruncate(fd, 0) == 0 ? 7 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool wait = argc > 2 && std::string(argv[argc - 1]) == "--wait";
  if (mode == "script") return RunScript(wait);
  if (mode == "scribble") return RunScribble();
  if (mode == "truncate") return RunTruncate();
  if (mode == "errno") return RunErrno();
  if (mode == "threads" && argc > 3) return RunThreads(std::atoi(argv[2]), std::atoi(argv[3]));
  if (mode == "flood" && argc > 2) return RunFlood(std::atol(argv[2]));
  if (mode == "fork") return RunFork();
  if (mode == "reconnect") return RunReconnect(wait);
  if (mode == "exit" && argc > 2) return std::atoi(argv[2]);
  if (mode == "stream" && argc > 2) return RunStream(std::atof(argv[2]), wait);
  if (mode == "pingpong" && argc > 2) return RunPingPong(std::atof(argv[2]), wait);
  std::fprintf(stderr,
               "usage: iovec_traffic script|scribble|truncate|errno|threads N M|flood "
               "CALLS|fork|exit CODE|reconnect|"
               "stream SECONDS|pingpong SECONDS [--wait]\n");
  return 2;
}
