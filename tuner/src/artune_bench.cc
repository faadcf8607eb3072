// The embedded transport under benchmark: payload buffers copied once into the
// client's registered allocator (so every call sends them zero-copy), the server
// echoing the request's own slices (zero-copy too) or acknowledging a checksum.
#include <array>
#include <cstring>
#include <mutex>
#include <optional>

#include "artune/base/enum_names.h"
#include "artune/transport/credentials.h"
#include "artune/transport/knobs.h"
#include "artune/transport/transport.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/checksum.h"

namespace artune::tuner {
namespace {

std::string FabricName(transport::FabricKind fabric) {
  static constexpr std::array<EnumName<transport::FabricKind>, 4> kNames = {{
      {transport::FabricKind::kTcp, "tcp"},
      {transport::FabricKind::kVerbs, "verbs"},
      {transport::FabricKind::kAuto, "auto"},
      {transport::FabricKind::kShm, "shm"},
  }};
  return std::string(NameOf(kNames, fabric));
}

std::string_view MethodName(BenchMethod method) {
  static constexpr std::array<EnumName<BenchMethod>, 3> kMethods = {{
      {BenchMethod::kEcho, kArtuneEchoMethod},
      {BenchMethod::kAck, kArtuneAckMethod},
      {BenchMethod::kCount, kArtuneCountMethod},
  }};
  return NameOf(kMethods, method, kArtuneEchoMethod);
}

Status Validate(BenchMethod method, const transport::Message& reply, const Payload& payload) {
  return ValidateBenchReply(method, reply.slices(), payload);
}

// The ack and count methods answer alike: the Ack `summarize` makes of the request,
// copied into the reply.
transport::Handler AckReplyHandler(Ack (*summarize)(std::span<const ByteSpan>)) {
  return [summarize](const transport::Message& request, transport::ResponseWriter& response) {
    auto encoded = EncodeAck(summarize(request.slices()));
    response.Append(transport::ConstSlice(encoded));  // copied
    return Status::Ok();
  };
}

class ArtuneBenchServer final : public BenchServer {
 public:
  explicit ArtuneBenchServer(std::unique_ptr<transport::Server> server)
      : server_(std::move(server)) {
    server_->RegisterHandler(
        std::string(kArtuneEchoMethod),
        [](const transport::Message& request, transport::ResponseWriter& response) {
          // Request slices go back as they are: zero-copy.
          for (const auto& slice : request.slices()) response.Append(slice);
          return Status::Ok();
        },
        transport::HandlerOptions{.non_blocking = true});
    // CPU only (a checksum or a count of the request): they never wait on anything.
    server_->RegisterHandler(std::string(kArtuneAckMethod), AckReplyHandler(ComputeAck),
                             transport::HandlerOptions{.non_blocking = true});
    server_->RegisterHandler(std::string(kArtuneCountMethod), AckReplyHandler(CountAck),
                             transport::HandlerOptions{.non_blocking = true});
  }
  ~ArtuneBenchServer() override { Shutdown(); }

  std::string address() const override { return server_->address(); }
  std::string data_endpoint() const override { return server_->data_endpoint(); }
  std::string local_endpoint() const override { return server_->local_endpoint(); }
  void Shutdown() override {
    std::call_once(shutdown_once_, [this] { server_->Shutdown(); });
  }

 private:
  std::unique_ptr<transport::Server> server_;
  std::once_flag shutdown_once_;
};

class ArtunePreparedPayload final : public PreparedPayload {
 public:
  explicit ArtunePreparedPayload(const Payload& payload) : payload_(payload) {}
  const Payload& payload() const override { return payload_; }

  const Payload& payload_;
  std::vector<transport::Buffer> buffers;  // registered copies of the payload buffers
  std::vector<transport::ConstSlice> slices;
};

class ArtuneBenchChannel final : public BenchChannel {
 public:
  explicit ArtuneBenchChannel(std::unique_ptr<transport::Client> client)
      : client_(std::move(client)) {}

  Result<std::unique_ptr<PreparedPayload>> Prepare(const Payload& payload) override {
    auto prepared = std::make_unique<ArtunePreparedPayload>(payload);
    for (size_t i = 0; i < payload.buffer_count(); ++i) {
      auto source = payload.buffer(i);
      ARTUNE_ASSIGN_OR_RETURN(transport::Buffer buffer,
                              client_->allocator().Allocate(source.size()));
      std::memcpy(buffer.data(), source.data(), source.size());
      prepared->slices.emplace_back(buffer.data(), source.size());
      prepared->buffers.push_back(std::move(buffer));
    }
    return std::unique_ptr<PreparedPayload>(std::move(prepared));
  }

