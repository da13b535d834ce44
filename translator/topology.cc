#include "translator/topology.h"

#include <set>

#include "translator/go_strings.h"

namespace flexcsi {
namespace translator {

const char kLabelZoneGA[] = "topology.kubernetes.io/zone";
const char kLabelRegionGA[] = "topology.kubernetes.io/region";
const char kLabelZoneBeta[] = "failure-domain.beta.kubernetes.io/zone";
const char kLabelRegionBeta[] = "failure-domain.beta.kubernetes.io/region";
const char kMultiZoneDelimiter[] = "__";

namespace {

const char kTermsPath[] = "spec.nodeAffinity.required.nodeSelectorTerms";
const char kTermPath[] = "spec.nodeAffinity.required.nodeSelectorTerms[]";
const char kRequirementPath[] = "spec.nodeAffinity.required.nodeSelectorTerms[].matchExpressions[]";

// The required node selector terms, or absent when the PV has none; not validated (a walk over
// malformed terms finds nothing where a type is wrong).
JsonView UncheckedTerms(JsonView node_affinity) {
  return FindField(FindField(node_affinity, "required"), "nodeSelectorTerms");
}

// The required node selector terms, or absent when the PV has none. Validates the types on the
// way down so that callers can index without checks.
JsonView RequiredTerms(JsonView node_affinity) {
  if (!node_affinity) return JsonView();
  if (!node_affinity.is_object()) {
    throw FieldTypeError("invalid field spec.nodeAffinity: expected object, got " +
                         std::string(JsonTypeName(node_affinity)));
  }
  JsonView required = ObjectField(node_affinity, "required", "spec.nodeAffinity");
  if (!required) return JsonView();
  JsonView terms = ArrayField(required, "nodeSelectorTerms", "spec.nodeAffinity.required");
  if (!terms) return JsonView();
  terms.ForEachElement([](JsonView term) {
    if (term.is_null()) return;
    if (!term.is_object()) {
      throw FieldTypeError(std::string("invalid field ") + kTermsPath +
                           "[]: expected object, got " + JsonTypeName(term));
    }
    JsonView exprs = ArrayField(term, "matchExpressions", kTermPath);
    exprs.ForEachElement([](JsonView req) {
      if (!req.is_object()) {
        throw FieldTypeError(std::string("invalid field ") + kTermsPath +
                             "[].matchExpressions[]: expected object, got " + JsonTypeName(req));
      }
      StringViewField(req, "key", kRequirementPath);
      CheckStringListField(req, "values", kRequirementPath);
    });
  });
  return terms;
}

JsonView PVNodeAffinity(JsonView pv) { return FindField(FindField(pv, "spec"), "nodeAffinity"); }

// The terms of a node affinity held as JSON, or nullptr when it has none.
Json* MutableRequiredTerms(Json& node_affinity) {
  if (!RequiredTerms(node_affinity)) return nullptr;
  return &node_affinity["required"]["nodeSelectorTerms"];
}

Json* MutablePVNodeAffinity(Json& pv) {
  Json* spec = FindMutableField(pv, "spec");
  return spec == nullptr ? nullptr : FindMutableField(*spec, "nodeAffinity");
}

std::string_view RequirementKey(JsonView req) {
  JsonView key = req.Find("key");
  return key.is_string() ? key.string_value() : std::string_view();
}

void AppendRequirementValues(JsonView req, std::vector<std::string>* out) {
  req.Find("values").ForEachElement([&](JsonView v) {
    out->push_back(v.is_string() ? std::string(v.string_value()) : std::string());
  });
}

// Calls fn(requirement) for every matchExpressions entry of every required term.
// REQUIRES: RequiredTerms(node_affinity) was called (validated it), as every function of this
// file does before it reads a node affinity.
template <typename Fn>
void ForEachRequirement(JsonView node_affinity, Fn&& fn) {
  UncheckedTerms(node_affinity).ForEachElement([&](JsonView term) {
    FindField(term, "matchExpressions").ForEachElement(fn);
  });
}

bool KeyExists(JsonView node_affinity, std::string_view key) {
  bool found = false;
  ForEachRequirement(node_affinity,
                     [&](JsonView req) { found = found || RequirementKey(req) == key; });
  return found;
}

// Every value of every required requirement with `key`, de-duplicated and sorted. REQUIRES:
// as ForEachRequirement.
std::vector<std::string> AffinityValues(JsonView node_affinity, std::string_view key) {
  std::vector<std::string> values;
  ForEachRequirement(node_affinity, [&](JsonView req) {
    if (RequirementKey(req) == key) AppendRequirementValues(req, &values);
  });
  std::set<std::string> unique(values.begin(), values.end());
  return std::vector<std::string>(unique.begin(), unique.end());
}

void ReplaceKeyInAffinity(Json& node_affinity, std::string_view old_key, std::string_view new_key) {
  Json* terms = MutableRequiredTerms(node_affinity);
  if (terms == nullptr) return;
  for (Json& term : *terms) {
    Json* exprs = FindMutableField(term, "matchExpressions");
    if (exprs == nullptr) continue;
    for (Json& req : *exprs) {
      if (RequirementKey(req) == old_key) req["key"] = new_key;
    }
  }
}

// Built member by member: nlohmann's initializer-list form costs several times as much.
Json Requirement(std::string_view key, std::vector<std::string> values) {
  Json list(Json::value_t::array);
  auto& elements = list.get_ref<Json::array_t&>();
  elements.reserve(values.size());
  for (std::string& v : values) elements.emplace_back(std::move(v));
  Json requirement(Json::value_t::object);
  auto& members = requirement.get_ref<Json::object_t&>();
  members.emplace("key", key);
  members.emplace("operator", "In");
  members.emplace("values", std::move(list));
  return requirement;
}

// A PV's spec.nodeAffinity as the in-tree -> CSI translation changes it: the changes are
// recorded as topology operations (SpecChanges), and questions are answered from the original
// node affinity and the operations so far.
class AffinityEdit {
 public:
  AffinityEdit(const SourcePV& pv, SpecChanges* changes)
      : original_(pv.SpecField("nodeAffinity")), changes_(changes) {}

