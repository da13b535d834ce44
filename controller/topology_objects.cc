#include "controller/topology_objects.h"

#include <initializer_list>
#include <string>

namespace flexcsi::controller {
namespace {

// The named members of `from` (those present), moved into a new object.
nlohmann::json Members(nlohmann::json& from, std::initializer_list<const char*> names) {
  nlohmann::json out = nlohmann::json::object();
  if (!from.is_object()) return out;
  for (const char* name : names) {
    auto it = from.find(name);
    if (it != from.end()) out[name] = std::move(*it);
  }
  return out;
}

}  // namespace

nlohmann::json NodeTopologyView(nlohmann::json node) {
  nlohmann::json metadata =
      node.is_object() ? Members(node["metadata"], {"name", "labels", "resourceVersion"})
                       : nlohmann::json::object();
  return {{"metadata", std::move(metadata)}};
}

nlohmann::json CsiNodeTopologyView(nlohmann::json csinode) {
  if (!csinode.is_object()) return {{"metadata", nlohmann::json::object()}};
  nlohmann::json view = {{"metadata", Members(csinode["metadata"], {"name", "resourceVersion"})}};
  view["spec"] = Members(csinode["spec"], {"drivers"});
  return view;
}

}  // namespace flexcsi::controller
