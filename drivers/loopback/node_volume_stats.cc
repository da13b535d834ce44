// NodeGetVolumeStats: usage and condition of a staged or published path, read from the kernel
// (statvfs for a filesystem, the device size for block).
#include "drivers/loopback/node_server.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <optional>

#include "common/mount_table.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/node_mounts.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

grpc::Status NodeServer::NodeGetVolumeStats(grpc::ServerContext*,
                                            const csi::v1::NodeGetVolumeStatsRequest* request,
                                            csi::v1::NodeGetVolumeStatsResponse* response) {
  return FinishRpc("NodeGetVolumeStats", request->volume_id() + " at " + request->volume_path(),
                   DoStats(*request, response));
}

Status NodeServer::DoStats(const csi::v1::NodeGetVolumeStatsRequest& request,
                           csi::v1::NodeGetVolumeStatsResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_path(), "volume_path"));
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  const std::string path = request.volume_path();
  if (!PathExists(path)) return NotFound("volume path " + path + " does not exist");
  bool known = !volume->staging_path.empty() && SamePath(volume->staging_path, path);
  for (const auto& [target, publication] : volume->node_publications) {
    known |= SamePath(target, path);
  }
  if (!known) {
    return NotFound("volume " + volume->id + " is neither staged nor published at " + path);
  }
  csi::v1::VolumeCondition* condition = response->mutable_volume_condition();

  // --stage-without-mount leaves the staging path an empty directory by design: the volume
  // there is its device, as for block.
  const bool staged_unmounted = options_.stage_without_mount && !volume->staging_path.empty() &&
                                SamePath(volume->staging_path, path) && !IsMountPoint(path);
  if (volume->block || staged_unmounted) {
    // A block volume's staging path is a plain directory; its size is the device's.
    std::string device = volume->device;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) device = path;
    StatusOr<int64_t> size =
        device.empty() ? StatusOr<int64_t>(NotFound("no device")) : BlockDeviceSize(device);
    if (!size.ok()) {
      condition->set_abnormal(true);
      condition->set_message("loop device unavailable: " + size.status().message());
      return Status::Ok();
    }
    auto* usage = response->add_usage();
    usage->set_unit(csi::v1::VolumeUsage::BYTES);
    usage->set_total(*size);
    condition->set_abnormal(false);
    condition->set_message("loop device attached");
    return Status::Ok();
  }

  if (!IsMountPoint(path)) {
    condition->set_abnormal(true);
    condition->set_message(path + " is not mounted");
    return Status::Ok();
  }
  struct statvfs fs;
  if (::statvfs(path.c_str(), &fs) != 0) {
    condition->set_abnormal(true);
    condition->set_message("statvfs " + path + ": " + ErrnoText());
    return Status::Ok();
  }
  const int64_t unit = static_cast<int64_t>(fs.f_frsize);
  auto* bytes = response->add_usage();
  bytes->set_unit(csi::v1::VolumeUsage::BYTES);
  bytes->set_total(static_cast<int64_t>(fs.f_blocks) * unit);
  bytes->set_available(static_cast<int64_t>(fs.f_bavail) * unit);
  bytes->set_used(static_cast<int64_t>(fs.f_blocks - fs.f_bfree) * unit);
  auto* inodes = response->add_usage();
  inodes->set_unit(csi::v1::VolumeUsage::INODES);
  inodes->set_total(static_cast<int64_t>(fs.f_files));
  inodes->set_available(static_cast<int64_t>(fs.f_favail));
  inodes->set_used(static_cast<int64_t>(fs.f_files - fs.f_ffree));
  condition->set_abnormal(false);
  condition->set_message("mounted");
  return Status::Ok();
}

}  // namespace loopback
}  // namespace flexcsi
