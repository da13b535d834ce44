#include "drivers/loopback/volume_state.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace flexcsi {
namespace loopback {

namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return Status::Ok();
  return Internal("cannot create " + path + ": " + ErrnoText());
}

json ToJson(const VolumeRecord& v) {
  json controller = json::object();
  for (const auto& [node, pub] : v.controller_publications) {
    controller[node] = {{"readonly", pub.readonly}, {"capability", pub.capability_key}};
  }
  json node = json::object();
  for (const auto& [target, pub] : v.node_publications) {
    node[target] = {{"readonly", pub.readonly},
                    {"capability", pub.capability_key},
                    {"mount_group", pub.mount_group}};
  }
  return json{{"id", v.id},
              {"name", v.name},
              {"seq", v.seq},
              {"capacity_bytes", v.capacity_bytes},
              {"block", v.block},
              {"fs_type", v.fs_type},
              {"parameters", v.parameters},
              {"source_snapshot_id", v.source_snapshot_id},
              {"source_volume_id", v.source_volume_id},
              {"controller_publications", controller},
              {"staging_path", v.staging_path},
              {"staged_capability", v.staged_capability_key},
              {"device", v.device},
              {"device_seq", v.device_seq},
              {"node_publications", node}};
}

VolumeRecord VolumeFromJson(const json& j) {
  VolumeRecord v;
  v.id = j.at("id").get<std::string>();
  v.name = j.at("name").get<std::string>();
  v.seq = j.at("seq").get<uint64_t>();
  v.capacity_bytes = j.at("capacity_bytes").get<int64_t>();
  v.block = j.at("block").get<bool>();
  v.fs_type = j.at("fs_type").get<std::string>();
  v.parameters = j.at("parameters").get<std::map<std::string, std::string>>();
  v.source_snapshot_id = j.at("source_snapshot_id").get<std::string>();
  v.source_volume_id = j.at("source_volume_id").get<std::string>();
  for (const auto& [node, pub] : j.at("controller_publications").items()) {
    v.controller_publications[node] = {pub.at("readonly").get<bool>(),
                                       pub.at("capability").get<std::string>()};
  }
  v.staging_path = j.at("staging_path").get<std::string>();
  v.staged_capability_key = j.at("staged_capability").get<std::string>();
  v.device = j.at("device").get<std::string>();
  v.device_seq = j.value("device_seq", uint64_t{0});  // newer than the format
  for (const auto& [target, pub] : j.at("node_publications").items()) {
    // mount_group is newer than the format: states written before it have none.
    v.node_publications[target] = {pub.at("readonly").get<bool>(),
                                   pub.at("capability").get<std::string>(),
                                   pub.value("mount_group", int64_t{-1})};
  }
  return v;
}

json ToJson(const SnapshotRecord& s) {
  return json{{"id", s.id},
              {"name", s.name},
              {"seq", s.seq},
              {"source_volume_id", s.source_volume_id},
              {"block", s.block},
              {"size_bytes", s.size_bytes},
              {"creation_seconds", s.creation_seconds},
              {"creation_nanos", s.creation_nanos}};
}

SnapshotRecord SnapshotFromJson(const json& j) {
  SnapshotRecord s;
  s.id = j.at("id").get<std::string>();
  s.name = j.at("name").get<std::string>();
  s.seq = j.at("seq").get<uint64_t>();
  s.source_volume_id = j.at("source_volume_id").get<std::string>();
  s.block = j.at("block").get<bool>();
  s.size_bytes = j.at("size_bytes").get<int64_t>();
  s.creation_seconds = j.at("creation_seconds").get<int64_t>();
  s.creation_nanos = j.at("creation_nanos").get<int32_t>();
  return s;
}

// Writes `content` to `path` so that a crash leaves either the old or the new file.
Status WriteFileAtomically(const std::string& dir, const std::string& path,
                           const std::string& content) {
  const std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot open " + temp + ": " + ErrnoText());
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status error = Internal("cannot write " + temp + ": " + ErrnoText());
      ::close(fd);
      return error;
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status error = Internal("cannot fsync " + temp + ": " + ErrnoText());
    ::close(fd);
    return error;
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return Internal("cannot rename " + temp + " to " + path + ": " + ErrnoText());
  }
  // The rename itself must be durable too.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status::Ok();
}

}  // namespace

VolumeState::VolumeState(std::string state_dir) : state_dir_(std::move(state_dir)) {}

