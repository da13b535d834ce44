#include "controller/fault_points.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace flexcsi::controller {

void CrashPoint(const char* step) {
  static const std::string spec = [] {
    const char* v = std::getenv("FLEXCSI_CONTROLLER_CRASH_AFTER");
    return std::string(v ? v : "");
  }();
  if (spec.empty()) return;
  static std::atomic<int> hits{0};
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  if (name != step) return;
  const int nth = colon == std::string::npos ? 1 : std::atoi(spec.c_str() + colon + 1);
  if (++hits < nth) return;
  const char msg[] = "flexcsi-controller: crash point reached, SIGKILL\n";
  (void)!::write(2, msg, sizeof(msg) - 1);
  ::kill(::getpid(), SIGKILL);
}

}  // namespace flexcsi::controller
