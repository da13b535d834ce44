#include "drivers/loopback/loop_device.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "common/command_runner.h"

namespace flexcsi {
namespace loopback {

namespace {

struct LoopDevice {
  std::string name;  // "/dev/loop3"
  bool readonly = false;
  bool releasing = false;  // detached while open: the kernel unbinds it at its last close
};

// How long a detach waits for the kernel to let go of a device some other process still has
// open (a `losetup --list` or blkid of anyone on the machine opens every device for an instant).
constexpr std::chrono::seconds kReleaseTimeout(10);
constexpr std::chrono::milliseconds kReleasePoll(5);

// First line of a sysfs attribute; nullopt when it does not exist (device not bound).
std::optional<std::string> ReadAttribute(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string value;
  std::getline(in, value);
  if (in.bad()) return std::nullopt;
  return value;
}

// True when `shown` is `path` less some leading folders ("/volumes/v.img" of
// "/var/lib/flexcsi-loopback/volumes/v.img").
bool IsTailOf(const std::string& shown, const std::string& path) {
  return !shown.empty() && shown[0] == '/' && shown.size() < path.size() &&
         path.compare(path.size() - shown.size(), shown.size(), shown) == 0;
}

// The kernel names a loop device's file by the mount it was opened through. When that mount is
// gone, as it is once the container of the csi-loopback that attached the device has been
// replaced (a DaemonSet upgrade), the name is only the path within the mount. Such a device is
// ours when the kernel's record of its file (device and inode) is `file_stat`. Only devices whose
// name fits are opened: opening another volume's device would make its detach lazy.
bool BoundThroughGoneMount(const std::string& name, const std::string& shown,
                           const std::string& backing_file, const struct stat& file_stat) {
  if (!IsTailOf(shown, backing_file)) return false;
  const int fd = ::open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct loop_info64 info {};
  const bool read = ::ioctl(fd, LOOP_GET_STATUS64, &info) == 0;
  ::close(fd);
  return read && info.lo_inode == file_stat.st_ino && info.lo_device == file_stat.st_dev;
}

// What the kernel reports about loop device `name` ("loop3") while it is bound to `backing_file`
// (same inode, or same path when the file is gone); nullopt otherwise.
std::optional<LoopDevice> BoundTo(const std::string& name, const std::string& backing_file,
                                  const struct stat* file_stat) {
  const std::string sys = "/sys/block/" + name;
  std::optional<std::string> bound = ReadAttribute(sys + "/loop/backing_file");
  if (!bound) return std::nullopt;
  static const std::string kDeleted = " (deleted)";
  if (bound->size() > kDeleted.size() &&
      bound->compare(bound->size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    bound->resize(bound->size() - kDeleted.size());
  }
  struct stat st;
  const bool same_inode = file_stat != nullptr && ::stat(bound->c_str(), &st) == 0 &&
                          st.st_dev == file_stat->st_dev && st.st_ino == file_stat->st_ino;
  if (!same_inode && *bound != backing_file &&
      !(file_stat != nullptr && BoundThroughGoneMount(name, *bound, backing_file, *file_stat))) {
    return std::nullopt;
  }
  LoopDevice device;
  device.name = "/dev/" + name;
  device.readonly = ReadAttribute(sys + "/ro").value_or("0") == "1";
  device.releasing = ReadAttribute(sys + "/loop/autoclear").value_or("0") == "1";
  return device;
}

// Loop devices bound to `backing_file`, read from sysfs. Not `losetup --list -j`: that opens
// every bound device node to compare inodes, and a device open in one thread's listing makes
// another thread's detach of it lazy (the kernel only marks it autoclear and returns success).
// csi-loopback never asks for autoclear, so a device marked so is one being released.
StatusOr<std::vector<LoopDevice>> ListLoopDevices(const std::string& backing_file) {
  struct stat file_stat;
  const bool file_exists = ::stat(backing_file.c_str(), &file_stat) == 0;
  DIR* dir = ::opendir("/sys/block");
  if (dir == nullptr) return Internal(std::string("cannot list /sys/block: ") + strerror(errno));
  std::vector<std::string> names;
  while (const struct dirent* entry = ::readdir(dir)) {
    if (std::strncmp(entry->d_name, "loop", 4) == 0) names.push_back(entry->d_name);
  }
  ::closedir(dir);
  std::vector<LoopDevice> devices;
  for (const std::string& name : names) {
    std::optional<LoopDevice> device =
        BoundTo(name, backing_file, file_exists ? &file_stat : nullptr);
    if (device) devices.push_back(*device);
  }
  std::sort(devices.begin(), devices.end(), [](const LoopDevice& a, const LoopDevice& b) {
    return a.name.size() != b.name.size() ? a.name.size() < b.name.size() : a.name < b.name;
  });
  return devices;
}

std::string SysfsName(const std::string& device) { return device.substr(device.rfind('/') + 1); }

bool IsBoundTo(const std::string& device, const std::string& backing_file) {
  struct stat file_stat;
  const bool file_exists = ::stat(backing_file.c_str(), &file_stat) == 0;
  return BoundTo(SysfsName(device), backing_file, file_exists ? &file_stat : nullptr).has_value();
}

// Waits until the kernel has unbound `device` from `backing_file`. A detach of a device that
// someone still holds open only marks it for release at the last close; until then it still
// reads and writes the file, and its number cannot be reused.
Status WaitUntilReleased(const std::string& device, const std::string& backing_file) {
  const auto deadline = std::chrono::steady_clock::now() + kReleaseTimeout;
  while (IsBoundTo(device, backing_file)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Unavailable(device +
                         " is detached but still held open by another process; it is "
                         "released at its last close");
    }
    std::this_thread::sleep_for(kReleasePoll);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<std::string>> LoopDevicesFor(const std::string& backing_file) {
  StatusOr<std::vector<LoopDevice>> devices = ListLoopDevices(backing_file);
  if (!devices.ok()) return devices.status();
  std::vector<std::string> names;
  for (const LoopDevice& device : *devices) names.push_back(device.name);
  return names;
}

StatusOr<std::string> AttachLoopDevice(const std::string& backing_file, bool readonly) {
  StatusOr<std::vector<LoopDevice>> existing = ListLoopDevices(backing_file);
  if (!existing.ok()) return existing.status();
  for (const LoopDevice& device : *existing) {
    if (device.releasing) {
      // Never hand out a device the kernel is about to unbind: a format or mount on it would
      // fail half-way (size 0, "No such device") or outlive it. Let it go, then attach anew.
      FLEXCSI_RETURN_IF_ERROR(WaitUntilReleased(device.name, backing_file));
    } else if (device.readonly == readonly) {
      return device.name;
    }
  }
  if (::access(backing_file.c_str(), F_OK) != 0) {
    return NotFound("backing file " + backing_file + " does not exist");
  }
  // --find --show picks a free device and binds it in one step (LOOP_CTL_GET_FREE, then
  // LOOP_CONFIGURE, retried when another process took that number first).
  std::vector<std::string> argv = {"losetup", "--find", "--show"};
  if (readonly) argv.push_back("--read-only");
  argv.push_back(backing_file);
  StatusOr<std::string> out = RunCommand(argv);
  if (!out.ok()) return out.status().WithContext("attaching " + backing_file);
  std::string device = *out;
  while (!device.empty() && (device.back() == '\n' || device.back() == ' ')) device.pop_back();
  if (device.empty()) return Internal("losetup printed no device for " + backing_file);
  if (!IsBoundTo(device, backing_file)) {
    return Internal("losetup attached " + backing_file + " to " + device +
                    ", but the kernel shows it bound to something else");
  }
  return device;
}

// Unbinds `device` from `backing_file` (unless the kernel is already releasing it) and waits
// until it is unbound.
static Status DetachAndWait(const std::string& device, const std::string& backing_file,
                            bool releasing) {
  if (!releasing) {
    StatusOr<std::string> out = RunCommand({"losetup", "--detach", device});
    // Failing because it is already unbound (ENXIO: its release completed since the listing)
    // is what we wanted.
    if (!out.ok() && IsBoundTo(device, backing_file)) {
      return out.status().WithContext("detaching " + device);
    }
  }
  // losetup --detach returns at once even when the kernel only marked the device for release;
  // done means unbound, so that the file is free and the next attach gets a live device.
  return WaitUntilReleased(device, backing_file);
}

Status DetachLoopDevices(const std::string& backing_file) {
  StatusOr<std::vector<LoopDevice>> devices = ListLoopDevices(backing_file);
  if (!devices.ok()) return devices.status();
  for (const LoopDevice& device : *devices) {
    FLEXCSI_RETURN_IF_ERROR(DetachAndWait(device.name, backing_file, device.releasing));
  }
  return Status::Ok();
}

uint64_t LoopDeviceSequence(const std::string& device) {
  std::optional<std::string> seq = ReadAttribute("/sys/block/" + SysfsName(device) + "/diskseq");
  if (!seq) return 0;
  try {
    return std::stoull(*seq);
  } catch (const std::exception&) {
    return 0;
  }
}

Status DetachLoopDeviceAttachment(const std::string& device, uint64_t sequence,
                                  const std::string& backing_file) {
  if (device.empty() || sequence == 0 || LoopDeviceSequence(device) != sequence ||
      !IsBoundTo(device, backing_file)) {
    return Status::Ok();
  }
  return DetachAndWait(device, backing_file, /*releasing=*/false);
}

Status RefreshLoopDeviceSize(const std::string& device) {
  StatusOr<std::string> out = RunCommand({"losetup", "--set-capacity", device});
  if (!out.ok()) return out.status().WithContext("refreshing size of " + device);
  return Status::Ok();
}

StatusOr<int64_t> BlockDeviceSize(const std::string& device) {
  int fd = ::open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound("cannot open " + device + ": " + strerror(errno));
  uint64_t bytes = 0;
  int rc = ::ioctl(fd, BLKGETSIZE64, &bytes);
  int saved_errno = errno;
  ::close(fd);
  if (rc != 0) return Internal("BLKGETSIZE64 on " + device + ": " + strerror(saved_errno));
  return static_cast<int64_t>(bytes);
}

}  // namespace loopback
}  // namespace flexcsi
