#include "drivers/loopback/node_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/filesystem.hpp>

#include "drivers/loopback/request_validation.h"

namespace flexcsi {
namespace loopback {

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

Status EnsureFile(const std::string& path) {
  boost::system::error_code ec;
  boost::filesystem::create_directories(boost::filesystem::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot create file " + path + ": " + ErrnoText());
  ::close(fd);
  return Status::Ok();
}

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

Status ApplyMountGroup(const std::string& path, const csi::v1::VolumeCapability& capability,
                       bool readonly) {
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

bool MountIsWritable(const MountEntry& entry) {
  std::string options = "," + entry.options + ",";
  return options.find(",ro,") == std::string::npos;
}

Status MakeMountReadOnly(const std::string& target) {
  return Mount(target, target, "", "remount,bind,ro");
}

std::string MountOptionsFor(const csi::v1::VolumeCapability& capability, const std::string& fs_type,
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

}  // namespace loopback
}  // namespace flexcsi
