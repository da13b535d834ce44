#include "cli/install_driver_command.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& content, mode_t mode) {
  std::ofstream(path) << content;
  chmod(path.c_str(), mode);
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

class InstallDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/flexcsi-install-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    plugin_dir_ = root_ + "/usr/libexec/kubernetes/kubelet-plugins/volume/exec";
    // A stand-in flexexec that answers init from the flexcsi.json beside it, as the real one
    // does; the real binary is exercised by RealFlexexecAnswersInitAfterInstall.
    fake_flexexec_ = root_ + "/fake-flexexec";
    WriteFile(fake_flexexec_,
              "#!/bin/sh\n"
              "dir=$(dirname \"$0\")\n"
              "caps=$(sed -n '/\"capabilities\"/,/}/p' \"$dir/flexcsi.json\" | tr -d ' \\n' |"
              " sed 's/^\"capabilities\"://; s/},*$/}/')\n"
              "[ \"$1\" = init ] && printf '{\"status\":\"Success\",\"capabilities\":%s}\\n' "
              "\"$caps\" && exit 0\n"
              "echo '{\"status\":\"Not supported\"}'\n",
              0755);
  }
  void TearDown() override { std::system(("rm -rf '" + root_ + "'").c_str()); }

  InstallDriverOptions Options(const std::string& driver = "flexcsi/loopback") {
    InstallDriverOptions o;
    o.driver = driver;
    o.plugin_dir = plugin_dir_;
    o.flexexec_source = fake_flexexec_;
    return o;
  }

  std::string root_, plugin_dir_, fake_flexexec_;
};

TEST(DriverNameTest, AcceptsVendorSlashNameOnly) {
  EXPECT_TRUE(ValidateInstallableDriverName("flexcsi/loopback").ok());
  EXPECT_TRUE(ValidateInstallableDriverName("example.com/nfs-v4_1").ok());
  for (const char* bad : {"", "loopback", "a/b/c", "/x", "x/", "a b/c", "a/b;rm", "../x", "./x",
                          "a/..", ".hidden/x", "a/~b", "a\\b/c", "ä/x"}) {
    const Status s = ValidateInstallableDriverName(bad);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << "accepted \"" << bad << "\"";
    EXPECT_NE(s.message().find("driver name"), std::string::npos) << s.message();
  }
  EXPECT_EQ(DriverDirectoryName("flexcsi/loopback"), "flexcsi~loopback");
  EXPECT_EQ(DriverExecutableName("flexcsi/loopback"), "loopback");
}

