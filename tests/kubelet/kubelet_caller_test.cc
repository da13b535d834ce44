#include "tests/kubelet/kubelet_caller.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace kubelet {
namespace {

// flexvolume.md section 7.1, the mount options "exactly as emitted".
TEST(KubeletCallerTest, MountOptionsMatchSpecExampleByteForByte) {
  FlexVolumeSource v;
  v.volume_name = "pv-data";
  v.fs_type = "ext4";
  v.options = {{"volumeID", "vol-0123"}};
  v.secret = {{"username", "admin"}, {"password", "s3cr3t"}};
  PodInfo pod{"web-0", "shop", "6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10", "default", 2000};
  EXPECT_EQ(
      R"({"kubernetes.io/fsType":"ext4","kubernetes.io/mounterArgs.FsGroup":"2000",)"
      R"("kubernetes.io/pod.name":"web-0","kubernetes.io/pod.namespace":"shop",)"
      R"("kubernetes.io/pod.uid":"6f1c2a4e-0d3b-4f55-9a8e-2b7c1d9e4f10",)"
      R"("kubernetes.io/pvOrVolumeName":"pv-data","kubernetes.io/readwrite":"rw",)"
      R"("kubernetes.io/secret/password":"czNjcjN0","kubernetes.io/secret/username":"YWRtaW4=",)"
      R"("kubernetes.io/serviceAccount.name":"default","volumeID":"vol-0123"})",
      MountOptionsJson(v, pod));
  EXPECT_EQ(R"({"kubernetes.io/fsType":"ext4","kubernetes.io/pvOrVolumeName":"pv-data",)"
            R"("kubernetes.io/readwrite":"rw","volumeID":"vol-0123"})",
            BaseOptionsJson(v));
}

TEST(KubeletCallerTest, UserOptionsOverrideKubernetesKeys) {
  FlexVolumeSource v;
  v.volume_name = "n";
  v.read_only = true;
  v.options = {{"kubernetes.io/readwrite", "rw"}};
  EXPECT_NE(std::string::npos, BaseOptionsJson(v).find(R"("kubernetes.io/readwrite":"rw")"));
}

TEST(KubeletCallerTest, PathsFollowKubeletLayout) {
  EXPECT_EQ("/var/lib/kubelet/pods/u1/volumes/foo~bar/pv-data",
            PodVolumeDir("/var/lib/kubelet", "u1", "foo/bar", "pv-data"));
  EXPECT_EQ("/var/lib/kubelet/plugins/kubernetes.io/flexvolume/foo/bar/mounts/pv-data",
            DeviceMountPath("/var/lib/kubelet", "foo/bar", "pv-data"));
}

using Outcome = DriverResult::Outcome;

TEST(KubeletCallerTest, ReplyParsingFollowsKubelet) {
  EXPECT_EQ(Outcome::kSuccess, ParseDriverOutput("mount", "{\"status\":\"Success\"}\n", 0).outcome);
  EXPECT_EQ(Outcome::kSuccess, ParseDriverOutput("mount", " {\"STATUS\":\"Success\"} ", 0).outcome);
  EXPECT_EQ(Outcome::kNotSupported,
            ParseDriverOutput("x", "{\"status\":\"Not supported\"}", 1).outcome);
  // Success with a non-zero exit is the exec error.
  DriverResult bug = ParseDriverOutput("mount", "{\"status\":\"Success\"}", 1);
  EXPECT_EQ(Outcome::kFailure, bug.outcome);
  EXPECT_EQ("exit status 1", bug.error);
  DriverResult fail =
      ParseDriverOutput("mount", "{\"status\":\"Failure\",\"message\":\"boom\"}", 1);
  EXPECT_EQ("mount command failed, status: Failure, reason: boom", fail.error);
  // A log line before the JSON, empty output, wrong types: all failures.
  EXPECT_EQ(Outcome::kFailure,
            ParseDriverOutput("mount", "I1121 log\n{\"status\":\"Success\"}", 0).outcome);
  EXPECT_EQ("unexpected end of JSON input", ParseDriverOutput("mount", "", 0).error);
  EXPECT_EQ(
      Outcome::kFailure,
      ParseDriverOutput("isattached", "{\"status\":\"Success\",\"attached\":\"true\"}", 0).outcome);
  EXPECT_EQ(Outcome::kFailure,
            ParseDriverOutput("init", "{\"status\":\"Success\",\"capabilities\":{\"attach\":1}}", 0)
                .outcome);
  EXPECT_EQ(Outcome::kFailure, ParseDriverOutput("mount", "{}", 0).outcome);
}

// pkg/volume/util HasMountRefs: a reference whose path contains the device mount path does not
// count; any other does and blocks unmountdevice.
TEST(KubeletCallerTest, MountRefsBlockUnmountDevice) {
  const std::string dmp = "/k/plugins/kubernetes.io/flexvolume/v/d/mounts/pv";
  EXPECT_FALSE(HasMountRefs(dmp, {}));
  EXPECT_FALSE(HasMountRefs(dmp, {dmp + "/sub"}));
  EXPECT_TRUE(HasMountRefs(dmp, {"/k/pods/u/volumes/v~d/pv"}));
  // A path that does not exist has no references (mount-utils answers an empty list).
  EXPECT_TRUE(GetMountRefs("/nonexistent/flexcsi/path").empty());
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi
