// Runs an external tool (losetup, mkfs.ext4, blkid, resize2fs, ...) as a child process, never
// through a shell: arguments travel as a vector, so nothing in them is ever interpreted.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace flexcsi {

// What a finished command left behind.
struct CommandOutput {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};

// Variables set for the child on top of the inherited environment, e.g. an exec credential
// plugin's settings. They travel in the environment, never in argv, because argv is visible to
// every user in /proc and ps and the values may be secrets.
using CommandEnvironment = std::vector<std::pair<std::string, std::string>>;

// Generous enough for mkfs on a slow disk; callers with better knowledge pass their own.
constexpr std::chrono::milliseconds kDefaultCommandTimeout = std::chrono::seconds(120);

// Runs argv[0] with the remaining elements as its arguments. argv[0] without a '/' is looked up
// in PATH and then in /usr/sbin, /sbin, /usr/bin, /bin (tools like losetup live in sbin, which a
// daemon's PATH may lack). The child inherits the environment with LC_ALL=C, so its output is
// parseable and its messages are in English. Returns the output whatever the exit code; fails only
// when the command could not be started (NOT_FOUND / INTERNAL) or ran past `timeout`, in which case
// it is killed and DEADLINE_EXCEEDED is returned.
StatusOr<CommandOutput> RunCommandCapture(
    const std::vector<std::string>& argv,
    std::chrono::milliseconds timeout = kDefaultCommandTimeout,
    const CommandEnvironment& extra_env = {});

// Like RunCommandCapture, but a non-zero exit is an INTERNAL error whose message names the
// command and carries its stderr. On success returns the command's stdout.
StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout = kDefaultCommandTimeout);

// While alive, RunCommand/RunCommandCapture start no child process. A child inherits every
// descriptor of this process open at the moment of fork, including one another thread opened an
// instant earlier without O_CLOEXEC and is about to close; the child keeps it until it exits.
// libmount opens mount points that way (O_PATH, no O_CLOEXEC) around mount(2) and umount2(2),
// and a child holding one keeps the mount busy: umount fails with EBUSY. Hold a
// ChildSpawnBarrier around such calls. Only the start of a child (fork to exec) is excluded, not
// its run, so a long mkfs does not delay a mount.
class ChildSpawnBarrier {
 public:
  ChildSpawnBarrier();
  ~ChildSpawnBarrier();
  ChildSpawnBarrier(const ChildSpawnBarrier&) = delete;
  ChildSpawnBarrier& operator=(const ChildSpawnBarrier&) = delete;
};

// "losetup -f --show /x": argv joined for messages and logs (not for execution).
std::string CommandLineForDisplay(const std::vector<std::string>& argv);

}  // namespace flexcsi
