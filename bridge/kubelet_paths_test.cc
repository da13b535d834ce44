#include "bridge/kubelet_paths.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(KubeletPathsTest, AcceptsPathsBelowTheRootAndNormalisesThem) {
  auto p = CheckUnderKubeletRoot("/var/lib/kubelet//pods/u1/./volumes/foo~bar/pv/",
                                 "/var/lib/kubelet");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, "/var/lib/kubelet/pods/u1/volumes/foo~bar/pv");
}

TEST(KubeletPathsTest, RefusesEverythingElse) {
  for (const char* bad : {"", "relative/path", "/var/lib/kubelet", "/var/lib/kubelet/",
                          "/var/lib/kubeletX/pods", "/etc/passwd",
                          "/var/lib/kubelet/pods/../../../etc"}) {
    auto p = CheckUnderKubeletRoot(bad, "/var/lib/kubelet");
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(KubeletPathsTest, RefusesASymlinkThatLeadsOutOfTheRoot) {
  char tmpl[] = "/tmp/kubelet-paths-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = std::string(tmpl) + "/root";
  ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
  ASSERT_EQ(symlink("/etc", (root + "/escape").c_str()), 0);
  EXPECT_EQ(CheckUnderKubeletRoot(root + "/escape/x", root).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(CheckUnderKubeletRoot(root + "/pods/x", root).ok());
  unlink((root + "/escape").c_str());
  rmdir(root.c_str());
  rmdir(tmpl);
}

TEST(KubeletPathsTest, DeviceMountPathKeepsTheDriverSlash) {
  // flexvolume.md §5 example.
  EXPECT_EQ(DeviceMountPathFor("/var/lib/kubelet", "foo/bar", "pv-data"),
            "/var/lib/kubelet/plugins/kubernetes.io/flexvolume/foo/bar/mounts/pv-data");
}

TEST(KubeletPathsTest, BridgeStagingPathHashesTheVolumeHandle) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(BridgeStagingPathFor("/var/lib/kubelet", "d.example.com", "abc"),
            "/var/lib/kubelet/plugins/flexcsi/d.example.com/"
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad/globalmount");
}

}  // namespace
}  // namespace flexcsi
