// Glue between CLI11 and the subcommand entry points, which take their words as a vector and
// write to caller-given streams (so tests can run them in-process). Shared by the `flexcsi`
// subcommands in cli/ and by `flexcsi migrate` in migrate/, which cli/ links: it lives here, below
// both, so that no folder includes from one above it. Header-only; users link CLI11::CLI11.
#pragma once

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace flexcsi {

// Parses `args` (the words after the subcommand) into `app`. Returns -1 when the caller should
// go on; otherwise the exit status to return at once (0 after --help, 2 on a usage error),
// having printed help or the error.
inline int ParseSubcommandArgs(CLI::App& app, std::vector<std::string> args, std::ostream& out,
                               std::ostream& err) {
  std::reverse(args.begin(), args.end());  // CLI11 consumes the vector from its back
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    err << app.get_name() << ": " << e.what() << "\n"
        << "Run '" << app.get_name() << " --help' for usage.\n";
    return 2;
  }
  return -1;
}

}  // namespace flexcsi
