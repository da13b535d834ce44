// flexcsi: the operator's command. The first word picks the subcommand; each subcommand parses
// its own flags (CLI11) and writes to stdout/stderr, so each is testable in-process.
#include <iostream>
#include <string>
#include <vector>

#include "cli/doctor_command.h"
#include "cli/install_driver_command.h"
#include "cli/snapshot_command.h"
#include "cli/state_command.h"
#include "cli/volume_command.h"
#include "common/version.h"
#ifdef FLEXCSI_HAVE_TRANSLATOR
#include "translator/translate_command.h"
#endif
#ifdef FLEXCSI_HAVE_MIGRATE
#include "migrate/migrate_command.h"
#endif

namespace {

constexpr const char* kUsage =
    "usage: flexcsi COMMAND [flags]\n"
    "\n"
    "commands:\n"
    "  install-driver    put a bridge-backed FlexVolume driver into a plugin directory\n"
    "  uninstall-driver  remove it again\n"
    "  doctor            check this node end to end, with a fix for every failure\n"
    "  state             show the bridge's attachment/staging/publication records\n"
    "  translate         translate FlexVolume specs to CSI (PV/StorageClass migration)\n"
    "  migrate           move in-tree/FlexVolume PVs to CSI on a live cluster (plan, apply,\n"
    "                    rollback, status)\n"
    "  volume            create or delete a volume on a CSI driver (for static FlexVolume PVs)\n"
    "  snapshot          create, list or delete CSI snapshots of FlexVolume PVs\n"
    "  version           print the version\n"
    "\n"
    "Run 'flexcsi COMMAND --help' for a command's flags.\n";

// kubectl runs an installed `kubectl-flexcsi` with the words after `kubectl flexcsi`, so one
// dispatch serves both names; only the usage line says how it was called.
std::string Usage(const char* argv0) {
  std::string usage = kUsage;
  const std::string self = argv0 != nullptr ? argv0 : "";
  const std::string plugin = "kubectl-flexcsi";
  if (self.size() >= plugin.size() &&
      self.compare(self.size() - plugin.size(), plugin.size(), plugin) == 0) {
    usage.replace(usage.find("flexcsi COMMAND"), 7, "kubectl flexcsi");
  }
  return usage;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << Usage(argv[0]);
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "install-driver")
    return flexcsi::RunInstallDriverCommand(args, std::cout, std::cerr);
  if (command == "uninstall-driver") {
    return flexcsi::RunUninstallDriverCommand(args, std::cout, std::cerr);
  }
  if (command == "doctor") return flexcsi::RunDoctorCommand(args, std::cout, std::cerr);
  if (command == "state") return flexcsi::RunStateCommand(args, std::cout, std::cerr);
  if (command == "volume") return flexcsi::RunVolumeCommand(args, std::cout, std::cerr);
  if (command == "snapshot") {
    return flexcsi::RunSnapshotCommand(args, std::cin, std::cout, std::cerr);
  }
  if (command == "translate") {
#ifdef FLEXCSI_HAVE_TRANSLATOR
    return flexcsi::translator::RunTranslateCommand(args, std::cin, std::cout, std::cerr);
#else
    std::cerr << "flexcsi: this build has no translator (built without translator/)\n";
    return 1;
#endif
  }
  if (command == "migrate") {
#ifdef FLEXCSI_HAVE_MIGRATE
    return flexcsi::migrate::RunMigrateCommand(args, std::cin, std::cout, std::cerr);
#else
    std::cerr << "flexcsi: this build has no migrate (built without migrate/ or kube/)\n";
    return 1;
#endif
  }
  if (command == "version" || command == "--version") {
    std::cout << flexcsi::VersionLine("flexcsi") << "\n";
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << Usage(argv[0]);
    return 0;
  }
  std::cerr << "flexcsi: unknown command \"" << command << "\"\n\n" << Usage(argv[0]);
  return 2;
}
