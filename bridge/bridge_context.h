// BridgeContext: what every FlexVolume call handler of one daemon shares.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/bridge_config.h"
#include "bridge/csi_client.h"
#include "bridge/kubelet_root_check.h"
#include "bridge/metrics.h"
#include "bridge/repair_backoff.h"
#include "bridge/state_store.h"
#include "common/volume_locks.h"

namespace flexcsi {

// One CsiClient per CSI endpoint, created on first use and kept for the daemon's life.
class CsiClients {
 public:
  CsiClients(Metrics* metrics, std::chrono::milliseconds unavailable_budget)
      : metrics_(metrics), unavailable_budget_(unavailable_budget) {}

  CsiClient& For(const std::string& endpoint) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& client = clients_[endpoint];
    if (!client) client = std::make_unique<CsiClient>(endpoint, metrics_, unavailable_budget_);
    return *client;
  }

 private:
  Metrics* metrics_;
  std::chrono::milliseconds unavailable_budget_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<CsiClient>> clients_;  // guarded by mu_
};

class ClusterObjects;
class NodeRegistrar;
class SecretReader;

struct BridgeContext {
  const BridgeConfig& config;
  StateStore& store;
  VolumeLocks& locks;
  Metrics& metrics;
  CsiClients& clients;
  RepairBackoff& repairs;  // undos that failed, retried by the reconciler with backoff
  const NodeRegistrar* registrar = nullptr;  // null until started, and in tests
  KubeletRootWatch* kubelet_root = nullptr;  // null in tests that do not check the root
  SecretReader* secrets = nullptr;  // null when no driver's rule reads a Secret
  // What identifies a call (call_identity.h); null with trustPodAuthors, and in tests that
  // identify nothing.
  ClusterObjects* cluster = nullptr;
  // This bridge's node (nodeName, else $NODE_NAME); empty for a bridge of no node.
  std::string node_name = {};

  CsiClient& ClientFor(const DriverConfig& driver) { return clients.For(driver.csi_endpoint); }
};

}  // namespace flexcsi
