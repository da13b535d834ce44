#include "bridge/kubelet_root_check.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

class KubeletRootCheckTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kubelet-root-check-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    rmdir((root_ + "/pods").c_str());
    rmdir((root_ + "/plugins").c_str());
    rmdir(root_.c_str());
  }
  void Make(const char* sub) { ASSERT_EQ(mkdir((root_ + "/" + sub).c_str(), 0750), 0); }

  std::string root_;
};

TEST_F(KubeletRootCheckTest, ADirectoryKubeletNeverStartedInIsRefusedNamingTheSetting) {
  // What a node with /var/lib/kubelet left over (or made by hand) while kubelet runs elsewhere
  // looks like.
  Status s = CheckKubeletRootIsKubelets(root_);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("kubeletRoot " + root_ +
                             " is not kubelet's root dir: it has no "
                             "pods/ and plugins/"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--root-dir"), std::string::npos) << s.message();
}

TEST_F(KubeletRootCheckTest, EachMissingDirIsNamed) {
  Make("pods");
  Status s = CheckKubeletRootIsKubelets(root_);
  EXPECT_NE(s.message().find("it has no plugins/ ("), std::string::npos) << s.message();
}

TEST_F(KubeletRootCheckTest, AMissingRootIsRefused) {
  Status s = CheckKubeletRootIsKubelets(root_ + "/absent");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("is not a directory"), std::string::npos) << s.message();
}

TEST_F(KubeletRootCheckTest, KubeletsRootPasses) {
  Make("pods");
  Make("plugins");
  EXPECT_TRUE(CheckKubeletRootIsKubelets(root_).ok());
}

TEST_F(KubeletRootCheckTest, TheWatchTurnsReadyOnceKubeletHasMadeItsDirs) {
  // A bridge started before kubelet's first start on a new node.
  KubeletRootWatch watch(root_);
  EXPECT_FALSE(watch.Check().ok());
  EXPECT_FALSE(watch.Check().ok());
  Make("pods");
  Make("plugins");
  EXPECT_TRUE(watch.Check().ok());
}

TEST(KubeletRootWatchTest, NoRootAlwaysPasses) {
  // kubeletRoot: none, the control-plane bridge: it mounts nothing.
  EXPECT_TRUE(KubeletRootWatch("").Check().ok());
}

}  // namespace
}  // namespace flexcsi
