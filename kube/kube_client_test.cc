// The client against the strict local API server (tests/apiserver) over real TLS: both kinds of
// credentials, trust, every verb with its server-side rules, retries and a dying server.
#include "kube/kube_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/command_runner.h"
#include "kube/discovery.h"
#include "tests/support/api_server_fixture.h"

namespace flexcsi::kube {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"suite", "kube"}}}}},
          {"data", {{"key", value}}}};
}

// A minimal HTTP CONNECT proxy on 127.0.0.1 that records the tunnels asked of it, so a test can
// see that proxy-url is really used.
class ConnectProxy {
 public:
  ConnectProxy() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listen_fd_, 8);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~ConnectProxy() {
    stop_ = true;
    acceptor_.join();
    for (std::thread& t : tunnels_) t.join();
    close(listen_fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int client = accept(listen_fd_, nullptr, nullptr);
      if (client >= 0) tunnels_.emplace_back([this, client] { Tunnel(client); });
    }
  }
  void Tunnel(int client) {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && read(client, &c, 1) == 1) head += c;
    std::string line = head.substr(0, head.find("\r\n"));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(line);
    }
    // "CONNECT host:port HTTP/1.1"
    std::string target = line.substr(8, line.find(' ', 8) - 8);
    int port = std::stoi(target.substr(target.rfind(':') + 1));
    int upstream = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
      if (write(client, ok, sizeof(ok) - 1) > 0) {
        pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
        char buf[16384];
        while (!stop_) {
          if (poll(fds, 2, 100) <= 0) continue;
          int from = (fds[0].revents & (POLLIN | POLLHUP)) ? 0 : 1;
          ssize_t n = read(fds[from].fd, buf, sizeof(buf));
          if (n <= 0 || write(fds[1 - from].fd, buf, n) != n) break;
        }
      }
    }
    close(upstream);
    close(client);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> tunnels_;  // only the acceptor adds; joined after it
  std::mutex mutex_;
  std::vector<std::string> requests_;
};

// One fake API server for the whole suite; every test works in a namespace of its own.
class KubeClientTest : public SharedApiServerTest<KubeClientTest> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_->process().running());
    client_ = ConnectOrFail(server_->Config());
    ASSERT_NE(client_, nullptr);
    ns_ = NamespaceForCurrentTest();
    CreateNamespace(client_.get(), ns_);
    char tmpl[] = "/tmp/kube_client_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    server_->Control("fail", {{"clear", true}});
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Control(const std::string& action, Json body) {
    if (action == "fail" && !body.contains("clear")) body["pathContains"] = "/" + ns_ + "/";
    server_->Control(action, body);
  }
  ResourcePath ConfigMaps() const { return ResourcePath::Core("configmaps", ns_); }

  std::unique_ptr<KubeClient> client_;
  std::string ns_;
  std::string dir_;  // scratch files of this test
};

std::unique_ptr<KubeClient> Connect(ClientConfig config) {
  return ConnectOrFail(std::move(config));
}

TEST_F(KubeClientTest, DiscoveryTellsServedResourcesAndTheVersion) {
  EXPECT_EQ(true, *ServesResource(*client_, "v1", "configmaps"));
  EXPECT_EQ(true, *ServesResource(*client_, "storage.k8s.io/v1", "csinodes"));
  EXPECT_EQ(false, *ServesResource(*client_, "storage.k8s.io/v1", "nothings"));
  EXPECT_EQ("storage.k8s.io/v1", *CsiNodeGroupVersion(*client_));
  // a group version that is not served at all is an answer, not an error
  auto absent = ServesResource(*client_, "snapshot.example.io/v9", "things");
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_FALSE(*absent);
  auto version = GetServerVersion(*client_);
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(1, version->major);
  EXPECT_GT(version->minor, 0);
}

TEST_F(KubeClientTest, ClientCertificateAndTokenBothAuthenticate) {
  ASSERT_TRUE(client_->Create(ConfigMaps(), ConfigMap("cm", "v")).ok());
  EXPECT_EQ(client_->DefaultNamespace(), "default");  // the kubeconfig's context says so
  std::unique_ptr<KubeClient> by_token = Connect(server_->Config(/*token=*/true));
  StatusOr<Json> got = by_token->Get(ConfigMaps().Named("cm"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)["data"]["key"], "v");
}

