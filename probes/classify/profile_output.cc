#include "artune/probes/profile_output.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace artune::probes {
namespace {

using nlohmann::json;

json HistogramToJson(const Log2Histogram& histogram) {
  json object = json::object();
  for (const auto& [bound, count] : histogram.buckets) object[std::to_string(bound)] = count;
  return object;
}

Log2Histogram HistogramFromJson(const json& object) {
  Log2Histogram histogram;
  for (const auto& [key, value] : object.items()) {
    histogram.buckets[std::stoull(key)] = value.get<uint64_t>();
  }
  return histogram;
}

// Absent when unknown (no samples), so profiles without it read back the same.
json InflightToJson(const CallConcurrency& c) {
  json histogram = json::object();
  for (const auto& [bucket, count] : c.histogram) histogram[std::to_string(bucket)] = count;
  return {{"samples", c.samples},
          {"p50", c.p50},
          {"p90", c.p90},
          {"max", c.max},
          {"histogram", std::move(histogram)}};
}

CallConcurrency InflightFromJson(const json& j) {
  CallConcurrency c;
  c.samples = j.value("samples", uint64_t{0});
  c.p50 = j.value("p50", uint32_t{0});
  c.p90 = j.value("p90", uint32_t{0});
  c.max = j.value("max", uint32_t{0});
  const json histogram = j.value("histogram", json::object());  // items() must not outlive it
  for (const auto& [key, value] : histogram.items()) {
    c.histogram[static_cast<uint32_t>(std::stoul(key))] = value.get<uint64_t>();
  }
  return c;
}

json ClassToJson(const ClassCount& c) { return {{"count", c.count}, {"bytes", c.bytes}}; }
ClassCount ClassFromJson(const json& j) {
  return {j.at("count").get<uint64_t>(), j.at("bytes").get<uint64_t>()};
}

json MethodToJson(const MethodProfile& m) {
  json j = {
      {"method", m.method},
      {"direction", MessageDirectionName(m.direction)},
      {"messages", m.messages},
      {"bytes", m.bytes},
      {"compressed_messages", m.compressed_messages},
      {"min_size", m.min_size},
      {"max_size", m.max_size},
      {"median_size", m.median_size},
      {"message_size_histogram", HistogramToJson(m.message_sizes)},
      {"classes",
       {{"empty", ClassToJson(m.classes.empty)},
        {"small", ClassToJson(m.classes.small)},
        {"medium", ClassToJson(m.classes.medium)},
        {"large", ClassToJson(m.classes.large)}}},
      {"scheme", PayloadSchemeName(m.scheme)},
  };
  if (!m.iovec_sizes.buckets.empty()) j["iovec_size_histogram"] = HistogramToJson(m.iovec_sizes);
  json rates = json::array();
  for (const RateBucket& r : m.rates) {
    rates.push_back({{"second", r.second}, {"messages", r.messages}, {"bytes", r.bytes}});
  }
  j["rates"] = std::move(rates);
  j["tensors"] = m.tensors;
  if (m.inflight.samples > 0) j["inflight"] = InflightToJson(m.inflight);
  return j;
}

PayloadScheme SchemeFromName(const std::string& name) {
  for (PayloadScheme s : {PayloadScheme::kNone, PayloadScheme::kUniform, PayloadScheme::kRandom,
                          PayloadScheme::kSkew}) {
    if (name == PayloadSchemeName(s)) return s;
  }
  throw std::invalid_argument("unknown scheme " + name);
}

MethodProfile MethodFromJson(const json& j) {
  MethodProfile m;
  m.method = j.at("method").get<std::string>();
  m.direction = j.at("direction").get<std::string>() == "request" ? MessageDirection::kRequest
                                                                  : MessageDirection::kResponse;
  m.messages = j.at("messages").get<uint64_t>();
  m.bytes = j.at("bytes").get<uint64_t>();
  m.compressed_messages = j.value("compressed_messages", uint64_t{0});
  m.min_size = j.value("min_size", uint64_t{0});
  m.max_size = j.value("max_size", uint64_t{0});
  m.median_size = j.value("median_size", 0.0);
  m.message_sizes = HistogramFromJson(j.at("message_size_histogram"));
  if (j.contains("iovec_size_histogram"))
    m.iovec_sizes = HistogramFromJson(j["iovec_size_histogram"]);
  const json& classes = j.at("classes");
  m.classes.empty = ClassFromJson(classes.at("empty"));
  m.classes.small = ClassFromJson(classes.at("small"));
  m.classes.medium = ClassFromJson(classes.at("medium"));
  m.classes.large = ClassFromJson(classes.at("large"));
  m.scheme = SchemeFromName(j.at("scheme").get<std::string>());
  for (const json& r : j.value("rates", json::array())) {
    m.rates.push_back({r.at("second").get<uint64_t>(), r.at("messages").get<uint64_t>(),
                       r.at("bytes").get<uint64_t>()});
  }
  m.tensors = j.value("tensors", std::map<std::string, uint64_t>{});
  if (j.contains("inflight")) m.inflight = InflightFromJson(j["inflight"]);
  return m;
}

json ConnectionToJson(const ConnectionProfile& c) {
  return {{"id", c.id},
          {"client", c.client},
          {"server", c.server},
          {"roles_known", c.roles_known},
          {"joined_midway", c.joined_midway},
          {"data_frames", c.data_frames},
          {"data_bytes", c.data_bytes},
          {"unattributed_data_bytes", c.unattributed_data_bytes},
          {"request_messages", c.request_messages},
          {"request_bytes", c.request_bytes},
          {"response_messages", c.response_messages},
          {"response_bytes", c.response_bytes},
          {"request_size_histogram", HistogramToJson(c.request_sizes)},
          {"response_size_histogram", HistogramToJson(c.response_sizes)}};
}

ConnectionProfile ConnectionFromJson(const json& j) {
  ConnectionProfile c;
  c.id = j.at("id").get<uint64_t>();
  c.client = j.at("client").get<std::string>();
  c.server = j.at("server").get<std::string>();
  c.roles_known = j.value("roles_known", false);
  c.joined_midway = j.value("joined_midway", false);
  c.data_frames = j.value("data_frames", uint64_t{0});
  c.data_bytes = j.value("data_bytes", uint64_t{0});
  c.unattributed_data_bytes = j.value("unattributed_data_bytes", uint64_t{0});
  c.request_messages = j.value("request_messages", uint64_t{0});
  c.request_bytes = j.value("request_bytes", uint64_t{0});
  c.response_messages = j.value("response_messages", uint64_t{0});
  c.response_bytes = j.value("response_bytes", uint64_t{0});
  c.request_sizes = HistogramFromJson(j.value("request_size_histogram", json::object()));
  c.response_sizes = HistogramFromJson(j.value("response_size_histogram", json::object()));
  return c;
}

json IoFlowToJson(const IoFlowProfile& f) {
  return {{"flow", f.flow},
          {"send", f.send},
          {"calls", f.calls},
          {"bytes", f.bytes},
          {"failed_calls", f.failed_calls},
          {"iovec_size_histogram", HistogramToJson(f.iovec_sizes)},
          {"iovecs_per_call_histogram", HistogramToJson(f.iovecs_per_call)}};
}

IoFlowProfile IoFlowFromJson(const json& j) {
  IoFlowProfile f;
  f.flow = j.at("flow").get<std::string>();
  f.send = j.at("send").get<bool>();
  f.calls = j.at("calls").get<uint64_t>();
  f.bytes = j.at("bytes").get<uint64_t>();
  f.failed_calls = j.value("failed_calls", uint64_t{0});
  f.iovec_sizes = HistogramFromJson(j.at("iovec_size_histogram"));
  f.iovecs_per_call = HistogramFromJson(j.at("iovecs_per_call_histogram"));
  return f;
}

// "2/5" (p50/max) on rows that know their concurrency, "-" on the others.
std::string InflightCell(const MethodProfile& m) {
  if (m.inflight.samples == 0) return "-";
  return std::to_string(m.inflight.p50) + "/" + std::to_string(m.inflight.max);
}

// "9 B+ x40, 8.0 KiB+ x12": each log2 bucket's lower bound and count.
std::string HistogramLine(const Log2Histogram& histogram) {
  std::string line;
  for (const auto& [bound, count] : histogram.buckets) {
    if (!line.empty()) line += ", ";
    line += FormatBytes(bound) + "+ x" + std::to_string(count);
  }
  return line;
}

std::string Pad(const std::string& text, size_t width, bool right_align) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return right_align ? fill + text : text + fill;
}

}  // namespace

