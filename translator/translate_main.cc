// flexcsi-translate: `flexcsi translate` as a stand-alone binary.
#include <iostream>
#include <string>
#include <vector>

#include "common/version.h"
#include "translator/translate_command.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << flexcsi::VersionLine("flexcsi-translate") << "\n";
    return 0;
  }
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  return flexcsi::translator::RunTranslateCommand(args, std::cin, std::cout, std::cerr);
}
