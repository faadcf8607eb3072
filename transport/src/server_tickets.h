// The server's one-time admissions of data connections (credentials.h: tickets),
// issued by authenticated handshakes and redeemed by the connection's hello.
//
// Threading: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace artune::transport {

// Bounded: the oldest is dropped past kMaxOutstanding, expired ones on every issue.
class Tickets {
 public:
  // A new random ticket, valid for kTicketLifetime. `pool_bytes`: the receive pool
  // the ticket's connection may declare (the one the server's config at the
  // handshake gives).
  std::string Issue(uint64_t pool_bytes);
  // The pool bytes of a ticket issued here and not expired, once; nullopt else.
  std::optional<uint64_t> Redeem(std::string_view ticket);

 private:
  static constexpr size_t kMaxOutstanding = 4096;
  struct Issued {
    std::string ticket;
    std::chrono::steady_clock::time_point expires;
    uint64_t pool_bytes;
  };
  std::mutex mutex_;
  std::deque<Issued> issued_;
};

}  // namespace artune::transport
