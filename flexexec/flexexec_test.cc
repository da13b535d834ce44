// Runs the real flexexec binary the way kubelet does: installed (copied and symlinked) as
// <plugindir>/<vendor~name>/<name>, stdout and stderr captured separately so that the
// "nothing on stderr, one JSON line on stdout" rule is checked, not assumed.
#include "flexexec/flexexec.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/bridge_protocol.h"
#include "common/version.h"

extern char** environ;

namespace flexcsi {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

void ReadInto(int fd, std::string* s) {
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) s->append(buf, static_cast<size_t>(n));
}

RunResult Exec(const std::string& exe, const std::vector<std::string>& args) {
  int out[2], err[2];
  EXPECT_EQ(0, ::pipe(out));
  EXPECT_EQ(0, ::pipe(err));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  std::vector<std::string> full = {exe};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  EXPECT_EQ(0, ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ));
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  RunResult r;
  std::thread t([&] { ReadInto(err[0], &r.err); });
  ReadInto(out[0], &r.out);
  t.join();
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class FlexexecBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/flexexec_test.XXXXXX";
    root_ = ::mkdtemp(tmpl);
    driver_dir_ = root_ + "/plugins/flexcsi~loopback";
    fs::create_directories(driver_dir_);
    exe_ = driver_dir_ + "/loopback";
    fs::copy_file(FLEXEXEC_BINARY, exe_);
    fs::permissions(exe_, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(root_); }

  void WriteConfig(const std::string& text) {
    std::ofstream(driver_dir_ + "/flexcsi.json") << text;
  }
  std::string SocketPath() const { return root_ + "/bridge.sock"; }
  void WriteDefaultConfig() {
    WriteConfig(R"({"capabilities":{"attach":true,"fsGroup":false},"bridgeSocket":")" +
                SocketPath() + R"(","timeoutSeconds":{"default":10}})");
  }

  // Checks the invariants of every run and returns the parsed reply.
  nlohmann::json Reply(const RunResult& r) {
    EXPECT_EQ("", r.err);
    EXPECT_FALSE(r.out.empty());
    EXPECT_EQ('\n', r.out.back());
    EXPECT_EQ(r.out.size() - 1, r.out.find('\n')) << "more than one line: " << r.out;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j;
  }

  std::string root_, driver_dir_, exe_;
};

TEST_F(FlexexecBinaryTest, InitAnswersCapabilitiesWithoutBridge) {
  WriteDefaultConfig();  // the socket does not exist: init must not need it
  RunResult r = Exec(exe_, {"init"});
  EXPECT_EQ(0, r.exit_code);
  EXPECT_EQ("{\"capabilities\":{\"attach\":true,\"fsGroup\":false},\"status\":\"Success\"}\n",
            r.out);
  EXPECT_EQ("", r.err);
}

TEST_F(FlexexecBinaryTest, InitThroughSymlinkReadsSymlinksDirectory) {
  const std::string other = root_ + "/plugins/acme~fast";
  fs::create_directories(other);
  fs::create_symlink(exe_, other + "/fast");
  std::ofstream(other + "/flexcsi.json") << R"({"capabilities":{"attach":false}})";
  nlohmann::json j = Reply(Exec(other + "/fast", {"init"}));
  EXPECT_EQ(false, j["capabilities"]["attach"]);
}

TEST_F(FlexexecBinaryTest, VersionIsOneLineReadWithoutConfigOrBridge) {
  RunResult r = Exec(exe_, {"--version"});  // no flexcsi.json, no socket
  EXPECT_EQ(0, r.exit_code);
  EXPECT_EQ('\n', r.out.back());
  EXPECT_EQ(r.out.size() - 1, r.out.find('\n')) << r.out;
  // The release only: the commit is the one of the last configure before flexexec was linked,
  // which a partial build of a shared tree may leave behind this test's.
  const auto info = ParseVersionLine("flexexec", r.out);
  ASSERT_TRUE(info.has_value()) << r.out;
  EXPECT_EQ(info->version, FlexcsiVersion());
  EXPECT_EQ("", r.err);
  // Only alone: with anything after it, it is an unknown FlexVolume call like any other.
  EXPECT_EQ("Not supported", Reply(Exec(exe_, {"--version", "x"}))["status"]);
}

TEST_F(FlexexecBinaryTest, MissingConfigIsFailureNamingTheFile) {
  RunResult r = Exec(exe_, {"init"});
  EXPECT_EQ(1, r.exit_code);
  nlohmann::json j = Reply(r);
  EXPECT_EQ("Failure", j["status"]);
  EXPECT_NE(std::string::npos, j["message"].get<std::string>().find(driver_dir_ + "/flexcsi.json"));
}

TEST_F(FlexexecBinaryTest, InvalidConfigSaysWhatIsWrong) {
  WriteConfig(R"({"capabilities":{"attach":"yes"}})");
  nlohmann::json j = Reply(Exec(exe_, {"init"}));
  EXPECT_EQ("Failure", j["status"]);
  EXPECT_NE(std::string::npos, j["message"].get<std::string>().find("capability \"attach\""));
}

TEST_F(FlexexecBinaryTest, GetVolumeNameAndUnknownNotSupported) {
  WriteDefaultConfig();
  for (auto args : std::vector<std::vector<std::string>>{
           {"getvolumename", "{}"}, {"waitfordetach", "x"}, {"getdevicemountpath"}}) {
    RunResult r = Exec(exe_, args);
    EXPECT_EQ(0, r.exit_code);
    EXPECT_EQ("{\"status\":\"Not supported\"}\n", r.out);
  }
}

