// String operations with the exact semantics of the Go standard library functions the upstream
// translators use (strings.Split, strings.TrimSpace, strconv.Atoi, ...). Upstream behaviour on
// edge cases ("a__" splits into two pieces, Atoi accepts "+7") decides what a volume becomes, so
// these are deliberately not "nicer" than Go.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace flexcsi {
namespace translator {

// strings.Split(s, sep) for a non-empty sep: "" gives [""], "a,,b" gives ["a","","b"].
std::vector<std::string> GoSplit(const std::string& s, const std::string& sep);
// strings.Join.
std::string GoJoin(const std::vector<std::string>& parts, const std::string& sep);
// strings.TrimSpace for ASCII whitespace.
std::string GoTrimSpace(const std::string& s);
// strings.ToLower for ASCII.
std::string AsciiLower(std::string s);
bool StartsWith(const std::string& s, const std::string& prefix);

// strconv.Atoi(s) followed by Go's int32() conversion. On failure the message is Go's:
// `strconv.Atoi: parsing "x": invalid syntax` (or `value out of range`).
StatusOr<int32_t> GoAtoiInt32(const std::string& s);

// fmt's %v of a sets.String: "map[a:{} b:{}]" (keys sorted, as fmt sorts map keys).
std::string GoFormatStringSet(const std::set<std::string>& set);

}  // namespace translator
}  // namespace flexcsi
