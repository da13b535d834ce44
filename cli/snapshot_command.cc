#include "cli/snapshot_command.h"

#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bridge/bridge_config.h"
#include "bridge/csi_client.h"
#include "bridge/volume_mapping.h"
#include "common/subcommand_args.h"
#include "common/text_table.h"
#include "common/yaml_json.h"

namespace flexcsi {
namespace {

struct Target {
  std::string endpoint;
  std::string volume_id;
};

// The CSI volume and endpoint of a FlexVolume PV manifest, through the bridge's mapping.
StatusOr<Target> TargetOfPV(const std::string& pv_path, const std::string& config_path,
                            std::istream& in) {
  std::string text;
  if (pv_path == "-") {
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    std::ifstream f(pv_path);
    if (!f) return NotFound("cannot read " + pv_path);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  auto pv = ParseYamlDocument(text);
  if (!pv.ok()) return pv.status().WithContext("--pv");
  if (!pv->is_object() || pv->value("kind", "") != "PersistentVolume" ||
      !(*pv)["spec"].contains("flexVolume")) {
    return InvalidArgument("--pv is not a FlexVolume PersistentVolume manifest");
  }
  auto config = BridgeConfig::LoadFile(config_path);
  if (!config.ok()) return config.status();
  const auto& flex = (*pv)["spec"]["flexVolume"];
  const std::string driver_name = flex.value("driver", "");
  const DriverConfig* driver = config->FindDriver(driver_name);
  if (driver == nullptr) {
    return NotFound("FlexVolume driver " + driver_name + " is not in " + config_path);
  }
  nlohmann::json options = flex.value("options", nlohmann::json::object());
  options["kubernetes.io/fsType"] = flex.value("fsType", "");
  options["kubernetes.io/readwrite"] = "rw";
  options["kubernetes.io/pvOrVolumeName"] = (*pv)["metadata"].value("name", "");
  auto resolved = ResolveFlexVolume(*driver, options.dump());
  if (!resolved.ok()) return resolved.status();
  return Target{driver->csi_endpoint, resolved->volume.volume_handle};
}

std::string FormatTime(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0) return "";
  const std::time_t secs = static_cast<std::time_t>(t.seconds());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

int RunSnapshotCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                       std::ostream& err) {
  CLI::App app{"CSI snapshots of FlexVolume PVs (clusters without VolumeSnapshot CRDs)",
               "flexcsi snapshot"};
  app.require_subcommand(1);
  std::string endpoint, volume_id, pv, name, snapshot_id;
  std::string config_path = kDefaultBridgeConfigPath;
  int timeout_seconds = 120;
  auto* create = app.add_subcommand("create", "snapshot a volume and print the snapshot id");
  create->add_option("--name", name, "snapshot name (idempotent: the same name, the same id)")
      ->required();
  auto* list = app.add_subcommand("list", "list snapshots (of one volume with --pv/--volume-id)");
  auto* remove = app.add_subcommand("delete", "delete a snapshot");
  remove->add_option("--id", snapshot_id, "snapshot id")->required();
  for (auto* sub : {create, list, remove}) {
    sub->add_option("--endpoint", endpoint, "unix:///path/to/csi.sock (else from --pv's driver)");
    sub->add_option("--bridge-config", config_path, "bridge configuration for --pv")
        ->capture_default_str();
    sub->add_option("--timeout", timeout_seconds, "seconds")->capture_default_str();
  }
  for (auto* sub : {create, list}) {
    sub->add_option("--pv", pv, "FlexVolume PV manifest file, or - for stdin");
    sub->add_option("--volume-id", volume_id, "CSI volume id (with --endpoint)");
  }
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;

  const char* verb = *create ? "create" : *list ? "list" : "delete";
  auto fail = [&](const Status& s) {
    err << "flexcsi snapshot " << verb << ": " << s.message() << "\n";
    return 1;
  };
  if (!pv.empty()) {
    if (!volume_id.empty()) return fail(InvalidArgument("give --pv or --volume-id, not both"));
    auto target = TargetOfPV(pv, config_path, in);
    if (!target.ok()) return fail(target.status());
    volume_id = target->volume_id;
    if (endpoint.empty()) endpoint = target->endpoint;
  }
  if (endpoint.empty()) {
    return fail(InvalidArgument("say which driver: --endpoint, or --pv with --bridge-config"));
  }
  if (*create && volume_id.empty()) return fail(InvalidArgument("--pv or --volume-id is required"));

  CsiClient client(endpoint, /*metrics=*/nullptr);
  const Deadline deadline = Deadline::In(std::chrono::seconds(timeout_seconds));
  if (*create) {
    csi::v1::CreateSnapshotRequest req;
    req.set_name(name);
    req.set_source_volume_id(volume_id);
    auto made = client.CreateSnapshot(req, deadline);
    if (!made.ok()) return fail(made.status());
    out << made->snapshot().snapshot_id() << "\n";
    return 0;
  }
  if (*remove) {
    csi::v1::DeleteSnapshotRequest req;
    req.set_snapshot_id(snapshot_id);
    Status s = client.DeleteSnapshot(req, deadline);
    return s.ok() ? 0 : fail(s);
  }
  TextTable table({"SNAPSHOT", "SOURCE VOLUME", "SIZE", "READY", "CREATED"});
  csi::v1::ListSnapshotsRequest req;
  if (!volume_id.empty()) req.set_source_volume_id(volume_id);
  for (;;) {
    auto page = client.ListSnapshots(req, deadline);
    if (!page.ok()) return fail(page.status());
    for (const auto& e : page->entries()) {
      const auto& s = e.snapshot();
      table.AddRow({s.snapshot_id(), s.source_volume_id(), std::to_string(s.size_bytes()),
                    s.ready_to_use() ? "true" : "false", FormatTime(s.creation_time())});
    }
    if (page->next_token().empty()) break;
    req.set_starting_token(page->next_token());
  }
  table.Print(out);
  return 0;
}

}  // namespace flexcsi
