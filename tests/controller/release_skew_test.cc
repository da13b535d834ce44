// flexcsi-controller's intent journal across releases (issue #37). The previous release's
// controller (the commit CHANGELOG.md names, built from git history by
// tests/upgrade/build_release.sh) is killed with SIGKILL right after a provisioning step, its
// journal holding the intent, and this tree's controller, started on that journal, finishes
// it: one PV for the claim, no CSI volume without a PV, or the volume deleted when the claim went
// away meanwhile. Then the way back from a bad release: this tree's controller killed, the
// previous one finishing. A journal of a schema the running release does not know is refused by
// name and left as it was, whichever release meets it.
#include <sqlite3.h>

#include <cstdio>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "tests/controller/e2e_test_util.h"
#include "tests/upgrade/previous_release.h"

namespace flexcsi::controller_test {
namespace {

using namespace std::chrono_literals;

// Which release is killed with the intent, and which finishes it.
struct Direction {
  const char* name;
  bool previous_crashes;  // upgrade: the previous release crashes, this tree's finishes
};

const Direction kUpgrade{"Upgrade", true};
const Direction kDowngrade{"Downgrade", false};

class JournalAcrossReleases : public WorldTest, public ::testing::WithParamInterface<Direction> {
 protected:
  static void SetUpTestSuite() {
    WorldTest::SetUpTestSuite();
    upgrade::PreviousRelease found;
    auto r = upgrade::FindPreviousRelease({"flexcsi-controller"}, &found);
    if (r) {
      previous_ = new std::string(found.Binary("flexcsi-controller"));
      std::printf("previous release: %s\n", found.version.c_str());
    } else {
      release_error_ = new std::string(r.message());
    }
  }
  static void TearDownTestSuite() {
    WorldTest::TearDownTestSuite();
    delete previous_;
    previous_ = nullptr;
  }
  void SetUp() override {
    WorldTest::SetUp();
    ASSERT_NE(previous_, nullptr) << *release_error_;
  }

  static ControllerFlags Release(bool previous) {
    ControllerFlags f;
    if (previous) f.binary = *previous_;
    return f;
  }
  static ControllerFlags Crashing(const std::string& step) {
    ControllerFlags f = Release(GetParam().previous_crashes);
    f.env["FLEXCSI_CONTROLLER_CRASH_AFTER"] = step;
    return f;
  }
  static ControllerFlags Finishing() { return Release(!GetParam().previous_crashes); }

  static inline std::string* previous_ = nullptr;
  static inline std::string* release_error_ = nullptr;
};

// The journal as the controllers wrote it, read without changing it.
struct JournalRow {
  std::string volume_name;
  std::string volume_id;
};

std::optional<std::vector<JournalRow>> JournalRows(const std::string& path, int* schema) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return std::nullopt;
  }
  std::vector<JournalRow> rows;
  sqlite3_stmt* s = nullptr;
  bool ok = sqlite3_prepare_v2(db, "SELECT volume_name, volume_id FROM intents", -1, &s, nullptr) ==
            SQLITE_OK;
  while (ok && sqlite3_step(s) == SQLITE_ROW) {
    auto text = [&](int i) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
      return std::string(t ? t : "");
    };
    rows.push_back({text(0), text(1)});
  }
  sqlite3_finalize(s);
  if (ok && schema != nullptr &&
      sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) == SQLITE_OK) {
    *schema = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  if (!ok) return std::nullopt;
  return rows;
}

bool SetSchema(const std::string& path, int version) {
  sqlite3* db = nullptr;
  const bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
                  sqlite3_exec(db, ("PRAGMA user_version = " + std::to_string(version)).c_str(),
                               nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);  // the last connection: checkpoints, so the main file holds everything
  return ok;
}

