#include "pcap/pcap_backend.h"

#include <pcap/pcap.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "pcap/packet_parser.h"
#include "pcap/tcp_reassembler.h"

namespace artune::probes {
namespace {

constexpr int kReadTimeoutMs = 100;

class PcapBackend : public CaptureBackend {
 public:
  explicit PcapBackend(const PcapOptions& options) : options_(options) {}
  ~PcapBackend() override {
    if (handle_ != nullptr) pcap_close(handle_);
  }

  BackendKind kind() const override { return BackendKind::kPcap; }

  Status Start() override {
    char error[PCAP_ERRBUF_SIZE] = {};
    if (!options_.read_file.empty()) {
      std::error_code ec;
      if (!std::filesystem::exists(options_.read_file, ec)) {
        return Status::NotFound("capture file " + options_.read_file +
                                " does not exist: give the path of a pcap or pcapng file");
      }
      handle_ = pcap_open_offline_with_tstamp_precision(options_.read_file.c_str(),
                                                        PCAP_TSTAMP_PRECISION_NANO, error);
      if (handle_ == nullptr) {
        if (::access(options_.read_file.c_str(), R_OK) != 0) {
          return Status::PermissionDenied("cannot read capture file " + options_.read_file + ": " +
                                          std::strerror(errno));
        }
        // Readable but not a capture libpcap can parse: damaged or another format.
        return Status::Corruption(
            "capture file " + options_.read_file +
            " is not a pcap or pcapng file, or its header is damaged: " + error);
      }
      live_ = false;
    } else {
      ARTUNE_RETURN_IF_ERROR(OpenLive());
    }
    return ApplyFilter();
  }

  Status Run(EventSink& sink, const StopCondition& stop) override {
    if (handle_ == nullptr) return Status::Internal("pcap backend: Run() before Start()");
    link_type_ = pcap_datalink(handle_);
    pcap::TcpReassembler reassembler(sink);
    reassembler_ = &reassembler;
    const auto started = std::chrono::steady_clock::now();
    auto next_tick = started + stop.tick_interval;
    Status status;
    if (live_ && pcap_setnonblock(handle_, 1, nullptr) != 0) {
      return Status::Unavailable("pcap: cannot make the capture non-blocking: " +
                                 std::string(pcap_geterr(handle_)));
    }
    const int fd = live_ ? pcap_get_selectable_fd(handle_) : -1;
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      const bool stopping = (stop.stop_requested != nullptr && stop.stop_requested->load()) ||
                            (stop.duration && now - started >= *stop.duration);
      if (stopping) {
        // Drain what the kernel has already captured, then stop.
        if (live_) {
          while (pcap_dispatch(handle_, -1, &PcapBackend::OnPacket,
                               reinterpret_cast<u_char*>(this)) > 0) {
          }
        }
        break;
      }
      if (stop.on_tick && now >= next_tick) {
        UpdateCounters();
        stop.on_tick(counters_);
        next_tick = now + stop.tick_interval;
      }
      if (live_) {
        pollfd waiter{fd, POLLIN, 0};
        const int ready = poll(&waiter, 1, kReadTimeoutMs);
        if (ready < 0 && errno != EINTR) {
          status = Status::FromErrno("pcap: waiting for packets", errno);
          break;
        }
        if (ready <= 0) continue;
      }
      const int count = pcap_dispatch(handle_, live_ ? -1 : 4096, &PcapBackend::OnPacket,
                                      reinterpret_cast<u_char*>(this));
      if (count == PCAP_ERROR_BREAK) break;
      if (count < 0) {
        const std::string why = pcap_geterr(handle_);
        // A file that ends mid-record or has a damaged record: what came before it
        // is decoded and reported, and the capture says so (exit 3).
        status = live_ ? Status::IoError("pcap: reading packets failed: " + why)
                       : Status::Corruption("capture file " + options_.read_file +
                                            " is truncated or damaged (" + why +
                                            "); the profile covers the packets before it");
        break;
      }
      if (!live_ && count == 0) break;  // end of file
    }
    reassembler.Finish(last_timestamp_ns_);
    UpdateCounters();
    reassembler_ = nullptr;
    return status;
  }

  BackendCounters counters() const override { return counters_; }

 private:
  Status OpenLive() {
    char error[PCAP_ERRBUF_SIZE] = {};
    if (options_.interface.empty()) {
      return Status::InvalidArgument("pcap: give --iface IF for a live capture or --read FILE");
    }
    handle_ = pcap_create(options_.interface.c_str(), error);
    if (handle_ == nullptr) {
      return Status::Unavailable("pcap: cannot open interface " + options_.interface + ": " +
                                 error);
    }
    pcap_set_snaplen(handle_, options_.snapshot_length);
    pcap_set_promisc(handle_, 0);
    pcap_set_timeout(handle_, kReadTimeoutMs);
    // Immediate mode: packets are readable as soon as captured, so a stop request
    // can drain everything up to that moment.
    pcap_set_immediate_mode(handle_, 1);
    pcap_set_buffer_size(handle_, options_.kernel_buffer_bytes);
    pcap_set_tstamp_precision(handle_, PCAP_TSTAMP_PRECISION_NANO);
    const int rc = pcap_activate(handle_);
    if (rc >= 0) {
      live_ = true;
      return Status::Ok();
    }
    const std::string detail = pcap_geterr(handle_);
    pcap_close(handle_);
    handle_ = nullptr;
    switch (rc) {
      case PCAP_ERROR_PERM_DENIED:
        return Status::PermissionDenied(
            "capturing on " + options_.interface + " is not permitted (" + detail +
            "): run as root, or grant CAP_NET_RAW and CAP_NET_ADMIN (`sudo setcap "
            "cap_net_raw,cap_net_admin+eip $(command -v artune)`), or trace one process "
            "without privileges with --exec -- CMD");
      case PCAP_ERROR_NO_SUCH_DEVICE:
        return Status::Unavailable("no network interface named " + options_.interface +
                                   ": list them with `ip link` (loopback is usually lo)");
      case PCAP_ERROR_IFACE_NOT_UP:
        return Status::Unavailable("interface " + options_.interface +
                                   " is down: bring it up with `ip link set " + options_.interface +
                                   " up`");
      default:
        return Status::Unavailable("pcap: cannot capture on " + options_.interface + ": " + detail);
    }
  }

