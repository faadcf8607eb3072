// The transport view: a running transport server's counters per protocol (from
// its control plane's GetStats), and which protocol carried which slice sizes.
#include <algorithm>
#include <cstdio>

#include "artune/probes/profile_output.h"
#include "artune/transport/protocol.h"
#include "view_parts.h"
#include "views.h"

namespace artune::dashboard {

namespace {

// Row 1: the server and its call and connection counters; row 2: the last poll's error.
void DrawTransportHeader(const TransportSnapshot& transport, Canvas& canvas) {
  char line[200];
  const int col = canvas.Put(1, 1, "server " + transport.address, Style::kHeader) + 2;
  if (!transport.latest) {
    canvas.Put(1, col, transport.error.empty() ? "connecting" : "unreachable",
               transport.error.empty() ? Style::kDim : Style::kError);
  } else {
    const TransportSample& sample = *transport.latest;
    std::snprintf(line, sizeof line, "calls %s (%s/s)  failed %s  connections %s (%s dropped)",
                  FormatCount(static_cast<double>(sample.calls_completed)).c_str(),
                  FormatCount(transport.calls_per_s).c_str(),
                  FormatCount(static_cast<double>(sample.calls_failed)).c_str(),
                  FormatCount(static_cast<double>(sample.connections_accepted)).c_str(),
                  FormatCount(static_cast<double>(sample.connections_dropped)).c_str());
    canvas.Put(1, col, line);
  }
  if (!transport.error.empty()) {
    canvas.Put(2, 1, KeepEnd(transport.error, static_cast<size_t>(canvas.width() - 2)),
               Style::kError);
  }
}

// From row 3: one row per protocol, its totals and rates.
void DrawProtocolTable(const TransportSnapshot& transport, const TransportSample& sample,
                       Canvas& canvas) {
  char line[200];
  std::snprintf(line, sizeof line, "  %-20s%12s%12s%12s%14s", "PROTOCOL", "slices", "bytes",
                "slices/s", "bytes/s");
  canvas.Put(3, 0, line, Style::kHeader);
  for (int p = 0; p < transport::kProtocolCount; ++p) {
    const ProtocolSample& counters = sample.by_protocol[p];
    const std::string name(transport::ProtocolName(static_cast<transport::Protocol>(p)));
    std::snprintf(line, sizeof line, "  %-20s%12s%12s%12s%14s", name.c_str(),
                  FormatCount(static_cast<double>(counters.slices)).c_str(),
                  probes::FormatBytes(counters.bytes).c_str(),
                  FormatCount(transport.rates[p].slices_per_s).c_str(),
                  FormatBytesPerSecond(transport.rates[p].bytes_per_s).c_str());
    canvas.Put(4 + p, 0, line);
  }
}

// Slices per log2 size bucket and protocol from row `top`: where the
// eager/rendezvous crossover and the chunking actually fell.
void DrawSizeBuckets(const TransportSample& sample, int top, Canvas& canvas) {
  char line[200];
  canvas.Put(top, 2, "slices by size (bucket b holds [2^b, 2^(b+1)) bytes)", Style::kHeader);
  // Columns: the bucket (4 wide), then 19 per protocol: 80 columns in all.
  std::string header = "size";
  for (int p = 0; p < transport::kProtocolCount; ++p) {
    std::snprintf(
        line, sizeof line, "%19s",
        std::string(transport::ProtocolName(static_cast<transport::Protocol>(p))).c_str());
    header += line;
  }
  canvas.Put(top + 1, 0, header, Style::kHeader);
  int first = -1, last = -1;
  for (int b = 0; b < transport::kLog2BucketCount; ++b) {
    for (int p = 0; p < transport::kProtocolCount; ++p) {
      if (sample.by_protocol[p].slices_by_bucket[b] == 0) continue;
      if (first < 0) first = b;
      last = b;
    }
  }
  const int rows = canvas.height() - 1 - (top + 2);
  if (first < 0) {
    canvas.Put(top + 2, 2, "no slices moved yet", Style::kDim);
    return;
  }
  if (last - first + 1 > rows) {
    canvas.Put(top, 56, "(" + std::to_string(last - first + 1 - rows) + " larger not shown)",
               Style::kDim);
    last = first + rows - 1;
  }
  for (int b = first; b <= last; ++b) {
    const int row = top + 2 + (b - first);
    const uint64_t bound = b == 0 ? 0 : (uint64_t{1} << b);
    canvas.Put(row, 0, AlignRight(BucketLabel(bound), 4), SizeStyle(bound));
    for (int p = 0; p < transport::kProtocolCount; ++p) {
      const uint64_t count = sample.by_protocol[p].slices_by_bucket[b];
      canvas.Put(row, 4 + 19 * p, AlignRight(count == 0 ? "." : FormatCount(count), 19),
                 count == 0 ? Style::kDim : Style::kNormal);
    }
  }
}

}  // namespace

void DrawTransportView(const TransportSnapshot& transport, Canvas& canvas) {
  if (!transport.configured) {
    canvas.Put(2, 2, "Transport", Style::kHeader);
    canvas.Put(4, 2, "No server: give the control-plane address of a running transport server,",
               Style::kDim);
    canvas.Put(5, 4, "artune dashboard --server 127.0.0.1:50051   (e.g. an `artune serve`)");
    return;
  }
  DrawTransportHeader(transport, canvas);
  if (!transport.latest) return;
  DrawProtocolTable(transport, *transport.latest, canvas);
  DrawSizeBuckets(*transport.latest, 5 + transport::kProtocolCount, canvas);
}

}  // namespace artune::dashboard