std::set<std::string> PVVolumeIds(ControllerWorld& w) {
  std::set<std::string> ids;
  auto list = w.api().List(kube::ResourcePath::Core("persistentvolumes"));
  EXPECT_TRUE(list.ok());
  for (const auto& pv : (*list)["items"]) {
    ids.insert(pv["spec"]["flexVolume"]["options"].value("volumeID", ""));
  }
  return ids;
}

int PVsOfClaim(ControllerWorld& w, const std::string& claim_uid) {
  auto list = w.api().List(kube::ResourcePath::Core("persistentvolumes"));
  EXPECT_TRUE(list.ok());
  int n = 0;
  for (const auto& pv : (*list)["items"]) {
    n += pv["spec"].value("claimRef", nlohmann::json::object()).value("uid", "") == claim_uid;
  }
  return n;
}

// Every driver volume belongs to exactly one PV and vice versa.
void ExpectOneToOne(ControllerWorld& w) {
  const auto volumes = w.DriverVolumes();
  const auto ids = PVVolumeIds(w);
  for (const auto& [id, bytes] : volumes) {
    EXPECT_EQ(ids.count(id), 1u) << "volume " << id << " has no PV (leaked storage)";
  }
  for (const auto& id : ids) {
    EXPECT_EQ(volumes.count(id), 1u) << "PV names volume " << id << ", which does not exist";
  }
}

// Each provisioning step the controller crashes after: the intent alone (journal-begin), the
// volume created and its id journaled but no PV (create-volume), the PV written but the intent
// not yet finished (pv-create).
TEST_P(JournalAcrossReleases, KilledWithAnIntentThenTheOtherReleaseFinishesIt) {
  const std::string ns = std::string("skew-") + (GetParam().previous_crashes ? "up" : "down");
  W().CreateNamespace(ns);
  W().CreateStorageClass(ns);
  int n = 0;
  for (const char* step : {"journal-begin", "create-volume", "pv-create"}) {
    SCOPED_TRACE(step);
    const std::string claim = "c" + std::to_string(n++);
    const size_t volumes_before = W().DriverVolumes().size();
    ASSERT_TRUE(W().StartController(0, Crashing(step)));
    W().CreateClaim(ns, claim, "16Mi", ns);
    ASSERT_TRUE(W().WaitControllerExit(0, 30s)) << "crash point " << step << " never reached";
    const std::string uid = W().GetClaim(ns, claim)["metadata"]["uid"];
    int schema = 0;
    auto rows = JournalRows(W().JournalPath(), &schema);
    ASSERT_TRUE(rows) << "the journal cannot be read";
    EXPECT_EQ(schema, 1);
    ASSERT_EQ(rows->size(), 1u) << "the crash leaves the claim's intent in the journal";
    EXPECT_EQ((*rows)[0].volume_name, "pvc-" + uid);
    if (std::string(step) == "create-volume") {
      // The volume exists, its id not yet journaled (the response counts as lost): the other
      // release must learn it by repeating CreateVolume by name.
      EXPECT_EQ(W().DriverVolumes().size(), volumes_before + 1);
      EXPECT_EQ(PVsOfClaim(W(), uid), 0) << "the crash point is before the PV";
    }

    ASSERT_TRUE(W().StartController(0, Finishing()));
    ASSERT_TRUE(W().WaitBound(ns, claim)) << W().GetClaim(ns, claim).dump();
    EXPECT_TRUE(W().WaitFor([&] {
      auto now = JournalRows(W().JournalPath(), nullptr);
      return now && now->empty();
    })) << "the intent is finished once the PV exists";
    W().KillController(0, SIGTERM);
    EXPECT_EQ(PVsOfClaim(W(), uid), 1);
    EXPECT_EQ(W().DriverVolumes().size(), volumes_before + 1);
    ExpectOneToOne(W());
  }
}

