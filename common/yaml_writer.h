// YAML text for a JSON value, byte for byte what yaml-cpp 0.7's YAML::Emitter wrote when
// JsonToYaml drove it (block style, indent 2, empty objects and arrays as {} and [], null as ~,
// numbers as nlohmann prints them), without the emitter's cost: its plain-scalar checks run a
// regex engine over every character of every string, half the CPU time of a large translation.
// Where the emitter's text would not read back as the value (yaml_writer_test lists the cases),
// the text differs so that it does, for our reader (libyaml) and for kubectl's.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace flexcsi {

// Appends `value` as one YAML document, without a final newline (what the emitter's c_str()
// held). A string is double-quoted when `force_quotes` says so (strings that would read back as
// another type) or when yaml-cpp's rules do not allow it plain; keys likewise.
void AppendJsonAsYaml(const nlohmann::json& value, bool (*force_quotes)(const std::string&),
                      std::string* out);

}  // namespace flexcsi
