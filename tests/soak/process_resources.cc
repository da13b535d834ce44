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

ProcessResources SampleProcessAtRest(pid_t pid) { return SampleProcessesAtRest({pid}).front(); }

std::vector<ProcessResources> SampleProcessesAtRest(const std::vector<pid_t>& pids) {
  std::vector<ProcessResources> least;
  for (pid_t pid : pids) least.push_back(SampleProcess(pid));
  for (int i = 1; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (size_t p = 0; p < pids.size(); ++p) {
      if (!least[p].ok()) continue;  // gone: stays gone
      const ProcessResources r = SampleProcess(pids[p]);
      if (!r.ok()) {
        least[p] = r;
        continue;
      }
      least[p].rss_kib = std::min(least[p].rss_kib, r.rss_kib);
      least[p].open_fds = std::min(least[p].open_fds, r.open_fds);
      least[p].threads = std::min(least[p].threads, r.threads);
    }
  }
  return least;
}

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

}  // namespace flexcsi::soak
