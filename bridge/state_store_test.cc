#include "bridge/state_store.h"

#include <sqlite3.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/state-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/state.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<StateStore> OpenStore() {
    auto store = StateStore::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }

  static PublicationRecord Publication(const std::string& target, const std::string& staging) {
    PublicationRecord p;
    p.target_path = target;
    p.staging_path = staging;
    p.flex_driver = "acme/disk";
    p.volume_name = "pv-1";
    p.csi_driver = "disk.csi.acme.io";
    p.volume_id = "vol-1";
    p.pod_uid = "uid-1";
    p.readonly = true;
    p.phase = Phase::kDone;
    return p;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(StateStoreTest, RecordsSurviveClosingAndReopeningTheDatabase) {
  {
    auto store = OpenStore();
    AttachmentRecord a;
    a.flex_driver = "acme/disk";
    a.volume_name = "pv-1";
    a.node_name = "node-1";
    a.csi_driver = "disk.csi.acme.io";
    a.volume_id = "vol-1";
    a.node_id = "i-123";
    a.publish_context = {{"devicePath", "/dev/loop3"}};
    a.phase = Phase::kDone;
    ASSERT_TRUE(store->PutAttachment(a).ok());
    StagingRecord s;
    s.staging_path = "/k/plugins/x/globalmount";
    s.flex_driver = "acme/disk";
    s.volume_name = "pv-1";
    s.csi_driver = "disk.csi.acme.io";
    s.volume_id = "vol-1";
    s.owner = StagingOwner::kBridge;
    s.request = {{"staged", true}, {"publishContext", {{"k", "v"}}}};
    s.phase = Phase::kInProgress;
    ASSERT_TRUE(store->PutStaging(s).ok());
    ASSERT_TRUE(store->PutPublication(Publication("/k/pods/u/v", s.staging_path)).ok());
  }
  auto store = OpenStore();
  auto a = store->GetAttachment("acme/disk", "pv-1", "node-1");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->node_id, "i-123");
  EXPECT_EQ((*a)->publish_context["devicePath"], "/dev/loop3");
  EXPECT_EQ((*a)->phase, Phase::kDone);
  auto s = store->FindStagingOfVolume("acme/disk", "pv-1");
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->owner, StagingOwner::kBridge);
  EXPECT_EQ((*s)->phase, Phase::kInProgress);
  EXPECT_TRUE((*s)->StagedThroughCsi());
  EXPECT_EQ((*s)->request["publishContext"]["k"], "v");
  auto p = store->GetPublication("/k/pods/u/v");
  ASSERT_TRUE(p.ok() && p->has_value());
  EXPECT_TRUE((*p)->readonly);
  EXPECT_EQ((*p)->staging_path, "/k/plugins/x/globalmount");
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST_F(StateStoreTest, ANewDatabaseIsPrivateInAPrivateDirectory) {
  const std::string dir = dir_ + "/flexcsi";
  const std::string path = dir + "/state.db";
  const mode_t old_umask = ::umask(0);  // whatever the umask, the files are 0600
  auto store = StateStore::Open(path);
  ::umask(old_umask);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  AttachmentRecord a;
  a.flex_driver = "acme/disk";
  a.volume_name = "pv-1";
  a.node_name = "node-1";
  ASSERT_TRUE((*store)->PutAttachment(a).ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(ModeOf(path + "-wal"), 0600u);
  EXPECT_EQ(ModeOf(path + "-shm"), 0600u);
}

TEST_F(StateStoreTest, AnExistingDatabaseIsTightenedAndSoIsFlexcsisDirectory) {
  const std::string dir = dir_ + "/flexcsi";
  const std::string path = dir + "/state.db";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  auto before = StateStore::Open(path);  // as an older bridge left it, still running
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE((*before)->CountRecords().ok());
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    ASSERT_EQ(::chmod(file.c_str(), 0644), 0) << file;
  }
  auto store = StateStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(ModeOf(dir), 0700u);
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    EXPECT_EQ(ModeOf(file), 0600u) << file;
  }
}

