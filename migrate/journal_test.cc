#include "migrate/journal.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace flexcsi::migrate {
namespace {

// The journal's first schema as released: older journals on users' disks start from it.
constexpr char kReleasedSchemaV1[] = R"sql(
CREATE TABLE migrations(
  pv_name TEXT PRIMARY KEY, direction TEXT NOT NULL, step TEXT NOT NULL, state TEXT NOT NULL,
  original_pv TEXT NOT NULL, original_pvc TEXT NOT NULL, target_pv TEXT NOT NULL,
  original_reclaim_policy TEXT NOT NULL, release_uid TEXT NOT NULL, new_pv_uid TEXT NOT NULL,
  workloads TEXT NOT NULL, workloads_recorded INTEGER NOT NULL, last_error TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
CREATE TABLE history(
  id INTEGER PRIMARY KEY AUTOINCREMENT, pv_name TEXT NOT NULL, direction TEXT NOT NULL,
  step TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX history_by_pv ON history(pv_name, id);
)sql";

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/flexcsi-journal-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

MigrationRecord Sample() {
  MigrationRecord r;
  r.pv_name = "pv-1";
  r.step = "retaining";
  r.original_pv = {{"metadata", {{"name", "pv-1"}}}, {"spec", {{"rbd", {{"image", "i"}}}}}};
  r.original_pvc = {{"metadata", {{"namespace", "ns"}, {"name", "c"}, {"uid", "u"}}}};
  r.target_pv = {{"spec", {{"csi", {{"driver", "rbd.csi.ceph.com"}}}}}};
  r.original_reclaim_policy = "Delete";
  r.release_uid = "r-uid";
  r.workloads.push_back({"apps/v1", "deployments", "Deployment", "ns", "web", 3});
  r.workloads_recorded = true;
  return r;
}

TEST_F(JournalTest, RecordsSurviveReopenWithEveryField) {
  {
    auto j = MigrationJournal::Open(dir_);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    ASSERT_TRUE((*j)->Put(Sample()).ok());
  }
  auto j = MigrationJournal::OpenForReading(dir_);
  ASSERT_TRUE(j.ok());
  auto got = (*j)->Get("pv-1");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  const MigrationRecord& r = **got;
  EXPECT_EQ(r.step, "retaining");
  EXPECT_EQ(r.state, RecordState::kInProgress);
  EXPECT_EQ(r.original_pv, Sample().original_pv);
  EXPECT_EQ(r.ClaimKey(), "ns/c");
  EXPECT_EQ(r.original_reclaim_policy, "Delete");
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_EQ(r.workloads[0].replicas, 3);
  EXPECT_TRUE(r.workloads_recorded);
  EXPECT_GT(r.updated_at, 0);
}

TEST_F(JournalTest, SecondRunIsRefusedNamingHolder) {
  auto first = MigrationJournal::Open(dir_);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Put(Sample()).ok());  // creates the journal, and takes the lock
  auto second = MigrationJournal::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("another flexcsi migrate is running"),
            std::string::npos);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(getpid())), std::string::npos);
  first->reset();
  EXPECT_TRUE(MigrationJournal::Open(dir_).ok());  // the lock goes with its holder
}

TEST_F(JournalTest, HistoryKeepsEveryStepInOrder) {
  auto j = MigrationJournal::Open(dir_);
  ASSERT_TRUE(j.ok());
  MigrationRecord r = Sample();
  for (const char* step : {"checked", "scaling-down", "retaining"}) {
    r.step = step;
    ASSERT_TRUE((*j)->Put(r).ok());
  }
  auto h = (*j)->History("pv-1");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 3u);
  EXPECT_EQ((*h)[0].step, "checked");
  EXPECT_EQ((*h)[2].step, "retaining");
  auto list = (*j)->List();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
}

TEST_F(JournalTest, ReadingAMissingJournalIsNotFound) {
  auto j = MigrationJournal::OpenForReading(dir_ + "/nope");
  EXPECT_EQ(j.status().code(), Code::kNotFound);
}

TEST_F(JournalTest, JournalFilesAreOwnerOnly) {
  auto j = MigrationJournal::Open(dir_ + "/sub");
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE((*j)->Put(Sample()).ok());
  auto perms = std::filesystem::status(dir_ + "/sub").permissions();
  EXPECT_EQ(perms & std::filesystem::perms::all, std::filesystem::perms::owner_all);
  auto db = std::filesystem::status(dir_ + "/sub/journal.db").permissions();
  EXPECT_EQ(db & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
            std::filesystem::perms::none);
}

