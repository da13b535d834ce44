#include "drivers/loopback/node_server.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <algorithm>
#include <boost/filesystem.hpp>
#include <optional>

#include "common/mount_table.h"
#include "drivers/loopback/filesystem.h"
#include "drivers/loopback/grpc_status.h"
#include "drivers/loopback/loop_device.h"
#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

namespace {

using csi::v1::NodeServiceCapability;
using csi::v1::VolumeCapability;

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Status EnsureDirectory(const std::string& path) {
  boost::system::error_code ec;
  boost::filesystem::create_directories(path, ec);
  if (ec && !boost::filesystem::is_directory(path)) {
    return Internal("cannot create directory " + path + ": " + ec.message());
  }
  return Status::Ok();
}

// Block targets are files a device node gets bind-mounted onto.
Status EnsureFile(const std::string& path) {
  boost::system::error_code ec;
  boost::filesystem::create_directories(boost::filesystem::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot create file " + path + ": " + ErrnoText());
  ::close(fd);
  return Status::Ok();
}

// Removes a target left empty by unmounting. Refuses to delete anything with content: if an
// unmount silently failed, the content is the volume's and must survive.
Status RemoveTarget(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();
  int rc = S_ISDIR(st.st_mode)
               ? ::rmdir(path.c_str())
               : (st.st_size == 0 ? ::unlink(path.c_str()) : (errno = ENOTEMPTY, -1));
  if (rc != 0 && errno != ENOENT) {
    return Internal("cannot remove target " + path + ": " + ErrnoText());
  }
  return Status::Ok();
}

// Unmounts everything stacked at `path`.
Status UnmountAll(const std::string& path) {
  for (int i = 0; i < 16 && IsMountPoint(path); ++i) {
    FLEXCSI_RETURN_IF_ERROR(Unmount(path));
  }
  if (IsMountPoint(path)) return Internal(path + " is still mounted after 16 unmounts");
  return Status::Ok();
}

bool DeviceIsMounted(const std::string& device) {
  StatusOr<std::vector<MountEntry>> table = ReadMountTable();
  if (!table.ok()) return true;  // cannot tell: assume the unsafe case
  for (const MountEntry& entry : *table) {
    if (entry.source == device) return true;
  }
  return false;
}

// Whether `entry` is a mount of one of `devices`: a filesystem on it (source is the device) or
// a bind of its device node (source is devtmpfs, root is the node's name).
bool MountShowsDevice(const MountEntry& entry, const std::vector<std::string>& devices) {
  for (const std::string& device : devices) {
    if (entry.source == device) return true;
    const std::string node = device.substr(device.rfind('/'));
    if ((entry.fstype == "devtmpfs" || entry.fstype == "tmpfs") && entry.root == node) return true;
  }
  return false;
}

bool SamePath(const std::string& a, const std::string& b) {
  if (a == b) return true;
  boost::system::error_code ec1, ec2;
  auto ca = boost::filesystem::weakly_canonical(a, ec1);
  auto cb = boost::filesystem::weakly_canonical(b, ec2);
  return !ec1 && !ec2 && ca == cb;
}

Status ApplyMountGroup(const std::string& path, const VolumeCapability& capability, bool readonly) {
  if (!capability.has_mount()) return Status::Ok();
  StatusOr<int64_t> gid = ParseMountGroup(capability.mount().volume_mount_group());
  if (!gid.ok()) return gid.status();
  if (*gid < 0 || readonly) return Status::Ok();
  // Group ownership plus setgid on the root: files the workload creates inherit the group, and
  // the group may write, which is what fsGroup-style mount groups promise.
  if (::chown(path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(*gid)) != 0) {
    return Internal("chown " + path + " to gid " + std::to_string(*gid) + ": " + ErrnoText());
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Internal("stat " + path + ": " + ErrnoText());
  if (::chmod(path.c_str(), (st.st_mode & 07777) | S_ISGID | S_IRWXG) != 0) {
    return Internal("chmod " + path + ": " + ErrnoText());
  }
  return Status::Ok();
}

// Whether a mount lets writes through: neither the mount point nor the superblock is "ro".
bool MountIsWritable(const MountEntry& entry) {
  std::string options = "," + entry.options + ",";
  return options.find(",ro,") == std::string::npos;
}

// Makes the mount at `target` read-only for this mount point alone (a bind remount changes the
// mount's flags, not the superblock's): the filesystem stays writable through the volume's
// other targets, which is how one volume serves a read-only pod beside a writing one.
Status MakeMountReadOnly(const std::string& target) {
  return Mount(target, target, "", "remount,bind,ro");
}

std::string MountOptionsFor(const VolumeCapability& capability, const std::string& fs_type,
                            bool readonly) {
  std::vector<std::string> options;
  // A snapshot or clone of an xfs volume carries its source's UUID, and xfs refuses to mount a
  // second filesystem with a UUID already mounted; the copy must be usable beside the original.
  if (fs_type == "xfs") options.push_back("nouuid");
  if (capability.has_mount()) {
    options.insert(options.end(), capability.mount().mount_flags().begin(),
                   capability.mount().mount_flags().end());
  }
  if (readonly) options.push_back("ro");
  return JoinMountOptions(options);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::optional<VolumeRecord> NodeServer::LoadVolume(const std::string& volume_id) const {
  std::optional<VolumeRecord> volume = catalog_->GetVolume(volume_id);
  if (!volume || catalog_ == state_) return volume;
  std::optional<VolumeRecord> local = state_->GetVolume(volume_id);
  volume->staging_path = local ? local->staging_path : "";
  volume->staged_capability_key = local ? local->staged_capability_key : "";
  volume->device = local ? local->device : "";
  volume->device_seq = local ? local->device_seq : 0;
  volume->node_publications =
      local ? local->node_publications : decltype(volume->node_publications){};
  return volume;
}

StatusOr<std::string> NodeServer::AttachAndFormat(const VolumeRecord& volume,
                                                  const VolumeCapability& capability,
                                                  std::string* fs_type, bool* formatted) {
  *formatted = false;
  const std::string file = catalog_->VolumeFilePath(volume.id);
  StatusOr<std::string> device = AttachLoopDevice(file);
  if (!device.ok()) return device.status();
  if (volume.block) return device;

  const std::string wanted =
      capability.mount().fs_type().empty() ? volume.fs_type : capability.mount().fs_type();
  StatusOr<std::string> found = ProbeFilesystem(*device);
  if (!found.ok()) return found.status();
  if (found->empty()) {
    spdlog::info("formatting {} ({}) as {}", *device, volume.id, wanted);
    FLEXCSI_RETURN_IF_ERROR(MakeFilesystem(*device, wanted));
    *fs_type = wanted;
    *formatted = true;
  } else if (*found != wanted && !capability.mount().fs_type().empty()) {
    return FailedPrecondition("volume " + volume.id + " holds " + *found +
                              ", capability asks for " + wanted);
  } else {
    *fs_type = *found;
  }
  return device;
}

Status NodeServer::MountDevice(const std::string& device, const std::string& fs_type,
                               bool formatted, const std::string& path,
                               const VolumeCapability& capability, bool readonly,
                               bool superblock_readonly) {
  FLEXCSI_RETURN_IF_ERROR(EnsureDirectory(path));
  if (!IsMountPoint(path)) {
    // A volume restored or cloned into a larger size carries the smaller filesystem of its
    // source; grow it so the capacity the CO asked for is visible. ext4 grows best offline,
    // which is only safe while the device is mounted nowhere.
    const bool grow = !formatted && !superblock_readonly;
    if (grow && !DeviceIsMounted(device)) {
      Status grown = GrowUnmountedFilesystem(fs_type, device);
      if (!grown.ok()) spdlog::warn("growing {} on {}: {}", fs_type, device, grown.ToString());
    }
    FLEXCSI_RETURN_IF_ERROR(
        Mount(device, path, fs_type, MountOptionsFor(capability, fs_type, superblock_readonly)));
    // xfs grows only mounted, and only through a writable mount point: before a read-only
    // target is made read-only.
    if (grow && fs_type == "xfs") {
      Status grown = GrowFilesystem(fs_type, device, path);
      if (!grown.ok()) spdlog::warn("growing {} on {}: {}", fs_type, path, grown.ToString());
    }
    if (readonly && !superblock_readonly) {
      Status made_ro = MakeMountReadOnly(path);
      if (!made_ro.ok()) {
        // A writable mount where a read-only one was asked for must not survive.
        Status undone = UnmountAll(path);
        if (!undone.ok()) spdlog::warn("undoing {}: {}", path, undone.ToString());
        return made_ro;
      }
    }
  }
  return ApplyMountGroup(path, capability, readonly);
}

Status NodeServer::CheckMountGroupOffered(const VolumeCapability& capability) const {
  if (!capability.has_mount()) return Status::Ok();
  if (!options_.volume_mount_group && !capability.mount().volume_mount_group().empty()) {
    // The CO must not send it to a node without VOLUME_MOUNT_GROUP; a real driver would ignore
    // it and the workload would silently lack the group, so refusing makes the CO's bug visible.
    return InvalidArgument(
        "volume_mount_group is set but this node does not offer "
        "VOLUME_MOUNT_GROUP (--no-volume-mount-group)");
  }
  return ParseMountGroup(capability.mount().volume_mount_group()).status();
}

// ---------------------------------------------------------------------------------------------

grpc::Status NodeServer::NodeStageVolume(grpc::ServerContext*,
                                         const csi::v1::NodeStageVolumeRequest* request,
                                         csi::v1::NodeStageVolumeResponse*) {
  if (!options_.stage_unstage) {
    return FinishRpc("NodeStageVolume", request->volume_id(),
                     Unimplemented("STAGE_UNSTAGE_VOLUME is disabled (--no-stage-unstage)"));
  }
  return FinishRpc("NodeStageVolume",
                   request->volume_id() + " at " + request->staging_target_path(),
                   DoStage(*request));
}

Status NodeServer::DoStage(const csi::v1::NodeStageVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.staging_target_path(), "staging_target_path"));
  if (!request.has_volume_capability()) return InvalidArgument("volume_capability is required");
  const VolumeCapability& capability = request.volume_capability();
  FLEXCSI_RETURN_IF_ERROR(ValidateCapability(capability, "volume_capability", options_.shared()));
  FLEXCSI_RETURN_IF_ERROR(CheckMountGroupOffered(capability));

  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  FLEXCSI_RETURN_IF_ERROR(CheckAccessTypeMatches(*volume, capability));
  const std::string file = catalog_->VolumeFilePath(volume->id);
  auto hinted = request.publish_context().find(kPublishContextBackingFile);
  if (hinted != request.publish_context().end() && hinted->second != file) {
    return InvalidArgument("publish_context names backing file " + hinted->second + ", volume " +
                           volume->id + " lives in " + file);
  }
  auto ro = request.publish_context().find(kPublishContextReadonly);
  const bool readonly = IsReadOnlyMode(capability.access_mode().mode()) ||
                        (ro != request.publish_context().end() && ro->second == "true");
  const std::string path = request.staging_target_path();
  const std::string key = CapabilityKey(capability);

  if (!volume->staging_path.empty()) {
    if (!SamePath(volume->staging_path, path)) {
      return FailedPrecondition("volume " + volume->id + " is already staged at " +
                                volume->staging_path);
    }
    if (volume->staged_capability_key != key) {
      return AlreadyExists("volume " + volume->id + " is staged at " + path +
                           " with a different capability");
    }
    // Same request again: fall through and re-establish whatever is missing.
  }

  const bool had_device = !volume->device.empty();
  std::string fs_type;
  bool formatted = false;
  StatusOr<std::string> device = AttachAndFormat(*volume, capability, &fs_type, &formatted);
  Status result = device.status();
  // --stage-without-mount: the device is attached and formatted, the staging path stays an
  // empty directory, and NodePublish mounts the device at each target.
  if (result.ok() && !volume->block && !options_.stage_without_mount) {
    result = MountDevice(*device, fs_type, formatted, path, capability, readonly, readonly);
  }
  if (!result.ok()) {
    // Leave no half-staged volume behind: a device we attached for nothing is detached.
    if (!had_device && volume->node_publications.empty() && !IsMountPoint(path)) {
      DetachLoopDevices(file);
    }
    return result;
  }
  volume->staging_path = path;
  volume->staged_capability_key = key;
  volume->device_seq = LoopDeviceSequence(*device);
  volume->device = *device;
  return state_->PutVolume(*volume).status();
}

Status NodeServer::DetachNodeAttachment(const VolumeRecord& volume, const std::string& file) {
  if (options_.shared() && volume.device_seq != 0) {
    return DetachLoopDeviceAttachment(volume.device, volume.device_seq, file);
  }
  return DetachLoopDevices(file);
}

// ---------------------------------------------------------------------------------------------

grpc::Status NodeServer::NodeUnstageVolume(grpc::ServerContext*,
                                           const csi::v1::NodeUnstageVolumeRequest* request,
                                           csi::v1::NodeUnstageVolumeResponse*) {
  if (!options_.stage_unstage) {
    return FinishRpc("NodeUnstageVolume", request->volume_id(),
                     Unimplemented("STAGE_UNSTAGE_VOLUME is disabled (--no-stage-unstage)"));
  }
  return FinishRpc("NodeUnstageVolume",
                   request->volume_id() + " at " + request->staging_target_path(),
                   DoUnstage(*request));
}

Status NodeServer::DoUnstage(const csi::v1::NodeUnstageVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.staging_target_path(), "staging_target_path"));
  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  const std::string path = request.staging_target_path();
  if (!volume->staging_path.empty() && !SamePath(volume->staging_path, path)) {
    return Status::Ok();  // nothing of this volume is staged at that path
  }
  if (!volume->node_publications.empty()) {
    return FailedPrecondition("volume " + volume->id + " is still published at " +
                              volume->node_publications.begin()->first);
  }
  const std::string file = catalog_->VolumeFilePath(volume->id);
  StatusOr<std::vector<std::string>> devices = LoopDevicesFor(file);
  if (!devices.ok()) return devices.status();
  // Unmount only what is ours: a mount of one of this volume's loop devices.
  StatusOr<MountEntry> mounted = FindByTarget(path);
  if (mounted.ok() && MountShowsDevice(*mounted, *devices)) {
    FLEXCSI_RETURN_IF_ERROR(UnmountAll(path));
  }
  FLEXCSI_RETURN_IF_ERROR(DetachNodeAttachment(*volume, file));
  if (volume->staging_path.empty() && volume->device.empty()) return Status::Ok();
  // With a shared store this node's copy of the record holds only node-side fields: once
  // nothing is left on the node, the copy goes (the catalog keeps the volume).
  if (catalog_ != state_) return state_->RemoveVolume(volume->id);
  volume->staging_path.clear();
  volume->staged_capability_key.clear();
  volume->device.clear();
  volume->device_seq = 0;
  return state_->PutVolume(*volume).status();
}

