// flexcsi-controller against the fake API server and a real csi-loopback: provisioning with
// both binding modes, deletion, clones, errors as events.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include <gtest/gtest.h>

#include "common/version.h"
#include "tests/controller/e2e_test_util.h"

namespace flexcsi::controller_test {
namespace {

using namespace std::chrono_literals;

class Provisioning : public WorldTest {};

std::string VolumeIdOf(const nlohmann::json& pv) {
  return pv["spec"]["flexVolume"]["options"].value("volumeID", "");
}

TEST_F(Provisioning, ImmediateClaimGetsBoundFlexPV) {
  W().CreateNamespace("imm");
  W().CreateStorageClass("imm", {{"parameters", {{"csi.storage.k8s.io/fstype", "ext4"}}}});
  ASSERT_TRUE(W().StartController());
  const size_t before = W().DriverVolumes().size();
  W().CreateClaim("imm", "data", "64Mi", "imm");
  ASSERT_TRUE(W().WaitBound("imm", "data")) << W().GetClaim("imm", "data").dump();

  const auto claim = W().GetClaim("imm", "data");
  const std::string uid = claim["metadata"]["uid"];
  const auto pv = W().GetPV("pvc-" + uid);
  ASSERT_TRUE(pv.is_object());
  EXPECT_EQ(claim["spec"]["volumeName"], "pvc-" + uid);
  EXPECT_EQ(pv["spec"]["flexVolume"]["driver"], kubelet::kTestDriver);
  EXPECT_EQ(pv["spec"]["flexVolume"]["fsType"], "ext4");
  EXPECT_EQ(pv["spec"]["claimRef"]["uid"], uid);
  EXPECT_EQ(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  EXPECT_EQ(pv["spec"]["storageClassName"], "imm");
  EXPECT_EQ(pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"], kProvisioner);
  EXPECT_NE(pv["metadata"]["finalizers"].dump().find(
                "external-provisioner.volume.kubernetes.io/finalizer"),
            std::string::npos);
  // The volume exists in the driver, exactly once, and the PV names it.
  const auto volumes = W().DriverVolumes();
  EXPECT_EQ(volumes.size(), before + 1);
  ASSERT_EQ(volumes.count(VolumeIdOf(pv)), 1u) << pv.dump();
  EXPECT_GE(volumes.at(VolumeIdOf(pv)), 64 << 20);
  // csi-loopback volumes live on one node: the PV says so.
  const auto& expr = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
                       ["matchExpressions"][0];
  EXPECT_EQ(expr["key"], kTopologyKey);
  EXPECT_EQ(expr["values"][0], kubelet::kTestNode);
  // The PV controller may bind before the event is written: wait for it.
  EXPECT_TRUE(W().HasEvent("imm", "data", "Provisioning"));
  EXPECT_TRUE(W().WaitFor(
      [&] { return W().HasEvent("imm", "data", "ProvisioningSucceeded", "pvc-" + uid); }, 5s))
      << ::testing::PrintToString(W().EventsFor("imm", "data"));
}

TEST_F(Provisioning, WaitForFirstConsumerWaitsForSelectedNode) {
  W().CreateNamespace("wffc");
  W().CreateStorageClass(
      "wffc", {{"volumeBindingMode", "WaitForFirstConsumer"},
               {"allowedTopologies",
                {{{"matchLabelExpressions",
                   {{{"key", kTopologyKey}, {"values", {kubelet::kTestNode}}}}}}}}});
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("wffc", "late", "32Mi", "wffc");
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(W().GetClaim("wffc", "late")["status"].value("phase", ""), "Pending");
  const std::string uid = W().GetClaim("wffc", "late")["metadata"]["uid"];
  EXPECT_TRUE(W().GetPV("pvc-" + uid).is_null()) << "provisioned before a node was selected";

  // What the scheduler does once a pod using the claim is placed.
  auto patched = W().api().Patch(
      kube::ResourcePath::Core("persistentvolumeclaims", "wffc").Named("late"),
      kube::PatchType::kMerge,
      {{"metadata", {{"annotations", {{"volume.kubernetes.io/selected-node", kubelet::kTestNode}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  ASSERT_TRUE(W().WaitBound("wffc", "late"));
  const auto pv = W().GetPV("pvc-" + uid);
  EXPECT_EQ(pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
              ["values"][0],
            kubelet::kTestNode);
}

TEST_F(Provisioning, ReleasedVolumeIsDeletedFromDriverAndApi) {
  W().CreateNamespace("del");
  W().CreateStorageClass("del");
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("del", "gone", "32Mi", "del");
  ASSERT_TRUE(W().WaitBound("del", "gone"));
  const std::string pv_name = W().GetClaim("del", "gone")["spec"]["volumeName"];
  const std::string volume = VolumeIdOf(W().GetPV(pv_name));
  ASSERT_EQ(W().DriverVolumes().count(volume), 1u);

  auto deleted =
      W().api().Delete(kube::ResourcePath::Core("persistentvolumeclaims", "del").Named("gone"));
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_TRUE(W().WaitFor([&] { return W().GetPV(pv_name).is_null(); }))
      << W().GetPV(pv_name).dump();
  EXPECT_EQ(W().DriverVolumes().count(volume), 0u) << "storage left behind";
}

TEST_F(Provisioning, RetainedVolumeKeepsStorage) {
  W().CreateNamespace("keep");
  W().CreateStorageClass("keep", {{"reclaimPolicy", "Retain"}});
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("keep", "mine", "32Mi", "keep");
  ASSERT_TRUE(W().WaitBound("keep", "mine"));
  const std::string pv_name = W().GetClaim("keep", "mine")["spec"]["volumeName"];
  const std::string volume = VolumeIdOf(W().GetPV(pv_name));
  ASSERT_TRUE(W().api().Delete(kube::ResourcePath::Core("persistentvolumeclaims", "keep")
                                   .Named("mine")).ok());
  ASSERT_TRUE(W().WaitFor([&] {
    return W().GetPV(pv_name)["status"].value("phase", "") == "Released";
  }));
  std::this_thread::sleep_for(1500ms);  // a resync or two
  EXPECT_FALSE(W().GetPV(pv_name).is_null());
  EXPECT_EQ(W().DriverVolumes().count(volume), 1u);
}

TEST_F(Provisioning, CloneGetsItsOwnVolumeFromTheSource) {
  W().CreateNamespace("clone");
  W().CreateStorageClass("clone");
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("clone", "src", "32Mi", "clone");
  ASSERT_TRUE(W().WaitBound("clone", "src"));
  W().CreateClaim("clone", "copy", "32Mi", "clone",
                  {{"dataSource", {{"kind", "PersistentVolumeClaim"}, {"name", "src"}}}});
  ASSERT_TRUE(W().WaitBound("clone", "copy"));
  const std::string a = VolumeIdOf(W().GetPV(W().GetClaim("clone", "src")["spec"]["volumeName"]));
  const std::string b = VolumeIdOf(W().GetPV(W().GetClaim("clone", "copy")["spec"]["volumeName"]));
  EXPECT_NE(a, b);
  EXPECT_EQ(W().DriverVolumes().count(b), 1u);

  // Smaller than its source: refused with an event, nothing created.
  const size_t before = W().DriverVolumes().size();
  W().CreateClaim("clone", "tiny", "1Mi", "clone",
                  {{"dataSource", {{"kind", "PersistentVolumeClaim"}, {"name", "src"}}}});
  EXPECT_TRUE(W().WaitFor([&] {
    return W().HasEvent("clone", "tiny", "ProvisioningFailed", "less than its source");
  })) << ::testing::PrintToString(W().EventsFor("clone", "tiny"));
  EXPECT_EQ(W().DriverVolumes().size(), before);
}

TEST_F(Provisioning, ParameterErrorsAndDriverErrorsBecomeEvents) {
  W().CreateNamespace("errs");
  W().CreateStorageClass("half-secret",
                         {{"parameters", {{"csi.storage.k8s.io/provisioner-secret-name", "x"}}}});
  W().CreateStorageClass("mount-opts", {{"mountOptions", {"noatime"}}});
  // csi-loopback refuses a filesystem it cannot make: the driver's own message must show.
  W().CreateStorageClass("bad-fs", {{"parameters", {{"fsType", "ntfs"}}}});
  ASSERT_TRUE(W().StartController());
  const size_t before = W().DriverVolumes().size();
  W().CreateClaim("errs", "a", "16Mi", "half-secret");
  W().CreateClaim("errs", "b", "16Mi", "mount-opts");
  W().CreateClaim("errs", "c", "16Mi", "bad-fs");
  EXPECT_TRUE(W().WaitFor([&] {
    return W().HasEvent("errs", "a", "ProvisioningFailed", "must be given together");
  })) << ::testing::PrintToString(W().EventsFor("errs", "a"));
  EXPECT_TRUE(W().WaitFor([&] {
    return W().HasEvent("errs", "b", "ProvisioningFailed", "mountOptions");
  })) << ::testing::PrintToString(W().EventsFor("errs", "b"));
  EXPECT_TRUE(W().WaitFor([&] {
    return W().HasEvent("errs", "c", "ProvisioningFailed", "CreateVolume");
  })) << ::testing::PrintToString(W().EventsFor("errs", "c"));
  for (const auto& e : W().EventsFor("errs", "c")) {
    if (e.find("ProvisioningFailed") != std::string::npos) {
      EXPECT_NE(e.find("ntfs"), std::string::npos) << e;
      EXPECT_NE(e.find("[flexcsi-controller]"), std::string::npos) << e;
    }
  }
  EXPECT_EQ(W().DriverVolumes().size(), before);
  for (const char* c : {"a", "b", "c"}) {
    EXPECT_EQ(W().GetClaim("errs", c)["status"].value("phase", ""), "Pending");
  }
}

// One plain HTTP/1.0 GET to 127.0.0.1:port; the whole answer, headers included.
std::string HttpGet(int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST_F(Provisioning, HealthzCsiMetricsAndReleaseAreServed) {
  W().CreateNamespace("metrics");
  W().CreateStorageClass("metrics");
  ASSERT_TRUE(W().StartController());
  W().CreateClaim("metrics", "m", "16Mi", "metrics");
  ASSERT_TRUE(W().WaitBound("metrics", "m"));
  std::smatch m;
  const std::string log = W().ControllerLog(0);
  const std::regex port_re("metrics and /healthz on port ([0-9]+)");
  std::string last_port;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), port_re); it != std::sregex_iterator();
       ++it) {
    last_port = (*it)[1];
  }
  ASSERT_FALSE(last_port.empty()) << log;
  const int port = std::stoi(last_port);
  const std::string health = HttpGet(port, "/healthz");
  EXPECT_NE(health.find(" 200 "), std::string::npos) << health;
  const std::string metrics = HttpGet(port, "/metrics");
  EXPECT_NE(metrics.find("flexcsi_csi_rpc_duration_seconds_count{method=\"CreateVolume\",code=\"OK\"}"),
            std::string::npos)
      << metrics.substr(0, 2000);
  // Which release runs: in the metrics and in the log's first words. The release only: the
  // commit is the one of the configure before flexcsi-controller was linked, which a partial
  // build of a shared tree may leave behind this test's.
  const std::string release = FlexcsiVersion();
  const std::regex build_info("\nflexcsi_controller_build_info\\{version=\"" + release +
                              "\",commit=\"[0-9a-f]*\"\\} 1\n");
  EXPECT_TRUE(std::regex_search(metrics, build_info)) << metrics.substr(0, 2000);
  const std::regex start_line("flexcsi-controller " + release +
                              " \\((git [0-9a-f]+|no git commit)\\) starting");
  EXPECT_TRUE(std::regex_search(log, start_line)) << log;
}

}  // namespace
}  // namespace flexcsi::controller_test
