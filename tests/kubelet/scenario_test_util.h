// Small helpers shared by the kubelet scenario tests.
#pragma once

#include <sys/statvfs.h>

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/kubelet/kubelet_caller.h"
#include "tests/kubelet/test_environment.h"

namespace flexcsi {
namespace kubelet {

// Success of a driver step, with kubelet's view of the failure otherwise.
inline ::testing::AssertionResult DriverOk(const char* what, const DriverResult& r) {
  if (r.success()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << r.Describe();
}

#define EXPECT_DRIVER_OK(expr) EXPECT_TRUE(::flexcsi::kubelet::DriverOk(#expr, (expr)))
#define ASSERT_DRIVER_OK(expr) ASSERT_TRUE(::flexcsi::kubelet::DriverOk(#expr, (expr)))

inline bool WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

inline std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline uint64_t TotalBytes(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
}

// Nothing of the test's left behind: no mounts, no loop devices, no bridge records.
inline void ExpectNothingLeaked(const TestEnvironment& env) {
  auto mounts = env.MountsUnderRoot();
  EXPECT_TRUE(mounts.empty()) << "leaked mount: " << mounts.front();
  auto loops = env.LoopDevicesUnderRoot();
  EXPECT_TRUE(loops.empty()) << "leaked loop device: " << loops.front();
  std::string error;
  nlohmann::json state = env.BridgeState(&error);
  ASSERT_TRUE(state.is_object()) << "bridge.state: " << error;
  for (const char* table : {"attachments", "stagings", "publications"}) {
    EXPECT_TRUE(!state.contains(table) || state[table].empty())
        << "bridge still records " << table << ": " << state[table].dump();
  }
  EXPECT_EQ("", env.DriverLeftovers()) << "csi-loopback still holds volumes";
}

}  // namespace kubelet
}  // namespace flexcsi
