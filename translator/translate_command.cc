#include "translator/translate_command.h"

#include <unistd.h>

#include <iostream>
#include <string>

#include "common/status.h"
#include "translator/translate_args.h"
#include "translator/translate_input_format.h"
#include "translator/translate_session.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace command {
namespace {

int Run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, bool progress) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")) {
    out << kUsage;
    return 0;
  }
  Options opts;
  Status parsed = ParseArgs(args, &opts);
  if (!parsed.ok()) {
    err << "error: " << parsed.message() << "\n" << kUsage;
    return 1;
  }
  FlexVolumeRules rules;
  if (!opts.rules_file.empty()) {
    StatusOr<FlexVolumeRules> loaded = LoadFlexVolumeRulesFile(opts.rules_file);
    if (!loaded.ok()) return Fail(err, loaded.status());
    for (const std::string& w : loaded->warnings()) err << "warning: " << w << "\n";
    rules = std::move(*loaded);
  }
  Translator translator(std::move(rules));
  const OutputFormat simple_format =
      opts.compact ? OutputFormat::kJsonCompact
                   : (opts.output == "yaml" ? OutputFormat::kYaml : OutputFormat::kJson);

  if (opts.verb == Verb::kRepairHandle) {
    StatusOr<std::string> handle =
        translator.RepairVolumeHandle(*opts.driver, *opts.handle, *opts.node_id);
    if (!handle.ok()) return Fail(err, handle.status());
    out << Render(Json{{"volumeHandle", *handle}}, simple_format);
    return 0;
  }
  if (opts.verb == Verb::kNames) {
    Json result;
    if (opts.plugin) {
      StatusOr<std::string> name = translator.GetCSINameFromInTreeName(*opts.plugin);
      if (!name.ok()) return Fail(err, name.status());
      result = Json{{"inTreePluginName", *opts.plugin}, {"csiDriverName", *name}};
    } else if (opts.driver) {
      StatusOr<std::string> name = translator.GetInTreeNameFromCSIName(*opts.driver);
      if (!name.ok()) return Fail(err, name.status());
      result = Json{{"inTreePluginName", *name}, {"csiDriverName", *opts.driver}};
    } else {
      result = Json::array();
      for (const auto& [in_tree, csi] : translator.BuiltInPluginNames()) {
        result.push_back(Json{{"inTreePluginName", in_tree}, {"csiDriverName", csi}});
      }
      for (const FlexVolumeRule& r : translator.flexvolume_rules().rules()) {
        result.push_back(Json{{"flexDriver", r.flex_driver}, {"csiDriverName", r.csi_driver}});
      }
    }
    out << Render(result, simple_format);
    return 0;
  }

  if (opts.files.empty()) opts.files.push_back("-");
  InputBuffer stdin_input(in);
  std::vector<bool> has_content;
  StatusOr<OutputFormat> chosen = ChooseFormat(opts, stdin_input, &has_content);
  if (!chosen.ok()) return Fail(err, chosen.status());
  const OutputFormat format = *chosen;
  bool retry_whole = false;
  // Held from the start so that, if a streamed list turns out not to be one, all of stdin can
  // be read again; released as soon as the output is.
  stdin_input.SetRetain(true);
  int status = TranslateInputs(opts, translator, stdin_input, nullptr, format, has_content, false,
                               out, err, progress, &retry_whole);
  if (!retry_whole) return status;
  std::string stdin_text;
  if (stdin_input.begin() == 0) stdin_text = AllText(stdin_input);
  return TranslateInputs(opts, translator, stdin_input, &stdin_text, format, has_content, true, out,
                         err, progress, nullptr);
}

}  // namespace
}  // namespace command

int RunTranslateCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                        std::ostream& err) {
  bool progress = &err == &std::cerr && isatty(STDERR_FILENO) == 1;
  try {
    return command::Run(args, in, out, err, progress);
  } catch (const std::exception& e) {
    // Nothing should get here; if something does, fail like any other error, not by crashing.
    err << "error: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace translator
}  // namespace flexcsi
