// libFuzzer target: what the control plane decodes from a peer, and the knob
// text a user gives. Bytes are parsed as each control-plane message a server or
// client receives (HandshakeRequest, ReconfigureRequest, HandshakeResponse,
// StatsResponse) and go through the same conversions and checks the engine
// applies (FromKnobs, WithLocalKnobs, ValidateConfig, the geometry, FromProto);
// then as "name=value" knob text through SetKnob. Properties checked: a config
// that validates survives the wire unchanged, and its TOML and text forms parse
// back to the same config.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "artune/transport/config.h"
#include "artune/transport/knobs.h"
#include "connection.h"
#include "control.pb.h"
#include "control_codec.h"

namespace {

using namespace artune;
using namespace artune::transport;

void Require(bool condition) {
  if (!condition) abort();
}

void CheckKnobs(const control::Knobs& knobs) {
  const Config local;
  Config config = WithLocalKnobs(FromKnobs(knobs), local);
  if (!ValidateConfig(config).ok()) return;
  // What the engine derives from a config it accepted must be usable.
  const Geometry geometry = GeometryFor(config);
  Require(geometry.buffer_count >= 1 && geometry.buffer_bytes > 0);
  const Config clamped = ClampToGeometry(config, geometry);
  Require(ValidateConfig(clamped).ok());
  // The wire round trip keeps every negotiated knob.
  const Config back = WithLocalKnobs(FromKnobs(ToKnobs(config)), local);
  Require(ConfigToMap(back) == ConfigToMap(config));
  // Every knob's text parses back to the same value.
  Config reparsed;
  for (const auto& [name, text] : ConfigToMap(config)) {
    Require(SetKnob(reparsed, name, text).ok());
  }
  Require(ConfigToMap(reparsed) == ConfigToMap(config));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int length = static_cast<int>(size);
  if (control::HandshakeRequest request; request.ParseFromArray(data, length)) {
    CheckKnobs(request.knobs());
  }
  if (control::ReconfigureRequest request; request.ParseFromArray(data, length)) {
    CheckKnobs(request.knobs());
  }
  if (control::HandshakeResponse response; response.ParseFromArray(data, length)) {
    CheckKnobs(response.knobs());
  }
  if (control::StatsResponse response; response.ParseFromArray(data, length)) {
    const Stats stats = FromProto(response);
    // Counters within the known protocols and buckets survive the trip back.
    const Stats again = FromProto(ToProto(stats));
    Require(again.calls_completed == stats.calls_completed);
    for (int p = 0; p < kProtocolCount; ++p) {
      Require(again.by_protocol[p].bytes == stats.by_protocol[p].bytes);
    }
  }
  // Knob text: "name=value" as `--set` and config files give it.
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const size_t equals = text.find('='); equals != std::string_view::npos) {
    Config config;
    if (SetKnob(config, text.substr(0, equals), text.substr(equals + 1)).ok()) {
      (void)ValidateConfig(config);
      (void)ToToml(config);
    }
  }
  return 0;
}