  Status ApplyFilter() {
    std::string expression = options_.filter;
    if (options_.port) expression = "tcp port " + std::to_string(*options_.port);
    if (expression.empty()) expression = "tcp";
    bpf_program program{};
    if (pcap_compile(handle_, &program, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
      return Status::InvalidArgument("pcap filter \"" + expression + "\" does not compile: " +
                                     pcap_geterr(handle_) + " (see `man pcap-filter`)");
    }
    const int rc = pcap_setfilter(handle_, &program);
    pcap_freecode(&program);
    if (rc != 0) {
      return Status::Unavailable("pcap: cannot install filter \"" + expression +
                                 "\": " + pcap_geterr(handle_));
    }
    return Status::Ok();
  }

  static void OnPacket(u_char* user, const pcap_pkthdr* header, const u_char* bytes) {
    auto* self = reinterpret_cast<PcapBackend*>(user);
    self->HandlePacket(*header, bytes);
  }

  void HandlePacket(const pcap_pkthdr& header, const u_char* bytes) {
    ++counters_.events_seen;
    // Nanosecond precision was requested: tv_usec holds nanoseconds.
    const uint64_t ts = static_cast<uint64_t>(header.ts.tv_sec) * 1000000000ull +
                        static_cast<uint64_t>(header.ts.tv_usec);
    last_timestamp_ns_ = std::max(last_timestamp_ns_, ts);
    pcap::TcpPacket packet;
    switch (pcap::ParsePacket(link_type_, {bytes, header.caplen}, header.len, packet)) {
      case pcap::ParseOutcome::kTcp:
        reassembler_->OnPacket(packet, ts);
        break;
      case pcap::ParseOutcome::kNotTcp:
        ++not_tcp_;
        break;
      case pcap::ParseOutcome::kFragment:
        ++fragments_;
        break;
      case pcap::ParseOutcome::kMalformed:
        ++malformed_;
        break;
      case pcap::ParseOutcome::kUnsupportedLink:
        ++unsupported_link_;
        break;
    }
  }

  void UpdateCounters() {
    if (reassembler_ != nullptr) {
      const pcap::ReassemblyCounters& r = reassembler_->counters();
      counters_.bytes_seen = r.delivered_bytes;
      counters_.detail["tcp_segments"] = r.segments;
      counters_.detail["out_of_order_segments"] = r.out_of_order_segments;
      counters_.detail["retransmitted_bytes"] = r.retransmitted_bytes;
      counters_.detail["overlapping_bytes"] = r.overlapping_bytes;
      counters_.detail["stream_gaps"] = r.gaps;
      counters_.detail["stream_gap_bytes"] = r.gap_bytes;
      counters_.detail["flows"] = r.flows;
      counters_.detail["flows_dropped"] = r.flows_dropped;
    }
    counters_.detail["packets_not_tcp"] = not_tcp_;
    counters_.detail["ip_fragments"] = fragments_;
    counters_.detail["packets_malformed"] = malformed_;
    counters_.detail["packets_unsupported_link"] = unsupported_link_;
    if (live_ && handle_ != nullptr) {
      pcap_stat stats{};
      if (pcap_stats(handle_, &stats) == 0) {
        counters_.events_lost = uint64_t{stats.ps_drop} + stats.ps_ifdrop;
      }
    }
  }

  PcapOptions options_;
  pcap_t* handle_ = nullptr;
  bool live_ = false;
  int link_type_ = 0;
  pcap::TcpReassembler* reassembler_ = nullptr;
  BackendCounters counters_;
  uint64_t last_timestamp_ns_ = 0;
  uint64_t not_tcp_ = 0, fragments_ = 0, malformed_ = 0, unsupported_link_ = 0;
};

}  // namespace

Result<std::unique_ptr<CaptureBackend>> CreatePcapBackend(const PcapOptions& options) {
  const bool live = !options.interface.empty();
  const bool file = !options.read_file.empty();
  if (live == file) {
    return Status::InvalidArgument(
        "pcap: give exactly one of --iface IF (live capture) or --read FILE (saved capture)");
  }
  if (options.port && !options.filter.empty()) {
    return Status::InvalidArgument("pcap: give --port N or --filter EXPR, not both");
  }
  if (options.port && *options.port == 0) {
    return Status::InvalidArgument("pcap: --port 0 is not a port: give the server's TCP port");
  }
  return std::unique_ptr<CaptureBackend>(std::make_unique<PcapBackend>(options));
}

}  // namespace artune::probes
