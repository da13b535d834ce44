// Watch and the Informer against the fake API server: event streams, server-side timeouts,
// 410 Gone for compacted history, and re-listing after the stream is lost.
#include "kube/informer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <thread>

#include "tests/support/api_server_fixture.h"

namespace flexcsi::kube {
namespace {

using Json = nlohmann::json;

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

Json LabelledConfigMap(const std::string& name, bool labelled = true) {
  Json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}};
  if (labelled) cm["metadata"]["labels"] = {{"watched", "yes"}};
  return cm;
}

// Runs an Informer on labelled configmaps of one namespace and records its events.
class InformerHarness {
 public:
  InformerHarness(KubeClient* client, const std::string& ns) : ns_(ns) {
    ListOptions options;
    options.label_selector = "watched=yes";
    options.page_size = 2;  // lists take several pages
    informer_ = std::make_unique<Informer>(client, ResourcePath::Core("configmaps", ns), options);
    informer_->OnEvent([this](const std::string& type, const Json& object) {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(type + " " + object["metadata"]["name"].get<std::string>());
    });
  }
  ~InformerHarness() { Stop(); }
  void Start() {
    stop_ = false;
    runner_ = std::thread([this] { informer_->Run(stop_); });
  }
  void Stop() {
    stop_ = true;
    if (runner_.joinable()) runner_.join();
  }
  int Count(const std::string& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(std::count(events_.begin(), events_.end(), event));
  }
  Informer& informer() { return *informer_; }
  std::string Key(const std::string& name) const { return ns_ + "/" + name; }

 private:
  std::string ns_;
  std::unique_ptr<Informer> informer_;
  std::atomic<bool> stop_{false};
  std::thread runner_;
  std::mutex mutex_;
  std::vector<std::string> events_;
};

// One server for the suite; each test in its own namespace.
class InformerTest : public SharedApiServerTest<InformerTest> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_->process().running());
    ClientConfig config = server_->Config();
    config.request_timeout = std::chrono::seconds(5);
    client_ = ConnectOrFail(config);
    ASSERT_NE(client_, nullptr);
    ns_ = NamespaceForCurrentTest();
    CreateNamespace(client_.get(), ns_);
  }
  ResourcePath ConfigMaps() const { return ResourcePath::Core("configmaps", ns_); }

  std::unique_ptr<KubeClient> client_;
  std::string ns_;
};

TEST_F(InformerTest, WatchStreamsEventsAndEndsOnServerTimeout) {
  StatusOr<Json> list = client_->List(ConfigMaps());
  ASSERT_TRUE(list.ok());
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    client_->Create(ConfigMaps(), LabelledConfigMap("w"));
    client_->Patch(ConfigMaps().Named("w"), PatchType::kMerge, {{"data", {{"k", "v"}}}});
    client_->Delete(ConfigMaps().Named("w"));
  });
  WatchOptions options;
  options.resource_version = (*list)["metadata"]["resourceVersion"];
  // Long enough for the writer's three calls on a busy machine; the server's timeout ends it.
  options.timeout_seconds = 3;
  std::vector<std::string> seen;
  auto start = std::chrono::steady_clock::now();
  Status s = client_->Watch(ConfigMaps(), options, [&](const WatchEvent& e) {
    if (e.type != "BOOKMARK") {
      seen.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
    }
    return true;
  });
  writer.join();
  EXPECT_TRUE(s.ok()) << s.ToString();  // the server's timeoutSeconds ended it
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2900));
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED w", "MODIFIED w", "DELETED w"}));
}

TEST_F(InformerTest, WatchFromCompactedVersionIsOutOfRange) {
  StatusOr<Json> list = client_->List(ConfigMaps());
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("a")).ok());
  server_->Control("compact");
  WatchOptions options;
  options.resource_version = (*list)["metadata"]["resourceVersion"];
  options.timeout_seconds = 5;
  Status s = client_->Watch(ConfigMaps(), options, [](const WatchEvent&) { return true; });
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
  EXPECT_EQ(ApiReason(s), "Expired");
}

