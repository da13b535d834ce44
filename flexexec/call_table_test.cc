#include "flexexec/call_table.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

size_t ArgCount(const std::string& call) { return FindForwardedCall(call)->args.size(); }

TEST(CallTableTest, ArgCountsMatchKubelet) {
  EXPECT_EQ(2u, ArgCount("attach"));
  EXPECT_EQ(2u, ArgCount("isattached"));
  EXPECT_EQ(2u, ArgCount("detach"));
  EXPECT_EQ(2u, ArgCount("waitforattach"));
  EXPECT_EQ(3u, ArgCount("mountdevice"));
  EXPECT_EQ(1u, ArgCount("unmountdevice"));
  EXPECT_EQ(2u, ArgCount("mount"));
  EXPECT_EQ(1u, ArgCount("unmount"));
  EXPECT_EQ(4u, ArgCount("expandvolume"));
  EXPECT_EQ(5u, ArgCount("expandfs"));
}

TEST(CallTableTest, LocalAndUnknownCallsAreNotForwarded) {
  EXPECT_EQ(nullptr, FindForwardedCall("init"));
  EXPECT_EQ(nullptr, FindForwardedCall("getvolumename"));
  EXPECT_EQ(nullptr, FindForwardedCall("waitfordetach"));
  EXPECT_EQ(nullptr, FindForwardedCall("MOUNT"));
}

TEST(CallTableTest, WrongCountNamesExpectedArgv) {
  Status s = CheckCallArgs(*FindForwardedCall("mount"), {"/pods/x"});
  EXPECT_EQ(Code::kInvalidArgument, s.code());
  EXPECT_EQ(
      "mount expects 2 arguments, got 1; usage: <driver> mount <pod volume dir> "
      "<json options>",
      s.message());
  EXPECT_TRUE(CheckCallArgs(*FindForwardedCall("unmount"), {"/pods/x"}).ok());
  EXPECT_FALSE(CheckCallArgs(*FindForwardedCall("unmount"), {"/pods/x", "{}"}).ok());
}

}  // namespace
}  // namespace flexcsi
