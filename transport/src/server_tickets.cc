// The server's one-time admissions of data connections (server_tickets.h).
#include "server_tickets.h"

#include <sys/random.h>

#include "artune/transport/credentials.h"
#include "wire.h"

namespace artune::transport {

std::string Tickets::Issue(uint64_t pool_bytes) {
  std::string ticket(wire::kDataTicketBytes, '\0');
  while (::getrandom(ticket.data(), ticket.size(), 0) != static_cast<ssize_t>(ticket.size())) {
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  std::erase_if(issued_, [&](const Issued& entry) { return entry.expires < now; });
  if (issued_.size() >= kMaxOutstanding) issued_.erase(issued_.begin());
  issued_.push_back({ticket, now + kTicketLifetime, pool_bytes});
  return ticket;
}

std::optional<uint64_t> Tickets::Redeem(std::string_view ticket) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  for (auto it = issued_.begin(); it != issued_.end(); ++it) {
    if (SecretsEqual(it->ticket, std::string(ticket))) {
      const bool fresh = it->expires >= now;
      const uint64_t pool_bytes = it->pool_bytes;
      issued_.erase(it);
      if (!fresh) return std::nullopt;
      return pool_bytes;
    }
  }
  return std::nullopt;
}

}  // namespace artune::transport
