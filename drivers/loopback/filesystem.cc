#include "drivers/loopback/filesystem.h"

#include "common/command_runner.h"

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

Status GrowFilesystem(const std::string& fs_type, const std::string& device,
                      const std::string& mount_path) {
  StatusOr<std::string> out = Status::Ok();
  if (fs_type == "ext4" || fs_type == "ext3" || fs_type == "ext2") {
    out = RunCommand({"resize2fs", device});
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
