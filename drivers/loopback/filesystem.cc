#include "drivers/loopback/filesystem.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "common/command_runner.h"
#include "drivers/loopback/loop_device.h"

namespace flexcsi {
namespace loopback {

namespace {
// blkid's exit status when it found nothing on the device.
constexpr int kBlkidNothingFound = 2;
}  // namespace

StatusOr<std::string> ProbeFilesystem(const std::string& device) {
  StatusOr<CommandOutput> out =
      RunCommandCapture({"blkid", "--probe", "--output", "value", "--match-tag", "TYPE", device});
  if (!out.ok()) return out.status().WithContext("probing " + device);
  if (out->exit_code == kBlkidNothingFound) return std::string();
  if (out->exit_code != 0) {
    // Includes "ambivalent result" (several signatures): refuse rather than guess.
    return Internal("blkid on " + device + " failed with exit code " +
                    std::to_string(out->exit_code) + ": " + out->stderr_text);
  }
  std::string type = out->stdout_text;
  while (!type.empty() && (type.back() == '\n' || type.back() == ' ')) type.pop_back();
  return type;
}

Status MakeFilesystem(const std::string& device, const std::string& fs_type) {
  StatusOr<std::string> out = Status::Ok();
  if (fs_type == "ext4") {
    // nodiscard: discarding a sparse loop file is slow and pointless. -m 0: a volume belongs to
    // one workload, reserving 5 % for root only hides space from it.
    out = RunCommand({"mkfs.ext4", "-q", "-F", "-m", "0", "-E", "nodiscard", device});
  } else if (fs_type == "xfs") {
    out = RunCommand({"mkfs.xfs", "-q", "-K", device});
  } else {
    return InvalidArgument("cannot make filesystem '" + fs_type + "' (ext4, xfs)");
  }
  if (!out.ok()) return out.status().WithContext("formatting " + device + " as " + fs_type);
  return Status::Ok();
}

namespace {

bool IsExtFamily(const std::string& fs_type) {
  return fs_type == "ext4" || fs_type == "ext3" || fs_type == "ext2";
}

// Size of the ext filesystem on `device` from its superblock.
StatusOr<int64_t> ExtFilesystemBytes(const std::string& device) {
  StatusOr<std::string> out = RunCommand({"dumpe2fs", "-h", device});
  if (!out.ok()) return out.status();
  int64_t blocks = -1;
  int64_t block_size = -1;
  std::istringstream lines(*out);
  std::string line;
  while (std::getline(lines, line)) {
    auto value = [&] { return std::stoll(line.substr(line.find(':') + 1)); };
    if (line.rfind("Block count:", 0) == 0) blocks = value();
    if (line.rfind("Block size:", 0) == 0) block_size = value();
  }
  if (blocks < 0 || block_size <= 0) return Internal("dumpe2fs -h " + device + ": no block count");
  return blocks * block_size;
}

// Whether this process may grow a mounted ext4 (the kernel checks CAP_SYS_RESOURCE). Read from
// /proc rather than libcap to avoid a dependency for one bit.
bool HasCapSysResource() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      unsigned long long effective = std::stoull(line.substr(7), nullptr, 16);
      constexpr int kCapSysResource = 24;
      return (effective >> kCapSysResource) & 1ULL;
    }
  }
  return false;
}

// Whether the ext filesystem on `device` already uses the whole device, so growing it is a no-op.
// Works mounted or not (dumpe2fs reads the superblock).
// EXT4_IOC_RESIZE_FS from the kernel's fs/ext4/ext4.h (not in every libc's headers): grow a
// mounted ext4 to the given number of blocks.
constexpr unsigned long kExt4ResizeFs = _IOW('f', 16, uint64_t);

