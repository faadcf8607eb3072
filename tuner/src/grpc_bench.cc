// The stock gRPC transport under benchmark: generic API on both ends, the payload
// as a multi-slice grpc::ByteBuffer (one slice per buffer, referencing the payload
// memory without a copy, as TensorFlow does for tensors over 1 KiB).
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <climits>
#include <thread>

#include "artune/transport/credentials.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/checksum.h"
#include "grpc_process.h"

namespace artune::tuner {
namespace {

Status FromGrpc(const grpc::Status& status, std::string_view what) {
  std::string message = std::string(what) + ": " + status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return Status::Ok();
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Timeout(message);
    case grpc::StatusCode::UNAVAILABLE:
      return Status::Unavailable(message);
    case grpc::StatusCode::UNIMPLEMENTED:
      return Status::NotFound(message);
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::PermissionDenied(message);
    case grpc::StatusCode::DATA_LOSS:
      return Status::Corruption(message);
    case grpc::StatusCode::CANCELLED:
      return Status::Cancelled(message);
    default:
      return Status::IoError(message + " (grpc code " +
                             std::to_string(static_cast<int>(status.error_code())) + ")");
  }
}

// Copies nothing: the spans point into the ByteBuffer's slices, kept in `storage`.
std::vector<ByteSpan> SpansOf(const grpc::ByteBuffer& buffer, std::vector<grpc::Slice>& storage) {
  storage.clear();
  std::vector<ByteSpan> spans;
  if (!buffer.Valid()) return spans;
  (void)buffer.Dump(&storage);
  spans.reserve(storage.size());
  for (const grpc::Slice& s : storage) {
    spans.emplace_back(reinterpret_cast<const std::byte*>(s.begin()), s.size());
  }
  return spans;
}

// ---------------------------------------------------------------------------
// Server: an async generic service, one completion queue per polling thread.

class GrpcBenchServer final : public BenchServer {
 public:
  // The transport's rule (credentials.h): beyond loopback only with a token, which
  // every call must then carry as metadata. No TLS: the benchmark measures gRPC's
  // plain HTTP/2, as the embedded transport's payload travels unencrypted too.
  static Result<std::unique_ptr<BenchServer>> Start(const std::string& listen_address,
                                                    int threads) {
    ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials,
                            transport::CredentialsFromEnvironment());
    const std::string host = listen_address.substr(0, listen_address.rfind(':'));
    if (!transport::IsLoopbackHost(host) && !credentials.has_token()) {
      return Status::InvalidArgument("the stock gRPC bench server on " + listen_address +
                                     " would reach beyond this host and needs a token in " +
                                     transport::DefaultTokenPath() + ", or listen on 127.0.0.1");
    }
    auto server = std::unique_ptr<GrpcBenchServer>(new GrpcBenchServer());
    server->token_ = credentials.token;
    grpc::ServerBuilder builder;
    // No SO_REUSEPORT (gRPC's default): a taken port is an error, not shared.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    int port = 0;
    builder.AddListeningPort(listen_address, grpc::InsecureServerCredentials(), &port);
    builder.RegisterAsyncGenericService(&server->service_);
    builder.SetMaxReceiveMessageSize(INT_MAX);
    builder.SetMaxSendMessageSize(INT_MAX);
    for (int i = 0; i < threads; ++i) server->queues_.push_back(builder.AddCompletionQueue());
    server->server_ = builder.BuildAndStart();
    if (!server->server_ || port == 0) {
      return Status::Unavailable("stock gRPC bench server cannot listen on " + listen_address +
                                 ": the port is taken or the address is not local");
    }
    server->address_ = host + ":" + std::to_string(port);
    for (auto& queue : server->queues_) {
      for (int i = 0; i < kCallsPostedPerQueue; ++i) new CallState(server.get(), queue.get());
      server->threads_.emplace_back([q = queue.get()] { Poll(q); });
    }
    return std::unique_ptr<BenchServer>(std::move(server));
  }

  ~GrpcBenchServer() override { Shutdown(); }

  std::string address() const override { return address_; }

  void Shutdown() override {
    if (shut_down_.exchange(true)) return;
    // server_ is null when it never started (a taken port): only the queues exist.
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    for (auto& queue : queues_) queue->Shutdown();
    for (auto& thread : threads_) thread.join();
    if (threads_.empty()) {
      // No poller drained them: gRPC requires it before a queue is destroyed.
      for (auto& queue : queues_) {
        void* tag = nullptr;
        bool ok = false;
        while (queue->Next(&tag, &ok)) {
        }
      }
    }
  }

 private:
  // Calls waiting to be accepted per queue, so that many clients are served at once.
  static constexpr int kCallsPostedPerQueue = 32;

