// The factory: the one place that knows every backend folder.
#include "artune/probes/backend.h"
#include "ebpf/ebpf_backend.h"
#include "pcap/pcap_backend.h"
#include "preload/preload_backend.h"

namespace artune::probes {

Result<std::unique_ptr<CaptureBackend>> CreateCaptureBackend(const BackendOptions& options) {
  switch (options.kind) {
    case BackendKind::kPcap:
      return CreatePcapBackend(options.pcap);
    case BackendKind::kEbpf:
#ifdef ARTUNE_HAVE_EBPF
      return CreateEbpfBackend(options.ebpf);
#else
      return Status::Unsupported(
          "this artune was built without the ebpf backend (no bpftool, clang or kernel BTF at "
          "build time): use `artune probe --exec -- CMD ARGS` or the pcap backend");
#endif
    case BackendKind::kPreload:
      return CreatePreloadBackend(options.preload);
  }
  return Status::InvalidArgument("unknown capture backend");
}

}  // namespace artune::probes