// ---------------------------------------------------------------------------------------------

grpc::Status NodeServer::NodePublishVolume(grpc::ServerContext*,
                                           const csi::v1::NodePublishVolumeRequest* request,
                                           csi::v1::NodePublishVolumeResponse*) {
  return FinishRpc("NodePublishVolume", request->volume_id() + " at " + request->target_path(),
                   DoPublish(*request));
}

Status NodeServer::DoPublish(const csi::v1::NodePublishVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.target_path(), "target_path"));
  if (!request.has_volume_capability()) return InvalidArgument("volume_capability is required");
  const VolumeCapability& capability = request.volume_capability();
  FLEXCSI_RETURN_IF_ERROR(ValidateCapability(capability, "volume_capability", options_.shared()));
  FLEXCSI_RETURN_IF_ERROR(CheckMountGroupOffered(capability));
  if (options_.stage_unstage && request.staging_target_path().empty()) {
    return FailedPrecondition("staging_target_path is required: the node stages volumes");
  }

  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  FLEXCSI_RETURN_IF_ERROR(CheckAccessTypeMatches(*volume, capability));

  const std::string target = request.target_path();
  const bool readonly = request.readonly() || IsReadOnlyMode(capability.access_mode().mode());
  const std::string key = CapabilityKey(capability);

  // Idempotency and conflicts are judged per target: kubelet publishes one volume to every pod
  // on the node, each pod with its own read-only flag and fsGroup. Only the same target with
  // another capability or read-only flag is ALREADY_EXISTS.
  auto existing = volume->node_publications.find(target);
  if (existing != volume->node_publications.end()) {
    if (existing->second.readonly != readonly || existing->second.capability_key != key) {
      return AlreadyExists("volume " + volume->id + " is published at " + target +
                           " with a different capability or readonly flag");
    }
    if (IsMountPoint(target)) return Status::Ok();
    // Recorded but gone (e.g. someone unmounted it): publish again below.
  } else {
    const auto kSingleWriter = VolumeCapability::AccessMode::SINGLE_NODE_SINGLE_WRITER;
    const std::string single_writer_key =
        VolumeCapability::AccessMode::Mode_Name(kSingleWriter) + "|";
    for (const auto& [other_target, publication] : volume->node_publications) {
      if (capability.access_mode().mode() == kSingleWriter ||
          publication.capability_key.rfind(single_writer_key, 0) == 0) {
        return FailedPrecondition("volume " + volume->id +
                                  " is SINGLE_NODE_SINGLE_WRITER and already published at " +
                                  other_target);
      }
    }
  }

  if (options_.stage_unstage && (volume->staging_path.empty() ||
                                 !SamePath(volume->staging_path, request.staging_target_path()))) {
    return FailedPrecondition("volume " + volume->id + " is not staged at " +
                              request.staging_target_path());
  }
  Status published = options_.stage_unstage && !options_.stage_without_mount
                         ? PublishFromStagingPath(request, readonly, &*volume)
                         : PublishFromDevice(request, readonly, &*volume);
  FLEXCSI_RETURN_IF_ERROR(published);
  StatusOr<int64_t> group = ParseMountGroup(
      capability.has_mount() ? capability.mount().volume_mount_group() : std::string());
  volume->node_publications[target] = {readonly, key, group.ok() ? *group : -1};
  return state_->PutVolume(*volume).status();
}

