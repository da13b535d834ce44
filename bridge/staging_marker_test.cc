// The staging marker's names: one per device mount path, because kubelet 1.10 counts mounts with
// the same source name as references of each other (cluster_node_suite_v1_10 shows two markers
// blocking each other's unmountdevice with one shared name).
#include "bridge/staging_marker.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(StagingMarkerTest, EveryPathHasASourceNameOfItsOwn) {
  const std::string a = "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/v/d/mounts/pv-a";
  const std::string b = "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/v/d/mounts/pv-b";
  EXPECT_NE(StagingMarkerSource(a), StagingMarkerSource(b));
  EXPECT_EQ(StagingMarkerSource(a), StagingMarkerSource(a));  // stable: found again after restart
  EXPECT_EQ(0u, StagingMarkerSource(a).rfind("flexcsi-staging-marker-", 0));
  EXPECT_TRUE(IsStagingMarkerSource(StagingMarkerSource(a)));
}

TEST(StagingMarkerTest, AnOlderBridgesMarkerIsStillRecognised) {
  EXPECT_TRUE(IsStagingMarkerSource("flexcsi-staging-marker"));
  EXPECT_FALSE(IsStagingMarkerSource("tmpfs"));
  EXPECT_FALSE(IsStagingMarkerSource("flexcsi-staging-marker-x"));
  EXPECT_FALSE(IsStagingMarkerSource("/dev/loop3"));
}

}  // namespace
}  // namespace flexcsi
