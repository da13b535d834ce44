// The sparse files volumes and snapshots live in.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "drivers/loopback/volume_state.h"

namespace flexcsi {
namespace loopback {

// Creates `path` as a sparse file of `size_bytes`. ALREADY_EXISTS when it exists.
Status CreateSparseFile(const std::string& path, int64_t size_bytes);

// Copies `source` to `destination` keeping holes, then grows the copy to `size_bytes` when that
// is larger. The copy appears under its final name only when complete.
Status CopySparseFile(const std::string& source, const std::string& destination,
                      int64_t size_bytes);

// Grows `path` to `size_bytes`; never shrinks.
Status GrowFile(const std::string& path, int64_t size_bytes);

// Current size of `path`; NOT_FOUND when missing.
StatusOr<int64_t> FileSize(const std::string& path);

// Removes `path`; OK when it does not exist.
Status RemoveFile(const std::string& path);

// Flushes what the filesystem on a staged or published volume holds in memory down to its
// backing file, so that a copy of the file (snapshot, clone) sees the data written so far.
Status FlushVolume(const VolumeRecord& volume);

// A fresh random id with the given prefix: "vol-3f9c0a1b2c3d4e5f".
std::string NewId(const std::string& prefix);

}  // namespace loopback
}  // namespace flexcsi