TEST_F(FlexexecBinaryTest, NoCallIsFailure) {
  RunResult r = Exec(exe_, {});
  EXPECT_EQ(1, r.exit_code);
  EXPECT_EQ("Failure", Reply(r)["status"]);
}

TEST_F(FlexexecBinaryTest, WrongArgCountNamesExpectedArgv) {
  WriteDefaultConfig();
  RunResult r = Exec(exe_, {"mountdevice", "/mnt/x", "{}"});
  EXPECT_EQ(1, r.exit_code);
  nlohmann::json j = Reply(r);
  EXPECT_EQ(
      "mountdevice expects 3 arguments, got 2; usage: <driver> mountdevice "
      "<device mount path> <device path> <json options>",
      j["message"]);
}

TEST_F(FlexexecBinaryTest, OverLongVolumeIdIsRefusedBeforeAnythingIsSent) {
  WriteDefaultConfig();  // no bridge listens: a refusal that needed it would say so instead
  const std::string options =
      R"({"kubernetes.io/pvOrVolumeName":"v","volumeID":")" + std::string(70000, 'a') + R"("})";
  RunResult r = Exec(exe_, {"attach", options, "node-1"});
  EXPECT_EQ(1, r.exit_code);
  nlohmann::json j = Reply(r);
  EXPECT_EQ("Failure", j["status"]);
  EXPECT_EQ("option \"volumeID\" is 70000 bytes; the limit is 4096 bytes", j["message"]);
  RunResult path = Exec(exe_, {"unmount", "/" + std::string(5000, 'p')});
  EXPECT_EQ("unmount argument 1 (a path) is 5001 bytes; the limit is 4095 bytes",
            Reply(path)["message"]);
}

TEST_F(FlexexecBinaryTest, DeadBridgeIsFailureTellingHowToStartIt) {
  WriteDefaultConfig();
  RunResult r = Exec(exe_, {"unmount", "/var/lib/kubelet/pods/u/volumes/flexcsi~loopback/v"});
  EXPECT_EQ(1, r.exit_code);
  nlohmann::json j = Reply(r);
  EXPECT_EQ("flexcsi-bridge is not running: " + SocketPath() +
                " does not exist; start it with systemctl start flexcsi-bridge or check the "
                "flexcsi DaemonSet",
            j["message"]);
}

TEST_F(FlexexecBinaryTest, ForwardsDriverCallArgsAndBudgetToBridge) {
  WriteDefaultConfig();
  int lfd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, SocketPath().c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(0, ::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  ASSERT_EQ(0, ::listen(lfd, 1));
  std::string request;
  std::thread server([&] {
    int c = ::accept(lfd, nullptr, nullptr);
    unsigned char h[4];
    ::recv(c, h, 4, MSG_WAITALL);
    auto n = DecodeFrameLength(h);
    request.resize(*n);
    ::recv(c, request.data(), *n, MSG_WAITALL);
    std::string frame = EncodeFrame(
        MakeBridgeReply({{"status", "Success"}, {"device", "/dev/loop7"}, {"x", "<&>"}}).dump());
    ::send(c, frame.data(), frame.size(), MSG_NOSIGNAL);
    ::close(c);
  });
  const std::string options = R"({"kubernetes.io/fsType":"ext4","volumeID":"vol-1"})";
  RunResult r = Exec(exe_, {"attach", options, "node-1"});
  server.join();
  ::close(lfd);
  EXPECT_EQ(0, r.exit_code);
  nlohmann::json j = Reply(r);
  EXPECT_EQ("/dev/loop7", j["device"]);
  EXPECT_EQ("<&>", j["x"]);
  auto req = BridgeRequest::FromJson(nlohmann::json::parse(request));
  ASSERT_TRUE(req.ok()) << request;
  EXPECT_EQ("flexcsi/loopback", req->driver);
  EXPECT_EQ("attach", req->call);
  EXPECT_EQ((std::vector<std::string>{options, "node-1"}), req->args);
  EXPECT_GT(req->timeout_ms, 0);
  EXPECT_LT(req->timeout_ms, 10000);  // below flexexec's own wait, so the bridge can answer
}

TEST(FlexexecReplyTest, ExitCodeFollowsStatus) {
  EXPECT_EQ(0, ExitCodeForReply(FlexSuccess()));
  EXPECT_EQ(0, ExitCodeForReply(FlexNotSupported()));
  EXPECT_EQ(1, ExitCodeForReply(FlexFailure("x")));
  EXPECT_EQ(1, ExitCodeForReply({{"status", "success"}}));
  EXPECT_EQ(1, ExitCodeForReply(nlohmann::json::object()));
}

TEST(FlexexecReplyTest, OneCompactLineEvenForBadUtf8) {
  EXPECT_EQ("{\"message\":\"a b\",\"status\":\"Failure\"}\n", FormatReply(FlexFailure("a b")));
  std::string bad = FormatReply(FlexFailure(std::string("bad \xff byte")));
  EXPECT_EQ('\n', bad.back());
  EXPECT_TRUE(nlohmann::json::parse(bad, nullptr, false).is_object());
}

}  // namespace
}  // namespace flexcsi
