#include "probe_source.h"

#include "artune/probes/session.h"

namespace artune::dashboard {
namespace {

// Passes every event to the session (decoding) and the I/O calls also to the
// model (iovec sizes: the session keeps them per flow only in its final profile).
class TeeSink : public probes::EventSink {
 public:
  TeeSink(probes::ProbeSession& session, TrafficModel& model) : session_(session), model_(model) {}
  void OnFlowOpen(const probes::FlowKey& flow, probes::FlowOrigin origin,
                  uint64_t timestamp_ns) override {
    session_.OnFlowOpen(flow, origin, timestamp_ns);
  }
  void OnStreamBytes(const probes::StreamSegment& segment) override {
    session_.OnStreamBytes(segment);
  }
  void OnStreamGap(const probes::FlowKey& flow, uint64_t missing_bytes,
                   uint64_t timestamp_ns) override {
    session_.OnStreamGap(flow, missing_bytes, timestamp_ns);
  }
  void OnFlowClose(const probes::FlowKey& flow, probes::FlowEnd end,
                   uint64_t timestamp_ns) override {
    session_.OnFlowClose(flow, end, timestamp_ns);
  }
  void OnIoCall(const probes::IoCallEvent& event) override {
    session_.OnIoCall(event);
    model_.AddIoCall(event);
  }

 private:
  probes::ProbeSession& session_;
  TrafficModel& model_;
};

std::string JoinWords(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty()) text += ' ';
    text += word;
  }
  return text;
}

}  // namespace

std::string DescribeProbe(const probes::BackendOptions& options) {
  switch (options.kind) {
    case probes::BackendKind::kPcap: {
      std::string text = options.pcap.read_file.empty() ? "pcap " + options.pcap.interface
                                                        : "pcap file " + options.pcap.read_file;
      if (options.pcap.port) text += " port " + std::to_string(*options.pcap.port);
      if (!options.pcap.filter.empty()) text += " '" + options.pcap.filter + "'";
      return text;
    }
    case probes::BackendKind::kEbpf:
      return options.ebpf.pid ? "ebpf pid " + std::to_string(*options.ebpf.pid)
                              : "ebpf comm " + options.ebpf.comm;
    case probes::BackendKind::kPreload:
      return "exec " + JoinWords(options.preload.command);
  }
  return "?";
}

Result<std::unique_ptr<ProbeSource>> ProbeSource::Start(const probes::BackendOptions& options,
                                                        std::optional<uint16_t> server_port,
                                                        TrafficModel& model) {
  model.SetSource(DescribeProbe(options));
  model.SetState(SourceState::kStarting);
  ARTUNE_ASSIGN_OR_RETURN(auto backend, probes::CreateCaptureBackend(options));
  if (Status started = backend->Start(); !started.ok()) {
    model.SetState(SourceState::kFailed, started.message());
    return started;
  }
  std::unique_ptr<ProbeSource> source(new ProbeSource(std::move(backend), server_port, model));
  source->thread_ = std::thread([raw = source.get()] { raw->Run(); });
  return source;
}

ProbeSource::ProbeSource(std::unique_ptr<probes::CaptureBackend> backend,
                         std::optional<uint16_t> server_port, TrafficModel& model)
    : backend_(std::move(backend)), server_port_(server_port), model_(model) {}

ProbeSource::~ProbeSource() { Stop(); }

void ProbeSource::Stop() {
  stop_requested_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::optional<int> ProbeSource::command_exit_code() const {
  if (!finished_.load() || !ended_on_its_own_.load()) return std::nullopt;
  return backend_->command_exit_code();
}

void ProbeSource::Run() {
  probes::SessionOptions session_options;
  session_options.server_port = server_port_;
  session_options.on_message = [this](const probes::GrpcMessage& message) {
    model_.AddMessage(message.method, message.direction, message.length,
                      std::chrono::steady_clock::now());
  };
  probes::ProbeSession session(session_options);
  TeeSink sink(session, model_);

  probes::StopCondition stop;
  stop.stop_requested = &stop_requested_;
  stop.tick_interval = std::chrono::milliseconds(250);
  stop.on_tick = [this, &session](const probes::BackendCounters& counters) {
    model_.SetCounters(counters, session.errors().Total());
  };
  model_.MarkStarted(std::chrono::steady_clock::now());
  model_.SetState(SourceState::kRunning);
  const Status status = backend_->Run(sink, stop);
  model_.SetCounters(backend_->counters(), session.errors().Total());
  ended_on_its_own_.store(!stop_requested_.load());
  finished_.store(true);
  if (!status.ok()) {
    model_.SetState(SourceState::kFailed, status.message());
    return;
  }
  std::string message = "capture ended";
  if (std::optional<int> code = backend_->command_exit_code()) {
    message = "the command exited with status " + std::to_string(*code);
  } else if (stop_requested_.load()) {
    message = "stopped";
  }
  model_.SetState(SourceState::kFinished, message);
}

}  // namespace artune::dashboard