StatusOr<std::unique_ptr<VolumeState>> VolumeState::Open(const std::string& state_dir) {
  if (state_dir.empty() || state_dir[0] != '/') {
    return InvalidArgument("state dir must be an absolute path, got '" + state_dir + "'");
  }
  FLEXCSI_RETURN_IF_ERROR(MakeDir(state_dir));
  FLEXCSI_RETURN_IF_ERROR(MakeDir(state_dir + "/volumes"));
  FLEXCSI_RETURN_IF_ERROR(MakeDir(state_dir + "/snapshots"));
  std::unique_ptr<VolumeState> state(new VolumeState(state_dir));
  const std::string lock_path = state_dir + "/lock";
  state->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (state->lock_fd_ < 0) return Internal("cannot open " + lock_path + ": " + ErrnoText());
  if (::flock(state->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return FailedPrecondition("state dir " + state_dir + " is in use by another csi-loopback");
    }
    return Internal("cannot lock " + lock_path + ": " + ErrnoText());
  }
  FLEXCSI_RETURN_IF_ERROR(state->Load());
  return state;
}

StatusOr<std::unique_ptr<VolumeState>> VolumeState::OpenShared(const std::string& store_dir) {
  if (store_dir.empty() || store_dir[0] != '/') {
    return InvalidArgument("shared store must be an absolute path, got '" + store_dir + "'");
  }
  FLEXCSI_RETURN_IF_ERROR(MakeDir(store_dir));
  FLEXCSI_RETURN_IF_ERROR(MakeDir(store_dir + "/volumes"));
  FLEXCSI_RETURN_IF_ERROR(MakeDir(store_dir + "/snapshots"));
  std::unique_ptr<VolumeState> state(new VolumeState(store_dir));
  state->shared_ = true;
  const std::string lock_path = store_dir + "/lock";
  state->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (state->lock_fd_ < 0) return Internal("cannot open " + lock_path + ": " + ErrnoText());
  {
    StoreLock lock(state.get());
    FLEXCSI_RETURN_IF_ERROR(state->reload_status_);
  }
  return state;
}

VolumeState::StoreLock::StoreLock(const VolumeState* state) : state_(state) {
  state_->AcquireStore();
}

VolumeState::StoreLock::~StoreLock() { state_->ReleaseStore(); }

void VolumeState::AcquireStore() const {
  if (!shared_) return;
  store_mu_.lock();
  if (store_depth_++ > 0) return;
  while (::flock(lock_fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
  // Another process may have written since we last looked: start from what is on disk.
  std::lock_guard<std::mutex> lock(mu_);
  auto* self = const_cast<VolumeState*>(this);
  std::map<std::string, VolumeRecord> volumes = std::move(self->volumes_);
  std::map<std::string, SnapshotRecord> snapshots = std::move(self->snapshots_);
  const uint64_t next_seq = next_seq_;
  self->volumes_.clear();
  self->snapshots_.clear();
  reload_status_ = self->Load();
  if (!reload_status_.ok()) {
    // Keep serving the last good view for reads; writes refuse (see PutVolume and friends).
    self->volumes_ = std::move(volumes);
    self->snapshots_ = std::move(snapshots);
    self->next_seq_ = next_seq;
  }
}

void VolumeState::ReleaseStore() const {
  if (!shared_) return;
  if (--store_depth_ == 0) ::flock(lock_fd_, LOCK_UN);
  store_mu_.unlock();
}

VolumeState::~VolumeState() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::string VolumeState::VolumeFilePath(const std::string& volume_id) const {
  return state_dir_ + "/volumes/" + volume_id + ".img";
}

std::string VolumeState::SnapshotFilePath(const std::string& snapshot_id) const {
  return state_dir_ + "/snapshots/" + snapshot_id + ".img";
}

Status VolumeState::Load() {
  const std::string path = state_dir_ + "/state.json";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return Status::Ok();  // first start
  std::ifstream in(path);
  if (!in) return Status(Code::kDataLoss, "cannot read " + path + ": " + ErrnoText());
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    json root = json::parse(buffer.str());
    if (root.at("version").get<int>() != kFormatVersion) {
      return Status(Code::kDataLoss,
                    path + " has unknown format version " + root.at("version").dump());
    }
    next_seq_ = root.at("next_seq").get<uint64_t>();
    for (const json& v : root.at("volumes")) {
      VolumeRecord record = VolumeFromJson(v);
      volumes_[record.id] = std::move(record);
    }
    for (const json& s : root.at("snapshots")) {
      SnapshotRecord record = SnapshotFromJson(s);
      snapshots_[record.id] = std::move(record);
    }
  } catch (const json::exception& e) {
    return Status(Code::kDataLoss, path + " is corrupt: " + e.what());
  }
  return Status::Ok();
}

Status VolumeState::SaveLocked() const {
  json volumes = json::array();
  for (const auto& [id, v] : volumes_) volumes.push_back(ToJson(v));
  json snapshots = json::array();
  for (const auto& [id, s] : snapshots_) snapshots.push_back(ToJson(s));
  json root{{"version", kFormatVersion},
            {"next_seq", next_seq_},
            {"volumes", volumes},
            {"snapshots", snapshots}};
  return WriteFileAtomically(state_dir_, state_dir_ + "/state.json", root.dump(2) + "\n");
}

std::optional<VolumeRecord> VolumeState::GetVolume(const std::string& id) const {
  StoreLock store(this);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = volumes_.find(id);
  if (it == volumes_.end()) return std::nullopt;
  return it->second;
}

std::optional<VolumeRecord> VolumeState::FindVolumeByName(const std::string& name) const {
  StoreLock store(this);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, v] : volumes_) {
    if (v.name == name) return v;
  }
  return std::nullopt;
}

