#include "common/yaml_scalar.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace flexcsi {
namespace {

using Json = nlohmann::json;

bool IsDecimalInteger(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

bool IsFloat(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

}  // namespace

bool IsYamlNullWord(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

Json ResolvePlainScalar(const std::string& s) {
  // Only these first characters begin a null, boolean or number: the other scalars (names and
  // paths, most of a document) are strings without a comparison.
  if (!s.empty() && std::string_view("0123456789+-.~nNtTfF").find(s[0]) == std::string_view::npos) {
    return s;
  }
  if (IsYamlNullWord(s)) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsDecimalInteger(s)) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0) return static_cast<int64_t>(v);
    if (s[0] != '-') {
      errno = 0;
      unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0) return static_cast<uint64_t>(u);
    }
    return std::strtod(s.c_str(), nullptr);
  }
  if (IsFloat(s)) return std::strtod(s.c_str(), nullptr);
  return s;
}

}  // namespace flexcsi