// A run that refuses everything it was asked must leave nothing behind in a fresh --journal
// directory: reads of a journal not created yet answer empty, and only a write creates it.
TEST_F(JournalTest, AJournalThatCannotBeCreatedIsRefusedAtOpen) {
  // A regular file where the journal's directory would go: nothing could ever be created.
  const std::string file = dir_ + "/not-a-dir";
  std::ofstream(file) << "x";
  auto j = MigrationJournal::Open(file + "/journal");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(j.status().message().find(file + " is not a directory"), std::string::npos)
      << j.status().message();
}

TEST_F(JournalTest, NothingIsCreatedBeforeTheFirstWrite) {
  const std::string dir = dir_ + "/fresh";
  auto j = MigrationJournal::Open(dir);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto got = (*j)->Get("pv-1");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_TRUE((*j)->List().ok() && (*j)->List()->empty());
  EXPECT_TRUE((*j)->ListGroups().ok() && (*j)->ListGroups()->empty());
  EXPECT_TRUE((*j)->ListStorageClasses().ok() && (*j)->ListStorageClasses()->empty());
  auto sc = (*j)->GetStorageClass("fast");
  ASSERT_TRUE(sc.ok());
  EXPECT_FALSE(sc->has_value());
  EXPECT_FALSE(std::filesystem::exists(dir));
  // A second run on the same fresh directory opens too; the first write decides.
  auto second = MigrationJournal::Open(dir);
  ASSERT_TRUE(second.ok());

  ASSERT_TRUE((*j)->Put(Sample()).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/journal.db"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/lock"));
  got = (*j)->Get("pv-1");
  ASSERT_TRUE(got.ok() && got->has_value());
  Status refused = (*second)->Put(Sample());
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("another flexcsi migrate is running"), std::string::npos)
      << refused.message();
  // Once the first is gone, the second still does not write into a journal it read as empty.
  j->reset();
  refused = (*second)->PutStorageClass(StorageClassRecord{});
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("created journal " + dir), std::string::npos)
      << refused.message();
  auto reread = MigrationJournal::OpenForReading(dir);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ((*reread)->List()->size(), 1u);
  EXPECT_TRUE((*reread)->ListStorageClasses()->empty());
}

// A workload group's row keeps the replicas read before its scale-down across a reopen (a run
// killed with -9 resumes with them), and each member row names its group.
TEST_F(JournalTest, WorkloadGroupSurvivesReopenWithReplicasAndMembers) {
  WorkloadGroupRecord g;
  g.id = "StatefulSet ns/web";
  g.step = "group-moving";
  g.workloads.push_back({"apps/v1", "statefulsets", "StatefulSet", "ns", "web", 3});
  g.members = {"data-web-0", "data-web-1"};
  MigrationRecord member = Sample();
  member.pv_name = "data-web-0";
  member.workload_group = g.id;
  {
    auto j = MigrationJournal::Open(dir_);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    ASSERT_TRUE((*j)->PutGroup(g).ok());
    ASSERT_TRUE((*j)->Put(member).ok());
  }
  auto j = MigrationJournal::Open(dir_);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto got = (*j)->GetGroup(g.id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->step, "group-moving");
  ASSERT_EQ((*got)->workloads.size(), 1u);
  EXPECT_EQ((*got)->workloads[0].kind, "StatefulSet");
  EXPECT_EQ((*got)->workloads[0].replicas, 3);
  EXPECT_EQ((*got)->members, g.members);
  auto row = (*j)->Get("data-web-0");
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->workload_group, g.id);
  auto none = (*j)->GetGroup("Deployment ns/other");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto history = (*j)->History("group:" + g.id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].step, "group-moving");
  auto all = (*j)->ListGroups();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
}

// Many threads writing at once (apply --parallel): every write lands, none is lost or torn.
TEST_F(JournalTest, ConcurrentPutsFromManyThreadsAllLand) {
  auto j = MigrationJournal::Open(dir_);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        MigrationRecord r = Sample();
        r.pv_name = "pv-" + std::to_string(t) + "-" + std::to_string(i);
        for (const char* step : {"checked", "retaining", "binding"}) {
          r.step = step;
          if (!(*j)->Put(r).ok()) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto all = (*j)->List();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 160u);
  for (const auto& r : *all) EXPECT_EQ(r.step, "binding") << r.pv_name;
  auto history = (*j)->History("pv-3-7");
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), 3u);
}

