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

// The required node selector terms, or nullptr when the PV has none. Validates the types on the
// way down so that callers can index without checks.
const Json* RequiredTerms(const Json* node_affinity) {
  if (node_affinity == nullptr) return nullptr;
  if (!node_affinity->is_object()) {
    throw FieldTypeError("invalid field spec.nodeAffinity: expected object, got " +
                         std::string(JsonTypeName(*node_affinity)));
  }
  const Json* required = ObjectField(*node_affinity, "required", "spec.nodeAffinity");
  if (required == nullptr) return nullptr;
  const Json* terms = ArrayField(*required, "nodeSelectorTerms", "spec.nodeAffinity.required");
  if (terms == nullptr) return nullptr;
  for (const Json& term : *terms) {
    if (term.is_null()) continue;
    if (!term.is_object()) {
      throw FieldTypeError(std::string("invalid field ") + kTermsPath +
                           "[]: expected object, got " + JsonTypeName(term));
    }
    const Json* exprs = ArrayField(term, "matchExpressions", std::string(kTermsPath) + "[]");
    if (exprs == nullptr) continue;
    for (const Json& req : *exprs) {
      if (!req.is_object()) {
        throw FieldTypeError(std::string("invalid field ") + kTermsPath +
                             "[].matchExpressions[]: expected object, got " + JsonTypeName(req));
      }
      StringField(req, "key", std::string(kTermsPath) + "[].matchExpressions[]");
      StringListField(req, "values", std::string(kTermsPath) + "[].matchExpressions[]");
    }
  }
  return terms;
}

const Json* PVNodeAffinity(const Json& pv) {
  const Json* spec = FindField(pv, "spec");
  return spec == nullptr ? nullptr : FindField(*spec, "nodeAffinity");
}

Json* MutableRequiredTerms(Json& pv) {
  if (RequiredTerms(PVNodeAffinity(pv)) == nullptr) return nullptr;
  return &pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"];
}

const std::string& RequirementKey(const Json& req) {
  static const std::string kEmpty;
  auto it = req.find("key");
  if (it == req.end() || !it->is_string()) return kEmpty;
  return it->get_ref<const std::string&>();
}

void AppendRequirementValues(const Json& req, std::vector<std::string>* out) {
  auto it = req.find("values");
  if (it == req.end() || !it->is_array()) return;
  for (const Json& v : *it) out->push_back(v.is_string() ? v.get<std::string>() : std::string());
}

bool HasLabel(const Json& pv, const char* key, std::string* value) {
  const Json* metadata = ObjectField(pv, "metadata", "");
  if (metadata == nullptr) return false;
  return LookupStringInMap(*metadata, "labels", key, "metadata", value);
}

void SetLabelIfMissing(Json& pv, const char* key, const std::string& value) {
  std::string existing;
  if (HasLabel(pv, key, &existing)) return;
  Json& metadata = EnsureObjectField(pv, "metadata", "");
  Json& labels = EnsureObjectField(metadata, "labels", "metadata");
  labels[key] = value;
}

Json Requirement(const std::string& key, const std::vector<std::string>& values) {
  return Json{{"key", key}, {"operator", "In"}, {"values", values}};
}

StatusOr<std::string> SingleRegion(const std::set<std::string>& regions) {
  if (regions.size() != 1) {
    return InvalidArgument("multiple or no regions gotten from zones, got: " +
                           GoFormatStringSet(regions));
  }
  return *regions.begin();
}

}  // namespace

LabelFamily DetermineLabelFamily(const Json& pv) {
  const Json* affinity = PVNodeAffinity(pv);
  if (TopologyKeyExist(kLabelZoneGA, affinity)) return {kLabelZoneGA, kLabelRegionGA};
  if (TopologyKeyExist(kLabelZoneBeta, affinity)) return {kLabelZoneBeta, kLabelRegionBeta};
  std::string unused;
  if (HasLabel(pv, kLabelZoneGA, &unused)) return {kLabelZoneGA, kLabelRegionGA};
  if (HasLabel(pv, kLabelZoneBeta, &unused)) return {kLabelZoneBeta, kLabelRegionBeta};
  return {kLabelZoneGA, kLabelRegionGA};
}

bool TopologyKeyExist(const std::string& key, const Json* node_affinity) {
  const Json* terms = RequiredTerms(node_affinity);
  if (terms == nullptr) return false;
  for (const Json& term : *terms) {
    const Json* exprs = FindField(term, "matchExpressions");
    if (exprs == nullptr) continue;
    for (const Json& req : *exprs) {
      if (RequirementKey(req) == key) return true;
    }
  }
  return false;
}

