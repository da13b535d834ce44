#include "controller/provisioner_lock.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

TEST(ExternalProvisionerLockName, IsTheSanitisedProvisionerName) {
  EXPECT_EQ(ExternalProvisionerLockName("loopback.csi.flexcsi.io"), "loopback-csi-flexcsi-io");
  EXPECT_EQ(ExternalProvisionerLockName("example.com/disk"), "example-com-disk");
  EXPECT_EQ(ExternalProvisionerLockName("ebs.csi.aws.com"), "ebs-csi-aws-com");
  // A name ending in a replaced character gets an 'X': Kubernetes names may not end in '-'.
  EXPECT_EQ(ExternalProvisionerLockName("odd_driver_"), "odd-driver-X");
  EXPECT_EQ(ExternalProvisionerLockName("Mixed-Case9"), "Mixed-Case9");
}

TEST(DefaultLockNamespace, IsPodNamespaceElseTheServiceAccountsElseDefault) {
  EXPECT_EQ(DefaultLockNamespace("", "/nonexistent/namespace"), "default");
  EXPECT_EQ(DefaultLockNamespace("kube-system", "/nonexistent/namespace"), "kube-system");
  char path[] = "/tmp/flexcsi-lock-ns-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  { std::ofstream(path) << "flexcsi\n"; }
  EXPECT_EQ(DefaultLockNamespace("", path), "flexcsi");
  EXPECT_EQ(DefaultLockNamespace("other", path), "other");  // the variable comes first
  { std::ofstream(path) << ""; }
  EXPECT_EQ(DefaultLockNamespace("", path), "default");
  std::remove(path);
}

}  // namespace
}  // namespace flexcsi::controller