  GrpcBenchServer() = default;

  // One server call: requested, then its single request read, then answered.
  class CallState {
   public:
    CallState(GrpcBenchServer* server, grpc::ServerCompletionQueue* queue)
        : server_(server), queue_(queue), stream_(&context_) {
      server_->service_.RequestCall(&context_, &stream_, queue_, queue_, this);
    }

    void Proceed(bool ok) {
      switch (phase_) {
        case Phase::kRequested:
          if (!ok) {  // the server is shutting down
            delete this;
            return;
          }
          if (!server_->shut_down_.load()) new CallState(server_, queue_);
          if (!Authorized()) {
            phase_ = Phase::kFinishing;
            stream_.Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                        "this server requires the token of its host's "
                                        "artune token file (ARTUNE_TOKEN_FILE)"),
                           this);
            return;
          }
          phase_ = Phase::kReading;
          stream_.Read(&request_, this);
          return;
        case Phase::kReading:
          phase_ = Phase::kFinishing;
          if (!ok) {
            stream_.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request message"),
                           this);
            return;
          }
          Answer();
          return;
        case Phase::kFinishing:
          delete this;
          return;
      }
    }

   private:
    enum class Phase { kRequested, kReading, kFinishing };

    bool Authorized() const {
      if (server_->token_.empty()) return true;
      const auto& metadata = context_.client_metadata();
      auto it = metadata.find(std::string(transport::kTokenMetadataKey));
      return it != metadata.end() &&
             transport::SecretsEqual(std::string(it->second.data(), it->second.size()),
                                     server_->token_);
    }

    void Answer() {
      const std::string& method = context_.method();
      if (method == kGrpcEchoMethod) {
        // The reply shares the request's slices: no copy, as an echo should be.
        stream_.WriteAndFinish(request_, grpc::WriteOptions(), grpc::Status::OK, this);
      } else if (method == kGrpcAckMethod || method == kGrpcCountMethod) {
        std::vector<grpc::Slice> storage;
        auto spans = SpansOf(request_, storage);
        auto encoded = EncodeAck(method == kGrpcAckMethod ? ComputeAck(spans) : CountAck(spans));
        grpc::Slice slice(encoded.data(), encoded.size());
        reply_ = grpc::ByteBuffer(&slice, 1);
        stream_.WriteAndFinish(reply_, grpc::WriteOptions(), grpc::Status::OK, this);
      } else {
        stream_.Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                    "artune bench server has no method " + method),
                       this);
      }
    }

    GrpcBenchServer* server_;
    grpc::ServerCompletionQueue* queue_;
    grpc::GenericServerContext context_;
    grpc::GenericServerAsyncReaderWriter stream_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer reply_;
    Phase phase_ = Phase::kRequested;
  };

  static void Poll(grpc::ServerCompletionQueue* queue) {
    void* tag = nullptr;
    bool ok = false;
    while (queue->Next(&tag, &ok)) static_cast<CallState*>(tag)->Proceed(ok);
  }

  grpc::AsyncGenericService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string token_;  // empty: no authentication
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  std::string address_;
  std::atomic<bool> shut_down_{false};
};

// ---------------------------------------------------------------------------
// Client.

class GrpcPreparedPayload final : public PreparedPayload {
 public:
  explicit GrpcPreparedPayload(const Payload& payload) : payload_(payload) {
    std::vector<grpc::Slice> slices;
    slices.reserve(payload.buffer_count());
    for (size_t i = 0; i < payload.buffer_count(); ++i) {
      auto buffer = payload.buffer(i);
      // Static slices reference the payload's memory (it outlives every call).
      slices.emplace_back(buffer.data(), buffer.size(), grpc::Slice::STATIC_SLICE);
    }
    request_ = grpc::ByteBuffer(slices.data(), slices.size());
  }
  const Payload& payload() const override { return payload_; }
  const grpc::ByteBuffer& request() const { return request_; }

 private:
  const Payload& payload_;
  grpc::ByteBuffer request_;
};

Status Validate(BenchMethod method, const grpc::ByteBuffer& response, const Payload& payload) {
  std::vector<grpc::Slice> storage;
  auto spans = SpansOf(response, storage);
  return ValidateBenchReply(method, spans, payload);
}

const std::string& MethodPath(BenchMethod method) {
  static const std::string echo(kGrpcEchoMethod);
  static const std::string ack(kGrpcAckMethod);
  static const std::string count(kGrpcCountMethod);
  switch (method) {
    case BenchMethod::kEcho:
      return echo;
    case BenchMethod::kAck:
      return ack;
    case BenchMethod::kCount:
      return count;
  }
  return echo;
}

