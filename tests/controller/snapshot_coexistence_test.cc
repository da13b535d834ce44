// flexcsi-controller next to the community snapshot-controller, against the fake API server:
// what snapshot-controller leaves behind when it sees a VolumeSnapshot of a FlexVolume claim
// before our content (its SnapshotContentCreationFailed status.error, its finalizers) is
// cleared or kept as it expects, nothing is rewritten over and over, and contents that are not
// ours (pre-provisioned, or made by snapshot-controller for CSI PVs) are never touched.
#include <thread>

#include <gtest/gtest.h>

#include "tests/controller/e2e_test_util.h"

namespace flexcsi::controller_test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kGroup = "snapshot.storage.k8s.io/v1";

class SnapshotCoexistence : public WorldTest {
 protected:
  static kube::ResourcePath Snapshots(const std::string& ns) {
    return kube::ResourcePath::Group(kGroup, "volumesnapshots", ns);
  }
  static kube::ResourcePath Contents() {
    return kube::ResourcePath::Group(kGroup, "volumesnapshotcontents");
  }
  static nlohmann::json Get(const kube::ResourcePath& path) {
    auto r = W().api().Get(path);
    return r.ok() ? *r : nlohmann::json();
  }
};

TEST_F(SnapshotCoexistence, SnapshotControllersLeftoversAreClearedOnceAndForeignContentsKept) {
  W().CreateNamespace("coexist");
  W().CreateStorageClass("coexist");
  auto cls = W().api().Create(kube::ResourcePath::Group(kGroup, "volumesnapshotclasses"),
                              {{"apiVersion", kGroup},
                               {"kind", "VolumeSnapshotClass"},
                               {"metadata", {{"name", "coexist"}}},
                               {"driver", kProvisioner},
                               {"deletionPolicy", "Delete"}});
  ASSERT_TRUE(cls.ok() || kube::IsAlreadyExists(cls.status())) << cls.status().ToString();
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("coexist", "data", "16Mi", "coexist");
  ASSERT_TRUE(W().WaitBound("coexist", "data"));
  const std::string pv_name = W().GetClaim("coexist", "data")["spec"]["volumeName"];

  // Contents that are not ours, of our driver: pre-provisioned (snapshot not created yet, ref
  // without uid) and one snapshot-controller made for a CSI PV (its snapshot is gone).
  for (const auto& [name, source] :
       {std::make_pair(std::string("pre-provisioned"),
                       nlohmann::json{{"snapshotHandle", "made-elsewhere"}}),
        std::make_pair(std::string("snapcontent-of-a-csi-pv"),
                       nlohmann::json{{"volumeHandle", "csi-volume"}})}) {
    nlohmann::json ref = {{"kind", "VolumeSnapshot"},
                          {"apiVersion", kGroup},
                          {"namespace", "coexist"},
                          {"name", name == "pre-provisioned" ? "later" : "gone"}};
    if (name != "pre-provisioned") ref["uid"] = "00000000-0000-0000-0000-000000000001";
    auto c = W().api().Create(Contents(), {{"apiVersion", kGroup},
                                           {"kind", "VolumeSnapshotContent"},
                                           {"metadata", {{"name", name}}},
                                           {"spec",
                                            {{"driver", kProvisioner},
                                             {"deletionPolicy", "Delete"},
                                             {"source", source},
                                             {"volumeSnapshotRef", ref}}}});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
  }

  // snapshot-controller's first pass, won before our content reached its cache: its
  // finalizers on the snapshot and the claim, and the error in the snapshot's status.
  W().KillController(0, SIGTERM);
  ASSERT_TRUE(W().WaitControllerExit(0, 10s));
  auto made = W().api().Create(
      Snapshots("coexist"),
      {{"apiVersion", kGroup},
       {"kind", "VolumeSnapshot"},
       {"metadata",
        {{"name", "s1"},
         {"namespace", "coexist"},
         {"finalizers", {"snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"}}}},
       {"spec",
        {{"volumeSnapshotClassName", "coexist"},
         {"source", {{"persistentVolumeClaimName", "data"}}}}}});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto errored =
      W().api().Patch(Snapshots("coexist").Named("s1").Sub("status"), kube::PatchType::kMerge,
                      {{"status",
                        {{"error",
                          {{"message",
                            "Failed to create snapshot content with error cannot find CSI "
                            "PersistentVolumeSource for volume " +
                                pv_name},
                           {"time", "2026-01-01T00:00:00Z"}}}}}});
  ASSERT_TRUE(errored.ok()) << errored.status().ToString();
  const nlohmann::json finalizers = {"kubernetes.io/pvc-protection",
                                     "snapshot.storage.kubernetes.io/pvc-as-source-protection"};
  auto claim_finalizer =
      W().api().Patch(kube::ResourcePath::Core("persistentvolumeclaims", "coexist").Named("data"),
                      kube::PatchType::kMerge, {{"metadata", {{"finalizers", finalizers}}}});
  ASSERT_TRUE(claim_finalizer.ok()) << claim_finalizer.status().ToString();

  ASSERT_TRUE(W().StartController());
  ASSERT_TRUE(W().WaitFor([&] {
    const auto s = Get(Snapshots("coexist").Named("s1"));
    return s.is_object() && s["status"].value("readyToUse", false);
  })) << Get(Snapshots("coexist").Named("s1")).dump();
  ASSERT_TRUE(W().WaitFor(
      [&] { return !Get(Snapshots("coexist").Named("s1"))["status"].contains("error"); }, 5s))
      << "the stale snapshot-controller error stayed: "
      << Get(Snapshots("coexist").Named("s1")).dump();
  const auto snap = Get(Snapshots("coexist").Named("s1"));
  const std::string content_name = snap["status"]["boundVolumeSnapshotContentName"];
  EXPECT_EQ(content_name, "snapcontent-" + snap["metadata"]["uid"].get<std::string>())
      << "the name snapshot-controller looks for";
  const auto content = Get(Contents().Named(content_name));
  EXPECT_EQ(content["metadata"]["annotations"].value("flexcsi.io/managed-by", ""),
            "flexcsi-controller");
  EXPECT_FALSE(content["spec"]["source"].value("volumeHandle", "").empty())
      << "snapshot-controller takes a content with a snapshotHandle source for a mismatch";
  EXPECT_NE(snap["metadata"]["finalizers"].dump().find("volumesnapshot-as-source-protection"),
            std::string::npos)
      << "snapshot-controller's finalizer is its own to remove";
  EXPECT_NE(W().GetClaim("coexist", "data")["metadata"]["finalizers"].dump().find(
                "pvc-as-source-protection"),
            std::string::npos);

  // Settled: several resyncs later nothing of these was written again.
  const std::string snap_version = snap["metadata"]["resourceVersion"];
  const std::string content_version =
      Get(Contents().Named(content_name))["metadata"]["resourceVersion"];
  const auto pre = Get(Contents().Named("pre-provisioned"));
  const auto csi = Get(Contents().Named("snapcontent-of-a-csi-pv"));
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(Get(Snapshots("coexist").Named("s1"))["metadata"]["resourceVersion"], snap_version);
  EXPECT_EQ(Get(Contents().Named(content_name))["metadata"]["resourceVersion"], content_version);
  for (const auto& before : {pre, csi}) {
    const auto now = Get(Contents().Named(before["metadata"]["name"]));
    ASSERT_TRUE(now.is_object()) << "deleted a content that is not ours: " << before.dump();
    EXPECT_EQ(now["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"])
        << "touched a content that is not ours: " << now.dump();
  }
  EXPECT_EQ(W().DriverSnapshots().size(), 1u) << "one snapshot, made once";

  // Clean up: ours goes with the snapshot; the foreign ones are removed by the test.
  ASSERT_TRUE(W().api().Delete(Snapshots("coexist").Named("s1")).ok());
  for (const char* name : {"pre-provisioned", "snapcontent-of-a-csi-pv"}) {
    EXPECT_TRUE(W().api().Delete(Contents().Named(name)).ok());
  }
}

}  // namespace
}  // namespace flexcsi::controller_test
