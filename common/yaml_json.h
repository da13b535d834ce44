// Conversion between YAML/JSON text and nlohmann::json values, with the limits that keep
// untrusted input from exhausting the stack or memory (deep nesting, alias bombs).
//
// YAML scalars are resolved with the YAML 1.2 core schema: plain true/false, null/~, integers
// and floats become JSON booleans, null and numbers; quoted scalars are always strings. When
// writing YAML, strings that would read back as another type are double-quoted.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "common/status.h"

namespace flexcsi {

// Objects and arrays nested deeper than this are rejected.
constexpr int kMaxNestingDepth = 512;

// Parses one JSON value (surrounding whitespace allowed).
StatusOr<nlohmann::json> ParseJsonText(const std::string& text);

// Parses every document of a YAML stream with libyaml (common/yaml_reader.h). Empty documents
// are skipped. Syntax errors read "invalid YAML: line L, column C: <libyaml's problem>
// (<libyaml's context>)", 1-based, the problem worded as go-yaml (kubectl) words it; before
// libyaml they read "invalid YAML: yaml-cpp: error at line L, column C: <yaml-cpp's message>".
StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(const std::string& text);

// Exactly one document (config files): an empty text or several documents are errors.
StatusOr<nlohmann::json> ParseYamlDocument(const std::string& text);

// Reads `path` and parses it with ParseYamlDocument; errors name the file.
StatusOr<nlohmann::json> LoadYamlFile(const std::string& path);

// Converts an already parsed yaml-cpp node (flexVolume rules given as a YAML::Node).
StatusOr<nlohmann::json> YamlNodeToJson(const YAML::Node& node);

// One YAML document (no leading "---"), ending with a newline.
std::string JsonToYaml(const nlohmann::json& value);

// True for the strings JsonToYaml double-quotes whatever their characters: those that would read
// back as null, a boolean or a number (YAML 1.2 core schema), or as a YAML 1.1 boolean.
bool YamlStringNeedsQuotes(const std::string& s);

// True when `text` looks like JSON: its first non-blank character is '{' or '['.
bool LooksLikeJson(const std::string& text);

}  // namespace flexcsi