TEST_F(KubeClientTest, NoOrWrongCredentialsGet401) {
  ClientConfig anonymous = client_->config();
  anonymous.client_cert_pem.clear();
  anonymous.client_key_pem.clear();
  StatusOr<Json> got = Connect(anonymous)->Get(ConfigMaps().Named("x"));
  EXPECT_EQ(got.status().code(), Code::kUnauthenticated) << got.status().ToString();
  EXPECT_EQ(ApiReason(got.status()), "Unauthorized");

  anonymous.token = "not-the-token";
  got = Connect(anonymous)->Get(ConfigMaps().Named("x"));
  EXPECT_EQ(got.status().code(), Code::kUnauthenticated) << got.status().ToString();
  EXPECT_EQ(got.status().message().find("not-the-token"), std::string::npos);
}

TEST_F(KubeClientTest, ServerCertificateMustChainToConfiguredCa) {
  // A CA of our own that never signed the server's certificate.
  std::string other = dir_ + "/other-ca";
  StatusOr<std::string> made =
      RunCommand({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                  "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", other + ".key", "-out",
                  other + ".crt", "-days", "1", "-subj", "/CN=other-ca"},
                 std::chrono::seconds(30));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ClientConfig config = client_->config();
  config.ca_pem = ReadFile(other + ".crt");
  config.max_retries = 3;
  auto start = std::chrono::steady_clock::now();
  StatusOr<Json> got = Connect(config)->Get(ConfigMaps().Named("x"));
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().ToString();
  EXPECT_NE(got.status().message().find("certificate"), std::string::npos);
  // Not retried: an untrusted certificate does not become trusted by waiting.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(KubeClientTest, InsecureSkipsVerificationAndNoCaMeansSystemRoots) {
  ClientConfig config = client_->config();
  config.ca_pem.clear();
  config.max_retries = 0;
  StatusOr<Json> got = Connect(config)->Get(ConfigMaps().Named("x"));
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().ToString();  // not trusted
  config.insecure_skip_tls_verify = true;
  got = Connect(config)->Get(ConfigMaps().Named("x"));
  EXPECT_TRUE(IsNotFound(got.status())) << got.status().ToString();  // reached the API
}

TEST_F(KubeClientTest, InClusterServiceAccountReachesServer) {
  std::string sa = dir_ + "/serviceaccount";
  fs::create_directories(sa);
  std::ofstream(sa + "/token") << "fake-token\n";
  fs::copy_file(server_->process().ca_path(), sa + "/ca.crt");
  std::ofstream(sa + "/namespace") << ns_ << "\n";
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", std::to_string(server_->process().port()).c_str(), 1);
  ConfigFlags flags;
  flags.in_cluster = true;
  flags.service_account_dir = sa;
  StatusOr<ClientConfig> config = LoadClientConfig(flags);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  std::unique_ptr<KubeClient> client = Connect(*config);
  EXPECT_EQ(client->DefaultNamespace(), ns_);
  ASSERT_TRUE(client->Create(ConfigMaps(), ConfigMap("from-pod", "v")).ok());
  std::ofstream(sa + "/token") << "revoked-token\n";  // rotated to something the server refuses
  EXPECT_EQ(client->Get(ConfigMaps().Named("from-pod")).status().code(), Code::kUnauthenticated);
}

TEST_F(KubeClientTest, TlsServerNameIsWhatTheCertificateMustName) {
  ClientConfig config = client_->config();
  config.tls_server_name = "localhost";  // in the server's SANs; the URL says 127.0.0.1
  ASSERT_TRUE(Connect(config)->Create(ConfigMaps(), ConfigMap("named", "v")).ok());
  config.tls_server_name = "kubernetes.example";  // not in the SANs
  config.max_retries = 0;
  StatusOr<Json> got = Connect(config)->Get(ConfigMaps().Named("named"));
  EXPECT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("kubernetes.example"), std::string::npos)
      << got.status().ToString();
}

