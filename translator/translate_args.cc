#include "translator/translate_args.h"

#include <map>

#include "translator/go_strings.h"
#include "translator/json_fields.h"

namespace flexcsi {
namespace translator {
namespace command {

extern const char kUsage[] =
    "usage: flexcsi translate to-csi pv [FILE...] [--rules FILE] [-o yaml|json] [--compact]\n"
    "       flexcsi translate to-csi inline --pod-namespace NS [FILE...] [--rules FILE]\n"
    "       flexcsi translate to-csi storageclass --plugin kubernetes.io/<x> [FILE...]\n"
    "       flexcsi translate to-intree pv [FILE...] [--rules FILE] [-o yaml|json]\n"
    "       flexcsi translate repair-handle --driver D --handle H --node-id N [--rules FILE]\n"
    "       flexcsi translate names [--plugin P | --driver D] [--rules FILE]\n";

Status ParseArgs(const std::vector<std::string>& args, Options* opts) {
  size_t i = 0;
  auto word = [&](size_t k) { return k < args.size() ? args[k] : std::string(); };
  std::string verb = word(0), noun = word(1);
  if (verb == "to-csi" && noun == "pv") {
    opts->verb = Verb::kPVToCsi;
    i = 2;
  } else if (verb == "to-csi" && noun == "inline") {
    opts->verb = Verb::kInlineToCsi;
    i = 2;
  } else if (verb == "to-csi" && noun == "storageclass") {
    opts->verb = Verb::kStorageClassToCsi;
    i = 2;
  } else if (verb == "to-intree" && noun == "pv") {
    opts->verb = Verb::kPVToInTree;
    i = 2;
  } else if (verb == "repair-handle") {
    opts->verb = Verb::kRepairHandle;
    i = 1;
  } else if (verb == "names") {
    opts->verb = Verb::kNames;
    i = 1;
  } else if (verb.empty()) {
    return InvalidArgument("missing command");
  } else {
    return InvalidArgument("unknown command: " + GoJoin(args, " "));
  }
  const std::map<std::string, std::optional<std::string>*> valued = {
      {"--pod-namespace", &opts->pod_namespace},
      {"--plugin", &opts->plugin},
      {"--driver", &opts->driver},
      {"--handle", &opts->handle},
      {"--node-id", &opts->node_id}};
  for (; i < args.size(); ++i) {
    std::string arg = args[i], value;
    bool has_inline_value = false;
    size_t eq = arg.find('=');
    if (StartsWith(arg, "--") && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline_value = true;
    }
    auto take_value = [&](std::string* out) -> Status {
      if (has_inline_value) {
        *out = value;
        return Status::Ok();
      }
      if (i + 1 >= args.size()) return InvalidArgument("flag " + arg + " needs a value");
      *out = args[++i];
      return Status::Ok();
    };
    if (arg == "--rules") {
      FLEXCSI_RETURN_IF_ERROR(take_value(&opts->rules_file));
    } else if (arg == "-o" || arg == "--output") {
      FLEXCSI_RETURN_IF_ERROR(take_value(&opts->output));
      if (opts->output != "yaml" && opts->output != "json") {
        return InvalidArgument("unknown output format " + GoQuote(opts->output) +
                               " (want yaml or json)");
      }
    } else if (arg == "--compact") {
      opts->compact = true;
    } else if (arg == "-f" || arg == "--filename") {
      std::string file;
      FLEXCSI_RETURN_IF_ERROR(take_value(&file));
      opts->files.push_back(file);
    } else if (valued.count(arg) != 0) {
      std::string v;
      FLEXCSI_RETURN_IF_ERROR(take_value(&v));
      *valued.at(arg) = v;
    } else if (arg == "-" || !StartsWith(arg, "-")) {
      opts->files.push_back(arg);
    } else {
      return InvalidArgument("unknown flag " + arg);
    }
  }
  if (opts->compact && opts->output == "yaml") {
    return InvalidArgument("--compact writes JSON; it does not go with -o yaml");
  }
  if (opts->verb == Verb::kRepairHandle) {
    if (!opts->driver || !opts->handle || !opts->node_id) {
      return InvalidArgument("repair-handle needs --driver, --handle and --node-id");
    }
  }
  return Status::Ok();
}

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
