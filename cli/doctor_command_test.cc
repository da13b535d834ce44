#include "cli/doctor_command.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/install_driver_command.h"
#include "common/version.h"
#include "tests/support/fake_bridge_test_util.h"

namespace flexcsi {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE attachments(flex_driver TEXT, volume_name TEXT, node_name TEXT,
  csi_driver TEXT, volume_id TEXT, node_id TEXT, publish_context TEXT, state TEXT,
  updated_at INTEGER, PRIMARY KEY(flex_driver, volume_name, node_name));
CREATE TABLE stagings(staging_path TEXT PRIMARY KEY, flex_driver TEXT, volume_name TEXT,
  csi_driver TEXT, volume_id TEXT, owner TEXT, request TEXT, state TEXT, updated_at INTEGER,
  shape TEXT NOT NULL DEFAULT 'driver-mount', marker INTEGER NOT NULL DEFAULT 0);
CREATE TABLE publications(target_path TEXT PRIMARY KEY, staging_path TEXT,
  flex_driver TEXT, volume_name TEXT, csi_driver TEXT, volume_id TEXT, pod_uid TEXT,
  readonly INTEGER, state TEXT, updated_at INTEGER);
PRAGMA user_version = 2;
)sql";

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

nlohmann::json HealthyReply() {
  return {{"status", "Success"},
          {"drivers",
           {{{"flexDriver", "flexcsi/loopback"},
             {"csiDriver", "loopback.csi.flexcsi.io"},
             {"endpoint", "unix:///x/csi.sock"},
             {"ready", true},
             {"message", ""},
             {"nodeCapabilities", {"STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"}},
             {"controllerCapabilities", {"CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"}}}}},
          {"records", {{"attachments", 1}, {"stagings", 1}, {"publications", 1}}},
          {"pendingRollbacks", 0},
          {"build", {{"version", FlexcsiVersion()}, {"commit", FlexcsiGitCommit()}}}};
}

// A stand-in flexexec: answers init, and --version with `version_answer` (a shell command).
std::string FlexexecScript(const std::string& version_answer) {
  return "#!/bin/sh\nif [ \"$1\" = --version ]; then " + version_answer +
         "; fi\necho '{\"status\":\"Success\"}'\n";
}
// This build's flexexec, as far as doctor can tell.
std::string SameReleaseFlexexec() {
  return FlexexecScript("echo '" + VersionLine("flexexec") + "'; exit 0");
}

// A complete, healthy node in a temp dir: config, installed driver, bridge, database, mounts.
class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/flexcsi-doctor-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    options_.config_path = root_ + "/bridge.yaml";
    options_.plugin_dir = root_ + "/plugins";
    options_.mountinfo_path = root_ + "/mountinfo";
    kubelet_ = root_ + "/kubelet";
    socket_ = root_ + "/bridge.sock";
    db_ = root_ + "/state.db";
    WriteFile(options_.config_path, "kubeletRoot: " + kubelet_ + "\nsocket: " + socket_ +
                                        "\nstateDatabase: " + db_ +
                                        "\ndrivers:\n"
                                        "  - flexDriver: flexcsi/loopback\n"
                                        "    csiEndpoint: unix://" +
                                        root_ +
                                        "/csi.sock\n"
                                        "    attach: true\n"
                                        "    rule: {csiDriver: loopback.csi.flexcsi.io, "
                                        "volumeHandle: {fromOption: volumeID}}\n");
    const std::string flexexec = root_ + "/flexexec";
    WriteFile(flexexec, SameReleaseFlexexec());
    chmod(flexexec.c_str(), 0755);
    InstallDriverOptions install;
    install.driver = "flexcsi/loopback";
    install.plugin_dir = options_.plugin_dir;
    install.flexexec_source = flexexec;
    install.bridge_socket = socket_;
    install.verify = false;
    ASSERT_TRUE(InstallDriver(install).ok());

    staging_ = kubelet_ + "/plugins/kubernetes.io/flexvolume/flexcsi/loopback/mounts/pv1";
    target_ = kubelet_ + "/pods/uid-1/volumes/flexcsi~loopback/pv1";
    Sql(kSchema);
    Sql("INSERT INTO attachments VALUES('flexcsi/loopback','pv1','node1','loopback.csi.flexcsi.io',"
        "'vol-1','node1','{}','attached',0);"
        "INSERT INTO stagings(staging_path, flex_driver, volume_name, csi_driver, volume_id, "
        "owner, request, state, updated_at) VALUES('" +
        staging_ +
        "','flexcsi/loopback','pv1',"
        "'loopback.csi.flexcsi.io','vol-1','kubelet','{}','staged',0);"
        "INSERT INTO publications VALUES('" +
        target_ + "','" + staging_ +
        "','flexcsi/loopback',"
        "'pv1','loopback.csi.flexcsi.io','vol-1','uid-1',0,'published',0);");
    mounts_ = {"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
               "30 22 0:5 / " + kubelet_ + " rw shared:7 - tmpfs tmpfs rw",
               "40 30 7:0 / " + staging_ + " rw shared:9 - ext4 /dev/loop0 rw",
               "41 30 7:0 / " + target_ + " rw shared:9 - ext4 /dev/loop0 rw"};
    WriteMounts();
    bridge_ = std::make_unique<FakeBridge>(socket_, HealthyReply());
    ASSERT_TRUE(bridge_->ok());
  }
  void TearDown() override {
    bridge_.reset();
    std::system(("rm -rf '" + root_ + "'").c_str());
  }

  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
    sqlite3_close(db);
  }
  void WriteMounts() {
    std::string text;
    for (const auto& m : mounts_) text += m + "\n";
    WriteFile(options_.mountinfo_path, text);
  }

  // The check called `name` from a full doctor run.
  DoctorCheck Find(const std::vector<DoctorCheck>& checks, const std::string& name) {
    for (const auto& c : checks) {
      if (c.name == name) return c;
    }
    ADD_FAILURE() << "no check " << name;
    return {};
  }
  DoctorCheck Run(const std::string& name) { return Find(RunDoctorChecks(options_), name); }

  std::string root_, kubelet_, socket_, db_, staging_, target_;
  std::vector<std::string> mounts_;
  DoctorOptions options_;
  std::unique_ptr<FakeBridge> bridge_;
};

