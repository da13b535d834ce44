#include "tests/apiserver/fake_apiserver_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#ifndef FLEXCSI_FAKE_APISERVER
#error "FLEXCSI_FAKE_APISERVER must name tests/apiserver/fake_apiserver.py"
#endif

namespace flexcsi::testing {
namespace {

Status MakeDirs(const std::string& path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      partial = path.substr(0, i);
      if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
        return Internal("mkdir " + partial + ": " + std::strerror(errno));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

FakeApiServerProcess::~FakeApiServerProcess() { Stop(); }

std::string FakeApiServerProcess::server_url() const {
  return "https://127.0.0.1:" + std::to_string(port_);
}

Status FakeApiServerProcess::Start(const std::string& dir, FakeApiServerOptions options) {
  if (running()) return FailedPrecondition("fake API server already running");
  dir_ = dir;
  options_ = std::move(options);
  return Launch(options_.port);
}

Status FakeApiServerProcess::Launch(int port) {
  if (Status s = MakeDirs(dir_); !s.ok()) return s;
  // A stale port file from an earlier run must not be mistaken for readiness.
  unlink((dir_ + "/port").c_str());

  std::vector<std::string> args = {"python3", FLEXCSI_FAKE_APISERVER, "--dir", dir_,
                                   "--port",  std::to_string(port)};
  for (const std::string& token : options_.tokens) {
    args.push_back("--token");
    args.push_back(token);
  }
  if (options_.snapshot_crds) args.push_back("--snapshot-crds");
  if (!options_.leases) args.push_back("--no-leases");
  if (options_.persist_state) {
    args.push_back("--state-file");
    args.push_back(dir_ + "/state.jsonl");
  }
  if (!options_.controllers) args.push_back("--no-controllers");
  if (options_.delay_ms > 0) {
    args.push_back("--delay-ms");
    args.push_back(std::to_string(options_.delay_ms));
  }
  args.push_back("--pod-termination-ms");
  args.push_back(std::to_string(options_.pod_termination_ms));
  args.push_back("--detach-ms");
  args.push_back(std::to_string(options_.detach_ms));
  if (!options_.version.empty()) {
    args.push_back("--version");
    args.push_back(options_.version);
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());

  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return Internal(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Own process group, so a test runner's Ctrl-C reaches us through the parent only.
    setpgid(0, 0);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  Status s = WaitForPortFile();
  if (!s.ok()) {
    Kill();
    return s;
  }
  return Status::Ok();
}

Status FakeApiServerProcess::WaitForPortFile() {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Internal("fake API server exited during start (status " + std::to_string(status) +
                      "); is python3 installed?");
    }
    std::ifstream in(dir_ + "/port");
    int port = 0;
    if (in >> port && port > 0) {
      port_ = port;
      return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return DeadlineExceeded("fake API server did not write " + dir_ + "/port in time");
}

Status FakeApiServerProcess::Reap(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceeded("fake API server did not exit");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status FakeApiServerProcess::Stop() {
  if (!running()) return Status::Ok();
  kill(pid_, SIGTERM);
  if (Reap(std::chrono::seconds(10)).ok()) return Status::Ok();
  return Kill();
}

Status FakeApiServerProcess::Kill() {
  if (!running()) return Status::Ok();
  kill(pid_, SIGKILL);
  return Reap(std::chrono::seconds(10));
}

Status FakeApiServerProcess::Restart() {
  const int port = port_;
  if (Status s = Stop(); !s.ok()) return s;
  return Launch(port);
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace flexcsi::testing
