// JSON text exactly as nlohmann::json writes it (dump(2) for kubectl-style indented output,
// dump() for compact), appended to a string without an intermediate stream.
//
// It exists for speed: `flexcsi translate` writes every translated object through it, and
// nlohmann's stream serializer was a third of the command's time. The bytes are the same as
// nlohmann's with error_handler_t::replace (invalid UTF-8 becomes U+FFFD), which for valid
// UTF-8 is also what the strict handler writes. json_text_writer_test.cc holds it to that.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "translator/json_view.h"
#include "translator/spec_changes.h"

namespace flexcsi {
namespace translator {

enum class JsonStyle {
  kIndented,  // nlohmann dump(2): two spaces per level, "key": value
  kCompact,   // nlohmann dump(): no whitespace at all
};

// Appends `value` to `out` as it would appear nested `level` levels deep in an indented
// document (the opening bracket is not indented, the closing one is). `level` is ignored for
// kCompact. No trailing newline. A view of a simdjson document is written exactly as nlohmann
// would write the value it parses the same text to.
void AppendJsonText(JsonView value, JsonStyle style, int level, std::string* out);

// The same for the PV `pv` with `changes` applied to its spec (SpecChanges::ApplyTo), written
// without making that PV: what `flexcsi translate` does with a PV read from simdjson.
// REQUIRES: `changes` came from translating `pv` (so pv.spec is an object, or nothing changes).
void AppendTranslatedPVText(JsonView pv, const SpecChanges& changes, JsonStyle style, int level,
                            std::string* out);

// Appends `s` as a JSON string literal (quotes included).
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace translator
}  // namespace flexcsi
