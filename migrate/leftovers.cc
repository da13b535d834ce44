#include "migrate/leftovers.h"

#include <algorithm>
#include <map>
#include <set>

#include "migrate/report.h"
#include "migrate/storage_class_plan.h"
#include "translator/flexvolume_rules.h"

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

// The flexcsi-controller workload whose configuration names `provisioner`, or nullptr.
const ControllerWorkload* ServedBy(const LeftoverContext& context, const std::string& provisioner) {
  for (const auto& c : context.served.controllers) {
    for (const auto& p : c.provisioners) {
      if (p == provisioner) return &c;
    }
  }
  return nullptr;
}

std::string ClassTodo(const StorageClassPlan& c, const LeftoverContext& context) {
  if (!c.refusal.empty()) return "cannot move: " + c.refusal;
  std::string todo = "flexcsi migrate apply --storage-class " + c.name;
  if (c.kind == "flexvolume" && !context.rules_given) {
    // The twin was planned with the rule of the cluster's flexcsi-controller configuration;
    // apply reads its rules from --rules only.
    const ControllerWorkload* by = ServedBy(context, c.provisioner);
    todo += " --rules FILE (FILE: the FlexVolume rules" +
            (by == nullptr ? std::string()
                           : ", as in drivers[].rule of ConfigMap " + by->namespace_ + "/" +
                                 by->config_map + " key " + by->config_key) +
            ")";
  }
  todo += " (twin: provisioner " + c.csi_driver + ")";
  if (c.kind == "flexvolume") {
    todo += "; hand provisioning over: stop flexcsi-controller, start " + c.csi_driver +
            "'s external-provisioner";
  }
  return todo;
}

std::string ClassTies(const StorageClassPlan& c, const LeftoverContext& context) {
  std::string what = "provisioner " + c.provisioner;
  if (c.kind != "flexvolume") {
    what += " (in-tree)";
  } else if (const ControllerWorkload* by = ServedBy(context, c.provisioner)) {
    what += " (FlexVolume PVs from flexcsi-controller: " + by->kind + " " + by->namespace_ + "/" +
            by->name + " serves it)";
  } else {
    what += " (FlexVolume PVs from flexcsi-controller)";
  }
  return what + (c.is_default ? ", the default class" : "");
}

bool IsMoved(const json& sc) {
  return !Str(sc, json::json_pointer("/metadata/annotations/flexcsi.io~1migrated-from-provisioner"))
              .empty();
}

bool IsDefault(const json& sc) {
  for (const char* key :
       {"/metadata/annotations/storageclass.kubernetes.io~1is-default-class",
        "/metadata/annotations/storageclass.beta.kubernetes.io~1is-default-class"}) {
    if (Str(sc, json::json_pointer(key)) == "true") return true;
  }
  return false;
}

// Classes whose provisioner could be flexcsi-controller's, when neither --rules nor a
// flexcsi-controller configuration in the cluster says whether it is (leftovers.h).
std::vector<Leftover> UncheckedClasses(const ClusterObjects& objects,
                                       const std::vector<StorageClassPlan>& planned,
                                       const LeftoverContext& context) {
  std::vector<Leftover> out;
  if (context.rules_given || context.served.read_any) return out;
  std::set<std::string> listed;
  for (const auto& c : planned) listed.insert(c.name);
  for (const auto& sc : objects.storageclasses) {
    const std::string provisioner = sc.value("provisioner", "");
    if (listed.count(NameOf(sc)) || IsMoved(sc) || provisioner.empty() ||
        provisioner.rfind("kubernetes.io/", 0) == 0) {
      continue;
    }
    std::string unread;
    for (const auto& c : context.served.controllers) {
      if (!c.config_error.empty()) {
        unread = "; the configuration of flexcsi-controller " + c.kind + " " + c.namespace_ + "/" +
                 c.name + " could not be read: " + c.config_error;
        break;
      }
    }
    Leftover l{"StorageClass", "", NameOf(sc),
               "provisioner " + provisioner + (IsDefault(sc) ? ", the default class" : "") +
                   ": not checked: without --rules, and with no flexcsi-controller "
                   "configuration readable in the cluster, a class flexcsi-controller serves "
                   "(FlexVolume PVs) cannot be told from a CSI class" +
                   unread,
               "run plan --leftovers again with --rules FILE (the FlexVolume rules "
               "flexcsi-controller uses): that settles it"};
    l.checked = false;
    out.push_back(std::move(l));
  }
  return out;
}

std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
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

