#include "tests/soak/process_resources.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace flexcsi::soak {
namespace {

int64_t EntriesOf(const std::string& dir) {
  std::error_code error;
  int64_t n = 0;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    ++n;
  }
  return error ? -1 : n;
}

int64_t VmRssKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

}  // namespace

ProcessResources SampleProcess(pid_t pid) {
  ProcessResources r;
  if (pid <= 0) return r;
  const std::string proc = "/proc/" + std::to_string(pid);
  r.rss_kib = VmRssKib(pid);
  r.open_fds = EntriesOf(proc + "/fd");
  r.threads = EntriesOf(proc + "/task");
  return r;
}

ProcessResources SampleProcessAtRest(pid_t pid) {
  ProcessResources least = SampleProcess(pid);
  for (int i = 1; i < 5 && least.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const ProcessResources r = SampleProcess(pid);
    if (!r.ok()) return r;
    least.rss_kib = std::min(least.rss_kib, r.rss_kib);
    least.open_fds = std::min(least.open_fds, r.open_fds);
    least.threads = std::min(least.threads, r.threads);
  }
  return least;
}

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

}  // namespace flexcsi::soak
