// flexcsi-migrate: `flexcsi migrate` as a binary of its own, for tests and for hosts that want
// the migration tool without the bridge (it needs neither gRPC nor a node).
#include <iostream>
#include <string>
#include <vector>

#include "common/version.h"
#include "migrate/migrate_command.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << flexcsi::VersionLine("flexcsi-migrate") << "\n";
    return 0;
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  return flexcsi::migrate::RunMigrateCommand(args, std::cin, std::cout, std::cerr);
}
