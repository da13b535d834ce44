// The interface every in-tree volume plugin translator implements (translation.md §1-§11), and
// the factories of the eight built-in ones. One implementation per file: aws_ebs.cc, gce_pd.cc,
// azure_disk.cc, azure_file.cc, cinder.cc, vsphere.cc, portworx.cc, rbd.cc.
//
// Plugins are stateless and thread-compatible. TranslatePVToCsi only reads its PV, through a
// view (json_view.h), and says what changes in the spec (spec_changes.h): a PV is translated
// without being copied. The other calls work on private copies: the Translator (translator.h)
// deep-copies its input before calling TranslateCsiPVToInTree / TranslateStorageClassToCsi and
// discards the copy when the call fails, so a plugin may modify its argument freely and need
// not undo anything on error. Plugins may throw FieldTypeError for malformed input; the
// Translator turns it into a Status.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "translator/json_fields.h"
#include "translator/source_pv.h"
#include "translator/spec_changes.h"

namespace flexcsi {
namespace translator {

class InTreePlugin {
 public:
  virtual ~InTreePlugin() = default;

  virtual const char* InTreePluginName() const = 0;  // "kubernetes.io/gce-pd"
  virtual const char* CsiDriverName() const = 0;     // "pd.csi.storage.gke.io"
  // The volume source field in a PV spec and in a pod volume: "gcePersistentDisk".
  virtual const char* SourceField() const = 0;

  // The source field is set (present and not null).
  bool CanSupport(JsonView pv) const;
  bool CanSupportInline(const Json& volume) const;

  // REQUIRES: CanSupport(pv). Records in `changes` how the spec of `pv` becomes the CSI PV's:
  // at least the in-tree source removed and spec.csi set.
  virtual Status TranslatePVToCsi(const SourcePV& pv, SpecChanges* changes) const = 0;
  // REQUIRES: CanSupportInline(volume). Returns a new PV; volumeMode is left to the caller.
  virtual StatusOr<Json> TranslateInlineToCsi(const Json& volume,
                                              const std::string& pod_namespace) const = 0;
  // REQUIRES: pv has spec.csi with this plugin's driver. Replaces spec.csi by the in-tree source.
  virtual Status TranslateCsiPVToInTree(Json& pv) const = 0;
  virtual Status TranslateStorageClassToCsi(Json& sc) const = 0;
  // Completes a volume handle with information from the node ID; most plugins return it as is.
  virtual StatusOr<std::string> RepairVolumeHandle(const std::string& handle,
                                                   const std::string& node_id) const {
    return handle;
  }
};

std::unique_ptr<InTreePlugin> NewAwsEbsPlugin();
std::unique_ptr<InTreePlugin> NewGcePdPlugin();
std::unique_ptr<InTreePlugin> NewAzureDiskPlugin();
std::unique_ptr<InTreePlugin> NewAzureFilePlugin();
std::unique_ptr<InTreePlugin> NewCinderPlugin();
std::unique_ptr<InTreePlugin> NewVspherePlugin();
std::unique_ptr<InTreePlugin> NewPortworxPlugin();
std::unique_ptr<InTreePlugin> NewRbdPlugin();

// Helpers shared by the plugin implementations.

// volume.<field> of a pod volume; REQUIRES: CanSupportInline(volume).
const Json& InlineSource(const Json& volume, const char* field);
// spec.csi of a PV; REQUIRES: present.
const Json& CsiSource(const Json& pv);
// Replaces `remove_field` of pv.spec by `csi` under `add_field`.
void SwapVolumeSource(Json& pv, const char* remove_field, const char* add_field, Json source);
// The same for a PV being translated to CSI: spec.<in_tree_field> goes, spec.csi comes.
void ReplaceSourceWithCsi(const char* in_tree_field, Json csi, SpecChanges* changes);
// A PV for an inline volume: metadata.name, spec.csi and spec.accessModes.
Json NewInlinePV(const std::string& name, Json csi, const char* access_mode);
// Removes an empty map/array field, mimicking Go's omitempty.
void DropIfEmpty(Json& obj, const char* key);
// The PV's metadata.name ("" when absent).
std::string PVName(JsonView pv);
// metadata.annotations[key]; false when absent.
bool LookupAnnotation(JsonView pv, const std::string& key, std::string* value);
// Sets metadata.annotations[key] = value, creating the map if needed.
void SetAnnotation(Json& pv, const std::string& key, const std::string& value);

}  // namespace translator
}  // namespace flexcsi

namespace flexcsi {
namespace translator {

// A CSIPersistentVolumeSource with Go's omitempty applied: readOnly=false, fsType="" and an
// empty attribute map are left out.
// The arguments are taken by value and moved into the object.
Json NewCsiSource(std::string driver, std::string handle, std::string fs_type, bool read_only,
                  std::map<std::string, std::string> attributes);
// A SecretReference with omitempty applied ({} when both are empty).
Json NewSecretRef(const std::string& name, const std::string& ns);

}  // namespace translator
}  // namespace flexcsi