  JsonView original() const { return original_; }

  // Whether a required requirement with `key` has a value, as the node affinity is now.
  bool HasValues(std::string_view key) const {
    const auto& ops = changes_->topology_ops();
    bool found = false;
    ForEachRequirement(original_, [&](JsonView req) {
      found = found || (KeyAfter(RequirementKey(req), 0) == key && !req.Find("values").empty());
    });
    for (size_t i = 0; i < ops.size() && !found; ++i) {
      // An added requirement always has values.
      if (ops[i].requirement) {
        found = KeyAfter((*ops[i].requirement)["key"].get_ref<const std::string&>(), i + 1) == key;
      }
    }
    return found;
  }
  void RenameKey(std::string_view from, std::string_view to) {
    changes_->RenameTopologyKey(from, to);
  }
  void AddRequirement(Json requirement) {
    changes_->AddTopologyRequirement(std::move(requirement));
  }

 private:
  // `key` after the renames from operation `first` on.
  std::string_view KeyAfter(std::string_view key, size_t first) const {
    const auto& ops = changes_->topology_ops();
    for (size_t i = first; i < ops.size(); ++i) {
      if (!ops[i].requirement && key == ops[i].from) key = ops[i].to;
    }
    return key;
  }

  JsonView original_;
  SpecChanges* changes_;
};

// Adds {key In <trimmed, de-duplicated, sorted non-empty values>} to every required term,
// creating a term if there is none. Does nothing when no value survives.
void AddTopologyToEveryTerm(AffinityEdit& affinity, std::string_view key,
                            const std::vector<std::string>& values) {
  std::set<std::string> filtered;
  for (const std::string& v : values) {
    std::string trimmed = GoTrimSpace(v);
    if (!trimmed.empty()) filtered.insert(std::move(trimmed));
  }
  if (filtered.empty()) return;
  RequiredTerms(affinity.original());  // the shape the operation will be applied to
  affinity.AddRequirement(
      Requirement(key, std::vector<std::string>(filtered.begin(), filtered.end())));
}

void SetLabelIfMissing(Json& pv, const char* key, const std::string& value) {
  if (SourcePV(pv).Label(key, nullptr)) return;
  Json& metadata = EnsureObjectField(pv, "metadata", "");
  Json& labels = EnsureObjectField(metadata, "labels", "metadata");
  labels[key] = value;
}

StatusOr<std::string> SingleRegion(const std::set<std::string>& regions) {
  if (regions.size() != 1) {
    return InvalidArgument("multiple or no regions gotten from zones, got: " +
                           GoFormatStringSet(regions));
  }
  return *regions.begin();
}

}  // namespace

LabelFamily DetermineLabelFamily(JsonView pv) { return DetermineLabelFamily(SourcePV(pv)); }

LabelFamily DetermineLabelFamily(const SourcePV& pv) {
  JsonView affinity = pv.SpecField("nodeAffinity");
  RequiredTerms(affinity);  // validates it for the callers too
  if (KeyExists(affinity, kLabelZoneGA)) return {kLabelZoneGA, kLabelRegionGA};
  if (KeyExists(affinity, kLabelZoneBeta)) return {kLabelZoneBeta, kLabelRegionBeta};
  if (pv.Label(kLabelZoneGA, nullptr)) return {kLabelZoneGA, kLabelRegionGA};
  if (pv.Label(kLabelZoneBeta, nullptr)) return {kLabelZoneBeta, kLabelRegionBeta};
  return {kLabelZoneGA, kLabelRegionGA};
}

bool TopologyKeyExist(const std::string& key, const Json* node_affinity) {
  return node_affinity != nullptr && TopologyKeyExist(key, JsonView(*node_affinity));
}

bool TopologyKeyExist(const std::string& key, JsonView node_affinity) {
  RequiredTerms(node_affinity);
  return KeyExists(node_affinity, key);
}

std::vector<std::string> TopologyValues(JsonView pv, const std::string& key) {
  RequiredTerms(PVNodeAffinity(pv));
  return AffinityValues(PVNodeAffinity(pv), key);
}

void ReplaceTopologyKey(Json& pv, const std::string& old_key, const std::string& new_key) {
  if (!RequiredTerms(PVNodeAffinity(pv))) return;  // also validates the types
  ReplaceKeyInAffinity(*MutablePVNodeAffinity(pv), old_key, new_key);
}

StatusOr<std::string> AwsRegionFromZones(const std::vector<std::string>& zones) {
  if (zones.empty()) return InvalidArgument("no zones specified");
  std::set<std::string> regions;
  // AWS zones come in four forms: us-west-2a, us-gov-east-1a, us-west-2-lax-1a (local zone) and
  // us-east-1-wl1-bos-wlz-1 (wavelength).
  for (const std::string& zone : zones) {
    std::vector<std::string> parts = GoSplit(zone, "-");
    if ((parts.size() == 3 || parts.size() == 4) && parts.back().size() == 2) {
      parts.back().resize(1);
      regions.insert(GoJoin(parts, "-"));
    } else if (parts.size() == 5 || parts.size() == 7) {
      regions.insert(GoJoin({parts[0], parts[1], parts[2]}, "-"));
    } else {
      return InvalidArgument("Unexpected zone format: " + zone + " is not a valid AWS zone");
    }
  }
  return SingleRegion(regions);
}

StatusOr<std::string> GceRegionFromZones(const std::vector<std::string>& zones) {
  if (zones.empty()) return InvalidArgument("no zones specified");
  std::set<std::string> regions;
  for (const std::string& zone : zones) {
    std::vector<std::string> parts = GoSplit(zone, "-");
    if (parts.size() != 3) {
      return InvalidArgument(
          "zone in unexpected format, expected: {locale}-{region}-{zone}, got: " + zone);
    }
    regions.insert(parts[0] + "-" + parts[1]);
  }
  return SingleRegion(regions);
}

void TranslateTopologyInTreeToCsi(const SourcePV& pv, std::string_view csi_zone_key,
                                  SpecChanges* changes) {
  LabelFamily family = DetermineLabelFamily(pv);
  AffinityEdit affinity(pv, changes);
  if (affinity.HasValues(family.zone_key)) {
    affinity.RenameKey(family.zone_key, csi_zone_key);
  } else {
    std::string label;
    if (pv.Label(family.zone_key, &label)) {
      AddTopologyToEveryTerm(affinity, csi_zone_key, GoSplit(label, kMultiZoneDelimiter));
    }
  }
  // Nodes of newer clusters carry only GA labels; a beta region requirement would never match.
  if (std::string(family.region_key) == kLabelRegionBeta && affinity.HasValues(kLabelRegionBeta)) {
    affinity.RenameKey(kLabelRegionBeta, kLabelRegionGA);
  }
}

void TranslateTopologyInTreeToCsi(Json& pv, const std::string& csi_zone_key) {
  SpecChanges changes;
  TranslateTopologyInTreeToCsi(SourcePV(pv), csi_zone_key, &changes);
  changes.ApplyTo(pv);
}

namespace {

// Adds a region requirement to every term that has none, derived from the term's zones.
Status AddRegionToTerms(Json& pv, RegionParser region_parser) {
  Json* affinity = MutablePVNodeAffinity(pv);
  Json* terms = affinity == nullptr ? nullptr : MutableRequiredTerms(*affinity);
  if (terms == nullptr || terms->empty()) return Status::Ok();
  LabelFamily family = DetermineLabelFamily(pv);
  for (Json& term : *terms) {
    bool region_exists = false;
    std::vector<std::string> zones;
    if (const Json* exprs = FindField(term, "matchExpressions")) {
      for (const Json& req : *exprs) {
        std::string_view key = RequirementKey(req);
        if (key == family.region_key) {
          region_exists = true;
          break;
        }
        if (key == family.zone_key) AppendRequirementValues(req, &zones);
      }
    }
    if (region_exists) continue;
    StatusOr<std::string> region = region_parser(zones);
    if (!region.ok()) return region.status();
    if (term.is_null()) term = Json::object();
    Json& exprs = term["matchExpressions"];
    if (exprs.is_null()) exprs = Json::array();
    exprs.push_back(Requirement(family.region_key, {*region}));
  }
  std::vector<std::string> regions = TopologyValues(pv, family.region_key);
  if (regions.size() == 1) SetLabelIfMissing(pv, family.region_key, regions[0]);
  return Status::Ok();
}

}  // namespace

Status TranslateTopologyCsiToInTree(Json& pv, const std::string& csi_zone_key,
                                    RegionParser region_parser) {
  LabelFamily family = DetermineLabelFamily(pv);
  ReplaceTopologyKey(pv, csi_zone_key, family.zone_key);
  if (region_parser != nullptr) {
    Status s = AddRegionToTerms(pv, region_parser);
    if (!s.ok()) {
      return Status(s.code(), "Failed to handle region topology. error: " + s.message());
    }
  }
  std::vector<std::string> zones = TopologyValues(pv, family.zone_key);
  if (!zones.empty()) SetLabelIfMissing(pv, family.zone_key, GoJoin(zones, kMultiZoneDelimiter));
  return Status::Ok();
}

void TranslateVsphereTopologyInTreeToCsi(const SourcePV& pv, std::string_view csi_zone_key,
                                         std::string_view csi_region_key, SpecChanges* changes) {
  LabelFamily family = DetermineLabelFamily(pv);
  AffinityEdit affinity(pv, changes);
  const std::pair<const char*, const std::string_view*> keys[] = {
      {family.zone_key, &csi_zone_key}, {family.region_key, &csi_region_key}};
  for (const auto& [k8s_key, csi_key] : keys) {
    if (affinity.HasValues(k8s_key)) {
      affinity.RenameKey(k8s_key, *csi_key);
      continue;
    }
    // Unlike §3.2 the label is not split on "__": vSphere zones are opaque names.
    std::string label;
    if (pv.Label(k8s_key, &label) && !label.empty()) {
      AddTopologyToEveryTerm(affinity, *csi_key, {label});
    }
  }
}

void TranslateVsphereTopologyCsiToInTree(Json& pv, const std::string& csi_zone_key,
                                         const std::string& csi_region_key) {
  LabelFamily family = DetermineLabelFamily(pv);
  ReplaceTopologyKey(pv, csi_zone_key, family.zone_key);
  ReplaceTopologyKey(pv, csi_region_key, family.region_key);
  for (const char* key : {family.zone_key, family.region_key}) {
    std::vector<std::string> values = TopologyValues(pv, key);
    if (!values.empty()) SetLabelIfMissing(pv, key, values[0]);
  }
}

Json TranslateAllowedTopologies(const Json& terms, const std::string& csi_zone_key) {
  Json out = Json::array();
  for (const Json& term : terms) {
    if (!term.is_null() && !term.is_object()) {
      throw FieldTypeError(std::string("invalid field allowedTopologies[]: expected object, got ") +
                           JsonTypeName(term));
    }
    Json new_term = Json::object();
    const Json* exprs =
        term.is_null() ? nullptr : ArrayField(term, "matchLabelExpressions", "allowedTopologies[]");
    if (exprs != nullptr) {
      Json new_exprs = Json::array();
      for (const Json& exp : *exprs) {
        if (!exp.is_object()) {
          throw FieldTypeError(
              std::string(
                  "invalid field allowedTopologies[].matchLabelExpressions[]: expected object, "
                  "got ") +
              JsonTypeName(exp));
        }
        std::string key = StringField(exp, "key", "allowedTopologies[].matchLabelExpressions[]");
        if (key == kLabelZoneBeta || key == kLabelZoneGA) {
          Json values = Json::array();
          for (const std::string& v :
               StringListField(exp, "values", "allowedTopologies[].matchLabelExpressions[]")) {
            values.push_back(v);
          }
          new_exprs.push_back(Json{{"key", csi_zone_key}, {"values", values}});
        } else {
          new_exprs.push_back(exp);
        }
      }
      if (!new_exprs.empty()) new_term["matchLabelExpressions"] = std::move(new_exprs);
    }
    out.push_back(std::move(new_term));
  }
  return out;
}

Json GenerateTopologySelector(const std::string& key, const std::vector<std::string>& values) {
  return Json::array(
      {Json{{"matchLabelExpressions", Json::array({Json{{"key", key}, {"values", values}}})}}});
}

Status ApplyStorageClassTopology(Json& sc, const Json* generated, const std::string& csi_zone_key) {
  const Json* existing = ArrayField(sc, "allowedTopologies", "");
  bool has_existing = existing != nullptr && !existing->empty();
  if (generated != nullptr && has_existing) {
    return InvalidArgument(
        "cannot simultaneously set allowed topologies and zone/zones parameters");
  }
  if (generated != nullptr) {
    sc["allowedTopologies"] = *generated;
  } else if (has_existing) {
    sc["allowedTopologies"] = TranslateAllowedTopologies(*existing, csi_zone_key);
  }
  return Status::Ok();
}

}  // namespace translator
}  // namespace flexcsi
