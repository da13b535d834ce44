// translate_bench: how fast `flexcsi translate` turns a cluster dump into CSI.
//
// Builds a PersistentVolumeList of N mixed PVs (all eight in-tree plugins plus FlexVolume, with
// labels and node affinity as real dumps have them) and reports, on one thread:
//   library   Translator::TranslateInTreePVToCSI on already parsed objects
//   command   RunTranslateCommand end to end: parse JSON text, translate, write JSON text
// as PVs per second, and the process's peak RSS (getrusage) at the end.
//
// usage: translate_bench [--count N]   (default 50000)
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "translator/flexvolume_rules.h"
#include "translator/translate_command.h"
#include "translator/translator.h"

namespace {

using flexcsi::translator::Translator;
using nlohmann::json;

json MakePV(int i) {
  std::string n = std::to_string(i);
  json pv = {{"apiVersion", "v1"},
             {"kind", "PersistentVolume"},
             {"metadata",
              {{"name", "pv-" + n},
               {"uid", "5f0c1f9e-0000-4000-8000-" + std::to_string(100000000000 + i)},
               {"resourceVersion", n},
               {"annotations", {{"pv.kubernetes.io/provisioned-by", "kubernetes.io/x"}}}}},
             {"spec",
              {{"capacity", {{"storage", "10Gi"}}},
               {"accessModes", {"ReadWriteOnce"}},
               {"persistentVolumeReclaimPolicy", "Delete"},
               {"storageClassName", "standard"},
               {"volumeMode", "Filesystem"},
               {"claimRef",
                {{"kind", "PersistentVolumeClaim"},
                 {"namespace", "ns-" + std::to_string(i % 50)},
                 {"name", "claim-" + n}}}}},
             {"status", {{"phase", "Bound"}}}};
  json& spec = pv["spec"];
  json& labels = pv["metadata"]["labels"];
  switch (i % 9) {
    case 0:
      spec["gcePersistentDisk"] = {{"pdName", "disk-" + n}, {"fsType", "ext4"}};
      labels["topology.kubernetes.io/zone"] = "us-central1-a";
      labels["topology.kubernetes.io/region"] = "us-central1";
      break;
    case 1:
      spec["awsElasticBlockStore"] = {{"volumeID", "aws://us-east-1a/vol-" + n},
                                      {"fsType", "ext4"}};
      spec["nodeAffinity"] = {{"required",
                               {{"nodeSelectorTerms",
                                 {{{"matchExpressions",
                                    {{{"key", "topology.kubernetes.io/zone"},
                                      {"operator", "In"},
                                      {"values", {"us-east-1a"}}},
                                     {{"key", "topology.kubernetes.io/region"},
                                      {"operator", "In"},
                                      {"values", {"us-east-1"}}}}}}}}}}};
      break;
    case 2:
      spec["azureDisk"] = {
          {"diskName", "d" + n},
          {"diskURI", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d" + n},
          {"cachingMode", "ReadOnly"},
          {"fsType", "ext4"},
          {"kind", "Managed"}};
      break;
    case 3:
      spec["azureFile"] = {{"secretName", "azure-storage-account-acct-secret"},
                           {"shareName", "share-" + n}};
      break;
    case 4:
      spec["cinder"] = {{"volumeID", "c-" + n}, {"fsType", "xfs"}};
      labels["failure-domain.beta.kubernetes.io/zone"] = "nova";
      break;
    case 5:
      spec["vsphereVolume"] = {{"volumePath", "[ds] kubevols/pv-" + n + ".vmdk"},
                               {"fsType", "ext4"}};
      break;
    case 6:
      spec["portworxVolume"] = {{"volumeID", "px-" + n}};
      break;
    case 7:
      spec["rbd"] = {{"monitors", {"10.70.53.126:6789"}},
                     {"image", "kubernetes-dynamic-pvc-" + n},
                     {"pool", "replicapool"},
                     {"secretRef", {{"name", "ceph"}, {"namespace", "default"}}}};
      break;
    default:
      spec["flexVolume"] = {
          {"driver", "acme/lvm"},
          {"fsType", "ext4"},
          {"options", {{"volumeID", "lv-" + n}, {"vg", "vg0"}, {"size", "10Gi"}}}};
      break;
  }
  return pv;
}

const char kRules[] =
    "{\"flexVolumeRules\":[{\"flexDriver\":\"acme/lvm\",\"csiDriver\":\"lvm.csi.acme.io\","
    "\"volumeHandle\":{\"fromOption\":\"volumeID\"},\"attributes\":{\"rename\":{\"vg\":"
    "\"volumeGroup\"}}}]}";

// Wall-clock and CPU time of this process; on a shared machine CPU time is the one-core figure.
struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = CpuSeconds();

  static double CpuSeconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
  }
  double WallElapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double CpuElapsed() const { return CpuSeconds() - cpu; }
};

