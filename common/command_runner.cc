#include "common/command_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <thread>

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

std::string ReadAll(bp::ipstream& stream) {
  return std::string(std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>());
}

// A pipe for a child's output that no other child inherits past its exec (the child gets its
// end as a dup2 copy, which is not close-on-exec). Otherwise a concurrently started child of
// another thread would hold our write end, and reading to EOF would wait for that child too.
StatusOr<bp::pipe> CloseOnExecPipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe2: ") + strerror(errno));
  return bp::pipe(fds[0], fds[1]);
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
  std::vector<std::string> args(argv.begin() + 1, argv.end());

  StatusOr<bp::pipe> out_pipe = CloseOnExecPipe();
  if (!out_pipe.ok()) return out_pipe.status();
  StatusOr<bp::pipe> err_pipe = CloseOnExecPipe();
  if (!err_pipe.ok()) return err_pipe.status();
  bp::ipstream out_stream(std::move(*out_pipe));
  bp::ipstream err_stream(std::move(*err_pipe));
  std::error_code start_error;
  // Tools print localized text; we parse some of it (dumpe2fs, losetup) and put all of it into
  // error messages, so every child runs in the C locale.
  bp::environment env = boost::this_process::environment();
  env["LC_ALL"] = "C";
  for (const auto& [name, value] : extra_env) {
    if (name.empty() || name.find('=') != std::string::npos) {
      return InvalidArgument("environment variable name \"" + name + "\" is empty or has '='");
    }
    env[name] = value;
  }
  // Parenthesised redirections keep clang-format from reading them as template brackets.
  // Starting under the shared lock keeps every ChildSpawnBarrier's descriptors out of the child.
  std::shared_lock<std::shared_mutex> spawning(ChildSpawnMutex());
  bp::child child(exe, bp::args(args), env, (bp::std_in < bp::null), (bp::std_out > out_stream),
                  (bp::std_err > err_stream), start_error);
  spawning.unlock();
  if (start_error) {
    return Internal("cannot start " + CommandLineForDisplay(argv) + ": " + start_error.message());
  }

  // The watchdog kills the child when the deadline passes. It may only signal while the child is
  // unreaped (finished == false), because after waitpid the pid could belong to someone else.
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  bool timed_out = false;
  const pid_t pid = child.id();
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, timeout, [&] { return finished; })) {
      timed_out = true;
      ::kill(pid, SIGKILL);
    }
  });

  CommandOutput output;
  std::thread stderr_reader([&] { output.stderr_text = ReadAll(err_stream); });
  output.stdout_text = ReadAll(out_stream);
  stderr_reader.join();

  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_all();
  watchdog.join();

  std::error_code wait_error;
  child.wait(wait_error);
  if (timed_out) {
    return DeadlineExceeded(CommandLineForDisplay(argv) + " did not finish within " +
                            std::to_string(timeout.count()) + " ms and was killed");
  }
  if (wait_error) {
    return Internal("waiting for " + CommandLineForDisplay(argv) + ": " + wait_error.message());
  }
  output.exit_code = child.exit_code();
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
