// RegistrationWatch: this node's Node and CSINode as the API server streams them (a list, then a
// watch, each selected by the node's name), so that NodeRegistrar notices an edit of its
// registration when it happens and reads nothing by the clock.
//
// Why a watch: the registrar used to read each driver's registration back every 60 s (the Node,
// the CSINode and a discovery request): 360 requests per node and hour with two drivers, which
// for 1,000 nodes is 100 requests/s at the API server, as much as all their kubelets' lease
// renewals (bench/bridge_api_bench.py). Two watches cost a list each at start and one request
// per watch every 5-10 minutes. kubelet watches its own Node the same way.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/informer.h"
#include "kube/kube_client.h"

namespace flexcsi {

class RegistrationWatch {
 public:
  // The objects as last streamed. `csinode` is null where the cluster serves no CSINode (before
  // 1.14) and {} while the node has none.
  struct Seen {
    nlohmann::json node;
    nlohmann::json csinode;
  };

  // `on_change` runs on a watch thread after every event; it must not block.
  RegistrationWatch(kube::KubeClient& client, std::string node_name,
                    std::function<void()> on_change);
  ~RegistrationWatch();

  // Asks discovery (once) where CSINode is served and starts the watches. An error means
  // nothing started (the API server is unreachable): call again later.
  Status Start();
  // Ends the watches; Current() is nullopt afterwards.
  void Stop();
  bool Started() const { return !threads_.empty(); }

  // nullopt until both watches have listed, and after Stop.
  std::optional<Seen> Current() const;
  // Counts events: a registration checked at one generation need not be checked again until the
  // generation moves.
  uint64_t Generation() const { return generation_.load(); }
  // Why a watch has not listed yet (OK once it has): 403 where the RBAC grants no list and
  // watch (a node Role older than this bridge).
  Status LastError() const;

 private:
  kube::KubeClient& client_;
  const std::string node_name_;
  const std::function<void()> on_change_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> generation_{0};
  std::unique_ptr<kube::Informer> node_;
  std::unique_ptr<kube::Informer> csinode_;  // null where CSINode is not served
  std::vector<std::thread> threads_;
};

}  // namespace flexcsi
