#include "controller/in_flight_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace flexcsi::controller {
namespace {

TEST(InFlightGateTest, NothingEntersUntilOpenedNorAfterClosing) {
  InFlightGate gate;
  EXPECT_FALSE(gate.Enter());
  gate.Open();
  ASSERT_TRUE(gate.Enter());
  gate.Exit();
  gate.CloseAndDrain();
  EXPECT_FALSE(gate.Enter());
  EXPECT_EQ(gate.Running(), 0);
}

TEST(InFlightGateTest, CloseAndDrainWaitsForTheOperationsRunning) {
  InFlightGate gate;
  gate.Open();
  ASSERT_TRUE(gate.Enter());
  ASSERT_TRUE(gate.Enter());
  std::atomic<bool> drained{false};
  std::thread closer([&] {
    gate.CloseAndDrain();
    drained = true;
  });
  // Closed at once: nothing new enters while the two still run.
  while (gate.Enter()) gate.Exit();
  EXPECT_FALSE(drained);
  gate.Exit();
  EXPECT_FALSE(drained) << "drained with one operation still running";
  EXPECT_EQ(gate.Running(), 1);
  gate.Exit();
  closer.join();
  EXPECT_TRUE(drained);
  EXPECT_EQ(gate.Running(), 0);
}

}  // namespace
}  // namespace flexcsi::controller