TEST_F(StateStoreTest, ADirectoryTheOperatorChoseKeepsItsMode) {
  // dir_ (/tmp/state-store-*) stands for /var/lib: not flexcsi's to change.
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(::close(::open(path_.c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ModeOf(dir_), 0755u);
  EXPECT_EQ(ModeOf(path_), 0600u);
}

TEST_F(StateStoreTest, AnAttachmentIsNeverTakenOverByAnotherVolume) {
  auto store = OpenStore();
  AttachmentRecord a;
  a.flex_driver = "acme/disk";
  a.volume_name = "pv-1";
  a.node_name = "node-1";
  a.csi_driver = "disk.csi.acme.io";
  a.volume_id = "vol-1";
  a.node_id = "i-123";
  a.phase = Phase::kInProgress;
  ASSERT_TRUE(store->PutAttachment(a).ok());
  // The same volume again, in any phase, is the idempotent case.
  a.phase = Phase::kDone;
  a.publish_context = {{"devicePath", "/dev/vdb"}};
  ASSERT_TRUE(store->PutAttachment(a).ok());
  ASSERT_TRUE(store->PutAttachment(a).ok());

  AttachmentRecord other = a;
  other.volume_id = "vol-2";
  other.publish_context = {{"devicePath", "/dev/vdc"}};
  Status refused = store->PutAttachment(other);
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  for (const char* part : {"pv-1", "node-1", "vol-1", "vol-2"}) {
    EXPECT_NE(refused.message().find(part), std::string::npos) << refused.message();
  }
  AttachmentRecord other_driver = a;
  other_driver.csi_driver = "other.csi.acme.io";
  EXPECT_EQ(store->PutAttachment(other_driver).code(), Code::kFailedPrecondition);

  auto kept = store->GetAttachment("acme/disk", "pv-1", "node-1");
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->volume_id, "vol-1");
  EXPECT_EQ((*kept)->csi_driver, "disk.csi.acme.io");
  EXPECT_EQ((*kept)->publish_context["devicePath"], "/dev/vdb");

  // Another node or another name is another record; after a detach the key is free again.
  other.node_name = "node-2";
  EXPECT_TRUE(store->PutAttachment(other).ok());
  ASSERT_TRUE(store->DeleteAttachment("acme/disk", "pv-1", "node-1").ok());
  other.node_name = "node-1";
  EXPECT_TRUE(store->PutAttachment(other).ok());
}

TEST(RefuseAnotherVolumeTest, NamesTheRecordAndBothVolumes) {
  EXPECT_TRUE(RefuseAnotherVolume("target /t", "d", "vol-1", "d", "vol-1").ok());
  Status s = RefuseAnotherVolume("target /t", "d", "vol-1", "e", "vol-2");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "target /t already holds volume vol-1 of d, not vol-2 of e");
}

TEST_F(StateStoreTest, CountsPublicationsPerStaging) {
  auto store = OpenStore();
  ASSERT_TRUE(store->PutPublication(Publication("/k/pods/a/v", "/k/s1")).ok());
  ASSERT_TRUE(store->PutPublication(Publication("/k/pods/b/v", "/k/s1")).ok());
  ASSERT_TRUE(store->PutPublication(Publication("/k/pods/c/v", "")).ok());
  EXPECT_EQ(*store->CountPublicationsOfStaging("/k/s1"), 2);
  ASSERT_TRUE(store->DeletePublication("/k/pods/a/v").ok());
  EXPECT_EQ(*store->CountPublicationsOfStaging("/k/s1"), 1);
  auto counts = store->CountRecords();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->publications, 2);
  auto missing = store->GetPublication("/k/pods/a/v");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST_F(StateStoreTest, CountsUnfinishedAsUnsettled) {
  auto store = OpenStore();
  auto done = Publication("/k/pods/a/v", "");
  auto publishing = Publication("/k/pods/b/v", "");
  publishing.phase = Phase::kInProgress;
  ASSERT_TRUE(store->PutPublication(done).ok());
  ASSERT_TRUE(store->PutPublication(publishing).ok());
  AttachmentRecord detaching;
  detaching.flex_driver = "acme/disk";
  detaching.volume_name = "pv-1";
  detaching.node_name = "node-1";
  detaching.phase = Phase::kRemoving;
  ASSERT_TRUE(store->PutAttachment(detaching).ok());
  auto counts = store->CountRecords();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->publications, 2);
  EXPECT_EQ(counts->attachments, 1);
  EXPECT_EQ(counts->unsettled, 2);
}