Status NodeServer::PublishFromStagingPath(const csi::v1::NodePublishVolumeRequest& request,
                                          bool readonly, VolumeRecord* volume) {
  const std::string& target = request.target_path();
  const VolumeCapability& capability = request.volume_capability();
  if (volume->block) {
    StatusOr<std::string> device = AttachLoopDevice(catalog_->VolumeFilePath(volume->id), readonly);
    if (!device.ok()) return device.status();
    FLEXCSI_RETURN_IF_ERROR(EnsureFile(target));
    if (!IsMountPoint(target)) FLEXCSI_RETURN_IF_ERROR(BindMount(*device, target, readonly));
    if (!readonly) volume->device = *device;
    return Status::Ok();
  }
  if (!IsMountPoint(volume->staging_path)) {
    return FailedPrecondition("staging path " + volume->staging_path +
                              " is not mounted; stage the volume again");
  }
  FLEXCSI_RETURN_IF_ERROR(EnsureDirectory(target));
  if (!IsMountPoint(target)) {
    FLEXCSI_RETURN_IF_ERROR(BindMount(volume->staging_path, target, readonly));
  }
  return ApplyMountGroup(target, capability, readonly);
}

Status NodeServer::PublishFromDevice(const csi::v1::NodePublishVolumeRequest& request,
                                     bool readonly, VolumeRecord* volume) {
  const std::string& target = request.target_path();
  const VolumeCapability& capability = request.volume_capability();
  const std::string file = catalog_->VolumeFilePath(volume->id);
  // ControllerPublishVolume(readonly) makes the whole attachment read-only: then the filesystem
  // itself is mounted read-only. Otherwise it is mounted writable once and a read-only target
  // is read-only as a mount point, so that read-only and writable targets coexist (a filesystem
  // cannot be mounted read-only and writable at the same time).
  auto ro = request.publish_context().find(kPublishContextReadonly);
  const bool attachment_readonly = ro != request.publish_context().end() && ro->second == "true";
  const bool had_device = !volume->device.empty();
  std::string fs_type;
  bool formatted = false;
  StatusOr<std::string> device = AttachAndFormat(*volume, capability, &fs_type, &formatted);
  Status result = device.status();
  if (result.ok()) {
    if (volume->block) {
      StatusOr<std::string> node_device = readonly ? AttachLoopDevice(file, true) : device;
      result = node_device.status();
      if (result.ok()) result = EnsureFile(target);
      if (result.ok() && !IsMountPoint(target)) {
        result = BindMount(*node_device, target, readonly);
      }
    } else {
      result = MountDevice(*device, fs_type, formatted, target, capability,
                           readonly || attachment_readonly, attachment_readonly);
    }
  }
  if (!result.ok()) {
    // Without staging this call attached the device; a failed first publication detaches it.
    if (!options_.stage_unstage && !had_device && volume->node_publications.empty()) {
      DetachLoopDevices(file);
    }
    return result;
  }
  volume->device_seq = LoopDeviceSequence(*device);
  volume->device = *device;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

grpc::Status NodeServer::NodeUnpublishVolume(grpc::ServerContext*,
                                             const csi::v1::NodeUnpublishVolumeRequest* request,
                                             csi::v1::NodeUnpublishVolumeResponse*) {
  return FinishRpc("NodeUnpublishVolume", request->volume_id() + " at " + request->target_path(),
                   DoUnpublish(*request));
}

Status NodeServer::DoUnpublish(const csi::v1::NodeUnpublishVolumeRequest& request) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.target_path(), "target_path"));
  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  const std::string target = request.target_path();
  const bool recorded = volume->node_publications.count(target) > 0;
  StatusOr<MountEntry> mounted = FindByTarget(target);
  if (!recorded && mounted.ok()) {
    // Not in the state (a crash between mounting and recording does that): undo it only when
    // it is this volume that is mounted there.
    StatusOr<std::vector<std::string>> devices =
        LoopDevicesFor(catalog_->VolumeFilePath(volume->id));
    if (!devices.ok()) return devices.status();
    if (!MountShowsDevice(*mounted, *devices)) return Status::Ok();  // not ours to undo
  }
  FLEXCSI_RETURN_IF_ERROR(UnmountAll(target));
  // The spec asks us to leave no target behind; RemoveTarget only ever removes an empty one.
  FLEXCSI_RETURN_IF_ERROR(RemoveTarget(target));
  volume->node_publications.erase(target);
  bool changed = recorded;
  if (!options_.stage_unstage && volume->node_publications.empty()) {
    // Without staging the last unpublish detaches, also when this target was never recorded:
    // a driver killed after attaching but before recording leaves a device no record names,
    // and the CO then unpublishes instead of publishing again. Not then where devices may be
    // another node's (shared store), nor while one is mounted elsewhere: that belongs to
    // another unrecorded publication, whose unpublish detaches it.
    const std::string file = catalog_->VolumeFilePath(volume->id);
    StatusOr<std::vector<std::string>> devices = LoopDevicesFor(file);
    if (!devices.ok()) return devices.status();
    if (recorded || (!options_.shared() &&
                     std::none_of(devices->begin(), devices->end(), DeviceIsMounted))) {
      FLEXCSI_RETURN_IF_ERROR(DetachNodeAttachment(*volume, file));
    }
    changed = changed || !volume->device.empty();
    volume->device.clear();
    volume->device_seq = 0;
  }
  if (!changed) return Status::Ok();
  return state_->PutVolume(*volume).status();
}

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------