// An output stream that only counts bytes, so that the sink does not dominate peak RSS.
class CountingBuf : public std::streambuf {
 public:
  size_t bytes = 0;

 protected:
  int overflow(int c) override {
    if (c != EOF) ++bytes;
    return c;
  }
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes += static_cast<size_t>(n);
    return n;
  }
};

long PeakRssKiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  int count = 50000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--count") == 0 && i + 1 < argc) count = std::atoi(argv[++i]);
  }
  auto rules = flexcsi::translator::ParseFlexVolumeRulesText(kRules);
  if (!rules.ok()) {
    std::fprintf(stderr, "rules: %s\n", rules.status().message().c_str());
    return 1;
  }
  std::vector<json> pvs;
  pvs.reserve(count);
  for (int i = 0; i < count; ++i) pvs.push_back(MakePV(i));
  long rss_inputs = PeakRssKiB();

  Translator translator(*rules);
  size_t failed = 0;
  Clock library;
  for (const json& pv : pvs) {
    auto out = translator.TranslateInTreePVToCSI(pv);
    if (!out.ok()) ++failed;
  }
  double library_wall = library.WallElapsed(), library_cpu = library.CpuElapsed();

  json list = {{"apiVersion", "v1"}, {"kind", "PersistentVolumeList"}, {"items", std::move(pvs)}};
  std::string text = list.dump();
  list = json();
  std::string rules_path = "/tmp/translate_bench_rules." + std::to_string(getpid()) + ".json";
  if (FILE* f = std::fopen(rules_path.c_str(), "w")) {
    std::fputs(kRules, f);
    std::fclose(f);
  }
  const size_t text_bytes = text.size();
  std::istringstream in(std::move(text));
  CountingBuf sink;
  std::ostream out(&sink);
  std::ostringstream err;
  Clock command;
  int status = flexcsi::translator::RunTranslateCommand({"to-csi", "pv", "--rules", rules_path}, in,
                                                        out, err);
  double command_wall = command.WallElapsed(), command_cpu = command.CpuElapsed();
  std::remove(rules_path.c_str());

  std::printf("translate_bench: %d mixed PVs (8 in-tree plugins + flexVolume), one thread\n",
              count);
  std::printf(
      "  library  : %7.3f s CPU %10.0f PVs/s per core   (wall %.3f s, %.0f PVs/s; %zu failed)\n",
      library_cpu, count / library_cpu, library_wall, count / library_wall, failed);
  std::printf(
      "  command  : %7.3f s CPU %10.0f PVs/s per core   (wall %.3f s, %.0f PVs/s; exit %d)\n",
      command_cpu, count / command_cpu, command_wall, count / command_wall, status);
  std::printf("             parse %zu MiB of JSON, translate, write %zu MiB of JSON\n",
              text_bytes >> 20, sink.bytes >> 20);
  std::printf("  peak RSS : %ld MiB (%ld MiB after building the inputs)\n", PeakRssKiB() / 1024,
              rss_inputs / 1024);
  std::printf("  %s", err.str().substr(0, err.str().find('\n') + 1).c_str());
  return failed == 0 && status == 0 ? 0 : 1;
}
