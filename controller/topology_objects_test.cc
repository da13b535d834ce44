#include "controller/topology_objects.h"

#include <gtest/gtest.h>

#include "controller/topology.h"

namespace flexcsi::controller {
namespace {

using json = nlohmann::json;

json FullNode(const std::string& name, const std::string& zone) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"uid", "u-" + name},
            {"resourceVersion", "42"},
            {"labels", {{"topology.example.com/zone", zone}, {"kubernetes.io/hostname", name}}},
            {"annotations", {{"csi.volume.kubernetes.io/nodeid", "{\"d\":\"" + name + "\"}"}}}}},
          {"status",
           {{"capacity", {{"cpu", "8"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})},
            {"images", json::array({{{"names", {"busybox"}}, {"sizeBytes", 1}}})}}}};
}

json FullCsiNode(const std::string& name) {
  return {{"apiVersion", "storage.k8s.io/v1"},
          {"kind", "CSINode"},
          {"metadata",
           {{"name", name},
            {"resourceVersion", "7"},
            {"ownerReferences", json::array({{{"kind", "Node"}, {"name", name}}})}}},
          {"spec",
           {{"drivers", json::array({{{"name", "d"},
                                      {"nodeID", name},
                                      {"topologyKeys", {"topology.example.com/zone"}}}})}}}};
}

TEST(TopologyObjectsTest, NodeViewKeepsNameLabelsAndVersionOnly) {
  json view = NodeTopologyView(FullNode("n1", "a"));
  EXPECT_EQ(view, json({{"metadata",
                         {{"name", "n1"},
                          {"resourceVersion", "42"},
                          {"labels",
                           {{"topology.example.com/zone", "a"},
                            {"kubernetes.io/hostname", "n1"}}}}}}));
}

TEST(TopologyObjectsTest, CsiNodeViewKeepsDriverEntries) {
  json view = CsiNodeTopologyView(FullCsiNode("n1"));
  EXPECT_EQ(view["metadata"], json({{"name", "n1"}, {"resourceVersion", "7"}}));
  EXPECT_EQ(view["spec"]["drivers"], FullCsiNode("n1")["spec"]["drivers"]);
}

TEST(TopologyObjectsTest, ObjectsWithoutTheFieldsStayReadable) {
  EXPECT_EQ(NodeTopologyView(json::object()), json({{"metadata", json::object()}}));
  EXPECT_EQ(NodeTopologyView(json("garbage")), json({{"metadata", json::object()}}));
  EXPECT_EQ(CsiNodeTopologyView(json({{"metadata", {{"name", "x"}}}})),
            json({{"metadata", {{"name", "x"}}}, {"spec", json::object()}}));
}

TEST(TopologyObjectsTest, TopologyFromViewsIsTopologyFromWholeObjects) {
  json nodes = json::array(), csinodes = json::array(), node_views = json::array(),
       csinode_views = json::array();
  for (int i = 0; i < 30; ++i) {
    const std::string name = "n" + std::to_string(i);
    nodes.push_back(FullNode(name, std::string(1, static_cast<char>('a' + i % 3))));
    node_views.push_back(NodeTopologyView(nodes.back()));
    if (i % 5 == 4) continue;  // some nodes without the driver
    csinodes.push_back(FullCsiNode(name));
    csinode_views.push_back(CsiNodeTopologyView(csinodes.back()));
  }
  RegisteredTopology whole = AggregateTopology("d", nodes, csinodes, {});
  RegisteredTopology viewed = AggregateTopology("d", node_views, csinode_views, {});
  EXPECT_EQ(viewed.keys, whole.keys);
  EXPECT_EQ(viewed.segments, whole.segments);
  EXPECT_EQ(viewed.segments.size(), 3u);

  google::protobuf::RepeatedPtrField<csi::v1::Topology> accessible;
  (*accessible.Add()->mutable_segments())["topology.example.com/zone"] = "b";
  EXPECT_EQ(NodesMatchingTopology(accessible, node_views),
            NodesMatchingTopology(accessible, nodes));
}

}  // namespace
}  // namespace flexcsi::controller
