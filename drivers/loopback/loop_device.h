// Loop devices backing volumes, driven through losetup(8). Loop devices are global to the
// machine (not namespaced), so they are always found again by backing file rather than trusted
// from memory: after a restart, or when another process detached one, the kernel is the truth.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {
namespace loopback {

// Loop devices currently bound to `backing_file` ("/dev/loop3", ...), including one detached
// but still being released; empty when none. Read from sysfs; a device is opened only when the
// kernel names its file by a path within a mount that is gone and that path fits (to compare
// inodes), never another volume's.
StatusOr<std::vector<std::string>> LoopDevicesFor(const std::string& backing_file);

// The loop device for `backing_file`: an existing one when attached already, else a new one.
// Never one being released (it is waited for instead), and a new one is checked to be bound to
// `backing_file` before it is returned.
// A read-only device is a separate loop device of the same file: binding a writable device node
// read-only does not stop writes through it (device nodes ignore the mount's ro flag), a
// read-only loop device does.
StatusOr<std::string> AttachLoopDevice(const std::string& backing_file, bool readonly = false);

// Detaches every loop device attached to `backing_file` and waits until the kernel has unbound
// them: a device some other process holds open is only released at its last close (UNAVAILABLE
// when that takes longer than a few seconds). OK when there is none.
Status DetachLoopDevices(const std::string& backing_file);

// The kernel's disk sequence number of `device` (/sys/block/<name>/diskseq): a new number
// every time a loop device is bound, so it tells one attachment from a later one that got the
// same device number. 0 when the kernel shows none.
uint64_t LoopDeviceSequence(const std::string& device);

// Detaches `device` when it is still the attachment with disk sequence `sequence` bound to
// `backing_file`, and waits until the kernel has unbound it; OK without touching anything when
// it is not (that attachment is gone, and the number may now be someone else's).
Status DetachLoopDeviceAttachment(const std::string& device, uint64_t sequence,
                                  const std::string& backing_file);

// Makes `device` pick up the new size of its grown backing file (losetup -c).
Status RefreshLoopDeviceSize(const std::string& device);

// Size of a block device (or of the device a device node points to), in bytes.
StatusOr<int64_t> BlockDeviceSize(const std::string& device);

}  // namespace loopback
}  // namespace flexcsi
