// The factory: the one place that knows every backend folder.
#include "artune/probes/backend.h"
#include "pcap/pcap_backend.h"

namespace artune::probes {

Result<std::unique_ptr<CaptureBackend>> CreateCaptureBackend(const BackendOptions& options) {
  switch (options.kind) {
    case BackendKind::kPcap:
      return CreatePcapBackend(options.pcap);
  }
  return Status::InvalidArgument("unknown capture backend");
}

}  // namespace artune::probes
