#include "drivers/loopback/volume_state.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <fstream>

namespace flexcsi {
namespace loopback {
namespace {

class VolumeStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/flexcsi-state-test-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { boost::filesystem::remove_all(dir_); }

  std::unique_ptr<VolumeState> OpenState() {
    StatusOr<std::unique_ptr<VolumeState>> state = VolumeState::Open(dir_);
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? std::move(*state) : nullptr;
  }

  static VolumeRecord SampleVolume(const std::string& id) {
    VolumeRecord v;
    v.id = id;
    v.name = "name-" + id;
    v.capacity_bytes = 64 << 20;
    v.fs_type = "xfs";
    v.parameters = {{"fsType", "xfs"}};
    v.source_snapshot_id = "snap-1";
    v.controller_publications["node-a"] = {true, "SINGLE_NODE_WRITER|block"};
    v.staging_path = "/staging/" + id;
    v.staged_capability_key = "key";
    v.device = "/dev/loop7";
    v.node_publications["/target/1"] = {false, "key"};
    v.node_publications["/target/2"] = {true, "key-2000", 2000};
    return v;
  }

  std::string dir_;
};

TEST_F(VolumeStateTest, FreshDirectoryStartsEmptyWithSubdirectories) {
  auto state = OpenState();
  ASSERT_NE(state, nullptr);
  EXPECT_TRUE(state->ListVolumes().empty());
  EXPECT_TRUE(state->ListSnapshots().empty());
  EXPECT_TRUE(boost::filesystem::is_directory(dir_ + "/volumes"));
  EXPECT_TRUE(boost::filesystem::is_directory(dir_ + "/snapshots"));
  EXPECT_EQ(state->VolumeFilePath("vol-1"), dir_ + "/volumes/vol-1.img");
  EXPECT_EQ(state->SnapshotFilePath("snap-1"), dir_ + "/snapshots/snap-1.img");
}

TEST_F(VolumeStateTest, EveryFieldSurvivesReopen) {
  {
    auto state = OpenState();
    ASSERT_TRUE(state->PutVolume(SampleVolume("vol-1")).ok());
    SnapshotRecord s;
    s.id = "snap-1";
    s.name = "snap-name";
    s.source_volume_id = "vol-1";
    s.block = true;
    s.size_bytes = 123;
    s.creation_seconds = 1700000000;
    s.creation_nanos = 42;
    ASSERT_TRUE(state->PutSnapshot(s).ok());
  }
  auto state = OpenState();
  std::optional<VolumeRecord> v = state->GetVolume("vol-1");
  ASSERT_TRUE(v.has_value());
  VolumeRecord want = SampleVolume("vol-1");
  EXPECT_EQ(v->name, want.name);
  EXPECT_EQ(v->capacity_bytes, want.capacity_bytes);
  EXPECT_EQ(v->fs_type, "xfs");
  EXPECT_EQ(v->parameters, want.parameters);
  EXPECT_EQ(v->source_snapshot_id, "snap-1");
  ASSERT_EQ(v->controller_publications.count("node-a"), 1u);
  EXPECT_TRUE(v->controller_publications["node-a"].readonly);
  EXPECT_EQ(v->controller_publications["node-a"].capability_key, "SINGLE_NODE_WRITER|block");
  EXPECT_EQ(v->staging_path, want.staging_path);
  EXPECT_EQ(v->device, "/dev/loop7");
  ASSERT_EQ(v->node_publications.count("/target/1"), 1u);
  EXPECT_FALSE(v->node_publications["/target/1"].readonly);
  EXPECT_EQ(v->node_publications["/target/1"].mount_group, -1);
  // Each target keeps its own read-only flag, capability and mount group.
  ASSERT_EQ(v->node_publications.count("/target/2"), 1u);
  EXPECT_TRUE(v->node_publications["/target/2"].readonly);
  EXPECT_EQ(v->node_publications["/target/2"].capability_key, "key-2000");
  EXPECT_EQ(v->node_publications["/target/2"].mount_group, 2000);
  std::optional<SnapshotRecord> s = state->GetSnapshot("snap-1");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "snap-name");
  EXPECT_EQ(s->creation_seconds, 1700000000);
  EXPECT_EQ(s->creation_nanos, 42);
  EXPECT_EQ(s->size_bytes, 123);
  EXPECT_TRUE(s->block);
}

TEST_F(VolumeStateTest, SequenceGrowsAcrossRestarts) {
  uint64_t first_seq = 0;
  {
    auto state = OpenState();
    StatusOr<VolumeRecord> b = state->PutVolume(SampleVolume("vol-b"));
    ASSERT_TRUE(b.ok());
    first_seq = b->seq;
    EXPECT_GT(first_seq, 0u);
    ASSERT_TRUE(state->PutVolume(SampleVolume("vol-a")).ok());
  }
  auto state = OpenState();
  StatusOr<VolumeRecord> c = state->PutVolume(SampleVolume("vol-c"));
  ASSERT_TRUE(c.ok());
  EXPECT_GT(c->seq, first_seq + 1);
  std::vector<VolumeRecord> list = state->ListVolumes();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].id, "vol-b");  // creation order, not id order
  EXPECT_EQ(list[1].id, "vol-a");
  EXPECT_EQ(list[2].id, "vol-c");
  EXPECT_EQ(state->LastIssuedSeq(), c->seq);
}

