#include "migrate/parallel_mover.h"

#include <gtest/gtest.h>

namespace flexcsi::migrate {
namespace {

WorkloadRef Scalable(const std::string& kind, const std::string& name) {
  return WorkloadRef{
      kind, "ns", name, "apps/v1", kind == "StatefulSet" ? "statefulsets" : "deployments", ""};
}

VolumePlan Volume(const std::string& pv, std::vector<WorkloadRef> workloads) {
  VolumePlan v;
  v.pv_name = pv;
  v.workloads = std::move(workloads);
  return v;
}

// A StatefulSet's six claims are one group; idle PVs are alone; a Deployment with two claims is
// its own group.
TEST(GroupByWorkloadTest, AWorkloadsClaimsMoveTogetherAndIdlePvsAlone) {
  const WorkloadRef web = Scalable("StatefulSet", "web");
  const WorkloadRef api = Scalable("Deployment", "api");
  std::vector<VolumePlan> volumes = {
      Volume("data-web-0", {web}), Volume("idle-1", {}),        Volume("logs-web-0", {web}),
      Volume("api-a", {api}),      Volume("data-web-1", {web}), Volume("api-b", {api}),
      Volume("idle-2", {}),        Volume("logs-web-1", {web}),
  };
  std::vector<const VolumePlan*> in;
  for (const auto& v : volumes) in.push_back(&v);
  const auto units = GroupByWorkload(in);
  ASSERT_EQ(units.size(), 4u);
  EXPECT_EQ(units[0].pvs,
            (std::vector<std::string>{"data-web-0", "logs-web-0", "data-web-1", "logs-web-1"}));
  ASSERT_EQ(units[0].workloads.size(), 1u);
  EXPECT_EQ(WorkloadGroupId(units[0].workloads), "StatefulSet ns/web");
  EXPECT_EQ(units[1].pvs, std::vector<std::string>{"idle-1"});
  EXPECT_TRUE(units[1].workloads.empty());
  EXPECT_EQ(units[2].pvs, (std::vector<std::string>{"api-a", "api-b"}));
  EXPECT_EQ(units[3].pvs, std::vector<std::string>{"idle-2"});
}

// Two workloads sharing one claim join their groups: scaling one down would not free the claim.
TEST(GroupByWorkloadTest, WorkloadsSharingAClaimFormOneGroup) {
  const WorkloadRef a = Scalable("Deployment", "a");
  const WorkloadRef b = Scalable("Deployment", "b");
  std::vector<VolumePlan> volumes = {Volume("pv-a", {a}), Volume("pv-b", {b}),
                                     Volume("shared", {b, a})};
  std::vector<const VolumePlan*> in;
  for (const auto& v : volumes) in.push_back(&v);
  const auto units = GroupByWorkload(in);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].pvs, (std::vector<std::string>{"pv-a", "pv-b", "shared"}));
  EXPECT_EQ(WorkloadGroupId(units[0].workloads), "Deployment ns/a, Deployment ns/b");
}

// Owners that cannot be scaled (DaemonSet) group nothing: such a PV is refused on its own.
TEST(GroupByWorkloadTest, UnscalableOwnersDoNotGroup) {
  const WorkloadRef ds{"DaemonSet", "ns", "agent", "", "", ""};
  std::vector<VolumePlan> volumes = {Volume("pv-1", {ds}), Volume("pv-2", {ds})};
  std::vector<const VolumePlan*> in;
  for (const auto& v : volumes) in.push_back(&v);
  const auto units = GroupByWorkload(in);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_TRUE(units[0].workloads.empty());
}

}  // namespace
}  // namespace flexcsi::migrate
