// Reads a YAML stream into JSON values with libyaml's event parser (the C parser go-yaml, and so
// kubectl, was ported from), applying flexcsi's rules while building: the YAML 1.2 core schema
// for plain scalars (common/yaml_scalar.h), scalar mapping keys only, kMaxNestingDepth, and a
// node budget that stops alias bombs. Aliases are expanded here, never by libyaml.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {

// Every document of `text`, in order; documents that are empty or null are left out.
StatusOr<std::vector<nlohmann::json>> ReadYamlDocuments(const std::string& text);

}  // namespace flexcsi
