// JSON text exactly as nlohmann::json writes it (dump(2) for kubectl-style indented output,
// dump() for compact), appended to a string without an intermediate stream.
//
// It exists for speed: `flexcsi translate` writes every translated object through it, and
// nlohmann's stream serializer was a third of the command's time. The bytes are the same as
// nlohmann's with error_handler_t::replace (invalid UTF-8 becomes U+FFFD), which for valid
// UTF-8 is also what the strict handler writes. json_text_writer_test.cc holds it to that.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace flexcsi {
namespace translator {

enum class JsonStyle {
  kIndented,  // nlohmann dump(2): two spaces per level, "key": value
  kCompact,   // nlohmann dump(): no whitespace at all
};

// Appends `value` to `out` as it would appear nested `level` levels deep in an indented
// document (the opening bracket is not indented, the closing one is). `level` is ignored for
// kCompact. No trailing newline.
void AppendJsonText(const nlohmann::json& value, JsonStyle style, int level, std::string* out);

// Appends `s` as a JSON string literal (quotes included).
void AppendJsonString(const std::string& s, std::string* out);

}  // namespace translator
}  // namespace flexcsi
