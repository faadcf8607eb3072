// Conversions between the transport's structs and the control-plane messages.
#pragma once

#include "artune/transport/config.h"
#include "artune/transport/transport.h"
#include "control.pb.h"

namespace artune::transport {

control::Knobs ToKnobs(const Config& config);
// Fields are copied as they are; the caller validates the result (ValidateConfig).
Config FromKnobs(const control::Knobs& knobs);
// `negotiated` with the verbs_* knobs of `local`: they name this host's hardware
// (device, port, GID, ...) and never travel over the control plane.
Config WithLocalVerbsKnobs(Config negotiated, const Config& local);
control::StatsResponse ToProto(const Stats& stats);
Stats FromProto(const control::StatsResponse& proto);

}  // namespace artune::transport
