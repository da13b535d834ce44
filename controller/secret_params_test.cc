#include "controller/secret_params.h"

#include <gtest/gtest.h>

#include "csi.pb.h"

namespace flexcsi::controller {
namespace {

nlohmann::json Claim() {
  return {{"metadata",
           {{"name", "data"},
            {"namespace", "team-a"},
            {"uid", "u1"},
            {"annotations", {{"example.com/secret", "per-claim"}}}}}};
}

TEST(SecretParams, ResolvesTemplatesLikeExternalProvisioner) {
  const nlohmann::json claim = Claim();
  std::map<std::string, std::string> params = {
      {"csi.storage.k8s.io/node-stage-secret-name", "${pvc.name}-${pv.name}"},
      {"csi.storage.k8s.io/node-stage-secret-namespace", "${pvc.namespace}"}};
  auto ref = ResolveSecretRef(SecretKind::kNodeStage, params, "pvc-u1", &claim);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  ASSERT_TRUE(ref->has_value());
  EXPECT_EQ((*ref)->name, "data-pvc-u1");
  EXPECT_EQ((*ref)->namespace_, "team-a");
}

TEST(SecretParams, AnnotationsOnlyForNodeAndPublishSecrets) {
  const nlohmann::json claim = Claim();
  std::map<std::string, std::string> node = {
      {"csi.storage.k8s.io/node-publish-secret-name", "${pvc.annotations['example.com/secret']}"},
      {"csi.storage.k8s.io/node-publish-secret-namespace", "kube-system"}};
  auto ref = ResolveSecretRef(SecretKind::kNodePublish, node, "pvc-u1", &claim);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ((*ref)->name, "per-claim");

  std::map<std::string, std::string> prov = {
      {"csi.storage.k8s.io/provisioner-secret-name", "${pvc.annotations['example.com/secret']}"},
      {"csi.storage.k8s.io/provisioner-secret-namespace", "kube-system"}};
  auto refused = ResolveSecretRef(SecretKind::kProvisioner, prov, "pvc-u1", &claim);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not available"), std::string::npos);
}

TEST(SecretParams, NamespaceMayNotUseClaimName) {
  const nlohmann::json claim = Claim();
  std::map<std::string, std::string> params = {
      {"csi.storage.k8s.io/provisioner-secret-name", "x"},
      {"csi.storage.k8s.io/provisioner-secret-namespace", "${pvc.name}"}};
  EXPECT_FALSE(ResolveSecretRef(SecretKind::kProvisioner, params, "pv", &claim).ok());
}

TEST(SecretParams, HalfAPairOrBothSpellingsFail) {
  std::map<std::string, std::string> half = {{"csi.storage.k8s.io/provisioner-secret-name", "x"}};
  auto r = ResolveSecretRef(SecretKind::kProvisioner, half, "pv", nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("together"), std::string::npos);
  std::map<std::string, std::string> both = {
      {"csi.storage.k8s.io/provisioner-secret-name", "x"},
      {"csi.storage.k8s.io/provisioner-secret-namespace", "y"},
      {"csiProvisionerSecretName", "x"},
      {"csiProvisionerSecretNamespace", "y"}};
  EXPECT_FALSE(ResolveSecretRef(SecretKind::kProvisioner, both, "pv", nullptr).ok());
}

TEST(SecretParams, DefaultPairAppliesToEveryKind) {
  std::map<std::string, std::string> params = {{"csi.storage.k8s.io/secret-name", "creds"},
                                               {"csi.storage.k8s.io/secret-namespace", "ops"}};
  auto r = ResolveSecretRef(SecretKind::kControllerExpand, params, "pv", nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->name, "creds");
  auto none = ResolveSecretRef(SecretKind::kNodeStage, {}, "pv", nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(SecretParams, InvalidResolvedNameIsRefused) {
  const nlohmann::json claim = Claim();
  std::map<std::string, std::string> params = {
      {"csi.storage.k8s.io/node-stage-secret-name", "Bad_${pvc.name}"},
      {"csi.storage.k8s.io/node-stage-secret-namespace", "ops"}};
  auto r = ResolveSecretRef(SecretKind::kNodeStage, params, "pv", &claim);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a valid secret name"), std::string::npos);
}

// A VolumeSnapshotClass's snapshotter secret: literal names, no claim to take templates from.
TEST(SecretParams, SnapshotClassNamesTheSnapshotterSecretLiterally) {
  std::map<std::string, std::string> params = {
      {"clusterID", "rook-ceph"},
      {"csi.storage.k8s.io/snapshotter-secret-name", "provisioner"},
      {"csi.storage.k8s.io/snapshotter-secret-namespace", "ceph-csi"}};
  auto r = ResolveSecretRef(SecretKind::kSnapshotter, params, "", nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(((*r)->name + "/" + (*r)->namespace_), "provisioner/ceph-csi");
  params["csi.storage.k8s.io/snapshotter-secret-name"] = "${volumesnapshot.name}";
  auto templated = ResolveSecretRef(SecretKind::kSnapshotter, params, "", nullptr);
  ASSERT_FALSE(templated.ok());
  EXPECT_NE(templated.status().message().find("${volumesnapshot.name}"), std::string::npos);
}

// Issue 46: a driver that echoes its request must not put the request's secrets into the
// ProvisioningFailed / VolumeResizeFailed / SnapshotCreationFailed event (or a log line).
TEST(SecretParams, ADriverErrorLosesTheSecretValuesOfItsRequest) {
  csi::v1::CreateVolumeRequest request;
  (*request.mutable_secrets())["userKey"] = "AQDx9s3cr3tK3y==";
  (*request.mutable_secrets())["userID"] = "admin";
  (*request.mutable_secrets())["pin"] = "42";  // too short to redact without eating words
  const Status driver(
      Code::kUnauthenticated,
      "rbd: auth failed for admin with key AQDx9s3cr3tK3y== (key AQDx9s3cr3tK3y==)");
  const Status redacted = WithSecretsRedacted(driver, request.secrets());
  EXPECT_EQ(redacted.code(), Code::kUnauthenticated);
  EXPECT_EQ(redacted.message(),
            "rbd: auth failed for <redacted> with key <redacted> (key <redacted>)");
  // What Provisioner::Failed writes as the event's message.
  const std::string event = "failed to provision volume with StorageClass \"fast\": " +
                            redacted.message();
  EXPECT_EQ(event.find("AQDx9s3cr3tK3y=="), std::string::npos) << event;

  std::map<std::string, std::string> snapshotter = {{"password", "hunter22"}};
  EXPECT_EQ(WithSecretsRedacted(Status(Code::kInternal, "login hunter22"), snapshotter).message(),
            "login <redacted>");
  // No secrets, or no error: unchanged.
  EXPECT_EQ(WithSecretsRedacted(driver, csi::v1::DeleteVolumeRequest().secrets()).message(),
            driver.message());
  EXPECT_TRUE(WithSecretsRedacted(Status::Ok(), snapshotter).ok());
}

}  // namespace
}  // namespace flexcsi::controller