grpc::Status NodeServer::NodeExpandVolume(grpc::ServerContext*,
                                          const csi::v1::NodeExpandVolumeRequest* request,
                                          csi::v1::NodeExpandVolumeResponse* response) {
  if (!options_.expand) {
    return FinishRpc("NodeExpandVolume", request->volume_id(),
                     Unimplemented("volume expansion is disabled (--no-expand)"));
  }
  return FinishRpc("NodeExpandVolume", request->volume_id() + " at " + request->volume_path(),
                   DoExpand(*request, response));
}

Status NodeServer::DoExpand(const csi::v1::NodeExpandVolumeRequest& request,
                            csi::v1::NodeExpandVolumeResponse* response) {
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_id(), "volume_id"));
  FLEXCSI_RETURN_IF_ERROR(RequireField(request.volume_path(), "volume_path"));
  if (request.has_volume_capability()) {
    FLEXCSI_RETURN_IF_ERROR(
        ValidateCapability(request.volume_capability(), "volume_capability", options_.shared()));
  }
  auto lock = locks_->Lock("vol:" + request.volume_id());
  std::optional<VolumeRecord> volume = LoadVolume(request.volume_id());
  if (!volume) return NotFound("volume " + request.volume_id() + " does not exist");
  if (request.has_volume_capability()) {
    Status matches = CheckAccessTypeMatches(*volume, request.volume_capability());
    if (!matches.ok()) return InvalidArgument(matches.message());
  }
  const std::string path = request.volume_path();
  if (!PathExists(path)) return NotFound("volume path " + path + " does not exist");
  if (request.has_capacity_range()) {
    const auto& range = request.capacity_range();
    if (range.required_bytes() > volume->capacity_bytes) {
      return OutOfRange("volume " + volume->id + " has " + std::to_string(volume->capacity_bytes) +
                        " bytes; expand it with ControllerExpandVolume first");
    }
    if (range.limit_bytes() > 0 && volume->capacity_bytes > range.limit_bytes()) {
      return OutOfRange("volume capacity exceeds limit_bytes");
    }
  }
  const std::string file = catalog_->VolumeFilePath(volume->id);
  StatusOr<std::vector<std::string>> devices = LoopDevicesFor(file);
  if (!devices.ok()) return devices.status();
  if (devices->empty()) {
    return FailedPrecondition("volume " + volume->id + " is not attached on this node");
  }
  for (const std::string& device : *devices) {
    FLEXCSI_RETURN_IF_ERROR(RefreshLoopDeviceSize(device));
  }
  if (!volume->block) {
    StatusOr<MountEntry> mounted = FindByTarget(path);
    // --stage-without-mount: the staging path names the volume but nothing is mounted there.
    const bool staged_unmounted = !mounted.ok() && options_.stage_without_mount &&
                                  !volume->staging_path.empty() &&
                                  SamePath(volume->staging_path, path);
    if (!mounted.ok() && !staged_unmounted) {
      return FailedPrecondition("volume path " + path + " is not mounted");
    }
    if (mounted.ok() &&
        std::find(devices->begin(), devices->end(), mounted->source) == devices->end()) {
      return NotFound("volume " + volume->id + " is not what is mounted at " + path);
    }
    // Grow through a writable mount of the filesystem: a read-only pod's target refuses the
    // resize (EROFS) although the filesystem is writable through the volume's other mounts.
    std::optional<MountEntry> writable;
    if (mounted.ok() && MountIsWritable(*mounted)) writable = *mounted;
    std::vector<std::string> paths = {volume->staging_path};
    for (const auto& [target, publication] : volume->node_publications) paths.push_back(target);
    for (const std::string& other : paths) {
      if (writable || other.empty()) break;
      StatusOr<MountEntry> entry = FindByTarget(other);
      if (entry.ok() && MountIsWritable(*entry) &&
          std::find(devices->begin(), devices->end(), entry->source) != devices->end()) {
        writable = *entry;
      }
    }
    if (!writable && staged_unmounted && !DeviceIsMounted(devices->front())) {
      // Staged, published nowhere: ext4 grows offline now; xfs can only grow mounted, and
      // MountDevice grows it at the next NodePublish, so there is nothing left to fail on.
      StatusOr<std::string> fs_type = ProbeFilesystem(devices->front());
      if (!fs_type.ok()) return fs_type.status();
      if (*fs_type == "xfs") {
        spdlog::info("{}: xfs on {} grows when next mounted", volume->id, devices->front());
      } else {
        FLEXCSI_RETURN_IF_ERROR(GrowUnmountedFilesystem(*fs_type, devices->front()));
      }
      response->set_capacity_bytes(volume->capacity_bytes);
      return Status::Ok();
    }
    if (!writable) {
      return FailedPrecondition("volume " + volume->id +
                                " is mounted nowhere writable on this node; it cannot grow now");
    }
    FLEXCSI_RETURN_IF_ERROR(GrowFilesystem(writable->fstype, writable->source, writable->target));
  }
  response->set_capacity_bytes(volume->capacity_bytes);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