std::vector<std::string> TopologyValues(const Json& pv, const std::string& key) {
  const Json* terms = RequiredTerms(PVNodeAffinity(pv));
  if (terms == nullptr) return {};
  std::vector<std::string> values;
  for (const Json& term : *terms) {
    const Json* exprs = FindField(term, "matchExpressions");
    if (exprs == nullptr) continue;
    for (const Json& req : *exprs) {
      if (RequirementKey(req) == key) AppendRequirementValues(req, &values);
    }
  }
  std::set<std::string> unique(values.begin(), values.end());
  return std::vector<std::string>(unique.begin(), unique.end());
}

void ReplaceTopologyKey(Json& pv, const std::string& old_key, const std::string& new_key) {
  Json* terms = MutableRequiredTerms(pv);
  if (terms == nullptr) return;
  for (Json& term : *terms) {
    Json* exprs = FindMutableField(term, "matchExpressions");
    if (exprs == nullptr) continue;
    for (Json& req : *exprs) {
      if (RequirementKey(req) == old_key) req["key"] = new_key;
    }
  }
}

void AddTopologyToEveryTerm(Json& pv, const std::string& key,
                            const std::vector<std::string>& values) {
  std::set<std::string> filtered;
  for (const std::string& v : values) {
    std::string trimmed = GoTrimSpace(v);
    if (!trimmed.empty()) filtered.insert(std::move(trimmed));
  }
  if (filtered.empty()) return;
  RequiredTerms(PVNodeAffinity(pv));  // validates types before we write into them
  Json& spec = EnsureObjectField(pv, "spec", "");
  Json& affinity = EnsureObjectField(spec, "nodeAffinity", "spec");
  Json& required = EnsureObjectField(affinity, "required", "spec.nodeAffinity");
  Json& terms = required["nodeSelectorTerms"];
  if (!terms.is_array() || terms.empty()) terms = Json::array({Json::object()});
  Json requirement = Requirement(key, std::vector<std::string>(filtered.begin(), filtered.end()));
  for (Json& term : terms) {
    if (term.is_null()) term = Json::object();
    Json& exprs = term["matchExpressions"];
    if (exprs.is_null()) exprs = Json::array();
    exprs.push_back(requirement);
  }
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

void TranslateTopologyInTreeToCsi(Json& pv, const std::string& csi_zone_key) {
  LabelFamily family = DetermineLabelFamily(pv);
  if (!TopologyValues(pv, family.zone_key).empty()) {
    ReplaceTopologyKey(pv, family.zone_key, csi_zone_key);
  } else {
    std::string label;
    if (HasLabel(pv, family.zone_key, &label)) {
      AddTopologyToEveryTerm(pv, csi_zone_key, GoSplit(label, kMultiZoneDelimiter));
    }
  }
  // Nodes of newer clusters carry only GA labels; a beta region requirement would never match.
  if (std::string(family.region_key) == kLabelRegionBeta &&
      !TopologyValues(pv, kLabelRegionBeta).empty()) {
    ReplaceTopologyKey(pv, kLabelRegionBeta, kLabelRegionGA);
  }
}

namespace {

// Adds a region requirement to every term that has none, derived from the term's zones.
Status AddRegionToTerms(Json& pv, RegionParser region_parser) {
  Json* terms = MutableRequiredTerms(pv);
  if (terms == nullptr || terms->empty()) return Status::Ok();
  LabelFamily family = DetermineLabelFamily(pv);
  for (Json& term : *terms) {
    bool region_exists = false;
    std::vector<std::string> zones;
    if (const Json* exprs = FindField(term, "matchExpressions")) {
      for (const Json& req : *exprs) {
        const std::string& key = RequirementKey(req);
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

void TranslateVsphereTopologyInTreeToCsi(Json& pv, const std::string& csi_zone_key,
                                         const std::string& csi_region_key) {
  LabelFamily family = DetermineLabelFamily(pv);
  const std::pair<const char*, const std::string*> keys[] = {{family.zone_key, &csi_zone_key},
                                                             {family.region_key, &csi_region_key}};
  for (const auto& [k8s_key, csi_key] : keys) {
    if (!TopologyValues(pv, k8s_key).empty()) {
      ReplaceTopologyKey(pv, k8s_key, *csi_key);
      continue;
    }
    // Unlike §3.2 the label is not split on "__": vSphere zones are opaque names.
    std::string label;
    if (HasLabel(pv, k8s_key, &label) && !label.empty()) {
      AddTopologyToEveryTerm(pv, *csi_key, {label});
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
