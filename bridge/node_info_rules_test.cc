#include "bridge/node_info_rules.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

using nlohmann::json;

constexpr char kKey[] = "topology.loopback.csi.flexcsi.io/node";

DriverNodeInfo Loopback(const std::string& node_id = "node-1") {
  return {"loopback.csi.flexcsi.io", node_id, {{kKey, node_id}}, 64};
}

json Node(json labels = json::object(), json annotations = json::object()) {
  return {{"metadata",
           {{"name", "node-1"},
            {"uid", "u-1"},
            {"resourceVersion", "7"},
            {"labels", labels},
            {"annotations", annotations}}}};
}

TEST(NodeRegistrationPatch, AddsLabelAndMergesNodeIdMapKeepingOtherDrivers) {
  json node = Node({{"kubernetes.io/hostname", "node-1"}},
                   {{kNodeIdAnnotation, R"({"other.csi.io":"x-9"})"}});
  auto patch = NodeRegistrationPatch(node, nullptr, Loopback());
  ASSERT_TRUE(patch.ok()) << patch.status().ToString();
  ASSERT_TRUE(patch->has_value());
  const json& md = (**patch)["metadata"];
  EXPECT_EQ(md["resourceVersion"], "7");
  EXPECT_EQ(md["labels"], json({{kKey, "node-1"}}));
  EXPECT_EQ(json::parse(md["annotations"][kNodeIdAnnotation].get<std::string>()),
            json({{"other.csi.io", "x-9"}, {"loopback.csi.flexcsi.io", "node-1"}}));
}

TEST(NodeRegistrationPatch, NothingWhenTheNodeAlreadySaysItAll) {
  json node =
      Node({{kKey, "node-1"}}, {{kNodeIdAnnotation, R"({"loopback.csi.flexcsi.io":"node-1"})"}});
  auto patch = NodeRegistrationPatch(node, nullptr, Loopback());
  ASSERT_TRUE(patch.ok());
  EXPECT_FALSE(patch->has_value());
}

TEST(NodeRegistrationPatch, ANewNodeIdReplacesTheDriversEntryOnly) {
  json node = Node({}, {{kNodeIdAnnotation, R"({"loopback.csi.flexcsi.io":"old","b":"c"})"}});
  DriverNodeInfo info = Loopback("new");
  info.topology.clear();
  auto patch = NodeRegistrationPatch(node, nullptr, info);
  ASSERT_TRUE(patch.ok() && patch->has_value());
  EXPECT_FALSE((**patch)["metadata"].contains("labels"));
  EXPECT_EQ(json::parse((**patch)["metadata"]["annotations"][kNodeIdAnnotation].get<std::string>()),
            json({{"loopback.csi.flexcsi.io", "new"}, {"b", "c"}}));
}