std::vector<StorageClassPlan> PlanLeftoverStorageClasses(const ClusterObjects& objects,
                                                         const translator::Translator& translator,
                                                         const LeftoverContext& context) {
  if (context.rules_given || context.served.rules.empty()) {
    return PlanStorageClasses(objects, translator, context.served.flex_driver_of);
  }
  // Validated one by one when read (served_provisioners.cc); together they parse too.
  auto rules = translator::ParseFlexVolumeRules(json(context.served.rules));
  if (!rules.ok()) return PlanStorageClasses(objects, translator, context.served.flex_driver_of);
  return PlanStorageClasses(objects, translator::Translator(std::move(*rules)),
                            context.served.flex_driver_of);
}

std::vector<Leftover> FindLeftovers(const ClusterObjects& objects, const Plan& plan,
                                    const translator::Translator& translator,
                                    const LeftoverContext& context) {
  std::vector<Leftover> out;
  std::set<std::string> pvs;
  std::map<std::string, const json*> pv_of;
  for (const auto& pv : objects.pvs) pv_of[NameOf(pv)] = &pv;
  std::set<std::string> moved_classes;
  for (const auto& sc : objects.storageclasses) {
    if (IsMoved(sc)) moved_classes.insert(NameOf(sc));
  }
  for (const auto& v : plan.volumes) {
    pvs.insert(v.pv_name);
    std::string what = v.source + (v.plugin.empty() ? "" : " (" + v.plugin + ")");
    if (!v.claim_name.empty()) what += ", claimed by " + v.ClaimKey();
    // A claim provisioned while flexcsi-controller still served a moved class's name (both
    // running, or between the hand-over steps) got a FlexVolume PV all the same.
    auto pv = pv_of.find(v.pv_name);
    const std::string class_name =
        pv == pv_of.end() ? "" : Str(*pv->second, "/spec/storageClassName"_json_pointer);
    if (v.source == "flexVolume" && moved_classes.count(class_name)) {
      what += ", provisioned by flexcsi-controller from StorageClass " + class_name +
              " after the class moved";
    }
    out.push_back({"PersistentVolume", "", v.pv_name, what, VolumeTodo(v)});
  }
  const auto classes = PlanLeftoverStorageClasses(objects, translator, context);
  for (const auto& c : classes) {
    out.push_back({"StorageClass", "", c.name, ClassTies(c, context), ClassTodo(c, context)});
  }
  for (auto& l : UncheckedClasses(objects, classes, context)) out.push_back(std::move(l));
  for (const auto& c : context.served.controllers) {
    if (c.replicas <= 0) continue;  // stopped: it provisions nothing
    out.push_back(
        {c.kind, c.namespace_, c.name,
         "runs flexcsi-controller (" +
             (c.provisioners.empty() ? "configuration not read: " + c.config_error
                                     : "provisioner " + JoinWords(c.provisioners)) +
             "), " + std::to_string(c.replicas) + " pod" + (c.replicas == 1 ? "" : "s"),
         "while it runs, claims it provisions get FlexVolume PVs, also from moved classes: once "
         "its classes are moved, stop it (scale to 0) and start the CSI driver's "
         "external-provisioner (hand provisioning over), then move the PVs it made meanwhile"});
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
  size_t unchecked = 0;
  for (const auto& l : leftovers) {
    json item = {{"kind", l.kind}, {"name", l.name}, {"what", l.what}, {"todo", l.todo}};
    if (!l.namespace_.empty()) item["namespace"] = l.namespace_;
    if (!l.checked) item["checked"] = false;
    items.push_back(std::move(item));
    ++by_kind[l.kind];
    if (!l.checked) ++unchecked;
  }
  return {{"apiVersion", "flexcsi.io/v1alpha1"},
          {"kind", "MigrationLeftovers"},
          {"items", items},
          {"summary",
           {{"leftovers", leftovers.size()}, {"notChecked", unchecked}, {"byKind", by_kind}}}};
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
  size_t unchecked = 0;
  for (const auto& l : leftovers) unchecked += l.checked ? 0 : 1;
  out << "\n" << leftovers.size() << " leftover" << (leftovers.size() == 1 ? "" : "s");
  if (unchecked > 0) {
    out << ", of which " << unchecked << " StorageClass" << (unchecked == 1 ? "" : "es")
        << " not checked (--rules FILE settles " << (unchecked == 1 ? "it" : "them") << ")";
  }
  out << ": not yet time for flexcsi uninstall-driver.\n";
}

}  // namespace flexcsi::migrate
