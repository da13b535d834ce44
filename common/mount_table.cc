#include "common/mount_table.h"

#include <errno.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <stdlib.h>

#include <memory>

#include "common/command_runner.h"

namespace flexcsi {

namespace {

struct TableDeleter {
  void operator()(libmnt_table* table) const { mnt_unref_table(table); }
};
struct ContextDeleter {
  void operator()(libmnt_context* context) const { mnt_free_context(context); }
};
struct IterDeleter {
  void operator()(libmnt_iter* iter) const { mnt_free_iter(iter); }
};
using TablePtr = std::unique_ptr<libmnt_table, TableDeleter>;
using ContextPtr = std::unique_ptr<libmnt_context, ContextDeleter>;
using IterPtr = std::unique_ptr<libmnt_iter, IterDeleter>;

std::string OrEmpty(const char* s) { return s ? std::string(s) : std::string(); }

MountEntry EntryFrom(libmnt_fs* fs) {
  MountEntry entry;
  entry.source = OrEmpty(mnt_fs_get_source(fs));
  entry.target = OrEmpty(mnt_fs_get_target(fs));
  entry.fstype = OrEmpty(mnt_fs_get_fstype(fs));
  entry.options = OrEmpty(mnt_fs_get_options(fs));
  entry.root = OrEmpty(mnt_fs_get_root(fs));
  return entry;
}

StatusOr<TablePtr> ParseMountInfo() {
  TablePtr table(mnt_new_table());
  if (!table) return Internal("libmount: cannot allocate a table");
  int rc = mnt_table_parse_file(table.get(), "/proc/self/mountinfo");
  if (rc != 0) {
    return Internal("libmount: cannot parse /proc/self/mountinfo (rc " + std::to_string(rc) + ")");
  }
  return table;
}

// mountinfo lists canonical paths; a caller's path may have symlinks or a trailing slash.
std::string CanonicalOrSame(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) != nullptr) return resolved;
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  return trimmed;
}

ContextPtr NewContext() {
  ContextPtr context(mnt_new_context());
  if (!context) return context;
  // No /sbin/mount.<type> helpers (they would do their own thing) and no utab/mtab writes:
  // /run is shared with the host, while our mounts may live in a private namespace.
  mnt_context_disable_helpers(context.get(), 1);
  mnt_context_disable_mtab(context.get(), 1);
  return context;
}

// Turns a libmount result into a Status with the same explanation mount(8) would print.
Status ResultOf(libmnt_context* context, int rc, const std::string& what) {
  char message[1024] = {0};
  int exit_code = mnt_context_get_excode(context, rc, message, sizeof(message));
  if (exit_code == MNT_EX_SUCCESS) return Status::Ok();
  std::string detail = message[0] ? message : ("libmount rc " + std::to_string(rc));
  int syscall_errno =
      mnt_context_syscall_called(context) ? mnt_context_get_syscall_errno(context) : 0;
  if (syscall_errno == EBUSY) return FailedPrecondition(what + ": " + detail);
  if (syscall_errno == ENOENT) return NotFound(what + ": " + detail);
  return Internal(what + ": " + detail);
}

}  // namespace

StatusOr<std::vector<MountEntry>> ReadMountTable() {
  StatusOr<TablePtr> table = ParseMountInfo();
  if (!table.ok()) return table.status();
  IterPtr iter(mnt_new_iter(MNT_ITER_FORWARD));
  if (!iter) return Internal("libmount: cannot allocate an iterator");
  std::vector<MountEntry> entries;
  libmnt_fs* fs = nullptr;
  while (mnt_table_next_fs(table->get(), iter.get(), &fs) == 0) entries.push_back(EntryFrom(fs));
  return entries;
}

StatusOr<MountEntry> FindByTarget(const std::string& target) {
  StatusOr<TablePtr> table = ParseMountInfo();
  if (!table.ok()) return table.status();
  std::string canonical = CanonicalOrSame(target);
  // Backward: the last mount at a path is the visible one.
  IterPtr iter(mnt_new_iter(MNT_ITER_BACKWARD));
  if (!iter) return Internal("libmount: cannot allocate an iterator");
  libmnt_fs* fs = nullptr;
  while (mnt_table_next_fs(table->get(), iter.get(), &fs) == 0) {
    const char* fs_target = mnt_fs_get_target(fs);
    if (fs_target != nullptr && canonical == fs_target) return EntryFrom(fs);
  }
  return NotFound(target + " is not a mount point");
}

bool IsMountPoint(const std::string& path) { return FindByTarget(path).ok(); }

Status Mount(const std::string& source, const std::string& target, const std::string& fstype,
             const std::string& options) {
  ContextPtr context = NewContext();
  if (!context) return Internal("libmount: cannot allocate a context");
  if (mnt_context_set_source(context.get(), source.c_str()) != 0 ||
      mnt_context_set_target(context.get(), target.c_str()) != 0 ||
      (!fstype.empty() && mnt_context_set_fstype(context.get(), fstype.c_str()) != 0) ||
      (!options.empty() && mnt_context_set_options(context.get(), options.c_str()) != 0)) {
    return InvalidArgument("libmount rejected mount arguments for " + target);
  }
  int rc;
  {
    // libmount holds descriptors of the target without O_CLOEXEC meanwhile; see
    // ChildSpawnBarrier.
    ChildSpawnBarrier barrier;
    rc = mnt_context_mount(context.get());
  }
  return ResultOf(context.get(), rc, "mount " + source + " on " + target);
}

Status BindMount(const std::string& source, const std::string& target, bool readonly) {
  return Mount(source, target, "", readonly ? "bind,ro" : "bind");
}

Status Unmount(const std::string& target) {
  ContextPtr context = NewContext();
  if (!context) return Internal("libmount: cannot allocate a context");
  if (mnt_context_set_target(context.get(), target.c_str()) != 0) {
    return InvalidArgument("libmount rejected unmount target " + target);
  }
  int rc;
  {
    // libmount opens the target O_PATH without O_CLOEXEC right before umount2(2); a child
    // forked meanwhile would keep the mount busy. See ChildSpawnBarrier.
    ChildSpawnBarrier barrier;
    rc = mnt_context_umount(context.get());
  }
  return ResultOf(context.get(), rc, "unmount " + target);
}

std::string JoinMountOptions(const std::vector<std::string>& options) {
  std::string joined;
  for (const std::string& option : options) {
    if (option.empty()) continue;
    if (!joined.empty()) joined += ',';
    joined += option;
  }
  return joined;
}

}  // namespace flexcsi
