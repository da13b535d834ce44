// Snapshots and restores through the snapshot.storage.k8s.io/v1 API, mounted for real through
// flexexec and the bridge by the kubelet-faithful caller; and expansion of a claim end to end.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/controller/e2e_test_util.h"

namespace flexcsi::controller_test {
namespace {

using namespace std::chrono_literals;
using kubelet::AttachableLifecycle;
using kubelet::Step;

class SnapshotsAndResize : public WorldTest {};

const kube::ResourcePath kSnapshots(const std::string& ns) {
  return kube::ResourcePath::Group("snapshot.storage.k8s.io/v1", "volumesnapshots", ns);
}

// Mounts `pv` for a pod, runs `with_dir` on the pod's volume dir, and tears everything down.
void WithMountedVolume(ControllerWorld& w, const nlohmann::json& pv, const std::string& pod,
                       const std::function<void(const std::string&)>& with_dir) {
  AttachableLifecycle life(&w.env().caller(), WorldTest::SourceOf(pv), w.env().Pod(pod),
                           w.env().Pod(pod + "-b"));
  for (Step s : {Step::kAttach, Step::kWaitForAttach, Step::kMountDevice, Step::kMountPodA}) {
    auto r = life.Run(s);
    ASSERT_TRUE(r.success()) << kubelet::StepName(s) << ": " << r.Describe();
  }
  with_dir(life.PodDir(Step::kMountPodA));
  for (Step s : {Step::kUnmountPodA, Step::kUnmountDevice, Step::kDetach}) {
    auto r = life.Run(s);
    EXPECT_TRUE(r.success()) << kubelet::StepName(s) << ": " << r.Describe();
  }
}

TEST_F(SnapshotsAndResize, RestoredSnapshotMountsWithTheData) {
  W().CreateNamespace("snap");
  W().CreateStorageClass("snap");
  auto cls = W().api().Create(
      kube::ResourcePath::Group("snapshot.storage.k8s.io/v1", "volumesnapshotclasses"),
      {{"apiVersion", "snapshot.storage.k8s.io/v1"},
       {"kind", "VolumeSnapshotClass"},
       {"metadata", {{"name", "loop"}}},
       {"driver", kProvisioner},
       {"deletionPolicy", "Delete"}});
  ASSERT_TRUE(cls.ok()) << cls.status().ToString();
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("snap", "origin", "32Mi", "snap");
  ASSERT_TRUE(W().WaitBound("snap", "origin"));
  const auto origin_pv = W().GetPV(W().GetClaim("snap", "origin")["spec"]["volumeName"]);

  WithMountedVolume(W(), origin_pv, "writer", [](const std::string& dir) {
    std::ofstream(dir + "/hello.txt") << "written before the snapshot\n";
  });

  auto snap = W().api().Create(kSnapshots("snap"),
                               {{"apiVersion", "snapshot.storage.k8s.io/v1"},
                                {"kind", "VolumeSnapshot"},
                                {"metadata", {{"name", "s1"}, {"namespace", "snap"}}},
                                {"spec",
                                 {{"volumeSnapshotClassName", "loop"},
                                  {"source", {{"persistentVolumeClaimName", "origin"}}}}}});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  ASSERT_TRUE(W().WaitFor([&] {
    auto s = W().api().Get(kSnapshots("snap").Named("s1"));
    return s.ok() && s->contains("status") && (*s)["status"].value("readyToUse", false);
  })) << W().api().Get(kSnapshots("snap").Named("s1"))->dump();
  const auto ready = *W().api().Get(kSnapshots("snap").Named("s1"));
  const std::string content_name = ready["status"]["boundVolumeSnapshotContentName"];
  auto content = W().api().Get(
      kube::ResourcePath::Group("snapshot.storage.k8s.io/v1", "volumesnapshotcontents")
          .Named(content_name));
  ASSERT_TRUE(content.ok());
  const std::string handle = (*content)["status"]["snapshotHandle"];
  EXPECT_EQ((*content)["spec"]["driver"], kProvisioner);
  EXPECT_EQ((*content)["status"]["restoreSize"], 32 << 20);
  ASSERT_EQ(W().DriverSnapshots().size(), 1u);
  EXPECT_EQ(W().DriverSnapshots()[0], handle);

  W().CreateClaim("snap", "restored", "32Mi", "snap",
                  {{"dataSource",
                    {{"apiGroup", "snapshot.storage.k8s.io"}, {"kind", "VolumeSnapshot"},
                     {"name", "s1"}}}});
  ASSERT_TRUE(W().WaitBound("snap", "restored"));
  const auto restored_pv = W().GetPV(W().GetClaim("snap", "restored")["spec"]["volumeName"]);
  EXPECT_NE(SourceOf(restored_pv).options["volumeID"], SourceOf(origin_pv).options["volumeID"]);
  std::string text;
  WithMountedVolume(W(), restored_pv, "reader", [&](const std::string& dir) {
    std::ifstream in(dir + "/hello.txt");
    std::getline(in, text);
  });
  EXPECT_EQ(text, "written before the snapshot");

  // Deleting the snapshot (deletionPolicy Delete) deletes it in the driver and the content.
  ASSERT_TRUE(W().api().Delete(kSnapshots("snap").Named("s1")).ok());
  EXPECT_TRUE(W().WaitFor([&] { return W().DriverSnapshots().empty(); }));
  EXPECT_TRUE(W().WaitFor([&] {
    return !W().api().Get(kube::ResourcePath::Group("snapshot.storage.k8s.io/v1",
                                                    "volumesnapshotcontents")
                              .Named(content_name))
                .ok();
  }));
  EXPECT_TRUE(W().WaitFor([&] { return !W().api().Get(kSnapshots("snap").Named("s1")).ok(); }));
}

TEST_F(SnapshotsAndResize, GrownClaimGrowsTheDriverVolume) {
  W().CreateNamespace("grow");
  W().CreateStorageClass("grow");
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("grow", "disk", "32Mi", "grow");
  ASSERT_TRUE(W().WaitBound("grow", "disk"));
  const std::string pv_name = W().GetClaim("grow", "disk")["spec"]["volumeName"];
  const std::string volume = SourceOf(W().GetPV(pv_name)).options["volumeID"];
  ASSERT_EQ(W().DriverVolumes().at(volume), 32 << 20);

  auto patched = W().api().Patch(
      kube::ResourcePath::Core("persistentvolumeclaims", "grow").Named("disk"),
      kube::PatchType::kMerge, {{"spec", {{"resources", {{"requests", {{"storage", "64Mi"}}}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  // The expand controller's no-op expander raises the PV; we grow the storage.
  EXPECT_TRUE(W().WaitFor([&] { return W().DriverVolumes().at(volume) >= (64 << 20); }))
      << W().DriverVolumes().at(volume);
  EXPECT_TRUE(W().WaitFor([&] {
    return W().GetPV(pv_name)["metadata"]["annotations"].value("flexcsi.io/expanded-bytes", "") ==
           std::to_string(64 << 20);
  }));
  const auto pv = W().GetPV(pv_name);
  EXPECT_EQ(pv["spec"]["capacity"]["storage"], "64Mi");
  // csi-loopback needs node expansion: the claim waits for kubelet's expandfs.
  bool pending = false;
  const nlohmann::json claim = W().GetClaim("grow", "disk");
  for (const auto& c : claim["status"]["conditions"]) {
    pending |= c.value("type", "") == "FileSystemResizePending";
  }
  EXPECT_TRUE(pending) << W().GetClaim("grow", "disk").dump();
  EXPECT_TRUE(W().HasEvent("grow", "disk", "Resizing"));

  // Nothing grows twice: the driver saw one expansion to exactly the request.
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(W().DriverVolumes().at(volume), 64 << 20);
}

}  // namespace
}  // namespace flexcsi::controller_test
