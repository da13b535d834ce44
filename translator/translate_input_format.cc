#include "translator/translate_input_format.h"

#include <fstream>

namespace flexcsi {
namespace translator {
namespace command {

// The first non-blank byte of `input`, or -1 when there is none.
int FirstNonBlank(InputBuffer& input) {
  size_t i = 0;
  for (;;) {
    for (; i < input.size(); ++i) {
      const char c = input.window()[i];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      return static_cast<unsigned char>(c);
    }
    if (!input.Fill(i + 1)) return -1;
  }
}

bool StartsLikeJson(InputBuffer& input) {
  const int c = FirstNonBlank(input);
  return c == '{' || c == '[';
}

// Reads all of `input` (what is in the window and the rest) as text.
std::string AllText(InputBuffer& input) {
  while (input.Fill(input.end() + 1)) {
  }
  return std::string(input.window(), input.size());
}

// Decides the output format before anything is read but the first bytes of each input: JSON
// output needs every input to be JSON. Notes which inputs have anything in them. A file that
// cannot be opened is an error now, before any output.
StatusOr<OutputFormat> ChooseFormat(const Options& opts, InputBuffer& stdin_input,
                                    std::vector<bool>* has_content) {
  bool all_json = true, stdin_seen = false;
  for (const std::string& file : opts.files) {
    int first = -1;
    if (file == "-") {
      // A second "-" finds stdin already read: an empty text, which is not JSON.
      if (!stdin_seen) first = FirstNonBlank(stdin_input);
      stdin_seen = true;
    } else {
      std::ifstream stream(file, std::ios::binary);
      if (!stream) return NotFound("cannot open " + file);
      InputBuffer peek(stream);
      first = FirstNonBlank(peek);
    }
    has_content->push_back(first != -1);
    all_json = all_json && (first == '{' || first == '[');
  }
  if (opts.compact) return OutputFormat::kJsonCompact;
  if (opts.output == "yaml") return OutputFormat::kYaml;
  if (opts.output == "json") return OutputFormat::kJson;
  return all_json ? OutputFormat::kJson : OutputFormat::kYaml;
}

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
