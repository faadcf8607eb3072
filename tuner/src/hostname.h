// The name of this host as the store records it (a bench run's and a sweep's
// `host`): one definition, so both are stamped alike. Private to the tuner.
#pragma once

#include <string>

namespace artune::tuner {

// gethostname(), or "unknown" when it fails.
std::string LocalHostname();

}  // namespace artune::tuner
