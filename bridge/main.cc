// flexcsi-bridge: serves FlexVolume calls from flexexec through a CSI driver.
//   flexcsi-bridge [--config FILE] [--log-level LEVEL]          serve until SIGTERM
//   flexcsi-bridge state [--config FILE]                        print the records as JSON
//   flexcsi-bridge --version                                    one line: version and commit
#include <csignal>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "bridge/bridge_daemon.h"
#include "common/version.h"

namespace {

int PrintState(const flexcsi::BridgeConfig& config) {
  auto store = flexcsi::StateStore::Open(config.state_database);
  if (!store.ok()) {
    std::cerr << "flexcsi-bridge: " << store.status().ToString() << "\n";
    return 1;
  }
  nlohmann::json out = {{"attachments", nlohmann::json::array()},
                        {"stagings", nlohmann::json::array()},
                        {"publications", nlohmann::json::array()}};
  auto attachments = (*store)->ListAttachments();
  auto stagings = (*store)->ListStagings();
  auto publications = (*store)->ListPublications();
  if (!attachments.ok() || !stagings.ok() || !publications.ok()) {
    std::cerr << "flexcsi-bridge: cannot read the state database\n";
    return 1;
  }
  for (const auto& r : *attachments) out["attachments"].push_back(flexcsi::StateStore::ToJson(r));
  for (const auto& r : *stagings) out["stagings"].push_back(flexcsi::StateStore::ToJson(r));
  for (const auto& r : *publications) {
    out["publications"].push_back(flexcsi::StateStore::ToJson(r));
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}

int Serve(flexcsi::BridgeConfig config) {
  // Block the stop signals before any thread starts, so every thread inherits the mask and
  // sigwait below is the only place they are taken.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The first line of every run, so that a log read after an upgrade says which bridge wrote it.
  spdlog::info("{} starting", flexcsi::VersionLine("flexcsi-bridge"));
  flexcsi::BridgeDaemon daemon(std::move(config));
  flexcsi::Status started = daemon.Start();
  if (!started.ok()) {
    spdlog::critical("cannot start: {}", started.ToString());
    return 1;
  }
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("signal {} received; finishing calls in flight and stopping", signal_number);
  daemon.Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flexcsi-bridge: serves FlexVolume calls through a CSI driver"};
  std::string config_path = flexcsi::kDefaultBridgeConfigPath;
  std::string log_level = "info";
  app.add_option("--config", config_path, "bridge configuration (YAML or JSON)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error");
  app.set_version_flag("--version", flexcsi::VersionLine("flexcsi-bridge"));
  auto* state = app.add_subcommand("state", "print the attachments, stagings and publications");
  state->add_option("--config", config_path, "bridge configuration (YAML or JSON)");
  CLI11_PARSE(app, argc, argv);

  auto logger = spdlog::stderr_color_mt("bridge");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %l %v");
  spdlog::set_level(spdlog::level::from_str(log_level));

  auto config = flexcsi::BridgeConfig::LoadFile(config_path);
  if (!config.ok()) {
    std::cerr << "flexcsi-bridge: " << config.status().ToString() << "\n";
    return 2;
  }
  if (*state) return PrintState(*config);
  return Serve(std::move(*config));
}