std::string ProfileToJson(const Profile& profile, int indent) {
  json j;
  j["backend"] = profile.backend;
  j["duration_s"] = profile.duration_s;
  j["capture_id"] = profile.capture_id ? json(*profile.capture_id) : json(nullptr);
  j["errors"] = profile.errors;
  j["lost_events"] = profile.lost_events;
  j["connections_joined_midway"] = profile.connections_joined_midway;
  j["backend_detail"] = profile.backend_detail;
  j["methods"] = json::array();
  for (const MethodProfile& m : profile.methods) j["methods"].push_back(MethodToJson(m));
  j["connections"] = json::array();
  for (const ConnectionProfile& c : profile.connections) {
    j["connections"].push_back(ConnectionToJson(c));
  }
  j["io_flows"] = json::array();
  for (const IoFlowProfile& f : profile.io_flows) j["io_flows"].push_back(IoFlowToJson(f));
  if (!profile.unattributed_iovec_sizes.buckets.empty()) {
    j["unattributed_iovec_size_histogram"] = HistogramToJson(profile.unattributed_iovec_sizes);
  }
  return j.dump(indent);
}

Result<Profile> ProfileFromJson(const std::string& text) {
  try {
    const json j = json::parse(text);
    Profile p;
    p.backend = j.at("backend").get<std::string>();
    p.duration_s = j.at("duration_s").get<double>();
    if (!j.at("capture_id").is_null()) p.capture_id = j["capture_id"].get<int64_t>();
    p.errors = j.at("errors").get<std::map<std::string, uint64_t>>();
    p.lost_events = j.at("lost_events").get<uint64_t>();
    p.connections_joined_midway = j.value("connections_joined_midway", uint64_t{0});
    p.backend_detail = j.value("backend_detail", std::map<std::string, uint64_t>{});
    for (const json& m : j.at("methods")) p.methods.push_back(MethodFromJson(m));
    for (const json& c : j.value("connections", json::array())) {
      p.connections.push_back(ConnectionFromJson(c));
    }
    for (const json& f : j.value("io_flows", json::array()))
      p.io_flows.push_back(IoFlowFromJson(f));
    if (j.contains("unattributed_iovec_size_histogram")) {
      p.unattributed_iovec_sizes = HistogramFromJson(j["unattributed_iovec_size_histogram"]);
    }
    return p;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string("probe profile JSON is not readable: ") + e.what() +
                              "; the stored capture is damaged: capture it again");
  }
}

