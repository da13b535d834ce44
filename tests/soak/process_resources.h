// What a soak samples of a running process and of the files it writes, from /proc and stat.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace flexcsi::soak {

struct ProcessResources {
  int64_t rss_kib = -1;   // VmRSS
  int64_t open_fds = -1;  // entries of /proc/<pid>/fd
  int64_t threads = -1;   // entries of /proc/<pid>/task
  bool ok() const { return rss_kib >= 0 && open_fds >= 0 && threads >= 0; }
};

// -1 fields when the process is gone (or not ours to read).
ProcessResources SampleProcess(pid_t pid);

// The process's resting level: the least of each figure over five reads 100 ms apart. A call's
// connection thread ending, a reconcile pass reading the mount table, an HTTP connection being
// closed hold a thread or an fd for a moment after the call returned; what leaked is in every
// read.
ProcessResources SampleProcessAtRest(pid_t pid);
// The same for several processes over one window of five reads: a soak's sample costs 400 ms
// however many processes it watches.
std::vector<ProcessResources> SampleProcessesAtRest(const std::vector<pid_t>& pids);

// The file's size in bytes, 0 when it does not exist (a WAL before the first write).
int64_t FileBytes(const std::string& path);

}  // namespace flexcsi::soak
