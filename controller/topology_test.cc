#include "controller/topology.h"

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

constexpr const char* kDriver = "loopback.csi.flexcsi.io";
constexpr const char* kKey = "topology.loopback.csi.flexcsi.io/node";

nlohmann::json Node(const std::string& name, bool labelled) {
  nlohmann::json node = {
      {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/os", "linux"}}}}}};
  if (labelled) node["metadata"]["labels"][kKey] = name;
  return node;
}

nlohmann::json CsiNode(const std::string& name, const std::string& driver) {
  return {
      {"metadata", {{"name", name}}},
      {"spec", {{"drivers", {{{"name", driver}, {"nodeID", name}, {"topologyKeys", {kKey}}}}}}}};
}

TEST(AggregateTopology, RegisteredNodesContributeTheirSegments) {
  const nlohmann::json nodes = {Node("a", true), Node("b", true), Node("c", true)};
  const nlohmann::json csinodes = {CsiNode("b", kDriver), CsiNode("a", kDriver),
                                   CsiNode("c", "other.csi")};
  auto t = AggregateTopology(kDriver, nodes, csinodes, {});
  EXPECT_EQ(t.keys, std::vector<std::string>{kKey});
  ASSERT_EQ(t.segments.size(), 2u) << "c has no entry for this driver";
  EXPECT_EQ(t.segments[0].at(kKey), "a");
  EXPECT_EQ(t.segments[1].at(kKey), "b");
}

TEST(AggregateTopology, WithoutCsiNodesLabelledNodesCount) {
  // Clusters before CSINode (1.9-1.13), or a driver registered nowhere yet: labels only.
  const nlohmann::json nodes = {Node("a", true), Node("b", false)};
  auto t = AggregateTopology(kDriver, nodes, nlohmann::json::array(), {kKey});
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].at(kKey), "a");
}

TEST(AggregateTopology, KeysButNoLabelledNodeGiveNoSegment) {
  auto t = AggregateTopology(kDriver, nlohmann::json::array({Node("a", false)}),
                             nlohmann::json::array(), {kKey});
  EXPECT_EQ(t.keys.size(), 1u);
  EXPECT_TRUE(t.segments.empty());
  // A registered node without the labels does not count either.
  t = AggregateTopology(kDriver, nlohmann::json::array({Node("a", false)}),
                        nlohmann::json::array({CsiNode("a", kDriver)}), {});
  EXPECT_TRUE(t.segments.empty());
}

TEST(AggregateTopology, DriverWithoutKeysHasNone) {
  auto t = AggregateTopology(kDriver, nlohmann::json::array({Node("a", true)}),
                             nlohmann::json::array(), {});
  EXPECT_TRUE(t.keys.empty());
  EXPECT_TRUE(t.segments.empty());
}

TEST(PreferredOrder, RotatesTheSortedListAndSpreadsStatefulSetOrdinals) {
  std::vector<TopologySegment> segments;
  for (const char* n : {"c", "a", "b", "a"}) segments.push_back({{kKey, n}});
  auto p = PreferredOrder(segments, "data");
  ASSERT_EQ(p.size(), 3u);
  // A rotation of a, b, c.
  const std::string first = p[0].at(kKey);
  const std::string order = first + p[1].at(kKey) + p[2].at(kKey);
  EXPECT_TRUE(order == "abc" || order == "bca" || order == "cab") << order;
  EXPECT_EQ(PreferredOrder(segments, "data"), p) << "stable for one name";
  // Replicas 0, 1, 2 of one StatefulSet start on three different segments.
  std::set<std::string> starts;
  for (const char* name : {"www-web-0", "www-web-1", "www-web-2"}) {
    starts.insert(PreferredOrder(segments, name)[0].at(kKey));
  }
  EXPECT_EQ(starts.size(), 3u);
  // Claims of one replica (other claim template) start together.
  EXPECT_EQ(PreferredOrder(segments, "logs-web-1")[0], PreferredOrder(segments, "www-web-1")[0]);
}

TEST(NodesMatchingTopology, SegmentsMatchOnAllKeys) {
  google::protobuf::RepeatedPtrField<csi::v1::Topology> accessible;
  (*accessible.Add()->mutable_segments())[kKey] = "b";
  const nlohmann::json nodes = {Node("a", true), Node("b", true)};
  EXPECT_EQ(NodesMatchingTopology(accessible, nodes), std::vector<std::string>{"b"});
  (*accessible.Mutable(0)->mutable_segments())["zone"] = "z1";
  EXPECT_TRUE(NodesMatchingTopology(accessible, nodes).empty());
  EXPECT_EQ(NodesMatchingTopology({}, nodes).size(), 2u);
}

}  // namespace
}  // namespace flexcsi::controller