TEST_F(InstallDriverTest, CreatesDriverDirectoryWithConfigAndExecutable) {
  auto report = InstallDriver(Options());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const std::string dir = plugin_dir_ + "/flexcsi~loopback";
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"flexcsi.json", "loopback"}));
  struct stat st {};
  ASSERT_EQ(stat((dir + "/loopback").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(stat((dir + "/flexcsi.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(ReadFile(dir + "/loopback"), ReadFile(fake_flexexec_));

  const auto config = nlohmann::json::parse(ReadFile(dir + "/flexcsi.json"));
  EXPECT_EQ(config["capabilities"]["attach"], true);
  EXPECT_EQ(config["capabilities"]["requiresFSResize"], true);
  EXPECT_EQ(config["bridgeSocket"], "/run/flexcsi/bridge.sock");
  EXPECT_EQ(config["timeoutSeconds"]["waitforattach"], 540);
  // The installed executable's init was run and answered from that file.
  EXPECT_NE(report->init_reply.find("\"status\":\"Success\""), std::string::npos)
      << report->init_reply;
}

TEST_F(InstallDriverTest, SecondInstallChangesNothingAndUpdateReplacesByRename) {
  ASSERT_TRUE(InstallDriver(Options()).ok());
  const std::string exe = plugin_dir_ + "/flexcsi~loopback/loopback";
  const ino_t first = Inode(exe);
  auto again = InstallDriver(Options());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Inode(exe), first) << "an identical reinstall must not touch the file";
  for (const auto& a : again->actions) EXPECT_EQ(a.rfind("unchanged ", 0), 0u) << a;

  // A new flexexec arrives as a new inode (rename), never by rewriting the old file in place.
  WriteFile(fake_flexexec_, ReadFile(fake_flexexec_) + "# v2\n", 0755);
  ASSERT_TRUE(InstallDriver(Options()).ok());
  EXPECT_NE(Inode(exe), first);
  EXPECT_EQ(ReadFile(exe), ReadFile(fake_flexexec_));
  EXPECT_EQ(ListDir(plugin_dir_ + "/flexcsi~loopback"),
            (std::vector<std::string>{"flexcsi.json", "loopback"}))
      << "no temporary files may be left behind";
}

TEST_F(InstallDriverTest, ReplacesAnExecutableThatIsRunningRightNow) {
  // Writing into a running binary fails with ETXTBSY; an atomic rename does not care. A real
  // ELF binary (sleep) is needed for the kernel to hold the file as busy text.
  InstallDriverOptions o = Options();
  o.flexexec_source = "/bin/sleep";
  o.verify = false;
  ASSERT_TRUE(InstallDriver(o).ok());
  const std::string exe = plugin_dir_ + "/flexcsi~loopback/loopback";
  const pid_t child = fork();
  if (child == 0) {
    execl(exe.c_str(), exe.c_str(), "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Until the child runs the installed file: only then is it busy text.
  const std::string child_exe = "/proc/" + std::to_string(child) + "/exe";
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto running_it = [&] {
    struct stat running {}, installed {};
    return stat(child_exe.c_str(), &running) == 0 && stat(exe.c_str(), &installed) == 0 &&
           running.st_dev == installed.st_dev && running.st_ino == installed.st_ino;
  };
  while (!running_it() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!running_it()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    FAIL() << "the child never ran " << exe;
  }
  o.flexexec_source = "/bin/true";
  auto report = InstallDriver(o);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(ReadFile(exe), ReadFile("/bin/true"));
}

TEST_F(InstallDriverTest, CapabilityFlagsAndSocketReachTheConfig) {
  InstallDriverOptions o = Options("example/nfs");
  o.attach = false;
  o.supports_metrics = false;
  o.bridge_socket = "/var/run/other/bridge.sock";
  auto report = InstallDriver(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const auto config = nlohmann::json::parse(ReadFile(plugin_dir_ + "/example~nfs/flexcsi.json"));
  EXPECT_EQ(config["capabilities"]["attach"], false);
  EXPECT_EQ(config["capabilities"]["supportsMetrics"], false);
  EXPECT_EQ(config["capabilities"]["fsGroup"], true);
  EXPECT_EQ(config["bridgeSocket"], "/var/run/other/bridge.sock");
  EXPECT_NE(report->init_reply.find("\"attach\":false"), std::string::npos) << report->init_reply;
}

TEST_F(InstallDriverTest, RefusesBadInputsWithoutCreatingAnything) {
  InstallDriverOptions o = Options("no-vendor");
  EXPECT_EQ(InstallDriver(o).status().code(), Code::kInvalidArgument);
  o = Options();
  o.flexexec_source = root_ + "/missing";
  EXPECT_EQ(InstallDriver(o).status().code(), Code::kNotFound);
  o = Options();
  o.plugin_dir = "relative/dir";
  EXPECT_EQ(InstallDriver(o).status().code(), Code::kInvalidArgument);
  o = Options();
  o.timeout_waitforattach_seconds = 600;
  EXPECT_EQ(InstallDriver(o).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(ListDir(root_ + "/usr").empty());
}

TEST_F(InstallDriverTest, FailsWhenInitDoesNotAnswerSuccess) {
  WriteFile(fake_flexexec_, "#!/bin/sh\necho not-json\n", 0755);
  auto report = InstallDriver(Options());
  EXPECT_EQ(report.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(report.status().message().find("did not print JSON"), std::string::npos);
}

TEST_F(InstallDriverTest, UninstallRemovesEverythingAndIsIdempotent) {
  ASSERT_TRUE(InstallDriver(Options()).ok());
  auto report = UninstallDriver("flexcsi/loopback", plugin_dir_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->actions.size(), 3u);
  EXPECT_TRUE(ListDir(plugin_dir_).empty());
  auto again = UninstallDriver("flexcsi/loopback", plugin_dir_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->actions,
            std::vector<std::string>{"nothing installed at " + plugin_dir_ + "/flexcsi~loopback"});
  EXPECT_EQ(UninstallDriver("bad", plugin_dir_).status().code(), Code::kInvalidArgument);
}

TEST_F(InstallDriverTest, UninstallLeavesForeignFilesAndSaysSo) {
  ASSERT_TRUE(InstallDriver(Options()).ok());
  WriteFile(plugin_dir_ + "/flexcsi~loopback/operator-notes.txt", "mine", 0644);
  auto report = UninstallDriver("flexcsi/loopback", plugin_dir_);
  EXPECT_EQ(report.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(ListDir(plugin_dir_ + "/flexcsi~loopback"),
            std::vector<std::string>{"operator-notes.txt"});
}

TEST_F(InstallDriverTest, CommandLineInstallsWithConfigFileAndUninstalls) {
  const std::string config = root_ + "/bridge.yaml";
  WriteFile(
      config,
      "socket: /run/custom/bridge.sock\n"
      "drivers:\n"
      "  - flexDriver: example/nfs\n"
      "    csiEndpoint: unix:///var/lib/kubelet/plugins/nfs.csi.k8s.io/csi.sock\n"
      "    attach: false\n"
      "    rule: {csiDriver: nfs.csi.k8s.io, volumeHandle: {template: \"${server}#${share}\"}}\n",
      0644);
  std::ostringstream out, err;
  int rc = RunInstallDriverCommand({"--driver", "example/nfs", "--plugin-dir", plugin_dir_,
                                    "--config", config, "--flexexec", fake_flexexec_},
                                   out, err);
  ASSERT_EQ(rc, 0) << err.str();
  const auto json = nlohmann::json::parse(ReadFile(plugin_dir_ + "/example~nfs/flexcsi.json"));
  EXPECT_EQ(json["capabilities"]["attach"], false);
  EXPECT_EQ(json["bridgeSocket"], "/run/custom/bridge.sock");
  EXPECT_NE(out.str().find("init: {\"status\":\"Success\""), std::string::npos) << out.str();

  // An explicit flag beats the file.
  rc = RunInstallDriverCommand({"--driver", "example/nfs", "--plugin-dir", plugin_dir_, "--config",
                                config, "--flexexec", fake_flexexec_, "--attach"},
                               out, err);
  ASSERT_EQ(rc, 0) << err.str();
  EXPECT_EQ(nlohmann::json::parse(
                ReadFile(plugin_dir_ + "/example~nfs/flexcsi.json"))["capabilities"]["attach"],
            true);

  out.str("");
  EXPECT_EQ(
      RunUninstallDriverCommand({"--driver", "example/nfs", "--plugin-dir", plugin_dir_}, out, err),
      0);
  EXPECT_TRUE(ListDir(plugin_dir_).empty());
}

TEST_F(InstallDriverTest, CommandLineRefusesBadNameAndMissingDriverFlag) {
  std::ostringstream out, err;
  EXPECT_EQ(RunInstallDriverCommand({"--driver", "bad name/x", "--plugin-dir", plugin_dir_,
                                     "--flexexec", fake_flexexec_},
                                    out, err),
            1);
  EXPECT_NE(err.str().find("only letters, digits"), std::string::npos) << err.str();
  EXPECT_EQ(RunInstallDriverCommand({"--plugin-dir", plugin_dir_}, out, err), 2);
  EXPECT_EQ(RunInstallDriverCommand({"--help"}, out, err), 0);
  EXPECT_NE(out.str().find("--no-attach"), std::string::npos);
}

TEST_F(InstallDriverTest, CommandLineWithConfigOnlyInstallsEveryConfiguredDriver) {
  const std::string config = root_ + "/bridge.yaml";
  WriteFile(
      config,
      "drivers:\n"
      "  - {flexDriver: flexcsi/loopback, csiEndpoint: unix:///a.sock,\n"
      "     rule: {csiDriver: loopback.csi.flexcsi.io, volumeHandle: {fromOption: volumeID}}}\n"
      "  - {flexDriver: example/nfs, csiEndpoint: unix:///b.sock, attach: false,\n"
      "     rule: {csiDriver: nfs.csi.k8s.io, volumeHandle: {fromOption: share}}}\n",
      0644);
  std::ostringstream out, err;
  ASSERT_EQ(RunInstallDriverCommand(
                {"--plugin-dir", plugin_dir_, "--config", config, "--flexexec", fake_flexexec_},
                out, err),
            0)
      << err.str();
  EXPECT_EQ(ListDir(plugin_dir_), (std::vector<std::string>{"example~nfs", "flexcsi~loopback"}));
  EXPECT_EQ(nlohmann::json::parse(
                ReadFile(plugin_dir_ + "/example~nfs/flexcsi.json"))["capabilities"]["attach"],
            false);
  EXPECT_EQ(nlohmann::json::parse(
                ReadFile(plugin_dir_ + "/flexcsi~loopback/flexcsi.json"))["capabilities"]["attach"],
            true);
}

#ifdef FLEXCSI_REAL_FLEXEXEC
TEST_F(InstallDriverTest, RealFlexexecAnswersInitAfterInstall) {
  InstallDriverOptions o = Options();
  o.flexexec_source = FLEXCSI_REAL_FLEXEXEC;
  o.attach = false;
  auto report = InstallDriver(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const auto reply = nlohmann::json::parse(report->init_reply);
  EXPECT_EQ(reply["status"], "Success");
  EXPECT_EQ(reply["capabilities"]["attach"], false);
}
#endif

}  // namespace
}  // namespace flexcsi
