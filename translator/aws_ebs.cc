// AWS EBS <-> ebs.csi.aws.com (translation.md §5).
#include "translator/aws_ebs.h"

#include <optional>

#include "translator/go_strings.h"
#include "translator/in_tree_plugin.h"
#include "translator/json_fields.h"
#include "translator/storage_class_params.h"
#include "translator/topology.h"

namespace flexcsi {
namespace translator {
namespace {

const char kDriver[] = "ebs.csi.aws.com";
const char kTopologyKey[] = "topology.ebs.csi.aws.com/zone";
const char kField[] = "awsElasticBlockStore";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Go's url.PathUnescape rules: every '%' must start a valid two-digit escape.
StatusOr<std::string> UnescapePath(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size() || HexValue(s[i + 1]) < 0 || HexValue(s[i + 2]) < 0) {
      std::string bad = s.substr(i, 3);
      return InvalidArgument("invalid URL escape " + GoQuote(bad));
    }
    out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
    i += 2;
  }
  return out;
}

// The characters Go's url package accepts unescaped in a host name.
bool ValidHostChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  if (static_cast<unsigned char>(c) >= 0x80) return true;
  switch (c) {
    case '-':
    case '_':
    case '.':
    case '~':
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
    case ':':
    case '[':
    case ']':
    case '<':
    case '>':
    case '"':
    case '%':
      return true;
    default:
      return false;
  }
}