TEST_F(DoctorTest, HealthyNodePassesEveryCheckAndExitsZero) {
  std::ostringstream out, err;
  const int rc = RunDoctorCommand({"--config", options_.config_path, "--plugin-dir",
                                   options_.plugin_dir, "--mountinfo", options_.mountinfo_path},
                                  out, err);
  EXPECT_EQ(rc, 0) << out.str() << err.str();
  EXPECT_EQ(out.str().find("FAIL"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("WARN"), std::string::npos) << out.str();
  for (const char* row : {"bridge configuration", "driver flexcsi/loopback installed",
                          "bridge socket", "flexexec version flexcsi/loopback", "bridge version",
                          "version skew", "CSI endpoint flexcsi/loopback",
                          "kubelet root propagation", "state database", "records vs mount table"}) {
    EXPECT_NE(out.str().find(row), std::string::npos) << row << "\n" << out.str();
  }
  EXPECT_NE(out.str().find("10 checks: 10 pass, 0 warn, 0 fail"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("PUBLISH_UNPUBLISH_VOLUME"), std::string::npos);
  EXPECT_EQ(bridge_->last_call(), "bridge.health");
}

TEST_F(DoctorTest, MissingExecutableFailsWithReinstallHint) {
  unlink((options_.plugin_dir + "/flexcsi~loopback/loopback").c_str());
  const DoctorCheck c = Run("driver flexcsi/loopback installed");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find("is missing"), std::string::npos);
  EXPECT_NE(c.fix.find("flexcsi install-driver --driver flexcsi/loopback"), std::string::npos);
  std::ostringstream out, err;
  EXPECT_EQ(RunDoctorCommand({"--config", options_.config_path, "--plugin-dir", options_.plugin_dir,
                              "--mountinfo", options_.mountinfo_path},
                             out, err),
            1);
  EXPECT_NE(out.str().find("fix: flexcsi install-driver"), std::string::npos) << out.str();
}

TEST_F(DoctorTest, WorldWritableExecutableFails) {
  chmod((options_.plugin_dir + "/flexcsi~loopback/loopback").c_str(), 0777);
  const DoctorCheck c = Run("driver flexcsi/loopback installed");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.fix.find("chmod 0755"), std::string::npos);
}

TEST_F(DoctorTest, AttachMismatchBetweenInstallAndConfigFails) {
  std::ifstream in(options_.config_path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  text.replace(text.find("attach: true"), 12, "attach: false");
  WriteFile(options_.config_path, text);
  const DoctorCheck c = Run("driver flexcsi/loopback installed");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find("attach=true"), std::string::npos) << c.detail;
}

