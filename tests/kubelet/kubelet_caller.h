// A kubelet-faithful FlexVolume caller: runs the installed driver executable with exactly the
// argv, options JSON and output handling of kubelet and kube-controller-manager
// (shared/spec/flexvolume.md), and does kubelet's own part of each step around the call
// (creating and removing directories, skipping calls for paths that are / are not mount
// points). Scenario tests drive it the way a cluster would, so a pass means a real user's
// kubelet would see the same thing.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flexcsi {
namespace kubelet {

// The volume as the pod or PV describes it (flexVolume source) plus the Secret it references.
struct FlexVolumeSource {
  std::string volume_name;  // PV name or inline volume name: kubernetes.io/pvOrVolumeName
  std::string fs_type;      // flexVolume.fsType, "" when unset
  bool read_only = false;   // flexVolume.readOnly / PVC readOnly
  std::map<std::string, std::string> options;  // flexVolume.options, verbatim
  std::map<std::string, std::string> secret;   // Secret data (raw bytes), sent on mount only
};

struct PodInfo {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string service_account = "default";
  std::optional<int64_t> fs_group;
};

// Base keys of every call that carries options (flexvolume.md 4.1), Go-serialised.
std::string BaseOptionsJson(const FlexVolumeSource& volume);
// Base keys plus the mount-only keys (4.2): pod info, fsGroup, kubernetes.io/secret/<key>.
std::string MountOptionsJson(const FlexVolumeSource& volume, const PodInfo& pod);

// What kubelet concludes from one driver run (section 3.3).
struct DriverResult {
  enum class Outcome { kSuccess, kNotSupported, kFailure };
  Outcome outcome = Outcome::kFailure;
  std::string error;     // kubelet's error text on failure
  nlohmann::json reply;  // the parsed reply object (null if output was not JSON)
  std::string output;    // combined stdout+stderr, as kubelet captures it
  int exit_code = -1;
  bool called = false;  // false when kubelet's own checks made the call unnecessary

  bool success() const { return outcome == Outcome::kSuccess; }
  // "mount: Failure: <message>" style text for test failure messages.
  std::string Describe() const;
};

// kubelet's reply parsing for `call`: `output` is the combined output, `exit_code` the process
// exit status (-1: could not start / killed).
DriverResult ParseDriverOutput(const std::string& call, const std::string& output, int exit_code);

// Where kubelet puts things (flexvolume.md section 5).
std::string PodVolumeDir(const std::string& kubelet_root, const std::string& pod_uid,
                         const std::string& driver, const std::string& volume_name);
std::string DeviceMountPath(const std::string& kubelet_root, const std::string& driver,
                            const std::string& volume_name);

// kubelet's IsLikelyNotMountPoint inverted: the path's device differs from its parent's.
bool IsLikelyMountPoint(const std::string& path);

// mount-utils' GetMountRefs: the other mount points showing the same filesystem root and device
// as `path` (bind mounts of it, or of what it is a bind mount of).
std::vector<std::string> GetMountRefs(const std::string& path);
// pkg/volume/util HasMountRefs: whether a reference blocks unmountdevice (references containing
// `mount_path` are ignored).
bool HasMountRefs(const std::string& mount_path, const std::vector<std::string>& refs);

class KubeletCaller {
 public:
  // `plugin_dir`: the volume plugin dir; `driver`: "vendor/name". The executable is expected at
  // <plugin_dir>/<vendor~name>/<name> (see InstallDriver).
  KubeletCaller(std::string plugin_dir, std::string kubelet_root, std::string driver,
                std::string node_name);

  // Copies `flexexec_binary` to <plugin_dir>/<vendor~name>/<name> and writes `flexcsi_json`
  // beside it, as `flexcsi install-driver` does. Returns false with *error on failure.
  bool InstallDriver(const std::string& flexexec_binary, const nlohmann::json& flexcsi_json,
                     std::string* error);

  const std::string& driver() const { return driver_; }
  const std::string& kubelet_root() const { return kubelet_root_; }
  std::string ExecutablePath() const;
  std::string PodVolumeDirFor(const PodInfo& pod, const FlexVolumeSource& v) const;
  std::string DeviceMountPathFor(const FlexVolumeSource& v) const;

  // Runs the executable with argv[1..] = `args` and parses the reply; `timeout` as kubelet
  // (only waitforattach has one: SIGTERM, then SIGKILL 10 s later). Tests pass a safety
  // timeout for other calls so that a hung bridge fails a test instead of hanging it.
  DriverResult Exec(const std::vector<std::string>& args,
                    std::chrono::milliseconds timeout = std::chrono::minutes(3)) const;

  // The calls, each with kubelet's surrounding work.
  DriverResult Init();
  DriverResult Attach(const FlexVolumeSource& v);      // controller-manager
  DriverResult IsAttached(const FlexVolumeSource& v);  // controller-manager
  DriverResult Detach(const FlexVolumeSource& v);      // controller-manager
  DriverResult WaitForAttach(const std::string& device_path, const FlexVolumeSource& v);
  DriverResult MountDevice(const FlexVolumeSource& v, const std::string& device_path);
  DriverResult UnmountDevice(const FlexVolumeSource& v);
  DriverResult SetUp(const FlexVolumeSource& v, const PodInfo& pod);     // "mount"
  DriverResult TearDown(const FlexVolumeSource& v, const PodInfo& pod);  // "unmount"
  DriverResult ExpandVolume(const FlexVolumeSource& v, int64_t new_bytes, int64_t old_bytes);
  DriverResult ExpandFs(const FlexVolumeSource& v, const std::string& device_path,
                        const std::string& path, int64_t new_bytes, int64_t old_bytes);

  // Capabilities from the last successful Init (defaults per section 3.2 before that).
  bool CapabilityAttach() const;
  bool CapabilityFsGroup() const;

  // Fault injection: the next Exec sends SIGKILL to the driver executable `delay` after starting
  // it, unless it has finished by then (kubelet killed or restarted in the middle of a call).
  void KillNextExecAfter(std::chrono::milliseconds delay) { kill_next_exec_after_ = delay; }

 private:
  std::string plugin_dir_;
  std::string kubelet_root_;
  std::string driver_;
  std::string node_name_;
  nlohmann::json capabilities_ = nlohmann::json::object();
  mutable std::optional<std::chrono::milliseconds> kill_next_exec_after_;
};

// kubelet's SetVolumeOwnership after a successful mount with capability fsGroup: every file
// gets group `gid`, group rw (plus x for dirs and already-executable files), dirs setgid.
bool ApplyFsGroup(const std::string& dir, int64_t gid, std::string* error);

}  // namespace kubelet
}  // namespace flexcsi
