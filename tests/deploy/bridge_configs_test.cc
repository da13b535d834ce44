// Every bridge configuration flexcsi ships (Kubernetes base and overlays, the Debian default,
// and each mapping profile wrapped in a configuration) must load in the real bridge's own
// loader, which validates everything the daemon validates at start: a config that only the
// daemon would reject must not ship.
#include <dirent.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/bridge_config.h"

namespace flexcsi {
namespace {

const std::string kRepo = FLEXCSI_SOURCE_DIR;

std::vector<std::string> ShippedConfigs() {
  std::vector<std::string> files = {kRepo + "/deploy/debian/bridge.yaml",
                                    kRepo + "/deploy/kubernetes/base/node/bridge-node.yaml",
                                    kRepo + "/deploy/kubernetes/base/controller/bridge-controller.yaml"};
  for (const char* overlay : {"nfs", "digitalocean", "juicefs", "cephfs"}) {
    files.push_back(kRepo + "/deploy/kubernetes/overlays/" + overlay + "/bridge-node.yaml");
  }
  files.push_back(kRepo + "/deploy/kubernetes/overlays/digitalocean/bridge-controller.yaml");
  files.push_back(kRepo + "/deploy/kubernetes/overlays/cephfs/bridge-provisioner.yaml");
  return files;
}

// The manifests' bridge configurations name kubelet's root as $(FLEXCSI_KUBELET_ROOT), which
// kustomize replaces with kubeletRoot of ConfigMap flexcsi-node-paths; this is its default.
std::string WithDefaultKubeletRoot(const std::string& file) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string var = "$(FLEXCSI_KUBELET_ROOT)";
  for (size_t at = text.find(var); at != std::string::npos; at = text.find(var, at)) {
    text.replace(at, var.size(), "/var/lib/kubelet");
  }
  const std::string copy =
      testing::TempDir() + "/shipped-" + std::to_string(std::hash<std::string>{}(file)) + ".yaml";
  std::ofstream(copy) << text;
  return copy;
}

TEST(ShippedBridgeConfigsTest, EveryConfigLoadsInTheBridge) {
  for (const std::string& file : ShippedConfigs()) {
    auto config = BridgeConfig::LoadFile(WithDefaultKubeletRoot(file));
    ASSERT_TRUE(config.ok()) << file << ": " << config.status().ToString();
    EXPECT_FALSE(config->drivers.empty()) << file;
  }
}

TEST(ShippedBridgeConfigsTest, ProfilesLoadAsDriverEntries) {
  for (const char* profile : {"nfs", "digitalocean", "juicefs", "cephfs", "rook-cephfs"}) {
    const std::string path = kRepo + "/drivers/profiles/" + profile + ".yaml";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::string config = "drivers:\n";
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] == '#') continue;
      config += (first ? "  - " : "    ") + line + "\n";
      first = false;
    }
    const std::string file = testing::TempDir() + "/profile-" + profile + ".yaml";
    std::ofstream(file) << config;
    auto loaded = BridgeConfig::LoadFile(file);
    ASSERT_TRUE(loaded.ok()) << path << ": " << loaded.status().ToString();
    ASSERT_EQ(loaded->drivers.size(), 1u);
  }
}

TEST(ShippedBridgeConfigsTest, LoaderRejectsABrokenCopy) {
  // Guards the test above: the loader does reject a bad driver entry.
  const std::string file = testing::TempDir() + "/broken.yaml";
  std::ofstream(file) << "drivers:\n  - flexDriver: flexcsi/loopback\n    csiEndpoint: tcp://x\n";
  EXPECT_FALSE(BridgeConfig::LoadFile(file).ok());
}

}  // namespace
}  // namespace flexcsi