std::string FormatBytes(uint64_t bytes) {
  char text[32];
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < (1ull << 20)) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else if (bytes < (1ull << 30)) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  }
  return text;
}

std::string FormatProfileTable(const Profile& profile) {
  std::ostringstream out;
  char line[160];
  std::snprintf(line, sizeof line, "backend %s, %.1f s, capture id %s, lost events %llu\n",
                profile.backend.c_str(), profile.duration_s,
                profile.capture_id ? std::to_string(*profile.capture_id).c_str() : "-",
                static_cast<unsigned long long>(profile.lost_events));
  out << line;

  // INFLIGHT: calls in flight on the connection when a call started (p50/max), on
  // request rows; responses show "-" (the same calls).
  const std::vector<std::string> headers = {
      "METHOD", "DIR",   "MESSAGES",         "BYTES", "MEAN", "SMALL",
      "MEDIUM", "LARGE", "INFLIGHT p50/max", "SCHEME"};
  std::vector<std::vector<std::string>> rows;
  for (const MethodProfile& m : profile.methods) {
    const uint64_t mean = m.messages == 0 ? 0 : m.bytes / m.messages;
    rows.push_back({m.method, MessageDirectionName(m.direction), std::to_string(m.messages),
                    FormatBytes(m.bytes), FormatBytes(mean), std::to_string(m.classes.small.count),
                    std::to_string(m.classes.medium.count), std::to_string(m.classes.large.count),
                    InflightCell(m), PayloadSchemeName(m.scheme)});
  }
  std::vector<size_t> widths(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) {
    widths[c] = headers[c].size();
    for (const auto& row : rows) widths[c] = std::max(widths[c], row[c].size());
  }
  auto emit = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool numeric = c >= 2 && c <= 8;
      const bool last = c + 1 == cells.size();
      out << (c ? "  " : "") << (last ? cells[c] : Pad(cells[c], widths[c], numeric));
    }
    out << "\n";
  };
  emit(headers);
  for (const auto& row : rows) emit(row);
  if (rows.empty()) out << "(no gRPC messages seen)\n";

  for (const MethodProfile& m : profile.methods) {
    for (const auto& [tensor, count] : m.tensors) {
      out << "tensor " << tensor << " x" << count << " (" << m.method << ")\n";
    }
  }
  for (const MethodProfile& m : profile.methods) {
    if (m.iovec_sizes.buckets.empty()) continue;
    out << "iovec sizes " << m.method << " " << MessageDirectionName(m.direction) << " ("
        << m.iovec_sizes.Total() << "): " << HistogramLine(m.iovec_sizes) << "\n";
  }
  if (!profile.unattributed_iovec_sizes.buckets.empty()) {
    out << "iovec sizes not in a method's frames (" << profile.unattributed_iovec_sizes.Total()
        << "): " << HistogramLine(profile.unattributed_iovec_sizes) << "\n";
  }
  if (!profile.errors.empty()) {
    out << "decode errors:";
    for (const auto& [kind, count] : profile.errors) out << " " << kind << "=" << count;
    out << "\n";
  }
  if (profile.connections_joined_midway > 0) {
    out << "note: " << profile.connections_joined_midway
        << " connection(s) were joined midway: their HPACK state was missed, so methods "
           "show as \"unknown\" and messages already in flight are not counted\n";
  }
  return out.str();
}

}  // namespace artune::probes
