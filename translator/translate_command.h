// `flexcsi translate`: the command-line face of the translator.
//
//   flexcsi translate to-csi pv                  [FILE...] [--rules FILE] [-o yaml|json] [--compact]
//   flexcsi translate to-csi inline --pod-namespace NS   [FILE...] [--rules FILE] [-o ...]
//   flexcsi translate to-csi storageclass --plugin kubernetes.io/<x> [FILE...] [-o ...]
//   flexcsi translate to-intree pv               [FILE...] [--rules FILE] [-o ...]
//   flexcsi translate repair-handle --driver D --handle H --node-id N [--rules FILE]
//   flexcsi translate names [--plugin P | --driver D] [--rules FILE]
//
// Input is read from the files, or from stdin when there are none (or "-"): one object, a
// List / PersistentVolumeList (any kind ending in "List" with items), or a multi-document YAML
// stream. JSON input gives JSON output and YAML input YAML output unless -o says otherwise;
// the output has the shape of the input. --compact writes JSON without whitespace.
//
// Lists are streamed, item by item, in bounded memory (translator/README.md, "Streaming").
//
// Exit status: 0 on success. 1 on error: the message is on `err` and nothing is written to
// `out`. For a list or several documents, objects that can be translated are, each one that
// cannot is reported on `err` with its reason and left out of the output, a summary
// (translated, unchanged, failed, by plugin) is written to `err`, and the status is 2 when
// anything failed.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace flexcsi {
namespace translator {

// `args` is everything after "flexcsi translate". Shows progress on stderr for large inputs
// when `err` is std::cerr and stderr is a terminal.
int RunTranslateCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                        std::ostream& err);

}  // namespace translator
}  // namespace flexcsi
