// `flexcsi state`: asks the running bridge for its records (`bridge.state`,
// bridge-interfaces.md section 1) and prints them as tables, or as the bridge's JSON (-o json).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flexcsi {

// Prints the attachments, stagings and publications of a `bridge.state` reply as tables.
void PrintStateTables(const nlohmann::json& reply, std::ostream& out);

// Exit status 0 when the bridge answered, 1 when it could not be asked, 2 on a usage error.
int RunStateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace flexcsi
