#include "cli/state_command.h"

#include <cctype>
#include <chrono>
#include <ctime>
#include <ostream>

#include <CLI/CLI.hpp>

#include "bridge/bridge_config.h"
#include "common/bridge_client.h"
#include "common/subcommand_args.h"
#include "common/text_table.h"

namespace flexcsi {

namespace {

// A row field by its database column name; accepts the camelCase spelling too, so the table
// does not depend on which of the two the bridge chose for its JSON.
std::string Field(const nlohmann::json& row, const std::string& column) {
  std::string camel;
  for (size_t i = 0; i < column.size(); ++i) {
    if (column[i] == '_' && i + 1 < column.size()) {
      camel += static_cast<char>(std::toupper(static_cast<unsigned char>(column[++i])));
    } else {
      camel += column[i];
    }
  }
  const nlohmann::json* v = nullptr;
  if (row.contains(column))
    v = &row[column];
  else if (row.contains(camel))
    v = &row[camel];
  if (v == nullptr || v->is_null()) return "";
  if (v->is_string()) return v->get<std::string>();
  if (column == "updated_at" && v->is_number_integer()) {  // unix seconds
    const std::time_t t = v->get<std::time_t>();
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
  }
  return v->dump();
}

void PrintSection(const nlohmann::json& reply, const std::string& name,
                  const std::vector<std::pair<std::string, std::string>>& columns,
                  std::ostream& out) {
  std::vector<std::string> header;
  for (const auto& c : columns) header.push_back(c.second);
  TextTable table(header);
  if (reply.contains(name) && reply[name].is_array()) {
    for (const auto& row : reply[name]) {
      std::vector<std::string> cells;
      for (const auto& c : columns) cells.push_back(Field(row, c.first));
      table.AddRow(cells);
    }
  }
  out << name << " (" << table.rows() << ")\n";
  if (table.rows() > 0) table.Print(out);
  out << "\n";
}

}  // namespace

void PrintStateTables(const nlohmann::json& reply, std::ostream& out) {
  PrintSection(reply, "attachments",
               {{"flex_driver", "DRIVER"},
                {"volume_name", "VOLUME"},
                {"node_name", "NODE"},
                {"volume_id", "VOLUME ID"},
                {"node_id", "CSI NODE"},
                {"state", "STATE"},
                {"updated_at", "UPDATED"}},
               out);
  PrintSection(reply, "stagings",
               {{"staging_path", "STAGING PATH"},
                {"flex_driver", "DRIVER"},
                {"volume_id", "VOLUME ID"},
                {"owner", "OWNER"},
                {"shape", "SHAPE"},
                {"state", "STATE"},
                {"updated_at", "UPDATED"}},
               out);
  PrintSection(reply, "publications",
               {{"target_path", "TARGET PATH"},
                {"flex_driver", "DRIVER"},
                {"volume_id", "VOLUME ID"},
                {"pod_uid", "POD"},
                {"readonly", "RO"},
                {"state", "STATE"},
                {"updated_at", "UPDATED"}},
               out);
}

int RunStateCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string config_path = kDefaultBridgeConfigPath;
  std::string socket;
  std::string output = "table";
  CLI::App app("Show the bridge's attachment, staging and publication records", "flexcsi state");
  app.add_option("--config", config_path, "bridge configuration (for the socket path)")
      ->capture_default_str();
  app.add_option("--socket", socket, "bridge socket (overrides the configuration)");
  app.add_option("-o,--output", output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  if (int rc = ParseSubcommandArgs(app, args, out, err); rc >= 0) return rc;

  if (socket.empty()) {
    auto config = BridgeConfig::LoadFile(config_path);
    socket = config.ok() ? config->socket : kDefaultBridgeSocket;
  }
  BridgeRequest request;
  request.call = "bridge.state";
  request.timeout_ms = 10000;
  auto envelope = CallBridgeRaw(socket, request, std::chrono::seconds(2), std::chrono::seconds(10));
  if (!envelope.ok()) {
    err << "state: cannot ask the bridge at " << socket << ": " << envelope.status().ToString()
        << "\n";
    return 1;
  }
  const nlohmann::json reply = envelope->value("reply", nlohmann::json::object());
  if (reply.value("status", "") != "Success") {
    err << "state: the bridge answered " << reply.dump() << "\n";
    return 1;
  }
  if (output == "json") {
    out << reply.dump(2) << "\n";
  } else {
    PrintStateTables(reply, out);
  }
  return 0;
}

}  // namespace flexcsi
