#include "flexexec/driver_name.h"

#include <limits.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(DriverNameTest, TildeBecomesSlash) {
  EXPECT_EQ("flexcsi/loopback", *DriverNameFromDirectory("/p/flexcsi~loopback"));
  EXPECT_EQ("a/b/c", *DriverNameFromDirectory("/p/a~b~c"));
  EXPECT_EQ("cifs", *DriverNameFromDirectory("/p/cifs"));
  EXPECT_EQ("foo/bar", *DriverNameFromDirectory("foo~bar/"));
}

TEST(DriverNameTest, RejectsHiddenEmptyAndDotNames) {
  EXPECT_FALSE(DriverNameFromDirectory("/p/.hidden~x").ok());
  EXPECT_FALSE(DriverNameFromDirectory("/").ok());
  EXPECT_FALSE(DriverNameFromDirectory(".").ok());
  EXPECT_FALSE(DriverNameFromDirectory("/p/a~~b").ok());
  EXPECT_FALSE(DriverNameFromDirectory("/p/~b").ok());
  EXPECT_FALSE(DriverNameFromDirectory("/p/a~").ok());
}

TEST(DriverNameTest, DirectoryComesFromArgv0) {
  // A symlink or copy named .../vendor~name/name must be named after its own directory.
  EXPECT_EQ("/usr/libexec/kubernetes/kubelet-plugins/volume/exec/flexcsi~loopback",
            ExecutableDirectory(
                "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/flexcsi~loopback/loopback"));
  EXPECT_EQ("/p/v~n", ExecutableDirectory("/p/v~n//n"));
}

TEST(DriverNameTest, RelativeArgv0UsesWorkingDirectory) {
  char buf[PATH_MAX];
  ASSERT_NE(nullptr, ::getcwd(buf, sizeof(buf)));
  EXPECT_EQ(std::string(buf), ExecutableDirectory("./loopback"));
  EXPECT_EQ("v~n", ExecutableDirectory("v~n/n"));
}

TEST(DriverNameTest, BareArgv0FallsBackToProcSelfExe) {
  // Never done by kubelet (it passes the full path); only makes manual runs behave.
  std::string dir = ExecutableDirectory("flexexec_test");
  EXPECT_FALSE(dir.empty());
  EXPECT_EQ('/', dir[0]);
}

}  // namespace
}  // namespace flexcsi