// The path of an aws:// URL as Go's url.Parse computes it, or its parse error.
StatusOr<std::string> ParseAwsURLPath(const std::string& raw) {
  auto parse_error = [&](const std::string& why) {
    return InvalidArgument("parse " + GoQuote(raw) + ": " + why);
  };
  for (unsigned char c : raw) {
    if (c < 0x20 || c == 0x7f) return parse_error("net/url: invalid control character in URL");
  }
  std::string rest = raw.substr(0, raw.find('#'));
  rest = rest.substr(0, rest.find('?'));
  rest = rest.substr(std::string("aws://").size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? std::string() : rest.substr(slash);
  std::string host =
      authority.substr(authority.rfind('@') == std::string::npos ? 0 : authority.rfind('@') + 1);
  if (!host.empty() && host[0] != '[') {
    size_t colon = host.rfind(':');
    if (colon != std::string::npos) {
      std::string port = host.substr(colon + 1);
      for (char c : port) {
        if (c < '0' || c > '9')
          return parse_error("invalid port " + GoQuote(":" + port) + " after host");
      }
    }
  }
  for (char c : host) {
    if (!ValidHostChar(c)) {
      return parse_error("invalid character " + GoQuote(std::string(1, c)) + " in host name");
    }
  }
  StatusOr<std::string> unescaped_host = UnescapePath(host);
  if (!unescaped_host.ok()) return parse_error(unescaped_host.status().message());
  StatusOr<std::string> unescaped = UnescapePath(path);
  if (!unescaped.ok()) return parse_error(unescaped.status().message());
  return unescaped;
}

std::string TrimSlashes(const std::string& s) {
  size_t b = s.find_first_not_of('/');
  if (b == std::string::npos) return std::string();
  size_t e = s.find_last_not_of('/');
  return s.substr(b, e - b + 1);
}

StatusOr<std::string> EbsHandle(const std::string& volume_id) {
  StatusOr<std::string> handle = KubernetesVolumeIDToEBSVolumeID(volume_id);
  if (!handle.ok()) {
    return InvalidArgument("failed to translate Kubernetes ID to EBS Volume ID " +
                           handle.status().message());
  }
  return handle;
}

class AwsEbsPlugin : public InTreePlugin {
 public:
  const char* InTreePluginName() const override { return "kubernetes.io/aws-ebs"; }
  const char* CsiDriverName() const override { return kDriver; }
  const char* SourceField() const override { return kField; }

  Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const override {
    Json csi;
    FLEXCSI_RETURN_IF_ERROR(CsiFromSource(pv.SpecObject(kField), "spec.awsElasticBlockStore", &csi));
    TranslateTopologyInTreeToCsi(pv, kTopologyKey, changes);
    ReplaceSourceWithCsi(kField, std::move(csi), changes);
    return Status::Ok();
  }

  StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                      const std::string& pod_namespace) const override {
    Json csi;
    FLEXCSI_RETURN_IF_ERROR(
        CsiFromSource(InlineSource(volume, kField), "volume." + std::string(kField), &csi));
    std::string name = std::string(kDriver) + "-" + csi["volumeHandle"].get<std::string>();
    // Always ReadWriteOnce, even for a read-only volume (upstream).
    return NewInlinePV(name, std::move(csi), "ReadWriteOnce");
  }

  Status TranslateCsiPVToInTree(Json& pv) const override {
    const Json& csi = CsiSource(pv);
    Json ebs = Json::object();
    ebs["volumeID"] = StringField(csi, "volumeHandle", "spec.csi");
    std::string fs_type = StringField(csi, "fsType", "spec.csi");
    if (!fs_type.empty()) ebs["fsType"] = fs_type;
    if (BoolField(csi, "readOnly", "spec.csi")) ebs["readOnly"] = true;
    std::string partition;
    if (LookupStringInMap(csi, "volumeAttributes", "partition", "spec.csi", &partition)) {
      StatusOr<int32_t> n = GoAtoiInt32(partition);
      if (!n.ok()) {
        return InvalidArgument("failed to convert partition " + partition +
                               " to integer: " + n.status().message());
      }
      if (*n != 0) ebs["partition"] = *n;
    }
    Status s = TranslateTopologyCsiToInTree(pv, kTopologyKey, AwsRegionFromZones);
    if (!s.ok()) {
      return InvalidArgument("failed to translate topology. PV:" + PVName(pv) +
                             ". Error:" + s.message());
    }
    SwapVolumeSource(pv, "csi", kField, std::move(ebs));
    return Status::Ok();
  }

  Status TranslateStorageClassToCsi(Json& sc) const override {
    std::optional<Json> generated;
    std::map<std::string, std::string> params;
    for (const auto& [key, value] : StringMapField(sc, "parameters", "")) {
      std::string lower = AsciiLower(key);
      if (lower == "fstype") {
        params[kCsiFsTypeParameter] = value;
      } else if (lower == "iopspergb") {
        params[key] = value;
        params["allowautoiopspergbincrease"] = "true";
      } else if (!TakeZoneParameter(lower, value, kTopologyKey, &generated)) {
        params[key] = value;
      }
    }
    FLEXCSI_RETURN_IF_ERROR(
        ApplyStorageClassTopology(sc, generated ? &*generated : nullptr, kTopologyKey));
    SetStorageClassParameters(sc, params);
    return Status::Ok();
  }

 private:
  static Status CsiFromSource(JsonView src, const std::string& path, Json* csi) {
    StatusOr<std::string> handle = EbsHandle(StringField(src, "volumeID", path));
    if (!handle.ok()) return handle.status();
    // Unlike GCE PD, partition 0 is written as "0".
    *csi = NewCsiSource(kDriver, std::move(*handle), StringField(src, "fsType", path),
                        BoolField(src, "readOnly", path),
                        {{"partition", std::to_string(Int32Field(src, "partition", path))}});
    return Status::Ok();
  }
};

}  // namespace

StatusOr<std::string> KubernetesVolumeIDToEBSVolumeID(const std::string& kubernetes_id) {
  if (!StartsWith(kubernetes_id, "aws://")) return kubernetes_id;
  StatusOr<std::string> path = ParseAwsURLPath(kubernetes_id);
  if (!path.ok()) {
    return InvalidArgument("Invalid disk name (" + kubernetes_id + "): " + path.status().message());
  }
  std::string id = TrimSlashes(*path);
  // The two known formats are vol-12345678 and vol-12345678abcdef01 (regexp ^vol-[^/]*$).
  if (!StartsWith(id, "vol-") || id.find('/') != std::string::npos) {
    return InvalidArgument("Invalid format for AWS volume (" + kubernetes_id + ")");
  }
  return id;
}

std::unique_ptr<InTreePlugin> NewAwsEbsPlugin() { return std::make_unique<AwsEbsPlugin>(); }

}  // namespace translator
}  // namespace flexcsi
