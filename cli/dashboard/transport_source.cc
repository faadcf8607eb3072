#include "transport_source.h"

#include "artune/transport/credentials.h"
#include "artune/transport/transport.h"

namespace artune::dashboard {

Result<TransportSample> FetchTransportStats(const std::string& address,
                                            std::chrono::milliseconds deadline) {
  ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials,
                          transport::CredentialsFromEnvironment());
  Result<transport::Stats> stats = transport::QueryServerStats(address, deadline, credentials);
  if (!stats.ok()) {
    return Status(stats.status().code(),
                  stats.status().message() +
                      " (is a server, e.g. `artune serve`, listening there? does it want a "
                      "token: ARTUNE_TOKEN_FILE?)");
  }
  return *stats;
}

std::unique_ptr<TransportSource> TransportSource::Start(std::string address,
                                                        std::chrono::milliseconds interval,
                                                        TransportModel& model) {
  model.Configure(address);
  std::unique_ptr<TransportSource> source(new TransportSource(std::move(address), interval, model));
  source->thread_ = std::thread([raw = source.get()] { raw->Run(); });
  return source;
}

TransportSource::TransportSource(std::string address, std::chrono::milliseconds interval,
                                 TransportModel& model)
    : address_(std::move(address)), interval_(interval), model_(model) {}

TransportSource::~TransportSource() { Stop(); }

void TransportSource::Stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TransportSource::Run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    // The deadline stays below the interval so Stop() waits at most about that long.
    Result<TransportSample> sample =
        FetchTransportStats(address_, std::min(interval_, std::chrono::milliseconds(1000)));
    if (sample.ok()) {
      model_.AddSample(*sample, std::chrono::steady_clock::now());
    } else {
      model_.SetError(sample.status().message());
    }
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace artune::dashboard
