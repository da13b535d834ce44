#include "controller/intent_journal.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

TEST(IntentJournal, RowsSurviveReopenUntilFinished) {
  char tmpl[] = "/tmp/flexcsi-journal-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/journal.db";
  {
    auto j = IntentJournal::Open(path);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    std::string request("\0binary\xff", 8);
    ASSERT_TRUE((*j)->Begin({"pvc-1", "ns", "c1", "1", "flexcsi/loopback", request, ""}).ok());
    ASSERT_TRUE((*j)->Begin({"pvc-2", "ns", "c2", "2", "flexcsi/loopback", "r", ""}).ok());
    ASSERT_TRUE((*j)->SetVolumeId("pvc-1", "vol-1").ok());
  }
  auto j = IntentJournal::Open(path);
  ASSERT_TRUE(j.ok());
  auto rows = (*j)->List();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].volume_id, "vol-1");
  EXPECT_EQ((*rows)[0].request, std::string("\0binary\xff", 8));
  ASSERT_TRUE((*j)->Finish("pvc-1").ok());
  auto one = (*j)->Find("pvc-1");
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->has_value());
  EXPECT_EQ((*j)->List()->size(), 1u);
  std::filesystem::remove_all(tmpl);
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(IntentJournal, TheJournalIsPrivateAndAnOldOneIsTightened) {
  char tmpl[] = "/tmp/journal-modes-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  // A fresh path: the directory is created 0700, the files 0600 whatever the umask.
  const std::string dir = std::string(tmpl) + "/flexcsi-controller";
  const std::string path = dir + "/journal.db";
  const mode_t old_umask = ::umask(0);
  {
    auto j = IntentJournal::Open(path);
    ::umask(old_umask);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    ASSERT_TRUE((*j)->Begin({"pvc-1", "ns", "c1", "1", "flexcsi/loopback", "r", ""}).ok());
    EXPECT_EQ(ModeOf(dir), 0700u);
    EXPECT_EQ(ModeOf(path), 0600u);
    EXPECT_EQ(ModeOf(path + "-wal"), 0600u);
    EXPECT_EQ(ModeOf(path + "-shm"), 0600u);
  }
  // A journal an older flexcsi-controller left world-readable in a 0755 directory.
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto j = IntentJournal::Open(path);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ((*j)->List()->size(), 1u);
  // The parent the operator chose (here the temp dir) is never changed.
  EXPECT_EQ(ModeOf(tmpl), 0700u);  // mkdtemp's
  std::filesystem::remove_all(tmpl);
}

TEST(IntentJournal, UnwritablePathIsAClearError) {
  auto j = IntentJournal::Open("/proc/no/such/dir/journal.db");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("/proc/no/such/dir/journal.db"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi::controller