class GrpcBenchChannel final : public BenchChannel {
 public:
  GrpcBenchChannel(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout,
                   std::string token)
      : channel_(std::move(channel)),
        stub_(channel_),
        timeout_(timeout),
        token_(std::move(token)) {}

  Result<std::unique_ptr<PreparedPayload>> Prepare(const Payload& payload) override {
    return std::unique_ptr<PreparedPayload>(new GrpcPreparedPayload(payload));
  }

  // The same path as gRPC's own blocking stubs: a call on a private completion
  // queue that this thread waits on.
  Status Call(BenchMethod method, const PreparedPayload& prepared) override {
    const auto& payload = static_cast<const GrpcPreparedPayload&>(prepared);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout_);
    if (!token_.empty()) context.AddMetadata(std::string(transport::kTokenMetadataKey), token_);
    grpc::CompletionQueue queue;
    auto call = stub_.PrepareUnaryCall(&context, MethodPath(method), payload.request(), &queue);
    call->StartCall();
    grpc::ByteBuffer response;
    grpc::Status status;
    call->Finish(&response, &status, this);
    void* tag = nullptr;
    bool ok = false;
    bool got = queue.Next(&tag, &ok);
    queue.Shutdown();
    void* drained_tag = nullptr;
    while (queue.Next(&drained_tag, &ok)) {
    }
    if (!got) return Status::Internal("gRPC completion queue closed before the call finished");
    if (!status.ok()) return FromGrpc(status, "stock gRPC bench call");
    return Validate(method, response, payload.payload());
  }

  void CallAsync(BenchMethod method, const PreparedPayload& prepared, CallDone done) override {
    const auto& payload = static_cast<const GrpcPreparedPayload&>(prepared);
    struct AsyncCall {
      grpc::ClientContext context;
      grpc::ByteBuffer request;
      grpc::ByteBuffer response;
    };
    auto* call = new AsyncCall;
    call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
    if (!token_.empty()) {
      call->context.AddMetadata(std::string(transport::kTokenMetadataKey), token_);
    }
    call->request = payload.request();  // shares the slices
    stub_.UnaryCall(
        &call->context, MethodPath(method), grpc::StubOptions(), &call->request, &call->response,
        [call, method, &payload, done = std::move(done)](grpc::Status status) {
          Status result = status.ok() ? Validate(method, call->response, payload.payload())
                                      : FromGrpc(status, "stock gRPC bench call");
          delete call;
          done(result);
        });
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  std::chrono::milliseconds timeout_;
  const std::string token_;
};

class GrpcBenchTransport final : public BenchTransport {
 public:
  explicit GrpcBenchTransport(const GrpcBenchOptions& options) : options_(options) {
    KeepGrpcUntilExit();
  }

  std::string_view name() const override { return "grpc"; }

  Result<std::unique_ptr<BenchServer>> StartServer(const std::string& listen_address) override {
    return GrpcBenchServer::Start(listen_address, options_.server_threads);
  }

  Result<std::unique_ptr<BenchChannel>> Connect(const std::string& server_address) override {
    ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials,
                            transport::CredentialsFromEnvironment());
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    // A connection of its own per channel: N channels are N TCP connections, like
    // N separate workers.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel =
        grpc::CreateCustomChannel(server_address, grpc::InsecureChannelCredentials(), args);
    // Fails at the first failed connection attempt instead of retrying with backoff
    // until the deadline: a wrong address should be reported at once.
    auto deadline = std::chrono::system_clock::now() + options_.timeout;
    grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    while (state != GRPC_CHANNEL_READY) {
      if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN ||
          !channel->WaitForStateChange(state, deadline)) {
        return Status::Unavailable("cannot connect to the stock gRPC bench server at " +
                                   server_address + ": is `artune serve` running there?");
      }
      state = channel->GetState(/*try_to_connect=*/true);
    }
    return std::unique_ptr<BenchChannel>(
        new GrpcBenchChannel(channel, options_.timeout, credentials.token));
  }

  std::map<std::string, std::string> EffectiveConfig() const override {
    return {{"grpc_server_threads", std::to_string(options_.server_threads)},
            {"grpc_timeout_ms", std::to_string(options_.timeout.count())},
            {"grpc_version", grpc::Version()}};
  }

  std::string fabric() const override { return ""; }

 private:
  GrpcBenchOptions options_;
};

}  // namespace

std::unique_ptr<BenchTransport> MakeGrpcBenchTransport(const GrpcBenchOptions& options) {
  return std::make_unique<GrpcBenchTransport>(options);
}

}  // namespace artune::tuner
