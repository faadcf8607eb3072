// Conversions between the transport's structs and the control-plane messages.
#pragma once

#include "artune/transport/config.h"
#include "artune/transport/transport.h"
#include "control.pb.h"

namespace artune::transport {

// Driven by the knob table (knobs.h): a knob travels when control::Knobs has a
// field of its name; the others are each end's own (WithLocalKnobs).
control::Knobs ToKnobs(const Config& config);
// Numeric fields are copied as they are; the caller validates the result
// (ValidateConfig). An enum value past the knob's choices leaves the knob at its
// default. Knobs that do not travel are at their defaults.
Config FromKnobs(const control::Knobs& knobs);
// `negotiated` with the knobs of `local` that never travel over the control plane
// (no field in control::Knobs): the verbs_* knobs name this host's hardware
// (device, port, GID, ...), and idle_timeout_ms is each server's own policy.
Config WithLocalKnobs(Config negotiated, const Config& local);
control::StatsResponse ToProto(const Stats& stats);
Stats FromProto(const control::StatsResponse& proto);

}  // namespace artune::transport
