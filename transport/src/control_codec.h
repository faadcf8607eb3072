// Conversions between the transport's structs and the control-plane messages.
#pragma once

#include "artune/transport/config.h"
#include "artune/transport/transport.h"
#include "control.pb.h"

namespace artune::transport {

control::Knobs ToKnobs(const Config& config);
// Fields are copied as they are; the caller validates the result (ValidateConfig).
Config FromKnobs(const control::Knobs& knobs);
// `negotiated` with the knobs of `local` that never travel over the control plane:
// the verbs_* knobs name this host's hardware (device, port, GID, ...), and
// idle_timeout_ms is each server's own policy.
Config WithLocalKnobs(Config negotiated, const Config& local);
control::StatsResponse ToProto(const Stats& stats);
Stats FromProto(const control::StatsResponse& proto);

}  // namespace artune::transport