TEST_F(DoctorTest, FailingInitFails) {
  WriteFile(options_.plugin_dir + "/flexcsi~loopback/loopback",
            "#!/bin/sh\necho '{\"status\":\"Failure\",\"message\":\"boom\"}'\n");
  const DoctorCheck c = Run("driver flexcsi/loopback installed");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find("boom"), std::string::npos);
}

TEST_F(DoctorTest, BridgeDownFailsSocketAndEndpointChecks) {
  bridge_.reset();
  const auto checks = RunDoctorChecks(options_);
  EXPECT_EQ(Find(checks, "bridge socket").result, CheckResult::kFail);
  EXPECT_NE(Find(checks, "bridge socket").fix.find("flexcsi-bridge"), std::string::npos);
  const DoctorCheck endpoint = Find(checks, "CSI endpoint flexcsi/loopback");
  EXPECT_EQ(endpoint.result, CheckResult::kFail);
  EXPECT_NE(endpoint.detail.find("does not exist"), std::string::npos) << endpoint.detail;
  EXPECT_FALSE(AllPassed(checks));
}

TEST_F(DoctorTest, VersionsOfOneReleasePass) {
  const auto checks = RunDoctorChecks(options_);
  const std::string mine = DescribeVersion(FlexcsiVersion(), FlexcsiGitCommit());
  const DoctorCheck flexexec = Find(checks, "flexexec version flexcsi/loopback");
  EXPECT_EQ(flexexec.result, CheckResult::kPass);
  EXPECT_EQ(flexexec.detail, mine + ": " + options_.plugin_dir + "/flexcsi~loopback/loopback");
  EXPECT_EQ(Find(checks, "bridge version").detail, mine);
  const DoctorCheck skew = Find(checks, "version skew");
  EXPECT_EQ(skew.result, CheckResult::kPass);
  EXPECT_EQ(skew.detail, std::string("flexexec and bridge are both ") + FlexcsiVersion());
}

#ifdef FLEXCSI_REAL_FLEXEXEC
TEST_F(DoctorTest, ReadsTheRealFlexexecsVersion) {
  const std::string exe = options_.plugin_dir + "/flexcsi~loopback/loopback";
  std::ifstream in(FLEXCSI_REAL_FLEXEXEC, std::ios::binary);
  std::ofstream(exe, std::ios::binary | std::ios::trunc) << in.rdbuf();
  const auto checks = RunDoctorChecks(options_);
  EXPECT_EQ(Find(checks, "driver flexcsi/loopback installed").result, CheckResult::kPass);
  // The release only: the commit is the one of the configure before flexexec was linked.
  const std::string detail = Find(checks, "flexexec version flexcsi/loopback").detail;
  EXPECT_EQ(detail.rfind(std::string(FlexcsiVersion()) + " (", 0), 0u) << detail;
  EXPECT_EQ(detail.substr(detail.find("): ") + 3), exe) << detail;
  EXPECT_EQ(Find(checks, "version skew").result, CheckResult::kPass);
}
#endif

TEST_F(DoctorTest, FlexexecWithoutVersionIsTakenForTheReleaseBeforeAndWarned) {
  // 0.1.0's flexexec answers --version as an unknown call ({"status":"Not supported"}, exit 0);
  // a stand-in that fails on it must read the same.
  for (const char* answer : {"echo '{\"status\":\"Not supported\"}'; exit 0", "exit 1"}) {
    WriteFile(options_.plugin_dir + "/flexcsi~loopback/loopback", FlexexecScript(answer));
    const auto checks = RunDoctorChecks(options_);
    const DoctorCheck flexexec = Find(checks, "flexexec version flexcsi/loopback");
    EXPECT_EQ(flexexec.result, CheckResult::kPass) << answer;
    EXPECT_EQ(flexexec.detail.rfind("0.1.0 or older (no --version): ", 0), 0u) << flexexec.detail;
    const DoctorCheck skew = Find(checks, "version skew");
    EXPECT_EQ(skew.result, CheckResult::kWarn) << answer;
    EXPECT_EQ(skew.detail.rfind(std::string("flexexec 0.1.0 (flexcsi/loopback) and bridge ") +
                                    FlexcsiVersion() + " differ: ",
                                0),
              0u)
        << skew.detail;
    EXPECT_NE(skew.detail.find("neighbouring releases work together"), std::string::npos)
        << skew.detail;
    EXPECT_NE(skew.fix.find("finish the upgrade: flexcsi install-driver --driver flexcsi/loopback"),
              std::string::npos)
        << skew.fix;
    EXPECT_EQ(skew.fix.find("restart the bridge"), std::string::npos) << skew.fix;
    EXPECT_TRUE(AllPassed(checks));  // a warning: doctor still exits 0
  }
}

