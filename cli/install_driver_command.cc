#include "cli/install_driver_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "bridge/bridge_config.h"
#include "bridge/node_registrar.h"
#include "common/command_runner.h"
#include "common/subcommand_args.h"

namespace flexcsi {

namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path + ": " + ErrnoText());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0) return Status::Ok();
  if (errno != EEXIST) return Internal("cannot create " + path + ": " + ErrnoText());
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return FailedPrecondition(path + " exists and is not a directory");
  }
  return Status::Ok();
}

Status MakeDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    FLEXCSI_RETURN_IF_ERROR(MakeDirectory(path.substr(0, slash)));
  }
  return MakeDirectory(path);
}

// Writes `content` to `dir/final_name` so that no reader ever sees a partial file: into a
// hidden temporary in the same directory (kubelet's prober skips dot-names; same filesystem
// makes the rename atomic), fsync, chmod, rename over the final name, fsync the directory.
// Renaming over a running executable is fine where writing into it would fail (ETXTBSY).
Status WriteFileAtomically(const std::string& dir, const std::string& final_name,
                           const std::string& content, mode_t mode) {
  std::string temp = dir + "/." + final_name + ".flexcsi-XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0) return Internal("cannot create a temporary file in " + dir + ": " + ErrnoText());
  Status status;
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = Internal("cannot write " + temp + ": " + ErrnoText());
      break;
    }
    written += static_cast<size_t>(n);
  }
  if (status.ok() && fchmod(fd, mode) != 0) status = Internal("chmod " + temp + ": " + ErrnoText());
  if (status.ok() && fsync(fd) != 0) status = Internal("fsync " + temp + ": " + ErrnoText());
  close(fd);
  const std::string final_path = dir + "/" + final_name;
  if (status.ok() && rename(temp.c_str(), final_path.c_str()) != 0) {
    status = Internal("cannot rename " + temp + " to " + final_path + ": " + ErrnoText());
  }
  if (!status.ok()) {
    unlink(temp.c_str());
    return status;
  }
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    fsync(dir_fd);  // best effort: the rename is already visible, this makes it durable
    close(dir_fd);
  }
  return Status::Ok();
}

// Puts `content` at dir/name with `mode` unless it is already exactly there.
Status PlaceFile(const std::string& dir, const std::string& name, const std::string& content,
                 mode_t mode, InstallReport* report) {
  const std::string path = dir + "/" + name;
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return FailedPrecondition(path + " is a directory; remove it first");
    if (S_ISREG(st.st_mode) && (st.st_mode & 07777) == mode) {
      auto existing = ReadWholeFile(path);
      if (existing.ok() && *existing == content) {
        report->actions.push_back("unchanged " + path);
        return Status::Ok();
      }
    }
  }
  FLEXCSI_RETURN_IF_ERROR(WriteFileAtomically(dir, name, content, mode));
  report->actions.push_back("installed " + path);
  return Status::Ok();
}

Status RemoveIfPresent(const std::string& path, InstallReport* report) {
  if (unlink(path.c_str()) == 0) {
    report->actions.push_back("removed " + path);
    return Status::Ok();
  }
  if (errno == ENOENT) return Status::Ok();
  return Internal("cannot remove " + path + ": " + ErrnoText());
}

// Runs `<exe> init` the way kubelet does (argv[0] the full path, no stdin) and checks the reply.
StatusOr<std::string> VerifyInit(const std::string& exe, const nlohmann::json& capabilities) {
  auto result = RunCommandCapture({exe, "init"}, std::chrono::seconds(30));
  if (!result.ok()) return result.status().WithContext("running " + exe + " init");
  const std::string text = result->stdout_text;
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return FailedPrecondition(exe + " init did not print JSON (kubelet would not load the " +
                              "driver): " + text + result->stderr_text);
  }
  if (!reply.is_object() || reply.value("status", "") != "Success") {
    return FailedPrecondition(exe + " init did not answer Success: " + text);
  }
  if (reply.contains("capabilities") && reply["capabilities"] != capabilities) {
    return FailedPrecondition(exe + " init reports capabilities " + reply["capabilities"].dump() +
                              ", flexcsi.json says " + capabilities.dump());
  }
  return text;
}

}  // namespace

