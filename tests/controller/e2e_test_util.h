// Shared pieces of the controller end-to-end tests: one ControllerWorld per test binary (the
// API server, driver and bridge take seconds to start; every test uses its own namespace).
#pragma once

#include <thread>

#include <gtest/gtest.h>

#include "tests/controller/controller_world.h"
#include "tests/kubelet/attachable_lifecycle.h"

namespace flexcsi::controller_test {

class WorldTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    world_ = new ControllerWorld();
    auto started = world_->Start();
    if (!started) {
      setup_error_ = new std::string(started.message());
    }
  }
  static void TearDownTestSuite() {
    delete world_;
    world_ = nullptr;
  }
  void SetUp() override {
    if (setup_error_ != nullptr) GTEST_FAIL() << "world did not start: " << *setup_error_;
  }
  void TearDown() override {
    if (HasFailure()) {
      for (int i = 0; i < 3; ++i) {
        const std::string log = world_->ControllerLog(i);
        if (!log.empty()) {
          std::cerr << "---- controller " << i << " log (tail) ----\n"
                    << log.substr(log.size() > 6000 ? log.size() - 6000 : 0) << "\n";
        }
      }
    }
    for (int i = 0; i < 3; ++i) world_->KillController(i, SIGTERM);
  }
  static ControllerWorld& W() { return *world_; }

 public:
  // The FlexVolume source kubelet would build from a PV.
  static kubelet::FlexVolumeSource SourceOf(const nlohmann::json& pv) {
    kubelet::FlexVolumeSource v;
    v.volume_name = pv["metadata"]["name"];
    v.fs_type = pv["spec"]["flexVolume"].value("fsType", "");
    for (auto it = pv["spec"]["flexVolume"]["options"].begin();
         it != pv["spec"]["flexVolume"]["options"].end(); ++it) {
      v.options[it.key()] = it.value().get<std::string>();
    }
    return v;
  }

 protected:
  static inline ControllerWorld* world_ = nullptr;
  static inline std::string* setup_error_ = nullptr;
};

}  // namespace flexcsi::controller_test
