// Exec credential plugins, run for real: a small shell script stands in for aws/gke/oidc plugins
// and records how often it ran and what it was given.
#include "kube/exec_credential.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/base64.h"

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

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class ExecCredentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/exec_credential_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/plugin") << "#!/bin/sh\n"
                                       "echo run >> \"$RUNS_FILE\"\n"
                                       "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$INFO_FILE\"\n"
                                       "echo \"$@\" > \"$ARGS_FILE\"\n"
                                       "cat \"$RESPONSE_FILE\"\n"
                                       "exit \"${EXIT_CODE:-0}\"\n";
    chmod((dir_ + "/plugin").c_str(), 0755);
    plugin_.api_version = "client.authentication.k8s.io/v1";
    plugin_.command = dir_ + "/plugin";
    plugin_.args = {"token", "--for", "fake"};
    plugin_.interactive_mode = "Never";
    plugin_.env = {{"RUNS_FILE", dir_ + "/runs"},
                   {"INFO_FILE", dir_ + "/info"},
                   {"ARGS_FILE", dir_ + "/args"},
                   {"RESPONSE_FILE", dir_ + "/response"}};
    cluster_.server = "https://127.0.0.1:6443";
    cluster_.ca_pem = "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Respond(const Json& status, const std::string& api_version = "") {
    Json doc = {{"kind", "ExecCredential"},
                {"apiVersion", api_version.empty() ? plugin_.api_version : api_version}};
    if (!status.is_null()) doc["status"] = status;
    std::ofstream(dir_ + "/response") << doc.dump();
  }
  int Runs() {
    std::string runs = ReadFile(dir_ + "/runs");
    return static_cast<int>(std::count(runs.begin(), runs.end(), '\n'));
  }

  std::string dir_;
  ExecPluginConfig plugin_;
  ClientConfig cluster_;
};

TEST_F(ExecCredentialTest, PluginGetsExecInfoEnvAndArgs) {
  plugin_.provide_cluster_info = true;
  Respond({{"token", "tok-1"}});
  ExecCredentialProvider provider(plugin_, cluster_);
  StatusOr<ExecCredential> cred = provider.Get();
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  EXPECT_EQ(cred->token, "tok-1");
  EXPECT_EQ(ReadFile(dir_ + "/args"), "token --for fake\n");
  Json info = Json::parse(ReadFile(dir_ + "/info"));
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://127.0.0.1:6443");
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], Base64Encode(cluster_.ca_pem));

  plugin_.provide_cluster_info = false;  // then no cluster at all
  ExecCredentialProvider without(plugin_, cluster_);
  ASSERT_TRUE(without.Get().ok());
  EXPECT_FALSE(Json::parse(ReadFile(dir_ + "/info"))["spec"].contains("cluster"));
}

TEST_F(ExecCredentialTest, CachedUntilExpiry) {
  auto now = std::chrono::system_clock::now();
  Respond({{"token", "t"}, {"expirationTimestamp", Rfc3339(now + std::chrono::hours(1))}});
  ExecCredentialProvider fresh(plugin_, cluster_);
  ASSERT_TRUE(fresh.Get().ok());
  ASSERT_TRUE(fresh.Get().ok());
  EXPECT_EQ(Runs(), 1);

  Respond({{"token", "t"}, {"expirationTimestamp", Rfc3339(now - std::chrono::seconds(5))}});
  ExecCredentialProvider expired(plugin_, cluster_);
  ASSERT_TRUE(expired.Get().ok());
  ASSERT_TRUE(expired.Get().ok());
  EXPECT_EQ(Runs(), 3);  // an expired credential is never reused
}

TEST_F(ExecCredentialTest, InvalidateDropsOnlyRejectedCredential) {
  Respond({{"token", "t"}});  // no expiry: cached until the server rejects it
  ExecCredentialProvider provider(plugin_, cluster_);
  StatusOr<ExecCredential> first = provider.Get();
  ASSERT_TRUE(first.ok());
  provider.Invalidate(first->generation);
  StatusOr<ExecCredential> second = provider.Get();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Runs(), 2);
  // A late 401 for the first credential must not throw away the second.
  provider.Invalidate(first->generation);
  ASSERT_TRUE(provider.Get().ok());
  EXPECT_EQ(Runs(), 2);
}

TEST_F(ExecCredentialTest, ClientCertificateCredential) {
  Respond({{"clientCertificateData", "CERT"}, {"clientKeyData", "KEY"}});
  ExecCredentialProvider provider(plugin_, cluster_);
  StatusOr<ExecCredential> cred = provider.Get();
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  EXPECT_EQ(cred->client_cert_pem, "CERT");
  EXPECT_EQ(cred->client_key_pem, "KEY");
  EXPECT_EQ(cred->token, "");
}

TEST_F(ExecCredentialTest, MalformedCredentialsAreRejected) {
  struct Case {
    Json status;
    std::string api_version;
    const char* expected;
  } cases[] = {
      {{{"token", "t"}}, "client.authentication.k8s.io/v1beta1", "plugin returned version"},
      {nullptr, "", "didn't return a status"},
      {Json::object(), "", "didn't return a token or cert/key pair"},
      {{{"clientCertificateData", "CERT"}}, "", "only certificate or key"},
      {{{"token", "t"}, {"expirationTimestamp", "tomorrow"}}, "", "RFC 3339"},
  };
  for (const Case& tc : cases) {
    Respond(tc.status, tc.api_version);
    ExecCredentialProvider provider(plugin_, cluster_);
    StatusOr<ExecCredential> cred = provider.Get();
    ASSERT_FALSE(cred.ok()) << tc.expected;
    EXPECT_NE(cred.status().message().find(tc.expected), std::string::npos)
        << cred.status().message();
  }
}

TEST_F(ExecCredentialTest, FailingPluginReportsExitCodeAndStderr) {
  std::ofstream(dir_ + "/plugin") << "#!/bin/sh\necho 'please run login first' >&2\nexit 3\n";
  ExecCredentialProvider provider(plugin_, cluster_);
  StatusOr<ExecCredential> cred = provider.Get();
  ASSERT_FALSE(cred.ok());
  EXPECT_NE(cred.status().message().find("exit code 3"), std::string::npos);
  EXPECT_NE(cred.status().message().find("please run login first"), std::string::npos);

  plugin_.command = "flexcsi-no-such-plugin";
  ExecCredentialProvider missing(plugin_, cluster_);
  cred = missing.Get();
  ASSERT_FALSE(cred.ok());
  EXPECT_EQ(cred.status().code(), Code::kNotFound) << cred.status().ToString();
}

TEST(Rfc3339, ParsesZuluFractionsAndOffsets) {
  auto z = ParseRfc3339("2026-11-23T16:00:00Z");
  ASSERT_TRUE(z.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*z), 1795449600);
  auto frac = ParseRfc3339("2026-11-23T16:00:00.123456Z");
  ASSERT_TRUE(frac.has_value());
  EXPECT_EQ(*frac, *z);
  auto offset = ParseRfc3339("2026-11-23T17:30:00+01:30");
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(*offset, *z);
  EXPECT_FALSE(ParseRfc3339("2026-11-23 16:00:00").has_value());
  EXPECT_FALSE(ParseRfc3339("2026-11-23T16:00:00").has_value());
}

}  // namespace
}  // namespace flexcsi::kube