Status ValidateInstallableDriverName(const std::string& driver) {
  const size_t slash = driver.find('/');
  if (driver.empty() || slash == std::string::npos ||
      driver.find('/', slash + 1) != std::string::npos) {
    return InvalidArgument("driver name \"" + driver +
                           "\" must be vendor/name, e.g. flexcsi/loopback (exactly one '/')");
  }
  for (const std::string& part : {driver.substr(0, slash), driver.substr(slash + 1)}) {
    if (part.empty()) {
      return InvalidArgument("driver name \"" + driver + "\" has an empty vendor or name");
    }
    if (part[0] == '.') {
      return InvalidArgument("driver name \"" + driver + "\": \"" + part +
                             "\" starts with '.', and kubelet ignores hidden plugin directories");
    }
    for (char c : part) {
      if (!IsNameChar(c)) {
        return InvalidArgument("driver name \"" + driver + "\" contains '" + std::string(1, c) +
                               "'; only letters, digits, '.', '_' and '-' are allowed");
      }
    }
  }
  return Status::Ok();
}

std::string DriverDirectoryName(const std::string& driver) {
  std::string dir = driver;
  dir[dir.find('/')] = '~';
  return dir;
}

std::string DriverExecutableName(const std::string& driver) {
  return driver.substr(driver.find('/') + 1);
}

nlohmann::json FlexexecConfigJson(const InstallDriverOptions& o) {
  return {
      {"capabilities",
       {{"attach", o.attach},
        {"selinuxRelabel", o.selinux_relabel},
        {"supportsMetrics", o.supports_metrics},
        {"fsGroup", o.fs_group},
        {"requiresFSResize", o.requires_fs_resize}}},
      {"bridgeSocket", o.bridge_socket},
      {"timeoutSeconds",
       {{"default", o.timeout_default_seconds},
        {"isattached", o.timeout_isattached_seconds},
        {"waitforattach", o.timeout_waitforattach_seconds}}},
  };
}

