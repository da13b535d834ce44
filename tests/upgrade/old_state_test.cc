// A bridge database written by one release and opened by another (issue #37): the current bridge
// takes over the previous release's records of attached, staged and published volumes and tears
// them all down; the previous bridge, after a downgrade, either serves the current bridge's
// database or refuses it by its schema version, and never changes a file it refused.
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "tests/upgrade/upgrade_test_util.h"

namespace flexcsi {
namespace upgrade {
namespace {

constexpr int64_t kStateMiB = 1024 * 1024;

// PRAGMA user_version of the database at `path` (-1 when unreadable); `set` writes it first.
int64_t SchemaVersion(const std::string& path, std::optional<int64_t> set = std::nullopt) {
  sqlite3* db = nullptr;
  int64_t version = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    if (set) {
      sqlite3_exec(db, ("PRAGMA user_version = " + std::to_string(*set)).c_str(), nullptr, nullptr,
                   nullptr);
    }
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      version = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return version;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// How many records of each kind the bridge reports.
std::map<std::string, size_t> RecordCounts(const TestEnvironment& env) {
  std::map<std::string, size_t> counts;
  const nlohmann::json state = env.BridgeState();
  for (const char* table : {"attachments", "stagings", "publications"}) {
    counts[table] = state.is_object() && state.contains(table) ? state[table].size() : 0;
  }
  return counts;
}

// Three volumes at the three depths of the life cycle: attached, staged, published (and a file
// written into the published one).
class ThreeVolumes {
 public:
  explicit ThreeVolumes(TestEnvironment* env) : env_(env) {}

  void Create() {
    for (const char* name : {"attached", "staged", "published"}) {
      const std::string id = env_->CreateVolume(std::string("vol-") + name, 64 * kStateMiB, "ext4");
      ASSERT_FALSE(id.empty());
      volumes_[name] = env_->VolumeSource(std::string("pv-") + name, id);
      DriverResult attach = env_->caller().Attach(volumes_[name]);
      ASSERT_DRIVER_OK(attach);
      devices_[name] = attach.reply.value("device", "");
      ASSERT_DRIVER_OK(env_->caller().WaitForAttach(devices_[name], volumes_[name]));
    }
    for (const char* name : {"staged", "published"}) {
      ASSERT_DRIVER_OK(env_->caller().MountDevice(volumes_[name], devices_[name]));
    }
    ASSERT_DRIVER_OK(env_->caller().SetUp(volumes_["published"], pod()));
    ASSERT_TRUE(kubelet::WriteTextFile(PodDir() + "/kept", "old state"));
  }

  std::map<std::string, size_t> ExpectedCounts() const {
    return {{"attachments", 3}, {"stagings", 2}, {"publications", 1}};
  }

  void ExpectServed() const {
    EXPECT_EQ(ExpectedCounts(), RecordCounts(*env_));
    EXPECT_EQ("", env_->RecordsVersusMountTable());
    EXPECT_EQ("old state", kubelet::ReadTextFile(PodDir() + "/kept"));
  }

  // unmount, every unmountdevice and every detach, as kubelet and the controller would.
  void TearDownAll() {
    ASSERT_DRIVER_OK(env_->caller().TearDown(volumes_["published"], pod()));
    for (const char* name : {"staged", "published"}) {
      ASSERT_DRIVER_OK(env_->caller().UnmountDevice(volumes_[name])) << name;
    }
    for (const char* name : {"attached", "staged", "published"}) {
      ASSERT_DRIVER_OK(env_->caller().Detach(volumes_[name])) << name;
    }
    kubelet::ExpectNothingLeaked(*env_);
  }

 private:
  kubelet::PodInfo pod() const { return env_->Pod("state-0"); }
  std::string PodDir() const {
    return env_->caller().PodVolumeDirFor(pod(), volumes_.at("published"));
  }

  TestEnvironment* env_;
  std::map<std::string, kubelet::FlexVolumeSource> volumes_;
  std::map<std::string, std::string> devices_;
};

class OldStateTest : public UpgradeTest {
 protected:
  // A world on `version`'s flexexec and bridge, holding the three volumes.
  void StartWithThreeVolumes(Version version) {
    env_ = StartWorld(version, version);
    ASSERT_TRUE(env_);
    ASSERT_DRIVER_OK(env_->caller().Init());
    volumes_ = std::make_unique<ThreeVolumes>(env_.get());
    ASSERT_NO_FATAL_FAILURE(volumes_->Create());
  }

  std::unique_ptr<TestEnvironment> env_;
  std::unique_ptr<ThreeVolumes> volumes_;
};

TEST_F(OldStateTest, CurrentBridgeServesAndTearsDownThePreviousReleasesRecords) {
  ASSERT_NO_FATAL_FAILURE(StartWithThreeVolumes(Version::kPrevious));
  TestEnvironment* env = env_.get();
  const int64_t written_by_previous = SchemaVersion(env->state_db());

  ASSERT_TRUE(RollBridge(*env, Version::kCurrent));
  ASSERT_TRUE(RollFlexexec(*env, Version::kCurrent));
  ASSERT_DRIVER_OK(env->caller().Init());
  volumes_->ExpectServed();
  std::printf("schema version written by the previous bridge: %lld, after the current one: %lld\n",
              static_cast<long long>(written_by_previous),
              static_cast<long long>(SchemaVersion(env->state_db())));
  ASSERT_NO_FATAL_FAILURE(volumes_->TearDownAll());
}

// A downgrade: the previous bridge on the current bridge's database. It may serve it (the
// schema is one it knows) or refuse to start, naming the schema version; then it must have left
// the file as it was, and rolling forward again serves everything.
TEST_F(OldStateTest, PreviousBridgeServesOrRefusesTheCurrentDatabase) {
  ASSERT_NO_FATAL_FAILURE(StartWithThreeVolumes(Version::kCurrent));
  TestEnvironment* env = env_.get();
  env->KillBridge(SIGTERM);
  const int64_t written_by_current = SchemaVersion(env->state_db());
  const std::string before = FileBytes(env->state_db());

  env->UseBridgeBinary(Bridge(Version::kPrevious));
  if (!env->StartBridge()) {
    EXPECT_NE(std::string::npos, env->ReadBridgeLog().find("was written by a newer flexcsi"))
        << "the previous bridge refused the database without naming its schema version";
    EXPECT_EQ(before, FileBytes(env->state_db())) << "a refused database was changed";
    std::printf("downgrade: the previous bridge refuses schema version %lld\n",
                static_cast<long long>(written_by_current));
    ASSERT_TRUE(RollBridge(*env, Version::kCurrent));
  } else {
    std::printf("downgrade: the previous bridge serves schema version %lld\n",
                static_cast<long long>(written_by_current));
    ASSERT_TRUE(RollFlexexec(*env, Version::kPrevious));
    EXPECT_EQ(written_by_current, SchemaVersion(env->state_db()));
  }
  ASSERT_DRIVER_OK(env->caller().Init());
  volumes_->ExpectServed();
  ASSERT_NO_FATAL_FAILURE(volumes_->TearDownAll());
}

// The guard the next schema change relies on for downgrades: the previous bridge, given a
// database one schema version newer than its own, refuses to start by name and changes nothing.
TEST_F(OldStateTest, PreviousBridgeRefusesANewerSchemaByNameAndLeavesTheFile) {
  ASSERT_NO_FATAL_FAILURE(StartWithThreeVolumes(Version::kPrevious));
  TestEnvironment* env = env_.get();
  env->KillBridge(SIGTERM);
  const int64_t known = SchemaVersion(env->state_db());
  ASSERT_GT(known, 0);
  ASSERT_EQ(known + 1, SchemaVersion(env->state_db(), known + 1));
  const std::string before = FileBytes(env->state_db());

  EXPECT_FALSE(env->StartBridge()) << "the previous bridge started on a newer schema";
  const std::string expected = "schema version " + std::to_string(known + 1) +
                               " was written by a newer flexcsi (this one knows version " +
                               std::to_string(known) + ")";
  EXPECT_NE(std::string::npos, env->ReadBridgeLog().find(expected))
      << "expected \"" << expected << "\" in the bridge log:\n"
      << env->ReadBridgeLog();
  EXPECT_EQ(before, FileBytes(env->state_db())) << "a refused database was changed";

  // Put back as it was: the volumes are still served and torn down.
  ASSERT_EQ(known, SchemaVersion(env->state_db(), known));
  ASSERT_TRUE(env->StartBridge());
  volumes_->ExpectServed();
  ASSERT_NO_FATAL_FAILURE(volumes_->TearDownAll());
}

}  // namespace
}  // namespace upgrade
}  // namespace flexcsi