TEST_F(InformerTest, WatchStopsOnHandlerOrStopFlag) {
  ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("x")).ok());
  WatchOptions options;  // no resourceVersion: existing objects arrive as ADDED first
  int calls = 0;
  Status s = client_->Watch(ConfigMaps(), options, [&](const WatchEvent&) { return ++calls < 1; });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(calls, 1);

  std::atomic<bool> stop{false};
  options.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  auto start = std::chrono::steady_clock::now();
  s = client_->Watch(ConfigMaps(), options, [](const WatchEvent&) { return true; });
  stopper.join();
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST_F(InformerTest, CacheFollowsEventsAcrossPagedList) {
  ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("before")).ok());
  ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("other", /*labelled=*/false)).ok());
  for (int i = 0; i < 3; ++i) {  // more than one page
    ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("page-" + std::to_string(i))).ok());
  }
  InformerHarness h(client_.get(), ns_);
  h.Start();
  ASSERT_TRUE(WaitFor([&] { return h.informer().HasSynced(); }));
  EXPECT_EQ(h.informer().List().size(), 4u);
  EXPECT_FALSE(h.informer().Get(h.Key("other")).has_value());  // the selector applies
  EXPECT_EQ(h.Count("ADDED before"), 1);

  ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("live")).ok());
  ASSERT_TRUE(
      client_->Patch(ConfigMaps().Named("before"), PatchType::kMerge, {{"data", {{"k", "v"}}}})
          .ok());
  ASSERT_TRUE(client_->Delete(ConfigMaps().Named("page-0")).ok());
  ASSERT_TRUE(WaitFor([&] { return h.Count("DELETED page-0") == 1; }));
  EXPECT_EQ(h.Count("ADDED live"), 1);
  EXPECT_EQ(h.Count("MODIFIED before"), 1);
  std::optional<Json> before = h.informer().Get(h.Key("before"));
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ((*before)["data"]["k"], "v");
  EXPECT_FALSE(h.informer().Get(h.Key("page-0")).has_value());
}

// Watching() says a stream is open although an idle collection sends nothing, and the cache's
// resourceVersion reaches every event's: what a reader that must see its own writes waits for.
TEST_F(InformerTest, WatchingOnceTheStreamOpensAndVersionFollowsEvents) {
  InformerHarness h(client_.get(), ns_);
  EXPECT_FALSE(h.informer().Watching());
  h.Start();
  ASSERT_TRUE(WaitFor([&] { return h.informer().Watching(); }));
  EXPECT_TRUE(h.informer().HasSynced());
  EXPECT_FALSE(h.informer().ResourceVersion().empty());
  auto made = client_->Create(ConfigMaps(), LabelledConfigMap("new"));
  ASSERT_TRUE(made.ok());
  const std::string rv = (*made)["metadata"]["resourceVersion"];
  ASSERT_TRUE(WaitFor([&] { return h.informer().ResourceVersion() == rv; }));
  EXPECT_TRUE(h.informer().Get(h.Key("new")).has_value());
  h.Stop();
  EXPECT_FALSE(h.informer().Watching());
}

TEST_F(InformerTest, RelistReportsObjectsDeletedMeanwhile) {
  ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("stays")).ok());
  ASSERT_TRUE(client_->Create(ConfigMaps(), LabelledConfigMap("goes")).ok());
  InformerHarness h(client_.get(), ns_);
  h.Start();
  ASSERT_TRUE(WaitFor([&] { return h.informer().HasSynced(); }));
  h.Stop();
  ASSERT_TRUE(client_->Delete(ConfigMaps().Named("goes")).ok());  // while nobody watches
  h.Start();
  ASSERT_TRUE(WaitFor([&] { return h.Count("DELETED goes") == 1; }));
  EXPECT_FALSE(h.informer().Get(h.Key("goes")).has_value());
  EXPECT_TRUE(h.informer().Get(h.Key("stays")).has_value());
}

TEST_F(InformerTest, FailingListIsRetriedAndReported) {
  // A group this cluster does not serve (like snapshots without their CRDs): never synced, and
  // the reason is there for the caller to report.
  Informer informer(client_.get(), ResourcePath::Group("example.com/v1", "widgets", ns_));
  std::atomic<bool> stop{false};
  std::thread runner([&] { informer.Run(stop); });
  bool reported = WaitFor([&] { return IsNotFound(informer.LastError()); });
  stop = true;
  runner.join();
  EXPECT_TRUE(reported) << informer.LastError().ToString();
  EXPECT_FALSE(informer.HasSynced());
}

// Owns its server: restarts it. The restarted server keeps its objects but not its watch
// history, like an API server whose watch cache is gone; the stream breaks and the informer
// must list again (every object reported as ADDED once more) and keep watching.
TEST(InformerRestartTest, RelistsAfterServerRestart) {
  TestApiServer server;
  ASSERT_TRUE(server.Start().ok());
  ClientConfig config = server.Config();
  config.request_timeout = std::chrono::seconds(5);
  std::unique_ptr<KubeClient> client = ConnectOrFail(config);
  ResourcePath cms = ResourcePath::Core("configmaps", "default");
  ASSERT_TRUE(client->Create(cms, LabelledConfigMap("kept")).ok());
  InformerHarness h(client.get(), "default");
  h.Start();
  ASSERT_TRUE(WaitFor([&] { return h.Count("ADDED kept") == 1; }));

  ASSERT_TRUE(server.process().Restart().ok());
  ASSERT_TRUE(WaitFor([&] { return h.Count("ADDED kept") == 2; }, std::chrono::seconds(20)));
  ASSERT_TRUE(client->Create(cms, LabelledConfigMap("after")).ok());
  ASSERT_TRUE(WaitFor([&] { return h.Count("ADDED after") == 1; }));
  EXPECT_EQ(h.informer().List().size(), 2u);
}

}  // namespace
}  // namespace flexcsi::kube