TEST_F(DoctorTest, BridgeWithoutVersionIsOlderAndWarned) {
  bridge_.reset();
  nlohmann::json reply = HealthyReply();
  reply.erase("build");  // what 0.1.0's bridge answers
  bridge_ = std::make_unique<FakeBridge>(socket_, reply);
  const auto checks = RunDoctorChecks(options_);
  const DoctorCheck bridge = Find(checks, "bridge version");
  EXPECT_EQ(bridge.result, CheckResult::kPass);
  EXPECT_EQ(bridge.detail, "unknown (older than 0.2.0)");
  const DoctorCheck skew = Find(checks, "version skew");
  EXPECT_EQ(skew.result, CheckResult::kWarn);
  EXPECT_EQ(skew.detail.rfind(std::string("flexexec ") + FlexcsiVersion() +
                                  " (flexcsi/loopback) and bridge 0.1.0 differ: ",
                              0),
            0u)
      << skew.detail;
  EXPECT_NE(skew.fix.find("restart the bridge"), std::string::npos) << skew.fix;
  EXPECT_EQ(skew.fix.find("install-driver"), std::string::npos) << skew.fix;
  std::ostringstream out, err;
  EXPECT_EQ(RunDoctorCommand({"--config", options_.config_path, "--plugin-dir",
                              options_.plugin_dir, "--mountinfo", options_.mountinfo_path},
                             out, err),
            0);
  EXPECT_NE(out.str().find("version skew"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("1 warn, 0 fail"), std::string::npos) << out.str();
}

TEST_F(DoctorTest, UnreachableBridgeStillShowsTheFlexexecVersion) {
  bridge_.reset();
  const auto checks = RunDoctorChecks(options_);
  EXPECT_EQ(Find(checks, "flexexec version flexcsi/loopback").result, CheckResult::kPass);
  for (const auto& c : checks) {
    EXPECT_NE(c.name, "bridge version");
    EXPECT_NE(c.name, "version skew");
  }
}

TEST_F(DoctorTest, NotReadyCsiDriverFailsWithItsMessage) {
  bridge_.reset();
  nlohmann::json reply = HealthyReply();
  reply["drivers"][0]["ready"] = false;
  reply["drivers"][0]["message"] = "Probe: connection refused";
  bridge_ = std::make_unique<FakeBridge>(socket_, reply);
  const DoctorCheck c = Run("CSI endpoint flexcsi/loopback");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find("Probe: connection refused"), std::string::npos);
}

TEST_F(DoctorTest, RecordWhoseUndoKeepsFailingWarnsNamingIt) {
  bridge_.reset();
  nlohmann::json reply = HealthyReply();
  reply["failingRepairs"] = {{{"kind", "staging"},
                              {"record", "staging /k/plugins/x/globalmount"},
                              {"attempts", 7},
                              {"lastError", "INTERNAL: NodeUnstageVolume: device busy"},
                              {"nextAttemptSeconds", 64}}};
  bridge_ = std::make_unique<FakeBridge>(socket_, reply);
  const auto checks = RunDoctorChecks(options_);
  const DoctorCheck c = Find(checks, "repair staging /k/plugins/x/globalmount");
  EXPECT_EQ(c.result, CheckResult::kWarn);
  EXPECT_NE(c.detail.find("7 times"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("device busy"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("64 s"), std::string::npos) << c.detail;
  EXPECT_TRUE(AllPassed(checks));  // a warning, not a failure
}

TEST_F(DoctorTest, AttachableDriverWithoutControllerPublishWarns) {
  bridge_.reset();
  nlohmann::json reply = HealthyReply();
  reply["drivers"][0]["controllerCapabilities"] = {"CREATE_DELETE_VOLUME"};
  bridge_ = std::make_unique<FakeBridge>(socket_, reply);
  const DoctorCheck c = Run("CSI endpoint flexcsi/loopback");
  EXPECT_EQ(c.result, CheckResult::kWarn);
  EXPECT_NE(c.fix.find("--no-attach"), std::string::npos);
}

TEST_F(DoctorTest, AWrongKubeletRootTheBridgeReportsFailsNamingTheSetting) {
  bridge_.reset();
  nlohmann::json reply = HealthyReply();
  reply["ready"] = false;
  reply["kubeletRoot"] = {{"path", "/var/lib/kubelet"},
                          {"ok", false},
                          {"message", "kubeletRoot /var/lib/kubelet is not kubelet's root dir: it "
                                      "has no pods/ and plugins/ (...)"}};
  bridge_ = std::make_unique<FakeBridge>(socket_, reply);
  const DoctorCheck c = Run("kubelet root");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find("not kubelet's root dir"), std::string::npos) << c.detail;
  EXPECT_NE(c.fix.find("--root-dir"), std::string::npos) << c.fix;
}

TEST_F(DoctorTest, PrivateKubeletRootFailsWithPropagationHint) {
  mounts_[1] = "30 22 0:5 / " + kubelet_ + " rw - tmpfs tmpfs rw";
  WriteMounts();
  const DoctorCheck c = Run("kubelet root propagation");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find("private"), std::string::npos);
  EXPECT_NE(c.fix.find("Bidirectional"), std::string::npos);
  // A slave mount (master:N) is not enough either: the bridge's mounts would not go back up.
  mounts_[1] = "30 22 0:5 / " + kubelet_ + " rw master:3 - tmpfs tmpfs rw";
  WriteMounts();
  EXPECT_EQ(Run("kubelet root propagation").result, CheckResult::kFail);
}