TEST(NodeRegistrationPatch, ATopologyLabelWithAnotherValueIsACollisionNeverOverwritten) {
  auto patch = NodeRegistrationPatch(Node({{kKey, "somebody-else"}}), nullptr, Loopback());
  ASSERT_FALSE(patch.ok());
  EXPECT_EQ(patch.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(patch.status().message().find("somebody-else"), std::string::npos);
}

TEST(NodeRegistrationPatch, ADriverMovesItsOwnLabelButNotOneAnotherDriverListsToo) {
  json node =
      Node({{kKey, "old-id"}}, {{kNodeIdAnnotation, R"({"loopback.csi.flexcsi.io":"old-id"})"}});
  json own = {
      {"spec", {{"drivers", {{{"name", "loopback.csi.flexcsi.io"}, {"topologyKeys", {kKey}}}}}}}};
  auto patch = NodeRegistrationPatch(node, own, Loopback("new-id"));
  ASSERT_TRUE(patch.ok()) << patch.status().ToString();
  ASSERT_TRUE(patch->has_value());
  EXPECT_EQ((**patch)["metadata"]["labels"], json({{kKey, "new-id"}}));
  json shared = own;
  shared["spec"]["drivers"].push_back({{"name", "other"}, {"topologyKeys", {kKey}}});
  EXPECT_EQ(NodeRegistrationPatch(node, shared, Loopback("new-id")).status().code(),
            Code::kFailedPrecondition);
}

TEST(NodeRegistrationPatch, AnAnnotationThatIsNoJsonMapIsAnError) {
  auto patch = NodeRegistrationPatch(Node({}, {{kNodeIdAnnotation, "[1]"}}), nullptr, Loopback());
  EXPECT_EQ(patch.status().code(), Code::kFailedPrecondition);
}

TEST(CsiNode, NewObjectIsOwnedByTheNodeAndHoldsTheEntryAsKubeletWritesIt) {
  json csinode = NewCsiNode(Node(), Loopback());
  EXPECT_EQ(csinode["metadata"]["name"], "node-1");
  EXPECT_EQ(csinode["metadata"]["ownerReferences"][0]["uid"], "u-1");
  EXPECT_EQ(csinode["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_EQ(csinode["spec"]["drivers"], json::parse(R"([{"name":"loopback.csi.flexcsi.io",
      "nodeID":"node-1","topologyKeys":["topology.loopback.csi.flexcsi.io/node"],
      "allocatable":{"count":64}}])"));
}

TEST(CsiNode, NewObjectIsInTheVersionTheClusterServes) {
  EXPECT_EQ(NewCsiNode(Node(), Loopback())["apiVersion"], "storage.k8s.io/v1");
  EXPECT_EQ(NewCsiNode(Node(), Loopback(), "storage.k8s.io/v1beta1")["apiVersion"],
            "storage.k8s.io/v1beta1");
}

TEST(CsiNode, EntryWithoutTopologyOrLimitHasNeitherField) {
  json entry = CsiNodeDriverEntry({"d", "n", {}, 0});
  EXPECT_EQ(entry, json({{"name", "d"}, {"nodeID", "n"}}));
}

TEST(CsiNode, AddReplaceAndRemoveTouchOnlyTheDriversEntry) {
  json csinode = {{"metadata", {{"name", "node-1"}, {"resourceVersion", "3"}}},
                  {"spec", {{"drivers", {{{"name", "other"}, {"nodeID", "o"}}}}}}};
  auto added = CsiNodeWithDriver(csinode, Loopback());
  ASSERT_TRUE(added.has_value());
  ASSERT_EQ((*added)["spec"]["drivers"].size(), 2u);
  EXPECT_EQ((*added)["metadata"]["resourceVersion"], "3");
  EXPECT_FALSE(CsiNodeWithDriver(*added, Loopback()).has_value()) << "already there as is";
  auto replaced = CsiNodeWithDriver(*added, Loopback("node-2"));
  ASSERT_TRUE(replaced.has_value());
  ASSERT_EQ((*replaced)["spec"]["drivers"].size(), 2u);
  EXPECT_EQ((*replaced)["spec"]["drivers"][1]["nodeID"], "node-2");
  auto removed = CsiNodeWithoutDriver(*replaced, "loopback.csi.flexcsi.io");
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ((*removed)["spec"]["drivers"], csinode["spec"]["drivers"]);
  EXPECT_FALSE(CsiNodeWithoutDriver(*removed, "loopback.csi.flexcsi.io").has_value());
}

TEST(NodeUnregistrationPatch, RemovesOwnEntryAndOnlyLabelsNoOtherDriverLists) {
  json node = Node({{kKey, "node-1"}, {"shared/zone", "z"}},
                   {{kNodeIdAnnotation, R"({"loopback.csi.flexcsi.io":"node-1","other":"o"})"}});
  json csinode = {
      {"spec",
       {{"drivers",
         {{{"name", "loopback.csi.flexcsi.io"}, {"topologyKeys", {kKey, "shared/zone"}}},
          {{"name", "other"}, {"topologyKeys", {"shared/zone"}}}}}}}};
  auto patch = NodeUnregistrationPatch(node, csinode, "loopback.csi.flexcsi.io");
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["metadata"]["labels"], json({{kKey, nullptr}}));
  EXPECT_EQ(json::parse((*patch)["metadata"]["annotations"][kNodeIdAnnotation].get<std::string>()),
            json({{"other", "o"}}));
}

TEST(NodeUnregistrationPatch, TheLastDriverTakesTheAnnotationAwayAndNothingIsNothing) {
  json node = Node({}, {{kNodeIdAnnotation, R"({"loopback.csi.flexcsi.io":"node-1"})"}});
  auto patch = NodeUnregistrationPatch(node, nullptr, "loopback.csi.flexcsi.io");
  ASSERT_TRUE(patch.has_value());
  EXPECT_TRUE((*patch)["metadata"]["annotations"][kNodeIdAnnotation].is_null());
  EXPECT_FALSE(NodeUnregistrationPatch(Node(), nullptr, "loopback.csi.flexcsi.io").has_value());
}

TEST(ReadRegistration, SaysWhichNodeIdEachPlaceHolds) {
  json node =
      Node({{kKey, "node-1"}}, {{kNodeIdAnnotation, R"({"loopback.csi.flexcsi.io":"node-1"})"}});
  json csinode = {
      {"spec", {{"drivers", {{{"name", "loopback.csi.flexcsi.io"}, {"nodeID", "stale"}}}}}}};
  RegisteredDriver seen = ReadRegistration(node, csinode, Loopback());
  EXPECT_EQ(seen.annotation_node_id, "node-1");
  EXPECT_EQ(seen.csinode_node_id, "stale");
  EXPECT_TRUE(seen.labels_match);
  EXPECT_FALSE(seen.Matches(Loopback()));
  EXPECT_FALSE(ReadRegistration(Node(), nullptr, Loopback()).labels_match);
}

}  // namespace
}  // namespace flexcsi
