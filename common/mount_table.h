// The mount table of this process's mount namespace, and the three mount operations flexcsi
// performs. Everything goes through libmount: it parses /proc/self/mountinfo correctly (escaped
// paths, optional fields) and knows how to turn "bind,ro" into the two syscalls it needs.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {

// One line of /proc/self/mountinfo.
struct MountEntry {
  std::string source;   // device or source path ("/dev/loop3", "tmpfs")
  std::string target;   // mount point, canonical absolute path
  std::string fstype;   // "ext4", "xfs", "tmpfs", ...
  std::string options;  // all VFS and superblock options, comma separated
  std::string root;     // path inside the source filesystem ("/" unless a bind of a subtree)
};

// All mounts visible to this process, in mount order.
StatusOr<std::vector<MountEntry>> ReadMountTable();

// The topmost mount whose mount point is `target` (after resolving symlinks and trailing
// slashes). NOT_FOUND when nothing is mounted exactly there.
StatusOr<MountEntry> FindByTarget(const std::string& target);

// True when something is mounted exactly at `path`; false otherwise or when it cannot be told.
bool IsMountPoint(const std::string& path);

// Mounts `source` (a device, or a directory for bind) on `target` with filesystem `fstype` and
// a comma-separated libmount option string such as "ro,noatime" (may be empty). The target must
// exist. Errors carry libmount's explanation.
Status Mount(const std::string& source, const std::string& target, const std::string& fstype,
             const std::string& options);

// Bind-mounts file or directory `source` onto `target` (same kind, must exist); read-only binds
// are made read-only in the same call (libmount does the remount).
Status BindMount(const std::string& source, const std::string& target, bool readonly);

// Unmounts the topmost mount at `target`. Not lazy: fails (FAILED_PRECONDITION) while busy.
Status Unmount(const std::string& target);

// Joins mount options for Mount(): {"ro", "noatime"} -> "ro,noatime".
std::string JoinMountOptions(const std::vector<std::string>& options);

}  // namespace flexcsi
