// The libpcap backend: live capture on an interface, or a saved pcap/pcapng file,
// with TCP reassembly into stream events. Internal to probes/: reach it through
// CreateCaptureBackend().
#pragma once

#include <memory>

#include "artune/probes/backend.h"

namespace artune::probes {

Result<std::unique_ptr<CaptureBackend>> CreatePcapBackend(const PcapOptions& options);

}  // namespace artune::probes
