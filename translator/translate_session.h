// The documents of every input, translated and written as they arrive (streamed lists, the
// lone first document, the summary). Internal to translate_command.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"
#include "translator/input_buffer.h"
#include "translator/json_fields.h"
#include "translator/translate_args.h"
#include "translator/translate_output.h"
#include "translator/translator.h"

namespace flexcsi {
namespace translator {
namespace command {

// One value as the output format writes it (a whole document, newline-terminated).
std::string Render(const Json& value, OutputFormat format);

// Writes "error: <message>" to `err`; returns exit status 1.
int Fail(std::ostream& err, const Status& status);

// Translates the inputs. `whole` parses each input completely before translating (what a
// streamed list that was not one falls back to). Returns the exit status.
int TranslateInputs(const Options& opts, const Translator& translator, InputBuffer& stdin_input,
                    const std::string* stdin_text, OutputFormat format,
                    const std::vector<bool>& has_content, bool whole, std::ostream& out,
                    std::ostream& err, bool progress, bool* retry_whole);

}  // namespace command
}  // namespace translator
}  // namespace flexcsi
