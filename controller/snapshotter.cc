#include "controller/snapshotter.h"

#include <map>
#include <optional>

#include <spdlog/spdlog.h>

#include "controller/fault_points.h"
#include "controller/flex_pv.h"
#include "controller/secret_params.h"

namespace flexcsi::controller {
namespace {

constexpr const char* kGroup = "snapshot.storage.k8s.io/v1";

kube::ResourcePath Snapshots(const std::string& ns) {
  return kube::ResourcePath::Group(kGroup, "volumesnapshots", ns);
}
kube::ResourcePath Contents() {
  return kube::ResourcePath::Group(kGroup, "volumesnapshotcontents");
}

nlohmann::json WithKind(nlohmann::json snapshot) {
  snapshot["kind"] = "VolumeSnapshot";
  snapshot["apiVersion"] = kGroup;
  return snapshot;
}

// Where snapshot-controller keeps the class's snapshotter secret on a content, for
// DeleteSnapshot after the class is gone; CreateSnapshot reads it there too.
constexpr const char* kAnnSnapshotDeletionSecretName =
    "snapshot.storage.kubernetes.io/deletion-secret-name";
constexpr const char* kAnnSnapshotDeletionSecretNamespace =
    "snapshot.storage.kubernetes.io/deletion-secret-namespace";

std::map<std::string, std::string> StringParameters(const nlohmann::json& cls) {
  std::map<std::string, std::string> params;
  const auto& p = JField(cls, "parameters");
  if (!p.is_object()) return params;
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (it.value().is_string()) params[it.key()] = it.value().get<std::string>();
  }
  return params;
}

nlohmann::json WithoutFinalizer(nlohmann::json object, const std::string& finalizer) {
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& f : object["metadata"]["finalizers"]) {
    if (f != finalizer) kept.push_back(f);
  }
  object["metadata"]["finalizers"] = kept;
  return object;
}

}  // namespace

Status Snapshotter::Fail(const nlohmann::json& snapshot, const Status& why) {
  ctx_.events->Record(WithKind(snapshot), kEventWarning, "SnapshotCreationFailed",
                      "Failed to create snapshot: " + why.message());
  return why;
}

