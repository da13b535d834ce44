#include "translator/go_strings.h"

#include <cctype>
#include <limits>

namespace flexcsi {
namespace translator {

std::vector<std::string> GoSplit(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string::npos) break;
    out.push_back(s.substr(start, pos - start));
    start = pos + sep.size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::string GoJoin(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string GoTrimSpace(const std::string& s) {
  auto is_space = [](unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  size_t b = 0, e = s.size();
  while (b < e && is_space(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && is_space(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string AsciiLower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

StatusOr<int32_t> GoAtoiInt32(const std::string& s) {
  auto fail = [&](const char* why) {
    return InvalidArgument("strconv.Atoi: parsing " + std::string("\"") + s + "\": " + why);
  };
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    negative = s[i] == '-';
    ++i;
  }
  if (i == s.size()) return fail("invalid syntax");
  // Go's int is 64 bits; overflow of int64 is "value out of range".
  uint64_t magnitude = 0;
  bool overflow = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c < '0' || c > '9') return fail("invalid syntax");
    if (magnitude > (std::numeric_limits<uint64_t>::max() - 9) / 10) overflow = true;
    if (!overflow) magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (overflow || magnitude > limit) return fail("value out of range");
  // int32(partInt) in Go keeps the low 32 bits.
  uint64_t bits = negative ? (~magnitude + 1) : magnitude;
  return static_cast<int32_t>(static_cast<uint32_t>(bits & 0xffffffffu));
}

std::string GoFormatStringSet(const std::set<std::string>& set) {
  std::string out = "map[";
  bool first = true;
  for (const std::string& s : set) {
    if (!first) out += " ";
    first = false;
    out += s + ":{}";
  }
  return out + "]";
}

}  // namespace translator
}  // namespace flexcsi
