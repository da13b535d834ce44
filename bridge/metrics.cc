#include "bridge/metrics.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "common/version.h"

namespace flexcsi {

namespace {

// Prometheus floats: the shortest text that reads back as the same double, without exponent
// where plain digits do (so the bucket bound 120 prints as "120", not "1.2e+02").
std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  const int max_precision = std::numeric_limits<double>::max_digits10;
  std::string shortest;
  for (int precision = 1; precision <= max_precision; ++precision) {
    std::ostringstream out;
    out.imbue(std::locale::classic());
    out << std::setprecision(precision) << v;
    if (std::stod(out.str()) == v || precision == max_precision) {
      shortest = out.str();
      break;
    }
  }
  if (shortest.find('e') == std::string::npos) return shortest;
  for (int precision = 0; precision <= 30; ++precision) {
    std::ostringstream out;
    out.imbue(std::locale::classic());
    out << std::fixed << std::setprecision(precision) << v;
    if (std::stod(out.str()) == v) return out.str();
  }
  return shortest;
}

void WriteHeader(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << '\n' << "# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

const std::vector<double>& CsiRpcLatencyBuckets() {
  static const std::vector<double> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                               0.5,   1,      2.5,   5,    10,    30,   60,  120};
  return kBuckets;
}

std::string EscapePrometheusLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Metrics::Metrics() {
  // The three record kinds exist from the start, so a dashboard sees 0 rather than no data.
  for (const char* kind : {"attachments", "stagings", "publications"}) records_[kind] = 0;
}

void Metrics::RecordFlexCall(const std::string& operation, const std::string& status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++flex_calls_[{operation, status}];
}

void Metrics::RecordCsiRpc(const std::string& method, Code code, double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // also catches NaN
  const std::vector<double>& bounds = CsiRpcLatencyBuckets();
  size_t bucket = 0;
  while (bucket < bounds.size() && seconds > bounds[bucket]) ++bucket;
  std::lock_guard<std::mutex> lock(mu_);
  Histogram& h = csi_rpcs_[{method, CodeName(code)}];
  if (h.bucket_counts.empty()) h.bucket_counts.assign(bounds.size() + 1, 0);
  ++h.bucket_counts[bucket];
  h.sum += seconds;
  ++h.count;
}

void Metrics::SetRecords(const std::string& kind, int64_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  records_[kind] = count;
}

void Metrics::AddReconcileRepairs(const std::string& kind, int64_t count) {
  if (count <= 0) return;  // a counter never goes down
  std::lock_guard<std::mutex> lock(mu_);
  repairs_[kind] += static_cast<uint64_t>(count);
}

void Metrics::SetFailingRepairs(const std::string& kind, int64_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  failing_repairs_[kind] = count;
}

void Metrics::ExposeBuildInfo(const std::string& component) {
  std::lock_guard<std::mutex> lock(mu_);
  build_info_component_ = component;
}

std::string Metrics::RenderPrometheusText() const {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  std::lock_guard<std::mutex> lock(mu_);

  if (!build_info_component_.empty()) {
    const std::string family = "flexcsi_" + build_info_component_ + "_build_info";
    WriteHeader(out, family.c_str(), "gauge",
                "Always 1; the labels name the release and git commit of this build.");
    out << family << "{version=\"" << EscapePrometheusLabelValue(FlexcsiVersion())
        << "\",commit=\"" << EscapePrometheusLabelValue(FlexcsiGitCommit()) << "\"} 1\n";
  }

  WriteHeader(out, "flexcsi_flexvolume_calls_total", "counter",
              "FlexVolume calls answered by the bridge, by call and reply status.");
  for (const auto& [key, value] : flex_calls_) {
    out << "flexcsi_flexvolume_calls_total{operation=\"" << EscapePrometheusLabelValue(key.first)
        << "\",status=\"" << EscapePrometheusLabelValue(key.second) << "\"} " << value << '\n';
  }

  WriteHeader(out, "flexcsi_csi_rpc_duration_seconds", "histogram",
              "Latency of CSI RPCs made by the bridge, by method and gRPC code.");
  const std::vector<double>& bounds = CsiRpcLatencyBuckets();
  for (const auto& [key, h] : csi_rpcs_) {
    const std::string labels = "method=\"" + EscapePrometheusLabelValue(key.first) + "\",code=\"" +
                               EscapePrometheusLabelValue(key.second) + "\"";
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += h.bucket_counts[i];
      const std::string le = i < bounds.size() ? FormatDouble(bounds[i]) : std::string("+Inf");
      out << "flexcsi_csi_rpc_duration_seconds_bucket{" << labels << ",le=\"" << le << "\"} "
          << cumulative << '\n';
    }
    out << "flexcsi_csi_rpc_duration_seconds_sum{" << labels << "} " << FormatDouble(h.sum) << '\n';
    out << "flexcsi_csi_rpc_duration_seconds_count{" << labels << "} " << h.count << '\n';
  }

  WriteHeader(out, "flexcsi_records", "gauge", "Rows in the bridge state database, by kind.");
  for (const auto& [kind, value] : records_) {
    out << "flexcsi_records{kind=\"" << EscapePrometheusLabelValue(kind) << "\"} " << value << '\n';
  }

  WriteHeader(out, "flexcsi_reconcile_repairs_total", "counter",
              "Records repaired by reconciliation with the mount table, by what was done.");
  for (const auto& [kind, value] : repairs_) {
    out << "flexcsi_reconcile_repairs_total{kind=\"" << EscapePrometheusLabelValue(kind) << "\"} "
        << value << '\n';
  }

  WriteHeader(out, "flexcsi_failing_repairs", "gauge",
              "Records whose undo failed and is retried with backoff (1 s doubling to 5 min), "
              "by kind; `flexcsi doctor` names them.");
  for (const auto& [kind, value] : failing_repairs_) {
    out << "flexcsi_failing_repairs{kind=\"" << EscapePrometheusLabelValue(kind) << "\"} " << value
        << '\n';
  }
  return out.str();
}

}  // namespace flexcsi
