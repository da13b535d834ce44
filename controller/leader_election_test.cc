// LeaderElector against the fake API server: the lock is given up only after the work it
// guards has stopped, and a leader whose renewals fail stops passing CheckHeld within the renew
// deadline, before anyone else may take the lock.
#include "controller/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/support/api_server_fixture.h"

namespace flexcsi::controller {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class LeaderElectionTest : public kube::SharedApiServerTest<LeaderElectionTest> {
 protected:
  void SetUp() override {
    client_ = kube::ConnectOrFail(server_->Config());
    ASSERT_NE(client_, nullptr);
    ns_ = kube::NamespaceForCurrentTest();
    kube::CreateNamespace(client_.get(), ns_);
  }
  void TearDown() override { server_->Control("fail", {{"clear", true}}); }

  LeaderElectionConfig Config(const std::string& identity) const {
    LeaderElectionConfig config;
    config.lock = LeaderElectionConfig::Lock::kLease;
    config.namespace_ = ns_;
    config.name = "lock";
    config.identity = identity;
    config.lease_duration = milliseconds(3000);
    config.renew_deadline = milliseconds(2000);
    config.retry_period = milliseconds(200);
    return config;
  }
  nlohmann::json LeaseSpec() {
    auto lease = client_->Get(
        kube::ResourcePath::Group("coordination.k8s.io/v1", "leases", ns_).Named("lock"));
    EXPECT_TRUE(lease.ok()) << lease.status().ToString();
    return lease.ok() ? (*lease)["spec"] : nlohmann::json::object();
  }
  template <typename Predicate>
  static bool WaitUntil(Predicate done, milliseconds bound = milliseconds(30000)) {
    const auto until = Clock::now() + bound;
    while (!done()) {
      if (Clock::now() > until) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  }

  std::unique_ptr<kube::KubeClient> client_;
  std::string ns_;
};

TEST_F(LeaderElectionTest, StopKeepsTheLockRenewedUntilTheWorkHasStoppedThenReleasesIt) {
  LeaderElector elector(client_.get(), Config("a"));
  std::atomic<bool> stop{false}, led{false}, work_running{false};
  std::atomic<bool> holder_was_ours_while_working{true};
  std::string renew_time_at_stop;
  std::thread run([&] {
    elector.Run(
        stop, [&] { led = true; },
        [&] {
          // The work takes longer than the lease: the lease must stay ours all along.
          work_running = true;
          const auto until = Clock::now() + milliseconds(4000);
          while (Clock::now() < until) {
            if (LeaseSpec().value("holderIdentity", "") != "a") {
              holder_was_ours_while_working = false;
            }
            if (!elector.CheckHeld().ok()) holder_was_ours_while_working = false;
            std::this_thread::sleep_for(milliseconds(100));
          }
          work_running = false;
        });
  });
  ASSERT_TRUE(WaitUntil([&] { return led.load(); }));
  EXPECT_TRUE(elector.CheckHeld().ok());
  renew_time_at_stop = LeaseSpec().value("renewTime", "");
  stop = true;
  ASSERT_TRUE(WaitUntil([&] { return work_running.load(); }));
  EXPECT_EQ(LeaseSpec().value("holderIdentity", ""), "a") << "released before the work stopped";
  run.join();
  EXPECT_TRUE(holder_was_ours_while_working);
  const auto spec = LeaseSpec();
  EXPECT_EQ(spec.value("holderIdentity", "x"), "") << spec.dump();
  EXPECT_NE(spec.value("renewTime", ""), renew_time_at_stop) << "not renewed while stopping";
  EXPECT_FALSE(elector.CheckHeld().ok());
}

TEST_F(LeaderElectionTest, FailingRenewalsCloseTheFenceBeforeTheLeaseCanBeTaken) {
  LeaderElector elector(client_.get(), Config("a"));
  std::atomic<bool> stop{false}, led{false}, held_when_stopping{true};
  std::atomic<int64_t> fence_closed_after_ms{-1}, stop_work_after_ms{-1};
  std::thread run([&] {
    elector.Run(
        stop, [&] { led = true; }, [&] { held_when_stopping = elector.CheckHeld().ok(); });
  });
  ASSERT_TRUE(WaitUntil([&] { return led.load(); }));
  // From now on every write to the lock fails (renewals read the lock, then update it).
  const auto last_renew = LeaseSpec().value("renewTime", "");
  server_->Control("fail", {{"code", 500},
                            {"count", 100000},
                            {"method", "PUT"},
                            {"pathContains", "/" + ns_ + "/leases/"}});
  const auto cut = Clock::now();
  ASSERT_TRUE(WaitUntil([&] { return !elector.CheckHeld().ok(); }, milliseconds(10000)));
  fence_closed_after_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - cut).count();
  run.join();  // returns on its own: leadership lost
  stop_work_after_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - cut).count();
  EXPECT_FALSE(held_when_stopping) << "the work was stopped while the fence still let it write";
  // A candidate may take the lock lease_duration (3 s) after it saw the last renewal, which
  // was before the cut: the fence must have closed before then.
  EXPECT_LT(fence_closed_after_ms.load(), 3000);
  EXPECT_EQ(LeaseSpec().value("renewTime", ""), last_renew);
  Status s = elector.CheckHeld();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("a does not hold the leader lock Lease " + ns_ + "/lock"),
            std::string::npos)
      << s.ToString();
  std::cout << "fence closed " << fence_closed_after_ms << " ms after renewals began to fail; "
            << "Run returned after " << stop_work_after_ms << " ms (renew deadline 2000 ms, "
            << "lease 3000 ms)\n";
}

TEST_F(LeaderElectionTest, ASuccessorTakesTheReleasedLockAtOnce) {
  LeaderElector first(client_.get(), Config("a"));
  std::atomic<bool> stop_first{false}, first_led{false};
  std::thread run_first([&] {
    first.Run(
        stop_first, [&] { first_led = true; }, [] {});
  });
  ASSERT_TRUE(WaitUntil([&] { return first_led.load(); }));

  auto second_client = kube::ConnectOrFail(server_->Config());
  LeaderElector second(second_client.get(), Config("b"));
  std::atomic<bool> stop_second{false}, second_led{false};
  std::thread run_second([&] {
    second.Run(
        stop_second, [&] { second_led = true; }, [] {});
  });
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_FALSE(second_led) << "two leaders at once";
  EXPECT_FALSE(second.CheckHeld().ok());

  const auto stopped = Clock::now();
  stop_first = true;
  run_first.join();
  ASSERT_TRUE(WaitUntil([&] { return second_led.load(); }));
  // The lease was 3 s: taking it well before means it was released, not left to expire.
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - stopped).count(), 2500);
  EXPECT_TRUE(second.CheckHeld().ok());
  EXPECT_FALSE(first.CheckHeld().ok());
  stop_second = true;
  run_second.join();
}

}  // namespace
}  // namespace flexcsi::controller
