#include "transport_source.h"

#include <grpcpp/grpcpp.h>

#include "control.grpc.pb.h"

namespace artune::dashboard {

Result<TransportSample> FetchTransportStats(const std::string& address,
                                            std::chrono::milliseconds deadline) {
  // A channel per call keeps a broken server from pinning a dead connection; at
  // one poll a second the cost does not matter.
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = transport::control::Control::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  transport::control::StatsResponse response;
  const grpc::Status status =
      stub->GetStats(&context, transport::control::StatsRequest(), &response);
  if (!status.ok()) {
    return Status::Unavailable("GetStats from the transport server at " + address +
                               " failed: " + status.error_message() +
                               " (is a server, e.g. `artune serve`, listening there?)");
  }
  TransportSample sample;
  for (int p = 0; p < response.by_protocol_size() && p < transport::kProtocolCount; ++p) {
    const auto& counters = response.by_protocol(p);
    sample.by_protocol[p].slices = counters.slices();
    sample.by_protocol[p].bytes = counters.bytes();
    for (int b = 0; b < counters.slices_by_bucket_size() && b < transport::kLog2BucketCount; ++b) {
      sample.by_protocol[p].slices_by_bucket[b] = counters.slices_by_bucket(b);
    }
  }
  sample.calls_started = response.calls_started();
  sample.calls_completed = response.calls_completed();
  sample.calls_failed = response.calls_failed();
  sample.connections_accepted = response.connections_accepted();
  sample.connections_dropped = response.connections_dropped();
  return sample;
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
