#include "tests/kubelet/kubelet_caller.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/kubelet/go_json.h"

extern char** environ;

namespace flexcsi {
namespace kubelet {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string EscapeDriver(const std::string& driver) {
  std::string s = driver;
  std::replace(s.begin(), s.end(), '/', '~');
  return s;
}

std::string LastSegment(const std::string& driver) {
  auto slash = driver.rfind('/');
  return slash == std::string::npos ? driver : driver.substr(slash + 1);
}

// Go's encoding/json decoding of DriverStatus: keys match field names case-insensitively and
// a wrong JSON type fails the whole reply. Returns an error text, empty when the types fit.
std::string CheckReplyTypes(const nlohmann::json& reply) {
  static const std::map<std::string, nlohmann::json::value_t> kFields = {
      {"status", nlohmann::json::value_t::string},
      {"message", nlohmann::json::value_t::string},
      {"device", nlohmann::json::value_t::string},
      {"volumename", nlohmann::json::value_t::string},
      {"attached", nlohmann::json::value_t::boolean},
      {"capabilities", nlohmann::json::value_t::object},
      {"volumenewsize", nlohmann::json::value_t::number_integer},
  };
  for (auto it = reply.begin(); it != reply.end(); ++it) {
    auto f = kFields.find(Lower(it.key()));
    if (f == kFields.end() || it.value().is_null()) continue;
    const auto t = it.value().type();
    bool ok = t == f->second || (f->second == nlohmann::json::value_t::number_integer &&
                                 t == nlohmann::json::value_t::number_unsigned);
    if (!ok) {
      return "json: cannot unmarshal " + std::string(it.value().type_name()) +
             " into Go struct field DriverStatus." + it.key();
    }
    if (f->first == "capabilities") {
      for (auto c = it.value().begin(); c != it.value().end(); ++c) {
        if (!c.value().is_boolean() && !c.value().is_null()) {
          return "json: cannot unmarshal " + std::string(c.value().type_name()) +
                 " into Go struct field DriverCapabilities.capabilities." + c.key();
        }
      }
    }
  }
  return "";
}

// The value of a reply field looked up the way Go does (case-insensitively).
const nlohmann::json* Field(const nlohmann::json& reply, const std::string& name) {
  const nlohmann::json* found = nullptr;
  for (auto it = reply.begin(); it != reply.end(); ++it) {
    if (Lower(it.key()) == name) found = &it.value();
  }
  return found;
}

bool MkdirAll(const std::string& path, std::string* error) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) {
    *error = "mkdir -p " + path + ": " + ec.message();
    return false;
  }
  ::chmod(path.c_str(), 0750);
  return true;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

DriverResult Skipped() {
  DriverResult r;
  r.outcome = DriverResult::Outcome::kSuccess;
  r.called = false;
  return r;
}

DriverResult KubeletError(const std::string& error) {
  DriverResult r;
  r.outcome = DriverResult::Outcome::kFailure;
  r.error = error;
  return r;
}

}  // namespace

std::string DriverResult::Describe() const {
  std::string s;
  switch (outcome) {
    case Outcome::kSuccess:
      s = "Success";
      break;
    case Outcome::kNotSupported:
      s = "Not supported";
      break;
    case Outcome::kFailure:
      s = "Failure: " + error;
      break;
  }
  if (!called) s += " (driver not called)";
  if (!output.empty()) s += " [output: " + output + "]";
  return s;
}

std::string BaseOptionsJson(const FlexVolumeSource& volume) {
  std::map<std::string, std::string> m = {
      {"kubernetes.io/fsType", volume.fs_type},
      {"kubernetes.io/readwrite", volume.read_only ? "ro" : "rw"},
      {"kubernetes.io/pvOrVolumeName", volume.volume_name},
  };
  for (const auto& [k, v] : volume.options) m[k] = v;  // user options win
  return GoJsonObject(m);
}

std::string MountOptionsJson(const FlexVolumeSource& volume, const PodInfo& pod) {
  std::map<std::string, std::string> m = {
      {"kubernetes.io/fsType", volume.fs_type},
      {"kubernetes.io/readwrite", volume.read_only ? "ro" : "rw"},
      {"kubernetes.io/pvOrVolumeName", volume.volume_name},
      {"kubernetes.io/pod.name", pod.name},
      {"kubernetes.io/pod.namespace", pod.namespace_name},
      {"kubernetes.io/pod.uid", pod.uid},
      {"kubernetes.io/serviceAccount.name", pod.service_account},
  };
  if (pod.fs_group) m["kubernetes.io/mounterArgs.FsGroup"] = std::to_string(*pod.fs_group);
  for (const auto& [k, v] : volume.secret) m["kubernetes.io/secret/" + k] = Base64Encode(v);
  for (const auto& [k, v] : volume.options) m[k] = v;
  return GoJsonObject(m);
}