TEST_F(KubeClientTest, ProxyUrlTunnelsAndLoopbackSkipsEnvironmentProxy) {
  ConnectProxy proxy;
  ClientConfig config = client_->config();
  config.proxy_url = "http://127.0.0.1:" + std::to_string(proxy.port());
  StatusOr<Json> created = Connect(config)->Create(ConfigMaps(), ConfigMap("proxied", "v"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::vector<std::string> requests = proxy.requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ(requests[0].rfind("CONNECT 127.0.0.1:" + std::to_string(server_->process().port()), 0),
            0u)
      << requests[0];

  // An environment proxy that does not exist: Go never proxies loopback, neither do we.
  setenv("https_proxy", "http://127.0.0.1:1", 1);
  setenv("HTTPS_PROXY", "http://127.0.0.1:1", 1);
  StatusOr<Json> got = Connect(client_->config())->Get(ConfigMaps().Named("proxied"));
  unsetenv("https_proxy");
  unsetenv("HTTPS_PROXY");
  EXPECT_TRUE(got.ok()) << got.status().ToString();
}

TEST_F(KubeClientTest, CreateConflictsAndAlreadyExists) {
  StatusOr<Json> created = client_->Create(ConfigMaps(), ConfigMap("cm", "1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  StatusOr<Json> again = client_->Create(ConfigMaps(), ConfigMap("cm", "1"));
  EXPECT_TRUE(IsAlreadyExists(again.status())) << again.status().ToString();
  EXPECT_EQ(ApiReason(again.status()), "AlreadyExists");

  Json fresh = *created;
  fresh["data"]["key"] = "2";
  StatusOr<Json> updated = client_->Update(ConfigMaps().Named("cm"), fresh);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_NE((*updated)["metadata"]["resourceVersion"], (*created)["metadata"]["resourceVersion"]);

  Json stale = *created;  // still carries the first resourceVersion
  stale["data"]["key"] = "3";
  StatusOr<Json> conflict = client_->Update(ConfigMaps().Named("cm"), stale);
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status().ToString();
  EXPECT_EQ(ApiReason(conflict.status()), "Conflict");
  EXPECT_EQ((*client_->Get(ConfigMaps().Named("cm")))["data"]["key"], "2");

  StatusOr<Json> missing = client_->Get(ConfigMaps().Named("absent"));
  EXPECT_TRUE(IsNotFound(missing.status())) << missing.status().ToString();
}

TEST_F(KubeClientTest, AClosedWriteFenceSendsNoWriteButReadsGoOn) {
  std::atomic<bool> closed{false};
  client_->SetWriteFence([&closed]() -> Status {
    if (closed) return FailedPrecondition("not the leader");
    return Status::Ok();
  });
  StatusOr<Json> created = client_->Create(ConfigMaps(), ConfigMap("fenced", "1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  closed = true;
  const uint64_t sent_before = client_->Stats().requests;
  Json changed = *created;
  changed["data"]["key"] = "2";
  StatusOr<Json> updated = client_->Update(ConfigMaps().Named("fenced"), changed);
  EXPECT_EQ(updated.status().code(), Code::kFailedPrecondition) << updated.status().ToString();
  EXPECT_NE(updated.status().message().find("not the leader"), std::string::npos);
  EXPECT_NE(updated.status().message().find("PUT"), std::string::npos);
  EXPECT_FALSE(client_->Create(ConfigMaps(), ConfigMap("other", "1")).ok());
  EXPECT_FALSE(
      client_->Patch(ConfigMaps().Named("fenced"), PatchType::kMerge, {{"data", {{"key", "3"}}}})
          .ok());
  EXPECT_FALSE(client_->Delete(ConfigMaps().Named("fenced")).ok());
  EXPECT_EQ(client_->Stats().requests, sent_before) << "a fenced write went out";

  StatusOr<Json> read = client_->Get(ConfigMaps().Named("fenced"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ((*read)["data"]["key"], "1");
  EXPECT_TRUE(IsNotFound(client_->Get(ConfigMaps().Named("other")).status()));

  closed = false;
  EXPECT_TRUE(client_->Update(ConfigMaps().Named("fenced"), changed).ok());
}

TEST_F(KubeClientTest, ListFollowsContinueAcrossPages) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client_->Create(ConfigMaps(), ConfigMap("cm-" + std::to_string(i), "v")).ok());
  }
  Json other = ConfigMap("unlabelled", "v");
  other["metadata"].erase("labels");
  ASSERT_TRUE(client_->Create(ConfigMaps(), other).ok());
  ListOptions options;
  options.page_size = 3;
  options.label_selector = "suite=kube";
  StatusOr<Json> list = client_->List(ConfigMaps(), options);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ((*list)["items"].size(), 7u);  // three pages of 3, 3 and 1
  std::set<std::string> names;
  for (const Json& item : (*list)["items"]) names.insert(item["metadata"]["name"]);
  EXPECT_EQ(names.size(), 7u);
  EXPECT_FALSE((*list)["metadata"].value("resourceVersion", "").empty());
}

TEST_F(KubeClientTest, PatchTypes) {
  ASSERT_TRUE(client_->Create(ConfigMaps(), ConfigMap("p", "v")).ok());
  ResourcePath cm = ConfigMaps().Named("p");
  StatusOr<Json> merged =
      client_->Patch(cm, PatchType::kMerge, {{"data", {{"added", "m"}, {"key", nullptr}}}});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ((*merged)["data"], Json({{"added", "m"}}));

  StatusOr<Json> strategic = client_->Patch(cm, PatchType::kStrategicMerge,
                                            {{"metadata", {{"finalizers", {"example.com/f"}}}}});
  ASSERT_TRUE(strategic.ok()) << strategic.status().ToString();
  EXPECT_EQ((*strategic)["metadata"]["finalizers"], Json({"example.com/f"}));

  Json ops = Json::array({{{"op", "test"}, {"path", "/data/added"}, {"value", "m"}},
                          {{"op", "replace"}, {"path", "/data/added"}, {"value", "j"}}});
  StatusOr<Json> json_patched = client_->Patch(cm, PatchType::kJson, ops);
  ASSERT_TRUE(json_patched.ok()) << json_patched.status().ToString();
  EXPECT_EQ((*json_patched)["data"]["added"], "j");
  StatusOr<Json> failed_test = client_->Patch(cm, PatchType::kJson, ops);  // "m" is gone now
  EXPECT_FALSE(failed_test.ok());
  EXPECT_EQ((*client_->Get(cm))["data"]["added"], "j");
}

TEST_F(KubeClientTest, DeletePreconditionsProtectARecreatedNamesake) {
  StatusOr<Json> first = client_->Create(ConfigMaps(), ConfigMap("d", "1"));
  ASSERT_TRUE(first.ok());
  std::string old_uid = (*first)["metadata"]["uid"];
  ASSERT_TRUE(client_->Delete(ConfigMaps().Named("d")).ok());
  StatusOr<Json> second = client_->Create(ConfigMaps(), ConfigMap("d", "2"));
  ASSERT_TRUE(second.ok());

  DeleteOptions stale;
  stale.precondition_uid = old_uid;
  StatusOr<Json> refused = client_->Delete(ConfigMaps().Named("d"), stale);
  EXPECT_TRUE(IsConflict(refused.status())) << refused.status().ToString();
  DeleteOptions stale_rv;
  stale_rv.precondition_resource_version = (*first)["metadata"]["resourceVersion"];
  EXPECT_TRUE(IsConflict(client_->Delete(ConfigMaps().Named("d"), stale_rv).status()));
  EXPECT_TRUE(client_->Get(ConfigMaps().Named("d")).ok());

  DeleteOptions exact;
  exact.precondition_uid = (*second)["metadata"]["uid"];
  exact.precondition_resource_version = (*second)["metadata"]["resourceVersion"];
  exact.propagation_policy = "Background";
  ASSERT_TRUE(client_->Delete(ConfigMaps().Named("d"), exact).ok());
  EXPECT_TRUE(IsNotFound(client_->Get(ConfigMaps().Named("d")).status()));
}

TEST_F(KubeClientTest, DryRunWritesStoreNothing) {
  WriteOptions dry;
  dry.dry_run = true;
  StatusOr<Json> created = client_->Create(ConfigMaps(), ConfigMap("dry", "v"), dry);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)["metadata"]["name"], "dry");
  EXPECT_TRUE(IsNotFound(client_->Get(ConfigMaps().Named("dry")).status()));

  StatusOr<Json> real = client_->Create(ConfigMaps(), ConfigMap("dry", "v"));
  ASSERT_TRUE(real.ok());
  ASSERT_TRUE(client_
                  ->Patch(ConfigMaps().Named("dry"), PatchType::kMerge,
                          {{"data", {{"key", "changed"}}}}, dry)
                  .ok());
  DeleteOptions dry_delete;
  dry_delete.dry_run = true;
  ASSERT_TRUE(client_->Delete(ConfigMaps().Named("dry"), dry_delete).ok());
  StatusOr<Json> after = client_->Get(ConfigMaps().Named("dry"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["data"]["key"], "v");
  EXPECT_EQ((*after)["metadata"]["resourceVersion"], (*real)["metadata"]["resourceVersion"]);
}

TEST_F(KubeClientTest, TooManyRequestsAndServerErrorsAreRetried) {
  Control("fail", {{"code", 429}, {"count", 1}, {"retryAfterSeconds", 1}, {"method", "POST"}});
  Control("fail", {{"code", 500}, {"count", 2}, {"method", "POST"}});
  auto start = std::chrono::steady_clock::now();
  StatusOr<Json> created = client_->Create(ConfigMaps(), ConfigMap("retried", "v"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  // The 429 asked for a second's pause, and it was honoured.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(950));

  // More failures than retries: the last answer, as kUnavailable with the server's reason.
  ClientConfig few = client_->config();
  few.max_retries = 1;
  Control("fail", {{"code", 503}, {"count", 5}, {"retryAfterSeconds", 0}, {"method", "GET"}});
  StatusOr<Json> got = Connect(few)->Get(ConfigMaps().Named("retried"));
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().ToString();
  EXPECT_EQ(ApiReason(got.status()), "ServiceUnavailable");
  Control("fail", {{"clear", true}});
}

// Retries after 5xx and a watch's opening request pass the client-side rate limit like any
// first attempt: one token a second, none saved up, so each of them waits for its own.
TEST_F(KubeClientTest, RetriesAndWatchesPassTheRateLimitToo) {
  ClientConfig limited = client_->config();
  limited.rate_limit = RateLimit{1, 1};
  std::unique_ptr<KubeClient> client = Connect(limited);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Stats().rate_limit.has_value());
  Control("fail", {{"code", 500}, {"count", 2}, {"retryAfterSeconds", 0}, {"method", "POST"}});
  StatusOr<Json> created = client->Create(ConfigMaps(), ConfigMap("limited", "v"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  KubeClient::RequestStats after_create = client->Stats();
  EXPECT_EQ(after_create.requests, 3u) << "the create and its two retries";
  EXPECT_EQ(after_create.delayed_requests, 2u) << "each retry waited for its token";

  WatchOptions watch;
  watch.timeout_seconds = 1;
  Status watched = client->Watch(ConfigMaps(), watch, [](const WatchEvent&) { return true; });
  EXPECT_TRUE(watched.ok()) << watched.ToString();
  KubeClient::RequestStats after_watch = client->Stats();
  EXPECT_EQ(after_watch.requests, 4u);
  EXPECT_EQ(after_watch.delayed_requests, 3u) << "the watch waited for its token";
  EXPECT_FALSE(client_->Stats().rate_limit.has_value()) << "no limit unless configured";

  ClientConfig bad = client_->config();
  bad.rate_limit = RateLimit{5, -1};
  auto refused = KubeClient::Create(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--burst"), std::string::npos);
}

// Owns its server: it kills it.
TEST(KubeClientCrashTest, KilledServerGivesUnavailableWithinTimeout) {
  TestApiServer server;
  ASSERT_TRUE(server.Start().ok());
  server.Control("delay", {{"ms", 3000}});
  ClientConfig config = server.Config();
  config.request_timeout = std::chrono::seconds(8);
  config.max_retries = 2;  // reconnecting to a dead server: refused at once, twice
  std::unique_ptr<KubeClient> client = Connect(config);
  std::atomic<bool> done{false};
  Status result;
  std::thread call([&] {
    result = client->Get(ResourcePath::Core("configmaps", "default").Named("any")).status();
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(done.load());  // the call is in flight when the server dies
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(server.process().Kill().ok());
  call.join();
  EXPECT_EQ(result.code(), Code::kUnavailable) << result.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, std::chrono::seconds(8));
}

TEST_F(KubeClientTest, ExecPluginClientCertificate) {
  // The plugin returns the admin certificate and key (PEM in JSON), as cloud plugins that mint
  // short-lived client certificates do.
  std::string plugin = dir_ + "/cert-plugin.py";
  std::ofstream(plugin) << "#!/usr/bin/env python3\n"
                           "import json, os\n"
                           "d = os.environ['PKI']\n"
                           "print(json.dumps({'kind': 'ExecCredential',\n"
                           "  'apiVersion': 'client.authentication.k8s.io/v1beta1',\n"
                           "  'status': {'clientCertificateData': open(d + '/admin.crt').read(),\n"
                           "             'clientKeyData': open(d + '/admin.key').read()}}))\n";
  fs::permissions(plugin, fs::perms::owner_all);
  ClientConfig config = client_->config();
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.exec = ExecPluginConfig{"client.authentication.k8s.io/v1beta1",
                                 plugin,
                                 {},
                                 {{"PKI", server_->dir()}},
                                 "IfAvailable",
                                 false};
  StatusOr<Json> created = Connect(config)->Create(ConfigMaps(), ConfigMap("by-exec-cert", "v"));
  EXPECT_TRUE(created.ok()) << created.status().ToString();
}

TEST_F(KubeClientTest, DirectTokenWinsOverExecPlugin) {
  ClientConfig config = client_->config();
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.token = "fake-token";  // as with kubectl --token
  config.exec = ExecPluginConfig{"client.authentication.k8s.io/v1",
                                 "/bin/false",
                                 {},
                                 {},
                                 "Never",
                                 false};  // would fail if it ran
  StatusOr<Json> got = Connect(config)->Get(ConfigMaps().Named("x"));
  EXPECT_TRUE(IsNotFound(got.status())) << got.status().ToString();
}

TEST_F(KubeClientTest, OneClientServesManyThreads) {
  // The controller shares one client between its workers.
  constexpr int kThreads = 6;
  constexpr int kEach = 10;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
        if (!client_->Create(ConfigMaps(), ConfigMap(name, name)).ok()) ++failures;
        StatusOr<Json> got = client_->Get(ConfigMaps().Named(name));
        if (!got.ok() || (*got)["data"]["key"] != name) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  StatusOr<Json> list = client_->List(ConfigMaps());
  ASSERT_TRUE(list.ok());
  EXPECT_EQ((*list)["items"].size(), static_cast<size_t>(kThreads * kEach));
}

// A server that accepts connections and then says nothing (a hung process, a black-holing
// load balancer): the call ends at the request timeout, never hangs.
TEST(KubeClientCrashTest, SilentServerEndsAtRequestTimeout) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 8), 0);  // the kernel completes handshakes; nobody answers
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  ClientConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  config.request_timeout = std::chrono::milliseconds(1500);
  std::unique_ptr<KubeClient> client = Connect(config);
  auto start = std::chrono::steady_clock::now();
  Status s = client->Get(ResourcePath::Core("pods", "default").Named("p")).status();
  auto took = std::chrono::steady_clock::now() - start;
  close(listener);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_LT(took, std::chrono::seconds(4));
}

TEST_F(KubeClientTest, TokenFileIsReadAgainForEveryRequest) {
  std::string token_file = dir_ + "/rotating-token";
  std::ofstream(token_file) << "stale-token\n";
  ClientConfig config = client_->config();
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.token_file = token_file;
  std::unique_ptr<KubeClient> client = Connect(config);
  EXPECT_EQ(client->Get(ConfigMaps().Named("x")).status().code(), Code::kUnauthenticated);
  std::ofstream(token_file) << "fake-token\n";  // kubelet rotated it
  EXPECT_TRUE(IsNotFound(client->Get(ConfigMaps().Named("x")).status()));
}

TEST_F(KubeClientTest, TokenFileWithoutEndIsRefusedNotRead) {
  // A token file is re-read for every request; one that never ends must fail the request with
  // the reason, not take the process's memory.
  ClientConfig config = client_->config();
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.token_file = "/dev/zero";
  std::unique_ptr<KubeClient> client = Connect(config);
  Status s = client->Get(ConfigMaps().Named("x")).status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("/dev/zero: it is larger than 16 MiB")) << s.ToString();
}

TEST_F(KubeClientTest, ExecPluginRerunOnceAfter401) {
  // The plugin hands out a revoked token first, then the valid one, counting its runs.
  std::string plugin = dir_ + "/plugin.sh";
  std::ofstream(plugin)
      << "#!/bin/sh\n"
         "echo run >> \"$RUNS\"\n"
         "if [ $(wc -l < \"$RUNS\") -eq 1 ]; then t=revoked; else t=fake-token; fi\n"
         "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":"
         "\"client.authentication.k8s.io/v1\",\"status\":{\"token\":\"%s\"}}' "
         "\"$t\"\n";
  fs::permissions(plugin, fs::perms::owner_all);
  ClientConfig config = client_->config();
  config.client_cert_pem.clear();
  config.client_key_pem.clear();
  config.exec = ExecPluginConfig{"client.authentication.k8s.io/v1", plugin,  {},
                                 {{"RUNS", dir_ + "/runs"}},        "Never", false};
  std::unique_ptr<KubeClient> client = Connect(config);
  StatusOr<Json> got = client->Get(ConfigMaps().Named("x"));
  EXPECT_TRUE(IsNotFound(got.status())) << got.status().ToString();  // authenticated
  EXPECT_TRUE(IsNotFound(client->Get(ConfigMaps().Named("y")).status()));
  EXPECT_EQ(ReadFile(dir_ + "/runs"), "run\nrun\n");  // once more after the 401, then cached
}

}  // namespace
}  // namespace flexcsi::kube