std::vector<VolumeRecord> VolumeState::ListVolumes() const {
  StoreLock store(this);
  std::vector<VolumeRecord> result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, v] : volumes_) result.push_back(v);
  }
  std::sort(result.begin(), result.end(),
            [](const VolumeRecord& a, const VolumeRecord& b) { return a.seq < b.seq; });
  return result;
}

StatusOr<VolumeRecord> VolumeState::PutVolume(VolumeRecord volume) {
  if (volume.id.empty()) return InvalidArgument("volume record without id");
  StoreLock store(this);
  if (shared_ && !reload_status_.ok()) return reload_status_;
  std::lock_guard<std::mutex> lock(mu_);
  auto previous = volumes_.find(volume.id);
  std::optional<VolumeRecord> old;
  if (previous != volumes_.end()) old = previous->second;
  bool took_seq = false;
  if (volume.seq == 0) {
    volume.seq = next_seq_++;
    took_seq = true;
  }
  volumes_[volume.id] = volume;
  Status saved = SaveLocked();
  if (!saved.ok()) {
    // Keep memory equal to disk: a failed write must not leave a phantom change behind.
    if (old) {
      volumes_[volume.id] = *old;
    } else {
      volumes_.erase(volume.id);
    }
    if (took_seq) --next_seq_;
    return saved;
  }
  return volume;
}

Status VolumeState::RemoveVolume(const std::string& id) {
  StoreLock store(this);
  if (shared_ && !reload_status_.ok()) return reload_status_;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = volumes_.find(id);
  if (it == volumes_.end()) return Status::Ok();
  VolumeRecord old = it->second;
  volumes_.erase(it);
  Status saved = SaveLocked();
  if (!saved.ok()) volumes_[id] = std::move(old);
  return saved;
}

uint64_t VolumeState::LastIssuedSeq() const {
  StoreLock store(this);
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_ - 1;
}

std::optional<SnapshotRecord> VolumeState::GetSnapshot(const std::string& id) const {
  StoreLock store(this);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = snapshots_.find(id);
  if (it == snapshots_.end()) return std::nullopt;
  return it->second;
}

std::optional<SnapshotRecord> VolumeState::FindSnapshotByName(const std::string& name) const {
  StoreLock store(this);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, s] : snapshots_) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

std::vector<SnapshotRecord> VolumeState::ListSnapshots() const {
  StoreLock store(this);
  std::vector<SnapshotRecord> result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : snapshots_) result.push_back(s);
  }
  std::sort(result.begin(), result.end(),
            [](const SnapshotRecord& a, const SnapshotRecord& b) { return a.seq < b.seq; });
  return result;
}

StatusOr<SnapshotRecord> VolumeState::PutSnapshot(SnapshotRecord snapshot) {
  if (snapshot.id.empty()) return InvalidArgument("snapshot record without id");
  StoreLock store(this);
  if (shared_ && !reload_status_.ok()) return reload_status_;
  std::lock_guard<std::mutex> lock(mu_);
  auto previous = snapshots_.find(snapshot.id);
  std::optional<SnapshotRecord> old;
  if (previous != snapshots_.end()) old = previous->second;
  bool took_seq = false;
  if (snapshot.seq == 0) {
    snapshot.seq = next_seq_++;
    took_seq = true;
  }
  snapshots_[snapshot.id] = snapshot;
  Status saved = SaveLocked();
  if (!saved.ok()) {
    if (old) {
      snapshots_[snapshot.id] = *old;
    } else {
      snapshots_.erase(snapshot.id);
    }
    if (took_seq) --next_seq_;
    return saved;
  }
  return snapshot;
}

Status VolumeState::RemoveSnapshot(const std::string& id) {
  StoreLock store(this);
  if (shared_ && !reload_status_.ok()) return reload_status_;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = snapshots_.find(id);
  if (it == snapshots_.end()) return Status::Ok();
  SnapshotRecord old = it->second;
  snapshots_.erase(it);
  Status saved = SaveLocked();
  if (!saved.ok()) snapshots_[id] = std::move(old);
  return saved;
}

}  // namespace loopback
}  // namespace flexcsi
