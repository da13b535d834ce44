#include "flexexec/driver_name.h"

#include <limits.h>
#include <unistd.h>

namespace flexcsi {
namespace {

// Drops trailing slashes, keeping a lone "/".
std::string TrimTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string Dirname(const std::string& path) {
  std::string p = TrimTrailingSlashes(path);
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return TrimTrailingSlashes(p.substr(0, slash));
}

std::string Basename(const std::string& path) {
  std::string p = TrimTrailingSlashes(path);
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string CurrentDirectory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof(buf)) != nullptr ? std::string(buf) : std::string();
}

}  // namespace

std::string ExecutableDirectory(const std::string& argv0) {
  if (argv0.find('/') == std::string::npos) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return CurrentDirectory();
    return Dirname(std::string(buf, static_cast<size_t>(n)));
  }
  std::string dir = Dirname(argv0);
  // "./loopback" run from inside the driver directory: the name is the working directory's.
  if (dir == "." || Basename(dir) == "." || Basename(dir) == "..") {
    std::string cwd = CurrentDirectory();
    if (dir == ".") return cwd;
    if (!cwd.empty() && dir[0] != '/') dir = cwd + "/" + dir;
  }
  return dir;
}

StatusOr<std::string> DriverNameFromDirectory(const std::string& directory) {
  const std::string dir_name = Basename(directory);
  if (dir_name.empty() || dir_name == "/" || dir_name == "." || dir_name == "..") {
    return InvalidArgument("cannot derive a FlexVolume driver name from directory \"" + directory +
                           "\"; flexexec must be installed as <plugindir>/<vendor>~<name>/<name>");
  }
  if (dir_name[0] == '.') {
    return InvalidArgument("driver directory \"" + directory +
                           "\" is hidden; kubelet ignores directories starting with '.'");
  }
  std::string name = dir_name;
  for (char& c : name) {
    if (c == '~') c = '/';
  }
  if (name.front() == '/' || name.back() == '/' || name.find("//") != std::string::npos) {
    return InvalidArgument("driver directory \"" + dir_name +
                           "\" has an empty vendor or name part; use <vendor>~<name>");
  }
  return name;
}

}  // namespace flexcsi
