#include "migrate/journal.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

namespace flexcsi::migrate {
namespace {

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
  auto perms = std::filesystem::status(dir_ + "/sub").permissions();
  EXPECT_EQ(perms & std::filesystem::perms::all, std::filesystem::perms::owner_all);
  auto db = std::filesystem::status(dir_ + "/sub/journal.db").permissions();
  EXPECT_EQ(db & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
            std::filesystem::perms::none);
}

}  // namespace
}  // namespace flexcsi::migrate
