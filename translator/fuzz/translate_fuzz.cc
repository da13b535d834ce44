// libFuzzer target for the translator's untrusted-input entry points: JSON and YAML parsing,
// every Translator operation, FlexVolume rules parsing and the mapping the bridge uses, and the
// YAML writer (which must write text that reads back, and what yaml-cpp's emitter wrote
// wherever that did: tests/support/yaml_emitter_oracle.h). The first input byte picks the
// operation, the rest is the document. Any crash, sanitizer report or escaped exception is a bug:
// all of these must return a Status. The PV translation also runs over simdjson's parse of the same
// text, which must give exactly what nlohmann's gives (json_view.h), also as the text written from
// the view; a difference aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <simdjson.h>

#include "common/yaml_json.h"
#include "tests/support/yaml_emitter_oracle.h"
#include "translator/flexvolume_rules.h"
#include "translator/json_text_writer.h"
#include "translator/translator.h"

namespace {

using flexcsi::translator::JsonView;
using flexcsi::translator::SpecChanges;
using flexcsi::translator::Translator;
using nlohmann::json;

const char kRules[] =
    "{\"flexVolumeRules\":["
    "{\"flexDriver\":\"acme/"
    "lvm\",\"csiDriver\":\"lvm.csi.acme.io\",\"volumeHandle\":{\"fromOption\":"
    "\"volumeID\"},\"attributes\":{\"rename\":{\"vg\":\"volumeGroup\"},\"static\":{\"m\":\"f\"}}},"
    "{\"flexDriver\":\"acme/t\",\"csiDriver\":\"t.acme.io\",\"volumeHandle\":{\"template\":"
    "\"${a}/${b}$$\"}}]}";

const Translator& SharedTranslator() {
  static const Translator* translator = [] {
    auto rules = flexcsi::translator::ParseFlexVolumeRulesText(kRules);
    return new Translator(rules.ok() ? *rules : flexcsi::translator::FlexVolumeRules());
  }();
  return *translator;
}

std::vector<json> ParseDocuments(const std::string& text) {
  if (flexcsi::LooksLikeJson(text)) {
    auto doc = flexcsi::ParseJsonText(text);
    if (!doc.ok()) return {};
    return {*doc};
  }
  auto docs = flexcsi::ParseYamlDocuments(text);
  return docs.ok() ? *docs : std::vector<json>();
}

// "ok <the CSI PV>" or the error, for comparing the two parsers' translations.
std::string Outcome(const json& pv, const flexcsi::StatusOr<SpecChanges>& changes) {
  if (!changes.ok()) return changes.status().ToString();
  json csi = pv;
  changes->ApplyTo(csi);
  // A translation may cut a string inside a UTF-8 sequence, as Go's does; both writers then
  // put U+FFFD where the bad bytes were, as Go's encoder does.
  return "ok " + csi.dump(-1, ' ', false, json::error_handler_t::replace);
}

// `doc` is nlohmann's parse of `text`. When simdjson takes `text` too (it refuses integers
// beyond 64 bits, which nlohmann makes floats), the PV translation of its view must be the
// translation of `doc`, to the byte.
void CheckSimdjsonParity(const Translator& t, const std::string& text, const json& doc) {
  static simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text).get(root) != simdjson::SUCCESS) return;
  const JsonView view = JsonView::Of(root);
  flexcsi::StatusOr<SpecChanges> changes = t.TranslateInTreePVToCSIChanges(view);
  std::string simd = Outcome(doc, changes);
  const std::string nl = Outcome(doc, t.TranslateInTreePVToCSIChanges(doc));
  if (changes.ok() && simd == nl) {
    // `flexcsi translate` writes the CSI PV straight from the view and the changes.
    simd = "ok ";
    AppendTranslatedPVText(view, *changes, flexcsi::translator::JsonStyle::kCompact, 0, &simd);
  }
  if (simd == nl) return;
  fprintf(stderr, "simdjson and nlohmann translate differently\nsimdjson: %s\nnlohmann: %s\n",
          simd.c_str(), nl.c_str());
  abort();
}

const char* const kPlugins[] = {"kubernetes.io/aws-ebs",         "kubernetes.io/gce-pd",
                                "kubernetes.io/azure-disk",      "kubernetes.io/azure-file",
                                "kubernetes.io/cinder",          "kubernetes.io/vsphere-volume",
                                "kubernetes.io/portworx-volume", "kubernetes.io/rbd"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const Translator& t = SharedTranslator();

  if (selector % 8 == 7) {
    // Rules text, then the bridge mapping with the remaining bytes as option values.
    auto rules = flexcsi::translator::ParseFlexVolumeRulesText(text);
    if (rules.ok()) {
      for (const auto& rule : rules->rules()) {
        (void)flexcsi::translator::MapFlexVolumeCallToCsi(
            *rules, rule.flex_driver, {{"volumeID", text.substr(0, 8)}, {"a", "x"}, {"b", text}});
      }
    }
    return 0;
  }
  for (json& doc : ParseDocuments(text)) {
    if (std::string problem = flexcsi::yaml_oracle::JsonToYamlProblem(doc); !problem.empty()) {
      fprintf(stderr, "%s for %s\n", problem.c_str(),
              doc.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
      abort();
    }
    switch (selector % 8) {
      case 0:
        (void)t.TranslateInTreePVToCSI(doc);
        if (flexcsi::LooksLikeJson(text)) CheckSimdjsonParity(t, text, doc);
        break;
      case 1:
        (void)t.TranslateCSIPVToInTree(doc);
        break;
      case 2:
        (void)t.TranslateInTreeInlineVolumeToCSI(doc, selector & 0x80 ? "" : "ns");
        break;
      case 3:
        (void)t.TranslateInTreeStorageClassToCSI(kPlugins[(selector >> 3) % 8], doc);
        break;
      case 4: {
        // Round trip: whatever translates must translate back without crashing.
        auto csi = t.TranslateInTreePVToCSI(doc);
        if (csi.ok()) (void)t.TranslateCSIPVToInTree(*csi);
        break;
      }
      case 5:
        (void)t.GetInTreePluginNameFromSpec(&doc, nullptr);
        (void)t.GetInTreePluginNameFromSpec(nullptr, &doc);
        (void)t.IsPVMigratable(doc);
        (void)t.IsInlineMigratable(doc);
        break;
      case 6:
        if (doc.is_object() && doc.size() >= 1 && doc.begin()->is_string()) {
          (void)t.RepairVolumeHandle("pd.csi.storage.gke.io", doc.begin()->get<std::string>(),
                                     doc.begin().key());
        }
        break;
    }
  }
  return 0;
}