DriverResult ParseDriverOutput(const std::string& call, const std::string& output, int exit_code) {
  DriverResult r;
  r.output = output;
  r.exit_code = exit_code;
  r.called = true;
  r.outcome = DriverResult::Outcome::kFailure;

  // handleCmdResponse: json.Unmarshal, then the status.
  std::string parse_error;
  nlohmann::json reply = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded()) {
    parse_error = output.find_first_not_of(" \t\r\n") == std::string::npos
                      ? "unexpected end of JSON input"
                      : "invalid character in driver output (not one JSON object)";
  } else if (!reply.is_object()) {
    parse_error = "json: cannot unmarshal " + std::string(reply.type_name()) +
                  " into Go value of type flexvolume.DriverStatus";
  } else {
    parse_error = CheckReplyTypes(reply);
  }
  if (!reply.is_discarded()) r.reply = reply;

  if (parse_error.empty()) {
    const nlohmann::json* status = Field(reply, "status");
    const nlohmann::json* message = Field(reply, "message");
    const std::string s = status && status->is_string() ? status->get<std::string>() : "";
    const std::string m = message && message->is_string() ? message->get<std::string>() : "";
    if (s == "Not supported") {
      r.outcome = DriverResult::Outcome::kNotSupported;
    } else if (s != "Success") {
      r.error = call + " command failed, status: " + s + ", reason: " + m;
    } else if (exit_code != 0) {
      // "driver bug": Success with a failed exec is the exec error.
      r.error = "exit status " + std::to_string(exit_code);
    } else {
      r.outcome = DriverResult::Outcome::kSuccess;
    }
  } else {
    r.error = parse_error;
  }
  return r;
}

std::string PodVolumeDir(const std::string& kubelet_root, const std::string& pod_uid,
                         const std::string& driver, const std::string& volume_name) {
  return kubelet_root + "/pods/" + pod_uid + "/volumes/" + EscapeDriver(driver) + "/" + volume_name;
}

std::string DeviceMountPath(const std::string& kubelet_root, const std::string& driver,
                            const std::string& volume_name) {
  return kubelet_root + "/plugins/kubernetes.io/flexvolume/" + driver + "/mounts/" + volume_name;
}

