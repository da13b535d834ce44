#include "drivers/loopback/backing_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "common/command_runner.h"
#include "common/mount_table.h"

namespace flexcsi {
namespace loopback {

Status CreateSparseFile(const std::string& path, int64_t size_bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return AlreadyExists(path + " exists");
    return Internal("cannot create " + path + ": " + ErrnoText());
  }
  Status result;
  if (::ftruncate(fd, size_bytes) != 0) {
    result = Internal("cannot size " + path + ": " + ErrnoText());
  } else if (::fsync(fd) != 0) {
    result = Internal("cannot fsync " + path + ": " + ErrnoText());
  }
  ::close(fd);
  if (!result.ok()) ::unlink(path.c_str());
  return result;
}

Status CopySparseFile(const std::string& source, const std::string& destination,
                      int64_t size_bytes) {
  const std::string temp = destination + ".partial";
  ::unlink(temp.c_str());
  StatusOr<std::string> copied = RunCommand({"cp", "--sparse=always", "--", source, temp});
  if (!copied.ok()) {
    ::unlink(temp.c_str());
    return copied.status();
  }
  Status grown = GrowFile(temp, size_bytes);
  if (!grown.ok()) {
    ::unlink(temp.c_str());
    return grown;
  }
  if (::rename(temp.c_str(), destination.c_str()) != 0) {
    Status error = Internal("cannot rename " + temp + ": " + ErrnoText());
    ::unlink(temp.c_str());
    return error;
  }
  return Status::Ok();
}

Status GrowFile(const std::string& path, int64_t size_bytes) {
  StatusOr<int64_t> size = FileSize(path);
  if (!size.ok()) return size.status();
  if (*size >= size_bytes) return Status::Ok();
  if (::truncate(path.c_str(), size_bytes) != 0) {
    return Internal("cannot grow " + path + ": " + ErrnoText());
  }
  return Status::Ok();
}

StatusOr<int64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFound(path + " does not exist");
    return Internal("cannot stat " + path + ": " + ErrnoText());
  }
  return static_cast<int64_t>(st.st_size);
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Internal("cannot remove " + path + ": " + ErrnoText());
  }
  return Status::Ok();
}

Status FlushVolume(const VolumeRecord& volume) {
  std::vector<std::string> paths;
  if (!volume.staging_path.empty()) paths.push_back(volume.staging_path);
  for (const auto& [target, publication] : volume.node_publications) paths.push_back(target);
  for (const std::string& path : paths) {
    if (volume.block || !IsMountPoint(path)) continue;
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    int rc = ::syncfs(fd);
    ::close(fd);
    if (rc != 0) return Internal("syncfs " + path + ": " + ErrnoText());
    break;  // one mount of the filesystem flushes it all
  }
  if (!volume.device.empty()) {
    // Raw block writes sit in the device's page cache until fsync'd.
    int fd = ::open(volume.device.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  return Status::Ok();
}

std::string NewId(const std::string& prefix) {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(generator()));
  return prefix + buffer;
}

}  // namespace loopback
}  // namespace flexcsi
