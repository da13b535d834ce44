// LeaderElector against the fake API server: the lock is given up only after the work it
// guards has stopped, and a leader whose renewals fail stops passing CheckHeld within the renew
// deadline, before anyone else may take the lock. The Endpoints lock (csi-provisioner v1.x's) is
// written as client-go's EndpointsLock writes it, and read, waited for and raced for as client-go
// does.
#include "controller/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <set>
#include <thread>

#include "controller/event_recorder.h"
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
  void TearDown() override {
    server_->Control("fail", {{"clear", true}});
    server_->Control("delay", {{"ms", 0}});
  }

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
  LeaderElectionConfig EndpointsConfig(const std::string& identity) const {
    LeaderElectionConfig config = Config(identity);
    config.lock = LeaderElectionConfig::Lock::kEndpoints;
    return config;
  }
  kube::ResourcePath EndpointsPath() const {
    return kube::ResourcePath::Core("endpoints", ns_).Named("lock");
  }
  nlohmann::json LockEndpoints() {
    auto endpoints = client_->Get(EndpointsPath());
    EXPECT_TRUE(endpoints.ok()) << endpoints.status().ToString();
    return endpoints.ok() ? *endpoints : nlohmann::json::object();
  }
  // The LeaderElectionRecord in the Endpoints' annotation, as client-go's json.Unmarshal sees it.
  nlohmann::json EndpointsRecord() {
    const auto annotations =
        LockEndpoints()["metadata"].value("annotations", nlohmann::json::object());
    const auto raw = annotations.value("control-plane.alpha.kubernetes.io/leader", "");
    auto record = nlohmann::json::parse(raw, nullptr, false);
    EXPECT_TRUE(record.is_object()) << raw;
    return record.is_object() ? record : nlohmann::json::object();
  }
  // What client-go's EndpointsLock does for csi-provisioner v1.2.2: Create makes an Endpoints
  // with only metadata and the annotation; Update writes the read object back with the
  // annotation changed, carrying the read resourceVersion.
  // Returns the renewTime written.
  std::string WriteRecordAsClientGo(const std::string& holder, int lease_seconds, int transitions,
                                    nlohmann::json labels = nlohmann::json::object()) {
    const std::string now = NowRfc3339();
    const nlohmann::json record = {{"holderIdentity", holder},
                                   {"leaseDurationSeconds", lease_seconds},
                                   {"acquireTime", now},
                                   {"renewTime", now},
                                   {"leaderTransitions", transitions}};
    auto current = client_->Get(EndpointsPath());
    if (!current.ok()) {
      EXPECT_TRUE(kube::IsNotFound(current.status())) << current.status().ToString();
      nlohmann::json object = {
          {"apiVersion", "v1"},
          {"kind", "Endpoints"},
          {"metadata",
           {{"name", "lock"},
            {"namespace", ns_},
            {"labels", labels},
            {"annotations", {{"control-plane.alpha.kubernetes.io/leader", record.dump()}}}}}};
      auto created = client_->Create(kube::ResourcePath::Core("endpoints", ns_), object);
      EXPECT_TRUE(created.ok()) << created.status().ToString();
      return now;
    }
    (*current)["metadata"]["annotations"]["control-plane.alpha.kubernetes.io/leader"] =
        record.dump();
    auto updated = client_->Update(EndpointsPath(), *current);
    EXPECT_TRUE(updated.ok()) << updated.status().ToString();
    return now;
  }
  // Updates of the lock Endpoints in this test's namespace the server answered with `code`.
  int EndpointsUpdatesAnswered(int code) {
    auto audit = client_->GetPath("/_fake/audit");
    EXPECT_TRUE(audit.ok()) << audit.status().ToString();
    int n = 0;
    for (const auto& e : audit.ok() ? (*audit)["items"] : nlohmann::json::array()) {
      if (e.value("verb", "") == "update" && e.value("resource", "") == "endpoints" &&
          e.value("namespace", "") == ns_ && e.value("code", 0) == code) {
        ++n;
      }
    }
    return n;
  }
  static bool IsMetav1Time(const nlohmann::json& value) {
    static const std::regex rfc3339_seconds(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
    return value.is_string() && std::regex_match(value.get<std::string>(), rfc3339_seconds);
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

TEST_F(LeaderElectionTest, ASlowRenewalMakesWritesWaitNotFail) {
  LeaderElectionConfig config = Config("a");
  config.lease_duration = milliseconds(6000);
  config.renew_deadline = milliseconds(4000);
  config.retry_period = milliseconds(2500);
  LeaderElector elector(client_.get(), config);
  std::atomic<bool> stop{false}, led{false};
  std::thread run([&] { elector.Run(stop, [&] { led = true; }, [] {}); });
  ASSERT_TRUE(WaitUntil([&] { return led.load(); }));
  // Each renewal (a read and an update) now takes about 2 s: with the 2.5 s between renewals,
  // the next one starts after the renew deadline (4 s) has passed since the last one began, so
  // the fence is closed until it lands (about 2.5 s), and yet no renewal fails or comes too
  // late to count.
  server_->Control("delay", {{"ms", 1000}});
  int refused = 0, waited_out = 0;
  const auto until = Clock::now() + milliseconds(9000);
  while (Clock::now() < until) {
    const bool closed = !elector.IsLeader();
    if (!elector.CheckHeld().ok()) ++refused;
    if (closed) ++waited_out;
    std::this_thread::sleep_for(milliseconds(50));
  }
  server_->Control("delay", {{"ms", 0}});
  EXPECT_GT(waited_out, 0) << "the fence never closed: the delay proves nothing";
  EXPECT_EQ(refused, 0) << "a write was refused while the lock stayed ours";
  EXPECT_TRUE(elector.Leading());
  stop = true;
  run.join();
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
  ASSERT_TRUE(WaitUntil([&] { return !elector.IsLeader(); }, milliseconds(10000)));
  fence_closed_after_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - cut).count();
  // A write arriving now waits for the renewal loop's verdict, and is refused: never let through.
  EXPECT_EQ(elector.CheckHeld().code(), Code::kFailedPrecondition);
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

TEST_F(LeaderElectionTest, EndpointsLockIsCreatedRenewedAndReleasedAsClientGoWritesIt) {
  LeaderElector elector(client_.get(), EndpointsConfig("a"));
  std::atomic<bool> stop{false}, led{false};
  std::thread run([&] {
    elector.Run(
        stop, [&] { led = true; }, [] {});
  });
  ASSERT_TRUE(WaitUntil([&] { return led.load(); }));
  EXPECT_TRUE(elector.CheckHeld().ok());
  EXPECT_EQ(elector.LockKind(), "Endpoints");

  // Created as client-go's EndpointsLock.Create makes it: metadata and the annotation only.
  const auto endpoints = LockEndpoints();
  EXPECT_FALSE(endpoints.contains("subsets")) << endpoints.dump();
  EXPECT_EQ(endpoints["metadata"]["annotations"].size(), 1u) << endpoints.dump();
  const auto first = EndpointsRecord();
  std::set<std::string> keys;
  for (const auto& [key, value] : first.items()) keys.insert(key);
  // LeaderElectionRecord's JSON names (resourcelock/interface.go), nothing else.
  EXPECT_EQ(keys, (std::set<std::string>{"holderIdentity", "leaseDurationSeconds", "acquireTime",
                                         "renewTime", "leaderTransitions"}))
      << first.dump();
  EXPECT_EQ(first["holderIdentity"], "a");
  EXPECT_TRUE(first["leaseDurationSeconds"].is_number_integer()) << first.dump();
  EXPECT_EQ(first["leaseDurationSeconds"], 3);
  EXPECT_EQ(first["leaderTransitions"], 0);
  EXPECT_TRUE(IsMetav1Time(first["acquireTime"])) << first.dump();
  EXPECT_TRUE(IsMetav1Time(first["renewTime"])) << first.dump();
  // The one lock kind named: no Lease or ConfigMap beside it.
  EXPECT_TRUE(kube::IsNotFound(
      client_->Get(kube::ResourcePath::Group("coordination.k8s.io/v1", "leases", ns_).Named("lock"))
          .status()));
  EXPECT_TRUE(kube::IsNotFound(
      client_->Get(kube::ResourcePath::Core("configmaps", ns_).Named("lock")).status()));

  // Renewed (metav1.Time has whole seconds: within a few of them), still its first acquisition.
  ASSERT_TRUE(WaitUntil([&] { return EndpointsRecord()["renewTime"] != first["renewTime"]; },
                        milliseconds(5000)));
  const auto renewed = EndpointsRecord();
  EXPECT_EQ(renewed["holderIdentity"], "a");
  EXPECT_EQ(renewed["acquireTime"], first["acquireTime"]);
  EXPECT_EQ(renewed["leaderTransitions"], 0);
  EXPECT_TRUE(elector.CheckHeld().ok());

  stop = true;
  run.join();
  // Released as client-go's ReleaseOnCancel does: no holder, a 1 s lease.
  const auto released = EndpointsRecord();
  EXPECT_EQ(released["holderIdentity"], "") << released.dump();
  EXPECT_EQ(released["leaseDurationSeconds"], 1);
  EXPECT_FALSE(elector.CheckHeld().ok());
}

TEST_F(LeaderElectionTest, EndpointsLockOfClientGoIsTakenOnlyOnceItsLeaseHasRunOut) {
  // csi-provisioner v1.2.2 holds the lock (its identity is its sanitised hostname) and renews.
  WriteRecordAsClientGo("provisioner-host", 2, 4, {{"kept", "yes"}});
  auto second_client = kube::ConnectOrFail(server_->Config());
  LeaderElector elector(second_client.get(), EndpointsConfig("b"));
  std::atomic<bool> stop{false}, led{false};
  std::thread run([&] {
    elector.Run(
        stop, [&] { led = true; }, [] {});
  });
  // metav1.Time has whole seconds: a renewal within the same second changes nothing a reader
  // can see (client-go compares records), so the last renewal is when the last renewTime came.
  std::string renew_time;
  auto last_renewal = Clock::now();
  const auto renew = [&] {
    const auto before = Clock::now();
    const std::string written = WriteRecordAsClientGo("provisioner-host", 2, 4);
    if (written != renew_time) {
      renew_time = written;
      last_renewal = before;
    }
  };
  const auto renewing_until = Clock::now() + milliseconds(3000);
  while (Clock::now() < renewing_until) {
    renew();
    std::this_thread::sleep_for(milliseconds(300));
  }
  EXPECT_FALSE(led) << "took a lock that was renewed all along";
  EXPECT_EQ(EndpointsRecord()["holderIdentity"], "provisioner-host");
  // Killed: it renews no more. Its record says 2 s, counted on b's clock from b's sight of it.
  renew();
  ASSERT_TRUE(WaitUntil([&] { return led.load(); }, milliseconds(10000)));
  const auto after_ms =
      std::chrono::duration_cast<milliseconds>(Clock::now() - last_renewal).count();
  EXPECT_GE(after_ms, 2000) << "taken before the lease ran out";
  EXPECT_LT(after_ms, 5000);
  const auto record = EndpointsRecord();
  EXPECT_EQ(record["holderIdentity"], "b");
  EXPECT_EQ(record["leaderTransitions"], 5) << "client-go counts a change of holder";
  EXPECT_EQ(record["leaseDurationSeconds"], 3);
  EXPECT_TRUE(IsMetav1Time(record["acquireTime"])) << record.dump();
  // The read object was written back: what else it carried is kept.
  EXPECT_EQ(LockEndpoints()["metadata"]["labels"].value("kept", ""), "yes");
  std::cout << "the Endpoints lock of a dead client-go holder (lease 2 s) was taken " << after_ms
            << " ms after its last renewal\n";
  stop = true;
  run.join();
}

TEST_F(LeaderElectionTest, OfTwoCandidatesForAnExpiredEndpointsLockTheOneAnswered409Waits) {
  WriteRecordAsClientGo("gone", 1, 0);
  // Every request takes 150 ms: each candidate's read and write of the lock are far apart, so
  // both write with the resourceVersion they read and the server answers one of them 409.
  server_->Control("delay", {{"ms", 150}});
  const int conflicts_before = EndpointsUpdatesAnswered(409);
  auto client_b = kube::ConnectOrFail(server_->Config());
  auto client_c = kube::ConnectOrFail(server_->Config());
  LeaderElector b(client_b.get(), EndpointsConfig("b"));
  LeaderElector c(client_c.get(), EndpointsConfig("c"));
  std::atomic<bool> stop{false}, b_led{false}, c_led{false};
  std::thread run_b([&] {
    b.Run(
        stop, [&] { b_led = true; }, [] {});
  });
  std::thread run_c([&] {
    c.Run(
        stop, [&] { c_led = true; }, [] {});
  });
  ASSERT_TRUE(WaitUntil([&] { return b_led || c_led; }, milliseconds(15000)));
  // The loser saw the winner's record afterwards and waits for it to run out, which it never
  // does while the winner renews.
  std::this_thread::sleep_for(milliseconds(4000));
  EXPECT_NE(b_led.load(), c_led.load()) << "two leaders at once";
  const std::string winner = b_led ? "b" : "c";
  EXPECT_EQ(EndpointsRecord()["holderIdentity"], winner);
  EXPECT_EQ(EndpointsRecord()["leaderTransitions"], 1);
  EXPECT_NE(b.CheckHeld().ok(), c.CheckHeld().ok());
  server_->Control("delay", {{"ms", 0}});
  const int conflicts = EndpointsUpdatesAnswered(409) - conflicts_before;
  EXPECT_GE(conflicts, 1) << "the candidates never wrote with the same resourceVersion";
  std::cout << "two candidates for an expired Endpoints lock: " << winner << " won, " << conflicts
            << " update(s) answered 409\n";
  stop = true;
  run_b.join();
  run_c.join();
}

TEST(LeaderElectionLockFlagTest, NamesEveryKindAndSaysWhichToChooseForABadValue) {
  using Lock = LeaderElectionConfig::Lock;
  EXPECT_EQ(*ParseLeaderElectionLock("auto"), Lock::kAuto);
  EXPECT_EQ(*ParseLeaderElectionLock("lease"), Lock::kLease);
  EXPECT_EQ(*ParseLeaderElectionLock("configmap"), Lock::kConfigMap);
  EXPECT_EQ(*ParseLeaderElectionLock("endpoints"), Lock::kEndpoints);
  auto bad = ParseLeaderElectionLock("endpoint");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("\"endpoint\" is not auto, lease, configmap or endpoints"),
            std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("endpoints for v1.x"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi::controller