Status Snapshotter::SyncSnapshot(const std::string& ns, const std::string& name) {
  auto snap = ctx_.client->Get(Snapshots(ns).Named(name));
  if (!snap.ok()) return kube::IsNotFound(snap.status()) ? Status::Ok() : snap.status();
  const auto& meta = JField(*snap, "metadata");
  const std::string uid = JStr(meta, "uid");
  const std::string content_name = "snapcontent-" + uid;
  const auto& source = JField(JField(*snap, "spec"), "source");
  const std::string claim_name = JStr(source, "persistentVolumeClaimName");

  if (BeingDeleted(*snap)) {
    // The content follows its snapshot: with deletionPolicy Delete it goes, with Retain it stays.
    auto content = ctx_.client->Get(Contents().Named(content_name));
    if (content.ok() && !BeingDeleted(*content) &&
        JStr(JField(*content, "spec"), "deletionPolicy") == "Delete") {
      auto d = ctx_.client->Delete(Contents().Named(content_name));
      if (!d.ok() && !kube::IsNotFound(d.status())) return d.status();
    }
    if (HasFinalizer(*snap, kSnapshotBoundFinalizer)) {
      auto u = ctx_.client->Update(Snapshots(ns).Named(name),
                                   WithoutFinalizer(*snap, kSnapshotBoundFinalizer));
      if (!u.ok() && !kube::IsNotFound(u.status())) return u.status();
    }
    return Status::Ok();
  }
  if (claim_name.empty()) return Status::Ok();  // pre-provisioned: not handled here

  auto claim =
      ctx_.client->Get(kube::ResourcePath::Core("persistentvolumeclaims", ns).Named(claim_name));
  if (!claim.ok()) return kube::IsNotFound(claim.status()) ? Status::Ok() : claim.status();
  const std::string pv_name = JStr(JField(*claim, "spec"), "volumeName");
  if (pv_name.empty()) return Status::Ok();
  auto pv = ctx_.client->Get(kube::ResourcePath::Core("persistentvolumes").Named(pv_name));
  if (!pv.ok()) return pv.status();
  const DriverConfig* driver = DriverOfPV(ctx_.bridge, *pv);
  if (driver == nullptr) return Status::Ok();  // not one of ours

  auto content = ctx_.client->Get(Contents().Named(content_name));
  if (!content.ok()) {
    if (!kube::IsNotFound(content.status())) return content.status();
    std::string deletion_policy = "Delete";
    std::optional<SecretRef> secret;
    const std::string class_name = JStr(JField(*snap, "spec"), "volumeSnapshotClassName");
    if (!class_name.empty()) {
      auto cls = ctx_.client->Get(
          kube::ResourcePath::Group(kGroup, "volumesnapshotclasses").Named(class_name));
      if (!cls.ok()) return Fail(*snap, cls.status().WithContext("snapshot class " + class_name));
      if (JStr(*cls, "driver") != driver->CsiDriver()) {
        return Fail(*snap, InvalidArgument("snapshot class " + class_name + " is for driver " +
                                           JStr(*cls, "driver")));
      }
      if (!JStr(*cls, "deletionPolicy").empty()) deletion_policy = JStr(*cls, "deletionPolicy");
      auto ref = ResolveSecretRef(SecretKind::kSnapshotter, StringParameters(*cls), "", nullptr);
      if (!ref.ok()) return Fail(*snap, ref.status().WithContext("snapshot class " + class_name));
      if (ref->has_value()) secret = **ref;
    }
    auto volume = CsiVolumeOfPV(*driver, *pv);
    if (!volume.ok()) return Fail(*snap, volume.status());
    nlohmann::json body = {{"apiVersion", kGroup},
                           {"kind", "VolumeSnapshotContent"},
                           {"metadata",
                            {{"name", content_name},
                             {"annotations", {{kAnnManagedBy, kComponent}}},
                             {"finalizers", {kContentFinalizer}}}},
                           {"spec",
                            {{"driver", driver->CsiDriver()},
                             {"deletionPolicy", deletion_policy},
                             {"source", {{"volumeHandle", volume->volume_handle}}},
                             {"volumeSnapshotRef",
                              {{"kind", "VolumeSnapshot"},
                               {"apiVersion", kGroup},
                               {"namespace", ns},
                               {"name", name},
                               {"uid", uid}}}}}};
    if (!class_name.empty()) body["spec"]["volumeSnapshotClassName"] = class_name;
    if (secret) {
      body["metadata"]["annotations"][kAnnSnapshotDeletionSecretName] = secret->name;
      body["metadata"]["annotations"][kAnnSnapshotDeletionSecretNamespace] = secret->namespace_;
    }
    auto made = ctx_.client->Create(Contents(), body);
    if (!made.ok() && !kube::IsAlreadyExists(made.status())) return made.status();
    content = ctx_.client->Get(Contents().Named(content_name));
    if (!content.ok()) return content.status();
  }
  if (Annotation(*content, kAnnManagedBy).empty()) {
    // A content of this name bound to a snapshot of our FlexVolume PV: ours (made before the
    // annotation existed; snapshot-controller cannot make one for a FlexVolume PV).
    const auto& ref = JField(JField(*content, "spec"), "volumeSnapshotRef");
    if (JStr(ref, "uid") != uid ||
        JStr(JField(JField(*content, "spec"), "source"), "volumeHandle").empty()) {
      return Fail(*snap, FailedPrecondition("VolumeSnapshotContent " + content_name +
                                            " exists and is not bound to this snapshot"));
    }
    auto p = ctx_.client->Patch(Contents().Named(content_name), kube::PatchType::kMerge,
                                {{"metadata", {{"annotations", {{kAnnManagedBy, kComponent}}}}}});
    if (!p.ok()) return p.status();
  }
  if (!HasFinalizer(*snap, kSnapshotBoundFinalizer)) {
    nlohmann::json updated = *snap;
    updated["metadata"]["finalizers"].push_back(kSnapshotBoundFinalizer);
    auto u = ctx_.client->Update(Snapshots(ns).Named(name), updated);
    if (!u.ok()) return u.status();
  }
  const auto& cs = JField(*content, "status");
  nlohmann::json status = {
      {"boundVolumeSnapshotContentName", content_name},
      {"readyToUse", JField(cs, "readyToUse").is_boolean() ? cs["readyToUse"].get<bool>() : false}};
  if (JField(cs, "restoreSize").is_number_integer()) {
    status["restoreSize"] = std::to_string(cs["restoreSize"].get<int64_t>());
  }
  if (JField(cs, "creationTime").is_number_integer()) {
    const int64_t ns_time = cs["creationTime"].get<int64_t>();
    const std::time_t secs = static_cast<std::time_t>(ns_time / 1000000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    status["creationTime"] = buf;
  }
  const auto& current = JField(*snap, "status");
  // snapshot-controller may have tried (and failed: "cannot find CSI PersistentVolumeSource")
  // to make a content itself before ours reached its cache; it never retries once ours is there.
  // A snapshot that is ready has no error: clear that one, once.
  const bool stale_error = status["readyToUse"] == true && !JField(current, "error").is_null();
  if (stale_error) status["error"] = nullptr;
  if (stale_error || JField(current, "readyToUse") != status["readyToUse"] ||
      JField(current, "boundVolumeSnapshotContentName") !=
          status["boundVolumeSnapshotContentName"]) {
    auto p = ctx_.client->Patch(Snapshots(ns).Named(name).Sub("status"), kube::PatchType::kMerge,
                                {{"status", status}});
    if (!p.ok()) return p.status();
    if (status["readyToUse"] == true && JField(current, "readyToUse") != true) {
      ctx_.events->Record(WithKind(*snap), kEventNormal, "SnapshotReady",
                          "Snapshot " + ns + "/" + name + " is ready to use.");
    }
  }
  // Not ready yet: the content's sync will make it so; come back.
  return status["readyToUse"] == true ? Status::Ok() : Unavailable("snapshot not ready yet");
}

Status Snapshotter::SyncContent(const std::string& name) {
  auto content = ctx_.client->Get(Contents().Named(name));
  if (!content.ok()) return kube::IsNotFound(content.status()) ? Status::Ok() : content.status();
  const auto& spec = JField(*content, "spec");
  const DriverConfig* driver = nullptr;
  for (const auto& d : ctx_.bridge.drivers) {
    if (d.CsiDriver() == JStr(spec, "driver")) driver = &d;
  }
  if (driver == nullptr) return Status::Ok();
  // Only contents we made: never a pre-provisioned one (source.snapshotHandle, bound by
  // snapshot-controller) or one snapshot-controller made for a CSI PV of the same driver.
  if (Annotation(*content, kAnnManagedBy).empty()) return Status::Ok();
  const std::string handle = JStr(JField(*content, "status"), "snapshotHandle");
  const auto& ref = JField(spec, "volumeSnapshotRef");
  // The class's snapshotter secret, as the content recorded it when it was made.
  std::map<std::string, std::string> secrets;
  if (const std::string secret_name = Annotation(*content, kAnnSnapshotDeletionSecretName);
      !secret_name.empty()) {
    auto data = ctx_.SecretData(
        SecretRef{secret_name, Annotation(*content, kAnnSnapshotDeletionSecretNamespace)});
    if (!data.ok()) return data.status();
    secrets = std::move(*data);
  }

  // Is the content's snapshot gone (or being deleted)? Then the content goes too.
  bool orphaned = BeingDeleted(*content);
  if (!orphaned) {
    auto snap = ctx_.client->Get(Snapshots(JStr(ref, "namespace")).Named(JStr(ref, "name")));
    orphaned = (!snap.ok() && kube::IsNotFound(snap.status())) ||
               (snap.ok() && JStr(JField(*snap, "metadata"), "uid") != JStr(ref, "uid"));
  }
  if (orphaned) {
    if (JStr(spec, "deletionPolicy") == "Delete" && !handle.empty() &&
        HasFinalizer(*content, kContentFinalizer)) {
      csi::v1::DeleteSnapshotRequest del;
      del.set_snapshot_id(handle);
      for (const auto& [k, v] : secrets) (*del.mutable_secrets())[k] = v;
      Status s = WithSecretsRedacted(
          ctx_.Csi(*driver).DeleteSnapshot(del, Deadline::In(ctx_.timeout)), del.secrets());
      if (!s.ok() && s.code() != Code::kNotFound) return s;
      spdlog::info("deleted snapshot {} of content {}", handle, name);
    }
    if (!BeingDeleted(*content)) {
      auto d = ctx_.client->Delete(Contents().Named(name));
      if (!d.ok() && !kube::IsNotFound(d.status())) return d.status();
      content = ctx_.client->Get(Contents().Named(name));
      if (!content.ok())
        return kube::IsNotFound(content.status()) ? Status::Ok() : content.status();
    }
    if (HasFinalizer(*content, kContentFinalizer)) {
      auto u = ctx_.client->Update(Contents().Named(name),
                                   WithoutFinalizer(*content, kContentFinalizer));
      if (!u.ok() && !kube::IsNotFound(u.status())) return u.status();
    }
    return Status::Ok();
  }
  // Done, unless the driver cut the snapshot but is still processing it (readyToUse false):
  // then CreateSnapshot is repeated (idempotent by name) until it says ready, as csi-snapshotter
  // polls.
  const auto& ready = JField(JField(*content, "status"), "readyToUse");
  if (!handle.empty() && ready.is_boolean() && ready.get<bool>()) return Status::Ok();
  const std::string source_volume = JStr(JField(spec, "source"), "volumeHandle");
  if (source_volume.empty()) return Status::Ok();

  csi::v1::CreateSnapshotRequest req;
  req.set_name("snapshot-" + JStr(ref, "uid"));
  req.set_source_volume_id(source_volume);
  for (const auto& [k, v] : secrets) (*req.mutable_secrets())[k] = v;
  // The class's parameters but its csi.storage.k8s.io/ keys, as csi-snapshotter passes them
  // (ceph-csi needs clusterID there).
  if (const std::string class_name = JStr(spec, "volumeSnapshotClassName"); !class_name.empty()) {
    auto cls = ctx_.client->Get(
        kube::ResourcePath::Group(kGroup, "volumesnapshotclasses").Named(class_name));
    if (!cls.ok()) return cls.status().WithContext("snapshot class " + class_name);
    for (const auto& [k, v] : StringParameters(*cls)) {
      if (!IsProvisionerOnlyParameter(k)) (*req.mutable_parameters())[k] = v;
    }
  }
  auto made = ctx_.Csi(*driver).CreateSnapshot(req, Deadline::In(ctx_.timeout));
  if (!made.ok()) {
    const Status failed = WithSecretsRedacted(made.status(), req.secrets());
    auto snap = ctx_.client->Get(Snapshots(JStr(ref, "namespace")).Named(JStr(ref, "name")));
    if (snap.ok()) (void)Fail(*snap, failed);
    return failed;
  }
  CrashPoint("create-snapshot");
  const auto& s = made->snapshot();
  const int64_t created_ns =
      s.has_creation_time() ? s.creation_time().seconds() * 1000000000 + s.creation_time().nanos()
                            : 0;
  nlohmann::json status = {{"snapshotHandle", s.snapshot_id()},
                           {"readyToUse", s.ready_to_use()},
                           {"restoreSize", s.size_bytes()},
                           {"creationTime", created_ns}};
  auto p = ctx_.client->Patch(Contents().Named(name).Sub("status"), kube::PatchType::kMerge,
                              {{"status", status}});
  if (!p.ok()) return p.status();
  return s.ready_to_use() ? Status::Ok() : Unavailable("snapshot not ready yet");
}

}  // namespace flexcsi::controller
