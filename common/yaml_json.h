// YAML documents as nlohmann::json, so that every component reads YAML and JSON files the same
// way (YAML 1.2 is a superset of JSON). Plain scalars become JSON booleans, null, integers or
// floats where YAML's core schema says so; quoted scalars always stay strings.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {

// Parses every document of a (possibly multi-document) YAML or JSON text.
// INVALID_ARGUMENT with line and column on malformed input.
StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text);

// Exactly one document; an empty text is an error.
StatusOr<nlohmann::json> ParseYamlDocument(const std::string& text);

// Reads and parses a file with ParseYamlDocument; errors name the file.
StatusOr<nlohmann::json> LoadYamlFile(const std::string& path);

}  // namespace flexcsi
