#include "hostname.h"

#include <unistd.h>

namespace artune::tuner {

std::string LocalHostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace artune::tuner
