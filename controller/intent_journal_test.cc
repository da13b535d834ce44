#include "controller/intent_journal.h"

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

TEST(IntentJournal, UnwritablePathIsAClearError) {
  auto j = IntentJournal::Open("/proc/no/such/dir/journal.db");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("/proc/no/such/dir/journal.db"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi::controller
