// Who a call is for (call_identity.h): the decision against PVs and pods held in memory, with a
// real state database and kubelet root in a temp dir. The same attacks against a real API server
// and kubelet: tests/cluster/tenancy_suite_test.py.
#include "bridge/call_identity.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <random>

#include "bridge/cluster_objects.h"
#include "bridge/flex_calls.h"
#include "bridge/rule_secrets.h"
#include "bridge/volume_operations.h"

namespace flexcsi {
namespace {

using nlohmann::json;

// The cluster's objects as the API server would answer for them, and how often each was read.
class ObjectsInMemory : public ClusterObjects {
 public:
  std::map<std::string, json> pvs;
  std::map<std::string, json> pods;                             // by "namespace/name"
  std::map<std::string, std::vector<std::string>> node_pods;    // node -> "namespace/name"
  std::map<std::string, std::vector<std::string>> bound_later;  // seen only by a fresh list
  int pv_reads = 0;
  int node_lists = 0;
  int pod_reads = 0;
  int list_reads = 0;

  StatusOr<std::optional<json>> PersistentVolume(const std::string& name) override {
    ++pv_reads;
    auto it = pvs.find(name);
    if (it == pvs.end()) return std::optional<json>();
    return std::optional<json>(it->second);
  }
  StatusOr<std::optional<json>> Pod(const std::string& namespace_name, const std::string& name,
                                    const std::string& uid) override {
    ++pod_reads;
    auto it = pods.find(namespace_name + "/" + name);
    if (it == pods.end() || it->second["metadata"]["uid"] != uid) return std::optional<json>();
    return std::optional<json>(it->second);
  }
  StatusOr<std::shared_ptr<const std::vector<json>>> PodsOnNode(const std::string& node,
                                                                bool fresh) override {
    ++node_lists;
    auto pods_of_node = std::make_shared<std::vector<json>>();
    for (const auto& key : node_pods[node]) pods_of_node->push_back(pods.at(key));
    if (fresh) {
      for (const auto& key : bound_later[node]) pods_of_node->push_back(pods.at(key));
    }
    return std::shared_ptr<const std::vector<json>>(pods_of_node);
  }
  StatusOr<std::shared_ptr<const std::vector<json>>> PersistentVolumes() override {
    ++list_reads;
    auto all = std::make_shared<std::vector<json>>();
    for (const auto& [name, pv] : pvs) all->push_back(pv);
    return std::shared_ptr<const std::vector<json>>(all);
  }
};

json FlexPv(const std::string& name, const std::string& driver, json options,
            const std::string& claim_namespace, const std::string& claim_name) {
  json pv = {{"metadata", {{"name", name}}},
             {"spec", {{"flexVolume", {{"driver", driver}, {"options", options}}}}}};
  if (!claim_name.empty()) {
    pv["spec"]["claimRef"] = {{"namespace", claim_namespace}, {"name", claim_name}};
  }
  return pv;
}

json PodWithClaim(const std::string& namespace_name, const std::string& name,
                  const std::string& uid, const std::string& claim) {
  return {{"metadata", {{"namespace", namespace_name}, {"name", name}, {"uid", uid}}},
          {"spec",
           {{"volumes", {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", claim}}}}}}}}};
}

class CallIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/flexcsi-identity-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/kubelet/pods");
    std::filesystem::create_directories(dir_ + "/kubelet/plugins");
    Configure(false);
    auto store = StateStore::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    clients_ = std::make_unique<CsiClients>(&metrics_, std::chrono::milliseconds(0));
    ctx_ = std::make_unique<BridgeContext>(
        BridgeContext{config_, *store_, locks_, metrics_, *clients_, repairs_});
    ctx_->cluster = &cluster_;
    // The victim's PV, bound to victim/data, and the pod that uses it.
    cluster_.pvs["pv-victim"] =
        FlexPv("pv-victim", "flexcsi/loopback", {{"volumeID", "vol-victim"}}, "victim", "data");
    cluster_.pods["victim/app"] = PodWithClaim("victim", "app", "uid-victim", "data");
    cluster_.node_pods["node-1"] = {"victim/app"};
    cluster_.pods["attacker/evil"] = {
        {"metadata", {{"namespace", "attacker"}, {"name", "evil"}, {"uid", "uid-evil"}}},
        {"spec", {{"volumes", {{{"name", "pv-victim"}, {"flexVolume", json::object()}}}}}}};
  }
  void TearDown() override {
    ctx_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Configure(bool inline_volumes, bool trust = false) {
    json j = {{"kubeletRoot", dir_ + "/kubelet"},
              {"trustPodAuthors", trust},
              {"drivers",
               {{{"flexDriver", "flexcsi/loopback"},
                 {"csiEndpoint", "unix:///nonexistent.sock"},
                 {"inlineVolumes", inline_volumes},
                 {"rule",
                  {{"csiDriver", "loopback.csi.flexcsi.io"},
                   {"volumeHandle", {{"fromOption", "volumeID"}}}}}}}}};
    auto config = BridgeConfig::FromJson(j);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config_ = std::move(*config);
  }

  // kubelet's mount of volume `name` for pod namespace/pod (uid) with the author's options.
  StatusOr<ResolvedCall> Mount(const std::string& namespace_name, const std::string& pod,
                               const std::string& uid, const std::string& name, json options,
                               const std::string& node = "") {
    options["kubernetes.io/pvOrVolumeName"] = name;
    options["kubernetes.io/pod.namespace"] = namespace_name;
    options["kubernetes.io/pod.name"] = pod;
    options["kubernetes.io/pod.uid"] = uid;
    const std::string dir = dir_ + "/kubelet/pods/" + uid + "/volumes/flexcsi~loopback/" + name;
    auto path = ParseKubeletPath(dir, config_.kubelet_root);
    if (!path.ok()) return path.status();
    FlexCall call{config_.drivers.front(), "mount", {dir, options.dump()}, Deadline::In(kBudget)};
    CallContext context;
    context.path = &*path;
    context.node_name = node;
    return ResolveCall(*ctx_, call, options.dump(), context);
  }

  // kube-controller-manager's attach to `node` (no pod, no path).
  StatusOr<ResolvedCall> Attach(const std::string& name, json options,
                                const std::string& node = "node-1") {
    options["kubernetes.io/pvOrVolumeName"] = name;
    FlexCall call{config_.drivers.front(), "attach", {options.dump(), node}, Deadline::In(kBudget)};
    CallContext context;
    context.node_name = node;
    return ResolveCall(*ctx_, call, options.dump(), context);
  }

  static constexpr std::chrono::seconds kBudget{5};
  std::string dir_;
  BridgeConfig config_;
  Metrics metrics_;
  VolumeLocks locks_;
  RepairBackoff repairs_{&metrics_};
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<CsiClients> clients_;
  std::unique_ptr<BridgeContext> ctx_;
  ObjectsInMemory cluster_;
};

TEST_F(CallIdentityTest, PodThatUsesTheClaimMountsThePv) {
  auto got = Mount("victim", "app", "uid-victim", "pv-victim", {{"volumeID", "vol-victim"}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->identity.source, CallSource::kPersistentVolume);
  EXPECT_EQ(got->identity.claim_namespace, "victim");
  EXPECT_EQ(got->identity.pod_uid, "uid-victim");
  EXPECT_EQ(got->volume.volume_handle, "vol-victim");
}

TEST_F(CallIdentityTest, AMountFindsItsPodAmongItsNodesPodsWithoutAGetOfItsOwn) {
  auto got =
      Mount("victim", "app", "uid-victim", "pv-victim", {{"volumeID", "vol-victim"}}, "node-1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->identity.source, CallSource::kPersistentVolume);
  EXPECT_EQ(cluster_.pod_reads, 0);
  EXPECT_EQ(cluster_.node_lists, 1);
  // A pod the node's list does not hold (a bridge whose nodeName is not kubelet's): its GET.
  got = Mount("attacker", "evil", "uid-evil", "pv-victim", {{"volumeID", "vol-victim"}}, "node-1");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("does not use claim"), std::string::npos);
  EXPECT_EQ(cluster_.pod_reads, 1);
}

TEST_F(CallIdentityTest, InlineVolumeWrittenLikeAnotherNamespacesPvIsRefused) {
  // Named like the PV and with its options: a PV candidate, but the pod does not use its claim.
  auto got = Mount("attacker", "evil", "uid-evil", "pv-victim", {{"volumeID", "vol-victim"}});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kPermissionDenied);
  EXPECT_NE(got.status().message().find(
                "pod attacker/evil does not use claim victim/data of PV pv-victim"),
            std::string::npos)
      << got.status().message();
}

TEST_F(CallIdentityTest, InlineVolumesAreRefusedByDefaultNamingTheSetting) {
  auto got = Mount("attacker", "evil", "uid-evil", "scratch", {{"volumeID", "vol-mine"}});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kPermissionDenied);
  EXPECT_NE(got.status().message().find("inline volumes of FlexVolume driver flexcsi/loopback "
                                        "are refused: set inlineVolumes: true in its driver entry"),
            std::string::npos)
      << got.status().message();
  // Named like the PV with other options: not the PV, so an inline volume, refused too.
  got = Mount("attacker", "evil", "uid-evil", "pv-victim", {{"volumeID", "vol-mine"}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("inline volumes of FlexVolume driver"), std::string::npos);
}

TEST_F(CallIdentityTest, AllowedInlineVolumeIsItsPodsAndMayNotBeAPvsVolume) {
  Configure(true);
  auto got = Mount("attacker", "evil", "uid-evil", "scratch", {{"volumeID", "vol-mine"}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->identity.source, CallSource::kInline);
  EXPECT_EQ(got->identity.pod_namespace, "attacker");
  EXPECT_EQ(got->identity.pod_uid, "uid-evil");

  got = Mount("attacker", "evil", "uid-evil", "scratch", {{"volumeID", "vol-victim"}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("resolves to the volume handle of PV pv-victim"),
            std::string::npos)
      << got.status().message();
  // The same volume after a migration: a CSI PV of the rule's driver.
  cluster_.pvs["pv-csi"] = {
      {"metadata", {{"name", "pv-csi"}}},
      {"spec", {{"csi", {{"driver", "loopback.csi.flexcsi.io"}, {"volumeHandle", "vol-moved"}}}}}};
  got = Mount("attacker", "evil", "uid-evil", "scratch", {{"volumeID", "vol-moved"}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("of PV pv-csi"), std::string::npos);
}

TEST_F(CallIdentityTest, MountPathAndKubeletsKeysMustAgree) {
  auto options = json{{"volumeID", "vol-victim"},
                      {"kubernetes.io/pvOrVolumeName", "pv-victim"},
                      {"kubernetes.io/pod.namespace", "victim"},
                      {"kubernetes.io/pod.name", "app"},
                      {"kubernetes.io/pod.uid", "uid-victim"}};
  const std::string dir = dir_ + "/kubelet/pods/uid-evil/volumes/flexcsi~loopback/pv-victim";
  auto path = ParseKubeletPath(dir, config_.kubelet_root);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  FlexCall call{config_.drivers.front(), "mount", {dir, options.dump()}, Deadline::In(kBudget)};
  CallContext context;
  context.path = &*path;
  auto got = ResolveCall(*ctx_, call, options.dump(), context);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(cluster_.pv_reads, 0);  // refused before anything is read
}

TEST_F(CallIdentityTest, AttachOfAPvNeedsNoPodAndAttachOfInlineFollowsTheSetting) {
  auto got = Attach("pv-victim", {{"volumeID", "vol-victim"}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->identity.source, CallSource::kPersistentVolume);
  EXPECT_EQ(cluster_.pod_reads, 0);
  got = Attach("scratch", {{"volumeID", "vol-victim"}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("inline volumes of FlexVolume driver"), std::string::npos);
}

TEST_F(CallIdentityTest, APvIsAttachedOnlyToANodeWhereAPodUsesItsClaim) {
  // The attacker's pod on node-2 with an inline copy of the victim's PV: the attach/detach
  // controller asks for the PV's volume on node-2, where no pod uses the claim.
  cluster_.node_pods["node-2"] = {"attacker/evil"};
  auto got = Attach("pv-victim", {{"volumeID", "vol-victim"}}, "node-2");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kPermissionDenied);
  EXPECT_NE(
      got.status().message().find("no pod on node node-2 uses claim victim/data of PV pv-victim"),
      std::string::npos)
      << got.status().message();
  // A pod bound a moment ago: found by the fresh list after the cached one missed it.
  cluster_.bound_later["node-2"] = {"victim/app"};
  got = Attach("pv-victim", {{"volumeID", "vol-victim"}}, "node-2");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // A PV bound to no claim serves no pod.
  cluster_.pvs["pv-free"] = FlexPv("pv-free", "flexcsi/loopback", {{"volumeID", "v"}}, "", "");
  got = Attach("pv-free", {{"volumeID", "v"}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("is bound to no claim"), std::string::npos);
}

TEST_F(CallIdentityTest, TrustedCallsReadNothingFromTheCluster) {
  Configure(false, /*trust=*/true);
  auto got = Mount("attacker", "evil", "uid-evil", "pv-victim", {{"volumeID", "vol-victim"}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->identity.source, CallSource::kTrusted);
  EXPECT_EQ(cluster_.pv_reads + cluster_.pod_reads + cluster_.list_reads + cluster_.node_lists, 0);
}

TEST_F(CallIdentityTest, WithoutClusterAccessEveryCallIsRefusedNamingTheWayOut) {
  ctx_->cluster = nullptr;
  auto got = Attach("pv-victim", {{"volumeID", "vol-victim"}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("trustPodAuthors: true"), std::string::npos);
}

TEST_F(CallIdentityTest, AnInlineVolumesRuleSecretIsReadInItsPodsNamespaceOnly) {
  translator::CsiVolume volume;
  volume.read_secret = translator::SecretReference{"crown", "victim"};  // from an option
  FlexOptions options;
  options.pod_namespace = "attacker";
  SecretReader reader(nullptr, "unused");
  CallIdentity inline_call;
  inline_call.source = CallSource::kInline;
  inline_call.pod_namespace = "attacker";
  auto where = RuleSecretNamespace(volume, options, inline_call, reader);
  ASSERT_TRUE(where.ok()) << where.status().ToString();
  EXPECT_EQ(*where, "attacker");
  // mountdevice of an attachable driver: no pod, so no namespace to read it in.
  inline_call.pod_namespace.clear();
  where = RuleSecretNamespace(volume, options, inline_call, reader);
  ASSERT_FALSE(where.ok());
  EXPECT_NE(where.status().message().find("an inline volume of an attachable driver cannot use "
                                          "the rule's secrets"),
            std::string::npos);
  // The admin's PV may name a Secret elsewhere.
  CallIdentity pv_call;
  pv_call.source = CallSource::kPersistentVolume;
  pv_call.claim_namespace = "app";
  where = RuleSecretNamespace(volume, options, pv_call, reader);
  ASSERT_TRUE(where.ok());
  EXPECT_EQ(*where, "victim");
  volume.read_secret->namespace_name.clear();
  where = RuleSecretNamespace(volume, options, pv_call, reader);
  ASSERT_TRUE(where.ok());
  EXPECT_EQ(*where, "app");
}

// Random clusters and random calls (a seeded fuzz run that CI repeats exactly): whatever the
// objects and options, a call is only ever taken as a PV's when the PV holds exactly its driver
// and options and a pod that may use the PV's claim is there, and only ever as an inline
// volume's when the driver allows them and no PV has its handle.
TEST_F(CallIdentityTest, RandomCallsAreNeverTakenForWhatTheyAreNot) {
  std::mt19937 random(46);
  auto pick = [&](std::vector<std::string> from) { return from[random() % from.size()]; };
  const std::vector<std::string> names = {"pv-a", "pv-b", "data", "pv-victim"};
  const std::vector<std::string> ids = {"vol-1", "vol-2", "vol-victim"};
  const std::vector<std::string> namespaces = {"victim", "attacker"};
  int as_pv = 0, as_inline = 0, refused = 0;
  spdlog::set_level(spdlog::level::err);  // a warning for each refusal below
  for (int round = 0; round < 3000; ++round) {
    Configure(random() % 2 == 0);
    cluster_ = ObjectsInMemory();
    for (const auto& name : names) {
      if (random() % 3 == 0) continue;
      json options = {{"volumeID", pick(ids)}};
      if (random() % 4 == 0) options["extra"] = "x";
      const bool csi = random() % 5 == 0;
      cluster_.pvs[name] =
          csi ? json{{"metadata", {{"name", name}}},
                     {"spec",
                      {{"csi",
                        {{"driver", "loopback.csi.flexcsi.io"}, {"volumeHandle", pick(ids)}}}}}}
              : FlexPv(name, pick({"flexcsi/loopback", "acme/other"}), options,
                       random() % 4 ? pick(namespaces) : "", pick({"c1", "c2"}));
    }
    std::string name = pick(names);
    json options = {{"volumeID", pick(ids)}};
    if (random() % 4 == 0) options["extra"] = "x";
    std::string pod_namespace = pick(namespaces);
    std::string claim = pick({"c1", "c2"});
    // Half the calls are a PV's as kubelet would make them, for a pod of its claim; the rest of
    // the randomness (the pod's volumes, the driver's setting) decides what becomes of them.
    const auto chosen = cluster_.pvs.find(name);
    if (random() % 2 && chosen != cluster_.pvs.end() &&
        chosen->second["spec"].contains("flexVolume")) {
      options = chosen->second["spec"]["flexVolume"]["options"];
      const json& ref = chosen->second["spec"].value("claimRef", json::object());
      pod_namespace = ref.value("namespace", pod_namespace);
      claim = ref.value("name", claim);
    }
    json pod = PodWithClaim(pod_namespace, "p", "uid-p", claim);
    if (random() % 2) pod["spec"]["volumes"][0] = {{"name", "x"}, {"flexVolume", json::object()}};
    cluster_.pods[pod_namespace + "/p"] = pod;
    cluster_.node_pods["node-1"] = {pod_namespace + "/p"};
    const bool mount = random() % 2 == 0;
    auto got = mount ? Mount(pod_namespace, "p", "uid-p", name, options) : Attach(name, options);
    if (!got.ok()) {
      ++refused;
      continue;
    }
    const auto pv = cluster_.pvs.find(name);
    const bool pv_holds =
        pv != cluster_.pvs.end() &&
        PvHoldsFlexVolume(pv->second, "flexcsi/loopback",
                          AuthorOptions(options.get<std::map<std::string, std::string>>()));
    ASSERT_NE(got->identity.source, CallSource::kTrusted);
    if (got->identity.source == CallSource::kPersistentVolume) {
      ++as_pv;
      ASSERT_TRUE(pv_holds) << name << " " << options.dump();
      const json& ref = pv->second["spec"]["claimRef"];
      ASSERT_TRUE(PodUsesClaim(pod, ref["namespace"], ref["name"], name).ok()) << pod.dump();
    } else {
      ++as_inline;
      ASSERT_FALSE(pv_holds) << name << " " << options.dump();
      ASSERT_TRUE(config_.drivers.front().inline_volumes);
      auto all = cluster_.PersistentVolumes();
      ASSERT_FALSE(
          PvWithVolumeHandle(**all, config_, config_.drivers.front(), got->volume.volume_handle));
    }
  }
  // Each outcome was reached, so the properties above were put to the test.
  EXPECT_GT(as_pv, 50);
  EXPECT_GT(as_inline, 50);
  EXPECT_GT(refused, 50);
  spdlog::set_level(spdlog::level::info);
}

TEST(PodUsesClaimTest, PersistentVolumeClaimAndGenericEphemeralVolumes) {
  const json pod = {
      {"metadata", {{"namespace", "ns"}, {"name", "web-0"}, {"uid", "u"}}},
      {"spec",
       {{"volumes",
         {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "data-web-0"}}}},
          {{"name", "scratch"}, {"ephemeral", {{"volumeClaimTemplate", json::object()}}}}}}}}};
  EXPECT_TRUE(PodUsesClaim(pod, "ns", "data-web-0", "pv").ok());
  EXPECT_TRUE(PodUsesClaim(pod, "ns", "web-0-scratch", "pv").ok());
  EXPECT_FALSE(PodUsesClaim(pod, "other", "data-web-0", "pv").ok());  // same name elsewhere
  EXPECT_FALSE(PodUsesClaim(pod, "ns", "web-0-data", "pv").ok());     // not an ephemeral volume
  EXPECT_FALSE(PodUsesClaim(json::object(), "ns", "data-web-0", "pv").ok());
}

TEST(PvHoldsFlexVolumeTest, DriverAndEveryAuthorOptionMustMatch) {
  const json pv = FlexPv("pv", "acme/nfs", {{"server", "s"}, {"share", "/a"}}, "ns", "c");
  using Map = std::map<std::string, std::string>;
  EXPECT_TRUE(PvHoldsFlexVolume(pv, "acme/nfs", Map{{"server", "s"}, {"share", "/a"}}));
  EXPECT_FALSE(PvHoldsFlexVolume(pv, "acme/other", Map{{"server", "s"}, {"share", "/a"}}));
  EXPECT_FALSE(PvHoldsFlexVolume(pv, "acme/nfs", Map{{"server", "s"}}));
  EXPECT_FALSE(
      PvHoldsFlexVolume(pv, "acme/nfs", Map{{"server", "s"}, {"share", "/a"}, {"extra", "x"}}));
  EXPECT_FALSE(PvHoldsFlexVolume(json{{"spec", {{"csi", json::object()}}}}, "acme/nfs", Map{}));
  EXPECT_EQ(AuthorOptions({{"kubernetes.io/pod.uid", "u"}, {"server", "s"}}),
            (Map{{"server", "s"}}));
}

TEST(PvWithVolumeHandleTest, PvsOfEveryEntryOnTheSameCsiDriverCount) {
  // cephfs.yaml and rook-cephfs.yaml in front of one ceph-csi: a rook PV's handle is its name.
  auto entry = [](const std::string& flex, json handle, bool inline_volumes) {
    return json{{"flexDriver", flex},
                {"csiEndpoint", "unix:///ceph.sock"},
                {"inlineVolumes", inline_volumes},
                {"rule", {{"csiDriver", "cephfs.csi.ceph.com"}, {"volumeHandle", handle}}}};
  };
  auto config = BridgeConfig::FromJson(
      {{"drivers",
        {entry("ceph.rook.io/rook", {{"template", "${kubernetes.io/pvOrVolumeName}"}}, false),
         entry("flexcsi/cephfs", {{"fromOption", "volumeHandle"}}, true),
         {{"flexDriver", "acme/other"},
          {"csiEndpoint", "unix:///other.sock"},
          {"rule", {{"csiDriver", "other.csi"}, {"volumeHandle", {{"fromOption", "id"}}}}}}}}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const std::vector<json> pvs = {FlexPv("pv-rook", "ceph.rook.io/rook", {{"path", "/"}}, "v", "c"),
                                 FlexPv("pv-other", "acme/other", {{"id", "x"}}, "v", "c")};
  const DriverConfig& cephfs = *config->FindDriver("flexcsi/cephfs");
  EXPECT_EQ(PvWithVolumeHandle(pvs, *config, cephfs, "pv-rook"), "pv-rook");
  EXPECT_EQ(PvWithVolumeHandle(pvs, *config, cephfs, "x"), std::nullopt);  // another CSI driver
  EXPECT_EQ(PvWithVolumeHandle(pvs, *config, cephfs, "elsewhere"), std::nullopt);
}

TEST(CheckStagingSourceTest, APvsStagingIsNeverAnInlineVolumesNorTheOtherWayRound) {
  StagingRecord record;
  record.volume_name = "data";
  record.request["source"] = "persistentVolume";
  EXPECT_TRUE(CheckStagingSource(record, CallSource::kPersistentVolume).ok());
  EXPECT_TRUE(CheckStagingSource(record, CallSource::kTrusted).ok());
  Status refused = CheckStagingSource(record, CallSource::kInline);
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("staged on this node for a persistent volume"),
            std::string::npos);
  record.request["source"] = "inline";
  EXPECT_FALSE(CheckStagingSource(record, CallSource::kPersistentVolume).ok());
  EXPECT_TRUE(CheckStagingSource(record, CallSource::kInline).ok());
  record.request.erase("source");  // written before 0.2.0: a PV's
  EXPECT_FALSE(CheckStagingSource(record, CallSource::kInline).ok());
  EXPECT_TRUE(CheckStagingSource(record, CallSource::kPersistentVolume).ok());
}

TEST(InlineConfigTest, ARuleWhoseHandleIsTheVolumesNameCannotServeInlineVolumes) {
  json driver = {{"flexDriver", "ceph.rook.io/rook"},
                 {"csiEndpoint", "unix:///x.sock"},
                 {"inlineVolumes", true},
                 {"rule",
                  {{"csiDriver", "cephfs.csi.ceph.com"},
                   {"volumeHandle", {{"template", "${kubernetes.io/pvOrVolumeName}"}}}}}};
  auto config = BridgeConfig::FromJson({{"drivers", {driver}}});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("inlineVolumes: true needs a rule whose volumeHandle"),
            std::string::npos)
      << config.status().message();
  driver["inlineVolumes"] = false;
  EXPECT_TRUE(BridgeConfig::FromJson({{"drivers", {driver}}}).ok());
}

}  // namespace
}  // namespace flexcsi