namespace {

struct MountInfoLine {
  int id = 0;
  std::string dev;  // "major:minor"
  std::string root;
  std::string mount_point;
};

std::string UnescapeOctal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string digits = s.substr(i + 1, 3);
      if (digits.size() == 3 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>(std::stoi(digits, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<MountInfoLine> ReadMountInfo() {
  std::vector<MountInfoLine> out;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    MountInfoLine m;
    std::string parent, root, mount_point;
    fields >> m.id >> parent >> m.dev >> root >> mount_point;
    m.root = UnescapeOctal(root);
    m.mount_point = UnescapeOctal(mount_point);
    out.push_back(m);
  }
  return out;
}

bool PathWithinBase(const std::string& path, const std::string& base) {
  if (base == "/") return path.size() > 1 && path[0] == '/';
  return path.size() > base.size() && path.compare(0, base.size(), base) == 0 &&
         path[base.size()] == '/';
}

}  // namespace

std::vector<std::string> GetMountRefs(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  const std::string real = fs::canonical(path, ec).string();
  if (ec) return {};
  const std::vector<MountInfoLine> mounts = ReadMountInfo();
  // mount-utils' SearchMountPoints: the (last) mount holding the path gives the root inside its
  // filesystem and the device; every other mount of the same root and device is a reference.
  int id = -1;
  std::string root, dev;
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    if (real == it->mount_point || PathWithinBase(real, it->mount_point)) {
      id = it->id;
      std::string rest = real.substr(it->mount_point == "/" ? 0 : it->mount_point.size());
      root = (fs::path(it->root) / fs::path(rest).relative_path()).lexically_normal().string();
      if (root.size() > 1 && root.back() == '/') root.pop_back();
      dev = it->dev;
      break;
    }
  }
  std::vector<std::string> refs;
  if (id < 0) return refs;
  for (const MountInfoLine& m : mounts) {
    if (m.id != id && m.root == root && m.dev == dev) refs.push_back(m.mount_point);
  }
  return refs;
}

bool HasMountRefs(const std::string& mount_path, const std::vector<std::string>& refs) {
  // pkg/volume/util: references whose path contains the mount path itself are ignored (a GCI
  // mounter workaround kubelet keeps).
  for (const std::string& ref : refs) {
    if (ref.find(mount_path) == std::string::npos) return true;
  }
  return false;
}

bool IsLikelyMountPoint(const std::string& path) {
  struct stat st, parent;
  if (::stat(path.c_str(), &st) != 0) return false;
  if (::lstat((path + "/..").c_str(), &parent) != 0) return false;
  return st.st_dev != parent.st_dev;
}

KubeletCaller::KubeletCaller(std::string plugin_dir, std::string kubelet_root, std::string driver,
                             std::string node_name)
    : plugin_dir_(std::move(plugin_dir)),
      kubelet_root_(std::move(kubelet_root)),
      driver_(std::move(driver)),
      node_name_(std::move(node_name)) {}

std::string KubeletCaller::ExecutablePath() const {
  return plugin_dir_ + "/" + EscapeDriver(driver_) + "/" + LastSegment(driver_);
}

std::string KubeletCaller::PodVolumeDirFor(const PodInfo& pod, const FlexVolumeSource& v) const {
  return PodVolumeDir(kubelet_root_, pod.uid, driver_, v.volume_name);
}

std::string KubeletCaller::DeviceMountPathFor(const FlexVolumeSource& v) const {
  return DeviceMountPath(kubelet_root_, driver_, v.volume_name);
}

bool KubeletCaller::InstallDriver(const std::string& flexexec_binary,
                                  const nlohmann::json& flexcsi_json, std::string* error) {
  const std::string exe = ExecutablePath();
  const std::string dir = fs::path(exe).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  // Config first: kubelet probes as soon as the executable appears.
  std::ofstream(dir + "/flexcsi.json") << flexcsi_json.dump(2) << "\n";
  const std::string tmp = dir + "/." + LastSegment(driver_) + ".tmp";  // hidden: not probed
  fs::copy_file(flexexec_binary, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::permissions(tmp, fs::perms(0755), ec);
  if (!ec) fs::rename(tmp, exe, ec);
  if (ec) {
    *error = "installing " + flexexec_binary + " as " + exe + ": " + ec.message();
    return false;
  }
  return true;
}

DriverResult KubeletCaller::Exec(const std::vector<std::string>& args,
                                 std::chrono::milliseconds timeout) const {
  const std::string call = args.empty() ? "" : args[0];
  const std::string exe = ExecutablePath();
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return KubeletError("pipe: " + std::string(strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // Go's CombinedOutput: one pipe for both streams; stdin is /dev/null.
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return KubeletError("fork/exec " + exe + ": " + strerror(rc));
  }

  std::string output;
  const auto deadline = Clock::now() + timeout;
  const auto kill_deadline = deadline + std::chrono::seconds(10);
  bool timed_out = false, killed = false;
  // KillNextExecAfter: the child is not reaped before the loop ends, so its pid stays ours.
  bool inject_kill = kill_next_exec_after_.has_value();
  const auto injected_kill = Clock::now() + kill_next_exec_after_.value_or(timeout);
  kill_next_exec_after_.reset();
  for (;;) {
    const auto now = Clock::now();
    if (inject_kill && now >= injected_kill) {
      inject_kill = false;
      ::kill(pid, SIGKILL);
    }
    // kubelet: SIGTERM at the deadline, SIGKILL 10 s later.
    if (!timed_out && now >= deadline) {
      timed_out = true;
      ::kill(pid, SIGTERM);
    }
    if (timed_out && !killed && now >= kill_deadline) {
      killed = true;
      ::kill(pid, SIGKILL);
    }
    auto next = timed_out ? kill_deadline : deadline;
    if (inject_kill) next = std::min(next, injected_kill);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    pollfd p{pipefd[0], POLLIN, 0};
    int pr = ::poll(&p, 1, killed ? 1000 : static_cast<int>(std::clamp<long long>(left, 1, 1000)));
    if (pr <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(pipefd[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    DriverResult r = KubeletError("timeout");
    r.called = true;
    r.output = output;
    return r;
  }
  int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ParseDriverOutput(call, output, exit_code);
}

DriverResult KubeletCaller::Init() {
  DriverResult r = Exec({"init"});
  if (r.success()) {
    const nlohmann::json* caps = Field(r.reply, "capabilities");
    if (caps != nullptr && caps->is_null()) {
      // kubelet dereferences the nil pointer here; report it instead of crashing.
      return KubeletError("init reply has \"capabilities\": null");
    }
    capabilities_ = caps ? *caps : nlohmann::json::object();
  }
  return r;
}

bool KubeletCaller::CapabilityAttach() const { return capabilities_.value("attach", true); }
bool KubeletCaller::CapabilityFsGroup() const { return capabilities_.value("fsGroup", true); }

DriverResult KubeletCaller::Attach(const FlexVolumeSource& v) {
  return Exec({"attach", BaseOptionsJson(v), node_name_});
}

DriverResult KubeletCaller::IsAttached(const FlexVolumeSource& v) {
  return Exec({"isattached", BaseOptionsJson(v), node_name_});
}

DriverResult KubeletCaller::Detach(const FlexVolumeSource& v) {
  return Exec({"detach", v.volume_name, node_name_});
}

DriverResult KubeletCaller::WaitForAttach(const std::string& device_path,
                                          const FlexVolumeSource& v) {
  return Exec({"waitforattach", device_path, BaseOptionsJson(v)}, std::chrono::minutes(10));
}

DriverResult KubeletCaller::MountDevice(const FlexVolumeSource& v, const std::string& device_path) {
  const std::string path = DeviceMountPathFor(v);
  std::string error;
  if (!MkdirAll(path, &error)) return KubeletError(error);
  if (IsLikelyMountPoint(path)) return Skipped();
  return Exec({"mountdevice", path, device_path, BaseOptionsJson(v)});
}

DriverResult KubeletCaller::UnmountDevice(const FlexVolumeSource& v) {
  const std::string path = DeviceMountPathFor(v);
  // operation_generator's GenerateUnmountDeviceFunc: the GetDeviceMountRefs check comes first.
  const std::vector<std::string> refs = GetMountRefs(path);
  if (HasMountRefs(path, refs)) {
    std::string list;
    for (const std::string& r : refs) list += (list.empty() ? "" : " ") + r;
    return KubeletError("GetDeviceMountRefs check failed: the device mount path \"" + path +
                        "\" is still mounted by other references [" + list + "]");
  }
  if (!Exists(path)) return Skipped();
  DriverResult r = Skipped();
  if (IsLikelyMountPoint(path)) {
    r = Exec({"unmountdevice", path});
    if (!r.success()) return r;
  }
  if (Exists(path) && ::rmdir(path.c_str()) != 0) {
    return KubeletError("rmdir " + path + ": " + strerror(errno));
  }
  return r;
}

DriverResult KubeletCaller::SetUp(const FlexVolumeSource& v, const PodInfo& pod) {
  const std::string dir = PodVolumeDirFor(pod, v);
  std::string error;
  if (!MkdirAll(dir, &error)) return KubeletError(error);
  if (IsLikelyMountPoint(dir)) return Skipped();
  DriverResult r = Exec({"mount", dir, MountOptionsJson(v, pod)});
  if (!r.success()) {
    ::rmdir(dir.c_str());  // best effort, as kubelet
    return r;
  }
  if (pod.fs_group && !v.read_only && CapabilityFsGroup() &&
      !ApplyFsGroup(dir, *pod.fs_group, &error)) {
    return KubeletError(error);
  }
  return r;
}

DriverResult KubeletCaller::TearDown(const FlexVolumeSource& v, const PodInfo& pod) {
  const std::string dir = PodVolumeDirFor(pod, v);
  if (!Exists(dir)) return Skipped();
  DriverResult r = Exec({"unmount", dir});
  if (!r.success()) return r;
  if (Exists(dir) && ::rmdir(dir.c_str()) != 0) {
    return KubeletError("rmdir " + dir + ": " + strerror(errno));
  }
  return r;
}

DriverResult KubeletCaller::ExpandVolume(const FlexVolumeSource& v, int64_t new_bytes,
                                         int64_t old_bytes) {
  return Exec({"expandvolume", BaseOptionsJson(v), DeviceMountPathFor(v), std::to_string(new_bytes),
               std::to_string(old_bytes)});
}

DriverResult KubeletCaller::ExpandFs(const FlexVolumeSource& v, const std::string& device_path,
                                     const std::string& path, int64_t new_bytes,
                                     int64_t old_bytes) {
  return Exec({"expandfs", BaseOptionsJson(v), device_path, path, std::to_string(new_bytes),
               std::to_string(old_bytes)});
}

bool ApplyFsGroup(const std::string& dir, int64_t gid, std::string* error) {
  auto apply = [&](const fs::path& p) -> bool {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return true;
    if (S_ISLNK(st.st_mode)) return true;
    if (::lchown(p.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(gid)) != 0) {
      *error = "chown " + p.string() + ": " + strerror(errno);
      return false;
    }
    mode_t mode = st.st_mode & 07777;
    mode |= S_IRGRP | S_IWGRP;
    if (S_ISDIR(st.st_mode))
      mode |= S_IXGRP | S_ISGID;
    else if (st.st_mode & S_IXUSR)
      mode |= S_IXGRP;
    if (::chmod(p.c_str(), mode) != 0) {
      *error = "chmod " + p.string() + ": " + strerror(errno);
      return false;
    }
    return true;
  };
  if (!apply(dir)) return false;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!apply(it->path())) return false;
  }
  return true;
}

}  // namespace kubelet
}  // namespace flexcsi