grpc::Status NodeServer::NodeGetCapabilities(grpc::ServerContext*,
                                             const csi::v1::NodeGetCapabilitiesRequest*,
                                             csi::v1::NodeGetCapabilitiesResponse* response) {
  std::vector<NodeServiceCapability::RPC::Type> types = {
      NodeServiceCapability::RPC::GET_VOLUME_STATS,
      NodeServiceCapability::RPC::VOLUME_CONDITION,
      NodeServiceCapability::RPC::SINGLE_NODE_MULTI_WRITER,
  };
  if (options_.volume_mount_group) {
    types.push_back(NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP);
  }
  if (options_.stage_unstage) types.push_back(NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME);
  if (options_.expand) types.push_back(NodeServiceCapability::RPC::EXPAND_VOLUME);
  for (auto type : types) response->add_capabilities()->mutable_rpc()->set_type(type);
  return grpc::Status::OK;
}

grpc::Status NodeServer::NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                                     csi::v1::NodeGetInfoResponse* response) {
  response->set_node_id(options_.node_id);
  response->set_max_volumes_per_node(options_.max_volumes_per_node);
  // A shared store is reachable from every node: no node-local topology to report.
  if (!options_.shared()) {
    (*response->mutable_accessible_topology()->mutable_segments())[kTopologyNodeKey] =
        options_.node_id;
  }
  return grpc::Status::OK;
}

}  // namespace loopback
}  // namespace flexcsi