TEST_F(DoctorTest, KubeletRootBelowASharedMountPasses) {
  mounts_.erase(mounts_.begin() + 1);  // the kubelet root now lives on "/" (shared:1)
  mounts_.erase(mounts_.begin() + 1, mounts_.end());
  WriteMounts();
  const DoctorCheck c = Run("kubelet root propagation");
  EXPECT_EQ(c.result, CheckResult::kPass) << c.detail;
  EXPECT_NE(c.detail.find("shared:1"), std::string::npos);
}

TEST_F(DoctorTest, CorruptDatabaseFails) {
  WriteFile(db_, std::string(8192, 'x'));
  const DoctorCheck c = CheckStateDatabase(db_);
  EXPECT_EQ(c.result, CheckResult::kFail) << c.detail;
}

TEST_F(DoctorTest, UnknownSchemaVersionFails) {
  Sql("PRAGMA user_version = 7;");
  const DoctorCheck c = CheckStateDatabase(db_);
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find("schema version 7"), std::string::npos);
}

TEST_F(DoctorTest, MissingDatabaseOnlyWarns) {
  const DoctorCheck c = CheckStateDatabase(root_ + "/none.db");
  EXPECT_EQ(c.result, CheckResult::kWarn);
  struct stat st {};
  EXPECT_NE(stat((root_ + "/none.db").c_str(), &st), 0) << "doctor must not create the database";
}

TEST_F(DoctorTest, RecordedMountThatIsGoneFails) {
  mounts_.pop_back();  // the publication's mount vanished
  WriteMounts();
  const DoctorCheck c = Run("records vs mount table");
  EXPECT_EQ(c.result, CheckResult::kFail);
  EXPECT_NE(c.detail.find(target_), std::string::npos);
}

TEST_F(DoctorTest, SymlinkedKubeletRootMatchesMounts) {
  // Records name the path kubelet used (through a symlink); the kernel reports the real one.
  const std::string real = root_ + "/real-kubelet";
  ASSERT_EQ(system(("mkdir -p '" + real + "/pods/uid-1/volumes/flexcsi~loopback/pv1' '" + real +
                    "/plugins/kubernetes.io/flexvolume/flexcsi/loopback/mounts/pv1' && ln -s '" +
                    real + "' '" + kubelet_ + "'")
                       .c_str()),
            0);
  mounts_[2] = "40 30 7:0 / " + real +
               "/plugins/kubernetes.io/flexvolume/flexcsi/loopback/mounts/pv1 rw shared:9 - "
               "ext4 /dev/loop0 rw";
  mounts_[3] = "41 30 7:0 / " + real +
               "/pods/uid-1/volumes/flexcsi~loopback/pv1 rw shared:9 - ext4 /dev/loop0 rw";
  WriteMounts();
  const DoctorCheck c = Run("records vs mount table");
  EXPECT_EQ(c.result, CheckResult::kPass) << c.detail;
}

