// `flexcsi snapshot` and `flexcsi volume create --from-snapshot` (clusters without the
// snapshot CRDs) against the real csi-loopback, on a PV flexcsi-controller provisioned; the
// restored volume is mounted through the bridge and shows the data.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/snapshot_command.h"
#include "cli/volume_command.h"
#include "tests/controller/e2e_test_util.h"

namespace flexcsi::controller_test {
namespace {

using kubelet::AttachableLifecycle;
using kubelet::Step;

class CliSnapshots : public WorldTest {};

int RunCli(const std::vector<std::string>& args, std::string* out_text, std::string* err_text,
        const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  int rc = args[0] == "snapshot"
               ? RunSnapshotCommand({args.begin() + 1, args.end()}, in, out, err)
               : RunVolumeCommand({args.begin() + 1, args.end()}, out, err);
  *out_text = out.str();
  *err_text = err.str();
  return rc;
}

void Mount(ControllerWorld& w, const kubelet::FlexVolumeSource& v, const std::string& pod,
           const std::function<void(const std::string&)>& with_dir) {
  AttachableLifecycle life(&w.env().caller(), v, w.env().Pod(pod), w.env().Pod(pod + "-b"));
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

TEST_F(CliSnapshots, SnapshotPVAndRestoreWithVolumeCreate) {
  W().CreateNamespace("cli");
  W().CreateStorageClass("cli");
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("cli", "base", "32Mi", "cli");
  ASSERT_TRUE(W().WaitBound("cli", "base"));
  const auto pv = W().GetPV(W().GetClaim("cli", "base")["spec"]["volumeName"]);
  Mount(W(), SourceOf(pv), "w", [](const std::string& dir) {
    std::ofstream(dir + "/note") << "kept by flexcsi snapshot\n";
  });

  std::string out, err;
  ASSERT_EQ(RunCli({"snapshot", "create", "--pv", "-", "--bridge-config",
                 W().env().bridge_config_path(), "--name", "cli-snap"},
                &out, &err, pv.dump()),
            0)
      << err;
  const std::string snapshot_id = out.substr(0, out.find('\n'));
  ASSERT_FALSE(snapshot_id.empty());
  // Idempotent by name.
  ASSERT_EQ(RunCli({"snapshot", "create", "--pv", "-", "--bridge-config",
                 W().env().bridge_config_path(), "--name", "cli-snap"},
                &out, &err, pv.dump()),
            0);
  EXPECT_EQ(out, snapshot_id + "\n");
  ASSERT_EQ(RunCli({"snapshot", "list", "--endpoint", W().CsiEndpoint()}, &out, &err), 0) << err;
  EXPECT_NE(out.find(snapshot_id), std::string::npos) << out;
  EXPECT_NE(out.find(SourceOf(pv).options["volumeID"]), std::string::npos) << out;

  ASSERT_EQ(RunCli({"volume", "create", "--endpoint", W().CsiEndpoint(), "--name", "cli-restored",
                 "--size", "32Mi", "--from-snapshot", snapshot_id},
                &out, &err),
            0)
      << err;
  const std::string restored = out.substr(0, out.find('\n'));
  ASSERT_EQ(W().DriverVolumes().count(restored), 1u);
  kubelet::FlexVolumeSource v = W().env().VolumeSource("cli-restored-pv", restored);
  std::string text;
  Mount(W(), v, "r", [&](const std::string& dir) {
    std::ifstream in(dir + "/note");
    std::getline(in, text);
  });
  EXPECT_EQ(text, "kept by flexcsi snapshot");

  ASSERT_EQ(RunCli({"snapshot", "delete", "--endpoint", W().CsiEndpoint(), "--id", snapshot_id},
                &out, &err),
            0)
      << err;
  for (const auto& s : W().DriverSnapshots()) EXPECT_NE(s, snapshot_id);
  ASSERT_EQ(RunCli({"volume", "delete", "--endpoint", W().CsiEndpoint(), "--id", restored}, &out,
                &err),
            0);

  // Bad input: a manifest that is not a FlexVolume PV.
  EXPECT_EQ(RunCli({"snapshot", "create", "--pv", "-", "--bridge-config",
                 W().env().bridge_config_path(), "--name", "x"},
                &out, &err, "{\"kind\": \"Pod\"}"),
            1);
  EXPECT_NE(err.find("not a FlexVolume PersistentVolume"), std::string::npos) << err;
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace flexcsi::controller_test
