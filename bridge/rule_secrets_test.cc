// CallSecrets without a cluster: what the rule makes from options and defaults, what kubelet
// passed, and the error when a rule names a Secret but the bridge has no cluster access.
// Reading real Secrets is proven on real clusters (tests/cluster/cephfs_suite_test.py).
#include "bridge/rule_secrets.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

using Map = std::map<std::string, std::string>;

TEST(CallSecretsTest, KubeletsSecretsOverTheRulesOwnKeys) {
  translator::CsiVolume volume;
  volume.secret_values = {{"userID", "admin"}, {"kept", "k"}};
  FlexOptions options;
  options.secrets = {{"userID", "from-kubelet"}, {"userKey", "key"}};
  auto got = CallSecrets(volume, options, CallIdentity{}, nullptr);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (Map{{"userID", "from-kubelet"}, {"userKey", "key"}, {"kept", "k"}}));
}

TEST(CallSecretsTest, ARuleThatReadsASecretFailsClearlyWithoutClusterAccess) {
  translator::CsiVolume volume;
  volume.read_secret = translator::SecretReference{"ceph-user", ""};
  FlexOptions options;
  options.pod_namespace = "app";
  SecretReader reader(nullptr, "no cluster access: no kubeconfig in the configuration");
  auto got = CallSecrets(volume, options, CallIdentity{}, &reader);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(got.status().message(),
            "the mapping rule names a Secret for the bridge to read, but the bridge cannot read "
            "it: no cluster access: no kubeconfig in the configuration");
}

}  // namespace
}  // namespace flexcsi
