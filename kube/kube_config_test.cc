// Kubeconfig resolution from real temp files and environment, with clientcmd's rules.
#include "kube/kube_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "common/base64.h"

namespace flexcsi::kube {
namespace {

namespace fs = std::filesystem;

// Every variable LoadClientConfig reads; each test starts with all of them unset and HOME in a
// temp dir, and gets the originals back afterwards.
const char* const kEnv[] = {"KUBECONFIG",
                            "HOME",
                            "KUBERNETES_SERVICE_HOST",
                            "KUBERNETES_SERVICE_PORT",
                            "POD_NAMESPACE",
                            "KUBERNETES_MASTER"};

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kube_config_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* name : kEnv) {
      const char* v = getenv(name);
      if (v) saved_[name] = v;
      unsetenv(name);
    }
    setenv("HOME", (dir_ + "/home").c_str(), 1);
    flags_.service_account_dir = dir_ + "/sa";
  }
  void TearDown() override {
    for (const char* name : kEnv) {
      auto it = saved_.find(name);
      if (it != saved_.end()) {
        setenv(name, it->second.c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Write(const std::string& relative, const std::string& text) {
    fs::path path = fs::path(dir_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  std::string dir_;
  std::map<std::string, std::string> saved_;
  ConfigFlags flags_;
};

TEST_F(KubeConfigTest, ExplicitKubeconfigMustExist) {
  flags_.kubeconfig = dir_ + "/nope";
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(dir_ + "/nope"), std::string::npos) << c.status().message();
}

TEST_F(KubeConfigTest, KubeconfigListFirstFileWinsPerKey) {
  std::string a = Write("a/config", R"(
current-context: ctx-a
clusters:
- name: shared
  cluster: {server: "https://a.example:6443/"}
users:
- name: u
  user: {token: token-a}
contexts:
- name: ctx-a
  context: {cluster: shared, user: u, namespace: ns-a}
)");
  std::string b = Write("b/config", R"(
current-context: ctx-b
clusters:
- name: shared
  cluster: {server: "https://b.example:6443"}
- name: only-b
  cluster: {server: "https://only-b.example"}
users:
- name: u
  user: {token: token-b}
contexts:
- name: ctx-b
  context: {cluster: only-b, user: u}
)");
  // A missing file in the list is skipped; duplicates are read once.
  setenv("KUBECONFIG", (dir_ + "/missing:" + a + ":" + b + ":" + a).c_str(), 1);
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->context_name, "ctx-a");             // first current-context
  EXPECT_EQ(c->server, "https://a.example:6443");  // first "shared"; trailing slash dropped
  EXPECT_EQ(c->token, "token-a");
  EXPECT_EQ(c->namespace_, "ns-a");

  // A context only the second file has, with a user both files define: the first file's user.
  flags_.context = "ctx-b";
  c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://only-b.example");
  EXPECT_EQ(c->token, "token-a");
  EXPECT_EQ(c->namespace_, "default");
}

TEST_F(KubeConfigTest, DefaultsToHomeKubeConfig) {
  Write("home/.kube/config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://home.example"}}]
contexts: [{name: c, context: {cluster: k}}]
)");
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://home.example");
}

TEST_F(KubeConfigTest, RelativePathsResolveAgainstDefiningFile) {
  Write("one/pki/ca.crt", "CA-ONE");
  Write("two/certs/client.crt", "CERT-TWO");
  Write("two/certs/client.key", "KEY-TWO");
  Write("two/token", "  token-from-file\n");
  std::string one = Write("one/config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://k.example", certificate-authority: pki/ca.crt}}]
contexts: [{name: c, context: {cluster: k, user: cert}}, {name: t, context: {cluster: k, user: tok}}]
)");
  std::string two = Write("two/config", R"(
users:
- name: cert
  user: {client-certificate: certs/client.crt, client-key: ./certs/client.key}
- name: tok
  user: {tokenFile: token}
)");
  setenv("KUBECONFIG", (one + ":" + two).c_str(), 1);
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_pem, "CA-ONE");
  EXPECT_EQ(c->client_cert_pem, "CERT-TWO");
  EXPECT_EQ(c->client_key_pem, "KEY-TWO");

  flags_.context = "t";
  c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "token-from-file");
  EXPECT_EQ(c->token_file, dir_ + "/two/token");
}