TEST_F(VolumeStateTest, ReplacingKeepsSequenceNumber) {
  auto state = OpenState();
  StatusOr<VolumeRecord> v = state->PutVolume(SampleVolume("vol-1"));
  ASSERT_TRUE(v.ok());
  v->capacity_bytes *= 2;
  StatusOr<VolumeRecord> again = state->PutVolume(*v);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->seq, v->seq);
  EXPECT_EQ(state->GetVolume("vol-1")->capacity_bytes, v->capacity_bytes);
}

TEST_F(VolumeStateTest, FindByNameAndRemove) {
  auto state = OpenState();
  ASSERT_TRUE(state->PutVolume(SampleVolume("vol-1")).ok());
  EXPECT_EQ(state->FindVolumeByName("name-vol-1")->id, "vol-1");
  EXPECT_FALSE(state->FindVolumeByName("other").has_value());
  EXPECT_TRUE(state->RemoveVolume("vol-1").ok());
  EXPECT_TRUE(state->RemoveVolume("vol-1").ok());  // idempotent
  EXPECT_FALSE(state->GetVolume("vol-1").has_value());
  state.reset();  // one owner of a state dir at a time
  auto reopened = OpenState();
  ASSERT_NE(reopened, nullptr);
  EXPECT_FALSE(reopened->GetVolume("vol-1").has_value());
}

TEST_F(VolumeStateTest, CorruptStateFileIsDataLossNotAnEmptyStart) {
  { std::ofstream(dir_ + "/state.json") << "{ this is not json"; }
  StatusOr<std::unique_ptr<VolumeState>> state = VolumeState::Open(dir_);
  ASSERT_FALSE(state.ok());
  EXPECT_EQ(state.status().code(), Code::kDataLoss);
}

TEST_F(VolumeStateTest, FailedWriteLeavesMemoryUnchanged) {
  auto state = OpenState();
  ASSERT_TRUE(state->PutVolume(SampleVolume("vol-1")).ok());
  // A directory where the temp file must go makes the write fail.
  ASSERT_EQ(::mkdir((dir_ + "/state.json.tmp").c_str(), 0700), 0);
  EXPECT_FALSE(state->PutVolume(SampleVolume("vol-2")).ok());
  EXPECT_FALSE(state->GetVolume("vol-2").has_value());
  EXPECT_FALSE(state->RemoveVolume("vol-1").ok());
  EXPECT_TRUE(state->GetVolume("vol-1").has_value());
  ::rmdir((dir_ + "/state.json.tmp").c_str());
}

TEST_F(VolumeStateTest, NoTemporaryFileIsLeftBehind) {
  auto state = OpenState();
  ASSERT_TRUE(state->PutVolume(SampleVolume("vol-1")).ok());
  EXPECT_TRUE(boost::filesystem::exists(dir_ + "/state.json"));
  EXPECT_FALSE(boost::filesystem::exists(dir_ + "/state.json.tmp"));
}

TEST_F(VolumeStateTest, SecondOpenRefusedUntilFirstCloses) {
  auto first = OpenState();
  ASSERT_NE(first, nullptr);
  StatusOr<std::unique_ptr<VolumeState>> second = VolumeState::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  first.reset();
  EXPECT_TRUE(VolumeState::Open(dir_).ok());
}

TEST_F(VolumeStateTest, RelativeStateDirIsRejected) {
  EXPECT_EQ(VolumeState::Open("relative/dir").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace loopback
}  // namespace flexcsi
