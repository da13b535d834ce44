#include "migrate/leftovers.h"

#include <algorithm>
#include <map>
#include <set>

#include "migrate/report.h"

namespace flexcsi::migrate {

using nlohmann::json;

namespace {

std::string VolumeTodo(const VolumePlan& v) {
  switch (v.verdict) {
    case Verdict::kCanMove:
      return "flexcsi migrate apply --pv " + v.pv_name;
    case Verdict::kInUse: {
      const std::string refusal = InUseRefusal(v.pods, true);
      return refusal.empty() ? "flexcsi migrate apply --pv " + v.pv_name + " --scale-down"
                             : refusal;
    }
    default:
      return "cannot move yet (" + std::string(VerdictName(v.verdict)) + "): " + v.reason;
  }
}

std::string ClassTodo(const StorageClassPlan& c) {
  if (!c.refusal.empty()) return "cannot move: " + c.refusal;
  std::string todo = "flexcsi migrate apply --storage-class " + c.name + " (twin: provisioner " +
                     c.csi_driver + ")";
  if (c.kind == "flexvolume") {
    todo += "; hand provisioning over: stop flexcsi-controller, start " + c.csi_driver +
            "'s external-provisioner";
  }
  return todo;
}

// Every container and init container of a pod spec whose command or args mention
// install-driver (`flexcsi install-driver ...`, as deploy/kubernetes/base/node runs it).
std::vector<std::string> InstallDriverContainers(const json& pod_spec) {
  std::vector<std::string> out;
  if (!pod_spec.is_object()) return out;
  for (const char* list : {"initContainers", "containers"}) {
    if (!pod_spec.contains(list) || !pod_spec[list].is_array()) continue;
    for (const auto& c : pod_spec[list]) {
      bool installs = false;
      for (const char* field : {"command", "args"}) {
        if (!c.contains(field) || !c[field].is_array()) continue;
        for (const auto& word : c[field]) {
          if (word.is_string() && word.get<std::string>() == "install-driver") installs = true;
        }
      }
      if (installs) out.push_back(c.value("name", ""));
    }
  }
  return out;
}

// Unique volume names kubelet and the attach/detach controller report: "<plugin>/<volume>".
// Every in-tree plugin is named kubernetes.io/<x> (CSI: kubernetes.io/csi/<driver>^<handle>);
// a FlexVolume plugin is named by its bare driver, "vendor/name" (seen on 1.24:
// "flexcsi/default/pvc-..."), so anything outside kubernetes.io/ is FlexVolume.
bool FlexOrInTreeVolumeName(const std::string& name,
                            const std::vector<std::pair<std::string, std::string>>& plugins) {
  if (name.empty()) return false;
  if (name.rfind("kubernetes.io/", 0) != 0) return true;
  for (const auto& [in_tree, csi] : plugins) {
    if (name.rfind(in_tree + "/", 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<Leftover> FindLeftovers(const ClusterObjects& objects, const Plan& plan,
                                    const translator::Translator& translator) {
  std::vector<Leftover> out;
  std::set<std::string> pvs;
  for (const auto& v : plan.volumes) {
    pvs.insert(v.pv_name);
    std::string what = v.source + (v.plugin.empty() ? "" : " (" + v.plugin + ")");
    if (!v.claim_name.empty()) what += ", claimed by " + v.ClaimKey();
    out.push_back({"PersistentVolume", "", v.pv_name, what, VolumeTodo(v)});
  }
  for (const auto& c : plan.storage_classes) {
    out.push_back({"StorageClass", "", c.name,
                   "provisioner " + c.provisioner +
                       (c.kind == "flexvolume" ? " (FlexVolume PVs from flexcsi-controller)"
                                               : " (in-tree)") +
                       (c.is_default ? ", the default class" : ""),
                   ClassTodo(c)});
  }
  for (const auto& w : plan.inline_volumes) {
    out.push_back({w.kind, w.namespace_, w.name, "inline " + w.source + " volume " + w.volume,
                   w.csi_driver.empty()
                       ? "edit the pod template; no CSI translation: " + w.note
                       : "edit the pod template: a claim of a " + w.csi_driver +
                             " StorageClass, or an inline csi volume of " + w.csi_driver});
  }
  for (const auto& va : objects.volumeattachments) {
    const std::string pv = Str(va, "/spec/source/persistentVolumeName"_json_pointer);
    const std::string node = Str(va, "/spec/nodeName"_json_pointer);
    if (!pv.empty() && pvs.count(pv) != 0) {
      out.push_back({"VolumeAttachment", "", NameOf(va),
                     "attaches PV " + pv + " to node " + node,
                     "goes when PV " + pv + " moves (its pods stop first)"});
    } else if (va.contains("spec") && va["spec"].contains("source") &&
               va["spec"]["source"].contains("inlineVolumeSpec")) {
      out.push_back({"VolumeAttachment", "", NameOf(va),
                     "an inline in-tree volume attached to node " + node + " through CSI migration",
                     "goes when the pod with the inline volume is gone (edit its template)"});
    }
  }
  const auto plugins = translator.BuiltInPluginNames();
  for (const auto& node : objects.nodes) {
    std::set<std::string> volumes;
    const json status = node.value("status", json::object());
    for (const auto& v : status.value("volumesInUse", json::array())) {
      if (v.is_string() && FlexOrInTreeVolumeName(v.get<std::string>(), plugins)) {
        volumes.insert(v.get<std::string>());
      }
    }
    for (const auto& v : status.value("volumesAttached", json::array())) {
      const std::string name = v.is_object() ? v.value("name", "") : "";
      if (FlexOrInTreeVolumeName(name, plugins)) volumes.insert(name);
    }
    if (volumes.empty()) continue;
    std::string list;
    for (const auto& v : volumes) list += (list.empty() ? "" : ", ") + v;
    out.push_back({"Node", "", NameOf(node), "kubelet uses FlexVolume/in-tree volumes: " + list,
                   "move their PVs and inline volumes (above); the node lets go once their pods "
                   "restart"});
  }
  std::map<std::string, std::set<std::string>> nodes_of_daemonset;  // "ns/name" -> nodes
  for (const auto& pod : objects.pods) {
    for (const auto& ref : pod.value("metadata", json::object()).value("ownerReferences",
                                                                        json::array())) {
      if (ref.value("kind", "") == "DaemonSet" && ref.value("controller", false)) {
        const std::string node = Str(pod, "/spec/nodeName"_json_pointer);
        if (!node.empty()) {
          nodes_of_daemonset[NamespaceOf(pod) + "/" + ref.value("name", "")].insert(node);
        }
      }
    }
  }
  for (const auto& ds : objects.daemonsets) {
    const auto containers =
        InstallDriverContainers(ds.is_object() && ds.contains("spec") && ds["spec"].contains("template")
                                    ? ds["spec"]["template"].value("spec", json::object())
                                    : json::object());
    if (containers.empty()) continue;
    std::string nodes;
    for (const auto& n : nodes_of_daemonset[NamespaceOf(ds) + "/" + NameOf(ds)]) {
      nodes += (nodes.empty() ? "" : ",") + n;
    }
    out.push_back({"DaemonSet", NamespaceOf(ds), NameOf(ds),
                   "container " + containers.front() +
                       " installs the FlexVolume executable on its nodes (" +
                       (nodes.empty() ? "none now" : nodes) + ")",
                   "when nothing above is left: flexcsi uninstall-driver on each of its nodes, "
                   "and drop the step (or the DaemonSet)"});
  }
  return out;
}

json LeftoversToJson(const std::vector<Leftover>& leftovers) {
  json items = json::array();
  std::map<std::string, size_t> by_kind;
  for (const auto& l : leftovers) {
    json item = {{"kind", l.kind}, {"name", l.name}, {"what", l.what}, {"todo", l.todo}};
    if (!l.namespace_.empty()) item["namespace"] = l.namespace_;
    items.push_back(std::move(item));
    ++by_kind[l.kind];
  }
  return {{"apiVersion", "flexcsi.io/v1alpha1"},
          {"kind", "MigrationLeftovers"},
          {"items", items},
          {"summary", {{"leftovers", leftovers.size()}, {"byKind", by_kind}}}};
}

void PrintLeftoversTable(const std::vector<Leftover>& leftovers, std::ostream& out) {
  if (leftovers.empty()) {
    out << "Nothing ties the cluster to FlexVolume or an in-tree volume plugin any more.\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& l : leftovers) {
    rows.push_back({l.kind, l.namespace_.empty() ? l.name : l.namespace_ + "/" + l.name, l.what,
                    l.todo});
  }
  PrintTable({"KIND", "NAME", "TIES", "TO DO"}, rows, out);
  out << "\n" << leftovers.size() << " leftover" << (leftovers.size() == 1 ? "" : "s")
      << ": not yet time for flexcsi uninstall-driver.\n";
}

}  // namespace flexcsi::migrate
