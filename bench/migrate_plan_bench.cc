// migrate_plan_bench: `flexcsi migrate plan` over a generated cluster of N PVs, N claims and N
// pods (plus a ReplicaSet/Deployment per 10 pods, CSIDrivers, a CSINode), deterministic.
// Reports the time of the planner core (index + translate + verdicts), of rendering the JSON
// and table reports, and the peak RSS of the process. Figures, not a test.
//
//   migrate_plan_bench [--pvs 10000] [--rounds 3]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "migrate/planner.h"
#include "migrate/report.h"
#include "translator/flexvolume_rules.h"
#include "translator/translator.h"

using flexcsi::migrate::BuildPlan;
using flexcsi::migrate::ClusterObjects;
using flexcsi::migrate::Plan;
using nlohmann::json;

namespace {

json Source(int i, std::string* field) {
  switch (i % 9) {
    case 0: *field = "awsElasticBlockStore"; return {{"volumeID", "aws://us-east-1a/vol-" + std::to_string(i)}, {"fsType", "ext4"}};
    case 1: *field = "gcePersistentDisk"; return {{"pdName", "pd-" + std::to_string(i)}};
    case 2: *field = "azureDisk"; return {{"diskName", "d"}, {"diskURI", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d" + std::to_string(i)}, {"kind", "Managed"}};
    case 3: *field = "azureFile"; return {{"secretName", "s"}, {"shareName", "share-" + std::to_string(i)}};
    case 4: *field = "cinder"; return {{"volumeID", "c-" + std::to_string(i)}};
    case 5: *field = "vsphereVolume"; return {{"volumePath", "[ds] v" + std::to_string(i) + ".vmdk"}};
    case 6: *field = "portworxVolume"; return {{"volumeID", "px-" + std::to_string(i)}};
    case 7: *field = "rbd"; return {{"monitors", {"10.0.0.1:6789"}}, {"image", "kubernetes-dynamic-pvc-" + std::to_string(i)}, {"pool", "rbd"}, {"secretRef", {{"name", "ceph"}}}};
    default: *field = "flexVolume"; return {{"driver", "acme/lvm"}, {"options", {{"volumeID", "lv-" + std::to_string(i)}}}};
  }
}

ClusterObjects Generate(int n) {
  ClusterObjects o;
  for (int i = 0; i < n; ++i) {
    const std::string ns = "ns-" + std::to_string(i % 100);
    const std::string claim = "claim-" + std::to_string(i);
    const std::string pv_name = "pv-" + std::to_string(i);
    std::string field;
    json source = Source(i, &field);
    o.pvs.push_back({{"apiVersion", "v1"}, {"kind", "PersistentVolume"},
                     {"metadata", {{"name", pv_name}, {"uid", "uid-pv-" + std::to_string(i)}, {"resourceVersion", "1"}}},
                     {"spec", {{"capacity", {{"storage", "10Gi"}}}, {"accessModes", {"ReadWriteOnce"}},
                               {"persistentVolumeReclaimPolicy", "Delete"}, {field, source},
                               {"claimRef", {{"kind", "PersistentVolumeClaim"}, {"namespace", ns}, {"name", claim}, {"uid", "uid-c-" + std::to_string(i)}}}}},
                     {"status", {{"phase", "Bound"}}}});
    o.pvcs.push_back({{"metadata", {{"namespace", ns}, {"name", claim}, {"uid", "uid-c-" + std::to_string(i)}}},
                      {"spec", {{"volumeName", pv_name}, {"accessModes", {"ReadWriteOnce"}}}},
                      {"status", {{"phase", "Bound"}}}});
    // Half the claims are in use by a pod of a Deployment (through its ReplicaSet).
    const std::string rs = "rs-" + std::to_string(i / 10);
    o.pods.push_back({{"metadata", {{"namespace", ns}, {"name", "pod-" + std::to_string(i)},
                                    {"ownerReferences", {{{"kind", "ReplicaSet"}, {"name", rs}, {"controller", true}}}}}},
                      {"spec", {{"nodeName", "node-1"}, {"volumes", {{{"name", "d"}, {"persistentVolumeClaim", {{"claimName", i % 2 ? claim : "other"}}}}}}}},
                      {"status", {{"phase", "Running"}}}});
    if (i % 10 == 0) {
      o.replicasets.push_back({{"metadata", {{"namespace", ns}, {"name", rs},
                                             {"ownerReferences", {{{"kind", "Deployment"}, {"name", "dep-" + std::to_string(i / 10)}, {"controller", true}}}}}}});
    }
  }
  for (const char* d : {"ebs.csi.aws.com", "pd.csi.storage.gke.io", "disk.csi.azure.com", "file.csi.azure.com",
                        "cinder.csi.openstack.org", "csi.vsphere.vmware.com", "pxd.portworx.com", "rbd.csi.ceph.com"}) {
    o.csidrivers.push_back({{"metadata", {{"name", d}}}});
  }
  o.csinodes.push_back({{"metadata", {{"name", "node-1"}}}, {"spec", {{"drivers", {{{"name", "lvm.csi.acme.io"}}}}}}});
  return o;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

long PeakRssKb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 10000, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--pvs")) n = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  auto rules = flexcsi::translator::ParseFlexVolumeRulesText(
      "flexVolumeRules:\n- flexDriver: acme/lvm\n  csiDriver: lvm.csi.acme.io\n"
      "  volumeHandle: {fromOption: volumeID}\n");
  if (!rules.ok()) return 1;
  flexcsi::translator::Translator translator(std::move(*rules));
  const long rss_start = PeakRssKb();
  const ClusterObjects objects = Generate(n);
  const long rss_objects = PeakRssKb();
  std::printf("migrate_plan_bench: %d PVs, %d claims, %d pods (%zu ReplicaSets)\n", n, n, n,
              objects.replicasets.size());
  double best_plan = 1e9, best_json = 1e9, best_table = 1e9;
  size_t movable = 0, bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    const Plan plan = BuildPlan(objects, translator, {});
    auto t1 = std::chrono::steady_clock::now();
    const std::string out = flexcsi::migrate::PlanToJson(plan).dump(2);
    auto t2 = std::chrono::steady_clock::now();
    std::ostringstream table;
    flexcsi::migrate::PrintPlanTable(plan, table);
    auto t3 = std::chrono::steady_clock::now();
    best_plan = std::min(best_plan, Seconds(t1 - t0));
    best_json = std::min(best_json, Seconds(t2 - t1));
    best_table = std::min(best_table, Seconds(t3 - t2));
    movable = 0;
    for (const auto& v : plan.volumes) movable += v.verdict == flexcsi::migrate::Verdict::kCanMove;
    bytes = out.size();
  }
  std::printf("  plan (index + translate + verdicts): %8.1f ms  (%.1f us/PV), %zu can move now\n",
              best_plan * 1e3, best_plan * 1e6 / n, movable);
  std::printf("  render -o json:                      %8.1f ms  (%.1f MB)\n", best_json * 1e3,
              bytes / 1e6);
  std::printf("  render table:                        %8.1f ms\n", best_table * 1e3);
  std::printf("  peak RSS: %.1f MB (inputs as JSON: %.1f MB of it)\n", PeakRssKb() / 1024.0,
              (rss_objects - rss_start) / 1024.0);
  return 0;
}
