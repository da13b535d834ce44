#include "controller/relevant_revision.h"

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

nlohmann::json Claim() {
  return {{"metadata",
           {{"name", "c"},
            {"namespace", "ns"},
            {"uid", "u1"},
            {"resourceVersion", "5"},
            {"annotations",
             {{"volume.kubernetes.io/storage-provisioner", "p"},
              {"volume.kubernetes.io/selected-node", "node-a"}}}}},
          {"spec", {{"storageClassName", "sc"}}},
          {"status", {{"phase", "Pending"}}}};
}

TEST(RelevantRevision, UnchangedByStatusLabelsOtherAnnotationsAndVersion) {
  const std::string before = RelevantRevision("claim", Claim());
  auto after = Claim();
  after["metadata"]["resourceVersion"] = "9";
  after["metadata"]["labels"] = {{"team", "x"}};
  after["metadata"]["annotations"]["example.com/note"] = "y";
  after["status"]["conditions"] = nlohmann::json::array({{{"type", "Resizing"}}});
  EXPECT_EQ(RelevantRevision("claim", after), before);
}

TEST(RelevantRevision, ChangedBySelectedNodeSpecDeletionAndUid) {
  const std::string before = RelevantRevision("claim", Claim());
  auto node = Claim();
  node["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] = "node-b";
  auto spec = Claim();
  spec["spec"]["resources"] = {{"requests", {{"storage", "2Gi"}}}};
  auto deleting = Claim();
  deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  auto recreated = Claim();
  recreated["metadata"]["uid"] = "u2";
  for (const auto& changed : {node, spec, deleting, recreated}) {
    EXPECT_NE(RelevantRevision("claim", changed), before) << changed.dump();
  }
}

TEST(RelevantRevision, PhaseMattersForVolumesOnly) {
  nlohmann::json pv = {{"metadata", {{"name", "pv"}, {"uid", "u"}}},
                       {"status", {{"phase", "Bound"}}}};
  auto released = pv;
  released["status"]["phase"] = "Released";
  EXPECT_NE(RelevantRevision("pv", pv), RelevantRevision("pv", released));
  EXPECT_EQ(RelevantRevision("snapshot", pv), RelevantRevision("snapshot", released));
}

}  // namespace
}  // namespace flexcsi::controller
