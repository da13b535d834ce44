#include "cli/volume_command.h"

#include <cctype>
#include <ostream>

#include <CLI/CLI.hpp>

#include "bridge/csi_client.h"
#include "bridge/csi_requests.h"

namespace flexcsi {

StatusOr<int64_t> ParseByteQuantity(const std::string& text) {
  static const std::vector<std::pair<std::string, int64_t>> kSuffixes = {
      {"Ki", 1LL << 10}, {"Mi", 1LL << 20}, {"Gi", 1LL << 30}, {"Ti", 1LL << 40},
      {"k", 1000LL},     {"M", 1000000LL},  {"G", 1000000000LL}, {"T", 1000000000000LL}};
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string suffix = text.substr(digits);
  if (digits == 0 || digits > 15) {
    return InvalidArgument("size \"" + text + "\" is not a number of bytes such as 64Mi or 1Gi");
  }
  const int64_t number = std::stoll(text.substr(0, digits));
  if (suffix.empty()) return number;
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix == name) {
      if (number > INT64_MAX / factor) return OutOfRange("size \"" + text + "\" is too large");
      return number * factor;
    }
  }
  return InvalidArgument("size \"" + text + "\" has an unknown suffix \"" + suffix +
                         "\" (use Ki, Mi, Gi, Ti, k, M, G or T)");
}

int RunVolumeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"create or delete a volume on a CSI driver's controller endpoint", "flexcsi volume"};
  app.require_subcommand(1);
  std::string endpoint;
  std::string name, size = "1Gi", fs_type, access_mode = "ReadWriteOnce", volume_id;
  int timeout_seconds = 120;
  auto* create = app.add_subcommand("create", "create a volume and print its id");
  create->add_option("--endpoint", endpoint, "unix:///path/to/csi.sock")->required();
  create->add_option("--name", name, "volume name (idempotent: the same name gives the same id)")
      ->required();
  create->add_option("--size", size, "capacity, e.g. 64Mi, 10Gi")->capture_default_str();
  create->add_option("--fs-type", fs_type, "passed as the fsType parameter when set");
  create->add_option("--access-mode", access_mode,
                     "ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod")
      ->capture_default_str();
  create->add_option("--timeout", timeout_seconds, "seconds")->capture_default_str();
  std::string from_snapshot;
  create->add_option("--from-snapshot", from_snapshot,
                     "snapshot id to restore (see `flexcsi snapshot`); --size at least its size");
  auto* remove = app.add_subcommand("delete", "delete a volume");
  remove->add_option("--endpoint", endpoint, "unix:///path/to/csi.sock")->required();
  remove->add_option("--id", volume_id, "volume id")->required();
  remove->add_option("--timeout", timeout_seconds, "seconds")->capture_default_str();

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  CsiClient client(endpoint, /*metrics=*/nullptr);
  const Deadline deadline = Deadline::In(std::chrono::seconds(timeout_seconds));
  if (*remove) {
    csi::v1::DeleteVolumeRequest req;
    req.set_volume_id(volume_id);
    Status deleted = client.DeleteVolume(req, deadline);
    if (!deleted.ok()) {
      err << "flexcsi volume delete: " << deleted.ToString() << "\n";
      return 1;
    }
    return 0;
  }
  auto bytes = ParseByteQuantity(size);
  if (!bytes.ok()) {
    err << "flexcsi volume create: " << bytes.status().message() << "\n";
    return 1;
  }
  csi::v1::CreateVolumeRequest req;
  req.set_name(name);
  req.mutable_capacity_range()->set_required_bytes(*bytes);
  if (!fs_type.empty()) (*req.mutable_parameters())["fsType"] = fs_type;
  if (!from_snapshot.empty()) {
    req.mutable_volume_content_source()->mutable_snapshot()->set_snapshot_id(from_snapshot);
  }
  *req.add_volume_capabilities() =
      MountCapability({access_mode, fs_type, {}, std::nullopt}, /*single_node_multi_writer=*/false);
  if (req.volume_capabilities(0).access_mode().mode() ==
      csi::v1::VolumeCapability::AccessMode::UNKNOWN) {
    err << "flexcsi volume create: unknown access mode \"" << access_mode << "\"\n";
    return 1;
  }
  auto created = client.CreateVolume(req, deadline);
  if (!created.ok()) {
    err << "flexcsi volume create: " << created.status().ToString() << "\n";
    return 1;
  }
  out << created->volume().volume_id() << "\n";
  return 0;
}

}  // namespace flexcsi