StatusOr<InstallReport> InstallDriver(const InstallDriverOptions& options) {
  FLEXCSI_RETURN_IF_ERROR(ValidateInstallableDriverName(options.driver));
  if (options.plugin_dir.empty() || options.plugin_dir[0] != '/') {
    return InvalidArgument("plugin directory \"" + options.plugin_dir + "\" must be absolute");
  }
  if (options.bridge_socket.empty() || options.bridge_socket[0] != '/') {
    return InvalidArgument("bridge socket \"" + options.bridge_socket + "\" must be absolute");
  }
  if (options.timeout_waitforattach_seconds >= 600) {
    return InvalidArgument("waitforattach timeout must stay below kubelet's 600 s kill");
  }
  if (options.flexexec_source.empty()) {
    return NotFound(std::string("no flexexec binary found (looked at ") + kPackagedFlexexecPath +
                    " and beside flexcsi); pass --flexexec PATH");
  }
  struct stat st {};
  if (stat(options.flexexec_source.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound("flexexec binary " + options.flexexec_source + " is not a regular file");
  }
  auto binary = ReadWholeFile(options.flexexec_source);
  if (!binary.ok()) return binary.status();

  const std::string dir = options.plugin_dir + "/" + DriverDirectoryName(options.driver);
  const std::string exe = dir + "/" + DriverExecutableName(options.driver);
  FLEXCSI_RETURN_IF_ERROR(MakeDirectories(options.plugin_dir));
  FLEXCSI_RETURN_IF_ERROR(MakeDirectory(dir));

  InstallReport report;
  const nlohmann::json config = FlexexecConfigJson(options);
  // flexcsi.json first: the executable's arrival triggers kubelet's `init`, which reads it.
  FLEXCSI_RETURN_IF_ERROR(PlaceFile(dir, "flexcsi.json", config.dump(2) + "\n", 0644, &report));
  FLEXCSI_RETURN_IF_ERROR(
      PlaceFile(dir, DriverExecutableName(options.driver), *binary, 0755, &report));
  if (options.verify) {
    auto init = VerifyInit(exe, config["capabilities"]);
    if (!init.ok()) return init.status();
    report.init_reply = *init;
  }
  return report;
}

StatusOr<InstallReport> UninstallDriver(const std::string& driver, const std::string& plugin_dir) {
  FLEXCSI_RETURN_IF_ERROR(ValidateInstallableDriverName(driver));
  const std::string dir = plugin_dir + "/" + DriverDirectoryName(driver);
  InstallReport report;
  // The executable first: its removal is what makes kubelet unregister the driver.
  FLEXCSI_RETURN_IF_ERROR(RemoveIfPresent(dir + "/" + DriverExecutableName(driver), &report));
  FLEXCSI_RETURN_IF_ERROR(RemoveIfPresent(dir + "/flexcsi.json", &report));
  if (rmdir(dir.c_str()) == 0) {
    report.actions.push_back("removed " + dir);
  } else if (errno == ENOTEMPTY || errno == EEXIST) {
    return FailedPrecondition(dir + " still holds files flexcsi did not install; left in place");
  } else if (errno != ENOENT) {
    return Internal("cannot remove " + dir + ": " + ErrnoText());
  }
  if (report.actions.empty()) report.actions.push_back("nothing installed at " + dir);
  return report;
}

std::string DefaultFlexexecSource(const std::string& self_exe) {
  struct stat st {};
  if (stat(kPackagedFlexexecPath, &st) == 0 && S_ISREG(st.st_mode)) return kPackagedFlexexecPath;
  char resolved[4096];
  const ssize_t n = readlink(self_exe.c_str(), resolved, sizeof resolved - 1);
  std::string self = n > 0 ? std::string(resolved, static_cast<size_t>(n)) : self_exe;
  const size_t slash = self.rfind('/');
  if (slash == std::string::npos) return "";
  const std::string beside = self.substr(0, slash) + "/flexexec";
  if (stat(beside.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return beside;
  return "";
}

namespace {

// Options both subcommands share.
// --driver is required unless `driver_optional` (install-driver --config installs every
// configured driver when no --driver is given).
void AddCommonFlags(CLI::App& app, std::string* driver, std::string* plugin_dir,
                    bool driver_optional) {
  auto* option = app.add_option("--driver", *driver,
                                "FlexVolume driver name, vendor/name (e.g. flexcsi/loopback)");
  if (!driver_optional) option->required();
  app.add_option("--plugin-dir", *plugin_dir,
                 "kubelet --volume-plugin-dir or kube-controller-manager "
                 "--flex-volume-plugin-dir")
      ->capture_default_str();
}

void PrintReport(const InstallReport& report, std::ostream& out) {
  for (const auto& a : report.actions) out << a << "\n";
}

}  // namespace

int RunInstallDriverCommand(const std::vector<std::string>& args, std::ostream& out,
                            std::ostream& err) {
  InstallDriverOptions o;
  std::string config_path;
  std::string flexexec;
  CLI::App app("Install a bridge-backed FlexVolume driver into a plugin directory",
               "flexcsi install-driver");
  AddCommonFlags(app, &o.driver, &o.plugin_dir, /*driver_optional=*/true);
  app.add_option("--config", config_path,
                 "bridge configuration to take the attach flag and the socket from; without "
                 "--driver, every driver it configures is installed");
  app.add_option("--flexexec", flexexec,
                 "flexexec binary to install (default: " + std::string(kPackagedFlexexecPath) +
                     ", else the one beside flexcsi)");
  auto* socket =
      app.add_option("--socket", o.bridge_socket, "bridge socket")->capture_default_str();
  auto* attach = app.add_flag("--attach,!--no-attach", o.attach,
                              "driver is attachable (attach/detach in the controller-manager)");
  app.add_flag("--selinux-relabel,!--no-selinux-relabel", o.selinux_relabel);
  app.add_flag("--supports-metrics,!--no-supports-metrics", o.supports_metrics);
  app.add_flag("--fs-group,!--no-fs-group", o.fs_group);
  app.add_flag("--requires-fs-resize,!--no-requires-fs-resize", o.requires_fs_resize);
  app.add_option("--timeout", o.timeout_default_seconds, "seconds flexexec waits for the bridge")
      ->capture_default_str();
  app.add_option("--isattached-timeout", o.timeout_isattached_seconds)->capture_default_str();
  app.add_option("--waitforattach-timeout", o.timeout_waitforattach_seconds)->capture_default_str();
  bool no_verify = false;
  app.add_flag("--no-verify", no_verify, "do not run the installed executable's init");
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;
  o.verify = !no_verify;

  o.flexexec_source = flexexec.empty() ? DefaultFlexexecSource("/proc/self/exe") : flexexec;
  if (o.driver.empty() && config_path.empty()) {
    err << "install-driver: --driver is required (or --config to install every configured "
           "driver)\n";
    return 2;
  }

  std::vector<InstallDriverOptions> installs;
  if (config_path.empty()) {
    installs.push_back(o);
  } else {
    auto config = BridgeConfig::LoadFile(config_path);
    if (!config.ok()) {
      err << "install-driver: " << config.status().message() << "\n";
      return 1;
    }
    // Explicit flags win; the file fills in what was not given.
    if (socket->count() == 0) o.bridge_socket = config->socket;
    if (!o.driver.empty()) {
      if (const DriverConfig* d = config->FindDriver(o.driver)) {
        if (attach->count() == 0) o.attach = d->attach;
      } else {
        err << "install-driver: warning: " << config_path << " configures no driver " << o.driver
            << "; the bridge will answer its calls with a Failure\n";
      }
      installs.push_back(o);
    } else {
      if (config->drivers.empty()) {
        err << "install-driver: " << config_path << " configures no drivers\n";
        return 1;
      }
      for (const auto& d : config->drivers) {
        InstallDriverOptions one = o;
        one.driver = d.flex_driver;
        if (attach->count() == 0) one.attach = d.attach;
        installs.push_back(one);
      }
    }
  }

  for (const auto& one : installs) {
    auto report = InstallDriver(one);
    if (!report.ok()) {
      err << "install-driver: " << one.driver << ": " << report.status().ToString() << "\n";
      return 1;
    }
    PrintReport(*report, out);
    if (!report->init_reply.empty()) out << "init: " << report->init_reply;
    if (!report->init_reply.empty() && report->init_reply.back() != '\n') out << "\n";
  }
  return 0;
}

namespace {

// The cluster side of uninstalling: the CSI driver's registration on this node (node_registrar.h),
// which the bridge wrote and which only this explicit step removes. Needs the bridge
// configuration (which CSI driver the FlexVolume driver maps to, the node and the cluster access).
int UnregisterFromNode(const std::string& config_path, const std::string& flex_driver,
                       const std::string& node_name, const std::string& kubeconfig,
                       std::ostream& out, std::ostream& err) {
  auto config = BridgeConfig::LoadFile(config_path);
  if (!config.ok()) {
    err << "uninstall-driver: " << config.status().ToString() << "\n";
    return 1;
  }
  const DriverConfig* driver = config->FindDriver(flex_driver);
  if (driver == nullptr) {
    out << "registration: " << config_path << " configures no driver " << flex_driver
        << "; nothing to unregister\n";
    return 0;
  }
  const std::string csi_driver = driver->CsiDriver();
  for (const auto& other : config->drivers) {
    if (other.flex_driver != flex_driver && other.CsiDriver() == csi_driver) {
      out << "registration: CSI driver " << csi_driver << " kept on the node: " << other.flex_driver
          << " still uses it\n";
      return 0;
    }
  }
  if (!node_name.empty()) config->node_name = node_name;
  if (!kubeconfig.empty()) config->kubeconfig = kubeconfig;
  config->register_drivers = true;
  RegistrationAccess access = ResolveRegistrationAccess(*config);
  if (!access.client) {
    out << "registration: left in place (" << access.why_not << ")\n";
    return 0;
  }
  Status removed = UnregisterDriverFromNode(*access.client, access.node_name, csi_driver);
  if (!removed.ok()) {
    err << "uninstall-driver: cannot unregister CSI driver " << csi_driver << " from node "
        << access.node_name << ": " << removed.ToString() << "\n";
    return 1;
  }
  out << "registration: CSI driver " << csi_driver << " removed from node " << access.node_name
      << " (CSINode entry, node-id annotation, its own topology labels)\n";
  return 0;
}

}  // namespace

int RunUninstallDriverCommand(const std::vector<std::string>& args, std::ostream& out,
                              std::ostream& err) {
  std::string driver;
  std::string plugin_dir = kDefaultFlexPluginDir;
  std::string config_path, node_name, kubeconfig;
  CLI::App app("Remove a FlexVolume driver installed by install-driver",
               "flexcsi uninstall-driver");
  AddCommonFlags(app, &driver, &plugin_dir, /*driver_optional=*/false);
  app.add_option("--config", config_path,
                 "bridge configuration: also remove the CSI driver's registration on this node "
                 "(stop the bridge or drop the driver from it first, or it registers it again)");
  app.add_option("--node-name", node_name, "this node (default: nodeName, else $NODE_NAME)");
  app.add_option("--kubeconfig", kubeconfig,
                 "cluster access (default: the configuration's, else in-cluster)");
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;
  auto report = UninstallDriver(driver, plugin_dir);
  if (!report.ok()) {
    err << "uninstall-driver: " << report.status().ToString() << "\n";
    return 1;
  }
  PrintReport(*report, out);
  if (config_path.empty()) return 0;
  return UnregisterFromNode(config_path, driver, node_name, kubeconfig, out, err);
}

}  // namespace flexcsi
