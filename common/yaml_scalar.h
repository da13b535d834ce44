// YAML 1.2 core-schema resolution of plain scalars, shared by the YAML reader
// (common/yaml_reader.h), the yaml-cpp node converter and the writer's quoting decision
// (common/yaml_json.h).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace flexcsi {

// The plain scalars that are null: empty, ~, null, Null, NULL.
bool IsYamlNullWord(std::string_view s);

// null/~/empty -> null, true/false -> boolean, decimal integers -> int64 (uint64 above its range,
// double beyond that), decimal floats -> double; anything else stays a string.
nlohmann::json ResolvePlainScalar(const std::string& s);

}  // namespace flexcsi