TEST_F(DoctorTest, StagingIsJudgedByItsShape) {
  mounts_.erase(mounts_.begin() + 2);  // nothing mounted at the staging path
  WriteMounts();
  // The driver only recorded the staging (csi-driver-host-path's shape) at a path of the
  // bridge's own: nothing is ever mounted there, so nothing is missing.
  Sql("UPDATE stagings SET shape='record-only', marker=0, owner='bridge'");
  EXPECT_EQ(Run("records vs mount table").result, CheckResult::kPass);
  // The same at kubelet's device mount path carries the bridge's marker, which must be there.
  Sql("UPDATE stagings SET marker=1, owner='kubelet'");
  EXPECT_EQ(Run("records vs mount table").result, CheckResult::kFail);
  Sql("UPDATE stagings SET shape='no-stage', marker=1");
  EXPECT_EQ(Run("records vs mount table").result, CheckResult::kFail);
  Sql("UPDATE stagings SET shape='driver-mount', marker=0");
  EXPECT_EQ(Run("records vs mount table").result, CheckResult::kFail);
}

TEST_F(DoctorTest, SchemaOneStagingWithoutCsiNeedsNoMount) {
  // A database the bridge has not migrated yet: request.staged=false meant no mount.
  Sql("ALTER TABLE stagings DROP COLUMN marker; ALTER TABLE stagings DROP COLUMN shape;"
      "PRAGMA user_version = 1; UPDATE stagings SET request='{\"staged\":false}'");
  mounts_.erase(mounts_.begin() + 2);
  WriteMounts();
  EXPECT_EQ(Run("records vs mount table").result, CheckResult::kPass);
  Sql("UPDATE stagings SET request='{\"staged\":true}'");
  EXPECT_EQ(Run("records vs mount table").result, CheckResult::kFail);
}

TEST_F(DoctorTest, UnrecordedFlexcsiPodMountWarns) {
  mounts_.push_back("42 30 7:1 / " + kubelet_ +
                    "/pods/uid-2/volumes/flexcsi~loopback/pv2 rw shared:9 - ext4 /dev/loop1 rw");
  WriteMounts();
  const DoctorCheck c = Run("records vs mount table");
  EXPECT_EQ(c.result, CheckResult::kWarn);
  EXPECT_NE(c.detail.find("uid-2"), std::string::npos);
}

TEST_F(DoctorTest, TransitionalRecordWarns) {
  Sql("UPDATE publications SET state='publishing'");
  const DoctorCheck c = Run("records vs mount table");
  EXPECT_EQ(c.result, CheckResult::kWarn);
  EXPECT_NE(c.detail.find("publishing"), std::string::npos);
}

TEST_F(DoctorTest, JsonOutputListsEveryCheck) {
  std::ostringstream out, err;
  RunDoctorCommand({"--config", options_.config_path, "--plugin-dir", options_.plugin_dir,
                    "--mountinfo", options_.mountinfo_path, "-o", "json"},
                   out, err);
  const auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j.size(), 10u);
  EXPECT_EQ(j[0]["result"], "PASS");
}

TEST(DoctorConfigTest, MissingConfigFailsAtOnce) {
  DoctorOptions o;
  o.config_path = "/nonexistent/bridge.yaml";
  const auto checks = RunDoctorChecks(o);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].result, CheckResult::kFail);
}

TEST(MountInfoTest, ReadsThisProcessMountTableWithEscapes) {
  auto mounts = ReadMountInfo("/proc/self/mountinfo");
  ASSERT_TRUE(mounts.ok());
  bool saw_root = false;
  for (const auto& m : *mounts) saw_root |= m.mount_point == "/";
  EXPECT_TRUE(saw_root);

  char tmpl[] = "/tmp/flexcsi-mountinfo-XXXXXX";
  const int fd = mkstemp(tmpl);
  close(fd);
  WriteFile(tmpl, "50 1 0:9 / /mnt/with\\040space rw shared:3 master:1 - tmpfs none rw\n");
  mounts = ReadMountInfo(tmpl);
  unlink(tmpl);
  ASSERT_TRUE(mounts.ok());
  ASSERT_EQ(mounts->size(), 1u);
  EXPECT_EQ((*mounts)[0].mount_point, "/mnt/with space");
  EXPECT_EQ((*mounts)[0].optional_fields, (std::vector<std::string>{"shared:3", "master:1"}));
}

}  // namespace
}  // namespace flexcsi
