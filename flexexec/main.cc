// flexexec: the FlexVolume executable. kubelet and kube-controller-manager run it as
// <plugindir>/<vendor~name>/<name> <call> [args...] and parse stdout and stderr together as one
// JSON reply, so this program prints exactly one JSON object and writes nothing else anywhere.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "common/version.h"
#include "flexexec/flexexec.h"

namespace {

// Anything reaching stderr (a library warning, an abort message) would corrupt the reply
// kubelet parses, so stderr goes to /dev/null before anything else happens.
void SilenceStderr() {
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) return;
  ::dup2(devnull, STDERR_FILENO);
  if (devnull != STDERR_FILENO) ::close(devnull);
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nobody to tell
    off += static_cast<size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  SilenceStderr();
  ::signal(SIGPIPE, SIG_IGN);
  // For people and `flexcsi doctor`, never kubelet: no FlexVolume call starts with "--", so this
  // one plain line cannot be taken for a reply. 0.1.0 answered {"status":"Not supported"}.
  if (argc == 2 && std::string(argv[1]) == "--version") {
    WriteAll(STDOUT_FILENO, flexcsi::VersionLine("flexexec") + "\n");
    return 0;
  }
  int code = 1;
  try {
    std::vector<std::string> args(argv, argv + argc);
    nlohmann::json reply = flexcsi::RunFlexexec(args);
    WriteAll(STDOUT_FILENO, flexcsi::FormatReply(reply));
    code = flexcsi::ExitCodeForReply(reply);
  } catch (...) {
    WriteAll(STDOUT_FILENO, "{\"message\":\"flexexec internal error\",\"status\":\"Failure\"}\n");
    code = 1;
  }
  return code;
}
