// flexcsi-migrate: `flexcsi migrate` as a binary of its own, for tests and for hosts that want
// the migration tool without the bridge (it needs neither gRPC nor a node).
#include <iostream>
#include <string>
#include <vector>

#include "migrate/migrate_command.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return flexcsi::migrate::RunMigrateCommand(args, std::cin, std::cout, std::cerr);
}
