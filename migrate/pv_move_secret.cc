// The Secret a CSI PV names where the PV's rule derives its secrets (a single key renamed, keys
// from options or defaults: rook's mountSecret/mountUser). A CSI PV can only name a Secret, so
// apply writes one in the claim's namespace with the derived keys, and rollback deletes it. The
// keys are derived afresh from the rule's Secret at each write (translator DeriveSecrets, as the
// bridge does for each call) and never journaled, logged or shown; the Secret carries the row's
// release uid, which is how a resumed run and rollback tell it from a user's.
#include "common/base64.h"
#include "migrate/pv_move_run.h"
#include "translator/derived_secrets.h"

namespace flexcsi::migrate {

namespace {

constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
constexpr const char* kManagedByValue = "flexcsi-migrate";
constexpr const char* kMigratedPv = "flexcsi.io/migrated-pv";
constexpr const char* kReleaseUid = "flexcsi.io/migration-release-uid";

ResourcePath Secrets(const std::string& ns) { return ResourcePath::Core("secrets", ns); }

std::string KeysOf(const json& data) {
  std::string keys;
  if (!data.is_object()) return keys;
  for (auto it = data.begin(); it != data.end(); ++it) keys += (keys.empty() ? "" : ",") + it.key();
  return keys;
}

}  // namespace

std::optional<translator::SecretReference> PvMover::Run::SecretToWrite() const {
  const json csi = rec_.target_pv.is_object()
                       ? rec_.target_pv.value("spec", json::object()).value("csi", json::object())
                       : json::object();
  const std::string name = translator::WrittenSecretName(pv_name_);
  for (auto it = csi.begin(); it != csi.end(); ++it) {
    if (it.key().size() > 9 && it.key().compare(it.key().size() - 9, 9, "SecretRef") == 0 &&
        it->is_object() && it->value("name", "") == name) {
      return translator::SecretReference{name, it->value("namespace", "")};
    }
  }
  return std::nullopt;
}

StatusOr<json> WrittenSecretFor(kube::KubeClient& client, const translator::Translator& translator,
                                const json& original_pv, const translator::SecretReference& to,
                                const std::string& release_uid) {
  auto volume = translator.FlexVolumeOfPV(original_pv);
  if (!volume.ok())
    return volume.status().WithContext("derive the secrets of PV " + NameOf(original_pv));
  if (!translator::DerivesSecrets(*volume)) {
    return FailedPrecondition("the rules given do not derive the secrets of PV " +
                              NameOf(original_pv) + " (its CSI PV names Secret " + to.name +
                              "): give the rules of the apply that began it");
  }
  std::map<std::string, std::string> data;
  std::string source_namespace;
  if (volume->read_secret) {
    source_namespace = volume->read_secret->namespace_name;
    const std::string what = "secret " + source_namespace + "/" + volume->read_secret->name;
    auto secret = client.Get(Secrets(source_namespace).Named(volume->read_secret->name));
    if (!secret.ok()) return secret.status().WithContext("read " + what + " (the rule's Secret)");
    const json found = secret->value("data", json::object());
    for (auto it = found.begin(); it != found.end(); ++it) {
      auto decoded = it->is_string() ? Base64DecodeStandard(it->get<std::string>())
                                     : StatusOr<std::string>(InvalidArgument(""));
      if (!decoded.ok()) return InvalidArgument(what + ": key " + it.key() + " is not base64");
      data[it.key()] = std::move(*decoded);
    }
  }
  auto derived =
      translator::DeriveSecrets(*volume, source_namespace, volume->read_secret ? &data : nullptr);
  if (!derived.ok()) return derived.status();
  json encoded = json::object();
  for (const auto& [key, value] : *derived) encoded[key] = Base64Encode(value);
  return json{{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata",
               {{"name", to.name},
                {"namespace", to.namespace_name},
                {"labels", {{kManagedBy, kManagedByValue}}},
                {"annotations", {{kMigratedPv, NameOf(original_pv)}, {kReleaseUid, release_uid}}}}},
              {"type", "Opaque"},
              {"data", encoded}};
}

bool PvMover::Run::SecretIsOurs(const json& secret) const {
  return Str(secret,
             json::json_pointer("/metadata/annotations/flexcsi.io~1migration-release-uid")) ==
         rec_.release_uid;
}

Status PvMover::Run::WriteSecret() {
  const auto to = SecretToWrite();
  if (!to) return Internal("PV " + pv_name_ + " names no Secret for migrate to write");
  const std::string what = "secret " + to->namespace_name + "/" + to->name;
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto want =
        WrittenSecretFor(client_, *m_->translator_, rec_.original_pv, *to, rec_.release_uid);
    if (!want.ok()) return want.status();
    auto live = client_.Get(Secrets(to->namespace_name).Named(to->name));
    if (!live.ok() && !kube::IsNotFound(live.status())) {
      return live.status().WithContext("read " + what);
    }
    if (!live.ok()) {
      auto made = client_.Create(Secrets(to->namespace_name), *want);
      if (made.ok()) return Status::Ok();
      if (kube::IsAlreadyExists(made.status())) continue;  // decide again on what is there
      return made.status().WithContext("create " + what);
    }
    if (!SecretIsOurs(*live)) {
      return FailedPrecondition(what + " exists and was not written by this migration (no " +
                                kReleaseUid + " " + rec_.release_uid +
                                "); not overwriting it: move it away, then apply again");
    }
    if (live->value("data", json::object()) == (*want)["data"]) return Status::Ok();
    // Ours from before a crash, and the rule's Secret changed since: the live keys win.
    json updated = *live;
    updated["data"] = (*want)["data"];
    auto put = client_.Update(Secrets(to->namespace_name).Named(to->name), updated);
    if (put.ok()) {
      Progress("updated " + what + " (keys " + KeysOf(updated["data"]) + ")");
      return Status::Ok();
    }
    if (!kube::IsConflict(put.status()) && !kube::IsNotFound(put.status())) {
      return put.status().WithContext("update " + what);
    }
  }
  return Aborted(what + " kept changing under us (20 attempts)");
}

Status PvMover::Run::DeleteWrittenSecret() {
  const auto to = SecretToWrite();
  if (!to) return Status::Ok();
  const std::string what = "secret " + to->namespace_name + "/" + to->name;
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto live = client_.Get(Secrets(to->namespace_name).Named(to->name));
    if (!live.ok()) {
      if (kube::IsNotFound(live.status())) return Status::Ok();
      return live.status().WithContext("read " + what);
    }
    if (!SecretIsOurs(*live)) {
      // Never a user's: only the Secret this row wrote carries its release uid.
      notes_.push_back("left " + what + ": not written by this migration");
      return Status::Ok();
    }
    kube::DeleteOptions del;
    del.precondition_uid = UidOf(*live);
    del.precondition_resource_version = Str(*live, "/metadata/resourceVersion"_json_pointer);
    auto gone = client_.Delete(Secrets(to->namespace_name).Named(to->name), del);
    if (gone.ok() || kube::IsNotFound(gone.status())) return Status::Ok();
    if (!kube::IsConflict(gone.status())) return gone.status().WithContext("delete " + what);
  }
  return Aborted(what + " kept changing under us (20 attempts)");
}

}  // namespace flexcsi::migrate
