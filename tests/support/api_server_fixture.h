// Test-only: a fake API server (tests/apiserver) for kube/ tests, and a KubeClient for it.
// Starting the server costs a Python start-up, so a test suite shares one (SharedServer) and
// gives each test a namespace of its own; tests that kill or restart their server own one.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <string>

#include "kube/http_transport.h"
#include "kube/kube_client.h"
#include "tests/apiserver/fake_apiserver_process.h"

namespace flexcsi::kube {

// One running fake API server in a temp dir, removed with it.
class TestApiServer {
 public:
  // Controllers off: these tests are about the API's own rules. A fixed port lets Restart()
  // come back where clients already point.
  Status Start() {
    char tmpl[] = "/tmp/kube_test_apiserver.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Internal("mkdtemp failed");
    dir_ = tmpl;
    flexcsi::testing::FakeApiServerOptions options;
    options.controllers = false;
    options.extra_args = {"--port", std::to_string(flexcsi::testing::FreeLoopbackPort())};
    return process_.Start(dir_, options);
  }
  ~TestApiServer() {
    process_.Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  flexcsi::testing::FakeApiServerProcess& process() { return process_; }
  const std::string& dir() const { return dir_; }

  ClientConfig Config(bool token = false) const {
    ConfigFlags flags;
    flags.kubeconfig = token ? process_.token_kubeconfig_path() : process_.kubeconfig_path();
    StatusOr<ClientConfig> config = LoadClientConfig(flags);
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    return config.ok() ? *config : ClientConfig{};
  }

  // POSTs to a /_fake/ control endpoint with the admin certificate (not part of the API, so
  // not something KubeClient offers).
  void Control(const std::string& action, const nlohmann::json& body = nlohmann::json::object()) {
    ClientConfig c = Config();
    HttpTransport transport(TransportSettings{c.server, "", "", false, c.ca_pem, "test"});
    Credentials credentials;
    credentials.client_cert_pem = c.client_cert_pem;
    credentials.client_key_pem = c.client_key_pem;
    HttpRequest request;
    request.method = "POST";
    request.path_and_query = "/_fake/" + action;
    request.content_type = "application/json";
    request.body = body.dump();
    request.timeout = std::chrono::seconds(10);
    HttpResponse response = transport.Perform(request, credentials);
    ASSERT_TRUE(response.transport.ok()) << response.transport.ToString();
    ASSERT_EQ(response.http_code, 200) << response.body;
  }

 private:
  std::string dir_;
  flexcsi::testing::FakeApiServerProcess process_;
};

// The base of a test suite that shares one TestApiServer: started before the suite's first
// test, removed after its last (each Suite has its own).
template <typename Suite>
class SharedApiServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new TestApiServer();
    Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static inline TestApiServer* server_ = nullptr;
};

inline std::unique_ptr<KubeClient> ConnectOrFail(ClientConfig config) {
  StatusOr<std::unique_ptr<KubeClient>> client = KubeClient::Create(std::move(config));
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

// "t-<test name>" in DNS-label form: each test of a shared server works in its own namespace.
inline std::string NamespaceForCurrentTest() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::string ns = "t-";
  for (char c : name)
    ns += static_cast<char>(std::isalnum(static_cast<unsigned char>(c))
                                ? std::tolower(static_cast<unsigned char>(c))
                                : '-');
  return ns.substr(0, 63);
}

// Creates the namespace (the server refuses objects in a namespace that does not exist).
inline void CreateNamespace(KubeClient* client, const std::string& ns) {
  StatusOr<nlohmann::json> created =
      client->Create(ResourcePath::Core("namespaces"),
                     {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
}

}  // namespace flexcsi::kube
