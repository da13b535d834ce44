#include "bridge/metrics.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/version.h"

namespace flexcsi {
namespace {

// Runs the real `promtool check metrics` (Debian's prometheus package) on `text`; returns its
// exit status and puts its combined output in *output.
int PromtoolCheckMetrics(const std::string& text, std::string* output) {
  char path[] = "/tmp/flexcsi-metrics-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return -1;
  close(fd);
  std::ofstream(path) << text;
  const std::string cmd = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe) != nullptr) *output += buf;
  const int status = pclose(pipe);
  unlink(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool HavePromtool() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

TEST(MetricsTest, FreshInstanceShowsZeroRecordsOfEveryKind) {
  Metrics m;
  const std::string text = m.RenderPrometheusText();
  EXPECT_NE(text.find("flexcsi_records{kind=\"attachments\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("flexcsi_records{kind=\"stagings\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("flexcsi_records{kind=\"publications\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE flexcsi_csi_rpc_duration_seconds histogram\n"), std::string::npos);
}

TEST(MetricsTest, BuildInfoNamesTheComponentsReleaseAndCommit) {
  Metrics m;
  EXPECT_EQ(m.RenderPrometheusText().find("build_info"), std::string::npos);
  m.ExposeBuildInfo("bridge");
  const std::string text = m.RenderPrometheusText();
  EXPECT_NE(text.find("# TYPE flexcsi_bridge_build_info gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string("flexcsi_bridge_build_info{version=\"") + FlexcsiVersion() +
                      "\",commit=\"" + FlexcsiGitCommit() + "\"} 1\n"),
            std::string::npos)
      << text;
}

TEST(MetricsTest, FlexCallsCountPerOperationAndStatus) {
  Metrics m;
  m.RecordFlexCall("mount", "Success");
  m.RecordFlexCall("mount", "Success");
  m.RecordFlexCall("mount", "Failure");
  m.RecordFlexCall("expandvolume", "Not supported");
  const std::string text = m.RenderPrometheusText();
  EXPECT_NE(text.find("flexcsi_flexvolume_calls_total{operation=\"mount\",status=\"Success\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("flexcsi_flexvolume_calls_total{operation=\"mount\",status=\"Failure\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("{operation=\"expandvolume\",status=\"Not supported\"} 1\n"),
            std::string::npos);
}

TEST(MetricsTest, CsiLatencyHistogramIsCumulativeWithSumAndCount) {
  Metrics m;
  m.RecordCsiRpc("NodeStageVolume", Code::kOk, 0.0005);  // first bucket (le 0.001)
  m.RecordCsiRpc("NodeStageVolume", Code::kOk, 0.3);     // le 0.5
  m.RecordCsiRpc("NodeStageVolume", Code::kOk, 500);     // beyond 120 s: only +Inf
  m.RecordCsiRpc("NodeStageVolume", Code::kNotFound, 0.02);
  const std::string text = m.RenderPrometheusText();
  const std::string ok =
      "flexcsi_csi_rpc_duration_seconds_bucket{method=\"NodeStageVolume\",code=\"OK\",";
  EXPECT_NE(text.find(ok + "le=\"0.001\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find(ok + "le=\"0.25\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find(ok + "le=\"0.5\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find(ok + "le=\"120\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find(ok + "le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("flexcsi_csi_rpc_duration_seconds_count{method=\"NodeStageVolume\","
                      "code=\"OK\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("flexcsi_csi_rpc_duration_seconds_sum{method=\"NodeStageVolume\","
                      "code=\"OK\"} 500.3005\n"),
            std::string::npos);
  EXPECT_NE(text.find("code=\"NOT_FOUND\",le=\"0.025\"} 1\n"), std::string::npos);
}

TEST(MetricsTest, BucketsSpanOneMillisecondToTwoMinutesInOrder) {
  const std::vector<double>& b = CsiRpcLatencyBuckets();
  ASSERT_FALSE(b.empty());
  EXPECT_DOUBLE_EQ(b.front(), 0.001);
  EXPECT_DOUBLE_EQ(b.back(), 120);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
}

TEST(MetricsTest, RecordsAreSetAndRepairsAccumulate) {
  Metrics m;
  m.SetRecords("stagings", 7);
  m.SetRecords("stagings", 3);
  m.AddReconcileRepairs("rolled_back", 2);
  m.AddReconcileRepairs("rolled_back", 1);
  m.AddReconcileRepairs("promoted", 0);   // nothing happened: no series
  m.AddReconcileRepairs("promoted", -4);  // a counter cannot go down
  const std::string text = m.RenderPrometheusText();
  EXPECT_NE(text.find("flexcsi_records{kind=\"stagings\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("flexcsi_reconcile_repairs_total{kind=\"rolled_back\"} 3\n"),
            std::string::npos);
  EXPECT_EQ(text.find("kind=\"promoted\""), std::string::npos);
}

TEST(MetricsTest, FailingRepairsAreAGaugeThatGoesBackToZero) {
  Metrics m;
  m.SetFailingRepairs("staging", 6);
  m.SetFailingRepairs("staging", 0);
  m.SetFailingRepairs("publication", 2);
  const std::string text = m.RenderPrometheusText();
  EXPECT_NE(text.find("# TYPE flexcsi_failing_repairs gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("flexcsi_failing_repairs{kind=\"staging\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("flexcsi_failing_repairs{kind=\"publication\"} 2\n"), std::string::npos);
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapePrometheusLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  Metrics m;
  m.RecordFlexCall("we\"ird\n", "Failure");
  EXPECT_NE(m.RenderPrometheusText().find("operation=\"we\\\"ird\\n\""), std::string::npos);
}

TEST(MetricsTest, ConcurrentRecordingLosesNothing) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m]() {
      for (int i = 0; i < 1000; ++i) {
        m.RecordFlexCall("mount", "Success");
        m.RecordCsiRpc("NodePublishVolume", Code::kOk, 0.002);
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::string text = m.RenderPrometheusText();
  EXPECT_NE(text.find("{operation=\"mount\",status=\"Success\"} 4000\n"), std::string::npos);
  EXPECT_NE(text.find("_count{method=\"NodePublishVolume\",code=\"OK\"} 4000\n"),
            std::string::npos);
}

TEST(MetricsTest, PromtoolAcceptsEmptyAndFullExpositions) {
  ASSERT_TRUE(HavePromtool())
      << "promtool missing: run scripts/install-deps.sh (Debian prometheus)";
  Metrics m;
  std::string output;
  EXPECT_EQ(PromtoolCheckMetrics(m.RenderPrometheusText(), &output), 0) << output;

  m.ExposeBuildInfo("bridge");
  for (const char* op : {"init", "attach", "mountdevice", "mount", "unmount"}) {
    m.RecordFlexCall(op, "Success");
  }
  m.RecordFlexCall("mount", "Failure");
  m.RecordFlexCall("expandvolume", "Not supported");
  m.RecordCsiRpc("NodeStageVolume", Code::kOk, 0.2);
  m.RecordCsiRpc("ControllerPublishVolume", Code::kDeadlineExceeded, 121);
  m.RecordCsiRpc("Probe", Code::kUnavailable, 0.0001);
  m.SetRecords("attachments", 2);
  m.AddReconcileRepairs("rolled_back", 1);
  m.AddReconcileRepairs("promoted", 2);
  m.SetFailingRepairs("staging", 1);
  output.clear();
  const std::string text = m.RenderPrometheusText();
  EXPECT_EQ(PromtoolCheckMetrics(text, &output), 0) << output << "\n" << text;
  EXPECT_EQ(output.find("problem"), std::string::npos) << output;
}

TEST(MetricsTest, PromtoolRejectsABrokenExposition) {
  // Guards the check above: promtool really parses what we feed it.
  ASSERT_TRUE(HavePromtool());
  std::string output;
  EXPECT_NE(PromtoolCheckMetrics("# TYPE x counter\nx{a=\"1\" 1\n", &output), 0) << output;
}

}  // namespace
}  // namespace flexcsi
