#include "common/command_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <boost/process/search_path.hpp>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace flexcsi {

namespace bp = boost::process;

namespace {

// Resolves argv[0] to an executable path; empty when it cannot be found.
boost::filesystem::path ResolveExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return boost::filesystem::path(name);
  boost::filesystem::path found = bp::search_path(name);
  if (!found.empty()) return found;
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    boost::filesystem::path candidate = boost::filesystem::path(dir) / name;
    boost::system::error_code ec;
    if (boost::filesystem::is_regular_file(candidate, ec) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return {};
}

// Reads `fd` to its end and closes it.
std::string ReadToEnd(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

// A pipe for a child's output that no other child inherits past its exec (the child gets its
// end as a dup2 copy, which is not close-on-exec). Otherwise a concurrently started child of
// another thread would hold our write end, and reading to EOF would wait for that child too.
struct OutputPipe {
  int read_end = -1;
  int write_end = -1;
  ~OutputPipe() {
    for (int fd : {read_end, write_end}) {
      if (fd >= 0) ::close(fd);
    }
  }
  Status Open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe2: ") + strerror(errno));
    read_end = fds[0];
    write_end = fds[1];
    return Status::Ok();
  }
  int TakeReadEnd() { return std::exchange(read_end, -1); }
};

// The child's environment: ours with LC_ALL=C and `extra_env` set.
StatusOr<std::vector<std::string>> ChildEnvironment(const CommandEnvironment& extra_env) {
  std::vector<std::pair<std::string, std::string>> settings = {{"LC_ALL", "C"}};
  for (const auto& [name, value] : extra_env) {
    if (name.empty() || name.find('=') != std::string::npos) {
      return InvalidArgument("environment variable name \"" + name + "\" is empty or has '='");
    }
    settings.push_back({name, value});
  }
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable = *entry;
    const std::string name = variable.substr(0, variable.find('='));
    bool overridden = false;
    for (const auto& setting : settings) overridden |= setting.first == name;
    if (!overridden) env.push_back(variable);
  }
  for (const auto& [name, value] : settings) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Children start under a shared lock; a ChildSpawnBarrier holds it exclusively.
std::shared_mutex& ChildSpawnMutex() {
  static std::shared_mutex mu;
  return mu;
}

std::string Trimmed(const std::string& s) {
  size_t end = s.find_last_not_of(" \t\r\n");
  return end == std::string::npos ? std::string() : s.substr(0, end + 1);
}

}  // namespace

ChildSpawnBarrier::ChildSpawnBarrier() { ChildSpawnMutex().lock(); }
ChildSpawnBarrier::~ChildSpawnBarrier() { ChildSpawnMutex().unlock(); }

std::string CommandLineForDisplay(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) {
    if (!line.empty()) line += ' ';
    line += arg;
  }
  return line;
}

StatusOr<CommandOutput> RunCommandCapture(const std::vector<std::string>& argv,
                                          std::chrono::milliseconds timeout,
                                          const CommandEnvironment& extra_env) {
  if (argv.empty()) return InvalidArgument("empty command line");
  boost::filesystem::path exe = ResolveExecutable(argv[0]);
  if (exe.empty()) return NotFound("command not found: " + argv[0]);
  std::vector<std::string> args = argv;
  args[0] = exe.string();

  OutputPipe out, err;
  FLEXCSI_RETURN_IF_ERROR(out.Open());
  FLEXCSI_RETURN_IF_ERROR(err.Open());
  // Tools print localized text; we parse some of it (dumpe2fs, losetup) and put all of it into
  // error messages, so every child runs in the C locale.
  StatusOr<std::vector<std::string>> env = ChildEnvironment(extra_env);
  if (!env.ok()) return env.status();
  std::vector<char*> child_argv = NullTerminated(args);
  std::vector<char*> child_env = NullTerminated(*env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write_end, 2);
  // posix_spawn, not fork: glibc starts the child in our address space (CLONE_VM|CLONE_VFORK)
  // until its exec, so a large multi-threaded daemon does not copy its page tables and then
  // take a copy-on-write fault for every page it writes afterwards (over half of csi-loopback's
  // CPU per NodeStage went there). Starting under the shared lock keeps every
  // ChildSpawnBarrier's descriptors out of the child.
  pid_t pid = -1;
  std::shared_lock<std::shared_mutex> spawning(ChildSpawnMutex());
  const int spawned =
      ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, child_argv.data(), child_env.data());
  spawning.unlock();
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return Internal("cannot start " + CommandLineForDisplay(argv) + ": " + strerror(spawned));
  }
  ::close(std::exchange(out.write_end, -1));
  ::close(std::exchange(err.write_end, -1));

  // The watchdog kills the child when the deadline passes. It may only signal while the child is
  // unreaped (finished == false), because after waitpid the pid could belong to someone else.
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  bool timed_out = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, timeout, [&] { return finished; })) {
      timed_out = true;
      ::kill(pid, SIGKILL);
    }
  });

  CommandOutput output;
  std::thread stderr_reader([&, fd = err.TakeReadEnd()] { output.stderr_text = ReadToEnd(fd); });
  output.stdout_text = ReadToEnd(out.TakeReadEnd());
  stderr_reader.join();

  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_all();
  watchdog.join();

  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  const int wait_errno = errno;
  if (timed_out) {
    return DeadlineExceeded(CommandLineForDisplay(argv) + " did not finish within " +
                            std::to_string(timeout.count()) + " ms and was killed");
  }
  if (waited < 0) {
    return Internal("waiting for " + CommandLineForDisplay(argv) + ": " + strerror(wait_errno));
  }
  // As Boost.Process reported it before: the exit status, or the signal that ended it.
  output.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                     : WIFSIGNALED(status) ? WTERMSIG(status)
                                           : status;
  return output;
}

StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout) {
  StatusOr<CommandOutput> result = RunCommandCapture(argv, timeout);
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) {
    std::string detail = Trimmed(result->stderr_text);
    if (detail.empty()) detail = Trimmed(result->stdout_text);
    return Internal(CommandLineForDisplay(argv) + " failed with exit code " +
                    std::to_string(result->exit_code) + (detail.empty() ? "" : ": " + detail));
  }
  return std::move(result->stdout_text);
}

}  // namespace flexcsi