// The claim is deleted while no controller runs: the other release deletes the volume the
// journal leads to.
TEST_P(JournalAcrossReleases, ClaimDeletedWhileDownThenTheOtherReleaseDeletesTheVolume) {
  const std::string ns = std::string("gone-") + (GetParam().previous_crashes ? "up" : "down");
  W().CreateNamespace(ns);
  W().CreateStorageClass(ns);
  const size_t before = W().DriverVolumes().size();
  ASSERT_TRUE(W().StartController(0, Crashing("create-volume")));
  W().CreateClaim(ns, "brief", "16Mi", ns);
  ASSERT_TRUE(W().WaitControllerExit(0, 30s));
  ASSERT_EQ(W().DriverVolumes().size(), before + 1) << "the crash point is after CreateVolume";
  ASSERT_TRUE(
      W().api().Delete(kube::ResourcePath::Core("persistentvolumeclaims", ns).Named("brief")).ok());
  ASSERT_TRUE(W().WaitFor([&] { return W().GetClaim(ns, "brief").is_null(); }));
  ASSERT_TRUE(W().StartController(0, Finishing()));
  EXPECT_TRUE(W().WaitFor([&] { return W().DriverVolumes().size() == before; }))
      << "the journal did not lead to the orphaned volume";
  EXPECT_TRUE(W().WaitFor([&] {
    auto now = JournalRows(W().JournalPath(), nullptr);
    return now && now->empty();
  }));
  W().KillController(0, SIGTERM);
  ExpectOneToOne(W());
}

// A journal one schema version ahead of what the finishing release knows (as the next format
// change will write) is refused with the reason, its schema version and intent as they were.
TEST_P(JournalAcrossReleases, AJournalOfALaterSchemaIsRefusedByNameAndKeepsItsIntent) {
  const std::string ns = std::string("ahead-") + (GetParam().previous_crashes ? "up" : "down");
  W().CreateNamespace(ns);
  W().CreateStorageClass(ns);
  ASSERT_TRUE(W().StartController(0, Crashing("create-volume")));
  W().CreateClaim(ns, "held", "16Mi", ns);
  ASSERT_TRUE(W().WaitControllerExit(0, 30s));
  ASSERT_TRUE(SetSchema(W().JournalPath(), 2));
  int schema_before = 0;
  const auto rows_before = JournalRows(W().JournalPath(), &schema_before);
  ASSERT_TRUE(rows_before);
  ASSERT_EQ(rows_before->size(), 1u);

  ASSERT_TRUE(W().StartController(0, Finishing()));
  ASSERT_TRUE(W().WaitControllerExit(0, 30s)) << "a journal it cannot read must stop it";
  const std::string log = W().ControllerLog(0);
  EXPECT_NE(log.find("schema version 2 was written by a newer flexcsi (this one knows version 1)"),
            std::string::npos)
      << log;
  // What it holds, not its bytes: a connection may rewrite SQLite's own header fields.
  int schema_after = 0;
  const auto rows_after = JournalRows(W().JournalPath(), &schema_after);
  ASSERT_TRUE(rows_after);
  EXPECT_EQ(schema_after, 2) << "the refusing release changed the schema version";
  ASSERT_EQ(rows_after->size(), 1u) << "the refusing release changed the intents";
  EXPECT_EQ((*rows_after)[0].volume_name, (*rows_before)[0].volume_name);
  EXPECT_EQ((*rows_after)[0].volume_id, (*rows_before)[0].volume_id);
  EXPECT_EQ(PVsOfClaim(W(), W().GetClaim(ns, "held")["metadata"]["uid"]), 0);

  // Back to the schema both releases write: the intent is finished as in the tests above.
  ASSERT_TRUE(SetSchema(W().JournalPath(), 1));
  ASSERT_TRUE(W().StartController(0, Finishing()));
  ASSERT_TRUE(W().WaitBound(ns, "held"));
  W().KillController(0, SIGTERM);
  ExpectOneToOne(W());
}

INSTANTIATE_TEST_SUITE_P(Releases, JournalAcrossReleases, ::testing::Values(kUpgrade, kDowngrade),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace flexcsi::controller_test
