// The fixture's own contract: Start waits for a listening server and its kubeconfig files,
// Kill and Restart leave no stale port behind. (The API rules themselves are checked by the
// Python tests in this directory; the kube/ client tests use this fixture for real calls.)
#include "tests/apiserver/fake_apiserver_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace flexcsi::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Listening(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

class FakeApiServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fake-apiserver-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    server_.Kill();
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  FakeApiServerProcess server_;
};

TEST_F(FakeApiServerFixture, StartWritesKubeconfigs) {
  FakeApiServerOptions options;
  options.tokens = {"secret-token-1"};
  ASSERT_TRUE(server_.Start(dir_, options).ok());
  EXPECT_GT(server_.port(), 0);
  EXPECT_TRUE(Listening(server_.port()));
  const std::string url = "https://127.0.0.1:" + std::to_string(server_.port());
  EXPECT_EQ(server_.server_url(), url);
  std::string cert_config = ReadFile(server_.kubeconfig_path());
  EXPECT_NE(cert_config.find(url), std::string::npos);
  EXPECT_NE(cert_config.find("admin.crt"), std::string::npos);
  std::string token_config = ReadFile(server_.token_kubeconfig_path());
  EXPECT_NE(token_config.find("secret-token-1"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(server_.ca_path()));
}

TEST_F(FakeApiServerFixture, KillThenRestartServesAgain) {
  ASSERT_TRUE(server_.Start(dir_).ok());
  const std::string ca = ReadFile(server_.ca_path());
  const int port = server_.port();
  ASSERT_TRUE(server_.Kill().ok());
  EXPECT_FALSE(server_.running());
  EXPECT_FALSE(Listening(port));
  ASSERT_TRUE(server_.Restart().ok());
  EXPECT_EQ(server_.port(), port);  // clients' kubeconfigs stay valid
  EXPECT_TRUE(Listening(server_.port()));
  EXPECT_EQ(ReadFile(server_.ca_path()), ca);  // clients' CA files stay valid
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/state.jsonl"));
  ASSERT_TRUE(server_.Stop().ok());
  EXPECT_FALSE(server_.running());
}

}  // namespace
}  // namespace flexcsi::testing
