#include "drivers/loopback/loop_device.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <sstream>

#include "common/command_runner.h"

namespace flexcsi {
namespace loopback {

namespace {

struct LoopDevice {
  std::string name;
  bool readonly = false;
};

StatusOr<std::vector<LoopDevice>> ListLoopDevices(const std::string& backing_file) {
  // -j matches by inode, so symlinked or relative paths to the same file are found too.
  StatusOr<std::string> out =
      RunCommand({"losetup", "--list", "--noheadings", "--output", "NAME,RO", "-j", backing_file});
  if (!out.ok()) return out.status().WithContext("listing loop devices of " + backing_file);
  std::vector<LoopDevice> devices;
  std::istringstream lines(*out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    LoopDevice device;
    std::string ro;
    if (fields >> device.name >> ro) {
      device.readonly = ro == "1";
      devices.push_back(device);
    }
  }
  return devices;
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
    if (device.readonly == readonly) return device.name;
  }
  if (::access(backing_file.c_str(), F_OK) != 0) {
    return NotFound("backing file " + backing_file + " does not exist");
  }
  std::vector<std::string> argv = {"losetup", "--find", "--show"};
  if (readonly) argv.push_back("--read-only");
  argv.push_back(backing_file);
  StatusOr<std::string> out = RunCommand(argv);
  if (!out.ok()) return out.status().WithContext("attaching " + backing_file);
  std::string device = *out;
  while (!device.empty() && (device.back() == '\n' || device.back() == ' ')) device.pop_back();
  if (device.empty()) return Internal("losetup printed no device for " + backing_file);
  return device;
}

Status DetachLoopDevices(const std::string& backing_file) {
  StatusOr<std::vector<std::string>> devices = LoopDevicesFor(backing_file);
  if (!devices.ok()) return devices.status();
  for (const std::string& device : *devices) {
    StatusOr<std::string> out = RunCommand({"losetup", "--detach", device});
    if (!out.ok()) return out.status().WithContext("detaching " + device);
  }
  return Status::Ok();
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
