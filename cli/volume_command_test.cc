#include "cli/volume_command.h"

#include <sstream>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(VolumeCommandTest, ParsesKubernetesStyleQuantities) {
  EXPECT_EQ(*ParseByteQuantity("1048576"), 1048576);
  EXPECT_EQ(*ParseByteQuantity("64Mi"), 64LL << 20);
  EXPECT_EQ(*ParseByteQuantity("2Gi"), 2LL << 30);
  EXPECT_EQ(*ParseByteQuantity("500M"), 500000000LL);
  EXPECT_EQ(*ParseByteQuantity("1Ti"), 1LL << 40);
}

TEST(VolumeCommandTest, RejectsQuantitiesItCannotRead) {
  for (const char* bad : {"", "Mi", "-1", "1.5Gi", "64MB", "1Xi", "99999999999999999999"}) {
    EXPECT_FALSE(ParseByteQuantity(bad).ok()) << bad;
  }
}

TEST(VolumeCommandTest, CreateNeedsEndpointAndName) {
  std::ostringstream out, err;
  EXPECT_NE(RunVolumeCommand({"create", "--name", "v"}, out, err), 0);
  EXPECT_NE(err.str().find("endpoint"), std::string::npos) << err.str();
  EXPECT_TRUE(out.str().empty());
}

TEST(VolumeCommandTest, UnreachableDriverIsAClearFailure) {
  std::ostringstream out, err;
  EXPECT_EQ(RunVolumeCommand({"create", "--endpoint", "unix:///nonexistent/csi.sock", "--name",
                              "v", "--size", "1Mi", "--timeout", "3"},
                             out, err),
            1);
  EXPECT_TRUE(out.str().empty());
  EXPECT_NE(err.str().find("CreateVolume"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace flexcsi
