// The closing line of `flexcsi migrate apply` / `rollback` about the API server's load: how many
// requests the run sent, at what mean rate, and what the client-side limit (--qps/--burst) cost.
#pragma once

#include <chrono>
#include <ostream>

#include "kube/kube_client.h"

namespace flexcsi::migrate {

// "API requests: 4,210 in 61.2 s (68.8/s); the client-side limit (--qps 50 --burst 100) held
// 312 of them back, 41.0 s in all" (or "no client-side limit").
void PrintRequestStats(const kube::KubeClient::RequestStats& stats,
                       std::chrono::steady_clock::duration elapsed, std::ostream& err);

}  // namespace flexcsi::migrate
