// The node service's shared facts about target and staging paths and its mount actions on them:
// what the mount table shows, creating and removing targets, read-only remounts and mount
// groups. Used by staging, publishing, stats and expansion alike, so each RPC's file reads the
// kernel the same way.
#pragma once

#include <string>
#include <vector>

#include "common/mount_table.h"
#include "common/status.h"
#include "csi.pb.h"

namespace flexcsi {
namespace loopback {

// lstat succeeds: the path exists, whatever it is (a dangling link counts).
bool PathExists(const std::string& path);

// Creates the directory and its parents; an existing directory is fine.
Status EnsureDirectory(const std::string& path);

// Block targets are files a device node gets bind-mounted onto.
Status EnsureFile(const std::string& path);

// Removes a target left empty by unmounting. Refuses to delete anything with content: if an
// unmount silently failed, the content is the volume's and must survive.
Status RemoveTarget(const std::string& path);

// Unmounts everything stacked at `path`.
Status UnmountAll(const std::string& path);

// Whether any mount's source is `device`; true when the mount table cannot be read (the unsafe
// case is assumed).
bool DeviceIsMounted(const std::string& device);

// Whether `entry` is a mount of one of `devices`: a filesystem on it (source is the device) or
// a bind of its device node (source is devtmpfs, root is the node's name).
bool MountShowsDevice(const MountEntry& entry, const std::vector<std::string>& devices);

// Equal as written, or equal once both are made canonical.
bool SamePath(const std::string& a, const std::string& b);

// For a writable mount with a volume_mount_group: the root's group becomes it, group-writable
// and setgid, so the workload's files inherit it.
Status ApplyMountGroup(const std::string& path, const csi::v1::VolumeCapability& capability,
                       bool readonly);

// Whether a mount lets writes through: neither the mount point nor the superblock is "ro".
bool MountIsWritable(const MountEntry& entry);

// Makes the mount at `target` read-only for this mount point alone (a bind remount changes the
// mount's flags, not the superblock's): the filesystem stays writable through the volume's
// other targets, which is how one volume serves a read-only pod beside a writing one.
Status MakeMountReadOnly(const std::string& target);

// The mount options of a filesystem mount: the capability's flags, "ro", and what the fs type
// needs to mount a copy beside its original.
std::string MountOptionsFor(const csi::v1::VolumeCapability& capability, const std::string& fs_type,
                            bool readonly);

}  // namespace loopback
}  // namespace flexcsi