// A journal written before workload groups existed (schema v1, e.g. by a run killed mid-way
// before an upgrade) opens, keeps its rows, and gains the group table.
TEST_F(JournalTest, SchemaV1JournalIsUpgradedWithItsRows) {
  {
    // The v1 schema as released, and one row as the old binary wrote it.
    const std::string v1_with_row = std::string(kReleasedSchemaV1) + R"sql(
INSERT INTO migrations VALUES('old-pv', 'apply', 'binding', 'in-progress', '{}',
  '{"metadata":{"namespace":"ns","name":"c"}}', '{}', 'Delete', 'r', '', '[]', 1, '', 1);
)sql";
    auto db = SqliteDatabase::Open(dir_ + "/journal.db", "v1 journal", {v1_with_row.c_str()});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
  }
  auto j = MigrationJournal::Open(dir_);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto row = (*j)->Get("old-pv");
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->step, "binding");
  EXPECT_EQ((*row)->ClaimKey(), "ns/c");
  EXPECT_EQ((*row)->workload_group, "");
  auto groups = (*j)->ListGroups();
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  EXPECT_TRUE(groups->empty());
}

// A rollback takes over the group's row: the direction lands in the row and in its history, so
// `status` tells an apply group from a rollback one.
TEST_F(JournalTest, WorkloadGroupKeepsTheDirectionOfItsRun) {
  auto j = MigrationJournal::Open(dir_);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  WorkloadGroupRecord g;
  g.id = "Deployment ns/api";
  g.step = "group-done";
  g.members = {"api-a", "api-b"};
  ASSERT_TRUE((*j)->PutGroup(g).ok());
  g.direction = "rollback";
  g.step = "group-scaling-down";
  ASSERT_TRUE((*j)->PutGroup(g).ok());
  auto got = (*j)->GetGroup(g.id);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->direction, "rollback");
  auto history = (*j)->History("group:" + g.id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].direction, "apply");
  EXPECT_EQ((*history)[1].direction, "rollback");
}

// A schema v2 journal (groups, but apply only) opens upgraded: its groups read as apply groups.
TEST_F(JournalTest, SchemaV2GroupsAreUpgradedAsApplyGroups) {
  {
    // The v1 and v2 schemas as released, and one group row as the v2 binary wrote it.
    auto db = SqliteDatabase::Open(dir_ + "/journal.db", "v2 journal",
                                   {kReleasedSchemaV1,
                                    R"sql(
ALTER TABLE migrations ADD COLUMN workload_group TEXT NOT NULL DEFAULT '';
CREATE TABLE workload_groups(
  id TEXT PRIMARY KEY, step TEXT NOT NULL, workloads TEXT NOT NULL, members TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
INSERT INTO workload_groups VALUES('StatefulSet ns/web', 'group-moving', '[]', '["p"]', 1);
)sql"});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
  }
  auto j = MigrationJournal::Open(dir_);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto got = (*j)->GetGroup("StatefulSet ns/web");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  EXPECT_EQ((*got)->direction, "apply");
  EXPECT_EQ((*got)->step, "group-moving");
}

// A StorageClass row keeps the original and the twin across a reopen (a run killed between the
// delete and the create re-creates from them), with its steps in the history.
TEST_F(JournalTest, StorageClassRowKeepsOriginalAndTwinAcrossReopen) {
  const nlohmann::json original = {{"metadata", {{"name", "fast"}, {"labels", {{"a", "b"}}}}},
                                   {"provisioner", "kubernetes.io/aws-ebs"},
                                   {"mountOptions", {"noatime"}}};
  nlohmann::json twin = original;
  twin["provisioner"] = "ebs.csi.aws.com";
  {
    auto j = MigrationJournal::Open(dir_);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    StorageClassRecord r;
    r.name = "fast";
    r.step = "sc-deleting";
    r.original = original;
    r.twin = twin;
    ASSERT_TRUE((*j)->PutStorageClass(r).ok());
    r.step = "sc-creating";
    ASSERT_TRUE((*j)->PutStorageClass(r).ok());
  }
  auto j = MigrationJournal::Open(dir_);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto got = (*j)->GetStorageClass("fast");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  EXPECT_EQ((*got)->step, "sc-creating");
  EXPECT_EQ((*got)->state, RecordState::kInProgress);
  EXPECT_EQ((*got)->original, original);
  EXPECT_EQ((*got)->twin, twin);
  auto missing = (*j)->GetStorageClass("other");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  auto history = (*j)->History("storageclass:fast");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].step, "sc-deleting");
  auto list = (*j)->ListStorageClasses();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
  EXPECT_TRUE((*j)->List()->empty());  // no PV rows from it
}

}  // namespace
}  // namespace flexcsi::migrate