// Found with kubeconfig_fuzz (a hand-made input: the fuzzer ran out of memory on it): a file a
// kubeconfig names was read whole, however large, and /dev/zero never ends.
TEST_F(KubeConfigTest, FileThatNeverEndsIsRefusedNotReadWhole) {
  flags_.kubeconfig = Write("config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://k.example", certificate-authority: /dev/zero}}]
contexts: [{name: c, context: {cluster: k}}]
)");
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string::npos, c.status().message().find("/dev/zero: it is larger than 16 MiB"))
      << c.status().ToString();
}

TEST_F(KubeConfigTest, DataFieldsAreBase64Pem) {
  std::string path =
      Write("config",
            "current-context: c\n"
            "clusters: [{name: k, cluster: {server: 'https://k', "
            "certificate-authority-data: " +
                Base64Encode("CA-PEM") +
                "}}]\n"
                "users: [{name: u, user: {client-certificate-data: " +
                Base64Encode("CERT-PEM") + ", client-key-data: " + Base64Encode("KEY-PEM") +
                "}}]\n"
                "contexts: [{name: c, context: {cluster: k, user: u}}]\n");
  flags_.kubeconfig = path;
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT-PEM");
  EXPECT_EQ(c->client_key_pem, "KEY-PEM");

  Write("config",
        "current-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://k', "
        "certificate-authority-data: 'not base64!'}}]\n"
        "contexts: [{name: c, context: {cluster: k}}]\n");
  c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(path), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("certificate-authority-data"), std::string::npos);
}

TEST_F(KubeConfigTest, NamespaceFlagOverridesContext) {
  flags_.kubeconfig = Write("config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
contexts: [{name: c, context: {cluster: k, namespace: from-context}}]
)");
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->namespace_, "from-context");
  flags_.namespace_ = "from-flag";
  c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->namespace_, "from-flag");
}

TEST_F(KubeConfigTest, MissingContextClusterOrUserIsNamed) {
  flags_.kubeconfig = Write("config", R"(
current-context: gone
clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: {token: t}}]
contexts:
- {name: no-cluster, context: {cluster: nowhere, user: u}}
- {name: no-user, context: {cluster: k, user: nobody}}
)");
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("context was not found for specified context: gone"),
            std::string::npos)
      << c.status().message();

  flags_.context = "absent";
  c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("context \"absent\" does not exist"), std::string::npos)
      << c.status().message();

  flags_.context = "no-cluster";
  c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cluster \"nowhere\""), std::string::npos)
      << c.status().message();

  flags_.context = "no-user";
  c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("user \"nobody\""), std::string::npos)
      << c.status().message();
}

TEST_F(KubeConfigTest, ServerAndTokenFlagsOverrideFile) {
  flags_.kubeconfig = Write("config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://k", tls-server-name: k.internal}}]
users: [{name: u, user: {token: file-token}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)");
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->tls_server_name, "k.internal");
  flags_.server = "https://other:443";
  flags_.token = "flag-token";
  c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://other:443");
  EXPECT_EQ(c->tls_server_name, "");  // it named the file's server, not this one
  EXPECT_EQ(c->token, "flag-token");
}

TEST_F(KubeConfigTest, ConflictingSettingsAreRejected) {
  Write("ca.crt", "CA");
  Write("c.crt", "CERT");
  struct Case {
    const char* cluster;
    const char* user;
    const char* expected;
  } cases[] = {
      {"{server: 'https://k', certificate-authority: ca.crt, certificate-authority-data: Q0E=}",
       "{}", "both specified"},
      {"{server: 'https://k', certificate-authority: ca.crt, insecure-skip-tls-verify: true}", "{}",
       "insecure-skip-tls-verify"},
      {"{server: 'https://k'}", "{token: t, username: a, password: b}",
       "more than one authentication method"},
      {"{server: 'https://k'}", "{client-certificate: c.crt}", "client-key"},
      {"{server: 'https://k'}", "{client-certificate: c.crt, client-key: absent.key}",
       "unable to read client-key"},
      {"{server: 'https://k', proxy-url: 'ftp://p'}", "{}", "proxy-url"},
      {"{server: 'https://k', insecure-skip-tls-verify: 'yes'}", "{}", "expected true or false"},
  };
  for (const Case& tc : cases) {
    flags_.kubeconfig =
        Write("config", std::string("current-context: c\nclusters: [{name: k, cluster: ") +
                            tc.cluster + "}]\nusers: [{name: u, user: " + tc.user +
                            "}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n");
    StatusOr<ClientConfig> c = LoadClientConfig(flags_);
    ASSERT_FALSE(c.ok()) << tc.cluster << " " << tc.user;
    EXPECT_NE(c.status().message().find(tc.expected), std::string::npos) << c.status().message();
  }
}