  Status Call(BenchMethod method, const PreparedPayload& prepared) override {
    const auto& payload = static_cast<const ArtunePreparedPayload&>(prepared);
    ARTUNE_ASSIGN_OR_RETURN(transport::Message reply,
                            client_->Call(MethodName(method), payload.slices));
    return Validate(method, reply, payload.payload());
  }

  void CallAsync(BenchMethod method, const PreparedPayload& prepared, CallDone done) override {
    const auto& payload = static_cast<const ArtunePreparedPayload&>(prepared);
    client_->CallAsync(
        MethodName(method), payload.slices, {},
        [method, &payload, done = std::move(done)](Result<transport::Message> reply) {
          done(reply.ok() ? Validate(method, *reply, payload.payload()) : reply.status());
        });
  }

  Status Reconfigure(const transport::Config& config) override {
    return client_->Reconfigure(config);
  }
  std::map<std::string, std::string> AgreedConfig() const override {
    return transport::ConfigToMap(client_->config());
  }

  transport::Client& client() { return *client_; }

 private:
  std::unique_ptr<transport::Client> client_;
};

class ArtuneBenchTransport final : public BenchTransport {
 public:
  explicit ArtuneBenchTransport(const transport::Config& config) : config_(config) {}

  std::string_view name() const override { return "artune"; }

  Result<std::unique_ptr<BenchServer>> StartServer(const std::string& listen_address) override {
    ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials, LoadedCredentials());
    const std::string host = listen_address.substr(0, listen_address.rfind(':'));
    if (!transport::IsLoopbackHost(host) && !credentials.has_token()) {
      // This process's own servers on an RDMA netdev (bench, sweep and compare
      // without --peer): its clients are in here too, so a token that never
      // leaves the process authenticates them; no file needed.
      std::lock_guard lock(mutex_);
      credentials_->token = transport::NewToken();
      credentials_->token_source = "this process (in-process servers)";
      credentials = *credentials_;
    }
    ARTUNE_ASSIGN_OR_RETURN(auto server,
                            transport::Server::Start(config_, listen_address, credentials));
    RememberFabric(server->fabric());
    return std::unique_ptr<BenchServer>(new ArtuneBenchServer(std::move(server)));
  }

  Result<std::unique_ptr<BenchChannel>> Connect(const std::string& server_address) override {
    ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials, LoadedCredentials());
    auto client = transport::Client::Connect(config_, server_address, credentials);
    if (!client.ok()) {
      return client.status().WithContext("cannot connect to the artune bench server at " +
                                         server_address);
    }
    RememberFabric((*client)->fabric());
    {
      std::lock_guard lock(mutex_);
      agreed_ = transport::ConfigToMap((*client)->config());
    }
    return std::unique_ptr<BenchChannel>(new ArtuneBenchChannel(std::move(*client)));
  }

  std::map<std::string, std::string> EffectiveConfig() const override {
    std::lock_guard lock(mutex_);
    return agreed_.empty() ? transport::ConfigToMap(config_) : agreed_;
  }

  std::string fabric() const override {
    std::lock_guard lock(mutex_);
    return fabric_;
  }

 private:
  // The environment's credentials (credentials.h), read once.
  Result<transport::Credentials> LoadedCredentials() {
    std::lock_guard lock(mutex_);
    if (!credentials_) {
      ARTUNE_ASSIGN_OR_RETURN(transport::Credentials loaded,
                              transport::CredentialsFromEnvironment());
      credentials_ = std::move(loaded);
    }
    return *credentials_;
  }

  void RememberFabric(transport::FabricKind fabric) {
    std::lock_guard lock(mutex_);
    fabric_ = FabricName(fabric);
  }

  transport::Config config_;
  mutable std::mutex mutex_;
  std::string fabric_;
  // What the last connected server agreed to (Client::config()).
  std::map<std::string, std::string> agreed_;
  std::optional<transport::Credentials> credentials_;
};

}  // namespace

std::unique_ptr<BenchTransport> MakeArtuneBenchTransport(const transport::Config& config) {
  return std::make_unique<ArtuneBenchTransport>(config);
}

}  // namespace artune::tuner