TEST_F(StateStoreTest, PutReplacesTheRecordWithTheSameKey) {
  auto store = OpenStore();
  auto p = Publication("/k/pods/a/v", "");
  p.phase = Phase::kInProgress;
  ASSERT_TRUE(store->PutPublication(p).ok());
  p.phase = Phase::kRemoving;
  ASSERT_TRUE(store->PutPublication(p).ok());
  auto all = store->ListPublications();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].phase, Phase::kRemoving);
}

TEST_F(StateStoreTest, UsesWalAndRecordsTheSchemaVersion) {
  OpenStore();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
    sqlite3_step(stmt);
    std::string v = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return v;
  };
  EXPECT_EQ(scalar("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(scalar("PRAGMA user_version"), std::to_string(StateStore::kSchemaVersion));
  sqlite3_close(db);
}

TEST_F(StateStoreTest, RefusesADatabaseFromANewerFlexcsi) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = StateStore::Open(path_);
  EXPECT_EQ(store.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("newer"), std::string::npos);
}

// A version-1 database (written before stagings had a shape) keeps its records; a staging that
// version 1 marked request.staged=false becomes a no-stage staging, every other one a driver
// mount, and neither has a marker.
TEST_F(StateStoreTest, MigratesVersionOneStagingsToShapes) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v1 = R"sql(
CREATE TABLE attachments(flex_driver TEXT NOT NULL, volume_name TEXT NOT NULL,
  node_name TEXT NOT NULL, csi_driver TEXT NOT NULL, volume_id TEXT NOT NULL,
  node_id TEXT NOT NULL, publish_context TEXT NOT NULL, state TEXT NOT NULL,
  updated_at INTEGER NOT NULL, PRIMARY KEY(flex_driver, volume_name, node_name));
CREATE TABLE stagings(staging_path TEXT PRIMARY KEY, flex_driver TEXT NOT NULL,
  volume_name TEXT NOT NULL, csi_driver TEXT NOT NULL, volume_id TEXT NOT NULL,
  owner TEXT NOT NULL, request TEXT NOT NULL, state TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE publications(target_path TEXT PRIMARY KEY, staging_path TEXT,
  flex_driver TEXT NOT NULL, volume_name TEXT NOT NULL, csi_driver TEXT NOT NULL,
  volume_id TEXT NOT NULL, pod_uid TEXT NOT NULL, readonly INTEGER NOT NULL,
  state TEXT NOT NULL, updated_at INTEGER NOT NULL);
INSERT INTO stagings VALUES('/k/mounts/a','acme/disk','pv-a','d','vol-a','kubelet',
  '{"staged":true}','staged',1);
INSERT INTO stagings VALUES('/k/mounts/b','acme/disk','pv-b','d','vol-b','kubelet',
  '{"staged":false,"publishContext":{}}','staged',1);
PRAGMA user_version = 1;
)sql";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto a = store->GetStaging("/k/mounts/a");
  auto b = store->GetStaging("/k/mounts/b");
  ASSERT_TRUE(a.ok() && a->has_value());
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*a)->shape, StagingShape::kDriverMount);
  EXPECT_TRUE((*a)->ExpectsMount());
  EXPECT_EQ((*b)->shape, StagingShape::kNoStage);
  EXPECT_FALSE((*b)->ExpectsMount());
  EXPECT_FALSE((*a)->marker || (*b)->marker);
  EXPECT_EQ((*b)->phase, Phase::kDone);

  // The migrated database takes new records with every shape.
  StagingRecord c = **b;
  c.staging_path = "/k/mounts/c";
  c.shape = StagingShape::kRecordOnly;
  c.marker = true;
  ASSERT_TRUE(store->PutStaging(c).ok());
  auto back = store->GetStaging("/k/mounts/c");
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->shape, StagingShape::kRecordOnly);
  EXPECT_TRUE((*back)->marker);
  EXPECT_TRUE((*back)->ExpectsMount());
}

TEST_F(StateStoreTest, ReportsAnUnwritableLocationClearly) {
  auto store = StateStore::Open(dir_ + "/no/such/dir/state.db");
  EXPECT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("state.db"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi
