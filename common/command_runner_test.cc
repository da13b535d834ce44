#include "common/command_runner.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(CommandRunnerTest, CapturesStdoutOfSuccessfulCommand) {
  StatusOr<std::string> out = RunCommand({"echo", "hello"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "hello\n");
}

TEST(CommandRunnerTest, ArgumentsAreNeverInterpretedByAShell) {
  StatusOr<std::string> out = RunCommand({"echo", "a b;c $(id) `x` > y"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "a b;c $(id) `x` > y\n");
}

TEST(CommandRunnerTest, FailureCarriesExitCodeAndStderr) {
  StatusOr<std::string> out = RunCommand({"ls", "/definitely/not/here"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInternal);
  EXPECT_NE(out.status().message().find("/definitely/not/here"), std::string::npos);
  EXPECT_NE(out.status().message().find("exit code"), std::string::npos);
}

TEST(CommandRunnerTest, CaptureReturnsNonZeroExitWithoutError) {
  StatusOr<CommandOutput> out = RunCommandCapture({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->stdout_text, "out\n");
  EXPECT_EQ(out->stderr_text, "err\n");
}

TEST(CommandRunnerTest, LargeOutputOnBothStreamsDoesNotDeadlock) {
  // 1 MiB on each stream overflows any pipe buffer; both must be drained concurrently.
  StatusOr<CommandOutput> out =
      RunCommandCapture({"sh", "-c", "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->stdout_text.size(), 1048576u);
  EXPECT_EQ(out->stderr_text.size(), 1048576u);
}

TEST(CommandRunnerTest, ChildRunsInTheCLocale) {
  StatusOr<std::string> out = RunCommand({"sh", "-c", "echo $LC_ALL"});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "C\n");
}

TEST(CommandRunnerTest, ExtraEnvironmentReachesTheChildNotItsArgv) {
  StatusOr<CommandOutput> out = RunCommandCapture(
      {"sh", "-c", "echo \"$FLEXCSI_SECRET\"; cat /proc/$$/cmdline"}, kDefaultCommandTimeout,
      {{"FLEXCSI_SECRET", "s3cr3t value"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->stdout_text.substr(0, out->stdout_text.find('\n')), "s3cr3t value");
  EXPECT_EQ(out->stdout_text.find("s3cr3t", out->stdout_text.find('\n')), std::string::npos);
}

TEST(CommandRunnerTest, EnvironmentNameWithEqualsIsInvalid) {
  StatusOr<CommandOutput> out =
      RunCommandCapture({"true"}, kDefaultCommandTimeout, {{"A=B", "c"}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
}

TEST(CommandRunnerTest, UnknownCommandIsNotFound) {
  StatusOr<std::string> out = RunCommand({"no-such-tool-flexcsi"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kNotFound);
}

TEST(CommandRunnerTest, EmptyArgvIsInvalid) {
  EXPECT_EQ(RunCommand({}).status().code(), Code::kInvalidArgument);
}

TEST(CommandRunnerTest, CommandPastItsTimeoutIsKilled) {
  StatusOr<std::string> out = RunCommand({"sleep", "30"}, std::chrono::milliseconds(200));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kDeadlineExceeded);
}

TEST(CommandRunnerTest, FindsSbinToolsWithoutPath) {
  // losetup lives in /usr/sbin; the lookup must not depend on the caller's PATH.
  StatusOr<CommandOutput> out = RunCommandCapture({"losetup", "--version"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 0);
}

}  // namespace
}  // namespace flexcsi
