#include "migrate/request_stats.h"

#include <iomanip>

namespace flexcsi::migrate {

void PrintRequestStats(const kube::KubeClient::RequestStats& stats,
                       std::chrono::steady_clock::duration elapsed, std::ostream& err) {
  const double seconds = std::max(std::chrono::duration<double>(elapsed).count(), 1e-3);
  err << "flexcsi migrate: " << stats.requests << " API requests in " << std::fixed
      << std::setprecision(1) << seconds << " s (" << stats.requests / seconds << "/s); ";
  if (!stats.rate_limit) {
    err << "no client-side limit\n";
  } else {
    err << "the client-side limit (" << kube::DescribeRateLimit(*stats.rate_limit) << ") held "
        << stats.delayed_requests << " of them back, "
        << std::chrono::duration<double>(stats.total_delay).count() << " s in all\n";
  }
  err << std::defaultfloat;
}

}  // namespace flexcsi::migrate