// The kernel's online resize of the ext4 on `device`, asked through `mount_path`.
Status ResizeExtThroughMount(const std::string& device, const std::string& mount_path) {
  StatusOr<int64_t> device_bytes = BlockDeviceSize(device);
  if (!device_bytes.ok()) return device_bytes.status();
  struct statvfs fs;
  if (::statvfs(mount_path.c_str(), &fs) != 0 || fs.f_bsize == 0) {
    return Internal("statvfs " + mount_path + ": " + strerror(errno));
  }
  uint64_t blocks = static_cast<uint64_t>(*device_bytes) / fs.f_bsize;
  int fd = ::open(mount_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Internal("open " + mount_path + ": " + strerror(errno));
  int rc = ::ioctl(fd, kExt4ResizeFs, &blocks);
  int saved_errno = errno;
  ::close(fd);
  if (rc != 0) {
    return Internal("EXT4_IOC_RESIZE_FS through " + mount_path + ": " + strerror(saved_errno));
  }
  return Status::Ok();
}

StatusOr<bool> ExtFillsDevice(const std::string& device) {
  StatusOr<int64_t> fs_bytes = ExtFilesystemBytes(device);
  if (!fs_bytes.ok()) return fs_bytes.status();
  StatusOr<int64_t> device_bytes = BlockDeviceSize(device);
  if (!device_bytes.ok()) return device_bytes.status();
  // Less than a MiB of slack is alignment, not a size change.
  return *fs_bytes + (1 << 20) > *device_bytes;
}

}  // namespace

Status GrowUnmountedFilesystem(const std::string& fs_type, const std::string& device) {
  if (!IsExtFamily(fs_type)) return Status::Ok();
  StatusOr<bool> full = ExtFillsDevice(device);
  if (!full.ok()) return full.status();
  if (*full) return Status::Ok();
  // -p repairs only what is safe; exit 1 means "fixed", anything above is trouble.
  StatusOr<CommandOutput> checked = RunCommandCapture({"e2fsck", "-f", "-p", device});
  if (!checked.ok()) return checked.status();
  if (checked->exit_code > 1) {
    return Internal("e2fsck -f -p " + device + " exited " + std::to_string(checked->exit_code) +
                    ": " + checked->stdout_text + checked->stderr_text);
  }
  StatusOr<std::string> resized = RunCommand({"resize2fs", device});
  if (!resized.ok()) return resized.status().WithContext("growing " + device + " offline");
  return Status::Ok();
}

Status GrowFilesystem(const std::string& fs_type, const std::string& device,
                      const std::string& mount_path) {
  StatusOr<std::string> out = Status::Ok();
  if (IsExtFamily(fs_type)) {
    // Already grown (offline, by a NodeStage after the device grew): nothing to do, whatever the
    // capabilities. A CO retries a failed NodeExpandVolume forever, so this must answer OK.
    StatusOr<bool> full = ExtFillsDevice(device);
    if (!full.ok()) return full.status();
    if (*full) return Status::Ok();
    // Online: the kernel does the work and wants CAP_SYS_RESOURCE for it. Without it no retry
    // can succeed, which is what FAILED_PRECONDITION tells a CO; NodeStage grows it offline.
    if (!HasCapSysResource()) {
      return FailedPrecondition(
          "growing mounted " + fs_type + " on " + device +
          " needs CAP_SYS_RESOURCE, which csi-loopback lacks; it grows when next mounted "
          "(NodeStage, or NodePublish where the node mounts the device at targets)");
    }
    out = RunCommand({"resize2fs", device});
    if (!out.ok() && !mount_path.empty()) {
      // resize2fs resizes through the first mount of the device in /proc/mounts. Where the
      // device is mounted at each target, that may be a read-only pod's, and the kernel
      // refuses (EROFS); the caller's mount_path is a writable mount, so ask the kernel there.
      Status direct = ResizeExtThroughMount(device, mount_path);
      if (direct.ok()) return Status::Ok();
      return out.status().WithContext("growing " + fs_type + " on " + device + " (and " +
                                      direct.message() + ")");
    }
  } else if (fs_type == "xfs") {
    out = RunCommand({"xfs_growfs", mount_path});
  } else {
    return InvalidArgument("cannot grow filesystem '" + fs_type + "' (ext4, xfs)");
  }
  if (!out.ok()) return out.status().WithContext("growing " + fs_type + " on " + device);
  return Status::Ok();
}

}  // namespace loopback
}  // namespace flexcsi
