// `flexcsi translate`'s command line: the verb and its options (translate_command.h has the
// synopsis). Internal to translate_command.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {
namespace translator {
namespace command {

// The usage lines printed by --help and after a command-line error.
extern const char kUsage[];

enum class Verb { kPVToCsi, kInlineToCsi, kStorageClassToCsi, kPVToInTree, kRepairHandle, kNames };

struct Options {
  Verb verb = Verb::kPVToCsi;
  std::vector<std::string> files;
  std::string rules_file;
  std::string output;    // "", "yaml" or "json"
  bool compact = false;  // JSON on one line
  std::optional<std::string> pod_namespace, plugin, driver, handle, node_id;
};

// `args`: the words after "flexcsi translate". A usage error names what is wrong.
Status ParseArgs(const std::vector<std::string>& args, Options* opts);

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
