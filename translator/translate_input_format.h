// What the inputs are, read from their first bytes before anything is translated: JSON or
// YAML, empty or not, and so the output format. Internal to translate_command.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "translator/input_buffer.h"
#include "translator/translate_args.h"
#include "translator/translate_output.h"

namespace flexcsi {
namespace translator {
namespace command {

// The first non-blank byte of `input`, or -1 when there is none.
int FirstNonBlank(InputBuffer& input);

bool StartsLikeJson(InputBuffer& input);

// Reads all of `input` (what is in the window and the rest) as text.
std::string AllText(InputBuffer& input);

// Decides the output format before anything is read but the first bytes of each input: JSON
// output needs every input to be JSON. Notes which inputs have anything in them. A file that
// cannot be opened is an error now, before any output.
StatusOr<OutputFormat> ChooseFormat(const Options& opts, InputBuffer& stdin_input,
                                    std::vector<bool>* has_content);

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