TEST_F(KubeConfigTest, ExecPluginSettings) {
  flags_.kubeconfig = Write("conf/config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
users:
- name: v1beta1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: bin/plugin
      args: [get-token, --cluster, k]
      env: [{name: REGION, value: eu-1}]
      provideClusterInfo: true
- name: v1-without-mode
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws-iam-authenticator}
contexts:
- {name: c, context: {cluster: k, user: v1beta1}}
- {name: v1, context: {cluster: k, user: v1-without-mode}}
)");
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->exec.has_value());
  EXPECT_EQ(c->exec->command, dir_ + "/conf/bin/plugin");  // has a '/': relative to the file
  EXPECT_EQ(c->exec->args, (std::vector<std::string>{"get-token", "--cluster", "k"}));
  ASSERT_EQ(c->exec->env.size(), 1u);
  EXPECT_EQ(c->exec->env[0].first, "REGION");
  EXPECT_EQ(c->exec->interactive_mode, "IfAvailable");  // v1beta1's default
  EXPECT_TRUE(c->exec->provide_cluster_info);

  flags_.context = "v1";  // v1 must state interactiveMode
  c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("interactiveMode must be specified"), std::string::npos)
      << c.status().message();
}

TEST_F(KubeConfigTest, PlainHttpServerGetsNoCredentials) {
  flags_.kubeconfig = Write("config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "http://127.0.0.1:8080"}}]
users: [{name: u, user: {token: secret}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)");
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "");
}

TEST_F(KubeConfigTest, InClusterFromServiceAccountDir) {
  Write("sa/token", "sa-token\n");
  Write("sa/ca.crt", "SA-CA");
  Write("sa/namespace", "kube-system\n");
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  StatusOr<ClientConfig> c = LoadInClusterConfig(dir_ + "/sa");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->token, "sa-token");
  EXPECT_EQ(c->token_file, dir_ + "/sa/token");  // re-read per request: it rotates
  EXPECT_EQ(c->ca_pem, "SA-CA");
  EXPECT_EQ(c->namespace_, "kube-system");

  setenv("POD_NAMESPACE", "from-downward-api", 1);  // client-go looks here first
  c = LoadInClusterConfig(dir_ + "/sa");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->namespace_, "from-downward-api");

  unsetenv("KUBERNETES_SERVICE_PORT");
  c = LoadInClusterConfig(dir_ + "/sa");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("KUBERNETES_SERVICE_PORT"), std::string::npos);
}

TEST_F(KubeConfigTest, NoKubeconfigFallsBackToInCluster) {
  Write("sa/token", "sa-token");
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  flags_.namespace_ = "ns";
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->namespace_, "ns");

  unsetenv("KUBERNETES_SERVICE_HOST");  // neither kubeconfig nor cluster: say so
  c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no configuration has been provided"), std::string::npos)
      << c.status().message();
}

TEST_F(KubeConfigTest, UnreadableOrBrokenFileIsNamed) {
  std::string path = Write("config", "clusters: [unclosed\n");
  setenv("KUBECONFIG", path.c_str(), 1);
  StatusOr<ClientConfig> c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(path), std::string::npos) << c.status().message();

  setenv("KUBECONFIG", dir_.c_str(), 1);  // a directory is not a missing file
  c = LoadClientConfig(flags_);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("directory"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace flexcsi::kube
