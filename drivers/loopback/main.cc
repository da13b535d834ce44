// csi-loopback: a complete CSI driver (controller and node in one process) whose volumes are
// sparse files under --state-dir attached through loop devices. flexcsi's bundled driver for
// demos and end-to-end tests of the bridge.
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/version.h"
#include "common/volume_locks.h"
#include "drivers/loopback/controller_server.h"
#include "drivers/loopback/driver_options.h"
#include "drivers/loopback/identity_server.h"
#include "drivers/loopback/node_server.h"
#include "drivers/loopback/volume_state.h"

namespace flexcsi {
namespace loopback {
namespace {

// "unix:///run/csi.sock" and "unix:/run/csi.sock" -> "/run/csi.sock"; "" when not a unix URL.
std::string SocketPathOf(const std::string& endpoint) {
  const std::string scheme = "unix:";
  if (endpoint.rfind(scheme, 0) != 0) return "";
  std::string path = endpoint.substr(scheme.size());
  if (path.rfind("//", 0) == 0) path = path.substr(2);
  return path;
}

// A socket left by a previous run makes bind() fail; anything else at that path is not ours.
// Makes the socket's directory (a DaemonSet that mounts all of the kubelet root, as
// deploy/kubernetes does, has no hostPath that creates plugins/<driver>/ for us) and removes a
// socket left by a previous run.
Status PrepareSocketPath(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  if (error) {
    return Internal("cannot create the directory of socket " + path + ": " + error.message());
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPrecondition(path + " exists and is not a socket; refusing to remove it");
  }
  if (::unlink(path.c_str()) != 0) {
    return Internal("cannot remove stale socket " + path + ": " + strerror(errno));
  }
  spdlog::info("removed stale socket {}", path);
  return Status::Ok();
}

int Run(int argc, char** argv) {
  DriverOptions options;
  options.vendor_version = FlexcsiVersion();
  std::vector<std::string> endpoints;
  bool no_stage = false;
  bool no_attach = false;
  bool no_expand = false;
  bool no_volume_mount_group = false;
  std::string log_level = "info";

  CLI::App app{"csi-loopback: CSI driver backed by sparse files on loop devices"};
  app.set_version_flag("--version", VersionLine("csi-loopback"));
  // Repeatable: one process, one state, several sockets (e.g. the CO's controller socket and
  // kubelet's plugin socket), because a volume is known only to the state that created it.
  app.add_option("--endpoint", endpoints, "unix:///path/to/csi.sock (repeatable)")->required();
  app.add_option("--nodeid", options.node_id, "this node's id")->required();
  app.add_option("--state-dir", options.state_dir, "absolute directory for volumes and state")
      ->required();
  app.add_option("--driver-name", options.driver_name, "CSI driver name")
      ->default_val(kDefaultDriverName);
  // Driver shapes found in the wild, so that COs (and flexcsi's bridge) are tested against more
  // than one: see README.md "Driver shapes".
  app.add_flag("--no-stage-unstage", no_stage,
               "do not offer STAGE_UNSTAGE_VOLUME: NodePublish attaches, formats and mounts");
  app.add_flag("--stage-without-mount", options.stage_without_mount,
               "NodeStage attaches and records only, nothing is mounted at the staging path; "
               "NodePublish mounts the device at each target (csi-driver-host-path's shape)");
  app.add_flag("--no-attach", no_attach, "do not offer PUBLISH_UNPUBLISH_VOLUME");
  app.add_flag("--no-expand", no_expand, "do not offer volume expansion");
  app.add_flag("--no-volume-mount-group", no_volume_mount_group,
               "do not offer VOLUME_MOUNT_GROUP; a volume_mount_group sent anyway is "
               "INVALID_ARGUMENT");
  app.add_option("--extra-node-id", options.extra_node_ids,
                 "further node ids ControllerPublishVolume accepts (repeatable)");
  app.add_option("--shared-store", options.shared_store,
                 "imitate network block storage: backing files and volume records in this "
                 "directory, shared by the csi-loopback of every node (see README)");
  app.add_option("--max-volumes-per-node", options.max_volumes_per_node,
                 "reported in NodeGetInfo and enforced by ControllerPublishVolume (0 = no limit)")
      ->default_val(64);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->default_val("info");
  CLI11_PARSE(app, argc, argv);
  options.stage_unstage = !no_stage;
  options.controller_attach = !no_attach;
  options.expand = !no_expand;
  options.volume_mount_group = !no_volume_mount_group;

  spdlog::set_default_logger(spdlog::stderr_color_mt("csi-loopback"));
  spdlog::set_level(spdlog::level::from_str(log_level));

  // Limits from the CSI spec: a longer name or node id would be refused by the CO later, far
  // from the cause.
  if (options.driver_name.empty() || options.driver_name.size() > 63) {
    spdlog::error("--driver-name must be 1 to 63 characters");
    return 2;
  }
  if (options.node_id.empty() || options.node_id.size() > 256) {
    spdlog::error("--nodeid must be 1 to 256 bytes");
    return 2;
  }
  if (options.stage_without_mount && !options.stage_unstage) {
    spdlog::error("--stage-without-mount and --no-stage-unstage exclude each other");
    return 2;
  }
  if (options.max_volumes_per_node < 0) {
    spdlog::error("--max-volumes-per-node must not be negative");
    return 2;
  }

  std::vector<std::string> socket_paths;
  for (const std::string& endpoint : endpoints) {
    socket_paths.push_back(SocketPathOf(endpoint));
    if (socket_paths.back().empty()) {
      spdlog::error("--endpoint must be a unix:// URL, got '{}'", endpoint);
      return 2;
    }
  }

  // SIGTERM/SIGINT are taken by a dedicated thread via sigwait; block them before gRPC starts
  // its threads so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  StatusOr<std::unique_ptr<VolumeState>> state = VolumeState::Open(options.state_dir);
  if (!state.ok()) {
    spdlog::error("cannot load state: {}", state.status().ToString());
    return 1;
  }
  // With --shared-store, volume records and backing files come from the store all nodes share;
  // the state dir keeps only this node's own records.
  std::unique_ptr<VolumeState> shared_store;
  if (options.shared()) {
    StatusOr<std::unique_ptr<VolumeState>> opened = VolumeState::OpenShared(options.shared_store);
    if (!opened.ok()) {
      spdlog::error("cannot open shared store: {}", opened.status().ToString());
      return 1;
    }
    shared_store = std::move(*opened);
  }
  VolumeState* catalog = shared_store ? shared_store.get() : state->get();
  for (const std::string& socket_path : socket_paths) {
    Status prepared = PrepareSocketPath(socket_path);
    if (!prepared.ok()) {
      spdlog::error("{}", prepared.ToString());
      return 1;
    }
  }

  VolumeLocks locks;
  IdentityServer identity(options, catalog);
  ControllerServer controller(options, catalog, &locks);
  NodeServer node(options, catalog, state->get(), &locks);

  grpc::ServerBuilder builder;
  for (const std::string& socket_path : socket_paths) {
    builder.AddListeningPort("unix://" + socket_path, grpc::InsecureServerCredentials());
  }
  builder.RegisterService(&identity);
  builder.RegisterService(&controller);
  builder.RegisterService(&node);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    spdlog::error("cannot listen on {}", fmt::join(endpoints, ", "));
    return 1;
  }
  spdlog::info(
      "{} {} serving on {} (node {}, state {}, stage={}, stage_mounts={}, attach={}, expand={}, "
      "volume_mount_group={}, shared_store={})",
      options.driver_name, options.vendor_version, fmt::join(endpoints, ", "), options.node_id,
      options.state_dir, options.stage_unstage,
      options.stage_unstage && !options.stage_without_mount, options.controller_attach,
      options.expand, options.volume_mount_group, options.shared() ? options.shared_store : "none");

  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    spdlog::info("received signal {}, shutting down", signal_number);
    // Work in flight on a volume (it holds the volume's lock) gets a few seconds to finish;
    // mounts and devices stay as they are. Then the answers get a moment to go out, and the
    // server stops: a longer gRPC shutdown deadline would be spent waiting for idle client
    // connections (the bridge keeps one open), which a client does not close by itself. A call
    // cut off by the deadline still runs to its end, and CSI callers retry.
    const auto grace_end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (locks.HeldCount() > 0 && std::chrono::steady_clock::now() < grace_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(250));
  });
  server->Wait();
  stopper.join();
  for (const std::string& socket_path : socket_paths) ::unlink(socket_path.c_str());
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace loopback
}  // namespace flexcsi

int main(int argc, char** argv) { return flexcsi::loopback::Run(argc, argv); }
